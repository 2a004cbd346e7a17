"""What a system over HTTP costs per query: bm25 in process against the same bm25 behind
``membench serve`` (a subprocess on 127.0.0.1), on the dev conversations, with the runner's own
latency (``latency_ms``: measured at the client around each query call).

    .venv/bin/python bench/bench_http.py [--reps 3] [--modality conversation] [--limit N]

Each repetition runs both, in alternating order, into scratch run directories; the table gives
p50 and p95 per-query latency and the ingest and total wall times, as min / median / max over
the repetitions, and the load average before and after (this machine is shared: compare the
two columns of one run, not figures from different days). Needs ``make sets``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from membench.core.paths import DEFAULT_SETS_DIR, corpus_root
from membench.run.runner import run_system
from membench.systems import make_system


def latencies(run_dir: Path) -> list[float]:
    return sorted(
        json.loads(line)["latency_ms"] for line in (run_dir / "run.jsonl").read_text().splitlines()
    )


def pct(xs: list[float], q: float) -> float:
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def serve(root: Path):
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "membench",
            "serve",
            "--system",
            "bm25",
            "--port",
            "0",
            "--corpus",
            str(root),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    m = re.search(r" on (http://\S+) ", p.stdout.readline())
    if not m:
        p.kill()
        raise SystemExit("membench serve did not start")
    return p, m.group(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--modality", default="conversation")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--sets", default=str(DEFAULT_SETS_DIR))
    a = ap.parse_args()
    root = corpus_root()
    res: dict[str, dict[str, list[float]]] = {"in process": {}, "over HTTP": {}}
    load0 = os.getloadavg()
    proc, url = serve(root)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for rep in range(a.reps):
                order = ["in process", "over HTTP"][:: 1 if rep % 2 == 0 else -1]
                for kind in order:
                    system = make_system("bm25" if kind == "in process" else url)
                    out = Path(tmp) / f"{rep}-{kind.replace(' ', '-')}"
                    t0 = time.perf_counter()
                    meta = run_system(
                        system,
                        Path(a.sets),
                        "dev",
                        out,
                        root,
                        modalities=[a.modality],
                        limit=a.limit,
                        check_sets=False,
                    )
                    total = time.perf_counter() - t0
                    lat = latencies(out)
                    r = res[kind]
                    for k, v in (
                        ("p50 ms", statistics.median(lat)),
                        ("p95 ms", pct(lat, 0.95)),
                        ("ingest s", meta["ingest_seconds"]),
                        ("total s", total),
                    ):
                        r.setdefault(k, []).append(v)
                    n = meta["queries"]
    finally:
        proc.terminate()
        proc.wait(20)
    load1 = os.getloadavg()
    print(
        f"bm25, dev {a.modality}: {n} queries per run, {a.reps} repetitions (min / median / "
        f"max); load average {load0[0]:.1f} before, {load1[0]:.1f} after, on "
        f"{os.cpu_count()} cores\n"
    )
    print("| figure | in process | over HTTP (membench serve, 127.0.0.1) |")
    print("|---|---|---|")
    for k in ("p50 ms", "p95 ms", "ingest s", "total s"):
        cells = [
            " / ".join(f"{v:.2f}" for v in (min(r[k]), statistics.median(r[k]), max(r[k])))
            for r in (res["in process"], res["over HTTP"])
        ]
        print(f"| {k} | {cells[0]} | {cells[1]} |")
    print(
        "\n(only the first HTTP run uploads and ingests: the later ones find the memory on the "
        "server, so their ingest time is the status check and the atoms' pages)"
    )


if __name__ == "__main__":
    main()
