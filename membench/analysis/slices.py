"""Slices of a run's items: where does a system fail? (SPEC section 8)

:func:`slice_table` gives, per slice (one row per combination of some item-frame columns), n,
the denominators and recall@10 (answerable items), false-recall rate (audited unanswerable
items) and beside it the false recall of the natives with an upstream tell (their own column:
SPEC section 5), holder and temporal correctness (all items), each with a
percentile-bootstrap 95% interval keyed like metrics.json, and its gate verdicts;
:func:`worst_slices` ranks single-dimension slices worst first; :func:`compact` formats a
table for reading. Gates and denominators are the
measure registry's (:mod:`membench.metrics.measures`).

Both take ``judgment_set``: the slices are then read under that set
(:func:`membench.analysis.frames.judgment_view`): recall, MRR, nDCG and cartridge recall are
that set's, over the items it judges (``n_answerable`` counts them), and the measures that do
not depend on relevance are the same as under gold. The bootstrap keys of a slice under a set
are prefixed ``judgments:<name>:`` (a modality slice reproduces metrics.json's
``judgment_sets`` entry).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..metrics import SEED, abstention
from ..metrics.aggregate import latency_entry, mean_entry
from ..metrics.measures import MAX_FALSE_RECALL, ORDERING_MEASURES, gate
from ..metrics.score import PRIMARY
from .frames import judgment_view, metric_values

#: dimensions :func:`worst_slices` looks at (SPEC section 8)
SLICE_DIMS: tuple[str, ...] = (
    "modality",
    "source",
    "holder",
    "as_of_bucket",
    "scenario",
    "derivation",
    "text_source",
)
#: metrics of a slice table by default: one per failure kind, beside false recall the natives
#: with an upstream tell (never pooled with it) and the answerable abstention (a false-recall
#: rate means nothing without it)
SLICE_METRICS: tuple[str, ...] = (
    "recall@10",
    "false_recall_rate",
    "false_recall_native",
    "abstain_rate_answerable",
    "holder_correctness",
    "temporal_correctness",
)


def _slice_key(by: list[str], values: tuple, judgment_set: str | None = None) -> str:
    """Bootstrap key of a slice: the same as metrics.json for a modality or source slice, so
    the intervals agree with metrics.json (under an alternative judgment set, as its
    ``judgment_sets`` block)."""
    if judgment_set not in (None, PRIMARY):
        if by == ["modality"]:
            return f"judgments:{judgment_set}:{values[0]}"
        return f"judgments:{judgment_set}:" + ",".join(f"{c}={v}" for c, v in zip(by, values))
    if by == ["modality"]:
        return str(values[0])
    if by == ["source"]:
        return f"source:{values[0]}"
    return ",".join(f"{c}={v}" for c, v in zip(by, values))


def gate_margin(metric: str, value: float | None) -> float:
    """How far ``value`` is on the passing side of its gate (negative: the gate fails); for a
    metric without a gate (:mod:`membench.metrics.measures`), NaN."""
    g = gate(metric)
    if value is None or (isinstance(value, float) and math.isnan(value)) or g is None:
        return float("nan")
    return g.margin(value)


def slice_table(
    df,
    by: str | list[str],
    *,
    metrics: tuple[str, ...] | list[str] = SLICE_METRICS,
    sort: bool = True,
    seed: int = SEED,
    n_resamples: int = 1000,
    judgment_set: str | None = None,
):
    """Per slice (one row per combination of ``by`` values): ``n`` items, the denominators
    ``n_answerable`` (recall and other answerable-item measures: the items with a recall value,
    i.e. those the judgment set judges), ``n_unanswerable`` (the audited unanswerable items:
    false recall's) and ``n_native_tell`` (the natives with an upstream tell:
    ``false_recall_native``'s; holder/temporal correctness are over all ``n``), and per metric
    its value
    with ``<metric>_lo`` / ``<metric>_hi`` (percentile bootstrap 95%, keyed like metrics.json:
    a slice over ``modality`` reproduces metrics.json's values and intervals). A value whose
    denominator is 0 is NaN, never 0.

    The abstention-order statistics (``answerable_kept@fr0.10``, ``abstention_auc``:
    :mod:`membench.metrics.abstention`) may be asked for too; they are computed from the
    frame's ``abstention_score`` and ``abstained`` columns, within each modality, over the
    audited items (the natives with an upstream tell are outside their denominators).

    ``gate_failures`` lists the slice's metrics that miss their gate; ``worst_margin`` is the
    smallest :func:`gate_margin` over the gated metrics (negative = failing) and
    ``worst_metric`` names it. A slice whose false recall passes while it abstains on more
    than :data:`~membench.metrics.measures.MAX_SILENT_ABSTENTION` of its answerable items
    fails as ``false_recall_rate (silent)``, its margin the bound minus the abstention. With
    ``sort`` the worst slices come first (``worst_margin`` ascending, then larger ``n``
    first)."""
    import pandas as pd

    by = [by] if isinstance(by, str) else list(by)
    if judgment_set not in (None, PRIMARY):
        df = judgment_view(df, judgment_set)
    out = []
    for keys, g in df.groupby(by, sort=True, dropna=False, observed=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        judged = ~np.isnan(g["recall@10"].to_numpy(dtype=float))
        unans = ~g["answerable"].to_numpy(dtype=bool)
        audited = g["audited"].to_numpy(dtype=bool)
        row: dict[str, Any] = dict(zip(by, keys))
        row.update(
            n=len(g),
            n_answerable=int(judged.sum()),
            n_unanswerable=int((unans & audited).sum()),
            n_native_tell=int((unans & ~audited).sum()),
        )
        key = _slice_key(by, keys, judgment_set)
        margins = []
        fails = []
        ordering = [m for m in metrics if m in ORDERING_MEASURES]
        if ordering:
            au = g[audited]
            oe = abstention.entries(
                au["abstention_score"].to_numpy(dtype=float),
                ~au["abstained"].to_numpy(dtype=bool),
                au["answerable"].to_numpy(dtype=bool),
                au["modality"].to_numpy(dtype=object),
                key,
                max_false_recall=MAX_FALSE_RECALL,
                seed=seed,
                n_resamples=n_resamples,
            )
        for m in metrics:
            if m in ORDERING_MEASURES:
                e = oe[m]
            elif m.startswith("latency_p"):
                q = 50.0 if m == "latency_p50_ms" else 95.0
                e = latency_entry(
                    g["latency_ms"].to_numpy(dtype=float),
                    q,
                    f"{key}|{m}",
                    seed=seed,
                    n_resamples=n_resamples,
                )
            else:
                e = mean_entry(
                    metric_values(g, m), f"{key}|{m}", seed=seed, n_resamples=n_resamples
                )
            v = np.nan if e["value"] is None else e["value"]
            row[m] = v
            row[f"{m}_lo"] = np.nan if e["ci95"][0] is None else e["ci95"][0]
            row[f"{m}_hi"] = np.nan if e["ci95"][1] is None else e["ci95"][1]
            mg = gate_margin(m, v)
            if not math.isnan(mg):
                g_ = gate(m)
                if g_.silent_if is not None and not math.isnan(v):
                    cv = metric_values(g, g_.silent_if[0])
                    comp = float(np.nanmean(cv)) if (~np.isnan(cv)).any() else None
                    if g_.silent(comp):
                        margins.append((g_.silent_if[1] - comp, f"{m} (silent)"))
                        fails.append(f"{m} (silent)")
                        continue
                margins.append((mg, m))
                if mg < -1e-12:
                    fails.append(m)
        row["gate_failures"] = ", ".join(fails)
        if margins:
            mg, m = min(margins)
            row["worst_margin"], row["worst_metric"] = mg, m
        else:
            row["worst_margin"], row["worst_metric"] = np.nan, ""
        out.append(row)
    t = pd.DataFrame(out)
    if sort and len(t):
        t = t.sort_values(
            ["worst_margin", "n"], ascending=[True, False], na_position="last", kind="stable"
        ).reset_index(drop=True)
    return t


def compact(table, *, digits: int = 3):
    """A slice table for reading: each metric's value and interval in one cell,
    ``value [lo, hi]`` ("-" where the denominator is 0)."""
    t = table.copy()
    metrics = [
        c[:-3]
        for c in t.columns
        if c.endswith("_lo") and f"{c[:-3]}_hi" in t.columns and c[:-3] in t.columns
    ]
    for m in metrics:
        t[m] = [
            ("-" if math.isnan(v) else f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]")
            for v, lo, hi in zip(t[m], t[f"{m}_lo"], t[f"{m}_hi"])
        ]
        t = t.drop(columns=[f"{m}_lo", f"{m}_hi"])
    if "worst_margin" in t.columns:
        t["worst_margin"] = t["worst_margin"].round(digits)
    return t


def worst_slices(
    df,
    k: int = 10,
    *,
    dims: tuple[str, ...] | list[str] = SLICE_DIMS,
    min_n: int = 5,
    metrics: tuple[str, ...] | list[str] = SLICE_METRICS,
    seed: int = SEED,
    n_resamples: int = 1000,
    judgment_set: str | None = None,
):
    """The ``k`` worst single-dimension slices over ``dims`` (columns ``dimension``,
    ``slice``, then :func:`slice_table`'s), among slices with at least ``min_n`` items (tiny
    slices are all noise; their count is in ``df.attrs['dropped_small']``); under
    ``judgment_set`` as :func:`slice_table`."""
    import pandas as pd

    parts = []
    for d in dims:
        t = slice_table(
            df,
            [d],
            metrics=metrics,
            sort=False,
            seed=seed,
            n_resamples=n_resamples,
            judgment_set=judgment_set,
        )
        t.insert(0, "dimension", d)
        t = t.rename(columns={d: "slice"})
        t["slice"] = t["slice"].astype(str)
        parts.append(t)
    all_ = pd.concat(parts, ignore_index=True)
    keep = all_[all_["n"] >= min_n]
    res = (
        keep.sort_values(
            ["worst_margin", "n"], ascending=[True, False], na_position="last", kind="stable"
        )
        .head(k)
        .reset_index(drop=True)
    )
    res.attrs["dropped_small"] = int(len(all_) - len(keep))
    res.attrs["min_n"] = min_n
    return res


def item_counts(df, by: str | list[str] = ("modality", "derivation")):
    """How many items each slice of ``by`` holds: columns ``answerable``, ``unanswerable`` and
    ``all items`` (every column named, never a bare True / False), rows by ``by``."""
    import pandas as pd

    by = [by] if isinstance(by, str) else list(by)
    kind = df["answerable"].map({True: "answerable", False: "unanswerable"})
    t = pd.crosstab([df[c] for c in by], kind)
    for c in ("answerable", "unanswerable"):
        if c not in t.columns:
            t[c] = 0
    t = t[["answerable", "unanswerable"]]
    t["all items"] = t.sum(axis=1)
    t.columns.name = None
    return t
