"""The registered sources whose questions are counted, not yet mapped: PrefEval, REALTALK and
PsTuts-VQA (membench/sources/registered.py), on the real mirror and on small fixtures."""

import json

import pytest

from membench.core.errors import InputError
from membench.sets.build import collect
from membench.sources import BY_KEY
from membench.sources.registered import PENDING, load_prefeval, load_pstuts, load_realtalk


@pytest.mark.parametrize("load,key,n", [(load_prefeval, "prefeval", 3000),
                                        (load_realtalk, "realtalk", 728),
                                        (load_pstuts, "pstuts", 17768)])
def test_every_upstream_question_is_counted_not_covered(corpus_root, load, key, n):
    res = load(corpus_root)
    assert res.items == [] and res.drafts == []
    cov = res.coverage
    assert cov.source == key and cov.upstream_items == n and cov.covered == 0
    assert cov.not_covered == {PENDING: n} and cov.balanced()


def test_build_reports_them_in_coverage_and_adds_no_record(corpus_root):
    items, drafts, _, coverage = collect(corpus_root, {"prefeval", "realtalk"})
    assert items == {} and drafts == []
    assert {c.source: c.upstream_items for c in coverage} == {"prefeval": 3000, "realtalk": 728}


def _folder(tmp_path, key):
    d = tmp_path / BY_KEY[key].folder
    d.mkdir()
    (d / "PROVENANCE.jsonl").write_text("")
    return d


def test_a_question_without_text_is_a_located_error(tmp_path):
    d = _folder(tmp_path, "pstuts")
    for name in ("train.json", "dev.json"):
        (d / name).write_text("[]")
    (d / "test.json").write_text(json.dumps([{"video_id": 1, "qa": [{"sent_id": 0, "a": "x"}]}]))
    with pytest.raises(InputError) as e:
        load_pstuts(tmp_path)
    assert e.value.file == str(d / "test.json") and e.value.field == "[0].qa[0].q"


def test_realtalk_without_qa_is_a_located_error(tmp_path):
    d = _folder(tmp_path, "realtalk")
    (d / "Chat_1_A_B.json").write_text(json.dumps({"name": "x"}))
    with pytest.raises(InputError) as e:
        load_realtalk(tmp_path)
    assert e.value.file == str(d / "Chat_1_A_B.json") and e.value.field == "qa"


def test_prefeval_missing_form_folder_is_named(tmp_path):
    d = _folder(tmp_path, "prefeval")
    (d / "explicit_preference").mkdir()
    (d / "explicit_preference" / "t.json").write_text(json.dumps([{"question": "q?"}]))
    with pytest.raises(InputError) as e:
        load_prefeval(tmp_path)
    assert e.value.rule == "MISSING_FILE" and "choice-based" in e.value.file
