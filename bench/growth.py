"""Growth curves: ingest, query and metric time and peak memory against size, single process and
Ray with 1, 2 and 4 workers, on synthetic sets (membench synth) with BM25.

    .venv/bin/python bench/growth.py [--sizes 10000,100000,1000000] [--engines local,ray1,ray2,ray4]
        [--queries-per-atom 0.07] [--out /tmp/membench-growth] [--plot docs/growth.png]
    .venv/bin/python bench/growth.py --plot-only [--out ...] [--plot ...]

For each size N (dev atoms) it writes synthetic sets with N atoms and 0.07 N queries (1M atoms
-> 70,000 queries, the Q2D-Web query count) under OUT (seed 0), then, each in a fresh process
(so peak memory is that run's):

* ``local``: ``run_system`` (the single-process engine);
* ``rayW``: a local Ray cluster of W CPUs is started (its start-up timed apart), then
  ``run_system_ray`` with W shards;
* ``metrics``: ``metrics_for_run_dir`` on the local run (the same files for every engine),
  with the score cache off (``MEMBENCH_SCORE_CACHE=0``: the same seed makes the same files,
  so a second call would otherwise time a cache read).

Figures per run: ``ingest_seconds`` and ``query_seconds`` from meta.json (Ray: ingest includes
the shards' start and the atoms' trip back to the driver), metric seconds, and peak resident
memory: the driver's ``VmHWM`` (its own peak; ``ru_maxrss`` would carry over the parent's),
plus for Ray the sum of the shard workers' ``VmHWM`` (Ray's own daemons are not counted). The
sets check before a run is not timed here (the runs pass ``check_sets=False``; ``membench
validate`` on each size is timed once and reported).
Every result is a line of OUT/results.jsonl; the plot and the least-squares slopes (seconds and
MB per atom and per query, fitted over the sizes measured) are made from it. On a 2-core machine
``ray4`` puts 4 workers on 2 cores (oversubscribed) and every Ray run shares the cores with the
driver and Ray's daemons: read its curve as overhead, not speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _peak_mb() -> float:
    """VmHWM (:func:`membench.core.memory.peak_rss_mb`): not ``ru_maxrss``, which Linux
    carries over ``exec`` from this script's parent process (the one that made the sets)."""
    from membench.core.memory import peak_rss_mb

    return peak_rss_mb()


def one(engine: str, synth: Path, out: Path) -> dict:
    from membench.run.runner import run_system
    from membench.systems import make_system

    kw = dict(check_sets=False, manifest=synth / "manifest.jsonl")
    t0 = time.perf_counter()
    if engine == "local":
        meta = run_system(make_system("bm25"), synth / "sets", "dev", out, synth / "corpus", **kw)
        extra = {}
    else:
        from membench.run import ray_engine

        w = int(engine[3:])
        ts = time.perf_counter()
        with ray_engine.cluster(num_cpus=w):
            start = time.perf_counter() - ts
            meta = ray_engine.run_system_ray(
                "bm25", {}, synth / "sets", "dev", out, synth / "corpus", workers=w, **kw
            )
        extra = {
            "cluster_start_seconds": round(start, 2),
            "worker_peak_rss_mb": meta["engine"]["worker_peak_rss_mb"],
        }
    wall = time.perf_counter() - t0
    driver = _peak_mb()
    return {
        "engine": engine,
        "atoms": meta["atoms"],
        "queries": meta["queries"],
        "items": meta["items"],
        "ingest_seconds": meta["ingest_seconds"],
        "query_seconds": meta["query_seconds"],
        "wall_seconds": round(wall, 2),
        "driver_peak_mb": round(driver, 1),
        "peak_mb": round(driver + sum(extra.get("worker_peak_rss_mb", [])), 1),
        **extra,
    }


def metrics(run_dir: Path, synth: Path) -> dict:
    from membench.metrics import metrics_for_run_dir

    t0 = time.perf_counter()
    m = metrics_for_run_dir(run_dir, synth / "sets")
    return {
        "engine": "metrics",
        "metric_seconds": round(time.perf_counter() - t0, 2),
        "peak_mb": round(_peak_mb(), 1),
        "recall@10": m["all"]["recall@10"]["value"],
    }


def _child(*args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "MEMBENCH_PROGRESS": "quiet", "MEMBENCH_SCORE_CACHE": "0"},
    )
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    import numpy as np

    b, a = np.polyfit(np.array(xs, float), np.array(ys, float), 1)
    return float(a), float(b)


def plot(results: list[dict], path: Path) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in results if r["engine"] != "metrics"]
    mets = [r for r in results if r["engine"] == "metrics"]
    engines = sorted({r["engine"] for r in runs}, key=lambda e: (e != "local", e))
    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    slopes: dict = {}
    panels = [
        (ax[0][0], "atoms", "ingest_seconds", "ingest time (s)"),
        (ax[0][1], "queries", "query_seconds", "query time (s)"),
        (ax[1][1], "atoms", "peak_mb", "peak memory (MB)"),
    ]
    for e in engines:
        rows = sorted((r for r in runs if r["engine"] == e), key=lambda r: r["atoms"])
        for a_, x, y, label in panels:
            a_.plot([r[x] for r in rows], [r[y] for r in rows], "o-", label=e)
            a_.set_xlabel(x)
            a_.set_ylabel(label)
        if len(rows) >= 2:
            slopes[e] = {
                "ingest_ms_per_atom": 1e3
                * _fit([r["atoms"] for r in rows], [r["ingest_seconds"] for r in rows])[1],
                "query_ms_per_query": 1e3
                * _fit([r["queries"] for r in rows], [r["query_seconds"] for r in rows])[1],
                "peak_kb_per_atom": 1e3
                * _fit([r["atoms"] for r in rows], [r["peak_mb"] for r in rows])[1],
                "sizes": [r["atoms"] for r in rows],
            }
    mets = sorted(mets, key=lambda r: r["queries"])
    a_ = ax[1][0]
    a_.plot(
        [r["queries"] for r in mets],
        [r["metric_seconds"] for r in mets],
        "o-",
        label="metrics (time)",
    )
    a_.set_xlabel("queries")
    a_.set_ylabel("metric time (s)")
    a2 = a_.twinx()
    a2.plot(
        [r["queries"] for r in mets],
        [r["peak_mb"] for r in mets],
        "s--",
        color="C3",
        label="metrics (peak MB)",
    )
    a2.set_ylabel("metric peak memory (MB)")
    if len(mets) >= 2:
        slopes["metrics"] = {
            "metric_ms_per_query": 1e3
            * _fit([r["queries"] for r in mets], [r["metric_seconds"] for r in mets])[1],
            "metric_peak_kb_per_query": 1e3
            * _fit([r["queries"] for r in mets], [r["peak_mb"] for r in mets])[1],
        }
    for a_ in (ax[0][0], ax[0][1], ax[1][1]):
        a_.set_xscale("log")
        a_.set_yscale("log")
        a_.legend(fontsize=8)
        a_.grid(True, alpha=0.3)
    ax[1][0].set_xscale("log")
    ax[1][0].legend(loc="upper left", fontsize=8)
    a2.legend(loc="lower right", fontsize=8)
    loads = [r["load"] for r in results if isinstance(r.get("load"), (int, float))]
    busy = f"load average {min(loads):.1f}-{max(loads):.1f}" if loads else "load not recorded"
    fig.suptitle(
        "membench growth: BM25 on synthetic conversation sets (membench synth, seed 0)"
        f"\n{os.cpu_count()} cores, {busy} after each size; ray4 puts 4 workers on them",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    return slopes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--engines", default="local,ray1,ray2,ray4")
    ap.add_argument("--queries-per-atom", type=float, default=0.07)
    ap.add_argument("--out", default="/tmp/membench-growth")
    ap.add_argument("--plot", default=str(REPO / "docs" / "growth.png"))
    ap.add_argument("--plot-only", action="store_true")
    ap.add_argument(
        "--one", nargs=3, metavar=("ENGINE", "SYNTH", "RUN_DIR"), help=argparse.SUPPRESS
    )
    ap.add_argument("--metrics", nargs=2, metavar=("RUN_DIR", "SYNTH"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one[0], Path(a.one[1]), Path(a.one[2]))))
        return 0
    if a.metrics:
        print(json.dumps(metrics(Path(a.metrics[0]), Path(a.metrics[1]))))
        return 0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    res_path = out / "results.jsonl"
    if not a.plot_only:
        from membench.sets.synth import generate

        for n in [int(x) for x in a.sizes.split(",")]:
            synth = out / f"synth-{n}"
            q = max(1, round(a.queries_per_atom * n))
            if not (synth / "sets" / "SYNTHETIC").exists():
                t = time.perf_counter()
                c = generate(synth, n, q, seed=0)
                print(f"synth {n}: {c} in {time.perf_counter() - t:.0f} s", flush=True)
            t = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "membench",
                    "--quiet",
                    "validate",
                    "--sets",
                    str(synth / "sets"),
                    "--corpus",
                    str(synth / "corpus"),
                    "--manifest",
                    str(synth / "manifest.jsonl"),
                    "--no-lock",
                ],
                cwd=REPO,
                check=True,
                capture_output=True,
            )
            rows = [
                {
                    "engine": "validate",
                    "atoms": n,
                    "validate_seconds": round(time.perf_counter() - t, 1),
                }
            ]
            for e in a.engines.split(","):
                run_dir = out / f"run-{n}-{e}"
                if run_dir.exists():
                    import shutil

                    shutil.rmtree(run_dir)
                rows.append(_child("--one", e, str(synth), str(run_dir)))
                print(json.dumps(rows[-1]), flush=True)
            local = out / f"run-{n}-local"
            if local.exists():
                m = _child("--metrics", str(local), str(synth))
                m.update(atoms=rows[1]["atoms"], queries=rows[1]["queries"])
                rows.append(m)
                print(json.dumps(m), flush=True)
            with open(res_path, "a") as f:
                for r in rows:
                    f.write(json.dumps({"size": n, "load": os.getloadavg()[0], **r}) + "\n")
            for e in a.engines.split(","):  # keep /tmp small: the figures are in results
                if e != "local":
                    import shutil

                    shutil.rmtree(out / f"run-{n}-{e}", ignore_errors=True)
    results = [json.loads(x) for x in res_path.read_text().splitlines()]
    results = [r for r in results if r["engine"] != "validate"]
    slopes = plot(results, Path(a.plot))
    print(json.dumps({"slopes": slopes}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
