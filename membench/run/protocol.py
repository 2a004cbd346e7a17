"""The system protocol (SPEC section 6).

A memory system is one multi-tenant instance for a whole split:

1. ``ingest(items, corpus_root)``: it gets every source item of the split (all holders), reads
   them (``item.path`` relative to ``corpus_root``, or ``item.content``), chunks them itself and
   returns its :class:`Atom` s: opaque ids plus ``source_id``, ``extent``, ``holder`` and
   ``observed_at``. The harness never hands it query ids or gold.
2. ``query(question, scope, as_of)`` per query: ranked ``hits`` (atom id, score; at most
   :data:`MAX_DEPTH`) and a ``cartridge`` (the atom ids it commits to; empty = abstain).

Atom extents are capped per modality (:data:`membench.modalities.EXTENT_CAPS`, each
modality's ``cap``) so that whole-file atoms cannot score; :func:`check_atom` enforces the shape
and the cap and the runner rejects a violating atom with a clear error. The caps are part of
the benchmark config and are printed in reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .. import modalities
from ..sets.schema import Scope, SourceItem

MAX_DEPTH = 1000


@dataclass(frozen=True)
class Atom:
    atom_id: str
    source_id: str
    modality: str
    holder: str
    observed_at: datetime
    extent: dict[str, Any]
    text: str = ""          # what the system indexed; kept for the failure browser, not scored

    def row(self) -> dict:
        return {"atom_id": self.atom_id, "source_id": self.source_id, "modality": self.modality,
                "holder": self.holder, "observed_at": self.observed_at.isoformat(),
                "extent": self.extent, "text": self.text}


@dataclass
class Result:
    hits: list[tuple[str, float]]
    cartridge: list[str] = field(default_factory=list)


@runtime_checkable
class MemorySystem(Protocol):
    name: str

    def config(self) -> dict[str, Any]:
        """Everything that determines the system's output (recorded in meta.json)."""

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]:
        ...

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        ...


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
        return f"observed_at {atom.observed_at.isoformat()} but the item was observed " \
               f"{item.observed_at.isoformat()}"
    mod = modalities.get(m)
    return mod.check_extent(atom.extent) or mod.extent_limits(atom.extent, item.meta)
