"""Every record of one source with its ``as_of``, and the derived unanswerables (SPEC section 5,
building sets, rules b and c, and "No tells").

Two kinds are derived, each *replacing* the answerable query it comes from (its id stays in
``origin.derived_from``, its gold regions in ``origin.distractor``): **transactive** (the
question re-scoped to another holder of the same source and split; questions move as whole
per-item clusters, :func:`cluster_key`) and **temporal** (asked before its earliest evidence
under any judgment set). Which questions are derived is decided by hashes, with a quota per
source (:data:`POLICY`, :data:`NOT_DERIVED`); ``as_of`` is drawn by
:mod:`membench.sets.timeline` (:data:`WINDOW_START`); a late question no derivation takes is
not asked (:class:`DeriveStats`). A derivation is skipped, with its reason, when a guard finds
the memory could answer it after all: anchors (:func:`anchors`, :data:`ANCHOR_MAX_SHARE`,
:data:`ANCHOR_MAX_DF`), near-duplicates (:mod:`membench.sets.neardup`), generic questions
(:data:`GENERIC_MIN_DF`), names (:func:`names`, transactive), twins (transactive), the same
numbers (:data:`SAME_NUMBERS_MIN`) and every judgment set's evidence. Per-source variants are
data constants with their reason beside them (:data:`TOPIC_MARK`, :data:`SWAP`,
:data:`CLUSTER_BY_REGION`, :data:`ASK_DERIVABLE`).

Reads nothing outside its arguments; writes nothing (the skip reasons go into
:class:`DeriveStats`, which the build writes to ``coverage.json``). Start at :func:`derive`.
docs/sets.md ("Decisions that hold for every source", "Position tells nothing") describes
every rule and guard and why.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache

import numpy as np
import snowballstemmer

from .. import modalities
from ..contract.schema import AnnotationRecord, Gold, Origin, RecordDraft, Scope, SourceItem
from ..contract.tells import labels as tell_labels
from ..core.hashing import hash_order
from .dates import date_after
from .neardup import NearDupIndex
from .timeline import Timeline, pick, uniform

# source key -> {derivation: share of the source's answerable queries}
DEFAULT_POLICY: dict[str, float] = {"transactive": 0.15, "temporal": 0.10}
POLICY: dict[str, dict[str, float]] = {
    "codesearchnet": {},
    "screenspot": {"temporal": 0.25},
    "medvidqa": {"transactive": 0.15, "temporal": 0.2},
    "mmlongbench": {"transactive": 0.15, "temporal": 0.15},
    # LoCoMo: every question names a speaker of its own conversation, so no transactive
    # derivation passes the names guard; temporal takes what its guards allow
    "locomo": {"transactive": 0.15, "temporal": 0.2},
    # PrefEval: one question per user and family, so the family guard leaves room
    "prefeval": {"transactive": 0.2, "temporal": 0.15},
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
        "transactive": 'GUI instructions ("check the weather") fit any device\'s screen'
    },
}
# where the as_of window starts for a source, when not at timeline.AS_OF_WINDOW_START:
# MMLongBench's shelves hold four documents, and over a window of their last three slots a
# temporal as_of (never in the last slot: its evidence must come after it) sits visibly
# earlier than an answerable one (the audit's text-and-metadata classifier reads the visible
# share, ROC AUC 0.67); over the last two slots it does not (docs/sets.md)
WINDOW_START: dict[str, float] = {"mmlongbench": 0.7}
# what an item is about (an adapter's ``topics``: PrefEval's preference families, for questions
# that share few words with their evidence, "Which restaurants in Rome?" after "I avoid
# gluten") is an anchor of every question whose gold it holds, and a memory holding an item
# about the same is taken to answer it (guard 1)
TOPIC_MARK = "\x00topic:"
# sources of many small holders: a transactive move is a swap (holder A's cluster goes to B and
# one of B's whole clusters, of about the same size, to A), so no holder's number of
# questions (or how alike they are) tells that some of them were moved in
SWAP = frozenset({"prefeval"})
# sources whose clusters are a region's questions, not an item's: PsTuts's owners hold one or
# two videos of up to 130 questions, and a whole video's questions moving at once would make
# a viewer's number of questions tell (the audit's metadata classifier reads it)
CLUSTER_BY_REGION = frozenset({"pstuts"})
# sources that ask only the questions a derivation could take (an anchor, not generic): where
# most questions are generic how-tos that no derivation can take, the answerable ones would
# be the generic and the derived ones the specific, and question words alone would tell
ASK_DERIVABLE = frozenset({"pstuts"})
UNDERIVABLE = "no derivation could take it (no anchor, or a generic one)"
# the sizes of a swap's two clusters differ by at most this share of the first's (and 1)
SWAP_SIZE_TOLERANCE = 0.25
NO_SWAP = "the holder it would move to has no question that could move back (a swap)"
ANCHOR_MAX_SHARE = 0.5
# a transactive derivation moves an item's question cluster when at least this share of its
# movable questions passes every guard for one target (the rest stay answerable)
CLUSTER_MIN_SHARE = 0.5
ANCHOR_MAX_DF = 0.5
# a question whose rarest anchor is in more than this share of the source's items is generic
# ("How many figures are in this paper?"): nearly any holder could answer it
GENERIC_MIN_DF = 0.2
# TF-IDF cosine at which another question is a derived question's twin (a reader of the query
# set finds where it came from)
# an evidence text with at least this many numbers is matched by an item holding the same
# numbers in the same order (TabMWP: "bunches | flowers" and "bunches | balloons", 1 5 2 10 ...)
SAME_NUMBERS_MIN = 4
_NUMBER = re.compile(r"\d+(?:\.\d+)?")

_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    """
about above after again against also among another answer back because been before being below
between both could did does doing down during each either else ever every from further have
having here hers herself himself into itself just like made make many more most much must
need never only other ours ourselves over same shall should since some such than that their
theirs them themselves then there these they this those through under until upon very were what
when where which while whom whose will with within without would your yours yourself please
according based shown show given list number name many used using what's does following
""".split()
)

NO_HOLDER = "no other holder of the source in its split"
NO_ANCHOR = "no distinctive question word in its gold's text"
GENERIC = "a generic question (its rarest anchor is in more than a fifth of the source's items)"
TWIN = "a question asked of another holder is its twin"
T_NAMES = "no other holder's memory is as much at home with the names it asks about"
T_ANCHORS = "its anchors are in every other holder's memory"
T_NEARDUP = "a near-duplicate of its evidence is in every other holder's memory"
T_EITHER = "every other holder's memory holds its anchors or a near-duplicate of its evidence"
FIRST = (
    "its evidence is at or before the start of the holder's as_of window (no as_of "
    "may fall before it)"
)
QUOTA = "the source's temporal quota is full"
DATE_AFTER = "its question names a date after its as_of (a day still to come tells)"
SISTERS = "a question about the same item is kept answerable (a sister asked later would betray it)"
E_ANCHORS = "another item of the holder holds most of its anchors"
E_NEARDUP = "another item of the holder is a near-duplicate of its evidence"


_STEMMER = snowballstemmer.stemmer("english")
_CAPITAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")


@lru_cache(maxsize=1 << 18)
def stem(word: str) -> str:
    """The Snowball (Porter 2) English stem of a lower-case word: "engines" and "engine" are
    one word to every guard."""
    return _STEMMER.stemWord(word)


def tokens(text: str) -> set[str]:
    """The stems of the words of ``text``."""
    return {stem(w) for w in set(_WORD.findall(text.lower()))}


def anchors(question: str) -> set[str]:
    """The stems of the question's content words: >= 4 letters or digits, not stop words."""
    return {stem(w) for w in _WORD.findall(question.lower()) if len(w) >= 4 and w not in STOPWORDS}


def numbers(text: str) -> list[str]:
    """The numbers of ``text`` in order, as written (``1,000`` is two)."""
    return _NUMBER.findall(text)


def names(question: str, speakers: frozenset[str] = frozenset()) -> set[str]:
    """The names the question asks about, lower case: its capitalised words but the first
    (and not stop words), and every word that is a speaker's name in the source's metadata
    (``speakers``, lower case), capitalised or not."""
    out = set()
    for i, w in enumerate(_CAPITAL.findall(question)):
        for part in _WORD.findall(w.lower()):
            if part in speakers or (
                i > 0
                and w[0].isupper()
                and len(part) >= 2
                and part not in STOPWORDS
                and not part.isdigit()
            ):
                out.add(part)
    return out


def policy(source: str) -> dict[str, float | str]:
    return POLICY.get(source, DEFAULT_POLICY)


@dataclass
class DeriveStats:
    candidates: int = 0
    clusters: int = 0  # item clusters moved whole by a transactive derivation
    late_clusters: int = 0  # item clusters with a question not kept answerable
    late: int = 0  # questions not kept answerable: derived, or not asked
    not_asked: int = 0  # questions of the late pool that no derivation took
    transactive: int = 0
    temporal: int = 0
    skipped: Counter = field(default_factory=Counter)  # "<derivation>: <reason>" -> count
    not_derived: dict[str, str] = field(default_factory=dict)  # derivation -> why none

    def as_dict(self) -> dict:
        return {
            "candidates": self.candidates,
            "clusters": self.clusters,
            "late_clusters": self.late_clusters,
            "late": self.late,
            "not_asked": self.not_asked,
            "transactive": self.transactive,
            "temporal": self.temporal,
            "skipped": dict(sorted(self.skipped.items())),
            "not_derived": dict(sorted(self.not_derived.items())),
        }


@dataclass
class _Source:
    """One source's items, texts and timelines, with the lookups the guards need."""

    items: dict[str, SourceItem]
    texts: dict[str, str]
    timelines: dict[str, Timeline]
    index: NearDupIndex
    by_holder: dict[str, list[str]] = field(default_factory=dict)  # in (slot, id) order
    item_slot: dict[str, int] = field(default_factory=dict)
    item_tokens: dict[str, set[str]] = field(default_factory=dict)
    passage_tokens: dict[str, list[set[str]]] = field(default_factory=dict)
    df: Counter = field(default_factory=Counter)
    speakers: dict[str, set[str]] = field(default_factory=dict)  # holder -> names, lower
    holder_tokens: dict[str, set[str]] = field(default_factory=dict)
    item_numbers: dict[str, str] = field(default_factory=dict)
    topics: dict[str, str] = field(default_factory=dict)
    bases: dict[str, str] = field(default_factory=dict)  # holder -> basis (memo)

    def __post_init__(self) -> None:
        for sid in sorted(self.items):
            it = self.items[sid]
            topic = self.topics.get(sid)
            self.item_slot[sid] = self.timelines[it.holder].slot_of(it.observed_at)
            self.by_holder.setdefault(it.holder, []).append(sid)
            sp = it.meta.get("speakers") if isinstance(it.meta, dict) else None
            self.speakers.setdefault(it.holder, set()).update(
                w
                for s in (sp if isinstance(sp, list) else [])
                if isinstance(s, str)
                for w in _WORD.findall(s.lower())
            )
            if self.texts.get(sid):
                self.item_tokens[sid] = tokens(self.texts[sid])
                self.df.update(self.item_tokens[sid])
                parts = modalities.get(it.modality).passages(self.texts[sid], it.meta)
                self.passage_tokens[sid] = (
                    [self.item_tokens[sid]] if len(parts) == 1 else [tokens(p) for p in parts]
                )
                if isinstance(topic, str):
                    mark = TOPIC_MARK + topic
                    self.item_tokens[sid] = self.item_tokens[sid] | {mark}
                    self.passage_tokens[sid] = [p | {mark} for p in self.passage_tokens[sid]]
                    self.df[mark] += 1
        for h, sids in self.by_holder.items():
            sids.sort(key=lambda s: (self.item_slot[s], s))
            self.holder_tokens[h] = set().union(*(self.item_tokens.get(s, set()) for s in sids))

    @property
    def all_speakers(self) -> frozenset[str]:
        return frozenset().union(*self.speakers.values())

    def basis(self, holder: str) -> str:
        """What the guards read of a holder's memory: ``"content"`` (upstream text) or
        ``"questions"`` (an image-only PDF, whose text is the questions asked of it). A question is re-scoped only between holders of one basis."""
        got = self.bases.get(holder)
        if got is None:
            got = self.bases[holder] = (
                "questions"
                if any(self.items[s].meta.get("text_pages") == 0 for s in self.by_holder[holder])
                else "content"
            )
        return got

    @property
    def has_text(self) -> bool:
        return bool(self.item_tokens)

    def slot(self, sid: str) -> int:
        return self.item_slot[sid]

    def anchors(self, r: RecordDraft) -> set[str]:
        """The question's anchors: content words in its gold's text that at most
        :data:`ANCHOR_MAX_DF` of the source's items contain, but the names of its holder's
        speakers (``meta.speakers``: every session of a conversation has them, so they tell
        none of its items apart)."""
        gold: set[str] = set()
        for g in r.gold:
            gold |= self.item_tokens.get(g.source_id, set())
        limit = ANCHOR_MAX_DF * len(self.item_tokens)
        own = {stem(w) for w in self.speakers.get(r.scope.holder, ())}
        topics = {w for w in gold if w.startswith(TOPIC_MARK)}
        return {
            w for w in anchors(r.question) & gold if self.df[w] <= limit and w not in own
        } | topics

    def generic(self, a: set[str]) -> bool:
        """Whether anchors ``a`` are all common: the rarest is in more than
        :data:`GENERIC_MIN_DF` of the source's items."""
        return min(self.df[w] for w in a) > GENERIC_MIN_DF * len(self.item_tokens)

    def max_passage_share(self, a: set[str], memory: list[str]) -> float:
        """The largest share of anchors ``a`` that one passage of an item of ``memory`` holds
        (a passage: the item, or the piece of it one piece of evidence fits in,
        :meth:`membench.modalities.Modality.passages`); 1 when a passage is about the same
        topic (an adapter's ``topics``)."""
        best = 0
        topics = {w for w in a if w.startswith(TOPIC_MARK)}
        for sid in memory:
            for toks in self.passage_tokens.get(sid, ()):
                if topics & toks:
                    return 1.0
                best = max(best, len(a & toks))
            if best == len(a):
                break
        return best / len(a)

    def near_duplicate(self, r: RecordDraft, memory: list[str]) -> str | None:
        """An item of ``memory`` that is a near-duplicate of an item or region holding ``r``'s
        evidence (gold or any judgment set), or ``None``: by :mod:`membench.sets.neardup`, or
        an item whose text holds the evidence's numbers in the same order (at least
        :data:`SAME_NUMBERS_MIN`: the same table under other labels gives the same answer)."""
        mod = modalities.get(r.modality)
        for g in evidence(r):
            it = self.items[g.source_id]
            text = self.texts.get(g.source_id, "")
            region = mod.region_text(g.region, text, it.meta) if text else None
            found = self.index.duplicates(self.index.evidence(g.source_id, [region or ""]), memory)
            if found:
                return found
            found = self.same_numbers(region or text, memory, g.source_id)
            if found:
                return found
        return None

    def same_numbers(self, text: str, memory: list[str], own: str) -> str | None:
        """An item of ``memory`` (not ``own``) whose numbers contain ``text``'s numbers, in
        order and contiguous, when ``text`` has at least :data:`SAME_NUMBERS_MIN`."""
        seq = numbers(text)
        if len(seq) < SAME_NUMBERS_MIN:
            return None
        key = " " + " ".join(seq) + " "
        for sid in memory:
            if sid != own and sid in self.texts:
                other = self.item_numbers.get(sid)
                if other is None:
                    other = self.item_numbers[sid] = " " + " ".join(numbers(self.texts[sid])) + " "
                if key in other:
                    return sid
        return None


class _QuerySet:
    """The source's questions as a reader of the query set sees them, each with the holder it
    is asked of now (:meth:`move` follows the derivations): TF-IDF cosine between questions
    (scikit-learn, word unigrams, sublinear tf) for the twin guard, and which holders' questions
    use each word for the names guard."""

    def __init__(self, drafts: list[RecordDraft]) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.pos = {r.query_id: i for i, r in enumerate(drafts)}
        self.holder = [r.scope.holder for r in drafts]
        self.words = [set(_WORD.findall(r.question.lower())) for r in drafts]
        self.uses: dict[str, Counter] = defaultdict(Counter)  # word -> holder -> questions
        for w, h in zip(self.words, self.holder):
            for x in w:
                self.uses[x][h] += 1
        self._x = (
            (
                TfidfVectorizer(token_pattern=r"[a-z0-9]+", sublinear_tf=True).fit_transform(
                    [r.question for r in drafts]
                )
            )
            if drafts
            else None
        )

    def twin(self, qid: str, origin: str, target: str) -> bool:
        """Whether, asked of ``target``, the question would still be traced to ``origin``: a
        question asked of ``origin`` is closer to it (TF-IDF cosine) than every question asked
        of ``target``."""
        i = self.pos[qid]
        row = (self._x[i] @ self._x.T).toarray().ravel()
        row[i] = -1.0
        h = np.asarray(self.holder, dtype=object)
        near_o = row[h == origin].max(initial=0.0)
        near_t = row[h == target].max(initial=0.0)
        return near_o > near_t

    def asked(self, word: str, holder: str, qid: str) -> bool:
        """Whether a question asked of ``holder``, other than ``qid``, uses ``word``."""
        i = self.pos[qid]
        own = int(self.holder[i] == holder and word in self.words[i])
        return self.uses[word][holder] - own > 0

    def move(self, qid: str, holder: str) -> None:
        i = self.pos[qid]
        for x in self.words[i]:
            self.uses[x][self.holder[i]] -= 1
            self.uses[x][holder] += 1
        self.holder[i] = holder


def at_home(
    src: _Source, qs: _QuerySet, name: str, holder: str, qid: str
) -> tuple[bool, bool, bool]:
    """How much at home ``name`` is in ``holder``'s memory: a speaker of its items (metadata),
    in its items' text, in the questions asked of it (but ``qid``)."""
    return (
        name in src.speakers.get(holder, ()),
        stem(name) in src.holder_tokens.get(holder, ()),
        qs.asked(name, holder, qid),
    )


def _not_less(origin: tuple[bool, ...], target: tuple[bool, ...]) -> bool:
    """Each of :func:`at_home`'s three at least as true in the target as in the origin."""
    return not any(o and not t for o, t in zip(origin, target))


def evidence(r: RecordDraft) -> list[Gold]:
    """Gold and every alternative judgment set's regions."""
    return list(r.gold) + [g for gs in (r.judgments or {}).values() for g in gs]


def _why(why: set[str]) -> str:
    """One reason for a transactive skip: the first of the guards every target failed, in the
    order they are tried (names, twin, then anchors and near-duplicates together)."""
    for w in (T_NAMES, TWIN):
        if why == {w}:
            return w
    rest = why - {T_NAMES, TWIN}
    if not rest:
        return T_NAMES if T_NAMES in why else TWIN
    return rest.pop() if len(rest) == 1 else T_EITHER


def cluster_key(r: RecordDraft) -> str:
    """The item a question is about: the first (smallest id) item holding its evidence. The
    questions of one item are its *cluster*, which a transactive derivation moves whole.
    For a source of :data:`CLUSTER_BY_REGION`, the region is part of the key."""
    if r.query_id.split(":", 1)[0] in CLUSTER_BY_REGION:
        return min(f"{g.source_id}#{json.dumps(g.region, sort_keys=True)}" for g in evidence(r))
    return min(g.source_id for g in evidence(r))


def _clusters(
    answerable: dict[str, RecordDraft], order: list[str], source: str
) -> list[tuple[str, list[str]]]:
    """Every item's cluster of answerable questions (members in ``order``, the hash order of
    the query ids), the clusters in hash order of their item."""
    by: dict[str, list[str]] = defaultdict(list)
    for qid in order:
        by[cluster_key(answerable[qid])].append(qid)
    return [(k, by[k]) for k in hash_order(by, f"derive-cluster:{source}")]


def _move_cluster(
    src: _Source,
    qs: _QuerySet,
    members: list[str],
    answerable: dict[str, RecordDraft],
    holder_split: dict[str, str],
    speakers: frozenset[str],
    stats: DeriveStats,
    only: str | None = None,
) -> tuple[str, list[str]] | None:
    """The holder an item's question cluster moves to, and the questions that move; ``None``
    (each question's reason counted) when no holder takes them all.

    A question without an anchor, or a generic one, stays with its holder as answerable (any
    memory might answer it); the others move together, to the first holder in hash order of
    the same split and basis that passes every guard for every one of them (names, anchors,
    near-duplicates, and the twin guard read after the whole cluster has moved)."""
    origin = answerable[members[0]].scope.holder
    movable: list[str] = []
    anchors_of: dict[str, set[str]] = {}
    for qid in members:
        r = answerable[qid]
        a = src.anchors(r) if src.has_text else set()
        if src.has_text and not a:
            stats.skipped[f"transactive: {NO_ANCHOR}"] += 1
            continue
        if a and src.generic(a):
            stats.skipped[f"transactive: {GENERIC}"] += 1
            continue
        movable.append(qid)
        anchors_of[qid] = a
    if not movable:
        return None
    others = [
        h
        for h in ([only] if only else sorted(src.by_holder))
        if h != origin
        and holder_split[h] == holder_split[origin]
        and src.basis(h) == src.basis(origin)
    ]
    if not others:
        stats.skipped[f"transactive: {NO_HOLDER}"] += len(movable)
        return None
    # how much at home each name is in the origin now, its cluster still there
    named = {qid: sorted(names(answerable[qid].question, speakers)) for qid in movable}
    home = {qid: {n: at_home(src, qs, n, origin, qid) for n in named[qid]} for qid in movable}
    reasons: dict[str, set[str]] = defaultdict(set)
    need = max(1, math.ceil(CLUSTER_MIN_SHARE * len(movable)))
    for h in hash_order(others, f"cluster:{movable[0]}"):
        memory = src.by_holder[h]
        going: list[str] = []
        for qid in movable:
            r, a = answerable[qid], anchors_of[qid]
            if a and src.max_passage_share(a, memory) > ANCHOR_MAX_SHARE:
                reasons[qid].add(T_ANCHORS)
            elif src.near_duplicate(r, memory):
                reasons[qid].add(T_NEARDUP)
            else:
                going.append(qid)
        if len(going) < need:
            continue
        # the questions' part of the names guard and the twin guard read the query set
        # after the cluster has moved: its questions are at home with each other
        for qid in going:
            qs.move(qid, h)
        for qid in list(going):
            if not all(_not_less(home[qid][n], at_home(src, qs, n, h, qid)) for n in named[qid]):
                reasons[qid].add(T_NAMES)
            elif qs.twin(qid, origin, h):
                reasons[qid].add(TWIN)
            else:
                continue
            going.remove(qid)
            qs.move(qid, origin)
        if len(going) >= need:
            for qid in movable:
                if qid not in going:
                    stats.skipped[f"transactive: {_why(reasons[qid])}"] += 1
            return h, going
        for qid in going:
            qs.move(qid, origin)
    for qid in movable:
        stats.skipped[f"transactive: {_why(reasons[qid] or {NO_HOLDER})}"] += 1
    return None


def _swap_back(
    src: _Source,
    qs: _QuerySet,
    candidates: list[list[str]],
    used: set[str],
    origin: str,
    answerable: dict[str, RecordDraft],
    holder_split: dict[str, str],
    speakers: frozenset[str],
    size: int,
) -> list[str] | None:
    """The first of ``candidates`` (the target's clusters, in hash order) none of whose
    questions is used, of about ``size`` questions (:data:`SWAP_SIZE_TOLERANCE`), that moves
    whole to ``origin``; ``None`` when none does. What the failed tries skip is not counted
    (the swap's own reason is)."""
    slack = max(1.0, SWAP_SIZE_TOLERANCE * size)
    for members in candidates:
        if any(q in used for q in members) or abs(len(members) - size) > slack:
            continue
        moved = _move_cluster(
            src, qs, members, answerable, holder_split, speakers, DeriveStats(), only=origin
        )
        if moved is None:
            continue
        if len(moved[1]) == len(members):
            return moved[1]
        for qid in moved[1]:
            qs.move(qid, answerable[qid].scope.holder)
    return None


def derive(
    source: str,
    drafts: list[RecordDraft],
    items: dict[str, SourceItem],
    texts: dict[str, str],
    holder_split: dict[str, str],
    timelines: dict[str, Timeline],
    index: NearDupIndex | None = None,
    topics: dict[str, str] | None = None,
) -> tuple[list[AnnotationRecord], DeriveStats]:
    """Every record of one source: the natives that stay (with ``as_of``) and the derived
    unanswerables that replace the others. Reads nothing outside its arguments."""
    pol = policy(source)
    if not any(pol.values()):  # nothing to derive: the guards need no text
        texts, index = {}, NearDupIndex()
    src = _Source(
        {k: v for k, v in items.items() if k.split(":", 1)[0] == source},
        texts,
        timelines,
        index or NearDupIndex(texts),
        topics=topics or {},
    )
    answerable = {r.query_id: r for r in drafts if not r.unanswerable}
    stats = DeriveStats(candidates=len(answerable), not_derived=dict(NOT_DERIVED.get(source, {})))
    if source in ASK_DERIVABLE and src.has_text:
        for qid in sorted(answerable):
            a = src.anchors(answerable[qid])
            if not a or src.generic(a):
                del answerable[qid]
                stats.skipped[f"not asked: {UNDERIVABLE}"] += 1
        drafts = [r for r in drafts if r.unanswerable or r.query_id in answerable]
    if not any(pol.values()) and len(answerable) == len(drafts):
        # no unanswerable at all: nothing to tell apart, so every as_of is after every item
        # (the gold's place among what is seen is then uniform with nothing thinned)
        timelines = {h: replace(tl, start_share=1.0) for h, tl in timelines.items()}
        src.timelines = timelines
    elif source in WINDOW_START:
        timelines = {
            h: replace(tl, start_share=WINDOW_START[source]) for h, tl in timelines.items()
        }
        src.timelines = timelines
    order = hash_order(answerable, f"derive:{source}")
    qs = _QuerySet(drafts if any(pol.values()) else [])
    speakers = src.all_speakers

    # the latest evidence slot of every answerable query
    anchor_slot: dict[str, int] = {}
    for qid in sorted(answerable):
        r = answerable[qid]
        anchor_slot[qid] = max(src.slot(g.source_id) for g in evidence(r))
    clusters = _clusters(answerable, order, source)
    in_late, whole = _late(source, clusters, answerable, timelines, anchor_slot)
    late_clusters = [(k, [q for q in ms if q in in_late]) for k, ms in clusters]
    late_clusters = [(k, ms) for k, ms in late_clusters if ms]
    stats.late_clusters = len(late_clusters)
    stats.late = len(in_late)

    # the slot of every answerable query kept, drawn now: queries without evidence take one of
    # their holder's by hash, so their as_of follows the same distribution
    slot_of: dict[str, int] = {}
    pool: dict[str, list[int]] = defaultdict(list)  # holder -> answerable slots
    for qid in sorted(answerable):
        r = answerable[qid]
        if qid in in_late or r.as_of is not None:
            continue
        slot_of[qid] = timelines[r.scope.holder].answerable_slot(anchor_slot[qid], qid)
        pool[r.scope.holder].append(slot_of[qid])
    for p in pool.values():
        p.sort()

    d = _Derivation(source, src, qs, answerable, holder_split, timelines, pool, stats)
    _transactive(
        d,
        math.ceil(float(pol.get("transactive", 0.0)) * len(order)),
        clusters,
        late_clusters,
        in_late,
        speakers,
    )
    _temporal(d, math.ceil(float(pol.get("temporal", 0.0)) * len(order)), order, in_late, whole)
    _natives(d, drafts, in_late, slot_of)
    return d.out, stats


def _late(
    source: str,
    clusters: list[tuple[str, list[str]]],
    answerable: dict[str, RecordDraft],
    timelines: dict[str, Timeline],
    anchor_slot: dict[str, int],
) -> tuple[set[str], set[str]]:
    """Which questions each item cluster keeps answerable (timeline.keep): the others (the
    first set) are the late pool the derivations draw from first; the second set is the
    clusters none of whose questions is kept."""
    in_late: set[str] = set()  # questions not kept answerable
    whole: set[str] = set()  # clusters none of whose questions is kept
    for key, members in clusters:
        u = uniform("as_of-keep", source, key)  # one draw per cluster: keep is monotone,
        tl = timelines[answerable[members[0]].scope.holder]  # so earlier gold is kept first
        gone = [
            q
            for q in members
            if answerable[q].as_of is None  # upstream times stay
            and u >= tl.keep(anchor_slot[q])
        ]
        in_late.update(gone)
        if gone and len(gone) == len(members):
            whole.add(key)
    return in_late, whole


@dataclass
class _Derivation:
    """One source's derivation under way: what :func:`derive`'s steps read, and the records
    they make (``out``) from the answerable queries they use (``used``)."""

    source: str
    src: _Source
    qs: _QuerySet
    answerable: dict[str, RecordDraft]
    holder_split: dict[str, str]
    timelines: dict[str, Timeline]
    pool: dict[str, list[int]]  # holder -> its answerable queries' slots, sorted
    stats: DeriveStats
    out: list[AnnotationRecord] = field(default_factory=list)
    used: set[str] = field(default_factory=set)

    def placed(self, holder: str, seed: str) -> datetime:
        """as_of of a query without evidence: the slot of an answerable query of ``holder``
        (by hash; a holder without one: :meth:`Timeline.free_slot`), a fresh offset."""
        tl = self.timelines[holder]
        p = self.pool.get(holder)
        slot = p[pick(len(p), "pseudo-slot", seed)] if p else tl.free_slot(seed)
        return tl.instant(slot, seed)

    def derived(
        self, r: RecordDraft, kind: str, scope: Scope, as_of: datetime, qid: str
    ) -> AnnotationRecord:
        origin = Origin(
            **{
                **r.origin.model_dump(),
                "derived_from": r.query_id,
                "derivation": kind,
                "kind": kind,
                "audited": True,
                "distractor": [g.model_dump(exclude_none=True) for g in r.gold],
            }
        )
        return AnnotationRecord(
            query_id=qid,
            modality=r.modality,
            question=r.question,
            answer=None,
            answer_format="none",
            gold=[],
            judgments=None,
            scope=scope,
            as_of=as_of,
            unanswerable=True,
            origin=origin,
            split=self.holder_split[scope.holder],
        )


def _transactive(
    d: _Derivation,
    quota: int,
    clusters: list[tuple[str, list[str]]],
    late_clusters: list[tuple[str, list[str]]],
    in_late: set[str],
    speakers: frozenset[str],
) -> None:
    """Transactive: whole per-item question clusters move (the late ones first), up to
    ``quota`` questions."""
    answerable, stats = d.answerable, d.stats
    kept_clusters = [(k, [q for q in ms if q not in in_late]) for k, ms in clusters]
    held: dict[str, list[list[str]]] = defaultdict(list)  # holder -> its clusters (SWAP)
    for _, ms in clusters:
        held[answerable[ms[0]].scope.holder].append(ms)
    for key, members in late_clusters + [(k, ms) for k, ms in kept_clusters if ms]:
        if stats.transactive >= quota:
            break
        members = [q for q in members if q not in d.used]  # a swap may have moved them back
        if not members:
            continue
        moved = _move_cluster(d.src, d.qs, members, answerable, d.holder_split, speakers, stats)
        if moved is None:
            continue
        target, qids = moved
        moves = [(target, qids)]
        if d.source in SWAP:
            origin = answerable[qids[0]].scope.holder
            back = _swap_back(
                d.src,
                d.qs,
                held.get(target, []),
                d.used | set(qids),
                origin,
                answerable,
                d.holder_split,
                speakers,
                len(qids),
            )
            if back is None:
                for qid in qids:
                    d.qs.move(qid, origin)
                stats.skipped[f"transactive: {NO_SWAP}"] += len(qids)
                continue
            moves.append((origin, back))
        for to, moving in moves:
            for qid in moving:
                r = answerable[qid]
                new = f"{qid}~transactive"
                scope = Scope(holder=to, session=None, scenario=r.scope.scenario)
                d.out.append(d.derived(r, "transactive", scope, d.placed(to, new), new))
                d.used.add(qid)
                stats.transactive += 1
            stats.clusters += 1


def _temporal(
    d: _Derivation, quota: int, order: list[str], in_late: set[str], whole: set[str]
) -> None:
    """Temporal: only from the clusters none of whose questions is kept answerable (no
    answerable sister is left to betray a temporal question by its later as_of), up to
    ``quota`` questions."""
    src, stats = d.src, d.stats
    for qid in order:
        if qid in d.used or qid not in in_late:
            continue
        if cluster_key(d.answerable[qid]) not in whole:
            stats.skipped[f"temporal: {SISTERS}"] += 1
            continue
        if stats.temporal >= quota:
            stats.skipped[f"temporal: {QUOTA}"] += 1
            continue
        r = d.answerable[qid]
        new = f"{qid}~temporal"
        tl = d.timelines[r.scope.holder]
        slot = tl.temporal_slot(min(src.slot(g.source_id) for g in evidence(r)), new)
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
        if a and src.generic(a):
            stats.skipped[f"temporal: {GENERIC}"] += 1
            continue
        if a and src.max_passage_share(a, memory) > ANCHOR_MAX_SHARE:
            stats.skipped[f"temporal: {E_ANCHORS}"] += 1
            continue
        if src.near_duplicate(r, memory):
            stats.skipped[f"temporal: {E_NEARDUP}"] += 1
            continue
        when = tl.instant(slot, new)
        if date_after(r.question, when):
            stats.skipped[f"temporal: {DATE_AFTER}"] += 1
            continue
        d.out.append(d.derived(r, "temporal", r.scope, when, new))
        d.used.add(qid)
        stats.temporal += 1


def _natives(
    d: _Derivation, drafts: list[RecordDraft], in_late: set[str], slot_of: dict[str, int]
) -> None:
    """The natives that stay (late gold that no derivation took is not asked)."""
    for r in drafts:
        if r.query_id in d.used:
            continue
        if r.query_id in in_late:  # late gold that no derivation took: not asked
            d.stats.not_asked += 1
            continue
        fields = r.model_dump()
        h = r.scope.holder
        if r.as_of is not None:  # an upstream question time (LongMemEval)
            as_of = r.as_of
        elif r.unanswerable:
            as_of = d.placed(h, r.query_id)
        else:
            as_of = d.timelines[h].instant(slot_of[r.query_id], r.query_id)
        if r.unanswerable:
            kind, ok = tell_labels(d.source, None)
            fields["origin"] = {**fields["origin"], "kind": kind, "audited": ok}
        d.out.append(AnnotationRecord(**{**fields, "as_of": as_of, "split": d.holder_split[h]}))
