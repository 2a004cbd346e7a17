"""video: spans of a video, read through its captions.

* region and atom extent: ``{"t_start": float, "t_end": float}`` in seconds,
  ``0 <= t_start <= t_end``; cap: a window of at most 60 s
* hit: the spans overlap for longer than 0 s (``min(ends) - max(starts) > 0``): spans that
  only touch at one instant are not hits (SPEC section 7), so a caption window that ends where
  the gold span starts does not find it
* a gold span has a positive length (``t_start < t_end``: a span of no length could never be
  hit); an atom's window may be empty (it then hits nothing)
* bounds: ``t_end`` <= the item's ``meta.duration``
* shown as: the caption cues inside the window (``item.content``: ``[start, end, text]``),
  marked where they overlap gold, and the video's URL at the window's start (as text; a
  live link only in a report asked for live links, to a host of the corpus manifest)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.links import external
from .base import HL, Modality, RenderContext, esc, is_num, missing_html

#: the structural atoms' window (seconds)
STRUCTURAL_WINDOW = 30.0
#: caption cues shown per window
SHOWN_CUES = 80


def fmt_t(t: float) -> str:
    """Seconds as ``mm:ss.s``."""
    m, s = divmod(float(t), 60.0)
    return f"{int(m):02d}:{s:04.1f}"


@dataclass
class _Cols:
    t0: np.ndarray
    t1: np.ndarray


class Video(Modality):
    name = "video"
    words_from = "captions"
    region_shapes = (frozenset({"t_start", "t_end"}),)
    extent_shapes = region_shapes
    cap = {"seconds": 60.0}
    meta_types = {"duration": "seconds", "url": "text"}
    region_doc = '{"t_start": float, "t_end": float} (seconds)'
    extent_doc = region_doc
    hit_doc = (
        "the time spans overlap for longer than 0 s (spans that touch at one instant are not hits)"
    )

    def extent_values(self, extent: dict) -> str | None:
        s, e = extent["t_start"], extent["t_end"]
        if not (is_num(s) and is_num(e)):
            return "t_start and t_end must be finite numbers (seconds; integers within 64 bits)"
        if not 0 <= s <= e:
            return f"need 0 <= t_start <= t_end, got {s}..{e}"
        return None

    def region_values(self, region: dict) -> str | None:
        why = self.extent_values(region)
        if why is None and not region["t_start"] < region["t_end"]:
            return (
                f"a gold span needs t_start < t_end (a span of no length can never be hit), "
                f"got {region['t_start']}..{region['t_end']}"
            )
        return why

    def region_bounds(self, region: dict, meta: dict) -> str | None:
        if "duration" in meta and region["t_end"] > meta["duration"]:
            return f"span ends at {region['t_end']} s, video is {meta['duration']} s"
        return None

    def extent_limits(self, extent: dict, meta: dict) -> str | None:
        if extent["t_end"] - extent["t_start"] > self.cap["seconds"]:
            return (
                f"window of {extent['t_end'] - extent['t_start']:.1f} s; cap is "
                f"{self.cap['seconds']:.0f} s"
            )
        return None

    def hit(self, extent: dict, region: dict) -> bool:
        # the overlap's length, in float64 as :meth:`hit_mask` computes it
        return (
            min(float(extent["t_end"]), float(region["t_end"]))
            - max(float(extent["t_start"]), float(region["t_start"]))
        ) > 0

    def columns(self, extents: Sequence[dict]) -> _Cols:
        return _Cols(
            np.array([e["t_start"] for e in extents], dtype=np.float64),
            np.array([e["t_end"] for e in extents], dtype=np.float64),
        )

    def hit_mask(self, cols: _Cols, rows: np.ndarray, region: dict) -> np.ndarray:
        return (
            np.minimum(cols.t1[rows], float(region["t_end"]))
            - np.maximum(cols.t0[rows], float(region["t_start"]))
        ) > 0

    def structural_extents(self, item) -> list[dict]:
        dur = float(item.meta.get("duration") or 0.0)
        n = max(1, math.ceil(dur / STRUCTURAL_WINDOW))
        return [
            {"t_start": i * STRUCTURAL_WINDOW, "t_end": min(dur, (i + 1) * STRUCTURAL_WINDOW)}
            for i in range(n)
        ]

    def gold_extents(self, region: dict) -> list[dict]:
        cap = self.cap["seconds"]
        s, e = float(region["t_start"]), float(region["t_end"])
        out = []
        while True:
            out.append({"t_start": s, "t_end": min(e, s + cap)})
            s += cap
            if s >= e:
                return out

    def render_html(self, item: dict, extent: dict, ctx: RenderContext) -> str:
        marks = [*ctx.gold, *ctx.original]
        t0, t1 = float(extent["t_start"]), float(extent["t_end"])
        cues = item.get("content") or []
        inside = [c for c in cues if float(c[0]) <= t1 and float(c[1]) >= t0]
        meta = item.get("meta", {})
        url = meta.get("url")
        link = ""
        if isinstance(url, str) and url:
            # text unless the report allows live links to this https host (core.links)
            sep = "&" if "?" in url else "?"
            link = " · video " + external(
                url + sep + "t=" + str(int(t0)), f"open at {fmt_t(t0)}", ctx.link_hosts
            )
        head = (
            f"<div>window {fmt_t(t0)}–{fmt_t(t1)} ({t1 - t0:.1f} s) of "
            f"{fmt_t(meta['duration']) if meta.get('duration') else '?'} · "
            f"{len(inside)} caption cue(s){link}</div>"
        )
        if not inside:
            return head + missing_html("no caption cue inside this window")
        rows = []
        for c in inside[:SHOWN_CUES]:
            s, t, text = float(c[0]), float(c[1]), str(c[2])
            hl = any(min(t, float(m["t_end"])) - max(s, float(m["t_start"])) > 0 for m in marks)
            rows.append(
                f"<tr{HL if hl else ''}><td>{fmt_t(s)}–{fmt_t(t)}</td><td>{esc(text)}</td></tr>"
            )
        more = (
            f"<div>… {len(inside) - SHOWN_CUES} more cue(s)</div>"
            if len(inside) > SHOWN_CUES
            else ""
        )
        return head + f'<table class="mb-cues">{"".join(rows)}</table>' + more
