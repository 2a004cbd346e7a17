"""Abstention read without a threshold, and at the false-recall gate (SPEC section 7: "also
report abstention on answerable items"): ``abstention_auc`` and ``answerable_kept@fr0.10``
with its ``random_committer`` (docs/runs.md, "Metrics", and docs/metrics.md, "The random
committer", say how and why).

The abstention score of a query (:func:`abstention_score`, from its run line): the
``confidence`` the system reported (:attr:`membench.contract.protocol.Result.confidence`), else
the score of its top-ranked hit, else ``-inf``. Queries are placed by the pair (cartridge
non-empty, abstention score), compared lexicographically; equal pairs tie.

Start at :class:`Ordering` (per query: score, kept, answerable, modality; callers hand it the
answerable and the *audited* unanswerable items only, as ``false_recall_rate``):
:meth:`Ordering.auc` (ROC AUC, answerable against unanswerable of the same modality, ties one
half), :meth:`Ordering.kept_at` (the largest answerable share kept by a threshold at which at
most the given share of unanswerable items is kept; a query is kept at ``t`` when its cartridge
is non-empty and its score >= ``t``; a tie is never split), :meth:`Ordering.random_kept` (the
exact expectation of the random committer), and :func:`entries`, which writes each figure with
``n``, ``denominator`` and a 95% bootstrap interval (1,000 resamples of the slice's items,
seeded as :mod:`.bootstrap`). A modality without unanswerable items makes both measures
undefined (null) and its items do not count in ``n``.

Touches nothing: numpy arrays in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.hashing import keyed_rng
from .bootstrap import N_RESAMPLES, SEED

#: the names of the two measures (also the registry's)
AUC = "abstention_auc"
KEPT = "answerable_kept@fr0.10"
_BLOCK = 4_000_000  # resample-matrix cells held at once (memory)
_EPS = 1e-9  # weights are integer counts: the feasibility test is exact


def abstention_score(confidence: float | None, scores: np.ndarray | None) -> float:
    """The abstention score of one query (module docstring): the reported ``confidence``, else
    the largest hit score, else ``-inf``."""
    if confidence is not None:
        return float(confidence)
    if scores is not None and len(scores):
        return float(np.max(scores))
    return -math.inf


@dataclass(frozen=True)
class _Stratum:
    order: np.ndarray  # item positions, ascending by (kept, score)
    starts: np.ndarray  # first position (in ``order``) of each tie group
    pos: np.ndarray  # per sorted item: answerable (float 1/0)
    neg: np.ndarray  # per sorted item: unanswerable
    group_kept: np.ndarray  # per tie group: cartridge non-empty (bool)


class Ordering:
    """The queries of a slice, ordered for the two measures: one stratum per modality."""

    def __init__(
        self,
        score: Sequence[float] | np.ndarray,
        kept: Sequence[bool] | np.ndarray,
        answerable: Sequence[bool] | np.ndarray,
        strata: Sequence[str] | np.ndarray | None = None,
    ):
        s = np.asarray(score, dtype=np.float64)
        k = np.asarray(kept, dtype=bool)
        a = np.asarray(answerable, dtype=bool)
        if not (s.shape == k.shape == a.shape) or s.ndim != 1:
            raise ValueError("score, kept and answerable must be aligned 1-d arrays")
        if np.isnan(s).any():
            raise ValueError("an abstention score is NaN")
        self.n = s.size
        self.answerable = a
        self.kept = k
        labels = (
            np.zeros(s.size, dtype=object) if strata is None else np.asarray(strata, dtype=object)
        )
        codes = (
            np.unique(labels.astype(str), return_inverse=True)[1].astype(np.int64)
            if s.size
            else np.zeros(0, dtype=np.int64)
        )
        #: what the order is made of (scores, kept, answerable, stratum codes in the labels'
        #: sorted order): a cache of its statistics is keyed by these
        self.inputs = (s, k, a, codes.reshape(s.shape))
        self.strata: list[_Stratum] = []
        for lab in sorted(set(labels.tolist()), key=str):
            idx = np.flatnonzero(labels == lab)
            o = idx[np.lexsort((s[idx], k[idx]))]
            ks, ss = k[o], s[o]
            change = np.ones(o.size, dtype=bool)
            change[1:] = (ks[1:] != ks[:-1]) | (ss[1:] != ss[:-1])
            starts = np.flatnonzero(change)
            self.strata.append(
                _Stratum(o, starts, a[o].astype(np.float64), (~a[o]).astype(np.float64), ks[starts])
            )

    # ------------------------------------------------------------------ the statistics

    def _sums(self, st: _Stratum, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per resample (rows of ``w``) and tie group: weight of answerable and unanswerable
        items."""
        ws = w[:, st.order]
        return (
            np.add.reduceat(ws * st.pos, st.starts, axis=1),
            np.add.reduceat(ws * st.neg, st.starts, axis=1),
        )

    def auc(self, w: np.ndarray | None = None) -> np.ndarray:
        """ROC AUC per row of weights ``w`` (b x n; ``None``: every item once), NaN where no
        stratum has both kinds."""
        w = np.ones((1, self.n)) if w is None else w
        num = np.zeros(w.shape[0])
        den = np.zeros(w.shape[0])
        for st in self.strata:
            p, q = self._sums(st, w)
            below = np.cumsum(q, axis=1) - q  # unanswerable weight strictly below
            num += (p * (below + 0.5 * q)).sum(axis=1)
            den += p.sum(axis=1) * q.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

    def kept_at(
        self, max_false_recall: float, w: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per row of ``w``: the best share of answerable items kept with the unanswerable
        kept share <= ``max_false_recall`` (NaN where no stratum has unanswerable and
        answerable items), and the pooled false-recall rate at that point."""
        w = np.ones((1, self.n)) if w is None else w
        kept_pos = np.zeros(w.shape[0])
        tot_pos = np.zeros(w.shape[0])
        kept_neg = np.zeros(w.shape[0])
        tot_neg = np.zeros(w.shape[0])
        for st in self.strata:
            p, q = self._sums(st, w)
            P, N = p.sum(axis=1), q.sum(axis=1)
            live = N > 0  # a false recall to bound
            # groups whose cartridge is non-empty, from the highest score down
            top = np.flatnonzero(st.group_kept)[::-1]
            cp = np.cumsum(p[:, top], axis=1)
            cn = np.cumsum(q[:, top], axis=1)
            ok = cn <= max_false_recall * N[:, None] + _EPS
            best = np.where(ok, cp, -1.0)
            j = best.argmax(axis=1) if top.size else np.zeros(w.shape[0], dtype=int)
            got = best[np.arange(w.shape[0]), j] if top.size else np.full(w.shape[0], -1.0)
            at_neg = cn[np.arange(w.shape[0]), j] if top.size else np.zeros(w.shape[0])
            feasible = got >= 0
            kp = np.where(feasible, got, 0.0)  # "keep nothing" is always feasible
            kn = np.where(feasible, at_neg, 0.0)
            kept_pos += np.where(live, kp, 0.0)
            tot_pos += np.where(live, P, 0.0)
            kept_neg += np.where(live, kn, 0.0)
            tot_neg += np.where(live, N, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(tot_pos > 0, kept_pos / np.where(tot_pos > 0, tot_pos, 1.0), np.nan)
            fr = np.where(tot_neg > 0, kept_neg / np.where(tot_neg > 0, tot_neg, 1.0), np.nan)
        return share, fr

    def random_kept(self, max_false_recall: float) -> float:
        """The floor of :meth:`kept_at`: the expected share of answerable items kept by a
        committer with the same abstention that commits at random (module docstring, "The
        random committer"); NaN where :meth:`kept_at` is undefined."""
        kept = total = 0.0
        for st in self.strata:
            P, N = int(st.pos.sum()), int(st.neg.sum())
            if N == 0 or P == 0:
                continue
            a = int(np.count_nonzero(self.kept[st.order] & self.answerable[st.order]))
            kept += a * _share_before(N, a / P, math.floor(max_false_recall * N + _EPS))
            total += P
        return kept / total if total else math.nan

    # ------------------------------------------------------------------ n and resampling

    def counted(self, which: str) -> int:
        """The items a statistic is computed from (module docstring)."""
        n = 0
        for st in self.strata:
            P, N = int(st.pos.sum()), int(st.neg.sum())
            if which == KEPT and N > 0:
                n += P
            elif which == AUC and N > 0 and P > 0:
                n += P + N
        return n

    def resampled(self, key: str, *, seed: int = SEED, n_resamples: int = N_RESAMPLES):
        """Weight matrices of the bootstrap resamples (blocks of rows: counts of each item in
        a draw of n items with replacement), drawn as :mod:`.bootstrap` draws
        (:func:`membench.core.hashing.keyed_rng`)."""
        rng = keyed_rng(seed, key)
        rows = max(1, _BLOCK // max(self.n, 1))
        for start in range(0, n_resamples, rows):
            b = min(rows, n_resamples - start)
            idx = rng.integers(0, self.n, size=(b, self.n))
            flat = (idx + (np.arange(b) * self.n)[:, None]).ravel()
            yield np.bincount(flat, minlength=b * self.n).reshape(b, self.n).astype(np.float64)


def _share_before(n: int, c: float, k: int) -> float:
    """E[min(1, (k + 1) / (U + 1))], U ~ Binomial(n, c): the expected share of a random
    committer's committed answerable items ordered above its (k + 1)-th committed
    unanswerable item, in a random order (each of U + 1 gaps equally likely)."""
    u = np.arange(n + 1)
    if c <= 0.0 or c >= 1.0:
        pmf = (u == (0 if c <= 0.0 else n)).astype(np.float64)
    else:
        logc = np.array(
            [math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1) for x in range(n + 1)]
        )
        pmf = np.exp(logc + u * math.log(c) + (n - u) * math.log1p(-c))
    return float((pmf * np.minimum(1.0, (k + 1) / (u + 1))).sum())


def _interval(values: np.ndarray, level: float = 0.95) -> list[float | None]:
    v = values[~np.isnan(values)]
    if v.size == 0:
        return [None, None]
    alpha = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(v, [alpha, 100.0 - alpha])
    return [float(lo), float(hi)]


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def entries(
    score: np.ndarray,
    kept: np.ndarray,
    answerable: np.ndarray,
    strata: np.ndarray | None,
    key: str,
    *,
    max_false_recall: float,
    seed: int = SEED,
    n_resamples: int = N_RESAMPLES,
) -> dict[str, dict[str, Any]]:
    """The two figures of one slice, in ``metrics.json``'s shape (``value``, ``n``,
    ``denominator``, ``ci95``), keyed ``<key>|<measure>`` for the bootstrap; the kept share
    also carries ``false_recall_at`` (the unanswerable share kept at that point) and
    ``random_committer`` (:meth:`Ordering.random_kept`, its floor)."""
    o = Ordering(score, kept, answerable, strata)
    n_ans = int(np.count_nonzero(answerable))
    out: dict[str, dict[str, Any]] = {}
    auc = float(o.auc()[0])
    share, fr = (float(x[0]) for x in o.kept_at(max_false_recall))
    boot_auc, boot_kept = [], []
    if o.n:
        for w in o.resampled(f"{key}|{AUC}", seed=seed, n_resamples=n_resamples):
            boot_auc.append(o.auc(w))
        for w in o.resampled(f"{key}|{KEPT}", seed=seed, n_resamples=n_resamples):
            boot_kept.append(o.kept_at(max_false_recall, w)[0])
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0)  # noqa: E731
    out[AUC] = {
        "value": _num(auc),
        "n": o.counted(AUC),
        "denominator": o.n,
        "ci95": _interval(cat(boot_auc)) if not math.isnan(auc) else [None, None],
    }
    out[KEPT] = {
        "value": _num(share),
        "n": o.counted(KEPT),
        "denominator": n_ans,
        "ci95": _interval(cat(boot_kept)) if not math.isnan(share) else [None, None],
        "false_recall_at": _num(fr),
        "random_committer": _num(o.random_kept(max_false_recall)),
    }
    return out


def statistic(
    o: Ordering, measure: str, max_false_recall: float, w: np.ndarray | None = None
) -> np.ndarray:
    """``measure`` (:data:`AUC` or :data:`KEPT`) of ``o`` per row of weights ``w``."""
    if measure == AUC:
        return o.auc(w)
    if measure == KEPT:
        return o.kept_at(max_false_recall, w)[0]
    raise ValueError(f"not an abstention-order measure: {measure!r}")


def paired_difference(
    a: Ordering,
    b: Ordering,
    measure: str,
    key: str,
    *,
    max_false_recall: float,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    level: float = 0.95,
) -> dict[str, Any]:
    """Two systems' ``measure`` on the same items (``a`` and ``b`` order the same items, with
    the same answerability and strata): ``diff`` = a - b, a **paired bootstrap** interval (each
    resample draws the items once, both systems are scored on that draw) and its two-sided,
    null-shifted p (share of resampled differences at least as far from ``diff`` as ``diff``
    is from 0, ``(1 + count) / (1 + resamples)``). These statistics have no per-item values to
    sign-flip, so ``p_permutation`` is NaN; ``n`` is the items the statistic is computed
    from."""
    if a.n != b.n or not np.array_equal(a.answerable, b.answerable):
        raise ValueError("paired abstention measures need the same items")
    va = float(statistic(a, measure, max_false_recall)[0])
    vb = float(statistic(b, measure, max_false_recall)[0])
    res: dict[str, Any] = {
        "n": a.counted(measure),
        "mean_a": va,
        "mean_b": vb,
        "p_permutation": np.nan,
    }
    if math.isnan(va) or math.isnan(vb):
        return {
            **res,
            "diff": np.nan,
            "diff_ci95_lo": np.nan,
            "diff_ci95_hi": np.nan,
            "p_bootstrap": np.nan,
        }
    obs = va - vb
    parts = [
        statistic(a, measure, max_false_recall, w) - statistic(b, measure, max_false_recall, w)
        for w in a.resampled(f"{key}|paired", seed=seed, n_resamples=n_resamples)
    ]
    boot = np.concatenate(parts) if parts else np.zeros(0)
    boot = boot[~np.isnan(boot)]
    if boot.size == 0:
        return {
            **res,
            "diff": obs,
            "diff_ci95_lo": np.nan,
            "diff_ci95_hi": np.nan,
            "p_bootstrap": np.nan,
        }
    alpha = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(boot, [alpha, 100.0 - alpha])
    tol = 1e-12 * max(1.0, abs(obs))
    p = (1 + int((np.abs(boot - obs) >= abs(obs) - tol).sum())) / (1 + boot.size)
    return {
        **res,
        "diff": obs,
        "diff_ci95_lo": float(lo),
        "diff_ci95_hi": float(hi),
        "p_bootstrap": min(1.0, p),
    }


__all__ = [
    "AUC",
    "KEPT",
    "Ordering",
    "abstention_score",
    "entries",
    "paired_difference",
    "statistic",
]
