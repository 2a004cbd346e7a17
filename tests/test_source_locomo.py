"""LoCoMo adapter: the real mirror (counts, hand-checked gold, bounds) and a fixture in the
upstream format that carries every evidence/date/dia_id quirk the adapter handles."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone

import pytest

from membench.core.errors import InputError
from membench.modalities import check_region
from membench.sources import BY_KEY
from membench.sources import locomo as L

REVISION = "3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376"


@pytest.fixture(scope="module")
def real(corpus_root):
    return L.load(corpus_root)


@pytest.fixture(scope="module")
def fx(fixtures):
    return L.load(fixtures)


def _by_id(res):
    return {d.query_id: d for d in res.drafts}


def _items(res):
    return {i.source_id: i for i in res.items}


def _gold(d):
    return [(g.source_id, g.region["turn"]) for g in d.gold]


# --------------------------------------------------------------------------- real corpus


def test_registry_points_here(corpus_root):
    res = BY_KEY["locomo"].load(corpus_root)
    assert res.coverage.source == "locomo"


def test_real_counts(real):
    cov = real.coverage
    assert cov.upstream_items == 1986
    assert cov.covered == 1981 == len(real.drafts)
    assert cov.not_covered == {
        "answerable without upstream evidence": 4,
        "adversarial question identical to an answerable one": 1,
    }
    assert cov.balanced()
    assert len(real.items) == 272
    assert len({i.holder for i in real.items}) == 10
    cats = Counter(d.origin.notes.split(";")[0] for d in real.drafts)
    assert cats == {
        "category 1": 282,
        "category 2": 321,
        "category 3": 92,
        "category 4": 841,
        "category 5 (adversarial)": 445,
    }
    assert sum(d.unanswerable for d in real.drafts) == 445
    assert Counter(d.answer_format for d in real.drafts) == {"str": 1530, "int": 6, "none": 445}
    assert sum(len(d.gold) for d in real.drafts) == 2360


def test_real_normalisations(real):
    assert real.coverage.normalised == {
        "category 5 with an upstream answer (kept in origin.notes, answer null)": 2,
        "evidence: dropped turn beyond the session's length": 2,
        "evidence: dropped unparseable id": 1,
        "evidence: duplicate id": 1,
        "evidence: extra colon after D": 1,
        "evidence: leading zero": 1,
        "evidence: several ids in one string": 4,
    }
    assert any("conv-26: 16 session_<k>_date_time" in n for n in real.coverage.notes)


def test_real_deterministic(corpus_root, real):
    again = L.load(corpus_root)
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in real.drafts]
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in real.items]
    assert again.texts == real.texts
    assert [d.query_id for d in real.drafts] == sorted(d.query_id for d in real.drafts)
    assert [i.source_id for i in real.items] == sorted(i.source_id for i in real.items)
    assert len({d.query_id for d in real.drafts}) == len(real.drafts)


def test_real_bounds_and_scope(real):
    items = _items(real)
    for i in real.items:
        assert i.observed_at.tzinfo is not None and i.observed_at.utcoffset().total_seconds() == 0
        assert [t["turn"] for t in i.content] == list(range(1, i.meta["turns"] + 1))
        assert i.holder == "locomo/" + i.source_id.split(":")[1]
        assert i.source_id in real.texts
    for d in real.drafts:
        assert d.scope.holder == "locomo/" + d.query_id.split(":")[1]
        assert d.scope.session is None and d.scope.scenario == "dialogue-memory"
        assert d.origin.revision == REVISION and d.origin.dataset == "snap-research/LoCoMo"
        assert d.unanswerable == (d.gold == []) == (d.answer is None)
        for g in d.gold:
            assert check_region("conversation", g.region) is None
            it = items[g.source_id]
            assert it.holder == d.scope.holder
            assert 1 <= g.region["turn"] <= it.meta["turns"]
        assert len(_gold(d)) == len(set(_gold(d)))
        # session level: exactly the sessions of the gold turns, each its whole turn range
        if d.unanswerable:
            assert not (d.judgments or {}).get("session")
            continue
        sess = d.judgments["session"]
        assert [g.source_id for g in sess] == list(dict.fromkeys(g.source_id for g in d.gold))
        for g in sess:
            assert check_region("conversation", g.region) is None
            assert g.region == {"turn_start": 1, "turn_end": items[g.source_id].meta["turns"]}


def test_real_hand_checked(real):
    by, items = _by_id(real), _items(real)
    d = by["locomo:conv-26:0"]
    assert d.question == "When did Caroline go to the LGBTQ support group?"
    assert d.answer == "7 May 2023" and d.origin.item == "conv-26/qa/0"
    assert _gold(d) == [("locomo:conv-26:session_1", 3)]
    assert "LGBTQ support group" in items["locomo:conv-26:session_1"].content[2]["text"]
    s1 = items["locomo:conv-26:session_1"]
    assert s1.observed_at == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert s1.meta == {
        "turns": 18,
        "date_time": "1:56 pm on 8 May, 2023",
        "speakers": ["Caroline", "Melanie"],
    }
    assert s1.content[4]["image_caption"].startswith("a photo of a dog")
    # "D8:6; D9:17" in one string
    assert _gold(by["locomo:conv-26:37"]) == [
        ("locomo:conv-26:session_8", 6),
        ("locomo:conv-26:session_9", 17),
    ]
    # "D:11:26" -> session 11 turn 26
    assert ("locomo:conv-43:session_11", 26) in _gold(by["locomo:conv-43:18"])
    assert len(by["locomo:conv-43:18"].gold) == 7
    # "D30:05" -> session 30 turn 5, which mentions the vintage camera
    assert _gold(by["locomo:conv-50:69"]) == [("locomo:conv-50:session_30", 5)]
    assert "vintage camera" in items["locomo:conv-50:session_30"].content[4]["text"]
    # bare "D" dropped, the two real ids kept
    assert _gold(by["locomo:conv-42:88"]) == [
        ("locomo:conv-42:session_1", 18),
        ("locomo:conv-42:session_1", 20),
    ]
    # D10:19 does not exist (session 10 has 16 turns): dropped, six ids kept
    assert len(by["locomo:conv-42:58"].gold) == 6
    assert items["locomo:conv-42:session_10"].meta["turns"] == 16
    # duplicated D4:5
    assert _gold(by["locomo:conv-50:5"]) == [
        ("locomo:conv-50:session_4", 5),
        ("locomo:conv-50:session_5", 5),
    ]
    # session level: the two sessions of "D8:6; D9:17", each as its whole turn range
    s8, s9 = (items[f"locomo:conv-26:session_{k}"] for k in (8, 9))
    assert [(g.source_id, g.region) for g in by["locomo:conv-26:37"].judgments["session"]] == [
        (s8.source_id, {"turn_start": 1, "turn_end": s8.meta["turns"]}),
        (s9.source_id, {"turn_start": 1, "turn_end": s9.meta["turns"]}),
    ]
    # two evidence turns of one session: one session region
    assert [g.source_id for g in by["locomo:conv-42:88"].judgments["session"]] == [
        "locomo:conv-42:session_1"
    ]
    # int answer
    d = by["locomo:conv-26:75"]
    assert d.answer == 3 and d.answer_format == "int"
    # empty upstream evidence (category 3) -> not covered
    assert "locomo:conv-26:30" not in by


def test_real_adversarial(real):
    by = _by_id(real)
    d = by["locomo:conv-26:152"]
    assert d.unanswerable and d.answer is None and d.answer_format == "none" and d.gold == []
    assert d.origin.distractor == ["D2:3"]
    assert "adversarial_answer: 'self-care is important'" in d.origin.notes
    d = by["locomo:conv-26:167"]
    assert d.unanswerable and d.origin.distractor == ["D5:8"]
    assert "upstream answer: 'No'" in d.origin.notes


# --------------------------------------------------------------------------- fixture quirks


def test_fixture_coverage(fx):
    cov = fx.coverage
    assert cov.upstream_items == 12 and cov.covered == 9 and cov.balanced()
    assert cov.not_covered == {
        "answerable without upstream evidence": 1,
        "answerable, no resolvable evidence": 1,
        "unknown category": 1,
    }
    assert cov.normalised == {
        "category 5 with an upstream answer (kept in origin.notes, answer null)": 1,
        "date_time: unparseable (neighbouring session +/- 1 min)": 1,
        "dia_id: session renumbered by list position": 1,
        "dia_id: session turns out of order (sorted by dia_id)": 1,
        "evidence: dropped id of a session that does not exist": 2,
        "evidence: dropped turn beyond the session's length": 1,
        "evidence: dropped unparseable id": 2,
        "evidence: duplicate id": 4,
        "evidence: extra colon after D": 2,
        "evidence: leading zero": 1,
        "evidence: lower-case d": 1,
        "evidence: several ids in one string": 2,
        "evidence: surrounding whitespace": 1,
    }


def test_fixture_evidence_normalised(fx):
    by = _by_id(fx)
    s1, s2 = "locomo:conv-a:session_1", "locomo:conv-a:session_2"
    assert _gold(by["locomo:conv-a:0"]) == [(s1, 1)]
    assert _gold(by["locomo:conv-a:1"]) == [(s1, 1), (s1, 2), (s1, 3), (s1, 4)]
    assert _gold(by["locomo:conv-a:2"]) == [(s2, 2)]
    assert _gold(by["locomo:conv-a:3"]) == [(s1, 3)]
    assert _gold(by["locomo:conv-a:4"]) == [(s1, 1)]
    assert by["locomo:conv-a:4"].answer == 1 and by["locomo:conv-a:4"].answer_format == "int"
    assert "locomo:conv-a:5" not in by  # empty evidence
    assert "locomo:conv-b:2" not in by  # D7:1 and D: nothing resolves
    assert "locomo:conv-b:3" not in by  # category 9
    d = by["locomo:conv-a:7"]
    assert d.unanswerable and d.origin.distractor == ["D1:2"]
    assert (
        d.origin.notes
        == "category 5 (adversarial); adversarial_answer: 'Yes'; upstream answer: 'No'"
    )
    assert by["locomo:conv-a:6"].origin.revision == "fixture0000000000000000000000000000000000"


def test_fixture_turns_and_dates(fx):
    items = _items(fx)
    assert set(items) == {
        "locomo:conv-a:session_1",
        "locomo:conv-a:session_2",
        "locomo:conv-b:session_1",
        "locomo:conv-b:session_2",
    }
    # out-of-order dia_ids are sorted by their turn number
    s2 = items["locomo:conv-a:session_2"]
    assert [(t["turn"], t["text"]) for t in s2.content][:2] == [
        (1, "Where were you last week?"),
        (2, "I went to Lisbon for work."),
    ]
    # image caption only on the image turn
    s1 = items["locomo:conv-a:session_1"]
    assert s1.content[1]["image_caption"] == "a photo of a red bicycle leaning on a wall"
    assert "image_caption" not in s1.content[0]
    assert "[image: a photo of a red bicycle" in fx.texts["locomo:conv-a:session_1"]
    # broken dia_ids: renumbered by position; evidence D2:3 is the third turn
    b2 = items["locomo:conv-b:session_2"]
    assert [t["turn"] for t in b2.content] == [1, 2, 3]
    assert _gold(_by_id(fx)["locomo:conv-b:1"]) == [("locomo:conv-b:session_2", 3)]
    # unparseable first date: one minute before the next session, still in order
    assert b2.observed_at == datetime(2023, 11, 8, 0, 28, tzinfo=timezone.utc)
    assert items["locomo:conv-b:session_1"].observed_at == datetime(
        2023, 11, 8, 0, 27, tzinfo=timezone.utc
    )


def test_fixture_deterministic(fixtures, fx):
    again = L.load(fixtures)
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in fx.drafts]
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in fx.items]


def test_parse_date_time():
    assert L.parse_date_time("12:28 am on 8 November, 2023") == datetime(
        2023, 11, 8, 0, 28, tzinfo=timezone.utc
    )
    assert L.parse_date_time("10:04  AM on 15 May, 2023 ") == datetime(
        2023, 5, 15, 10, 4, tzinfo=timezone.utc
    )
    assert L.parse_date_time("sometime") is None and L.parse_date_time(None) is None


def test_missing_file(tmp_path):
    (tmp_path / "locomo").mkdir()
    with pytest.raises(InputError) as e:
        L.load(tmp_path)
    assert e.value.rule == "MISSING_FILE"


def test_missing_turn_not_silently_kept(tmp_path, fixtures):
    """A test that can fail: shrinking a session moves its evidence out of bounds."""
    data = json.loads((fixtures / "locomo" / "locomo10.json").read_text())
    conv_a = next(c for c in data if c["sample_id"] == "conv-a")
    conv_a["conversation"]["session_1"] = conv_a["conversation"]["session_1"][:2]
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "locomo10.json").write_text(json.dumps(data))
    res = L.load(tmp_path)
    assert res.coverage.balanced()
    d = _by_id(res)["locomo:conv-a:1"]
    assert _gold(d) == [("locomo:conv-a:session_1", 1), ("locomo:conv-a:session_1", 2)]
    assert "locomo:conv-a:3" not in _by_id(res)  # D1:03 now out of bounds, nothing left
    assert res.coverage.not_covered["answerable, no resolvable evidence"] == 2
    assert res.drafts[0].origin.revision == "unknown"  # no PROVENANCE.jsonl


def test_adversarial_copy_of_an_answerable_question_is_not_covered(real):
    # upstream conv-30 #95 (category 5) repeats #61 (category 4) word for word
    ids = {d.query_id for d in real.drafts}
    assert "locomo:conv-30:61" in ids and "locomo:conv-30:95" not in ids
