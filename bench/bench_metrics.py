"""Benchmark: membench's TREC engine against pytrec_eval, ranx and ir_measures, on seeded
synthetic runs in four layouts and at several sizes.

    .venv/bin/python bench/bench_metrics.py                       # 10,000 queries, 4 layouts
    .venv/bin/python bench/bench_metrics.py --sizes 10000,30000 --repeats 3 \\
        --workdir /tmp/membench-bench --reuse
    .venv/bin/python bench/bench_metrics.py --sizes 70000 --tools membench,pytrec_eval \\
        --repeats 1 --workdir /tmp/membench-bench

**Inputs.** For each size (queries x ``--depth`` hits) one qrels file and one run, written in
four layouts that hold the same lines (so every tool must give the same means on all four):

* ``best``: membench's best case, as generated: fixed-width fields (``q0000042 Q0 d01234567
  0001 99.123456 syn``), lines sorted by query and rank, 8-digit scores;
* ``digits17``: what :func:`membench.metrics.write_trec_run` writes: ``repr()`` of the
  float64 score (16-17 significant digits), unpadded rank, tag ``membench``;
* ``shuffled``: ``digits17`` with each query's lines in random order (rank column and score
  travel with the line);
* ``interleaved``: ``digits17`` with the lines of all queries in one random order (no two
  consecutive lines need share a query; the worst case for a reader that groups queries).

Scores fall by at least 0.001 from rank to rank, so they are distinct even as 32-bit floats:
trec_eval (pytrec_eval, ir_measures) keeps scores as float32 and breaks ties by docid
descending, membench breaks them by the rank column then line order
(:data:`membench.run.protocol.TIE_BREAKING`); on a run with ties the tools would legitimately
differ, so the benchmark compares them where they must agree. Qrels: 1-20 relevant documents
per query (binary grade 1, the grade membench's binary nDCG sees), 80% of them retrieved at
geometric depths, plus two judged non-relevant (grade 0) documents per query.

**Measurement.** Every tool runs in its own fresh process: imports, then a warm-up on a sample
of the same files (the first 20 queries of the timed run and qrels, same layout, same id
shapes: ranx's numba code is compiled there, not in the timed region), then the timed region
from "files on disk" to "mean recall@10/100/1000, MRR, nDCG@10 in hand": reading both files
the tool's natural way (``pytrec_eval.parse_run``/``parse_qrel``, ``ranx.Run.from_file``,
``ir_measures.read_trec_run``, ``membench.metrics.evaluate_trec``), evaluating and averaging.
Reported per tool: wall seconds and CPU seconds (user + system, all threads) of the timed
region, and the process's peak RSS (VmHWM, its own: see _peak_mb). Repeats are interleaved (repeat 1 of every tool, then
repeat 2, ...; the tool order rotates), and each figure is given as min / median / max; the
ratio is of medians. The load average is read before each measurement. Means must agree
across tools to 1e-9, or the script stops with an error. Nothing here is a test: timings
vary with the machine and are never asserted.
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

import numpy as np

MEASURES = ("recall@10", "recall@100", "recall@1000", "mrr", "ndcg@10")
TOOLS = ("membench", "pytrec_eval", "ranx", "ir_measures")
VARIANTS = ("best", "digits17", "shuffled", "interleaved")
SAMPLE_QUERIES = 20


# --------------------------------------------------------------------------- data


def _digits(v: np.ndarray, width: int) -> np.ndarray:
    """Zero-padded decimal digits of non-negative ints as an (n, width) uint8 matrix."""
    out = np.empty((len(v), width), dtype=np.uint8)
    v = v.astype(np.int64).copy()
    for k in range(width - 1, -1, -1):
        out[:, k] = 48 + v % 10
        v //= 10
    return out


def _blocks(n_queries: int, depth: int, seed: int):
    """Seeded query blocks: (first query, docids (nq, depth), score units (nq, depth), extra
    digits (nq, depth), qrels lines)."""
    rng = np.random.default_rng(seed)
    corpus = 10_000_000
    block = max(1, 200_000 // depth)
    for q0 in range(0, n_queries, block):
        nq = min(block, n_queries - q0)
        startd = rng.integers(0, corpus, nq)
        stride = rng.integers(1, corpus // depth, nq)
        docs = (startd[:, None] + stride[:, None] * np.arange(depth)[None, :]) % corpus
        # descending scores in micro-units below 100.0, at least 0.001 apart: distinct even
        # as 32-bit floats, which is how trec_eval stores them
        gaps = rng.integers(1000, 99_000_000 // depth, (nq, depth))
        units = 99_999_999 - np.cumsum(gaps, axis=1)
        extra = rng.random((nq, depth)) * 1e-7          # digits17: more significant digits
        qrels = []
        for i in range(nq):
            qid = f"q{q0 + i:07d}"
            k = int(rng.integers(1, 21))
            rel: dict[str, int] = {}
            for _ in range(k):
                if rng.random() < 0.8:
                    r = min(int(rng.geometric(0.02)), depth) - 1
                    rel[f"d{int(docs[i, r]):08d}"] = 1
                else:
                    rel[f"x{int(rng.integers(0, corpus)):08d}"] = 1
            for _ in range(2):
                d = f"d{int(docs[i, int(rng.integers(0, depth))]):08d}"
                rel.setdefault(d, 0)
            qrels.append("".join(f"{qid} 0 {d} {r}\n" for d, r in rel.items()))
        yield q0, docs, units, extra, qrels


def _best_lines(q0: int, docs: np.ndarray, units: np.ndarray) -> bytes:
    nq, depth = docs.shape
    qids = np.repeat(np.arange(q0, q0 + nq), depth)
    ranks = np.tile(np.arange(1, depth + 1), nq)
    line = np.empty((nq * depth, 41), dtype=np.uint8)
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
    return line.tobytes()


def _digits17_table(q0: int, docs: np.ndarray, units: np.ndarray, extra: np.ndarray):
    """The lines :func:`membench.metrics.write_trec_run` writes (``repr()`` of the float64
    score, rank 1.., tag ``membench``), as an arrow table written by pyarrow's CSV writer,
    whose shortest round-trip float text equals ``repr()`` here (checked on every block)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    nq, depth = docs.shape
    n = nq * depth
    qids = pa.array([f"q{q0 + i:07d}" for i in range(nq)])
    d = np.empty((n, 9), dtype=np.uint8)
    d[:, 0] = ord("d")
    d[:, 1:] = _digits(docs.ravel(), 8)
    scores = (units * 1e-6 + extra).ravel()
    table = pa.table({
        "qid": pc.take(qids, pa.array(np.repeat(np.arange(nq), depth))),
        "q0": pc.take(pa.array(["Q0"]), pa.array(np.zeros(n, dtype=np.int32))),
        "docid": pc.cast(pa.array(d.view("S9").ravel()), pa.string()),
        "rank": pa.array(np.tile(np.arange(1, depth + 1), nq)),
        "score": pa.array(scores),
        "tag": pc.take(pa.array(["membench"]), pa.array(np.zeros(n, dtype=np.int32))),
    })
    probe = _csv(table.slice(0, min(n, 2000)).select(["score"])).decode().splitlines()
    assert probe == [repr(x) for x in scores[:len(probe)].tolist()], "arrow text != repr()"
    return table


def _csv(table) -> bytes:
    import io

    import pyarrow.csv as pacsv
    buf = io.BytesIO()
    pacsv.write_csv(table, buf, pacsv.WriteOptions(include_header=False, delimiter=" ",
                                                   quoting_style="none"))
    return buf.getvalue()


def generate(folder: Path, n_queries: int, depth: int, seed: int,
             variants: tuple[str, ...] = VARIANTS) -> None:
    """Write ``qrels.trec``, ``VARIANT.trec`` and their 20-query samples into ``folder``."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed + 1)
    n_buckets = max(1, n_queries * depth // 2_000_000)
    files = {v: open(folder / f"{v}.trec", "wb") for v in variants if v != "interleaved"}
    buckets = [open(folder / f"interleaved.part{b}", "wb") for b in range(n_buckets)] \
        if "interleaved" in variants else []
    samples: dict[str, bytes] = {}
    sample_rows = SAMPLE_QUERIES * depth
    with open(folder / "qrels.trec", "w") as fq:
        for q0, docs, units, extra, qrels in _blocks(n_queries, depth, seed):
            fq.write("".join(qrels))
            if q0 == 0:
                (folder / "qrels.sample.trec").write_text("".join(qrels[:SAMPLE_QUERIES]))
            if "best" in files:
                data = _best_lines(q0, docs, units)
                files["best"].write(data)
                if q0 == 0:
                    samples["best"] = data[:41 * sample_rows]
            if not set(variants) - {"best"}:
                continue
            table = _digits17_table(q0, docs, units, extra)
            n = table.num_rows
            if "digits17" in files:
                files["digits17"].write(_csv(table))
            # shuffled: a random order inside each query's block of lines
            perm = (np.argsort(rng.random((n // depth, depth)), axis=1)
                    + (np.arange(n // depth) * depth)[:, None]).ravel()
            if "shuffled" in files:
                files["shuffled"].write(_csv(table.take(pa.array(perm))))
            if q0 == 0:
                samples["digits17"] = _csv(table.slice(0, sample_rows))
                samples["shuffled"] = _csv(table.take(pa.array(perm[:sample_rows])))
                pool = table.slice(0, sample_rows)
                samples["interleaved"] = _csv(pool.take(pa.array(rng.permutation(len(pool)))))
            if buckets:                  # each line to a random bucket, shuffled later
                where = rng.integers(0, n_buckets, n)
                order = np.argsort(where, kind="stable")
                cuts = np.searchsorted(where[order], np.arange(n_buckets + 1))
                for b in range(n_buckets):
                    if cuts[b + 1] > cuts[b]:
                        buckets[b].write(_csv(table.take(pa.array(order[cuts[b]:cuts[b + 1]]))))
    for f in files.values():
        f.close()
    if buckets:
        for b in buckets:
            b.close()
        cols = ["qid", "q0", "docid", "rank", "score", "tag"]
        with open(folder / "interleaved.trec", "wb") as out:
            for b in range(n_buckets):
                part = folder / f"interleaved.part{b}"
                t = pacsv.read_csv(part, pacsv.ReadOptions(column_names=cols),
                                   pacsv.ParseOptions(delimiter=" "),
                                   pacsv.ConvertOptions(column_types={c: pa.string()
                                                                      for c in cols}))
                out.write(_csv(t.take(pa.array(rng.permutation(t.num_rows)))))
                part.unlink()
    for v in variants:
        (folder / f"{v}.sample.trec").write_bytes(samples[v])


# --------------------------------------------------------------------------- tools (child side)


def _cpu() -> float:
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _peak_mb() -> float:
    """This process's peak resident memory, MB: ``VmHWM``
    (:func:`membench.core.memory.peak_rss_mb`), the high-water mark of this program's own
    memory. Not ``ru_maxrss``: Linux carries it over ``exec`` from the forking parent, so a
    child of a parent that had just generated the runs (pyarrow, several hundred MB) reported
    the parent's peak instead of its own."""
    from membench.core.memory import peak_rss_mb

    return peak_rss_mb()


def _means_membench(run: str, qrels: str) -> dict:
    from membench.metrics.trec import evaluate_trec
    return evaluate_trec(run, qrels)["mean"]


_TREC_NAMES = {"recall@10": "recall_10", "recall@100": "recall_100",
               "recall@1000": "recall_1000", "mrr": "recip_rank", "ndcg@10": "ndcg_cut_10"}


def _means_pytrec_eval(run: str, qrels: str) -> dict:
    import pytrec_eval
    with open(qrels) as f:
        qr = pytrec_eval.parse_qrel(f)
    with open(run) as f:
        rn = pytrec_eval.parse_run(f)
    ev = pytrec_eval.RelevanceEvaluator(qr, set(_TREC_NAMES.values()))
    per = ev.evaluate(rn)
    # trec_eval -c: judged queries with >= 1 relevant, missing from the run, count as 0
    judged = [q for q, d in qr.items() if any(r >= 1 for r in d.values())]
    return {m: float(np.mean([per.get(q, {}).get(t, 0.0) for q in judged]))
            for m, t in _TREC_NAMES.items()}


def _means_ranx(run: str, qrels: str) -> dict:
    from ranx import Qrels, Run, evaluate
    metrics = list(MEASURES)
    res = evaluate(Qrels.from_file(qrels, kind="trec"), Run.from_file(run, kind="trec"),
                   metrics)
    return {m: float(res[m]) for m in metrics}


def _means_ir_measures(run: str, qrels: str) -> dict:
    import ir_measures
    from ir_measures import RR, R, nDCG
    names = {"recall@10": R @ 10, "recall@100": R @ 100, "recall@1000": R @ 1000,
             "mrr": RR, "ndcg@10": nDCG @ 10}
    agg = ir_measures.calc_aggregate(list(names.values()), ir_measures.read_trec_qrels(qrels),
                                     ir_measures.read_trec_run(run))
    return {m: float(agg[v]) for m, v in names.items()}


def child(tool: str, run: str, qrels: str, sample_run: str, sample_qrels: str) -> None:
    import warnings
    warnings.filterwarnings("ignore")
    fn = globals()[f"_means_{tool}"]
    fn(sample_run, sample_qrels)                    # warm-up: same layout and id shapes
    c, t = _cpu(), time.perf_counter()
    means = fn(run, qrels)
    out = {"seconds": time.perf_counter() - t, "cpu": _cpu() - c, "peak_mb": _peak_mb(),
           "means": means}
    print(json.dumps(out))


# --------------------------------------------------------------------------- driver


def measure(tool: str, folder: Path, variant: str) -> dict:
    args = [sys.executable, __file__, "--child", tool, str(folder / f"{variant}.trec"),
            str(folder / "qrels.trec"), str(folder / f"{variant}.sample.trec"),
            str(folder / "qrels.sample.trec")]
    load = os.getloadavg()[0]
    p = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ), check=False)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1], "load": load}
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["load"] = load
    return out


def _mmm(xs: list[float], fmt: str) -> str:
    return "/".join(format(x, fmt) for x in (min(xs), statistics.median(xs), max(xs)))


def summarise(rows: list[dict]) -> str:
    """One table row per (size, variant, tool): wall and CPU min/median/max, peak RSS, ratio
    of median wall time to membench's."""
    out = []
    keys = sorted({(r["queries"], VARIANTS.index(r["variant"]), r["variant"]) for r in rows})
    out.append(f"{'queries':>8} {'layout':<12} {'tool':<12} {'wall s min/med/max':>22} "
               f"{'x membench':>10} {'cpu s min/med/max':>22} {'x membench':>10} "
               f"{'peak RSS MB med':>15} {'load min/med/max':>18} n")
    for nq, _, variant in keys:
        here = [r for r in rows if r["queries"] == nq and r["variant"] == variant]
        ok = [r for r in here if "error" not in r]
        ref = [r for r in ok if r["tool"] == "membench"]
        ref_wall = statistics.median([r["seconds"] for r in ref]) if ref else float("nan")
        ref_cpu = statistics.median([r["cpu"] for r in ref]) if ref else float("nan")
        for tool in TOOLS:
            mine = [r for r in ok if r["tool"] == tool]
            bad = [r for r in here if r["tool"] == tool and "error" in r]
            if bad and not mine:
                out.append(f"{nq:>8} {variant:<12} {tool:<12} failed: {bad[0]['error']}")
            if not mine:
                continue
            wall = [r["seconds"] for r in mine]
            cpu = [r["cpu"] for r in mine]
            out.append(
                f"{nq:>8} {variant:<12} {tool:<12} {_mmm(wall, '.2f'):>22} "
                f"{statistics.median(wall) / ref_wall:>10.2f} {_mmm(cpu, '.2f'):>22} "
                f"{statistics.median(cpu) / ref_cpu:>10.2f} "
                f"{statistics.median([r['peak_mb'] for r in mine]):>15.0f} "
                f"{_mmm([r['load'] for r in mine], '.1f'):>18} {len(mine)}")
    return "\n".join(out)


def growth(rows: list[dict]) -> str:
    """Median wall seconds and peak RSS per million run lines, by size (growth)."""
    out = [f"{'tool':<12} {'layout':<12} " + " ".join(
        f"{'q=' + str(nq):>22}" for nq in sorted({r['queries'] for r in rows}))]
    sizes = sorted({r["queries"] for r in rows})
    for tool in TOOLS:
        for variant in VARIANTS:
            cells = []
            for nq in sizes:
                mine = [r for r in rows if r["tool"] == tool and r["variant"] == variant
                        and r["queries"] == nq and "error" not in r]
                if not mine:
                    cells.append(f"{'-':>22}")
                    continue
                m_lines = mine[0]["lines"] / 1e6
                s = statistics.median([r["seconds"] for r in mine]) / m_lines
                mb = statistics.median([r["peak_mb"] for r in mine])
                cells.append(f"{s:>7.3f} s/M {mb:>7.0f} MB".rjust(22))
            if any(c.strip() != "-" for c in cells):
                out.append(f"{tool:<12} {variant:<12} " + " ".join(cells))
    return "\n".join(out)


def check_means(rows: list[dict]) -> None:
    """All tools (and all layouts of one size) must agree to 1e-9."""
    for nq in sorted({r["queries"] for r in rows}):
        ok = [r for r in rows if r["queries"] == nq and "error" not in r]
        if not ok:
            continue
        ref = ok[0]
        for r in ok:
            for m in MEASURES:
                if abs(r["means"][m] - ref["means"][m]) > 1e-9:
                    raise SystemExit(
                        f"means disagree at {nq} queries: {r['tool']} on {r['variant']} "
                        f"{m}={r['means'][m]!r}, {ref['tool']} on {ref['variant']} "
                        f"{m}={ref['means'][m]!r}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000", help="queries, comma-separated")
    ap.add_argument("--depth", type=int, default=1_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/membench-bench"),
                    help="where the generated files go (default /tmp/membench-bench)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse files already generated in --workdir")
    ap.add_argument("--results", type=Path, default=None,
                    help="append every measurement as a JSON line to this file")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child(*a.child)
        return 0
    tools = a.tools.split(",")
    variants = tuple(a.variants.split(","))
    for t in tools:
        if t not in TOOLS:
            ap.error(f"unknown tool {t!r}; known: {', '.join(TOOLS)}")
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"unknown layout {v!r}; known: {', '.join(VARIANTS)}")
    rows: list[dict] = []
    for nq in (int(x) for x in a.sizes.split(",")):
        folder = a.workdir / f"q{nq}-d{a.depth}-s{a.seed}"
        missing = [v for v in variants if not (folder / f"{v}.trec").exists()]
        if not a.reuse or missing or not (folder / "qrels.trec").exists():
            t = time.perf_counter()
            generate(folder, nq, a.depth, a.seed, variants)
            print(f"generated {folder} in {time.perf_counter() - t:.0f} s", flush=True)
        for variant in variants:
            size_mb = (folder / f"{variant}.trec").stat().st_size / 2**20
            print(f"{nq} queries, {variant}: {size_mb:.0f} MB", flush=True)
            for rep in range(a.repeats):
                order = tools[rep % len(tools):] + tools[:rep % len(tools)]
                for tool in order:
                    r = measure(tool, folder, variant)
                    r.update(tool=tool, variant=variant, queries=nq, repeat=rep,
                             lines=nq * a.depth, size_mb=size_mb)
                    rows.append(r)
                    print(f"  {tool:<12} repeat {rep + 1}: " + (
                        f"failed: {r['error']}" if "error" in r else
                        f"{r['seconds']:.2f} s wall, {r['cpu']:.2f} s cpu, "
                        f"{r['peak_mb']:.0f} MB peak, load {r['load']:.1f}"), flush=True)
                    if a.results:
                        with open(a.results, "a") as f:
                            f.write(json.dumps(r) + "\n")
    print()
    print(summarise(rows))
    print()
    print(growth(rows))
    check_means(rows)
    good = [r for r in rows if "error" not in r]
    if good:
        print("\nmeans (all tools and layouts agree to 1e-9): " + ", ".join(
            f"{m}={good[0]['means'][m]:.6f}" for m in MEASURES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
