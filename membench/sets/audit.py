"""``membench audit``: can a system tell unanswerable queries from answerable ones without
reading content? (SPEC section 5, "No tells".)

Reads the sets folder only: what any system sees before it reads an item (each query's
question, scope and ``as_of`` in presentation order, every holder's timeline, the question set
and the items' metadata, never their content); writes only its cache (``cache_dir("audit")``).
Per record it computes :data:`TIMELINE_FEATURES`, :data:`TEXT_FEATURES` and, for the joint
classifier, :data:`JOINT_EXTRA` (each feature is described in docs/sets.md, "The audit's
features"). Per modality, over the audited population (``origin.audited``,
:mod:`membench.contract.tells`), it fits the metadata-only classifier, the text classifiers
(:func:`lr_oof_scores`), the joint one (:class:`JointModel`) and the named rules
(:data:`RULES`, :data:`TEXT_RULES`, :data:`ADVERSARY_RULES`), and gates them with
:data:`AUC_GATE`, :data:`CI_GATE` and :data:`RULE_GATE` (bootstrap intervals: :data:`N_BOOT`,
by holder from :data:`MIN_HOLDERS_CI` holders; gated from :data:`MIN_UNANSWERABLE` audited
unanswerables). Start at :func:`audit_sets_cached` (or :func:`audit_sets`); the result is an
:class:`Audit`. docs/sets.md, "No tells: the audit", says what each gate means and why.

Why one file: the features, the classifiers, the gates, the cache key and the tables that
print them are one measurement under one version (:data:`AUDIT_CACHE_VERSION`): the tables show
exactly the fields the gates read, and a change to either is a change to the audit.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..contract.schema import AnnotationRecord, SourceItem
from ..contract.tells import NATIVE_TELLS
from ..contract.tells import audited as _audited
from ..core.jsonl import read_models
from ..modalities import MODALITIES
from .dates import YEAR as _YEAR
from .dates import date_after, named_dates
from .select import presentation_order, select_records

AUC_GATE = 0.65
CI_GATE = 0.70  # the text classifiers' upper 95% bound
RULE_GATE = 0.60
MIN_UNANSWERABLE = 20
MIN_FOR_AUC = 5  # fewer items of a class: no classifier (its AUC would say nothing)
FOLDS = 5
SEED = 0
N_BOOT = 1000
MIN_HOLDERS_CI = 10  # fewer holders in a modality: intervals resampled by record
JOINT_SVD = 16  # dimensions of the joint classifier's TF-IDF of the question
TIMELINE_FEATURES = (
    "visible_share",
    "visible",
    "items",
    "slot_position",
    "gap_prev_s",
    "gap_next_s",
    "slot_fraction",
    "hour",
    "minute",
    "second",
    "micro",
    "as_of_rank",
    "holder_queries",
    "same_holder",
    "other_holder",
    "seen_before",
)
TEXT_FEATURES = (
    "q_words",
    "q_names",
    "q_numbers",
    "q_space",
    "sim_own",
    "sim_other",
    "nn_other",
    "names_own_qs",
    "names_other_qs",
    "speaker_own",
    "speaker_other",
    "file_own",
    "file_other",
    "year_after_as_of",
)
FEATURES = TIMELINE_FEATURES + TEXT_FEATURES
JOINT_EXTRA = (
    "sister_dir",
    "sister_slot_gap",
    "sister_gap_s",
    "near3_later",
    "near3_slot_gap",
    "n_dates",
    "date_lead_days",
    "date_after_as_of",
    "nn_own_later",
    "names_source_qs",
    "names_source_holders",
)
JOINT_FEATURES = FEATURES + JOINT_EXTRA
TWIN_COPY = 0.7  # TF-IDF cosine of a near-copy (rule "near_copy")
_SIM_BLOCK = 512  # rows of question cosines computed at once
_FILE_WORD = re.compile(r"[a-z]{3,}")
_SPACE = re.compile(r"\s+")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _norm_q(q: str) -> str:
    return _SPACE.sub(" ", q.strip().lower())


def _seconds(dt: datetime) -> float:
    return (dt - _EPOCH).total_seconds()


# --------------------------------------------------------------------------- named rules

RULES: dict[str, tuple[str, Callable[[dict], bool]]] = {
    "before_last_item": (
        "as_of is before the holder's last item",
        lambda f: f["visible"] < f["items"],
    ),
    "seen_before": (
        "the question was asked earlier in the presentation order",
        lambda f: f["seen_before"] > 0,
    ),
    "repeated": (
        "the question is asked more than once in the split",
        lambda f: f["same_holder"] + f["other_holder"] > 0,
    ),
    "before_last_or_seen": (
        "as_of before the holder's last item, or the question asked before",
        lambda f: f["visible"] < f["items"] or f["seen_before"] > 0,
    ),
    "first_item_only": (
        "only the holder's first observation is visible",
        lambda f: f["visible"] == 1 and f["items"] > 1,
    ),
    "second_59": ("as_of's seconds are 59", lambda f: f["second"] == 59),
    "on_an_item": ("as_of equals an item's observation time", lambda f: f["gap_prev_s"] == 0),
    "earliest_of_holder": (
        "as_of is the earliest among the holder's queries",
        lambda f: f["as_of_rank"] == 0 and f["holder_queries"] > 1,
    ),
}
TEXT_RULES: dict[str, tuple[str, Callable[[dict], bool]]] = {
    "other_speaker": (
        "names a speaker of another holder's items and none of its own",
        lambda f: f["speaker_other"] > 0 and f["speaker_own"] == 0,
    ),
    "nearest_elsewhere": (
        "its nearest question is asked of another holder",
        lambda f: f["nn_other"] > 0,
    ),
    "names_elsewhere": (
        "its names are used only by other holders' questions",
        lambda f: f["names_other_qs"] > 0 and f["names_own_qs"] == 0,
    ),
    "other_file": (
        "names a word of another holder's file names and none of its own",
        lambda f: f["file_other"] > 0 and f["file_own"] == 0,
    ),
    "year_after": ("names a year after as_of's", lambda f: f["year_after_as_of"] > 0),
    "near_copy": (
        "a near-copy of another question of its holder (TF-IDF cosine >= 0.7)",
        lambda f: f["sim_own"] >= TWIN_COPY,
    ),
}
TIMELINE_RULES = dict(RULES)
RULES.update(TEXT_RULES)
# Rules an outside adversary found, measured over the audited records. Gated (like every rule
# above: a failure is a TELL finding, which fails `membench validate` and so the build and every
# run's check of its sets) while ADVERSARY_RULES_GATED is true; false reports them only.
ADVERSARY_RULES_GATED = True
ADVERSARY_RULES: dict[str, tuple[str, Callable[[dict], bool]]] = {
    "sister_later": (
        "its most similar question of the same holder is asked at a later as_of (the sister rule)",
        lambda f: f["nn_own_later"] > 0,
    ),
    "date_after": (
        "names a date (a day, a month or a year) after its as_of",
        lambda f: f["date_after_as_of"] > 0,
    ),
}
ALL_RULES = {**RULES, **ADVERSARY_RULES}


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
                "query_id": qid,
                "modality": r.modality,
                "split": split,
                "holder": r.scope.holder,
                "question": r.question,
                "source": qid.split(":", 1)[0],
                "unanswerable": r.unanswerable,
                "audited": not r.unanswerable or _audited(r),
                "derivation": r.origin.derivation or ("native" if r.unanswerable else None),
                "visible_share": vis / len(t) if t else 0.0,
                "visible": vis,
                "items": len(t),
                "slot_position": ((a - t[0]) / span) if span else 1.0,
                "gap_prev_s": (a - prev) if prev is not None else math.nan,
                "gap_next_s": (nxt - a) if nxt is not None else math.nan,
                "hour": utc.hour,
                "minute": utc.minute,
                "second": utc.second,
                "micro": utc.microsecond,
                "as_of_rank": (bisect_left(asofs, a) / (len(asofs) - 1)) if len(asofs) > 1 else 0.0,
                "holder_queries": len(asofs),
                "same_holder": same,
                "other_holder": q_all[q] - 1 - same,
                "seen_before": int(q in seen),
            }
            g, n = f["gap_prev_s"], f["gap_next_s"]
            f["slot_fraction"] = (
                g / (g + n) if prev is not None and nxt is not None and g + n else math.nan
            )
            seen.add(q)
            out[qid] = f
        for m in sorted({r.modality for r in recs}):
            sub = [r for r in recs if r.modality == m]
            for qid, tf in text_features(sub, items).items():
                out[qid].update(tf)
    return [out[r.query_id] for r in records]


def _item_words(items: list[SourceItem]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Per holder: its items' speakers (``meta.speakers``, lower case) and the words of its
    items' file names (the part of the source id after the source key)."""
    speakers: dict[str, set[str]] = defaultdict(set)
    files: dict[str, set[str]] = defaultdict(set)
    for it in items:
        sp = it.meta.get("speakers") if isinstance(it.meta, dict) else None
        for x in sp if isinstance(sp, list) else []:
            if isinstance(x, str):
                speakers[it.holder].update(re.findall(r"[a-z0-9]+", x.lower()))
        name = it.source_id.split(":", 1)[-1].rsplit(".", 1)[0].lower()
        files[it.holder].update(_FILE_WORD.findall(name))
    return speakers, files


def text_features(
    recs: list[AnnotationRecord], items: list[SourceItem]
) -> dict[str, dict[str, Any]]:
    """The text, query-set and metadata features (module docstring) of one split's records of
    one modality: what a system sees of the questions and the items' metadata."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from .derive import STOPWORDS, names

    speakers, files = _item_words(items)
    times: dict[str, list[float]] = defaultdict(list)
    for it in items:
        times[it.holder].append(_seconds(it.observed_at))
    for t in times.values():
        t.sort()
    asof_s = [_seconds(r.as_of) for r in recs]
    slot = [bisect_right(times.get(r.scope.holder, []), a) for r, a in zip(recs, asof_s)]
    sources = [r.query_id.split(":", 1)[0] for r in recs]
    all_speakers = frozenset().union(*speakers.values()) if speakers else frozenset()
    holders = [r.scope.holder for r in recs]
    words = [set(re.findall(r"[a-z0-9]+", r.question.lower())) for r in recs]
    nms = [names(r.question, all_speakers) for r in recs]
    name_uses: dict[str, Counter] = defaultdict(Counter)
    source_uses: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for h, n, src in zip(holders, nms, sources):
        for w in n:
            name_uses[w][h] += 1
            source_uses[(w, src)][h] += 1
    speaker_of: dict[str, set[str]] = defaultdict(set)
    file_of: dict[str, set[str]] = defaultdict(set)
    for h, ws in speakers.items():
        for w in ws:
            speaker_of[w].add(h)
    for h, ws in files.items():
        for w in ws:
            if w not in STOPWORDS:
                file_of[w].add(h)
    x = (
        TfidfVectorizer(token_pattern=r"[a-z0-9]+", sublinear_tf=True).fit_transform(
            [r.question for r in recs]
        )
        if len(recs) > 1
        else None
    )
    h_arr = np.array(holders, dtype=object)
    out = {}
    block: np.ndarray | None = None
    for i, r in enumerate(recs):
        if x is not None and i % _SIM_BLOCK == 0:  # cosines a block of rows at a time:
            block = (x[i : i + _SIM_BLOCK] @ x.T).toarray()  # memory linear in the set
        row = block[i % _SIM_BLOCK].copy() if block is not None else np.zeros(len(recs))
        row[i] = -1.0
        h = holders[i]
        own = h_arr == h
        own[i] = False
        s_own = float(row[own].max()) if own.any() else 0.0
        # the sister: the most similar other question of the same holder (first on a tie)
        j = int(np.flatnonzero(own)[int(np.argmax(row[own]))]) if own.any() else -1
        s_oth = float(row[h_arr != h].max()) if (h_arr != h).any() else 0.0
        years = [int(y) for y in _YEAR.findall(r.question)]
        w = words[i]
        # the three most similar questions of the same holder (similarity above 0)
        own_idx = np.flatnonzero(own)
        near = [int(k) for k in own_idx[np.argsort(-row[own_idx], kind="stable")[:3]] if row[k] > 0]
        sister = j if j >= 0 and s_own > 0 else -1
        d_sis = asof_s[sister] - asof_s[i] if sister >= 0 else 0.0
        dates = named_dates(r.question)
        lead = max(
            (
                (datetime(y, mo or 1, d or 1, tzinfo=timezone.utc) - r.as_of).total_seconds()
                / 86400
                for y, mo, d in dates
                if 1 <= y <= 9999
            ),
            default=math.nan,
        )
        src = sources[i]
        others_src = (
            set().union(*(set(source_uses[(n, src)]) for n in nms[i])) - {h} if nms[i] else set()
        )
        out[r.query_id] = {
            "q_words": len(re.findall(r"[a-z0-9]+", r.question.lower())),
            "q_names": len(nms[i]),
            "q_numbers": len(re.findall(r"\d+", r.question)),
            "q_space": int(r.question != r.question.rstrip()),
            "sim_own": max(s_own, 0.0),
            "sim_other": max(s_oth, 0.0),
            "nn_other": int(s_oth > max(s_own, 0.0)),
            "names_own_qs": sum(name_uses[n][h] > 1 for n in nms[i]),
            "names_other_qs": sum(name_uses[n][h] == 1 and len(name_uses[n]) > 1 for n in nms[i]),
            "speaker_own": len(w & speakers.get(h, set())),
            "speaker_other": sum(1 for x in w if speaker_of.get(x) and h not in speaker_of[x]),
            "file_own": len({x for x in w if len(x) >= 3} & files.get(h, set())),
            "file_other": sum(1 for x in w if file_of.get(x) and h not in file_of[x]),
            "year_after_as_of": int(bool(years) and max(years) > r.as_of.year),
            "nn_own_later": int(sister >= 0 and recs[sister].as_of > r.as_of),
            "date_after_as_of": int(date_after(r.question, r.as_of)),
            "sister_dir": float(np.sign(d_sis)),
            "sister_slot_gap": (slot[sister] - slot[i]) if sister >= 0 else 0,
            "sister_gap_s": math.copysign(math.log1p(abs(d_sis)), d_sis),
            "near3_later": float(np.mean([asof_s[k] > asof_s[i] for k in near])) if near else 0.0,
            "near3_slot_gap": float(np.mean([slot[k] - slot[i] for k in near])) if near else 0.0,
            "n_dates": len(dates),
            "date_lead_days": lead,
            "names_source_qs": sum(sum(source_uses[(n, src)].values()) - 1 for n in nms[i]),
            "names_source_holders": len(others_src),
        }
    return out


def _matrix(rows: list[dict[str, Any]], names: tuple[str, ...] = TIMELINE_FEATURES) -> np.ndarray:
    sources = sorted({r["source"] for r in rows})
    cols = []
    for r in rows:
        v = [float(r[k]) for k in names]
        for k in ("gap_prev_s", "gap_next_s"):
            if k in names:
                v[names.index(k)] = math.log1p(r[k]) if not math.isnan(r[k]) else math.nan
        if names == TIMELINE_FEATURES:  # the scenario is metadata, not text
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
    n_unanswerable: int  # every unanswerable record, audited or not
    # the metadata-only classifier, over the audited population (module docstring)
    auc: float | None
    auc_ci: tuple[float | None, float | None]
    rules: dict[str, float | None] = field(default_factory=dict)
    # the text-and-metadata classifier (grouped by holder), over the audited population
    auc_text: float | None = None
    auc_text_ci: tuple[float | None, float | None] = (None, None)
    n_audited_unanswerable: int = 0
    # the plain TF-IDF + logistic regression classifier on the same records (gated the same)
    auc_lr: float | None = None
    auc_lr_ci: tuple[float | None, float | None] = (None, None)
    # the joint classifier (JointModel, grouped by holder) on the same records (gated the same)
    auc_joint: float | None = None
    auc_joint_ci: tuple[float | None, float | None] = (None, None)
    # how the intervals were resampled ("holder" or "record") and the audited holders
    ci_unit: str = "record"
    n_holders: int = 0
    # the text classifier over every record, upstream tells included (not gated)
    auc_all: float | None = None
    # kind (answerable, native, transactive, temporal) -> n, the AUC of that kind against the
    # answerable records (classifier over every record) and the mean of each text feature
    by_kind: dict[str, dict[str, Any]] = field(default_factory=dict)
    # split -> n answerable / audited unanswerable and the text classifier's AUC within it
    by_split: dict[str, dict[str, Any]] = field(default_factory=dict)
    # source -> what its native tell is, n, the AUC of its natives against its answerable
    # records, and the balanced accuracy of the rule "near_copy" on them
    native_tells: dict[str, dict[str, Any]] = field(default_factory=dict)
    # ADVERSARY_RULES: balanced accuracy over the audited records (gated while
    # ADVERSARY_RULES_GATED)
    adversary: dict[str, float | None] = field(default_factory=dict)

    @property
    def gated(self) -> bool:
        return self.n_audited_unanswerable >= MIN_UNANSWERABLE and self.n_answerable > 0

    @property
    def auc_pass(self) -> bool | None:
        return None if not self.gated or self.auc is None else self.auc <= AUC_GATE

    @property
    def auc_text_pass(self) -> bool | None:
        return _passes(self.gated, self.auc_text, self.auc_text_ci)

    @property
    def auc_lr_pass(self) -> bool | None:
        return _passes(self.gated, self.auc_lr, self.auc_lr_ci)

    @property
    def auc_joint_pass(self) -> bool | None:
        return _passes(self.gated, self.auc_joint, self.auc_joint_ci)

    def rule_pass(self, name: str) -> bool | None:
        """A named rule's gate (of :data:`RULES`, or of :data:`ADVERSARY_RULES` while
        :data:`ADVERSARY_RULES_GATED`); ``None`` when not gated."""
        if name in ADVERSARY_RULES:
            v = self.adversary.get(name)
            gated = self.gated and ADVERSARY_RULES_GATED
        else:
            v = self.rules.get(name)
            gated = self.gated
        return None if not gated or v is None else v <= RULE_GATE

    @property
    def ok(self) -> bool:
        return (
            self.auc_pass is not False
            and self.auc_text_pass is not False
            and self.auc_lr_pass is not False
            and self.auc_joint_pass is not False
            and all(self.rule_pass(k) is not False for k in (*self.rules, *self.adversary))
        )


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
                out.append(
                    f"{m.modality}: metadata-only classifier ROC AUC {m.auc:.3f} > {AUC_GATE}"
                )
            for name, auc, ci, ok in (
                ("text-and-metadata classifier", m.auc_text, m.auc_text_ci, m.auc_text_pass),
                ("TF-IDF + logistic regression", m.auc_lr, m.auc_lr_ci, m.auc_lr_pass),
                ("joint classifier", m.auc_joint, m.auc_joint_ci, m.auc_joint_pass),
            ):
                if ok is False:
                    upper = "—" if ci[1] is None else f"{ci[1]:.3f}"
                    out.append(
                        f"{m.modality}: {name} ROC AUC {auc:.3f} [upper {upper}, "
                        f"resampled by {m.ci_unit}] > {AUC_GATE} [{CI_GATE}]"
                    )
            for k, v in (*m.rules.items(), *m.adversary.items()):
                if m.rule_pass(k) is False:
                    out.append(
                        f"{m.modality}: rule '{ALL_RULES[k][0]}' balanced accuracy "
                        f"{v:.3f} > {RULE_GATE}"
                    )
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "sets_dir": self.sets_dir,
            "gates": {
                "auc": AUC_GATE,
                "auc_upper_ci": CI_GATE,
                "rule": RULE_GATE,
                "min_unanswerable": MIN_UNANSWERABLE,
                "min_holders_ci": MIN_HOLDERS_CI,
            },
            "rules": {k: v[0] for k, v in RULES.items()},
            "ok": self.ok,
            "adversary_rules": {k: v[0] for k, v in ADVERSARY_RULES.items()},
            "adversary_rules_gated": ADVERSARY_RULES_GATED,
            "native_tells_left_out_of_gates": NATIVE_TELLS,
            "modalities": {
                m: {
                    "n_answerable": a.n_answerable,
                    "n_unanswerable": a.n_unanswerable,
                    "n_audited_unanswerable": a.n_audited_unanswerable,
                    "n_holders": a.n_holders,
                    "ci_unit": a.ci_unit,
                    "gated": a.gated,
                    "auc": a.auc,
                    "auc_ci95": list(a.auc_ci),
                    "auc_pass": a.auc_pass,
                    "rules": a.rules,
                    "adversary_rules": a.adversary,
                    "rules_pass": {k: a.rule_pass(k) for k in (*a.rules, *a.adversary)},
                    "auc_text": a.auc_text,
                    "auc_text_ci95": list(a.auc_text_ci),
                    "auc_text_pass": a.auc_text_pass,
                    "auc_lr": a.auc_lr,
                    "auc_lr_ci95": list(a.auc_lr_ci),
                    "auc_lr_pass": a.auc_lr_pass,
                    "auc_joint": a.auc_joint,
                    "auc_joint_ci95": list(a.auc_joint_ci),
                    "auc_joint_pass": a.auc_joint_pass,
                    "auc_all_records": a.auc_all,
                    "by_kind": a.by_kind,
                    "by_split": a.by_split,
                    "native_tells": a.native_tells,
                }
                for m, a in self.modalities.items()
            },
        }


def _passes(gated: bool, auc: float | None, ci: tuple[float | None, float | None]) -> bool | None:
    """A text classifier's gate: ROC AUC <= :data:`AUC_GATE` and its upper 95% bound <=
    :data:`CI_GATE`; ``None`` when not gated."""
    if not gated or auc is None:
        return None
    return auc <= AUC_GATE and (ci[1] is None or ci[1] <= CI_GATE)


def balanced_accuracy(pred: np.ndarray, y: np.ndarray) -> float | None:
    """Balanced accuracy of ``pred`` for ``y`` (both bool), in whichever direction is higher;
    ``None`` without both classes."""
    if y.all() or not y.any():
        return None
    tpr = float(pred[y].mean())
    tnr = float((~pred[~y]).mean())
    ba = (tpr + tnr) / 2
    return max(ba, 1 - ba)


def oof_scores(x: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
    """Out-of-fold P(unanswerable) from gradient boosting, :data:`FOLDS` stratified folds,
    grouped by ``groups`` (the holder) when given: a holder's records are never in the
    training folds of its own predictions, so nothing is learnt about one holder and read
    back from it."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold
    from threadpoolctl import threadpool_limits

    folds = min(FOLDS, int(y.sum()), int((~y).sum()))
    if groups is not None and len(set(groups)) < 2:
        groups = None  # one holder: nothing to keep apart, plain stratified folds
    if groups is not None:
        folds = min(folds, len(set(groups)))
        split = StratifiedGroupKFold(folds, shuffle=True, random_state=SEED).split(x, y, groups)
    else:
        split = StratifiedKFold(folds, shuffle=True, random_state=SEED).split(x, y)
    out = np.zeros(len(y))
    with threadpool_limits(1):  # one thread: the same numbers on every machine, and fast
        for train, test in split:
            if y[train].all() or not y[train].any():
                out[test] = float(y[train].mean())
                continue
            clf = HistGradientBoostingClassifier(
                random_state=SEED, early_stopping=False, max_iter=200, learning_rate=0.05
            )
            clf.fit(x[train], y[train])
            out[test] = clf.predict_proba(x[test])[:, 1]
    return out


# holder metadata beside the n-grams of the plain classifier (:func:`lr_oof_scores`)
LR_META = ("items", "holder_queries", "visible_share", "q_words")


def lr_oof_scores(rows: list[dict[str, Any]], y: np.ndarray) -> np.ndarray:
    """Out-of-fold P(unanswerable) from the plain text classifier: TF-IDF of the question's
    word uni- and bigrams and character 2-5-grams (within word bounds; sublinear tf) beside
    the holder's metadata (:data:`LR_META`, standardised), into a logistic regression
    (balanced class weights, liblinear), :data:`FOLDS` stratified folds grouped by holder.
    The audit an outsider runs first; it shares nothing with :func:`oof_scores`' features
    but the fold rule."""
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    text = [r["question"] for r in rows]
    meta = np.nan_to_num(np.array([[float(r[k]) for k in LR_META] for r in rows]))
    groups = np.array([r["holder"] for r in rows])
    folds = min(FOLDS, int(y.sum()), int((~y).sum()))
    if len(set(groups)) >= 2:
        folds = min(folds, len(set(groups)))
        split = StratifiedGroupKFold(folds, shuffle=True, random_state=SEED).split(meta, y, groups)
    else:
        split = StratifiedKFold(folds, shuffle=True, random_state=SEED).split(meta, y)
    out = np.zeros(len(y))
    for train, test in split:
        if y[train].all() or not y[train].any():
            out[test] = float(y[train].mean())
            continue
        words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
        chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True)
        scale = StandardScaler()
        tr = [text[i] for i in train]
        te = [text[i] for i in test]
        x_tr = hstack(
            [
                words.fit_transform(tr),
                chars.fit_transform(tr),
                csr_matrix(scale.fit_transform(meta[train])),
            ]
        ).tocsr()
        x_te = hstack(
            [words.transform(te), chars.transform(te), csr_matrix(scale.transform(meta[test]))]
        ).tocsr()
        clf = LogisticRegression(
            C=1.0, class_weight="balanced", solver="liblinear", max_iter=1000, random_state=SEED
        )
        clf.fit(x_tr, y[train])
        out[test] = clf.predict_proba(x_te)[:, 1]
    return out


class JointModel:
    """The joint classifier: gradient boosting on every feature of a record at once (the
    timeline, text and query-set features, :data:`JOINT_EXTRA`, the scenario one-hot) beside
    the question's TF-IDF (word uni- and bigrams, sublinear tf) reduced to :data:`JOINT_SVD`
    dimensions (truncated SVD). Everything, the vocabulary and the SVD included, is fitted on
    the training rows alone; missing values stay missing (the trees route them)."""

    def __init__(self) -> None:
        self._sources: list[str] = []
        self._tfidf = self._svd = self._clf = None
        self._const: float | None = None
        self._void = np.zeros(0, dtype=bool)

    def _numeric(self, rows: list[dict[str, Any]]) -> np.ndarray:
        out = np.empty((len(rows), len(JOINT_FEATURES) + len(self._sources)))
        for i, r in enumerate(rows):
            v = [float(r[k]) for k in JOINT_FEATURES]
            for k in ("gap_prev_s", "gap_next_s"):
                x = v[JOINT_FEATURES.index(k)]
                v[JOINT_FEATURES.index(k)] = math.log1p(x) if not math.isnan(x) else math.nan
            out[i] = v + [float(r["source"] == s) for s in self._sources]
        return out

    def _text(self, rows: list[dict[str, Any]]) -> np.ndarray:
        if self._svd is None:
            return np.zeros((len(rows), 0))
        return self._svd.transform(self._tfidf.transform([r["question"] for r in rows]))

    def fit(self, rows: list[dict[str, Any]], y: np.ndarray) -> JointModel:
        from sklearn.decomposition import TruncatedSVD
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.feature_extraction.text import TfidfVectorizer

        if y.all() or not y.any():
            self._const = float(y.mean()) if len(y) else 0.5
            return self
        self._sources = sorted({r["source"] for r in rows})
        try:
            self._tfidf = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
            words = self._tfidf.fit_transform([r["question"] for r in rows])
        except ValueError:  # no word at all in the training questions
            self._tfidf = None
        if self._tfidf is not None and min(words.shape) > 2:
            self._svd = TruncatedSVD(min(JOINT_SVD, min(words.shape) - 1), random_state=SEED)
            self._svd.fit(words)
        self._clf = HistGradientBoostingClassifier(
            random_state=SEED, early_stopping=False, max_iter=200, learning_rate=0.05
        )
        x = np.hstack([self._numeric(rows), self._text(rows)])
        self._void = np.isnan(x).all(axis=0)  # missing in every training row: a constant
        self._clf.fit(self._fill(x), y)
        return self

    def _fill(self, x: np.ndarray) -> np.ndarray:
        x[:, self._void] = 0.0
        return x

    def predict(self, rows: list[dict[str, Any]]) -> np.ndarray:
        """P(unanswerable) of each row."""
        if self._const is not None:
            return np.full(len(rows), self._const)
        return self._clf.predict_proba(
            self._fill(np.hstack([self._numeric(rows), self._text(rows)]))
        )[:, 1]


def joint_oof_scores(rows: list[dict[str, Any]], y: np.ndarray) -> np.ndarray:
    """Out-of-fold P(unanswerable) from :class:`JointModel`, :data:`FOLDS` stratified folds
    grouped by holder (cross-fitted: no holder is in the training folds of its own
    predictions)."""
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold
    from threadpoolctl import threadpool_limits

    groups = np.array([r["holder"] for r in rows])
    folds = min(FOLDS, int(y.sum()), int((~y).sum()))
    if len(set(groups)) >= 2:
        folds = min(folds, len(set(groups)))
        split = StratifiedGroupKFold(folds, shuffle=True, random_state=SEED).split(
            np.zeros(len(y)), y, groups
        )
    else:
        split = StratifiedKFold(folds, shuffle=True, random_state=SEED).split(np.zeros(len(y)), y)
    out = np.zeros(len(y))
    with threadpool_limits(1):
        for train, test in split:
            model = JointModel().fit([rows[i] for i in train], y[train])
            out[test] = model.predict([rows[i] for i in test])
    return out


def roc_auc(scores: np.ndarray, y: np.ndarray) -> float:
    """ROC AUC of ``scores`` for ``y`` (Mann-Whitney U with average ranks for ties; equal to
    ``sklearn.metrics.roc_auc_score``, which the tests check)."""
    from scipy.stats import rankdata

    ranks = rankdata(scores)
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def resampling_unit(groups: np.ndarray | None) -> str:
    """How :func:`auc_with_ci` resamples: ``"holder"`` with at least :data:`MIN_HOLDERS_CI`
    distinct holders in ``groups``, else ``"record"``."""
    return "holder" if groups is not None and len(set(groups)) >= MIN_HOLDERS_CI else "record"


def auc_with_ci(
    scores: np.ndarray, y: np.ndarray, key: str, groups: np.ndarray | None = None
) -> tuple[float, tuple[float | None, float | None]]:
    """ROC AUC and its 95% percentile bootstrap interval (:data:`N_BOOT` resamples, seeded by
    ``key``; resamples without both classes are skipped): of the holders in ``groups`` (each
    drawn holder brings all its records) where :func:`resampling_unit` says so, else of the
    records."""
    from ..core.hashing import stable_hash

    auc = roc_auc(scores, y)
    rng = np.random.default_rng(stable_hash("audit", str(SEED), key))
    n = len(y)
    clusters = None
    if resampling_unit(groups) == "holder":
        _, inv = np.unique(groups, return_inverse=True)
        clusters = [np.flatnonzero(inv == g) for g in range(inv.max() + 1)]
    vals = []
    for _ in range(N_BOOT):
        if clusters is None:
            idx = rng.integers(0, n, n)
        else:
            idx = np.concatenate(
                [clusters[g] for g in rng.integers(0, len(clusters), len(clusters))]
            )
        yy = y[idx]
        if yy.all() or not yy.any():
            continue
        vals.append(roc_auc(scores[idx], yy))
    if not vals:
        return auc, (None, None)
    lo, hi = np.percentile(vals, [2.5, 97.5])
    return auc, (float(lo), float(hi))


def _kind(r: dict[str, Any]) -> str:
    return r["derivation"] if r["unanswerable"] else "answerable"


def _gated_row(r: dict[str, Any]) -> bool:
    """Whether a record is in the audited population every gate reads: an answerable record, or
    an unanswerable one whose ``origin.audited`` is true (:func:`membench.contract.tells.audited`;
    false for a native of a source with an upstream tell, :data:`NATIVE_TELLS`)."""
    return bool(r["audited"])


def _auc_or_none(scores: np.ndarray, y: np.ndarray) -> float | None:
    return roc_auc(scores, y) if y.any() and not y.all() else None


def audit_rows(rows: list[dict[str, Any]]) -> dict[str, ModalityAudit]:
    """The checks per modality over feature rows (:func:`features`). Every gated figure (the
    metadata-only, text-and-metadata, TF-IDF and joint classifiers and every named rule) is over
    the audited population alone (:func:`_gated_row`); the text classifier over every record,
    per kind, per split and per upstream tell is reported beside them."""
    out = {}
    for m in MODALITIES:
        everything = [r for r in rows if r["modality"] == m]
        if not everything:
            continue
        ya = np.array([r["unanswerable"] for r in everything], dtype=bool)
        n_u, n_a = int(ya.sum()), int((~ya).sum())
        sub = [r for r in everything if _gated_row(r)]
        y = np.array([r["unanswerable"] for r in sub], dtype=bool)
        groups = np.array([r["holder"] for r in sub])
        unit = resampling_unit(groups)
        res = ModalityAudit(
            m,
            n_a,
            n_u,
            None,
            (None, None),
            n_audited_unanswerable=int(y.sum()),
            ci_unit=unit,
            n_holders=len(set(groups)),
        )
        scores = None
        if min(int(y.sum()), int((~y).sum())) >= MIN_FOR_AUC:
            res.auc, res.auc_ci = auc_with_ci(
                oof_scores(_matrix(sub, TIMELINE_FEATURES), y), y, m, groups
            )
            scores = oof_scores(_matrix(sub, TEXT_FEATURES), y, groups)
            res.auc_text, res.auc_text_ci = auc_with_ci(scores, y, f"text:{m}", groups)
            res.auc_lr, res.auc_lr_ci = auc_with_ci(lr_oof_scores(sub, y), y, f"lr:{m}", groups)
            res.auc_joint, res.auc_joint_ci = auc_with_ci(
                joint_oof_scores(sub, y), y, f"joint:{m}", groups
            )
        for k, (_, fn) in RULES.items():
            res.rules[k] = balanced_accuracy(np.array([fn(r) for r in sub], dtype=bool), y)
        for k, (_, fn) in ADVERSARY_RULES.items():
            res.adversary[k] = balanced_accuracy(np.array([fn(r) for r in sub], dtype=bool), y)
        all_scores = None
        if len(everything) == len(sub):
            all_scores, res.auc_all = scores, res.auc_text
        elif min(n_u, n_a) >= MIN_FOR_AUC:
            all_scores = oof_scores(
                _matrix(everything, TEXT_FEATURES), ya, np.array([r["holder"] for r in everything])
            )
            res.auc_all = roc_auc(all_scores, ya)
        kinds = np.array([_kind(r) for r in everything])
        for k in ["answerable"] + sorted(set(kinds) - {"answerable"}):
            mk = kinds == k
            entry: dict[str, Any] = {"n": int(mk.sum()), "auc": None}
            if k != "answerable" and all_scores is not None:
                both = mk | (kinds == "answerable")
                if mk.sum() >= MIN_FOR_AUC and (kinds == "answerable").sum() >= MIN_FOR_AUC:
                    entry["auc"] = _auc_or_none(all_scores[both], ya[both])
            entry["features"] = {
                f: float(np.mean([float(everything[i][f]) for i in np.flatnonzero(mk)]))
                for f in TEXT_FEATURES
            }
            res.by_kind[k] = entry
        splits = np.array([r["split"] for r in sub])
        for sp in sorted(set(splits)):
            ms = splits == sp
            res.by_split[sp] = {
                "answerable": int((~y[ms]).sum()),
                "unanswerable": int(y[ms].sum()),
                "auc": _auc_or_none(scores[ms], y[ms]) if scores is not None else None,
            }
        for src in sorted({r["source"] for r in everything} & set(NATIVE_TELLS)):
            ms = np.array(
                [
                    r["source"] == src and (not r["unanswerable"] or r["derivation"] == "native")
                    for r in everything
                ]
            )
            if not (ya[ms].any() and (~ya[ms]).any()):
                continue
            copy = np.array([TEXT_RULES["near_copy"][1](everything[i]) for i in np.flatnonzero(ms)])
            res.native_tells[src] = {
                "tell": NATIVE_TELLS[src],
                "n_native": int(ya[ms].sum()),
                "n_answerable": int((~ya[ms]).sum()),
                "auc": _auc_or_none(all_scores[ms], ya[ms]) if all_scores is not None else None,
                "near_copy": balanced_accuracy(copy, ya[ms]),
            }
        out[m] = res
    return out


def audit_sets(sets_dir: str | Path) -> Audit:
    """The audit of a built sets folder (all splits, every modality with a set file)."""
    sets_dir = Path(sets_dir)
    items = read_models(sets_dir / "items.jsonl", SourceItem)
    records: list[AnnotationRecord] = []
    for split in ("dev", "test"):
        records += select_records(sets_dir, split)[0]
    return Audit(str(sets_dir), audit_rows(features(records, items)))


AUDIT_CACHE_VERSION = "audit-7"


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
    code = source_digest(("contract", "core", "modalities", "sets", "sources"))
    h.update(f"source={code}\n".encode())
    for dist in ("numpy", "scipy", "scikit-learn"):
        try:
            h.update(f"{dist}=={md.version(dist)}\n".encode())
        except md.PackageNotFoundError:
            h.update(f"{dist}=none\n".encode())
    return h.hexdigest()


def audit_sets_cached(sets_dir: str | Path) -> Audit:
    """:func:`audit_sets`, from ``cache_dir("audit")`` when these very set files were audited
    by this code before (:func:`audit_key`), else computed and cached. The audit
    (cross-validated classifiers per modality and a bootstrap of each AUC, about a minute of
    CPU) is a function of the set files and the code alone; every ``membench run`` checks the sets
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
            mods = {
                m: ModalityAudit(
                    m,
                    int(d["n_answerable"]),
                    int(d["n_unanswerable"]),
                    d["auc"],
                    (d["auc_ci95"][0], d["auc_ci95"][1]),
                    dict(d["rules"]),
                    auc_text=d["auc_text"],
                    auc_text_ci=(d["auc_text_ci95"][0], d["auc_text_ci95"][1]),
                    n_audited_unanswerable=int(d["n_audited_unanswerable"]),
                    auc_lr=d["auc_lr"],
                    auc_lr_ci=(d["auc_lr_ci95"][0], d["auc_lr_ci95"][1]),
                    auc_joint=d["auc_joint"],
                    auc_joint_ci=(d["auc_joint_ci95"][0], d["auc_joint_ci95"][1]),
                    ci_unit=str(d["ci_unit"]),
                    n_holders=int(d["n_holders"]),
                    auc_all=d["auc_all_records"],
                    by_kind=dict(d["by_kind"]),
                    by_split=dict(d["by_split"]),
                    native_tells=dict(d["native_tells"]),
                    adversary=dict(d["adversary_rules"]),
                )
                for m, d in data["modalities"].items()
            }
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


def _kinds_cell(x: ModalityAudit) -> str:
    parts = [
        f"{k} {_f(v['auc'])} (n = {v['n']})"
        for k, v in x.by_kind.items()
        if k != "answerable" and v.get("auc") is not None
    ]
    return "; ".join(parts) or "—"


def _adversary_cell(x: ModalityAudit) -> str:
    """The sister and date rules of one modality, each marked where it is over the rule gate
    (and whether they are gated: :data:`ADVERSARY_RULES_GATED`)."""
    parts = []
    for k, v in x.adversary.items():
        if v is None:
            continue
        over = f" (over {RULE_GATE})" if v > RULE_GATE else ""
        parts.append(f"{k.replace('_', ' ')} {v:.2f}{over}")
    if parts and not ADVERSARY_RULES_GATED:
        parts.append("not gated")
    return "; ".join(parts) or "—"


def _ci_cell(auc: float | None, ci: tuple[float | None, float | None]) -> str:
    return "—" if auc is None else f"{auc:.2f} [{_f(ci[0])}, {_f(ci[1])}]"


def render_audit(a: Audit) -> str:
    """The audit as a Markdown table: per modality n, each gated classifier's AUC with its
    interval (over the audited population), the text classifier over every record (upstream
    tells included) and per kind, the highest named rule, the sister and date rules, the
    verdict; then how the intervals were resampled and each upstream tell's strength (every
    rule is in ``as_dict()``)."""
    rows = [
        "| modality | answerable | unanswerable | audited unanswerable (share of records) | "
        "metadata-only ROC AUC (95% CI) | text-and-metadata ROC AUC (95% CI) | TF-IDF + "
        "logistic regression ROC AUC (95% CI) | joint classifier ROC AUC (95% CI) | "
        "text, every record, by kind | best named rule (balanced accuracy) | sister and "
        f"date rules (balanced accuracy) | gates (AUC <= {AUC_GATE}, upper CI <= {CI_GATE} "
        f"but metadata-only, rules <= {RULE_GATE}) |",
        "|---|---:|---:|---:|---|---|---|---|---|---|---|---|",
    ]
    for m, x in a.modalities.items():
        best = max(((v, k) for k, v in x.rules.items() if v is not None), default=None)
        rule = "—" if best is None else f"{RULES[best[1]][0]}: {best[0]:.2f}"
        total = x.n_answerable + x.n_unanswerable
        n_au = x.n_audited_unanswerable
        share = f"{n_au} ({n_au / total:.1%})" if total else "—"
        every = "—" if x.auc_all is None else f"{x.auc_all:.2f}: {_kinds_cell(x)}"
        verdict = (
            ("pass" if x.ok else "FAIL")
            if x.gated
            else f"not gated (< {MIN_UNANSWERABLE} audited unanswerable)"
        )
        rows.append(
            f"| {m} | {x.n_answerable} | {x.n_unanswerable} | {share} | "
            f"{_ci_cell(x.auc, x.auc_ci)} | {_ci_cell(x.auc_text, x.auc_text_ci)} | "
            f"{_ci_cell(x.auc_lr, x.auc_lr_ci)} | "
            f"{_ci_cell(x.auc_joint, x.auc_joint_ci)} | {every} | {rule} | "
            f"{_adversary_cell(x)} | {verdict} |"
        )
    by_record = [
        f"{m} ({x.n_holders} holders)"
        for m, x in a.modalities.items()
        if x.auc is not None and x.ci_unit == "record"
    ]
    rows += [
        "",
        f"Intervals: {N_BOOT} bootstrap resamples of the holders (a drawn holder "
        f"brings all its records) where a modality has at least {MIN_HOLDERS_CI} audited "
        "holders"
        + (
            f"; of the records in {', '.join(by_record)}, too few holders to resample."
            if by_record
            else "."
        ),
    ]
    tells = [(m, src, t) for m, x in a.modalities.items() for src, t in x.native_tells.items()]
    if tells:
        rows += [
            "",
            "Upstream native unanswerables with a tell of their own (left out of the "
            "gates; the build keeps upstream's questions as they are):",
            "",
            "| modality | source | the tell | natives | answerable | ROC AUC, natives "
            "against answerable | rule 'near-copy' (balanced accuracy) |",
            "|---|---|---|---:|---:|---:|---:|",
        ]
        for m, src, t in tells:
            rows.append(
                f"| {m} | {src} | {t['tell']} | {t['n_native']} | {t['n_answerable']} "
                f"| {_f(t['auc'])} | {_f(t['near_copy'])} |"
            )
    return "\n".join(rows)


def kinds_table(a: Audit):
    """Per modality and kind of record: n, the AUC of that kind against the answerable records
    (classifier over every record) and the mean of every text feature: which tell is left (a
    pandas DataFrame, for report 01)."""
    import pandas as pd

    rows = []
    for m, x in a.modalities.items():
        for k, v in x.by_kind.items():
            rows.append(
                {
                    "modality": m,
                    "kind": k,
                    "n": v["n"],
                    "ROC AUC against answerable": v.get("auc"),
                    **v.get("features", {}),
                }
            )
    return pd.DataFrame(rows).set_index(["modality", "kind"]) if rows else pd.DataFrame()


def splits_table(a: Audit):
    """Per modality and split: n and the gated classifier's AUC within the split."""
    import pandas as pd

    rows = [
        {"modality": m, "split": sp, **v}
        for m, x in a.modalities.items()
        for sp, v in x.by_split.items()
    ]
    return pd.DataFrame(rows).set_index(["modality", "split"]) if rows else pd.DataFrame()


def native_tells_table(a: Audit):
    """Each upstream native tell's strength per source (left out of the gates)."""
    import pandas as pd

    rows = [
        {"modality": m, "source": src, **t}
        for m, x in a.modalities.items()
        for src, t in x.native_tells.items()
    ]
    return pd.DataFrame(rows).set_index(["modality", "source"]) if rows else pd.DataFrame()


def audit_frame(a: Audit):
    """:func:`render_audit` as a pandas DataFrame (one row per modality: n, each classifier's
    AUC with its interval (``metadata-only ROC AUC``, ``text-and-metadata ROC AUC``, ``joint
    ROC AUC``, each with ``_lo`` / ``_hi``, and how they were resampled), the text classifier
    over every record, the highest named rule, the verdict), for reports."""
    import pandas as pd

    rows = []
    for m, x in a.modalities.items():
        best = max(((v, k) for k, v in x.rules.items() if v is not None), default=None)
        lo, hi = x.auc_ci
        rows.append(
            {
                "modality": m,
                "gates": ("pass" if x.ok else "FAIL")
                if x.gated
                else f"not gated (< {MIN_UNANSWERABLE} audited unanswerable)",
                "answerable": x.n_answerable,
                "unanswerable": x.n_unanswerable,
                "metadata-only ROC AUC": x.auc,
                "metadata-only ROC AUC_lo": lo,
                "metadata-only ROC AUC_hi": hi,
                "text-and-metadata ROC AUC": x.auc_text,
                "text-and-metadata ROC AUC_lo": x.auc_text_ci[0],
                "text-and-metadata ROC AUC_hi": x.auc_text_ci[1],
                "joint ROC AUC": x.auc_joint,
                "joint ROC AUC_lo": x.auc_joint_ci[0],
                "joint ROC AUC_hi": x.auc_joint_ci[1],
                "intervals resampled by": x.ci_unit,
                "audited unanswerable": x.n_audited_unanswerable,
                "text, every record": x.auc_all,
                "best named rule": "—" if best is None else RULES[best[1]][0],
                "its balanced accuracy": None if best is None else best[0],
            }
        )
    return pd.DataFrame(rows).set_index("modality")


def rules_table(a: Audit):
    """Every named rule's balanced accuracy per modality (a pandas DataFrame, for report 01)."""
    import pandas as pd

    data = {m: {**x.rules, **x.adversary} for m, x in a.modalities.items()}
    df = pd.DataFrame(data)
    df.index = [
        ALL_RULES[k][0]
        if k in RULES or ADVERSARY_RULES_GATED
        else f"{ADVERSARY_RULES[k][0]} (not gated)"
        for k in df.index
    ]
    return df
