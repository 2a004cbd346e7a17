"""Derived unanswerables and as_of on hand-made data: replacement, guards, quotas, as_of."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from membench.contract.schema import AnnotationRecord, RecordDraft, SourceItem
from membench.sets import derive as derive_module
from membench.sets.derive import (
    E_ANCHORS,
    E_NEARDUP,
    FIRST,
    GENERIC,
    NO_ANCHOR,
    NO_HOLDER,
    T_ANCHORS,
    T_NAMES,
    T_NEARDUP,
    TWIN,
    anchors,
    derive,
    names,
)
from membench.sets.neardup import NearDupIndex
from membench.sets.timeline import build_timelines

T = datetime(2024, 1, 1, tzinfo=timezone.utc)
H = timedelta(hours=1)
FILLER = [f"filler{i} about gardening tomatoes and weather" for i in range(20)]


def world(texts_a: list[str], texts_b: list[str], modality: str = "pdf"):
    """Two holders of source ``src`` (dev), one item an hour each, with these texts."""
    items, texts = {}, {}
    for h, tx in (("a", texts_a), ("b", texts_b)):
        for i, t in enumerate(tx):
            sid = f"src:{h}{i}"
            items[sid] = SourceItem(
                source_id=sid,
                modality=modality,
                holder=f"h/{h}",
                observed_at=T + i * H + (100 * H if h == "b" else 0 * H),
                content="x",
                meta={"pages": 1},
            )
            texts[sid] = t
    tls = build_timelines(("src", it.holder, it.observed_at) for it in items.values())
    return items, texts, {"h/a": "dev", "h/b": "dev"}, tls


def rec(n: int, question: str, sid: str, holder: str = "h/a", **over) -> RecordDraft:
    return RecordDraft(
        query_id=f"src:{n}",
        modality="pdf",
        question=question,
        answer="a",
        answer_format="str",
        gold=[{"source_id": sid, "region": {"page": 1}}],
        scope={"holder": holder, "scenario": "s"},
        unanswerable=False,
        origin={"dataset": "d", "revision": "r", "item": str(n), "license": "L"},
        **over,
    )


@pytest.fixture
def late(monkeypatch):
    """Every question cluster whose gold is in the as_of window goes to the late pool (the keep
    draw made 1 - 1e-9), so the temporal guards are what a test exercises."""
    real = derive_module.uniform

    def draw(*parts):
        return 1 - 1e-9 if parts[0] == "as_of-keep" else real(*parts)

    monkeypatch.setattr(derive_module, "uniform", draw)


def by_id(out: list[AnnotationRecord]) -> dict[str, AnnotationRecord]:
    return {r.query_id: r for r in out}


def test_anchor_words_are_snowball_stems():
    assert anchors("How many figures are in this paper?") == {"figur", "paper"}
    assert anchors("Can Dave work with engines?") == anchors("Can Dave work with an engine?")


def test_names_are_capitalised_words_and_speakers():
    assert names("When did Caroline go to the LGBTQ support group?") == {"caroline", "lgbtq"}
    assert names("what did melanie paint?", frozenset({"melanie"})) == {"melanie"}
    assert names("What is the title?") == set()


# ---- the four false unanswerables of the first text audit, each a test of its cause


def test_temporal_anchor_guard_compares_stems_locomo_conv_50_24():
    """locomo:conv-50:24~temporal ("Can Dave work with engines?"): an earlier session says
    "engine"; exact word forms missed it, so the answer was visible at as_of."""
    items, texts, split, tls = world(FILLER[:10], FILLER[10:20])
    texts["src:a7"] = "dave restores engines in his garage"
    texts["src:a3"] = "dave: I rebuilt the engine of my car last week"
    r = rec(1, "Can Dave work with engines?", "src:a7")
    out, st = derive("src", [r], items, texts, {"h/a": "dev", "h/b": "test"}, tls)
    assert st.temporal == 0 and st.skipped[f"temporal: {E_ANCHORS}"] == 1
    texts["src:a3"] = "dave: I rebuilt the porch last week"  # the cause removed
    out, st = derive("src", [r], items, texts, {"h/a": "dev", "h/b": "test"}, tls)
    assert st.temporal == 1


def test_a_speaker_of_the_holder_anchors_nothing_within_it():
    """Every session of a conversation holds its speakers' names: "Caroline" and "classes" in
    an earlier session are not most of "When did Caroline take up pottery classes?"'s anchors
    (counting the speaker they would be: 2 of 3), and the question may be asked before its
    session."""
    items, texts, split, tls = world(FILLER[:10], FILLER[10:20])
    for sid, it in items.items():
        if it.holder == "h/a":
            items[sid] = it.model_copy(
                update={"meta": {"pages": 1, "speakers": ["Caroline", "Mel"]}}
            )
    texts["src:a7"] = "caroline: I took up pottery classes last month"
    texts["src:a3"] = "caroline: I skipped my yoga classes"
    r = rec(1, "When did Caroline take up pottery classes?", "src:a7")
    split2 = {"h/a": "dev", "h/b": "test"}
    out, st = derive("src", [r], items, texts, split2, tls)
    assert st.temporal == 1
    texts["src:a3"] = "mel: caroline's pottery classes were lovely"  # answerable before
    out, st = derive("src", [r], items, texts, split2, tls)
    assert st.temporal == 0 and st.skipped[f"temporal: {E_ANCHORS}"] == 1


def test_conversation_passages_are_overlapping_windows_of_the_cap():
    from membench import modalities

    text = "\n".join(f"t{i}" for i in range(1, 21))
    parts = modalities.get("conversation").passages(text, {})
    assert parts[0].split("\n") == [f"t{i}" for i in range(1, 9)]
    assert parts[1].split("\n")[0] == "t5" and parts[-1].split("\n")[-1] == "t20"
    # every pair of adjacent turns shares a window
    assert all(any(f"t{i}\nt{i + 1}" in p for p in parts) for i in range(1, 20))


def test_generic_questions_are_not_derived_mmlongbench_2312_09390_2():
    """mmlongbench:2312.09390v1.pdf:2~transactive ("How many figures are in this paper from
    Page 3 to Page 10?"): the target paper has figures on those pages too. Its words are in
    most documents: a generic question is never derived."""
    papers = [f"this paper shows figure {i} on page {i}" for i in range(6)]
    # "paper" and "figure" are in 5 of the 12 items: anchors (at most half), but common
    items, texts, split, tls = world(
        ["paper figures zephyr"] + papers[:2] + FILLER[:3], FILLER[3:5] + papers[2:4] + FILLER[5:7]
    )
    r = rec(1, "How many figures are in this paper from Page 3 to Page 10?", "src:a0")
    out, st = derive("src", [r], items, texts, split, tls)
    assert not out[0].unanswerable
    assert st.skipped[f"transactive: {GENERIC}"] == 1


def test_transactive_anchor_guard_compares_stems_finchart_124():
    """finchart:124~transactive ("percentage increase in operating margins"): the target roll
    holds an "Operating Margin" chart for the same quarters; "margins" and "margin" are one
    stem, so the target holds the question's anchors."""
    items, texts, split, tls = world(FILLER[:6], FILLER[6:12])
    texts["src:a2"] = "What is the percentage increase in operating margins from Q4 13 to Q2 14?"
    texts["src:b3"] = (
        "By how many percentage points did the Operating Margin increase from Q4 13 to Q2 14?"
    )
    r = rec(
        1, "What is the percentage increase in operating margins from Q4 13 to Q2 14?", "src:a2"
    )
    out, st = derive("src", [r], items, texts, split, tls)
    assert st.transactive == 0 and st.skipped[f"transactive: {T_ANCHORS}"] == 1


def test_an_equivalent_table_is_a_near_duplicate_tabmwp_3015():
    """tabmwp:3015~transactive ("Each bunch has 5 flowers. How many flowers are in 4
    bunches?"): the target holds a "bunches | balloons" table with the same numbers, which
    gives the same answer."""
    items, texts, split, tls = world(FILLER[:6], FILLER[6:12])
    texts["src:a2"] = "Number of bunches | Number of flowers\n1 | 5\n2 | 10\n3 | 15\n4 | ?"
    texts["src:b4"] = "Number of bunches | Number of balloons\n1 | 5\n2 | 10\n3 | 15\n4 | 20"
    r = rec(1, "Each bunch has 5 flowers. How many flowers are in 4 bunches?", "src:a2")
    out, st = derive("src", [r], items, texts, split, tls, NearDupIndex(texts))
    assert st.transactive == 0 and st.skipped[f"transactive: {T_NEARDUP}"] == 1
    texts["src:b4"] = "Number of bunches | Number of balloons\n1 | 6\n2 | 12\n3 | 18\n4 | 24"
    out, st = derive("src", [r], items, texts, split, tls, NearDupIndex(texts))
    assert st.transactive == 1


# ---- names and twins


def test_a_question_naming_a_speaker_moves_only_where_that_name_is_a_speaker():
    items, texts, split, tls = world(
        ["zephyr turbine report"] + FILLER[:5], FILLER[5:11], modality="conversation"
    )
    for sid, it in items.items():
        who = ["Caroline", "Melanie"] if it.holder == "h/a" else ["Jon", "Gina"]
        items[sid] = it.model_copy(update={"meta": {"speakers": who}})
    r = rec(1, "What does Caroline say about the zephyr turbine report?", "src:a0")
    out, st = derive("src", [r], items, texts, split, tls)
    assert st.transactive == 0 and st.skipped[f"transactive: {T_NAMES}"] == 1
    items = {
        sid: it.model_copy(update={"meta": {"speakers": ["Caroline", "Gina"]}})
        if it.holder == "h/b"
        else it
        for sid, it in items.items()
    }
    texts["src:b2"] = "caroline and gina talk about gardening"
    out, st = derive("src", [r], items, texts, split, tls)
    assert st.transactive == 1


def test_a_moved_question_may_not_leave_a_closer_twin_behind():
    # a near-copy asked about *another* item of h/a stays behind: moving the question would
    # leave its twin in h/a while h/b asks nothing like it
    items, texts, split, tls = world(
        ["zephyr turbine report", "zephyr turbine report spine"] + FILLER[:4], FILLER[5:11]
    )
    r = rec(1, "What colour is the zephyr turbine report cover?", "src:a0")
    sib = rec(2, "What colour is the zephyr turbine report spine?", "src:a1")
    out, st = derive("src", [r, sib], items, texts, split, tls)
    assert st.transactive == 0 and st.skipped[f"transactive: {TWIN}"] >= 1


def test_an_items_questions_move_together():
    """Two questions about one item are one cluster: both move, to the same holder, and
    neither is left behind as the other's twin."""
    items, texts, split, tls = world(["zephyr turbine report"] + FILLER[:5], FILLER[5:11])
    r = rec(1, "What colour is the zephyr turbine report cover?", "src:a0")
    sib = rec(2, "What colour is the zephyr turbine report spine?", "src:a0")
    other = [
        rec(10 + i, f"What does {w} say?", f"src:a{1 + i}")
        for i, w in enumerate(("alpha", "beta", "gamma", "delta", "epsilon"))
    ]
    out, st = derive("src", [r, sib, *other], items, texts, split, tls)
    moved = {
        d.origin.derived_from: d.scope.holder for d in out if d.origin.derivation == "transactive"
    }
    assert st.clusters == 1 and moved == {"src:1": "h/b", "src:2": "h/b"}


def test_a_derived_query_replaces_its_original():
    items, texts, split, tls = world(["zephyr turbine report"] + FILLER[:9], FILLER[9:19])
    r = rec(1, "What does the zephyr turbine report say?", "src:a0")
    out, st = derive("src", [r], items, texts, split, tls)
    assert st.transactive == 1 and len(out) == 1  # quota ceil(0.15 * 1)
    d = out[0]
    assert d.query_id == "src:1~transactive" and "src:1" not in by_id(out)
    assert d.unanswerable and d.gold == [] and d.answer is None and d.scope.holder == "h/b"
    assert d.origin.derived_from == "src:1" and d.origin.derivation == "transactive"
    assert d.origin.distractor == [{"source_id": "src:a0", "region": {"page": 1}}]


def test_a_question_without_distinctive_words_is_never_derived():
    # "figures" and "paper" are in every item: they anchor nothing
    items, texts, split, tls = world(
        ["paper figures"] * 2 + ["paper figures zephyr"] + ["paper figures"] * 3,
        ["paper figures"] * 6,
    )
    r = rec(1, "How many figures are in this paper?", "src:a2")
    out, st = derive("src", [r], items, texts, split, tls)
    assert [x.query_id for x in out] == ["src:1"] and not out[0].unanswerable
    # its gold is early (kept answerable), so only transactive derivation was tried
    assert st.late == 0 and st.skipped == {f"transactive: {NO_ANCHOR}": 1}


def test_transactive_anchor_guard_reads_the_other_holders_memory():
    items, texts, split, tls = world(
        ["zephyr turbine report"] + FILLER[:5], ["the zephyr turbine manual"] + FILLER[5:10]
    )
    r = rec(1, "What does the zephyr turbine report say?", "src:a3")
    texts["src:a3"] = "zephyr turbine report"
    out, st = derive("src", [r], items, texts, split, tls)
    assert st.transactive == 0 and st.skipped[f"transactive: {T_ANCHORS}"] == 1


def test_transactive_near_duplicate_guard():
    page = "quarterly revenue per region and segment grew by fourteen percent this year"
    items, texts, split, tls = world(FILLER[:6], FILLER[6:12])
    items["src:a3"] = items["src:a3"].model_copy(update={"meta": {"pages": 2}})
    texts["src:a3"] = "zephyr turbine annual report\f" + page  # the gold is page 2
    texts["src:b4"] = "an analyst note quoting: " + page.upper()  # page 2, verbatim
    r = RecordDraft(
        **{
            **rec(
                1, "What quarterly revenue did the zephyr turbine report?", "src:a3"
            ).model_dump(),
            "gold": [{"source_id": "src:a3", "region": {"page": 2}}],
        }
    )
    # 1 of its 3 anchors (zephyr, turbine, quarterly) is in holder b: the anchor guard passes
    out, st = derive("src", [r], items, texts, split, tls, NearDupIndex(texts))
    assert st.transactive == 0 and st.skipped[f"transactive: {T_NEARDUP}"] == 1
    texts["src:b4"] = "an analyst note about something else entirely, at length"
    out, st = derive("src", [r], items, texts, split, tls, NearDupIndex(texts))
    assert st.transactive == 1


def test_picture_near_duplicates_by_perceptual_hash():
    items, texts, split, tls = world(["zephyr"] + FILLER[:5], FILLER[5:11], modality="pdf")
    r = rec(1, "What does the zephyr chart show?", "src:a0")
    near = NearDupIndex(
        texts,
        phash={
            "src:a0": 0,
            **{f"src:b{i}": (0b111 if i == 2 else -1 & 0xFFFF_FFFF) for i in range(6)},
        },
    )
    out, st = derive("src", [r], items, texts, split, tls, near)
    assert st.transactive == 0 and st.skipped == {f"transactive: {T_NEARDUP}": 1}
    far = NearDupIndex(texts, phash={"src:a0": 0, **{f"src:b{i}": 0xFFFF_FFFF for i in range(6)}})
    out, st = derive("src", [r], items, texts, split, tls, far)
    assert st.transactive == 1


def test_temporal_as_of_precedes_all_evidence_and_sees_something(late):
    items, texts, split, tls = world(FILLER[:10], FILLER[10:20])
    texts["src:a7"] = "zephyr turbine report"
    texts["src:a5"] = "the zephyr appendix"
    r = rec(
        1,
        "What does the zephyr turbine report say?",
        "src:a7",
        judgments={"any_annotator": [{"source_id": "src:a5", "region": {"page": 1}}]},
    )
    split_b = {"h/a": "dev", "h/b": "test"}  # no transactive target
    out, st = derive("src", [r], items, texts, split_b, tls)
    (d,) = out
    assert d.query_id == "src:1~temporal" and st.temporal == 1
    assert items["src:a0"].observed_at <= d.as_of < items["src:a5"].observed_at
    assert d.origin.distractor == [{"source_id": "src:a7", "region": {"page": 1}}]


def test_temporal_guards_read_the_whole_holder_not_only_the_past(late):
    items, texts, split, tls = world(FILLER[:10], FILLER[10:20])
    texts["src:a5"] = "zephyr turbine report"
    texts["src:a9"] = "zephyr turbine figures"  # after as_of, still a reason to skip
    r = rec(1, "What does the zephyr turbine report say?", "src:a5")
    out, st = derive("src", [r], items, texts, {"h/a": "dev", "h/b": "test"}, tls)
    assert st.temporal == 0 and st.skipped == {
        f"temporal: {E_ANCHORS}": 1,
        f"transactive: {NO_HOLDER}": 1,
    }
    # a later copy of the gold page, without its anchors: the near-duplicate guard
    body = "revenue grew by fourteen percent in the third quarter of the year"
    texts["src:a5"] = "zephyr turbine report\f" + body
    items["src:a5"] = items["src:a5"].model_copy(update={"meta": {"pages": 2}})
    texts["src:a9"] = "a quote: " + body
    r2 = RecordDraft(**{**r.model_dump(), "gold": [{"source_id": "src:a5", "region": {"page": 2}}]})
    out, st = derive(
        "src", [r2], items, texts, {"h/a": "dev", "h/b": "test"}, tls, NearDupIndex(texts)
    )
    assert st.temporal == 0 and st.skipped[f"temporal: {E_NEARDUP}"] == 1
    texts["src:a9"] = "gardening"
    out, st = derive(
        "src", [r2], items, texts, {"h/a": "dev", "h/b": "test"}, tls, NearDupIndex(texts)
    )
    assert st.temporal == 1


def test_evidence_before_the_window_cannot_be_temporal(late):
    # latest evidence a5 (late: not kept), earliest a0: no as_of of the window [4, 9] precedes it
    items, texts, split, tls = world(["zephyr turbine"] + FILLER[:9], FILLER[9:19])
    r = rec(
        1,
        "What does the zephyr turbine report say?",
        "src:a0",
        judgments={"any_annotator": [{"source_id": "src:a5", "region": {"page": 1}}]},
    )
    out, st = derive("src", [r], items, texts, {"h/a": "dev", "h/b": "test"}, tls)
    assert st.skipped == {f"temporal: {FIRST}": 1, f"transactive: {NO_HOLDER}": 1}
    assert out == [] and st.late == 1 and st.not_asked == 1  # late, and nothing took it


def test_as_of_of_every_kept_record_follows_its_evidence_in_the_window():
    n = 40
    items, texts, split, tls = world(
        [f"zephyr{i} turbine{i}" for i in range(n)], [f"other{i}" for i in range(n)]
    )
    recs = [rec(i, f"zephyr{i} turbine{i}?", f"src:a{i}") for i in range(n)]  # no twins
    recs.append(
        RecordDraft(
            **{
                **rec(99, "Is there a unicorn?", "src:a0").model_dump(),
                "gold": [],
                "unanswerable": True,
                "answer": None,
                "answer_format": "none",
            }
        )
    )
    out, st = derive("src", recs, items, texts, split, tls)
    tl = tls["h/a"]
    lo = tl.window_start
    assert lo == 19
    kept = [r for r in out if not r.origin.derivation]
    # every question is asked once, derived or not, or counted as not asked
    assert len(out) + st.not_asked == n + 1
    derived = sum(1 for r in out if r.origin.derivation)
    assert st.late > 0 and derived == st.transactive + st.temporal
    assert st.temporal + st.not_asked <= st.late  # temporal ones come from the late pool
    for r in kept:
        if r.unanswerable:
            assert tl.times[lo] <= r.as_of  # a slot of an answerable query
            continue
        g = items[r.gold[0].source_id].observed_at
        assert g <= r.as_of and tl.times[lo] <= r.as_of  # after its gold, in the window
        assert tl.keep(tl.slot_of(g)) > 0
    for r in out:
        if r.origin.derivation == "temporal":
            ev = items[r.origin.distractor[0]["source_id"]].observed_at
            assert tl.times[lo] <= r.as_of < ev
    # the clock digits are drawn, not inherited: no fixed second, no item time
    assert len({r.as_of.second for r in out}) > 10
    assert not {r.as_of for r in out} & {it.observed_at for it in items.values()}


def test_sources_without_a_derivation_say_why():
    items, texts, split, tls = world(["zephyr turbine"] * 3, ["other"] * 3)
    items = {
        k.replace("src:", "codesearchnet:"): v.model_copy(
            update={"source_id": k.replace("src:", "codesearchnet:")}
        )
        for k, v in items.items()
    }
    tls = build_timelines(("codesearchnet", it.holder, it.observed_at) for it in items.values())
    r = rec(1, "zephyr turbine", "codesearchnet:a1")
    r = RecordDraft(**{**r.model_dump(), "query_id": "codesearchnet:1"})
    out, st = derive("codesearchnet", [r], items, {}, split, tls)
    assert [x.query_id for x in out] == ["codesearchnet:1"]
    assert set(st.not_derived) == {"transactive", "temporal"} and st.skipped == {}
    assert st.as_dict()["not_derived"]["temporal"].startswith("code-search queries")


def test_transactive_moves_only_between_holders_read_the_same_way():
    """A text PDF's question never moves to an image-only deck (meta.text_pages == 0, whose
    guard text is its questions), nor a deck's to a text PDF."""
    items, texts, split, tls = world(["zephyr turbine report"] + FILLER[:5], FILLER[5:11])
    items = {
        sid: it.model_copy(update={"meta": {"pages": 1, "text_pages": 0}})
        if it.holder == "h/b"
        else it
        for sid, it in items.items()
    }
    r = rec(1, "What does the zephyr turbine report say?", "src:a0")
    out, st = derive("src", [r], items, texts, split, tls)
    assert st.transactive == 0 and st.skipped[f"transactive: {NO_HOLDER}"] == 1


def test_a_temporal_question_naming_a_later_date_is_not_derived(late):
    from membench.sets.derive import DATE_AFTER

    items, texts, split, tls = world(FILLER[:10], FILLER[10:20])
    texts["src:a8"] = "zephyr turbine report"
    for question, derived in (
        ("What did the zephyr turbine report say on 8 May 2030?", False),
        ("What did the zephyr turbine report say in May 2020?", True),
    ):
        r = rec(1, question, "src:a8")
        out, st = derive("src", [r], items, texts, {"h/a": "dev", "h/b": "test"}, tls)
        assert st.temporal == int(derived), question
        assert (st.skipped.get(f"temporal: {DATE_AFTER}", 0) == 1) is not derived


def test_a_topic_anchors_a_question_that_shares_no_word_with_its_evidence():
    """PrefEval's kind: "Which restaurants in Rome?" after "I avoid gluten". The gold's topic
    (an adapter's ``topics``) anchors it: it moves only to a holder with no item of that
    topic, never to one holding another preference of the family."""
    items, texts, split, tls = world(["i strictly avoid gluten"] + FILLER[:5], FILLER[5:11])
    r = rec(1, "Which restaurants in Rome do you recommend?", "src:a0")
    topics = {sid: "leisure" for sid in items} | {"src:a0": "food"}
    out, st = derive("src", [r], items, texts, split, tls, topics=topics)
    assert st.transactive == 1 and out[0].scope.holder == "h/b"
    topics["src:b3"] = "food"  # b holds a session of the family: answerable
    out, st = derive("src", [r], items, texts, split, tls, topics=topics)
    assert st.transactive == 0 and st.skipped[f"transactive: {T_ANCHORS}"] == 1
    assert [x.query_id for x in out] == ["src:1"] and not out[0].unanswerable
    # without topics, the question has no anchor and is never derived
    out, st = derive("src", [r], items, texts, split, tls)
    assert st.skipped == {f"transactive: {NO_ANCHOR}": 1}


def test_a_swap_moves_one_cluster_each_way_or_none(monkeypatch):
    """Where holders are asked a few questions each, a transactive move is a swap: each holder
    keeps its number of questions. With nothing to move back, nothing moves."""
    monkeypatch.setattr(derive_module, "SWAP", frozenset({"src"}))
    items, texts, split, tls = world(
        ["zephyr turbine report"] + FILLER[:5], ["quokka marmalade recipe"] + FILLER[5:10]
    )
    # no word in common: neither question is the other's twin once both have moved
    ra = rec(1, "zephyr turbine report summary", "src:a0")
    rb = rec(2, "quokka marmalade recipe steps", "src:b0", holder="h/b")
    monkeypatch.setitem(derive_module.POLICY, "src", {"transactive": 0.5})
    out, st = derive("src", [ra, rb], items, texts, split, tls)
    moved = {d.origin.derived_from: d.scope.holder for d in out}
    assert moved == {"src:1": "h/b", "src:2": "h/a"} and st.transactive == 2
    out, st = derive("src", [ra], items, texts, split, tls)
    assert st.transactive == 0 and not out[0].unanswerable
    assert st.skipped == {f"transactive: {derive_module.NO_SWAP}": 1}


def test_region_clusters_and_asking_only_what_could_be_derived(monkeypatch):
    """PsTuts's rules: questions about one region form a cluster (two regions of one item are
    two clusters), and a source of ASK_DERIVABLE asks no question a derivation could not take
    (no anchor), counting it."""
    a = rec(1, "What does the zephyr turbine report say?", "src:a0")
    b = RecordDraft(
        **{
            **rec(2, "What does page two of the zephyr report say?", "src:a0").model_dump(),
            "gold": [{"source_id": "src:a0", "region": {"page": 2}}],
        }
    )
    assert derive_module.cluster_key(a) == derive_module.cluster_key(b) == "src:a0"
    monkeypatch.setattr(derive_module, "CLUSTER_BY_REGION", frozenset({"src"}))
    assert derive_module.cluster_key(a) != derive_module.cluster_key(b)
    monkeypatch.setattr(derive_module, "ASK_DERIVABLE", frozenset({"src"}))
    items, texts, split, tls = world(["zephyr turbine report"] + FILLER[:5], FILLER[5:11])
    generic = rec(3, "What is this about?", "src:a1")
    out, st = derive("src", [a, generic], items, texts, split, tls)
    assert "src:3" not in by_id(out)
    assert st.skipped[f"not asked: {derive_module.UNDERIVABLE}"] == 1


def test_a_question_a_swap_moved_back_is_not_moved_again(monkeypatch):
    """Three holders, each asked one question: a swap's second cluster is never taken again
    when the loop reaches it (each question is derived at most once)."""
    monkeypatch.setattr(derive_module, "SWAP", frozenset({"src"}))
    monkeypatch.setitem(derive_module.POLICY, "src", {"transactive": 1.0})
    items, texts, split, tls = world(
        ["zephyr turbine report"] + FILLER[:5], ["quokka marmalade recipe"] + FILLER[5:10]
    )
    for i, t in enumerate(["walrus accordion lesson"] + FILLER[10:15]):
        sid = f"src:c{i}"
        items[sid] = SourceItem(
            source_id=sid,
            modality="pdf",
            holder="h/c",
            observed_at=T + (200 + i) * H,
            content="x",
            meta={"pages": 1},
        )
        texts[sid] = t
    split["h/c"] = "dev"
    tls = build_timelines(("src", it.holder, it.observed_at) for it in items.values())
    rs = [
        rec(1, "zephyr turbine report summary", "src:a0"),
        rec(2, "quokka marmalade recipe steps", "src:b0", holder="h/b"),
        rec(3, "walrus accordion lesson notes", "src:c0", holder="h/c"),
    ]
    out, st = derive("src", rs, items, texts, split, tls)
    ids = [r.query_id for r in out]
    assert len(ids) == len(set(ids)) == 3
    assert st.transactive == 2 and st.transactive % 2 == 0
