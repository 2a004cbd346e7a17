"""OCR for images and screenshots: one RapidOCR engine, results cached by image content
(docs/speed.md, "OCR" and "OCR workers", says why these settings and what they cost).

Start at :func:`ocr_image` / :func:`ocr_many`. Engine: ``rapidocr_onnxruntime.RapidOCR``
(PP-OCRv4 models shipped in the wheel: no download), created lazily once per process with
``text_score=0``, so the cache keeps every line and the chunkers apply
``ChunkConfig.ocr_min_confidence``. ``ChunkConfig.ocr_engine``: ``openvino`` (the default: the
same pipeline, each model run by OpenVINO in float32, so the text does not depend on the CPU,
through :class:`OpenVinoSession`, the angle classifier off) or ``onnxruntime`` (as shipped).
An image whose shorter side is under ``upscale_min_side`` px is upscaled (cubic) by ``min(4,
upscale_min_side / shorter side, 2000 / longer side)`` (:func:`upscale_factor`), boxes mapped
back to the image's pixels; ``max_side_len`` is 3200, so 2560 px screenshots are not
shrunk (shrinking merges words); transparent images are composited on white.

Cache: ``cache_dir("ocr")/<sha[:2]>/<sha256 of the image bytes>-<key>.json``, ``key`` digesting
the engine, its version and the preprocessing (:func:`engine_tag`): the image size, the scale,
the seconds taken and the lines (4-point box, axis-aligned box, text, confidence) in reading
order. A second run reads the JSON and never loads the engine.

``ocr_many(..., processes=N)`` runs the misses in N *spawned* workers (one inference thread,
unpinned: :data:`OPENVINO_PIN`; replaced after :data:`WORKER_TASKS` images or pages), which
write the cache the parent reads; a script asking for N > 1 needs the ``if __name__ ==
"__main__":`` guard. Rare borderline text may differ between thread counts: the first kept.

Touches: reads image and PDF files; writes only ``cache_dir("ocr")``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
import multiprocessing
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import content_guard as guard
from ..core import progress as _progress
from ..core.errors import MembenchError
from ..core.paths import cache_dir
from .common import read_json, sha256_bytes, write_json_atomic

log = logging.getLogger(__name__)

ENGINE_NAME = "rapidocr_onnxruntime"
# the models the wheel ships (PP-OCRv4 detector and recognizer, mobile angle classifier)
MODEL_FILES = {
    "det": "ch_PP-OCRv4_det_infer.onnx",
    "cls": "ch_ppocr_mobile_v2.0_cls_infer.onnx",
    "rec": "ch_PP-OCRv4_rec_infer.onnx",
}
# what runs the models (ChunkConfig.ocr_engine; part of the cache key):
#   "onnxruntime": rapidocr-onnxruntime as it comes, with its angle classifier;
#   "openvino": the same pipeline and models with inference by OpenVINO in float32 and the
#   angle classifier off (the default: faster at the same text quality, docs/speed.md).
# float32 is asked of OpenVINO explicitly: its own default is bf16 on CPUs with AMX or
# AVX512-BF16, which would make the text depend on the machine.
ENGINES = ("onnxruntime", "openvino")
DEFAULT_ENGINE = "openvino"  # ChunkConfig.ocr_engine's default too
OV_PRECISION = "f32"
USE_CLS = {"onnxruntime": True, "openvino": False}
MAX_UPSCALE = 4.0
MAX_SIDE = 2000  # never upscale past this many pixels on the longer side
# The engine's max_side_len (default 2000): larger images are shrunk to it before detection.
# Screenshots are up to 2560 px wide and shrinking them merges words ("CellPhones&Accessories"),
# so it is raised; at this size detection time is about the same.
ENGINE_MAX_SIDE = 3200
CACHE_FORMAT = 1
# A worker process OCRs this many images or pages, then a fresh one takes its place (spawn,
# imports, the three models compiled: about 1.4 CPU s, and OpenVINO's per-shape kernels built
# again). OPENVINO_SHAPE_CACHE bounds what a worker keeps of those kernels (OpenVINO's
# CPU_RUNTIME_CACHE_CAPACITY, default 5000 shapes, grew a worker past 2 GB in 125 images);
# neither changes a result (docs/speed.md, "OCR workers").
WORKER_TASKS = 50
OPENVINO_SHAPE_CACHE = 5000
# OpenVINO pins the thread that runs a model to a core (ENABLE_CPU_PINNING, on by default on
# Linux): with one inference thread per worker, every worker process pinned its thread to the
# same core (CPU 0), so 2 workers on 2 cores shared one core while the other idled. membench's
# OCR runs beside other work (the embedding, the other worker), so it leaves the placement to
# the operating system; the results do not depend on it (docs/speed.md, "OCR workers").
OPENVINO_PIN = False

# Counters for this process (tests read them to prove the cache is used).
stats: dict[str, float] = {"engine_calls": 0, "cache_hits": 0, "ocr_seconds": 0.0}
# For the last ocr_many call: path -> whether its OCR ran then (False: read from the cache).
last_run: dict[str, bool] = {}

_engines: dict[str, Any] = {}  # engine name -> the process's RapidOCR

# A page of a PDF is an OCR source too: ``page_source(path, p)`` is ``"<path>#page=<p>"``
# (1-based). It is rendered with pypdfium2 at ``pdf_dpi`` (ChunkConfig.pdf_ocr_dpi) and then
# OCR'd like an image (same engine, same upscale rule); its cache key is the PDF file's sha256,
# the page and the renderer (:func:`page_sha`), so a second run renders nothing.
PAGE_MARK = "#page="


def page_source(path: str | Path, page: int) -> str:
    """The OCR source naming page ``page`` (1-based) of the PDF at ``path``."""
    return f"{path}{PAGE_MARK}{int(page)}"


def split_source(src: str | Path) -> tuple[Path, int | None]:
    """``(path, page)`` of an OCR source (``page`` None for an image file; an image file
    whose own name ends in ``#page=<digits>`` is not one membench can OCR)."""
    s = str(src)
    head, mark, tail = s.rpartition(PAGE_MARK)
    if mark and tail.isdigit():
        return Path(head), int(tail)
    return Path(s), None


@functools.cache
def renderer_version() -> str:
    try:
        return importlib.metadata.version("pypdfium2")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        return "unknown"


def render_tag(dpi: int) -> str:
    """What determines a rendered page's pixels: the renderer, its version and the resolution."""
    return f"pypdfium2=={renderer_version()};dpi={int(dpi)};grayscale=0;annotations=1"


def page_sha(pdf_sha: str, page: int, dpi: int) -> str:
    """The cache identity of one rendered page: the PDF's content, the page, the renderer."""
    return hashlib.sha256(f"{pdf_sha}{PAGE_MARK}{int(page)};{render_tag(dpi)}".encode()).hexdigest()


def render_page(path: str | Path, page: int, dpi: int):
    """Page ``page`` (1-based) of the PDF at ``path`` as an RGB PIL image at ``dpi`` (lowered
    when the page would pass the pixel bound: :func:`membench.core.content_guard.render_page`)."""
    return guard.render_page(path, page, dpi=dpi)


@dataclass(frozen=True)
class OcrLine:
    text: str
    confidence: float
    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in image pixels, clipped
    quad: tuple[tuple[float, float], ...]  # the engine's 4 corner points


@dataclass(frozen=True)
class OcrResult:
    sha256: str
    engine: str
    width: int
    height: int
    scale: float
    seconds: float  # wall time of the OCR when it ran (not of reading the cache)
    lines: tuple[OcrLine, ...]

    def kept(self, min_confidence: float) -> list[OcrLine]:
        return [ln for ln in self.lines if ln.confidence >= min_confidence and ln.text.strip()]


@functools.cache
def engine_version(engine: str = DEFAULT_ENGINE) -> str:
    """The installed OCR packages' versions (read once per process: the cache tag of every
    image asks for it)."""
    dists = ["rapidocr-onnxruntime"] + (["openvino"] if engine == "openvino" else [])
    out = []
    for dist in dists:
        try:
            out.append(importlib.metadata.version(dist))
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover
            out.append("unknown")
    return "+openvino==".join(out)


def _check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise ValueError(f"OCR engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    return engine


def engine_tag(upscale_min_side: int, engine: str = DEFAULT_ENGINE) -> str:
    """Everything that determines the OCR output: engine, version, preprocessing (for
    ``onnxruntime`` the very tag the cache had before there was a choice of engine)."""
    inference = (
        ""
        if _check_engine(engine) == "onnxruntime"
        else f"inference=openvino-{OV_PRECISION};use_cls={USE_CLS[engine]};"
    )
    return (
        f"{ENGINE_NAME}=={engine_version(engine)};models=bundled;text_score=0;"
        f"{inference}"
        f"upscale_min_side={int(upscale_min_side)};max_upscale={MAX_UPSCALE:g};"
        f"max_side_len={ENGINE_MAX_SIDE};"
        f"format={CACHE_FORMAT}"
    )


def cache_path(sha: str, upscale_min_side: int, engine: str = DEFAULT_ENGINE) -> Path:
    key = hashlib.sha256(engine_tag(upscale_min_side, engine).encode()).hexdigest()[:12]
    return cache_dir("ocr") / sha[:2] / f"{sha}-{key}.json"


def model_file(kind: str) -> Path:
    """The ONNX model of ``kind`` (det, cls, rec) that the rapidocr-onnxruntime wheel ships."""
    import rapidocr_onnxruntime

    p = Path(rapidocr_onnxruntime.__file__).parent / "models" / MODEL_FILES[kind]
    if not p.is_file():  # pragma: no cover - a broken install
        raise FileNotFoundError(f"rapidocr-onnxruntime ships no {p}")
    return p


class OpenVinoSession:
    """One of the engine's ONNX models compiled by OpenVINO for the CPU, in float32, called
    like rapidocr's ONNX Runtime session: ``session(batch) -> [output]``."""

    def __init__(
        self, model_path: str | Path, threads: int | None = None, precision: str = OV_PRECISION
    ):
        try:
            from ..core.netguard import import_openvino

            ov = import_openvino()  # without OpenVINO's usage telemetry
        except ImportError:
            raise MembenchError(
                "ocr_engine=openvino needs OpenVINO: pip install "
                "'membench[ocr-openvino]' (or ocr_engine=onnxruntime)"
            ) from None

        core = ov.Core()
        props: dict[str, Any] = {
            "INFERENCE_PRECISION_HINT": precision,
            "CPU_RUNTIME_CACHE_CAPACITY": int(OPENVINO_SHAPE_CACHE),
            "ENABLE_CPU_PINNING": bool(OPENVINO_PIN),
        }
        if threads:
            props["INFERENCE_NUM_THREADS"] = int(threads)
        self.compiled = core.compile_model(core.read_model(str(model_path)), "CPU", props)
        got = str(self.compiled.get_property("INFERENCE_PRECISION_HINT"))
        want = {"f32": "f32", "bf16": "bf16"}.get(precision, precision)
        if want not in got and {"f32": "float32", "bf16": "bfloat16"}.get(want, "?") not in got:
            raise RuntimeError(f"OpenVINO compiled {model_path} in {got}, not {precision}")
        self.request = self.compiled.create_infer_request()

    def __call__(self, batch):
        import numpy as np

        self.request.infer([np.ascontiguousarray(batch, dtype=np.float32)])
        return [self.request.get_output_tensor(0).data.copy()]


def _get_engine(threads: int | None = None, engine: str = DEFAULT_ENGINE) -> Any:
    """The process's RapidOCR for ``engine`` (``threads``: inference threads per model; None:
    the runtime's default). ``openvino``: rapidocr-onnxruntime's pipeline (detector,
    classifier and recognizer with their pre- and post-processing) with each model run by
    :class:`OpenVinoSession`, and the angle classifier off."""
    if _check_engine(engine) not in _engines:
        from rapidocr_onnxruntime import RapidOCR

        kw: dict[str, Any] = {
            "text_score": 0.0,
            "print_verbose": False,
            "max_side_len": ENGINE_MAX_SIDE,
        }
        if threads:
            kw["intra_op_num_threads"] = threads
            kw["inter_op_num_threads"] = 1
        eng = RapidOCR(**kw)
        if engine == "openvino":
            eng.text_det.infer = OpenVinoSession(model_file("det"), threads, OV_PRECISION)
            eng.text_cls.infer = OpenVinoSession(model_file("cls"), threads, OV_PRECISION)
            eng.text_rec.session = OpenVinoSession(model_file("rec"), threads, OV_PRECISION)
        eng.use_cls = USE_CLS[engine]
        _engines[engine] = eng
        # RapidOCR logs a warning for every image without text; that is normal here.
        logging.getLogger("RapidOCR").setLevel(logging.ERROR)
    return _engines[engine]


def upscale_factor(width: int, height: int, upscale_min_side: int) -> float:
    short, long_ = min(width, height), max(width, height)
    if upscale_min_side <= 0 or short <= 0 or short >= upscale_min_side:
        return 1.0
    return max(1.0, min(MAX_UPSCALE, upscale_min_side / short, MAX_SIDE / long_))


def _load_bgr(path: Path, dpi: int = 0):
    """The pixels of an OCR source as a BGR array: an image file (transparency on white), or a
    PDF page (:func:`page_source`) rendered at ``dpi``."""
    import numpy as np
    from PIL import Image

    pdf, page = split_source(path)
    if page is not None:
        rgb = render_page(pdf, page, dpi)
        return np.ascontiguousarray(np.asarray(rgb)[:, :, ::-1])
    with guard.open_image(path) as im:
        if im.mode in ("RGBA", "LA") or (im.mode == "P" and "transparency" in im.info):
            rgba = im.convert("RGBA")
            bg = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            bg.alpha_composite(rgba)
            rgb = bg.convert("RGB")
        else:
            rgb = im.convert("RGB")
    arr = np.asarray(rgb)[:, :, ::-1]  # RGB -> BGR, what the engine expects of an array
    return np.ascontiguousarray(arr)


def _run_engine(
    path: Path,
    upscale_min_side: int,
    threads: int | None = None,
    engine: str = DEFAULT_ENGINE,
    dpi: int = 0,
) -> dict:
    """OCR one image file or PDF page (rendered at ``dpi``); returns the cache object."""
    import cv2

    t0 = time.perf_counter()
    img = _load_bgr(path, dpi)
    h, w = img.shape[:2]
    s = upscale_factor(w, h, upscale_min_side)
    if s > 1.0:
        img = cv2.resize(img, (round(w * s), round(h * s)), interpolation=cv2.INTER_CUBIC)
    sx = w / img.shape[1]
    sy = h / img.shape[0]
    res, _ = _get_engine(threads, engine)(img)
    lines = []
    for quad, text, conf in res or []:
        q = [[round(float(x) * sx, 2), round(float(y) * sy, 2)] for x, y in quad]
        xs = [p[0] for p in q]
        ys = [p[1] for p in q]
        box = [max(0.0, min(xs)), max(0.0, min(ys)), min(float(w), max(xs)), min(float(h), max(ys))]
        lines.append(
            {
                "text": str(text),
                "confidence": round(float(conf), 4),
                "box": [round(v, 2) for v in box],
                "quad": q,
            }
        )
    out = {
        "format": CACHE_FORMAT,
        "engine": engine_tag(upscale_min_side, engine),
        "width": w,
        "height": h,
        "scale": round(s, 4),
        "seconds": round(time.perf_counter() - t0, 3),
        "lines": lines,
    }
    if split_source(path)[1] is not None:
        out["render"] = render_tag(dpi)
    return out


def _from_cache(sha: str, obj: dict) -> OcrResult:
    return OcrResult(
        sha256=sha,
        engine=obj["engine"],
        width=obj["width"],
        height=obj["height"],
        scale=obj["scale"],
        seconds=obj["seconds"],
        lines=tuple(
            OcrLine(
                text=ln["text"],
                confidence=ln["confidence"],
                box=tuple(ln["box"]),
                quad=tuple(tuple(p) for p in ln["quad"]),
            )
            for ln in obj["lines"]
        ),
    )


def _cached(sha: str, upscale_min_side: int, engine: str = DEFAULT_ENGINE) -> dict | None:
    obj = read_json(cache_path(sha, upscale_min_side, engine))
    if isinstance(obj, dict) and obj.get("engine") == engine_tag(upscale_min_side, engine):
        return obj
    return None


def ocr_image(
    path: str | Path, *, upscale_min_side: int = 700, engine: str = DEFAULT_ENGINE
) -> OcrResult:
    """OCR one image (from the cache when this content was seen before)."""
    path = Path(path)
    sha = sha256_bytes(guard.read_bytes(path))
    obj = _cached(sha, upscale_min_side, engine)
    if obj is not None:
        stats["cache_hits"] += 1
        return _from_cache(sha, obj)
    obj = _run_engine(path, upscale_min_side, engine=engine)
    stats["engine_calls"] += 1
    stats["ocr_seconds"] += obj["seconds"]
    write_json_atomic(cache_path(sha, upscale_min_side, engine), obj)
    return _from_cache(sha, obj)


def source_sha(src: str | Path, pdf_dpi: int, file_sha: dict[Path, str] | None = None) -> str:
    """The cache identity of an OCR source: an image file's sha256, or :func:`page_sha` of a
    PDF page (``file_sha`` memoises the PDF files' digests)."""
    path, page = split_source(src)
    memo = file_sha if file_sha is not None else {}
    if path not in memo:
        memo[path] = sha256_bytes(guard.read_bytes(path))
    return memo[path] if page is None else page_sha(memo[path], page, pdf_dpi)


def ocr_page(
    path: str | Path,
    page: int,
    *,
    dpi: int,
    upscale_min_side: int = 700,
    engine: str = DEFAULT_ENGINE,
) -> OcrResult:
    """OCR one PDF page rendered at ``dpi`` (from the cache when it was read before)."""
    src = page_source(path, page)
    sha = source_sha(src, dpi)
    obj = _cached(sha, upscale_min_side, engine)
    if obj is not None:
        stats["cache_hits"] += 1
        return _from_cache(sha, obj)
    obj = _run_engine(Path(src), upscale_min_side, engine=engine, dpi=dpi)
    stats["engine_calls"] += 1
    stats["ocr_seconds"] += obj["seconds"]
    write_json_atomic(cache_path(sha, upscale_min_side, engine), obj)
    return _from_cache(sha, obj)


# ----------------------------------------------------------------------------- parallel


def _worker_init(
    engine: str = DEFAULT_ENGINE, shape_cache: int | None = None, pin: bool | None = None
) -> None:
    global OPENVINO_SHAPE_CACHE, OPENVINO_PIN
    if shape_cache is not None:  # the parent's settings (spawn re-imports this module)
        OPENVINO_SHAPE_CACHE = int(shape_cache)
    if pin is not None:
        OPENVINO_PIN = bool(pin)
    _get_engine(1, engine)


def _worker(job: tuple[str, str, int, str, int]) -> tuple[str, float, Exception | None]:
    path, sha, ups, engine, dpi = job
    try:
        obj = _run_engine(Path(path), ups, threads=1, engine=engine, dpi=dpi)
    except guard.ContentError as e:  # a file the guard refuses: the job goes on
        return sha, 0.0, e
    write_json_atomic(cache_path(sha, ups, engine), obj)
    return sha, obj["seconds"], None


def ocr_many(
    paths: Iterable[str | Path],
    *,
    upscale_min_side: int = 700,
    processes: int = 1,
    progress: Callable[[int, int], None] | None = None,
    engine: str = DEFAULT_ENGINE,
    pdf_dpi: int = 0,
) -> dict[str, OcrResult]:
    """OCR many images and PDF pages (:func:`page_source`, rendered at ``pdf_dpi``), running
    only those missing from the cache; returns source -> result.

    Same content under two paths is OCR'd once. Reports through the ``ocr`` progress step
    (:mod:`membench.core.progress`): images and pages done and left, cache hits, seconds."""
    with start_many(
        paths,
        upscale_min_side=upscale_min_side,
        processes=processes,
        progress=progress,
        engine=engine,
        pdf_dpi=pdf_dpi,
    ) as job:
        return job.wait()


def start_many(
    paths: Iterable[str | Path],
    *,
    upscale_min_side: int = 700,
    processes: int = 1,
    progress: Callable[[int, int], None] | None = None,
    engine: str = DEFAULT_ENGINE,
    pdf_dpi: int = 0,
) -> OcrJob:
    """:func:`ocr_many` in two halves: with ``processes > 1`` the misses start in worker
    processes at once and this returns; :meth:`OcrJob.wait` collects them (with 1 process the
    OCR runs in ``wait``). Meanwhile the caller's process is free for other work (the dense
    engine embeds the atoms that need no OCR: :func:`membench.content.chunk`). Use it as a
    context manager: leaving the block without ``wait`` stops the workers."""
    return OcrJob(paths, upscale_min_side, processes, progress, engine, pdf_dpi)


class OcrJob:
    """The OCR of a batch of images, running (see :func:`start_many`)."""

    def __init__(
        self,
        paths: Iterable[str | Path],
        upscale_min_side: int,
        processes: int,
        progress: Callable[[int, int], None] | None,
        engine: str = DEFAULT_ENGINE,
        pdf_dpi: int = 0,
    ) -> None:
        self.upscale_min_side = upscale_min_side
        self.engine = _check_engine(engine)
        self.processes = processes
        self.pdf_dpi = int(pdf_dpi)
        self._cb = progress
        self.by_path: dict[str, str] = {}
        # source -> why the guard refused it (membench.core.content_guard): left out of the result
        self.failed: dict[str, guard.ContentError] = {}
        file_sha: dict[Path, str] = {}
        for p in paths:
            p = str(p)
            if p not in self.by_path and p not in self.failed:
                try:
                    self.by_path[p] = source_sha(p, self.pdf_dpi, file_sha)
                except guard.ContentError as e:
                    self.failed[p] = e
        self.todo: dict[str, str] = {}  # sha -> one path
        for p, sha in self.by_path.items():
            if sha not in self.todo and _cached(sha, upscale_min_side, engine) is None:
                self.todo[sha] = p
        n = len(self.todo)
        if n:
            log.info(
                "OCR: %d of %d images not cached (processes=%d)", n, len(self.by_path), processes
            )
        distinct = len(set(self.by_path.values()))
        pages = sum(1 for p in self.by_path if split_source(p)[1] is not None)
        self.bar = _progress.step(
            "ocr", total=distinct, unit="image or page" if pages else "image", cached=True
        )
        if pages:
            self.bar.count("PDF pages", pages)
        self.bar.advance(distinct - n, cache_hit=True)
        self._done = 0
        self._refused: dict[str, Exception] = {}  # sha -> the guard's refusal
        self._pool = None
        self._pending: list = []
        self._result: dict[str, OcrResult] | None = None
        if n and processes > 1:
            ctx = multiprocessing.get_context("spawn")
            self._pool = ctx.Pool(
                min(processes, n),
                initializer=_worker_init,
                initargs=(engine, OPENVINO_SHAPE_CACHE, OPENVINO_PIN),
                maxtasksperchild=WORKER_TASKS,
            )
            self._pending = [
                self._pool.apply_async(_worker, (job,), callback=self._one_done)
                for job in (
                    (p, sha, upscale_min_side, engine, self.pdf_dpi)
                    for sha, p in sorted(self.todo.items())
                )
            ]

    def _one_done(self, res: tuple[str, float, Exception | None]) -> None:  # result thread
        if res[2] is not None:
            self._refused[res[0]] = res[2]
        else:
            stats["engine_calls"] += 1
            stats["ocr_seconds"] += res[1]
        self._done += 1
        self.bar.advance()
        if self._cb:
            self._cb(self._done, len(self.todo))

    @property
    def running(self) -> bool:
        """True while worker processes are OCR-ing (other work in this process overlaps it)."""
        return self._pool is not None and self._result is None

    @property
    def working(self) -> bool:
        """True while images are still being OCR'd (the workers have CPUs busy); False once
        every image is done, even before :meth:`wait` collects them."""
        return self.running and self._done < len(self.todo)

    def wait(self) -> dict[str, OcrResult]:
        """Every image's result (path -> result), once all misses are in the cache."""
        if self._result is not None:
            return self._result
        ups = self.upscale_min_side
        if self._pool is not None:
            try:
                for r in self._pending:
                    r.get()  # re-raises a worker's error here
                self._pool.close()
                self._pool.join()
            finally:
                self._pool.terminate()
        else:
            for sha, p in sorted(self.todo.items()):
                try:
                    obj = _run_engine(Path(p), ups, engine=self.engine, dpi=self.pdf_dpi)
                except guard.ContentError as e:
                    self._one_done((sha, 0.0, e))
                    continue
                write_json_atomic(cache_path(sha, ups, self.engine), obj)
                self._one_done((sha, obj["seconds"], None))
        out: dict[str, OcrResult] = {}
        for p, sha in self.by_path.items():
            if sha in self._refused:
                self.failed[p] = self._refused[sha]
                continue
            obj = _cached(sha, ups, self.engine)
            if obj is None:  # pragma: no cover - a worker died without raising
                raise RuntimeError(f"OCR of {p} left no cache entry")
            if sha not in self.todo:
                stats["cache_hits"] += 1
            out[p] = _from_cache(sha, obj)
        last_run.clear()
        last_run.update({p: sha in self.todo for p, sha in self.by_path.items()})
        self.bar.close()
        self._result = out
        return out

    def __enter__(self) -> OcrJob:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._result is None:
            if self._pool is not None:
                self._pool.terminate()
                self._pool.join()
            self.bar.close(ok=False)


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
