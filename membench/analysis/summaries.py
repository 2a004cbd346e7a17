"""A run's figures as tables for the notebooks: metrics.json side by side, gates with n and
denominator, coverage of the sources, latency."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.paths import resolve_user_path
from ..metrics.rundir import RunDir
from ..modalities import MODALITIES
from ..sets.coverage import read_coverage


def load_metrics(
    run: str | os.PathLike | RunDir, sets_dir: str | os.PathLike | None = None
) -> dict[str, Any]:
    """A run's figures (the ``metrics.json`` object), computed from its files every time:
    run.jsonl, atoms.jsonl and the sets, through :meth:`RunDir.metrics` with its refusals.
    ``RUN_DIR/metrics.json`` is never read here (anyone can edit it; a report shows what the
    run's files score) and RUN_DIR is not written."""
    rd = run if isinstance(run, RunDir) else RunDir.open(run, sets_dir)
    return rd.metrics(write=False)


def metrics_frame(
    metrics: dict[str, Any],
    *,
    scopes: list[str] | None = None,
    metric_names: list[str] | None = None,
):
    """metrics.json as a long table: scope, metric, value, n, denominator, ci95 lo/hi."""
    import pandas as pd

    scopes = scopes or [s for s in (*MODALITIES, "all") if s in metrics]
    rows = []
    for s in scopes:
        for m, e in metrics[s].items():
            if metric_names and m not in metric_names:
                continue
            rows.append(
                {
                    "scope": s,
                    "metric": m,
                    "value": e["value"],
                    "n": e["n"],
                    "denominator": e["denominator"],
                    "ci95_lo": e["ci95"][0],
                    "ci95_hi": e["ci95"][1],
                }
            )
    return pd.DataFrame(rows)


def submission_note(metrics: dict[str, Any]) -> str | None:
    """``"NOT A VALID SUBMISSION (label): reasons"`` when metrics.json says the run is not a
    valid submission (the system saw the gold, or it is read PARTIAL); else ``None``."""
    sub = metrics.get("submission") or {}
    if sub.get("valid", True):
        return None
    return f"NOT A VALID SUBMISSION ({sub.get('label') or sub.get('system')}): " + "; ".join(
        sub.get("reasons", [])
    )


def metrics_table(metrics: dict[str, Any], metric_names: list[str] | None = None):
    """metrics.json side by side: one row per metric, one column per scope, each cell
    ``value (n/denominator) [ci95 lo, hi]``; a run that is not a valid submission says so in
    the header (the columns' name)."""

    mf = metrics_frame(metrics, metric_names=metric_names)

    def cell(r) -> str:
        if r["value"] is None or (isinstance(r["value"], float) and math.isnan(r["value"])):
            return f"- ({r['n']}/{r['denominator']})"
        f = "{:.3g}" if r["metric"].startswith("latency") else "{:.3f}"
        ci = (
            "" if r["ci95_lo"] is None else f" [{f.format(r['ci95_lo'])}, {f.format(r['ci95_hi'])}]"
        )
        return f"{f.format(r['value'])} ({r['n']}/{r['denominator']}){ci}"

    mf["cell"] = [cell(r) for _, r in mf.iterrows()]
    t = mf.pivot(index="metric", columns="scope", values="cell")
    order = [m for m in metric_names or list(metrics.get("all", {})) if m in t.index]
    t = t.reindex(
        index=order + [m for m in t.index if m not in order],
        columns=[s for s in (*MODALITIES, "all") if s in t.columns],
    )
    t.columns.name = submission_note(metrics) or "scope"
    return t


def gates_frame(metrics: dict[str, Any]):
    """metrics.json's gates with the n / denominator of each checked value and PASS / FAIL /
    ``FAIL (silent)`` / n/a (no items in the denominator: never counted as a pass). The
    false-recall rows carry the scope's answerable abstention beside them
    (``abstain_rate_answerable``, with its n/denominator) and, when silent, ``why``."""
    import pandas as pd

    from ..metrics.aggregate import verdict_text

    rows = []
    for g in metrics.get("gates", []):
        block = metrics.get(g["scope"], {})
        e = block.get(g["metric"], {})
        comp = g.get("companion") or {}
        c = block.get(comp.get("metric", ""), {}) if comp else {}
        rows.append(
            {
                "scope": g["scope"],
                "metric": g["metric"],
                "gate": f"{g['op']} {g['threshold']}",
                "value": g["value"],
                "n": e.get("n"),
                "denominator": e.get("denominator"),
                "ci95_lo": (e.get("ci95") or [None])[0],
                "ci95_hi": (e.get("ci95") or [None, None])[1],
                "abstain_rate_answerable": comp.get("value") if comp else None,
                "abstain_n/den": (f"{c.get('n')}/{c.get('denominator')}" if comp else ""),
                "why": g.get("why") or "",
                "result": verdict_text(g).replace("n/a", "n/a (no items)"),
            }
        )
    df = pd.DataFrame(rows)
    note = submission_note(metrics)
    if note:  # every row says it: a gate passed by a run that saw the gold proves nothing
        df["submission"] = note
    return df


def coverage_frame(sets_dir: str | os.PathLike, df=None):
    """SETS/coverage.json, one row per source: ``mirrored``, ``status``, ``upstream_items``,
    ``covered``, ``not_covered`` (count) and ``not_covered_why``, ``repaired`` (upstream input
    that was normalised and kept); with an item frame ``df``, also ``evaluated_in_run``.
    Sources that are not mirrored say so: they were never run."""
    import pandas as pd

    path = resolve_user_path(sets_dir) / "coverage.json"
    if not path.exists():
        raise InputError(
            path, None, None, "file not found (membench build writes it)", rule="MISSING_FILE"
        )
    cov = read_coverage(path)
    evaluated = df.groupby("source").size().to_dict() if df is not None else {}
    rows = []
    for c in cov:
        nc = c.get("not_covered") or {}
        mirrored = bool(c.get("mirrored"))
        row = {
            "source": c["source"],
            "mirrored": mirrored,
            "status": "mirrored" if mirrored else "NOT MIRRORED: no items, never run",
            "upstream_items": c.get("upstream_items") if mirrored else None,
            "covered": c.get("covered") if mirrored else None,
            "not_covered": sum(nc.values()) if mirrored else None,
            "not_covered_why": "; ".join(f"{k}: {v}" for k, v in nc.items()) or "",
            "repaired": "; ".join(f"{k}: {v}" for k, v in (c.get("normalised") or {}).items())
            or "",
        }
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
        rows.append(
            {
                "modality": key,
                "n": int(v.size),
                "denominator": len(g),
                "p50_ms": float(np.percentile(v, 50)) if v.size else np.nan,
                "p95_ms": float(np.percentile(v, 95)) if v.size else np.nan,
                "max_ms": float(v.max()) if v.size else np.nan,
            }
        )
    return pd.DataFrame(rows)
