"""Benchmark: the bm25 reference system's query time against raw tantivy, and the runner's own
time per query, on the real dev sets.

    .venv/bin/python bench/bench_query.py                        # conversation and code, 5 repeats
    .venv/bin/python bench/bench_query.py --modality pdf --modality video --repeats 3

(build the sets first: ``make sets``; the modalities named must have their content cached or
cheap to extract: conversation and code need no OCR or PDF text.)

What is measured, all as CPU time of this process (``time.process_time``, every thread):

* **system**: ``BM25System.query(question, scope, as_of)`` for each dev query of the modality:
  question analysis, query building, the tantivy search, ranking and the tie rule, atom ids,
  the cartridge policy; everything the runner calls.
* **raw**: tantivy alone on the same holder index with the same query object (the same
  analysed terms, the same ``observed_at <= as_of`` filter), built beforehand and not timed:
  ``searcher.search(query, limit=1000, count=False).hits``. That is the least a Python caller of
  tantivy pays to get the top 1,000 hits back, so system / raw is everything membench adds on
  top of the search, including turning each hit into an ``(atom_id, score)`` pair. A question
  without an index term (the system returns no hits without searching) is left out and counted.
* **search + read**: the raw search, then reading each hit's document number and score once
  (``[(a.doc, s) for s, a in hits]``), with the same query object. Any caller that uses the hits
  pays at least this; system / (search + read) is what membench adds beyond tantivy-py's own
  cost of handing the hits to Python (one ``DocAddress`` object per hit).
* **end to end**: the shortest tantivy-py program that gives the same ranked list (as document
  numbers): analyse the question with the same analyser, build the same query (term queries,
  the boolean, the time filter), search, and read each hit's ``(doc, score)``. system / end to
  end is what membench adds over writing it by hand (atom ids, the tie rule, the cartridge).
* **harness**: the real runner (:func:`membench.run.runner.run_system`, into a fresh folder,
  progress quiet, the set checks skipped) around a wrapper of the same, already ingested
  system that records the CPU clock on entering and leaving ``query``. A query's harness time
  is from leaving its ``query`` to entering the next one's: the protocol checks, the line's
  serialisation, the write and flush, the fsync once a second, the progress bar. The wrapper's
  two clock reads are in the system's time. The last query has no next one: what follows it
  (the last fsync, meta.json written and synced, the lock released) is a cost of the run, not
  of a query, and is reported on its own (``finish_ms``, milliseconds); charged to the last
  query, as this script did before, it added about 0.26x to the 97 video queries' harness
  share.
* **line writes**: how much of the harness is the kernel taking the lines in. After the run,
  its ``run.jsonl`` is written again, line by line, into a new file in the same folder, as the
  runner writes it (``write``, ``flush``, ``fsync`` once ``membench.run.lines.FSYNC_SECONDS`` have passed),
  each line timed; "the rest" is the harness without it: membench's own Python and C (the
  protocol checks, the serialisation, the loop, the progress bar). The kernel's share varies
  with the machine's memory: on this virtual machine a page the guest never touched costs
  about 8.6 µs to fault in, one it touched before about 1.5 µs, so the same 8 KB lines took
  from 4 to 24 µs each to write in one afternoon.

The **floor** columns are (search + read) / raw: what the least caller that uses the hits pays
over the raw search, before anything membench does. A target on system / raw below the floor
cannot be met by any Python code on tantivy-py 0.27, which hands the hits over only as one
``(score, DocAddress)`` tuple per hit.

Each repeat makes four passes, one per variant, each asking every query once in the runner's
presentation order (so each query finds the caches as the runner leaves them: another query
ran before it, not the same one); the order of the passes rotates over the repeats. The
collector is frozen after ingest, as the runner does. Per modality
and repeat: p50 and p95 over queries of each, the ratios, and harness / system (sums over the
queries).
The table gives min / median / max of each figure over the repeats. Timings depend on the
machine and its load (printed); nothing here is asserted by the tests.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODALITIES = ("conversation", "code")


class Timed:
    """A MemorySystem wrapper that records the CPU clock around each ``query`` call (and
    hands back an already ingested system's atoms, so a repeat does not re-ingest)."""

    def __init__(self, system, atoms):
        self.system, self.atoms = system, atoms
        self.name = system.name
        self.spans: list[tuple[float, float]] = []

    def config(self):
        return self.system.config()

    def ingest(self, items, corpus_root):
        return self.atoms

    def query(self, question, scope, as_of):
        t0 = time.process_time()
        res = self.system.query(question, scope, as_of)
        self.spans.append((t0, time.process_time()))
        return res


def _pct(v: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(v, dtype=np.float64), p))


def _mmm(v: list[float]) -> dict[str, float]:
    return {"min": min(v), "median": statistics.median(v), "max": max(v)}


def measure(sets: Path, corpus: Path, modalities: list[str], repeats: int) -> dict:
    from membench.core import progress
    from membench.run.runner import fsync_if_due, load_split, run_system
    from membench.systems import make_system
    from membench.systems.retrieval import to_micros

    progress.configure("quiet")
    data = load_split(sets, "dev", modalities)
    system = make_system("bm25")
    t = time.perf_counter()
    atoms = system.ingest(data.items, corpus)
    ingest_s = time.perf_counter() - t
    eng = system.engine

    # the raw baseline's query objects, built once, outside the timed region
    raw: list = []
    for r in data.records:
        terms = eng.terms(r.question)
        h = eng._holders.get(r.scope.holder)
        if not terms or h is None:
            raw.append(None)
            continue
        schema, searcher = h[0], h[2]
        raw.append((searcher, eng._query(schema, terms, to_micros(r.as_of))))
    mods = [r.modality for r in data.records]
    timed_idx = [i for i, q in enumerate(raw) if q is not None]

    import tantivy

    Q, Occ, INT = tantivy.Query, tantivy.Occur, tantivy.FieldType.Integer
    analyzer = eng.analyzer

    def raw_e2e(question, searcher, schema, as_of_us):
        """tantivy-py end to end, as a caller would write it: analyse, build, search, and
        read each hit's document number and score."""
        terms = list(dict.fromkeys(analyzer.analyze(question)))
        text = Q.boolean_query([(Occ.Should, Q.term_query(schema, "text", t)) for t in terms])
        in_time = Q.const_score_query(
            Q.range_query(schema, "observed_at", INT, upper_bound=as_of_us, include_upper=True), 0.0
        )
        q = Q.boolean_query([(Occ.Must, text), (Occ.Must, in_time)])
        return [(a.doc, s) for s, a in searcher.search(q, limit=1000, count=False).hits]

    e2e_args = [
        None
        if q is None
        else (r.question, q[0], eng._holders[r.scope.holder][0], to_micros(r.as_of))
        for r, q in zip(data.records, raw)
    ]
    clock = time.process_time
    gc.freeze()  # as the runner does around its query loop
    per_rep: list[dict[str, dict[str, float]]] = []
    for rep in range(repeats):
        sys_t = np.zeros(len(raw))
        raw_t = np.zeros(len(raw))
        e2e_t = np.zeros(len(raw))
        read_t = np.zeros(len(raw))
        jobs = (
            (raw_t, lambda i: raw[i][0].search(raw[i][1], limit=1000, count=False).hits),
            (
                read_t,
                lambda i: [
                    (a.doc, s) for s, a in raw[i][0].search(raw[i][1], limit=1000, count=False).hits
                ],
            ),
            (e2e_t, lambda i: raw_e2e(*e2e_args[i])),
            (
                sys_t,
                lambda i: system.query(
                    data.records[i].question, data.records[i].scope, data.records[i].as_of
                ),
            ),
        )
        k = rep % len(jobs)  # passes rotate: each goes first, second, ... in turn
        for out_t, job in jobs[k:] + jobs[:k]:
            for i in timed_idx:  # every query once per pass, in the runner's order
                t0 = clock()
                job(i)
                out_t[i] = clock() - t0
        # the harness: the real runner around the same system
        wrapped = Timed(system, atoms)
        with tempfile.TemporaryDirectory(prefix="bench-query-") as tmp:
            run_system(
                wrapped,
                sets,
                "dev",
                Path(tmp) / "run",
                corpus,
                modalities=modalities,
                check_sets=False,
            )
            t_end = clock()
            # the same lines written again as the runner writes them, each timed
            lines = (Path(tmp) / "run" / "run.jsonl").read_bytes().splitlines(keepends=True)
            write_t = np.zeros(len(lines))
            with open(Path(tmp) / "rewritten.jsonl", "ab") as f:
                synced = time.perf_counter()
                for j, line in enumerate(lines):
                    t0 = clock()
                    f.write(line)
                    f.flush()
                    synced = fsync_if_due(f, synced, time.perf_counter())
                    write_t[j] = clock() - t0
        spans = wrapped.spans
        assert len(lines) == len(spans)
        assert len(spans) == len(data.records)
        # between one query and the next; the last one's is the run's finish (reported apart)
        harness = [spans[j + 1][0] - spans[j][1] for j in range(len(spans) - 1)]
        finish = t_end - spans[-1][1]
        inside = [b - a for a, b in spans]
        # the runner answers in presentation order = data.records' order (fresh folder)
        figs: dict[str, dict[str, float]] = {}
        for m in sorted(set(mods)) + ["all"]:
            sel = [i for i in timed_idx if m == "all" or mods[i] == m]
            allq = [i for i in range(len(harness)) if m == "all" or mods[i] == m]
            s, w, e = [sys_t[i] for i in sel], [raw_t[i] for i in sel], [e2e_t[i] for i in sel]
            rd = [read_t[i] for i in sel]
            figs[m] = {
                "system_p50_us": _pct(s, 50) * 1e6,
                "system_p95_us": _pct(s, 95) * 1e6,
                "raw_p50_us": _pct(w, 50) * 1e6,
                "raw_p95_us": _pct(w, 95) * 1e6,
                "p50_ratio": _pct(s, 50) / _pct(w, 50),
                "p95_ratio": _pct(s, 95) / _pct(w, 95),
                "sum_ratio": float(sum(s) / sum(w)),
                "read_p50_us": _pct(rd, 50) * 1e6,
                "read_p95_us": _pct(rd, 95) * 1e6,
                "read_p50_ratio": _pct(s, 50) / _pct(rd, 50),
                "read_p95_ratio": _pct(s, 95) / _pct(rd, 95),
                "e2e_p50_us": _pct(e, 50) * 1e6,
                "e2e_p95_us": _pct(e, 95) * 1e6,
                "e2e_p50_ratio": _pct(s, 50) / _pct(e, 50),
                "e2e_p95_ratio": _pct(s, 95) / _pct(e, 95),
                "harness_us_per_query": sum(harness[i] for i in allq) / len(allq) * 1e6,
                "runner_system_us_per_query": sum(inside[i] for i in allq) / len(allq) * 1e6,
                "floor_p50_ratio": _pct(rd, 50) / _pct(w, 50),
                "floor_p95_ratio": _pct(rd, 95) / _pct(w, 95),
                "harness_share": sum(harness[i] for i in allq) / sum(inside[i] for i in allq),
                "write_share": sum(write_t[i] for i in allq) / sum(inside[i] for i in allq),
                "rest_share": sum(harness[i] - write_t[i] for i in allq)
                / sum(inside[i] for i in allq),
                "finish_ms": finish * 1e3,
            }
        per_rep.append(figs)
        print(
            f"repeat {rep + 1}/{repeats}: "
            + "; ".join(
                f"{m} p50 {f['p50_ratio']:.2f}x p95 {f['p95_ratio']:.2f}x (search + read "
                f"{f['read_p50_ratio']:.2f}x {f['read_p95_ratio']:.2f}x; end to end "
                f"{f['e2e_p50_ratio']:.2f}x {f['e2e_p95_ratio']:.2f}x; floor "
                f"{f['floor_p50_ratio']:.2f}x {f['floor_p95_ratio']:.2f}x) harness "
                f"{f['harness_share']:.2f}x (line writes {f['write_share']:.2f}x, the rest "
                f"{f['rest_share']:.2f}x)"
                for m, f in figs.items()
            ),
            file=sys.stderr,
        )

    out = {m: {k: _mmm([rep[m][k] for rep in per_rep]) for k in per_rep[0][m]} for m in per_rep[0]}
    counts = {
        m: {
            "queries": sum(1 for x in mods if m == "all" or x == m),
            "timed": sum(1 for i in timed_idx if m == "all" or mods[i] == m),
        }
        for m in out
    }
    return {
        "modalities": modalities,
        "repeats": repeats,
        "atoms": len(atoms),
        "ingest_seconds": round(ingest_s, 1),
        "counts": counts,
        "figures": out,
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
    }


def table(res: dict) -> str:
    rows = [
        "| modality | queries | system p50 / p95 (µs) | raw search p50 / p95 (µs) | "
        "system / raw, p50 | p95 | search + read p50 / p95 (µs) | system / (search + read), "
        "p50 | p95 | floor: (search + read) / raw, p50 | p95 | end to end p50 / p95 (µs) | "
        "system / end to end, p50 | p95 | harness / system | of which line writes | "
        "the rest |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
        "| --- | --- | --- |",
    ]
    for m, f in res["figures"].items():
        c = res["counts"][m]
        med = {k: v["median"] for k, v in f.items()}

        def r(k: str) -> str:
            return f"{f[k]['median']:.2f}x ({f[k]['min']:.2f}-{f[k]['max']:.2f})"

        n = f"{c['queries']}" + (f" ({c['timed']} timed)" if c["timed"] != c["queries"] else "")
        rows.append(
            f"| {m} | {n} | {med['system_p50_us']:.0f} / {med['system_p95_us']:.0f} | "
            f"{med['raw_p50_us']:.0f} / {med['raw_p95_us']:.0f} | {r('p50_ratio')} | "
            f"{r('p95_ratio')} | {med['read_p50_us']:.0f} / {med['read_p95_us']:.0f} | "
            f"{r('read_p50_ratio')} | {r('read_p95_ratio')} | "
            f"{r('floor_p50_ratio')} | {r('floor_p95_ratio')} | "
            f"{med['e2e_p50_us']:.0f} / {med['e2e_p95_us']:.0f} | "
            f"{r('e2e_p50_ratio')} | {r('e2e_p95_ratio')} | {r('harness_share')} | "
            f"{r('write_share')} | {r('rest_share')} |"
        )
    la = ", ".join(f"{x:.2f}" for x in res["load_average"])
    fin = res["figures"]["all"]["finish_ms"]
    rows.append(
        f"\nmedian (min-max) over {res['repeats']} interleaved repeats; CPU time; load "
        f"average {la} on {res['cpus']} CPUs; after the last query the run took "
        f"{fin['median']:.1f} ms ({fin['min']:.1f}-{fin['max']:.1f}) to finish (not in "
        "the harness per query)"
    )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=Path, default=REPO / "bench" / "sets")
    ap.add_argument(
        "--corpus",
        type=Path,
        default=Path(os.environ.get("MEMBENCH_CORPUS", REPO / ".." / "shared" / "corpus")),
    )
    ap.add_argument(
        "--modality",
        action="append",
        default=None,
        help="repeatable; default: conversation and code",
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error("--repeats must be >= 1")
    if not (a.sets / "items.jsonl").exists():
        ap.error(f"{a.sets}: no sets (make sets)")
    res = measure(a.sets, a.corpus.resolve(), a.modality or list(DEFAULT_MODALITIES), a.repeats)
    if a.json:
        a.json.write_text(json.dumps(res, indent=2) + "\n")
    print(table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
