"""Text-bearing atoms from source items, for the reference systems (SPEC section 6).

:func:`chunk` turns the items of a split into :class:`~membench.run.protocol.Atom` s with
opaque, deterministic ids (:func:`atom_id`) and their text filled in from the items' real
content, one module per modality:

========================  =================================================================
``pdf``                   one atom per page, pypdf text layer (cached by file sha256)
``image``                 one atom per image, OCR text in reading order
``ui_screenshot``         OCR line boxes and blocks of nearby lines (bbox atoms)
``video``                 caption windows (30 s every 15 s by default)
``code``                  python: ast functions/classes; others: definition-line segments
``conversation``          windows of 3 turns every 2
========================  =================================================================

OCR (:mod:`membench.run.content.ocr`) runs once per image content and is cached, so a second run
does no OCR. Every atom is checked with :func:`~membench.run.protocol.check_atom` before it is
returned. :func:`content_meta` is what a run records about this step.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ...core import progress as _progress
from ...core.errors import MembenchError
from ...sets.schema import SourceItem
from ..protocol import Atom, check_atom
from . import ocr as _ocr
from . import pdf as _pdf
from .code import chunk_code
from .common import atom_id, item_file
from .config import ChunkConfig
from .conversation import chunk_conversation
from .image import chunk_image
from .pdf import chunk_pdf
from .screenshot import chunk_screenshot
from .video import chunk_video

__all__ = ["ChunkConfig", "atom_id", "chunk", "chunk_item", "content_meta"]

log = logging.getLogger(__name__)

OCR_MODALITIES = ("image", "ui_screenshot")
# which reader makes the reference systems' atoms of each modality (the OCR ones take a
# precomputed OCR result too)
CHUNKERS: dict[str, Callable[..., list[Atom]]] = {
    "pdf": chunk_pdf, "image": chunk_image, "ui_screenshot": chunk_screenshot,
    "video": chunk_video, "code": chunk_code, "conversation": chunk_conversation,
}


def chunk_item(item: SourceItem, corpus_root: Path, config: ChunkConfig | None = None,
               ocr: _ocr.OcrResult | None = None) -> list[Atom]:
    """The atoms of one item (``ocr``: a precomputed OCR result for image/screenshot items)."""
    config = config or ChunkConfig()
    corpus_root = Path(corpus_root)
    m = item.modality
    fn = CHUNKERS.get(m)
    if fn is None:  # pragma: no cover - the schema forbids it
        raise MembenchError(f"{item.source_id}: no chunker for modality {m!r}")
    atoms = fn(item, corpus_root, config, ocr) if m in OCR_MODALITIES else \
        fn(item, corpus_root, config)
    for a in atoms:
        why = check_atom(a, item)
        if why:
            raise MembenchError(f"chunker produced a bad atom for {item.source_id}: {why}")
    return atoms


def chunk(items: Iterable[SourceItem], corpus_root: str | Path,
          config: ChunkConfig | None = None,
          progress: Callable[[str, int, int], None] | None = None) -> list[Atom]:
    """All atoms of ``items``, in item order then position in the item.

    Images and screenshots are OCR'd first in one batch (``config.ocr_processes`` workers,
    cached); ``progress(stage, done, total)`` is called as OCR images and items are done, and
    the ``ocr`` and ``content`` steps report through :mod:`membench.core.progress` (an item is
    a cache hit when its PDF text layer or its OCR was read from the cache)."""
    config = config or ChunkConfig()
    corpus_root = Path(corpus_root)
    items = list(items)
    paths = {it.source_id: item_file(it, corpus_root) for it in items
             if it.modality in OCR_MODALITIES}
    results: dict[str, _ocr.OcrResult] = {}
    ocr_ran: set[str] = set()
    if paths:
        calls = _ocr.stats["engine_calls"]
        by_path = _ocr.ocr_many(
            paths.values(), upscale_min_side=config.ocr_upscale_min_side,
            processes=config.ocr_processes,
            progress=(lambda d, n: progress("ocr", d, n)) if progress else None)
        results = {sid: by_path[str(p)] for sid, p in paths.items()}
        if _ocr.stats["engine_calls"] > calls:  # which items' OCR ran now (not cached)
            ocr_ran = {sid for sid, p in paths.items() if _ocr.last_run.get(str(p))}
    atoms: list[Atom] = []
    seen: dict[str, str] = {}
    with _progress.step("content", total=len(items), unit="item", cached=True) as bar:
        for k, it in enumerate(items, 1):
            bar.note(it.source_id)
            hits, extracted = _pdf.stats["cache_hits"], _pdf.stats["extractions"]
            for a in chunk_item(it, corpus_root, config, results.get(it.source_id)):
                other = seen.setdefault(a.atom_id, a.source_id)
                if other != a.source_id:  # pragma: no cover - 64-bit collision
                    raise MembenchError(f"atom id {a.atom_id} of {a.source_id} collides with "
                                        f"one of {other}")
                atoms.append(a)
            if _pdf.stats["extractions"] > extracted:
                bar.count("PDF text layers extracted")
            # an item is a cache hit when its PDF text or its OCR came from the cache
            bar.advance(cache_hit=_pdf.stats["cache_hits"] > hits
                        or results.get(it.source_id) is not None
                        and it.source_id not in ocr_ran)
            if progress:
                progress("items", k, len(items))
        bar.count("atoms", len(atoms))
    return atoms


def content_meta(config: ChunkConfig | None = None) -> dict[str, Any]:
    """What a run records about chunking: the config and the extractors' identities."""
    config = config or ChunkConfig()
    return {"chunk_config": config.as_dict(),
            "ocr_engine": _ocr.engine_tag(config.ocr_upscale_min_side),
            "pdf_extractor": _pdf.extractor_tag()}
