"""REALTALK adapter: a fixture in the upstream format carrying every dia_id, evidence, date and
photo quirk the adapter handles, located input errors, and the real mirror (counts, regions
checked against the upstream file, a hand-checked gold turn)."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from datetime import datetime, timezone

import pytest

from membench.core.errors import InputError
from membench.modalities import check_region, get
from membench.sources import BY_KEY
from membench.sources import realtalk as R
from membench.sources.base import Mapped

REVISION = "b903e06a9770bf4e5fe9018c3e132889666d3b4a"
FIXTURE_REVISION = "fixture0000000000000000000000000000000000"
A = "realtalk:Chat_1_Ann_Bob"


@pytest.fixture(scope="module")
def real(corpus_root):
    return R.load(corpus_root)


@pytest.fixture(scope="module")
def fx(fixtures):
    return R.load(fixtures)


def _by_id(res):
    return {d.query_id: d for d in res.drafts}


def _items(res):
    return {i.source_id: i for i in res.items}


def _gold(d):
    return [(g.source_id, g.region["turn"]) for g in d.gold]


def _copy(fixtures, tmp_path):
    """A writable copy of the fixture folder under ``tmp_path/realtalk``."""
    shutil.copytree(fixtures / "realtalk", tmp_path / "realtalk")
    return tmp_path / "realtalk"


# --------------------------------------------------------------------------- fixture


def test_fixture_coverage(fx):
    cov = fx.coverage
    assert cov.upstream_items == 17 and cov.covered == 8 == len(fx.drafts) and cov.balanced()
    assert cov.not_covered == {
        "answer is a dia_id, not an answer": 1,
        "answerable without upstream evidence": 1,
        "answerable, no resolvable evidence": 2,
        "empty question": 1,
        R.PHOTOS: 2,
        "qa entry is not an object": 1,
        "unknown category": 1,
    }
    assert cov.normalised == {
        "date_time: session time from its first turn": 1,
        "date_time: unparseable (neighbouring session +/- 1 min)": 1,
        "dia_id: held by two turns (evidence on it is dropped)": 1,
        "dia_id: unreadable (the turn cannot be evidence)": 1,
        "evidence: dropped id of a message the turns omit (a photo or other, not mirrored)": 2,
        "evidence: dropped id two turns share": 1,
        "evidence: dropped range holding no turn": 1,
        "evidence: dropped unparseable id": 2,
        "evidence: duplicate id": 1,
        "evidence: leading zero": 1,
        "evidence: lower-case d": 1,
        "evidence: missing D": 1,
        "evidence: range of ids (the turns it spans)": 2,
        "evidence: several ids in one string": 1,
        "evidence: space after D": 1,
        "evidence: trailing full stop": 1,
        "session without turns (no item)": 1,
    }
    assert (
        "1 turns carry photos (img_file, not mirrored): kept as their text and blip_caption; "
        "1 gold turns are among them" in cov.notes
    )
    assert "no commit for Chat_2_Cid_Dee.json in PROVENANCE.jsonl: revision 'unknown'" in cov.notes


def test_fixture_evidence_by_dia_id(fx):
    by = _by_id(fx)
    s1, s2, s3 = (f"{A}:session_{k}" for k in (1, 2, 3))
    assert _gold(by[f"{A}:0"]) == [(s1, 1)]
    # D1:3 is the photo turn (kept), D1:4 the photo message the turns omit (dropped)
    assert _gold(by[f"{A}:1"]) == [(s1, 3)]
    # "D1:5; D2:1": D1:5 is the 4th turn of session_1 (D1:4 is skipped), D2:1 opens session_3
    assert _gold(by[f"{A}:2"]) == [(s1, 4), (s3, 1)]
    # "D1:7." lives in session_2: the dia prefix is not the session number
    assert _gold(by[f"{A}:3"]) == [(s2, 2)]
    assert _gold(by[f"{A}:4"]) == [(s3, 1), (s3, 2), (s3, 3)]  # D2:1-D2:3
    assert _gold(by[f"{A}:5"]) == [(s2, 1), (s3, 2)]  # "D 1:6", "2:2"
    assert _gold(by[f"{A}:14"]) == [(s1, 1), (s1, 2)]  # d1:1 repeats, D1:02
    for k in (6, 15):  # only omitted messages
        assert f"{A}:{k}" not in by
    for k in (7, 8, 9, 10, 11, 12, 13):
        assert f"{A}:{k}" not in by
    d = by[f"{A}:2"]
    assert d.answer == "Oslo" and d.answer_format == "str" and not d.unanswerable
    assert d.scope.holder == "realtalk/Chat_1_Ann_Bob" and d.scope.session is None
    assert d.scope.scenario == "dialogue-memory" and d.as_of is None
    assert d.origin.item == "Chat_1_Ann_Bob/qa/2" and d.origin.notes == "category 2"
    assert d.origin.revision == FIXTURE_REVISION and d.origin.dataset == "danny911kr/REALTALK"
    assert by["realtalk:Chat_2_Cid_Dee:0"].origin.revision == "unknown"
    # session level: each session of the gold turns once, as its whole turn range
    assert [(g.source_id, g.region) for g in d.judgments["session"]] == [
        (s1, {"turn_start": 1, "turn_end": 4}),
        (s3, {"turn_start": 1, "turn_end": 3}),
    ]


def test_fixture_items(fx):
    items = _items(fx)
    assert sorted(items) == [
        f"{A}:session_1",
        f"{A}:session_2",
        f"{A}:session_3",
        f"{A}:session_5",
        "realtalk:Chat_2_Cid_Dee:session_1",
    ]
    assert {i.holder for i in fx.items} == {"realtalk/Chat_1_Ann_Bob", "realtalk/Chat_2_Cid_Dee"}
    s1 = items[f"{A}:session_1"]
    assert s1.meta == {"turns": 4, "date_time": "01.01.2024, 10:00:00", "speakers": ["Ann", "bob"]}
    assert [(t["turn"], t["dia_id"]) for t in s1.content] == [
        (1, "D1:1"),
        (2, "D1:2"),
        (3, "D1:3"),
        (4, "D1:5"),
    ]
    assert s1.content[2]["text"] == "Here she is\nsleeping on the sofa"  # clean_text verbatim
    assert s1.content[2]["image_caption"] == "a grey cat asleep on a sofa"
    assert "image_caption" not in s1.content[0]
    # one text line per turn, so the modality can cut a turn's line out of it
    conv = get("conversation")
    assert (
        conv.region_text({"turn": 3}, fx.texts[s1.source_id], s1.meta)
        == "Ann: Here she is sleeping on the sofa [image: a grey cat asleep on a sofa]"
    )
    utc = timezone.utc
    assert s1.observed_at == datetime(2024, 1, 1, 10, 0, tzinfo=utc)
    # session_3 has no session_3_date_time: its first turn's time
    assert items[f"{A}:session_3"].observed_at == datetime(2024, 1, 3, 20, 0, tzinfo=utc)
    # session_5's date and first turn's time do not parse: session_3 + 1 minute (session_4 is
    # empty and gives no item)
    assert items[f"{A}:session_5"].observed_at == datetime(2024, 1, 3, 20, 1, tzinfo=utc)


def test_fixture_deterministic(fixtures, fx):
    again = R.load(fixtures)
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in fx.drafts]
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in fx.items]
    assert again.texts == fx.texts and again.coverage.as_dict() == fx.coverage.as_dict()


def test_evidence_ids():
    made = Mapped()
    assert R.evidence_ids("D12:3-D12:5", made) == [(12, 3, 5)]
    assert R.evidence_ids("D13:4. D14:4", made) == [(13, 4, 4), (14, 4, 4)]
    assert R.evidence_ids("D13:45:D20:19", made) == ["unparseable id"]
    assert R.evidence_ids("D12:5-D13:1", made) == ["unparseable range"]
    assert R.evidence_ids("D17;39", made) == ["unparseable id", "unparseable id"]
    assert R.evidence_ids(7, made) == ["non-string id"] and R.evidence_ids(" ", made) == [
        "empty id"
    ]
    assert made.fixes == {
        "evidence: range of ids (the turns it spans)": 1,
        "evidence: several ids in one string": 2,
        "evidence: trailing full stop": 1,
        "evidence: surrounding whitespace": 1,
    }


def test_missing_turn_is_counted_not_kept(fixtures, tmp_path):
    """A test that can fail: removing the turn D1:5 moves its evidence to the omitted ones."""
    folder = _copy(fixtures, tmp_path)
    p = folder / "Chat_1_Ann_Bob.json"
    data = json.loads(p.read_text())
    data["session_1"] = data["session_1"][:3]
    p.write_text(json.dumps(data))
    res = R.load(tmp_path)
    assert res.coverage.balanced()
    assert _gold(_by_id(res)[f"{A}:2"]) == [(f"{A}:session_3", 1)]
    assert res.coverage.not_covered["answer is a dia_id, not an answer"] == 1
    assert (
        res.coverage.normalised[
            "evidence: dropped id of a message the turns omit (a photo or other, not mirrored)"
        ]
        == 3
    )


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["session_2"][1].update(clean_text=None), "session_2[1].clean_text"),
        (lambda d: d["session_3"][0].pop("speaker"), "session_3[0].speaker"),
        (lambda d: d["session_1"][2].update(img_file="photo.jpg"), "session_1[2].img_file"),
        (lambda d: d.update(session_2={"turns": []}), "session_2"),
        (lambda d: d["session_1"].__setitem__(0, "hi"), "session_1[0]"),
        (lambda d: d.update(qa={}), "qa"),
        (lambda d: d.pop("name"), "name"),
    ],
)
def test_located_input_error(fixtures, tmp_path, edit, field):
    folder = _copy(fixtures, tmp_path)
    p = folder / "Chat_1_Ann_Bob.json"
    data = json.loads(p.read_text())
    edit(data)
    p.write_text(json.dumps(data))
    with pytest.raises(InputError) as e:
        R.load(tmp_path)
    assert e.value.file == str(p) and e.value.field == field
    assert str(e.value).startswith(f"{p}: SCHEMA: field {field}: ")


def test_not_json_names_the_line(fixtures, tmp_path):
    folder = _copy(fixtures, tmp_path)
    p = folder / "Chat_2_Cid_Dee.json"
    p.write_text('{\n "name": {\n')
    with pytest.raises(InputError) as e:
        R.load(tmp_path)
    assert e.value.file == str(p) and e.value.line == 3


def test_missing_files(tmp_path, fixtures):
    with pytest.raises(InputError) as e:  # no folder
        R.load(tmp_path)
    assert e.value.rule == "MISSING_FILE"
    folder = _copy(fixtures, tmp_path)
    for p in folder.glob("Chat_*.json"):
        p.unlink()
    with pytest.raises(InputError) as e:  # no conversation file
        R.load(tmp_path)
    assert e.value.rule == "MISSING_FILE" and "Chat_*.json" in e.value.file
    (folder / "PROVENANCE.jsonl").unlink()
    with pytest.raises(InputError) as e:  # no provenance
        R.load(tmp_path)
    assert e.value.rule == "MISSING_FILE" and "PROVENANCE.jsonl" in e.value.file


# --------------------------------------------------------------------------- real mirror


def test_registry_names_this_adapter(corpus_root, real):
    """In the sets: the registry entry names ``realtalk:load`` and loads the same records."""
    assert BY_KEY["realtalk"].adapter == "realtalk:load"
    res = BY_KEY["realtalk"].load(corpus_root)
    assert [d.query_id for d in res.drafts] == [d.query_id for d in real.drafts]
    assert len(res.drafts) == 705 and res.coverage.upstream_items == 728


def test_real_counts(real):
    cov = real.coverage
    assert cov.upstream_items == 728 and cov.balanced()
    assert cov.covered == 705 == len(real.drafts)
    assert cov.not_covered == {
        "answer is a dia_id, not an answer": 1,
        "answerable without upstream evidence": 2,
        R.PHOTOS: 20,
    }
    assert len(real.items) == 219
    per_holder = Counter(i.holder for i in real.items)
    assert len(per_holder) == 10 and min(per_holder.values()) == 18
    assert max(per_holder.values()) == 25
    assert Counter(d.origin.notes for d in real.drafts) == {
        "category 1": 288,
        "category 2": 312,
        "category 3": 105,
    }
    assert sum(len(d.gold) for d in real.drafts) == 1690
    assert cov.normalised == {
        "evidence: dropped empty id": 3,
        "evidence: dropped id of a message the turns omit (a photo or other, not mirrored)": 135,
        "evidence: dropped unparseable id": 5,
        "evidence: duplicate id": 4,
        "evidence: missing D": 1,
        "evidence: range of ids (the turns it spans)": 22,
        "evidence: several ids in one string": 27,
        "evidence: space after D": 1,
        "evidence: trailing full stop": 7,
    }
    assert (
        "313 turns carry photos (img_file, not mirrored): kept as their text and "
        "blip_caption; 106 gold turns are among them" in cov.notes
    )


def _named(evidence: list) -> set[tuple[int, int]]:
    """The (d, t) an upstream evidence list names, read independently of the adapter: every
    ``<d>:<t>`` in it, and every t of a range ``D<d>:<a>-D<d>:<b>``."""
    out = set()
    for m in re.finditer(r"(\d+):(\d+)(?:-D(\d+):(\d+))?", " ".join(evidence)):
        d, a = int(m.group(1)), int(m.group(2))
        b = int(m.group(4)) if m.group(4) else a
        out |= {(d, t) for t in range(a, b + 1)}
    return out


def test_real_regions_match_upstream(real, corpus_root):
    """Every gold turn is, in the upstream file, the turn whose dia_id the evidence names."""
    items = _items(real)
    folder = corpus_root / "realtalk"
    upstream = {
        p.stem: json.loads(p.read_text(encoding="utf-8")) for p in folder.glob("Chat_*.json")
    }
    for d in real.drafts:
        assert d.origin.revision == REVISION and not d.unanswerable and d.answer
        name, idx = d.origin.item.split("/qa/")
        for g in d.gold:
            assert check_region("conversation", g.region) is None
            it = items[g.source_id]
            assert it.holder == d.scope.holder == f"realtalk/{name}"
            k = g.source_id.rsplit("_", 1)[1]
            turn = upstream[name][f"session_{k}"][g.region["turn"] - 1]
            assert it.content[g.region["turn"] - 1]["text"] == turn["clean_text"]
            named = _named(upstream[name]["qa"][int(idx)]["evidence"])
            assert tuple(int(x) for x in turn["dia_id"][1:].split(":")) in named, d.query_id
    for i in real.items:
        assert i.observed_at.utcoffset().total_seconds() == 0
        assert [t["turn"] for t in i.content] == list(range(1, i.meta["turns"] + 1))
        assert len(real.texts[i.source_id].split("\n")) == i.meta["turns"]


def test_real_hand_checked(real):
    by, items = _by_id(real), _items(real)
    d = by["realtalk:Chat_1_Emi_Elise:40"]
    assert d.question == "What TV show was Kate watching shortly before 7 Jan 2024?"
    assert d.answer == "Money Heist"
    # evidence D7:50 lives in session_10 (whose turns are D7:47..), never in a session_7
    assert _gold(d) == [("realtalk:Chat_1_Emi_Elise:session_10", 4)]
    s10 = items["realtalk:Chat_1_Emi_Elise:session_10"]
    assert s10.content[3]["dia_id"] == "D7:50" and "Money Heist" in s10.content[3]["text"]
    assert s10.observed_at == datetime(2024, 1, 10, 2, 20, 59, tzinfo=timezone.utc)
    assert s10.meta["speakers"] == ["Emi", "elise"]
    # "D12:3-D12:5" and two more ranges: 20 turns over two sessions
    assert len(by["realtalk:Chat_10_Fahim_Muhhamed:37"].gold) == 20
    # Chat_3 #42 answers with a dia_id; #17 asks the same question and is kept
    assert "realtalk:Chat_3_Kevin_Paola:42" not in by
    assert by["realtalk:Chat_3_Kevin_Paola:17"].answer == "On 10.01.2024"


def test_real_deterministic(corpus_root, real):
    again = R.load(corpus_root)
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in real.drafts]
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in real.items]
    assert [d.query_id for d in real.drafts] == sorted(d.query_id for d in real.drafts)
    assert len({d.query_id for d in real.drafts}) == len(real.drafts)
