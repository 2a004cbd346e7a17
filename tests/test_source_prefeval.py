"""PrefEval adapter (membench/sources/prefeval.py): a fixture in the upstream format (every
form, a question shared by two preferences, an mcq row asking another question, an empty
question and selection, the near-copy file that must never be read), the dealing of sessions on
hand-made rows, located errors, and the real mirror (counts, the dealing's properties checked
against the upstream text, a gold turn spot-checked)."""

from __future__ import annotations

import json
import math
import re
import shutil
from collections import Counter, defaultdict

import pytest

from membench.core.errors import InputError
from membench.modalities import check_region, get
from membench.sources import BY_KEY
from membench.sources import prefeval as P
from membench.sources.base import Coverage, open_upstream

REVISION = "50795054b5ff5f418d2b768a331d71e480f93331"
OPAQUE = re.compile(r"prefeval:[0-9a-f]{16}")


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


def _rows(root):
    """Read here, not through the adapter: upstream session text (turn texts in order) ->
    the (form, topic, row) of every row with that text."""
    out = defaultdict(set)
    for form, sub in P.FORMS.items():
        for f in sorted((root / "prefeval" / sub).glob("*.json")):
            for i, r in enumerate(json.loads(f.read_text(encoding="utf-8"))):
                c = r["conversation"] if form != "explicit" else None
                if form == "explicit":
                    texts = (r["preference"],)
                elif form == "choice":
                    texts = tuple(
                        c[k]
                        for k in (
                            "query",
                            "assistant_options",
                            "user_selection",
                            "assistant_acknowledgment",
                        )
                    )
                else:
                    texts = tuple(
                        x for k in sorted(c, key=int) for x in (c[k]["user"], c[k]["assistant"])
                    )
                out[texts].add((form, f.stem, i))
    return out


def _dealt(res, root):
    """The dealing's properties, checked from the items' upstream text (never the adapter's
    topics): no two forms of one preference asked; each question's gold is turn 1 (explicit) or
    3 (choice) of an original the question's user holds; a user is asked about a family once
    and holds no other session of a family it is asked about; a user holds no two sessions of
    one text; ids opaque and meta free of topic and form words; topics name every item's
    family. Returns (user -> families asked, user -> families of its other sessions)."""
    rows = _rows(root)
    family, items = {}, _items(res)
    for i in res.items:
        (fam,) = {P.FAMILY[t] for _, t, _ in rows[tuple(t["text"] for t in i.content)]}
        family[i.source_id] = fam
    assert res.topics == family
    held = defaultdict(list)
    for i in res.items:
        held[i.holder].append(i.source_id)
    prefs = Counter((t, n) for _, t, n in (d.query_id.split(":")[1:] for d in res.drafts))
    assert set(prefs.values()) == {1}
    asked, gold = defaultdict(list), set()
    for d in res.drafts:
        form, topic, n = d.query_id.split(":")[1:]
        ((g, region),) = [(g.source_id, g.region) for g in d.gold]
        assert g == P.item_id(d.query_id) and items[g].holder == d.scope.holder
        assert region == {"turn": {"explicit": 1, "choice": 3}[form]}
        assert (form, topic, int(n)) in rows[tuple(t["text"] for t in items[g].content)]
        asked[d.scope.holder].append(P.FAMILY[topic])
        gold.add(g)
    others = {}
    for u, ids in held.items():
        fams = asked.get(u, [])
        assert len(fams) == len(set(fams)), u
        others[u] = {family[s] for s in ids if s not in gold}
        assert not others[u] & set(fams), u
        texts = [tuple(t["text"] for t in items[s].content) for s in ids]
        assert len(texts) == len(set(texts)), u
    words = (
        set(P.FORMS)
        | {"implicit", "form", "topic"}
        | set(P.FAMILY.values())
        | {w for t in P.FAMILY for w in t.split("_")}
    )
    for i in res.items:
        assert OPAQUE.fullmatch(i.source_id), i.source_id
        assert set(i.meta) == {"turns", "speakers"} and i.meta["turns"] == len(i.content)
        assert not {w for w in words if w in json.dumps(i.meta).lower()}
    return {u: set(f) for u, f in asked.items()}, others


# --------------------------------------------------------------------------- fixture


def test_fixture_asked_forms_and_clusters(fixtures):
    """By hash, each preference is asked in one labelled form; travel_hotel#1 asks
    lifestyle_dietary#0's question, so the two are one cluster named by the smaller key."""
    up = open_upstream(fixtures, P.SPEC)
    rows, _, _ = P._read(up, Coverage(source="prefeval"))
    keys = sorted({r.pref_key for r in rows})
    assert {k: P.asked_form(k) for k in keys} == {
        "lifestyle_dietary#0": "choice",
        "lifestyle_dietary#1": "explicit",
        "lifestyle_dietary#2": "explicit",
        "travel_hotel#0": "explicit",
        "travel_hotel#1": "choice",
        "travel_hotel#2": "choice",
    }
    assert P._clusters(rows) == {k: k for k in keys} | {"travel_hotel#1": "lifestyle_dietary#0"}


def test_fixture_counts_and_coverage(fx):
    """18 rows: 6 persona, 6 in the form not asked, travel_hotel#1 a twin of
    lifestyle_dietary#0; of the 5 asked, one has an empty question and one an empty
    selection: 3 records. 5 asked -> max(2, ceil(0.8 * 5)) = 4 users."""
    cov = fx.coverage
    assert cov.upstream_items == 18 and cov.balanced()
    assert cov.covered == len(fx.drafts) == 3
    assert cov.not_covered == {
        P.MISS_PERSONA: 6,
        P.MISS_OTHER_FORM: 6,
        P.MISS_TWIN: 1,
        P.MISS_EMPTY_Q: 1,
        P.MISS_NO_TURN: 1,
    }
    assert cov.normalised == {P.FIX_MCQ: 1}  # lifestyle_dietary#1, asked explicit
    assert any("travel_hotel copy.json" in n and "not read" in n for n in cov.notes)
    assert any(
        n.startswith("4 users of 24 sessions")
        and "(0 copies)" in n
        and "no user could hold: 5" in n
        for n in cov.notes
    )


def test_fixture_deal(fx):
    """The 4 users, by hand: the asked sessions one per family and user (user 0 holds the
    empty question's session too: the question is asked, then not covered), the others on
    users whose fill families (here: the one family they are not asked about) hold theirs,
    one per cluster; a food session has one such user (user 2), so 3 of the 6 stay out, and
    travel_hotel#1's 3 sessions have one (user 1 holds its cluster), so 2 stay out."""
    sid = {
        P.item_id(f"prefeval:{f}:{t}:{i}"): f"{f}:{t}:{i}"
        for f in P.FORMS
        for t in ("lifestyle_dietary", "travel_hotel")
        for i in range(3)
    }
    held = defaultdict(set)
    for i in fx.items:
        held[i.holder].add(sid[i.source_id])
    assert held == {
        "prefeval/user-000": {"explicit:travel_hotel:0", "explicit:lifestyle_dietary:2"},
        "prefeval/user-001": {
            "choice:lifestyle_dietary:0",
            "choice:travel_hotel:0",
            "explicit:travel_hotel:2",
        },
        "prefeval/user-002": {
            "choice:travel_hotel:2",
            "explicit:lifestyle_dietary:0",
            "choice:lifestyle_dietary:1",
            "persona:lifestyle_dietary:2",
        },
        "prefeval/user-003": {
            "explicit:lifestyle_dietary:1",
            "choice:travel_hotel:1",
            "persona:travel_hotel:0",
            "persona:travel_hotel:2",
        },
    }
    assert fx.topics == {
        i.source_id: {"lifestyle_dietary": "food", "travel_hotel": "travel"}[
            sid[i.source_id].split(":")[1]
        ]
        for i in fx.items
    }
    for i in fx.items:
        assert OPAQUE.fullmatch(i.source_id) and set(i.meta) == {"turns", "speakers"}


def test_fixture_sessions(fixtures):
    """With 8 users every session has a holder; contents and texts as upstream wrote them."""
    up = open_upstream(fixtures, P.SPEC)
    rows, mcq, revisions = P._read(up, Coverage(source="prefeval"))
    made = P._map(rows, mcq, revisions, n_users=8)
    assert made.unplaced == 0 and made.copies == 48 and len(made.items) == 18 + 48
    items = {i.source_id: i for i in made.items}
    ex = items[P.item_id("prefeval:explicit:travel_hotel:0")]
    assert ex.content == [
        {
            "turn": 1,
            "speaker": "user",
            "text": "I avoid hotels with a bustling nightlife atmosphere.",
        }
    ]
    assert ex.meta == {"turns": 1, "speakers": ["user"]}
    ch = items[P.item_id("prefeval:choice:travel_hotel:0")]
    assert [t["speaker"] for t in ch.content] == ["user", "assistant", "user", "assistant"]
    assert ch.content[2]["text"].startswith("I think I'll go with The Westin")
    assert ch.meta == {"turns": 4, "speakers": ["user", "assistant"]}
    pe = items[P.item_id("prefeval:persona:lifestyle_dietary:1")]
    assert pe.meta["turns"] == 4 and pe.content[3]["turn"] == 4
    assert pe.content[3]["text"] == "Start with the kitchen:\nwrap plates one by one."
    # texts: one line per turn, so region_text finds the gold turn
    conv = get("conversation")
    line = conv.region_text({"turn": 3}, made.texts[ch.source_id], ch.meta)
    assert line == "user: I think I'll go with The Westin. The others seem too lively."
    assert conv.region_text({"turn": 4}, made.texts[pe.source_id], pe.meta) == (
        "assistant: Start with the kitchen: wrap plates one by one."
    )
    # a copy holds the original's content under an id of its own
    copy = next(i for i in made.items if i.source_id not in {P.item_id(r.sid) for r in rows})
    assert any(copy.content == r.turns for r in rows)
    for i in made.items:
        assert conv.check_meta(i.meta) is None and OPAQUE.fullmatch(i.source_id)
        assert i.observed_at.utcoffset().total_seconds() == 0


def test_fixture_records(fx):
    by, items = _by_id(fx), _items(fx)
    assert sorted(by) == [
        "prefeval:choice:lifestyle_dietary:0",
        "prefeval:explicit:lifestyle_dietary:1",
        "prefeval:explicit:travel_hotel:0",
    ]
    d = by["prefeval:choice:lifestyle_dietary:0"]
    g = P.item_id("prefeval:choice:lifestyle_dietary:0")
    assert [(x.source_id, x.region) for x in d.gold] == [(g, {"turn": 3})]
    assert [(x.source_id, x.region) for x in d.judgments["session"]] == [
        (g, {"turn_start": 1, "turn_end": 4})
    ]
    assert items[g].content[2]["text"] == "A rabbit sounds right; I do not want a vocal animal."
    assert d.answer == "A rabbit or fish." and d.answer_format == "str"
    assert d.origin.item == "implicit_preference/choice-based/lifestyle_dietary.json#0"
    assert d.origin.revision == REVISION and d.origin.license == "CC BY-NC 4.0"
    assert d.scope.scenario == "preference-memory" and d.as_of is None
    assert d.scope.holder == items[g].holder == "prefeval/user-001"
    e = by["prefeval:explicit:travel_hotel:0"]
    assert [(x.source_id, x.region) for x in e.gold] == [
        (P.item_id("prefeval:explicit:travel_hotel:0"), {"turn": 1})
    ]
    assert e.answer == "The Vdara, a tranquil non-gaming resort."
    # the mcq row asks another question: no answer, counted
    v = by["prefeval:explicit:lifestyle_dietary:1"]
    assert v.answer is None and v.answer_format == "none" and v.gold
    for r in fx.drafts:
        assert not r.unanswerable and all(
            check_region("conversation", x.region) is None for x in r.gold
        )


def test_too_few_users_book_no_user(fixtures):
    """The 5 asked sessions are 3 of food and 2 of travel, and a user is asked about a
    family once: 2 users hold 4 of them, 1 user holds 2."""
    up = open_upstream(fixtures, P.SPEC)
    rows, mcq, revisions = P._read(up, Coverage(source="prefeval"))
    for n, out in ((1, 3), (2, 1), (3, 0)):
        made = P._map(rows, mcq, revisions, n_users=n)
        assert made.outcomes.count(P.MISS_NO_USER) == out, n
        assert P.MISS_CLASH not in made.outcomes


def _row(topic, i, form="explicit"):
    return P._Row(
        form=form,
        topic=topic,
        index=i,
        file=f"{topic}.json",
        question=f"q {topic} {i}?",
        preference=f"p {topic} {i}.",
        turns=[{"turn": 1, "speaker": "user", "text": f"p {topic} {i}."}],
    )


def test_deal_by_hand():
    """Two users, two asked food sessions, four travel sessions (four clusters): each user is
    asked one food session (never both: one per family), takes two travel sessions as its
    own, and copies one of the other user's up to 4; the food sessions are nobody's fill."""
    rows = [
        _row("lifestyle_dietary", 0),
        _row("travel_restaurant", 1),
        *(_row("travel_hotel", i) for i in range(4)),
    ]
    cluster = {r.pref_key: r.pref_key for r in rows}
    asked = {rows[0].sid, rows[1].sid}
    users = P._deal(rows, cluster, asked, 2, 4)
    assert users.unplaced == []
    assert {users.own[0][0], users.own[1][0]} == asked  # dealt first
    assert users.asked_families == {0: {"food"}, 1: {"food"}}
    assert users.fill_families == {0: ["travel"], 1: ["travel"]}
    travel = {r.sid for r in rows[2:]}
    for u in (0, 1):
        assert len(users.own[u]) == 3 and set(users.own[u][1:]) <= travel
        (c,) = users.copies[u]
        assert c in users.own[1 - u][1:]
    # a third asked food session has no user; a one-cluster travel family leaves users short
    rows2 = rows + [_row("lifestyle_dietary", 9)]
    users = P._deal(
        rows2, cluster | {rows2[-1].pref_key: rows2[-1].pref_key}, asked | {rows2[-1].sid}, 2, 4
    )
    assert len(users.unplaced) == 1 and users.unplaced[0] in asked | {rows2[-1].sid}
    same = {r.pref_key: "travel_hotel#0" for r in rows[2:]} | {
        r.pref_key: r.pref_key for r in rows[:2]
    }
    users = P._deal(rows, same, asked, 2, 4)
    assert sorted(len(users.own[u]) for u in (0, 1)) == [2, 2]
    assert len(users.unplaced) == 2 and users.copies == {0: [], 1: []}


def test_item_ids_are_opaque():
    sid = "prefeval:explicit:travel_hotel:0"
    ids = {
        P.item_id(sid),
        P.item_id(sid, 0),
        P.item_id(sid, 1),
        P.item_id("prefeval:choice:travel_hotel:0"),
    }
    assert len(ids) == 4 and all(OPAQUE.fullmatch(i) for i in ids)
    assert P.item_id(sid) == P.item_id(sid)


def test_deterministic(fixtures, fx):
    again = P.load(fixtures)
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in fx.drafts]
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in fx.items]
    assert again.topics == fx.topics


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
    p = _edit(
        copy, "explicit_preference/lifestyle_dietary.json", lambda rows: rows[1].pop("question")
    )
    with pytest.raises(InputError) as e:
        P.load(copy)
    assert e.value.file == str(p) and e.value.field == "[1].question"


def test_missing_topic_file_is_named(copy):
    (copy / "prefeval" / "mcq_options" / "travel_hotel.json").unlink()
    with pytest.raises(InputError) as e:
        P.load(copy)
    assert e.value.rule == "MISSING_FILE" and e.value.file.endswith("mcq_options/travel_hotel.json")


# --------------------------------------------------------------------------- real mirror


def test_wired_into_the_sets(fixtures, fx):
    assert BY_KEY["prefeval"].adapter == "prefeval:load"
    via = BY_KEY["prefeval"].load(fixtures)
    assert via.coverage.as_dict() == fx.coverage.as_dict() and via.drafts == fx.drafts


def test_real_counts(real):
    cov = real.coverage
    assert cov.upstream_items == 3000 and cov.covered == 985 == len(real.drafts)
    assert cov.not_covered == {P.MISS_PERSONA: 1000, P.MISS_OTHER_FORM: 1000, P.MISS_TWIN: 15}
    assert cov.normalised == {} and cov.balanced()
    assert Counter(d.query_id.split(":")[1] for d in real.drafts) == {
        "explicit": 514,
        "choice": 471,
    }
    # 788 = ceil(0.8 * 985) users of 24 sessions: the 3,000 originals and 15,912 copies
    per_user = Counter(i.holder for i in real.items)
    assert len(per_user) == 788 == math.ceil(P.USERS_PER_QUESTION * 985)
    assert set(per_user.values()) == {P.ITEMS_PER_USER} == {24}
    assert len(real.items) == 18912
    assert any("(15912 copies); sessions no user could hold: 0" in n for n in cov.notes)
    assert Counter(Counter(d.scope.holder for d in real.drafts).values()) == {1: 613, 2: 153, 3: 22}
    assert Counter(d.answer_format for d in real.drafts) == {"str": 985}
    assert all(d.origin.revision == REVISION for d in real.drafts)


def test_real_dealing(real, corpus_root):
    """Every property of the dealing (:func:`_dealt`), and every other session of a user
    comes from at most FILL_FAMILIES families."""
    asked, others = _dealt(real, corpus_root)
    assert len(asked) == 788
    assert Counter(len(f) for f in others.values()) == {3: 787, 2: 1}
    # each original is held once; a copy never by the original's holder
    texts = defaultdict(list)
    for i in real.items:
        texts[tuple(t["text"] for t in i.content)].append(i.holder)
    assert all(len(h) == len(set(h)) for h in texts.values())


def test_real_gold_spot_checked(real, corpus_root):
    by, items = _by_id(real), _items(real)
    folder = corpus_root / "prefeval"
    up = json.loads((folder / "implicit_preference/choice-based/travel_hotel.json").read_text())
    assert "prefeval:explicit:travel_hotel:1" not in by  # asked in its choice form
    d = by["prefeval:choice:travel_hotel:1"]
    s = items[d.gold[0].source_id]
    assert d.gold[0].region == {"turn": 3} and s.holder == d.scope.holder
    assert s.content[2]["text"] == up[1]["conversation"]["user_selection"]
    assert d.question == "What are some of the best hotels for my stay in Tokyo?"
    mcq = json.loads((folder / "mcq_options/travel_hotel.json").read_text())
    assert d.answer == mcq[1]["classification_task_options"][0]
    assert d.answer == "The Ryokan Sawanoya, a traditional low-rise Japanese inn."
    assert "prefeval:choice:travel_hotel:0" not in by  # asked in its explicit form
    e = by["prefeval:explicit:travel_hotel:0"]
    assert items[e.gold[0].source_id].content == [
        {
            "turn": 1,
            "speaker": "user",
            "text": "I avoid hotels with a bustling nightlife atmosphere.",
        }
    ]
    # pet_ownership rows 35 and 36 ask the same question: one cluster, asked for 35 only
    assert "prefeval:choice:pet_ownership:35" in by
    assert not [q for q in by if q.endswith(":pet_ownership:36")]
