"""Benchmark: membench's TREC path against pytrec_eval and ranx on one synthetic run.

    python bench/bench_metrics.py                      # 10,000 queries x 1,000 hits
    python bench/bench_metrics.py --queries 1000 --tools membench,pytrec_eval

It writes a seeded synthetic run (``qid Q0 docid rank score tag``, ranks 1.., scores at least
0.001 apart within a query, so that no tool's tie rule matters, not even trec_eval's rounding of
scores to 32-bit floats) and its qrels (1-20 relevant documents per query,
most retrieved at random depths, some never retrieved, plus judged non-relevant ones), then
runs every tool in its own subprocess and measures, inside that process:

* seconds: wall clock from "files on disk" to "mean recall@10/100/1000, MRR, nDCG@10 in hand"
  (reading both files, building whatever the tool needs, evaluating, averaging); imports and,
  for ranx, numba's JIT warm-up on a tiny run are excluded;
* peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``; tracemalloc misses C/C++
  allocations) and the current RSS after imports / warm-up (``VmRSS``), so the difference is
  what the run cost.

The means of all tools must agree to 1e-9 (they do on a tie-free run); the table shows them.
Nothing here is a test: timings vary with the machine and are never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MEASURES = ("recall@10", "recall@100", "recall@1000", "mrr", "ndcg@10")
TOOLS = ("membench", "pytrec_eval", "ranx")


# --------------------------------------------------------------------------- data


def _digits(v: np.ndarray, width: int) -> np.ndarray:
    """Zero-padded decimal digits of non-negative ints as an (n, width) uint8 matrix."""
    out = np.empty((len(v), width), dtype=np.uint8)
    v = v.astype(np.int64).copy()
    for k in range(width - 1, -1, -1):
        out[:, k] = 48 + v % 10
        v //= 10
    return out


def generate(workdir: Path, n_queries: int, depth: int, seed: int) -> tuple[Path, Path]:
    """Write ``run.trec`` and ``qrels.trec`` (fixed-width fields, built with numpy)."""
    rng = np.random.default_rng(seed)
    run_path, qrels_path = workdir / "run.trec", workdir / "qrels.trec"
    corpus = 10_000_000
    block = max(1, 1_000_000 // depth)
    with open(run_path, "wb") as fr, open(qrels_path, "w") as fq:
        for q0 in range(0, n_queries, block):
            nq = min(block, n_queries - q0)
            qids = np.repeat(np.arange(q0, q0 + nq), depth)
            # distinct docids per query: a random start plus a random odd stride mod corpus
            startd = rng.integers(0, corpus, nq)
            stride = rng.integers(1, corpus // depth, nq)
            docs = (startd[:, None] + stride[:, None] * np.arange(depth)[None, :]) % corpus
            # descending scores in micro-units below 100.0, at least 0.001 apart: distinct
            # even as 32-bit floats, which is how trec_eval stores them
            gaps = rng.integers(1000, 99_000_000 // depth, (nq, depth))
            units = 99_999_999 - np.cumsum(gaps, axis=1)
            ranks = np.tile(np.arange(1, depth + 1), nq)
            n = nq * depth
            line = np.empty((n, 41), dtype=np.uint8)
            line[:, 0] = ord("q")
            line[:, 1:8] = _digits(qids, 7)
            line[:, 8:12] = np.frombuffer(b" Q0 ", dtype=np.uint8)
            line[:, 12] = ord("d")
            line[:, 13:21] = _digits(docs.ravel(), 8)
            line[:, 21] = ord(" ")
            line[:, 22:26] = _digits(ranks, 4)
            line[:, 26] = ord(" ")
            sc = _digits(units.ravel(), 8)
            line[:, 27:29] = sc[:, :2]
            line[:, 29] = ord(".")
            line[:, 30:36] = sc[:, 2:]
            line[:, 36:41] = np.frombuffer(b" syn\n", dtype=np.uint8)
            fr.write(line.tobytes())
            # qrels: 1..20 relevant per query, 80% retrieved (rank ~ geometric), 20% not; plus
            # two judged non-relevant documents (relevance is binary, as in membench's nDCG)
            for i in range(nq):
                qid = f"q{q0 + i:07d}"
                k = int(rng.integers(1, 21))
                rel: dict[str, int] = {}
                for _ in range(k):
                    if rng.random() < 0.8:
                        r = min(int(rng.geometric(0.02)), depth) - 1
                        rel[f"d{int(docs[i, r]):08d}"] = 1      # binary, as membench
                    else:
                        rel[f"x{int(rng.integers(0, corpus)):08d}"] = 1
                for _ in range(2):
                    d = f"d{int(docs[i, int(rng.integers(0, depth))]):08d}"
                    rel.setdefault(d, 0)
                fq.write("".join(f"{qid} 0 {d} {r}\n" for d, r in rel.items()))
    return run_path, qrels_path


# --------------------------------------------------------------------------- tools (child side)


def _rss_mb() -> float:
    """Peak resident set size of this process so far (MiB)."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # Linux: KiB


def _current_mb() -> float:
    """Resident set size now (MiB), the baseline a run's cost is measured from."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return _rss_mb()


def tool_membench(run: str, qrels: str) -> dict:
    from membench.metrics.trec import evaluate_trec, read_trec_qrels, read_trec_run
    base = _current_mb()
    t = time.perf_counter()
    qr = read_trec_qrels(qrels)
    res = evaluate_trec(read_trec_run(run, qr), qr)
    means = res["mean"]
    return {"seconds": time.perf_counter() - t, "base_mb": base, "means": means}


def tool_pytrec_eval(run: str, qrels: str) -> dict:
    import pytrec_eval
    base = _current_mb()
    t = time.perf_counter()
    with open(qrels) as f:
        qr = pytrec_eval.parse_qrel(f)
    with open(run) as f:
        rn = pytrec_eval.parse_run(f)
    names = {"recall@10": "recall_10", "recall@100": "recall_100", "recall@1000": "recall_1000",
             "mrr": "recip_rank", "ndcg@10": "ndcg_cut_10"}
    ev = pytrec_eval.RelevanceEvaluator(qr, set(names.values()))
    per = ev.evaluate(rn)
    # trec_eval -c: judged queries with >= 1 relevant, missing from the run, count as 0
    judged = [q for q, d in qr.items() if any(r >= 1 for r in d.values())]
    means = {m: float(np.mean([per.get(q, {}).get(t, 0.0) for q in judged]))
             for m, t in names.items()}
    return {"seconds": time.perf_counter() - t, "base_mb": base, "means": means}


def tool_ranx(run: str, qrels: str) -> dict:
    import warnings
    warnings.filterwarnings("ignore")
    from ranx import Qrels, Run, evaluate
    metrics = ["recall@10", "recall@100", "recall@1000", "mrr", "ndcg@10"]
    # numba JIT warm-up on a tiny run in the same file format (compiled code is not timed)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "q.trec").write_text("a 0 x 1\na 0 z 0\n")
        Path(tmp, "r.trec").write_text("a Q0 x 1 1.5 t\na Q0 y 2 0.5 t\n")
        evaluate(Qrels.from_file(f"{tmp}/q.trec", kind="trec"),
                 Run.from_file(f"{tmp}/r.trec", kind="trec"), metrics)
    base = _current_mb()
    t = time.perf_counter()
    qr = Qrels.from_file(qrels, kind="trec")
    rn = Run.from_file(run, kind="trec")
    res = evaluate(qr, rn, metrics)
    means = {m: float(res[m]) for m in metrics}
    return {"seconds": time.perf_counter() - t, "base_mb": base, "means": means}


def child(tool: str, run: str, qrels: str) -> None:
    out = globals()[f"tool_{tool}"](run, qrels)
    out["peak_mb"] = _rss_mb()
    print(json.dumps(out))


# --------------------------------------------------------------------------- driver


def measure(tool: str, run: Path, qrels: Path) -> dict:
    p = subprocess.run([sys.executable, __file__, "--child", tool, str(run), str(qrels)],
                       capture_output=True, text=True, env=dict(os.environ), check=False)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def table(results: dict[str, dict], lines: int, size_mb: float) -> str:
    ref = results.get("membench", {})
    header = (f"{'tool':<12} {'seconds':>8} {'x membench':>10} {'peak RSS MB':>12} "
              f"{'RSS after imports':>18} {'run cost MB':>12} {'x membench':>10}  means agree")
    out = [f"run: {lines:,} lines ({size_mb:.0f} MB); qrels as generated", header]
    for tool, r in results.items():
        if "error" in r:
            out.append(f"{tool:<12} {'-':>8}  failed: {r['error']}")
            continue
        cost = r["peak_mb"] - r["base_mb"]
        tx = r["seconds"] / ref["seconds"] if "seconds" in ref else float("nan")
        mx = cost / (ref["peak_mb"] - ref["base_mb"]) if "peak_mb" in ref else float("nan")
        agree = all(abs(r["means"][m] - ref["means"][m]) <= 1e-9 for m in MEASURES) \
            if "means" in ref else None
        out.append(f"{tool:<12} {r['seconds']:>8.2f} {tx:>10.2f} {r['peak_mb']:>12.0f} "
                   f"{r['base_mb']:>18.0f} {cost:>12.0f} {mx:>10.2f}  {agree}")
    if "means" in ref:
        out.append("means (membench): " + ", ".join(f"{m}={ref['means'][m]:.6f}" for m in MEASURES))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--depth", type=int, default=1_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--workdir", type=Path, default=None,
                    help="where to write the run and qrels (default: a temporary folder)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse run.trec / qrels.trec already in --workdir (no regeneration)")
    ap.add_argument("--child", nargs=3, metavar=("TOOL", "RUN", "QRELS"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child(*a.child)
        return 0
    with tempfile.TemporaryDirectory(prefix="membench-bench-") as tmp:
        work = a.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        run, qrels = work / "run.trec", work / "qrels.trec"
        if not (a.reuse and run.exists() and qrels.exists()):
            t = time.perf_counter()
            run, qrels = generate(work, a.queries, a.depth, a.seed)
            print(f"generated {run} and {qrels} in {time.perf_counter() - t:.1f} s", flush=True)
        results = {}
        for tool in a.tools.split(","):
            print(f"measuring {tool} ...", flush=True)
            results[tool] = measure(tool, run, qrels)
        with open(run, "rb") as f:
            n_lines = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 24), b""))
        print(table(results, n_lines, run.stat().st_size / 2**20))
    return 0


if __name__ == "__main__":
    sys.exit(main())
