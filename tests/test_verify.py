"""``membench verify``: each leaderboard entry's system re-run in a fresh process on a sample
and compared with its stored run. bm25, dense and hybrid (real dev video and ui_screenshot
queries) come out verified; an edited run.jsonl comes out as "differs"; a user module is re-run
from its module:Class; an imported run and a system that cannot be made again are "not
re-runnable"."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hostile_world import write_world

from membench.analysis.leaderboard import add_runs, format_markdown, leaderboard
from membench.analysis.verify import verify_store
from membench.cli import main
from membench.run.runner import run_system
from membench.systems import make_system

TESTS = Path(__file__).parent
MODS = ["video", "ui_screenshot"]


@pytest.fixture(scope="module")
def store(built, corpus_root, tmp_path_factory):
    d = tmp_path_factory.mktemp("verify")
    for name in ("bm25", "dense", "hybrid"):
        run_system(
            make_system(name), built.out, "dev", d / name, corpus_root, modalities=MODS, limit=4
        )
    add_runs([d / n for n in ("bm25", "dense", "hybrid")], d / "store", n_resamples=50)
    return d


def test_bm25_dense_and_hybrid_are_verified(store, corpus_root):
    res = verify_store(store / "store", per_modality=50, seed=3, corpus=corpus_root)
    assert {r["system"]: r["status"] for r in res} == {
        "bm25": "verified",
        "dense": "verified",
        "hybrid": "verified",
    }, res
    assert all(r["compared"] == 8 and r["sample"]["whole"] for r in res)
    lb = leaderboard(store / "store", n_resamples=50)
    assert set(lb.wide("<=1B", "gold")["verified"]) == {"verified (8 queries)"}
    assert "| reference · not sealed | verified (8 queries) |" in format_markdown(lb)


def test_an_edited_run_differs(store, corpus_root, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(store / "bm25", runs / "bm25")
    add_runs([runs / "bm25"], tmp_path / "store", n_resamples=50)
    # one score of one line nudged (what a submitter would do to a file after the run)
    path = runs / "bm25" / "run.jsonl"
    lines = path.read_text().splitlines()
    row = json.loads(lines[2])
    row["hits"][0][1] += 0.5
    lines[2] = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n")
    [r] = verify_store(tmp_path / "store", per_modality=50, seed=3, corpus=corpus_root)
    assert r["status"] == "differs"
    assert r["detail"].startswith(f"{row['query_id']}: the score of hit #1 ")
    assert any("edited after the run" in e for e in r["edited"])
    lb = leaderboard(tmp_path / "store", n_resamples=50)
    assert set(lb.wide("<=1B", "gold")["verified"]) == {f"differs ({r['detail']})"}
    # the command: exit 1 when an entry differs, one line per entry
    assert (
        main(["verify", str(tmp_path / "store"), "--seed", "3", "--corpus", str(corpus_root)]) == 1
    )


def test_an_edit_outside_the_lines_compared_is_still_caught(store, corpus_root, tmp_path):
    """The file's sha256 is the one the run recorded when it finished: a line the sample does
    not compare, edited, still makes the entry differ."""
    runs = tmp_path / "runs"
    shutil.copytree(store / "bm25", runs / "bm25")
    add_runs([runs / "bm25"], tmp_path / "store", n_resamples=50)
    path = runs / "bm25" / "run.jsonl"
    path.write_bytes(path.read_bytes().replace(b'"latency_ms":', b'"latency_ms": ', 1))
    [r] = verify_store(tmp_path / "store", per_modality=50, seed=3, corpus=corpus_root)
    assert r["status"] == "differs"
    assert "edited after the run" in r["detail"] and "sampled lines agree" in r["detail"]


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path / "w")


def test_a_user_module_is_made_again_from_its_spec(world, tmp_path, monkeypatch):
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    )
    out = tmp_path / "mine"
    run_system(
        make_system("namesakes:Mine", {"top": 2}),
        world["sets"],
        "dev",
        out,
        world["corpus"],
        manifest=world["manifest"],
        lock=world["lock"],
    )
    add_runs([out], tmp_path / "store", n_resamples=50)
    [r] = verify_store(
        tmp_path / "store",
        per_modality=2,
        seed=11,
        corpus=world["corpus"],
        manifest=world["manifest"],
    )
    assert r["status"] == "verified", r
    assert r["sample"] == {"queries": r["compared"], "whole": False, "limit": 2, "sample_seed": 11}
    assert 0 < r["compared"] < json.loads((out / "meta.json").read_text())["queries"]


def test_what_cannot_be_made_again_is_not_re_runnable(world, tmp_path):
    from namesakes import Mine

    out = tmp_path / "mine"
    run_system(
        Mine(),
        world["sets"],
        "dev",
        out,
        world["corpus"],
        manifest=world["manifest"],
        lock=world["lock"],
    )
    add_runs([out], tmp_path / "store", n_resamples=50)
    [r] = verify_store(tmp_path / "store", corpus=world["corpus"], manifest=world["manifest"])
    assert r["status"] == "not re-runnable" and "arguments are unknown" in r["detail"]
    lb = leaderboard(tmp_path / "store", n_resamples=50)
    assert set(lb.wide("<=1B", "gold")["verified"]) == {f"not re-runnable ({r['detail']})"}
