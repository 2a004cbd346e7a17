"""Benchmark: ``membench trec-eval`` against the trec_eval C binary and pytrec_eval as whole
processes (start-up, reading, ranking, measures, output), on generated runs with tied scores.

    .venv/bin/python bench/bench_trec_whole.py                      # 10,000 x 1,000, 5 repeats
    .venv/bin/python bench/bench_trec_whole.py --queries 2000 --repeats 3 --tools membench,trec_eval
    .venv/bin/python bench/bench_trec_whole.py --save               # bench/results/trec-whole.json

**Inputs** (written to ``--workdir``, seeded; every layout holds the same lines):

* shape ``fixed``: ``--queries`` x 1,000 documents, docids ``D<number>``, scores falling
  from 1 to 0 written with 2, 4 and 12 decimals (2: about ten lines share each score in a
  query, so nearly every line is a tie trec_eval breaks by docid; 12: no tie); qrels: 1-20
  relevant (grade 1) per query, most retrieved, and two judged non-relevant;
* shape ``ragged`` (another seed and shape): 1 to 1,000 documents per query (uniform),
  docids ``msmarco_passage_NN_<number>`` (a 16-byte prefix every docid shares), scores with
  2 decimals; qrels graded 0-3, 5% of the qrels queries absent from the run and 5% of the
  run queries without qrels;
* layouts: ``sorted`` (query, then score descending), ``shuffled`` (each query's lines in
  random order), ``shards4`` (each line sent to one of 4 shards at random, each shard in
  query order, the 4 concatenated), ``docid`` (the lines in docid order).

**Tools**, each one process per measurement: ``membench`` (``python -m membench
trec-eval -c``), ``trec_eval`` (the C binary, ``-c``; found or built by
``bench/trec_eval_c.py``), ``pytrec_eval`` (if installed: a Python process reading both
files with ``pytrec_eval.parse_qrel``/``parse_run``, evaluating and averaging). Measures:
``map P.10 ndcg_cut.10 recall.1000 Rprec bpref``. membench's output must equal trec_eval's,
line for line, on every input, or the script stops (pytrec_eval keeps scores as 32-bit
floats and leaves out queries missing from the run: its means are not compared).

**Measurement**: CPU seconds (user + system, every thread) of the whole process and its
CPU from the child's own resource usage (``os.wait4``, what
``getrusage(RUSAGE_CHILDREN)`` adds for it; it runs under ``/usr/bin/time``, which reports
its peak RSS); wall seconds. Repeats are interleaved (repeat 1 of every tool and input,
then repeat 2, ...), figures are medians, ratios are of medians. The load average is
recorded before each repeat. Nothing here is a test.

``--save`` writes ``bench/results/trec-whole.json``; the ``trec-whole`` block of
docs/speed.md is generated from it (``python -m membench.docsite.blocks docs/speed.md``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULT = REPO / "bench" / "results" / "trec-whole.json"
MEASURES = ["map", "P.10", "ndcg_cut.10", "recall.1000", "Rprec", "bpref"]
LAYOUTS = ("sorted", "shuffled", "shards4", "docid")
TOOLS = ("membench", "trec_eval", "pytrec_eval")

PYTREC = """
import sys, pytrec_eval
qrels = pytrec_eval.parse_qrel(open(sys.argv[1]))
run = pytrec_eval.parse_run(open(sys.argv[2]))
ev = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P_10", "ndcg_cut_10", "recall_1000",
                                            "Rprec", "bpref"})
res = ev.evaluate(run)
for m in ("map", "P_10", "ndcg_cut_10", "recall_1000", "Rprec", "bpref"):
    v = [r[m] for r in res.values()]
    print(m, sum(v) / max(len(v), 1))
"""


# --------------------------------------------------------------------------- inputs


def _write(path: Path, cols: tuple, order: np.ndarray, fmt: str) -> None:
    q, doc, score = cols
    with open(path, "w") as f:
        step = 200_000
        for a in range(0, len(order), step):
            o = order[a : a + step]
            f.writelines(fmt % t for t in zip(q[o].tolist(), doc[o].tolist(), score[o].tolist()))


def _layouts(
    rng: np.random.Generator, q: np.ndarray, docnum: np.ndarray, score: np.ndarray
) -> dict[str, np.ndarray]:
    """Line orders of every layout (the lines are given query by query, score descending)."""
    n = len(q)
    shuf = np.lexsort((rng.random(n), q))
    shard = rng.integers(0, 4, n)
    return {
        "sorted": np.arange(n),
        "shuffled": shuf,
        "shards4": np.lexsort((np.arange(n), shard)),
        "docid": np.argsort(docnum, kind="stable"),
    }


def generate(workdir: Path, n_queries: int, reuse: bool) -> list[dict]:
    """The inputs (shape, decimals, layout, run path, qrels path), written unless
    ``reuse`` and present."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = []
    # shape "fixed"
    depth = 1000
    rng = np.random.default_rng(7)
    n = n_queries * depth
    q = np.repeat(np.arange(n_queries), depth)
    docnum = (np.arange(n, dtype=np.int64) * 2654435761) % (1 << 34)  # distinct
    base = 1.0 - (np.tile(np.arange(depth), n_queries) + rng.random(n)) / depth
    qrels = workdir / f"fixed-{n_queries}.qrels"
    if not (reuse and qrels.exists()):
        lines = []
        for i in range(n_queries):
            k = int(rng.integers(1, 21))
            pos = np.unique((rng.geometric(0.01, k) - 1) % depth)
            for p in pos.tolist():
                lines.append(f"{i} 0 D{docnum[i * depth + p]} 1\n")
            for p in np.setdiff1d(rng.integers(0, depth, 2), pos).tolist():
                lines.append(f"{i} 0 D{docnum[i * depth + p]} 0\n")
            lines.append(f"{i} 0 Dnever{i} 1\n")
        qrels.write_text("".join(lines))
    orders = _layouts(rng, q, docnum, base)
    qs, ds = q.astype(str), docnum
    for dec in (2, 4, 12):
        score = np.round(base, dec)
        for lay in LAYOUTS:
            run = workdir / f"fixed-{n_queries}-d{dec}-{lay}.run"
            if not (reuse and run.exists()):
                _write(run, (qs, ds, score), orders[lay], f"%s Q0 D%d 0 %.{dec}f t\n")
            out.append(
                {
                    "shape": "fixed",
                    "decimals": dec,
                    "layout": lay,
                    "run": str(run),
                    "qrels": str(qrels),
                }
            )
    # shape "ragged": another seed, lengths 1..1000, graded qrels, missing queries
    rng = np.random.default_rng(2027)
    lens = rng.integers(1, 1001, n_queries)
    n = int(lens.sum())
    q = np.repeat(np.arange(n_queries), lens)
    first = np.repeat(np.cumsum(lens) - lens, lens)
    pos = np.arange(n) - first
    docnum = (np.arange(n, dtype=np.int64) * 40503 + 12345) % (1 << 33)
    base = 1.0 - (pos + rng.random(n)) / np.repeat(lens, lens)
    qrels = workdir / f"ragged-{n_queries}.qrels"
    in_run = rng.random(n_queries) >= 0.05  # 5% of qrels queries: no run line
    judged = rng.random(n_queries) >= 0.05  # 5% of run queries: no qrels
    if not (reuse and qrels.exists()):
        lines = []
        for i in range(n_queries):
            if not judged[i]:
                continue
            a, m = int(first[np.searchsorted(q, i)]) if lens[i] else 0, int(lens[i])
            k = int(rng.integers(1, 31))
            for p in np.unique(rng.integers(0, m, k)).tolist():
                lines.append(
                    f"{i} 0 msmarco_passage_{docnum[a + p] % 100:02d}_{docnum[a + p]}"
                    f" {int(rng.integers(0, 4))}\n"
                )
            lines.append(f"{i} 0 msmarco_passage_99_unretrieved{i} {int(rng.integers(1, 4))}\n")
        qrels.write_text("".join(lines))
    keep = in_run[q] | ~judged[q]
    q, docnum, base = q[keep], docnum[keep], base[keep]
    orders = _layouts(rng, q, docnum, base)
    score = np.round(base, 2)
    for lay in LAYOUTS:
        run = workdir / f"ragged-{n_queries}-{lay}.run"
        if not (reuse and run.exists()):
            ids = np.char.add(np.char.mod("%02d_", docnum % 100), docnum.astype(str))
            _write(
                run, (q.astype(str), ids, score), orders[lay], "%s Q0 msmarco_passage_%s 0 %.2f t\n"
            )
        out.append(
            {"shape": "ragged", "decimals": 2, "layout": lay, "run": str(run), "qrels": str(qrels)}
        )
    return out


# --------------------------------------------------------------------------- measuring


def _command(tool: str, exe: Path | None, run: str, qrels: str) -> list[str]:
    if tool == "membench":
        return [
            sys.executable,
            "-m",
            "membench",
            "trec-eval",
            "-c",
            *[x for m in MEASURES for x in ("-m", m)],
            qrels,
            run,
        ]
    if tool == "trec_eval":
        return [str(exe), "-c", *[x for m in MEASURES for x in ("-m", m)], qrels, run]
    return [sys.executable, "-c", PYTREC, qrels, run]


def measure(cmd: list[str]) -> dict:
    """One process: CPU (user + system) and wall seconds, peak RSS, its output. The child's
    own resource usage (``os.wait4``: what ``getrusage(RUSAGE_CHILDREN)`` adds for it)."""
    t0 = time.perf_counter()
    # through /usr/bin/time, a small process, for the peak RSS: a child forked from this
    # Python process would count its pages too (ru_maxrss keeps the high-water mark across
    # exec)
    p = subprocess.Popen(
        ["/usr/bin/time", "-f", "%M", *cmd],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    p.stdout.close()
    p.stderr.close()
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ...: exit {p.returncode}: {err[-500:]!r}")
    rss_kb = int(err.decode().strip().splitlines()[-1])
    return {
        "cpu": ru.ru_utime + ru.ru_stime,
        "wall": wall,
        "rss_mb": rss_kb / 1024,
        "out": out.decode(),
    }


def _record(a, argv, tools: list[str], inputs: list[dict], times: dict, loads: list) -> dict:
    rows = []
    for inp in inputs:
        name = Path(inp["run"]).stem
        row = dict(
            inp,
            name=name,
            lines=sum(1 for _ in open(inp["run"], "rb")),
            mb=round(os.path.getsize(inp["run"]) / 1e6, 1),
        )
        for tool in tools:
            rs = times.get((name, tool))
            if rs:
                row[tool] = {
                    "cpu": round(statistics.median(r["cpu"] for r in rs), 2),
                    "wall": round(statistics.median(r["wall"] for r in rs), 2),
                    "rss_mb": round(statistics.median(r["rss_mb"] for r in rs)),
                    "repeats": len(rs),
                    "cpu_all": [round(r["cpu"], 2) for r in rs],
                }
        rows.append(row)
    return {
        "format": 1,
        "command": "bench/bench_trec_whole.py " + " ".join(argv or sys.argv[1:]),
        "measured": datetime.date.today().isoformat(),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip(),
        "cpus": os.cpu_count(),
        "load_before_repeats": [round(x, 2) for x in loads],
        "queries": a.queries,
        "measures": MEASURES,
        "tools": tools,
        "rows": rows,
    }


def _from_log(a, argv) -> int:
    """The record of a stopped run, from its progress lines."""
    import re

    times: dict = {}
    done: dict = {}
    pat = re.compile(
        r"repeat (\d+) (\S+)\s+(\S+)\s+cpu\s+([\d.]+) s\s+wall\s+([\d.]+) s"
        r"\s+rss\s+(\d+) MB"
    )
    text = a.from_log.read_text()
    if "differs" in text:
        raise SystemExit(f"{a.from_log}: the run stopped on outputs that differ")
    for line in text.splitlines():
        m = pat.match(line)
        if m:
            rep, name, tool = int(m.group(1)), m.group(2), m.group(3)
            done.setdefault((rep, name), []).append(
                (
                    tool,
                    {
                        "cpu": float(m.group(4)),
                        "wall": float(m.group(5)),
                        "rss_mb": float(m.group(6)),
                    },
                )
            )
    tools = [t for t in TOOLS if any(t == x for v in done.values() for x, _ in v)]
    for (rep, name), got in done.items():
        if rep == 1 and len(got) < len(tools):
            continue  # an input not finished (its outputs not compared)
        if rep > 1 and len(got) < len([t for t in tools if t != "pytrec_eval"]):
            continue
        for tool, r in got:
            times.setdefault((name, tool), []).append(r)
    names = {n for (n, _) in times}
    inputs = []
    for run in sorted(a.workdir.glob(f"*-{a.queries}-*.run")):
        if run.stem not in names:
            continue
        parts = run.stem.split("-")
        shape, lay = parts[0], parts[-1]
        dec = int(parts[2][1:]) if shape == "fixed" else 2
        inputs.append(
            {
                "shape": shape,
                "decimals": dec,
                "layout": lay,
                "run": str(run),
                "qrels": str(a.workdir / f"{shape}-{a.queries}.qrels"),
            }
        )
    key = {
        ("fixed", d, lay): i
        for i, (d, lay) in enumerate((d, lay) for d in (2, 4, 12) for lay in LAYOUTS)
    }
    inputs.sort(
        key=lambda i: key.get(
            (i["shape"], i["decimals"], i["layout"]), 100 + LAYOUTS.index(i["layout"])
        )
    )
    rec = _record(a, argv, tools, inputs, times, [])
    rec["load_before_repeats"] = None
    rec["from_log"] = True
    print(json.dumps(rec, indent=1))
    if a.save:
        RESULT.write_text(json.dumps(rec, indent=1) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument(
        "--only",
        default=None,
        help="inputs whose name contains this (e.g. 'fixed', 'd2', 'ragged-10000-sorted')",
    )
    ap.add_argument(
        "--pytrec-repeats",
        type=int,
        default=None,
        help="repeats of pytrec_eval (default: --repeats; it is the slowest)",
    )
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/membench-trec-whole"))
    ap.add_argument("--reuse", action="store_true", help="keep inputs already written")
    ap.add_argument("--trec-eval", default=None, help="the trec_eval binary")
    ap.add_argument("--save", action="store_true", help=f"write {RESULT.relative_to(REPO)}")
    ap.add_argument(
        "--from-log",
        type=Path,
        default=None,
        metavar="LOG",
        help="build the record from the progress lines (stderr) of a run stopped "
        "before its last repeat, the inputs in --workdir (every repeat logged is "
        "counted; an input is logged only once its outputs were compared)",
    )
    a = ap.parse_args(argv)
    if a.from_log is not None:
        return _from_log(a, argv)
    tools = [t for t in a.tools.split(",") if t]
    exe = None
    if "trec_eval" in tools:
        if a.trec_eval:
            exe = Path(a.trec_eval)
        else:
            sys.path.insert(0, str(REPO / "bench"))
            import trec_eval_c

            exe, why = trec_eval_c.binary()
            if exe is None:
                raise SystemExit(f"trec_eval: {why}")
    if "pytrec_eval" in tools:
        try:
            import pytrec_eval  # noqa: F401
        except ImportError:
            tools.remove("pytrec_eval")
            print("pytrec_eval is not installed: left out", file=sys.stderr)
    inputs = generate(a.workdir, a.queries, a.reuse)
    if a.only:
        inputs = [i for i in inputs if a.only in Path(i["run"]).name]
    times: dict[tuple[str, str], list[dict]] = {}
    loads = []
    for rep in range(a.repeats):
        loads.append(os.getloadavg()[0])
        for inp in inputs:
            name = Path(inp["run"]).stem
            outs = {}
            for k in range(len(tools)):
                tool = tools[(k + rep) % len(tools)]  # the order rotates
                if tool == "pytrec_eval" and rep >= (a.pytrec_repeats or a.repeats):
                    continue
                r = measure(_command(tool, exe, inp["run"], inp["qrels"]))
                outs[tool] = r.pop("out")
                times.setdefault((name, tool), []).append(r)
                print(
                    f"repeat {rep + 1} {name:<28} {tool:<12} cpu {r['cpu']:7.2f} s  wall "
                    f"{r['wall']:7.2f} s  rss {r['rss_mb']:6.0f} MB",
                    file=sys.stderr,
                )
            if "membench" in outs and "trec_eval" in outs and outs["membench"] != outs["trec_eval"]:
                raise SystemExit(f"{name}: membench's output differs from trec_eval's")
    rec = _record(a, argv, tools, inputs, times, loads)
    print(json.dumps(rec, indent=1))
    if a.save:
        RESULT.write_text(json.dumps(rec, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
