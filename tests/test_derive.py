"""Derived unanswerables on hand-made data: quotas, the anchor guard, temporal as_of."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from membench.sets.derive import anchors, derive
from membench.sets.schema import AnnotationRecord, SourceItem

T = datetime(2024, 1, 1, tzinfo=timezone.utc)


def item(sid, holder, hours):
    return SourceItem(source_id=sid, modality="pdf", holder=holder,
                      observed_at=T + timedelta(hours=hours), content="x", meta={"pages": 3})


def rec(n, question, sid, holder):
    return AnnotationRecord(
        query_id=f"src:{n}", modality="pdf", question=question, answer="a", answer_format="str",
        gold=[{"source_id": sid, "region": {"page": 1}}],
        scope={"holder": holder, "scenario": "s"}, as_of=T + timedelta(days=1),
        unanswerable=False, split="dev",
        origin={"dataset": "d", "revision": "r", "item": str(n), "license": "L"})


ITEMS = {i.source_id: i for i in [item("src:a", "h/a", 0), item("src:b", "h/b", 5)]}
TEXTS = {"src:a": "the zephyr turbine report lists how many figures are in this paper",
         "src:b": "a paper with figures about many other things"}
SPLIT = {"h/a": "dev", "h/b": "dev"}
LAST = {"h/a": T, "h/b": T + timedelta(hours=5)}


def test_anchor_words():
    assert anchors("How many figures are in this paper?") == {"figures", "paper"}


def test_generic_question_is_not_rescoped_specific_one_is():
    generic = rec(1, "How many figures are in this paper?", "src:a", "h/a")
    specific = rec(2, "What does the zephyr turbine report say?", "src:a", "h/a")
    out, st = derive("src", [generic, specific], ITEMS, TEXTS, SPLIT, LAST)
    trans = [r for r in out if r.origin.derivation == "transactive"]
    # quota ceil(0.15 * 2) = 1: the generic question has every anchor in h/b's text
    assert [r.origin.derived_from for r in trans] == ["src:2"]
    assert trans[0].scope.holder == "h/b" and trans[0].as_of == LAST["h/b"]
    assert trans[0].unanswerable and trans[0].gold == [] and trans[0].answer is None
    assert st.transactive == 1 and st.transactive_no_target >= 0


def test_temporal_is_one_second_before_the_earliest_gold():
    r = rec(3, "What does the zephyr turbine report say?", "src:b", "h/b")
    out, st = derive("src", [r], ITEMS, TEXTS, SPLIT, LAST)
    temporal = [x for x in out if x.origin.derivation == "temporal"]
    assert len(temporal) == 1  # ceil(0.10 * 1); the transactive quota took no candidate twice
    assert temporal[0].as_of == ITEMS["src:b"].observed_at - timedelta(seconds=1)
    assert temporal[0].scope.holder == "h/b" and temporal[0].query_id == "src:3~temporal"


def test_no_target_in_another_split():
    r = rec(4, "What does the zephyr turbine report say?", "src:a", "h/a")
    out, st = derive("src", [r], ITEMS, TEXTS, {"h/a": "dev", "h/b": "test"}, LAST)
    assert not [x for x in out if x.origin.derivation == "transactive"]
    assert st.transactive_no_target == 1
