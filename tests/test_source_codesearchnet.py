"""CodeSearchNet adapter: real-corpus counts and hand-checked records, plus fixture quirks."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from membench.core.errors import InputError
from membench.modalities import check_region
from membench.sources import BY_KEY
from membench.sources.codesearchnet import count_lines, load, lower_median

ANN_REV = "106e827405c968597da938f6b373d30183918869"  # annotationStore.csv in PROVENANCE.jsonl


# --------------------------------------------------------------------------- real corpus


@pytest.fixture(scope="module")
def real(corpus_root):
    if not (corpus_root / "codesearchnet").is_dir():
        pytest.skip("codesearchnet not in the corpus mirror")
    return load(corpus_root)


def _by_qid(res):
    return {d.query_id: d for d in res.drafts}


def test_real_counts(real):
    cov = real.coverage
    assert cov.balanced()
    assert cov.upstream_items == 573  # (language, query) pairs in annotationStore
    assert cov.covered == 384
    assert cov.not_covered == {
        "no relevant (grade>=2) annotation": 183,
        "relevant functions only in files absent from mirror": 6,
    }
    assert cov.normalised == {
        "annotation rows pointing at files absent from mirror (judged on mirrored files only)": 155,
        "relevant (grade>=2) urls in files absent from mirror": 48,
    }
    # LICENSE-NOTES speaks of 34 absent files over 300 KB; the annotations reference 118
    assert (
        "118 distinct annotated files are absent from the mirror (155 annotation rows); "
        "their judgments are not covered" in cov.notes
    )
    assert len(real.items) == 2621
    assert Counter(i.holder for i in real.items) == {
        "codesearchnet/python": 902,
        "codesearchnet/java": 715,
        "codesearchnet/ruby": 289,
        "codesearchnet/php": 284,
        "codesearchnet/javascript": 277,
        "codesearchnet/go": 154,
    }
    assert len(real.drafts) == 384
    assert Counter(d.scope.holder for d in real.drafts) == {
        "codesearchnet/python": 94,
        "codesearchnet/java": 81,
        "codesearchnet/php": 66,
        "codesearchnet/javascript": 64,
        "codesearchnet/ruby": 47,
        "codesearchnet/go": 32,
    }
    assert sum(len(d.gold) for d in real.drafts) == 996
    assert sum(len(d.judgments["any_annotator"]) for d in real.drafts) == 1233
    assert sum(len(d.judgments["all_annotators"]) for d in real.drafts) == 961
    # graded: lower median >= 1 (517 functions of grade 1 besides the 996 of gold)
    assert sum(len(d.judgments["graded"]) for d in real.drafts) == 1513
    assert not any(d.unanswerable for d in real.drafts)
    assert set(real.texts) == {i.source_id for i in real.items}


def test_real_queries_covered(real, corpus_root):
    qs = (corpus_root / "codesearchnet/resources/queries.csv").read_text(encoding="utf-8")
    queries = qs.splitlines()[1:]
    assert len(queries) == 99
    covered = {d.question for d in real.drafts}
    assert len(covered) == 97
    # the two queries whose every judged function has lower-median grade < 2, in all languages
    assert sorted(set(queries) - covered) == ["readonly array", "set file attrib hidden"]
    for d in real.drafts:
        assert queries[int(d.query_id.rsplit(":", 1)[1])] == d.question


def test_real_hand_checked(real):
    by = _by_qid(real)
    # Python "convert int to string" (query 0): esptool ecdsa.py#L169-L175 graded [3, 3];
    # iarm _meta.py#L126-L132 graded [1, 3] -> lower median 1: only in any_annotator.
    d = by["codesearchnet:python:0"]
    assert d.question == "convert int to string"
    assert d.origin.item == "Python/convert int to string"
    assert d.origin.revision == ANN_REV and d.origin.dataset == "github/CodeSearchNet"
    assert d.scope.holder == "codesearchnet/python"
    assert d.scope.scenario == BY_KEY["codesearchnet"].scenario
    esp = "codesearchnet:c583756c118039cfcfe256f7a3285618914d16a5_ecdsa_ecdsa.py"
    iarm = "codesearchnet:b913c9fd577b793a6bbced78b78a5d8d7cd88de4_iarm_arm_instructions__meta.py"
    assert [(g.source_id, g.region, g.grade) for g in d.gold] == [
        (esp, {"path": "ecdsa/ecdsa.py", "line": 169}, 3)
    ]
    assert [(g.source_id, g.region["line"], g.grade) for g in d.judgments["any_annotator"]] == [
        (iarm, 126, 3),
        (esp, 169, 3),
    ]
    assert [g.source_id for g in d.judgments["all_annotators"]] == [esp]
    # graded: every function of lower median >= 1, with that grade (iarm's [1, 3] -> 1)
    assert [(g.source_id, g.region["line"], g.grade) for g in d.judgments["graded"]] == [
        (iarm, 126, 1),
        (esp, 169, 3),
    ]

    # Go "convert int to string": kubicorn securitygroup.go#L375-L381 graded 3 (one annotator)
    g = by["codesearchnet:go:0"]
    kubicorn = (
        "codesearchnet:c4a4b80994b4333709c0f8164faabd801866b986_cloud_amazon_public_"
        "resources_securitygroup.go"
    )
    assert [(x.source_id, x.region, x.grade) for x in g.gold] == [
        (kubicorn, {"path": "cloud/amazon/public/resources/securitygroup.go", "line": 375}, 3)
    ]

    # four annotators [1, 1, 2, 2] -> lower median 1: not gold, in any_annotator with grade 2
    idx = {d.question: d for d in real.drafts if d.scope.holder == "codesearchnet/python"}
    rec = idx["reading element from html - <td>"]
    turicas = "codesearchnet:c74da41ae9ed091356b803a64f8a30c641c5fc45_rows_plugins_plugin_html.py"
    assert all(x.source_id != turicas for x in rec.gold)
    assert [
        (x.region["line"], x.grade)
        for x in rec.judgments["any_annotator"]
        if x.source_id == turicas
    ] == [(177, 2)]
    assert all(x.source_id != turicas for x in rec.judgments["all_annotators"])


def test_real_bounds_and_scope(real, corpus_root):
    items = {i.source_id: i for i in real.items}
    for i in real.items:
        assert (corpus_root / i.path).is_file()
        assert i.holder == f"codesearchnet/{i.meta['language']}"
        assert i.observed_at.tzinfo is not None
    for d in real.drafts:
        assert d.gold and d.answer is None and d.answer_format == "none"
        for g in [
            *d.gold,
            *d.judgments["any_annotator"],
            *d.judgments["all_annotators"],
            *d.judgments["graded"],
        ]:
            assert check_region("code", g.region) is None
            it = items[g.source_id]
            assert it.holder == d.scope.holder
            assert g.region["path"] == it.meta["upstream_path"]
            assert 1 <= g.region["line"] <= it.meta["lines"]
            assert g.grade is not None and g.grade >= 1
        # gold is graded's grade >= 2 cut, with the same grades
        assert [x for x in d.judgments["graded"] if x.grade >= 2] == list(d.gold)
        assert all(
            g.grade >= 2
            for g in [*d.gold, *d.judgments["any_annotator"], *d.judgments["all_annotators"]]
        )
    ids = [d.query_id for d in real.drafts]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert [i.source_id for i in real.items] == sorted(items)


def test_real_line_count_matches_span(real, corpus_root):
    # a hand-checked span: the function of esptool ecdsa.py#L169 starts with "def"
    it = next(
        i
        for i in real.items
        if i.source_id.endswith("_ecdsa_ecdsa.py") and i.meta["commit"].startswith("c583756c")
    )
    lines = (corpus_root / it.path).read_text(encoding="utf-8").split("\n")
    assert lines[168].lstrip().startswith("def ")
    assert it.meta["lines"] == count_lines((corpus_root / it.path).read_bytes())


def test_real_deterministic(real, corpus_root):
    again = load(corpus_root)
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in real.drafts]
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in real.items]
    assert again.coverage.as_dict() == real.coverage.as_dict()


# --------------------------------------------------------------------------- fixture quirks

A, B, C, D, E = ("a" * 40, "b" * 40, "c" * 40, "d" * 40, "e" * 40)


@pytest.fixture(scope="module")
def fx(fixtures):
    return load(fixtures / "codesearchnet")


def test_lower_median():
    assert lower_median([3]) == 3
    assert lower_median([1, 3]) == 1
    assert lower_median([3, 2]) == 2
    assert lower_median([3, 0, 2]) == 2
    assert lower_median([2, 2, 1, 1]) == 1
    assert count_lines(b"") == 0
    assert count_lines(b"a\nb\n") == 2
    assert count_lines(b"a\r\nb") == 2


def test_fixture_coverage(fx):
    cov = fx.coverage
    assert cov.balanced()
    assert cov.upstream_items == 13 and cov.covered == 6
    assert cov.not_covered == {
        "no interpretable annotation row": 2,
        "no relevant (grade>=2) annotation": 1,
        "query not in queries.csv": 1,
        "relevant functions only in files absent from mirror": 1,
        "relevant functions only in files held by another language": 1,
        "relevant spans only outside their file's lines": 1,
    }
    n = cov.normalised
    assert (
        n["annotation rows pointing at files absent from mirror (judged on mirrored files only)"]
        == 2
    )
    assert n["annotation row with unparseable GitHubUrl (ignored)"] == 1
    assert n["annotation row with relevance not in 0..3 (ignored)"] == 2
    assert n["annotation row without language or query (ignored)"] == 1
    assert n["file annotated under two languages (kept in python)"] == 1
    assert n["file mapped by reconstructed name (no provenance note)"] == 1
    assert n["provenance lists a file that is not on disk (treated as absent)"] == 1
    assert n["relevant spans outside their file's lines (not emitted)"] == 2
    assert n["two relevant urls with the same file and start line (merged)"] == 1


def test_fixture_records(fx):
    by = _by_qid(fx)
    assert sorted(by) == [
        "codesearchnet:go:2",
        "codesearchnet:javascript:2",
        "codesearchnet:python:0",
        "codesearchnet:python:1",
        "codesearchnet:python:2",
        "codesearchnet:ruby:2",
    ]
    py0 = by["codesearchnet:python:0"]
    # L2 [3, 1] -> 1 (not gold); L6-L8 [2, 3] -> 2 merged with L6-L9 [3]; L9-L12 out of bounds
    assert [(g.region, g.grade) for g in py0.gold] == [({"path": "src/conv.py", "line": 6}, 3)]
    assert [(g.region["line"], g.grade) for g in py0.judgments["any_annotator"]] == [(2, 3), (6, 3)]
    assert [(g.region["line"], g.grade) for g in py0.judgments["all_annotators"]] == [(6, 3)]
    assert [(g.region["line"], g.grade) for g in py0.judgments["graded"]] == [(2, 1), (6, 3)]
    # quoted query with a comma keeps its queries.csv index (1) and verbatim text
    assert by["codesearchnet:python:1"].question == "sort, then dedupe"
    # last line of a 10-line file is in bounds
    assert by["codesearchnet:python:2"].gold[0].region == {"path": "src/conv.py", "line": 10}
    # provenance note wins over the reconstructed name (a/b_c.rb is stored as <commit>_renamed.rb)
    rb = by["codesearchnet:ruby:2"].gold[0]
    assert rb.source_id == f"codesearchnet:{C}_renamed.rb" and rb.region["path"] == "a/b_c.rb"
    assert by["codesearchnet:ruby:2"].origin.revision == "1" * 40
    # no note: fall back to <commit>_<path with / as _>
    assert by["codesearchnet:javascript:2"].gold[0].source_id == f"codesearchnet:{D}_x_y.js"


def test_fixture_items(fx):
    items = {i.source_id: i for i in fx.items}
    assert list(items) == sorted(items)
    assert {k: v.holder for k, v in items.items()} == {
        f"codesearchnet:{A}_src_conv.py": "codesearchnet/python",
        f"codesearchnet:{B}_lib_sort.go": "codesearchnet/go",
        f"codesearchnet:{C}_renamed.rb": "codesearchnet/ruby",
        f"codesearchnet:{D}_x_y.js": "codesearchnet/javascript",
        f"codesearchnet:{E}_shared.py": "codesearchnet/python",  # also annotated under Ruby
    }
    assert items[f"codesearchnet:{B}_lib_sort.go"].meta["lines"] == 6  # CRLF, no final newline
    assert items[f"codesearchnet:{A}_src_conv.py"].meta == {
        "upstream_repo": "o/r1",
        "upstream_path": "src/conv.py",
        "commit": A,
        "lines": 10,
        "language": "python",
    }
    assert items[f"codesearchnet:{A}_src_conv.py"].path == f"codesearchnet/files/{A}_src_conv.py"
    # per-holder synthetic timeline: python has two items one hour apart, in hash order
    t = sorted(
        [
            items[f"codesearchnet:{A}_src_conv.py"].observed_at,
            items[f"codesearchnet:{E}_shared.py"].observed_at,
        ]
    )
    assert (t[1] - t[0]).total_seconds() == 3600 and t[0].isoformat() == "2024-01-01T00:00:00+00:00"
    # invalid UTF-8 is replaced, not raised
    assert "\ufffd" in fx.texts[f"codesearchnet:{E}_shared.py"]


def test_fixture_deterministic(fixtures, fx):
    again = load(fixtures / "codesearchnet")
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in fx.drafts]
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in fx.items]


@pytest.mark.parametrize(
    "missing", ["resources/annotationStore.csv", "resources/queries.csv", "PROVENANCE.jsonl"]
)
def test_missing_top_level_file(fixtures, tmp_path, missing):
    shutil.copytree(fixtures / "codesearchnet", tmp_path / "root")
    (tmp_path / "root/codesearchnet" / missing).unlink()
    with pytest.raises(InputError) as e:
        load(tmp_path / "root")
    assert e.value.rule == "MISSING_FILE"
