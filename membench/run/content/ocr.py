"""OCR for images and screenshots: one RapidOCR engine, results cached by image content.

Engine: ``rapidocr_onnxruntime.RapidOCR`` (PP-OCRv4 detector and recognizer, which the wheel
ships: no download), created lazily once per process with ``text_score=0`` so that the cache
keeps every recognized line; the confidence threshold is applied by the chunkers
(``ChunkConfig.ocr_min_confidence``), so changing it needs no new OCR.

Preprocessing: an image whose shorter side is under ``upscale_min_side`` pixels is upscaled
(cubic) by ``min(4, upscale_min_side / shorter side, 2000 / longer side)`` first; boxes are
mapped back to the image's own pixel coordinates. Without it the recognizer drops the spaces
between small words (TabMWP: "Numberofcoins" instead of "Number of coins"). The engine's
``max_side_len`` is raised from 2000 to 3200 so 2560 px screenshots are not shrunk (shrinking
merges words: "CellPhones&Accessories"). Transparent images are composited on white.

Cache: ``cache_dir("ocr")/<sha[:2]>/<sha256 of the image bytes>-<key>.json`` where ``key``
digests the engine name, its version and the preprocessing (:func:`engine_tag`). The JSON holds
the image size, the scale used, the seconds the OCR took, and the lines (4-point box, axis
aligned box, text, confidence) in the engine's reading order. A second run reads the JSON and
never loads the engine.

Parallel: ``ocr_many(..., processes=N)`` runs the misses in N *spawned* worker processes (each
with one ONNX Runtime thread and recycled every 50 images, so memory stays bounded: about
0.6 GB resident a worker); the workers write the cache and the parent reads it. Spawn re-imports the
calling script, so a script that asks for processes > 1 needs the usual
``if __name__ == "__main__":`` guard (notebooks and the CLI need nothing). With 2 workers on 2
cores throughput was about 2x that of one in-process engine (which uses all cores itself).
The recognized text can differ in rare borderline cases between thread counts (floating-point
summation order); whichever ran first is what the cache keeps.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import multiprocessing
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core import progress as _progress
from ...core.paths import cache_dir
from .common import read_json, sha256_bytes, write_json_atomic

log = logging.getLogger(__name__)

ENGINE_NAME = "rapidocr_onnxruntime"
MAX_UPSCALE = 4.0
MAX_SIDE = 2000  # never upscale past this many pixels on the longer side
# The engine's max_side_len (default 2000): larger images are shrunk to it before detection.
# Screenshots are up to 2560 px wide and shrinking them merges words ("CellPhones&Accessories"),
# so it is raised; at this size detection time is about the same.
ENGINE_MAX_SIDE = 3200
CACHE_FORMAT = 1

# Counters for this process (tests read them to prove the cache is used).
stats: dict[str, float] = {"engine_calls": 0, "cache_hits": 0, "ocr_seconds": 0.0}
# For the last ocr_many call: path -> whether its OCR ran then (False: read from the cache).
last_run: dict[str, bool] = {}

_engine: Any = None
_engine_threads: int | None = None


@dataclass(frozen=True)
class OcrLine:
    text: str
    confidence: float
    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in image pixels, clipped
    quad: tuple[tuple[float, float], ...]    # the engine's 4 corner points


@dataclass(frozen=True)
class OcrResult:
    sha256: str
    engine: str
    width: int
    height: int
    scale: float
    seconds: float      # wall time of the OCR when it ran (not of reading the cache)
    lines: tuple[OcrLine, ...]

    def kept(self, min_confidence: float) -> list[OcrLine]:
        return [ln for ln in self.lines if ln.confidence >= min_confidence and ln.text.strip()]


def engine_version() -> str:
    try:
        return importlib.metadata.version("rapidocr-onnxruntime")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        return "unknown"


def engine_tag(upscale_min_side: int) -> str:
    """Everything that determines the OCR output: engine, version, preprocessing."""
    return (f"{ENGINE_NAME}=={engine_version()};models=bundled;text_score=0;"
            f"upscale_min_side={int(upscale_min_side)};max_upscale={MAX_UPSCALE:g};"
            f"max_side_len={ENGINE_MAX_SIDE};"
            f"format={CACHE_FORMAT}")


def cache_path(sha: str, upscale_min_side: int) -> Path:
    key = hashlib.sha256(engine_tag(upscale_min_side).encode()).hexdigest()[:12]
    return cache_dir("ocr") / sha[:2] / f"{sha}-{key}.json"


def _get_engine(threads: int | None = None) -> Any:
    global _engine, _engine_threads
    if _engine is None:
        from rapidocr_onnxruntime import RapidOCR

        kw: dict[str, Any] = {"text_score": 0.0, "print_verbose": False,
                              "max_side_len": ENGINE_MAX_SIDE}
        if threads:
            kw["intra_op_num_threads"] = threads
            kw["inter_op_num_threads"] = 1
        _engine = RapidOCR(**kw)
        _engine_threads = threads
        # RapidOCR logs a warning for every image without text; that is normal here.
        logging.getLogger("RapidOCR").setLevel(logging.ERROR)
    return _engine


def upscale_factor(width: int, height: int, upscale_min_side: int) -> float:
    short, long_ = min(width, height), max(width, height)
    if upscale_min_side <= 0 or short <= 0 or short >= upscale_min_side:
        return 1.0
    return max(1.0, min(MAX_UPSCALE, upscale_min_side / short, MAX_SIDE / long_))


def _load_bgr(path: Path):
    import numpy as np
    from PIL import Image

    with Image.open(path) as im:
        im.load()
        if im.mode in ("RGBA", "LA") or (im.mode == "P" and "transparency" in im.info):
            rgba = im.convert("RGBA")
            bg = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            bg.alpha_composite(rgba)
            rgb = bg.convert("RGB")
        else:
            rgb = im.convert("RGB")
    arr = np.asarray(rgb)[:, :, ::-1]  # RGB -> BGR, what the engine expects of an array
    return np.ascontiguousarray(arr)


def _run_engine(path: Path, upscale_min_side: int, threads: int | None = None) -> dict:
    """OCR one image file; returns the cache object."""
    import cv2

    t0 = time.perf_counter()
    img = _load_bgr(path)
    h, w = img.shape[:2]
    s = upscale_factor(w, h, upscale_min_side)
    if s > 1.0:
        img = cv2.resize(img, (round(w * s), round(h * s)), interpolation=cv2.INTER_CUBIC)
    sx = w / img.shape[1]
    sy = h / img.shape[0]
    res, _ = _get_engine(threads)(img)
    lines = []
    for quad, text, conf in res or []:
        q = [[round(float(x) * sx, 2), round(float(y) * sy, 2)] for x, y in quad]
        xs = [p[0] for p in q]
        ys = [p[1] for p in q]
        box = [max(0.0, min(xs)), max(0.0, min(ys)), min(float(w), max(xs)), min(float(h), max(ys))]
        lines.append({"text": str(text), "confidence": round(float(conf), 4),
                      "box": [round(v, 2) for v in box], "quad": q})
    return {"format": CACHE_FORMAT, "engine": engine_tag(upscale_min_side), "width": w,
            "height": h, "scale": round(s, 4), "seconds": round(time.perf_counter() - t0, 3),
            "lines": lines}


def _from_cache(sha: str, obj: dict) -> OcrResult:
    return OcrResult(
        sha256=sha, engine=obj["engine"], width=obj["width"], height=obj["height"],
        scale=obj["scale"], seconds=obj["seconds"],
        lines=tuple(OcrLine(text=ln["text"], confidence=ln["confidence"],
                            box=tuple(ln["box"]), quad=tuple(tuple(p) for p in ln["quad"]))
                    for ln in obj["lines"]))


def _cached(sha: str, upscale_min_side: int) -> dict | None:
    obj = read_json(cache_path(sha, upscale_min_side))
    if isinstance(obj, dict) and obj.get("engine") == engine_tag(upscale_min_side):
        return obj
    return None


def ocr_image(path: str | Path, *, upscale_min_side: int = 700) -> OcrResult:
    """OCR one image (from the cache when this content was seen before)."""
    path = Path(path)
    sha = sha256_bytes(path.read_bytes())
    obj = _cached(sha, upscale_min_side)
    if obj is not None:
        stats["cache_hits"] += 1
        return _from_cache(sha, obj)
    obj = _run_engine(path, upscale_min_side)
    stats["engine_calls"] += 1
    stats["ocr_seconds"] += obj["seconds"]
    write_json_atomic(cache_path(sha, upscale_min_side), obj)
    return _from_cache(sha, obj)


# ----------------------------------------------------------------------------- parallel

def _worker_init() -> None:
    _get_engine(threads=1)


def _worker(job: tuple[str, str, int]) -> tuple[str, float]:
    path, sha, ups = job
    obj = _run_engine(Path(path), ups, threads=1)
    write_json_atomic(cache_path(sha, ups), obj)
    return sha, obj["seconds"]


def ocr_many(paths: Iterable[str | Path], *, upscale_min_side: int = 700, processes: int = 1,
             progress: Callable[[int, int], None] | None = None) -> dict[str, OcrResult]:
    progress_cb = progress
    """OCR many images, running only those missing from the cache; returns path -> result.

    Same content under two paths is OCR'd once. Reports through the ``ocr`` progress step
    (:mod:`membench.core.progress`): images, cache hits, seconds."""
    by_path: dict[str, str] = {}
    for p in paths:
        p = str(p)
        if p not in by_path:
            by_path[p] = sha256_bytes(Path(p).read_bytes())
    todo: dict[str, str] = {}  # sha -> one path
    for p, sha in by_path.items():
        if sha not in todo and _cached(sha, upscale_min_side) is None:
            todo[sha] = p
    n = len(todo)
    if n:
        log.info("OCR: %d of %d images not cached (processes=%d)", n, len(by_path), processes)
    with _progress.step("ocr", total=len(set(by_path.values())), unit="image",
                       cached=True) as bar:
        bar.advance(len(set(by_path.values())) - n, cache_hit=True)
        _run_misses(todo, upscale_min_side, processes, progress_cb, bar)
    out: dict[str, OcrResult] = {}
    for p, sha in by_path.items():
        obj = _cached(sha, upscale_min_side)
        if obj is None:  # pragma: no cover - a worker died without raising
            raise RuntimeError(f"OCR of {p} left no cache entry")
        if sha not in todo:
            stats["cache_hits"] += 1
        out[p] = _from_cache(sha, obj)
    last_run.clear()
    last_run.update({p: sha in todo for p, sha in by_path.items()})
    return out


def _run_misses(todo: dict[str, str], upscale_min_side: int, processes: int,
                progress: Callable[[int, int], None] | None, bar: _progress.Step) -> None:
    """OCR the images of ``todo`` (sha -> path) into the cache, in ``processes`` workers."""
    n = len(todo)
    done = 0
    if n and processes > 1:
        ctx = multiprocessing.get_context("spawn")
        jobs = [(p, sha, upscale_min_side) for sha, p in sorted(todo.items())]
        with ctx.Pool(min(processes, n), initializer=_worker_init, maxtasksperchild=50) as pool:
            for _sha, secs in pool.imap_unordered(_worker, jobs):
                stats["engine_calls"] += 1
                stats["ocr_seconds"] += secs
                done += 1
                bar.advance()
                if progress:
                    progress(done, n)
    else:
        for sha, p in sorted(todo.items()):
            obj = _run_engine(Path(p), upscale_min_side)
            stats["engine_calls"] += 1
            stats["ocr_seconds"] += obj["seconds"]
            write_json_atomic(cache_path(sha, upscale_min_side), obj)
            done += 1
            bar.advance()
            if progress:
                progress(done, n)


def reading_order(lines: list[OcrLine]) -> list[list[OcrLine]]:
    """Group lines into rows (vertical centers within half a line height of the row's first
    line), rows top to bottom, lines in a row left to right."""
    if not lines:
        return []
    items = sorted(lines, key=lambda ln: ((ln.box[1] + ln.box[3]) / 2, ln.box[0]))
    rows: list[list[OcrLine]] = []
    for ln in items:
        cy = (ln.box[1] + ln.box[3]) / 2
        hgt = max(1.0, ln.box[3] - ln.box[1])
        if rows:
            r0 = rows[-1][0]
            rcy = (r0.box[1] + r0.box[3]) / 2
            rh = max(1.0, r0.box[3] - r0.box[1])
            if abs(cy - rcy) <= 0.5 * min(hgt, rh):
                rows[-1].append(ln)
                continue
        rows.append([ln])
    return [sorted(r, key=lambda ln: ln.box[0]) for r in rows]


def ocr_text(lines: list[OcrLine]) -> str:
    """Lines in reading order: a row's lines joined by a tab, rows by newlines."""
    return "\n".join("\t".join(ln.text.strip() for ln in row) for row in reading_order(lines))
