"""Percentile bootstrap 95% intervals over items (SPEC section 7: every figure shows its
uncertainty along with n and the denominator).

For a slice with per-item values ``v`` (n items), draw 1000 resamples of n items with
replacement, compute the statistic (the mean, or a latency percentile) on each, and report the
2.5th and 97.5th percentiles of those 1000 numbers. The generator is numpy's PCG64 seeded with
``(seed, crc32(key))`` where ``key`` names the slice and the metric, so each interval is
reproducible on its own and does not change when other slices are added or computed in
another order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..core.bounds import bound
from ..core.errors import MembenchError
from ..core.hashing import keyed_rng

N_RESAMPLES = 1000
SEED = 20240101
_BLOCK = 4_000_000  # cap on resample matrix cells held at once (memory)
#: the most resamples any bootstrap or permutation test draws (``--resamples`` of compare,
#: agreement, leaderboard and q2d): ten times the largest default (10,000), which keeps each
#: test's arrays under a megabyte and its time within minutes (10^11 once asked for 745 GiB)
MAX_RESAMPLES = bound(
    "resamples",
    100_000,
    "resamples",
    "--resamples of compare, agreement, leaderboard and q2d, and any "
    "bootstrap interval or paired test",
    "refused before anything is computed (exit 2, naming the bound)",
    "membench.metrics.bootstrap",
)


def check_resamples(n: object, what: str = "n_resamples") -> int:
    """``n`` if it is an integer in [1, :data:`MAX_RESAMPLES`], else a
    :class:`MembenchError` naming ``what`` and the bound."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_RESAMPLES:
        raise MembenchError(
            f"{what} {n!r}: an integer from 1 to {MAX_RESAMPLES:,} (bound resamples)"[:200]
        )
    return int(n)


def bootstrap_ci(
    values: np.ndarray,
    key: str,
    *,
    statistic: str | float = "mean",
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    level: float = 0.95,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of ``statistic`` ("mean" or a percentile q in [0, 100])
    over ``values``; ``(None, None)`` for an empty sample."""
    check_resamples(n_resamples)
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if n == 0:
        return (None, None)
    rng = keyed_rng(seed, key)
    stat: Callable[[np.ndarray], np.ndarray]
    if statistic == "mean":
        stat = lambda m: m.mean(axis=1)
    else:
        q = float(statistic)
        stat = lambda m: np.percentile(m, q, axis=1)
    rows = max(1, _BLOCK // n)
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        out[start : start + b] = stat(v[rng.integers(0, n, size=(b, n))])
    alpha = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(out, [alpha, 100.0 - alpha])
    return (float(lo), float(hi))
