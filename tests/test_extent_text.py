"""membench.metrics.extent_text: the text membench reads for atom extents and gold regions, on
a small sets folder written here (a text PDF with an image-only page, an image and a
screenshot with their OCR in a private cache, a video, a code file, a conversation) and on real
items of bench/sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image
from test_content_chunkers import tiny_pdf

from membench.content import ChunkConfig, chunk_item
from membench.content import ocr as _ocr
from membench.content.conversation import turn_line
from membench.core.errors import MembenchError
from membench.metrics.answers import needles, occurs
from membench.metrics.extent_text import ExtentText

REPO = Path(__file__).resolve().parent.parent
T0 = "2024-01-01T00:00:00+00:00"

CODE = (
    "import os\n\ndef add(a, b):\n    return a + b\r\n\nclass K:\n    def m(self):\n        pass\n"
)
TURNS = [
    {"turn": 1, "speaker": "Ann", "text": "I moved to  Oslo."},
    {"turn": 2, "speaker": "Bo", "text": "Nice!", "image_caption": "a fjord"},
    {"turn": 3, "speaker": "Ann", "text": "It cost 1,200 kroner."},
]
CUES = [
    [0.0, 4.0, "first cue"],
    [4.0, 9.5, "second cue"],
    [9.5, 9.5, "an instant"],
    [12.0, 20.0, "third cue"],
]
# (text, box) of the fake OCR lines of the screenshot (100 x 80 px)
SCREEN = [
    ("Settings", [10, 5, 60, 15]),
    ("Pay now", [10, 40, 50, 50]),
    ("Cancel", [60, 40, 95, 50]),
]


def ocr_entry(path: Path, lines: list[tuple[str, list[float]]], *, page: int | None = None) -> None:
    """A cache entry of the OCR engine for an image file or a PDF page, as if it had run."""
    config = ChunkConfig()
    src = path if page is None else _ocr.page_source(path, page)
    sha = _ocr.source_sha(src, config.pdf_ocr_dpi)
    obj = {
        "format": _ocr.CACHE_FORMAT,
        "engine": _ocr.engine_tag(config.ocr_upscale_min_side, config.ocr_engine),
        "width": 100,
        "height": 80,
        "scale": 1.0,
        "seconds": 0.0,
        "lines": [
            {
                "text": t,
                "confidence": 0.9,
                "box": b,
                "quad": [[b[0], b[1]], [b[2], b[1]], [b[2], b[3]], [b[0], b[3]]],
            }
            for t, b in lines
        ],
    }
    p = _ocr.cache_path(sha, config.ocr_upscale_min_side, config.ocr_engine)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(obj))


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A corpus root and a sets folder of one item per modality; a private content cache."""
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    root, sets = tmp_path / "corpus", tmp_path / "sets"
    root.mkdir()
    sets.mkdir()
    (root / "d.pdf").write_bytes(
        tiny_pdf(["Revenue grew 12.5 percent", "", "Closing words of the annual report"])
    )
    Image.new("RGB", (100, 80), "white").save(root / "chart.png")
    Image.new("RGB", (100, 80), "gray").save(root / "screen.png")
    (root / "a.py").write_text(CODE)

    def it(sid, modality, **kw):
        return {"source_id": sid, "modality": modality, "holder": "h/1", "observed_at": T0, **kw}

    items = [
        it("p:1", "pdf", path="d.pdf", meta={"pages": 3}),
        it("i:1", "image", path="chart.png", meta={"width": 100, "height": 80}),
        it("s:1", "ui_screenshot", path="screen.png", meta={"width": 100, "height": 80}),
        it("v:1", "video", content=CUES, meta={"duration": 20}),
        it(
            "c:1",
            "code",
            path="a.py",
            meta={"lines": 8, "upstream_path": "src/a.py", "language": "python"},
        ),
        it("t:1", "conversation", content=TURNS, meta={"turns": 3}),
    ]
    (sets / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    calls = _ocr.stats["engine_calls"]
    yield sets, root
    assert _ocr.stats["engine_calls"] == calls  # every OCR text came from the cache


def test_pdf_pages_text_layer_and_ocr(world):
    sets, root = world
    et = ExtentText(sets, root)
    assert not et.available("p:1")  # no run has cached its text layer
    from membench.content import pdf as _pdf

    _pdf.page_texts(root / "d.pdf")  # what a run does: the text layer cached
    assert not et.available("p:1")  # page 2 has no text layer: it needs OCR
    ocr_entry(root / "d.pdf", [("scanned", [1, 1, 40, 10]), ("page", [45, 1, 80, 10])], page=2)
    assert et.available("p:1")
    assert et.text("p:1", {"page": 1}) == "Revenue grew 12.5 percent"
    assert et.text("p:1", {"page": 2}) == "scanned\tpage"
    assert et.text("p:1", {"page": 1, "block": 0}) == et.text("p:1", {"page": 1})
    assert et.text("p:1", {"page": 9}) == ""  # past the PDF's end
    assert et.available("p:1")  # read: available whatever the cache holds


def test_pdf_text_is_the_reference_atoms_text(world):
    sets, root = world
    ocr_entry(root / "d.pdf", [("scanned", [1, 1, 40, 10])], page=2)
    et = ExtentText(sets, root)
    for a in chunk_item(et.item("p:1"), root):
        assert et.text("p:1", a.extent) == a.text


def test_image_and_screenshot_read_the_ocr_cache(world):
    sets, root = world
    et = ExtentText(sets, root)
    assert not et.available("i:1") and not et.available("s:1")
    ocr_entry(
        root / "chart.png",
        [("Total", [5, 5, 30, 15]), ("$1.2k", [40, 5, 70, 15]), ("2023", [5, 30, 30, 40])],
    )
    ocr_entry(root / "screen.png", SCREEN)
    assert et.available("i:1") and et.available("s:1")
    assert et.text("i:1", {}) == "Total\t$1.2k\n2023"
    assert occurs(needles(1200, "int"), et.text("i:1", {}))
    assert et.text("s:1", {"bbox": [0, 0, 100, 80]}) == "Settings\nPay now\tCancel"
    assert et.text("s:1", {"bbox": [0, 30, 55, 60]}) == "Pay now"
    assert et.text("s:1", {"bbox": [45, 40, 65, 50]}) == "Pay now\tCancel"
    # touching an edge is no intersection; a box over no line reads nothing
    assert et.text("s:1", {"bbox": [0, 15, 100, 40]}) == ""
    assert et.text("s:1", {"bbox": [70, 60, 90, 75]}) == ""


def test_video_cues_overlapping_the_span(world):
    et = ExtentText(*world)
    assert (
        et.text("v:1", {"t_start": 0.0, "t_end": 30.0})
        == "first cue\nsecond cue\nan instant\nthird cue"
    )
    assert et.text("v:1", {"t_start": 4.0, "t_end": 9.5}) == "second cue\nan instant"
    assert et.text("v:1", {"t_start": 9.5, "t_end": 12.0}) == "an instant"  # touching only
    assert et.text("v:1", {"t_start": 3.0, "t_end": 5}) == "first cue\nsecond cue"
    assert et.text("v:1", {"t_start": 10.0, "t_end": 11.0}) == ""
    assert et.available("v:1")


def test_code_lines(world):
    et = ExtentText(*world)
    assert (
        et.text("c:1", {"path": "src/a.py", "line_start": 3, "line_end": 4})
        == "def add(a, b):\n    return a + b"
    )  # the carriage return dropped
    assert et.text("c:1", {"path": "src/a.py", "line": 1}) == "import os"
    assert (
        et.text("c:1", {"path": "src/a.py", "line_start": 6, "line_end": 8, "symbol": "K"})
        == "class K:\n    def m(self):\n        pass"
    )
    assert (
        et.text("c:1", {"path": "src/a.py", "symbol": "add"}) == "def add(a, b):\n    return a + b"
    )
    assert et.text("c:1", {"path": "src/a.py", "symbol": "K.m"}) == "    def m(self):\n        pass"
    assert et.text("c:1", {"path": "src/a.py", "symbol": "nowhere"}) == ""


def test_conversation_turns_with_speaker(world):
    et = ExtentText(*world)
    assert et.text("t:1", {"turn": 1}) == "Ann: I moved to Oslo."
    assert (
        et.text("t:1", {"turn_start": 2, "turn_end": 3})
        == "Bo: Nice! [image: a fjord]\nAnn: It cost 1,200 kroner."
    )
    assert et.text("t:1", {"turn": 7}) == ""
    assert occurs(needles("1200", "int"), et.text("t:1", {"turn": 3}))


def test_shapes_and_unknown_items_are_refused(world):
    et = ExtentText(*world)
    with pytest.raises(ValueError, match="neither an atom extent nor a gold region"):
        et.text("t:1", {"page": 1})
    with pytest.raises(ValueError, match="neither"):
        et.text("v:1", {"t_start": 5.0})
    with pytest.raises(MembenchError, match="not an item"):
        et.text("nope:1", {})


def test_each_item_is_read_once(world, monkeypatch):
    from membench.metrics import extent_text

    et = ExtentText(*world)
    calls = []
    orig = extent_text.READERS["conversation"]
    monkeypatch.setitem(extent_text.READERS, "conversation", lambda *a: calls.append(1) or orig(*a))
    et.text("t:1", {"turn": 1})
    et.text("t:1", {"turn": 2})
    assert calls == [1]


def test_readers_of_the_same_sets_and_corpus_share_what_they_read(world, monkeypatch):
    """ContentTexts.open: a second reader of the same items file and corpus reads no text
    again; another items file (size or mtime changed) is another reader; an item that could
    not be read is never remembered as readable."""
    import os

    from membench.metrics import extent_text
    from membench.metrics.answer_layer import ContentTexts, Unread

    sets, root = world
    calls = []
    orig = extent_text.ExtentText.text
    monkeypatch.setattr(
        extent_text.ExtentText, "text", lambda self, *a: calls.append(1) or orig(self, *a)
    )
    a = ContentTexts.open(sets, root)
    first = a.read("t:1", {"turn": 1})
    b = ContentTexts.open(sets, root)
    assert b.read("t:1", {"turn": 1}) == first and calls == [1]
    items = sets / "items.jsonl"
    st = items.stat()
    os.utime(items, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    c = ContentTexts.open(sets, root)
    assert c.read("t:1", {"turn": 1}) == first and calls == [1, 1]
    (root / "a.py").unlink()  # a missing file: unread, and again for the next
    for reader in (c, ContentTexts.open(sets, root)):
        with pytest.raises(Unread):
            reader.read("c:1", {"lines": [1, 2]})


def test_a_pdf_whose_text_layer_no_run_has_cached_is_not_available(world):
    """The scorer never extracts a PDF: until a run (or the build) has cached its text layer,
    the item is not available; once cached, only its image-only pages' OCR is asked for."""
    from membench.content import pdf as _pdf

    sets, root = world
    assert not ExtentText(sets, root).available("p:1")
    assert _pdf.cached_page_texts(root / "d.pdf") is None
    texts = _pdf.page_texts(root / "d.pdf")  # what a run does
    assert _pdf.cached_page_texts(root / "d.pdf") == texts
    item = ExtentText(sets, root).item("p:1")
    srcs = extent_text_module().READERS["pdf"].ocr_sources(item, root, ChunkConfig())
    assert srcs == [_ocr.page_source(root / "d.pdf", 2)]  # the page without a text layer


def extent_text_module():
    from membench.metrics import extent_text

    return extent_text


# ----------------------------------------------------------------------------- real items


@pytest.fixture(scope="module")
def real(corpus_root):
    sets = REPO / "bench" / "sets"
    if not (sets / "items.jsonl").is_file():
        pytest.skip("bench/sets is not built")
    return ExtentText(sets, corpus_root), sets


def record(sets: Path, modality: str, query_id: str) -> dict:
    for line in (sets / f"{modality}.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["query_id"] == query_id:
            return r
    raise AssertionError(f"{query_id} not in {modality}.jsonl")


def test_real_pdf_page_holds_its_answer(real, corpus_root):
    et, sets = real
    r = record(sets, "pdf", "mmlongbench:0e94b4197b10096b1f4c699701570fbf.pdf:1")
    (g,) = r["gold"]
    text = et.text(g["source_id"], g["region"])
    assert occurs(needles(r["answer"], r["answer_format"]), text)  # "21%"
    atoms = {a.extent["page"]: a.text for a in chunk_item(et.item(g["source_id"]), corpus_root)}
    assert text == atoms[g["region"]["page"]]


def test_real_conversation_turn_holds_its_answer(real):
    et, sets = real
    r = record(sets, "conversation", "locomo:conv-41:101")
    (g,) = r["gold"]
    text = et.text(g["source_id"], g["region"])
    turn = next(t for t in et.item(g["source_id"]).content if t["turn"] == g["region"]["turn"])
    assert text == turn_line(turn) and text.startswith(f"{turn['speaker']}: ")
    assert occurs(needles(r["answer"], r["answer_format"]), text)  # "fundraiser"
    n = et.item(g["source_id"]).meta["turns"]
    whole = et.text(g["source_id"], {"turn_start": 1, "turn_end": n})
    assert len(whole.splitlines()) == n and text in whole
