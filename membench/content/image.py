"""Image items: one atom per image, extent ``{}`` (the cap: the item is one image), text = the
OCR lines above ``ChunkConfig.ocr_min_confidence`` in reading order (rows top to bottom, a
row's lines left to right joined by a tab). An image without recognizable text still gets its
atom, with text "", so every image is covered.
"""

from __future__ import annotations

from pathlib import Path

from ..contract.protocol import Atom
from ..contract.schema import SourceItem
from .common import item_file, make_atom
from .config import ChunkConfig
from .ocr import OcrResult, ocr_image, ocr_text


def image_atoms(item: SourceItem, ocr: OcrResult, config: ChunkConfig) -> list[Atom]:
    return [make_atom(item, {}, ocr_text(ocr.kept(config.ocr_min_confidence)))]


def chunk_image(
    item: SourceItem, corpus_root: Path, config: ChunkConfig, ocr: OcrResult | None = None
) -> list[Atom]:
    if ocr is None:
        ocr = ocr_image(
            item_file(item, corpus_root),
            upscale_min_side=config.ocr_upscale_min_side,
            engine=config.ocr_engine,
        )
    return image_atoms(item, ocr, config)
