"""The load steps every adapter shares (membench/sources/base.py): the preamble
(open_upstream), the one revision lookup (annotation_revision) and the booking of a map step's
outcomes into Coverage (book, Mapped.result)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from membench.contract.schema import Origin, RecordDraft, Scope, SourceItem
from membench.core.errors import InputError
from membench.sources import BY_KEY
from membench.sources.base import Coverage, Mapped, annotation_revision, book, open_upstream

SPEC = BY_KEY["tabmwp"]


def _prov(folder, *rows):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "PROVENANCE.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_open_upstream_checks_folder_files_then_provenance(tmp_path):
    with pytest.raises(InputError) as e:
        open_upstream(tmp_path, SPEC, folder="TabMWP folder")
    assert e.value.rule == "MISSING_FILE" and e.value.file == str(tmp_path / "tabmwp")
    (tmp_path / "tabmwp").mkdir()
    with pytest.raises(InputError) as e:
        open_upstream(tmp_path, SPEC, files={"a.json": "the A file"}, provenance=True)
    assert e.value.rule == "MISSING_FILE" and e.value.file == str(tmp_path / "tabmwp" / "a.json")
    assert e.value.message == "the A file is missing"
    (tmp_path / "tabmwp" / "a.json").write_text("[]")
    with pytest.raises(InputError) as e:
        open_upstream(tmp_path, SPEC, files={"a.json": "the A file"}, provenance=True)
    assert e.value.file.endswith("PROVENANCE.jsonl") and e.value.rule == "MISSING_FILE"
    up = open_upstream(tmp_path, SPEC, files={"a.json": "the A file"})
    assert up.provenance == {} and up.folder == tmp_path / "tabmwp" and up.root == tmp_path
    _prov(tmp_path / "tabmwp", {"path": "a.json", "commit": "c1"})
    up = open_upstream(tmp_path, SPEC, provenance=True)
    assert up.provenance == {"a.json": {"path": "a.json", "commit": "c1"}}


def test_annotation_revision(tmp_path):
    folder = tmp_path / "src"
    _prov(
        folder,
        {"path": "a.json", "commit": "c1"},
        {"path": "b.tsv"},
        {"path": "c.tsv", "commit": "c3"},
    )
    cov = Coverage(source="x")
    assert annotation_revision(folder, "a.json", cov) == "c1"
    assert annotation_revision(folder, ["b.tsv", "c.tsv"], cov) == "c3"  # first with a commit
    assert cov.notes == []
    assert annotation_revision(folder, ["b.tsv", "z.json"], cov) == "unknown"
    assert cov.notes == ["no commit for b.tsv or z.json in PROVENANCE.jsonl: revision 'unknown'"]
    with pytest.raises(InputError) as e:
        annotation_revision(folder, "b.tsv", cov, required=True)
    assert e.value.rule == "MISSING_FILE" and e.value.field == "b.tsv"
    # rows already read are used as given, the file is not read again
    assert (
        annotation_revision(
            tmp_path / "absent", "a.json", cov, provenance={"a.json": {"commit": "given"}}
        )
        == "given"
    )
    (folder / "PROVENANCE.jsonl").write_text('{"path": "a.json"}\nnot json\n')
    with pytest.raises(InputError) as e:
        annotation_revision(folder, "a.json", cov)
    assert e.value.line == 2


def _draft(qid: str) -> RecordDraft:
    return RecordDraft(
        query_id=qid,
        modality="image",
        question="q?",
        answer=None,
        answer_format="none",
        gold=[],
        scope=Scope(holder="h", scenario="s"),
        unanswerable=True,
        origin=Origin(dataset="d", revision="r", item=qid, license="l"),
    )


def test_book_and_result():
    t = datetime(2024, 1, 1, tzinfo=timezone.utc)
    made = Mapped(
        items=[
            SourceItem(
                source_id=s,
                modality="image",
                holder="h",
                observed_at=t,
                path=f"{s}.png",
                meta={"width": 1, "height": 1},
            )
            for s in ("x:b", "x:a")
        ],
        outcomes=[_draft("x:2"), "no image", _draft("x:1"), "no image", "empty"],
    )
    made.fix("repaired", 2)
    made.fix("repaired")
    cov = Coverage(source="x")
    book(cov, made)
    assert (cov.upstream_items, cov.covered) == (5, 2) and cov.balanced()
    assert cov.not_covered == {"no image": 2, "empty": 1}
    assert cov.normalised == {"repaired": 3}
    res = made.result(cov)
    assert [d.query_id for d in res.drafts] == ["x:1", "x:2"]
    assert [i.source_id for i in res.items] == ["x:a", "x:b"]
    assert res.coverage is cov
