"""Benchmark: membench's TREC engine against the trec_eval C binary and pytrec_eval (and
ranx, ir_measures), on seeded synthetic runs in four layouts and at several sizes, or on
runs and qrels you give it.

    .venv/bin/python bench/bench_metrics.py                       # 10,000 queries, 4 layouts
    .venv/bin/python bench/bench_metrics.py --sizes 10000,30000 --repeats 3 \\
        --workdir /tmp/membench-bench --reuse
    .venv/bin/python bench/bench_metrics.py --sizes 70000 --tools membench --repeats 1
    .venv/bin/python bench/bench_metrics.py --input my.run my.qrels --input other.run q.txt
    .venv/bin/python bench/bench_metrics.py --bounds              # the reader's bounds, timed
    .venv/bin/python bench/bench_metrics.py --startup --repeats 5 # whole commands, 1k-100k lines
    .venv/bin/python bench/bench_metrics.py ... --write-docs docs/speed.md
    .venv/bin/python bench/bench_metrics.py --whole [ARGS]        # bench/bench_trec_whole.py:
        # membench trec-eval, trec_eval and pytrec_eval as whole processes, tied scores

**Tools.** ``membench`` (``membench trec-eval -c``'s function,
:func:`membench.trec.trec_eval.trec_eval_values`, in process), ``trec_eval`` (the C program,
found or built by ``bench/trec_eval_c.py``: ``--trec-eval BIN`` or ``--trec-eval-src
TREE|ARCHIVE``; when it cannot be had the run goes on without it and says why),
``pytrec_eval`` (trec_eval's C code behind Python dicts), ``ranx``, ``ir_measures``.

**Inputs.** For each size (queries x ``--depth`` hits) one qrels file and one run, written in
layouts that hold the same lines (so every tool must give the same means on all of them):

* ``digits17`` (**sorted by query**): what :func:`membench.trec.write_trec_run` writes:
  ``repr()`` of the float64 score (16-17 significant digits), rank 1.., tag ``membench``;
* ``shuffled`` (**hits shuffled within a query**): each query's lines in random order (rank
  column and score travel with the line);
* ``shards4`` (**4 shard files concatenated**, what a sharded or Ray run writes): every line
  sent to one of 4 shards at random, each shard in query order, the 4 files one after the
  other, so every query comes back 4 times;
* ``docid`` (**sorted by docid**): the lines in docid order (then query order), no two
  consecutive lines need share a query;
* also ``best`` (fixed-width fields, 8-digit scores: membench's best case) and
  ``interleaved`` (all lines in one random order), with ``--variants``.

``--input RUN QRELS`` (repeatable) times the tools on your files instead (a warm-up sample:
the lines of the run's first 20 queries, and their qrels). Means are compared there too, but
only reported: on your files the tools may legitimately differ (ties: trec_eval breaks them
by docid, membench by the rank column; trec_eval averages over every qrels query).

Scores of the generated runs fall by at least 0.001 from rank to rank, so they are distinct
even as 32-bit floats: trec_eval (pytrec_eval, ir_measures) keeps scores as float32 and breaks
ties by docid descending, membench by the rank column then line order
(:data:`membench.contract.protocol.TIE_BREAKING`), so the tools must agree on these runs. Qrels:
1-20 relevant documents per query (binary grade 1), 80% of them retrieved at geometric
depths, plus two judged non-relevant (grade 0) documents per query.

**Measurement.** Every tool runs in its own fresh process: imports, then a warm-up on a sample
of the same files (the first 20 queries of the timed run and qrels, same layout, same id
shapes), then the timed region from "files on disk" to "mean recall@10/100/1000, MRR, nDCG@10
in hand": reading both files the tool's natural way, evaluating and averaging (trec_eval: one
run of the binary with ``-c -m recall.10,100,1000 -m recip_rank -m ndcg_cut.10``, its output
parsed). Reported per tool: wall seconds and CPU seconds (user + system, all threads and
child processes) of the timed region, and the peak resident memory of the process that did
the work (VmHWM; for trec_eval the binary's own ``ru_maxrss``). Repeats are interleaved
(repeat 1 of every tool, then repeat 2, ...; the tool order rotates), each figure is given as
min / median / max, ratios are of medians; the load average is read before each
measurement. Means must agree across tools and layouts to 1e-9 (trec_eval: 6e-5, it prints
4 decimals), or the script stops with an error. Nothing here is a test: timings vary with the
machine and are never asserted.

**Bounds** (``--bounds``): how long membench takes on what its reader bounds
(``trec_line_bytes``): runs with 1, 2, 4 and 8 docids of 1 MiB (time per MB: flat when
reading is linear), a 1.5 MB run holding one 1 MiB docid, a 1 GiB line (a sparse file) and
``/dev/zero`` (both a located error after a few MiB read).

**Docs** (``--write-docs FILE``): the table of this run replaces the one between
``<!-- metric-speed:start -->`` and ``<!-- metric-speed:end -->`` in FILE (with ``--bounds``:
``trec-bounds``), with the command and the date: the published figures are the script's
output, never typed by hand. Run it once per size (``--sizes 10000``, then ``--sizes 30000``
into the ``metric-speed-30k`` block with ``--block``, ...).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's membench, whatever the venv installed

MEASURES = ("recall@10", "recall@100", "recall@1000", "mrr", "ndcg@10")
TOOLS = ("membench", "trec_eval", "pytrec_eval", "ranx", "ir_measures")
DEFAULT_TOOLS = ("membench", "trec_eval", "pytrec_eval")
LABELS = {
    "digits17": "sorted by query",
    "shuffled": "hits shuffled within a query",
    "shards4": "4 shard files concatenated",
    "docid": "sorted by docid",
    "best": "best case (fixed width)",
    "interleaved": "all lines shuffled",
}
VARIANTS = ("best", "digits17", "shuffled", "shards4", "docid", "interleaved")
DEFAULT_VARIANTS = ("digits17", "shuffled", "shards4", "docid")
N_SHARDS = 4
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
        extra = rng.random((nq, depth)) * 1e-7  # digits17: more significant digits
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
    """The lines :func:`membench.trec.write_trec_run` writes (``repr()`` of the float64
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
    table = pa.table(
        {
            "qid": pc.take(qids, pa.array(np.repeat(np.arange(nq), depth))),
            "q0": pc.take(pa.array(["Q0"]), pa.array(np.zeros(n, dtype=np.int32))),
            "docid": pc.cast(pa.array(d.view("S9").ravel()), pa.string()),
            "rank": pa.array(np.tile(np.arange(1, depth + 1), nq)),
            "score": pa.array(scores),
            "tag": pc.take(pa.array(["membench"]), pa.array(np.zeros(n, dtype=np.int32))),
        }
    )
    probe = _csv(table.slice(0, min(n, 2000)).select(["score"])).decode().splitlines()
    assert probe == [repr(x) for x in scores[: len(probe)].tolist()], "arrow text != repr()"
    return table


def _csv(table) -> bytes:
    import io

    import pyarrow.csv as pacsv

    buf = io.BytesIO()
    pacsv.write_csv(
        table, buf, pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    )
    return buf.getvalue()


def generate(
    folder: Path, n_queries: int, depth: int, seed: int, variants: tuple[str, ...] = VARIANTS
) -> None:
    """Write ``qrels.trec``, ``VARIANT.trec`` and their 20-query samples into ``folder``."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed + 1)
    n_buckets = max(1, n_queries * depth // 2_000_000)
    direct = {"best", "digits17", "shuffled"}
    files = {v: open(folder / f"{v}.trec", "wb") for v in variants if v in direct}
    buckets = (
        [open(folder / f"interleaved.part{b}", "wb") for b in range(n_buckets)]
        if "interleaved" in variants
        else []
    )
    shards = (
        [open(folder / f"shards4.part{b}", "wb") for b in range(N_SHARDS)]
        if "shards4" in variants
        else []
    )
    dbuckets = (
        [open(folder / f"docid.part{b}", "wb") for b in range(n_buckets)]
        if "docid" in variants
        else []
    )
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
                    samples["best"] = data[: 41 * sample_rows]
            if not set(variants) - {"best"}:
                continue
            table = _digits17_table(q0, docs, units, extra)
            n = table.num_rows
            if "digits17" in files:
                files["digits17"].write(_csv(table))
            # shuffled: a random order inside each query's block of lines
            perm = (
                np.argsort(rng.random((n // depth, depth)), axis=1)
                + (np.arange(n // depth) * depth)[:, None]
            ).ravel()
            if "shuffled" in files:
                files["shuffled"].write(_csv(table.take(pa.array(perm))))
            if q0 == 0:
                samples["digits17"] = _csv(table.slice(0, sample_rows))
                samples["shuffled"] = _csv(table.take(pa.array(perm[:sample_rows])))
                pool = table.slice(0, sample_rows)
                samples["interleaved"] = _csv(pool.take(pa.array(rng.permutation(len(pool)))))
                ps = rng.integers(0, N_SHARDS, len(pool))
                samples["shards4"] = _csv(pool.take(pa.array(np.argsort(ps, kind="stable"))))
                samples["docid"] = _csv(pool.take(pc.sort_indices(pool, [("docid", "ascending")])))
            if shards:  # each line to one of 4 shards, query order kept
                where = rng.integers(0, N_SHARDS, n)
                for b in range(N_SHARDS):
                    shards[b].write(_csv(table.filter(pa.array(where == b))))
            if dbuckets:  # by docid range, each range sorted later
                dnum = docs.ravel()
                where = (dnum * n_buckets // 10_000_000).astype(np.int64)
                order = np.argsort(where, kind="stable")
                cuts = np.searchsorted(where[order], np.arange(n_buckets + 1))
                for b in range(n_buckets):
                    if cuts[b + 1] > cuts[b]:
                        dbuckets[b].write(_csv(table.take(pa.array(order[cuts[b] : cuts[b + 1]]))))
            if buckets:  # each line to a random bucket, shuffled later
                where = rng.integers(0, n_buckets, n)
                order = np.argsort(where, kind="stable")
                cuts = np.searchsorted(where[order], np.arange(n_buckets + 1))
                for b in range(n_buckets):
                    if cuts[b + 1] > cuts[b]:
                        buckets[b].write(_csv(table.take(pa.array(order[cuts[b] : cuts[b + 1]]))))
    for f in files.values():
        f.close()
    if buckets:
        for b in buckets:
            b.close()
        cols = ["qid", "q0", "docid", "rank", "score", "tag"]
        with open(folder / "interleaved.trec", "wb") as out:
            for b in range(n_buckets):
                part = folder / f"interleaved.part{b}"
                t = pacsv.read_csv(
                    part,
                    pacsv.ReadOptions(column_names=cols),
                    pacsv.ParseOptions(delimiter=" "),
                    pacsv.ConvertOptions(column_types={c: pa.string() for c in cols}),
                )
                out.write(_csv(t.take(pa.array(rng.permutation(t.num_rows)))))
                part.unlink()
    if shards:
        for b in shards:
            b.close()
        with open(folder / "shards4.trec", "wb") as out:
            for b in range(N_SHARDS):
                part = folder / f"shards4.part{b}"
                out.write(part.read_bytes())
                part.unlink()
    if dbuckets:
        for b in dbuckets:
            b.close()
        cols = ["qid", "q0", "docid", "rank", "score", "tag"]
        with open(folder / "docid.trec", "wb") as out:
            for b in range(n_buckets):
                part = folder / f"docid.part{b}"
                t = pacsv.read_csv(
                    part,
                    pacsv.ReadOptions(column_names=cols),
                    pacsv.ParseOptions(delimiter=" "),
                    pacsv.ConvertOptions(column_types={c: pa.string() for c in cols}),
                )
                # by docid, then query (a stable sort of the query-ordered bucket)
                out.write(_csv(t.take(pc.sort_indices(t, [("docid", "ascending")]))))
                part.unlink()
    for v in variants:
        (folder / f"{v}.sample.trec").write_bytes(samples[v])


# --------------------------------------------------------------------------- tools (child side)


def _cpu() -> float:
    """CPU seconds of this process and of the children it waited for."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def _peak_mb() -> float:
    """This process's peak resident memory, MB: ``VmHWM``
    (:func:`membench.core.memory.peak_rss_mb`), the high-water mark of this program's own
    memory. Not ``ru_maxrss``: Linux carries it over ``exec`` from the forking parent, so a
    child of a parent that had just generated the runs (pyarrow, several hundred MB) reported
    the parent's peak instead of its own."""
    from membench.core.memory import peak_rss_mb

    return peak_rss_mb()


def _children_peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _means_membench(run: str, qrels: str) -> dict:
    """``membench trec-eval -c`` (trec_eval 10.0's semantics) on the same measures as the
    binary, in process."""
    from membench.trec.trec_eval import trec_eval_values

    _, _, total = trec_eval_values(
        qrels, run, ["recall.10,100,1000", "recip_rank", "ndcg_cut.10"], complete=True
    )
    return {m: float(total[t]) for m, t in _TREC_NAMES.items()}


_TREC_NAMES = {
    "recall@10": "recall_10",
    "recall@100": "recall_100",
    "recall@1000": "recall_1000",
    "mrr": "recip_rank",
    "ndcg@10": "ndcg_cut_10",
}


def _means_trec_eval(run: str, qrels: str) -> dict:
    exe = os.environ["MEMBENCH_BENCH_TREC_EVAL"]
    p = subprocess.run(
        [
            exe,
            "-c",
            "-m",
            "recall.10,100,1000",
            "-m",
            "recip_rank",
            "-m",
            "ndcg_cut.10",
            qrels,
            run,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if p.returncode != 0:
        raise RuntimeError(f"trec_eval exit {p.returncode}: {p.stderr.strip()[-300:]}")
    got = {}
    for line in p.stdout.splitlines():
        name, qid, value = line.split()
        if qid == "all":
            got[name] = float(value)
    return {m: got[t] for m, t in _TREC_NAMES.items()}


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
    return {
        m: float(np.mean([per.get(q, {}).get(t, 0.0) for q in judged]))
        for m, t in _TREC_NAMES.items()
    }


def _means_ranx(run: str, qrels: str) -> dict:
    from ranx import Qrels, Run, evaluate

    metrics = list(MEASURES)
    res = evaluate(Qrels.from_file(qrels, kind="trec"), Run.from_file(run, kind="trec"), metrics)
    return {m: float(res[m]) for m in metrics}


def _means_ir_measures(run: str, qrels: str) -> dict:
    import ir_measures
    from ir_measures import RR, R, nDCG

    names = {
        "recall@10": R @ 10,
        "recall@100": R @ 100,
        "recall@1000": R @ 1000,
        "mrr": RR,
        "ndcg@10": nDCG @ 10,
    }
    agg = ir_measures.calc_aggregate(
        list(names.values()), ir_measures.read_trec_qrels(qrels), ir_measures.read_trec_run(run)
    )
    return {m: float(agg[v]) for m, v in names.items()}


def child(tool: str, run: str, qrels: str, sample_run: str, sample_qrels: str) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    fn = globals()[f"_means_{tool}"]
    fn(sample_run, sample_qrels)  # warm-up: same layout and id shapes
    c, t = _cpu(), time.perf_counter()
    means = fn(run, qrels)
    out = {
        "seconds": time.perf_counter() - t,
        "cpu": _cpu() - c,
        "peak_mb": _children_peak_mb() if tool == "trec_eval" else _peak_mb(),
        "means": means,
    }
    print(json.dumps(out))


# --------------------------------------------------------------------------- driver


def measure(
    tool: str, run: Path, qrels: Path, sample_run: Path, sample_qrels: Path, env: dict
) -> dict:
    args = [
        sys.executable,
        __file__,
        "--child",
        tool,
        str(run),
        str(qrels),
        str(sample_run),
        str(sample_qrels),
    ]
    load = os.getloadavg()[0]
    p = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1], "load": load}
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["load"] = load
    return out


def user_sample(run: Path, qrels: Path, out: Path) -> tuple[Path, Path]:
    """The lines of the run's first 20 queries, and their qrels: the warm-up sample."""
    out.mkdir(parents=True, exist_ok=True)
    keep: list[str] = []
    qids: list[str] = []
    with open(run, "rb") as f:
        for raw in f:
            parts = raw.split()
            if not parts:
                continue
            q = parts[0].decode("utf-8", "replace")
            if q not in qids:
                if len(qids) == SAMPLE_QUERIES:
                    break
                qids.append(q)
            keep.append(raw.decode("utf-8", "replace"))
    want = set(qids)
    with open(qrels, "rb") as f:
        judged = [
            raw.decode("utf-8", "replace")
            for raw in f
            if raw.split()[:1] and raw.split()[0].decode("utf-8", "replace") in want
        ]
    sr, sq = out / f"{run.name}.sample", out / f"{qrels.name}.sample"
    sr.write_text("".join(keep))
    sq.write_text("".join(judged))
    return sr, sq


def _mmm(xs: list[float], fmt: str) -> str:
    return "/".join(format(x, fmt) for x in (min(xs), statistics.median(xs), max(xs)))


def _keys(rows: list[dict]) -> list[tuple]:
    order = {v: i for i, v in enumerate(VARIANTS)}
    return sorted({(r["queries"], order.get(r["variant"], 99), r["variant"]) for r in rows})


def summarise(rows: list[dict]) -> str:
    """One table row per (input, tool): wall and CPU min/median/max, peak RSS, ratio of each
    tool's median to membench's."""
    out = [
        f"{'queries':>8} {'layout':<14} {'tool':<12} {'wall s min/med/max':>20} "
        f"{'x membench':>10} {'cpu s min/med/max':>20} {'x membench':>10} "
        f"{'peak RSS MB med':>15} {'load min/med/max':>18} n"
    ]
    for nq, _, variant in _keys(rows):
        here = [r for r in rows if r["queries"] == nq and r["variant"] == variant]
        ok = [r for r in here if "error" not in r]
        ref = [r for r in ok if r["tool"] == "membench"]
        ref_wall = statistics.median([r["seconds"] for r in ref]) if ref else float("nan")
        ref_cpu = statistics.median([r["cpu"] for r in ref]) if ref else float("nan")
        for tool in TOOLS:
            mine = [r for r in ok if r["tool"] == tool]
            bad = [r for r in here if r["tool"] == tool and "error" in r]
            if bad and not mine:
                out.append(f"{nq:>8} {variant:<14} {tool:<12} failed: {bad[0]['error']}")
            if not mine:
                continue
            wall = [r["seconds"] for r in mine]
            cpu = [r["cpu"] for r in mine]
            out.append(
                f"{nq:>8} {variant:<14} {tool:<12} {_mmm(wall, '.2f'):>20} "
                f"{statistics.median(wall) / ref_wall:>10.2f} {_mmm(cpu, '.2f'):>20} "
                f"{statistics.median(cpu) / ref_cpu:>10.2f} "
                f"{statistics.median([r['peak_mb'] for r in mine]):>15.0f} "
                f"{_mmm([r['load'] for r in mine], '.1f'):>18} {len(mine)}"
            )
    return "\n".join(out)


def markdown(rows: list[dict], command: str, notes: list[str]) -> str:
    """The docs' table: per input, each tool's CPU and wall seconds (min / median / max),
    the ratio of its median CPU (and wall) time to membench's, and peak memory."""
    tools = [t for t in TOOLS if any(r["tool"] == t and "error" not in r for r in rows)]
    others = [t for t in tools if t != "membench"]
    head = ["queries", "layout", "membench CPU s", "membench wall s", "membench peak MB"]
    for t in others:
        head += [f"{t} CPU s", f"{t} peak MB", f"{t} ÷ membench, CPU (wall)"]
    head += ["load", "repeats"]
    lines = [
        f"`{command}`",
        "",
        f"Measured {datetime.date.today().isoformat()}; seconds are min / median / max "
        "of the interleaved repeats, ratios of medians.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for nq, _, variant in _keys(rows):
        here = [
            r for r in rows if r["queries"] == nq and r["variant"] == variant and "error" not in r
        ]
        mb = [r for r in here if r["tool"] == "membench"]
        if not mb:
            continue
        c0 = statistics.median([r["cpu"] for r in mb])
        w0 = statistics.median([r["seconds"] for r in mb])
        cells = [
            f"{nq:,}" if isinstance(nq, int) else str(nq),
            LABELS.get(variant, variant),
            _mmm([r["cpu"] for r in mb], ".2f").replace("/", " / "),
            _mmm([r["seconds"] for r in mb], ".2f").replace("/", " / "),
            f"{statistics.median([r['peak_mb'] for r in mb]):,.0f}",
        ]
        for t in others:
            mine = [r for r in here if r["tool"] == t]
            if not mine:
                cells += ["—", "—", "—"]
                continue
            c = statistics.median([r["cpu"] for r in mine])
            w = statistics.median([r["seconds"] for r in mine])
            cells += [
                _mmm([r["cpu"] for r in mine], ".2f").replace("/", " / "),
                f"{statistics.median([r['peak_mb'] for r in mine]):,.0f}",
                f"**{c / c0:.2f}** ({w / w0:.2f})",
            ]
        loads = [r["load"] for r in here]
        cells += [f"{min(loads):.1f}–{max(loads):.1f}", str(len(mb))]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [""] + notes
    return "\n".join(lines)


def write_docs(path: Path, table: str, block: str = "metric-speed") -> None:
    start, end = f"<!-- {block}:start -->", f"<!-- {block}:end -->"
    text = path.read_text()
    if start not in text or end not in text:
        raise SystemExit(f"{path}: no {start} ... {end} block to replace")
    a, b = text.index(start) + len(start), text.index(end)
    path.write_text(text[:a] + "\n" + table + "\n" + text[b:])


def check_means(rows: list[dict], strict: bool = True) -> list[str]:
    """All tools (and all layouts of one size) must agree to 1e-9 (trec_eval's 4 printed
    decimals: 6e-5); ``strict=False`` (your inputs): the differences are returned."""
    found = []
    for nq in sorted({r["queries"] for r in rows}, key=str):
        ok = [r for r in rows if r["queries"] == nq and "error" not in r]
        if not ok:
            continue
        ref = next((r for r in ok if r["tool"] == "membench"), ok[0])
        for r in ok:
            tol = 6e-5 if "trec_eval" in (r["tool"], ref["tool"]) else 1e-9
            for m in MEASURES:
                if abs(r["means"][m] - ref["means"][m]) > tol:
                    msg = (
                        f"means disagree at {nq}: {r['tool']} on {r['variant']} "
                        f"{m}={r['means'][m]!r}, {ref['tool']} on {ref['variant']} "
                        f"{m}={ref['means'][m]!r}"
                    )
                    if strict:
                        raise SystemExit(msg)
                    found.append(msg)
    return found


# --------------------------------------------------------------------------- bounds, timed


def bounds(workdir: Path) -> str:
    """membench on what its reader bounds, timed (CPU and wall seconds of one call each)."""
    import resource

    from membench.core.errors import InputError
    from membench.trec.evaluate import evaluate_trec

    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    workdir.mkdir(parents=True, exist_ok=True)
    out = [f"{'input':<46} {'MB':>8} {'cpu s':>7} {'wall s':>7} {'cpu s/MB':>9}  result"]
    big = b"x" * (1 << 20)
    qrels = workdir / "bounds.qrels"
    qrels.write_bytes(b"q1 0 " + big + b" 1\nq2 0 d3 1\n")

    def timed(label: str, path: Path) -> None:
        c, t = cpu(), time.perf_counter()
        try:
            res = evaluate_trec(path, qrels)
            what = f"read: mrr {res['mean']['mrr']:.4f}"
        except InputError as e:
            what = f"error: {str(e)[:70]}"
        dc, dt = cpu() - c, time.perf_counter() - t
        mb = (path.stat().st_size if path.is_file() else 0) / 1e6
        per = f"{dc / mb:>9.4f}" if mb and what.startswith("read") else f"{'-':>9}"
        out.append(f"{label:<46} {mb:>8.1f} {dc:>7.2f} {dt:>7.2f} {per}  {what}")

    p = workdir / "bounds-warm.trec"
    p.write_bytes(b"q2 Q0 d3 1 1.0 t\n")
    evaluate_trec(p, qrels)  # imports and first calls, untimed
    for k in (1, 2, 4, 8):
        p = workdir / f"bounds-long{k}.trec"
        with open(p, "wb") as f:
            for i in range(k):
                f.write(
                    b"".join(b"q%d Q0 d%d %d %d t\n" % (i, j, j + 1, 1000 - j) for j in range(500))
                )
                f.write(b"q1 Q0 " + big + b" 600 0.5 t\n")
        timed(f"{k} docid(s) of 1 MiB, {k * 500} other lines", p)
    p = workdir / "bounds-1.5MB.trec"
    with open(p, "wb") as f:
        f.write(b"".join(b"q2 Q0 d%d %d %d t\n" % (j, j + 1, 20000 - j) for j in range(20000)))
        f.write(b"q1 Q0 " + big + b" 1 0.5 t\n")
    timed("a 1.5 MB run holding one 1 MiB docid", p)
    p = workdir / "bounds-1GiB-line.trec"
    with open(p, "wb") as f:
        f.write(b"q1 Q0 d1 1 1.0 t\n")
        f.truncate(17 + (1 << 30))
    timed("a 1 GiB second line (sparse file)", p)
    p.unlink()
    timed("/dev/zero (no newline, endless)", Path("/dev/zero"))
    return "\n".join(out)


def _shown(argv: list[str] | None) -> str:
    """The command as the docs show it: what was measured, without where it was written."""
    args = list(argv if argv is not None else sys.argv[1:])
    out = []
    skip = False
    for x in args:
        if skip:
            skip = False
            continue
        if x in ("--write-docs", "--block", "--results"):
            skip = True
            continue
        out.append(shlex.quote(x))
    return " ".join([".venv/bin/python", "bench/bench_metrics.py"] + out)


STARTUP_LINES = (1_000, 10_000, 100_000)
_PYTREC_SCRIPT = (
    "import sys, pytrec_eval\n"
    "qr = pytrec_eval.parse_qrel(open(sys.argv[1]))\n"
    "rn = pytrec_eval.parse_run(open(sys.argv[2]))\n"
    "ev = pytrec_eval.RelevanceEvaluator(qr, {'recall_10', 'recall_100', 'recall_1000', "
    "'recip_rank', 'ndcg_cut_10'})\n"
    "per = ev.evaluate(rn)\n"
    "print(sum(v['recip_rank'] for v in per.values()) / max(len(per), 1))\n"
)


def startup(workdir: Path, repeats: int, exe: Path | None) -> str:
    """Whole commands, start to exit, as a user runs them, on runs of 1k, 10k and 100k lines
    (100 hits a query): ``membench trec-eval -c`` (the command's own light path), the
    trec_eval binary and a pytrec_eval script, interleaved, ``repeats`` times; CPU = user +
    system of the process (``wait4``)."""
    membench = Path(sys.executable).parent / "membench"
    rows = []
    for lines in STARTUP_LINES:
        folder = workdir / f"startup-{lines}"
        if not (folder / "digits17.trec").exists():
            generate(folder, lines // 100, 100, 7, ("digits17",))
        run, qrels = folder / "digits17.trec", folder / "qrels.trec"
        m = ["-c", "-m", "recall.10,100,1000", "-m", "recip_rank", "-m", "ndcg_cut.10"]
        cmds = {
            "membench trec-eval": [str(membench), "trec-eval", *m, str(qrels), str(run)],
            "pytrec_eval": [sys.executable, "-c", _PYTREC_SCRIPT, str(qrels), str(run)],
        }
        if exe is not None:
            cmds["trec_eval (C)"] = [str(exe), *m, str(qrels), str(run)]
        got: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
        for rep in range(repeats):
            names = list(cmds)
            names = names[rep % len(names) :] + names[: rep % len(names)]
            for name in names:
                t = time.perf_counter()
                proc = subprocess.Popen(
                    cmds[name], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
                )
                _, status, ru = os.wait4(proc.pid, 0)
                wall = time.perf_counter() - t
                if status != 0:
                    raise SystemExit(
                        f"{name} failed on {run}: {proc.stderr.read().decode()[-300:]}"
                    )
                proc.stderr.close()
                got[name].append((ru.ru_utime + ru.ru_stime, wall))
        for name, xs in got.items():
            rows.append(
                (lines, name, _mmm([c for c, _ in xs], ".3f"), _mmm([w for _, w in xs], ".3f"))
            )
    out = [
        "| run lines | command | CPU s (min/median/max) | wall s (min/median/max) |",
        "|---|---|---|---|",
    ]
    out += [f"| {n:,} | {name} | {cpu} | {wall} |" for n, name, cpu, wall in rows]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["--whole"]:  # whole commands as processes: bench_trec_whole.py
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import bench_trec_whole

        return bench_trec_whole.main(args[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000", help="queries, comma-separated")
    ap.add_argument("--depth", type=int, default=1_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--tools", default=",".join(DEFAULT_TOOLS), help=f"comma-separated, of {', '.join(TOOLS)}"
    )
    ap.add_argument(
        "--variants",
        default=",".join(DEFAULT_VARIANTS),
        help=f"layouts, comma-separated, of {', '.join(VARIANTS)}",
    )
    ap.add_argument(
        "--input",
        nargs=2,
        action="append",
        metavar=("RUN", "QRELS"),
        help="time the tools on these files instead of generated ones (repeatable)",
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--workdir",
        type=Path,
        default=Path("/tmp/membench-bench"),
        help="where the generated files go (default /tmp/membench-bench)",
    )
    ap.add_argument(
        "--reuse", action="store_true", help="reuse files already generated in --workdir"
    )
    ap.add_argument(
        "--trec-eval",
        help="the trec_eval binary (default: bench/trec_eval_c.py finds or builds it)",
    )
    ap.add_argument(
        "--trec-eval-src", help="trec_eval source tree or release archive to build the binary from"
    )
    ap.add_argument(
        "--results",
        type=Path,
        default=None,
        help="append every measurement as a JSON line to this file",
    )
    ap.add_argument(
        "--bounds",
        action="store_true",
        help="time membench on the reader's bounds (long docids, endless lines)",
    )
    ap.add_argument(
        "--write-docs",
        type=Path,
        default=None,
        help="replace the metric-speed table in this file with this run's",
    )
    ap.add_argument(
        "--block",
        default="metric-speed",
        help="the marked block of --write-docs to replace (default metric-speed)",
    )
    ap.add_argument(
        "--startup",
        action="store_true",
        help="time whole commands (start-up included) on runs of 1k, 10k and 100k "
        "lines: membench trec-eval, trec_eval, a pytrec_eval script",
    )
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child(*a.child)
        return 0
    if a.startup:
        sys.path.insert(0, str(Path(__file__).parent))
        from trec_eval_c import binary

        exe, why = binary(a.trec_eval, a.trec_eval_src)
        table = startup(a.workdir, a.repeats, exe)
        print(table)
        if exe is None:
            print(f"trec_eval (the C binary) left out: {why}")
        if a.write_docs:
            write_docs(
                a.write_docs,
                f"`{_shown(argv)}` (measured "
                f"{datetime.date.today().isoformat()}, load before "
                f"{os.getloadavg()[0]:.1f})\n\n{table}",
                "trec-startup",
            )
            print(f"wrote the table into {a.write_docs}")
        return 0
    if a.bounds:
        table = bounds(a.workdir / "bounds")
        print(table)
        if a.write_docs:
            cmd = _shown(argv)
            write_docs(
                a.write_docs,
                f"`{cmd}` (measured {datetime.date.today().isoformat()}, "
                f"load {os.getloadavg()[0]:.1f})\n\n```\n{table}\n```",
                "trec-bounds",
            )
            print(f"wrote the table into {a.write_docs}")
        return 0
    tools = a.tools.split(",")
    variants = tuple(a.variants.split(","))
    for t in tools:
        if t not in TOOLS:
            ap.error(f"unknown tool {t!r}; known: {', '.join(TOOLS)}")
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"unknown layout {v!r}; known: {', '.join(VARIANTS)}")
    env = dict(os.environ)
    notes = []
    if "trec_eval" in tools:
        sys.path.insert(0, str(Path(__file__).parent))
        from trec_eval_c import binary

        exe, why = binary(a.trec_eval, a.trec_eval_src)
        if exe is None:
            print(f"trec_eval (the C binary) left out: {why}", flush=True)
            notes.append(f"trec_eval (the C binary) not measured: {why}.")
            tools.remove("trec_eval")
        else:
            print(f"trec_eval: {exe} ({why})", flush=True)
            env["MEMBENCH_BENCH_TREC_EVAL"] = str(exe)
    inputs: list[tuple] = []  # (queries label, layout, run, qrels, sample run, qrels)
    if a.input:
        for run, qrels in a.input:
            run, qrels = Path(run), Path(qrels)
            sr, sq = user_sample(run, qrels, a.workdir / "samples")
            inputs.append(("yours", run.name, run, qrels, sr, sq))
    else:
        for nq in (int(x) for x in a.sizes.split(",")):
            folder = a.workdir / f"q{nq}-d{a.depth}-s{a.seed}"
            missing = [v for v in variants if not (folder / f"{v}.trec").exists()]
            if not a.reuse or missing or not (folder / "qrels.trec").exists():
                t = time.perf_counter()
                generate(folder, nq, a.depth, a.seed, variants)
                print(f"generated {folder} in {time.perf_counter() - t:.0f} s", flush=True)
            for v in variants:
                inputs.append(
                    (
                        nq,
                        v,
                        folder / f"{v}.trec",
                        folder / "qrels.trec",
                        folder / f"{v}.sample.trec",
                        folder / "qrels.sample.trec",
                    )
                )
    rows: list[dict] = []
    for nq, variant, run, qrels, sr, sq in inputs:
        size_mb = run.stat().st_size / 2**20
        print(f"{nq} queries, {variant}: {size_mb:.0f} MB", flush=True)
        for rep in range(a.repeats):
            order = tools[rep % len(tools) :] + tools[: rep % len(tools)]
            for tool in order:
                r = measure(tool, run, qrels, sr, sq, env)
                r.update(tool=tool, variant=variant, queries=nq, repeat=rep, size_mb=size_mb)
                rows.append(r)
                print(
                    f"  {tool:<12} repeat {rep + 1}: "
                    + (
                        f"failed: {r['error']}"
                        if "error" in r
                        else f"{r['seconds']:.2f} s wall, {r['cpu']:.2f} s cpu, "
                        f"{r['peak_mb']:.0f} MB peak, load {r['load']:.1f}"
                    ),
                    flush=True,
                )
                if a.results:
                    with open(a.results, "a") as f:
                        f.write(json.dumps(r) + "\n")
    print()
    print(summarise(rows))
    diffs = check_means(rows, strict=not a.input)
    for d in diffs:
        print("note:", d)
    good = [r for r in rows if "error" not in r]
    if good and not a.input:
        print(
            "\nmeans (all tools and layouts agree): "
            + ", ".join(f"{m}={good[0]['means'][m]:.6f}" for m in MEASURES)
        )
    if a.write_docs:
        write_docs(a.write_docs, markdown(rows, _shown(argv), notes), a.block)
        print(f"wrote the table into {a.write_docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
