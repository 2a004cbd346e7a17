"""A content-free tell wrapper gains nothing on the headline false recall (docs/sets.md, "No
tells"): on a bm25 run of the real dev split, a wrapper that also abstains when the held-back
text audit (bench/audit_text.py: question text, query set, item metadata; no content) says
"unanswerable" lowers the false recall over audited unanswerables by at most 0.01 at equal
answerable abstention, cross-fitted by holder, in every modality with at least 20 audited
unanswerable dev records."""

from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pytest

from membench.core.paths import REPO_ROOT


def _wrapper():
    path = REPO_ROOT / "bench" / "tell_wrapper.py"
    spec = importlib.util.spec_from_file_location("tell_wrapper", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tell_wrapper"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_false_recall_at_equal_abstention_by_hand():
    tw = _wrapper()
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    y = np.array([False, True, False, True, False, True])      # True: unanswerable
    # abstain on 1 of 3 answerable (the lowest, 0.5): unanswerable 0.8, 0.6 kept, 0.4 not
    assert tw.false_recall_at(s, y, 1 / 3) == pytest.approx(2 / 3)
    veto = np.array([False, True, False, False, False, False])
    assert tw.false_recall_at(s, y, 1 / 3, veto) == pytest.approx(1 / 3)


@pytest.fixture(scope="module")
def gains(built, bm25_dev):
    run_dir, _ = bm25_dev
    return _wrapper().gains([run_dir], built.out)


def test_the_wrapper_reads_audited_unanswerables_only(gains, built):
    tw = _wrapper()
    for g in gains:
        recs = [json.loads(x) for x in (built.out / f"{g['modality']}.jsonl").read_text()
                .splitlines()]
        dev = [r for r in recs if r["split"] == "dev"]
        assert g["unanswerable"] == sum(r["unanswerable"] and r["origin"]["audited"]
                                        for r in dev)
    assert {g["level"] for g in gains} == set(tw.LEVELS)


def test_a_content_free_tell_gains_at_most_a_hundredth(gains):
    tw = _wrapper()
    gated = [g for g in gains if g["unanswerable"] >= 20]
    assert {g["modality"] for g in gated} >= {"pdf", "image", "video", "conversation"}
    bad = [g for g in gated if g["gain_cross_fitted"] > tw.MAX_GAIN + 1e-12]
    assert not bad, bad
