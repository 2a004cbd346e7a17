"""Derived unanswerable queries (SPEC section 5, building sets, rules b and c).

* **transactive**: an answerable query re-scoped to *another holder of the same source* (in the
  same split). The other holder never saw the gold item, so the right answer is to abstain.
* **temporal**: an answerable query asked *before* its evidence existed: ``as_of`` one second
  before the earliest gold item's ``observed_at``.

Which answerable queries are derived is decided by a hash of the query id (no randomness, no
dependence on order), with a quota per source (:data:`POLICY`).

A re-scoped question is only unanswerable if the other holder's memory cannot answer it. A
question like "How many figures are in this paper?" is answerable from *any* paper, so a
transactive derivation needs an *anchor*: the question's content words (>= 4 letters, not stop
words) that occur in its gold items' upstream text, and of those at most half may occur anywhere
in the target holder's text. Sources without upstream text (chart images) skip the anchor test;
sources whose questions are generic by nature (GUI instructions such as "check the weather",
code-search queries that every language corpus may answer and that were not exhaustively judged)
get no transactive derivations at all.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..core.hashing import hash_order
from .schema import AnnotationRecord, Origin, Scope, SourceItem

# source key -> {derivation: share of the source's answerable queries}
DEFAULT_POLICY = {"transactive": 0.15, "temporal": 0.10}
POLICY: dict[str, dict[str, float]] = {
    "codesearchnet": {"temporal": 0.25},
    "screenspot": {"temporal": 0.25},
}
ANCHOR_MAX_SHARE_IN_TARGET = 0.5

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


def tokens(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def anchors(question: str) -> set[str]:
    return {w for w in tokens(question) if len(w) >= 4 and w not in STOPWORDS}


@dataclass
class DeriveStats:
    candidates: int = 0
    transactive: int = 0
    temporal: int = 0
    transactive_no_anchor: int = 0      # question had no anchor in its gold text
    transactive_no_target: int = 0      # every other holder's text held the anchors (or none)


def derive(source: str, natives: list[AnnotationRecord], items: dict[str, SourceItem],
           texts: dict[str, str], holder_split: dict[str, str],
           holder_last: dict[str, datetime]) -> tuple[list[AnnotationRecord], DeriveStats]:
    """Derived unanswerables for one source's native records (already with as_of and split)."""
    policy = POLICY.get(source, DEFAULT_POLICY)
    answerable = {r.query_id: r for r in natives if not r.unanswerable}
    order = hash_order(answerable, f"derive:{source}")
    stats = DeriveStats(candidates=len(order))
    out: list[AnnotationRecord] = []
    used: set[str] = set()

    holders = sorted({it.holder for it in items.values() if it.source_id.split(":", 1)[0] == source})
    holder_tokens: dict[str, set[str]] = {}
    has_text = any(texts.get(sid) for sid in items if sid.split(":", 1)[0] == source)
    if has_text:
        for sid, it in items.items():
            if it.holder in holders:
                holder_tokens.setdefault(it.holder, set()).update(tokens(texts.get(sid, "")))

    def transactive_target(r: AnnotationRecord) -> str | None:
        others = [h for h in holders
                  if h != r.scope.holder and holder_split[h] == holder_split[r.scope.holder]]
        if not others:
            stats.transactive_no_target += 1
            return None
        if has_text:
            gold_tokens: set[str] = set()
            for g in r.gold:
                gold_tokens |= tokens(texts.get(g.source_id, ""))
            a = anchors(r.question) & gold_tokens
            if not a:
                stats.transactive_no_anchor += 1
                return None
        for h in hash_order(others, r.query_id):
            if not has_text:
                return h
            if len(a & holder_tokens.get(h, set())) / len(a) <= ANCHOR_MAX_SHARE_IN_TARGET:
                return h
        stats.transactive_no_target += 1
        return None

    def derived(r: AnnotationRecord, kind: str, scope: Scope, as_of: datetime) -> AnnotationRecord:
        origin = Origin(**{**r.origin.model_dump(), "derived_from": r.query_id, "derivation": kind,
                           "distractor": None})
        return AnnotationRecord(
            query_id=f"{r.query_id}~{kind}", modality=r.modality, question=r.question,
            answer=None, answer_format="none", gold=[], judgments=None, scope=scope,
            as_of=as_of, unanswerable=True, origin=origin, split=holder_split[scope.holder])

    quota = math.ceil(policy.get("transactive", 0.0) * len(order))
    for qid in order:
        if stats.transactive >= quota:
            break
        r = answerable[qid]
        target = transactive_target(r)
        if target is None:
            continue
        scope = Scope(holder=target, session=None, scenario=r.scope.scenario)
        out.append(derived(r, "transactive", scope, holder_last[target]))
        used.add(qid)
        stats.transactive += 1

    quota = math.ceil(policy.get("temporal", 0.0) * len(order))
    for qid in order:
        if stats.temporal >= quota:
            break
        if qid in used:
            continue
        r = answerable[qid]
        first = min(items[g.source_id].observed_at for g in r.gold)
        out.append(derived(r, "temporal", r.scope, first - timedelta(seconds=1)))
        stats.temporal += 1
    return out, stats
