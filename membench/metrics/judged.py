"""Judged@k: the share of a query's top k ranked atoms that were judged at all (ir_measures'
``Judged@k``), so that a recall over sparse judgments can be read as the lower bound it is.

An atom is **judged** for an answerable item when it hits (the overlap rule of every recall,
:meth:`membench.metrics.resolve.AtomTable.hits_any`) a region of the item's gold or of any of
its alternative judgment sets (``judgments``), whatever the region's grade. Per item:
judged atoms among the first ``min(k, n)`` of its ``n`` ranked, de-duplicated hits (membench's
order, :data:`membench.contract.protocol.TIE_BREAKING`) over ``min(k, n)``, as ir_measures'
``judged`` provider divides (a cutoff past the run's length is cut to it); an item with no hit
scores 0, as ir_measures scores a query of the qrels missing from the run. Unanswerable items
have no judgment: outside the denominator (NaN), as a query outside the qrels is for
ir_measures. Why and what it shows: ``docs/metrics.md``, "Judged@10".

Reads nothing; called per item by :func:`membench.metrics.score.score_items`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .resolve import AtomTable, GoldRef

#: the cutoff of the registry's ``judged@10``
JUDGED_K = 10
JUDGED = f"judged@{JUDGED_K}"


def judged_at_k(
    table: AtomTable, judged: Sequence[GoldRef], ranked: np.ndarray, k: int = JUDGED_K
) -> float:
    """The share of ``ranked[:k]`` (atom indices, de-duplicated, in rank order) that hit a
    region of ``judged`` (the item's gold and every judgment set's regions); 0 when nothing
    was ranked."""
    top = np.asarray(ranked, dtype=np.int64)[:k]
    if not len(top):
        return 0.0
    return float(table.hits_any(judged, top).sum()) / len(top)


__all__ = ["JUDGED", "JUDGED_K", "judged_at_k"]
