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
wrapper: > 0 means the tells helped), twice: **in sample** (the tell threshold chosen on the
very queries it is scored on: optimistic, it also finds chance) and **cross-fitted** (the
holders split in two halves by hash; the threshold chosen on one half is scored on the other,
and the two halves' false recalls pooled: what a wrapper fitted on other queries gains).

Unanswerable records are the *audited* ones (``origin.audited``, docs/sets.md), the ones
every gated and headline false recall counts; ``--with-tell-natives`` adds upstream's natives
with a tell of their own (reported apart everywhere else). ``tests/test_tell_wrapper.py``
runs :func:`gains` on a bm25 dev run of the real sets and holds the cross-fitted gain to
:data:`MAX_GAIN`. Reads only the run's hits and the set files.
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
GRID = np.linspace(0.5, 1.0, 26)     # tell quantiles the wrapper tries as its cut
MAX_GAIN = 0.01                      # the cross-fitted gain the test allows


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


def _best_cut(s: np.ndarray, y: np.ndarray, tell: np.ndarray, lvl: float,
              cuts: np.ndarray) -> tuple[float, float]:
    """The tell cut of ``cuts`` (``inf``: none) with the lowest false recall at answerable
    abstention ``lvl``, and that false recall."""
    best, cut = false_recall_at(s, y, lvl), np.inf
    for c in cuts:
        fr = false_recall_at(s, y, lvl, tell > c)
        if not np.isnan(fr) and fr < best:
            best, cut = fr, c
    return cut, best


def _half(holder: str) -> int:
    import hashlib

    return hashlib.sha256(f"tell-wrapper:{holder}".encode()).digest()[0] & 1


def gains(run_dirs: list[Path], sets: Path, *, with_tell_natives: bool = False,
          levels: tuple[float, ...] = LEVELS) -> list[dict]:
    """Per modality with unanswerable records in the runs and level ``a``: n, the system's
    false recall alone, the in-sample best wrapper's and the cross-fitted wrapper's, and the
    two gains (alone minus wrapper)."""
    scores: dict[str, float] = {}
    for r in run_dirs:
        scores.update(top1(Path(r)))
    out = []
    for m in audit_text.MODALITIES:
        p = sets / f"{m}.jsonl"
        if not p.is_file():
            continue
        recs = [r for r in audit_text._read_jsonl(p) if r["query_id"] in scores
                and (with_tell_natives or not r["unanswerable"]
                     or r["origin"].get("audited", True))]
        if not recs or not any(r["unanswerable"] for r in recs):
            continue
        t = tells(sets, m)
        y = np.array([bool(r["unanswerable"]) for r in recs])
        s = np.array([scores[r["query_id"]] for r in recs])
        tell = np.array([t[r["query_id"]] for r in recs])
        half = np.array([_half(r["scope"]["holder"]) for r in recs])
        for lvl in levels:
            alone = false_recall_at(s, y, lvl)
            _, inside = _best_cut(s, y, tell, lvl, np.quantile(tell, GRID))
            # cross-fitted: each half scored with the cut chosen on the other
            kept, n_u = 0.0, 0
            for h in (0, 1):
                fit, use = half != h, half == h
                if not y[use].any():
                    continue
                if y[fit].any() and (~y[fit]).any():
                    cut, _ = _best_cut(s[fit], y[fit], tell[fit], lvl,
                                       np.quantile(tell[fit], GRID))
                else:
                    cut = np.inf
                fr = false_recall_at(s[use], y[use], lvl, tell[use] > cut)
                if np.isnan(fr):                 # the cut alone abstains beyond lvl there
                    fr = false_recall_at(s[use], y[use], lvl)
                kept += fr * y[use].sum()
                n_u += int(y[use].sum())
            crossed = kept / n_u if n_u else float("nan")
            # the system alone on the same pooled halves
            alone_halves = sum(false_recall_at(s[half == h], y[half == h], lvl)
                               * y[half == h].sum() for h in (0, 1) if y[half == h].any())
            alone_halves = alone_halves / n_u if n_u else float("nan")
            out.append({"modality": m, "answerable": int((~y).sum()),
                        "unanswerable": int(y.sum()), "level": lvl, "alone": alone,
                        "in_sample": inside, "gain_in_sample": alone - inside,
                        "alone_halves": alone_halves, "cross_fitted": crossed,
                        "gain_cross_fitted": alone_halves - crossed})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--sets", default="bench/sets")
    ap.add_argument("--with-tell-natives", action="store_true",
                    help="count upstream's natives with a tell of their own too")
    a = ap.parse_args(argv)
    print("| modality | answerable / unanswerable (dev) | answerable abstention | false recall, "
          "system alone | best tell wrapper, in sample | gain, in sample | system alone, "
          "per half | wrapper, cross-fitted | gain, cross-fitted |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for g in gains([Path(r) for r in a.runs], Path(a.sets),
                   with_tell_natives=a.with_tell_natives):
        print(f"| {g['modality']} | {g['answerable']} / {g['unanswerable']} | "
              f"{g['level']:.1f} | {g['alone']:.3f} | {g['in_sample']:.3f} | "
              f"{g['gain_in_sample']:+.3f} | {g['alone_halves']:.3f} | "
              f"{g['cross_fitted']:.3f} | {g['gain_cross_fitted']:+.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
