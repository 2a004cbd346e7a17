"""The paired test (:func:`paired_test`, by holder or by item; :func:`holm`; how a test
resampled, in words: :func:`unit_note`) and the abstention-order statistics' paired bootstrap
(:func:`ordering_difference`). The contract: :mod:`membench.analysis.compare`; the method:
docs/metrics.md, "Paired tests: resampled by holder". Writes the statistics cache."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.hashing import keyed_rng
from ..metrics import SEED, abstention
from ..metrics.bootstrap import check_resamples
from ..sets.audit import MIN_HOLDERS_CI

N_PAIRED_RESAMPLES = 10_000
_BLOCK = 2_000_000  # resample-matrix cells held at once


def paired_test(
    a: np.ndarray,
    b: np.ndarray,
    key: str,
    *,
    groups: Any = None,
    n_resamples: int = N_PAIRED_RESAMPLES,
    seed: int = SEED,
    level: float = 0.95,
    min_holders: int = MIN_HOLDERS_CI,
) -> dict[str, Any]:
    """Paired bootstrap and sign-flip randomization test of ``mean(a - b)`` over the items
    where both are defined (see the module docstring). ``groups`` (one label per item: its
    holder) clusters both tests when those items come from at least ``min_holders`` holders:
    a holder's differences flip together and a drawn holder brings all its items; ``unit``
    says which (``"holder"`` or ``"record"``) and ``holders`` how many holders there were.
    Stored by the content of its inputs (:mod:`membench.analysis.statcache`): the same arrays,
    key and parameters give the stored result, which is the computed one to the last bit."""
    from . import statcache

    check_resamples(n_resamples)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("paired values must be aligned item by item")
    codes = holder_codes(groups, a.shape)
    arrays = (a, b) if codes is None else (a, b, codes)
    return statcache.cached(
        "paired_test",
        __file__,
        arrays,
        {
            "key": key,
            "n_resamples": n_resamples,
            "seed": seed,
            "level": level,
            "min_holders": min_holders,
        },
        lambda: _paired_test(
            a,
            b,
            key,
            n_resamples=n_resamples,
            seed=seed,
            level=level,
            groups=codes,
            min_holders=min_holders,
        ),
    )


def ordering_difference(
    a: abstention.Ordering,
    b: abstention.Ordering,
    measure: str,
    key: str,
    *,
    max_false_recall: float,
    n_resamples: int = abstention.N_RESAMPLES,
    seed: int = SEED,
    level: float = 0.95,
) -> dict[str, Any]:
    """:func:`membench.metrics.abstention.paired_difference`, stored by the content of both
    orders' inputs (:attr:`~membench.metrics.abstention.Ordering.inputs`) as
    :func:`paired_test` is: the same orders, key and parameters give the stored result, the
    computed one to the last bit."""
    from . import statcache

    return statcache.cached(
        "ordering_difference",
        abstention.__file__,
        (*a.inputs, *b.inputs),
        {
            "measure": measure,
            "key": key,
            "max_false_recall": max_false_recall,
            "n_resamples": n_resamples,
            "seed": seed,
            "level": level,
        },
        lambda: abstention.paired_difference(
            a,
            b,
            measure,
            key,
            max_false_recall=max_false_recall,
            n_resamples=n_resamples,
            seed=seed,
            level=level,
        ),
    )


def holder_codes(groups: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    """``groups`` (one holder label per item, or None) as int64 codes, equal labels equal
    codes (numbered in the labels' sorted order)."""
    if groups is None:
        return None
    g = np.asarray(groups, dtype=object)
    if g.shape != shape:
        raise ValueError("holders must be aligned with the paired values item by item")
    if not g.size:
        return np.zeros(0, dtype=np.int64)
    return np.unique(g.astype(str), return_inverse=True)[1].astype(np.int64).reshape(shape)


def _paired_test(
    a: np.ndarray,
    b: np.ndarray,
    key: str,
    *,
    n_resamples: int,
    seed: int,
    level: float,
    groups: np.ndarray | None = None,
    min_holders: int = MIN_HOLDERS_CI,
) -> dict[str, Any]:
    ok = ~np.isnan(a) & ~np.isnan(b)
    d = a[ok] - b[ok]
    n = int(d.size)
    res: dict[str, Any] = {
        "n": n,
        "mean_a": float(a[ok].mean()) if n else np.nan,
        "mean_b": float(b[ok].mean()) if n else np.nan,
    }
    # the resampling unit: whole holders where there are enough of them, else items
    if groups is not None and n:
        _, inv = np.unique(np.asarray(groups)[ok], return_inverse=True)
        k_hold = int(inv.max()) + 1
    else:
        inv, k_hold = None, None
    res["holders"] = k_hold
    res["unit"] = "holder" if k_hold is not None and k_hold >= min_holders else "record"
    if n == 0:
        return {
            **res,
            "diff": np.nan,
            "diff_ci95_lo": np.nan,
            "diff_ci95_hi": np.nan,
            "p_bootstrap": np.nan,
            "p_permutation": np.nan,
        }
    obs = float(d.mean())
    tol = 1e-12 * max(1.0, abs(obs))
    if res["unit"] == "holder":
        # per holder: the sum of its differences and its number of items
        u = np.bincount(inv, weights=d, minlength=k_hold)
        w = np.bincount(inv, minlength=k_hold).astype(np.float64)
    else:
        u, w = d, None
    m = int(u.size)
    rows = max(1, _BLOCK // m)
    # paired bootstrap: units drawn with replacement, the mean over the items they bring
    rng = keyed_rng(seed, f"{key}|bootstrap")
    boot = np.empty(n_resamples)
    for s in range(0, n_resamples, rows):
        k = min(rows, n_resamples - s)
        idx = rng.integers(0, m, size=(k, m))
        boot[s : s + k] = (
            u[idx].mean(axis=1) if w is None else u[idx].sum(axis=1) / w[idx].sum(axis=1)
        )
    alpha = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(boot, [alpha, 100.0 - alpha])
    p_boot = (1 + int((np.abs(boot - obs) >= abs(obs) - tol).sum())) / (1 + n_resamples)
    # sign-flip randomization: each unit's differences flip together
    rng = keyed_rng(seed, f"{key}|permutation")
    count = 0
    for s in range(0, n_resamples, rows):
        k = min(rows, n_resamples - s)
        signs = rng.integers(0, 2, size=(k, m), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
        count += int((np.abs(signs @ u / n) >= abs(obs) - tol).sum())
    p_perm = (1 + count) / (1 + n_resamples)
    return {
        **res,
        "diff": obs,
        "diff_ci95_lo": float(lo),
        "diff_ci95_hi": float(hi),
        "p_bootstrap": min(1.0, p_boot),
        "p_permutation": min(1.0, p_perm),
    }


def unit_note(unit: str | None, holders: int | None = None) -> str:
    """How a paired test resampled, as the tables say it: ``"resampled by holder (12
    holders)"`` or ``"resampled by record (3 holders, under 10)"``."""
    return f"resampled {unit_span(unit, holders, holders)}"


def unit_span(unit: str | None, lo: int | None, hi: int | None) -> str:
    """``by holder (26 to 30 holders)``, ``by record (1 holder, under 10)``: a resampling unit
    over tests whose holders number from ``lo`` to ``hi`` (None: not known)."""
    if lo is None or hi is None:
        return f"by {unit or 'record'}"
    many = "" if hi == 1 else "s"
    k = f"{lo}" if lo == hi else f"{lo} to {hi}"
    if unit == "holder":
        return f"by holder ({k} holder{many})"
    return f"by record ({k} holder{many}, under {MIN_HOLDERS_CI})"


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN)."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    idx = np.where(~np.isnan(p))[0]
    m = idx.size
    if not m:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        out[j] = running
    return out


__all__ = [
    "N_PAIRED_RESAMPLES",
    "holder_codes",
    "holm",
    "ordering_difference",
    "paired_test",
    "unit_note",
    "unit_span",
]
