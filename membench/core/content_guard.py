"""The one door through which membench opens a corpus PDF or image: bounded, and every failure
one located line.

Everything that reads a PDF or a picture (the PDF text layer, page rendering for OCR and for
the browser, OCR of images, thumbnails and crops, the build's perceptual hash) goes through
:func:`read_bytes`, :func:`open_image`, :func:`open_pdf` or :func:`render_page` here. They
apply the bounds registered below (:mod:`membench.core.bounds`: file bytes, pages per
document, pixels per image, pixels per rendered page, seconds per page of text extraction) and
turn whatever the parsers raise (pypdf, pypdfium2, Pillow) into a :class:`ContentError`:
``file: RULE: message``. Nothing here decides what happens next: :func:`membench.content.chunk`
counts the item as not covered and goes on (or stops, with ``--content strict=1``), the
renderers show the region as unavailable. docs/robustness.md, "Hostile content files".
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import signal
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

from .bounds import bound
from .errors import InputError

_HERE = "membench.core.content_guard"
MAX_FILE_BYTES = bound(
    "content_file_bytes",
    256 << 20,
    "bytes",
    "one PDF or image file the content layer opens",
    "FILE_TOO_LARGE, the item not covered; never read",
    _HERE,
)
MAX_PDF_PAGES = bound(
    "pdf_pages",
    2000,
    "pages",
    "pages of one PDF (the corpus's longest: 468)",
    "PDF_PAGES, the item not covered; no page read",
    _HERE,
)
MAX_IMAGE_PIXELS = bound(
    "image_pixels",
    64 << 20,
    "pixels",
    "one image, width x height from its header (the corpus's largest: 4.4 M)",
    "IMAGE_PIXELS, the item not covered; never decoded",
    _HERE,
)
MAX_PAGE_PIXELS = bound(
    "rendered_page_pixels",
    40_000_000,
    "pixels",
    "one rendered PDF page (A4 at 600 dpi: 34.8 M)",
    "rendered at the highest dpi that fits, in one line; under "
    "min_render_dpi: PAGE_PIXELS, the item not covered",
    _HERE,
)
MIN_RENDER_DPI = bound(
    "min_render_dpi",
    36,
    "dpi",
    "the lowest resolution a too-large page is rendered at for OCR",
    "PAGE_PIXELS, the item not covered",
    _HERE,
)
MAX_PAGE_SECONDS = bound(
    "pdf_page_seconds",
    60,
    "s",
    "wall time of one page's text extraction (main thread only)",
    "PAGE_TIME, the item not covered",
    _HERE,
)

log = logging.getLogger(__name__)


class ContentError(InputError):
    """A corpus PDF or image membench will not read: ``file: RULE: message``."""

    def __init__(self, file, line, field, message, rule="CONTENT_UNREADABLE"):
        super().__init__(file, line, field, message, rule)


def _refuse(path, rule: str, message: str) -> ContentError:
    return ContentError(path, None, None, message, rule)


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:200]


def check_bytes(path: str | Path) -> int:
    """The file's size, within :data:`MAX_FILE_BYTES` (else FILE_TOO_LARGE)."""
    try:
        size = Path(path).stat().st_size
    except OSError as e:
        raise _refuse(path, "FILE_UNREADABLE", _why(e)) from None
    if size > MAX_FILE_BYTES:
        raise _refuse(
            path,
            "FILE_TOO_LARGE",
            f"{size:,} bytes, over the {MAX_FILE_BYTES:,}-byte bound (content_file_bytes)",
        )
    return size


def read_bytes(path: str | Path) -> bytes:
    """The file's bytes, once its size is within bounds."""
    check_bytes(path)
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise _refuse(path, "FILE_UNREADABLE", _why(e)) from None


# ----------------------------------------------------------------------------- images


def _check_pixels(path, w: int, h: int) -> None:
    if w * h > MAX_IMAGE_PIXELS:
        raise _refuse(
            path,
            "IMAGE_PIXELS",
            f"{w}x{h} = {w * h:,} pixels, over the "
            f"{MAX_IMAGE_PIXELS:,}-pixel bound (image_pixels); not decoded",
        )


@contextlib.contextmanager
def open_image(path: str | Path, load: bool = True) -> Iterator:
    """The PIL image at ``path``: its size checked from the header before anything is decoded,
    then (``load``) decoded; a file Pillow cannot read, or that ends early, is
    IMAGE_UNREADABLE."""
    from PIL import Image

    check_bytes(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            im = Image.open(path)
        except Image.DecompressionBombError as e:
            raise _refuse(
                path, "IMAGE_PIXELS", f"a decompression bomb: {e} (image_pixels)"
            ) from None
        except Image.UnidentifiedImageError:
            raise _refuse(path, "IMAGE_UNREADABLE", "not an image Pillow can read") from None
        except (OSError, SyntaxError, ValueError, EOFError) as e:
            raise _refuse(path, "IMAGE_UNREADABLE", _why(e)) from None
        with im:
            _check_pixels(path, *im.size)
            if load:
                try:
                    im.load()
                except (OSError, SyntaxError, ValueError, EOFError, MemoryError) as e:
                    raise _refuse(path, "IMAGE_UNREADABLE", _why(e)) from None
            yield im


# ----------------------------------------------------------------------------- PDFs


def check_pages(path, n: int) -> None:
    if n > MAX_PDF_PAGES:
        raise _refuse(
            path,
            "PDF_PAGES",
            f"{n:,} pages, over the {MAX_PDF_PAGES:,}-page bound (pdf_pages); no page read",
        )


def open_pdf(path: str | Path, data: bytes | None = None):
    """A pypdf reader of the PDF (``data``: its bytes, already read through :func:`read_bytes`),
    parsed and its page count within :data:`MAX_PDF_PAGES`; a file pypdf cannot parse (empty,
    truncated, not a PDF) is PDF_UNREADABLE."""
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # malformed-object chatter
    data = read_bytes(path) if data is None else data
    try:
        reader = PdfReader(io.BytesIO(data))
        n = len(reader.pages)
    except Exception as e:  # noqa: BLE001 - pypdf raises many kinds on a broken file
        raise _refuse(path, "PDF_UNREADABLE", _why(e)) from None
    check_pages(path, n)
    return reader


@contextlib.contextmanager
def page_time(path: str | Path, page: int, seconds: float | None = None) -> Iterator[None]:
    """Bound the wall time of the Python work inside (one page's text extraction) to
    :data:`MAX_PAGE_SECONDS`: past it, PAGE_TIME. Only in the main thread (a signal timer);
    elsewhere it runs unbounded."""
    limit = MAX_PAGE_SECONDS if seconds is None else seconds
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getitimer(signal.ITIMER_REAL)[0] > 0
    ):
        yield
        return

    def fire(signum, frame):
        raise _refuse(
            path,
            "PAGE_TIME",
            f"page {page}: text extraction took over {limit:g} s (pdf_page_seconds)",
        )

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _pdfium_page(path: str | Path, page: int):
    """``(document, page)`` opened with pypdfium2 (the caller closes both)."""
    import pypdfium2 as pdfium

    check_bytes(path)
    try:
        doc = pdfium.PdfDocument(str(path))
    except Exception as e:  # noqa: BLE001 - pdfium's PdfiumError and friends
        raise _refuse(path, "PDF_UNREADABLE", _why(e)) from None
    try:
        check_pages(path, len(doc))
        if not 1 <= page <= len(doc):
            raise _refuse(path, "PDF_UNREADABLE", f"page {page} outside 1..{len(doc)}")
        return doc, doc[page - 1]
    except BaseException:
        doc.close()
        raise


def fit_scale(
    path, page: int, w_pt: float, h_pt: float, scale: float, lowest: float | None = None
) -> float:
    """``scale`` (pixels per point), lowered so the page fits :data:`MAX_PAGE_PIXELS`; under
    ``lowest`` (default: :data:`MIN_RENDER_DPI`) it is refused (PAGE_PIXELS)."""
    lowest = MIN_RENDER_DPI / 72.0 if lowest is None else lowest
    px = (w_pt * scale) * (h_pt * scale)
    if px <= MAX_PAGE_PIXELS:
        return scale
    fit = scale * math.sqrt(MAX_PAGE_PIXELS / px)
    while math.ceil(w_pt * fit) * math.ceil(h_pt * fit) > MAX_PAGE_PIXELS:
        fit *= 0.999  # the renderer rounds each side up
    size = f"page {page} is {w_pt:g}x{h_pt:g} pt: {px:,.0f} pixels at {scale * 72:g} dpi"
    if fit < lowest:
        raise _refuse(
            path,
            "PAGE_PIXELS",
            f"{size}, over the {MAX_PAGE_PIXELS:,}-pixel bound "
            f"(rendered_page_pixels) even at {lowest * 72:g} dpi; not rendered",
        )
    log.warning(
        "%s: %s, over the %s-pixel bound: rendered at %.1f dpi",
        path,
        size,
        f"{MAX_PAGE_PIXELS:,}",
        fit * 72,
    )
    return fit


def render_page(path: str | Path, page: int, dpi: float | None = None, width: int | None = None):
    """Page ``page`` (1-based) of the PDF as an RGB PIL image at ``dpi`` (or ``width`` pixels
    wide), within :data:`MAX_PAGE_PIXELS` (:func:`fit_scale`)."""
    doc, pg = _pdfium_page(path, page)
    try:
        w_pt, h_pt = pg.get_size()
        if width is not None:
            scale = fit_scale(path, page, w_pt, h_pt, width / w_pt if w_pt else 1.0, lowest=0.0)
        else:
            scale = fit_scale(path, page, w_pt, h_pt, float(dpi) / 72.0)
        try:
            bitmap = pg.render(scale=scale, may_draw_forms=True)
            try:
                return bitmap.to_pil().convert("RGB")
            finally:
                bitmap.close()
        except Exception as e:  # noqa: BLE001 - pdfium's render errors
            raise _refuse(path, "PDF_UNREADABLE", f"page {page}: {_why(e)}") from None
    finally:
        pg.close()
        doc.close()
