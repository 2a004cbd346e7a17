"""``membench trec-eval QRELS RUN``: membench's TREC engine (:mod:`membench.metrics.trec`) on
plain TREC files, with trec_eval's argument order, measure names and output format.

Output: one line per measure, ``name \\t qid|all \\t value`` (trec_eval's ``%-22s\\t%s\\t%6.4f``,
counts as integers); with ``-q`` every evaluated query's lines first (queries in qid order),
then the ``all`` lines. Measures (``-m``, repeatable, trec_eval's ``name.cutoff,cutoff``
syntax; ``recall_10`` is taken too):

* ``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret`` (``all``: sums; ``num_q``: the count)
* ``map``, ``recip_rank``, ``P.k``, ``recall.k``, ``ndcg_cut.k`` (graded gains: the qrels
  relevance, discount ``1/log2(rank + 1)``, ideal DCG from the qrels grades)

with trec_eval's defaults for the cutoffs (5, 10, 15, 20, 30, 100, 200, 500, 1000). Without
``-m``: :data:`DEFAULT_MEASURES` (not trec_eval's longer default set).

Which queries: like trec_eval, the queries present in both the run and the qrels (a query
judged with grade 0 only is evaluated and scores 0); with ``-c``, every qrels query, a missing
one evaluated as trec_eval does (``trec_eval.c``: against an empty ranking), so it prints its
lines with ``-q``, scores 0 on every measure but ``num_rel``, and its relevant documents count
in ``num_rel``. Relevant = relevance >= 1.

Reading: strict by default (membench's rules, :mod:`membench.metrics.trec`); ``compat`` (the
CLI's ``--trec-eval-compat``) reads as trec_eval does: run fields after the sixth ignored,
blank run lines and lines starting with ``#`` skipped, qrels lines with ``#`` in column 1
skipped (``docs/runs.md`` records why this is a switch, not the default).

Ranking: membench's rule (:data:`membench.run.protocol.TIE_BREAKING`: score, then the rank
column, then line order; a repeated docid counts at its first position) unless ``--ties
trec_eval``: scores as 32-bit floats, descending, then docid descending, as trec_eval does, so
that the output equals trec_eval's (tested line by line against pytrec_eval). trec_eval refuses
a run that repeats a docid within a query; membench keeps its first position in either mode.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..core.errors import MembenchError
from .trec import CHUNK_BYTES, TIES, _scan_run

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
COUNTS = ("num_q", "num_ret", "num_rel", "num_rel_ret")
SINGLE = ("map", "recip_rank")
CUT = ("P", "recall", "ndcg_cut")
DEFAULT_MEASURES = ("num_q", "num_ret", "num_rel", "num_rel_ret", "map", "recip_rank", "P.10",
                    "recall.10,100,1000", "ndcg_cut.10")


def parse_measures(specs: Sequence[str] | None) -> list[str]:
    """``["recall.10,100", "map"]`` -> ``["recall_10", "recall_100", "map"]`` (trec_eval's
    names, in the order given, each once); a name membench does not compute is a
    :class:`MembenchError` listing the ones it does."""
    out: list[str] = []
    for spec in specs or DEFAULT_MEASURES:
        for part in spec.split() if " " in spec else [spec]:
            name, _, params = part.partition(".")
            if not params and "_" in name and name.rsplit("_", 1)[0] in CUT \
                    and name.rsplit("_", 1)[1].isdigit():
                name, params = name.rsplit("_", 1)
            if name in COUNTS or name in SINGLE:
                if params:
                    raise MembenchError(f"trec-eval: {name} takes no cutoff (got {part!r})")
                names = [name]
            elif name in CUT:
                try:
                    cuts = [int(c) for c in params.split(",")] if params else list(CUTOFFS)
                except ValueError:
                    raise MembenchError(f"trec-eval: cutoffs must be integers: {part!r}") \
                        from None
                if any(c <= 0 for c in cuts) or len(set(cuts)) != len(cuts):
                    raise MembenchError(f"trec-eval: cutoffs must be positive, without "
                                        f"duplicates: {part!r}")
                names = [f"{name}_{c}" for c in cuts]
            else:
                raise MembenchError(
                    f"trec-eval: unknown measure {name!r}; membench computes "
                    f"{', '.join(COUNTS + SINGLE)}, {', '.join(c + '.k' for c in CUT)}")
            out.extend(n for n in names if n not in out)
    return out


def _per_query(run, names: list[str],
               queries: np.ndarray) -> dict[str, np.ndarray]:
    """Each measure for the query indices ``queries`` (every one a qrels query)."""
    nq = len(queries)
    slot = np.full(len(run.qids) + 1, -1, dtype=np.int64)
    slot[queries] = np.arange(nq)
    ret = np.zeros(nq, dtype=np.int64)
    has = slot[run.ret_q] >= 0
    np.add.at(ret, slot[run.ret_q[has]], run.ret_n[has])
    n_rel = run.n_relevant[queries]
    keep = (run.judged_rank > 0) & (slot[run.judged_q] >= 0)
    jq, jr, jg = slot[run.judged_q[keep]], run.judged_rank[keep], run.judged_rel[keep]
    rel = jg >= 1
    rq, rr = jq[rel], jr[rel]
    o = np.lexsort((rr, rq))
    rq, rr = rq[o], rr[o]
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for name in names:
            if name == "num_q":
                out[name] = np.ones(nq, dtype=np.int64)
            elif name == "num_ret":
                out[name] = ret
            elif name == "num_rel":
                out[name] = n_rel
            elif name == "num_rel_ret":
                out[name] = np.bincount(rq, minlength=nq).astype(np.int64)
            elif name == "recip_rank":
                best = np.full(nq, np.inf)
                np.minimum.at(best, rq, rr.astype(np.float64))
                out[name] = 1.0 / best
            elif name == "map":
                # position of each relevant retrieved doc among its query's, 1-based
                start = np.searchsorted(rq, np.arange(nq))
                pos = np.arange(len(rq)) - start[rq] + 1
                s = np.bincount(rq, weights=pos / rr, minlength=nq)
                out[name] = np.where(n_rel > 0, s / np.maximum(n_rel, 1), 0.0)
            else:
                kind, k = name.rsplit("_", 1)
                k = int(k)
                if kind == "P":
                    out[name] = np.bincount(rq[rr <= k], minlength=nq) / k
                elif kind == "recall":
                    hit = np.bincount(rq[rr <= k], minlength=nq)
                    out[name] = np.where(n_rel > 0, hit / np.maximum(n_rel, 1), 0.0)
                else:
                    out[name] = _ndcg(run, queries, jq, jr, jg, k)
    return out


def _ndcg(run, queries, jq, jr, jg, k) -> np.ndarray:
    nq = len(queries)
    inside = (jr <= k) & (jg > 0)
    dcg = np.bincount(jq[inside], weights=jg[inside] / np.log2(jr[inside] + 1.0), minlength=nq)
    slot = np.full(run.n_qrels_queries, -1, dtype=np.int64)
    slot[queries] = np.arange(nq)
    sel = (run.qrels_rel > 0) & (slot[run.qrels_q] >= 0)
    qs, gs = slot[run.qrels_q[sel]], run.qrels_rel[sel].astype(np.float64)
    o = np.lexsort((-gs, qs))
    qs, gs = qs[o], gs[o]
    pos = np.arange(len(qs)) - np.searchsorted(qs, np.arange(nq))[qs]   # 0-based, best first
    top = pos < k
    ideal = np.bincount(qs[top], weights=gs[top] / np.log2(pos[top] + 2.0), minlength=nq)
    return np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0)


def _fmt(name: str, qid: str, value: float) -> str:
    if name in COUNTS:
        return f"{name:<22}\t{qid}\t{int(value)}"
    return f"{name:<22}\t{qid}\t{value:6.4f}"


def trec_eval_values(qrels_path: str | os.PathLike, run_path: str | os.PathLike,
                     measures: Sequence[str] | None = None, *, complete: bool = False,
                     ties: str = "membench", compat: bool = False
                     ) -> tuple[list[str], dict[str, dict[str, float]], dict[str, float]]:
    """``(measure names, {qid: {name: value}}, {name: value over all})``: what
    :func:`trec_eval` prints, unrounded (queries in qid order). ``complete`` (trec_eval
    ``-c``): every qrels query is evaluated, one missing from the run as an empty ranking
    (every measure 0 but ``num_rel``, its relevant documents, as trec_eval counts them);
    ``compat``: read the files as trec_eval does (module docstring)."""
    if ties not in TIES:
        raise MembenchError(f"trec-eval: --ties must be one of {', '.join(TIES)}")
    names = parse_measures(measures)
    run = _scan_run(Path(run_path), Path(qrels_path), CHUNK_BYTES, ties, keep_lines=False,
                    compat=compat)
    in_run = np.zeros(len(run.qids), dtype=bool)
    in_run[run.ret_q] = True
    judged = np.arange(run.n_qrels_queries)
    chosen = judged if complete else judged[in_run[judged]]
    evaluated = np.asarray(sorted(chosen.tolist(), key=lambda i: run.qids[i].encode("utf-8")),
                           dtype=np.int64)
    per = _per_query(run, names, evaluated)
    rows = {run.qids[qi]: {m: per[m][i].item() for m in names if m != "num_q"}
            for i, qi in enumerate(evaluated.tolist())}
    n = len(evaluated)
    total: dict[str, float] = {}
    for m in names:
        if m == "num_q":
            total[m] = n
        elif m in COUNTS:
            total[m] = int(per[m].sum())
        else:
            total[m] = float(per[m].sum()) / n if n else 0.0
    return names, rows, total


def trec_eval(qrels_path: str | os.PathLike, run_path: str | os.PathLike,
              measures: Sequence[str] | None = None, *, per_query: bool = False,
              complete: bool = False, ties: str = "membench",
              compat: bool = False) -> Iterator[str]:
    """The output lines of ``membench trec-eval`` (see the module docstring)."""
    names, rows, total = trec_eval_values(qrels_path, run_path, measures, complete=complete,
                                          ties=ties, compat=compat)
    if per_query:
        for qid, values in rows.items():
            for m, v in values.items():
                yield _fmt(m, qid, v)
    for m in names:
        yield _fmt(m, "all", total[m])
