"""Plots of a run's item frame (matplotlib / seaborn, imported lazily, no display needed)."""

from __future__ import annotations

import numpy as np

from ..analysis.frames import metric_values
from ..analysis.summaries import latency_summary
from ..metrics.measures import MAX_FALSE_RECALL


def _plt():
    # no backend is forced: a notebook kernel uses its inline backend, and matplotlib falls
    # back to Agg by itself where there is no display
    import matplotlib.pyplot as plt

    return plt


def _judged(df):
    """The items in the recall denominator: the answerable ones, or under a judgment set
    (:func:`membench.analysis.frames.judgment_view`) the ones it judges."""
    return df["judged"] if "judged" in df.columns else df["answerable"]


def plot_recall_heatmap(
    df, *, row: str = "modality", col: str = "as_of_bucket", metric: str = "recall@10", ax=None
):
    """Heatmap of ``metric`` over answerable items, ``row`` x ``col``; each cell shows the
    value and its n (= its denominator: the answerable items in the cell)."""
    import seaborn as sns

    plt = _plt()
    a = df[_judged(df)].copy()
    a["_v"] = metric_values(a, metric)
    val = a.pivot_table(index=row, columns=col, values="_v", aggfunc="mean", observed=True)
    cnt = a.pivot_table(
        index=row, columns=col, values="_v", aggfunc="count", observed=True
    ).reindex_like(val)
    annot = val.copy().astype(object)
    for i in val.index:
        for j in val.columns:
            v, c = val.loc[i, j], cnt.loc[i, j]
            annot.loc[i, j] = "" if np.isnan(v) else f"{v:.2f}\nn={int(c)}"
    if ax is None:
        _, ax = plt.subplots(
            figsize=(1.6 * max(3, len(val.columns)) + 2, 0.7 * max(3, len(val.index)) + 1.5)
        )
    sns.heatmap(
        val.astype(float),
        annot=annot.to_numpy(),
        fmt="",
        vmin=0,
        vmax=1,
        cmap="RdYlGn",
        ax=ax,
        cbar_kws={"label": metric},
    )
    ax.set_title(f"{metric} by {row} x {col} (answerable items, n={len(a)} of {len(df)})")
    return ax.figure


def _jitter(collections, width: float = 0.1) -> None:
    """Spread the points of a horizontal strip plot over ``width`` either side of their row,
    as seaborn's ``jitter=True`` does, but from a generator of a fixed seed rather than
    numpy's global one: the same figure, byte for byte, at every rendering."""
    rng = np.random.default_rng(0)
    for coll in collections:
        xy = np.array(coll.get_offsets(), dtype=float)
        if len(xy) > 1:
            xy[:, 1] += rng.uniform(-width, width, len(xy))
            coll.set_offsets(xy)


def plot_holder_spread(df, *, metric: str = "recall@10", ax=None):
    """Per-holder mean ``metric`` (answerable items), one point per holder, box per
    modality; the y labels give the number of holders and answerable items."""
    import seaborn as sns

    plt = _plt()
    a = df[_judged(df)].copy()
    a["_v"] = metric_values(a, metric)
    h = a.groupby(["modality", "holder"], observed=True)["_v"].agg(["mean", "size"]).reset_index()
    labels = {
        m: f"{m}\n({g['holder'].nunique()} holders, n={int(g['size'].sum())})"
        for m, g in h.groupby("modality")
    }
    h["label"] = h["modality"].map(labels)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.9 * max(3, len(labels)) + 1))
    sns.boxplot(data=h, x="mean", y="label", color="0.9", showfliers=False, ax=ax)
    before = len(ax.collections)
    sns.stripplot(data=h, x="mean", y="label", size=5, alpha=0.7, jitter=False, ax=ax)
    _jitter(ax.collections[before:])
    ax.set_xlabel(f"per-holder mean {metric}")
    ax.set_ylabel("")
    ax.set_xlim(-0.02, 1.02)
    ax.set_title(
        f"{metric} spread over holders ({h['holder'].nunique()} holders, {len(a)} answerable items)"
    )
    ax.figure.tight_layout()
    return ax.figure


def plot_latency(df, *, kind: str = "cdf", ax=None):
    """Compile latency per modality: ``kind="cdf"`` (empirical CDF, log x) or ``"hist"``; the
    legend gives each modality's n / denominator and p50 / p95."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.5))
    summ = latency_summary(df).set_index("modality")
    for m, g in df.groupby("modality", sort=True):
        v = np.sort(g["latency_ms"].dropna().to_numpy(dtype=float))
        s = summ.loc[m]
        lab = (
            f"{m} n={int(s['n'])}/{int(s['denominator'])} p50={s['p50_ms']:.1f} "
            f"p95={s['p95_ms']:.1f} ms"
        )
        if not v.size:
            continue
        if kind == "cdf":
            ax.step(v, np.arange(1, v.size + 1) / v.size, where="post", label=lab)
        else:
            ax.hist(
                v,
                bins=np.logspace(
                    np.log10(max(v.min(), 1e-3)), np.log10(max(v.max(), 1e-3) * 1.01), 40
                ),
                histtype="step",
                label=lab,
            )
    ax.set_xscale("log")
    ax.set_xlabel("compile latency (ms, log scale)")
    ax.set_ylabel("share of queries" if kind == "cdf" else "queries")
    s = summ.loc["all"]
    ax.set_title(
        f"latency {kind} (n={int(s['n'])} of {int(s['denominator'])} items; "
        f"p50={s['p50_ms']:.1f} ms, p95={s['p95_ms']:.1f} ms)"
    )
    ax.legend(fontsize=8)
    return ax.figure


def plot_threshold_sweep(sweep, df=None, *, by: str = "modality", ax=None):
    """False-recall rate (x, over the audited unanswerable items: the frame's ``false_recall``)
    vs the answerable recall proxy (y) as the threshold moves, one curve per group; with the
    item frame ``df``, the system's actual cartridge as a cross (x = its false-recall rate,
    y = its share of answerable items whose cartridge hits gold)."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 5))
    for key, g in sweep.groupby(by, sort=True):
        g = g.sort_values("threshold")
        na, nu = int(g["n_answerable"].iloc[0]), int(g["n_unanswerable"].iloc[0])
        (line,) = ax.plot(
            g["false_recall_rate"],
            g["answerable_recall_proxy"],
            marker=".",
            label=f"{key} (answerable {na}, unanswerable {nu})",
        )
        if df is not None:
            d = df[df[by] == key]
            fr = d["false_recall"].mean()
            hit = (d.loc[d["answerable"], "cartridge_recall"] > 0).mean()
            ax.plot([fr], [hit], marker="x", markersize=10, color=line.get_color())
    ax.set_xlabel("false-recall rate (audited unanswerable items with a non-empty cartridge)")
    ax.set_ylabel("answerable items whose kept top-1 hits gold")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.axvline(MAX_FALSE_RECALL, color="0.6", ls="--", lw=1)
    ax.set_title(
        "cartridge = top-1 if score >= t" + (" (x: actual cartridge)" if df is not None else "")
    )
    ax.legend(fontsize=8)
    return ax.figure


def plot_forest(pairs, *, alpha: float = 0.05):
    """Forest plot of paired differences: one panel per metric, one row per (scope, pair),
    the mean difference ``diff = mean(a - b)`` with its paired-bootstrap 95% interval; filled
    markers where ``significant_0.05`` holds, a vertical line at 0. Row labels carry n."""
    plt = _plt()
    metrics = list(dict.fromkeys(pairs["metric"]))
    ncols = 2 if len(metrics) > 1 else 1
    nrows = (len(metrics) + ncols - 1) // ncols
    per = max(len(pairs[pairs["metric"] == m]) for m in metrics) if metrics else 1
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(7.5 * ncols, 0.28 * per * nrows + 1.6), squeeze=False
    )
    for ax, m in zip(axes.flat, metrics):
        g = pairs[pairs["metric"] == m].reset_index(drop=True)
        y = np.arange(len(g))[::-1]
        sig = g["significant_0.05"].astype(bool).to_numpy()
        lo = (g["diff"] - g["diff_ci95_lo"]).to_numpy(dtype=float)
        hi = (g["diff_ci95_hi"] - g["diff"]).to_numpy(dtype=float)
        ax.errorbar(g["diff"], y, xerr=[lo, hi], fmt="none", ecolor="0.45", lw=1)
        ax.scatter(
            g["diff"][sig],
            y[sig],
            color="C3",
            zorder=3,
            s=22,
            label=f"significant at {alpha} (Holm)",
        )
        ax.scatter(
            g["diff"][~sig],
            y[~sig],
            facecolors="white",
            edgecolors="0.3",
            zorder=3,
            s=22,
            label="not significant",
        )
        ax.axvline(0, color="0.3", lw=0.8)
        ax.set_yticks(y)
        ax.set_yticklabels(
            [f"{r.scope}: {r.system_a} − {r.system_b} (n={r.n})" for r in g.itertuples()],
            fontsize=8,
        )
        ax.set_title(f"{m}: mean(a − b) with paired-bootstrap 95% interval", fontsize=10)
        ax.tick_params(axis="x", labelsize=8)
    for ax in list(axes.flat)[len(metrics) :]:
        ax.axis("off")
    if metrics:
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=8, loc="upper center", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / fig.get_figheight()))
    return fig
