"""The chunking configuration of the reference systems (recorded in a run's meta.json).

Every field determines the atoms the reference systems index, so ``asdict(config)`` goes into
run meta next to the OCR engine and pypdf versions (:func:`membench.content.content_meta`).
Construction checks the values against the benchmark's extent caps
(:data:`membench.contract.protocol.EXTENT_CAPS`), so a config can never produce an atom the runner
would reject.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from ..core.errors import MembenchError
from ..modalities import EXTENT_CAPS

#: the content layer's own settings: how it runs in this process (OCR workers, overlap) and
#: which extractors it uses (the OCR engine, the render resolution of image-only PDF pages).
#: ``membench run --content KEY=VALUE`` sets them for every system that reads content through
#: the layer (:func:`membench.content.chunk`), whatever that system's own config takes:
#: they are the layer's settings, not a system's. A system's ``--config`` may still name one
#: (the reference systems and the adapters take every ChunkConfig field), and then wins.
CONTENT_KEYS: dict[str, str] = {
    "ocr_processes": "worker processes for OCR of images not in the cache (output unchanged)",
    "ocr_overlap": "make the other atoms while the OCR workers run (output unchanged)",
    "ocr_engine": "what runs the OCR models: openvino (default) or onnxruntime",
    "pdf_ocr_dpi": "render resolution of PDF pages without a text layer (0: off)",
    "strict": "1: a corpus PDF or image the content layer refuses stops the run (default 0: "
    "the item is reported, counted as not covered, and the run goes on)",
}
#: the environment variable that carries them (a JSON object), so OCR worker processes and
#: Ray workers started from this process read the same settings
CONTENT_ENV = "MEMBENCH_CONTENT"
_DEFAULTS: dict[str, Any] = {
    "ocr_processes": 1,
    "ocr_overlap": True,
    "ocr_engine": "openvino",
    "pdf_ocr_dpi": 72,
    "strict": 0,
}
#: the settings that are the layer's alone, not fields of a :class:`ChunkConfig`
LAYER_ONLY = ("strict",)


def content_settings() -> dict[str, Any]:
    """The content layer's settings in force (:data:`CONTENT_KEYS`, from
    :data:`CONTENT_ENV`), every key with its value: what meta.json records as ``content``."""
    raw = os.environ.get(CONTENT_ENV)
    given = json.loads(raw) if raw else {}
    if not isinstance(given, dict) or set(given) - set(_DEFAULTS):
        raise MembenchError(
            f"${CONTENT_ENV}: expected a JSON object with keys among "
            f"{', '.join(CONTENT_KEYS)}, got {raw[:120]!r}"
        )
    return {**_DEFAULTS, **given}


@contextlib.contextmanager
def content_scope() -> Iterator[None]:
    """The content settings set inside (``membench … --content``) hold until it ends: a
    command run in process (``membench.cli.main``) leaves ``$MEMBENCH_CONTENT`` as it found it,
    so the next command, and the processes it starts, do not inherit them."""
    before = os.environ.get(CONTENT_ENV)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CONTENT_ENV, None)
        else:
            os.environ[CONTENT_ENV] = before


def set_content_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Set the content layer's settings for this process and the processes it starts (checked
    as a :class:`ChunkConfig` would check them); returns them all."""
    unknown = sorted(set(settings) - set(CONTENT_KEYS))
    if unknown:
        raise MembenchError(
            f"--content {unknown[0]}: not a content-layer setting (one of "
            f"{', '.join(CONTENT_KEYS)}); a system's own parameters go in "
            "--config"
        )
    merged = {**content_settings(), **settings}
    if merged["strict"] not in (0, 1):  # True and False are 1 and 0
        raise MembenchError(f"--content strict={json.dumps(merged['strict'])}: must be 0 or 1")
    try:  # the same checks, one line naming what is wrong
        ChunkConfig(**{k: v for k, v in merged.items() if k not in LAYER_ONLY})
    except (TypeError, MembenchError) as e:
        raise MembenchError(f"--content: {e}") from None
    given = json.loads(os.environ.get(CONTENT_ENV) or "{}")
    os.environ[CONTENT_ENV] = json.dumps({**given, **settings}, sort_keys=True)
    return content_settings()


def strict() -> bool:
    """Whether a refused content file stops the run (``--content strict=1``)."""
    return bool(content_settings()["strict"])


def _setting(key: str):
    return lambda: content_settings()[key]


@dataclass(frozen=True)
class ChunkConfig:
    # pdf: one atom per page from the text layer. Pages whose text layer is empty (scans,
    # pure figures) still get an atom with text "" so page coverage is complete.
    pdf_keep_empty_pages: bool = True
    # A page without a text layer (modalities.pdf.has_text_layer: under 20 non-whitespace
    # characters; the image-only decks, scanned pages) is rendered with pypdfium2 at this
    # resolution and read by the OCR engine of images (same upscale rule, same confidence
    # cut); its atom keeps the page region. 0 turns it off (such pages keep their text-layer
    # text, often ""). Part of the OCR cache key of those pages. Chosen by bench/bench_pdf_ocr.py
    # (docs/speed.md, "Image-only PDF pages").
    pdf_ocr_dpi: int = field(default_factory=_setting("pdf_ocr_dpi"))

    # OCR (images and screenshots). Lines under this recognizer confidence are dropped
    # (the cache keeps every line, so changing this does not re-run OCR).
    ocr_min_confidence: float = 0.5
    # Images whose shorter side is under this many pixels are upscaled (cubic, at most 4x and
    # at most 2000 px on the longer side) before OCR: the PP-OCR recognizer drops the spaces
    # between small words ("Numberofcoins") at native TabMWP resolution. Part of the OCR cache
    # key.
    ocr_upscale_min_side: int = 700
    # What runs the OCR models: "openvino" (the default: rapidocr-onnxruntime's pipeline and
    # models run by OpenVINO in float32, no angle classifier: about 0.4x the CPU time at the
    # same or better text quality, docs/speed.md) or "onnxruntime" (rapidocr-onnxruntime as it
    # comes, angle classifier on). Part of the OCR cache key.
    ocr_engine: str = field(default_factory=_setting("ocr_engine"))
    # Worker processes for OCR of images not in the cache (1 = in process). Output does not
    # depend on it.
    ocr_processes: int = field(default_factory=_setting("ocr_processes"))
    # With ocr_processes > 1: the other items' atoms are made (and, for dense, embedded) while
    # the OCR workers run. Output does not depend on it.
    ocr_overlap: bool = field(default_factory=_setting("ocr_overlap"))

    # ui_screenshot: one atom per OCR line (its box, padded and clipped to the image) plus one
    # atom per block of nearby lines (a menu, a paragraph, a card).
    screen_line_pad: int = 2
    screen_blocks: bool = True
    # Two lines join a block when the gap between their boxes is under this many median line
    # heights (transitively).
    screen_block_gap: float = 0.6
    screen_block_max_lines: int = 12
    # A block covering more than this share of the screenshot is split by rows.
    screen_block_max_share: float = 0.15

    # video: caption windows (seconds). Windows that hold no caption cue are not emitted.
    video_window_s: float = 30.0
    video_stride_s: float = 15.0

    # code: python files are split by ast (functions, classes, methods, and the code between
    # them); other languages (and python that does not parse) by definition lines found with
    # per-language patterns; a file with no definition at all by sliding windows.
    code_python_ast: bool = True
    code_other: str = "defs"  # "defs" | "windows"
    code_max_lines: int = 120  # a longer segment is split into equal parts of at most this
    code_window_lines: int = 40
    code_window_stride: int = 20
    code_path_header: bool = True  # first text line of a code atom: the file's upstream path

    # conversation: windows of consecutive turns.
    conv_window_turns: int = 3
    conv_stride_turns: int = 2
    conv_date_header: bool = True  # first text line: the session's date_time

    def __post_init__(self) -> None:
        problems = []
        if not 0.0 <= self.ocr_min_confidence <= 1.0:
            problems.append("ocr_min_confidence must be in [0, 1]")
        if not (self.pdf_ocr_dpi == 0 or 36 <= self.pdf_ocr_dpi <= 600):
            problems.append("pdf_ocr_dpi must be 0 (off) or in [36, 600]")
        if self.ocr_upscale_min_side < 0:
            problems.append("ocr_upscale_min_side must be >= 0")
        if self.ocr_engine not in ("onnxruntime", "openvino"):
            problems.append("ocr_engine must be 'onnxruntime' or 'openvino'")
        if self.ocr_processes < 1:
            problems.append("ocr_processes must be >= 1")
        if self.screen_line_pad < 0 or self.screen_block_gap < 0:
            problems.append("screen_line_pad and screen_block_gap must be >= 0")
        if self.screen_block_max_lines < 2:
            problems.append("screen_block_max_lines must be >= 2")
        if not 0 < self.screen_block_max_share <= EXTENT_CAPS["ui_screenshot"]["area_share"]:
            problems.append("screen_block_max_share must be in (0, the ui_screenshot area cap]")
        if not 0 < self.video_window_s <= EXTENT_CAPS["video"]["seconds"]:
            problems.append("video_window_s must be in (0, the video cap]")
        if not 0 < self.video_stride_s <= self.video_window_s:
            problems.append("video_stride_s must be in (0, video_window_s]")
        if self.code_other not in ("defs", "windows"):
            problems.append("code_other must be 'defs' or 'windows'")
        if not 1 <= self.code_max_lines <= EXTENT_CAPS["code"]["lines"]:
            problems.append("code_max_lines must be in [1, the code cap]")
        if not 1 <= self.code_window_lines <= EXTENT_CAPS["code"]["lines"]:
            problems.append("code_window_lines must be in [1, the code cap]")
        if not 1 <= self.code_window_stride <= self.code_window_lines:
            problems.append("code_window_stride must be in [1, code_window_lines]")
        if not 1 <= self.conv_window_turns <= EXTENT_CAPS["conversation"]["turns"]:
            problems.append("conv_window_turns must be in [1, the conversation cap]")
        if not 1 <= self.conv_stride_turns <= self.conv_window_turns:
            problems.append("conv_stride_turns must be in [1, conv_window_turns]")
        if problems:
            raise MembenchError("bad ChunkConfig: " + "; ".join(problems))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
