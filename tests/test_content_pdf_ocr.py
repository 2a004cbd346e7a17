"""PDF pages without a text layer, read through OCR (membench.content.pdf, .ocr), on real
pages of the mirror: an image-only slide deck of MMLongBench-Doc and a mixed document.

* the text-layer threshold (modalities.pdf.has_text_layer) on real pages of both kinds;
* a deck page's OCR text holds words of the upstream question and answer asked of it;
* the atoms keep their page region (gold {"page": p} resolves as for text PDFs);
* a mixed document is read page by page: OCR only where the text layer is missing;
* the OCR is cached by the PDF's content, the page and the renderer: a second read runs no
  engine, and another resolution is another cache entry;
* chunk() reports the pages it OCRs on the ocr progress step.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

from membench.content import chunk, ocr
from membench.content import pdf as cpdf
from membench.content.config import ChunkConfig
from membench.contract.protocol import check_atom
from membench.contract.schema import SourceItem
from membench.modalities.pdf import TEXT_LAYER_MIN_CHARS, has_text_layer

DECK = "earlybird-110722143746-phpapp02_95.pdf"  # 41 pages, no text layer
MIXED = "0e94b4197b10096b1f4c699701570fbf.pdf"  # 15 pages, 4 with a text layer
WORD = re.compile(r"[a-z0-9]+")


def _item(corpus_root, doc: str) -> SourceItem:
    from pypdf import PdfReader

    path = f"mmlongbench-doc/documents/{doc}"
    if not (corpus_root / path).is_file():
        pytest.skip(f"{doc} not in the corpus mirror")
    n = len(PdfReader(str(corpus_root / path)).pages)
    return SourceItem(
        source_id=f"mmlongbench:{doc}",
        modality="pdf",
        holder=f"mmlongbench/{doc[:-4]}",
        observed_at=datetime(2024, 1, 1, tzinfo=timezone.utc),
        path=path,
        meta={"pages": n},
    )


def test_threshold_on_real_pages_of_both_kinds(corpus_root):
    deck = cpdf.page_texts(corpus_root / "mmlongbench-doc/documents" / DECK)
    assert len(deck) == 41 and not any(has_text_layer(t) for t in deck)
    assert all(t.strip() == "" for t in deck)  # not even a page number
    text = cpdf.page_texts(corpus_root / "mmlongbench-doc/documents/2303.05039v2.pdf")
    assert all(has_text_layer(t) for t in text)
    mixed = cpdf.page_texts(corpus_root / "mmlongbench-doc/documents" / MIXED)
    kinds = [has_text_layer(t) for t in mixed]
    assert sum(kinds) == 4 and not kinds[0] and kinds[1]
    # page 1 holds a title only ("Data \nPresentation": 16 characters) over an image
    assert 0 < len("".join(mixed[0].split())) < TEXT_LAYER_MIN_CHARS
    # the rule counts non-whitespace characters
    assert not has_text_layer(" \n" * 50 + "x" * (TEXT_LAYER_MIN_CHARS - 1))
    assert has_text_layer("x " * TEXT_LAYER_MIN_CHARS)


def test_a_deck_page_reads_words_of_its_question_and_answer(corpus_root):
    """The deck's gold pages (samples.json, read by the adapter: which of its questions the
    sets ask depends on where the deck sits on its shelf's timeline): their question and answer
    words are found in the OCR text of those pages, each page's atom under {"page": N}."""
    from membench.sources import mmlongbench

    item = _item(corpus_root, DECK)
    recs = [d.model_dump() for d in mmlongbench.load(corpus_root, text=False).drafts]
    mine = [
        r
        for r in recs
        if r["query_id"].startswith(f"mmlongbench:{DECK}:") and not r["unanswerable"]
    ]
    assert mine
    atoms = {a.extent["page"]: a for a in chunk([item], corpus_root, ChunkConfig())}
    assert sorted(atoms) == list(range(1, 42))  # every page, each one atom
    found = 0
    for r in mine:
        page = r["gold"][0]["region"]["page"]
        words = set(WORD.findall(atoms[page].text.lower()))
        q = {w for w in WORD.findall(r["question"].lower()) if len(w) >= 5}
        a = {w for w in WORD.findall((r["answer"] or "").lower()) if len(w) >= 3}
        found += bool((q | a) & words)
    # most gold pages hold a word of their question or answer (OCR drops some spaces on
    # large slide fonts, so not all)
    assert found >= len(mine) * 0.6, (found, len(mine))
    for a in atoms.values():
        assert check_atom(a, item) is None


def test_mixed_document_ocr_only_where_the_text_layer_is_missing(corpus_root, monkeypatch):
    item = _item(corpus_root, MIXED)
    need = cpdf.ocr_pages_needed(item, corpus_root, ChunkConfig())
    texts = cpdf.page_texts(corpus_root / item.path)
    assert need == [p for p in range(1, 16) if not has_text_layer(texts[p - 1])]
    assert len(need) == 11
    seen: list[int] = []
    real = cpdf.ocr_page

    def spy(path, page, **kw):
        seen.append(page)
        return real(path, page, **kw)

    monkeypatch.setattr(cpdf, "ocr_page", spy)
    atoms = {a.extent["page"]: a for a in cpdf.chunk_pdf(item, corpus_root, ChunkConfig())}
    assert seen == need
    # a text-layer page keeps pypdf's text; an image page gets OCR text
    assert "Berlin School of Experimental Psychology" in atoms[2].text.replace("\n", " ")
    assert atoms[1].text and atoms[1].text != texts[0].strip()
    # OCR off: image pages keep their (short or empty) text layer
    off = {
        a.extent["page"]: a for a in cpdf.chunk_pdf(item, corpus_root, ChunkConfig(pdf_ocr_dpi=0))
    }
    assert off[2].text == atoms[2].text
    assert off[5].text == "" and atoms[5].text != ""


def test_page_ocr_is_cached_by_content_page_and_renderer(corpus_root, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    path = corpus_root / "mmlongbench-doc/documents" / DECK
    if not path.is_file():
        pytest.skip("deck not mirrored")
    calls = ocr.stats["engine_calls"]
    first = ocr.ocr_page(path, 3, dpi=72)
    assert ocr.stats["engine_calls"] == calls + 1
    again = ocr.ocr_page(path, 3, dpi=72)
    assert ocr.stats["engine_calls"] == calls + 1 and again == first
    # the same bytes under another name: the same entry (keyed by content, not path)
    copy = tmp_path / "renamed.pdf"
    copy.write_bytes(path.read_bytes())
    assert ocr.ocr_page(copy, 3, dpi=72) == first
    assert ocr.stats["engine_calls"] == calls + 1
    # another page, another resolution: other entries
    assert ocr.source_sha(ocr.page_source(path, 4), 72) != ocr.source_sha(
        ocr.page_source(path, 3), 72
    )
    assert ocr.source_sha(ocr.page_source(path, 3), 96) != ocr.source_sha(
        ocr.page_source(path, 3), 72
    )
    assert (first.width, first.height) == (768, 576)  # 72 dpi of a 768 x 576 pt page


@pytest.mark.slow
def test_chunk_reports_pages_on_the_ocr_step(corpus_root, tmp_path, monkeypatch):
    """The ocr step counts the PDF pages it reads, done and left (two worker processes)."""
    from membench.core import progress

    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    item = _item(
        corpus_root, "germanwingsdigitalcrisisanalysis-150403064828-conversion-gate01_95.pdf"
    )
    steps = []
    real_step = progress.step

    def spy(name, *a, **kw):
        s = real_step(name, *a, **kw)
        steps.append(s)
        return s

    monkeypatch.setattr(progress, "step", spy)
    monkeypatch.setattr(ocr._progress, "step", spy)
    seen = []
    atoms = chunk(
        [item],
        corpus_root,
        ChunkConfig(ocr_processes=2),
        progress=lambda stage, d, n: seen.append((stage, d, n)),
    )
    assert len(atoms) == 23
    o = next(s for s in steps if s.name == "ocr")
    assert o.total == 23 and o.done == 23 and o.counters.get("PDF pages") == 23
    assert [x for x in seen if x[0] == "ocr"][-1] == ("ocr", 23, 23)
