"""PrefEval adapter (membench/sources/prefeval.py, not yet in the sets): a fixture in the
upstream format (every form, a question shared by two preferences, an mcq row asking another
question, an empty selection, the near-copy file that must never be read), located errors, and
the real mirror (counts, users, a gold turn checked against the upstream text)."""

from __future__ import annotations

import json
import shutil
from collections import Counter, defaultdict

import pytest

from membench.core.errors import InputError
from membench.modalities import check_region, get
from membench.sources import BY_KEY
from membench.sources import prefeval as P
from membench.sources.base import Coverage, open_upstream

REVISION = "50795054b5ff5f418d2b768a331d71e480f93331"


@pytest.fixture(scope="module")
def fx(fixtures):
    return P.load(fixtures)


@pytest.fixture(scope="module")
def real(corpus_root):
    return P.load(corpus_root)


def _by_id(res):
    return {d.query_id: d for d in res.drafts}


def _items(res):
    return {i.source_id: i for i in res.items}


def _no_clash(res, root):
    """No user is asked one question twice, and no session of a user but the gold one holds
    the text of the preference a question of that user is about (read from upstream)."""
    asked = Counter((d.scope.holder, " ".join(d.question.split()).casefold()) for d in res.drafts)
    assert max(asked.values()) == 1
    texts = defaultdict(dict)            # holder -> source_id -> normalised text
    for i in res.items:
        texts[i.holder][i.source_id] = " ".join(res.texts[i.source_id].split()).casefold()
    for d in res.drafts:
        form, topic, idx = d.query_id.split(":")[1:]
        rows = json.loads((root / "prefeval" / P.FORMS[form] / f"{topic}.json").read_text())
        pref = " ".join(rows[int(idx)]["preference"].split()).casefold()
        (gold,) = {g.source_id for g in d.gold}
        assert res.items and gold in texts[d.scope.holder]
        assert [s for s, t in texts[d.scope.holder].items() if pref in t and s != gold] == []


# --------------------------------------------------------------------------- fixture


def test_fixture_counts_and_coverage(fx):
    cov = fx.coverage
    assert cov.upstream_items == 18 and cov.balanced()
    assert cov.covered == len(fx.drafts) == 9
    assert cov.not_covered == {P.MISS_PERSONA: 6, P.MISS_EMPTY_Q: 2, P.MISS_NO_TURN: 1}
    assert cov.normalised == {P.FIX_MCQ: 2}     # its explicit and choice-based questions
    assert any("travel_hotel copy.json" in n and "not read" in n for n in cov.notes)
    assert len(fx.items) == 18            # every row is a session, persona ones too


def test_fixture_sessions(fx):
    items = _items(fx)
    ex = items["prefeval:explicit:travel_hotel:0"]
    assert ex.content == [{"turn": 1, "speaker": "user",
                           "text": "I avoid hotels with a bustling nightlife atmosphere."}]
    assert ex.meta == {"turns": 1, "speakers": ["user"], "topic": "travel_hotel",
                       "form": "explicit"}
    ch = items["prefeval:choice:travel_hotel:0"]
    assert [t["speaker"] for t in ch.content] == ["user", "assistant", "user", "assistant"]
    assert ch.content[2]["text"].startswith("I think I'll go with The Westin")
    pe = items["prefeval:persona:lifestyle_dietary:1"]
    assert pe.meta["turns"] == 4 and pe.content[3]["turn"] == 4
    assert pe.content[3]["text"] == "Start with the kitchen:\nwrap plates one by one."
    # texts: one line per turn, so region_text finds the gold turn
    conv = get("conversation")
    line = conv.region_text({"turn": 3}, fx.texts[ch.source_id], ch.meta)
    assert line == "user: I think I'll go with The Westin. The others seem too lively."
    assert conv.region_text({"turn": 4}, fx.texts[pe.source_id], pe.meta) == (
        "assistant: Start with the kitchen: wrap plates one by one.")
    for i in fx.items:
        assert conv.check_meta(i.meta) is None
        assert i.observed_at.utcoffset().total_seconds() == 0


def test_fixture_records(fx):
    by = _by_id(fx)
    d = by["prefeval:choice:travel_hotel:0"]
    assert [(g.source_id, g.region) for g in d.gold] == [
        ("prefeval:choice:travel_hotel:0", {"turn": 3})]
    assert [(g.source_id, g.region) for g in d.judgments["session"]] == [
        ("prefeval:choice:travel_hotel:0", {"turn_start": 1, "turn_end": 4})]
    assert d.answer == "The Vdara, a tranquil non-gaming resort." and d.answer_format == "str"
    assert d.origin.item == "implicit_preference/choice-based/travel_hotel.json#0"
    assert d.origin.revision == REVISION and d.origin.license == "CC BY-NC 4.0"
    assert d.scope.scenario == "preference-memory" and d.as_of is None
    e = by["prefeval:explicit:travel_hotel:0"]
    assert [(g.source_id, g.region) for g in e.gold] == [
        ("prefeval:explicit:travel_hotel:0", {"turn": 1})]
    assert e.scope.holder != d.scope.holder        # one form of a preference per user
    # the mcq row asks another question: no answer, counted
    for f in ("explicit", "choice"):
        v = by[f"prefeval:{f}:lifestyle_dietary:1"]
        assert v.answer is None and v.answer_format == "none" and v.gold
    # empty user_selection and empty question: not records
    assert "prefeval:choice:travel_hotel:2" not in by
    assert "prefeval:explicit:lifestyle_dietary:2" not in by
    assert "prefeval:choice:lifestyle_dietary:2" not in by
    for r in fx.drafts:
        assert not r.unanswerable and all(check_region("conversation", g.region) is None
                                          for g in r.gold)


def test_fixture_shared_question_lands_on_distinct_users(fx, fixtures):
    by = _by_id(fx)
    a, b = "prefeval:{}:travel_hotel:1", "prefeval:{}:lifestyle_dietary:0"
    ha = {by[a.format(f)].scope.holder for f in ("explicit", "choice")}
    hb = {by[b.format(f)].scope.holder for f in ("explicit", "choice")}
    assert len(ha) == len(hb) == 2 and not ha & hb
    _no_clash(fx, fixtures)


def test_users_rotate_forms(fx):
    items = _items(fx)
    for key in ("travel_hotel:0", "lifestyle_dietary:1"):
        users = [int(items[f"prefeval:{f}:{key}"].holder.split("-")[1]) for f in P.FORMS]
        assert [(u - users[0]) % P.N_USERS for u in users] == [0, 1, 2]


def test_too_few_users_books_clashes(fixtures):
    """With 4 users the two preferences sharing a question meet in one user: their questions
    are counted as clashes, never asked twice."""
    up = open_upstream(fixtures, P.SPEC)
    rows, mcq, revisions = P._read(up, Coverage(source="prefeval"))
    made = P._map(rows, mcq, revisions, n_users=4)
    assert made.outcomes.count(P.MISS_CLASH) >= 2
    asked = Counter((d.scope.holder, d.question) for d in made.drafts)
    assert max(asked.values()) == 1


def test_deterministic(fixtures, fx):
    again = P.load(fixtures)
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in fx.drafts]
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in fx.items]


# --------------------------------------------------------------------------- errors


@pytest.fixture
def copy(tmp_path, fixtures):
    shutil.copytree(fixtures / "prefeval", tmp_path / "prefeval")
    return tmp_path


def _edit(root, rel, fn):
    p = root / "prefeval" / rel
    data = json.loads(p.read_text())
    fn(data)
    p.write_text(json.dumps(data))
    return p


def test_turn_not_a_string_is_located(copy):
    def bad(rows):
        rows[1]["conversation"]["user_selection"] = 3
    p = _edit(copy, "implicit_preference/choice-based/travel_hotel.json", bad)
    with pytest.raises(InputError) as e:
        P.load(copy)
    assert e.value.file == str(p) and e.value.field == "[1].conversation.user_selection"


def test_persona_exchange_keys_are_checked(copy):
    def bad(rows):
        rows[0]["conversation"]["7"] = rows[0]["conversation"].pop("2")
    p = _edit(copy, "implicit_preference/persona-driven/lifestyle_dietary.json", bad)
    with pytest.raises(InputError) as e:
        P.load(copy)
    assert e.value.file == str(p) and e.value.field == "[0].conversation"


def test_row_without_question_is_located(copy):
    p = _edit(copy, "explicit_preference/lifestyle_dietary.json",
              lambda rows: rows[1].pop("question"))
    with pytest.raises(InputError) as e:
        P.load(copy)
    assert e.value.file == str(p) and e.value.field == "[1].question"


def test_missing_topic_file_is_named(copy):
    (copy / "prefeval" / "mcq_options" / "travel_hotel.json").unlink()
    with pytest.raises(InputError) as e:
        P.load(copy)
    assert e.value.rule == "MISSING_FILE" and e.value.file.endswith("mcq_options/travel_hotel.json")


# --------------------------------------------------------------------------- real mirror


def test_not_wired_into_the_build():
    assert BY_KEY["prefeval"].adapter == "registered:load_prefeval"


def test_real_counts(real, corpus_root):
    cov = real.coverage
    assert cov.upstream_items == 3000 and cov.covered == 2000 == len(real.drafts)
    assert cov.not_covered == {P.MISS_PERSONA: 1000} and cov.normalised == {}
    assert cov.balanced()
    assert len(real.items) == 3000
    per_user = Counter(i.holder for i in real.items)
    assert len(per_user) == 20 and set(per_user.values()) == {150}
    assert set(Counter(d.scope.holder for d in real.drafts).values()) == {100}
    assert Counter(d.answer_format for d in real.drafts) == {"str": 2000}
    assert all(d.origin.revision == REVISION for d in real.drafts)
    _no_clash(real, corpus_root)


def test_real_gold_spot_checked(real, corpus_root):
    by, items = _by_id(real), _items(real)
    folder = corpus_root / "prefeval"
    up = json.loads((folder / "implicit_preference/choice-based/travel_hotel.json").read_text())
    d = by["prefeval:choice:travel_hotel:0"]
    s = items[d.gold[0].source_id]
    assert d.gold[0].region == {"turn": 3}
    assert s.content[2]["text"] == up[0]["conversation"]["user_selection"]
    assert "Westin" in s.content[2]["text"] and "Westin" in up[0]["aligned_op"]
    mcq = json.loads((folder / "mcq_options/travel_hotel.json").read_text())
    assert d.answer == mcq[0]["classification_task_options"][0]
    assert d.answer.startswith("The Vdara Hotel & Spa")
    e = by["prefeval:explicit:travel_hotel:0"]
    assert items[e.gold[0].source_id].content == [
        {"turn": 1, "speaker": "user",
         "text": "I avoid hotels with a bustling nightlife atmosphere."}]
    # the pet_ownership rows 35 and 36 ask the same question with different preferences
    q35, q36 = (by[f"prefeval:explicit:pet_ownership:{i}"] for i in (35, 36))
    assert q35.question == q36.question and q35.scope.holder != q36.scope.holder
