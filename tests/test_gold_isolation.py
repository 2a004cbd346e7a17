"""The process that runs a system holds no gold.

``membench run --system adversary:GoldHunter`` on the real dev split: the hunter walks every
frame of every thread (locals and globals), ``gc.get_objects()`` and the globals of every
membench module, and everything they reach, at ingest and at queries, looking for the sets'
records, record-shaped data (gold regions, unanswerable flags, answers, derivations), derived
query ids and the sha256 of every dev query id and answer (tests/adversary.py). It must find
nothing, and so gain nothing. The control: the same hunt in a process that holds the records
finds them.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from membench.core.jsonl import iter_json_lines
from membench.run.runner import load_split

TESTS = Path(__file__).parent


def _strings(v, out: set[str]) -> None:
    if isinstance(v, str):
        out.add(v)
    elif isinstance(v, dict):
        for k, x in v.items():
            out.add(k)
            _strings(x, out)
    elif isinstance(v, list):
        for x in v:
            _strings(x, out)


def needles(sets_dir: Path, recs: list | None = None) -> set[str]:
    """The sha256 of every dev query id, and of every dev answer of at least 12 characters
    that is not also a string a system is given (an item's field or content, a question, a
    scope field: those it may hold). Shorter answers ("16", "Yes") are strings any process
    holds for other reasons; the record detectors catch them where they sit in a record.
    ``recs``: the dev split's records, when the caller has them."""
    recs = load_split(sets_dir, "dev").records if recs is None else recs
    given: set[str] = set()
    for _, row in iter_json_lines(sets_dir / "items.jsonl"):
        _strings(row, given)
    for r in recs:
        given.update({r.question, r.scope.holder, r.scope.scenario, r.scope.session or ""})
    secret = {r.query_id for r in recs}
    for r in recs:
        answers = r.answer if isinstance(r.answer, list) else [r.answer]
        secret.update(
            str(a) for a in answers if a is not None and len(str(a)) >= 12 and str(a) not in given
        )
    secret -= given
    return {hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest() for s in secret}


#: queries per modality the hunter is asked (hash-chosen, as `membench run --limit` takes them):
#: every dev item is still ingested and every record still held by the keeper, so the hunt
#: looks for all of the split's gold; asking the whole split (2,375 stack walks and a deep
#: hunt of 3 million objects every 400) took 6.5 min of the test suite and looked at no more
LIMIT = 80


@pytest.fixture(scope="module")
def dev_needles(built) -> tuple[set[str], int]:
    """:func:`needles` of the built dev split and its number of records, read once for the
    module (the split's records and every item: seconds on the real sets)."""
    recs = load_split(built.out, "dev").records
    return needles(built.out, recs), len(recs)


@pytest.fixture(scope="module")
def hunted(built, corpus_root, dev_needles, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hunt")
    (tmp / "needles").write_text("\n".join(sorted(dev_needles[0])))
    out = tmp / "run"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)]),
        "MEMBENCH_HUNT_REPORT": str(tmp / "report.json"),
        "MEMBENCH_HUNT_NEEDLES": str(tmp / "needles"),
        "MEMBENCH_PROGRESS": "quiet",
    }
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "membench",
            "run",
            "--system",
            "adversary:GoldHunter",
            "--sets",
            str(built.out),
            "--corpus",
            str(corpus_root),
            "--no-lock",
            "--limit",
            str(LIMIT),
            "--config",
            "deep_every=200",
            "--out",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return (
        json.loads((tmp / "report.json").read_text()),
        json.loads((out / "meta.json").read_text()),
        out,
        len(dev_needles[0]),
    )


def test_a_system_that_walks_the_stack_and_gc_finds_no_gold(hunted, dev_needles):
    report, meta, out, n_needles = hunted
    assert report["found"] == []
    # it really looked: every query, the runner's frames, membench's modules, the heap
    assert report["queries"] == meta["queries"] and meta["limit"] == LIMIT
    assert meta["queries"] > 300 and n_needles > dev_needles[1]
    assert report["stack_walks"] >= report["queries"] - 10
    assert len(report["hunts"]) == report["queries"] + 1
    frames = set(report["frames"])
    assert {
        "membench.run.runner._answer",
        "membench.run.runner._run_locked",
        "membench.run.runner.run_system",
        "membench.cli.run._run_cmd",
    } <= frames
    assert report["membench_modules"] > 40
    assert report["gc_objects"] > 100_000 and report["objects"] > 1_000_000
    assert report["strings"] > 100_000
    assert meta["sees_gold"] is False and meta["identity"]["kind"] == "user module"


def test_finding_nothing_it_gains_nothing(hunted, built):
    """It abstains only where it learnt a query is unanswerable: it learnt nothing, so its
    cartridge is never empty and its false-recall rate is 1."""
    from membench.metrics.rundir import RunDir

    _, _, out, _ = hunted
    m = RunDir.open(out, built.out).metrics(write=False)
    assert m["all"]["false_recall_rate"]["value"] == 1.0
    assert m["all"]["false_recall_rate"]["denominator"] > 40


def test_the_hunt_finds_the_gold_where_it_is(built, dev_needles):
    """The control: in a process that holds the records (as scoring does), as models and as
    plain JSON, the same hunt finds them, their record-shaped dicts and the needles."""
    from adversary import hunt_here

    recs = load_split(built.out, "dev", limit=3).records
    plain = [r.model_dump(mode="json") for r in recs]
    ids = [r.query_id for r in recs]
    found = hunt_here(dev_needles[0])
    assert any("AnnotationRecord" in f for f in found)
    assert any("a dict with gold data under" in f for f in found)
    assert any("a needle" in f for f in found)
    assert plain and ids  # (held until here)


def test_the_hunt_walks_past_a_dead_weak_proxy():
    """A weak proxy whose referent is gone raises ReferenceError on any use, isinstance
    included; the pytest process holds such proxies (CI's run met one in a thread's frame).
    The hunt skips them and goes on to find the gold beside them."""
    import weakref

    from adversary import Hunt

    class Referent:
        pass

    r = Referent()
    dead, dead_call = weakref.proxy(r), weakref.proxy(lambda: None)
    del r
    gold = {
        "query_id": "q:1",
        "gold": [{"source_id": "s", "region": {"page": 1}}],
        "judgments": {"a": dead},
        "answer": dead,
    }
    h = Hunt(set(), 1000, None)
    h.walk([([dead, dead_call, {"x": dead, "judgments": {"k": [dead]}}, gold], "root")])
    assert any("root[3]: a dict with gold data under ['gold'" in f for f in h.found), h.found
