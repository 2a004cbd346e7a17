"""Ranked-list measures: recall@k, MRR, nDCG@k (SPEC section 7) and the tie-breaking rule.

Everything here works on :class:`FirstHits`, a compact description of a set of queries: for
each gold region that is hit at all, the (1-based) rank of the *first* atom hitting it. The
JSONL path (:mod:`membench.metrics.score`) builds it by resolving regions against atoms; the
TREC path (:mod:`membench.trec.evaluate`) builds it from qrels (one relevant document = one gold
region). The shared formulas:

* ``recall@k``  = |{regions with first rank <= k}| / |gold| (below 1 for a perfect ranking of
  an item with more than k gold regions, as in trec_eval);
* ``MRR``       = 1 / (smallest first rank), 0 when no region is hit;
* ``nDCG@k``    = DCG / IDCG with *binary* gain 1 at every *distinct* first rank (one atom
  that covers two gold regions earns one gain); ``DCG = sum gain / log2(rank + 1)`` over
  ranks <= k and ``IDCG = sum_{i=1..min(|gold|, k)} 1 / log2(i + 1)``;
* ``ndcg_graded@k`` = the same with gain the largest ``2**grade - 1`` among the regions first
  hit at a rank (1 for an ungraded region; a region of grade 0 counts in recall, adds no gain);
  IDCG@k sums the ``min(|gold|, k)`` largest region gains, sorted descending.

Queries with no gold (``n_gold == 0``) get NaN: they are outside these measures' denominator.
Ranks come already ordered by the run protocol's tie-breaking
(:data:`membench.contract.protocol.TIE_BREAKING`, :func:`~membench.contract.protocol.order_hits`).
Touches nothing: arrays in, arrays out. docs/runs.md, "Metrics", gives the sources and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class FirstHits:
    """Per query: ``n_gold[q]`` gold regions; per gold region that is hit, its query ``q``
    and the 1-based ``rank`` of the first atom that hits it (regions never hit are absent)."""

    n_gold: np.ndarray  # int64 [n_queries]
    q: np.ndarray  # int64 [n_hit_regions]
    rank: np.ndarray  # int64 [n_hit_regions], >= 1
    # graded gains (None: every region gains 1): the gain of each hit region, aligned with
    # ``q``/``rank``, and of every region (hit or not) with its query, for the ideal DCG
    gain: np.ndarray | None = None  # float64 [n_hit_regions]
    all_q: np.ndarray | None = None  # int64 [n_regions]
    all_gain: np.ndarray | None = None  # float64 [n_regions]

    @classmethod
    def from_lists(
        cls,
        per_query: Sequence[Sequence[int]],
        n_gold: Sequence[int],
        gains: Sequence[Sequence[float]] | None = None,
    ) -> FirstHits:
        """``per_query[i]`` lists the first-hit ranks (1-based; 0 or negative = not hit) of
        query i's gold regions; ``gains[i]`` (optional) their gains, aligned."""
        qs, rs, gs, aq, ag = [], [], [], [], []
        for i, ranks in enumerate(per_query):
            g = gains[i] if gains is not None else None
            if g is not None and len(g) != len(ranks):
                raise ValueError(f"query {i}: {len(ranks)} regions but {len(g)} gains")
            for j, r in enumerate(ranks):
                if g is not None:
                    aq.append(i)
                    ag.append(g[j])
                if r > 0:
                    qs.append(i)
                    rs.append(r)
                    if g is not None:
                        gs.append(g[j])
        fh = cls(
            np.asarray(n_gold, dtype=np.int64),
            np.asarray(qs, dtype=np.int64),
            np.asarray(rs, dtype=np.int64),
        )
        if gains is not None:
            fh.gain = np.asarray(gs, dtype=np.float64)
            fh.all_q = np.asarray(aq, dtype=np.int64)
            fh.all_gain = np.asarray(ag, dtype=np.float64)
        return fh

    @property
    def n_queries(self) -> int:
        return len(self.n_gold)

    def _defined(self, values: np.ndarray) -> np.ndarray:
        values = values.astype(np.float64)
        values[self.n_gold <= 0] = np.nan
        return values


def recall_at_k(fh: FirstHits, k: int) -> np.ndarray:
    """Per query: share of its gold regions hit by an atom ranked <= k (NaN if no gold)."""
    inside = fh.rank <= k
    count = np.bincount(fh.q[inside], minlength=fh.n_queries)
    with np.errstate(invalid="ignore", divide="ignore"):
        return fh._defined(count / np.maximum(fh.n_gold, 1))


def reciprocal_rank(fh: FirstHits) -> np.ndarray:
    """Per query: 1 / rank of the first atom hitting any gold region; 0 if none (NaN if no
    gold)."""
    best = np.full(fh.n_queries, np.inf)
    np.minimum.at(best, fh.q, fh.rank.astype(np.float64))
    return fh._defined(1.0 / best)  # 1/inf = 0


_LOG2 = 1.0 / np.log2(np.arange(2, 10_002, dtype=np.float64))  # 1/log2(rank+1), rank 1..


def discount(rank: np.ndarray) -> np.ndarray:
    """1 / log2(rank + 1)."""
    rank = np.asarray(rank, dtype=np.int64)
    if rank.size and rank.max() <= len(_LOG2):
        return _LOG2[rank - 1]
    return 1.0 / np.log2(rank + 1.0)


def ideal_dcg(n_gold: np.ndarray, k: int) -> np.ndarray:
    """IDCG@k for binary gains: sum_{i=1..min(n_gold, k)} 1/log2(i+1)."""
    cum = np.concatenate([[0.0], np.cumsum(discount(np.arange(1, k + 1)))])
    return cum[np.clip(np.asarray(n_gold, dtype=np.int64), 0, k)]


def ndcg_at_k(fh: FirstHits, k: int) -> np.ndarray:
    """Per query nDCG@k with binary gain at each distinct first-hit rank <= k (NaN if no
    gold)."""
    inside = fh.rank <= k
    q, r = fh.q[inside], fh.rank[inside]
    if len(q):
        # one gain per (query, rank): an atom hitting several new regions gains once
        key = np.unique(q * (k + 1) + r)
        q, r = key // (k + 1), key % (k + 1)
    dcg = (
        np.bincount(q, weights=discount(r), minlength=fh.n_queries)
        if len(q)
        else np.zeros(fh.n_queries)
    )
    idcg = ideal_dcg(fh.n_gold, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return fh._defined(np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0))


def graded_gain(grade: int | None) -> float:
    """A region's gain in graded nDCG: ``2**grade - 1``; 1 for an ungraded region."""
    return 1.0 if grade is None else float(2 ** int(grade) - 1)


def graded_ndcg_at_k(fh: FirstHits, k: int) -> np.ndarray:
    """Per query graded nDCG@k (module docstring): the largest region gain at each distinct
    first-hit rank <= k over the ideal DCG of the ``min(|gold|, k)`` largest region gains
    (NaN if no gold). Without gains (``fh.gain is None``) it is :func:`ndcg_at_k`."""
    if fh.gain is None:
        return ndcg_at_k(fh, k)
    inside = fh.rank <= k
    q, r, g = fh.q[inside], fh.rank[inside], fh.gain[inside]
    dcg = np.zeros(fh.n_queries)
    if len(q):
        # one gain per (query, rank): the largest gain among the regions first hit there
        key = q * (k + 1) + r
        uniq, inv = np.unique(key, return_inverse=True)
        best = np.full(len(uniq), -np.inf)
        np.maximum.at(best, inv, g)
        uq, ur = uniq // (k + 1), uniq % (k + 1)
        dcg = np.bincount(uq, weights=best * discount(ur), minlength=fh.n_queries)
    idcg = np.zeros(fh.n_queries)
    if fh.all_q is not None and len(fh.all_q):
        order = np.lexsort((-fh.all_gain, fh.all_q))  # by query, gains descending
        aq, ag = fh.all_q[order], fh.all_gain[order]
        start = np.searchsorted(aq, aq, side="left")
        pos = np.arange(len(aq)) - start + 1  # 1-based place within its query
        keep = pos <= k
        idcg = np.bincount(aq[keep], weights=ag[keep] * discount(pos[keep]), minlength=fh.n_queries)
    with np.errstate(invalid="ignore", divide="ignore"):
        return fh._defined(np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0))


RANK_MEASURES = ("recall@10", "recall@100", "recall@1000", "mrr", "ndcg@10")
#: with graded gains (:func:`rank_measures` with ``graded=True``)
GRADED_MEASURES = ("ndcg_graded@10",)


def rank_measures(fh: FirstHits, *, graded: bool = False) -> dict[str, np.ndarray]:
    """recall@10/100/1000, mrr and ndcg@10 per query (and ndcg_graded@10 with ``graded``)."""
    out = {
        "recall@10": recall_at_k(fh, 10),
        "recall@100": recall_at_k(fh, 100),
        "recall@1000": recall_at_k(fh, 1000),
        "mrr": reciprocal_rank(fh),
        "ndcg@10": ndcg_at_k(fh, 10),
    }
    if graded:
        out["ndcg_graded@10"] = graded_ndcg_at_k(fh, 10)
    return out
