"""``membench calibrate RUN_DIR``: per-modality cartridge thresholds from a dev run.

For each modality, the top-1 score of every evaluated query (none when the system returned no
hit) is split by answerability, and the operating-point rule
(:func:`membench.analysis.operating_point.choose_threshold`) picks the threshold with the best
(answerable kept - unanswerable kept) subject to an unanswerable kept share (= false-recall rate
of a top-1 cartridge) within the false-recall gate where achievable. The result is written as
``bench/calibration/<system>.json`` (committed: the reference systems read it), with the
figures it was chosen on. A modality without unanswerable (or without answerable) dev queries
has no operating point: it is listed under ``not_calibrated`` with the reason, and the
reference systems keep their default threshold there. Only the dev split may be used.
"""

from __future__ import annotations

import os
from typing import Any

from ..core.errors import MembenchError
from ..metrics.measures import MAX_FALSE_RECALL
from ..metrics.rundir import RunDir
from .operating_point import choose_threshold


def calibrate_run(run_dir: str | os.PathLike | RunDir,
                  sets_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    rd = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir, sets_dir)
    if rd.split != "dev":
        raise MembenchError(f"{rd.path}: calibrate on the dev split only (this run is "
                            f"{rd.split})")
    gate = (rd.meta.get("config") or {}).get("cartridge", {}).get("gate", "")
    if gate and "RRF" not in gate:
        raise MembenchError(f"{rd.path}: this system gates its cartridge on {gate!r}, not on "
                            "its hit scores; calibrate the run whose scores it uses (e.g. dense)")
    recs = rd.records
    top1: dict[str, float | None] = {}
    for row in rd.rows:
        # hits rank by score descending, so the top-1 score is the largest one
        top1[row.query_id] = float(row.scores.max()) if row.scores.size else None
    out: dict[str, Any] = {
        "system": rd.meta["system"], "run_dir": str(rd.path), "split": "dev",
        "set_sha256": rd.meta.get("set_sha256"), "max_false_recall": MAX_FALSE_RECALL,
        "rule": "per modality: the top-1 score threshold maximising (answerable kept - "
                "unanswerable kept) with unanswerable kept <= max_false_recall where "
                "achievable; ties -> higher threshold",
        "modalities": {}, "not_calibrated": {}}
    for m in sorted({r.modality for r in recs}):
        pos = [top1.get(r.query_id) for r in recs if r.modality == m and not r.unanswerable]
        neg = [top1.get(r.query_id) for r in recs if r.modality == m and r.unanswerable]
        if not any(s is not None for s in pos + neg):
            continue
        if not pos or not neg:      # every threshold would look free of false recalls (or hits)
            out["not_calibrated"][m] = (f"{len(pos)} answerable and {len(neg)} unanswerable "
                                        "dev queries: no operating point to choose")
            continue
        c = choose_threshold(pos, neg)
        out["modalities"][m] = {"threshold": c.threshold, "answerable_kept": round(c.tpr, 6),
                                "unanswerable_kept": round(c.fpr, 6),
                                "within_gate": c.constrained, "n_answerable": c.n_answerable,
                                "n_unanswerable": c.n_unanswerable}
    return out
