"""membench.content on small hand-made items: each chunker's extents, text, coverage and ids."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

from membench.content import ChunkConfig, atom_id, chunk, chunk_item, content_meta
from membench.content.code import code_ranges, read_lines
from membench.content.windows import spans
from membench.contract.protocol import check_atom
from membench.contract.schema import SourceItem
from membench.core.errors import MembenchError
from membench.modalities import EXTENT_CAPS

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
ID = re.compile(r"^a[0-9a-f]{16}$")


def item(modality, sid="src:x", **kw) -> SourceItem:
    return SourceItem(source_id=sid, modality=modality, holder="h/1", observed_at=T0, **kw)


def assert_valid(atoms, it):
    assert atoms
    for a in atoms:
        assert check_atom(a, it) is None, (a.extent, check_atom(a, it))
        assert ID.match(a.atom_id)
        assert a.atom_id == atom_id(it.source_id, a.extent)
    assert len({a.atom_id for a in atoms}) == len(atoms)


# ----------------------------------------------------------------------------- ids, config


def test_atom_ids_opaque_and_deterministic():
    a = atom_id("mmlongbench:doc.pdf", {"page": 3})
    assert ID.match(a) and "doc" not in a
    assert a == atom_id("mmlongbench:doc.pdf", {"page": 3})
    assert a != atom_id("mmlongbench:doc.pdf", {"page": 4})
    assert a != atom_id("mmlongbench:doc2.pdf", {"page": 3})
    # key order of the extent does not matter
    assert atom_id("s", {"t_start": 1.0, "t_end": 2.0}) == atom_id(
        "s", {"t_end": 2.0, "t_start": 1.0}
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"video_window_s": 90},
        {"code_max_lines": 500},
        {"conv_window_turns": 9},
        {"video_stride_s": 40},
        {"screen_block_max_share": 0.8},
        {"ocr_processes": 0},
        {"code_other": "ast"},
    ],
)
def test_config_rejects_values_past_the_caps(bad):
    with pytest.raises(MembenchError):
        ChunkConfig(**bad)


def test_content_meta_records_config_and_engines():
    meta = content_meta(ChunkConfig(video_window_s=20))
    assert meta["chunk_config"]["video_window_s"] == 20
    assert "rapidocr_onnxruntime==" in meta["ocr_engine"]
    assert meta["pdf_extractor"].startswith("pypdf==")


def test_spans_cover_everything():
    assert spans(0, 3, 2) == []
    assert spans(2, 3, 2) == [(0, 2)]
    assert spans(7, 3, 2) == [(0, 3), (2, 5), (4, 7)]
    assert spans(100, 40, 20, start=1) == [(1, 41), (21, 61), (41, 81), (61, 101)]


# ----------------------------------------------------------------------------- conversation


def test_conversation_windows(tmp_path):
    turns = [
        {"turn": i, "speaker": "A" if i % 2 else "B", "text": f"line {i}"} for i in range(1, 8)
    ]
    turns[3]["image_caption"] = "a photo of a dog"
    it = item("conversation", content=turns, meta={"date_time": "1:56 pm on 8 May, 2023"})
    atoms = chunk_item(it, tmp_path)
    assert_valid(atoms, it)
    assert [(a.extent["turn_start"], a.extent["turn_end"]) for a in atoms] == [
        (1, 3),
        (3, 5),
        (5, 7),
    ]
    assert atoms[0].text == "[1:56 pm on 8 May, 2023]\nA: line 1\nB: line 2\nA: line 3"
    assert "B: line 4 [image: a photo of a dog]" in atoms[1].text
    plain = chunk_item(it, tmp_path, ChunkConfig(conv_date_header=False, conv_stride_turns=1))
    assert len(plain) == 5 and plain[0].text.startswith("A: line 1")


def test_conversation_single_turn_and_gaps(tmp_path):
    it = item("conversation", content=[{"turn": 1, "speaker": "A", "text": "hi"}])
    (a,) = chunk_item(it, tmp_path)
    assert a.extent == {"turn_start": 1, "turn_end": 1}
    gap = item(
        "conversation", content=[{"turn": n, "speaker": "A", "text": str(n)} for n in (1, 2, 30)]
    )
    atoms = chunk_item(gap, tmp_path)
    assert_valid(atoms, gap)  # never a window past the turn cap
    assert {a.extent["turn_start"] for a in atoms} == {1, 2, 30}


# ----------------------------------------------------------------------------- video


def test_video_windows_cover_every_cue():
    cues = [
        [0.5, 3.0, "alpha"],
        [10.0, 10.0, "zero"],
        [70.0, 75.0, "late"],
        [100.0, 130.0, "long cue"],
    ]
    it = item("video", content=cues, meta={"duration": 140})
    atoms = chunk_item(it, ".")
    assert_valid(atoms, it)
    spans_ = [(a.extent["t_start"], a.extent["t_end"]) for a in atoms]
    assert spans_ == [
        (0.0, 30.0),
        (45.0, 75.0),
        (60.0, 90.0),
        (75.0, 105.0),
        (90.0, 120.0),
        (105.0, 135.0),
        (120.0, 140.0),
    ]  # 15..45 holds no cue
    assert atoms[0].text == "alpha\nzero"
    for s, e, text in cues:
        holders = [
            a
            for a in atoms
            if a.extent["t_start"] <= s
            and e <= a.extent["t_end"]
            or (a.extent["t_start"] < e and s < a.extent["t_end"])
        ]
        assert holders and all(text in a.text for a in holders)
    for a in atoms:
        assert a.extent["t_end"] - a.extent["t_start"] <= EXTENT_CAPS["video"]["seconds"]


def test_video_windows_end_when_the_duration_has_more_decimals_than_extents():
    """PsTuts's "00:04:53.34" is 293.34000000000003 s: the last window's rounded end is below
    it, and the windows still end (they once never did)."""
    dur = 4 * 60 + 53.34
    assert round(dur, 3) < dur
    it = item(
        "video", content=[[0.0, 4.84, "first"], [285.83, 292.4, "last"]], meta={"duration": dur}
    )
    atoms = chunk_item(it, ".")
    assert_valid(atoms, it)
    assert atoms[-1].extent == {"t_start": 270.0, "t_end": 293.34}


def test_video_without_cues_has_no_atoms():
    assert chunk_item(item("video", content=[], meta={"duration": 10}), ".") == []


# ----------------------------------------------------------------------------- code

PY = '''import os

# helper comment
@decorator
def top(a):
    def inner():
        return 1
    return inner


class K(Base):
    """Doc."""
    x = 1

    def m(self):
        return 2

    async def n(self):
        pass

print("main")
'''


def code_item(tmp_path, name, text, language, data: bytes | None = None):
    p = tmp_path / name
    p.write_bytes(data if data is not None else text.encode())
    raw = p.read_bytes()
    lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)
    return item(
        "code",
        sid=f"cs:{name}",
        path=name,
        meta={"upstream_path": f"src/{name}", "lines": lines, "language": language},
    )


def covered(atoms):
    out = set()
    for a in atoms:
        out.update(range(a.extent["line_start"], a.extent["line_end"] + 1))
    return out


def assert_code_coverage(atoms, it, root):
    lines = read_lines(root / it.path)
    assert len(lines) == it.meta["lines"]
    cov = covered(atoms)
    assert [i for i, ln in enumerate(lines, 1) if ln.strip() and i not in cov] == []
    for a in atoms:
        assert a.extent["path"] == it.meta["upstream_path"]
        body = "\n".join(
            ln.rstrip("\r") for ln in lines[a.extent["line_start"] - 1 : a.extent["line_end"]]
        )
        assert a.text == f"{it.meta['upstream_path']}\n{body}"


def test_python_ast_segments(tmp_path):
    it = code_item(tmp_path, "m.py", PY, "python")
    atoms = chunk_item(it, tmp_path)
    assert_valid(atoms, it)
    assert_code_coverage(atoms, it, tmp_path)
    by_sym = {a.extent.get("symbol"): a.extent for a in atoms}
    assert set(by_sym) == {None, "top", "K", "K.m", "K.n"}
    assert (by_sym["top"]["line_start"], by_sym["top"]["line_end"]) == (3, 8)  # comment + decorator
    assert (by_sym["K"]["line_start"], by_sym["K"]["line_end"]) == (11, 14)
    assert (by_sym["K.m"]["line_start"], by_sym["K.m"]["line_end"]) == (15, 16)
    assert (by_sym["K.n"]["line_start"], by_sym["K.n"]["line_end"]) == (18, 19)
    assert (by_sym[None]["line_start"], by_sym[None]["line_end"]) == (20, 21)  # print("main")
    assert "inner" not in by_sym


def test_python2_falls_back_to_patterns(tmp_path):
    src = 'def f(x):\n    print "hi"\n\nclass A:\n    def g(self):\n        pass\n'
    it = code_item(tmp_path, "old.py", src, "python")
    atoms = chunk_item(it, tmp_path)
    assert_valid(atoms, it)
    assert_code_coverage(atoms, it, tmp_path)
    assert [a.extent.get("symbol") for a in atoms] == ["f", "A", "A.g"]


def test_java_and_go_patterns(tmp_path):
    java = (
        "package x;\n\nimport a.B;\n\n/** Doc. */\npublic class Foo extends Bar {\n"
        "    private int n;\n\n    /**\n     * Adds.\n     */\n    @Override\n"
        "    public static void add(int a) throws E {\n        return helper(a);\n    }\n\n"
        "    private byte[] read() {\n        Runnable r = new Runnable() {\n"
        "            public void run() { }\n        };\n        return null;\n    }\n}\n"
    )
    it = code_item(tmp_path, "Foo.java", java, "java")
    atoms = chunk_item(it, tmp_path)
    assert_valid(atoms, it)
    assert_code_coverage(atoms, it, tmp_path)
    got = [(a.extent["line_start"], a.extent.get("symbol")) for a in atoms]
    assert got == [(1, None), (5, "Foo"), (9, "Foo.add"), (17, "Foo.read")]
    go = (
        "package m\n\n// Add adds.\nfunc Add(a int) int {\n\treturn a\n}\n\n"
        "type T struct {\n\tn int\n}\n\nfunc (t *T) Get() int { return t.n }\n"
    )
    it = code_item(tmp_path, "m.go", go, "go")
    atoms = chunk_item(it, tmp_path)
    assert_valid(atoms, it)
    assert [(a.extent["line_start"], a.extent.get("symbol")) for a in atoms] == [
        (1, None),
        (3, "Add"),
        (8, "T"),
        (12, "T.Get"),
    ]


def test_windows_when_no_definitions(tmp_path):
    text = "".join(f"x{i} = {i}\n" for i in range(1, 101))
    it = code_item(tmp_path, "data.js", text, "javascript")
    atoms = chunk_item(it, tmp_path)
    assert_valid(atoms, it)
    assert [(a.extent["line_start"], a.extent["line_end"]) for a in atoms] == [
        (1, 40),
        (21, 60),
        (41, 80),
        (61, 100),
    ]
    assert_code_coverage(atoms, it, tmp_path)
    win = chunk_item(
        code_item(tmp_path, "m2.py", PY, "python"),
        tmp_path,
        ChunkConfig(code_python_ast=False, code_other="windows"),
    )
    assert all("symbol" not in a.extent for a in win)


def test_long_definitions_are_split_within_the_cap(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(300))
    it = code_item(tmp_path, "long.py", "def big():\n" + body, "python")
    atoms = chunk_item(it, tmp_path)
    assert_valid(atoms, it)
    assert_code_coverage(atoms, it, tmp_path)
    assert [
        (a.extent["line_start"], a.extent["line_end"], a.extent.get("symbol")) for a in atoms
    ] == [(1, 101, "big"), (102, 202, None), (203, 301, None)]
    atoms = chunk_item(it, tmp_path, ChunkConfig(code_max_lines=200))
    assert max(a.extent["line_end"] - a.extent["line_start"] + 1 for a in atoms) <= 200


def test_line_counting_matches_meta(tmp_path):
    # CRLF, no final newline, invalid UTF-8, a form feed (not a line break for meta.lines)
    data = b"def a():\r\n    return '\xff'\r\n\x0c\r\ndef b():\r\n    pass"
    it = code_item(tmp_path, "crlf.py", "", "python", data=data)
    atoms = chunk_item(it, tmp_path)
    assert_valid(atoms, it)
    assert_code_coverage(atoms, it, tmp_path)
    assert [a.extent.get("symbol") for a in atoms] == ["a", "b"]
    assert atoms[-1].extent["line_end"] == 5 == it.meta["lines"]
    # a lone CR breaks lines for the parser but not for meta.lines: no ast, no wrong numbers
    it = code_item(tmp_path, "cr.py", "", "python", data=b"x = 1\rdef a():\n    pass\n")
    atoms = chunk_item(it, tmp_path)
    assert_valid(atoms, it)
    assert max(a.extent["line_end"] for a in atoms) <= 2


def test_code_ranges_ignore_blank_only_segments():
    lines = ["def a():", "    pass", "", "", "", "def b():", "    pass"]
    assert code_ranges(lines, "python", ChunkConfig()) == [(1, 2, "a"), (6, 7, "b")]


# ----------------------------------------------------------------------------- pdf


def tiny_pdf(pages: list[str]) -> bytes:
    """A minimal valid PDF, one page per string (empty string = a page without text)."""
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        None,
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    for text in pages:
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET" if text else ""
        objs.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
        content = len(objs)
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {content} 0 R >>"
        )
        kids.append(f"{len(objs)} 0 R")
    objs[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(pages)} >>"
    out = b"%PDF-1.4\n"
    offsets = []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n{o}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{off:010d} 00000 n \n" for off in offsets).encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def test_pdf_pages_and_cache(tmp_path, monkeypatch):
    from membench.content import pdf

    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "d.pdf").write_bytes(tiny_pdf(["Hello quarterly revenue", "", "Third page"]))
    it = item("pdf", path="d.pdf", meta={"pages": 3})
    before = dict(pdf.stats)
    atoms = chunk_item(it, tmp_path)
    assert_valid(atoms, it)
    assert [a.extent for a in atoms] == [{"page": 1}, {"page": 2}, {"page": 3}]
    assert "quarterly revenue" in atoms[0].text and atoms[1].text == "" and "Third" in atoms[2].text
    again = chunk_item(it, tmp_path)
    assert again == atoms
    assert pdf.stats["extractions"] == before["extractions"] + 1
    assert pdf.stats["cache_hits"] == before["cache_hits"] + 1
    kept = chunk_item(it, tmp_path, ChunkConfig(pdf_keep_empty_pages=False))
    assert [a.extent["page"] for a in kept] == [1, 3]


def test_chunk_dispatches_and_rejects_missing_files(tmp_path):
    its = [
        item("video", sid="v:1", content=[[0, 5, "hi"]], meta={"duration": 5}),
        item("conversation", sid="c:1", content=[{"turn": 1, "speaker": "A", "text": "x"}]),
    ]
    atoms = chunk(its, tmp_path)
    assert [a.source_id for a in atoms] == ["v:1", "c:1"]
    assert chunk(its, tmp_path) == atoms
    with pytest.raises(MembenchError, match="not found"):
        chunk([item("pdf", sid="p:1", path="missing.pdf", meta={"pages": 1})], tmp_path)
