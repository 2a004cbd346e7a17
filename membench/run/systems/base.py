"""The system protocol (SPEC section 6).

A memory system is one multi-tenant instance for a whole split:

1. ``ingest(items, corpus_root)``: it gets every source item of the split (all holders), reads
   them (``item.path`` relative to ``corpus_root``, or ``item.content``), chunks them itself and
   returns its :class:`Atom` s: opaque ids plus ``source_id``, ``extent``, ``holder`` and
   ``observed_at``. The harness never hands it query ids or gold.
2. ``query(question, scope, as_of)`` per query: ranked ``hits`` (atom id, score; at most
   :data:`MAX_DEPTH`) and a ``cartridge`` (the atom ids it commits to; empty = abstain).

Atom extents are capped per modality (:data:`EXTENT_CAPS`) so that whole-file atoms cannot
score; :func:`check_atom` enforces the shape and the cap and the runner rejects a violating atom
with a clear error. The caps are part of the benchmark config and are printed in reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ...metrics.resolve import check_extent
from ...sets.schema import Scope, SourceItem

MAX_DEPTH = 1000

# Largest extent one atom may cover, per modality.
EXTENT_CAPS: dict[str, dict[str, float]] = {
    "pdf": {"pages": 1},                         # one page (or a block of it)
    "image": {},                                 # one image (the item is one image)
    "ui_screenshot": {"area_share": 0.5},        # a screen region: at most half the screenshot
    "video": {"seconds": 60.0},                  # a caption window of at most 60 s
    "code": {"lines": 200},                      # a bounded line range
    "conversation": {"turns": 8},                # a few turns
}

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
    """``None`` when the atom is well-formed (:func:`membench.metrics.resolve.check_extent`),
    matches its item and stays within its modality's cap; else why not."""
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
    e = atom.extent
    why = check_extent(m, e)
    if why:
        return why
    cap = EXTENT_CAPS[m]
    meta = item.meta
    if m == "pdf":
        if e["page"] > meta.get("pages", e["page"]):
            return f"page {e['page']} outside 1..{meta['pages']}"
    elif m == "ui_screenshot":
        b = e["bbox"]
        if "width" in meta:
            area = (b[2] - b[0]) * (b[3] - b[1])
            share = area / (meta["width"] * meta["height"])
            if share > cap["area_share"]:
                return f"bbox covers {share:.0%} of the screenshot; cap is {cap['area_share']:.0%}"
    elif m == "video":
        if e["t_end"] - e["t_start"] > cap["seconds"]:
            return f"window of {e['t_end'] - e['t_start']:.1f} s; cap is {cap['seconds']:.0f} s"
    elif m == "code":
        if e["line_end"] - e["line_start"] + 1 > cap["lines"]:
            return f"{e['line_end'] - e['line_start'] + 1} lines; cap is {cap['lines']:.0f}"
        if "upstream_path" in meta and e["path"] != meta["upstream_path"]:
            return f"path {e['path']!r} is not the item's path {meta['upstream_path']!r}"
    elif m == "conversation":
        if e["turn_end"] - e["turn_start"] + 1 > cap["turns"]:
            return f"{e['turn_end'] - e['turn_start'] + 1} turns; cap is {cap['turns']:.0f}"
    return None
