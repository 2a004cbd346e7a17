"""ui_screenshot: a screenshot of a user interface, regions are boxes on it.

* region and atom extent: ``{"bbox": [x0, y0, x1, y1]}`` in pixels, ``0 <= x0 < x1`` and
  ``0 <= y0 < y1``; cap: a screen region of at most half the screenshot's area
* hit: the boxes' intersection has an *area* > 0 (boxes that only touch along an edge or a
  corner are not hits)
* bounds: the gold box lies inside the item's ``meta.width`` x ``meta.height``
* shown as: the screenshot with the boxes drawn, and a crop of the box at native resolution
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import render
from .base import Modality, RenderContext, escape, is_num, item_file, short_json


@dataclass
class _Cols:
    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray


class UiScreenshot(Modality):
    name = "ui_screenshot"
    words_from = "OCR"
    region_shapes = (frozenset({"bbox"}),)
    extent_shapes = region_shapes
    cap = {"area_share": 0.5}
    meta_types = {"width": "size", "height": "size"}
    meta_together = (frozenset({"width", "height"}),)
    region_doc = '{"bbox": [x0, y0, x1, y1]} (pixels)'
    extent_doc = region_doc
    hit_doc = "bbox intersection area > 0 (touching edges are not hits)"
    near_duplicate = "phash"

    def region_values(self, region: dict) -> str | None:
        b = region["bbox"]
        if not (isinstance(b, list) and len(b) == 4 and all(is_num(x) for x in b)):
            return "bbox must be [x0, y0, x1, y1] numbers"
        if not (0 <= b[0] < b[2] and 0 <= b[1] < b[3]):
            return f"bbox {b} must satisfy 0 <= x0 < x1 and 0 <= y0 < y1"
        return None

    extent_values = region_values

    def region_bounds(self, region: dict, meta: dict) -> str | None:
        if "width" in meta:
            x0, y0, x1, y1 = region["bbox"]
            if x1 > meta["width"] or y1 > meta["height"]:
                return f"bbox {region['bbox']} outside {meta['width']}x{meta['height']} image"
        return None

    def extent_limits(self, extent: dict, meta: dict) -> str | None:
        if "width" in meta:
            b = extent["bbox"]
            share = (b[2] - b[0]) * (b[3] - b[1]) / (meta["width"] * meta["height"])
            if share > self.cap["area_share"]:
                return (f"bbox covers {share:.0%} of the screenshot; cap is "
                        f"{self.cap['area_share']:.0%}")
        return None

    def hit(self, extent: dict, region: dict) -> bool:
        a, g = extent["bbox"], region["bbox"]
        w = min(a[2], g[2]) - max(a[0], g[0])
        h = min(a[3], g[3]) - max(a[1], g[1])
        return w > 0 and h > 0          # area > 0; checking w * h > 0 would accept w, h < 0

    def columns(self, extents: Sequence[dict]) -> _Cols:
        b = np.array([e["bbox"] for e in extents], dtype=np.float64).reshape(len(extents), 4)
        return _Cols(b[:, 0].copy(), b[:, 1].copy(), b[:, 2].copy(), b[:, 3].copy())

    def hit_mask(self, cols: _Cols, rows: np.ndarray, region: dict) -> np.ndarray:
        gx0, gy0, gx1, gy1 = region["bbox"]
        return (((np.minimum(cols.x1[rows], gx1) - np.maximum(cols.x0[rows], gx0)) > 0)
                & ((np.minimum(cols.y1[rows], gy1) - np.maximum(cols.y0[rows], gy0)) > 0))

    def structural_extents(self, item) -> list[dict]:
        w, h = item.meta["width"], item.meta["height"]
        return [{"bbox": [x0, y0, x0 + w / 2, y0 + h / 2]} for y0 in (0, h / 2)
                for x0 in (0, w / 2)]

    def gold_extents(self, region: dict) -> list[dict]:
        return [{"bbox": list(region["bbox"])}]

    def render_html(self, item: dict, extent: dict, ctx: RenderContext) -> str:
        path = item_file(item, ctx.corpus_root)
        boxes: list[render.Box] = []
        for reg in ctx.original:
            boxes.append((reg["bbox"], render.ORIGINAL_COLOUR, 6))
        for reg in ctx.gold:
            boxes.append((reg["bbox"], render.GOLD_COLOUR, 6))
        for ext in ctx.others:
            boxes.append((ext["bbox"], render.ATOM_COLOUR, 2))
        kind = ctx.kind
        colour = {"atom": render.ATOM_COLOUR, "gold": render.GOLD_COLOUR}.get(
            kind, render.ORIGINAL_COLOUR)
        boxes.append((extent["bbox"], colour, 3))
        png, scale = render.boxed_png(path, boxes)
        crop = render.crop_png(path, extent["bbox"])
        meta = item.get("meta", {})
        legend = ("red: the returned atom's box" if kind == "atom" else
                  "green: the gold box" if kind == "gold" else
                  "blue: the original query's gold box")
        return (f'<div>{escape(item["path"])} ({meta.get("width")}x{meta.get("height")} px, '
                f'shown at {scale:.2f}x) · {escape(legend)}'
                f'{"; green: gold" if ctx.gold and kind != "gold" else ""}'
                f'{"; blue: the original query&#x27;s gold" if ctx.original and kind != "original" else ""}'
                f'</div><div style="display:flex;gap:10px;align-items:flex-start">'
                f'<img class="mb-screen" data-scale="{scale:.6f}" '
                f'alt="{escape(item["source_id"])}" src="{render.data_uri(png)}"/>'
                f'<div><div>box {escape(short_json(extent["bbox"]))} at native resolution:</div>'
                f'<img class="mb-crop" alt="crop" src="{render.data_uri(crop)}"/></div></div>')
