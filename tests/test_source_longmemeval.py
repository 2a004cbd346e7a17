"""LongMemEval adapter (not mirrored): a fixture in the exact upstream release format
(tests/fixtures/longmemeval/longmemeval_s.json) plus variants written per test for quirks."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone

import pytest

from membench.core.errors import InputError
from membench.modalities import check_region
from membench.sources import BY_KEY
from membench.sources import longmemeval as M


@pytest.fixture(scope="module")
def raw(fixtures):
    return json.loads((fixtures / "longmemeval" / "longmemeval_s.json").read_text())


@pytest.fixture(scope="module")
def fx(fixtures):
    return M.load(fixtures)


def _write(root, data, name="longmemeval_s.json"):
    (root / "longmemeval").mkdir(exist_ok=True)
    (root / "longmemeval" / name).write_text(json.dumps(data))
    return root


def _by_id(res):
    return {d.query_id: d for d in res.drafts}


def _gold(d):
    return [(g.source_id, g.region["turn"]) for g in d.gold]


def test_fixture_is_upstream_shape(raw):
    keys = {
        "question_id",
        "question_type",
        "question",
        "answer",
        "question_date",
        "haystack_session_ids",
        "haystack_dates",
        "haystack_sessions",
        "answer_session_ids",
    }
    for inst in raw:
        assert set(inst) == keys
        for sess in inst["haystack_sessions"]:
            for turn in sess:
                assert set(turn) <= {"role", "content", "has_answer"}
                assert turn["role"] in ("user", "assistant")


def test_counts(fixtures, fx):
    res = BY_KEY["longmemeval"].load(fixtures)
    assert [d.query_id for d in res.drafts] == [d.query_id for d in fx.drafts]
    cov = fx.coverage
    assert cov.upstream_items == 4 and cov.covered == 4 and cov.not_covered == {}
    assert cov.balanced()
    assert cov.normalised == {"answer session without a has_answer turn (no gold from it)": 1}
    assert len(fx.items) == 11
    assert len({i.holder for i in fx.items}) == 4
    assert sum(d.unanswerable for d in fx.drafts) == 1
    assert "read longmemeval_s.json" in cov.notes
    assert [d.query_id for d in fx.drafts] == sorted(d.query_id for d in fx.drafts)
    assert [i.source_id for i in fx.items] == sorted(i.source_id for i in fx.items)


def test_gold(fx):
    by = _by_id(fx)
    d = by["longmemeval:fx0001aa"]
    assert (
        d.question == "What degree did I graduate with?" and d.answer == "Business Administration"
    )
    assert d.answer_format == "str" and not d.unanswerable
    assert _gold(d) == [("longmemeval:fx0001aa:answer_fx0001aa_1", 1)]
    assert d.scope.holder == "longmemeval/fx0001aa" and d.scope.session is None
    assert d.scope.scenario == "chat-assistant-memory"
    assert d.origin.item == "fx0001aa" and d.origin.dataset == "xiaowu0162/LongMemEval"
    assert (
        d.origin.notes
        == "question_type: single-session-user; question_date: 2023/05/30 (Tue) 23:40"
    )
    # int answer; answer_fx0002bb_3 has no has_answer turn: no gold from it
    d = by["longmemeval:fx0002bb"]
    assert d.answer == 3 and d.answer_format == "int"
    assert _gold(d) == [
        ("longmemeval:fx0002bb:answer_fx0002bb_1", 1),
        ("longmemeval:fx0002bb:answer_fx0002bb_2", 2),
    ]
    # an assistant turn is the evidence
    d = by["longmemeval:fx0003cc"]
    assert _gold(d) == [("longmemeval:fx0003cc:answer_sharegpt_fxq1w2e3_0", 2)]


def test_session_judgments(fx):
    """judgments.session = every answer session of the haystack as its whole turn range, an
    answer session without a has_answer turn included (upstream's session-level relevance)."""
    by, items = _by_id(fx), {i.source_id: i for i in fx.items}

    def sess(qid):
        return [(g.source_id, g.region) for g in by[qid].judgments["session"]]

    whole = lambda sid: (sid, {"turn_start": 1, "turn_end": items[sid].meta["turns"]})
    assert sess("longmemeval:fx0001aa") == [whole("longmemeval:fx0001aa:answer_fx0001aa_1")]
    # answer_fx0002bb_3 has no has_answer turn: no turn gold, but a session judgment
    assert sess("longmemeval:fx0002bb") == [
        whole(f"longmemeval:fx0002bb:answer_fx0002bb_{k}") for k in (1, 2, 3)
    ]
    assert not by["longmemeval:fx0004dd_abs"].judgments


def test_abstention(fx):
    d = _by_id(fx)["longmemeval:fx0004dd_abs"]
    assert d.unanswerable and d.answer is None and d.answer_format == "none" and d.gold == []
    assert d.origin.distractor == ["answer_fx0004dd_abs_1"]
    assert "abstention answer: 'The information provided is not enough." in d.origin.notes


def test_items(fx):
    items = {i.source_id: i for i in fx.items}
    it = items["longmemeval:fx0002bb:answer_fx0002bb_2"]
    assert it.holder == "longmemeval/fx0002bb"
    assert it.observed_at == datetime(2023, 5, 28, 18, 45, tzinfo=timezone.utc)
    assert it.meta == {
        "turns": 3,
        "date_time": "2023/05/28 (Sun) 18:45",
        "speakers": ["assistant", "user"],
    }
    assert it.content[1] == {
        "turn": 2,
        "speaker": "user",
        "text": "I bought a folding commuter bike yesterday, so I can take it on the train.",
    }
    for i in fx.items:
        assert all("has_answer" not in t for t in i.content)  # no gold leak into content
        assert [t["turn"] for t in i.content] == list(range(1, i.meta["turns"] + 1))
        assert i.source_id in fx.texts
    # the same upstream filler session in two haystacks is two items of two holders
    assert (
        items["longmemeval:fx0001aa:sharegpt_fx1a2b3c_0"].holder
        != items["longmemeval:fx0004dd_abs:sharegpt_fx1a2b3c_0"].holder
    )
    for d in fx.drafts:
        for g in d.gold:
            assert check_region("conversation", g.region) is None
            assert items[g.source_id].holder == d.scope.holder
            assert 1 <= g.region["turn"] <= items[g.source_id].meta["turns"]


def test_deterministic(fixtures, fx):
    again = M.load(fixtures)
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in fx.drafts]
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in fx.items]
    assert again.texts == fx.texts


def test_parse_date():
    assert M.parse_date("2023/05/20 (Sat) 02:21") == datetime(
        2023, 5, 20, 2, 21, tzinfo=timezone.utc
    )
    assert M.parse_date("2023/05/20") == datetime(2023, 5, 20, tzinfo=timezone.utc)
    assert M.parse_date("20 May 2023") is None and M.parse_date(None) is None


def test_missing_folder_and_files(tmp_path):
    with pytest.raises(InputError) as e:
        M.load(tmp_path)
    assert e.value.rule == "MISSING_FILE"
    (tmp_path / "longmemeval").mkdir()
    with pytest.raises(InputError) as e:
        M.load(tmp_path)
    assert e.value.rule == "MISSING_FILE"


def test_prefers_s_and_reads_provenance(tmp_path, raw):
    _write(tmp_path, raw[:1], "longmemeval_oracle.json")
    res = M.load(tmp_path)
    assert [d.query_id for d in res.drafts] == ["longmemeval:fx0001aa"]
    assert res.coverage.notes[0] == "read longmemeval_oracle.json"
    assert res.drafts[0].origin.revision == "unknown"
    _write(tmp_path, raw[:2], "longmemeval_s.json")
    (tmp_path / "longmemeval" / "PROVENANCE.jsonl").write_text(
        json.dumps(
            {
                "path": "longmemeval_s.json",
                "commit": "abc123",
                "upstream_repo": "xiaowu0162/longmemeval",
            }
        )
        + "\n"
    )
    res = M.load(tmp_path)
    assert len(res.drafts) == 2
    assert (
        res.coverage.notes[0]
        == "read longmemeval_s.json; ignored longmemeval_oracle.json (same questions)"
    )
    assert {d.origin.revision for d in res.drafts} == {"abc123"}


def test_quirks(tmp_path, raw):
    data = copy.deepcopy(raw)
    a, b, c, abs_ = data
    # a: unparseable first date, a repeated session id, has_answer outside answer sessions
    a["haystack_dates"][0] = "sometime"
    a["haystack_session_ids"][2] = "sharegpt_fx1a2b3c_0"
    a["haystack_sessions"][2][0]["has_answer"] = True
    # b: an answer session id that is not in the haystack
    b["answer_session_ids"].append("answer_fx0002bb_9")
    # c: answerable, but its answer session loses the has_answer mark -> not covered
    c["haystack_sessions"][1][1]["has_answer"] = False
    # a malformed instance (lists of different lengths) and a duplicate question id
    broken = copy.deepcopy(abs_)
    broken["question_id"] = "fx0005ee"
    broken["haystack_dates"] = broken["haystack_dates"][:1]
    data += [broken, copy.deepcopy(a)]
    res = M.load(_write(tmp_path, data))
    cov = res.coverage
    assert cov.upstream_items == 6 and cov.covered == 3 and cov.balanced()
    assert cov.not_covered == {
        "answerable, no has_answer turn in its answer sessions": 1,
        "duplicate question_id": 1,
        "haystack lists missing or of different lengths": 1,
    }
    assert cov.normalised == {
        "answer session without a has_answer turn (no gold from it)": 2,
        "answer_session_id not in the haystack": 1,
        "has_answer turn outside answer_session_ids (ignored)": 1,
        "haystack date unparseable (neighbouring session +/- 1 min)": 1,
        "session id repeated in one haystack (later copy suffixed #n)": 1,
    }
    items = {i.source_id: i for i in res.items}
    assert "longmemeval:fx0001aa:sharegpt_fx1a2b3c_0#2" in items
    assert items["longmemeval:fx0001aa:sharegpt_fx1a2b3c_0"].observed_at == datetime(
        2023, 5, 20, 8, 4, tzinfo=timezone.utc
    )
    assert _gold(_by_id(res)["longmemeval:fx0001aa"]) == [
        ("longmemeval:fx0001aa:answer_fx0001aa_1", 1)
    ]
    assert not any(i.holder == "longmemeval/fx0005ee" for i in res.items)
    assert "longmemeval:fx0003cc" not in _by_id(res)
