"""trec_eval 10.0's measures as ``membench trec-eval`` computes them: one :class:`TrecMeasure`
record per measure in :data:`MEASURES` (its name, its parameters and trec_eval's defaults, how
it is summed over queries, where trec_eval defines it, and the function that computes it per
query), beside trec_eval's own measure table (:data:`TREC_EVAL_TABLE`: its output order) and
its nicknames (:data:`NICKNAMES`).

Adding a measure is one record here (its compute function beside it) plus a test against
trec_eval's output; :mod:`.trec_eval` parses ``-m``, calls :func:`compute` and
:meth:`TrecMeasure.summed` through this table, and prints. A compute function takes the
evaluated queries (:class:`Scored`) and the measure's parameters and returns one array of
per-query values per output name (:meth:`TrecMeasure.names`), in that order; sums add in query
order, as trec_eval's accumulation does. Touches: nothing (numpy arrays in and out).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RPREC_MULTIPLES = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
RECALL_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

# trec_eval 10.0's measure table (measures.c), in its order: the order of its output
TREC_EVAL_TABLE = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
    "relstring",
    "recall",
    "infAP",
    "gm_bpref",
    "Rprec_mult",
    "utility",
    "11pt_avg",
    "binG",
    "G",
    "dcg",
    "ideal_dcg",
    "ndcg",
    "ndcg_rel",
    "Rndcg",
    "ndcg_cut",
    "map_cut",
    "relative_P",
    "success",
    "set_P",
    "set_relative_P",
    "set_recall",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
    "prefs_num_prefs_poss",
    "prefs_num_prefs_ful",
    "prefs_num_prefs_ful_ret",
    "prefs_simp",
    "prefs_pair",
    "prefs_avgjg",
    "prefs_avgjg_Rnonrel",
    "prefs_simp_ret",
    "prefs_pair_ret",
    "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret",
    "prefs_simp_imp",
    "prefs_pair_imp",
    "prefs_avgjg_imp",
    "map_avgjg",
    "P_avgjg",
    "Rprec_mult_avgjg",
    "yaap",
    "rbp",
    "rbp_resid",
    "unj",
)
# its nicknames (measures.c)
NICKNAMES = {
    "official": (
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "map",
        "gm_map",
        "Rprec",
        "bpref",
        "recip_rank",
        "iprec_at_recall",
        "P",
    ),
    "set": (
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "utility",
        "set_P",
        "set_recall",
        "set_relative_P",
        "set_map",
        "set_F",
    ),
    "all_trec": (
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "map",
        "gm_map",
        "Rprec",
        "bpref",
        "recip_rank",
        "iprec_at_recall",
        "P",
        "relstring",
        "recall",
        "unj",
        "rbp",
        "rbp_resid",
        "infAP",
        "gm_bpref",
        "utility",
        "11pt_avg",
        "ndcg",
        "relative_P",
        "Rprec_mult",
        "success",
        "map_cut",
        "ndcg_cut",
        "ndcg_rel",
        "Rndcg",
        "binG",
        "G",
        "set_P",
        "set_recall",
        "set_relative_P",
        "set_map",
        "set_F",
        "num_nonrel_judged_ret",
    ),
    "all_prefs": (
        "runid",
        "num_q",
        "prefs_num_prefs_poss",
        "prefs_num_prefs_ful",
        "prefs_num_prefs_ful_ret",
        "prefs_simp",
        "prefs_pair",
        "prefs_avgjg",
        "prefs_avgjg_Rnonrel",
        "prefs_simp_ret",
        "prefs_pair_ret",
        "prefs_avgjg_ret",
        "prefs_avgjg_Rnonrel_ret",
        "prefs_simp_imp",
        "prefs_pair_imp",
        "prefs_avgjg_imp",
    ),
    "prefs": (
        "runid",
        "num_q",
        "prefs_num_prefs_poss",
        "prefs_num_prefs_ful",
        "prefs_num_prefs_ful_ret",
        "prefs_simp",
        "prefs_pair",
        "prefs_avgjg",
    ),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
}


@dataclass
class Judged:
    """Per evaluated query (slot): retrieved count; per judged retrieved line (sorted by
    slot, then rank): slot, rank, relevance."""

    ret: np.ndarray
    q: np.ndarray
    rank: np.ndarray
    rel: np.ndarray


@dataclass
class Scored:
    """What every measure reads of the evaluated queries: ``j`` (:class:`Judged`), ``shown_ret``
    (the retrieved counts printed as ``num_ret``), per query ``n_rel`` and ``n_nonrel`` (judged
    relevant, judged nonrelevant), ``ideal`` ((query, grade, position) of every judgment with
    grade > 0, best first per query), the relevance ``level``; and, derived once, the relevant
    retrieved lines (``rq``, ``rr``: query and rank), each one's position among its query's
    (``kth``, 1-based), relevant retrieved per query (``nrr``) and ``safe_rel`` (R, at least 1)."""

    j: Judged
    shown_ret: np.ndarray
    n_rel: np.ndarray
    n_nonrel: np.ndarray
    ideal: tuple
    level: int
    nq: int = field(init=False)
    rq: np.ndarray = field(init=False)
    rr: np.ndarray = field(init=False)
    kth: np.ndarray = field(init=False)
    nrr: np.ndarray = field(init=False)
    safe_rel: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        j = self.j
        self.nq = nq = len(j.ret)
        isrel = j.rel >= self.level
        rq = self.rq = j.q[isrel]
        self.rr = j.rank[isrel]
        first = np.searchsorted(rq, np.arange(nq))
        self.kth = (np.arange(len(rq)) - first[rq] + 1).astype(np.float64)
        self.nrr = np.bincount(rq, minlength=nq).astype(np.int64)
        self.safe_rel = np.maximum(self.n_rel, 1).astype(np.float64)


@dataclass(frozen=True)
class Totals:
    """What a summary reads besides the per-query values: the number of queries evaluated,
    the run's tag (called once, when ``runid`` is asked for) and, under ``-c``, the count of
    relevance > 0 over every qrels query (``all_rel``; else ``None``)."""

    nq: int
    tag: Callable[[], str]
    all_rel: int | None = None


#: a compute function: the evaluated queries and the measure's parameters -> one array of
#: per-query values per output name
Compute = Callable[[Scored, tuple], list[np.ndarray]]


@dataclass(frozen=True)
class TrecMeasure:
    """One trec_eval measure membench computes: ``kind`` says its parameters (``none``,
    ``cutoffs``: document counts, ``points``: recall levels, ``weight``: one number read by
    ``atof``, the name taking the parameter text as given) and how it is summed (``count``:
    a sum; ``mean``; ``gm``: a geometric mean, summary only; ``runid``); ``default``: trec_eval's
    parameters; ``definition``: where trec_eval defines it; ``compute``: its per-query values
    (:data:`Compute`; ``None``: a summary only, from ``total``); ``total``: its summary when
    the ``summary`` kind does not say it (the per-query values, :class:`Totals`)."""

    name: str
    kind: str
    summary: str
    default: tuple = ()
    definition: str = ""
    compute: Compute | None = field(default=None, compare=False, repr=False)
    total: Callable[[np.ndarray | None, Totals], object] | None = field(
        default=None, compare=False, repr=False
    )

    def names(self, params: tuple) -> list[str]:
        """Its output names with ``params`` (``P`` at (5, 10): ``P_5``, ``P_10``)."""
        if self.kind == "cutoffs":
            return [f"{self.name}_{k}" for k in params]
        if self.kind == "points":
            return [f"{self.name}_{x:3.2f}" for x in params]
        if self.kind == "weight" and params:
            return [f"{self.name}_{params[0]}"]
        return [self.name]

    @property
    def per_query(self) -> bool:
        """Printed per query (``-q``): computed per query and not a geometric mean."""
        return self.compute is not None and self.summary != "gm"

    def summed(self, values: np.ndarray | None, t: Totals) -> object:
        """Its ``all`` value from the per-query ``values`` (query order)."""
        if self.total is not None:
            return self.total(values, t)
        if self.summary == "count":
            return int(values.sum())
        if not t.nq:
            return 0.0
        return math.exp(_sum(values) / t.nq) if self.summary == "gm" else _sum(values) / t.nq


def _sum(v: np.ndarray) -> float:
    """Left to right, in query order, as trec_eval's accumulation adds."""
    return float(np.cumsum(v, dtype=np.float64)[-1]) if len(v) else 0.0


def _lround(x: float) -> int:
    """C's ``lround`` for x >= 0: halves away from zero (exact: ``x - floor(x)`` is)."""
    f = math.floor(x)
    return int(f) + (1 if x - f >= 0.5 else 0)


# ------------------------------------------------------------------ the compute functions


def _ap(s: Scored) -> np.ndarray:
    """m_map.c per query (0 when nothing relevant is retrieved)."""
    total = np.bincount(s.rq, weights=s.kth / s.rr, minlength=s.nq)
    return np.where(s.nrr > 0, total / s.safe_rel, 0.0)


def _nonrel_judged_ret(s: Scored, _p: tuple) -> list[np.ndarray]:
    nonrel = (s.j.rel >= 0) & (s.j.rel < s.level)
    return [np.bincount(s.j.q[nonrel], minlength=s.nq).astype(np.int64)]


def _rprec(s: Scored, _p: tuple) -> list[np.ndarray]:
    look = np.minimum(s.j.ret, s.n_rel)
    hit = np.bincount(s.rq[s.rr <= look[s.rq]], minlength=s.nq)
    return [np.where(look > 0, hit / s.safe_rel, 0.0)]


def _recip_rank(s: Scored, _p: tuple) -> list[np.ndarray]:
    best = np.full(s.nq, np.inf)
    np.minimum.at(best, s.rq, s.rr.astype(np.float64))
    return [np.where(np.isfinite(best), 1.0 / best, 0.0)]


def _hits(s: Scored, k: int) -> np.ndarray:
    """Relevant documents in the first ``k``, per query."""
    return np.bincount(s.rq[s.rr <= k], minlength=s.nq)


def _map_cut(s: Scored, k: int) -> np.ndarray:
    inside = s.rr <= k
    total = np.bincount(s.rq[inside], weights=(s.kth / s.rr)[inside], minlength=s.nq)
    return np.where(s.n_rel > 0, total / s.safe_rel, 0.0)


def _set_p(s: Scored) -> np.ndarray:
    return np.where(s.j.ret > 0, s.nrr / np.maximum(s.j.ret, 1), 0.0)


def _set_recall(s: Scored) -> np.ndarray:
    return np.where(s.n_rel > 0, s.nrr / s.safe_rel, 0.0)


def _set_map(s: Scored, _p: tuple) -> list[np.ndarray]:
    """nrr^2 / (ret x R), computed as trec_eval does."""
    ret = s.j.ret
    return [
        np.where(
            (ret > 0) & (s.n_rel > 0),
            (s.nrr * 1.0 * s.nrr) / (np.maximum(ret, 1) * 1.0 * s.safe_rel),
            0.0,
        )
    ]


def _set_f(s: Scored, params: tuple) -> list[np.ndarray]:
    """m_set_F.c: (x + 1) P R / (x P + R), x = its parameter."""
    sp, sr = _set_p(s), _set_recall(s)
    x = params[1] if params else 1.0
    return [np.where(s.nrr > 0, (x + 1.0) * sp * sr / (x * sp + sr), 0.0)]


def _bpref(j: Judged, n_rel: np.ndarray, n_nonrel: np.ndarray, level: int) -> np.ndarray:
    nq = len(j.ret)
    judged = j.rel >= 0  # in the pool and judged (rel < 0: unjudged)
    q, rel = j.q[judged], j.rel[judged]
    nonrel = rel < level
    c = np.cumsum(nonrel)
    first = np.searchsorted(q, np.arange(nq))
    before = c - nonrel - np.concatenate([[0], c])[first[q]]  # nonrel above, same query
    isrel = ~nonrel
    qr, nb = q[isrel], before[isrel].astype(np.float64)
    R = n_rel[qr].astype(np.float64)
    denom = np.minimum(n_nonrel[qr], n_rel[qr]).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        term = np.where(nb > 0, 1.0 - np.minimum(nb, R) / np.where(denom > 0, denom, 1.0), 1.0)
    s = np.bincount(qr, weights=term, minlength=nq)
    return np.where(n_rel > 0, s / np.maximum(n_rel, 1), s)


def _iprec(
    rq: np.ndarray,
    rr: np.ndarray,
    nrr: np.ndarray,
    ret: np.ndarray,
    n_rel: np.ndarray,
    points: tuple,
) -> np.ndarray:
    """m_iprec_at_recall.c: interpolated precision (the best precision at or after the
    k-th relevant document retrieved) at k = lround(level x R)."""
    nq = len(ret)
    out = np.zeros((nq, len(points)))
    starts = np.searchsorted(rq, np.arange(nq + 1))
    for q in np.flatnonzero(nrr > 0).tolist():
        a, b = int(starts[q]), int(starts[q + 1])
        p = np.arange(1, b - a + 1, dtype=np.float64) / rr[a:b]
        best = np.maximum.accumulate(p[::-1])[::-1]  # best at or after k (0-based)
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


def _rprec_mult(
    rq: np.ndarray, rr: np.ndarray, nrr: np.ndarray, ret: np.ndarray, n_rel: np.ndarray, x: float
) -> np.ndarray:
    """m_Rprec_mult.c at multiple ``x``: per query k = (long)(x R + 0.9) (C's cast truncates
    toward zero); precision after k documents (relevant retrieved over k past the last one
    retrieved), 0 when k <= 0."""
    k = np.trunc(x * n_rel.astype(np.float64) + 0.9)
    kq = k[rq]
    hit = np.bincount(rq[rr <= kq], minlength=len(ret)).astype(np.float64)
    return np.where(k > 0, hit / np.maximum(k, 1.0), 0.0)  # past num_ret: hit = nrr


_NEG_NAN = float(np.copysign(np.nan, -1.0))


def _ndcg(j: Judged, ideal: tuple[np.ndarray, np.ndarray, np.ndarray], k: int) -> np.ndarray:
    """m_ndcg_cut.c at ``k``: ``ideal`` is (query, grade, position) of every judgment with
    grade > 0, best first per query; both sums add in rank order, as trec_eval's loops do."""
    nq = len(j.ret)
    inside = (j.rank <= k) & (j.rel > 0)
    dcg = np.bincount(
        j.q[inside], weights=j.rel[inside] / np.log2(j.rank[inside] + 1.0), minlength=nq
    )
    gq, gg, pos = ideal
    top = pos < k
    best = np.bincount(gq[top], weights=gg[top] / np.log2(pos[top] + 2.0), minlength=nq)
    return np.where(best > 0, dcg / np.where(best > 0, best, 1.0), dcg)


def _num_rel_total(values: np.ndarray | None, t: Totals) -> int:
    """m_num_rel.c: the sum; with -c, relevance > 0 over every qrels query, whatever -l."""
    return int(values.sum()) if t.all_rel is None else t.all_rel


# ------------------------------------------------------------------------ the registry

#: the measures membench computes (their output order: :data:`TREC_EVAL_TABLE`'s)
MEASURES: dict[str, TrecMeasure] = {
    m.name: m
    for m in (
        TrecMeasure(
            "runid",
            "none",
            "runid",
            definition="m_runid.c: the tag of the run's last line",
            total=lambda _v, t: t.tag(),
        ),
        TrecMeasure(
            "num_q",
            "none",
            "count",
            definition="m_num_q.c: queries evaluated",
            total=lambda _v, t: t.nq,
        ),
        TrecMeasure(
            "num_ret",
            "none",
            "count",
            definition="m_num_ret.c: documents retrieved",
            compute=lambda s, _p: [s.shown_ret],
        ),
        TrecMeasure(
            "num_rel",
            "none",
            "count",
            definition="m_num_rel.c: relevant documents "
            "(relevance >= level); with -c the summary counts relevance > 0 over the qrels",
            compute=lambda s, _p: [s.n_rel],
            total=_num_rel_total,
        ),
        TrecMeasure(
            "num_rel_ret",
            "none",
            "count",
            definition="m_num_rel_ret.c: relevant retrieved",
            compute=lambda s, _p: [s.nrr],
        ),
        TrecMeasure(
            "map",
            "none",
            "mean",
            definition="m_map.c: mean of the precision at each "
            "relevant document retrieved, over the relevant documents",
            compute=lambda s, _p: [_ap(s)],
        ),
        TrecMeasure(
            "gm_map",
            "none",
            "gm",
            definition="m_gm_map.c: geometric mean over queries "
            "of map, floored at 0.00001; summary only",
            compute=lambda s, _p: [np.log(np.maximum(_ap(s), 0.00001))],
        ),
        TrecMeasure(
            "Rprec",
            "none",
            "mean",
            definition="m_Rprec.c: precision after R documents "
            "(R = num_rel; min(R, num_ret) looked at)",
            compute=_rprec,
        ),
        TrecMeasure(
            "bpref",
            "none",
            "mean",
            definition="m_bpref.c: per relevant document "
            "retrieved, 1 - min(judged nonrelevant above it, R) / min(judged nonrelevant, "
            "R), over R",
            compute=lambda s, _p: [_bpref(s.j, s.n_rel, s.n_nonrel, s.level)],
        ),
        TrecMeasure(
            "recip_rank",
            "none",
            "mean",
            definition="m_recip_rank.c: 1 / rank of the first relevant document",
            compute=_recip_rank,
        ),
        TrecMeasure(
            "iprec_at_recall",
            "points",
            "mean",
            RECALL_POINTS,
            "m_iprec_at_recall.c: "
            "interpolated precision at recall levels (level x R rounded, lround)",
            compute=lambda s, p: list(_iprec(s.rq, s.rr, s.nrr, s.j.ret, s.n_rel, p).T),
        ),
        TrecMeasure(
            "P",
            "cutoffs",
            "mean",
            CUTOFFS,
            "m_P.c: relevant in the first k, over k",
            compute=lambda s, p: [_hits(s, k) / float(k) for k in p],
        ),
        TrecMeasure(
            "Rprec_mult",
            "points",
            "mean",
            RPREC_MULTIPLES,
            "m_Rprec_mult.c: precision "
            "after k = (long)(x R + 0.9) documents, x a multiple of R (num_rel); 0 when "
            "k <= 0",
            compute=lambda s, p: [_rprec_mult(s.rq, s.rr, s.nrr, s.j.ret, s.n_rel, x) for x in p],
        ),
        TrecMeasure(
            "recall",
            "cutoffs",
            "mean",
            CUTOFFS,
            "m_recall.c: relevant in the first k, over R",
            compute=lambda s, p: [np.where(s.n_rel > 0, _hits(s, k) / s.safe_rel, 0.0) for k in p],
        ),
        TrecMeasure(
            "ndcg_cut",
            "cutoffs",
            "mean",
            CUTOFFS,
            "m_ndcg_cut.c: DCG of the first k "
            "(gain = the qrels relevance, 1/log2(rank + 1)) over the ideal DCG at k",
            compute=lambda s, p: [_ndcg(s.j, s.ideal, k) for k in p],
        ),
        TrecMeasure(
            "map_cut",
            "cutoffs",
            "mean",
            CUTOFFS,
            "m_map_cut.c: map of the first k",
            compute=lambda s, p: [_map_cut(s, k) for k in p],
        ),
        TrecMeasure(
            "success",
            "cutoffs",
            "mean",
            (1, 5, 10),
            "m_success.c: 1 if a relevant document is in the first k",
            compute=lambda s, p: [(_hits(s, k) > 0) * 1.0 for k in p],
        ),
        TrecMeasure(
            "set_P",
            "none",
            "mean",
            definition="m_set_P.c: num_rel_ret / num_ret",
            compute=lambda s, _p: [_set_p(s)],
        ),
        TrecMeasure(
            "set_recall",
            "none",
            "mean",
            definition="m_set_recall.c: num_rel_ret / R",
            compute=lambda s, _p: [_set_recall(s)],
        ),
        TrecMeasure(
            "set_map",
            "none",
            "mean",
            definition="m_set_map.c: set_P x set_recall",
            compute=_set_map,
        ),
        TrecMeasure(
            "set_F",
            "weight",
            "mean",
            definition="m_set_F.c: (x + 1) P R / (x P + R) of "
            "set_P and set_recall, x the weight of recall (default 1; set_F.0.5 prints "
            "set_F_0.5)",
            compute=_set_f,
        ),
        TrecMeasure(
            "num_nonrel_judged_ret",
            "none",
            "count",
            definition="m_num_nonrel_judged_ret.c: judged nonrelevant documents retrieved",
            compute=_nonrel_judged_ret,
        ),
    )
}
NOT_IMPLEMENTED = tuple(m for m in TREC_EVAL_TABLE if m not in MEASURES)
#: the measures summed as counts (printed as integers)
COUNTS = tuple(m.name for m in MEASURES.values() if m.summary == "count")


def compute(measures: list[tuple[str, tuple]], s: Scored) -> dict[str, np.ndarray]:
    """``{output name: per-query values}`` of ``measures`` ((name, parameters) pairs) on the
    evaluated queries ``s``, each through its record's ``compute`` (summary-only ones left
    out)."""
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for name, params in measures:
            m = MEASURES[name]
            if m.compute is not None:
                out.update(zip(m.names(params), m.compute(s, params), strict=True))
    return out
