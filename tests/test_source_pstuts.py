import json
import shutil
from collections import Counter, defaultdict

import pytest

from membench.core.errors import InputError
from membench.modalities import check_region
from membench.sets.build import split_holders
from membench.sources import BY_KEY, pstuts

REAL_REVISION = "66ef1e06c11f5b9faf92aeacde56ee3b117ca22c"


@pytest.fixture(scope="module")
def real(corpus_root):
    return pstuts.load(corpus_root)


@pytest.fixture(scope="module")
def fx(fixtures):
    return pstuts.load(fixtures / "pstuts")


def _drafts(res):
    return {d.query_id: d for d in res.drafts}


def _items(res):
    return {i.source_id: i for i in res.items}


def _broken(tmp_path, fixtures, name, edit):
    """A copy of the fixture folder with ``edit`` applied to split file ``name``'s JSON."""
    root = tmp_path / "corpus"
    shutil.copytree(fixtures / "pstuts" / "pstuts-vqa", root / "pstuts-vqa")
    p = root / "pstuts-vqa" / name
    data = json.loads(p.read_text(encoding="utf-8"))
    edit(data)
    p.write_text(json.dumps(data), encoding="utf-8")
    return root


# --------------------------------------------------------------------------- fixture


def test_fixture_coverage_counts_every_question(fx):
    cov = fx.coverage
    assert cov.upstream_items == 20 and cov.covered == 9 == len(fx.drafts)
    assert cov.not_covered == {
        "a paraphrase of a kept question at the same sentence": 1,
        "its near-twin is asked of another video": 3,
        "empty question": 1,
        "gold sentence begin or end missing": 1,
        "gold sentence ends after the video": 1,
        "gold sentence ends before it begins": 1,
        "gold sentence of no length": 1,
        "sent_id not in the video's transcript": 1,
        "verbatim repeat of an earlier question of its sentence": 1,
    }
    assert cov.normalised == {
        "transcript sentence dropped: begin or end missing": 1,
        "transcript sentence dropped: ends after the video": 1,
        "transcript sentence dropped: ends before it begins": 1,
    }
    assert cov.balanced()


def test_fixture_items_are_copies_on_each_shelf(fx):
    items = _items(fx)
    # 4 videos, one owner per upstream file -> 3 viewers, each shelf min(30, 4) = 4 videos
    assert len(items) == 12
    assert Counter(i.holder for i in fx.items) == {f"pstuts/viewer-{k}": 4 for k in range(3)}
    a, b = items["pstuts:101@viewer-0"], items["pstuts:101@viewer-2"]
    assert a.content == b.content and a.holder != b.holder
    # the null-begin and inverted sentences are gone; whitespace is normalised; time order
    assert a.content == [
        [0.5, 3.0, "Welcome to layers."],
        [3.2, 8.4, "Click the new layer button at the bottom of the Layers panel."],
        [20.0, 20.0, "Done."],
        [21.0, 25.5, "Press Command+T to transform it."],
    ]
    assert a.meta == {
        "duration": 70.0,
        "cues": 4,
        "url": "https://example.org/101.mp4",
        "title": "Layers basics",
    }
    assert items["pstuts:301@viewer-1"].content == [[1.0, 4.0, "Save your file."]]
    assert set(fx.texts) == set(items)
    assert len({i.observed_at for i in fx.items}) == 12


def test_fixture_records_go_to_the_owner_with_upstream_spans(fx):
    d = _drafts(fx)
    assert sorted(d) == [
        "pstuts:101:0",
        "pstuts:101:1",
        "pstuts:101:7",
        "pstuts:101:8",
        "pstuts:101:9",
        "pstuts:102:1",
        "pstuts:201:0",
        "pstuts:201:3",
        "pstuts:301:0",
    ]
    r = d["pstuts:101:7"]
    assert r.question == "How to select free transform tool?" and r.answer == "Command+T"
    assert r.answer_format == "str" and not r.unanswerable and r.as_of is None
    assert r.scope.holder == "pstuts/viewer-0"
    assert [(g.source_id, g.region) for g in r.gold] == [
        ("pstuts:101@viewer-0", {"t_start": 21.0, "t_end": 25.5})
    ]
    assert r.origin.item == "train.json#101/qa[7]" and r.origin.notes == "sent_id=5"
    assert r.origin.revision == "0123456789abcdef0123456789abcdef01234567"
    assert r.origin.dataset == "mbudisic/pstuts-rag" and r.origin.license == "CC BY-NC 4.0"
    # each upstream file has its own owner; every question of a video has the same holder
    assert {q.scope.holder for k, q in d.items() if k.startswith("pstuts:10")} == {
        "pstuts/viewer-0"
    }
    assert d["pstuts:201:0"].scope.holder == "pstuts/viewer-1"
    assert d["pstuts:301:0"].scope.holder == "pstuts/viewer-2"
    items = _items(fx)
    for r in fx.drafts:
        for g in [*r.gold, *r.judgments[pstuts.SAME_QUESTION]]:
            assert items[g.source_id].holder == r.scope.holder
            assert check_region("video", g.region) is None


def test_fixture_same_question_spans_on_the_holders_shelf(fx):
    d = _drafts(fx)

    def same(qid):
        return [(g.source_id, g.region["t_start"]) for g in d[qid].judgments["same_question"]]

    # "How to create new layer?" / "how to create new layer" with one answer, in three videos:
    # kept at 101 only, its set still holds every span upstream asked it at ("Creating new
    # layers?" at 301 is another question)
    assert same("pstuts:101:0") == [
        ("pstuts:101@viewer-0", 3.2),
        ("pstuts:102@viewer-0", 1.0),
        ("pstuts:201@viewer-0", 2.5),
    ]
    # a paraphrase is another question: its set is its gold alone
    assert same("pstuts:201:3") == [("pstuts:201@viewer-1", 2.5)]
    assert same("pstuts:101:7") == [("pstuts:101@viewer-0", 21.0)]


def test_twin_key_is_the_stems_of_the_content_words():
    key = pstuts.twin_key
    assert key("How to create new layer?") == "creat layer new"
    assert key("how do i create a new layer") == key("Creating new layers?") == "creat layer new"
    assert key("New layer: how to create it?") == "creat layer new"  # a set: no order
    assert key("How to delete a layer?") == "delet layer"
    assert key("What was done?") == key("How do you do this?") == ""
    assert key("Press Command+T") == "command press t"
    assert not {"how", "the", "you", "what", "is"} - pstuts.TWIN_STOPWORDS


def test_fixture_near_twins_are_kept_at_one_video_then_three_questions_per_sentence(fx):
    """ "creat layer new" is asked at 101, 102, 201 and 301 (as "Creating new layers?"); 101
    comes first in hash order, so the other three are not covered. 101's sentence 1 then has
    two questions and keeps both; 201's sentence 1 keeps its paraphrase (its twin is gone
    first). 101's sentence 5 has four distinct questions: the first three in hash order of
    query_id are kept, 101:10 is a paraphrase not covered."""
    from membench.core.hashing import hash_order

    assert pstuts.PER_SENTENCE == 3
    assert hash_order(["101", "102", "201", "301"], "pstuts-twin:creat layer new")[0] == "101"
    assert hash_order(
        ["pstuts:101:7", "pstuts:101:8", "pstuts:101:9", "pstuts:101:10"], "pstuts-paraphrase"
    ) == ["pstuts:101:7", "pstuts:101:9", "pstuts:101:8", "pstuts:101:10"]
    d = _drafts(fx)
    assert {"pstuts:101:0", "pstuts:101:1"} <= set(d)
    assert not {"pstuts:102:0", "pstuts:201:1", "pstuts:301:2", "pstuts:101:10"} & set(d)
    assert d["pstuts:201:3"].question == "How do I add one more layer here?"
    assert Counter((q.split(":")[1], d[q].origin.notes) for q in d) == {
        ("101", "sent_id=1"): 2,
        ("101", "sent_id=5"): 3,
        ("102", "sent_id=1"): 1,
        ("201", "sent_id=0"): 1,
        ("201", "sent_id=1"): 1,
        ("301", "sent_id=0"): 1,
    }


def test_pstuts_is_asked_derivable_and_clustered_by_region(fx):
    """The build asks only questions a derivation could take, and a transactive move takes a
    sentence's questions together, never a whole video's."""
    from membench.sets import derive

    assert "pstuts" in derive.ASK_DERIVABLE and "pstuts" in derive.CLUSTER_BY_REGION
    d = _drafts(fx)
    keys = {
        q: derive.cluster_key(d[q])
        for q in ("pstuts:101:0", "pstuts:101:1", "pstuts:101:7", "pstuts:101:9")
    }
    assert keys["pstuts:101:0"] == keys["pstuts:101:1"] != keys["pstuts:101:7"]
    assert keys["pstuts:101:7"] == keys["pstuts:101:9"]


def test_shelves_pool_owners_by_file_and_fill_to_the_shelf_size():
    files = {
        "train.json": [f"t{i}" for i in range(30)],
        "dev.json": [f"d{i}" for i in range(5)],
        "test.json": [f"s{i}" for i in range(5)],
    }
    owner, shelf = pstuts.shelves(files, shelf_size=12, per_owner=9)
    assert len(pstuts.shelves(files, shelf_size=12)[1]) == 17 + 3 + 3  # round(30 / 1.8) ...
    assert len(shelf) == 3 + 1 + 1  # round(30 / 9) train owners
    assert sorted(owner) == sorted(v for vs in files.values() for v in vs)
    for name, vids in files.items():  # no viewer owns two files' videos
        ks = {owner[v] for v in vids}
        assert all(owner[v] in ks for v in vids)
        assert not ks & {owner[v] for n, vs in files.items() if n != name for v in vs}
    for k, s in enumerate(shelf):
        assert len(s) == 12 == len(set(s)) and s == sorted(s)
        assert {v for v in owner if owner[v] == k} <= set(s)
    assert {owner[v] for v in files["dev.json"]} == {3}
    assert pstuts.shelves(files, shelf_size=12, per_owner=9) == (owner, shelf)
    # a shelf never exceeds the videos there are
    _, small = pstuts.shelves({"train.json": ["a", "b"]}, shelf_size=50)
    assert small == [["a", "b"]]


def test_located_error_names_file_position_and_field(tmp_path, fixtures):
    def edit(data):
        data[0]["qa"][1]["a"] = 5

    with pytest.raises(InputError) as e:
        pstuts.load(_broken(tmp_path, fixtures, "train.json", edit))
    msg = str(e.value)
    assert "pstuts-vqa/train.json" in msg and "field [0].qa[1].a:" in msg
    assert "\n" not in msg


def test_located_error_on_a_sentence_time_and_a_length(tmp_path, fixtures):
    def time(data):
        data[0]["transcripts"][1]["end"] = "8.4"

    with pytest.raises(
        InputError,
        match=r"test\.json: SCHEMA: field \[0\]\.transcripts\[1\]"
        r"\.end: not a number",
    ):
        pstuts.load(_broken(tmp_path / "a", fixtures, "test.json", time))

    def length(data):
        data[0]["length"] = "5 minutes"

    with pytest.raises(InputError, match=r"dev\.json: SCHEMA: field \[0\]\.length"):
        pstuts.load(_broken(tmp_path / "b", fixtures, "dev.json", length))


def test_a_video_in_two_split_files_is_refused(tmp_path, fixtures):
    def edit(data):
        data[0]["video_id"] = 101

    with pytest.raises(
        InputError,
        match=r"test\.json: SCHEMA: field \[0\]\.video_id: video 101 "
        r"is also train\.json\[0\]",
    ):
        pstuts.load(_broken(tmp_path, fixtures, "test.json", edit))


def test_missing_split_file_is_named(tmp_path, fixtures):
    root = tmp_path / "corpus"
    shutil.copytree(fixtures / "pstuts" / "pstuts-vqa", root / "pstuts-vqa")
    (root / "pstuts-vqa" / "dev.json").unlink()
    with pytest.raises(InputError, match=r"dev\.json: MISSING_FILE"):
        pstuts.load(root)


def test_wired_into_the_sets(fixtures, fx):
    assert BY_KEY["pstuts"].adapter == "pstuts:load"
    via = BY_KEY["pstuts"].load(fixtures / "pstuts")
    assert via.coverage.as_dict() == fx.coverage.as_dict() and via.drafts == fx.drafts


# --------------------------------------------------------------------------- real corpus


def test_real_counts(real):
    cov = real.coverage
    assert cov.upstream_items == 17768
    assert cov.covered == 4336 == len(real.drafts)
    assert cov.not_covered == {
        "gold sentence ends before it begins": 6,
        "verbatim repeat of an earlier question of its sentence": 18,
        "its near-twin is asked of another video": 5408,
        "a paraphrase of a kept question at the same sentence": 8000,
    }
    assert cov.normalised == {
        "transcript sentence dropped: begin or end missing": 13,
        "transcript sentence dropped: ends before it begins": 2,
    }
    assert cov.balanced()
    # 42 viewers (30 own the 54 train videos, 6 the 11 dev, 6 the 11 test videos), 30 items each
    assert pstuts.SHELF_SIZE == 30
    assert len(real.items) == 1260
    assert Counter(i.holder for i in real.items) == {f"pstuts/viewer-{k}": 30 for k in range(42)}
    owned = Counter(d.scope.holder for d in real.drafts)
    assert len(owned) == 42 and (min(owned.values()), max(owned.values())) == (57, 166)
    per_video = Counter(d.query_id.split(":")[1] for d in real.drafts)
    assert (min(per_video.values()), max(per_video.values())) == (19, 130)
    assert len({i.source_id.split(":")[1].split("@")[0] for i in real.items}) == 76
    assert {d.origin.revision for d in real.drafts} == {REAL_REVISION}
    files = defaultdict(set)
    for d in real.drafts:
        files[d.origin.item.split("#")[0]].add(d.scope.holder)
    assert {f: len(h) for f, h in files.items()} == {
        "train.json": 30,
        "dev.json": 6,
        "test.json": 6,
    }


def test_real_gold_region_matches_the_upstream_sentence(real, corpus_root):
    upstream = json.loads((corpus_root / "pstuts-vqa" / "dev.json").read_text(encoding="utf-8"))
    video = next(v for v in upstream if v["video_id"] == 4103)
    qa = video["qa"][0]
    sent = next(s for s in video["transcripts"] if s["sent_id"] == qa["sent_id"])
    r = _drafts(real)["pstuts:4103:0"]
    assert (
        (r.question, r.answer)
        == (qa["q"], qa["a"])
        == ("how to select free transform tool?", "Command+T")
    )
    (g,) = r.gold
    assert (
        g.region
        == {"t_start": sent["begin"], "t_end": sent["end"]}
        == {"t_start": 61.45, "t_end": 67.47}
    )
    item = _items(real)[g.source_id]
    assert item.holder == r.scope.holder and g.source_id.startswith("pstuts:4103@viewer-")
    cue = next(c for c in item.content if c[0] == 61.45)
    assert "Command + T on the Mac" in cue[2]
    for d in real.drafts:
        assert check_region("video", d.gold[0].region) is None


def test_real_twins_never_cross_the_build_split(real):
    """Under the build's holder split, every video's questions (and so every sentence's
    near-identical questions) sit in one split."""
    split = split_holders({"pstuts": sorted({i.holder for i in real.items})})
    by_video = defaultdict(set)
    for d in real.drafts:
        by_video[d.query_id.split(":")[1]].add(split[d.scope.holder])
    assert len(by_video) == 76 and all(len(s) == 1 for s in by_video.values())
    assert set(split.values()) == {"dev", "test"}


def test_real_every_video_is_missing_from_many_viewers_of_each_split(real):
    """Shelves of 30 of 76 videos: each video sits on 9 to 25 of the 42 shelves, so in each
    split at least 6 of the 21 viewers lack it (a transactive move has somewhere to go)."""
    split = split_holders({"pstuts": sorted({i.holder for i in real.items})})
    on = defaultdict(set)
    for i in real.items:
        on[i.source_id.split(":")[1].split("@")[0]].add(i.holder)
    copies = Counter(len(h) for h in on.values())
    assert (min(copies), max(copies)) == (9, 25)
    lacking = {
        (v, part): sum(1 for h, p in split.items() if p == part and h not in hs)
        for v, hs in on.items()
        for part in ("dev", "test")
    }
    assert Counter(split.values()) == {"dev": 21, "test": 21}
    assert min(lacking.values()) == 6


def test_real_no_near_twin_across_videos_and_three_questions_per_sentence(real, corpus_root):
    """Checked from upstream's files, not the adapter's helpers: the records' questions are
    stemmed here with snowballstemmer and the stop list as written in the module."""
    import re

    import snowballstemmer

    stemmer = snowballstemmer.stemmer("english")

    def key(q):
        return frozenset(
            stemmer.stemWord(w)
            for w in re.findall(r"[0-9a-z]+", q.lower())
            if w not in pstuts.TWIN_STOPWORDS
        )

    videos = defaultdict(set)
    sentences = Counter()
    for d in real.drafts:
        video = d.query_id.split(":")[1]
        videos[key(d.question)].add(video)
        sentences[(video, d.origin.notes)] += 1
    assert all(len(v) == 1 for v in videos.values())
    assert Counter(sentences.values()) == {3: 1384, 2: 69, 1: 46}
    # a sentence with a usable span keeps fewer than three questions only when it has fewer
    # distinct non-empty questions whose key is asked at no other video (such a question
    # survives the twin step; then the sentence keeps three of what it has)
    upstream = [
        v
        for name in ("train.json", "dev.json", "test.json")
        for v in json.loads((corpus_root / "pstuts-vqa" / name).read_text("utf-8"))
    ]
    asked_at = defaultdict(set)
    for v in upstream:
        for q in v["qa"]:
            asked_at[key(q["q"])].add(v["video_id"])
    short = 0
    for v in upstream:
        spans = {s["sent_id"]: s for s in v["transcripts"]}
        for sid in {q["sent_id"] for q in v["qa"]}:
            s = spans.get(sid)
            if (
                s is None
                or s["begin"] is None
                or s["end"] is None
                or not 0 <= s["begin"] < s["end"] <= pstuts.parse_length(v["length"])
            ):
                continue
            kept = sentences[(str(v["video_id"]), f"sent_id={sid}")]
            sole = {
                (q["q"], q["a"])
                for q in v["qa"]
                if q["sent_id"] == sid and q["q"].strip() and len(asked_at[key(q["q"])]) == 1
            }
            assert kept >= min(3, len(sole)), (v["video_id"], sid)
            short += kept < 3
    assert short > 0
