"""Power of the paired test: the smallest difference between two systems a comparison on
these items would detect (docs/sets.md, "How small a difference the dev split can tell").

* :func:`mean_variance`: the variance of a mean of per-item differences, by record (items
  independent) or clustered by holder (a holder's items move together);
* :func:`mdd`: the minimum detectable difference ``(z_{1-alpha/2} + z_power) * se``;
* :func:`typical_pair`: over every pair of the given runs, per scope and measure, the median
  of the variance of the mean paired difference, and the MDD it gives; clustered by holder
  where the scope has at least :data:`membench.sets.audit.MIN_HOLDERS_CI` holders (as the
  audit's intervals), else by record (and the table says so);
* :func:`power_table`: :func:`typical_pair` for every scope and :data:`POWER_MEASURES`;
* :func:`power_sentence`: what the report index says under "which system is best";
* :func:`simulate_power`: the share of simulated comparisons at a given true difference
  that :func:`membench.analysis.compare.paired_test`'s rule calls significant (the test
  resamples by holder on the same threshold, so the MDD read here is the test's).

Reads per-item scores (:class:`membench.metrics.score.ItemScores`); writes nothing.
"""

from __future__ import annotations

import math
from itertools import combinations
from statistics import NormalDist
from typing import Any

import numpy as np

from ..sets.audit import MIN_HOLDERS_CI

ALPHA = 0.05
POWER = 0.80
#: the measures the power table reports (recall@10, and false recall over the audited
#: unanswerable items: the headline false recall)
POWER_MEASURES = ("recall@10", "false_recall_rate")


def z_sum(alpha: float = ALPHA, power: float = POWER) -> float:
    """``z_{1-alpha/2} + z_{power}`` (two-sided test)."""
    nd = NormalDist()
    return nd.inv_cdf(1.0 - alpha / 2.0) + nd.inv_cdf(power)


def mdd(se: float | None, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The minimum detectable difference of a two-sided test at ``alpha`` with ``power``,
    for a mean difference of standard error ``se`` (normal approximation)."""
    if se is None or not math.isfinite(se):
        return None
    return z_sum(alpha, power) * se


def mean_variance(d: np.ndarray, groups: np.ndarray | list | None = None) -> float:
    """Variance of ``mean(d)``. Without ``groups``: ``s^2 / n`` (sample variance, ddof 1).
    With ``groups`` (one label per item, its holder): the cluster-robust variance
    ``G / (G - 1) * sum_g (sum_{i in g} (d_i - mean))^2 / n^2`` over the G groups, which equals
    the first when every group holds one item and does not shrink when every group's items are
    repeated. NaN under 2 items (or 2 groups)."""
    d = np.asarray(d, dtype=np.float64)
    n = d.size
    if groups is None:
        return float(d.var(ddof=1) / n) if n >= 2 else math.nan
    g = np.asarray(groups, dtype=object)
    if g.shape != d.shape:
        raise ValueError("groups must be aligned with the differences")
    _, inv = np.unique(g.astype(str), return_inverse=True)
    k = int(inv.max()) + 1 if n else 0
    if k < 2:
        return math.nan
    sums = np.bincount(inv, weights=d - d.mean(), minlength=k)
    return float(k / (k - 1) * (sums**2).sum() / n**2)


def _aligned(scores: dict[str, Any]) -> tuple[list[str], dict[str, np.ndarray]]:
    """The first run's query ids, and per label the index that puts its items in that order."""
    labels = list(scores)
    ref = list(scores[labels[0]].query_id)
    pos = {q: i for i, q in enumerate(ref)}
    order = {}
    for lab in labels:
        ids = list(scores[lab].query_id)
        if set(ids) != set(ref):
            raise ValueError(f"{lab} and {labels[0]} evaluate different items")
        order[lab] = np.argsort([pos[q] for q in ids])
    return ref, order


def differences(
    scores: dict[str, Any], measure: str, scope: str, a: str, b: str
) -> tuple[np.ndarray, np.ndarray]:
    """``a``'s minus ``b``'s per-item ``measure`` over ``scope``'s items where both are
    defined (in the first run's item order), and each item's holder."""
    ref, order = _aligned(scores)
    lab0 = next(iter(scores))
    mods = np.asarray(scores[lab0].modality, dtype=object)[order[lab0]]
    holders = np.asarray(scores[lab0].holder, dtype=object)[order[lab0]]
    mask = np.ones(len(ref), bool) if scope == "all" else mods == scope
    va, vb = (
        np.asarray(scores[x].values[measure], dtype=np.float64)[order[x]][mask] for x in (a, b)
    )
    ok = ~np.isnan(va) & ~np.isnan(vb)
    return va[ok] - vb[ok], holders[mask][ok]


def typical_pair(
    scores: dict[str, Any],
    measure: str,
    scope: str = "all",
    *,
    min_holders: int = MIN_HOLDERS_CI,
    alpha: float = ALPHA,
    power: float = POWER,
) -> dict[str, Any]:
    """The power of a paired comparison of ``measure`` over ``scope``'s items (``all`` or a
    modality) for a typical pair of the runs in ``scores`` (label -> ItemScores, the same
    items): per pair, the variance of the mean difference over the items both define, by
    record and clustered by holder; the typical pair's is the median over the pairs (a pair
    equal on every item, ``identical``, is left out: nothing varies, nothing is tested). ``unit``
    is ``"holders"`` with at least ``min_holders`` holders among those items, else
    ``"records"``; ``mdd`` is read with that unit's variance (``mdd_records`` and
    ``mdd_holders`` are both given, ``design_effect`` is their variances' ratio)."""
    if len(scores) < 2:
        raise ValueError("power needs at least two runs")
    pairs = {}
    for a, b in combinations(scores, 2):
        d, h = differences(scores, measure, scope, a, b)
        pairs[f"{a} vs {b}"] = {
            "n": int(d.size),
            "holders": len(set(h)),
            "diff": float(d.mean()) if d.size else None,
            "identical": bool(d.size) and not d.any(),
            "var_records": mean_variance(d) if d.size else math.nan,
            "var_holders": mean_variance(d, h) if d.size else math.nan,
        }
    n = max(p["n"] for p in pairs.values())
    k = max(p["holders"] for p in pairs.values())
    unit = "holders" if k >= min_holders else "records"

    def med(key: str) -> float:
        # a pair whose values agree on every item has no variance to read: left out
        v = [p[key] for p in pairs.values() if math.isfinite(p[key]) and not p["identical"]]
        return float(np.median(v)) if v else math.nan

    vr, vh = med("var_records"), med("var_holders")
    v = vh if unit == "holders" else vr
    key = "var_holders" if unit == "holders" else "var_records"
    near = sorted(
        (abs(p[key] - v), name)
        for name, p in pairs.items()
        if math.isfinite(v) and math.isfinite(p[key]) and not p["identical"]
    )
    fin = lambda x: x if math.isfinite(x) else None  # noqa: E731
    return {
        "measure": measure,
        "scope": scope,
        "n": n,
        "holders": k,
        "unit": unit,
        "se": fin(math.sqrt(v)) if math.isfinite(v) else None,
        "mdd": mdd(math.sqrt(v), alpha, power) if math.isfinite(v) else None,
        "mdd_records": mdd(math.sqrt(vr), alpha, power) if math.isfinite(vr) else None,
        "mdd_holders": mdd(math.sqrt(vh), alpha, power) if math.isfinite(vh) else None,
        "design_effect": fin(vh / vr) if math.isfinite(vh) and vr > 0 else None,
        "median_pair": near[0][1] if near else None,
        "alpha": alpha,
        "power": power,
        "min_holders": min_holders,
        "pairs": {
            name: {kk: (fin(x) if isinstance(x, float) else x) for kk, x in p.items()}
            for name, p in pairs.items()
        },
    }


def power_table(
    scores: dict[str, Any],
    scopes: list[str] | None = None,
    measures: tuple[str, ...] = POWER_MEASURES,
    **kw,
) -> dict[str, dict[str, Any]]:
    """``{scope: {measure: typical_pair(...)}}`` for each modality the runs hold (in
    :data:`membench.modalities.MODALITIES` order) and ``all`` (or ``scopes``)."""
    from ..modalities import MODALITIES

    if scopes is None:
        present = set(next(iter(scores.values())).modality)
        scopes = [m for m in MODALITIES if m in present] + ["all"]
    return {s: {m: typical_pair(scores, m, s, **kw) for m in measures} for s in scopes}


def items_needed(row: dict[str, Any], target: float) -> int | None:
    """How many items of the kind ``row`` (a :func:`typical_pair` row) counts the same pair
    would need for its MDD to be ``target``: the variance of a mean falls as 1/n, so
    ``n x (mdd / target)^2``, at the same per-item variance and design effect (more holders
    of the same make, not more queries of the same holders). ``None`` without an MDD."""
    if row.get("mdd") is None or not row.get("n") or target <= 0:
        return None
    return math.ceil(row["n"] * (row["mdd"] / target) ** 2)


def _fig(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def power_sentence(rows: dict[str, dict[str, Any]], split: str | None = None) -> str:
    """One sentence from a scope's :func:`typical_pair` rows (measure -> row): the difference
    a paired test detects at 80% power in recall@10 and in false recall, n and how the
    variance was read."""
    r, f = rows.get("recall@10"), rows.get("false_recall_rate")
    if not r or not f:
        return ""
    where = f"on {split}" if split else "on these items"
    how = (
        f"clustered by holder: {r['holders']} holders"
        if r["unit"] == "holders"
        else f"by record: {r['holders']} holders, under {r['min_holders']}, too few to cluster, "
        "so a lower bound"
    )
    pairs = sum(not p["identical"] for p in r["pairs"].values())
    typical = "of the pair" if pairs == 1 else f"the median over {pairs} pairs"
    text = (
        f"Power: {where}, a paired test detects a difference of \u2265 {_fig(r['mdd'])} in "
        f"recall@10 (n = {r['n']}) and \u2265 {_fig(f['mdd'])} in false recall "
        f"(n = {f['n']} audited unanswerable) at {r['power']:.0%} power (two-sided "
        f"\u03b1 = {r['alpha']:g}; the variance of the mean difference, {typical} of "
        f"compared systems, {how}). A smaller lead is one these items cannot resolve"
    )
    if r["unit"] == "holders":
        text += (
            f"; the paired tests here resample by holder too (read as if items were "
            f"independent, the same power would claim \u2265 {_fig(r['mdd_records'])} and "
            f"\u2265 {_fig(f['mdd_records'])})"
        )
    return text + "."


def simulate_power(
    d: np.ndarray,
    delta: float,
    *,
    groups: np.ndarray | list | None = None,
    n_sims: int = 200,
    n_resamples: int = 2000,
    seed: int = 0,
    alpha: float = ALPHA,
) -> dict[str, Any]:
    """The share of ``n_sims`` simulated comparisons that membench's paired test calls
    significant (permutation p and bootstrap p both under ``alpha``, as
    :func:`membench.analysis.compare.best_systems` with one measure) when the true mean
    difference is ``delta``: each simulated sample draws the centred differences
    ``d - mean(d) + delta`` with replacement, by item, or by holder (a drawn holder brings all
    its items) with ``groups``; ``test_unit`` is how the test resampled; the test is given each drawn holder as a holder of its own,
    so it resamples by holder where they number at least ``MIN_HOLDERS_CI`` (as on real
    runs). Returns ``rate``, its binomial 95% interval and the inputs."""
    from .paired import _paired_test

    d = np.asarray(d, dtype=np.float64)
    c = d - d.mean() + delta
    rng = np.random.default_rng(seed)
    if groups is not None:
        _, inv = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)
        members = [np.flatnonzero(inv == g) for g in range(int(inv.max()) + 1)]
    hits = 0
    units = set()
    for s in range(n_sims):
        codes = None
        if groups is None:
            x = c[rng.integers(0, c.size, c.size)]
        else:
            drawn = rng.integers(0, len(members), len(members))
            x = np.concatenate([c[members[j]] for j in drawn])
            codes = np.concatenate(
                [np.full(members[j].size, i, dtype=np.int64) for i, j in enumerate(drawn)]
            )
        t = _paired_test(
            x,
            np.zeros_like(x),
            f"power-sim|{s}",
            n_resamples=n_resamples,
            seed=seed,
            level=1.0 - alpha,
            groups=codes,
        )
        hits += bool(t["p_permutation"] < alpha and t["p_bootstrap"] < alpha)
        units.add(t["unit"])
    rate = hits / n_sims
    half = 1.959964 * math.sqrt(max(rate * (1 - rate), 1e-12) / n_sims)
    return {
        "delta": delta,
        "n_sims": n_sims,
        "n_resamples": n_resamples,
        "seed": seed,
        "by": "holders" if groups is not None else "records",
        "significant": hits,
        "test_unit": "/".join(sorted(units)),
        "rate": rate,
        "rate_ci95": [max(0.0, rate - half), min(1.0, rate + half)],
    }


__all__ = [
    "ALPHA",
    "POWER",
    "POWER_MEASURES",
    "mdd",
    "mean_variance",
    "power_sentence",
    "power_table",
    "simulate_power",
    "typical_pair",
    "z_sum",
]
