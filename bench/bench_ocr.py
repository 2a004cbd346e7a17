"""OCR speed at equal text quality: each setting on the same real mirror images, side by side.

    .venv/bin/python bench/bench_ocr.py [--tabmwp 30] [--finchart 15] [--repeats 3]
                                        [--variants NAME,NAME] [--json FILE]

For every variant (``VARIANTS`` below: the engine, its options and the upscale policy) a fresh
process OCRs the same hash-chosen sample of TabMWP tables and FinChart charts of the mirror
(:func:`membench.content.ocr_quality.sample`), one ONNX Runtime thread unless the variant
says otherwise, and reports per image the CPU seconds of the process (``time.process_time``:
the figure that does not move when other work shares the machine) and the wall seconds, and
the text quality (:mod:`membench.content.ocr_quality`: the share of TabMWP table cells and
FinChart question values found in the OCR text, lines of confidence >= 0.5 in reading order).
Variants run interleaved, ``--repeats`` times; the table gives min / median / max of the
per-image seconds over the repeats. The engine is created (models loaded) before the clock
starts and one warm-up image (not of the sample) runs first. Nothing is cached: the membench
OCR cache is not read or written.

Variants with ``"engine": "rapidocr"`` need the ``rapidocr`` package (3.x, PP-OCRv6 models in
its wheel) importable: ``pip install --target /tmp/rapidocr3 --no-deps rapidocr==3.10.0
omegaconf antlr4-python3-runtime==4.9.3 colorlog`` and ``--rapidocr-path /tmp/rapidocr3``;
``"rapidocr_openvino"`` likewise (``pip install --target /tmp/rapidov --no-deps
rapidocr-openvino==1.4.4 openvino openvino-telemetry``, ``--rapidocr-path /tmp/rapidov``).
They are skipped (and said so) when the package is not there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# name -> settings. engine: rapidocr_onnxruntime (1.4.4, what membench runs) or rapidocr (3.x)
BASE = {
    "engine": "rapidocr_onnxruntime",
    "upscale_min_side": 700,
    "threads": 1,
    "kw": {"max_side_len": 3200},
}
NOCLS = {"call": {"use_cls": False}}
VARIANTS: dict[str, dict] = {
    "base": {
        **BASE,
        "what": "membench's `ocr_engine=onnxruntime` (the default before "
        "openvino): rapidocr-onnxruntime 1.4.4, upscale to 700 px, angle classifier "
        "on",
    },
    "nocls": {**BASE, **NOCLS, "what": "base without the angle classifier"},
    "nocls-rec16": {
        **BASE,
        **NOCLS,
        "kw": {**BASE["kw"], "rec_batch_num": 16},
        "what": "nocls, recognizer batch 16 (default 6)",
    },
    "nocls-noup": {**BASE, **NOCLS, "upscale_min_side": 0, "what": "nocls, no upscale"},
    "nocls-2thr": {**BASE, **NOCLS, "threads": 2, "what": "nocls, 2 ONNX Runtime threads"},
    "ov": {
        **BASE,
        "engine": "membench",
        "what": "membench's `ocr_engine=openvino`: the same pipeline and models, inference "
        "by OpenVINO float32, no classifier, upscale 700",
    },
    "ov-cls": {
        **BASE,
        "engine": "membench",
        "use_cls": True,
        "what": "ov with the angle classifier",
    },
    "ov-bf16": {
        **BASE,
        "engine": "membench",
        "ov_precision": "bf16",
        "what": "ov in bf16 (OpenVINO's own default on this CPU)",
    },
    "ov-noup": {
        **BASE,
        "engine": "membench",
        "upscale_min_side": 0,
        "what": "ov without the upscale",
    },
    "ov-det480": {
        **BASE,
        "engine": "membench",
        "det": {"limit_side_len": 480},
        "what": "ov, detector input shorter side >= 480 (default 736)",
    },
    "ov-2thr": {**BASE, "engine": "membench", "threads": 2, "what": "ov with 2 OpenVINO threads"},
    "v6small-nocls": {
        "engine": "rapidocr",
        "upscale_min_side": 700,
        "threads": 1,
        "params": {"Global.max_side_len": 3200, "Global.use_cls": False},
        "what": "rapidocr 3.10.0, PP-OCRv6 small det+rec (in its wheel), "
        "upscale 700, no classifier",
    },
}


def _images(corpus: Path, n_tab: int, n_fin: int):
    from membench.content import ocr_quality as q

    exp = q.expected_all(corpus)
    return q.sample(exp, "tabmwp", n_tab) + q.sample(exp, "finchart", n_fin)


# ----------------------------------------------------------------------------- worker


def _engine(v: dict):
    threads = int(v.get("threads", 1))
    if v["engine"] == "membench":
        from membench.content import ocr as O

        O.USE_CLS["openvino"] = bool(v.get("use_cls", False))
        O.OV_PRECISION = v.get("ov_precision", "f32")
        eng = O._get_engine(threads, "openvino")
        for k, val in v.get("det", {}).items():  # the detector's resize rule
            setattr(eng.text_det, k, val)

        def run(img):
            res, _ = eng(img)
            return [(q, t, c) for q, t, c in (res or [])]

        return run
    if v["engine"] in ("rapidocr_onnxruntime", "rapidocr_openvino"):
        if v["engine"] == "rapidocr_onnxruntime":
            from rapidocr_onnxruntime import RapidOCR

            tkw = {"intra_op_num_threads": threads, "inter_op_num_threads": 1}
        else:
            from membench.core.netguard import import_openvino

            import_openvino()  # without OpenVINO's usage telemetry
            from rapidocr_openvino import RapidOCR

            tkw = {"inference_num_threads": threads}
            if v.get("ov_precision"):  # OpenVINO's own default is bf16 on AMX CPUs
                import openvino.runtime as ov
                from rapidocr_openvino.utils import infer_engine

                class Core(ov.Core):
                    def __init__(self):
                        super().__init__()
                        self.set_property("CPU", {"INFERENCE_PRECISION_HINT": v["ov_precision"]})

                infer_engine.Core = Core

        eng = RapidOCR(text_score=0.0, print_verbose=False, **tkw, **v.get("kw", {}))
        call = v.get("call", {})

        def run(img):
            res, _ = eng(img, **call)
            return [(q, t, c) for q, t, c in (res or [])]

        return run
    from rapidocr import RapidOCR  # 3.x

    params = {
        "Global.text_score": 0.0,
        "Global.log_level": "error",
        "EngineConfig.onnxruntime.intra_op_num_threads": threads,
        "EngineConfig.onnxruntime.inter_op_num_threads": 1,
        **v.get("params", {}),
    }
    eng = RapidOCR(params=params)

    def run(img):
        out = eng(img)
        if out.boxes is None:
            return []
        return list(zip(out.boxes.tolist(), out.txts, out.scores))

    return run


def worker(name: str, corpus: Path, n_tab: int, n_fin: int) -> dict:
    import logging

    import cv2

    from membench.content import ocr as O
    from membench.content import ocr_quality as q

    v = VARIANTS[name]
    run = _engine(v)
    logging.getLogger("RapidOCR").setLevel(logging.ERROR)
    sample = _images(corpus, n_tab, n_fin)
    warm = q.sample(q.expected_all(corpus), "tabmwp", n_tab + 1)[-1]

    def ocr(path: Path):
        img = O._load_bgr(path)
        h, w = img.shape[:2]
        s = O.upscale_factor(w, h, int(v["upscale_min_side"]))
        if s > 1.0:
            img = cv2.resize(img, (round(w * s), round(h * s)), interpolation=cv2.INTER_CUBIC)
        sx, sy = w / img.shape[1], h / img.shape[0]
        lines = []
        for quad, text, conf in run(img):
            xs = [float(p[0]) * sx for p in quad]
            ys = [float(p[1]) * sy for p in quad]
            lines.append(
                O.OcrLine(str(text), float(conf), (min(xs), min(ys), max(xs), max(ys)), ())
            )
        return O.ocr_text([ln for ln in lines if ln.confidence >= 0.5 and ln.text.strip()])

    ocr(corpus / warm.path)
    per: dict[str, list[float]] = {"tabmwp": [], "finchart": []}
    wall: dict[str, list[float]] = {"tabmwp": [], "finchart": []}
    pairs = []
    for e in sample:
        c0, w0 = time.process_time(), time.perf_counter()
        text = ocr(corpus / e.path)
        per[e.source].append(time.process_time() - c0)
        wall[e.source].append(time.perf_counter() - w0)
        pairs.append((e, text))
    qual = q.quality(pairs)
    return {
        "variant": name,
        "cpu_s_per_image": {s: statistics.fmean(x) for s, x in per.items() if x},
        "wall_s_per_image": {s: statistics.fmean(x) for s, x in wall.items() if x},
        "quality": {
            s: {"images": r.images, "values": r.values, "found": r.found, "share": r.share}
            for s, r in qual.items()
        },
    }


# ----------------------------------------------------------------------------- driver


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--tabmwp", type=int, default=30)
    ap.add_argument("--finchart", type=int, default=15)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variants", default=None, help="comma-separated names (default: all)")
    ap.add_argument(
        "--rapidocr-path",
        action="append",
        default=[],
        help="a folder holding the rapidocr 3.x or rapidocr-openvino package "
        "(put on PYTHONPATH for the workers; repeatable)",
    )
    ap.add_argument("--json", default=None, help="write every sample here")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    from membench.core.paths import corpus_root

    corpus = Path(a.corpus) if a.corpus else corpus_root()
    if a.worker:
        print(json.dumps(worker(a.worker, corpus, a.tabmwp, a.finchart)))
        return 0
    names = a.variants.split(",") if a.variants else list(VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant(s) {unknown}; known: {list(VARIANTS)}")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if a.rapidocr_path:
        env["PYTHONPATH"] = os.pathsep.join([*a.rapidocr_path, env.get("PYTHONPATH", "")])
    results: dict[str, list[dict]] = {n: [] for n in names}
    skipped: dict[str, str] = {}
    for r in range(a.repeats):
        for n in names:
            if n in skipped:
                continue
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                n,
                "--corpus",
                str(corpus),
                "--tabmwp",
                str(a.tabmwp),
                "--finchart",
                str(a.finchart),
            ]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if out.returncode != 0:
                skipped[n] = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "?"
                print(f"skipped {n}: {skipped[n]}", file=sys.stderr)
                continue
            results[n].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"repeat {r + 1}: {n} done", file=sys.stderr)
    load = os.getloadavg()
    print(
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores; "
        f"{a.tabmwp} TabMWP tables + {a.finchart} FinChart charts, {a.repeats} repeats"
    )
    print(
        "| setting | TabMWP CPU s/image (min/med/max) | FinChart CPU s/image | TabMWP wall s "
        "(med) | FinChart wall s | TabMWP cells found | FinChart values found |"
    )
    print("|---|---|---|---:|---:|---:|---:|")
    for n in names:
        rs = results[n]
        if not rs:
            print(f"| {n} | skipped: {skipped.get(n, '')} | | | | | |")
            continue

        def mmm(key, src):
            xs = sorted(x[key][src] for x in rs)
            return f"{xs[0]:.2f} / {statistics.median(xs):.2f} / {xs[-1]:.2f}"

        def med(key, src):
            return f"{statistics.median(x[key][src] for x in rs):.2f}"

        ql = rs[0]["quality"]
        print(
            f"| `{n}`: {VARIANTS[n]['what']} | {mmm('cpu_s_per_image', 'tabmwp')} | "
            f"{mmm('cpu_s_per_image', 'finchart')}"
            f" | {med('wall_s_per_image', 'tabmwp')} | {med('wall_s_per_image', 'finchart')}"
            f" | {ql['tabmwp']['share']:.1%} ({ql['tabmwp']['found']}/{ql['tabmwp']['values']})"
            f" | {ql['finchart']['share']:.1%} ({ql['finchart']['found']}/"
            f"{ql['finchart']['values']}) |"
        )
    if a.json:
        Path(a.json).write_text(
            json.dumps({"load": load, "results": results, "skipped": skipped}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
