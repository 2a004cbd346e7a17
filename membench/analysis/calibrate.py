"""``membench calibrate RUN_DIR``: per-modality cartridge thresholds from a dev run.

For each modality, the top-1 score of every evaluated query (none when the system returned no
hit) is split by answerability, and :func:`membench.run.systems.cartridge.calibrate_detail` picks
the threshold with the best (answerable kept - unanswerable kept) subject to an unanswerable
kept share (= false-recall rate of a top-1 cartridge) <= 0.10 where achievable. The result is
written as ``bench/calibration/<system>.json`` (committed: the reference systems read it), with
the figures it was chosen on. Only the dev split may be used.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.errors import MembenchError
from ..metrics import load_records, read_run
from ..run.systems.cartridge import MAX_FALSE_RECALL, calibrate_detail


def calibrate_run(run_dir: Path, sets_dir: Path | None = None) -> dict:
    meta = json.loads((run_dir / "meta.json").read_text())
    if meta.get("split") != "dev":
        raise MembenchError(f"{run_dir}: calibrate on the dev split only (this run is "
                            f"{meta.get('split')})")
    gate = (meta.get("config") or {}).get("cartridge", {}).get("gate", "")
    if gate and "RRF" not in gate:
        raise MembenchError(f"{run_dir}: this system gates its cartridge on {gate!r}, not on its "
                            "hit scores; calibrate the run whose scores it uses (e.g. dense)")
    sdir = Path(sets_dir or meta["sets_dir"])
    recs, _ = load_records(sdir, "dev", meta.get("modalities"), meta.get("limit"))
    top1: dict[str, float | None] = {}
    for row in read_run(run_dir / "run.jsonl"):
        # hits rank by score descending, so the top-1 score is the largest one
        top1[row.query_id] = max((s for _, s in row.hits), default=None)
    out: dict = {"system": meta["system"], "run_dir": str(run_dir), "split": "dev",
                 "set_sha256": meta.get("set_sha256"), "max_false_recall": MAX_FALSE_RECALL,
                 "rule": "per modality: the top-1 score threshold maximising (answerable kept - "
                         "unanswerable kept) with unanswerable kept <= max_false_recall where "
                         "achievable; ties -> higher threshold",
                 "modalities": {}}
    for m in sorted({r.modality for r in recs}):
        pos = [top1.get(r.query_id) for r in recs if r.modality == m and not r.unanswerable]
        neg = [top1.get(r.query_id) for r in recs if r.modality == m and r.unanswerable]
        if not any(s is not None for s in pos + neg):
            continue
        c = calibrate_detail(pos, neg)
        out["modalities"][m] = {"threshold": c.threshold, "answerable_kept": round(c.tpr, 6),
                                "unanswerable_kept": round(c.fpr, 6),
                                "within_gate": c.constrained, "n_answerable": c.n_answerable,
                                "n_unanswerable": c.n_unanswerable}
    return out
