"""Fuzzing the content layer's door (membench.core.content_guard) with mutated PDFs and PNGs:
truncations, bit flips, forged dimensions (a PNG header claiming 65535 x 65535 pixels, a PDF
page of 30000 x 30000 points) and byte runs. Whatever the bytes, opening, decoding and rendering
either work within the bounds or raise ContentError (one located line): never another
exception. Profiles as tests/test_fuzz_readers.py (``MEMBENCH_FUZZ=long``: 10x the examples)."""

from __future__ import annotations

import io
import struct
import tempfile
import zlib
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_readers import PROFILE, SCALE

from membench.core import content_guard as guard


def fuzz(n: int):
    return settings(
        max_examples=n * SCALE,
        deadline=None,
        derandomize=PROFILE == "ci",
        database=None,
        suppress_health_check=list(HealthCheck),
    )


def _png(w: int = 24, h: int = 16) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (w, h), (200, 30, 30)).save(buf, "PNG")
    return buf.getvalue()


def _pdf(w_pt: int = 200, h_pt: int = 100, pages: int = 2) -> bytes:
    from pypdf import PdfWriter

    wr = PdfWriter()
    for _ in range(pages):
        wr.add_blank_page(width=w_pt, height=h_pt)
    buf = io.BytesIO()
    wr.write(buf)
    return buf.getvalue()


def _forged_png(w: int, h: int) -> bytes:
    """A valid PNG whose IHDR claims ``w`` x ``h`` (its CRC made right)."""
    b = bytearray(_png())
    ihdr = b[12:29]  # type + 13 bytes of data
    data = struct.pack(">II", w, h) + bytes(ihdr[12:17])
    b[16:29] = data
    b[29:33] = struct.pack(">I", zlib.crc32(b"IHDR" + data) & 0xFFFFFFFF)
    return bytes(b)


PNG, PDF = _png(), _pdf()


@st.composite
def mutated(draw, base: bytes) -> bytes:
    b = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["flip", "cut", "run", "drop"]))
        if not b:
            break
        i = draw(st.integers(0, len(b) - 1))
        if how == "flip":
            b[i] ^= 1 << draw(st.integers(0, 7))
        elif how == "cut":
            del b[i:]
        elif how == "run":
            b[i:i] = draw(st.sampled_from([b"\x00", b"\xff", b"9"])) * draw(st.integers(1, 64))
        else:
            del b[i : i + draw(st.integers(1, 32))]
    return bytes(b)


def _only_content_errors(data: bytes, suffix: str, read) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"x{suffix}"
        p.write_bytes(data)
        try:
            read(p)
        except guard.ContentError as e:
            assert str(p) in str(e) and "\n" not in str(e)


def _read_png(p: Path) -> None:
    with guard.open_image(p) as im:
        im.size


def _read_pdf(p: Path) -> None:
    reader = guard.open_pdf(p)
    for page in reader.pages[:2]:
        page.extract_text()
    guard.render_page(p, 1, dpi=72)


@fuzz(40)
@given(mutated(PNG))
def test_a_mutated_png_is_read_or_refused_in_one_line(data):
    _only_content_errors(data, ".png", _read_png)


@fuzz(40)
@given(mutated(PDF))
def test_a_mutated_pdf_is_read_or_refused_in_one_line(data):
    _only_content_errors(data, ".pdf", _read_pdf)


@fuzz(10)
@given(st.integers(1, 65535), st.integers(1, 65535))
def test_a_forged_png_size_is_read_or_refused_never_decoded_past_the_bound(w, h):
    _only_content_errors(_forged_png(w, h), ".png", _read_png)


@fuzz(10)
@given(st.integers(1, 30000), st.integers(1, 30000))
def test_a_pdf_page_of_any_size_renders_within_the_bound_or_is_refused(w, h):
    def read(p: Path) -> None:
        im = guard.render_page(p, 1, dpi=300)
        assert im.size[0] * im.size[1] <= guard.MAX_PAGE_PIXELS

    _only_content_errors(_pdf(w, h, 1), ".pdf", read)
