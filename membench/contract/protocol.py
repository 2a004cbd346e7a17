"""The system protocol (SPEC section 6).

A memory system is one multi-tenant instance for a whole split:

1. ``ingest(items, corpus_root)``: it gets every source item of the split (all holders), reads
   them (``item.path`` relative to ``corpus_root``, or ``item.content``), chunks them itself and
   returns its :class:`Atom` s: opaque ids plus ``source_id``, ``extent``, ``holder`` and
   ``observed_at``. The harness never hands it query ids or gold.
2. ``query(question, scope, as_of)`` per query: ranked ``hits`` (atom id, score; at most
   :data:`MAX_DEPTH`) and a ``cartridge`` (the atom ids it commits to; empty = abstain), and
   optionally a ``confidence``: the score its abstention decision thresholds (higher: more
   sure its memory holds the answer). The abstention measures read it
   (:mod:`membench.metrics.abstention`); without it they read the top-1 hit score, which is
   right for a system whose cartridge is "the top hit when its score clears a threshold".

Atom extents are capped per modality (:data:`membench.modalities.EXTENT_CAPS`, each
modality's ``cap``) so that whole-file atoms cannot score; :func:`check_atom` enforces the shape
and the cap and the runner rejects a violating atom with a clear error. The caps are part of
the benchmark config and are printed in reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .. import modalities
from .schema import Scope, SourceItem

MAX_DEPTH = 1000

# How the harness reads a ranked list (metrics, import-run and the browser all use it).
TIE_BREAKING = (
    "Hits are ordered by score descending; equal scores keep the order in which the system "
    "returned them (a stable sort on the hit list; in TREC run files: the rank column "
    "ascending, then the line order). An atom is listed once per query: a repeated atom id "
    "in a hit list or a cartridge is refused (in process, over HTTP, in run lines and in "
    "the TREC file import-run reads), naming the query, the atom and both ranks; only the "
    "trec-eval reader of plain TREC files, like trec_eval, keeps an atom at its first "
    "position in that order and drops later copies, which occupy no rank. Note: trec_eval (and pytrec_eval) break score ties by document id "
    "descending instead, and keep scores as 32-bit floats (scores closer than float32 "
    "precision tie there), so on such runs it can give different values; membench is "
    "compared with it on rank-derived (tie-free) scores."
)


def order_hits(hits: Sequence[Sequence[Any]]) -> list[str]:
    """The ranked, de-duplicated atom ids of a hit list ``[[atom_id, score], ...]``.

    Score descending; equal scores keep the system's order (stable sort); a duplicate atom
    id keeps only its first position in that order (:data:`TIE_BREAKING`).
    """
    order = sorted(range(len(hits)), key=lambda i: -hits[i][1])  # sorted() is stable
    seen: set[str] = set()
    out: list[str] = []
    for i in order:
        a = hits[i][0]
        if a not in seen:
            seen.add(a)
            out.append(a)
    return out


def rank_order(ids: Sequence[str], scores: np.ndarray) -> list[str]:
    """:func:`order_hits` for ids and a float64 score array (the fast path the scorer uses;
    tests hold the two to the same answers)."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable").tolist()
    return list(dict.fromkeys(map(ids.__getitem__, order)))


@dataclass(frozen=True)
class Atom:
    atom_id: str
    source_id: str
    modality: str
    holder: str
    observed_at: datetime
    extent: dict[str, Any]
    text: str = ""  # what the system indexed; kept for the failure browser, not scored

    def row(self) -> dict:
        return {
            "atom_id": self.atom_id,
            "source_id": self.source_id,
            "modality": self.modality,
            "holder": self.holder,
            "observed_at": self.observed_at.isoformat(),
            "extent": self.extent,
            "text": self.text,
        }


@dataclass
class Result:
    hits: list[tuple[str, float]]
    cartridge: list[str] = field(default_factory=list)
    #: the score the system's abstention decision thresholds (a finite number), or None
    confidence: float | None = None


@runtime_checkable
class MemorySystem(Protocol):
    name: str

    def config(self) -> dict[str, Any]:
        """Everything that determines the system's output (recorded in meta.json)."""

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]: ...

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result: ...


def check_atom(atom: Atom, item: SourceItem | None) -> str | None:
    """``None`` when the atom is well-formed (its modality's extent shape), matches its item
    and stays within its modality's cap and the item's bounds; else why not."""
    if item is None:
        return f"source_id {atom.source_id!r} is not an item of this split"
    m = atom.modality
    if m != item.modality:
        return f"modality {m!r} but item {item.source_id} is {item.modality!r}"
    if atom.holder != item.holder:
        return f"holder {atom.holder!r} but item {item.source_id} belongs to {item.holder!r}"
    if atom.observed_at != item.observed_at:
        return (
            f"observed_at {atom.observed_at.isoformat()} but the item was observed "
            f"{item.observed_at.isoformat()}"
        )
    mod = modalities.get(m)
    return mod.check_extent(atom.extent) or mod.extent_limits(atom.extent, item.meta)
