"""Context cost: how much a system hands over per query, and recall within a token budget, counted
from what its atoms hold, without a model (docs/metrics.md, "Tokens: whitespace words, and
what they are in word pieces", says why these counts and gives the measured ratios).

Start at :func:`cartridge_cost` (a cartridge's :class:`CostAtom` s -> ``tokens``, ``area``,
``seconds``) and :func:`recall_at_budget` (for B in :data:`BUDGETS`):

* **tokens** (:func:`count_tokens`): the words of :meth:`str.split`, summed over the atoms
  (text handed over twice, by two overlapping atoms, counts twice);
* **area**, for pictures: per item the union of its atoms' regions as a share of the item
  (a whole image is 1.0; screenshot boxes share ``meta.width x meta.height``), summed over
  items; **seconds**, for video: per item the length of the union of its atoms' spans, summed.
  An empty cartridge costs nothing;
* **recall at B tokens**: the share of an item's gold regions hit (SPEC section 7) by the atoms
  taken in rank order while their running token total stays <= B; the first atom that would
  pass B ends the prefix (no atom after it is taken). NaN for an item without gold.

Touches nothing itself: the caller hands each atom's place, the text membench reads there
(:class:`~membench.metrics.extent_text.ExtentText`, never the text the system reports) and its
item's ``meta``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from .. import modalities
from ..contract.schema import Gold

#: the token budgets recall is reported at (words of :func:`count_tokens`)
BUDGETS: tuple[int, ...] = (256, 1024, 4096)

A = TypeVar("A")
G = TypeVar("G")


def count_tokens(text: str) -> int:
    """The whitespace-separated words of ``text`` (module docstring)."""
    return len(text.split())


@dataclass(frozen=True)
class CostAtom:
    """One returned atom as the context cost reads it: its item, modality and extent, the
    text membench reads for that extent, and its item's ``meta`` (sizes, duration)."""

    source_id: str
    modality: str
    extent: dict[str, Any]
    text: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def tokens(self) -> int:
        return count_tokens(self.text)


@dataclass(frozen=True)
class Cost:
    """What one cartridge hands over (module docstring)."""

    atoms: int
    tokens: int
    area: float  # whole pictures' worth: per item the union share of its area, summed
    seconds: float  # per video the length of the union of its spans, summed


def union_area(boxes: Sequence[Sequence[float]]) -> float:
    """The area covered by boxes ``[x0, y0, x1, y1]`` (each place counted once)."""
    xs = sorted({float(b[0]) for b in boxes} | {float(b[2]) for b in boxes})
    area = 0.0
    for x0, x1 in zip(xs, xs[1:]):
        top, covered = -math.inf, 0.0
        for y0, y1 in sorted(
            (float(b[1]), float(b[3])) for b in boxes if b[0] <= x0 and b[2] >= x1
        ):
            if y1 > top:
                covered += y1 - max(y0, top)
                top = y1
        area += covered * (x1 - x0)
    return area


def union_length(spans: Sequence[tuple[float, float]]) -> float:
    """The length covered by spans ``(start, end)`` (each instant counted once)."""
    total, end = 0.0, -math.inf
    for s, e in sorted(spans):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


def _whole(extents: list[dict], meta: dict) -> float:
    return 1.0


def _box_share(extents: list[dict], meta: dict) -> float:
    if "width" not in meta:
        raise ValueError("a screenshot's box share needs its item's meta.width and meta.height")
    return union_area([e["bbox"] for e in extents]) / (meta["width"] * meta["height"])


def _span_seconds(extents: list[dict], meta: dict) -> float:
    return union_length([(float(e["t_start"]), float(e["t_end"])) for e in extents])


#: per modality: the share of an item's picture its atoms' extents cover
AREA: dict[str, Callable[[list[dict], dict], float]] = {
    "image": _whole,
    "ui_screenshot": _box_share,
}
#: per modality: the seconds of an item its atoms' extents cover
SECONDS: dict[str, Callable[[list[dict], dict], float]] = {"video": _span_seconds}


def _per_item(
    atoms: Sequence[CostAtom], measure: dict[str, Callable[[list[dict], dict], float]]
) -> float:
    by_item: dict[str, list[CostAtom]] = {}
    for a in atoms:
        if a.modality in measure:
            by_item.setdefault(a.source_id, []).append(a)
    return sum(
        measure[grp[0].modality]([a.extent for a in grp], grp[0].meta) for grp in by_item.values()
    )


def cartridge_cost(atoms: Sequence[CostAtom]) -> Cost:
    """The :class:`Cost` of handing over ``atoms`` (module docstring)."""
    return Cost(
        atoms=len(atoms),
        tokens=sum(a.tokens for a in atoms),
        area=_per_item(atoms, AREA),
        seconds=_per_item(atoms, SECONDS),
    )


def taken(tokens: Sequence[int], budget: int) -> int:
    """How many leading atoms a budget takes: the longest prefix of ``tokens`` whose total is
    <= ``budget``."""
    total = 0
    for i, t in enumerate(tokens):
        total += t
        if total > budget:
            return i
    return len(tokens)


def hits_region(atom: CostAtom, gold: Gold) -> bool:
    """SPEC section 7's hit: same item, and the extents overlap by the modality's rule."""
    return atom.source_id == gold.source_id and modalities.region_hit(
        atom.modality, atom.extent, gold.region
    )


def recall_at_budget(
    ranked: Sequence[tuple[A, int]], gold: Sequence[G], hits: Callable[[A, G], bool], budget: int
) -> float:
    """The share of ``gold`` hit (``hits(atom, gold)``) by the atoms of ``ranked`` (``(atom,
    tokens)`` in rank order) that :func:`taken` takes within ``budget``; NaN without gold."""
    if not gold:
        return math.nan
    kept = [a for a, _ in ranked[: taken([t for _, t in ranked], budget)]]
    return sum(any(hits(a, g) for a in kept) for g in gold) / len(gold)


def recall_at_budgets(
    ranked: Sequence[tuple[A, int]],
    gold: Sequence[G],
    hits: Callable[[A, G], bool],
    budgets: Sequence[int] = BUDGETS,
) -> dict[int, float]:
    """:func:`recall_at_budget` at each budget."""
    return {b: recall_at_budget(ranked, gold, hits, b) for b in budgets}


__all__ = [
    "BUDGETS",
    "Cost",
    "CostAtom",
    "cartridge_cost",
    "count_tokens",
    "hits_region",
    "recall_at_budget",
    "recall_at_budgets",
    "taken",
    "union_area",
    "union_length",
]
