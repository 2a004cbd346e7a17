"""``membench trec-eval QRELS RUN``: trec_eval 10.0's semantics on membench's TREC engine
(:mod:`membench.trec.read`, :mod:`membench.trec.evaluate`), with trec_eval's options, measure
names, order and output (docs/runs.md, "What trec_eval's semantics means here", gives each rule
and its source in trec_eval's C code).

Start at :func:`trec_eval` (and :func:`main` for the command line). By default its output is
trec_eval's line for line (checked against the C program, ``tests/test_trec_eval_conformance.py``):
ranking by score descending (doubles), then docid descending (``ties="trec_eval"``); reading as
trec_eval does (``compat``: scores by ``atof``, relevance by ``atol``,
:func:`membench.core.textfiles.c_atof`); its refusals (``lenient=False``) as located errors with
its exit status (:func:`exit_status`); options ``-q``, ``-c`` (``complete``), ``-l``
(``level``), ``-M`` (``max_docs``), ``-J`` (``judged_only``), ``-m`` (:func:`parse_request`);
output ``%-22s\\t%s\\t%6.4f`` in trec_eval's table order, per query (``-q``) in qid order
without ``runid``, ``num_q``, ``gm_map``.

Measures (:data:`MEASURES`): ``runid``, ``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret``,
``map``, ``gm_map``, ``Rprec``, ``bpref``, ``recip_rank``, ``iprec_at_recall``, ``P``,
``recall``, ``Rprec_mult``, ``ndcg_cut``, ``map_cut``, ``success``, ``set_P``, ``set_recall``,
``set_map``, ``set_F``, ``num_nonrel_judged_ret``; any other trec_eval measure, or a nickname
holding one (``all_trec``), is refused by name (:data:`NOT_IMPLEMENTED`).

Other rules, asked for by name: ``ties="membench"``
(:data:`membench.contract.protocol.TIE_BREAKING`), ``ties="trec_eval9"`` (scores as 32-bit
floats, as trec_eval 9 and pytrec_eval), ``compat=False`` (membench's strict reading),
``lenient=True`` (no refusal, as trec_eval 9 and pytrec_eval). Touches: reads the two files.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import EXIT_DISK_FULL, EXIT_INTERRUPTED, EXIT_OK, InputError, MembenchError
from ..core.textfiles import C_LONG_MAX, C_LONG_MIN, c_atof, c_atol

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RPREC_MULTIPLES = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
RECALL_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
COUNTS = ("num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret")

# trec_eval 10.0's measure table (measures.c), in its order: the order of its output
TREC_EVAL_TABLE = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
    "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref",
    "Rprec_mult", "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel",
    "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_relative_P",
    "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "prefs_num_prefs_poss",
    "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair",
    "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret",
    "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp",
    "prefs_avgjg_imp", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg", "yaap", "rbp", "rbp_resid",
    "unj")
# its nicknames (measures.c)
NICKNAMES = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map",
                 "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P",
            "set_recall", "set_relative_P", "set_map", "set_F"),
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map",
                 "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P", "relstring", "recall",
                 "unj", "rbp", "rbp_resid", "infAP", "gm_bpref", "utility", "11pt_avg", "ndcg",
                 "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel",
                 "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map",
                 "set_F", "num_nonrel_judged_ret"),
    "all_prefs": ("runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful",
                  "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair", "prefs_avgjg",
                  "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret",
                  "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp",
                  "prefs_avgjg_imp"),
    "prefs": ("runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful",
              "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair", "prefs_avgjg"),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
}


@dataclass(frozen=True)
class Measure:
    """One trec_eval measure membench computes: ``kind`` says its parameters (``none``,
    ``cutoffs``: document counts, ``points``: recall levels, ``weight``: one number read by
    ``atof``, the name taking the parameter text as given) and how it is summed (``count``:
    a sum; ``mean``; ``gm``: a geometric mean; ``runid``); ``default``: trec_eval's
    parameters; ``definition``: where trec_eval defines it."""

    name: str
    kind: str
    summary: str
    default: tuple = ()
    definition: str = ""


MEASURES: dict[str, Measure] = {m.name: m for m in (
    Measure("runid", "none", "runid", definition="m_runid.c: the tag of the run's last line"),
    Measure("num_q", "none", "count", definition="m_num_q.c: queries evaluated"),
    Measure("num_ret", "none", "count", definition="m_num_ret.c: documents retrieved"),
    Measure("num_rel", "none", "count", definition="m_num_rel.c: relevant documents "
            "(relevance >= level); with -c the summary counts relevance > 0 over the qrels"),
    Measure("num_rel_ret", "none", "count", definition="m_num_rel_ret.c: relevant retrieved"),
    Measure("map", "none", "mean", definition="m_map.c: mean of the precision at each "
            "relevant document retrieved, over the relevant documents"),
    Measure("gm_map", "none", "gm", definition="m_gm_map.c: geometric mean over queries of "
            "map, floored at 0.00001; summary only"),
    Measure("Rprec", "none", "mean", definition="m_Rprec.c: precision after R documents "
            "(R = num_rel; min(R, num_ret) looked at)"),
    Measure("bpref", "none", "mean", definition="m_bpref.c: per relevant document retrieved, "
            "1 - min(judged nonrelevant above it, R) / min(judged nonrelevant, R), over R"),
    Measure("recip_rank", "none", "mean", definition="m_recip_rank.c: 1 / rank of the first "
            "relevant document"),
    Measure("iprec_at_recall", "points", "mean", RECALL_POINTS, "m_iprec_at_recall.c: "
            "interpolated precision at recall levels (level x R rounded, lround)"),
    Measure("P", "cutoffs", "mean", CUTOFFS, "m_P.c: relevant in the first k, over k"),
    Measure("Rprec_mult", "points", "mean", RPREC_MULTIPLES, "m_Rprec_mult.c: precision "
            "after k = (long)(x R + 0.9) documents, x a multiple of R (num_rel); 0 when k <= 0"),
    Measure("recall", "cutoffs", "mean", CUTOFFS, "m_recall.c: relevant in the first k, "
            "over R"),
    Measure("ndcg_cut", "cutoffs", "mean", CUTOFFS, "m_ndcg_cut.c: DCG of the first k "
            "(gain = the qrels relevance, 1/log2(rank + 1)) over the ideal DCG at k"),
    Measure("map_cut", "cutoffs", "mean", CUTOFFS, "m_map_cut.c: map of the first k"),
    Measure("success", "cutoffs", "mean", (1, 5, 10), "m_success.c: 1 if a relevant "
            "document is in the first k"),
    Measure("set_P", "none", "mean", definition="m_set_P.c: num_rel_ret / num_ret"),
    Measure("set_recall", "none", "mean", definition="m_set_recall.c: num_rel_ret / R"),
    Measure("set_map", "none", "mean", definition="m_set_map.c: set_P x set_recall"),
    Measure("set_F", "weight", "mean", definition="m_set_F.c: (x + 1) P R / (x P + R) of "
            "set_P and set_recall, x the weight of recall (default 1; set_F.0.5 prints "
            "set_F_0.5)"),
    Measure("num_nonrel_judged_ret", "none", "count", definition="m_num_nonrel_judged_ret.c:"
            " judged nonrelevant documents retrieved"),
)}
NOT_IMPLEMENTED = tuple(m for m in TREC_EVAL_TABLE if m not in MEASURES)
DEFAULT_MEASURES = ("official",)

# trec_eval 10.0's exit statuses (trec_eval.c), which the command follows where it has them;
# membench's own (EXIT_OK, EXIT_DISK_FULL, EXIT_INTERRUPTED) from core/errors.py (docs/runs.md)
EXIT_ILLEGAL_MEASURE = 1    # not one of trec_eval's measures, "name." without parameters,
EXIT_USAGE = 1              # "P_5"; an unknown option or a wrong number of arguments
EXIT_CANNOT_READ = 2        # an empty (or unreadable) qrels or run; membench's other refusals
EXIT_QUERY_REFUSED = 4      # a docid twice in an evaluated query, a qrels query not in the run
_EXIT_BY_RULE = {"DUPLICATE_DOC": EXIT_QUERY_REFUSED, "MISSING_QUERY": EXIT_QUERY_REFUSED,
                 "NO_RUN_LINE": EXIT_QUERY_REFUSED}


class IllegalMeasure(MembenchError):
    """A ``-m`` value trec_eval itself refuses ("illegal measure": exit status 1)."""


@dataclass
class Request:
    """Measures asked for, in trec_eval's order, with their parameters."""

    measures: list[tuple[str, tuple]]

    def names(self) -> list[str]:
        out = []
        for m, params in self.measures:
            kind = MEASURES[m].kind
            if kind == "cutoffs":
                out += [f"{m}_{k}" for k in params]
            elif kind == "points":
                out += [f"{m}_{x:3.2f}" for x in params]
            elif kind == "weight" and params:
                out.append(f"{m}_{params[0]}")
            else:
                out.append(m)
        return out


def _params(name: str, kind: str, text: str, spec: str) -> tuple:
    if kind == "weight":            # m_set_F.c: atof of the first value, the text in the name
        return (text, c_atof(text.split(",")[0]))
    parts = text.split(",")
    if kind == "cutoffs":
        vals = [c_atol(p) for p in parts]
        if any(v <= 0 for v in vals):
            raise MembenchError(f"trec-eval: -m {spec}: cutoffs must be positive (trec_eval: "
                                "'Negative cutoff detected')")
    else:                           # meas_init.c get_double_cutoffs: atof, no range check
        vals = [c_atof(p) for p in parts]
        if any(v != v for v in vals):
            raise MembenchError(f"trec-eval: -m {spec}: a parameter reads as NaN")
    vals.sort()
    if len(set(vals)) != len(vals):
        raise MembenchError(f"trec-eval: -m {spec}: duplicate cutoffs (trec_eval: 'duplicate "
                            "cutoffs detected')")
    return tuple(vals)


def parse_request(specs: Sequence[str] | None) -> Request:
    """trec_eval's ``-m`` arguments (each ``name``, ``name.p1,p2`` or a nickname; a measure
    asked twice is printed once, with the parameters given first, as trec_eval does; ``P_5``
    is an illegal measure, as in trec_eval) -> the measures in trec_eval's table order. A measure or nickname
    membench does not compute is a :class:`MembenchError` naming what is missing."""
    chosen: dict[str, tuple | None] = {}
    for spec in specs or DEFAULT_MEASURES:
        for part in spec.split():
            name, dot, params = part.partition(".")
            if dot and not params:
                raise IllegalMeasure(f"trec-eval: illegal measure {part!r}: no parameter after "
                                     "the '.' (trec_eval: 'improper measure in parameter')")
            if not dot and name not in MEASURES and name not in NICKNAMES and "_" in name:
                base = name.rpartition("_")[0]
                if base in MEASURES and MEASURES[base].kind != "none":
                    raise IllegalMeasure(f"trec-eval: illegal measure {name!r}: parameters "
                                         f"follow a '.' (-m {base}.{name[len(base) + 1:]}), "
                                         "as trec_eval reads them")
            if name in NICKNAMES:
                missing = [m for m in NICKNAMES[name] if m not in MEASURES]
                if missing:
                    raise MembenchError(
                        f"trec-eval: -m {name}: membench does not compute "
                        f"{', '.join(missing)} (of trec_eval's '{name}' set); ask for the "
                        f"measures it has by name (docs/metrics.md lists both)")
                for m in NICKNAMES[name]:
                    chosen.setdefault(m, None)
                continue
            if name not in MEASURES:
                if name in TREC_EVAL_TABLE:
                    raise MembenchError(f"trec-eval: -m {part}: trec_eval's {name} is not "
                                        "computed by membench (docs/metrics.md lists what is)")
                raise IllegalMeasure(f"trec-eval: illegal measure {name!r} (not trec_eval's); "
                                    f"membench computes {', '.join(MEASURES)}")
            kind = MEASURES[name].kind
            if params and kind != "none":
                if chosen.get(name) is None:
                    chosen[name] = _params(name, kind, params, part)
            else:
                chosen.setdefault(name, None)
    return Request([(m, chosen[m] if chosen[m] is not None else MEASURES[m].default)
                    for m in TREC_EVAL_TABLE if m in chosen])


def parse_measures(specs: Sequence[str] | None) -> list[str]:
    """The output names of ``specs`` (``["recall.10,100", "map"]`` -> ``["map",
    "recall_10", "recall_100"]``: trec_eval's order)."""
    return parse_request(specs).names()


# --------------------------------------------------------------------------- evaluation


@dataclass
class _Judged:
    """Per evaluated query (slot): retrieved count; per judged retrieved line (sorted by
    slot, then rank): slot, rank, relevance."""

    ret: np.ndarray
    q: np.ndarray
    rank: np.ndarray
    rel: np.ndarray


def _lround(x: float) -> int:
    """C's ``lround`` for x >= 0: halves away from zero (exact: ``x - floor(x)`` is)."""
    f = math.floor(x)
    return int(f) + (1 if x - f >= 0.5 else 0)


def _sum(v: np.ndarray) -> float:
    """Left to right, in query order, as trec_eval's accumulation adds."""
    return float(np.cumsum(v, dtype=np.float64)[-1]) if len(v) else 0.0


def _values(j: _Judged, n_rel: np.ndarray, n_nonrel: np.ndarray, ideal: tuple,
            request: Request, level: int) -> dict[str, np.ndarray]:
    nq = len(j.ret)
    isrel = j.rel >= level
    rq, rr = j.q[isrel], j.rank[isrel]
    # position of each relevant retrieved document among its query's (1-based)
    first = np.searchsorted(rq, np.arange(nq))
    kth = (np.arange(len(rq)) - first[rq] + 1).astype(np.float64)
    nrr = np.bincount(rq, minlength=nq).astype(np.int64)
    out: dict[str, np.ndarray] = {}
    safe_rel = np.maximum(n_rel, 1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        for m, params in request.measures:
            if m in ("runid", "num_q"):
                continue
            if m == "num_ret":
                out[m] = j.ret
            elif m == "num_rel":
                out[m] = n_rel
            elif m == "num_rel_ret":
                out[m] = nrr
            elif m == "num_nonrel_judged_ret":
                nonrel = (j.rel >= 0) & (j.rel < level)
                out[m] = np.bincount(j.q[nonrel], minlength=nq).astype(np.int64)
            elif m in ("map", "gm_map"):
                s = np.bincount(rq, weights=kth / rr, minlength=nq)
                ap = np.where(nrr > 0, s / safe_rel, 0.0)
                out[m] = ap if m == "map" else np.log(np.maximum(ap, 0.00001))
            elif m == "Rprec":
                look = np.minimum(j.ret, n_rel)
                hit = np.bincount(rq[rr <= look[rq]], minlength=nq)
                out[m] = np.where(look > 0, hit / safe_rel, 0.0)
            elif m == "bpref":
                out[m] = _bpref(j, n_rel, n_nonrel, level)
            elif m == "recip_rank":
                best = np.full(nq, np.inf)
                np.minimum.at(best, rq, rr.astype(np.float64))
                out[m] = np.where(np.isfinite(best), 1.0 / best, 0.0)
            elif m == "iprec_at_recall":
                vals = _iprec(rq, rr, nrr, j.ret, n_rel, params)
                for i, x in enumerate(params):
                    out[f"{m}_{x:3.2f}"] = vals[:, i]
            elif m == "Rprec_mult":
                for x in params:
                    out[f"{m}_{x:3.2f}"] = _rprec_mult(rq, rr, nrr, j.ret, n_rel, x)
            elif m in ("P", "recall", "map_cut", "success", "ndcg_cut"):
                for k in params:
                    inside = rr <= k
                    name = f"{m}_{k}"
                    if m == "P":
                        out[name] = np.bincount(rq[inside], minlength=nq) / float(k)
                    elif m == "recall":
                        hit = np.bincount(rq[inside], minlength=nq)
                        out[name] = np.where(n_rel > 0, hit / safe_rel, 0.0)
                    elif m == "success":
                        out[name] = (np.bincount(rq[inside], minlength=nq) > 0) * 1.0
                    elif m == "map_cut":
                        s = np.bincount(rq[inside], weights=(kth / rr)[inside], minlength=nq)
                        out[name] = np.where(n_rel > 0, s / safe_rel, 0.0)
                    else:
                        out[name] = _ndcg(j, ideal, k)
            elif m in ("set_P", "set_recall", "set_map", "set_F"):
                sp = np.where(j.ret > 0, nrr / np.maximum(j.ret, 1), 0.0)
                sr = np.where(n_rel > 0, nrr / safe_rel, 0.0)
                if m == "set_P":
                    out[m] = sp
                elif m == "set_recall":
                    out[m] = sr
                elif m == "set_map":    # nrr^2 / (ret x R), computed as trec_eval does
                    out[m] = np.where((j.ret > 0) & (n_rel > 0), (nrr * 1.0 * nrr) /
                                      (np.maximum(j.ret, 1) * 1.0 * safe_rel), 0.0)
                else:        # m_set_F.c: (x + 1) P R / (x P + R), x = its parameter
                    x = params[1] if params else 1.0
                    out[f"{m}_{params[0]}" if params else m] = np.where(nrr > 0, (x + 1.0) * sp * sr / (x * sp + sr), 0.0)
    return out


def _bpref(j: _Judged, n_rel: np.ndarray, n_nonrel: np.ndarray, level: int) -> np.ndarray:
    nq = len(j.ret)
    judged = j.rel >= 0                       # in the pool and judged (rel < 0: unjudged)
    q, rel = j.q[judged], j.rel[judged]
    nonrel = rel < level
    c = np.cumsum(nonrel)
    first = np.searchsorted(q, np.arange(nq))
    before = c - nonrel - np.concatenate([[0], c])[first[q]]       # nonrel above, same query
    isrel = ~nonrel
    qr, nb = q[isrel], before[isrel].astype(np.float64)
    R = n_rel[qr].astype(np.float64)
    denom = np.minimum(n_nonrel[qr], n_rel[qr]).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        term = np.where(nb > 0, 1.0 - np.minimum(nb, R) / np.where(denom > 0, denom, 1.0), 1.0)
    s = np.bincount(qr, weights=term, minlength=nq)
    return np.where(n_rel > 0, s / np.maximum(n_rel, 1), s)


def _iprec(rq: np.ndarray, rr: np.ndarray, nrr: np.ndarray, ret: np.ndarray,
           n_rel: np.ndarray, points: tuple) -> np.ndarray:
    """m_iprec_at_recall.c: interpolated precision (the best precision at or after the
    k-th relevant document retrieved) at k = lround(level x R)."""
    nq = len(ret)
    out = np.zeros((nq, len(points)))
    starts = np.searchsorted(rq, np.arange(nq + 1))
    for q in np.flatnonzero(nrr > 0).tolist():
        a, b = int(starts[q]), int(starts[q + 1])
        p = (np.arange(1, b - a + 1, dtype=np.float64) / rr[a:b])
        best = np.maximum.accumulate(p[::-1])[::-1]          # best at or after k (0-based)
        R = int(n_rel[q])
        for i, x in enumerate(points):
            k = _lround(x * R)
            if k > b - a:
                continue
            out[q, i] = best[max(k, 1) - 1]
    # nothing retrieved: trec_eval's starting precision is 0/0, a NaN that the levels rounding
    # to 0 relevant documents take (printed "-nan", as glibc prints it)
    empty = ret == 0
    if empty.any():
        for q in np.flatnonzero(empty).tolist():
            R = int(n_rel[q])
            for i, x in enumerate(points):
                if _lround(x * R) == 0:
                    out[q, i] = _NEG_NAN
    return out


def _rprec_mult(rq: np.ndarray, rr: np.ndarray, nrr: np.ndarray, ret: np.ndarray,
                n_rel: np.ndarray, x: float) -> np.ndarray:
    """m_Rprec_mult.c at multiple ``x``: per query k = (long)(x R + 0.9) (C's cast truncates
    toward zero); precision after k documents (relevant retrieved over k past the last one
    retrieved), 0 when k <= 0."""
    k = np.trunc(x * n_rel.astype(np.float64) + 0.9)
    kq = k[rq]
    hit = np.bincount(rq[rr <= kq], minlength=len(ret)).astype(np.float64)
    return np.where(k > 0, hit / np.maximum(k, 1.0), 0.0)    # past num_ret: hit = nrr


_NEG_NAN = float(np.copysign(np.nan, -1.0))


def _ndcg(j: _Judged, ideal: tuple[np.ndarray, np.ndarray, np.ndarray], k: int) -> np.ndarray:
    """m_ndcg_cut.c at ``k``: ``ideal`` is (query, grade, position) of every judgment with
    grade > 0, best first per query; both sums add in rank order, as trec_eval's loops do."""
    nq = len(j.ret)
    inside = (j.rank <= k) & (j.rel > 0)
    dcg = np.bincount(j.q[inside], weights=j.rel[inside] / np.log2(j.rank[inside] + 1.0),
                      minlength=nq)
    gq, gg, pos = ideal
    top = pos < k
    best = np.bincount(gq[top], weights=gg[top] / np.log2(pos[top] + 2.0), minlength=nq)
    return np.where(best > 0, dcg / np.where(best > 0, best, 1.0), dcg)


def _fmt(name: str, qid: str, value) -> str:
    if isinstance(value, str):
        return f"{name:<22}\t{qid}\t{value}"
    if name in COUNTS:
        return f"{name:<22}\t{qid}\t{int(value)}"
    if value != value:                  # NaN: as C's printf("%6.4f"), sign included
        return f"{name:<22}\t{qid}\t{'-nan' if math.copysign(1.0, value) < 0 else 'nan':>6}"
    return f"{name:<22}\t{qid}\t{value:6.4f}"


def _is_empty(path: str | os.PathLike) -> bool:
    """No byte at all (a stream, which cannot be sized again, counts as empty)."""
    p = Path(path)
    return not p.is_file() or p.stat().st_size == 0


def _last_tag(path: Path) -> str:
    """The sixth field of the run's last line that is not blank or a comment (trec_eval
    keeps the run_id of the last line it reads)."""
    size = path.stat().st_size
    step = 1 << 16
    with open(path, "rb") as f:
        end = size
        tail = b""
        while end > 0:
            start = max(0, end - step)
            f.seek(start)
            tail = f.read(end - start) + tail
            lines = tail.split(b"\n")
            for line in reversed(lines[1:] if start > 0 else lines):
                fields = line.split()
                if fields and not line.lstrip().startswith(b"#") and len(fields) >= 6:
                    return fields[5].decode("utf-8", "replace")
            end = start
            tail = lines[0] if start > 0 else b""
    return ""


def trec_eval_values(qrels_path: str | os.PathLike, run_path: str | os.PathLike,
                     measures: Sequence[str] | None = None, *, complete: bool = False,
                     ties: str = "trec_eval", compat: bool = True, lenient: bool = False,
                     level: int = 1, max_docs: int | None = None, judged_only: bool = False
                     ) -> tuple[list[str], dict[str, dict[str, float]], dict[str, object]]:
    """``(output names, {qid: {name: value}}, {name: summary value})``: what
    :func:`trec_eval` prints, unrounded (queries in qid order); the arguments are its
    options (module docstring)."""
    from .evaluate import TIES, _scan_run
    from .read import CHUNK_BYTES

    if ties not in TIES:
        raise MembenchError(f"trec-eval: --ties must be one of {', '.join(TIES)}")
    if level < 0:
        raise MembenchError(f"trec-eval: -l {level}: the relevance level must be >= 0")
    if max_docs is not None and max_docs < 0:
        raise MembenchError(f"trec-eval: -M {max_docs}: must be >= 0")
    request = parse_request(measures)
    names = request.names()
    run = _scan_run(Path(run_path), Path(qrels_path), CHUNK_BYTES, ties, keep_lines=False,
                    compat=compat, duplicates="first" if lenient else "refuse",
                    max_docs=max_docs)
    if run.n_qrels_queries == 0 and not lenient:
        raise InputError(qrels_path, None, None, "no qrels line: trec_eval refuses an empty "
                         "qrels file ('Cannot read qrels file'); --lenient evaluates against it",
                         rule="EMPTY")
    if run.n_lines == 0 and not lenient:
        if _is_empty(run_path):
            raise InputError(run_path, None, None, "no run line: trec_eval refuses an empty "
                             "run ('Cannot read results file'); --lenient evaluates it",
                             rule="EMPTY")
        raise InputError(run_path, None, None, "no run line (only comments or blank lines): "
                         "trec_eval stops at the first qrels query ('result qid ... not "
                         "found'); --lenient evaluates it", rule="NO_RUN_LINE")
    in_run = np.zeros(len(run.qids), dtype=bool)
    in_run[run.ret_q] = True
    judged = np.arange(run.n_qrels_queries)
    if not complete and not lenient:
        missing = judged[~in_run[judged]]
        if len(missing):
            qid = min((run.qids[i] for i in missing.tolist()), key=lambda s: s.encode())
            raise InputError(qrels_path, None, "qid", f"query {qid!r} ({len(missing)} "
                             f"qrels quer{'y' if len(missing) == 1 else 'ies'} in all) has no "
                             "line in the run: trec_eval 10.0 stops here ('result qid ... not "
                             "found'); -c evaluates it as an empty ranking, --lenient leaves "
                             "it out", rule="MISSING_QUERY")
    chosen = judged if complete else judged[in_run[judged]]
    evaluated = np.asarray(sorted(chosen.tolist(), key=lambda i: run.qids[i].encode("utf-8")),
                           dtype=np.int64)
    nq = len(evaluated)
    slot = np.full(len(run.qids) + 1, -1, dtype=np.int64)
    slot[evaluated] = np.arange(nq)
    # retrieved per query, capped at -M
    ret = np.zeros(nq, dtype=np.int64)
    has = slot[run.ret_q] >= 0
    np.add.at(ret, slot[run.ret_q[has]], run.ret_n[has])
    keep = (run.judged_rank > 0) & (slot[run.judged_q] >= 0)
    jq, jr, jg = slot[run.judged_q[keep]], run.judged_rank[keep], run.judged_rel[keep]
    if max_docs is not None:
        ret = np.minimum(ret, max_docs)
        inside = jr <= max_docs
        jq, jr, jg = jq[inside], jr[inside], jg[inside]
    o = np.lexsort((jr, jq))
    jq, jr, jg = jq[o], jr[o], jg[o]
    if judged_only:             # -J: only judged documents (relevance >= 0), ranked among them
        ok = jg >= 0
        jq, jg = jq[ok], jg[ok]
        first = np.searchsorted(jq, np.arange(nq))
        jr = (np.arange(len(jq)) - first[jq] + 1).astype(np.int64)
        ret = np.bincount(jq, minlength=nq).astype(np.int64)
    # trec_eval -c ranks a missing query as one unjudged document, "ceci_nest_pas_un_docno"
    # (trec_eval.c), then prints num_ret 0: the measures see one retrieved document (none
    # under -J, which removes it, or -M 0)
    bogus = ~in_run[evaluated]
    shown_ret = ret.copy()
    if bogus.any() and not judged_only and (max_docs is None or max_docs >= 1):
        ret[bogus] = 1
    j = _Judged(ret, jq, jr, jg)
    # the qrels of each evaluated query
    qq = slot[run.qrels_q]
    qsel = qq >= 0
    qq, qrel = qq[qsel], run.qrels_rel[qsel]
    n_rel = np.bincount(qq[qrel >= level], minlength=nq).astype(np.int64)
    n_nonrel = np.bincount(qq[(qrel >= 0) & (qrel < level)], minlength=nq).astype(np.int64)
    pos = qrel > 0
    gq, gg = qq[pos], qrel[pos].astype(np.float64)
    og = np.lexsort((-gg, gq))
    gq, gg = gq[og], gg[og]
    ideal = (gq, gg, np.arange(len(gq)) - np.searchsorted(gq, np.arange(nq))[gq])
    per = _values(j, n_rel, n_nonrel, ideal, request, level)
    if "num_ret" in per:
        per["num_ret"] = shown_ret
    single = [n for n in names if n in per and n != "gm_map"]
    qids = [run.qids[i] for i in evaluated.tolist()]
    rows = {qid: {n: per[n][i].item() for n in single} for i, qid in enumerate(qids)}
    total: dict[str, object] = {}
    for n in names:
        if n == "runid":
            total[n] = _last_tag(Path(run_path))
        elif n == "num_q":
            total[n] = nq
        elif n == "num_rel" and complete:
            # trec_eval -c (m_num_rel.c): relevance > 0 over every qrels query, whatever -l
            total[n] = int(np.count_nonzero(run.qrels_rel > 0))
        elif n in COUNTS:
            total[n] = int(per[n].sum())
        elif n == "gm_map":
            total[n] = math.exp(_sum(per[n]) / nq) if nq else 0.0
        else:
            total[n] = _sum(per[n]) / nq if nq else 0.0
    return names, rows, total


def trec_eval(qrels_path: str | os.PathLike, run_path: str | os.PathLike,
              measures: Sequence[str] | None = None, *, per_query: bool = False,
              summary: bool = True, **options) -> Iterator[str]:
    """The output lines of ``membench trec-eval`` (the module docstring; ``summary``: the
    ``all`` lines, trec_eval's ``-n`` turns them off; ``options``: those of
    :func:`trec_eval_values`)."""
    names, rows, total = trec_eval_values(qrels_path, run_path, measures, **options)
    if per_query:
        for qid, values in rows.items():
            for m, v in values.items():
                yield _fmt(m, qid, v)
    if summary:
        for m in names:
            yield _fmt(m, "all", total[m])


# --------------------------------------------------------------------------- the command

TIES_HELP = (
    "how equal scores are ordered. trec_eval (default): trec_eval 10.0's rule, scores "
    "descending (as doubles), then docid descending, the rank column ignored. trec_eval9: "
    "the same with scores compared as 32-bit floats (trec_eval 9, pytrec_eval). membench: "
    "score descending, then the rank column ascending, then line order (the system's own "
    "order of a tie). Example: 'q Q0 a 1 1.0 t' and 'q Q0 b 2 1.0 t' with b relevant give "
    "recip_rank 1.0 by trec_eval's rule (b > a) and 0.5 by membench's (a, then b)")


def _c_long(text: str) -> int:
    """An integer flag as trec_eval reads it into a C ``long``: a value past the 64-bit range is
    clamped to it (``-M 99999999999999999999999``: every document); not an integer: refused."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text[:40]!r}") from None
    return max(C_LONG_MIN, min(C_LONG_MAX, v))


def add_arguments(p) -> None:
    """The ``trec-eval`` command's arguments (on ``p``, an argparse parser), trec_eval's
    letters."""
    p.add_argument("qrels", help="qrels file: qid iter docid rel")
    p.add_argument("run", help="run file: qid Q0 docid rank score tag")
    p.add_argument("-m", dest="measure", action="append", metavar="MEASURE",
                   help="measure, trec_eval style (map / P.5,10 / ndcg_cut.10 / "
                   "iprec_at_recall..1,.5 ...) or nickname (official); repeatable; default: "
                   "official (" + " ".join(NICKNAMES["official"]) + ")")
    p.add_argument("-q", action="store_true", help="also one line per query and measure")
    p.add_argument("-c", action="store_true", help="evaluate every qrels query, as trec_eval "
                   "-c: one missing from the run against an empty ranking")
    p.add_argument("-l", dest="level", type=_c_long, default=1, metavar="LEVEL",
                   help="relevance >= LEVEL is relevant (default 1)")
    p.add_argument("-M", dest="max_docs", type=_c_long, default=None, metavar="N",
                   help="only the first N documents of each ranking")
    p.add_argument("-J", dest="judged_only", action="store_true",
                   help="judged documents only: unjudged ones removed, ranks among the judged")
    p.add_argument("-n", dest="no_summary", action="store_true",
                   help="no summary: the per-query lines only (with -q)")
    p.add_argument("-R", dest="rel_format", default="qrels", metavar="FORMAT",
                   help="relevance format: qrels only (trec_eval's prefs, qrels_prefs and "
                   "qrels_jg are refused: not implemented)")
    p.add_argument("-T", dest="results_format", default="trec_results", metavar="FORMAT",
                   help="results format: trec_results only")
    p.add_argument("-Z", dest="zscores", default=None, metavar="FILE",
                   help="(trec_eval's z-scores: refused, not implemented)")
    p.add_argument("-N", dest="num_docs", default=None, metavar="N",
                   help="(trec_eval's collection size, used by measures membench does not "
                   "compute: refused)")
    p.add_argument("-D", dest="debug", default=None, metavar="LEVEL",
                   help="(trec_eval's debug output: refused, not implemented)")
    p.add_argument("-o", dest="old_format", action="store_true",
                   help="(trec_eval's old output format: refused, not implemented)")
    p.add_argument("--ties", choices=["trec_eval", "trec_eval9", "membench"],
                   default="trec_eval", help=TIES_HELP)
    p.add_argument("--strict", action="store_true",
                   help="membench's strict reading: a run line with fields after the sixth, a "
                   "blank line or a '#' line (a qrels line starting with '#'), a score that is "
                   "not a finite decimal number, a rank or relevance that is not an integer is "
                   "a located error; by default they are read as trec_eval reads them "
                   "(ignored, skipped; scores by C's atof: inf, nan, 0x1p3, 1.5abc; rank and "
                   "relevance by atol: 0x10 is 0, 1.5 is 1)")
    p.add_argument("--lenient", action="store_true",
                   help="no refusal of trec_eval's: a docid repeated for a query counts once "
                   "(its first position), an empty run is evaluated, a qrels query missing "
                   "from the run is left out (as trec_eval 9 and pytrec_eval)")
    p.add_argument("--trec-eval-compat", action="store_true",
                   help="(kept for old command lines: trec_eval's reading is the default)")


def exit_status(e: MembenchError) -> int:
    """trec_eval's exit status for the refusal ``e`` (:data:`EXIT_ILLEGAL_MEASURE`,
    :data:`EXIT_QUERY_REFUSED`; anything else :data:`EXIT_CANNOT_READ`, membench's 2)."""
    if isinstance(e, IllegalMeasure):
        return EXIT_ILLEGAL_MEASURE
    return _EXIT_BY_RULE.get(getattr(e, "rule", ""), EXIT_CANNOT_READ)


def run_command(a) -> int:
    """Print what ``a`` (parsed by :func:`add_arguments`) asks for; a refusal is one line on
    stderr and trec_eval's exit status (:func:`exit_status`)."""
    import sys

    from .parse import note_missing
    try:
        note_missing(sys.stderr)             # without the compiled reader: one line says so
        return _run(a, sys.stdout)
    except MembenchError as e:
        print(f"membench: {e}", file=sys.stderr)
        return exit_status(e)
    except BrokenPipeError:
        raise
    except OSError as e:
        code, line = os_error(e)
        print(f"membench: {line}", file=sys.stderr)
        return code


def os_error(e: OSError) -> tuple[int, str]:
    """The exit status and one line for a file-system error: disk full (no space left or
    quota exceeded, writing the output or a temporary file in TMPDIR) is
    :data:`EXIT_DISK_FULL` (membench's status; trec_eval ignores a failed write and exits 0),
    anything else (a file that cannot be opened or read) :data:`EXIT_CANNOT_READ`, as
    trec_eval's "Quit in file"."""
    import errno

    where = e.filename2 or e.filename or "standard output"
    what = e.strerror or type(e).__name__
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return EXIT_DISK_FULL, (f"{where}: disk full ({what}): the output is incomplete; free "
                                "some space and run it again")
    return EXIT_CANNOT_READ, f"{where}: {what}"


def _run(a, out) -> int:
    if a.rel_format != "qrels":
        raise MembenchError(f"trec-eval: -R {a.rel_format}: membench reads qrels only "
                            "(trec_eval's preference and judgment-group formats are not "
                            "implemented; docs/metrics.md)")
    if a.results_format != "trec_results":
        raise MembenchError(f"trec-eval: -T {a.results_format}: membench reads trec_results "
                            "only")
    if a.zscores is not None:
        raise MembenchError("trec-eval: -Z (z-scores against a topic file): not implemented "
                            "by membench (docs/metrics.md)")
    if a.debug is not None or a.old_format:
        raise MembenchError(f"trec-eval: {'-D' if a.debug is not None else '-o'}: trec_eval's "
                            "debug and old output formats are not implemented by membench")
    if a.num_docs is not None:
        raise MembenchError("trec-eval: -N: no measure membench computes uses the collection "
                            "size; not implemented (docs/metrics.md)")
    summary = not a.no_summary
    for line in trec_eval(a.qrels, a.run, a.measure, per_query=a.q, complete=a.c,
                          ties=a.ties, compat=not a.strict, lenient=a.lenient,
                          level=a.level, max_docs=a.max_docs, judged_only=a.judged_only,
                          summary=summary):
        out.write(line + "\n")
    out.flush()                      # a write error is reported here, not lost at exit
    return EXIT_OK


class _NoPandas:
    """A meta-path finder under which ``import pandas`` fails as when it is not installed
    (:func:`main` keeps pandas out of ``membench trec-eval``'s start-up)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (kept out of membench "
                                      "trec-eval)", name=name)
        return None


def main(argv: Sequence[str]) -> int:
    """``membench trec-eval ARGS`` without the rest of membench's command line: numpy and
    this module only, so that start-up stays a fraction of a second (``membench.launch``).
    Errors as the full command line prints them: one line, a status of docs/runs.md's table."""
    import argparse
    import sys

    class _Parser(argparse.ArgumentParser):
        def error(self, message):            # trec_eval's usage error: status 1
            self.print_usage(sys.stderr)
            self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    p = _Parser(prog="membench trec-eval",
                                description="trec_eval's measures and output on plain TREC "
                                "files (membench's engine; trec_eval 10.0's semantics)")
    add_arguments(p)
    p.add_argument("--quiet", action="store_true", help="(no progress lines are printed)")
    # pyarrow imports pandas (0.3 s of start-up) the first time it converts an array, to look
    # for pandas objects; this process hands it none, so pandas is kept out: an import of it
    # fails as if it were not installed (pyarrow then goes on without it). Not None in
    # sys.modules: pyarrow's compiled import takes that None for the module and fails on it.
    hide = "pandas" not in sys.modules
    blocker = _NoPandas()
    if hide:
        sys.meta_path.insert(0, blocker)
    try:
        return run_command(p.parse_args(list(argv)))
    except MembenchError as e:
        print(f"membench: {e}", file=sys.stderr)
        return exit_status(e)
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        print("membench: stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as e:
        code, line = os_error(e)
        print(f"membench: {line}", file=sys.stderr)
        return code
    finally:
        if hide:
            sys.meta_path.remove(blocker)
