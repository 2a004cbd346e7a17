"""OCR worker processes: how often a worker is replaced, and what it keeps, against time.

    .venv/bin/python bench/bench_ocr_workers.py [--sources 240] [--repeats 2]
                                                [--variants 50:5000:1,50:5000:0] [--json FILE]
                                                [--write-docs docs/speed.md]

The OCR of a cold run goes through ``membench.content.ocr.ocr_many`` with 2 worker
processes (``make all``'s ``ocr_processes=2``). A worker is replaced after
``WORKER_TASKS`` images or pages (it then spawns, imports, compiles the three models and
builds OpenVINO's per-shape kernels again), keeps at most ``OPENVINO_SHAPE_CACHE`` of those
kernels (``CPU_RUNTIME_CACHE_CAPACITY``), and lets OpenVINO pin its inference thread to a core
or not (``OPENVINO_PIN``, ``ENABLE_CPU_PINNING``). A variant ``TASKS:SHAPES:PIN`` sets the
three (PIN 1 or 0).

The sample is real and mixed as a dev run's OCR is: hash-chosen TabMWP tables, FinChart charts
and ScreenSpot screenshots of the built sets' items, and pages of the image-only
MMLongBench-Doc decks (``meta.text_pages == 0``), 3 images to 2 pages (a dev run OCRs 662
images and 449 pages). Each variant runs in a fresh process with an empty OCR cache of its
own, the variants interleaved, ``--repeats`` times. Per variant: the wall time (min / median /
max over the repeats: with 2 workers on 2 cores, the figure that shows whether both cores
work), the CPU seconds of the workers (``RUSAGE_CHILDREN`` after the pool is joined: every
worker, replaced ones included) and the largest resident size a worker reached. The text is
the same in every variant (``tests/test_content_ocr.py::test_worker_settings_change_no_result``);
this measures time and memory only. The load average before and after is printed: wall times
move with it, so compare the variants of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def sample(sets: Path, corpus: Path, n: int) -> list[str]:
    """``n`` OCR sources: 3 images or screenshots to 2 image-only deck pages, hash-chosen."""
    from membench.content import ocr
    from membench.core.hashing import hash_order

    images, pages = {}, {}
    for line in (sets / "items.jsonl").read_text().splitlines():
        it = json.loads(line)
        if it["modality"] in ("image", "ui_screenshot"):
            images[it["source_id"]] = str(corpus / it["path"])
        elif it["modality"] == "pdf" and it["meta"].get("text_pages") == 0:
            for p in range(1, int(it["meta"]["pages"]) + 1):
                pages[f"{it['source_id']}#{p}"] = ocr.page_source(corpus / it["path"], p)
    n_pages = n * 2 // 5
    pick_i = hash_order(images, "bench_ocr_workers")[: n - n_pages]
    pick_p = hash_order(pages, "bench_ocr_workers")[:n_pages]
    return [images[k] for k in pick_i] + [pages[k] for k in pick_p]


def worker(variant: str, sources: list[str]) -> dict:
    from membench.content import ocr
    from membench.core import progress

    tasks, shapes, pin = (int(x) for x in variant.split(":"))
    ocr.WORKER_TASKS, ocr.OPENVINO_SHAPE_CACHE, ocr.OPENVINO_PIN = tasks, shapes, bool(pin)
    progress.configure("quiet")
    w0 = time.perf_counter()
    ocr.ocr_many(sources, processes=2, pdf_dpi=72)
    wall = time.perf_counter() - w0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "variant": variant,
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "max_rss_mb": ru.ru_maxrss / 1024,
        "sources": len(sources),
        "engine_calls": ocr.stats["engine_calls"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=240)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--variants", default="50:5000:1,50:5000:0")
    ap.add_argument("--sets", default=str(REPO / "bench" / "sets"))
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--write-docs",
        default=None,
        help="replace the <!-- ocr-workers:start/end --> block of this file with this run's table",
    )
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    from membench.core.paths import corpus_root

    corpus = Path(a.corpus) if a.corpus else corpus_root()
    sources = sample(Path(a.sets), corpus, a.sources)
    if a.worker:
        print(json.dumps(worker(a.worker, sources)))
        return 0
    names = a.variants.split(",")
    for n in names:
        f = n.split(":")
        if not (
            len(f) == 3 and all(x.isdigit() for x in f) and int(f[0]) >= 1 and f[2] in ("0", "1")
        ):
            ap.error(f"a variant is TASKS:SHAPES:PIN (integers, TASKS >= 1, PIN 0 or 1), got {n!r}")
    results: dict[str, list[dict]] = {n: [] for n in names}
    load0 = os.getloadavg()
    for r in range(a.repeats):
        for n in names:
            with tempfile.TemporaryDirectory(prefix="mb-ocrw-") as cache:
                env = dict(os.environ, MEMBENCH_CACHE=cache, OMP_NUM_THREADS="1")
                cmd = [
                    sys.executable,
                    __file__,
                    "--worker",
                    n,
                    "--sources",
                    str(a.sources),
                    "--sets",
                    a.sets,
                    "--corpus",
                    str(corpus),
                ]
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if out.returncode != 0:
                print(out.stderr[-2000:], file=sys.stderr)
                return 1
            results[n].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"repeat {r + 1}: {n} done", file=sys.stderr)
    load1 = os.getloadavg()
    table = [
        f"{len(sources)} OCR sources (3 images to 2 deck pages), 2 workers, {a.repeats} "
        f"repeats; load {load0[0]:.1f} before, {load1[0]:.1f} after, {os.cpu_count()} CPUs",
        "",
        "| worker replaced after (images or pages) | OpenVINO shapes kept | thread pinned | "
        "wall s (min / median / max) | workers' CPU s (median) | largest worker, MB "
        "(median) |",
        "|---:|---:|---|---|---:|---:|",
    ]
    for n in names:
        rs = results[n]
        w = sorted(x["wall_s"] for x in rs)
        t, s, pin = n.split(":")
        table.append(
            f"| {t} | {s} | {'yes' if pin == '1' else 'no'} | "
            f"{w[0]:.1f} / {statistics.median(w):.1f} / {w[-1]:.1f} | "
            f"{statistics.median(x['cpu_s'] for x in rs):.1f} | "
            f"{statistics.median(x['max_rss_mb'] for x in rs):.0f} |"
        )
    print("\n".join(table))
    if a.write_docs:
        from bench_metrics import write_docs  # the bench folder's block writer

        write_docs(Path(a.write_docs), "\n".join(table), block="ocr-workers")
    if a.json:
        Path(a.json).write_text(json.dumps({"load": [load0, load1], "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
