import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from membench.core.errors import InputError
from membench.modalities import check_region
from membench.sources import tabmwp
from membench.sources.base import hash_groups


@pytest.fixture(scope="module")
def res(corpus_root):
    return tabmwp.load(corpus_root)


@pytest.fixture(scope="module")
def upstream(corpus_root):
    return json.loads((corpus_root / "tabmwp" / "problems_test1k.json").read_text())


def by_qid(res):
    return {d.query_id: d for d in res.drafts}


def by_sid(res):
    return {i.source_id: i for i in res.items}


# --------------------------------------------------------------------------- real corpus


def test_counts(res):
    cov = res.coverage
    assert cov.upstream_items == 1000
    assert cov.covered == 1000
    assert cov.not_covered == {}
    assert cov.normalised == {"byte-identical duplicate image merged": 4}
    assert cov.balanced()
    assert len(res.drafts) == 1000
    assert len(res.items) == 996
    assert len(res.texts) == 996
    assert Counter(d.answer_format for d in res.drafts) == {"int": 591, "float": 160, "str": 249}
    assert sum(d.unanswerable for d in res.drafts) == 0
    holders = Counter(i.holder for i in res.items)
    assert len(holders) == 10
    assert sorted(holders.values()) == [99] * 4 + [100] * 6
    assert all(h.startswith("tabmwp/roll-") and len(h) == len("tabmwp/roll-00") for h in holders)


def test_deterministic(corpus_root, res):
    again = tabmwp.load(corpus_root)
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in res.items]
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in res.drafts]
    assert again.coverage.as_dict() == res.coverage.as_dict()
    assert again.texts == res.texts


def test_sorted_and_unique(res):
    sids = [i.source_id for i in res.items]
    qids = [d.query_id for d in res.drafts]
    assert sids == sorted(sids) and len(set(sids)) == len(sids)
    assert qids == sorted(qids) and len(set(qids)) == len(qids)


def test_gold_points_at_items_in_bounds(corpus_root, res):
    items = by_sid(res)
    for d in res.drafts:
        assert d.modality == "image" and not d.unanswerable and d.answer is not None
        assert len(d.gold) == 1
        g = d.gold[0]
        assert g.source_id in items
        assert g.region == {} and check_region("image", g.region) is None
        assert items[g.source_id].holder == d.scope.holder
        assert d.scope.scenario == "table-image-qa"
        assert d.origin.revision == "7cf61b1bec07222fc24b4f5a1410911f77c2d2c9"
        assert d.origin.dataset == "lupantech/PromptPG"
        assert d.as_of is None and d.split is None
    for it in res.items:
        p = corpus_root / it.path
        assert p.is_file() and it.content is None
        assert it.meta["width"] > 0 and it.meta["height"] > 0
        assert it.observed_at.tzinfo is not None


def test_item_meta_matches_file(corpus_root, res):
    it = by_sid(res)["tabmwp:16.png"]
    p = corpus_root / "tabmwp" / "tables" / "16.png"
    assert it.path == "tabmwp/tables/16.png"
    with Image.open(p) as im:
        assert (it.meta["width"], it.meta["height"]) == im.size
    assert it.meta["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()


def test_holders_are_hash_rolls(res):
    groups = hash_groups([i.source_id for i in res.items], 10, "tabmwp-holders")
    for it in res.items:
        assert it.holder == f"tabmwp/roll-{groups[it.source_id]:02d}"


def test_questions_verbatim(res, upstream):
    for d in res.drafts:
        pid = d.query_id.split(":", 1)[1]
        assert d.question == upstream[pid]["question"]
        assert d.answer == upstream[pid]["answer"]
        assert d.origin.item == f"problems_test1k.json#{pid}"


def test_hand_checked_free_text(res):
    d = by_qid(res)["tabmwp:16"]
    assert d.question == (
        "Some friends discussed the sizes of their coin collections. "
        "What is the mean of the numbers?"
    )
    assert d.answer == "84" and d.answer_format == "int"
    assert [g.model_dump() for g in d.gold] == [
        {"source_id": "tabmwp:16.png", "region": {}, "grade": None}
    ]
    assert d.origin.notes is None
    assert res.texts["tabmwp:16.png"].startswith("Coin collections\nName | Number of coins\n")


def test_hand_checked_choices_and_unit(res):
    d = by_qid(res)["tabmwp:54"]
    assert d.question.startswith("Look at the table. Then answer the question. At a price of $155")
    assert "shortage" not in d.question.split("?")[-1]  # choices not appended to the question
    assert d.answer == "shortage" and d.answer_format == "str"
    assert json.loads(d.origin.notes) == {"choices": ["shortage", "surplus"]}
    d = by_qid(res)["tabmwp:82"]
    assert d.answer == "3" and d.answer_format == "int"
    assert json.loads(d.origin.notes) == {"unit": "minutes per day"}


def test_duplicates_merged_onto_smallest_numeric_pid(res):
    items = by_sid(res)
    assert items["tabmwp:4546.png"].meta["aliases"] == ["6271.png", "35382.png"]
    assert items["tabmwp:20947.png"].meta["aliases"] == ["36559.png"]
    assert items["tabmwp:7602.png"].meta["aliases"] == ["17409.png"]
    for alias in ("6271", "35382", "36559", "17409"):
        assert f"tabmwp:{alias}.png" not in items
    q = by_qid(res)
    for pid, canon in [
        ("35382", "4546"),
        ("6271", "4546"),
        ("4546", "4546"),
        ("36559", "20947"),
        ("17409", "7602"),
    ]:
        assert q[f"tabmwp:{pid}"].gold[0].source_id == f"tabmwp:{canon}.png"
    assert json.loads(q["tabmwp:35382"].origin.notes)["upstream_image"] == "tables/35382.png"
    assert "upstream_image" not in json.loads(q["tabmwp:4546"].origin.notes or "{}")
    # no duplicate hashes survive
    hashes = [i.meta["sha256"] for i in res.items]
    assert len(set(hashes)) == len(hashes)


# --------------------------------------------------------------------------- fixtures


def _png(p: Path, size, color):
    p.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(p, "PNG")


def _problem(q, ans, ans_type, choices=None, **kw):
    return {
        "question": q,
        "choices": choices,
        "answer": ans,
        "unit": None,
        "table_title": kw.get("title"),
        "table": kw.get("table", "A | B\n1 | 2"),
        "table_for_pd": {},
        "ques_type": "free_text",
        "ans_type": ans_type,
    }


def test_fixture_quirks(tmp_path):
    root = tmp_path
    folder = root / "tabmwp"
    tables = folder / "tables"
    problems = {
        "10": _problem("Q ten?", "1", "integer_number"),
        "9": _problem("Q nine?", "1.5", "decimal_number"),  # same image as 10
        "11": _problem("Q eleven?", "x", "mystery_type"),  # unknown ans_type
        "12": _problem("Q twelve?", "2", "integer_number"),  # image missing
        "13": _problem("Q thirteen?", "yes", "boolean_text", ["yes", "no"]),  # unreadable
        "14": "not a problem",  # malformed
        "15": _problem("   ", "1", "integer_number"),  # empty question
    }
    folder.mkdir()
    (folder / "problems_test1k.json").write_text(json.dumps(problems))
    (folder / "PROVENANCE.jsonl").write_text(
        json.dumps({"path": "problems_test1k.json", "commit": "abc123"}) + "\n"
    )
    _png(tables / "10.png", (4, 3), (1, 2, 3))
    _png(tables / "9.png", (4, 3), (1, 2, 3))
    _png(tables / "14.png", (5, 3), (9, 9, 9))
    (tables / "13.png").write_bytes(b"garbage")
    r = tabmwp.load(root)
    cov = r.coverage
    assert cov.balanced()
    assert cov.upstream_items == 7 and cov.covered == 2
    assert cov.not_covered == {
        "unknown ans_type": 1,
        "image not in mirror": 1,
        "image unreadable": 1,
        "malformed problem": 1,
        "empty question": 1,
    }
    assert cov.normalised == {"byte-identical duplicate image merged": 1}
    items = by_sid(r)
    # numeric order: 9 < 10 even though "10" < "9" as strings
    assert set(items) == {"tabmwp:9.png", "tabmwp:14.png"}
    assert items["tabmwp:9.png"].meta["aliases"] == ["10.png"]
    q = by_qid(r)
    assert q["tabmwp:10"].gold[0].source_id == "tabmwp:9.png"
    assert q["tabmwp:9"].answer_format == "float" and q["tabmwp:9"].answer == "1.5"
    assert q["tabmwp:10"].origin.revision == "abc123"


def test_missing_annotation_raises(tmp_path):
    (tmp_path / "tabmwp").mkdir()
    with pytest.raises(InputError) as e:
        tabmwp.load(tmp_path)
    assert e.value.rule == "MISSING_FILE"
