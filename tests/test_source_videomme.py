"""Video-MME is not in the corpus mirror: the adapter is tested on a small fixture in the real
upstream layout (lmms-lab/Video-MME: videomme/test-*.parquet rows, here as their JSON lines
export, and subtitle/<videoID>.srt)."""

import json
import shutil

import pytest

from membench.core.errors import InputError
from membench.sources import BY_KEY, videomme
from membench.sources.base import hash_groups

SPEC = BY_KEY["videomme"]
ROWS = "video-mme/videomme/test-00000-of-00001.jsonl"


@pytest.fixture(scope="module")
def fx(fixtures):
    return videomme.load(fixtures / "videomme")


def _copy(fixtures, tmp_path):
    dst = tmp_path / "root"
    shutil.copytree(fixtures / "videomme", dst)
    return dst


def _rows(root):
    return [json.loads(x) for x in (root / ROWS).read_text(encoding="utf-8").splitlines()]


def test_registry_matches_module():
    assert (SPEC.folder, SPEC.modality, SPEC.adapter) == (
        videomme.FOLDER,
        videomme.MODALITY,
        "videomme:load",
    )
    assert SPEC.mirrored is False


def test_fixture_rows_have_upstream_columns(fixtures):
    rows = _rows(fixtures / "videomme")
    assert set(rows[0]) == {
        "video_id",
        "duration",
        "domain",
        "sub_category",
        "url",
        "videoID",
        "question_id",
        "task_type",
        "question",
        "options",
        "answer",
    }


def test_fixture_coverage(fx):
    cov = fx.coverage
    assert cov.upstream_items == 9
    assert cov.covered == 0 and fx.drafts == []
    assert cov.not_covered == {
        "no temporal gold span upstream": 7,
        "duplicate question_id": 1,
        "unparseable row": 1,
    }
    assert cov.balanced()
    assert cov.normalised == {
        "subtitle block dropped: empty text": 1,
        "subtitle block dropped: unparseable block": 3,
        "subtitle not UTF-8: decoded as cp1252": 1,
    }
    notes = " | ".join(cov.notes)
    assert "no temporal span" in notes and "not covered" in notes
    assert "2 of 4 videos have a parseable subtitle" in notes
    assert "videos without a subtitle file: 1" in notes
    assert "subtitle/fxZ0x9C8v7B.srt has no parseable cue" in notes


def test_fixture_items(fx):
    items = {i.source_id: i for i in fx.items}
    assert sorted(items) == ["videomme:fxA1b2C3d4E", "videomme:fxM5n4B3v2C"]
    a = items["videomme:fxA1b2C3d4E"]
    # BOM + CRLF, italics tag stripped, lines joined, unparseable and empty blocks dropped
    assert a.content == [
        [0.0, 2.5, "Welcome to the workshop"],
        [2.5, 5.04, "we light two candles"],
        [65.1, 69.9, "and now we open the window"],
    ]
    assert a.meta == {
        "cues": 3,
        "url": "https://www.youtube.com/watch?v=fxA1b2C3d4E",
        "video_id": "001",
        "duration_category": "short",
        "domain": "Knowledge",
        "sub_category": "Humanity & History",
        "subtitle_end": 69.9,
    }
    assert a.path is None and a.modality == "video"
    # cp1252 file decoded; cues sorted by time
    assert items["videomme:fxM5n4B3v2C"].content == [
        [1.0, 2.0, "first in time, second in file"],
        [3.0, 4.0, "hola, adi\u00f3s"],
    ]
    groups = hash_groups(
        {"fxA1b2C3d4E", "fxQ9w8E7r6T", "fxZ0x9C8v7B", "fxM5n4B3v2C"}, 5, "videomme-holders"
    )
    for it in fx.items:
        assert it.holder == f"videomme/viewer-{groups[it.source_id.split(':', 1)[1]]}"
        assert it.observed_at.tzinfo is not None
    assert fx.texts["videomme:fxM5n4B3v2C"] == "first in time, second in file hola, adi\u00f3s"


def test_deterministic(fx, fixtures):
    again = videomme.load(fixtures / "videomme")
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in fx.items]
    assert again.coverage.as_dict() == fx.coverage.as_dict()


@pytest.mark.parametrize("form", ["list", "datasets-server", "single-line"])
def test_other_json_exports_read_the_same(fx, fixtures, tmp_path, form):
    root = _copy(fixtures, tmp_path)
    rows = _rows(root)
    (root / ROWS).unlink()
    out = root / "video-mme" / "videomme" / "test-00000-of-00001.json"
    if form == "list":
        out.write_text(json.dumps(rows), encoding="utf-8")
    elif form == "datasets-server":
        out.write_text(
            json.dumps(
                {
                    "features": [],
                    "rows": [
                        {"row_idx": i, "row": r, "truncated_cells": []} for i, r in enumerate(rows)
                    ],
                }
            )
        )
    else:  # JSON lines with a single row
        out.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    res = videomme.load(root)
    if form == "single-line":
        assert res.coverage.upstream_items == 1
        assert [i.source_id for i in res.items] == ["videomme:fxA1b2C3d4E"]
        return
    assert [i.model_dump() for i in res.items] == [i.model_dump() for i in fx.items]
    assert res.coverage.not_covered == fx.coverage.not_covered


def test_shards_are_concatenated_in_name_order(fixtures, tmp_path):
    root = _copy(fixtures, tmp_path)
    rows = _rows(root)
    (root / ROWS).unlink()
    d = root / "video-mme" / "videomme"
    (d / "test-00001-of-00002.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[4:]))
    (d / "test-00000-of-00002.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:4]))
    res = videomme.load(root)
    assert res.coverage.upstream_items == 9
    assert res.coverage.not_covered["duplicate question_id"] == 1


def test_parquet_without_pyarrow(fixtures, tmp_path, monkeypatch):
    monkeypatch.setattr(videomme, "_have_pyarrow", lambda: False)
    root = _copy(fixtures, tmp_path)
    pq = root / "video-mme" / "videomme" / "test-00000-of-00001.parquet"
    pq.write_bytes(b"PAR1 not read PAR1")
    res = videomme.load(root)  # JSON export next to it is used
    assert res.coverage.upstream_items == 9
    assert any("pyarrow not importable" in n for n in res.coverage.notes)
    (root / ROWS).unlink()
    with pytest.raises(InputError) as e:
        videomme.load(root)
    assert e.value.rule == "MISSING_FILE" and "pyarrow" in e.value.message


def test_parquet_with_pyarrow(fx, fixtures, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as papq

    root = _copy(fixtures, tmp_path)
    rows = [r for r in _rows(root) if "answer" in r]
    (root / ROWS).unlink()
    papq.write_table(
        pa.Table.from_pylist(rows), root / "video-mme" / "videomme" / "test-00000-of-00001.parquet"
    )
    res = videomme.load(root)
    assert res.coverage.upstream_items == 8
    assert [i.model_dump() for i in res.items] == [i.model_dump() for i in fx.items]


def test_missing_folder_raises(tmp_path):
    with pytest.raises(InputError) as e:
        videomme.load(tmp_path)
    assert e.value.rule == "MISSING_FILE"


def test_missing_annotation_raises(tmp_path):
    (tmp_path / "video-mme" / "subtitle").mkdir(parents=True)
    with pytest.raises(InputError) as e:
        videomme.load(tmp_path)
    assert e.value.rule == "MISSING_FILE"


def test_parse_srt():
    cues, dropped = videomme.parse_srt(
        "1\n00:00:01.5 --> 00:00:02,250\nline one\nline <b>two</b>\n\n"
        "00:01:00,000 --> 00:01:01,000\nno index line\n\n"
        "3\n01:00:00,000 --> 00:59:59,000\nbackwards\n\n"
        "4\n00:00:03,000 -> 00:00:04,000\nbad arrow\n"
    )
    assert cues == [[1.5, 2.25, "line one line two"], [60.0, 61.0, "no index line"]]
    assert dropped == {"end before start": 1, "unparseable block": 1}
    assert videomme.parse_srt("") == ([], {})
