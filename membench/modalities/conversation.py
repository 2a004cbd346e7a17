"""conversation: sessions of a dialogue; regions are turns.

* region: ``{"turn": int}`` (1-based, within the session item)
* atom extent: ``{"turn_start": int, "turn_end": int}``; cap: 8 turns
* hit: the gold turn lies in ``[turn_start, turn_end]``
* bounds: turn <= the item's ``meta.turns``
* shown as: the turns with speaker, the session date and any image caption
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .base import HL, Modality, RenderContext, escape, is_int, missing_html

#: the structural atoms' window (turns)
STRUCTURAL_WINDOW = 3
#: turns shown around a gold turn
CONTEXT = 1


@dataclass
class _Cols:
    turn0: np.ndarray
    turn1: np.ndarray


class Conversation(Modality):
    name = "conversation"
    region_shapes = (frozenset({"turn"}),)
    extent_shapes = (frozenset({"turn_start", "turn_end"}),)
    cap = {"turns": 8}
    meta_types = {"turns": "count", "date_time": "text"}
    region_doc = '{"turn": int} (1-based)'
    extent_doc = '{"turn_start", "turn_end"}'
    hit_doc = "gold turn in [turn_start, turn_end]"

    def region_values(self, region: dict) -> str | None:
        if not is_int(region["turn"]) or region["turn"] < 1:
            return "turn must be a 64-bit integer >= 1 (turns are 1-based)"
        return None

    def extent_values(self, e: dict) -> str | None:
        if not (is_int(e["turn_start"]) and is_int(e["turn_end"])):
            return "turn_start and turn_end must be 64-bit integers"
        if not 1 <= e["turn_start"] <= e["turn_end"]:
            return f"need 1 <= turn_start <= turn_end, got {e['turn_start']}..{e['turn_end']}"
        return None

    def region_bounds(self, region: dict, meta: dict) -> str | None:
        if "turns" in meta and region["turn"] > meta["turns"]:
            return f"turn {region['turn']} > {meta['turns']} turns"
        return None

    def extent_limits(self, e: dict, meta: dict) -> str | None:
        n = e["turn_end"] - e["turn_start"] + 1
        if n > self.cap["turns"]:
            return f"{n} turns; cap is {self.cap['turns']:.0f}"
        return None

    def hit(self, extent: dict, region: dict) -> bool:
        return extent["turn_start"] <= region["turn"] <= extent["turn_end"]

    def columns(self, extents: Sequence[dict]) -> _Cols:
        return _Cols(np.array([e["turn_start"] for e in extents], dtype=np.int64),
                     np.array([e["turn_end"] for e in extents], dtype=np.int64))

    def hit_mask(self, cols: _Cols, rows: np.ndarray, region: dict) -> np.ndarray:
        return (cols.turn0[rows] <= region["turn"]) & (region["turn"] <= cols.turn1[rows])

    def region_text(self, region: dict, text: str, meta: dict) -> str | None:
        """The turn's line: an item's text holds one line per turn when it has as many lines
        as the session has turns."""
        lines = text.split("\n")
        return lines[region["turn"] - 1] if len(lines) == meta.get("turns") else None

    def structural_extents(self, item) -> list[dict]:
        turns = int(item.meta.get("turns") or len(item.content or []) or 1)
        return [{"turn_start": s, "turn_end": min(turns, s + STRUCTURAL_WINDOW - 1)}
                for s in range(1, turns + 1, STRUCTURAL_WINDOW)]

    def gold_extents(self, region: dict) -> list[dict]:
        return [{"turn_start": region["turn"], "turn_end": region["turn"]}]

    def render_html(self, item: dict, extent: dict, ctx: RenderContext) -> str:
        marks = [*ctx.gold, *ctx.original]
        if "turn_start" in extent:
            a, b = int(extent["turn_start"]), int(extent["turn_end"])
            marked = {int(m["turn"]) for m in marks}
        else:
            a, b = int(extent["turn"]) - CONTEXT, int(extent["turn"]) + CONTEXT
            marked = {int(extent["turn"])} | {int(m["turn"]) for m in marks}
        meta = item.get("meta", {})
        turns = [t for t in (item.get("content") or []) if isinstance(t, dict)
                 and a <= int(t.get("turn", 0)) <= b]
        head = (f'<div>{escape(item["source_id"])} · session date '
                f'{escape(str(meta.get("date_time", "?")))} · observed '
                f'{escape(str(item.get("observed_at")))} · turns {max(a, 1)}–{b}</div>')
        if not turns:
            return head + missing_html("no such turn in the session")
        rows = []
        for t in turns:
            cap = (f'<br/><i>[image: {escape(str(t["image_caption"]))}]</i>'
                   if t.get("image_caption") else "")
            rows.append(f'<tr{HL if int(t["turn"]) in marked else ""}>'
                        f'<td>{int(t["turn"])}</td><td><b>{escape(str(t.get("speaker", "?")))}'
                        f'</b></td><td>{escape(str(t.get("text", "")))}{cap}</td></tr>')
        return head + f'<table class="mb-turns">{"".join(rows)}</table>'
