"""What a cartridge score threshold buys: the false-recall vs recall trade-off of a simulated
cartridge "the top-1 atom if the query's abstention score >= t" (the score the system reported
as its ``confidence``, else its top-1 hit score: :mod:`membench.metrics.abstention`), and the
operating point
(:func:`membench.analysis.operating_point.choose_threshold`, the same rule ``membench calibrate``
uses)."""

from __future__ import annotations

import os

import numpy as np

from ..metrics.measures import MAX_FALSE_RECALL
from .frames import item_frame
from .operating_point import choose_threshold


def _groups(data, by: str, sets_dir):
    """Per ``by`` group of an item frame (or a run directory's): key, abstention scores (the
    reported confidence, else the top-1 score; NaN without either), answerable, top-1 hits
    gold. Unanswerable items that are not audited (natives with an upstream tell: the frame's
    ``audited`` column, where it has one) are left out, as ``membench calibrate`` leaves them
    out of its operating point."""
    import pandas as pd

    df = data if isinstance(data, pd.DataFrame) else item_frame(data, sets_dir)
    if "audited" in df.columns:
        df = df[df["answerable"].astype(bool) | df["audited"].astype(bool)]
    for key, g in df.groupby(by, sort=True):
        s = g["abstention_score"].to_numpy(dtype=float).copy()
        s[np.isinf(s)] = np.nan  # -inf: no score (no hits)
        yield (key, s, g["answerable"].to_numpy(dtype=bool), g["top1_hit"].to_numpy(dtype=bool))


def threshold_sweep(
    data,
    thresholds=None,
    *,
    by: str = "modality",
    n_points: int = 41,
    sets_dir: str | os.PathLike | None = None,
):
    """The trade-off a cartridge score threshold buys: for each threshold ``t`` the simulated
    cartridge of an item is its top-1 hit if its ``abstention_score >= t``, else empty
    (abstain).
    ``data`` is an item frame or a run directory.

    Per ``by`` group (default per modality: scores of different modalities need not be on one
    scale) and threshold: ``n_answerable``, ``n_unanswerable`` (audited ones),
    ``false_recall_rate``
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

    out = []
    for key, s, ans, hit in _groups(data, by, sets_dir):
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
                out.append(
                    {
                        by: key,
                        "threshold": float(t),
                        "n": len(s),
                        "n_answerable": n_a,
                        "n_unanswerable": n_u,
                        "false_recall_rate": (kept & ~ans).sum() / n_u if n_u else np.nan,
                        "answerable_recall_proxy": (kept & ans & hit).sum() / n_a
                        if n_a
                        else np.nan,
                        "abstain_rate_answerable": (~kept & ans).sum() / n_a if n_a else np.nan,
                        "kept_rate": kept.mean(),
                    }
                )
    return pd.DataFrame(out)


def operating_points(
    data,
    *,
    by: str = "modality",
    max_false_recall: float = MAX_FALSE_RECALL,
    sets_dir: str | os.PathLike | None = None,
):
    """Per ``by`` group, the threshold :func:`membench.analysis.operating_point.choose_threshold`
    picks from the group's top-1 scores (the rule ``membench calibrate`` uses: best
    answerable-kept minus unanswerable-kept share with the false-recall rate within
    ``max_false_recall`` where achievable), and what it gives: ``false_recall_rate``
    (unanswerable kept), ``answerable_kept``, ``answerable_recall_proxy`` (answerable items
    whose kept top-1 hits gold), ``abstain_rate_answerable`` and ``within_gate``. A group with
    no finite top-1 score gets NaN. ``data`` is an item frame or a run directory."""
    import pandas as pd

    rows = []
    for key, s, ans, hit in _groups(data, by, sets_dir):
        n_a, n_u = int(ans.sum()), int((~ans).sum())
        base = {
            by: key,
            "n_answerable": n_a,
            "n_unanswerable": n_u,
            "max_false_recall": max_false_recall,
        }
        top1 = [None if np.isnan(x) else float(x) for x in s]
        try:
            c = choose_threshold(
                [x for x, a in zip(top1, ans) if a],
                [x for x, a in zip(top1, ans) if not a],
                max_false_recall,
            )
        except ValueError:  # no finite score in the group
            rows.append(
                {
                    **base,
                    "threshold": np.nan,
                    "false_recall_rate": np.nan,
                    "answerable_kept": np.nan,
                    "answerable_recall_proxy": np.nan,
                    "abstain_rate_answerable": np.nan,
                    "within_gate": False,
                }
            )
            continue
        with np.errstate(invalid="ignore"):
            kept = ~np.isnan(s) & (s >= c.threshold)
        rows.append(
            {
                **base,
                "threshold": c.threshold,
                "false_recall_rate": c.fpr if n_u else np.nan,
                "answerable_kept": c.tpr if n_a else np.nan,
                "answerable_recall_proxy": (kept & ans & hit).sum() / n_a if n_a else np.nan,
                "abstain_rate_answerable": (~kept & ans).sum() / n_a if n_a else np.nan,
                "within_gate": c.constrained,
            }
        )
    return pd.DataFrame(rows)
