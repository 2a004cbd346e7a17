"""Hostile corpus PDFs and images (membench.core.content_guard): a malformed, empty, truncated,
oversized or page-bombed PDF and a decompression-bomb, garbage or truncated PNG are each
reported in one line naming the file under the corpus root, counted in meta.json
``content_not_covered``, and the run goes on; ``--content strict=1`` stops it instead.

The files are made here, a few hundred bytes each (forged PNG headers, hand-written PDFs), in
the small world of tests/hostile_world.py; the bm25 reference system reads them through the
content layer as it reads the real corpus."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest
from hostile_world import cli_args, relock, rewrite, runnable_sets, write_world

from membench.cli import main
from membench.core import content_guard as guard
from membench.core.errors import EXIT_BAD_INPUT
from membench.core.jsonl import sha256_file


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMBENCH_PROGRESS", "quiet")
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))


# --------------------------------------------------------------------------- hostile files


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int, rows: bytes | None = None) -> bytes:
    """A PNG whose IHDR says ``width`` x ``height`` (RGB, 8 bit) and whose IDAT holds ``rows``
    (compressed): a forged header makes a bomb of a few dozen bytes."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(rows if rows is not None else b"\0" * 16)
    return (
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")
    )


def pdf(pages: int = 1, width: float = 612, height: float = 792) -> bytes:
    """A valid PDF of ``pages`` blank pages of ``width`` x ``height`` pt, written by hand (with
    its cross-reference table), so 10,000 pages take a fraction of a second."""
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % (3 + i) for i in range(pages))
        + b"] /Count %d >>" % pages,
    ]
    objs += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g] >>" % (width, height)] * pages
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def truncated_png() -> bytes:
    """A 64x64 PNG cut in the middle of its pixel data: the header reads, decoding fails."""
    whole = png(64, 64, bytes(range(256)) * 48 + b"\0" * (64 * (1 + 64 * 3) - 256 * 48))
    return whole[:60]


# --------------------------------------------------------------------------- the world


def world_with(root: Path, modality: str, data: bytes) -> tuple[dict, str]:
    """The hostile-world sets with the dev item of ``modality`` pointing at a file holding
    ``data`` (in the manifest, locked): the world and the file's path under the corpus."""
    sets = runnable_sets()
    w = write_world(root, sets)
    rel = "example/bad." + ("pdf" if modality == "pdf" else "png")
    f = w["corpus"] / rel
    f.write_bytes(data)
    lines = [json.loads(x) for x in w["manifest"].read_text().splitlines()]
    m = next(x for x in lines if x["modality"] == modality)
    m["files"].append(
        {**m["files"][0], "path": rel, "sha256": sha256_file(f), "bytes": f.stat().st_size}
    )
    w["manifest"].write_text("".join(json.dumps(x) + "\n" for x in lines))
    for it in sets["items.jsonl"]:
        if it["modality"] == modality and it["source_id"].endswith(":a1"):
            it.update(content=None, path=rel)
    rewrite(w["sets"] / "items.jsonl", sets["items.jsonl"])
    relock(w)
    return w, rel


def run(w: dict, modality: str, *extra: str) -> int:
    return main(
        [
            "run",
            "--system",
            "bm25",
            "--modality",
            modality,
            *cli_args(w),
            "--out",
            str(w["corpus"].parent / "run"),
            *extra,
        ]
    )


def assert_not_covered(tmp_path, capsys, modality: str, data: bytes, rule: str) -> str:
    w, rel = world_with(tmp_path, modality, data)
    assert run(w, modality) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if f"{rel}: {rule}: " in ln]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "run.jsonl" not in err
    meta = json.loads((w["corpus"].parent / "run" / "meta.json").read_text())
    src = f"{'pdf' if modality == 'pdf' else modality}src:a1"
    assert meta["content_not_covered"]["items"] == 1
    assert meta["content_not_covered"]["by_rule"] == {rule: 1}
    assert meta["content_not_covered"]["first"][src].startswith(f"{rel}: {rule}: ")
    return lines[0]


# --------------------------------------------------------------------------- F1-F5


@pytest.mark.parametrize(
    "data",
    [b"", b"%PDF-1.4\ngarbage", pdf()[:120], b"\0" * 300],
    ids=["empty", "garbage", "truncated", "zeros"],
)
def test_a_broken_pdf_is_one_line_and_not_covered(tmp_path, capsys, data):
    assert_not_covered(tmp_path, capsys, "pdf", data, "PDF_UNREADABLE")


@pytest.mark.parametrize("side", [30000, 65535])
def test_a_decompression_bomb_png_is_refused_from_its_header(tmp_path, capsys, side):
    line = assert_not_covered(tmp_path, capsys, "image", png(side, side), "IMAGE_PIXELS")
    assert "bomb" in line


@pytest.mark.parametrize(
    "data", [b"not a png at all", truncated_png()], ids=["garbage", "truncated"]
)
def test_a_garbage_or_truncated_png_names_the_image(tmp_path, capsys, data):
    assert_not_covered(tmp_path, capsys, "image", data, "IMAGE_UNREADABLE")


def test_a_huge_page_is_not_rendered(tmp_path, capsys):
    """333 bytes, one 30000 x 30000 pt page with no text layer: at 72 dpi 900 M pixels, and
    still 156 M at the lowest dpi allowed: refused before pdfium allocates anything."""
    data = pdf(1, 30000, 30000)
    assert len(data) < 500
    line = assert_not_covered(tmp_path, capsys, "pdf", data, "PAGE_PIXELS")
    assert "page 1 is 30000x30000 pt" in line


def test_ten_thousand_pages_are_refused_before_any_is_read(tmp_path, capsys):
    line = assert_not_covered(tmp_path, capsys, "pdf", pdf(10_000), "PDF_PAGES")
    assert "10,000 pages" in line


def test_strict_stops_the_run_at_the_first_refused_file(tmp_path, capsys):
    w, rel = world_with(tmp_path, "pdf", b"")
    assert run(w, "pdf", "--content", "strict=1") == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"{rel}: PDF_UNREADABLE: " in err and "Traceback" not in err


def test_strict_takes_only_0_or_1(tmp_path, capsys):
    w, _ = world_with(tmp_path, "pdf", pdf())
    assert run(w, "pdf", "--content", "strict=2") == EXIT_BAD_INPUT
    assert "strict=2: must be 0 or 1" in capsys.readouterr().err


# --------------------------------------------------------------------------- the door itself


def test_a_large_page_is_rendered_at_a_lower_dpi(caplog):
    """7000 x 7000 pt at 72 dpi is 49 M pixels: rendered at the dpi that fits (65), said in one
    line; 10000 x 10000 pt would need 45 dpi at most: fine; 30000 x 30000 pt, 15: refused."""
    scale = guard.fit_scale("a.pdf", 1, 7000, 7000, 1.0)
    assert (7000 * scale) ** 2 <= guard.MAX_PAGE_PIXELS and scale * 72 > guard.MIN_RENDER_DPI
    assert [r.getMessage() for r in caplog.records] == [
        "a.pdf: page 1 is 7000x7000 pt: 49,000,000 pixels at 72 dpi, over the 40,000,000-pixel "
        "bound: rendered at 65.0 dpi"
    ]
    assert guard.fit_scale("a.pdf", 1, 612, 792, 300 / 72) == 300 / 72  # a letter page: as asked
    assert 36 <= guard.fit_scale("a.pdf", 1, 10000, 10000, 300 / 72) * 72 < 46
    with pytest.raises(guard.ContentError, match="PAGE_PIXELS"):
        guard.fit_scale("a.pdf", 1, 30000, 30000, 1.0)


def test_a_file_past_the_byte_bound_is_never_read(tmp_path, monkeypatch):
    f = tmp_path / "big.pdf"
    f.write_bytes(pdf())
    monkeypatch.setattr(guard, "MAX_FILE_BYTES", 100)
    with pytest.raises(guard.ContentError, match=r"big.pdf: FILE_TOO_LARGE: .* over the 100-byte"):
        guard.read_bytes(f)


def test_a_page_past_its_time_is_refused():
    with pytest.raises(guard.ContentError, match="PAGE_TIME: page 3: text extraction took"):
        with guard.page_time("slow.pdf", 3, seconds=0.05):
            while True:
                pass


def test_thumbnails_crops_and_the_perceptual_hash_refuse_a_bomb(tmp_path):
    from membench.modalities import render
    from membench.modalities.base import RenderUnavailable
    from membench.sets.neardup import phash_file

    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(png(65535, 65535))
    for draw in (lambda: render.image_png(bomb), lambda: render.crop_png(bomb, [0, 0, 9, 9])):
        with pytest.raises(RenderUnavailable, match="IMAGE_PIXELS"):
            draw()
    with pytest.raises(guard.ContentError, match="bomb.png: IMAGE_PIXELS"):
        phash_file(bomb)
    huge = tmp_path / "huge.pdf"
    huge.write_bytes(pdf(1, 1, 30000))  # 1 pt wide: 560 px wide would be 16.8 M px tall
    img = guard.render_page(huge, 1, width=render.PDF_WIDTH)
    assert img.width * img.height <= guard.MAX_PAGE_PIXELS
