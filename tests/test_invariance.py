"""A query's result does not depend on which other queries, modalities or subsets run with it
(SPEC section 6): on the real corpus, the lines of a ``--modality`` or ``--limit`` run equal
the full run's for the same queries (latency aside)."""

from __future__ import annotations

import json

import pytest

from membench.run.runner import load_split, run_system
from membench.systems import make_system


def lines(run_dir) -> dict[str, dict]:
    out = {}
    for line in (run_dir / "run.jsonl").read_text().splitlines():
        row = json.loads(line)
        row.pop("latency_ms")
        out[row.pop("query_id")] = row
    return out


def assert_same_lines(part, whole):
    assert part, "no lines to compare"
    for qid, row in part.items():
        assert row == whole[qid], qid


@pytest.mark.parametrize("modality", ["conversation", "video", "pdf"])
def test_bm25_modality_run_equals_the_full_run(bm25_dev, built, corpus_root, tmp_path, modality):
    full = lines(bm25_dev[0])
    run_system(make_system("bm25"), built.out, "dev", tmp_path, corpus_root, modalities=[modality])
    part = lines(tmp_path)
    assert len(part) == sum(
        1 for r in load_split(built.out, "dev").records if r.modality == modality
    )
    assert_same_lines(part, full)


def test_bm25_limit_run_ingests_less_and_equals_the_full_run(
    bm25_dev, built, corpus_root, tmp_path
):
    full_dir, full_meta = bm25_dev
    # 2 queries a modality: fewer holders than the dev split has in every modality but
    # ui_screenshot's two (pdf's shelves leave 9 dev holders, so 20 queries would ask them all)
    meta = run_system(
        make_system("bm25", {"ocr_processes": 2}), built.out, "dev", tmp_path, corpus_root, limit=2
    )
    assert meta["items"] < full_meta["items"] and meta["atoms"] < full_meta["atoms"]
    part = lines(tmp_path)
    per = {}
    for r in load_split(built.out, "dev").records:
        per[r.modality] = per.get(r.modality, 0) + 1
    assert len(part) == meta["queries"] == sum(min(2, n) for n in per.values())
    assert_same_lines(part, lines(full_dir))


@pytest.mark.parametrize("name", ["dense", "hybrid"])
def test_dense_and_hybrid_do_not_depend_on_other_modalities(name, built, corpus_root, tmp_path):
    both = tmp_path / "both"
    run_system(
        make_system(name),
        built.out,
        "dev",
        both,
        corpus_root,
        modalities=["video", "ui_screenshot"],
    )
    alone = tmp_path / "alone"
    run_system(make_system(name), built.out, "dev", alone, corpus_root, modalities=["video"])
    limited = tmp_path / "limited"
    run_system(
        make_system(name),
        built.out,
        "dev",
        limited,
        corpus_root,
        modalities=["video", "ui_screenshot"],
        limit=10,
    )
    whole = lines(both)
    assert_same_lines(lines(alone), whole)
    assert_same_lines(lines(limited), whole)
