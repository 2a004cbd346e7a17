"""membench.content on real corpus items (a few per modality, loaded by the source adapters;
the two PDF items are made here with their page count from pypdf, because the MMLongBench
adapter reads all 53 PDFs on a cold cache).

Every atom passes check_atom; the atoms cover their item (every page, every captioned moment,
every turn, every non-blank code line); ids are opaque and deterministic; OCR finds known text.
OCR and PDF text use the real cache, so a rerun does no OCR.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest
from pypdf import PdfReader

from membench.content import chunk, ocr
from membench.content.code import read_lines
from membench.contract.protocol import check_atom
from membench.contract.schema import SourceItem
from membench.sources import BY_KEY

PICK = {
    "mmlongbench": ["mmlongbench:2303.05039v2.pdf", "mmlongbench:2310.07609v1.pdf"],
    "tabmwp": ["tabmwp:16.png", "tabmwp:10018.png"],
    "finchart": ["finchart:1243210261_13_crop_0.jpg"],
    "screenspot": ["screenspot:web_55e57d6e-0cb0-4024-b89f-89a3c594f20e.png"],
    "medvidqa": ["medvidqa:v0HODFTrkqs", "medvidqa:0CD3mYjPXxk"],
    "codesearchnet": [
        "codesearchnet:003d236daee8b7aca39c62708b18d59bced0bc03_pandas_profiling___init__.py",
        (
            "codesearchnet:95ba7b261e39754674c5817695ae5ebf9a341fae_pgjdbc_src_main_java_org_"
            "postgresql_core_v3_QueryExecutorImpl.java"
        ),
    ],
    "locomo": ["locomo:conv-26:session_1", "locomo:conv-30:session_2"],
}
ID = re.compile(r"^a[0-9a-f]{16}$")


@pytest.fixture(scope="module")
def loaded(corpus_root):
    items, gold = {}, {}
    for sid in PICK["mmlongbench"]:
        path = "mmlongbench-doc/documents/" + sid.split(":", 1)[1]
        pages = len(PdfReader(corpus_root / path).pages)
        items[sid] = SourceItem(
            source_id=sid,
            modality="pdf",
            holder="mmlongbench/x",
            observed_at=datetime(2024, 1, 1, tzinfo=timezone.utc),
            path=path,
            meta={"pages": pages},
        )
    for key, sids in PICK.items():
        if key == "mmlongbench":
            continue
        res = BY_KEY[key].load(corpus_root)
        by = {i.source_id: i for i in res.items}
        for sid in sids:
            items[sid] = by[sid]
        for d in res.drafts:
            for g in d.gold:
                if g.source_id in sids:
                    gold.setdefault(g.source_id, []).append((d.question, g.region))
    return items, gold


@pytest.fixture(scope="module")
def atoms(loaded, corpus_root):
    items, _ = loaded
    out = chunk(list(items.values()), corpus_root)
    by: dict[str, list] = {sid: [] for sid in items}
    for a in out:
        by[a.source_id].append(a)
    return out, by


def test_every_atom_valid_opaque_and_deterministic(loaded, atoms, corpus_root):
    items, _ = loaded
    out, by = atoms
    assert all(by[sid] for sid in items), [sid for sid in items if not by[sid]]
    for a in out:
        assert check_atom(a, items[a.source_id]) is None
        assert ID.match(a.atom_id)
    assert len({a.atom_id for a in out}) == len(out)
    before = ocr.stats["engine_calls"]
    assert chunk(list(items.values()), corpus_root) == out
    assert ocr.stats["engine_calls"] == before  # second run: all from the cache


def test_pdf_pages(loaded, atoms):
    items, _ = loaded
    _, by = atoms
    for sid in PICK["mmlongbench"]:
        pages = [a.extent["page"] for a in by[sid]]
        assert pages == list(range(1, items[sid].meta["pages"] + 1))
        assert sum(1 for a in by[sid] if a.text) >= len(pages) - 1
    first = by["mmlongbench:2303.05039v2.pdf"][0].text.lower()
    assert "abstract" in first or "introduction" in first


def test_image_ocr_finds_known_text(atoms):
    _, by = atoms
    (t16,) = by["tabmwp:16.png"]
    assert t16.extent == {}
    assert "coin" in t16.text.lower() and "Braden" in t16.text and "76" in t16.text
    assert "Westminster" in by["tabmwp:10018.png"][0].text
    assert "Gross Margin" in by["finchart:1243210261_13_crop_0.jpg"][0].text


def test_screenshot_regions(loaded, atoms):
    items, gold = loaded
    _, by = atoms
    sid = PICK["screenspot"][0]
    (region,) = [r for q, r in gold[sid] if "clothing" in q.lower()]
    g = region["bbox"]
    hits = [
        a
        for a in by[sid]
        if a.extent["bbox"][0] < g[2]
        and g[0] < a.extent["bbox"][2]
        and a.extent["bbox"][1] < g[3]
        and g[1] < a.extent["bbox"][3]
    ]
    assert any("Clothing" in a.text and "Jewelry" in a.text for a in hits)
    w, h = items[sid].meta["width"], items[sid].meta["height"]
    assert (
        max((b[2] - b[0]) * (b[3] - b[1]) for b in (a.extent["bbox"] for a in by[sid]))
        <= 0.5 * w * h
    )


def test_video_windows_cover_captions(loaded, atoms):
    items, _ = loaded
    _, by = atoms
    for sid in PICK["medvidqa"]:
        wins = [(a.extent["t_start"], a.extent["t_end"]) for a in by[sid]]
        for s, e, text in items[sid].content:
            # every second of every cue is inside some window, and its text is indexed there
            t = s
            while t <= e:
                assert any(ws <= t <= we for ws, we in wins), (sid, t)
                t += 1.0
            assert any(
                text.strip() in a.text
                for a in by[sid]
                if a.extent["t_start"] < max(e, s + 1e-9) and s <= a.extent["t_end"]
            )


def test_code_lines_covered_and_gold_in_a_symbol_atom(loaded, atoms, corpus_root):
    items, gold = loaded
    _, by = atoms
    for sid in PICK["codesearchnet"]:
        it = items[sid]
        lines = read_lines(corpus_root / it.path)
        assert len(lines) == it.meta["lines"]
        cov = set()
        for a in by[sid]:
            cov.update(range(a.extent["line_start"], a.extent["line_end"] + 1))
            assert a.text.split("\n", 1)[0] == it.meta["upstream_path"]
        assert [i for i, ln in enumerate(lines, 1) if ln.strip() and i not in cov] == []
        for _q, region in gold[sid]:
            holding = [
                a
                for a in by[sid]
                if a.extent["line_start"] <= region["line"] <= a.extent["line_end"]
            ]
            assert any("symbol" in a.extent for a in holding), (sid, region)
    syms = {a.extent.get("symbol") for a in by[PICK["codesearchnet"][0]]}
    assert {"ProfileReport", "ProfileReport.to_file"} <= syms


def test_conversation_turns_covered(loaded, atoms):
    items, _ = loaded
    _, by = atoms
    for sid in PICK["locomo"]:
        turns = [t["turn"] for t in items[sid].content]
        cov = set()
        for a in by[sid]:
            cov.update(range(a.extent["turn_start"], a.extent["turn_end"] + 1))
            assert a.text.startswith(f"[{items[sid].meta['date_time']}]")
        assert set(turns) <= cov
        first = items[sid].content[0]
        assert f"{first['speaker']}: {first['text'].split()[0]}" in by[sid][0].text


def test_pdf_text_from_the_build_equals_a_fresh_extraction(corpus_root, tmp_path, monkeypatch):
    """A run takes a PDF's page texts from the build's reading of it when the build cached one
    (same pypdf call, same version); on real PDFs that equals extracting them again."""
    from membench.content import pdf as content_pdf
    from membench.sources import mmlongbench

    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    for sid in PICK["mmlongbench"]:
        path = corpus_root / "mmlongbench-doc" / "documents" / sid.split(":", 1)[1]
        data = path.read_bytes()
        fresh = content_pdf._extract(data)["pages"]
        assert content_pdf._from_build(content_pdf.sha256_bytes(data)) is None  # not read yet
        mmlongbench.scan_pdfs([path], text=True)  # what the build does
        before = dict(content_pdf.stats)
        assert content_pdf.page_texts(path) == fresh
        assert content_pdf.stats["from_build"] == before["from_build"] + 1
        assert content_pdf.stats["extractions"] == before["extractions"]
