"""Atoms from item structure alone (no text): what the test doubles ingest.

Each modality says which extents its structure gives (``structural_extents``: pdf one atom per
page; image the image; ui_screenshot a 2x2 grid of quarters; video 30 s windows; code 40-line
windows; conversation 3-turn windows), all within its cap. Ids are opaque
(``s`` + 16 hex digits of sha256 over source id and extent).
"""

from __future__ import annotations

import hashlib
import json

from .. import modalities
from ..contract.protocol import Atom
from ..contract.schema import SourceItem


def atom_id(prefix: str, source_id: str, extent: dict) -> str:
    key = source_id + "\x1f" + json.dumps(extent, sort_keys=True)
    return prefix + hashlib.sha256(key.encode()).hexdigest()[:16]


def extents(item: SourceItem) -> list[dict]:
    """The item's structural extents (:meth:`membench.modalities.Modality.structural_extents`)."""
    return modalities.get(item.modality).structural_extents(item)


def structural_atoms(items: list[SourceItem], prefix: str = "s") -> list[Atom]:
    return [
        Atom(
            atom_id(prefix, it.source_id, e),
            it.source_id,
            it.modality,
            it.holder,
            it.observed_at,
            e,
        )
        for it in sorted(items, key=lambda i: i.source_id)
        for e in extents(it)
    ]
