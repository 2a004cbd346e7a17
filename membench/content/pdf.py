"""PDF items: one atom per page, ``{"page": p}`` (1-based physical pages), text from the PDF's
text layer (pypdf ``extract_text``), or, for a page without one, from OCR.

A page *has a text layer* when it holds at least 20 non-whitespace characters
(:func:`membench.modalities.pdf.has_text_layer`, the rule the build's ``meta.text_pages``
counts). A page without one (an image-only slide deck's, a scanned page) is rendered with
pypdfium2 at ``ChunkConfig.pdf_ocr_dpi`` and read by the OCR engine of images
(:func:`membench.content.ocr.ocr_page`, cached by the PDF's sha256, the page and the
renderer): its atom's text is the OCR lines above ``ocr_min_confidence`` in reading order, or
the page's short text layer when OCR finds nothing. Mixed documents are read page by page. With
``pdf_ocr_dpi=0`` such pages keep their text layer (often ""). Every page gets an atom
(``ChunkConfig.pdf_keep_empty_pages``, default on), so every page of the item is covered. A
page pypdf fails on is treated as empty and its error is kept in the cache entry.

Cache: ``cache_dir("pdftext")/<sha256 of the file>-<key>.json`` with ``key`` digesting the
pypdf version and the extraction mode; it holds the page texts and per-page errors.

The build has read the same text layer already (``membench build`` extracts every MMLongBench
PDF with the same pypdf call, ``page.extract_text()``, into ``cache_dir("pdf")``:
:func:`membench.sources.mmlongbench.cached_read`), so a miss here is first filled from
that entry when the pypdf version is the same (``"from": "build"`` in the cache entry); only a
PDF the build has not read is extracted again. The two give the same page texts (checked on all
53 mirrored PDFs; ``tests/test_content_corpus.py`` checks it on real ones).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import time
from pathlib import Path

from ..contract.protocol import Atom
from ..contract.schema import SourceItem
from ..core import content_guard as guard
from ..core.paths import cache_dir
from ..modalities.pdf import has_text_layer
from .common import item_file, make_atom, read_json, sha256_bytes, write_json_atomic
from .config import ChunkConfig
from .ocr import OcrResult, ocr_page, ocr_text

CACHE_FORMAT = 1
stats: dict[str, float] = {"extractions": 0, "cache_hits": 0, "from_build": 0, "seconds": 0.0}


def extractor_tag() -> str:
    try:
        v = importlib.metadata.version("pypdf")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        v = "unknown"
    return f"pypdf=={v};extract_text(mode=plain);format={CACHE_FORMAT}"


def cache_path(sha: str) -> Path:
    key = hashlib.sha256(extractor_tag().encode()).hexdigest()[:12]
    return cache_dir("pdftext") / sha[:2] / f"{sha}-{key}.json"


def _extract(data: bytes, path: str | Path = "<pdf>") -> dict:
    t0 = time.perf_counter()
    reader = guard.open_pdf(path, data)
    pages: list[str] = []
    errors: dict[str, str] = {}
    for i, page in enumerate(reader.pages, 1):
        try:
            with guard.page_time(path, i):
                txt = page.extract_text() or ""
        except guard.ContentError:
            raise
        except Exception as e:  # noqa: BLE001 - one broken page must not lose the document
            txt = ""
            errors[str(i)] = f"{type(e).__name__}: {e}"[:300]
        pages.append(txt.replace("\x00", ""))
    return {
        "format": CACHE_FORMAT,
        "extractor": extractor_tag(),
        "pages": pages,
        "errors": errors,
        "seconds": round(time.perf_counter() - t0, 3),
    }


def _from_build(sha: str) -> dict | None:
    """This PDF's cache entry made from the build's reading of it, when there is one with the
    same pypdf version (else None)."""
    from ..sources.mmlongbench import cached_read

    d = cached_read(sha)
    texts = d.get("page_texts") if d else None
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        return None
    return {
        "format": CACHE_FORMAT,
        "extractor": extractor_tag(),
        "from": "build",
        "pages": [t.replace("\x00", "") for t in texts],
        "errors": {},
        "seconds": 0.0,
    }


def _cache_entry(sha: str) -> dict | None:
    """This PDF's text-layer cache entry for the installed extractor, or None."""
    obj = read_json(cache_path(sha))
    return obj if isinstance(obj, dict) and obj.get("extractor") == extractor_tag() else None


def cached_page_texts(path: str | Path) -> list[str] | None:
    """The text layer of each page from the cache (or the build's reading of it), or None
    when neither holds it: never runs the extraction (what scoring may read:
    :meth:`membench.metrics.extent_text.ExtentText.available`)."""
    sha = sha256_bytes(guard.read_bytes(path))
    obj = _cache_entry(sha) or _from_build(sha)
    return list(obj["pages"]) if obj is not None else None


def page_texts(path: str | Path) -> list[str]:
    """The text layer of each page (index 0 = page 1), from the cache when possible."""
    data = guard.read_bytes(path)
    sha = sha256_bytes(data)
    cp = cache_path(sha)
    obj = _cache_entry(sha)
    if obj is not None:
        stats["cache_hits"] += 1
        guard.check_pages(path, len(obj["pages"]))
        return list(obj["pages"])
    built = _from_build(sha)
    if built is not None:
        guard.check_pages(path, len(built["pages"]))
        stats["cache_hits"] += 1
        stats["from_build"] += 1
        write_json_atomic(cp, built)
        return list(built["pages"])
    obj = _extract(data, path)
    stats["extractions"] += 1
    stats["seconds"] += obj["seconds"]
    write_json_atomic(cp, obj)
    return list(obj["pages"])


def _clean(text: str) -> str:
    lines = [ln.rstrip() for ln in text.splitlines()]
    return "\n".join(ln for ln in lines if ln.strip())


def ocr_pages_needed(item: SourceItem, corpus_root: Path, config: ChunkConfig) -> list[int]:
    """The pages (1-based) of a PDF item that its atoms read through OCR: those without a text
    layer, when ``config.pdf_ocr_dpi`` is on."""
    if not config.pdf_ocr_dpi:
        return []
    return pages_without_text(item, page_texts(item_file(item, corpus_root)), config)


def pages_without_text(item: SourceItem, texts: list[str], config: ChunkConfig) -> list[int]:
    """Of the page texts ``texts``, the pages (1-based) read through OCR: those without a
    text layer, when ``config.pdf_ocr_dpi`` is on."""
    if not config.pdf_ocr_dpi:
        return []
    n = min(item.meta.get("pages", len(texts)), len(texts))
    return [p for p in range(1, n + 1) if not has_text_layer(texts[p - 1])]


def chunk_pdf(
    item: SourceItem,
    corpus_root: Path,
    config: ChunkConfig,
    ocr: dict[int, OcrResult] | None = None,
) -> list[Atom]:
    """One atom per page; ``ocr``: precomputed OCR results of pages without a text layer (page
    -> result; a page missing from it is OCR'd here, through the cache)."""
    path = item_file(item, corpus_root)
    texts = page_texts(path)
    n = item.meta.get("pages", len(texts))
    if n != len(texts):
        logging.getLogger(__name__).warning(
            "%s: meta says %s pages, pypdf reads %d", item.source_id, n, len(texts)
        )
    atoms = []
    for p in range(1, min(n, len(texts)) + 1):
        text = _clean(texts[p - 1])
        if config.pdf_ocr_dpi and not has_text_layer(texts[p - 1]):
            res = (ocr or {}).get(p) or ocr_page(
                path,
                p,
                dpi=config.pdf_ocr_dpi,
                upscale_min_side=config.ocr_upscale_min_side,
                engine=config.ocr_engine,
            )
            text = ocr_text(res.kept(config.ocr_min_confidence)) or text
        if text or config.pdf_keep_empty_pages:
            atoms.append(make_atom(item, {"page": p}, text))
    return atoms
