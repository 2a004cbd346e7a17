"""membench's ranking measures against independent implementations (pytrec_eval, ranx).

The synthetic worlds map atoms to gold regions 1:1 (tests/fixtures/metrics/synth.py), so
region recall equals document recall with "relevant document = the atom of a gold region".
Runs have tied scores, duplicate hits, empty hit lists and missing run lines. trec_eval breaks
score ties by document id (descending) and keeps scores as 32-bit floats, while membench keeps
the system's order for ties (SPEC section 7, documented tie-breaking); so the reference tools
get rank-derived scores (len - rank), which encode membench's order without ties. Two tests
below show, on purpose, the naive input giving a different value.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from membench.core.errors import InputError
from membench.metrics import order_hits, score_items
from membench.trec.evaluate import evaluate_trec

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "metrics"))
import synth

pytrec_eval = pytest.importorskip("pytrec_eval")

TREC_NAMES = {
    "recall@10": "recall_10",
    "recall@100": "recall_100",
    "recall@1000": "recall_1000",
    "mrr": "recip_rank",
    "ndcg@10": "ndcg_cut_10",
}


def _qrels(world: synth.World) -> dict[str, dict[str, int]]:
    return {q: {a: 1 for a in atoms} for q, atoms in world.gold_atoms.items() if atoms}


def _rank_derived(rows: list[dict]) -> dict[str, dict[str, float]]:
    """membench's order as tie-free scores (what pytrec_eval and ranx are given)."""
    out = {}
    for row in rows:
        ranked = order_hits(row["hits"])
        out[row["query_id"]] = {a: float(len(ranked) - i) for i, a in enumerate(ranked)}
    return out


def _pytrec(qrels, run) -> dict[str, dict[str, float]]:
    ev = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_NAMES.values()))
    return ev.evaluate({q: d for q, d in run.items() if d})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_jsonl_path_matches_pytrec_eval(seed):
    w = synth.make_world(seed, queries=40)
    rows = synth.random_run(w, seed, tie_levels=2)
    scores = score_items(w.records, w.items, w.atoms, rows)
    qrels = _qrels(w)
    ref = _pytrec(qrels, _rank_derived(rows))
    # the run must exercise what it claims to: ties, empty lists, missing lines
    assert any(len({s for _, s in r["hits"]}) < len(r["hits"]) for r in rows)
    assert any(not r["hits"] for r in rows)
    assert len(rows) < len(w.records)
    checked = 0
    for i, qid in enumerate(scores.query_id):
        if qid not in qrels:
            assert np.isnan(scores.values["recall@10"][i])
            continue
        for m, t in TREC_NAMES.items():
            expected = ref.get(qid, {}).get(t, 0.0)  # no run line / no hits: 0
            assert abs(scores.values[m][i] - expected) <= 1e-9, (qid, m)
            checked += 1
    assert checked > 100
    assert 0 < np.nanmean(scores.values["recall@10"]) < 1  # not a degenerate run


@pytest.mark.parametrize("seed", [3, 4])
def test_trec_path_matches_pytrec_eval(tmp_path, seed):
    w = synth.make_world(seed, queries=40)
    rows = synth.random_run(w, seed, p_dup=0.0)
    run = _rank_derived(rows)
    qrels = _qrels(w)
    path = tmp_path / "run.trec"
    with open(path, "w") as f:
        for q, docs in run.items():
            f.writelines(
                f"{q} Q0 {d} {rank} {s} t\n" for rank, (d, s) in enumerate(docs.items(), 1)
            )
    ours = evaluate_trec(path, qrels)
    ref = _pytrec(qrels, run)
    assert ours["n"] == len(qrels)
    for i, q in enumerate(ours["queries"]):
        for m, t in TREC_NAMES.items():
            assert abs(ours["per_query"][m][i] - ref.get(q, {}).get(t, 0.0)) <= 1e-9, (q, m)


@pytest.mark.parametrize("seed", [5, 6])
def test_trec_path_equals_jsonl_path_with_ties(tmp_path, seed):
    """Raw tied scores, written in the system's order (rank column = position): both membench
    paths apply the same tie rule. (A duplicate hit is refused in a run line, and dropped
    after its first position by the reader of plain TREC files.)"""
    w = synth.make_world(seed, queries=40)
    with pytest.raises(InputError, match="DUPLICATE_HIT"):
        score_items(w.records, w.items, w.atoms, synth.random_run(w, seed, p_dup=0.2))
    rows = synth.random_run(w, seed, tie_levels=2)
    scores = score_items(w.records, w.items, w.atoms, rows)
    path = tmp_path / "run.trec"
    with open(path, "w") as f:
        for r in rows:
            f.writelines(
                f"{r['query_id']} Q0 {a} {rank} {s} t\n" for rank, (a, s) in enumerate(r["hits"], 1)
            )
    qrels = _qrels(w)
    ours = evaluate_trec(path, qrels)
    pos = {q: i for i, q in enumerate(scores.query_id)}
    for i, q in enumerate(ours["queries"]):
        for m in TREC_NAMES:
            assert ours["per_query"][m][i] == pytest.approx(scores.values[m][pos[q]], abs=1e-12)


def test_naive_tied_input_differs_from_trec_eval():
    """The documented tie difference: two atoms tie at score 1.0, the system returned "a"
    first, the relevant one is "b". membench keeps the system's order (b at rank 2, MRR 0.5);
    trec_eval orders ties by document id descending, puts "b" first and reports 1.0. With
    rank-derived scores it agrees with membench."""
    w = synth.make_world(0, modalities=("conversation",), queries=0)
    a_id = w.atom_at[("conversationsyn:h0s0", 0)]
    b_id = w.atom_at[("conversationsyn:h0s0", 1)]
    lo, hi = sorted([a_id, b_id])
    rec = synth.record(
        "conversationsyn:q0",
        "conversation",
        "conversationsyn/h0",
        [
            {
                "source_id": "conversationsyn:h0s0",
                "region": synth.slot_region("conversation", 1 if hi == b_id else 0),
            }
        ],
        synth.T0 + synth.timedelta(days=9),
    )
    rows = [
        {
            "query_id": rec["query_id"],
            "hits": [[lo, 1.0], [hi, 1.0]],
            "cartridge": [],
            "latency_ms": 1.0,
        }
    ]
    scores = score_items([rec], w.items, w.atoms, rows)
    assert scores.values["mrr"][0] == 0.5
    qrels = {rec["query_id"]: {hi: 1}}
    naive = _pytrec(qrels, {rec["query_id"]: {lo: 1.0, hi: 1.0}})
    assert naive[rec["query_id"]]["recip_rank"] == 1.0  # trec_eval: docno descending
    derived = _pytrec(qrels, _rank_derived(rows))
    assert derived[rec["query_id"]]["recip_rank"] == 0.5


def test_trec_eval_rounds_scores_to_float32():
    """Scores 99.458536 > 99.458532 are distinct doubles but the same float32: trec_eval sees a
    tie and, by docno descending, ranks the relevant "d2" first; membench ranks it second."""
    qrels = {"q": {"d2": 1}}
    run = {"q": {"d1": 99.458536, "d2": 99.458532}}
    assert np.float32(99.458536) == np.float32(99.458532)
    assert _pytrec(qrels, run)["q"]["recip_rank"] == 1.0
    assert order_hits([["d1", 99.458536], ["d2", 99.458532]]) == ["d1", "d2"]  # MRR 0.5


@pytest.mark.parametrize("seed", [7])
def test_jsonl_path_matches_ranx(seed):
    ranx = pytest.importorskip("ranx")
    import warnings

    w = synth.make_world(seed, queries=30, unanswerable=0.0)
    rows = synth.random_run(w, seed, p_missing=0.0, p_empty=0.0)
    scores = score_items(w.records, w.items, w.atoms, rows)
    qrels = _qrels(w)
    run = _rank_derived(rows)
    metrics = ["recall@10", "recall@100", "recall@1000", "mrr", "ndcg@10"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), metrics, return_mean=False)
    order = sorted(qrels)  # ranx returns per-query values in sorted query id order
    pos = {q: i for i, q in enumerate(scores.query_id)}
    for m in metrics:
        ours = np.array([scores.values[m][pos[q]] for q in order])
        np.testing.assert_allclose(np.asarray(res[m]), ours, rtol=0, atol=1e-9, err_msg=m)


def test_judgment_sets_match_pytrec_eval():
    """An alternative judgment set is scored like the primary one, over the items that carry
    a non-empty list under it."""
    w = synth.make_world(8, queries=40, judgments=True)
    rows = synth.random_run(w, 8, tie_levels=2)
    scores = score_items(w.records, w.items, w.atoms, rows)
    alt_qrels = {}
    for r in w.records:
        alt = (r.get("judgments") or {}).get("alt")
        if alt:
            atoms = [w.atom_at[(g["source_id"], _slot(r["modality"], g["region"]))] for g in alt]
            alt_qrels[r["query_id"]] = {a: 1 for a in atoms}
    assert len(alt_qrels) > 20
    ref = _pytrec(alt_qrels, _rank_derived(rows))
    vals = scores.judgments["alt"]
    for i, qid in enumerate(scores.query_id):
        if qid not in alt_qrels:
            assert np.isnan(vals["recall@10"][i])
            continue
        for m, t in TREC_NAMES.items():
            assert abs(vals[m][i] - ref.get(qid, {}).get(t, 0.0)) <= 1e-9, (qid, m)


@pytest.mark.parametrize("seed", [9, 10])
def test_graded_ndcg_matches_pytrec_eval(seed):
    """Graded nDCG@10 (gain 2**grade - 1) under the primary gold and an alternative set is
    trec_eval's ndcg_cut_10 with the gains as qrels relevance (atoms and regions are 1:1 here,
    so the region and the document views agree); recall and MRR stay binary. Runs with ties,
    duplicates, empty lists and missing lines; grades 0-3, gain-0 regions included."""
    w = synth.make_world(seed, queries=40, judgments=True, grades=True)
    rows = synth.random_run(w, seed, tie_levels=2)
    scores = score_items(w.records, w.items, w.atoms, rows)
    run = _rank_derived(rows)
    for name in ("gold", "alt"):
        qrels = {}
        for r in w.records:
            golds = r["gold"] if name == "gold" else (r.get("judgments") or {}).get("alt")
            if not golds:
                continue
            atoms = (
                w.gold_atoms[r["query_id"]]
                if name == "gold"
                else [w.atom_at[(g["source_id"], _slot(r["modality"], g["region"]))] for g in golds]
            )
            rel = {}
            for g, a in zip(golds, atoms, strict=True):
                rel[a] = max(rel.get(a, 0), 2 ** g["grade"] - 1)
            qrels[r["query_id"]] = rel
        vals = scores.values if name == "gold" else scores.judgments["alt"]
        ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(
            {q: d for q, d in run.items() if d and q in qrels}
        )
        checked = graded = 0
        for i, qid in enumerate(scores.query_id):
            if qid not in qrels:
                assert np.isnan(vals["ndcg_graded@10"][i])
                continue
            want = ref.get(qid, {}).get("ndcg_cut_10", 0.0)
            assert abs(vals["ndcg_graded@10"][i] - want) <= 1e-9, (name, qid)
            checked += 1
            graded += abs(vals["ndcg_graded@10"][i] - vals["ndcg@10"][i]) > 1e-6
        assert checked > 20 and graded > 5, (name, checked, graded)  # the grades mattered


def _slot(m: str, region: dict) -> int:
    return next(j for j in range(synth.slots(m)) if synth.slot_region(m, j) == region)
