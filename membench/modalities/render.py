"""Pictures of source regions, shared by the modality renderers (pdf, image, ui_screenshot).

* PDF pages are rasterised with ``pypdfium2`` (PyPI) when it is installed, else with
  poppler's ``pdftoppm`` (Debian ``poppler-utils``); without either, the page is described in
  words. Rendered pages are cached as PNG under ``membench.core.paths.cache_dir("render")``, keyed by
  the PDF's sha256, the page and the width, so a second look costs one file read.
* Images and screenshots are read with Pillow (both through :mod:`membench.core.content_guard`: a
  file past its bounds or unreadable is :class:`RenderUnavailable`), downscaled, and (screenshots) get their boxes
  drawn on the downscaled picture, so an outline keeps its pixel width whatever the original
  size.

Everything returns bytes or ``data:`` URIs ready to embed in HTML; nothing here knows about
runs or records.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from ..core import content_guard as guard
from ..core.paths import cache_dir
from .base import RenderUnavailable

PDF_WIDTH = 560  # px, rendered page width
IMAGE_MAX_SIDE = 480  # px, whole images
SCREEN_MAX_SIDE = 640  # px, screenshots with boxes drawn
CROP_MAX_SIDE = 360  # px, the zoomed crop of a screenshot box

RGB = tuple[int, int, int]
ATOM_COLOUR: RGB = (255, 0, 0)  # the returned atom's extent
GOLD_COLOUR: RGB = (0, 170, 0)  # the item's own gold (misses)
ORIGINAL_COLOUR: RGB = (0, 90, 255)  # the gold of the query an unanswerable item derives from


def data_uri(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


@lru_cache(maxsize=4096)
def _sha256(path: str, mtime_ns: int, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_sha256(path: str | os.PathLike) -> str:
    st = os.stat(path)
    return _sha256(str(path), st.st_mtime_ns, st.st_size)


def pdf_backend() -> str | None:
    """``"pypdfium2"``, ``"pdftoppm"`` or ``None`` (no way to rasterise a PDF page)."""
    try:
        import pypdfium2  # noqa: F401

        return "pypdfium2"
    except ImportError:
        pass
    return "pdftoppm" if shutil.which("pdftoppm") else None


def _png(img, palette: bool = False) -> bytes:
    buf = io.BytesIO()
    if palette:  # document pages: an adaptive palette keeps text sharp at a third of the size
        img = img.convert("RGB").quantize(colors=256)
    img.save(buf, format="PNG")
    return buf.getvalue()


def _render_pdfium(path: Path, page: int, width: int) -> bytes:
    try:
        img = guard.render_page(path, page, width=width)
    except guard.ContentError as e:
        raise RenderUnavailable(str(e)) from None
    return _png(img, palette=True)


def _render_pdftoppm(path: Path, page: int, width: int) -> bytes:
    try:
        guard.check_bytes(path)
    except guard.ContentError as e:
        raise RenderUnavailable(str(e)) from None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "page"
        proc = subprocess.run(
            [
                "pdftoppm",
                "-f",
                str(page),
                "-l",
                str(page),
                "-png",
                "-singlefile",
                "-scale-to-x",
                str(width),
                "-scale-to-y",
                "-1",
                str(path),
                str(out),
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        png = out.with_suffix(".png")
        if proc.returncode != 0 or not png.exists():
            raise RenderUnavailable(f"pdftoppm failed: {proc.stderr.strip()[:200]}")
        try:
            with guard.open_image(png) as img:
                return _png(img, palette=True)
        except guard.ContentError as e:
            raise RenderUnavailable(str(e)) from None


def pdf_page_png(
    path: str | os.PathLike, page: int, width: int = PDF_WIDTH, sha256: str | None = None
) -> bytes:
    """PNG bytes of 1-based ``page`` of the PDF at ``path``, ``width`` pixels wide; cached by
    (sha256, page, width) under ``cache_dir("render")``."""
    path = Path(path)
    if not path.is_file():
        raise RenderUnavailable(f"{path} not found")
    digest = sha256 or file_sha256(path)
    cached = cache_dir("render") / f"pdf-{digest}-p{page}-w{width}.png"
    if cached.exists():
        return cached.read_bytes()
    backend = pdf_backend()
    if backend == "pypdfium2":
        data = _render_pdfium(path, page, width)
    elif backend == "pdftoppm":
        data = _render_pdftoppm(path, page, width)
    else:
        raise RenderUnavailable(
            "no PDF renderer: pip install pypdfium2 (or apt-get install poppler-utils for pdftoppm)"
        )
    tmp = cached.with_name(cached.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, cached)
    return data


@lru_cache(maxsize=64)
def _base_image(path: str, mtime_ns: int, max_side: int):
    """The downscaled RGB picture and the scale factor (downscaled px per original px)."""
    from PIL import Image

    with guard.open_image(path) as im:
        w, h = im.size
        scale = min(1.0, max_side / max(w, h))
        img = im.convert("RGB")
        if scale < 1.0:
            img = img.resize(
                (max(1, round(w * scale)), max(1, round(h * scale))), Image.Resampling.LANCZOS
            )
    return img, scale, (w, h)


def load_image(path: str | os.PathLike, max_side: int):
    path = Path(path)
    if not path.is_file():
        raise RenderUnavailable(f"{path} not found")
    try:
        return _base_image(str(path), path.stat().st_mtime_ns, max_side)
    except guard.ContentError as e:
        raise RenderUnavailable(str(e)) from None
    except OSError as e:
        raise RenderUnavailable(f"{path.name}: {e}") from None


def image_png(path: str | os.PathLike, max_side: int = IMAGE_MAX_SIDE) -> bytes:
    img, _, _ = load_image(path, max_side)
    return _png(img)


Box = tuple[Sequence[float], RGB, int]  # (bbox in original pixels, colour, outline width)


def boxed_png(
    path: str | os.PathLike, boxes: Sequence[Box], max_side: int = SCREEN_MAX_SIDE
) -> tuple[bytes, float]:
    """The picture downscaled to ``max_side`` with each ``(bbox, colour, width)`` outlined (drawn
    inward from the box edge, in order, so later boxes sit on top). Returns PNG bytes and the
    scale (displayed px per original px). The picture is stored with an adaptive palette (a
    third of the RGB size for UI screenshots); the outline colours get palette entries of their
    own, so they are drawn exactly."""
    from PIL import ImageDraw

    base, scale, (w, h) = load_image(path, max_side)
    colours = list(dict.fromkeys(c for _, c, _ in boxes))
    img = base.quantize(colors=256 - len(colours))
    pal = img.getpalette()[: 3 * (256 - len(colours))]
    pal += [0] * (3 * (256 - len(colours)) - len(pal))
    for c in colours:
        pal += list(c)
    img.putpalette(pal)
    index = {c: 256 - len(colours) + i for i, c in enumerate(colours)}
    draw = ImageDraw.Draw(img)
    for bbox, colour, width in boxes:
        x0, y0, x1, y1 = (float(v) for v in bbox)
        x0, x1 = max(0.0, min(x0, w)), max(0.0, min(x1, w))
        y0, y1 = max(0.0, min(y0, h)), max(0.0, min(y1, h))
        rect = [
            int(x0 * scale),
            int(y0 * scale),
            max(int(x0 * scale), round(x1 * scale) - 1),
            max(int(y0 * scale), round(y1 * scale) - 1),
        ]
        draw.rectangle(rect, outline=index[colour], width=width)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue(), scale


def crop_png(
    path: str | os.PathLike, bbox: Sequence[float], pad: float = 16.0, max_side: int = CROP_MAX_SIDE
) -> bytes:
    """The region ``bbox`` (original pixels, padded) at up to native resolution."""
    path = Path(path)
    if not path.is_file():
        raise RenderUnavailable(f"{path} not found")
    try:
        with guard.open_image(path) as im:
            return _crop(im, bbox, pad, max_side)
    except guard.ContentError as e:
        raise RenderUnavailable(str(e)) from None


def _crop(im, bbox: Sequence[float], pad: float, max_side: int) -> bytes:
    from PIL import Image

    w, h = im.size
    x0, y0, x1, y1 = (float(v) for v in bbox)
    box = (
        max(0, int(x0 - pad)),
        max(0, int(y0 - pad)),
        min(w, int(x1 + pad + 0.999)),
        min(h, int(y1 + pad + 0.999)),
    )
    if box[2] <= box[0] or box[3] <= box[1]:
        raise RenderUnavailable(f"bbox {list(bbox)} is outside the {w}x{h} picture")
    img = im.convert("RGB").crop(box)
    s = min(1.0, max_side / max(img.size))
    if s < 1.0:
        img = img.resize(
            (max(1, round(img.width * s)), max(1, round(img.height * s))), Image.Resampling.LANCZOS
        )
    return _png(img, palette=True)
