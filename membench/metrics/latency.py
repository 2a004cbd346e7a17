"""Compile latency (SPEC section 7): p50 and p95 of the wall-clock milliseconds the runner
measured per query (question in, cartridge out).

Percentiles use numpy's default (linear interpolation between closest ranks, "type 7").
``n`` is the number of queries with a run line; the denominator is all annotated items of the
slice, so a partial run shows as ``n < denominator`` rather than as a faster system.
"""

from __future__ import annotations

import numpy as np


def percentile(values: np.ndarray, q: float) -> float | None:
    """The ``q``-th percentile of ``values`` (NaNs ignored); ``None`` when there are none."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return None
    return float(np.percentile(v, q))
