"""Every record of one source with its ``as_of``, and the derived unanswerables (SPEC section 5,
building sets, rules b and c, and "No tells").

* **transactive**: an answerable query re-scoped to *another holder of the same source* (in the
  same split). The other holder never saw the gold item, so the right answer is to abstain.
* **temporal**: an answerable query asked *before* its evidence existed: ``as_of`` before the
  earliest item holding evidence under any judgment set.

**A derived query replaces the query it comes from**: the original is not a record (its id
stays in ``origin.derived_from`` and its gold regions in ``origin.distractor``, the evidence
that would answer it in another scope, for the failure browser). So no question is asked once
answerably and once not because of a derivation, and repeating a question tells nothing.

Which answerable queries are derived is decided by a hash of the query id (no randomness, no
dependence on order), with a quota per source (:data:`POLICY`). ``as_of`` of every record is
drawn by :mod:`membench.sets.timeline` (seeded by the query id): answerable, native
unanswerable and transactive queries a few slots after their anchor, temporal ones a few slots
before their evidence, with the same offsets and clock digits.

**Guards.** A derivation is skipped, and counted with its reason in ``coverage.json``, when the
memory it is asked of could answer it after all:

1. *anchor guard* (every source with upstream text: the PDF text layer, turns, captions, code,
   TabMWP's tables, FinChart's and ScreenSpot's upstream questions over each item): the
   question's *anchors* are its content words (>= 4 letters, not stop words) that occur in its
   gold items' text and in at most :data:`ANCHOR_MAX_DF` of the source's items (a word every
   document has, like "paper" or a speaker's name, anchors nothing); a question without an
   anchor is never derived (it may be generic: "How many figures are in this paper?").
   Transactive: at most :data:`ANCHOR_MAX_SHARE` of its anchors may occur anywhere in the
   other holder's text. Temporal: no other item of the holder (no passage of one,
   :meth:`membench.modalities.Modality.passages`) may hold more than that share, over the
   holder's *whole* timeline: which queries pass must not depend on where as_of falls, or the
   survivors would sit early in the timeline (a tell);
   A PDF without a text layer (``meta.text_pages == 0``) has no upstream text: as for
   pictures, its text is the upstream questions whose gold is on it (the build never OCRs),
   and a question is re-scoped only between holders whose memories are read the same way
   (:meth:`_Source.basis`): a question of a text PDF never moves to a slide deck, whose
   questions-only text would hold its anchors far more rarely than a text layer would, and
   decks would become the likely targets of transactive queries (a tell);
2. *near-duplicate guard* (:mod:`membench.sets.neardup`): no item of that memory (the other
   holder's; for temporal, the holder's other items) is a near-duplicate of an item or region
   holding its evidence (perceptual hash for pictures, normalised text elsewhere);
3. *every judgment set*: evidence is gold plus every alternative judgment set
   (CodeSearchNet's ``any_annotator``), so a temporal ``as_of`` precedes all of it.

Some sources get no derivation of a kind at all (:data:`NOT_DERIVED`, with the reason written
to ``coverage.json``): GUI instructions such as "check the weather" fit any device's screen (no
transactive); code-search queries were judged on a sample of functions, so neither another
corpus nor an earlier unjudged function is known not to answer them (none at all).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from .. import modalities
from ..core.hashing import hash_order
from .neardup import NearDupIndex
from .schema import AnnotationRecord, Gold, Origin, RecordDraft, Scope, SourceItem
from .timeline import Timeline, pick

# source key -> {derivation: share of the source's answerable queries}
DEFAULT_POLICY: dict[str, float] = {"transactive": 0.15, "temporal": 0.10}
POLICY: dict[str, dict[str, float]] = {
    "codesearchnet": {},
    "screenspot": {"temporal": 0.25},
}
# why a source gets no derivation of a kind (written to coverage.json)
NOT_DERIVED: dict[str, dict[str, str]] = {
    "codesearchnet": {
        "transactive": "code-search queries were judged on a sample of functions, not the "
                       "whole corpus: another language's corpus may hold a relevant function",
        "temporal": "code-search queries were judged on a sample of functions, not the whole "
                    "corpus: an earlier unjudged function may be relevant (the anchor guard "
                    "finds another 40-line window of the corpus holding most of the words of "
                    "nearly every query, and the few that pass are a sample a metadata "
                    "classifier tells apart: docs/sets.md)",
    },
    "screenspot": {
        "transactive": "GUI instructions (\"check the weather\") fit any device's screen",
    },
}
ANCHOR_MAX_SHARE = 0.5
ANCHOR_MAX_DF = 0.5

_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset("""
about above after again against also among another answer back because been before being below
between both could did does doing down during each either else ever every from further have
having here hers herself himself into itself just like made make many more most much must
need never only other ours ourselves over same shall should since some such than that their
theirs them themselves then there these they this those through under until upon very were what
when where which while whom whose will with within without would your yours yourself please
according based shown show given list number name many used using what's does following
""".split())

NO_HOLDER = "no other holder of the source in its split"
NO_ANCHOR = "no distinctive question word in its gold's text"
T_ANCHORS = "its anchors are in every other holder's memory"
T_NEARDUP = "a near-duplicate of its evidence is in every other holder's memory"
T_EITHER = "every other holder's memory holds its anchors or a near-duplicate of its evidence"
FIRST = "its evidence is in the holder's first observation (nothing is visible before it)"
E_ANCHORS = "another item of the holder holds most of its anchors"
E_NEARDUP = "another item of the holder is a near-duplicate of its evidence"


def tokens(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def anchors(question: str) -> set[str]:
    """The question's content words: >= 4 letters or digits, not stop words."""
    return {w for w in tokens(question) if len(w) >= 4 and w not in STOPWORDS}


def policy(source: str) -> dict[str, float | str]:
    return POLICY.get(source, DEFAULT_POLICY)


@dataclass
class DeriveStats:
    candidates: int = 0
    transactive: int = 0
    temporal: int = 0
    skipped: Counter = field(default_factory=Counter)   # "<derivation>: <reason>" -> count
    not_derived: dict[str, str] = field(default_factory=dict)   # derivation -> why none

    def as_dict(self) -> dict:
        return {"candidates": self.candidates, "transactive": self.transactive,
                "temporal": self.temporal, "skipped": dict(sorted(self.skipped.items())),
                "not_derived": dict(sorted(self.not_derived.items()))}


@dataclass
class _Source:
    """One source's items, texts and timelines, with the lookups the guards need."""

    items: dict[str, SourceItem]
    texts: dict[str, str]
    timelines: dict[str, Timeline]
    index: NearDupIndex
    by_holder: dict[str, list[str]] = field(default_factory=dict)   # in (slot, id) order
    item_slot: dict[str, int] = field(default_factory=dict)
    item_tokens: dict[str, set[str]] = field(default_factory=dict)
    passage_tokens: dict[str, list[set[str]]] = field(default_factory=dict)
    df: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        for sid in sorted(self.items):
            it = self.items[sid]
            self.item_slot[sid] = self.timelines[it.holder].slot_of(it.observed_at)
            self.by_holder.setdefault(it.holder, []).append(sid)
            if self.texts.get(sid):
                self.item_tokens[sid] = tokens(self.texts[sid])
                self.df.update(self.item_tokens[sid])
                parts = modalities.get(it.modality).passages(self.texts[sid], it.meta)
                self.passage_tokens[sid] = ([self.item_tokens[sid]] if len(parts) == 1
                                            else [tokens(p) for p in parts])
        for sids in self.by_holder.values():
            sids.sort(key=lambda s: (self.item_slot[s], s))

    def basis(self, holder: str) -> str:
        """What the guards read of a holder's memory: ``"content"`` (upstream text) or
        ``"questions"`` (an image-only PDF, whose text is the questions asked of it). A question is re-scoped only between holders of one basis."""
        return ("questions" if any(self.items[s].meta.get("text_pages") == 0
                                   for s in self.by_holder[holder]) else "content")

    @property
    def has_text(self) -> bool:
        return bool(self.item_tokens)

    def slot(self, sid: str) -> int:
        return self.item_slot[sid]

    def anchors(self, r: RecordDraft) -> set[str]:
        """The question's anchors: content words in its gold's text that at most
        :data:`ANCHOR_MAX_DF` of the source's items contain."""
        gold: set[str] = set()
        for g in r.gold:
            gold |= self.item_tokens.get(g.source_id, set())
        limit = ANCHOR_MAX_DF * len(self.item_tokens)
        return {w for w in anchors(r.question) & gold if self.df[w] <= limit}

    def anchor_share(self, a: set[str], memory: list[str]) -> float:
        seen: set[str] = set()
        for sid in memory:
            seen |= a & self.item_tokens.get(sid, set())
            if len(seen) == len(a):
                break
        return len(seen) / len(a)

    def max_passage_share(self, a: set[str], memory: list[str]) -> float:
        """The largest share of anchors ``a`` that one passage of an item of ``memory`` holds
        (a passage: the item, or the piece of it one piece of evidence fits in,
        :meth:`membench.modalities.Modality.passages`)."""
        best = 0
        for sid in memory:
            for toks in self.passage_tokens.get(sid, ()):
                best = max(best, len(a & toks))
            if best == len(a):
                break
        return best / len(a)

    def near_duplicate(self, r: RecordDraft, memory: list[str]) -> str | None:
        """An item of ``memory`` that is a near-duplicate of an item or region holding ``r``'s
        evidence (gold or any judgment set), or ``None``."""
        mod = modalities.get(r.modality)
        for g in evidence(r):
            it = self.items[g.source_id]
            text = self.texts.get(g.source_id, "")
            region = mod.region_text(g.region, text, it.meta) if text else None
            found = self.index.duplicates(self.index.evidence(g.source_id, [region or ""]),
                                          memory)
            if found:
                return found
        return None


def evidence(r: RecordDraft) -> list[Gold]:
    """Gold and every alternative judgment set's regions."""
    return list(r.gold) + [g for gs in (r.judgments or {}).values() for g in gs]


def derive(source: str, drafts: list[RecordDraft], items: dict[str, SourceItem],
           texts: dict[str, str], holder_split: dict[str, str],
           timelines: dict[str, Timeline], index: NearDupIndex | None = None,
           ) -> tuple[list[AnnotationRecord], DeriveStats]:
    """Every record of one source: the natives that stay (with ``as_of``) and the derived
    unanswerables that replace the others. Reads nothing outside its arguments."""
    pol = policy(source)
    if not any(pol.values()):       # nothing to derive: the guards need no text
        texts, index = {}, NearDupIndex()
    src = _Source({k: v for k, v in items.items() if k.split(":", 1)[0] == source},
                  texts, timelines, index or NearDupIndex(texts))
    answerable = {r.query_id: r for r in drafts if not r.unanswerable}
    order = hash_order(answerable, f"derive:{source}")
    stats = DeriveStats(candidates=len(order), not_derived=dict(NOT_DERIVED.get(source, {})))

    anchor_slot: dict[str, int] = {}
    pool: dict[str, list[int]] = defaultdict(list)      # holder -> anchors of its answerables
    for qid in sorted(answerable):
        r = answerable[qid]
        anchor_slot[qid] = max(src.slot(g.source_id) for g in evidence(r))
        pool[r.scope.holder].append(anchor_slot[qid])

    def placed(holder: str, seed: str, anchor: int | None = None) -> datetime:
        """as_of a few slots after ``anchor`` (default: an answerable query's anchor in this
        holder, by hash; a holder without one: a slot by hash)."""
        tl = timelines[holder]
        if anchor is None:
            p = sorted(pool.get(holder, []))
            anchor = p[pick(len(p), "pseudo-anchor", seed)] if p else pick(tl.slots, "slot", seed)
        return tl.instant(tl.after(anchor, seed), seed)

    def derived(r: RecordDraft, kind: str, scope: Scope, as_of: datetime,
                qid: str) -> AnnotationRecord:
        origin = Origin(**{**r.origin.model_dump(), "derived_from": r.query_id,
                           "derivation": kind,
                           "distractor": [g.model_dump(exclude_none=True) for g in r.gold]})
        return AnnotationRecord(
            query_id=qid, modality=r.modality, question=r.question, answer=None,
            answer_format="none", gold=[], judgments=None, scope=scope, as_of=as_of,
            unanswerable=True, origin=origin, split=holder_split[scope.holder])

    out: list[AnnotationRecord] = []
    used: set[str] = set()

    # ---- transactive
    holders = sorted(src.by_holder)
    quota = math.ceil(float(pol.get("transactive", 0.0)) * len(order))
    for qid in order:
        if stats.transactive >= quota:
            break
        r = answerable[qid]
        others = [h for h in holders
                  if h != r.scope.holder and holder_split[h] == holder_split[r.scope.holder]
                  and src.basis(h) == src.basis(r.scope.holder)]
        if not others:
            stats.skipped[f"transactive: {NO_HOLDER}"] += 1
            continue
        a = src.anchors(r) if src.has_text else set()
        if src.has_text and not a:
            stats.skipped[f"transactive: {NO_ANCHOR}"] += 1
            continue
        why: set[str] = set()
        target = None
        for h in hash_order(others, r.query_id):
            memory = src.by_holder[h]
            if a and src.anchor_share(a, memory) > ANCHOR_MAX_SHARE:
                why.add(T_ANCHORS)
            elif src.near_duplicate(r, memory):
                why.add(T_NEARDUP)
            else:
                target = h
                break
        if target is None:
            stats.skipped[f"transactive: {why.pop() if len(why) == 1 else T_EITHER}"] += 1
            continue
        new = f"{qid}~transactive"
        scope = Scope(holder=target, session=None, scenario=r.scope.scenario)
        out.append(derived(r, "transactive", scope, placed(target, new), new))
        used.add(qid)
        stats.transactive += 1

    # ---- temporal
    quota = math.ceil(float(pol.get("temporal", 0.0)) * len(order))
    for qid in order:
        if stats.temporal >= quota:
            break
        if qid in used:
            continue
        r = answerable[qid]
        new = f"{qid}~temporal"
        tl = timelines[r.scope.holder]
        slot = tl.before(min(src.slot(g.source_id) for g in evidence(r)), new)
        if slot is None:
            stats.skipped[f"temporal: {FIRST}"] += 1
            continue
        # the guards read the holder's whole timeline (every item but the evidence's own),
        # not only what is visible at as_of: which queries pass must not depend on where
        # as_of falls, or the survivors would sit early in the timeline (a tell)
        own = {g.source_id for g in evidence(r)}
        memory = [sid for sid in src.by_holder[r.scope.holder] if sid not in own]
        a = src.anchors(r) if src.has_text else set()
        if src.has_text and not a:
            stats.skipped[f"temporal: {NO_ANCHOR}"] += 1
            continue
        if a and src.max_passage_share(a, memory) > ANCHOR_MAX_SHARE:
            stats.skipped[f"temporal: {E_ANCHORS}"] += 1
            continue
        if src.near_duplicate(r, memory):
            stats.skipped[f"temporal: {E_NEARDUP}"] += 1
            continue
        out.append(derived(r, "temporal", r.scope, tl.instant(slot, new), new))
        used.add(qid)
        stats.temporal += 1

    # ---- the natives that stay
    for r in drafts:
        if r.query_id in used:
            continue
        fields = r.model_dump()
        h = r.scope.holder
        if r.as_of is not None:          # an upstream question time (LongMemEval)
            as_of = r.as_of
        elif r.unanswerable:
            as_of = placed(h, r.query_id)
        else:
            as_of = placed(h, r.query_id, anchor_slot[r.query_id])
        out.append(AnnotationRecord(**{**fields, "as_of": as_of, "split": holder_split[h]}))
    return out, stats
