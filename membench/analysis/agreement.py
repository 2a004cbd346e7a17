"""Do the judgment sets rank systems alike? Rankings per judgment set and Kendall's tau.

:func:`rank_agreement` takes runs over the same items and returns, per scope (a modality),
measure and judgment set:

* ``rankings``: each system's mean over the items the set judges in that scope (``n``; the
  means of ``metrics.json``) and its rank (1 = best; ties share the lowest rank);
* ``tau``: per pair of judgment sets, Kendall's tau-b (:func:`scipy.stats.kendalltau`)
  between the systems' means, with a 95% paired bootstrap interval over the items either set
  judges (the same draw for every system and both sets), ``n_items``, ``n_a`` / ``n_b``,
  ``n_systems``, ``n_undefined`` (draws where every system ties under one set) and
  ``identical`` (two sets whose per-item values are the same for every system).

Only the sets of one modality are compared with each other; a measure that equals another for
every system and set in a scope (graded nDCG where no region carries a grade) is left out of
it. Generators are numpy PCG64 seeded with ``(seed, crc32("agreement|<scope>|<metric>|<set
a>|<set b>"))``. Reads run directories only; writes nothing. docs/runs.md ("Do the judgment
sets rank systems alike?") says how to read tau and its interval.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from ..core import progress
from ..core.errors import MembenchError
from ..core.hashing import keyed_rng
from ..metrics import SEED
from ..metrics.bootstrap import check_resamples
from ..metrics.measures import JUDGMENT_MEASURES
from ..modalities import MODALITIES
from .compare import common_judgment_sets, load_runs
from .frames import judgment_view, metric_values

#: measures ranked by default: first-stage recall (Q2D-Web's primary figure), recall@10,
#: early precision with binary and with graded gains
AGREEMENT_METRICS: tuple[str, ...] = ("recall@1000", "recall@10", "ndcg@10", "ndcg_graded@10")
N_AGREEMENT_RESAMPLES = 2000


@dataclass
class Agreement:
    labels: list[str]
    run_dirs: list[str]
    rankings: Any = None  # DataFrame: scope, metric, judgment_set, system, value, n, rank
    tau: Any = None  # DataFrame: scope, metric, set_a, set_b, tau, ci95, n...
    n_resamples: int = N_AGREEMENT_RESAMPLES
    skipped: list[str] = field(default_factory=list)  # (scope, metric) left out, and why

    def ranking_table(self, scope: str, metric: str):
        """One row per system, one column per judgment set: ``rank (mean)``."""
        import pandas as pd

        r = self.rankings
        g = r[(r["scope"] == scope) & (r["metric"] == metric)]
        out = {}
        for js, h in g.groupby("judgment_set", sort=False):
            h = h.set_index("system").loc[self.labels]
            out[f"{js} (n={int(h['n'].iloc[0])})"] = [
                f"{int(k)} ({v:.4f})" for k, v in zip(h["rank"], h["value"])
            ]
        return pd.DataFrame(out, index=self.labels)


def _ranks(values: np.ndarray) -> np.ndarray:
    """1 = the highest value; ties share the lowest rank (competition ranking)."""
    v = np.asarray(values, dtype=float)
    return np.array([1 + int((v > x + 1e-12).sum()) for x in v])


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b between two vectors of system means (NaN when one is constant)."""
    from scipy.stats import kendalltau

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(kendalltau(a, b).statistic)


def kendall_tau_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`kendall_tau` of each row pair of ``a`` and ``b`` ([resamples, systems]), at once:
    over the system pairs i < j, with ``sa = sign(a_i - a_j)`` and ``sb`` likewise, tau-b is
    ``sum(sa * sb) / sqrt(#(sa != 0)) / sqrt(#(sb != 0))`` (concordant minus discordant pairs
    over the pairs not tied in each), clipped to [-1, 1]; NaN when a row is constant. These
    are the integers and the float operations of ``scipy.stats.kendalltau`` (variant b), so the
    values are the same to the last bit (``tests/test_judgment_sets.py``), without scipy's
    per-call overhead (about 0.85 ms a call, 52,000 calls for one comparison page)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    i, j = np.triu_indices(a.shape[1], k=1)
    sa = np.sign(a[:, i] - a[:, j]).astype(np.int64)
    sb = np.sign(b[:, i] - b[:, j]).astype(np.int64)
    num = (sa * sb).sum(axis=1).astype(np.float64)
    nx = (sa != 0).sum(axis=1)
    ny = (sb != 0).sum(axis=1)
    out = np.full(a.shape[0], np.nan)
    ok = (nx > 0) & (ny > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = num[ok] / np.sqrt(nx[ok]) / np.sqrt(ny[ok])
    out[ok] = np.minimum(1.0, np.maximum(-1.0, tau))
    return out


def resampled_means(counts: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each system's mean in each resample: ``counts`` [resamples, items] (how often each
    item is drawn), ``values`` [systems, items] (NaN: not judged, left out of the mean) ->
    [resamples, systems]; NaN where a resample drew no judged item."""
    v = np.asarray(values, dtype=float)
    judged = (~np.isnan(v[0])).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts @ np.nan_to_num(v).T) / (counts @ judged)[:, None]


def bootstrap_tau(
    va: np.ndarray,
    vb: np.ndarray,
    key: str,
    *,
    n_resamples: int = N_AGREEMENT_RESAMPLES,
    seed: int = SEED,
    level: float = 0.95,
) -> dict[str, Any]:
    """Kendall's tau between the systems' means under two judgment sets, with the paired
    bootstrap interval of the module docstring. ``va`` / ``vb``: [systems, items] per-item
    values under each set, NaN where the set does not judge the item (the same items, the
    same order, in both)."""
    check_resamples(n_resamples)
    va = np.asarray(va, dtype=float)
    vb = np.asarray(vb, dtype=float)
    if va.shape != vb.shape or va.ndim != 2:
        raise ValueError("va and vb must be [systems, items] arrays of the same shape")
    # an item is judged by a set for every system or for none (judgments are the records')
    da, db = ~np.isnan(va[0]), ~np.isnan(vb[0])
    pool = np.flatnonzero(da | db)
    out: dict[str, Any] = {
        "n_systems": int(va.shape[0]),
        "n_items": int(pool.size),
        "n_a": int(da.sum()),
        "n_b": int(db.sum()),
    }
    if not da.any() or not db.any():
        return {
            **out,
            "tau": float("nan"),
            "ci95_lo": float("nan"),
            "ci95_hi": float("nan"),
            "n_undefined": n_resamples,
        }
    ma, mb = np.nanmean(va, axis=1), np.nanmean(vb, axis=1)
    tau = kendall_tau(ma, mb)
    pa, pb = va[:, pool], vb[:, pool]
    rng = keyed_rng(seed, key)
    n = pool.size
    taus = np.full(n_resamples, np.nan)
    rows = max(1, 2_000_000 // max(n, 1))
    done = 0
    while done < n_resamples:
        k = min(rows, n_resamples - done)
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=k).astype(float)  # [k, n]
        sa, sb = resampled_means(counts, pa), resampled_means(counts, pb)  # [k, systems]
        # a resample that drew no item one set judges stays NaN (undefined)
        drawn = ~np.isnan(sa).any(axis=1) & ~np.isnan(sb).any(axis=1)
        block = np.full(k, np.nan)
        block[drawn] = kendall_tau_rows(sa[drawn], sb[drawn])
        taus[done : done + k] = block
        done += k
    ok = taus[~np.isnan(taus)]
    alpha = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(ok, [alpha, 100.0 - alpha]) if ok.size else (np.nan, np.nan)
    return {
        **out,
        "tau": tau,
        "ci95_lo": float(lo),
        "ci95_hi": float(hi),
        "n_undefined": int(n_resamples - ok.size),
    }


def rank_agreement(
    run_dirs: list[str | os.PathLike],
    sets_dir: str | os.PathLike | None = None,
    *,
    metrics: tuple[str, ...] | list[str] = AGREEMENT_METRICS,
    n_resamples: int = N_AGREEMENT_RESAMPLES,
    seed: int = SEED,
    partial: bool = False,
    final: bool = False,
    frames: dict | None = None,
    labels: list[str] | None = None,
) -> Agreement:
    """Rankings of the runs' systems under every judgment set they share, and Kendall's tau
    between them (module docstring). The runs are opened and checked as by
    :func:`membench.analysis.compare.compare_runs` (same split, sets and items); ``frames``
    and ``labels`` (a :class:`~membench.analysis.compare.Comparison`'s ``base_items`` and
    ``labels``) skip the loading: frames under gold, as :func:`item_frame` gives them."""
    import pandas as pd

    check_resamples(n_resamples, "--resamples")
    bad = [m for m in metrics if m not in JUDGMENT_MEASURES]
    if bad:
        raise MembenchError(
            f"rank agreement is over measures computed per judgment set "
            f"({', '.join(JUDGMENT_MEASURES)}), not {', '.join(bad)}"
        )
    if frames is None:
        labels, _, frames = load_runs(run_dirs, sets_dir, partial=partial, final=final)
    labels = list(labels or frames)
    viewed = [lab for lab in labels if frames[lab].attrs.get("judgment_set", "gold") != "gold"]
    if viewed:
        raise MembenchError(
            f"rank agreement needs the item frames under gold (as item_frame "
            f"gives them; a Comparison's base_items), not under "
            f"{frames[viewed[0]].attrs['judgment_set']!r}"
        )
    if len(labels) < 2:
        raise MembenchError("rank agreement needs at least two runs")
    sets = common_judgment_sets(frames)
    views = {js: {lab: judgment_view(frames[lab], js) for lab in labels} for js in sets}
    base_mod = frames[labels[0]]["modality"].to_numpy()
    scopes = [m for m in MODALITIES if m in set(base_mod)]

    rank_rows, tau_rows, skipped = [], [], []
    plan = []
    for scope in scopes:
        mask = base_mod == scope
        for m in metrics:
            per_set = {
                js: np.vstack([metric_values(views[js][lab], m)[mask] for lab in labels])
                for js in sets
            }
            per_set = {js: v for js, v in per_set.items() if (~np.isnan(v[0])).any()}
            if len(per_set) < 2:
                continue
            if (
                m == "ndcg_graded@10"
                and "ndcg@10" in metrics
                and all(
                    np.array_equal(
                        v,
                        np.vstack(
                            [metric_values(views[js][lab], "ndcg@10")[mask] for lab in labels]
                        ),
                        equal_nan=True,
                    )
                    for js, v in per_set.items()
                )
            ):
                skipped.append(f"{scope} {m}: no graded region, equal to ndcg@10")
                continue
            plan.append((scope, m, per_set))
    n_tests = sum(len(list(combinations(p[2], 2))) for p in plan)
    with progress.step("rank agreement", total=n_tests, unit="pair") as bar:
        for scope, m, per_set in plan:
            for js, v in per_set.items():
                means = np.nanmean(v, axis=1)
                n = int((~np.isnan(v[0])).sum())
                for lab, val, rk in zip(labels, means, _ranks(means)):
                    rank_rows.append(
                        {
                            "scope": scope,
                            "metric": m,
                            "judgment_set": js,
                            "system": lab,
                            "value": float(val),
                            "n": n,
                            "rank": int(rk),
                        }
                    )
            for a, b in combinations(per_set, 2):
                bar.note(f"{scope} {m}")
                t = bootstrap_tau(
                    per_set[a],
                    per_set[b],
                    f"agreement|{scope}|{m}|{a}|{b}",
                    n_resamples=n_resamples,
                    seed=seed,
                )
                same = bool(np.array_equal(per_set[a], per_set[b], equal_nan=True))
                tau_rows.append(
                    {
                        "scope": scope,
                        "metric": m,
                        "set_a": a,
                        "set_b": b,
                        **t,
                        "identical": same,
                        "n_resamples": n_resamples,
                    }
                )
                bar.advance()
    return Agreement(
        labels=labels,
        run_dirs=[frames[lab].attrs.get("run_dir", "") for lab in labels],
        rankings=pd.DataFrame(rank_rows),
        tau=pd.DataFrame(tau_rows),
        n_resamples=n_resamples,
        skipped=skipped,
    )


def format_agreement(ag: Agreement) -> str:
    """Plain text for ``membench agreement``: per scope and measure, the ranking under each
    judgment set, then Kendall's tau between every two sets with its interval and n."""
    lines = [
        f"{len(ag.labels)} systems: "
        + ", ".join(f"{lab} ({d})" for lab, d in zip(ag.labels, ag.run_dirs))
    ]
    if ag.tau is None or not len(ag.tau):
        lines.append("no modality is judged under two or more judgment sets by these runs")
        return "\n".join(lines) + "\n"
    for (scope, m), g in ag.tau.groupby(["scope", "metric"], sort=False):
        lines.append(f"\n{scope} · {m}")
        t = ag.ranking_table(scope, m)
        w = max(len(x) for x in ag.labels) + 2
        lines.append("  " + f"{'system':<{w}}" + "".join(f"{c:>26}" for c in t.columns))
        for lab, row in t.iterrows():
            lines.append("  " + f"{lab:<{w}}" + "".join(f"{x:>26}" for x in row))
        for r in g.to_dict("records"):
            tau = "-" if np.isnan(r["tau"]) else f"{r['tau']:+.3f}"
            ci = "-" if np.isnan(r["ci95_lo"]) else f"[{r['ci95_lo']:+.3f}, {r['ci95_hi']:+.3f}]"
            lines.append(
                f"  tau({r['set_a']}, {r['set_b']}) = {tau} {ci}  "
                f"systems={r['n_systems']} items={r['n_items']} "
                f"(n {r['set_a']}={r['n_a']}, {r['set_b']}={r['n_b']})"
                + (f" undefined={r['n_undefined']}" if r["n_undefined"] else "")
                + (
                    " (the two sets give every system the same per-item values)"
                    if r["identical"]
                    else ""
                )
                + (" (every system ties under a set: no tau)" if np.isnan(r["tau"]) else "")
            )
    lines.append(
        f"\ntau: Kendall's tau-b between the systems' means; 95% interval: paired "
        f"bootstrap over queries, {ag.n_resamples} resamples (docs/runs.md)"
    )
    for s in ag.skipped:
        lines.append(f"left out: {s}")
    return "\n".join(lines) + "\n"


def agreement_markdown(ag: Agreement, *, skip_identical: bool = False) -> str:
    """The tau table as Markdown (README): scope, measure, sets, tau [95% interval], systems,
    items judged by each set (``skip_identical``: leave out pairs of sets that give every
    system the same per-item values)."""
    rows = [
        "| modality | measure | sets | Kendall's tau [95% CI] | systems | n (queries) |",
        "|---|---|---|---|---:|---|",
    ]
    for r in ag.tau.to_dict("records"):
        if skip_identical and r["identical"]:
            continue
        tau = "— (all tie)" if np.isnan(r["tau"]) else f"{r['tau']:.2f}"
        ci = "" if np.isnan(r["ci95_lo"]) else f" [{r['ci95_lo']:.2f}, {r['ci95_hi']:.2f}]"
        same = " (same values)" if r["identical"] else ""
        rows.append(
            f"| {r['scope']} | {r['metric']} | {r['set_a']} vs {r['set_b']}{same} | "
            f"{tau}{ci} | {r['n_systems']} | {r['set_a']} {r['n_a']}, "
            f"{r['set_b']} {r['n_b']} |"
        )
    return "\n".join(rows)


__all__ = [
    "AGREEMENT_METRICS",
    "Agreement",
    "agreement_markdown",
    "bootstrap_tau",
    "kendall_tau_rows",
    "format_agreement",
    "kendall_tau",
    "rank_agreement",
    "resampled_means",
]
