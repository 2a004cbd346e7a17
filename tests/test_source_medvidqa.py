import ast
import csv
import io
import shutil

import pytest

from membench.core.errors import InputError
from membench.modalities import check_region
from membench.sources import BY_KEY, medvidqa
from membench.sources.base import hash_groups

SPEC = BY_KEY["medvidqa"]


@pytest.fixture(scope="module")
def real(corpus_root):
    return medvidqa.load(corpus_root)


@pytest.fixture(scope="module")
def fx(fixtures):
    return medvidqa.load(fixtures / "medvidqa")


def _drafts(res):
    return {d.query_id: d for d in res.drafts}


def _items(res):
    return {i.source_id: i for i in res.items}


# --------------------------------------------------------------------------- real corpus


def test_real_counts(real):
    cov = real.coverage
    assert cov.upstream_items == 145 + 155
    assert cov.covered == 145 == len(real.drafts)
    # 145 val questions (no val video has captions) + 10 test questions on the 2 test videos
    # missing from the caption file
    assert cov.not_covered == {"no captions in mirror": 155}
    assert cov.normalised == {
        "caption cue dropped: duplicated across videos": 1022,
        "caption cue dropped: empty text": 8,
        "caption cue dropped: out of chronological order": 4,
        "caption cue dropped: starts after video end": 2,
        "caption cue end clipped to video_length": 39,
        "caption row video_id recovered by question match (spreadsheet error value)": 1,
        "caption text with broken quoting repaired": 34,
    }
    assert cov.balanced()
    assert len(real.items) == 48
    assert sum(i.meta["cues"] for i in real.items) == 7799 - 1036
    assert {i.holder for i in real.items} == {f"medvidqa/viewer-{k}" for k in range(5)}
    assert not any(d.unanswerable for d in real.drafts)
    assert set(real.texts) == {i.source_id for i in real.items}


def test_real_notes(real):
    notes = " | ".join(real.coverage.notes)
    assert "exist for 48 of 50 test videos and 0 of 49 val videos" in notes
    assert "val and test share 0 videos" in notes
    assert "videos are not mirrored" in notes


def test_real_hand_checked(real):
    d, items = _drafts(real), _items(real)
    # test.json sample 2711: chin tucks, 00:07-01:13 of h5MvX50zTLM (186 s)
    r = d["medvidqa:2711"]
    assert r.question == "How to perform chin tucks to treat neck pain?"
    assert r.gold[0].source_id == "medvidqa:h5MvX50zTLM"
    assert r.gold[0].region == {"t_start": 7.0, "t_end": 73.0}
    assert r.origin.item == "test.json#2711"
    assert r.origin.revision == "14e493e5aaae0b821fb64acf570d2a772086aaec"
    assert r.origin.dataset == "deepaknlp/MedVidQACL" and r.origin.license == SPEC.license
    assert r.answer is None and r.answer_format == "none"
    assert r.scope.scenario == SPEC.scenario
    it = items["medvidqa:h5MvX50zTLM"]
    assert it.meta == {
        "duration": 186,
        "cues": 71,
        "url": "https://www.youtube.com/watch?v=h5MvX50zTLM",
    }
    assert it.content[0] == [3.33, 8.98, "for the top three exercises for neck"]
    # the caption file names this video "#NAME?": recovered by its question and timestamp
    r = d["medvidqa:2808"]
    assert r.question == "How to effectively treat AC joint pain?"
    assert r.gold[0].source_id == "medvidqa:-Zx3pWhMBjw"
    assert r.gold[0].region == {"t_start": 113.0, "t_end": 197.0}
    z = items["medvidqa:-Zx3pWhMBjw"]
    assert z.meta["cues"] == 143 and z.meta["duration"] == 233
    assert all(c[0] < 233 and c[1] <= 233 for c in z.content)
    # val questions have no captions: no record
    assert "medvidqa:3019" not in d


def test_real_leaked_cues_removed(real):
    items = _items(real)
    # "Right" at 155.634 s appears in 6 Bob & Brad videos; it is in chronological position only
    # in g-gNQPyxU4c, which keeps it
    owners = [
        i.source_id
        for i in real.items
        if any(c[0] == 155.634 and c[2] == "Right" for c in i.content)
    ]
    assert owners == ["medvidqa:g-gNQPyxU4c"]
    # "[Music]" 0.0-5.58 sits in chronological position in 7 videos: no owner, dropped everywhere
    assert not any(c[:2] == [0.0, 5.58] for i in real.items for c in i.content)
    # a value with a lost closing quote is repaired, not dropped
    assert (
        items["medvidqa:PA9hpOnvtCk"]
        .content[0][2]
        .startswith("If you think an adult or child is choking")
    )


def test_real_items_and_bounds(real):
    items = _items(real)
    assert [i.source_id for i in real.items] == sorted(items)
    for it in real.items:
        assert it.path is None and isinstance(it.content, list)
        assert it.meta["cues"] == len(it.content) > 0
        starts = [c[0] for c in it.content]
        assert starts == sorted(starts)
        assert all(0 <= c[0] <= c[1] <= it.meta["duration"] and c[2] for c in it.content)
        assert it.observed_at.tzinfo is not None
    vids = sorted({i.source_id.split(":", 1)[1] for i in real.items})
    for d in real.drafts:
        (g,) = d.gold
        it = items[g.source_id]
        assert it.holder == d.scope.holder
        assert check_region("video", g.region) is None
        assert 0 <= g.region["t_start"] <= g.region["t_end"] <= it.meta["duration"]
    assert [d.query_id for d in real.drafts] == sorted(d.query_id for d in real.drafts)
    assert len(vids) == 48


def test_real_holders_follow_hash_groups(real, corpus_root):
    import json

    vids = set()
    for name in ("val.json", "test.json"):
        vids |= {q["video_id"] for q in json.loads((corpus_root / "medvidqa" / name).read_text())}
    groups = hash_groups(vids, 5, "medvidqa-holders")
    for it in real.items:
        assert it.holder == f"medvidqa/viewer-{groups[it.source_id.split(':', 1)[1]]}"


def test_real_deterministic(real, corpus_root):
    again = medvidqa.load(corpus_root)
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in real.items]
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in real.drafts]
    assert again.coverage.as_dict() == real.coverage.as_dict()
    assert again.texts == real.texts


def test_tokeniser_agrees_with_literal_eval_on_real_rows(corpus_root):
    text = (
        (corpus_root / "medvidqa" / "captions" / "test_merged_clean.csv")
        .read_bytes()
        .decode("cp1252")
    )
    checked = 0
    for row in csv.DictReader(io.StringIO(text, newline="")):
        s = row["subtitle_timestamps"]
        try:
            ref = ast.literal_eval(s)
        except (ValueError, SyntaxError):
            continue
        cues, repaired = medvidqa.parse_cue_dict(s)
        assert repaired == 0 and len(cues) == len(ref)
        assert {(a, b): t for a, b, t in cues} == {
            tuple(ast.literal_eval(k)): " ".join(v.split()) for k, v in ref.items()
        }
        checked += 1
    assert checked == 126


# --------------------------------------------------------------------------- fixture quirks


def test_fixture_counts(fx):
    cov = fx.coverage
    assert cov.upstream_items == 10
    assert cov.covered == 3
    assert cov.not_covered == {
        "answer span outside video": 1,
        "broken captions": 2,
        "duplicate sample_id": 1,
        "no captions in mirror": 2,
        "unparseable question": 1,
    }
    assert cov.normalised == {
        "caption cue dropped: duplicated across videos": 3,
        "caption cue dropped: empty text": 2,
        "caption cue dropped: end before start": 1,
        "caption cue dropped: out of chronological order": 1,
        "caption cue dropped: repeated within video": 1,
        "caption cue dropped: starts after video end": 1,
        "caption cue end clipped to video_length": 1,
        "caption row ignored: video_id unknown and not recoverable": 1,
        "caption row video_id recovered by question match (spreadsheet error value)": 1,
        "caption rows of one video disagree: first row kept": 1,
        "caption text with broken quoting repaired": 1,
    }
    assert cov.balanced()


def test_fixture_cues(fx):
    items = _items(fx)
    assert sorted(items) == ["medvidqa:-dash00000", "medvidqa:vidAAAAAAA1", "medvidqa:vidBBBBBBB2"]
    # cp1252 text decoded, broken quote repaired, duplicate/empty/leaked/late cues dropped,
    # the last cue's end clipped to video_length = 100
    assert items["medvidqa:vidAAAAAAA1"].content == [
        [0.0, 4.0, "welcome to the clinic"],
        [4.0, 8.0, "today we treat a sprain \u2019cause it hurts"],
        [8.0, 12.0, "broken quote value"],
        [50.0, 60.0, "caf\u00e9 ice"],
        [98.0, 100.0, "thanks for watching, it's over"],
    ]
    # B owns "Right" (in chronological position there only); the line in chronological
    # position in two videos is dropped from both; the first caption row of a video wins
    assert items["medvidqa:vidBBBBBBB2"].content == [
        [10.0, 14.0, "hello there"],
        [90.0, 91.0, "Right"],
        [160.0, 170.0, "bye"],
    ]
    assert items["medvidqa:-dash00000"].content == [[1.0, 3.0, "intro"], [200.0, 210.0, "outro"]]
    assert fx.texts["medvidqa:vidBBBBBBB2"] == "hello there Right bye"


def test_fixture_records(fx):
    d = _drafts(fx)
    assert sorted(d) == ["medvidqa:1001", "medvidqa:1003", "medvidqa:1004"]
    assert d["medvidqa:1004"].gold[0].source_id == "medvidqa:-dash00000"
    assert d["medvidqa:1004"].gold[0].region == {"t_start": 20.0, "t_end": 30.0}
    assert d["medvidqa:1001"].origin.revision == "feedtest"
    assert d["medvidqa:1001"].gold[0].source_id == "medvidqa:vidAAAAAAA1"


def test_parse_cue_dict_quirks():
    cues, rep = medvidqa.parse_cue_dict(
        "{'(1.5, 2.0)': \"it's\", '(2.0, 3.25)':  'a  b', '(3.0, 4.0)': ' lost quote  , "
        "'(1e1, 11)': 'sci'}"
    )
    assert cues == [
        (1.5, 2.0, "it's"),
        (2.0, 3.25, "a b"),
        (3.0, 4.0, "lost quote"),
        (10.0, 11.0, "sci"),
    ]
    assert rep == 1
    assert medvidqa.parse_cue_dict("{}") == ([], 0)
    for bad in ("[1, 2]", "{'x': 'y'}", "", "{1: 2}"):
        with pytest.raises(ValueError):
            medvidqa.parse_cue_dict(bad)


def test_parse_cue_dict_never_evaluates_code():
    cues, rep = medvidqa.parse_cue_dict("{'(0.0, 1.0)': __import__('os').getcwd()}")
    assert rep == 1 and cues == [(0.0, 1.0, "__import__('os').getcwd()")]


def test_clean_cues_rules():
    raw = {
        "a": [
            (0.0, 1.0, "x"),
            (50.0, 51.0, "shared"),
            (1.0, 2.0, "y"),
            (2.0, 3.0, "y"),
            (9.0, 12.0, "end"),
            (12.0, 13.0, "late"),
        ],
        "b": [(40.0, 41.0, "b0"), (50.0, 51.0, "shared"), (60.0, 61.0, "b1")],
    }
    clean, dropped, clipped = medvidqa.clean_cues(raw, {"a": 10, "b": 100})
    assert clean["a"] == [[0.0, 1.0, "x"], [1.0, 2.0, "y"], [2.0, 3.0, "y"], [9.0, 10, "end"]]
    assert clean["b"] == [[40.0, 41.0, "b0"], [50.0, 51.0, "shared"], [60.0, 61.0, "b1"]]
    assert dropped == {"duplicated across videos": 1, "starts after video end": 1}
    assert clipped == 1


def _copy(fixtures, tmp_path):
    dst = tmp_path / "root"
    shutil.copytree(fixtures / "medvidqa", dst)
    return dst


def test_missing_annotation_raises(fixtures, tmp_path):
    root = _copy(fixtures, tmp_path)
    (root / "medvidqa" / "val.json").unlink()
    with pytest.raises(InputError) as e:
        medvidqa.load(root)
    assert e.value.rule == "MISSING_FILE"


def test_missing_captions_file_counts_everything(fixtures, tmp_path):
    root = _copy(fixtures, tmp_path)
    (root / "medvidqa" / "captions" / "test_merged_clean.csv").unlink()
    res = medvidqa.load(root)
    assert res.items == [] and res.drafts == []
    assert res.coverage.not_covered == {
        "no captions in mirror": 8,
        "duplicate sample_id": 1,
        "unparseable question": 1,
    }
    assert res.coverage.balanced()
    assert any("absent: no video has captions" in n for n in res.coverage.notes)


def test_undefined_cp1252_byte_is_replaced_and_counted(fixtures, tmp_path):
    root = _copy(fixtures, tmp_path)
    p = root / "medvidqa" / "captions" / "test_merged_clean.csv"
    p.write_bytes(p.read_bytes().replace(b"'outro'", b"'out\x81ro'"))
    res = medvidqa.load(root)
    assert res.coverage.normalised["caption file bytes undefined in cp1252 replaced"] == 1
    dash = {i.source_id: i for i in res.items}["medvidqa:-dash00000"]
    assert dash.content[-1] == [200.0, 210.0, "out\ufffdro"]


def test_registry_matches_module():
    assert (SPEC.folder, SPEC.modality, SPEC.scenario) == (
        medvidqa.FOLDER,
        medvidqa.MODALITY,
        medvidqa.SCENARIO,
    )
    assert SPEC.license == medvidqa.LICENSE
