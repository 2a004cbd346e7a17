"""conversation: sessions of a dialogue; regions are turns or a range of turns.

* region: ``{"turn": int}`` (1-based, within the session item), or a turn range
  ``{"turn_start": int, "turn_end": int}`` (both ends included). The range is what a
  session-level judgment set uses: the whole session holding the evidence turn is
  ``{"turn_start": 1, "turn_end": <the session's turns>}`` (LongMemEval scores sessions; the
  LoCoMo and LongMemEval adapters' ``judgments.session``)
* atom extent: ``{"turn_start": int, "turn_end": int}``; cap: 8 turns
* hit: the gold turn lies in ``[turn_start, turn_end]``; a range region is hit by an atom whose
  turns intersect it (a session region: any atom holding a turn of the session)
* bounds: turn (or turn_end) <= the item's ``meta.turns``
* shown as: the turns with speaker, the session date and any image caption
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .base import HL, Modality, RenderContext, esc, is_int, missing_html

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
    words_from = "turns"
    region_shapes = (frozenset({"turn"}), frozenset({"turn_start", "turn_end"}))
    extent_shapes = (frozenset({"turn_start", "turn_end"}),)
    cap = {"turns": 8}
    meta_types = {"turns": "count", "date_time": "text"}
    region_doc = (
        '{"turn": int} (1-based), or {"turn_start", "turn_end"} (a range of turns, '
        "e.g. a whole session)"
    )
    extent_doc = '{"turn_start", "turn_end"}'
    hit_doc = (
        "gold turn in [turn_start, turn_end]; a gold turn range intersects [turn_start, turn_end]"
    )

    def region_values(self, region: dict) -> str | None:
        if "turn" not in region:
            return self.extent_values(region)
        if not is_int(region["turn"]) or region["turn"] < 1:
            return "turn must be a 64-bit integer >= 1 (turns are 1-based)"
        return None

    @staticmethod
    def _span(region: dict) -> tuple[int, int]:
        """A region's first and last turn (a single turn: both the same)."""
        if "turn" in region:
            return region["turn"], region["turn"]
        return region["turn_start"], region["turn_end"]

    def extent_values(self, e: dict) -> str | None:
        if not (is_int(e["turn_start"]) and is_int(e["turn_end"])):
            return "turn_start and turn_end must be 64-bit integers"
        if not 1 <= e["turn_start"] <= e["turn_end"]:
            return f"need 1 <= turn_start <= turn_end, got {e['turn_start']}..{e['turn_end']}"
        return None

    def region_bounds(self, region: dict, meta: dict) -> str | None:
        last = self._span(region)[1]
        if "turns" in meta and last > meta["turns"]:
            return f"turn {last} > {meta['turns']} turns"
        return None

    def extent_limits(self, e: dict, meta: dict) -> str | None:
        n = e["turn_end"] - e["turn_start"] + 1
        if n > self.cap["turns"]:
            return f"{n} turns; cap is {self.cap['turns']:.0f}"
        return None

    def hit(self, extent: dict, region: dict) -> bool:
        a, b = self._span(region)
        return extent["turn_start"] <= b and a <= extent["turn_end"]

    def columns(self, extents: Sequence[dict]) -> _Cols:
        return _Cols(
            np.array([e["turn_start"] for e in extents], dtype=np.int64),
            np.array([e["turn_end"] for e in extents], dtype=np.int64),
        )

    def hit_mask(self, cols: _Cols, rows: np.ndarray, region: dict) -> np.ndarray:
        a, b = self._span(region)
        return (cols.turn0[rows] <= b) & (a <= cols.turn1[rows])

    def region_text(self, region: dict, text: str, meta: dict) -> str | None:
        """The turn's line (a range: its lines): an item's text holds one line per turn when
        it has as many lines as the session has turns."""
        lines = text.split("\n")
        if len(lines) != meta.get("turns"):
            return None
        a, b = self._span(region)
        return "\n".join(lines[a - 1 : b])

    def passages(self, text: str, meta: dict) -> list[str]:
        """Windows of the cap's turns (8), overlapping by half (a stride of 4), so the turns
        one piece of evidence spans, with its neighbours, fall in one window."""
        lines = text.split("\n")
        n = int(self.cap["turns"])
        step = max(1, n // 2)
        return ["\n".join(lines[s : s + n]) for s in range(0, max(len(lines) - n + step, 1), step)]

    def structural_extents(self, item) -> list[dict]:
        turns = int(item.meta.get("turns") or len(item.content or []) or 1)
        return [
            {"turn_start": s, "turn_end": min(turns, s + STRUCTURAL_WINDOW - 1)}
            for s in range(1, turns + 1, STRUCTURAL_WINDOW)
        ]

    def gold_extents(self, region: dict) -> list[dict]:
        a, b = self._span(region)
        n = int(self.cap["turns"])
        return [{"turn_start": s, "turn_end": min(b, s + n - 1)} for s in range(a, b + 1, n)]

    def render_html(self, item: dict, extent: dict, ctx: RenderContext) -> str:
        marked = {
            t
            for m in (*ctx.gold, *ctx.original)
            for t in range(int(self._span(m)[0]), int(self._span(m)[1]) + 1)
        }
        if "turn_start" in extent:
            a, b = int(extent["turn_start"]), int(extent["turn_end"])
            if ctx.kind != "atom":  # a gold turn range: mark it too
                marked |= set(range(a, b + 1))
        else:
            a, b = int(extent["turn"]) - CONTEXT, int(extent["turn"]) + CONTEXT
            marked.add(int(extent["turn"]))
        meta = item.get("meta", {})
        turns = [
            t
            for t in (item.get("content") or [])
            if isinstance(t, dict) and a <= int(t.get("turn", 0)) <= b
        ]
        head = (
            f"<div>{esc(item['source_id'])} · session date "
            f"{esc(str(meta.get('date_time', '?')))} · observed "
            f"{esc(str(item.get('observed_at')))} · turns {max(a, 1)}–{b}</div>"
        )
        if not turns:
            return head + missing_html("no such turn in the session")
        rows = []
        for t in turns:
            cap = (
                f"<br/><i>[image: {esc(str(t['image_caption']))}]</i>"
                if t.get("image_caption")
                else ""
            )
            rows.append(
                f"<tr{HL if int(t['turn']) in marked else ''}>"
                f"<td>{int(t['turn'])}</td><td><b>{esc(str(t.get('speaker', '?')))}"
                f"</b></td><td>{esc(str(t.get('text', '')))}{cap}</td></tr>"
            )
        return head + f'<table class="mb-turns">{"".join(rows)}</table>'
