"""image: one whole image per item (a photo, a table, a chart).

* region: ``{}`` (the whole image: the question's image is its gold)
* atom extent: ``{}``; cap: one image (the item is one image)
* hit: always, for an atom of the same image
* shown as: the image, downscaled (:func:`membench.modalities.render.image_png`)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import render
from .base import Modality, RenderContext, esc, item_file


class Image(Modality):
    name = "image"
    words_from = "OCR"
    region_shapes = (frozenset(),)
    extent_shapes = region_shapes
    cap: dict[str, float] = {}
    meta_types = {"width": "size", "height": "size"}
    meta_together = (frozenset({"width", "height"}),)
    region_doc = "{} (the whole image)"
    extent_doc = region_doc
    hit_doc = "always"
    near_duplicate = "phash"

    def hit(self, extent: dict, region: dict) -> bool:
        return True

    def columns(self, extents: Sequence[dict]) -> None:
        return None

    def hit_mask(self, cols: None, rows: np.ndarray, region: dict) -> np.ndarray:
        return np.ones(len(rows), dtype=bool)

    def structural_extents(self, item) -> list[dict]:
        return [{}]

    def render_html(self, item: dict, extent: dict, ctx: RenderContext) -> str:
        path = item_file(item, ctx.corpus_root)
        return (
            f'<img alt="{esc(item["source_id"])}" '
            f'src="{render.data_uri(render.image_png(path))}"/>'
            f"<div>{esc(item['path'])}</div>"
        )
