"""ui_screenshot: a screenshot of a user interface, regions are boxes on it.

* region and atom extent: ``{"bbox": [x0, y0, x1, y1]}`` in pixels, ``0 <= x0 < x1`` and
  ``0 <= y0 < y1``; cap: a screen region of at most half the screenshot's area
* hit: **the centre of the atom's box lies inside the gold box** (edges included): the
  ScreenSpot convention, where a predicted point, or a predicted box's centre, is correct when
  it falls inside the target element's box (``bbox[0] <= x <= bbox[2] and bbox[1] <= y <=
  bbox[3]``, SeeClick's ``pretrain/screenspot_test.py``, Cheng et al., ACL 2024). Chosen over
  a smaller cap on atoms: under "any overlap", ten atoms of a tenth of the screen each cover it
  whole, and two half-screen atoms (the cap) find every gold box at recall@10 = 1.0 without
  reading a pixel; capping atoms below a tenth of the screen would still let ten of them cover
  most of it (any overlap counts), and would refuse the OCR blocks real chunkers make. With
  the centre rule an atom finds a gold element only when it is *about* that element: a
  half-screen atom's centre lands in a small element's box only by chance. The cap stays half
  the screenshot's area (docs/runs.md).
* bounds: the gold box lies inside the item's ``meta.width`` x ``meta.height``
* shown as: the screenshot with the boxes drawn, and a crop of the box at native resolution
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import render
from .base import Modality, RenderContext, esc, is_num, item_file, short_json


@dataclass
class _Cols:
    cx: np.ndarray  # the atoms' box centres
    cy: np.ndarray


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
    hit_doc = (
        "the centre of the atom's bbox lies inside the gold bbox, edges included "
        "(ScreenSpot's point-in-box rule)"
    )
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
                return (
                    f"bbox covers {share:.0%} of the screenshot; cap is "
                    f"{self.cap['area_share']:.0%}"
                )
        return None

    def hit(self, extent: dict, region: dict) -> bool:
        a, g = extent["bbox"], region["bbox"]
        # the centre in float64, as :meth:`hit_mask` computes it
        cx = (float(a[0]) + float(a[2])) / 2.0
        cy = (float(a[1]) + float(a[3])) / 2.0
        return float(g[0]) <= cx <= float(g[2]) and float(g[1]) <= cy <= float(g[3])

    def columns(self, extents: Sequence[dict]) -> _Cols:
        b = np.array([e["bbox"] for e in extents], dtype=np.float64).reshape(len(extents), 4)
        return _Cols((b[:, 0] + b[:, 2]) / 2.0, (b[:, 1] + b[:, 3]) / 2.0)

    def hit_mask(self, cols: _Cols, rows: np.ndarray, region: dict) -> np.ndarray:
        gx0, gy0, gx1, gy1 = (float(v) for v in region["bbox"])
        cx, cy = cols.cx[rows], cols.cy[rows]
        return (gx0 <= cx) & (cx <= gx1) & (gy0 <= cy) & (cy <= gy1)

    def structural_extents(self, item) -> list[dict]:
        w, h = item.meta["width"], item.meta["height"]
        return [
            {"bbox": [x0, y0, x0 + w / 2, y0 + h / 2]} for y0 in (0, h / 2) for x0 in (0, w / 2)
        ]

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
            kind, render.ORIGINAL_COLOUR
        )
        boxes.append((extent["bbox"], colour, 3))
        png, scale = render.boxed_png(path, boxes)
        crop = render.crop_png(path, extent["bbox"])
        meta = item.get("meta", {})
        legend = (
            "red: the returned atom's box (it finds a gold box when its centre lies inside it)"
            if kind == "atom"
            else "green: the gold box"
            if kind == "gold"
            else "blue: the original query's gold box"
        )
        return (
            f"<div>{esc(item['path'])} ({meta.get('width')}x{meta.get('height')} px, "
            f"shown at {scale:.2f}x) · {esc(legend)}"
            f"{'; green: gold' if ctx.gold and kind != 'gold' else ''}"
            f"{'; blue: the original query&#x27;s gold' if ctx.original and kind != 'original' else ''}"
            f'</div><div style="display:flex;gap:10px;align-items:flex-start">'
            f'<img class="mb-screen" data-scale="{scale:.6f}" '
            f'alt="{esc(item["source_id"])}" src="{render.data_uri(png)}"/>'
            f"<div><div>box {esc(short_json(extent['bbox']))} at native resolution:</div>"
            f'<img class="mb-crop" alt="crop" src="{render.data_uri(crop)}"/></div></div>'
        )
