"""Hand-computed cases, with ties, for every metric of SPEC section 7 (and the metrics.json
shape: n, denominator, null for empty denominators, gates, judgment sets, by_source)."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone

import numpy as np
import pytest

from membench.contract.protocol import rank_order
from membench.metrics import (
    METRICS,
    TIE_BREAKING,
    bootstrap_ci,
    compute_metrics,
    format_table,
    order_hits,
    score_items,
)
from membench.metrics.ranking import (
    FirstHits,
    graded_ndcg_at_k,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
)

T1 = datetime(2024, 1, 1, tzinfo=timezone.utc)
T2 = datetime(2024, 2, 1, tzinfo=timezone.utc)  # as_of of every query
T3 = datetime(2024, 3, 1, tzinfo=timezone.utc)
D = lambda r: 1.0 / math.log2(r + 1)


def item(sid, holder, obs, m="pdf"):
    return {
        "source_id": sid,
        "modality": m,
        "holder": holder,
        "observed_at": obs.isoformat(),
        "content": "x",
    }


def atom(aid, sid, holder, obs, extent, m="pdf"):
    return {
        "atom_id": aid,
        "source_id": sid,
        "modality": m,
        "holder": holder,
        "observed_at": obs.isoformat(),
        "extent": extent,
    }


def rec(qid, gold, m="pdf", holder="pdfh/alice", **over):
    r = {
        "query_id": qid,
        "modality": m,
        "question": "q?",
        "answer": "x" if gold else None,
        "answer_format": "str" if gold else "none",
        "gold": gold,
        "scope": {"holder": holder, "session": None, "scenario": "s"},
        "as_of": T2.isoformat(),
        "unanswerable": not gold,
        "origin": {"dataset": "e/x", "revision": "r", "item": qid, "license": "L"},
        "split": "dev",
    }
    r.update(over)
    return r


def page(p, block=None, sid="pdfh:doc1"):
    region = {"page": p} if block is None else {"page": p, "block": block}
    return {"source_id": sid, "region": region}


A, B = "pdfh/alice", "pdfh/bob"
ITEMS = [
    item("pdfh:doc1", A, T1),
    item("pdfh:doc2", B, T1),
    item("pdfh:late", A, T3),
    item("pdfh:edge", A, T2),
    item("convh:c1", "convh/carol", T1, "conversation"),
]
ATOMS = [
    atom("p1", "pdfh:doc1", A, T1, {"page": 1}),
    atom("p2", "pdfh:doc1", A, T1, {"page": 2}),
    atom("p3", "pdfh:doc1", A, T1, {"page": 3}),
    atom("b1", "pdfh:doc2", B, T1, {"page": 1}),
    atom("l1", "pdfh:late", A, T3, {"page": 1}),
    atom("e1", "pdfh:edge", A, T2, {"page": 1}),
    atom("t1", "convh:c1", "convh/carol", T1, {"turn_start": 1, "turn_end": 2}, "conversation"),
] + [atom(f"x{i}", "pdfh:doc1", A, T1, {"page": 10 + i}) for i in range(1, 13)]
RECORDS = [
    rec("pdfh:q1", [page(2), page(3)], judgments={"alt": [page(3)]}),
    rec("pdfh:q2", [page(1)], judgments={"alt": []}),
    rec("pdfh:q3", [page(3, 1), page(3, 2)]),
    rec("pdfh:q4", [page(1)]),
    rec("pdfh:q5", [page(2)]),
    rec("pdfh:u1", []),
    rec("pdfh:u2", []),
    rec("pdfh:u3", []),
    rec("pdfh:u4", []),
    rec(
        "convh:q1",
        [{"source_id": "convh:c1", "region": {"turn": 2}}],
        m="conversation",
        holder="convh/carol",
    ),
]
RUN = [
    # ties at 0.9 keep the system's order: p2, x2, p3; then x3 (0.7), x1 (0.5)
    {
        "query_id": "pdfh:q1",
        "hits": [["x1", 0.5], ["p2", 0.9], ["x2", 0.9], ["p3", 0.9], ["x3", 0.7]],
        "cartridge": ["p3", "x1"],
        "latency_ms": 10,
    },
    # p1 is 2nd (x1, not gold, 1st)
    {"query_id": "pdfh:q2", "hits": [["x1", 0.9], ["p1", 0.7]], "cartridge": [], "latency_ms": 20},
    # one page atom hits both block golds: one gain
    {"query_id": "pdfh:q3", "hits": [["p3", 1.0]], "cartridge": ["p3"], "latency_ms": 30},
    # eleven-way tie, p1 returned last: rank 11
    {
        "query_id": "pdfh:q4",
        "hits": [[f"x{i}", 1.0] for i in range(1, 11)] + [["p1", 1.0]],
        "cartridge": ["x1"],
        "latency_ms": 40,
    },
    # pdfh:q5 has no run line
    {"query_id": "pdfh:u1", "hits": [["b1", 1.0]], "cartridge": [], "latency_ms": 50},
    {"query_id": "pdfh:u2", "hits": [], "cartridge": ["p1", "e1"], "latency_ms": 60},
    # pdfh:u3 has no run line
    {"query_id": "pdfh:u4", "hits": [["l1", 0.1]], "cartridge": [], "latency_ms": 70},
    {"query_id": "convh:q1", "hits": [["t1", 2.0]], "cartridge": ["t1"], "latency_ms": 5},
]


@pytest.fixture(scope="module")
def metrics():
    return compute_metrics(RECORDS, ITEMS, ATOMS, RUN)


def test_order_hits_tie_and_duplicate_rules():
    assert order_hits([["x1", 0.5], ["p2", 0.9], ["x2", 0.9], ["p3", 0.9], ["x3", 0.7]]) == [
        "p2",
        "x2",
        "p3",
        "x3",
        "x1",
    ]
    assert order_hits([["a", 1], ["a", 2], ["b", 1]]) == ["a", "b"]  # first in sorted order
    assert order_hits([["a", 0.0], ["b", -0.0], ["c", 0.0]]) == ["a", "b", "c"]
    assert order_hits([]) == []
    assert "stable" in TIE_BREAKING and "first" in TIE_BREAKING


def test_fast_rank_order_equals_definition():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(0, 30))
        ids = [f"a{int(x)}" for x in rng.integers(0, 12, n)]
        scores = rng.integers(0, 4, n).astype(float) * rng.choice([1.0, -1.0, 0.5])
        assert rank_order(ids, scores) == order_hits([[a, s] for a, s in zip(ids, scores)])


def test_per_item_values():
    s = score_items(RECORDS, ITEMS, ATOMS, RUN)
    v = {q: i for i, q in enumerate(s.query_id)}
    g = lambda m, q: s.values[m][v[q]]
    assert g("recall@10", "pdfh:q1") == 1 and g("mrr", "pdfh:q1") == 1
    assert g("ndcg@10", "pdfh:q1") == pytest.approx((D(1) + D(3)) / (D(1) + D(2)), abs=1e-15)
    assert g("mrr", "pdfh:q2") == 0.5
    assert g("ndcg@10", "pdfh:q2") == pytest.approx(D(2), abs=1e-15)
    assert g("recall@10", "pdfh:q3") == 1
    assert g("ndcg@10", "pdfh:q3") == pytest.approx(1 / (D(1) + D(2)), abs=1e-15)
    assert g("recall@10", "pdfh:q4") == 0 and g("recall@100", "pdfh:q4") == 1
    assert g("mrr", "pdfh:q4") == pytest.approx(1 / 11) and g("ndcg@10", "pdfh:q4") == 0
    for m in ("recall@10", "recall@1000", "mrr", "ndcg@10", "cartridge_recall"):
        assert g(m, "pdfh:q5") == 0  # no run line
        assert np.isnan(g(m, "pdfh:u1"))  # outside the denominator
    assert g("cartridge_recall", "pdfh:q1") == 0.5 and g("cartridge_recall", "pdfh:q3") == 1
    assert [g("abstain_rate_answerable", q) for q in ("pdfh:q1", "pdfh:q2", "pdfh:q5")] == [0, 1, 1]
    assert [g("false_recall_rate", q) for q in ("pdfh:u1", "pdfh:u2", "pdfh:u3", "pdfh:u4")] == [
        0,
        1,
        0,
        0,
    ]
    assert g("holder_correctness", "pdfh:u1") == 0 and g("temporal_correctness", "pdfh:u1") == 1
    assert g("temporal_correctness", "pdfh:u4") == 0 and g("holder_correctness", "pdfh:u4") == 1
    assert g("temporal_correctness", "pdfh:u2") == 1  # observed exactly at as_of is fine
    assert s.has_run.tolist() == [q not in ("pdfh:q5", "pdfh:u3") for q in s.query_id]
    rows = s.rows()
    assert rows[v["pdfh:q5"]]["latency_ms"] is None and rows[v["pdfh:u1"]]["recall@10"] is None
    assert rows[v["pdfh:q1"]]["alt/recall@10"] == 1.0


def _e(m, scope, metric):
    return m[scope][metric]


def test_pdf_aggregates(metrics):
    pdf = metrics["pdf"]
    assert pdf["recall@10"] | {"ci95": None} == {
        "value": 0.6,
        "n": 5,
        "denominator": 5,
        "ci95": None,
    }
    assert pdf["recall@100"]["value"] == pytest.approx(0.8)
    assert pdf["recall@1000"]["value"] == pytest.approx(0.8)
    assert pdf["mrr"]["value"] == pytest.approx((1 + 0.5 + 1 + 1 / 11 + 0) / 5)
    assert pdf["ndcg@10"]["value"] == pytest.approx(
        ((D(1) + D(3)) / (D(1) + D(2)) + D(2) + 1 / (D(1) + D(2))) / 5
    )
    assert (pdf["false_recall_rate"]["value"], pdf["false_recall_rate"]["n"]) == (0.25, 4)
    assert pdf["temporal_correctness"]["value"] == pytest.approx(8 / 9)
    assert pdf["holder_correctness"]["value"] == pytest.approx(8 / 9)
    assert pdf["temporal_correctness"]["denominator"] == 9
    assert pdf["abstain_rate_answerable"]["value"] == pytest.approx(0.4)
    assert pdf["cartridge_recall"]["value"] == pytest.approx(0.3)
    lat = [10, 20, 30, 40, 50, 60, 70]
    assert pdf["latency_p50_ms"] | {"ci95": None} == {
        "value": 40.0,
        "n": 7,
        "denominator": 9,
        "ci95": None,
    }
    assert pdf["latency_p95_ms"]["value"] == pytest.approx(np.percentile(lat, 95)) == 67.0


def test_shape_nulls_and_gates(metrics):
    assert list(metrics) == [
        "pdf",
        "conversation",
        "all",
        "by_source",
        "gates",
        "judgment_sets",
        "atom_level",
        "answer_context",
        "tie_breaking",
        "definitions",
    ]
    for scope in ("pdf", "conversation", "all"):
        assert list(metrics[scope]) == list(METRICS)
    conv = metrics["conversation"]
    # no unanswerable conversation item: the rate is undefined, not 0
    assert conv["false_recall_rate"] == {
        "value": None,
        "n": 0,
        "denominator": 0,
        "ci95": [None, None],
    }
    assert metrics["all"]["recall@10"]["denominator"] == 6
    assert metrics["all"]["latency_p50_ms"]["n"] == 8
    assert metrics["all"]["latency_p50_ms"]["denominator"] == 10
    assert set(metrics["by_source"]) == {"pdfh", "convh"}
    assert metrics["by_source"]["pdfh"]["recall@10"]["value"] == 0.6
    gates = {(g["scope"], g["metric"]): g for g in metrics["gates"]}
    assert len(gates) == 12
    assert gates[("pdf", "recall@10")]["pass"] is False
    assert gates[("pdf", "false_recall_rate")] == {
        "metric": "false_recall_rate",
        "scope": "pdf",
        "op": "<=",
        "threshold": 0.1,
        "value": 0.25,
        "pass": False,
        "silent": False,
        "why": "",
        "companion": {"metric": "abstain_rate_gated", "value": 0.4, "bound": 0.5},
    }
    assert gates[("pdf", "holder_correctness")]["pass"] is False  # 8/9 < 0.95
    assert gates[("conversation", "recall@10")]["pass"] is True
    assert gates[("conversation", "false_recall_rate")]["pass"] is None
    assert metrics["tie_breaking"] == TIE_BREAKING
    assert set(METRICS) <= set(metrics["definitions"])
    json.dumps(metrics, allow_nan=False)  # strict JSON: no NaN anywhere


def test_judgment_sets(metrics):
    alt = metrics["judgment_sets"]["alt"]
    assert list(alt) == ["pdf", "all"]  # q1 carries a non-empty list, q2 an empty one
    assert alt["pdf"]["recall@10"]["value"] == 1.0 and alt["pdf"]["recall@10"]["n"] == 1
    assert alt["pdf"]["mrr"]["value"] == pytest.approx(1 / 3)
    assert alt["pdf"]["ndcg@10"]["value"] == pytest.approx(D(3))
    assert alt["pdf"]["cartridge_recall"]["value"] == 1.0
    assert "false_recall_rate" not in alt["pdf"]


def test_intervals(metrics):
    for scope in ("pdf", "all"):
        for m in METRICS:
            e = metrics[scope][m]
            if e["value"] is None:
                continue
            lo, hi = e["ci95"]
            assert lo <= e["value"] + 1e-12 and e["value"] - 1e-12 <= hi, (scope, m)
    again = compute_metrics(RECORDS, ITEMS, ATOMS, RUN)
    assert again == metrics  # fixed seed: reproducible
    assert metrics["conversation"]["recall@10"]["ci95"] == [1.0, 1.0]  # one item


def test_bootstrap_ci():
    v = np.array([0.0] * 50 + [1.0] * 50)
    lo, hi = bootstrap_ci(v, "k")
    assert bootstrap_ci(v, "k") == (lo, hi)
    assert 0.38 < lo < 0.45 and 0.55 < hi < 0.62  # ~ 0.5 +- 1.96 * 0.05
    w = np.arange(100.0) ** 2
    assert bootstrap_ci(w, "other") != bootstrap_ci(w, "k")  # the key seeds the resamples
    assert bootstrap_ci(np.array([]), "k") == (None, None)
    assert bootstrap_ci(np.full(7, 0.3), "k") == pytest.approx((0.3, 0.3))
    lo50, hi50 = bootstrap_ci(np.arange(100.0), "p", statistic=50)
    assert lo50 < 49.5 < hi50


def test_ranking_kernel_directly():
    fh = FirstHits.from_lists([[1, 3], [0], [2, 2], []], [2, 1, 2, 0])
    assert recall_at_k(fh, 2).tolist()[:3] == [0.5, 0.0, 1.0]
    assert np.isnan(recall_at_k(fh, 2)[3])
    assert reciprocal_rank(fh).tolist()[:3] == [1.0, 0.0, 0.5]
    nd = ndcg_at_k(fh, 10)
    assert nd[0] == pytest.approx((D(1) + D(3)) / (D(1) + D(2)))
    assert nd[2] == pytest.approx(D(2) / (D(1) + D(2)))  # two regions, one atom: one gain


def test_graded_kernel_directly():
    # query 0: regions first hit at ranks 2 and 2 (one atom) with gains 1 and 7, and a third
    # (gain 3) never hit; query 1: no gains (equals ndcg@10); query 2: a gain-0 region
    fh = FirstHits.from_lists(
        [[2, 2, 0], [1, 3], [1, 2]], [3, 2, 2], gains=[[1.0, 7.0, 3.0], [1.0, 1.0], [0.0, 3.0]]
    )
    g = graded_ndcg_at_k(fh, 10)
    assert g[0] == pytest.approx(7 * D(2) / (7 * D(1) + 3 * D(2) + 1 * D(3)))  # max at a rank
    assert g[1] == pytest.approx(ndcg_at_k(fh, 10)[1])
    assert g[2] == pytest.approx(3 * D(2) / (3 * D(1)))  # grade 0 adds nothing
    assert recall_at_k(fh, 10)[2] == 1.0  # ... but counts in recall
    # the cut: a gain first hit at rank 11 is outside, and the ideal keeps the 10 largest
    fh = FirstHits.from_lists([[11] + [0] * 11], [12], gains=[[7.0] + [1.0] * 11])
    assert graded_ndcg_at_k(fh, 10)[0] == 0.0
    fh = FirstHits.from_lists([[1]], [1])  # no gains given: binary
    assert graded_ndcg_at_k(fh, 10)[0] == 1.0
    with pytest.raises(ValueError):
        FirstHits.from_lists([[1, 2]], [2], gains=[[1.0]])


# graded gold (CodeSearchNet-style grades 0-3) on pdf pages, scored end to end
GRADED_RECORDS = [
    rec(
        "pdfh:g1",
        [dict(page(1), grade=3), dict(page(2), grade=1), dict(page(3), grade=2)],
        judgments={"graded_alt": [dict(page(1), grade=1), dict(page(3), grade=3)]},
    ),
    rec("pdfh:g2", [dict(page(3, 1), grade=1), dict(page(3, 2), grade=3)]),
    rec("pdfh:g3", [page(2), page(3)]),
    rec("pdfh:g4", [dict(page(1), grade=0), dict(page(2), grade=2)]),
    rec("pdfh:gu", []),
]
GRADED_RUN = [
    # tie at 0.9 keeps the system's order: x1 (1), p2 (2); then p3 (3), p1 (4)
    {
        "query_id": "pdfh:g1",
        "hits": [["x1", 0.9], ["p2", 0.9], ["p3", 0.8], ["p1", 0.5]],
        "cartridge": [],
        "latency_ms": 1,
    },
    # one page atom hits both block golds: one gain, the larger (2**3 - 1)
    {"query_id": "pdfh:g2", "hits": [["p3", 1.0]], "cartridge": [], "latency_ms": 1},
    # ungraded gold: graded nDCG = nDCG; p3 and x2 tie, p3 returned first
    {
        "query_id": "pdfh:g3",
        "hits": [["x1", 2.0], ["p3", 1.0], ["x2", 1.0], ["p2", 1.0]],
        "cartridge": [],
        "latency_ms": 1,
    },
    {"query_id": "pdfh:g4", "hits": [["p1", 1.0], ["p2", 1.0]], "cartridge": [], "latency_ms": 1},
    {"query_id": "pdfh:gu", "hits": [["p1", 1.0]], "cartridge": [], "latency_ms": 1},
]


def test_graded_ndcg_by_hand():
    s = score_items(GRADED_RECORDS, ITEMS, ATOMS, GRADED_RUN)
    v = {q: i for i, q in enumerate(s.query_id)}
    g = lambda q, m="ndcg_graded@10": s.values[m][v[q]]
    assert g("pdfh:g1") == pytest.approx(
        (1 * D(2) + 3 * D(3) + 7 * D(4)) / (7 * D(1) + 3 * D(2) + 1 * D(3)), abs=1e-15
    )
    assert g("pdfh:g1", "ndcg@10") == pytest.approx((D(2) + D(3) + D(4)) / (D(1) + D(2) + D(3)))
    assert g("pdfh:g2") == pytest.approx(7 / (7 + D(2)), abs=1e-15)
    assert (
        g("pdfh:g3")
        == g("pdfh:g3", "ndcg@10")
        == pytest.approx((D(2) + D(4)) / (D(1) + D(2)), abs=1e-15)
    )
    assert g("pdfh:g4") == pytest.approx(3 * D(2) / 3, abs=1e-15)
    assert g("pdfh:g4", "recall@10") == 1.0
    assert np.isnan(g("pdfh:gu"))
    # under the alternative set, its own grades: p3 (gain 7) at rank 3, p1 (gain 1) at 4
    alt = s.judgments["graded_alt"]["ndcg_graded@10"]
    assert alt[v["pdfh:g1"]] == pytest.approx((7 * D(3) + 1 * D(4)) / (7 * D(1) + 1 * D(2)))
    assert np.isnan(alt[v["pdfh:g2"]])
    m = compute_metrics(GRADED_RECORDS, ITEMS, ATOMS, GRADED_RUN)
    assert m["pdf"]["ndcg_graded@10"]["n"] == 4
    assert m["judgment_sets"]["graded_alt"]["pdf"]["ndcg_graded@10"]["n"] == 1
    assert "ndcg_graded@10" in format_table(m)


def test_judgments_on_an_unanswerable_record_are_refused():
    from membench.core.errors import InputError

    bad = [rec("pdfh:gu", [], judgments={"alt": [page(1)]})]
    with pytest.raises(InputError, match="JUDGMENT_ON_UNANSWERABLE|unanswerable record"):
        score_items(bad, ITEMS, ATOMS, [])
    ok = [rec("pdfh:gu", [], judgments={"alt": []})]
    assert len(score_items(ok, ITEMS, ATOMS, [])) == 1


def test_format_table(metrics):
    text = format_table(metrics)
    assert "pdf" in text and "recall@10" in text and "5/5" in text and "7/9" in text
    assert "FAIL" in text and "n/a (no items)" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("pdf") and " recall@10 " in ln)
    assert "0.6000" in line
    # the judgment sets' figures, with n
    assert "judgment sets" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("alt:pdf ") and " mrr " in ln)
    assert "0.3333" in line and "1/1" in line


def test_atom_level_view_by_hand():
    s = score_items(RECORDS, ITEMS, ATOMS, RUN)
    v = {q: i for i, q in enumerate(s.query_id)}
    a = lambda m, q: s.atom_level[m][v[q]]
    # q1: the same as region level (one atom per gold page)
    assert a("recall@10", "pdfh:q1") == 1 and a("mrr", "pdfh:q1") == 1
    assert a("ndcg@10", "pdfh:q1") == pytest.approx((D(1) + D(3)) / (D(1) + D(2)), abs=1e-15)
    # q3: one page atom hits both block golds: one relevant document, so nDCG is 1 here
    # while the region-level nDCG is 1 / (D(1) + D(2))
    assert s.atom_qrels[v["pdfh:q3"]] == {"p3": 1}
    assert a("ndcg@10", "pdfh:q3") == 1 and s.values["ndcg@10"][v["pdfh:q3"]] < 1
    assert a("mrr", "pdfh:q2") == 0.5 and a("ndcg@10", "pdfh:q2") == pytest.approx(D(2))
    assert a("recall@10", "pdfh:q4") == 0 and a("recall@100", "pdfh:q4") == 1
    assert a("mrr", "pdfh:q4") == pytest.approx(1 / 11)
    assert a("recall@10", "pdfh:q5") == 0  # nothing returned: 0, still counted
    assert np.isnan(a("mrr", "pdfh:u1")) and s.atom_qrels[v["pdfh:u1"]] == {}
    m = compute_metrics(RECORDS, ITEMS, ATOMS, RUN)["atom_level"]
    assert m["pdf"]["recall@10"]["denominator"] == 5 and m["all"]["mrr"]["n"] == 6
    assert "trec_eval" in m["about"]
