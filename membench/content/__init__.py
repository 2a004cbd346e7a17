"""Text-bearing atoms from source items, for the reference systems (SPEC section 6).

:func:`chunk` turns the items of a split into :class:`~membench.contract.protocol.Atom` s with
opaque, deterministic ids (:func:`atom_id`) and their text filled in from the items' real
content, one module per modality:

========================  =================================================================
``pdf``                   one atom per page, pypdf text layer (cached by file sha256); a
                          page without one: rendered (pypdfium2) and OCR'd
``image``                 one atom per image, OCR text in reading order
``ui_screenshot``         OCR line boxes and blocks of nearby lines (bbox atoms)
``video``                 caption windows (30 s every 15 s by default)
``code``                  python: ast functions/classes; others: definition-line segments
``conversation``          windows of 3 turns every 2
========================  =================================================================

OCR (:mod:`membench.content.ocr`) runs once per image content (and per PDF page without a
text layer) and is cached, so a second run does no OCR. Every atom is checked with :func:`~membench.contract.protocol.check_atom` before it is
returned. :func:`content_meta` is what a run records about this step.

Every PDF and image is opened through :mod:`membench.core.content_guard`; an item whose file it
refuses gets no atom, is reported once on standard error (``corpus-path: RULE: message``) and
counted in :func:`not_covered` (meta.json ``content_not_covered``), unless ``--content
strict=1`` makes the refusal stop the run.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..contract.protocol import Atom, check_atom
from ..contract.schema import SourceItem
from ..core import content_guard as guard
from ..core import progress as _progress
from ..core.errors import MembenchError
from . import ocr as _ocr
from . import pdf as _pdf
from .code import chunk_code
from .common import atom_id, item_file
from .config import ChunkConfig, strict
from .conversation import chunk_conversation
from .image import chunk_image
from .pdf import chunk_pdf
from .screenshot import chunk_screenshot
from .video import chunk_video

__all__ = ["ChunkConfig", "atom_id", "chunk", "chunk_item", "content_meta", "not_covered"]

log = logging.getLogger(__name__)

OCR_MODALITIES = ("image", "ui_screenshot")
# modalities whose chunker OCRs some parts of an item (a PDF's pages without a text layer):
# their chunker takes a dict part -> OCR result
PART_OCR_MODALITIES = ("pdf",)
# which reader makes the reference systems' atoms of each modality (the OCR ones take a
# precomputed OCR result too)
CHUNKERS: dict[str, Callable[..., list[Atom]]] = {
    "pdf": chunk_pdf,
    "image": chunk_image,
    "ui_screenshot": chunk_screenshot,
    "video": chunk_video,
    "code": chunk_code,
    "conversation": chunk_conversation,
}


def chunk_item(
    item: SourceItem,
    corpus_root: Path,
    config: ChunkConfig | None = None,
    ocr: _ocr.OcrResult | None = None,
) -> list[Atom]:
    """The atoms of one item (``ocr``: a precomputed OCR result for image/screenshot items; for
    a PDF, page -> OCR result of its pages without a text layer)."""
    config = config or ChunkConfig()
    corpus_root = Path(corpus_root)
    m = item.modality
    fn = CHUNKERS.get(m)
    if fn is None:  # pragma: no cover - the schema forbids it
        raise MembenchError(f"{item.source_id}: no chunker for modality {m!r}")
    takes_ocr = m in OCR_MODALITIES + PART_OCR_MODALITIES
    atoms = fn(item, corpus_root, config, ocr) if takes_ocr else fn(item, corpus_root, config)
    for a in atoms:
        why = check_atom(a, item)
        if why:
            raise MembenchError(f"chunker produced a bad atom for {item.source_id}: {why}")
    return atoms


# source id -> the line that refused its file, in this process (what not_covered counts)
_refused: dict[str, guard.ContentError] = {}
_said: set[str] = set()  # the lines already printed (a file is reported once)


def _refuse(item: SourceItem, e: guard.ContentError) -> None:
    """The item's file was refused: stop (strict) or report it once and count the item as not
    covered. The line names the file by its path under the corpus root."""
    e = guard.ContentError(item.path or e.file, None, None, e.message, e.rule)
    if strict():
        raise e
    _refused[item.source_id] = e
    if str(e) not in _said:
        _said.add(str(e))
        print(
            f"membench: {e} (not covered: {item.source_id}; --content strict=1 stops here)",
            file=sys.stderr,
            flush=True,
        )


def not_covered(clear: bool = False) -> dict[str, Any]:
    """The items whose file the guard refused in this process (``clear``: then forget them and
    the lines said, as a run starts and ends):
    how many, by rule, and the first 20 lines by source id (meta.json ``content_not_covered``)."""
    by_rule: dict[str, int] = {}
    for e in _refused.values():
        by_rule[e.rule] = by_rule.get(e.rule, 0) + 1
    out = {
        "items": len(_refused),
        "by_rule": dict(sorted(by_rule.items())),
        "first": {sid: str(e) for sid, e in list(_refused.items())[:20]},
    }
    if clear:
        _refused.clear()
        _said.clear()
    return out


def _takes_two(fn: Callable) -> bool:
    """Whether ``fn`` takes a second positional argument."""
    import inspect

    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
    except (TypeError, ValueError):
        return False
    return len(params) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def chunk(
    items: Iterable[SourceItem],
    corpus_root: str | Path,
    config: ChunkConfig | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    while_ocr: Callable[..., None] | None = None,
) -> list[Atom]:
    """All atoms of ``items``, in item order then position in the item.

    Images, screenshots and PDF pages without a text layer that are not in the OCR cache are
    OCR'd in ``config.ocr_processes`` worker processes, started first; while they run, this
    process makes the other items' atoms (PDF text layers, code units, windows) and hands them
    to ``while_ocr`` (with, when it takes a second argument, a function that says whether the
    workers are still OCR-ing: the dense engine then uses the other CPUs too; it embeds
    them there, so embedding overlaps OCR on two cores), then makes the OCR items' atoms when
    the OCR is done. With ``ocr_processes=1`` (or ``config.ocr_overlap`` off) the OCR runs in
    this process before the other items and ``while_ocr`` is not called; the atoms are the
    same either way (in item order). The ``content`` step makes the atoms of the items without
    OCR, ``content (OCR text)`` those of images and screenshots. ``progress(stage, done,
    total)`` is called as OCR images and items are done, and the ``ocr`` and ``content`` steps
    report through :mod:`membench.core.progress` (an item is a cache hit when its PDF text
    layer or its OCR was read from the cache)."""
    config = config or ChunkConfig()
    corpus_root = Path(corpus_root)
    items = list(items)
    paths = {
        it.source_id: item_file(it, corpus_root) for it in items if it.modality in OCR_MODALITIES
    }
    pdf_pages, pre_hit, refused = _pdf_ocr_pages(items, corpus_root, config)
    results: dict[str, Any] = {}
    ocr_ran: set[str] = set()
    by_item: dict[int, list[Atom]] = {}

    def needs_ocr(it: SourceItem) -> bool:
        return it.modality in OCR_MODALITIES or it.source_id in pdf_pages

    plain = [k for k, it in enumerate(items) if not needs_ocr(it)]
    with_ocr = [k for k, it in enumerate(items) if needs_ocr(it)]
    done = 0

    def make(ks: list[int], name: str) -> None:
        nonlocal done
        with _progress.step(name, total=len(ks), unit="item", cached=True) as bar:
            for k in ks:
                it = items[k]
                bar.note(it.source_id)
                hits, extracted = _pdf.stats["cache_hits"], _pdf.stats["extractions"]
                by_item[k] = _chunk_guarded(it, corpus_root, config, results, refused)
                if _pdf.stats["extractions"] > extracted:
                    bar.count("PDF text layers extracted")
                # an item is a cache hit when its PDF text or its OCR came from the cache
                bar.advance(
                    cache_hit=_pdf.stats["cache_hits"] > hits
                    or pre_hit.get(it.source_id, False)
                    and it.source_id not in pdf_pages
                    or results.get(it.source_id) is not None
                    and it.source_id not in ocr_ran
                )
                bar.count("atoms", len(by_item[k]))
                done += 1
                if progress:
                    progress("items", done, len(items))

    job = None
    sources = list(paths.values()) + [s for pages in pdf_pages.values() for s in pages.values()]
    if sources:
        calls = _ocr.stats["engine_calls"]
        job = _ocr.start_many(
            sources,
            upscale_min_side=config.ocr_upscale_min_side,
            engine=config.ocr_engine,
            processes=config.ocr_processes if config.ocr_overlap else 1,
            progress=(lambda d, n: progress("ocr", d, n)) if progress else None,
            pdf_dpi=config.pdf_ocr_dpi,
        )
    with job if job is not None else contextlib.nullcontext():
        if job is not None and not job.running:  # in process: OCR first, as before
            job.wait()
        make(plain, "content")
        if while_ocr is not None and plain and job is not None and job.running:
            done_atoms = [a for k in plain for a in by_item[k]]
            if _takes_two(while_ocr):  # it may ask whether the workers still work
                while_ocr(done_atoms, lambda: job.working)
            else:
                while_ocr(done_atoms)
        if job is not None:
            by_path = job.wait()
            _refuse_failed(items, job.failed, paths, pdf_pages, refused)
            results = {sid: by_path[str(p)] for sid, p in paths.items() if sid not in refused}
            results.update(
                {
                    sid: {p: by_path[s] for p, s in pages.items()}
                    for sid, pages in pdf_pages.items()
                    if sid not in refused
                }
            )
            if _ocr.stats["engine_calls"] > calls:  # which items' OCR ran now (not cached)
                ocr_ran = {sid for sid, p in paths.items() if _ocr.last_run.get(str(p))}
                ocr_ran |= {
                    sid
                    for sid, pages in pdf_pages.items()
                    if any(_ocr.last_run.get(s) for s in pages.values())
                }
            make(with_ocr, "content (OCR text)")
    return _in_item_order(len(items), by_item)


def _pdf_ocr_pages(
    items: list[SourceItem], corpus_root: Path, config: ChunkConfig
) -> tuple[dict[str, dict[int, str]], dict[str, bool], set[str]]:
    """The PDF pages without a text layer, OCR sources too (``"<path>#page=<p>"``) by item
    and page; per PDF item whether its text layers came from the cache; the items refused."""
    pdf_pages: dict[str, dict[int, str]] = {}
    pre_hit: dict[str, bool] = {}
    refused: set[str] = set()
    for it in items:
        if it.modality in PART_OCR_MODALITIES and config.pdf_ocr_dpi:
            hits = _pdf.stats["cache_hits"]
            try:
                need = _pdf.ocr_pages_needed(it, corpus_root, config)
            except guard.ContentError as e:
                _refuse(it, e)
                refused.add(it.source_id)
                continue
            pre_hit[it.source_id] = _pdf.stats["cache_hits"] > hits
            if need:
                f = item_file(it, corpus_root)
                pdf_pages[it.source_id] = {p: _ocr.page_source(f, p) for p in need}
    return pdf_pages, pre_hit, refused


def _in_item_order(n: int, by_item: dict[int, list[Atom]]) -> list[Atom]:
    """The atoms of the ``n`` items (``by_item``: by item index), in item order; two atoms of
    different items with one id are an error."""
    atoms: list[Atom] = []
    seen: dict[str, str] = {}
    for k in range(n):
        for a in by_item[k]:
            other = seen.setdefault(a.atom_id, a.source_id)
            if other != a.source_id:  # pragma: no cover - 64-bit collision
                raise MembenchError(
                    f"atom id {a.atom_id} of {a.source_id} collides with one of {other}"
                )
            atoms.append(a)
    return atoms


def _chunk_guarded(
    it: SourceItem,
    corpus_root: Path,
    config: ChunkConfig,
    results: dict[str, Any],
    refused: set[str],
) -> list[Atom]:
    """The item's atoms, or none when the guard refused its file (:func:`_refuse`)."""
    if it.source_id in refused:
        return []
    try:
        return chunk_item(it, corpus_root, config, results.get(it.source_id))
    except guard.ContentError as e:
        _refuse(it, e)
        refused.add(it.source_id)
        return []


def _refuse_failed(
    items: list[SourceItem],
    failed: dict[str, guard.ContentError],
    paths: dict[str, Path],
    pdf_pages: dict[str, dict[int, str]],
    refused: set[str],
) -> None:
    """Refuse the items one of whose OCR sources (an image, a PDF page) the guard refused."""
    if not failed:
        return
    sources = {sid: [str(p)] for sid, p in paths.items()}
    sources.update({sid: list(pages.values()) for sid, pages in pdf_pages.items()})
    for it in items:
        bad = [failed[s] for s in sources.get(it.source_id, ()) if s in failed]
        if bad and it.source_id not in refused:
            _refuse(it, bad[0])
            refused.add(it.source_id)


def content_meta(config: ChunkConfig | None = None) -> dict[str, Any]:
    """What a run records about chunking: the config and the extractors' identities."""
    config = config or ChunkConfig()
    return {
        "chunk_config": config.as_dict(),
        "ocr_engine": _ocr.engine_tag(config.ocr_upscale_min_side, config.ocr_engine),
        "pdf_extractor": _pdf.extractor_tag(),
        "pdf_page_renderer": (_ocr.render_tag(config.pdf_ocr_dpi) if config.pdf_ocr_dpi else "off"),
    }
