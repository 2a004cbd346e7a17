"""Slicing a run's per-item results: where does a system fail? (SPEC section 8)

The notebooks ``02_run_dev`` and ``03_slice_failures`` call this module and only display.

* :func:`load_run` / :func:`item_frame`: one row per evaluated item of a run directory, built
  from :func:`membench.metrics.score_items` (``ItemScores.rows()``) joined with the records and
  the run lines; no metric is recomputed here.
* :func:`slice_table` / :func:`worst_slices`: per-slice n, denominators, recall@10 (answerable
  items), false-recall rate (unanswerable items), holder and temporal correctness (all items),
  each with a percentile-bootstrap 95% interval (:func:`membench.metrics.bootstrap_ci`); worst
  first.
* :func:`threshold_sweep`: the false-recall vs recall trade-off of a simulated cartridge
  "the top-1 atom if its score >= t".
* run summaries for the notebooks: :func:`metrics_frame`, :func:`gates_frame`,
  :func:`coverage_frame`, :func:`latency_summary`; and plots (matplotlib/seaborn, imported lazily,
  no display needed).

Columns of :func:`item_frame` (NaN where an item is outside a measure's denominator)::

    query_id, modality, source (query_id before ':'), holder, scenario, session,
    derivation ("native" | "transactive" | "temporal"), answerable, as_of (UTC Timestamp),
    as_of_quarter ("2023Q4", calendar, UTC), as_of_bucket (see below), has_run, n_gold, n_hits,
    recall@10, recall@100, recall@1000, rr (reciprocal rank: per-item MRR), ndcg@10,
    cartridge_size, cartridge_recall, false_recall (1.0/0.0 on unanswerable items),
    abstained (empty cartridge), holder_leak (a returned hit or cartridge atom of another
    holder), temporal_leak (one observed after as_of), n_foreign, n_future, latency_ms,
    top1_score (score of the rank-1 hit, NaN without hits), top1_hit (the rank-1 hit hits a
    gold region, i.e. rr == 1; False on unanswerable items)

``as_of_bucket``: the builder gives most sources a synthetic ingestion timeline of a few days
(calendar quarters would put almost everything in one bucket), so the bucket is a **per-source
quantile of as_of**: items of one source are ranked by as_of and cut into ``n_buckets`` (4)
equal-count groups, labelled ``"1/4"`` (earliest) to ``"4/4"`` (latest); items with the same
as_of always share a bucket (rank method "max"), so a source with few distinct times fills
fewer buckets. ``as_of_quarter`` keeps the calendar view.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError, MembenchError
from ..core.jsonl import iter_json_lines, parse_model
from ..core.paths import DEFAULT_SETS_DIR, REPO_ROOT
from ..metrics import GATES, SEED, load_records, read_atoms, read_run, score_items
from ..metrics.aggregate import latency_entry, mean_entry
from ..metrics.rundir import _resolve_sets_dir
from ..metrics.score import ItemScores
from ..modalities import MODALITIES
from ..run.files import RunRow
from ..sets.schema import AnnotationRecord, SourceItem

#: dimensions :func:`worst_slices` looks at (SPEC section 8)
SLICE_DIMS: tuple[str, ...] = ("modality", "source", "holder", "as_of_bucket", "scenario",
                               "derivation")
#: metrics of a slice table by default: one per failure kind
SLICE_METRICS: tuple[str, ...] = ("recall@10", "false_recall_rate", "holder_correctness",
                                  "temporal_correctness")
N_BUCKETS = 4

# metrics.json metric name -> how to get its per-item values from an item frame
_DENOMINATOR = {
    "recall@10": "answerable", "recall@100": "answerable", "recall@1000": "answerable",
    "mrr": "answerable", "ndcg@10": "answerable", "cartridge_recall": "answerable",
    "abstain_rate_answerable": "answerable", "false_recall_rate": "unanswerable",
    "holder_correctness": "all", "temporal_correctness": "all",
}
_GATE = {m: (op, t) for m, op, t in GATES}


# --------------------------------------------------------------------------- loading


@dataclass
class LoadedRun:
    """A scored run directory: what :func:`item_frame` and :mod:`membench.analysis.compare` work on."""

    run_dir: Path
    meta: dict[str, Any]
    sets_dir: Path
    records: list[AnnotationRecord]
    scores: ItemScores
    run_rows: dict[str, RunRow]

    @property
    def system(self) -> str:
        return str(self.meta.get("system") or self.run_dir.name)


def resolve_path(p: str | os.PathLike) -> Path:
    """A notebook parameter path: absolute as is; relative to the current directory if it
    exists there, else relative to the repository root (papermill runs from the repo root,
    JupyterLab starts kernels in ``notebooks/``)."""
    p = Path(p)
    if p.is_absolute() or p.exists():
        return p
    alt = REPO_ROOT / p
    if alt.exists() or Path.cwd().resolve() == (REPO_ROOT / "notebooks").resolve():
        return alt      # (a path to create, from a kernel in notebooks/: the repo root's)
    return p


def read_meta(run_dir: Path) -> dict[str, Any]:
    """A run directory's meta.json (:class:`InputError` when missing or not JSON)."""
    meta_path = run_dir / "meta.json"
    if not meta_path.exists():
        raise InputError(meta_path, None, None, "file not found: not a run directory (make one "
                         "with `membench run --system NAME --out RUN_DIR`)", rule="MISSING_FILE")
    try:
        return json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(meta_path, e.lineno, None, f"not valid JSON: {e.msg}",
                         rule="JSON") from None


def run_status(run_dir: str | os.PathLike) -> str:
    """``"missing"`` (no run.jsonl), ``"complete"`` (meta.json says so) or the meta.json
    status of an interrupted run (``"running"``; ``"unknown"`` without meta.json)."""
    run_dir = resolve_path(run_dir)
    if not (run_dir / "run.jsonl").exists():
        return "missing"
    if not (run_dir / "meta.json").exists():
        return "unknown"
    return str(read_meta(run_dir).get("status") or "unknown")


def run_sets_dir(run_dir: str | os.PathLike, sets_dir: str | os.PathLike | None = None) -> Path:
    """The sets folder a run is evaluated against: ``sets_dir`` if given, else the run's
    meta.json ``sets_dir``, else the repository's ``bench/sets``."""
    run_dir = resolve_path(run_dir)
    if sets_dir is not None:
        return resolve_path(sets_dir)
    meta = read_meta(run_dir) if (run_dir / "meta.json").exists() else {}
    if not meta.get("sets_dir"):
        return DEFAULT_SETS_DIR
    return _resolve_sets_dir(run_dir, None, meta)


def load_run(run_dir: str | os.PathLike, sets_dir: str | os.PathLike | None = None) -> LoadedRun:
    """Read and score a run directory, selecting the evaluated records exactly as
    :func:`membench.metrics.metrics_for_run_dir` does (split, modalities, limit)."""
    run_dir = resolve_path(run_dir)
    meta = read_meta(run_dir)
    split = meta.get("split")
    if split not in ("dev", "test"):
        raise InputError(run_dir / "meta.json", None, "split",
                         f"must be dev or test, got {split!r}", rule="RUN_META")
    sdir = _resolve_sets_dir(run_dir, resolve_path(sets_dir) if sets_dir is not None else None,
                             meta)
    recs, locs = load_records(sdir, split, meta.get("modalities") or None, meta.get("limit"))
    if isinstance(meta.get("queries"), int) and meta["queries"] != len(recs):
        raise InputError(run_dir / "meta.json", None, "queries",
                         f"the run was asked {meta['queries']} queries but {sdir} gives "
                         f"{len(recs)} records; the sets changed since the run", rule="RUN_META")
    for name in ("atoms.jsonl", "run.jsonl"):
        if not (run_dir / name).exists():
            raise InputError(run_dir / name, None, None, "file not found", rule="MISSING_FILE")
    items_path = sdir / "items.jsonl"
    items = [parse_model(SourceItem, obj, items_path, no)
             for no, obj in iter_json_lines(items_path)]
    rows = read_run(run_dir / "run.jsonl")
    scores = score_items(recs, items, read_atoms(run_dir / "atoms.jsonl"), rows,
                         record_locs=locs)
    return LoadedRun(run_dir, meta, sdir, recs, scores, {r.query_id: r for r in rows})


def _as_of_bucket(as_of, source, n_buckets: int) -> list[str]:
    pct = as_of.groupby(source).rank(method="max", pct=True)
    b = np.clip(np.ceil(pct.to_numpy() * n_buckets), 1, n_buckets).astype(int)
    return [f"{x}/{n_buckets}" for x in b]


def item_frame(run: str | os.PathLike | LoadedRun, sets_dir: str | os.PathLike | None = None,
               *, n_buckets: int = N_BUCKETS):
    """One row per evaluated item of a run (columns: module docstring). ``df.attrs`` carries
    ``run_dir``, ``system``, ``split``, ``sets_dir`` and ``n_buckets``."""
    import pandas as pd

    lr = run if isinstance(run, LoadedRun) else load_run(run, sets_dir)
    rows = lr.scores.rows()
    df = pd.DataFrame(rows)
    if df.empty:
        raise MembenchError(f"{lr.run_dir}: no evaluated items")
    recs = lr.records
    df["scenario"] = [r.scope.scenario for r in recs]
    df["session"] = [r.scope.session for r in recs]
    df["derivation"] = df["derivation"].fillna("native")
    df["as_of"] = pd.to_datetime(df["as_of"], utc=True, format="ISO8601")
    df["as_of_quarter"] = df["as_of"].dt.tz_localize(None).dt.to_period("Q").astype(str)
    df["as_of_bucket"] = _as_of_bucket(df["as_of"], df["source"], n_buckets)
    df = df.rename(columns={"mrr": "rr", "false_recall_rate": "false_recall"})
    df["abstained"] = df["cartridge_size"] == 0
    df["holder_leak"] = df["n_foreign"] > 0
    df["temporal_leak"] = df["n_future"] > 0
    top1 = []
    for q in df["query_id"]:
        row = lr.run_rows.get(q)
        top1.append(float(row.scores.max()) if row is not None and row.scores.size else np.nan)
    df["top1_score"] = top1
    df["top1_hit"] = df["answerable"] & (df["rr"] == 1.0)
    df["latency_ms"] = df["latency_ms"].astype(float)
    cols = ["query_id", "modality", "source", "holder", "scenario", "session", "derivation",
            "answerable", "as_of", "as_of_quarter", "as_of_bucket", "has_run", "n_gold",
            "n_hits", "recall@10", "recall@100", "recall@1000", "rr", "ndcg@10",
            "cartridge_size", "cartridge_recall", "false_recall", "abstained", "holder_leak",
            "temporal_leak", "n_foreign", "n_future", "latency_ms", "top1_score", "top1_hit"]
    extra = [c for c in df.columns if c not in cols and c not in (
        "temporal_correctness", "holder_correctness", "abstain_rate_answerable")]
    df = df[cols + extra]      # judgment-set columns ("<name>/recall@10", ...) kept at the end
    for c in ("recall@10", "recall@100", "recall@1000", "rr", "ndcg@10", "cartridge_recall",
              "false_recall"):
        df[c] = df[c].astype(float)
    df.attrs.update({"run_dir": str(lr.run_dir), "system": lr.system,
                     "split": lr.meta.get("split"), "sets_dir": str(lr.sets_dir),
                     "n_buckets": n_buckets})
    return df


def metric_values(df, metric: str) -> np.ndarray:
    """Per-item values of a metrics.json mean metric from an item frame, NaN outside its
    denominator (the same numbers :func:`score_items` produced)."""
    ans = df["answerable"].to_numpy(dtype=bool)
    if metric == "mrr":
        return df["rr"].to_numpy(dtype=float)
    if metric == "false_recall_rate":
        return df["false_recall"].to_numpy(dtype=float)
    if metric == "holder_correctness":
        return 1.0 - df["holder_leak"].to_numpy(dtype=float)
    if metric == "temporal_correctness":
        return 1.0 - df["temporal_leak"].to_numpy(dtype=float)
    if metric == "abstain_rate_answerable":
        return np.where(ans, df["abstained"].to_numpy(dtype=float), np.nan)
    if metric in df.columns:
        return df[metric].to_numpy(dtype=float)
    raise KeyError(f"unknown metric {metric!r}")


# --------------------------------------------------------------------------- slices


def _slice_key(by: list[str], values: tuple) -> str:
    """Bootstrap key of a slice: the same as metrics.json for a modality or source slice, so
    the intervals agree with metrics.json."""
    if by == ["modality"]:
        return str(values[0])
    if by == ["source"]:
        return f"source:{values[0]}"
    return ",".join(f"{c}={v}" for c, v in zip(by, values))


def gate_margin(metric: str, value: float | None) -> float:
    """How far ``value`` is on the passing side of its gate (negative: the gate fails); for a
    metric without a gate, NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or metric not in _GATE:
        return float("nan")
    op, t = _GATE[metric]
    return value - t if op == ">=" else t - value


def slice_table(df, by: str | list[str], *, metrics: tuple[str, ...] | list[str] = SLICE_METRICS,
                sort: bool = True, seed: int = SEED, n_resamples: int = 1000):
    """Per slice (one row per combination of ``by`` values): ``n`` items, the denominators
    ``n_answerable`` (recall and other answerable-item measures) and ``n_unanswerable``
    (false recall; holder/temporal correctness are over all ``n``), and per metric its value
    with ``<metric>_lo`` / ``<metric>_hi`` (percentile bootstrap 95%, keyed like metrics.json:
    a slice over ``modality`` reproduces metrics.json's values and intervals). A value whose
    denominator is 0 is NaN, never 0.

    ``gate_failures`` lists the slice's metrics that miss their gate; ``worst_margin`` is the
    smallest :func:`gate_margin` over the gated metrics (negative = failing) and
    ``worst_metric`` names it. With ``sort`` the worst slices come first (``worst_margin``
    ascending, then larger ``n`` first)."""
    import pandas as pd

    by = [by] if isinstance(by, str) else list(by)
    out = []
    for keys, g in df.groupby(by, sort=True, dropna=False, observed=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        ans = g["answerable"].to_numpy(dtype=bool)
        row: dict[str, Any] = dict(zip(by, keys))
        row.update(n=len(g), n_answerable=int(ans.sum()), n_unanswerable=int((~ans).sum()))
        key = _slice_key(by, keys)
        margins = []
        fails = []
        for m in metrics:
            if m.startswith("latency_p"):
                q = 50.0 if m == "latency_p50_ms" else 95.0
                e = latency_entry(g["latency_ms"].to_numpy(dtype=float), q, f"{key}|{m}",
                                  seed=seed, n_resamples=n_resamples)
            else:
                e = mean_entry(metric_values(g, m), f"{key}|{m}", seed=seed,
                               n_resamples=n_resamples)
            v = np.nan if e["value"] is None else e["value"]
            row[m] = v
            row[f"{m}_lo"] = np.nan if e["ci95"][0] is None else e["ci95"][0]
            row[f"{m}_hi"] = np.nan if e["ci95"][1] is None else e["ci95"][1]
            mg = gate_margin(m, v)
            if not math.isnan(mg):
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
        t = t.sort_values(["worst_margin", "n"], ascending=[True, False], na_position="last",
                          kind="stable").reset_index(drop=True)
    return t


def compact(table, *, digits: int = 3):
    """A slice table for reading: each metric's value and interval in one cell,
    ``value [lo, hi]`` ("-" where the denominator is 0)."""
    t = table.copy()
    metrics = [c[:-3] for c in t.columns if c.endswith("_lo") and f"{c[:-3]}_hi" in t.columns
               and c[:-3] in t.columns]
    for m in metrics:
        t[m] = [("-" if math.isnan(v) else f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]")
                for v, lo, hi in zip(t[m], t[f"{m}_lo"], t[f"{m}_hi"])]
        t = t.drop(columns=[f"{m}_lo", f"{m}_hi"])
    if "worst_margin" in t.columns:
        t["worst_margin"] = t["worst_margin"].round(digits)
    return t


def worst_slices(df, k: int = 10, *, dims: tuple[str, ...] | list[str] = SLICE_DIMS,
                 min_n: int = 5, metrics: tuple[str, ...] | list[str] = SLICE_METRICS,
                 seed: int = SEED, n_resamples: int = 1000):
    """The ``k`` worst single-dimension slices over ``dims`` (columns ``dimension``,
    ``slice``, then :func:`slice_table`'s), among slices with at least ``min_n`` items (tiny
    slices are all noise; their count is in ``df.attrs['dropped_small']``)."""
    import pandas as pd

    parts = []
    for d in dims:
        t = slice_table(df, [d], metrics=metrics, sort=False, seed=seed, n_resamples=n_resamples)
        t.insert(0, "dimension", d)
        t = t.rename(columns={d: "slice"})
        t["slice"] = t["slice"].astype(str)
        parts.append(t)
    all_ = pd.concat(parts, ignore_index=True)
    keep = all_[all_["n"] >= min_n]
    res = keep.sort_values(["worst_margin", "n"], ascending=[True, False], na_position="last",
                           kind="stable").head(k).reset_index(drop=True)
    res.attrs["dropped_small"] = int(len(all_) - len(keep))
    res.attrs["min_n"] = min_n
    return res


# --------------------------------------------------------------------------- threshold sweep


def threshold_sweep(data, thresholds=None, *, by: str = "modality", n_points: int = 41,
                    sets_dir: str | os.PathLike | None = None):
    """The trade-off a cartridge score threshold buys: for each threshold ``t`` the simulated
    cartridge of an item is its top-1 hit if ``top1_score >= t``, else empty (abstain).
    ``data`` is an item frame or a run directory.

    Per ``by`` group (default per modality: scores of different modalities need not be on one
    scale) and threshold: ``n_answerable``, ``n_unanswerable``, ``false_recall_rate``
    (unanswerable items whose simulated cartridge is non-empty / n_unanswerable),
    ``answerable_recall_proxy`` (answerable items whose kept top-1 hits a gold region /
    n_answerable: a cartridge-recall proxy that gives an item 1 when its top-1 hits any of its
    gold regions), ``abstain_rate_answerable`` (answerable items left with an empty cartridge)
    and ``kept_rate`` (all items with a non-empty cartridge).

    Thresholds: given ones are used for every group; by default per group the ``n_points``
    quantiles of its top-1 scores, plus one value above the maximum (everything abstains).
    Items without hits abstain at every threshold. This is a *what if* on the ranking: the
    system's own cartridge is what the metrics score (compare with the frame's
    ``false_recall`` / ``cartridge_recall``)."""
    import pandas as pd

    df = data if isinstance(data, pd.DataFrame) else item_frame(data, sets_dir)
    out = []
    for key, g in df.groupby(by, sort=True):
        s = g["top1_score"].to_numpy(dtype=float)
        ans = g["answerable"].to_numpy(dtype=bool)
        hit = g["top1_hit"].to_numpy(dtype=bool)
        if thresholds is None:
            fin = s[~np.isnan(s)]
            if fin.size:
                ts = np.unique(np.quantile(fin, np.linspace(0.0, 1.0, n_points)))
                ts = np.append(ts, np.nextafter(fin.max(), np.inf))
            else:
                ts = np.array([0.0])
        else:
            ts = np.asarray(list(thresholds), dtype=float)
        n_a, n_u = int(ans.sum()), int((~ans).sum())
        with np.errstate(invalid="ignore"):
            for t in ts:
                kept = ~np.isnan(s) & (s >= t)
                out.append({
                    by: key, "threshold": float(t), "n": len(g), "n_answerable": n_a,
                    "n_unanswerable": n_u,
                    "false_recall_rate": (kept & ~ans).sum() / n_u if n_u else np.nan,
                    "answerable_recall_proxy": (kept & ans & hit).sum() / n_a if n_a else np.nan,
                    "abstain_rate_answerable": (~kept & ans).sum() / n_a if n_a else np.nan,
                    "kept_rate": kept.mean(),
                })
    return pd.DataFrame(out)


def sweep_operating_points(sweep, *, max_false_recall: float | None = None, by: str = "modality"):
    """Per group, the threshold with the highest ``answerable_recall_proxy`` whose
    false-recall rate stays within ``max_false_recall`` (default: the false-recall gate,
    0.10); NaN threshold when no threshold meets it (or the group has no unanswerable
    items)."""
    import pandas as pd

    cap = _GATE["false_recall_rate"][1] if max_false_recall is None else max_false_recall
    rows = []
    for key, g in sweep.groupby(by, sort=True):
        ok = g[g["false_recall_rate"] <= cap + 1e-12]
        base = {by: key, "n_answerable": int(g["n_answerable"].iloc[0]),
                "n_unanswerable": int(g["n_unanswerable"].iloc[0]), "max_false_recall": cap}
        if ok.empty:
            rows.append({**base, "threshold": np.nan, "false_recall_rate": np.nan,
                         "answerable_recall_proxy": np.nan, "abstain_rate_answerable": np.nan})
            continue
        best = ok.sort_values(["answerable_recall_proxy", "threshold"],
                              ascending=[False, True]).iloc[0]
        rows.append({**base, **{k: float(best[k]) for k in (
            "threshold", "false_recall_rate", "answerable_recall_proxy",
            "abstain_rate_answerable")}})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- run summaries


def load_metrics(run_dir: str | os.PathLike, sets_dir: str | os.PathLike | None = None,
                 *, recompute: bool = False) -> dict[str, Any]:
    """``RUN_DIR/metrics.json``, computed (and written) when missing, older than the run, or
    when ``recompute`` / an explicit ``sets_dir`` asks for it."""
    from ..metrics import metrics_for_run_dir

    run_dir = resolve_path(run_dir)
    p = run_dir / "metrics.json"
    fresh = p.exists() and p.stat().st_mtime >= (run_dir / "run.jsonl").stat().st_mtime
    if fresh and not recompute and sets_dir is None:
        return json.loads(p.read_text(encoding="utf-8"))
    return metrics_for_run_dir(run_dir, resolve_path(sets_dir) if sets_dir else None)


def metrics_frame(metrics: dict[str, Any], *, scopes: list[str] | None = None,
                  metric_names: list[str] | None = None):
    """metrics.json as a long table: scope, metric, value, n, denominator, ci95 lo/hi."""
    import pandas as pd

    scopes = scopes or [s for s in (*MODALITIES, "all") if s in metrics]
    rows = []
    for s in scopes:
        for m, e in metrics[s].items():
            if metric_names and m not in metric_names:
                continue
            rows.append({"scope": s, "metric": m, "value": e["value"], "n": e["n"],
                         "denominator": e["denominator"], "ci95_lo": e["ci95"][0],
                         "ci95_hi": e["ci95"][1]})
    return pd.DataFrame(rows)


def metrics_table(metrics: dict[str, Any], metric_names: list[str] | None = None):
    """metrics.json side by side: one row per metric, one column per scope, each cell
    ``value (n/denominator) [ci95 lo, hi]``."""

    mf = metrics_frame(metrics, metric_names=metric_names)

    def cell(r) -> str:
        if r["value"] is None or (isinstance(r["value"], float) and math.isnan(r["value"])):
            return f"- ({r['n']}/{r['denominator']})"
        f = "{:.3g}" if r["metric"].startswith("latency") else "{:.3f}"
        ci = "" if r["ci95_lo"] is None else \
            f" [{f.format(r['ci95_lo'])}, {f.format(r['ci95_hi'])}]"
        return f"{f.format(r['value'])} ({r['n']}/{r['denominator']}){ci}"

    mf["cell"] = [cell(r) for _, r in mf.iterrows()]
    t = mf.pivot(index="metric", columns="scope", values="cell")
    order = [m for m in metric_names or list(metrics.get("all", {})) if m in t.index]
    return t.reindex(index=order + [m for m in t.index if m not in order],
                     columns=[s for s in (*MODALITIES, "all") if s in t.columns])


def gates_frame(metrics: dict[str, Any]):
    """metrics.json's gates with the n / denominator of each checked value and PASS / FAIL /
    n/a (no items in the denominator: never counted as a pass)."""
    import pandas as pd

    rows = []
    for g in metrics.get("gates", []):
        e = metrics.get(g["scope"], {}).get(g["metric"], {})
        rows.append({"scope": g["scope"], "metric": g["metric"],
                     "gate": f"{g['op']} {g['threshold']}", "value": g["value"],
                     "n": e.get("n"), "denominator": e.get("denominator"),
                     "ci95_lo": (e.get("ci95") or [None])[0],
                     "ci95_hi": (e.get("ci95") or [None, None])[1],
                     "result": {True: "PASS", False: "FAIL", None: "n/a (no items)"}[g["pass"]]})
    return pd.DataFrame(rows)


def coverage_frame(sets_dir: str | os.PathLike | None = None, df=None):
    """SETS/coverage.json per source: mirrored or not, upstream items, covered, not covered
    (count and reasons); with an item frame ``df``, also the items this run evaluated. Sources
    that are not mirrored are listed as such: they were never run."""
    import pandas as pd

    sdir = resolve_path(sets_dir) if sets_dir else DEFAULT_SETS_DIR
    path = sdir / "coverage.json"
    if not path.exists():
        raise InputError(path, None, None, "file not found (membench build writes it)",
                         rule="MISSING_FILE")
    cov = json.loads(path.read_text(encoding="utf-8"))
    evaluated = df.groupby("source").size().to_dict() if df is not None else {}
    rows = []
    for c in cov:
        nc = c.get("not_covered") or {}
        mirrored = bool(c.get("mirrored"))
        row = {"source": c["source"], "mirrored": mirrored,
               "upstream_items": c.get("upstream_items") if mirrored else None,
               "covered": c.get("covered") if mirrored else None,
               "not_covered": sum(nc.values()) if mirrored else None,
               "not_covered_why": "; ".join(f"{k}: {v}" for k, v in nc.items()) or "",
               "status": "mirrored" if mirrored else "NOT MIRRORED: no items, never run"}
        if df is not None:
            row["evaluated_in_run"] = int(evaluated.get(c["source"], 0))
        rows.append(row)
    out = pd.DataFrame(rows)
    for c in ("upstream_items", "covered", "not_covered"):
        out[c] = out[c].astype("Int64")
    return out


def latency_summary(df):
    """Per modality (and all): items with a latency / all items, p50 and p95 (ms), max."""
    import pandas as pd

    rows = []
    for key, g in [*df.groupby("modality", sort=True), ("all", df)]:
        lat = g["latency_ms"].to_numpy(dtype=float)
        v = lat[~np.isnan(lat)]
        rows.append({"modality": key, "n": int(v.size), "denominator": len(g),
                     "p50_ms": float(np.percentile(v, 50)) if v.size else np.nan,
                     "p95_ms": float(np.percentile(v, 95)) if v.size else np.nan,
                     "max_ms": float(v.max()) if v.size else np.nan})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- plots


def _plt():
    # no backend is forced: a notebook kernel uses its inline backend, and matplotlib falls
    # back to Agg by itself where there is no display
    import matplotlib.pyplot as plt

    return plt


def plot_recall_heatmap(df, *, row: str = "modality", col: str = "as_of_bucket",
                        metric: str = "recall@10", ax=None):
    """Heatmap of ``metric`` over answerable items, ``row`` x ``col``; each cell shows the
    value and its n (= its denominator: the answerable items in the cell)."""
    import seaborn as sns

    plt = _plt()
    a = df[df["answerable"]].copy()
    a["_v"] = metric_values(a, metric)
    val = a.pivot_table(index=row, columns=col, values="_v", aggfunc="mean", observed=True)
    cnt = a.pivot_table(index=row, columns=col, values="_v", aggfunc="count",
                        observed=True).reindex_like(val)
    annot = val.copy().astype(object)
    for i in val.index:
        for j in val.columns:
            v, c = val.loc[i, j], cnt.loc[i, j]
            annot.loc[i, j] = "" if np.isnan(v) else f"{v:.2f}\nn={int(c)}"
    if ax is None:
        _, ax = plt.subplots(figsize=(1.6 * max(3, len(val.columns)) + 2,
                                      0.7 * max(3, len(val.index)) + 1.5))
    sns.heatmap(val.astype(float), annot=annot.to_numpy(), fmt="", vmin=0, vmax=1,
                cmap="RdYlGn", ax=ax, cbar_kws={"label": metric})
    ax.set_title(f"{metric} by {row} x {col} (answerable items, n={len(a)} of {len(df)})")
    return ax.figure


def plot_holder_spread(df, *, metric: str = "recall@10", ax=None):
    """Per-holder mean ``metric`` (answerable items), one point per holder, box per
    modality; the y labels give the number of holders and answerable items."""
    import seaborn as sns

    plt = _plt()
    a = df[df["answerable"]].copy()
    a["_v"] = metric_values(a, metric)
    h = a.groupby(["modality", "holder"], observed=True)["_v"].agg(["mean", "size"]).reset_index()
    labels = {m: f"{m}\n({g['holder'].nunique()} holders, n={int(g['size'].sum())})"
              for m, g in h.groupby("modality")}
    h["label"] = h["modality"].map(labels)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.9 * max(3, len(labels)) + 1))
    sns.boxplot(data=h, x="mean", y="label", color="0.9", showfliers=False, ax=ax)
    sns.stripplot(data=h, x="mean", y="label", size=5, alpha=0.7, ax=ax)
    ax.set_xlabel(f"per-holder mean {metric}")
    ax.set_ylabel("")
    ax.set_xlim(-0.02, 1.02)
    ax.set_title(f"{metric} spread over holders ({h['holder'].nunique()} holders, "
                 f"{len(a)} answerable items)")
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
        lab = (f"{m} n={int(s['n'])}/{int(s['denominator'])} p50={s['p50_ms']:.1f} "
               f"p95={s['p95_ms']:.1f} ms")
        if not v.size:
            continue
        if kind == "cdf":
            ax.step(v, np.arange(1, v.size + 1) / v.size, where="post", label=lab)
        else:
            ax.hist(v, bins=np.logspace(np.log10(max(v.min(), 1e-3)),
                                        np.log10(max(v.max(), 1e-3) * 1.01), 40),
                    histtype="step", label=lab)
    ax.set_xscale("log")
    ax.set_xlabel("compile latency (ms, log scale)")
    ax.set_ylabel("share of queries" if kind == "cdf" else "queries")
    s = summ.loc["all"]
    ax.set_title(f"latency {kind} (n={int(s['n'])} of {int(s['denominator'])} items; "
                 f"p50={s['p50_ms']:.1f} ms, p95={s['p95_ms']:.1f} ms)")
    ax.legend(fontsize=8)
    return ax.figure


def plot_threshold_sweep(sweep, df=None, *, by: str = "modality", ax=None):
    """False-recall rate (x) vs the answerable recall proxy (y) as the threshold moves, one
    curve per group; with the item frame ``df``, the system's actual cartridge as a cross
    (x = its false-recall rate, y = its share of answerable items whose cartridge hits gold)."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 5))
    for key, g in sweep.groupby(by, sort=True):
        g = g.sort_values("threshold")
        na, nu = int(g["n_answerable"].iloc[0]), int(g["n_unanswerable"].iloc[0])
        line, = ax.plot(g["false_recall_rate"], g["answerable_recall_proxy"], marker=".",
                        label=f"{key} (answerable {na}, unanswerable {nu})")
        if df is not None:
            d = df[df[by] == key]
            fr = d["false_recall"].mean()
            hit = (d.loc[d["answerable"], "cartridge_recall"] > 0).mean()
            ax.plot([fr], [hit], marker="x", markersize=10, color=line.get_color())
    ax.set_xlabel("false-recall rate (unanswerable items with a non-empty cartridge)")
    ax.set_ylabel("answerable items whose kept top-1 hits gold")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.axvline(_GATE["false_recall_rate"][1], color="0.6", ls="--", lw=1)
    ax.set_title("cartridge = top-1 if score >= t" + (" (x: actual cartridge)" if df is not None
                                                       else ""))
    ax.legend(fontsize=8)
    return ax.figure


__all__ = [
    "N_BUCKETS",
    "SLICE_DIMS",
    "SLICE_METRICS",
    "LoadedRun",
    "compact",
    "coverage_frame",
    "gate_margin",
    "gates_frame",
    "item_frame",
    "latency_summary",
    "load_metrics",
    "load_run",
    "metric_values",
    "metrics_frame",
    "metrics_table",
    "plot_holder_spread",
    "plot_latency",
    "plot_recall_heatmap",
    "plot_threshold_sweep",
    "read_meta",
    "resolve_path",
    "run_sets_dir",
    "run_status",
    "slice_table",
    "sweep_operating_points",
    "threshold_sweep",
    "worst_slices",
]
