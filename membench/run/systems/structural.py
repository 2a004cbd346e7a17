"""Atoms from item structure alone (no text): what the test doubles ingest.

pdf: one atom per page; image: the image; ui_screenshot: a 2x2 grid of quarters; video:
30 s windows over the duration; code: 40-line windows; conversation: 3-turn windows. Every atom
is within the caps of :data:`membench.run.systems.base.EXTENT_CAPS`. Ids are opaque
(``s`` + 16 hex digits of sha256 over source id and extent).
"""

from __future__ import annotations

import hashlib
import json
import math

from ...sets.schema import SourceItem
from .base import Atom

VIDEO_WINDOW = 30.0
CODE_WINDOW = 40
TURN_WINDOW = 3


def atom_id(prefix: str, source_id: str, extent: dict) -> str:
    key = source_id + "\x1f" + json.dumps(extent, sort_keys=True)
    return prefix + hashlib.sha256(key.encode()).hexdigest()[:16]


def extents(item: SourceItem) -> list[dict]:
    m, meta = item.modality, item.meta
    if m == "pdf":
        return [{"page": p} for p in range(1, int(meta.get("pages", 1)) + 1)]
    if m == "image":
        return [{}]
    if m == "ui_screenshot":
        w, h = meta["width"], meta["height"]
        return [{"bbox": [x0, y0, x0 + w / 2, y0 + h / 2]} for y0 in (0, h / 2) for x0 in (0, w / 2)]
    if m == "video":
        dur = float(meta.get("duration") or 0.0)
        n = max(1, math.ceil(dur / VIDEO_WINDOW))
        return [{"t_start": i * VIDEO_WINDOW, "t_end": min(dur, (i + 1) * VIDEO_WINDOW)}
                for i in range(n)]
    if m == "code":
        lines = int(meta.get("lines", 1))
        path = meta.get("upstream_path", item.source_id)
        return [{"path": path, "line_start": s, "line_end": min(lines, s + CODE_WINDOW - 1)}
                for s in range(1, lines + 1, CODE_WINDOW)]
    if m == "conversation":
        turns = int(meta.get("turns") or len(item.content or []) or 1)
        return [{"turn_start": s, "turn_end": min(turns, s + TURN_WINDOW - 1)}
                for s in range(1, turns + 1, TURN_WINDOW)]
    raise ValueError(f"unknown modality {m!r}")


def structural_atoms(items: list[SourceItem], prefix: str = "s") -> list[Atom]:
    return [Atom(atom_id(prefix, it.source_id, e), it.source_id, it.modality, it.holder,
                 it.observed_at, e)
            for it in sorted(items, key=lambda i: i.source_id) for e in extents(it)]
