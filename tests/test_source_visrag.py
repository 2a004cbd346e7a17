"""VisRAG is not in the corpus mirror: the adapter is tested on a fixture in the upstream
layout (tests/fixtures/visrag/visrag/: two test sets, BEIR text forms, tiny images)."""

import json
import shutil
from collections import Counter

import pytest

from membench.core.errors import InputError
from membench.modalities import check_region
from membench.sources import visrag

CHARTQA_REV = "af2dac8037b0449d4ff19debc257944ed7d2be1e"


@pytest.fixture(scope="module")
def root(fixtures):
    return fixtures / "visrag"


@pytest.fixture(scope="module")
def res(root):
    return visrag.load(root)


def by_qid(res):
    return {d.query_id: d for d in res.drafts}


def test_counts(res):
    cov = res.coverage
    assert cov.balanced()
    assert cov.upstream_items == 13 and cov.covered == 6
    assert cov.not_covered == {
        "duplicate query-id": 1,
        "empty query": 1,
        "gold image not in mirror": 1,
        "gold image unreadable": 1,
        "malformed query": 1,
        "no positive qrels": 1,
        "no qrels": 1,
    }
    assert cov.normalised == {
        "chartqa: malformed qrels row ignored": 1,
        "chartqa: qrels row for unknown query ignored": 1,
    }
    assert len(res.items) == 7  # broken.png is not an item; the duplicate image is kept
    assert Counter(i.holder for i in res.items) == {"visrag/arxivqa": 3, "visrag/chartqa": 4}
    assert res.texts == {}


def test_deterministic(root, res):
    again = visrag.load(root)
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in res.items]
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in res.drafts]
    assert again.coverage.as_dict() == res.coverage.as_dict()


def test_sorted_and_bounds(root, res):
    sids = [i.source_id for i in res.items]
    qids = [d.query_id for d in res.drafts]
    assert sids == sorted(sids) and qids == sorted(qids)
    items = {i.source_id: i for i in res.items}
    for it in res.items:
        assert (root / it.path).is_file()
        assert it.meta["width"] > 0 and it.meta["height"] > 0
        assert it.observed_at.tzinfo is not None
    for d in res.drafts:
        assert d.gold and not d.unanswerable
        for g in d.gold:
            assert g.region == {} and check_region("image", g.region) is None
            assert items[g.source_id].holder == d.scope.holder
        assert d.scope.scenario == "image-retrieval"


def test_chartqa_records(res):
    q = by_qid(res)
    d = q["visrag:chartqa:two_col_1.png-0"]
    assert d.question == "What is the value in 2019?"
    assert d.answer == "42" and d.answer_format == "str"
    assert [g.source_id for g in d.gold] == ["visrag:chartqa/two_col_1.png"]
    assert d.origin.dataset == "openbmb/VisRAG-Ret-Test-ChartQA"
    assert d.origin.revision == CHARTQA_REV
    assert d.origin.item == "query-id:two_col_1.png-0"
    assert json.loads(d.origin.notes) == {"is_numerical": 1}
    # top-level answer accepted as well as metadata.answer; question kept verbatim
    assert q["visrag:chartqa:two_col_2.png-0"].answer == "Asia"
    assert q["visrag:chartqa:multi_col_3.png-1"].question == "  How many bars are blue?"
    assert "visrag:chartqa:multi_col_9.png-0" not in q


def test_arxivqa_records(res):
    q = by_qid(res)
    d = q["visrag:arxivqa:arxiv-0"]
    assert [g.source_id for g in d.gold] == ["visrag:arxivqa/1506.06616_1.png"]  # stem match
    assert json.loads(d.origin.notes) == {"options": ["A. red", "B. blue", "C. green", "D. black"]}
    assert d.origin.dataset == "openbmb/VisRAG-Ret-Test-ArxivQA"
    assert d.origin.revision == "unknown"
    d = q["visrag:arxivqa:arxiv-1"]  # two positive qrels -> two gold images
    assert [g.source_id for g in d.gold] == [
        "visrag:arxivqa/1506.06616_1.png",
        "visrag:arxivqa/1506.06616_2.jpg",
    ]
    d = q["visrag:arxivqa:arxiv-6"]
    assert d.answer is None and d.answer_format == "none"
    assert d.question == "Retrieval-only query without an answer"
    # the first arxiv-0 wins over the duplicate id
    assert q["visrag:arxivqa:arxiv-0"].question == "Which curve rises fastest?"
    for missing in ("arxiv-2", "arxiv-3", "arxiv-4", "arxiv-5"):
        assert f"visrag:arxivqa:{missing}" not in q


def test_missing_folder_raises(tmp_path):
    with pytest.raises(InputError) as e:
        visrag.load(tmp_path)
    assert e.value.rule == "MISSING_FILE"


def test_set_without_queries_raises(tmp_path, root):
    shutil.copytree(root / "visrag", tmp_path / "visrag")
    (tmp_path / "visrag" / "ChartQA" / "queries.jsonl").unlink()
    with pytest.raises(InputError) as e:
        visrag.load(tmp_path)
    assert e.value.rule == "MISSING_FILE"


def test_parquet_only_without_pyarrow_is_explicit(tmp_path, root, monkeypatch):
    shutil.copytree(root / "visrag", tmp_path / "visrag")
    set_dir = tmp_path / "visrag" / "ChartQA"
    (set_dir / "queries.jsonl").unlink()
    (set_dir / "queries").mkdir()
    (set_dir / "queries" / "train-00000-of-00001.parquet").write_bytes(b"PAR1")
    monkeypatch.setattr(visrag, "_have_pyarrow", lambda: False)
    with pytest.raises(InputError, match="pyarrow"):
        visrag.load(tmp_path)


def test_parquet_matches_text_forms(tmp_path, root):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    shutil.copytree(root / "visrag", tmp_path / "visrag")
    set_dir = tmp_path / "visrag" / "ChartQA"
    # rewrite ChartQA's queries and qrels as the HF parquet configs (column names upstream)
    qrows = []
    for line in (set_dir / "queries.jsonl").read_text().splitlines():
        o = json.loads(line)
        meta = o.get("metadata", {})
        qrows.append(
            {
                "query-id": o["_id"],
                "query": o["text"],
                "answer": o.get("answer", meta.get("answer")),
                "options": None,
                "is_numerical": meta.get("is_numerical"),
            }
        )
    rrows = []
    for line in (set_dir / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) == 3:
            rrows.append({"query-id": parts[0], "corpus-id": parts[1], "score": int(parts[2])})
    (set_dir / "queries.jsonl").unlink()
    (set_dir / "qrels" / "test.tsv").unlink()
    (set_dir / "queries").mkdir()
    pq.write_table(
        pa.Table.from_pylist(qrows), set_dir / "queries" / "train-00000-of-00001.parquet"
    )
    pq.write_table(pa.Table.from_pylist(rrows), set_dir / "qrels" / "train-00000-of-00001.parquet")
    prov = tmp_path / "visrag" / "PROVENANCE.jsonl"
    prov.write_text(
        prov.read_text()
        .replace("queries.jsonl", "queries/train-00000-of-00001.parquet")
        .replace("qrels/test.tsv", "qrels/train-00000-of-00001.parquet")
    )
    r = visrag.load(tmp_path)
    want = visrag.load(root)
    assert [d.model_dump() for d in r.drafts] == [d.model_dump() for d in want.drafts]
    assert r.coverage.upstream_items == want.coverage.upstream_items
    assert r.coverage.not_covered == want.coverage.not_covered
    assert r.coverage.balanced()
