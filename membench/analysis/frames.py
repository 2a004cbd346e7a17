"""One row per evaluated item of a run: the frame every analysis works from.

:func:`item_frame` is built from the run's per-item scores
(:meth:`membench.metrics.rundir.RunDir.scores`, i.e. :func:`membench.metrics.score_items`)
joined with the records and the run lines; no metric is recomputed here, and nothing is
written. :func:`judgment_view` gives the frame under one judgment set.

Columns (NaN where an item is outside a measure's denominator)::

    query_id, modality, source (query_id before ':'), holder, scenario, session,
    derivation ("native" | TELL_NATIVE | "transactive" | "temporal"), answerable, audited,
    as_of (UTC), as_of_quarter ("2023Q4"), as_of_bucket ("1/4".."4/4", per-source quantile),
    has_run, n_gold, n_hits, recall@10, recall@100, recall@1000, rr, ndcg@10, ndcg_graded@10,
    cartridge_size, cartridge_recall, false_recall (audited unanswerables),
    false_recall_native (natives with an upstream tell), abstained, holder_leak,
    temporal_leak, n_foreign, n_future, latency_ms, top1_score, top1_hit, abstention_score
    (reported confidence, else top1_score, else -inf), text_source ("pdf text layer" |
    "pdf image-only (OCR)" | "OCR" | "captions" | "code" | "turns")

then ``<name>/<measure>`` for each alternative judgment set the records carry and each
measure computed per set (NaN on items the set does not judge). ``audited`` is
:func:`membench.contract.tells.audited`; ``as_of_bucket`` cuts each source's items by as_of
into ``n_buckets`` equal-count groups, items with the same as_of sharing one. docs/reports.md
("Page 03: the slices") says why these slices exist.
"""

from __future__ import annotations

import os

import numpy as np

from ..core.errors import MembenchError
from ..metrics.cartridge import silence_values
from ..metrics.measures import JUDGMENT_MEASURES, SILENCE
from ..metrics.rundir import RunDir
from ..metrics.score import PRIMARY

N_BUCKETS = 4
#: the derivation of a native unanswerable with an upstream tell (its own slice)
TELL_NATIVE = "native, upstream tell"


def text_sources(items) -> dict[str, str]:
    """holder -> where its memory's words come from (the frame's ``text_source``:
    :meth:`membench.modalities.Modality.text_source` of its items; a holder whose items differ
    gets the first in sorted order of the labels that are not OCR-only, so one text-layer PDF
    makes a holder "pdf text layer")."""
    from .. import modalities

    kinds: dict[str, set[str]] = {}
    for it in items:
        kinds.setdefault(it.holder, set()).add(modalities.get(it.modality).text_source(it.meta))
    return {h: sorted(k, key=lambda x: ("(OCR)" in x, x))[0] for h, k in kinds.items()}


def _as_of_bucket(as_of, source, n_buckets: int) -> list[str]:
    pct = as_of.groupby(source).rank(method="max", pct=True)
    b = np.clip(np.ceil(pct.to_numpy() * n_buckets), 1, n_buckets).astype(int)
    return [f"{x}/{n_buckets}" for x in b]


def item_frame(
    run: str | os.PathLike | RunDir,
    sets_dir: str | os.PathLike | None = None,
    *,
    n_buckets: int = N_BUCKETS,
):
    """One row per evaluated item of a run (columns: module docstring). ``df.attrs`` carries
    ``run_dir``, ``system``, ``split``, ``sets_dir`` and ``n_buckets``."""
    import pandas as pd

    rd = run if isinstance(run, RunDir) else RunDir.open(run, sets_dir)
    rows = rd.scores().rows()
    df = pd.DataFrame(rows)
    if df.empty:
        raise MembenchError(f"{rd.path}: no evaluated items")
    recs = rd.records
    df["scenario"] = [r.scope.scenario for r in recs]
    df["session"] = [r.scope.session for r in recs]
    df["derivation"] = df["derivation"].fillna("native").where(df["audited"], TELL_NATIVE)
    df["as_of"] = pd.to_datetime(df["as_of"], utc=True, format="ISO8601")
    df["as_of_quarter"] = df["as_of"].dt.tz_localize(None).dt.to_period("Q").astype(str)
    df["as_of_bucket"] = _as_of_bucket(df["as_of"], df["source"], n_buckets)
    df = df.rename(columns={"mrr": "rr", "false_recall_rate": "false_recall"})
    df["abstained"] = df["cartridge_size"] == 0
    df["holder_leak"] = df["n_foreign"] > 0
    df["temporal_leak"] = df["n_future"] > 0
    top1 = []
    rows_by_q = rd.row_by_query
    for q in df["query_id"]:
        row = rows_by_q.get(q)
        top1.append(float(row.scores.max()) if row is not None and row.scores.size else np.nan)
    df["top1_score"] = top1
    df["top1_hit"] = df["answerable"] & (df["rr"] == 1.0)
    ts = text_sources(rd.items)
    df["text_source"] = [ts.get(h, "?") for h in df["holder"]]
    df["latency_ms"] = df["latency_ms"].astype(float)
    cols = [
        "query_id",
        "modality",
        "source",
        "holder",
        "scenario",
        "session",
        "derivation",
        "answerable",
        "audited",
        "as_of",
        "as_of_quarter",
        "as_of_bucket",
        "has_run",
        "n_gold",
        "n_hits",
        "recall@10",
        "recall@100",
        "recall@1000",
        "rr",
        "ndcg@10",
        "ndcg_graded@10",
        "cartridge_size",
        "cartridge_recall",
        "false_recall",
        "false_recall_native",
        "abstained",
        "holder_leak",
        "temporal_leak",
        "n_foreign",
        "n_future",
        "latency_ms",
        "top1_score",
        "top1_hit",
        "abstention_score",
        "text_source",
    ]
    extra = [
        c
        for c in df.columns
        if c not in cols
        and c not in ("temporal_correctness", "holder_correctness", "abstain_rate_answerable")
    ]
    df = df[cols + extra]  # judgment-set columns ("<name>/recall@10", ...) kept at the end
    for c in (
        "recall@10",
        "recall@100",
        "recall@1000",
        "rr",
        "ndcg@10",
        "ndcg_graded@10",
        "cartridge_recall",
        "false_recall",
        "false_recall_native",
    ):
        df[c] = df[c].astype(float)
    df.attrs.update(
        {
            "run_dir": str(rd.path),
            "system": rd.system,
            "split": rd.split,
            "sets_dir": str(rd.sets_dir),
            "n_buckets": n_buckets,
        }
    )
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
    if metric == SILENCE:  # over the modalities with audited unanswerable items
        return silence_values(
            np.where(ans, df["abstained"].to_numpy(dtype=float), np.nan),
            df["modality"].to_numpy(dtype=object),
            ~ans & df["audited"].to_numpy(dtype=bool),
        )
    if metric in df.columns:
        return df[metric].to_numpy(dtype=float)
    raise KeyError(f"unknown metric {metric!r}")


def _column(metric: str) -> str:
    """The item-frame column of a measure (``mrr`` is the per-item ``rr``)."""
    return "rr" if metric == "mrr" else metric


def judgment_sets(df) -> list[str]:
    """The judgment sets an item frame can be read under: ``"gold"`` (the primary set) first,
    then the alternative sets its records carry (``<name>/recall@10`` columns), sorted."""
    alt = sorted(
        c.split("/", 1)[0] for c in df.columns if isinstance(c, str) and c.endswith("/recall@10")
    )
    return [PRIMARY, *alt]


def judgment_view(df, name: str | None):
    """The item frame under judgment set ``name`` (``None`` or ``"gold"``: ``df`` itself).

    Every measure computed per judgment set (the measure registry's ``per_judgment_set``:
    recall@k, MRR as ``rr``, nDCG@10, graded nDCG@10, cartridge recall) takes that set's
    per-item values, NaN on the items the set does not judge (unanswerable items, and
    answerable ones whose list under the set is empty or absent); ``top1_hit`` follows.
    Everything that does not depend on relevance (false recall, abstention, holder and
    temporal correctness, latency, the item's own columns) is unchanged. ``judged`` marks the
    items in the set's denominator; ``df.attrs["judgment_set"]`` names the set. An unknown
    name is a :class:`MembenchError` naming the sets the run carries."""
    sets = judgment_sets(df)
    if name is None or name == PRIMARY:
        out = df.copy()
        out["judged"] = ~out["recall@10"].isna()
        out.attrs["judgment_set"] = PRIMARY
        return out
    if name not in sets:
        raise MembenchError(
            f"{df.attrs.get('run_dir', 'this run')}: no judgment set {name!r}; "
            f"its records carry {', '.join(sets)}"
        )
    out = df.copy()
    for m in JUDGMENT_MEASURES:
        out[_column(m)] = df[f"{name}/{m}"].astype(float)
    out["judged"] = ~out["recall@10"].isna()
    out["top1_hit"] = out["judged"] & (out["rr"] == 1.0)
    out.attrs["judgment_set"] = name
    return out
