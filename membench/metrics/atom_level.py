"""The atom-level view of a run: what trec_eval-style tools (trec_eval, pytrec_eval, ranx,
ir_measures) compute from ``membench export`` files, reproduced exactly in ``metrics.json``
(``atom_level``). docs/runs.md, "Two views: regions and atoms", says where it differs from
membench's region-level figures and why.

**Relevance.** An atom of the run (``atoms.jsonl``) is relevant to an answerable query when it
hits one of the query's gold regions (the same overlap rule as everywhere,
:mod:`membench.metrics.resolve`); its grade is the highest ``grade`` among the regions it hits
(1 where the judgment set is not graded). These are the lines of ``qrels.trec``.

**Measures** (per answerable item, over its ranked, de-duplicated hits, membench's order,
:data:`membench.contract.protocol.TIE_BREAKING`), with trec_eval's definitions (``recall_k``,
``recip_rank``, ``ndcg_cut_10``):

* ``recall@k``: relevant atoms in the top k / relevant atoms;
* ``mrr``: 1 / rank of the first relevant atom (the whole list);
* ``ndcg@10``: DCG of the grades in the top 10 (``grade / log2(rank + 1)``) over the DCG of the
  relevant atoms' grades sorted descending (the top 10 of them).

Every answerable item counts, over the same denominator as membench's own figures: an item
with no relevant atom in the run scores 0, as trec_eval does for a query of the qrels missing
from the run (``-c``). Touches nothing: the run's atoms, hits and gold in, figures out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .resolve import AtomTable, GoldRef

ATOM_MEASURES = ("recall@10", "recall@100", "recall@1000", "mrr", "ndcg@10")
RECALL_KS = (10, 100, 1000)
NDCG_K = 10


def relevant_atoms(
    table: AtomTable, gold: Sequence[GoldRef], grades: Sequence[int | None]
) -> dict[int, int]:
    """Atom index -> grade for the atoms of ``table`` that hit a region of ``gold`` (grade:
    the highest of the regions it hits; an ungraded region counts 1)."""
    out: dict[int, int] = {}
    for g, grade in zip(gold, grades, strict=True):
        cand = table.of_source(g.source)
        if not len(cand):
            continue
        hit = cand[table.hit_mask(g, cand)]
        value = 1 if grade is None else int(grade)
        for a in hit.tolist():
            if value > out.get(a, 0):
                out[a] = value
    return {a: v for a, v in out.items() if v > 0}


def atom_measures(ranked: np.ndarray, rel: dict[int, int]) -> dict[str, float]:
    """The atom-level measures of one item: ``ranked`` atom indices (de-duplicated, in rank
    order) against ``rel`` (atom index -> grade >= 1)."""
    if not rel:
        return {m: 0.0 for m in ATOM_MEASURES}
    gains = np.array([rel.get(a, 0) for a in ranked.tolist()], dtype=np.float64)
    relevant = gains > 0
    out = {f"recall@{k}": float(relevant[:k].sum()) / len(rel) for k in RECALL_KS}
    first = np.flatnonzero(relevant)
    out["mrr"] = 1.0 / (first[0] + 1) if len(first) else 0.0
    disc = 1.0 / np.log2(np.arange(2, NDCG_K + 2))
    dcg = float((gains[:NDCG_K] * disc[: len(gains[:NDCG_K])]).sum())
    ideal = np.sort(np.array(list(rel.values()), dtype=np.float64))[::-1][:NDCG_K]
    out["ndcg@10"] = dcg / float((ideal * disc[: len(ideal)]).sum())
    return out
