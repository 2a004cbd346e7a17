import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from membench.core.errors import InputError
from membench.modalities import check_region
from membench.sources import finchart
from membench.sources.base import hash_groups

REV = "07674bba114b237ec708d6ad9381dc443aa1cdae"


@pytest.fixture(scope="module")
def res(corpus_root):
    return finchart.load(corpus_root)


@pytest.fixture(scope="module")
def upstream(corpus_root):
    return json.loads((corpus_root / "finchart-bench" / "QA_data.json").read_text())


def by_qid(res):
    return {d.query_id: d for d in res.drafts}


def by_sid(res):
    return {i.source_id: i for i in res.items}


# --------------------------------------------------------------------------- real corpus


def test_counts(res):
    cov = res.coverage
    assert cov.upstream_items == 2285
    assert cov.covered == 639
    assert cov.not_covered == {"image not in mirror": 1646}
    assert cov.normalised == {
        "_qN suffix stripped from image name": 2285,
        "byte-identical duplicate image merged": 1,
    }
    assert cov.balanced()
    assert len(res.drafts) == 639
    assert len(res.items) == 319
    # each chart's text is the upstream questions over it (for the anchor guard only)
    asked = {}
    for d in sorted(res.drafts, key=lambda d: int(d.query_id.split(":")[1])):  # row order
        asked.setdefault(d.gold[0].source_id, []).append(d.question)
    assert res.texts == {k: "\n".join(v) for k, v in asked.items()}
    assert len(res.texts) <= len(res.items)
    assert Counter(d.answer_format for d in res.drafts) == {"float": 338, "int": 301}
    holders = Counter(i.holder for i in res.items)
    assert sorted(holders.values()) == [53] * 5 + [54]
    assert set(holders) == {f"finchart/roll-{k}" for k in range(6)}


def test_deterministic(corpus_root, res):
    again = finchart.load(corpus_root)
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in res.items]
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in res.drafts]
    assert again.coverage.as_dict() == res.coverage.as_dict()


def test_sorted_unique_and_holders(res):
    sids = [i.source_id for i in res.items]
    qids = [d.query_id for d in res.drafts]
    assert sids == sorted(sids) and len(set(sids)) == len(sids)
    assert qids == sorted(qids) and len(set(qids)) == len(qids)
    groups = hash_groups(sids, 6, "finchart-holders")
    assert all(i.holder == f"finchart/roll-{groups[i.source_id]}" for i in res.items)


def test_gold_in_bounds(corpus_root, res, upstream):
    items = by_sid(res)
    for d in res.drafts:
        row = int(d.query_id.split(":")[1])
        assert d.origin.item == f"QA_data.json#{row}"
        assert d.question == upstream[row]["question"]
        assert d.answer == upstream[row]["answer"]
        assert type(d.answer).__name__ == d.answer_format
        assert d.origin.revision == REV and d.origin.dataset == "Tizzzzy/FinChart-Bench"
        [g] = d.gold
        assert g.region == {} and check_region("image", g.region) is None
        assert g.source_id in items and items[g.source_id].holder == d.scope.holder
        assert d.scope.scenario == "chart-image-qa"
    for it in res.items:
        assert (corpus_root / it.path).is_file()
        assert it.meta["width"] > 0 and it.meta["height"] > 0
        assert it.observed_at.tzinfo is not None


def test_every_missed_row_really_lacks_its_image(corpus_root, res, upstream):
    covered = {int(d.query_id.split(":")[1]) for d in res.drafts}
    img = corpus_root / "finchart-bench" / "QA_images"
    for i, r in enumerate(upstream):
        present = (img / finchart.file_name(r["image"])).is_file()
        assert present == (i in covered)


def test_hand_checked(corpus_root, res):
    q = by_qid(res)
    d = q["finchart:0"]
    assert d.question == "What is the difference in gross profit ($M) between 1Q11 and 1Q15?"
    assert d.answer == 140 and d.answer_format == "int"
    assert [g.model_dump() for g in d.gold] == [
        {"source_id": "finchart:1243210261_13_crop_0.jpg", "region": {}, "grade": None}
    ]
    d = q["finchart:1"]
    assert d.answer == 2.6 and d.answer_format == "float"
    assert d.gold[0].source_id == "finchart:1243210261_13_crop_0.jpg"
    assert "finchart:2284" not in q  # its image 1785690116_14_crop_0.jpg is past the 320 mirrored
    it = by_sid(res)["finchart:1243210261_13_crop_0.jpg"]
    p = corpus_root / "finchart-bench" / "QA_images" / "1243210261_13_crop_0.jpg"
    assert it.path == "finchart-bench/QA_images/1243210261_13_crop_0.jpg"
    with Image.open(p) as im:
        assert (it.meta["width"], it.meta["height"]) == im.size
    assert it.meta["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()


def test_duplicate_image_merged(res):
    items = by_sid(res)
    canon = "finchart:1268301263_26_crop_0.jpg"
    assert items[canon].meta["aliases"] == ["1268301679_26_crop_0.jpg"]
    assert "finchart:1268301679_26_crop_0.jpg" not in items
    q = by_qid(res)
    for row in (301, 302, 307, 308):
        assert q[f"finchart:{row}"].gold[0].source_id == canon
    assert json.loads(q["finchart:307"].origin.notes) == {
        "upstream_image": "QA_images/1268301679_26_crop_0.jpg"
    }
    assert q["finchart:301"].origin.notes is None


def test_file_name():
    assert finchart.file_name("1243210261_13_crop_0_q1.jpg") == "1243210261_13_crop_0.jpg"
    assert finchart.file_name("a_q12.png") == "a.png"
    assert finchart.file_name("a_q1_b.png") == "a_q1_b.png"  # only right before the extension
    assert finchart.file_name("plain.jpg") == "plain.jpg"


# --------------------------------------------------------------------------- fixtures


def _jpg(p: Path, size, color):
    p.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(p, "JPEG")


def test_fixture_quirks(tmp_path):
    folder = tmp_path / "finchart-bench"
    img = folder / "QA_images"
    _jpg(img / "b_1.jpg", (6, 4), (10, 10, 10))
    (img / "a_1.jpg").write_bytes((img / "b_1.jpg").read_bytes())  # duplicate of b_1
    (img / "c_1.jpg").write_bytes(b"broken")
    rows = [
        {"image": "b_1_q1.jpg", "question": "Q0?", "reasoning": "r", "answer": 1},
        {"image": "b_1_q2.jpg", "question": "Q1?", "reasoning": "r", "answer": ["x", "y"]},
        {"image": "a_1_q1.jpg", "question": "Q2?", "reasoning": "r", "answer": "text"},
        {"image": "a_1_q2.jpg", "question": "Q3?", "reasoning": "r", "answer": True},
        {"image": "z_1_q1.jpg", "question": "Q4?", "reasoning": "r", "answer": 1.5},
        {"image": "c_1_q1.jpg", "question": "Q5?", "reasoning": "r", "answer": 1},
        {"question": "no image"},
        {"image": "a_1.jpg", "question": "Q7?", "reasoning": "r", "answer": 3},
    ]
    (folder / "QA_data.json").write_text(json.dumps(rows))
    r = finchart.load(tmp_path)
    cov = r.coverage
    assert cov.balanced() and cov.upstream_items == 8 and cov.covered == 4
    assert cov.not_covered == {
        "unsupported answer type": 1,
        "image not in mirror": 1,
        "image unreadable": 1,
        "malformed record": 1,
    }
    assert cov.normalised == {
        "_qN suffix stripped from image name": 5,
        "byte-identical duplicate image merged": 1,
    }
    assert [i.source_id for i in r.items] == ["finchart:a_1.jpg"]
    assert r.items[0].meta["aliases"] == ["b_1.jpg"]
    q = by_qid(r)
    assert q["finchart:1"].answer_format == "list" and q["finchart:1"].answer == ["x", "y"]
    assert q["finchart:2"].answer_format == "str"
    assert q["finchart:7"].gold[0].source_id == "finchart:a_1.jpg"
    assert q["finchart:0"].origin.revision == "unknown"


def test_missing_annotation_raises(tmp_path):
    with pytest.raises(InputError) as e:
        finchart.load(tmp_path)
    assert e.value.rule == "MISSING_FILE"
