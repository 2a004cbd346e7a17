"""``membench audit``: can a system tell unanswerable queries from answerable ones without
reading content? (SPEC section 5, "No tells".)

An auditor sees what any system sees before it reads a single item: each query's question,
scope and ``as_of`` in the order a run presents them, and every holder's timeline (the items'
``observed_at``). From that alone it computes, per record (within its split):

==================  ======================================================================
visible_share       share of the holder's items observed at or before ``as_of``
visible, items      how many items are visible / the holder has
slot_position       where ``as_of`` sits between the visible items' first and last
                    observation and the holder's last (0 = first item, 1 = last)
gap_prev_s          seconds from the latest visible item to ``as_of`` (log)
gap_next_s          seconds from ``as_of`` to the next item (log; missing after the last)
slot_fraction       ``gap_prev / (gap_prev + gap_next)``: where ``as_of`` sits in its slot
hour, minute,       the clock digits of ``as_of`` (UTC)
second, micro
as_of_rank          ``as_of``'s rank among the holder's queries (0 = earliest, 1 = latest)
holder_queries      how many queries the holder gets in the split
same_holder,        how many other queries of the split ask the same question (normalised:
other_holder        lower case, single spaces) of the same holder / of other holders
seen_before         the same question came earlier in the presentation order
source              the query's scenario (one-hot)
==================  ======================================================================

and two checks on those features, per modality (both splits pooled):

* a **classifier**: gradient boosting (scikit-learn ``HistGradientBoostingClassifier``,
  fixed seed) with 5-fold stratified out-of-fold predictions; its ROC AUC for "unanswerable",
  with a 95% percentile bootstrap interval (1,000 resamples of the items, seeded) and n.
  Gate: AUC <= :data:`AUC_GATE`;
* **named rules**, each a yes/no guess of "unanswerable": their balanced accuracy (mean of
  the true-positive and true-negative rates), taken in whichever direction is higher (a rule
  that fires on answerable queries tells as much). Gate: <= :data:`RULE_GATE`.

Gates apply to modalities with at least :data:`MIN_UNANSWERABLE` unanswerable records; the
others are reported, marked "not gated". Reads the sets folder only.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..core.jsonl import read_models
from ..modalities import MODALITIES
from .schema import AnnotationRecord, SourceItem
from .select import presentation_order, select_records

AUC_GATE = 0.65
RULE_GATE = 0.60
MIN_UNANSWERABLE = 20
MIN_FOR_AUC = 5       # fewer items of a class: no classifier (its AUC would say nothing)
FOLDS = 5
SEED = 0
N_BOOT = 1000
FEATURES = ("visible_share", "visible", "items", "slot_position", "gap_prev_s", "gap_next_s",
            "slot_fraction", "hour", "minute", "second", "micro", "as_of_rank",
            "holder_queries", "same_holder", "other_holder", "seen_before")
_SPACE = re.compile(r"\s+")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _norm_q(q: str) -> str:
    return _SPACE.sub(" ", q.strip().lower())


def _seconds(dt: datetime) -> float:
    return (dt - _EPOCH).total_seconds()


# --------------------------------------------------------------------------- named rules

RULES: dict[str, tuple[str, Callable[[dict], bool]]] = {
    "before_last_item": ("as_of is before the holder's last item",
                         lambda f: f["visible"] < f["items"]),
    "seen_before": ("the question was asked earlier in the presentation order",
                    lambda f: f["seen_before"] > 0),
    "repeated": ("the question is asked more than once in the split",
                 lambda f: f["same_holder"] + f["other_holder"] > 0),
    "before_last_or_seen": ("as_of before the holder's last item, or the question asked before",
                            lambda f: f["visible"] < f["items"] or f["seen_before"] > 0),
    "first_item_only": ("only the holder's first observation is visible",
                        lambda f: f["visible"] == 1 and f["items"] > 1),
    "second_59": ("as_of's seconds are 59", lambda f: f["second"] == 59),
    "on_an_item": ("as_of equals an item's observation time", lambda f: f["gap_prev_s"] == 0),
    "earliest_of_holder": ("as_of is the earliest among the holder's queries",
                           lambda f: f["as_of_rank"] == 0 and f["holder_queries"] > 1),
}


# --------------------------------------------------------------------------- features


def features(records: list[AnnotationRecord], items: list[SourceItem]) -> list[dict[str, Any]]:
    """The audit's features of every record (module docstring), computed within each split."""
    times: dict[str, list[float]] = defaultdict(list)
    for it in items:
        times[it.holder].append(_seconds(it.observed_at))
    for t in times.values():
        t.sort()
    by_split: dict[str, list[AnnotationRecord]] = defaultdict(list)
    for r in records:
        by_split[r.split].append(r)
    out: dict[str, dict[str, Any]] = {}
    for split, recs in by_split.items():
        q_holder = Counter((_norm_q(r.question), r.scope.holder) for r in recs)
        q_all = Counter(_norm_q(r.question) for r in recs)
        holder_asofs: dict[str, list[float]] = defaultdict(list)
        for r in recs:
            holder_asofs[r.scope.holder].append(_seconds(r.as_of))
        for v in holder_asofs.values():
            v.sort()
        by_id = {r.query_id: r for r in recs}
        seen: set[str] = set()
        for qid in presentation_order(by_id):
            r = by_id[qid]
            q = _norm_q(r.question)
            t = times.get(r.scope.holder, [])
            a = _seconds(r.as_of)
            utc = r.as_of.astimezone(timezone.utc)
            vis = bisect_right(t, a)
            prev = t[vis - 1] if vis else None
            nxt = t[vis] if vis < len(t) else None
            span = (t[-1] - t[0]) if len(t) > 1 else 0.0
            asofs = holder_asofs[r.scope.holder]
            same = q_holder[(q, r.scope.holder)] - 1
            f = {
                "query_id": qid, "modality": r.modality, "split": split,
                "source": qid.split(":", 1)[0], "unanswerable": r.unanswerable,
                "derivation": r.origin.derivation or ("native" if r.unanswerable else None),
                "visible_share": vis / len(t) if t else 0.0, "visible": vis, "items": len(t),
                "slot_position": ((a - t[0]) / span) if span else 1.0,
                "gap_prev_s": (a - prev) if prev is not None else math.nan,
                "gap_next_s": (nxt - a) if nxt is not None else math.nan,
                "hour": utc.hour, "minute": utc.minute, "second": utc.second,
                "micro": utc.microsecond,
                "as_of_rank": (bisect_left(asofs, a) / (len(asofs) - 1)) if len(asofs) > 1
                else 0.0,
                "holder_queries": len(asofs), "same_holder": same,
                "other_holder": q_all[q] - 1 - same, "seen_before": int(q in seen),
            }
            g, n = f["gap_prev_s"], f["gap_next_s"]
            f["slot_fraction"] = g / (g + n) if prev is not None and nxt is not None and g + n \
                else math.nan
            seen.add(q)
            out[qid] = f
    return [out[r.query_id] for r in records]


def _matrix(rows: list[dict[str, Any]]) -> np.ndarray:
    sources = sorted({r["source"] for r in rows})
    cols = []
    for r in rows:
        v = [float(r[k]) for k in FEATURES]
        v[FEATURES.index("gap_prev_s")] = math.log1p(r["gap_prev_s"]) \
            if not math.isnan(r["gap_prev_s"]) else math.nan
        v[FEATURES.index("gap_next_s")] = math.log1p(r["gap_next_s"]) \
            if not math.isnan(r["gap_next_s"]) else math.nan
        v += [float(r["source"] == s) for s in sources]
        cols.append(v)
    # missing values (no next item, no slot) as -1, below every real value: a column that is
    # missing for every record stays a constant one
    return np.nan_to_num(np.asarray(cols, dtype=np.float64), nan=-1.0)


# --------------------------------------------------------------------------- checks


@dataclass
class ModalityAudit:
    modality: str
    n_answerable: int
    n_unanswerable: int
    auc: float | None
    auc_ci: tuple[float | None, float | None]
    rules: dict[str, float | None] = field(default_factory=dict)

    @property
    def gated(self) -> bool:
        return self.n_unanswerable >= MIN_UNANSWERABLE and self.n_answerable > 0

    @property
    def auc_pass(self) -> bool | None:
        return None if not self.gated or self.auc is None else self.auc <= AUC_GATE

    def rule_pass(self, name: str) -> bool | None:
        v = self.rules.get(name)
        return None if not self.gated or v is None else v <= RULE_GATE

    @property
    def ok(self) -> bool:
        return self.auc_pass is not False and all(self.rule_pass(k) is not False
                                                  for k in self.rules)


@dataclass
class Audit:
    sets_dir: str
    modalities: dict[str, ModalityAudit]

    @property
    def ok(self) -> bool:
        return all(m.ok for m in self.modalities.values())

    def failures(self, modality: str | None = None) -> list[str]:
        """One line per failed gate (of one modality, or of all)."""
        out = []
        for m in self.modalities.values():
            if modality is not None and m.modality != modality:
                continue
            if m.auc_pass is False:
                out.append(f"{m.modality}: metadata-only classifier ROC AUC {m.auc:.3f} > "
                           f"{AUC_GATE}")
            for k, v in m.rules.items():
                if m.rule_pass(k) is False:
                    out.append(f"{m.modality}: rule '{RULES[k][0]}' balanced accuracy "
                               f"{v:.3f} > {RULE_GATE}")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"sets_dir": self.sets_dir, "gates": {"auc": AUC_GATE, "rule": RULE_GATE,
                                                     "min_unanswerable": MIN_UNANSWERABLE},
                "rules": {k: v[0] for k, v in RULES.items()}, "ok": self.ok,
                "modalities": {m: {"n_answerable": a.n_answerable,
                                   "n_unanswerable": a.n_unanswerable, "gated": a.gated,
                                   "auc": a.auc, "auc_ci95": list(a.auc_ci),
                                   "auc_pass": a.auc_pass, "rules": a.rules,
                                   "rules_pass": {k: a.rule_pass(k) for k in a.rules}}
                               for m, a in self.modalities.items()}}


def balanced_accuracy(pred: np.ndarray, y: np.ndarray) -> float | None:
    """Balanced accuracy of ``pred`` for ``y`` (both bool), in whichever direction is higher;
    ``None`` without both classes."""
    if y.all() or not y.any():
        return None
    tpr = float(pred[y].mean())
    tnr = float((~pred[~y]).mean())
    ba = (tpr + tnr) / 2
    return max(ba, 1 - ba)


def oof_scores(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Out-of-fold P(unanswerable) from gradient boosting, :data:`FOLDS` stratified folds."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import StratifiedKFold
    from threadpoolctl import threadpool_limits

    folds = min(FOLDS, int(y.sum()), int((~y).sum()))
    out = np.zeros(len(y))
    with threadpool_limits(1):   # one thread: the same numbers on every machine, and fast
        for train, test in StratifiedKFold(folds, shuffle=True, random_state=SEED).split(x, y):
            clf = HistGradientBoostingClassifier(random_state=SEED, early_stopping=False,
                                                 max_iter=200, learning_rate=0.05)
            clf.fit(x[train], y[train])
            out[test] = clf.predict_proba(x[test])[:, 1]
    return out


def roc_auc(scores: np.ndarray, y: np.ndarray) -> float:
    """ROC AUC of ``scores`` for ``y`` (Mann-Whitney U with average ranks for ties; equal to
    ``sklearn.metrics.roc_auc_score``, which the tests check)."""
    from scipy.stats import rankdata

    ranks = rankdata(scores)
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def auc_with_ci(scores: np.ndarray, y: np.ndarray, key: str
                ) -> tuple[float, tuple[float | None, float | None]]:
    """ROC AUC and its 95% percentile bootstrap interval (:data:`N_BOOT` resamples of the
    items, seeded by ``key``; resamples without both classes are skipped)."""
    from ..core.hashing import stable_hash

    auc = roc_auc(scores, y)
    rng = np.random.default_rng(stable_hash("audit", str(SEED), key))
    n = len(y)
    vals = []
    for _ in range(N_BOOT):
        idx = rng.integers(0, n, n)
        yy = y[idx]
        if yy.all() or not yy.any():
            continue
        vals.append(roc_auc(scores[idx], yy))
    if not vals:
        return auc, (None, None)
    lo, hi = np.percentile(vals, [2.5, 97.5])
    return auc, (float(lo), float(hi))


def audit_rows(rows: list[dict[str, Any]]) -> dict[str, ModalityAudit]:
    """Both checks per modality over feature rows (:func:`features`)."""
    out = {}
    for m in MODALITIES:
        sub = [r for r in rows if r["modality"] == m]
        if not sub:
            continue
        y = np.array([r["unanswerable"] for r in sub], dtype=bool)
        n_u, n_a = int(y.sum()), int((~y).sum())
        auc, ci = None, (None, None)
        if min(n_u, n_a) >= MIN_FOR_AUC:
            auc, ci = auc_with_ci(oof_scores(_matrix(sub), y), y, m)
        rules = {k: balanced_accuracy(np.array([fn(r) for r in sub], dtype=bool), y)
                 for k, (_, fn) in RULES.items()}
        out[m] = ModalityAudit(m, n_a, n_u, auc, ci, rules)
    return out


def audit_sets(sets_dir: str | Path) -> Audit:
    """The audit of a built sets folder (all splits, every modality with a set file)."""
    sets_dir = Path(sets_dir)
    items = read_models(sets_dir / "items.jsonl", SourceItem)
    records: list[AnnotationRecord] = []
    for split in ("dev", "test"):
        records += select_records(sets_dir, split)[0]
    return Audit(str(sets_dir), audit_rows(features(records, items)))


AUDIT_CACHE_VERSION = "audit-3"


def audit_key(sets_dir: str | Path) -> str | None:
    """What an audit depends on: the set files' sha256, the source of the packages it runs
    (membench.sets, .core, .modalities) and the versions of numpy, scipy and scikit-learn.
    None when a set file cannot be read."""
    import hashlib
    import importlib.metadata as md

    from ..core.hashing import source_digest
    from ..core.jsonl import sha256_file
    from .build import SET_FILES

    sets_dir = Path(sets_dir)
    h = hashlib.sha256(AUDIT_CACHE_VERSION.encode() + b"\n")
    try:
        for f in SET_FILES:
            p = sets_dir / f
            h.update(f"{f}={sha256_file(p) if p.is_file() else '-'}\n".encode())
    except OSError:
        return None
    h.update(f"source={source_digest(('sets', 'core', 'modalities'))}\n".encode())
    for dist in ("numpy", "scipy", "scikit-learn"):
        try:
            h.update(f"{dist}=={md.version(dist)}\n".encode())
        except md.PackageNotFoundError:
            h.update(f"{dist}=none\n".encode())
    return h.hexdigest()


def audit_sets_cached(sets_dir: str | Path) -> Audit:
    """:func:`audit_sets`, from ``cache_dir("audit")`` when these very set files were audited
    by this code before (:func:`audit_key`), else computed and cached. The audit (a
    cross-validated classifier per modality and a bootstrap of its AUC, about 10 s of CPU) is a
    function of the set files and the code alone; every ``membench run`` checks the sets
    before it ingests, and report 01 shows the audit of each run's sets, so it is computed
    once per set content. A torn or foreign cache file is audited again; a read-only cache
    only costs time."""
    import json

    from ..core.atomic import atomic_write_json
    from ..core.paths import cache_dir

    sets_dir = Path(sets_dir)
    key = audit_key(sets_dir)
    path = cache_dir("audit") / f"{key}.audit.json" if key else None
    if path is not None and path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            mods = {m: ModalityAudit(m, int(d["n_answerable"]), int(d["n_unanswerable"]),
                                     d["auc"], (d["auc_ci95"][0], d["auc_ci95"][1]),
                                     dict(d["rules"]))
                    for m, d in data["modalities"].items()}
            return Audit(str(sets_dir), mods)
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
            pass
    result = audit_sets(sets_dir)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(path, result.as_dict())
        except OSError:
            pass
    return result


# --------------------------------------------------------------------------- display


def _f(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def render_audit(a: Audit) -> str:
    """The audit as a Markdown table: per modality n, the classifier's AUC with its interval,
    and the highest named rule (every rule is in ``as_dict()``)."""
    rows = ["| modality | answerable | unanswerable | metadata-only ROC AUC (95% CI) | "
            f"best named rule (balanced accuracy) | gates (AUC <= {AUC_GATE}, rules <= "
            f"{RULE_GATE}) |", "|---|---:|---:|---|---|---|"]
    for m, x in a.modalities.items():
        best = max(((v, k) for k, v in x.rules.items() if v is not None), default=None)
        rule = "—" if best is None else f"{RULES[best[1]][0]}: {best[0]:.2f}"
        lo, hi = x.auc_ci
        auc = "—" if x.auc is None else f"{x.auc:.2f} [{_f(lo)}, {_f(hi)}]"
        verdict = ("pass" if x.ok else "FAIL") if x.gated else \
            f"not gated (< {MIN_UNANSWERABLE} unanswerable)"
        rows.append(f"| {m} | {x.n_answerable} | {x.n_unanswerable} | {auc} | {rule} | "
                    f"{verdict} |")
    return "\n".join(rows)


def audit_frame(a: Audit):
    """:func:`render_audit` as a pandas DataFrame (one row per modality: n, the classifier's
    AUC with its interval as ``metadata-only ROC AUC`` and its ``_lo`` / ``_hi``, the highest named rule, the
    verdict), for reports."""
    import pandas as pd

    rows = []
    for m, x in a.modalities.items():
        best = max(((v, k) for k, v in x.rules.items() if v is not None), default=None)
        lo, hi = x.auc_ci
        rows.append({"modality": m, "gates": ("pass" if x.ok else "FAIL") if x.gated else
                     f"not gated (< {MIN_UNANSWERABLE} unanswerable)",
                     "answerable": x.n_answerable, "unanswerable": x.n_unanswerable,
                     "metadata-only ROC AUC": x.auc, "metadata-only ROC AUC_lo": lo,
                     "metadata-only ROC AUC_hi": hi,
                     "best named rule": "—" if best is None else RULES[best[1]][0],
                     "its balanced accuracy": None if best is None else best[0]})
    return pd.DataFrame(rows).set_index("modality")


def rules_table(a: Audit):
    """Every named rule's balanced accuracy per modality (a pandas DataFrame, for report 01)."""
    import pandas as pd

    data = {m: x.rules for m, x in a.modalities.items()}
    df = pd.DataFrame(data)
    df.index = [RULES[k][0] for k in df.index]
    return df
