"""Gated and headline false recall count only audited unanswerables (SPEC section 5: natives
that fail the no-tells audit "are reported in their own column, never in a gated or headline
false recall"); ``false_recall_native`` is that column. Hand-computed, on one pdf scope:

==============  =====================  ========  ==================  =====================
query           what                   audited   cartridge           abstention score
==============  =====================  ========  ==================  =====================
pdfh:a1         answerable             (yes)     [p1] (kept)         0.9
pdfh:a2         answerable             (yes)     [] (abstains)       0.4
pdfh:d1         derived, transactive   yes       [p1] false recall   0.8
pdfh:d2         derived, temporal      yes       []                  0.3
pdfh:n1         native, no tell        yes       []                  0.2
mmlongbench:t1  native with a tell     no        [p1] false recall   0.95
mmlongbench:t2  native with a tell     no        []                  0.1
mmlongbench:t3  native with a tell,    no (by    [p1] false recall   0.99
                written before         source)
                origin.audited
==============  =====================  ========  ==================  =====================

* false_recall_rate = 1/3 over d1, d2, n1 (n = denominator = 3); its gate fails (> 0.10),
  not silent (the answerable abstention is 1/2, not above 0.5);
* false_recall_native = 2/3 over t1, t2, t3 (n = denominator = 3), never gated;
* abstention_auc over a1, a2 against d1, d2, n1: order (kept, score) n1 < d2 < a2 < d1 < a1,
  so 5 of the 6 (answerable, unanswerable) pairs are in order: 5/6, n = denominator = 5 (the
  natives with a tell would make it 7/12 over 8 items);
* answerable_kept@fr0.10: keeping a1 alone keeps no unanswerable item, keeping d1 too keeps
  1/3 > 0.10: 1/2 of the 2 answerable items (with the tells, t3 and t1 rank above a1: 0).
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

import numpy as np
import pytest

from membench.metrics import compute_metrics, score_items
from membench.metrics.measures import BY_NAME, GATES, HEADLINE, RANKED_HEADLINE

T1 = datetime(2024, 1, 1, tzinfo=timezone.utc)
T2 = datetime(2024, 2, 1, tzinfo=timezone.utc)
A = "pdfh/alice"
ITEMS = [
    {
        "source_id": "pdfh:doc1",
        "modality": "pdf",
        "holder": A,
        "observed_at": T1.isoformat(),
        "content": "x",
    }
]
ATOMS = [
    {
        "atom_id": f"p{p}",
        "source_id": "pdfh:doc1",
        "modality": "pdf",
        "holder": A,
        "observed_at": T1.isoformat(),
        "extent": {"page": p},
    }
    for p in (1, 2)
]


def rec(qid: str, gold_page: int | None = None, **origin) -> dict:
    return {
        "query_id": qid,
        "modality": "pdf",
        "question": "q?",
        "answer": "x" if gold_page else None,
        "answer_format": "str" if gold_page else "none",
        "gold": [{"source_id": "pdfh:doc1", "region": {"page": gold_page}}] if gold_page else [],
        "scope": {"holder": A, "session": None, "scenario": "s"},
        "as_of": T2.isoformat(),
        "unanswerable": not gold_page,
        "origin": {"dataset": "e/x", "revision": "r", "item": qid, "license": "L", **origin},
        "split": "dev",
    }


def derived(qid: str, kind: str) -> dict:
    return rec(qid, derived_from="pdfh:orig", derivation=kind, kind=kind, audited=True)


AUDITED = [
    rec("pdfh:a1", 1),
    rec("pdfh:a2", 2),
    derived("pdfh:d1", "transactive"),
    derived("pdfh:d2", "temporal"),
    rec("pdfh:n1", kind="native", audited=True),
]
TELLS = [
    rec("mmlongbench:t1", kind="native", audited=False),
    rec("mmlongbench:t2", kind="native", audited=False),
    rec("mmlongbench:t3"),
]  # no origin.kind / audited: its source has a tell


def line(qid: str, score: float, kept: bool) -> dict:
    return {
        "query_id": qid,
        "hits": [["p1", score]],
        "cartridge": ["p1"] if kept else [],
        "latency_ms": 1,
    }


RUN = [
    line("pdfh:a1", 0.9, True),
    line("pdfh:a2", 0.4, False),
    line("pdfh:d1", 0.8, True),
    line("pdfh:d2", 0.3, False),
    line("pdfh:n1", 0.2, False),
    line("mmlongbench:t1", 0.95, True),
    line("mmlongbench:t2", 0.1, False),
    line("mmlongbench:t3", 0.99, True),
]


@pytest.fixture(scope="module")
def metrics():
    return compute_metrics(AUDITED + TELLS, ITEMS, ATOMS, RUN, n_resamples=200)


def test_per_item_flags_and_values():
    s = score_items(AUDITED + TELLS, ITEMS, ATOMS, RUN)
    assert s.audited.tolist() == [True] * 5 + [False] * 3
    nan = math.nan
    fr, native = s.values["false_recall_rate"], s.values["false_recall_native"]
    np.testing.assert_array_equal(fr, [nan, nan, 1, 0, 0, nan, nan, nan])
    np.testing.assert_array_equal(native, [nan, nan, nan, nan, nan, 1, 0, 1])
    rows = {r["query_id"]: r for r in s.rows()}
    assert rows["mmlongbench:t3"]["audited"] is False and rows["pdfh:a1"]["audited"] is True
    assert rows["mmlongbench:t1"]["false_recall_rate"] is None
    assert rows["mmlongbench:t1"]["false_recall_native"] == 1.0


def test_false_recall_counts_audited_unanswerables_only(metrics):
    for scope in ("pdf", "all"):
        fr = metrics[scope]["false_recall_rate"]
        assert (fr["value"], fr["n"], fr["denominator"]) == (pytest.approx(1 / 3), 3, 3)
        native = metrics[scope]["false_recall_native"]
        assert (native["value"], native["n"], native["denominator"]) == (pytest.approx(2 / 3), 3, 3)
    by = metrics["by_source"]
    assert by["pdfh"]["false_recall_native"]["value"] is None
    assert by["mmlongbench"]["false_recall_rate"] == {
        "value": None,
        "n": 0,
        "denominator": 0,
        "ci95": [None, None],
    }


def test_the_gate_reads_audited_false_recall_and_never_the_natives(metrics):
    g = {(x["scope"], x["metric"]): x for x in metrics["gates"]}
    fr = g[("pdf", "false_recall_rate")]
    assert fr["value"] == pytest.approx(1 / 3) and fr["pass"] is False and not fr["silent"]
    assert fr["companion"]["value"] == 0.5
    assert not any(x["metric"] == "false_recall_native" for x in metrics["gates"])
    assert "false_recall_native" not in {m for m, _, _ in GATES}
    m = BY_NAME["false_recall_native"]
    assert m.gate is None and not m.paired and not m.ranked
    assert "false_recall_native" in HEADLINE and "false_recall_native" not in RANKED_HEADLINE


def test_abstention_statistics_leave_the_natives_with_a_tell_out(metrics):
    auc = metrics["pdf"]["abstention_auc"]
    assert (auc["value"], auc["n"], auc["denominator"]) == (pytest.approx(5 / 6), 5, 5)
    kept = metrics["pdf"]["answerable_kept@fr0.10"]
    assert (kept["value"], kept["n"], kept["denominator"]) == (0.5, 2, 2)
    assert kept["false_recall_at"] == 0.0


def test_a_native_with_a_tell_never_enters_false_recall_rate(metrics):
    """Whatever the natives with a tell do, the gated and headline figures and the abstention
    statistics are those of the audited items alone, to the bit (values, n, intervals)."""
    alone = compute_metrics(AUDITED, ITEMS, ATOMS, RUN[:5], n_resamples=200)
    for scope in ("pdf", "all"):
        for m in ("false_recall_rate", "abstention_auc", "answerable_kept@fr0.10"):
            assert metrics[scope][m] == alone[scope][m], (scope, m)
    assert [g for g in metrics["gates"] if g["metric"] == "false_recall_rate"] == [
        g for g in alone["gates"] if g["metric"] == "false_recall_rate"
    ]
    # and a tell native that false-recalls (or not) moves only its own column
    flipped = [
        line(r["query_id"], r["hits"][0][1], not r["cartridge"])
        if r["query_id"].startswith("mmlongbench")
        else r
        for r in RUN
    ]
    other = compute_metrics(AUDITED + TELLS, ITEMS, ATOMS, flipped, n_resamples=200)
    assert other["pdf"]["false_recall_rate"] == metrics["pdf"]["false_recall_rate"]
    assert other["pdf"]["false_recall_native"]["value"] == pytest.approx(1 / 3)
