"""Does a content-free tell wrapper gain anything over the system it wraps?

    python bench/tell_wrapper.py RUN_DIR [RUN_DIR ...] [--sets bench/sets]

The wrapper abstains when the wrapped system's top-1 score is low *or* when a content-free
tell says "unanswerable": the out-of-fold P(unanswerable) of ``bench/audit_text.py`` (question
text, query set, item metadata; gradient boosting, 5 folds grouped by holder). At equal
abstention on answerable queries it is compared with the system's own score alone:

* for each target answerable abstention ``a``, the system alone abstains below the
  ``a``-quantile of its answerable top-1 scores; its false recall is the share of unanswerable
  queries it does not abstain on;
* the wrapper tries every tell threshold on a grid (the top 0..50% of tell scores) and, for
  each, the score threshold that keeps answerable abstention at ``a``; its false recall is the
  best over the grid (an optimistic wrapper: the grid is chosen on the same queries).

It prints, per modality and ``a``, both false recalls and the wrapper's gain (system minus
wrapper: > 0 means the tells helped). Reads only the run's hits and the set files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import audit_text  # noqa: E402

LEVELS = (0.1, 0.2, 0.3, 0.5)


def top1(run_dir: Path) -> dict[str, float]:
    out = {}
    with (run_dir / "run.jsonl").open(encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if "query_id" in r:
                out[r["query_id"]] = r["hits"][0][1] if r.get("hits") else float("-inf")
    return out


def tells(sets_dir: Path, modality: str) -> dict[str, float]:
    """Out-of-fold P(unanswerable) of the held-back text audit, per query id."""
    from threadpoolctl import threadpool_limits

    items = audit_text._read_jsonl(sets_dir / "items.jsonl")
    for it in items:
        it.pop("content", None)
    recs = audit_text._read_jsonl(sets_dir / f"{modality}.jsonl")
    y = np.array([bool(r["unanswerable"]) for r in recs])
    x, _ = audit_text.features(recs, [it for it in items if it["modality"] == modality])
    groups = np.array([r["scope"]["holder"] for r in recs])
    with threadpool_limits(1):
        s = audit_text.oof(recs, x, y, groups)
    return {r["query_id"]: float(v) for r, v in zip(recs, s)}


def false_recall_at(score: np.ndarray, y: np.ndarray, a: float,
                    veto: np.ndarray | None = None) -> float:
    """False recall when abstaining below a score threshold (and wherever ``veto``), the
    threshold set so that answerable abstention is ``a`` (or as close above as ties allow)."""
    veto = np.zeros(len(y), dtype=bool) if veto is None else veto
    ans = ~y
    need = a * ans.sum() - (veto & ans).sum()      # abstentions still to make by score
    if need < 0:
        return float("nan")                       # the veto alone abstains on more
    free = np.sort(score[ans & ~veto])
    k = int(np.ceil(need))
    theta = free[k - 1] if k > 0 else -np.inf     # abstain when score <= theta
    kept = ~veto & (score > theta)
    return float(kept[y].mean())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--sets", default="bench/sets")
    ap.add_argument("--without-natives", action="store_true",
                    help="leave out native unanswerables (upstream's own questions)")
    a = ap.parse_args(argv)
    sets = Path(a.sets)
    scores: dict[str, float] = {}
    for r in a.runs:
        scores.update(top1(Path(r)))
    print("| modality | answerable / unanswerable (dev) | answerable abstention | false recall, "
          "system alone | false recall, best tell wrapper | gain |")
    print("|---|---|---:|---:|---:|---:|")
    for m in audit_text.MODALITIES:
        p = sets / f"{m}.jsonl"
        if not p.is_file():
            continue
        recs = [r for r in audit_text._read_jsonl(p) if r["query_id"] in scores
                and not (a.without_natives and r["unanswerable"]
                         and not r["origin"].get("derivation"))]
        if not recs or not any(r["unanswerable"] for r in recs):
            continue
        t = tells(sets, m)
        y = np.array([bool(r["unanswerable"]) for r in recs])
        s = np.array([scores[r["query_id"]] for r in recs])
        tell = np.array([t[r["query_id"]] for r in recs])
        for lvl in LEVELS:
            alone = false_recall_at(s, y, lvl)
            best = alone
            for q in np.linspace(0.5, 1.0, 26):
                cut = np.quantile(tell, q)
                fr = false_recall_at(s, y, lvl, tell > cut)
                if not np.isnan(fr):
                    best = min(best, fr)
            print(f"| {m} | {int((~y).sum())} / {int(y.sum())} | {lvl:.1f} | {alone:.3f} | "
                  f"{best:.3f} | {alone - best:+.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
