"""Does a content-free tell wrapper gain anything over the system it wraps?

    python bench/tell_wrapper.py RUN_DIR [RUN_DIR ...] [--sets bench/sets]

Two wrappers, each compared with the system's own top-1 score alone over the *audited*
unanswerable queries (``origin.audited``, docs/sets.md: the ones every gated and headline false
recall counts; ``--with-tell-natives`` adds upstream's natives with a tell of their own):

**A veto** (:func:`gains`): abstain when the top-1 score is low *or* when a content-free tell
says "unanswerable": the out-of-fold P(unanswerable) of ``bench/audit_text.py`` (question
text, query set, item metadata; gradient boosting, 5 folds grouped by holder).

* for each target answerable abstention ``a``, the system alone abstains below the
  ``a``-quantile of its answerable top-1 scores; its false recall is the share of unanswerable
  queries it does not abstain on;
* the wrapper tries every tell threshold on a grid (the top 0..50% of tell scores) and, for
  each, the score threshold that keeps answerable abstention at ``a``; its false recall is the
  best over the grid, **in sample** (the tell threshold chosen on the very queries it is scored
  on: optimistic, it also finds chance) and **cross-fitted** (the holders split in two halves
  by hash; the threshold chosen on one half is scored on the other, the halves pooled).

**A blend** (:func:`blend_gains`): the tell is the audit's joint classifier
(:class:`membench.sets.audit.JointModel`: text, as_of, the holder's timeline and the query set
together), cross-fitted: fitted on one half of the holders and applied to the other, and vice
versa. It is blended into the system's decision score (its top-1 score, on which its
committed-or-not threshold is set: :mod:`membench.analysis.operating_point`) as
``(1 - w) * rank(top-1) - w * rank(tell)`` (ranks as shares within the half scored), and the
weight ``w`` (:data:`WEIGHTS`) is fitted on one half of the holders and scored on the other
(adopted only where it gains more than :data:`MAX_GAIN` on the half it is fitted on).
Two figures, each pooled over the two halves and averaged over :data:`HALVINGS` halvings of
the holders, blend against alone:

* the **false-recall gain** at equal answerable abstention: at the system's own answerable
  abstention (the share of answerable queries its committed-or-not decision abstains on) and
  at :data:`LEVELS`;
* the **kept gain**: answerable kept at false recall <= 0.10 (``answerable_kept@fr0.10``: the
  best threshold on the score with at most a tenth of the unanswerable queries kept).

It prints, per modality, both wrappers' figures. ``tests/test_tell_wrapper.py`` runs both on a
bm25 dev run of the real sets and holds every gain to :data:`MAX_GAIN`, and runs the blend on
synthetic sets with and without a planted tell. Reads only the runs' hits and the set files.
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
GRID = np.linspace(0.5, 1.0, 26)  # tell quantiles the wrapper tries as its cut
MAX_GAIN = 0.01  # the cross-fitted gain the test allows
WEIGHTS = np.linspace(0.0, 1.0, 21)  # the blend weights fitted on one half
HALVINGS = 5  # the blend's halvings of the holders, averaged
MAX_FR = 0.10  # the false-recall gate of answerable_kept@fr0.10
MIN_UNANSWERABLE = 20  # the audit's gated size (membench.sets.audit)


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


def false_recall_at(
    score: np.ndarray, y: np.ndarray, a: float, veto: np.ndarray | None = None
) -> float:
    """False recall when abstaining below a score threshold (and wherever ``veto``), the
    threshold set so that answerable abstention is ``a`` (or as close above as ties allow)."""
    veto = np.zeros(len(y), dtype=bool) if veto is None else veto
    ans = ~y
    need = a * ans.sum() - (veto & ans).sum()  # abstentions still to make by score
    if need < 0:
        return float("nan")  # the veto alone abstains on more
    free = np.sort(score[ans & ~veto])
    k = int(np.ceil(need))
    theta = free[k - 1] if k > 0 else -np.inf  # abstain when score <= theta
    kept = ~veto & (score > theta)
    return float(kept[y].mean())


def _best_cut(
    s: np.ndarray, y: np.ndarray, tell: np.ndarray, lvl: float, cuts: np.ndarray
) -> tuple[float, float]:
    """The tell cut of ``cuts`` (``inf``: none) with the lowest false recall at answerable
    abstention ``lvl``, and that false recall."""
    best, cut = false_recall_at(s, y, lvl), np.inf
    for c in cuts:
        fr = false_recall_at(s, y, lvl, tell > c)
        if not np.isnan(fr) and fr < best:
            best, cut = fr, c
    return cut, best


def _half(holder: str, draw: int = 0) -> int:
    """The holder's half (0 or 1) in halving number ``draw`` (0: the veto's halving)."""
    import hashlib

    key = f"tell-wrapper:{holder}" if draw == 0 else f"tell-wrapper:{draw}:{holder}"
    return hashlib.sha256(key.encode()).digest()[0] & 1


def gains(
    run_dirs: list[Path],
    sets: Path,
    *,
    with_tell_natives: bool = False,
    levels: tuple[float, ...] = LEVELS,
) -> list[dict]:
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
        recs = [
            r
            for r in audit_text._read_jsonl(p)
            if r["query_id"] in scores
            and (with_tell_natives or not r["unanswerable"] or r["origin"].get("audited", True))
        ]
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
                    cut, _ = _best_cut(s[fit], y[fit], tell[fit], lvl, np.quantile(tell[fit], GRID))
                else:
                    cut = np.inf
                fr = false_recall_at(s[use], y[use], lvl, tell[use] > cut)
                if np.isnan(fr):  # the cut alone abstains beyond lvl there
                    fr = false_recall_at(s[use], y[use], lvl)
                kept += fr * y[use].sum()
                n_u += int(y[use].sum())
            crossed = kept / n_u if n_u else float("nan")
            # the system alone on the same pooled halves
            alone_halves = sum(
                false_recall_at(s[half == h], y[half == h], lvl) * y[half == h].sum()
                for h in (0, 1)
                if y[half == h].any()
            )
            alone_halves = alone_halves / n_u if n_u else float("nan")
            out.append(
                {
                    "modality": m,
                    "answerable": int((~y).sum()),
                    "unanswerable": int(y.sum()),
                    "level": lvl,
                    "alone": alone,
                    "in_sample": inside,
                    "gain_in_sample": alone - inside,
                    "alone_halves": alone_halves,
                    "cross_fitted": crossed,
                    "gain_cross_fitted": alone_halves - crossed,
                }
            )
    return out


# --------------------------------------------------------------------------- the blend


def run_records(run_dir: Path) -> dict[str, tuple[float, bool]]:
    """query id -> (top-1 score, committed: a non-empty cartridge) of a run."""
    out = {}
    with (run_dir / "run.jsonl").open(encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if "query_id" in r:
                out[r["query_id"]] = (
                    r["hits"][0][1] if r.get("hits") else float("-inf"),
                    bool(r.get("cartridge")),
                )
    return out


def _split_of(run_dir: Path) -> str:
    meta = run_dir / "meta.json"
    if meta.is_file():
        return str(json.loads(meta.read_text(encoding="utf-8")).get("split") or "dev")
    return "dev"


def _shares(x: np.ndarray) -> np.ndarray:
    """Each value's rank as a share in (0, 1) (ties: their mean rank)."""
    from scipy.stats import rankdata

    return (rankdata(x) - 0.5) / len(x) if len(x) else x


def blended(score: np.ndarray, tell: np.ndarray, w: float) -> np.ndarray:
    """The blend's decision score: ``(1 - w) * rank(score) - w * rank(tell)``."""
    return (1 - w) * _shares(score) - w * _shares(tell)


def kept_at(score: np.ndarray, y: np.ndarray, max_fr: float = MAX_FR) -> float:
    """``answerable_kept@fr0.10`` of a score: the largest share of answerable queries (``y``
    false) with score >= t over every t that keeps at most ``max_fr`` of the unanswerable
    ones (equal scores kept or dropped together; keeping nothing is always feasible)."""
    if not y.any() or y.all():
        return float("nan")
    vals, inv = np.unique(score, return_inverse=True)
    pos = np.bincount(inv, weights=~y, minlength=len(vals))[::-1].cumsum()
    neg = np.bincount(inv, weights=y, minlength=len(vals))[::-1].cumsum()
    ok = neg <= max_fr * y.sum() + 1e-9
    return float(pos[ok].max() / (~y).sum()) if ok.any() else 0.0


def own_abstention(committed: np.ndarray, y: np.ndarray) -> float:
    """The share of answerable queries the system's committed-or-not decision abstains on."""
    return float((~committed[~y]).mean()) if (~y).any() else float("nan")


def cross_fitted_tells(rows: list[dict], y: np.ndarray, half: np.ndarray) -> np.ndarray:
    """P(unanswerable) of every row from the joint classifier fitted on the other half's rows
    (a half without both classes gets its training share)."""
    from threadpoolctl import threadpool_limits

    from membench.sets.audit import JointModel

    out = np.zeros(len(y))
    with threadpool_limits(1):
        for h in (0, 1):
            use, fit = np.flatnonzero(half == h), np.flatnonzero(half != h)
            if not len(use):
                continue
            model = JointModel().fit([rows[i] for i in fit], y[fit])
            out[use] = model.predict([rows[i] for i in use])
    return out


def _fit_weight(s: np.ndarray, tell: np.ndarray, y: np.ndarray, objective) -> float:
    """The weight of :data:`WEIGHTS` with the best ``objective(blended, y)`` (higher is
    better; ties to the smaller weight), adopted only where it beats the system alone
    (``w = 0``) by more than :data:`MAX_GAIN` on these queries: a gain within the tolerance
    on the fitting half is chance the other half would pay for."""
    base = objective(blended(s, tell, 0.0), y)
    best, wbest = -np.inf, 0.0
    for w in WEIGHTS:
        v = objective(blended(s, tell, w), y)
        if not np.isnan(v) and v > best + 1e-12:
            best, wbest = v, float(w)
    return wbest if np.isnan(base) or best > base + MAX_GAIN else 0.0


def blend_arrays(
    s: np.ndarray,
    committed: np.ndarray,
    tell: np.ndarray,
    y: np.ndarray,
    half: np.ndarray,
    levels: tuple[float, ...] = LEVELS,
) -> dict:
    """The blend's figures over one modality's queries (module docstring): ``s`` the top-1
    scores, ``tell`` the cross-fitted tell, ``y`` unanswerable, ``half`` 0/1 by holder. Per
    answerable abstention (``"own"``: the system's own, and each of ``levels``): the pooled
    false recall alone and blended and the gain (alone minus blend); kept@FR<=0.10 alone and
    blended and the gain (blend minus alone); the weights fitted on each half."""
    own = own_abstention(committed, y)
    out: dict = {
        "answerable": int((~y).sum()),
        "unanswerable": int(y.sum()),
        "own_abstention": own,
        "levels": {},
    }
    targets = [("own", own)] + [(f"{a:.1f}", a) for a in levels]
    halves = [h for h in (0, 1) if y[half == h].any() and (~y[half == h]).any()]
    for name, a in targets:

        def fr_obj(b, yy, a=a):
            return -false_recall_at(b, yy, a)

        alone = blend = 0.0
        weights = {}
        for h in halves:
            fit, use = half != h, half == h
            w = (
                _fit_weight(s[fit], tell[fit], y[fit], fr_obj)
                if y[fit].any() and (~y[fit]).any()
                else 0.0
            )
            weights[h] = w
            n = y[use].sum()
            alone += false_recall_at(blended(s[use], tell[use], 0.0), y[use], a) * n
            blend += false_recall_at(blended(s[use], tell[use], w), y[use], a) * n
        n_u = sum(int(y[half == h].sum()) for h in halves)
        alone, blend = (alone / n_u, blend / n_u) if n_u else (np.nan, np.nan)
        out["levels"][name] = {
            "abstention": a,
            "alone": alone,
            "blend": blend,
            "gain": alone - blend,
            "weights": weights,
        }
    alone = blend = 0.0
    weights = {}
    for h in halves:
        fit, use = half != h, half == h
        w = (
            _fit_weight(s[fit], tell[fit], y[fit], kept_at)
            if y[fit].any() and (~y[fit]).any()
            else 0.0
        )
        weights[h] = w
        n = (~y[use]).sum()
        alone += kept_at(blended(s[use], tell[use], 0.0), y[use]) * n
        blend += kept_at(blended(s[use], tell[use], w), y[use]) * n
    n_a = sum(int((~y[half == h]).sum()) for h in halves)
    alone, blend = (alone / n_a, blend / n_a) if n_a else (np.nan, np.nan)
    out["kept"] = {"alone": alone, "blend": blend, "gain": blend - alone, "weights": weights}
    out["gain"] = max([v["gain"] for v in out["levels"].values()] + [out["kept"]["gain"]])
    return out


def _mean_of(draws: list[dict]) -> dict:
    """:func:`blend_arrays` of several halvings in one: every figure their mean, the weights
    each halving's (a list per half), the largest gain recomputed from the means."""
    out = {k: draws[0][k] for k in ("answerable", "unanswerable", "own_abstention")}
    out["tell_auc"] = float(np.mean([d["tell_auc"] for d in draws]))

    def mean(get) -> dict:
        first = get(draws[0])
        avg = {k: float(np.mean([get(d)[k] for d in draws])) for k in first if k != "weights"}
        avg["weights"] = {h: [get(d)["weights"].get(h) for d in draws] for h in (0, 1)}
        return avg

    out["levels"] = {
        name: mean(lambda d, name=name: d["levels"][name]) for name in draws[0]["levels"]
    }
    out["kept"] = mean(lambda d: d["kept"])
    out["gain"] = max([v["gain"] for v in out["levels"].values()] + [out["kept"]["gain"]])
    return out


def blend_gains(
    run_dirs: list[Path],
    sets: Path,
    *,
    with_tell_natives: bool = False,
    levels: tuple[float, ...] = LEVELS,
) -> list[dict]:
    """Per modality with unanswerable records in the runs: :func:`blend_arrays` of the runs'
    queries (the audited ones, unless ``with_tell_natives``), averaged over :data:`HALVINGS`
    halvings of the holders (each its own cross-fitted tell and fitted weights: one halving's
    figures move by a query or two with the halving), with ``"modality"``, the tell's
    cross-fitted ROC AUC (mean) and ``"gated"`` (at least :data:`MIN_UNANSWERABLE`
    unanswerable)."""
    from membench.contract.schema import SourceItem
    from membench.core.jsonl import read_models
    from membench.sets.audit import features, roc_auc
    from membench.sets.select import select_records

    runs: dict[str, tuple[float, bool]] = {}
    splits = set()
    for r in run_dirs:
        runs.update(run_records(Path(r)))
        splits.add(_split_of(Path(r)))
    records = [
        r for sp in sorted(splits) for r in select_records(sets, sp)[0] if r.query_id in runs
    ]
    items = read_models(Path(sets) / "items.jsonl", SourceItem)
    rows = features(records, items)
    out = []
    for m in audit_text.MODALITIES:
        sub = [r for r in rows if r["modality"] == m and (with_tell_natives or r["audited"])]
        y = np.array([r["unanswerable"] for r in sub], dtype=bool)
        if not y.any() or y.all():
            continue
        s = np.array([runs[r["query_id"]][0] for r in sub])
        committed = np.array([runs[r["query_id"]][1] for r in sub])
        draws = []
        for k in range(HALVINGS):
            half = np.array([_half(r["holder"], k) for r in sub])
            tell = cross_fitted_tells(sub, y, half)
            res = blend_arrays(s, committed, tell, y, half, levels)
            res["tell_auc"] = roc_auc(tell, y)
            draws.append(res)
        res = _mean_of(draws)
        res.update(modality=m, gated=int(y.sum()) >= MIN_UNANSWERABLE, halvings=len(draws))
        out.append(res)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--sets", default="bench/sets")
    ap.add_argument(
        "--with-tell-natives",
        action="store_true",
        help="count upstream's natives with a tell of their own too",
    )
    a = ap.parse_args(argv)
    print(
        "| modality | answerable / unanswerable (dev) | answerable abstention | false recall, "
        "system alone | best tell wrapper, in sample | gain, in sample | system alone, "
        "per half | wrapper, cross-fitted | gain, cross-fitted |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for g in gains([Path(r) for r in a.runs], Path(a.sets), with_tell_natives=a.with_tell_natives):
        print(
            f"| {g['modality']} | {g['answerable']} / {g['unanswerable']} | "
            f"{g['level']:.1f} | {g['alone']:.3f} | {g['in_sample']:.3f} | "
            f"{g['gain_in_sample']:+.3f} | {g['alone_halves']:.3f} | "
            f"{g['cross_fitted']:.3f} | {g['gain_cross_fitted']:+.3f} |"
        )
    print()
    print(
        "| modality | answerable / unanswerable | tell ROC AUC (cross-fitted) | answerable "
        "abstention | false recall alone | blended | gain | weights (half 0; half 1, per "
        "halving) |"
    )
    print("|---|---|---:|---|---:|---:|---:|---|")
    blends = blend_gains(
        [Path(r) for r in a.runs], Path(a.sets), with_tell_natives=a.with_tell_natives
    )
    for g in blends:
        for name, v in g["levels"].items():
            lvl = f"own ({v['abstention']:.2f})" if name == "own" else name
            print(
                f"| {g['modality']} | {g['answerable']} / {g['unanswerable']} | "
                f"{g['tell_auc']:.2f} | {lvl} | {v['alone']:.3f} | {v['blend']:.3f} | "
                f"{v['gain']:+.3f} | {_weights(v['weights'])} |"
            )
    print()
    print(
        f"| modality | kept@FR<={MAX_FR:.2f} alone | blended | gain | weights (half 0; 1) | "
        "largest gain (any row) |"
    )
    print("|---|---:|---:|---:|---|---:|")
    for g in blends:
        k = g["kept"]
        print(
            f"| {g['modality']} | {k['alone']:.3f} | {k['blend']:.3f} | {k['gain']:+.3f} | "
            f"{_weights(k['weights'])} | {g['gain']:+.3f} |"
        )
    return 0


def _weights(w: dict) -> str:
    """Each half's fitted weights over the halvings (``—``: a half without both classes)."""
    return "; ".join("/".join("—" if x is None else f"{x:.2f}" for x in w[h]) for h in (0, 1))


if __name__ == "__main__":
    sys.exit(main())
