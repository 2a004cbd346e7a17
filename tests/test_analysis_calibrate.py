"""membench calibrate: the threshold is fitted on one half of dev (by holder) and measured on
the other; unaudited native unanswerables are neither fitted on nor reported."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from membench.analysis.calibrate import calibrate_modality, calibrate_run, split_halves

FIXTURE = Path(__file__).parent / "fixtures" / "metrics" / "run_small"


def rec(qid: str, holder: str, unanswerable: bool = False, audited: bool | None = None):
    """A record as calibrate reads it. ``audited`` None on an unanswerable record: decided by
    its source (the query id before ':'), as membench.contract.tells.audited does."""
    return SimpleNamespace(
        query_id=qid,
        modality="image",
        unanswerable=unanswerable,
        scope=SimpleNamespace(holder=holder),
        origin=SimpleNamespace(audited=audited, derivation=None),
    )


def sha_order(holders, salt="calibrate"):
    """The split's order computed here from sha256 directly (not through hash_order)."""
    return sorted(
        holders,
        key=lambda h: (
            int.from_bytes(hashlib.sha256(f"{salt}\x1f{h}".encode()).digest()[:8], "big"),
            h,
        ),
    )


# The hand case: holders h/a..h/e; sha256("calibrate\x1f" + holder) starts with
#   h/e 1b8054c3  h/c 271f5cd0  h/d 58993db4  h/b e741aeea  h/a e8fe0fca
# so fit = the first 3 (rounded up from 5/2) = h/e, h/c, h/d; held out = h/b, h/a.
HAND = [
    # fit half
    (rec("s:e1", "h/e"), 0.9),
    (rec("s:e2", "h/e"), 0.8),
    (rec("s:eu", "h/e", True, True), 0.3),
    (rec("s:c1", "h/c"), 0.7),
    (rec("s:c2", "h/c"), None),
    (rec("s:cu", "h/c", True, True), 0.6),
    (rec("s:d1", "h/d"), 0.5),
    (rec("s:du1", "h/d", True, True), 0.2),
    (rec("s:du2", "h/d", True, None), 0.1),  # source "s": no tell -> audited
    (rec("s:dn", "h/d", True, False), 0.95),  # a native with a tell: left out
    # held-out half
    (rec("s:b1", "h/b"), 0.66),
    (rec("s:b2", "h/b"), 0.64),
    (rec("s:bu", "h/b", True, True), 0.9),
    (rec("s:a1", "h/a"), 0.2),
    (rec("s:au1", "h/a", True, True), 0.5),
    (rec("s:au2", "h/a", True, True), None),
    (rec("locomo:an", "h/a", True, None), 0.99),  # locomo's natives carry a tell: left out
]


def test_the_hand_case_split_and_held_out_figures():
    assert sha_order(["h/a", "h/b", "h/c", "h/d", "h/e"]) == ["h/e", "h/c", "h/d", "h/b", "h/a"]
    recs = [r for r, _ in HAND]
    top1 = {r.query_id: s for r, s in HAND}
    c = calibrate_modality(recs, top1)
    # fit: answerable [.9 .8 .7 None .5], audited unanswerable [.3 .6 .2 .1]. Within 0.10 of 4
    # unanswerables means none kept, so t > 0.6: t = 0.7 keeps 3/5 (J .6, the best), written
    # as the midpoint to the next lower score: (0.6 + 0.7) / 2
    assert c["threshold"] == (0.6 + 0.7) / 2
    assert c["split"] == {"by": "holder", "why": None}
    assert c["fit"] == {
        "holders": ["h/e", "h/c", "h/d"],
        "answerable_kept": 0.6,
        "n_answerable": 5,
        "unanswerable_kept": 0.0,
        "n_unanswerable": 4,
    }
    # held out at 0.65: answerable [.66 .64 .2] keeps 1/3, unanswerable [.9 .5 None] keeps 1/3
    assert c["held_out"] == {
        "holders": ["h/b", "h/a"],
        "answerable_kept": 0.333333,
        "n_answerable": 3,
        "unanswerable_kept": 0.333333,
        "n_unanswerable": 3,
    }
    # the earlier format's keys hold the fit half's figures (what the reference systems and
    # older readers see)
    assert (
        c["answerable_kept"],
        c["unanswerable_kept"],
        c["n_answerable"],
        c["n_unanswerable"],
        c["within_gate"],
    ) == (0.6, 0.0, 5, 4, True)
    assert c["unaudited_left_out"] == 2


def test_unaudited_natives_are_ignored():
    recs = [r for r, _ in HAND]
    top1 = {r.query_id: s for r, s in HAND}
    base = calibrate_modality(recs, top1)
    unaudited = {"s:dn", "locomo:an"}
    without = calibrate_modality([r for r in recs if r.query_id not in unaudited], top1)
    assert {k: v for k, v in base.items() if k != "unaudited_left_out"} == {
        k: v for k, v in without.items() if k != "unaudited_left_out"
    }
    assert (base["unaudited_left_out"], without["unaudited_left_out"]) == (2, 0)
    # whatever they score: never kept, never fitted on
    top1.update({"s:dn": -5.0, "locomo:an": None})
    assert calibrate_modality(recs, top1) == base
    # had they counted, the 0.95 in the fit half would make the gate unreachable there
    as_audited = [
        rec(r.query_id, r.scope.holder, True, True) if r.query_id in unaudited else r for r in recs
    ]
    assert (
        calibrate_modality(as_audited, {r.query_id: s for r, s in HAND})["threshold"]
        != base["threshold"]
    )


def test_only_unaudited_unanswerables_give_no_operating_point():
    recs = [
        rec("s:q1", "h/a"),
        rec("s:q2", "h/b"),
        rec("mmlongbench:u", "h/a", True, None),
        rec("s:u", "h/b", True, False),
    ]
    why = calibrate_modality(recs, {"s:q1": 1.0, "s:q2": 0.5, "mmlongbench:u": 2.0, "s:u": 3.0})
    assert why == (
        "2 answerable and 0 audited unanswerable dev queries (2 unaudited native "
        "unanswerable left out): no operating point to choose"
    )


def _random_records(rng: random.Random, n_holders: int):
    holders = [f"src/holder-{rng.randrange(10**6)}" for _ in range(n_holders)]
    recs = []
    for i, h in enumerate(holders):
        for j in range(rng.randint(1, 6)):
            recs.append(rec(f"s:{i}-a{j}", h))
        for j in range(rng.randint(1, 4)):
            recs.append(rec(f"s:{i}-u{j}", h, True, True))
    return recs


def test_the_split_is_deterministic_and_holder_disjoint():
    rng = random.Random(11)
    for _ in range(100):
        recs = _random_records(rng, rng.randint(2, 12))
        sp = split_halves(recs)
        assert sp["by"] == "holder"  # every holder has both kinds: the holder split holds
        shuffled = recs[:]
        rng.shuffle(shuffled)
        assert split_halves(shuffled) == sp
        fit, held = set(sp["fit_holders"]), set(sp["held_out_holders"])
        holders = {r.scope.holder for r in recs}
        assert not fit & held and fit | held == holders
        assert len(fit) == (len(holders) + 1) // 2
        assert sp["fit_holders"] + sp["held_out_holders"] == sha_order(holders)
        assert not set(sp["fit"]) & set(sp["held_out"])
        assert set(sp["fit"]) | set(sp["held_out"]) == {r.query_id for r in recs}
        assert all((r.query_id in sp["fit"]) == (r.scope.holder in fit) for r in recs)


def test_one_holder_falls_back_to_a_query_split_and_says_so():
    recs = [rec(f"s:a{i}", "h/only") for i in range(5)] + [
        rec(f"s:u{i}", "h/only", True, True) for i in range(3)
    ]
    sp = split_halves(recs)
    assert (sp["by"], sp["why"]) == ("query", "1 dev holder")
    # each kind split by the same hash order: 3 of 5 answerable and 2 of 3 unanswerable fit
    ans = sha_order([f"s:a{i}" for i in range(5)])
    una = sha_order([f"s:u{i}" for i in range(3)])
    assert sp["fit"] == sorted(ans[:3] + una[:2])
    assert sp["held_out"] == sorted(ans[3:] + una[2:])
    assert sp["fit_holders"] == sp["held_out_holders"] == ["h/only"]
    c = calibrate_modality(recs, {r.query_id: 0.5 for r in recs})
    assert c["split"] == {"by": "query", "why": "1 dev holder"}
    assert (c["fit"]["n_answerable"], c["fit"]["n_unanswerable"]) == (3, 2)
    assert (c["held_out"]["n_answerable"], c["held_out"]["n_unanswerable"]) == (2, 1)


def test_a_holder_split_without_both_kinds_in_a_half_falls_back_to_queries():
    # h/c comes first in the order of {h/c, h/d} (above): fit = h/c, which has no unanswerable
    recs = [
        rec("s:c1", "h/c"),
        rec("s:c2", "h/c"),
        rec("s:d1", "h/d"),
        rec("s:du1", "h/d", True, True),
        rec("s:du2", "h/d", True, True),
    ]
    sp = split_halves(recs)
    assert sp["by"] == "query"
    assert sp["why"] == (
        "the holder split (2 holders) leaves the fit half without an audited unanswerable query"
    )
    c = calibrate_modality(
        recs, {"s:c1": 0.9, "s:c2": 0.8, "s:d1": 0.7, "s:du1": 0.1, "s:du2": 0.2}
    )
    assert c["fit"]["n_unanswerable"] == 1 and c["held_out"]["n_unanswerable"] == 1


def test_a_half_without_unanswerables_reports_none():
    recs = [rec("s:a1", "h/x"), rec("s:a2", "h/x"), rec("s:u1", "h/x", True, True)]
    c = calibrate_modality(recs, {"s:a1": 0.9, "s:a2": 0.4, "s:u1": 0.5})
    assert c["fit"]["n_unanswerable"] == 1  # one unanswerable: it fits
    assert c["held_out"]["unanswerable_kept"] is None and c["held_out"]["n_unanswerable"] == 0


def test_calibrate_run_writes_what_the_reference_systems_read(tmp_path):
    """On the fixture run (one pdf holder: a query split) the command writes the new format,
    and the reference systems' reader takes its thresholds."""
    from membench.cli import main
    from membench.systems.reference import read_calibration

    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    cal = calibrate_run(run)
    pdf = cal["modalities"]["pdf"]
    assert pdf["split"] == {"by": "query", "why": "1 dev holder"}
    assert {
        "threshold",
        "answerable_kept",
        "unanswerable_kept",
        "within_gate",
        "n_answerable",
        "n_unanswerable",
        "fit",
        "held_out",
        "split",
        "unaudited_left_out",
    } <= set(pdf)
    assert pdf["fit"]["n_answerable"] + pdf["held_out"]["n_answerable"] == 5
    assert pdf["fit"]["n_unanswerable"] + pdf["held_out"]["n_unanswerable"] == 4
    out = tmp_path / "cal.json"
    assert main(["calibrate", str(run), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == cal
    assert read_calibration(out) == {"pdf": pdf["threshold"]}


def test_the_docs_block_shows_fit_and_held_out(tmp_path, monkeypatch):
    import membench.core.paths as paths
    from membench.docsite.blocks import Context, _calibration

    (tmp_path / "calibration").mkdir()
    recs = [r for r, _ in HAND]
    entry = calibrate_modality(recs, {r.query_id: s for r, s in HAND})
    (tmp_path / "calibration" / "x.json").write_text(
        json.dumps(
            {
                "system": "x",
                "max_false_recall": 0.1,
                "modalities": {"image": entry},
                "not_calibrated": {"code": "no unanswerable"},
            }
        )
    )
    (tmp_path / "calibration" / "y.json").write_text(
        json.dumps(  # the earlier format
            {
                "system": "y",
                "modalities": {
                    "image": {
                        "threshold": 1.0,
                        "answerable_kept": 0.5,
                        "unanswerable_kept": 0.05,
                        "within_gate": True,
                        "n_answerable": 10,
                        "n_unanswerable": 20,
                    }
                },
            }
        )
    )
    monkeypatch.setattr(paths, "BENCH_DIR", tmp_path)
    lines = _calibration(Context()).splitlines()
    assert "held out: false recall (n)" in lines[0]
    assert lines[2] == (
        "| x | image | 0.6500 | by holder, 3 / 2; 2 unaudited natives left out "
        "| 0.600 (5) | 0.000 (4) | 0.333 (3) | 0.333 (3) | yes / no |"
    )
    assert lines[3] == "| x | code | — (default) | — | no unanswerable | — | — | — | — |"
    assert lines[4].startswith("| y | image | 1.0000 | none: fitted on all of dev")
    assert lines[4].endswith("| 0.500 (10) | 0.050 (20) | — | — | yes / — |")


@pytest.mark.parametrize("n_holders", [2, 3, 7])
def test_fit_takes_the_first_half_rounded_up(n_holders):
    recs = _random_records(random.Random(n_holders), n_holders)
    sp = split_halves(recs)
    assert len(sp["fit_holders"]) == (n_holders + 1) // 2
    assert len(sp["held_out_holders"]) == n_holders // 2
