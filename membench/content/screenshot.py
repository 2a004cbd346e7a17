"""UI screenshot items: screen regions from OCR, extent ``{"bbox": [x0, y0, x1, y1]}`` (integer
pixels of the screenshot, clipped to it).

Two kinds of atoms, both far under the area cap (half the screenshot):

* **line atoms**: one per OCR line kept (confidence >= ``ocr_min_confidence``): the line's
  box grown by ``screen_line_pad`` pixels; text = the line. These are the UI labels a grounding
  query names ("Pay/Collect", "Search Wikidata").
* **block atoms** (``screen_blocks``): lines less than ``screen_block_gap`` median line heights
  apart are joined (transitively) into a block (a menu, a card, a paragraph); the
  block's box is the union of its line boxes and its text the lines in reading order. A block
  of more than ``screen_block_max_lines`` lines or ``screen_block_max_share`` of the screen is
  cut, in reading order, into consecutive parts within both limits. Single-line blocks are not
  emitted (they equal the line atom).

Icons without any text yield no atom: a text retriever has nothing to index there.
"""

from __future__ import annotations

import logging
import math
import statistics
from pathlib import Path

from ..contract.protocol import Atom
from ..contract.schema import SourceItem
from ..modalities import EXTENT_CAPS
from .common import dedupe, item_file, make_atom
from .config import ChunkConfig
from .ocr import OcrLine, OcrResult, ocr_image, ocr_text, reading_order

log = logging.getLogger(__name__)


def _box(b, pad: float, w: int, h: int) -> list[int] | None:
    x0 = max(0, math.floor(b[0] - pad))
    y0 = max(0, math.floor(b[1] - pad))
    x1 = min(w, math.ceil(b[2] + pad))
    y1 = min(h, math.ceil(b[3] + pad))
    if x1 <= x0 or y1 <= y0:
        return None
    return [x0, y0, x1, y1]


def _union(boxes: list[list[int]]) -> list[int]:
    return [
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    ]


def _share(b: list[int], w: int, h: int) -> float:
    return (b[2] - b[0]) * (b[3] - b[1]) / float(w * h)


def _touch(a, b, g: float) -> bool:
    return (
        a[0] - g < b[2] + g and b[0] - g < a[2] + g and a[1] - g < b[3] + g and b[1] - g < a[3] + g
    )


def blocks(lines: list[OcrLine], gap: float) -> list[list[OcrLine]]:
    """Connected groups of lines less than ``gap`` median line heights apart (each box grown by
    half of that); each group in reading order, groups by their first line."""
    if not lines:
        return []
    g = gap * statistics.median(max(1.0, ln.box[3] - ln.box[1]) for ln in lines) / 2
    parent = list(range(len(lines)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(lines)):
        for j in range(i + 1, len(lines)):
            if _touch(lines[i].box, lines[j].box, g):
                ri, rj = find(i), find(j)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[OcrLine]] = {}
    for i, ln in enumerate(lines):
        groups.setdefault(find(i), []).append(ln)
    out = [[ln for row in reading_order(grp) for ln in row] for grp in groups.values()]
    out.sort(key=lambda grp: (grp[0].box[1], grp[0].box[0]))
    return out


def screenshot_atoms(item: SourceItem, ocr: OcrResult, config: ChunkConfig) -> list[Atom]:
    w = int(item.meta.get("width") or ocr.width)
    h = int(item.meta.get("height") or ocr.height)
    if (w, h) != (ocr.width, ocr.height):
        log.warning(
            "%s: meta size %dx%d but the image is %dx%d",
            item.source_id,
            w,
            h,
            ocr.width,
            ocr.height,
        )
    cap = EXTENT_CAPS["ui_screenshot"]["area_share"]
    pad = config.screen_line_pad
    lines = [ln for row in reading_order(ocr.kept(config.ocr_min_confidence)) for ln in row]
    boxed: list[tuple[OcrLine, list[int]]] = []
    for ln in lines:
        b = _box(ln.box, pad, w, h)
        if b is not None and _share(b, w, h) <= cap:
            boxed.append((ln, b))
    box_of = {id(ln): b for ln, b in boxed}
    atoms = [make_atom(item, {"bbox": b}, ln.text.strip()) for ln, b in boxed]
    if config.screen_blocks:
        for grp in blocks([ln for ln, _ in boxed], config.screen_block_gap):
            part: list[OcrLine] = []
            for ln in grp + [None]:  # None flushes the last part
                if ln is not None:
                    cand = part + [ln]
                    ub = _union([box_of[id(x)] for x in cand])
                    if (
                        len(cand) <= config.screen_block_max_lines
                        and _share(ub, w, h) <= config.screen_block_max_share
                    ):
                        part = cand
                        continue
                if len(part) >= 2:
                    ub = _union([box_of[id(x)] for x in part])
                    atoms.append(make_atom(item, {"bbox": ub}, ocr_text(part)))
                part = [ln] if ln is not None else []
    return dedupe(atoms)


def chunk_screenshot(
    item: SourceItem, corpus_root: Path, config: ChunkConfig, ocr: OcrResult | None = None
) -> list[Atom]:
    if ocr is None:
        ocr = ocr_image(
            item_file(item, corpus_root),
            upscale_min_side=config.ocr_upscale_min_side,
            engine=config.ocr_engine,
        )
    return screenshot_atoms(item, ocr, config)
