"""pdf: pages of a PDF document.

* region: ``{"page": int}`` or ``{"page": int, "block": int}`` (pages 1-based, blocks 0-based)
* atom extent: the same shapes; cap: one page (or a block of it)
* hit: same page; if *both* carry a block, the blocks are equal (a page-level gold is hit by any
  block of its page, a block-level gold by a page-level atom of its page)
* bounds: page <= the item's ``meta.pages``
* shown as: the page rendered to PNG (:func:`membench.modalities.render.pdf_page_png`)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import render
from .base import Modality, RenderContext, esc, is_int, item_file

# A page "has a text layer" when its extracted text holds at least this many non-whitespace
# characters. Below it (an empty layer, a page number, a 16-character title over a slide
# image) the page's words live in pixels: the build counts it out of ``meta.text_pages`` and the
# content layer reads it through OCR (docs/sets.md, "Image-only PDF pages"). Chosen on the
# mirror: the 19 decks without a text layer give 0 characters on every page; of the 2,490 pages
# of the 53 text-layer PDFs, 24 fall under 20 (10 empty pages of a scanned brochure, covers
# such as "WATCH D USER GUIDE", page numbers such as "ii" or "24").
TEXT_LAYER_MIN_CHARS = 20


def has_text_layer(page_text: str | None) -> bool:
    """True when ``page_text`` (one page's extracted text layer) holds at least
    :data:`TEXT_LAYER_MIN_CHARS` non-whitespace characters."""
    if not page_text:
        return False
    n = 0
    for ch in page_text:
        if not ch.isspace():
            n += 1
            if n >= TEXT_LAYER_MIN_CHARS:
                return True
    return False


@dataclass
class _Cols:
    page: np.ndarray
    block: np.ndarray  # -1: no block


class Pdf(Modality):
    name = "pdf"
    words_from = "pdf text layer"
    #: an item's words are read through OCR when none of its pages has a text layer
    IMAGE_ONLY = "pdf image-only (OCR)"

    def text_source(self, meta: dict) -> str:
        return self.IMAGE_ONLY if meta.get("text_pages") == 0 else self.words_from

    region_shapes = (frozenset({"page"}), frozenset({"page", "block"}))
    extent_shapes = region_shapes
    cap = {"pages": 1}
    meta_types = {"pages": "size", "text_pages": "count"}
    region_doc = '{"page": int} or {"page": int, "block": int} (pages 1-based)'
    extent_doc = region_doc
    hit_doc = "same page (blocks equal when both carry one)"

    def region_values(self, region: dict) -> str | None:
        if not is_int(region["page"]) or region["page"] < 1:
            return "page must be a 64-bit integer >= 1 (pages are 1-based)"
        if "block" in region and (not is_int(region["block"]) or region["block"] < 0):
            return "block must be a 64-bit integer >= 0"
        return None

    extent_values = region_values

    def region_bounds(self, region: dict, meta: dict) -> str | None:
        if "pages" in meta and region["page"] > meta["pages"]:
            return f"page {region['page']} > {meta['pages']} pages"
        return None

    def extent_limits(self, extent: dict, meta: dict) -> str | None:
        if extent["page"] > meta.get("pages", extent["page"]):
            return f"page {extent['page']} outside 1..{meta['pages']}"
        return None

    def hit(self, extent: dict, region: dict) -> bool:
        if extent["page"] != region["page"]:
            return False
        return not ("block" in extent and "block" in region) or extent["block"] == region["block"]

    def columns(self, extents: Sequence[dict]) -> _Cols:
        return _Cols(
            np.array([e["page"] for e in extents], dtype=np.int64),
            np.array([e.get("block", -1) for e in extents], dtype=np.int64),
        )

    def hit_mask(self, cols: _Cols, rows: np.ndarray, region: dict) -> np.ndarray:
        ok = cols.page[rows] == region["page"]
        if "block" in region:
            b = cols.block[rows]
            ok &= (b < 0) | (b == region["block"])
        return ok

    def region_text(self, region: dict, text: str, meta: dict) -> str | None:
        """The page's text layer: an item's text holds its pages separated by form feeds."""
        pages = text.split("\f")
        return pages[region["page"] - 1] if len(pages) == meta.get("pages") else None

    def structural_extents(self, item) -> list[dict]:
        return [{"page": p} for p in range(1, int(item.meta.get("pages", 1)) + 1)]

    def render_html(self, item: dict, extent: dict, ctx: RenderContext) -> str:
        page = int(extent["page"])
        path = item_file(item, ctx.corpus_root)
        png = render.pdf_page_png(path, page, sha256=item.get("meta", {}).get("sha256"))
        pages = item.get("meta", {}).get("pages")
        block = f", block {extent['block']}" if "block" in extent else ""
        return (
            f"<div>page {page}{' of ' + str(pages) if pages else ''}{esc(block)} · "
            f"{esc(item['path'])}</div>"
            f'<img alt="page {page} of {esc(item["source_id"])}" '
            f'src="{render.data_uri(png)}"/>'
        )
