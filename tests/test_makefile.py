"""The Makefile works for any choice, in either order with a full run, on the fixture corpus:
a full bm25 run, then `make all SYSTEMS=hybrid LIMIT=2` (its own run folder, a report with
hybrid alone), `make report` for the runs that exist (running nothing, naming the ones left
out), a clear refusal when none exists, and a full run after a LIMIT run. Every target says
what it will do and what it costs, quiet and at the load now; `make all` prints short
summaries instead of full tables, no kernel warning, and ends with a terminal step table whose
total is its wall time; `make test` says whether the browser tests will run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from minicorpus import freeze, make_corpus

from membench.core.paths import REPO_ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")

VENV = Path(sys.executable).parent.parent


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("make")
    corpus = make_corpus(root)
    # a top-level make, as a user types it, even when the tests run under `make test`
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    env["MEMBENCH_CACHE"] = str(root / "cache")
    frozen = freeze(corpus, root, {"MEMBENCH_CACHE": env["MEMBENCH_CACHE"]})
    shutil.rmtree(frozen["sets"])  # make builds it
    return root, corpus, frozen, env


def make(tree, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    root, corpus, frozen, env = tree
    cmd = [
        "make",
        "-o",
        str(VENV / "bin" / "membench"),
        *args,
        f"VENV={VENV}",
        f"CORPUS={corpus}",
        f"MANIFEST={frozen['manifest']}",
        f"LOCK={frozen['lock']}",
        f"SETS={root / 'sets'}",
        f"RUNS={root / 'runs'}",
        f"REPORTS={root / 'reports'}",
        "RUNCONFIG=",
    ]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1200)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} -> {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    return proc


def meta(tree, name: str) -> dict:
    return json.loads((tree[0] / "runs" / name / "meta.json").read_text())


def seconds(text: str) -> float:
    """The first time in ``text`` (``12.3 s`` or ``m:ss.s``) as seconds."""
    m = re.search(r"(\d+):(\d\d\.\d)|(\d+\.\d) s", text)
    return 60 * int(m.group(1)) + float(m.group(2)) if m.group(1) else float(m.group(3))


def test_make_test_says_whether_the_browser_tests_run(tree):
    found = make(
        tree, "test", "PYTEST_ARGS=-q --co tests/test_estimate.py", f"CHROMIUM={sys.executable}"
    )
    assert f"browser tests: chromium found ({sys.executable})" in found.stdout
    missing = make(tree, "test", "PYTEST_ARGS=-q --co tests/test_estimate.py", "CHROMIUM=")
    assert (
        "browser tests: SKIPPED, chromium is not installed (apt-get install chromium"
        in missing.stdout
    )


def test_help_says_what_each_target_does_and_costs(tree):
    out = make(tree, "help").stdout
    for target in ("make all", "make sets", "make runs", "make reports", "make report"):
        assert target in out
    assert "Cold" in out and "min" in out and "warm" in out


def test_any_system_any_limit_in_either_order(tree):
    root = tree[0]
    full = make(tree, "runs", "SYSTEMS=bm25")
    assert "== sets:" in full.stdout and "== runs: bm25 on dev" in full.stdout
    assert "Cold" in full.stdout
    assert (
        meta(tree, "bm25-dev")["limit"] is None and meta(tree, "bm25-dev")["status"] == "complete"
    )

    t0 = time.monotonic()
    quick = make(tree, "all", "SYSTEMS=hybrid", "LIMIT=2")  # after a full run
    took = time.monotonic() - t0
    assert "== reports: pages 01-04 for" in quick.stdout
    out = quick.stdout.splitlines()
    assert out[0].startswith("== make all: ")  # what it will cost, first
    assert out[1].startswith("   Quiet machine (make bench-cold, load < 2, ")
    assert " path" in out[1] and "): cold " in out[1]  # which instruction-set path
    # short summaries, not the full tables (those are in metrics.json and the pages)
    assert re.search(r"^hybrid-dev-limit2: \d+ of \d+ gates pass", quick.stdout, re.M)
    assert "every figure with its 95% interval: membench metrics " in quick.stdout
    assert "best per headline measure over all items" in quick.stdout
    assert not re.search(r"^gates$", quick.stdout, re.M) and "ci95" not in quick.stdout
    assert "[IPKernelApp] WARNING" not in quick.stderr  # kernels over local sockets
    # the step table: plain text, and its total is the wall time of this make all
    table = out[out.index(next(x for x in out if x.startswith("== what each step"))) + 1 :]
    assert table[0].split()[:3] == ["command", "/", "step"] and "|" not in "".join(table)
    assert any(x.startswith("membench run --system hybrid") for x in table)
    total = next(x for x in table if x.startswith("all commands above"))
    wall = next(x for x in table if x.startswith("wall time, from the start to now: "))
    assert seconds(total) <= seconds(wall) <= took
    assert table[-1].startswith("load average (1 min): ")
    for step in ("build", "ingest (hybrid)", "queries (hybrid)", "bootstrap", "report"):
        assert f"[membench] {step} done: " in quick.stderr, step  # a summary per step
    # 01, hybrid's 02-04 and each baseline's and floor's, 05 comparing the six, 06
    assert re.search(r"\[membench\] report done: 21 pages, [\d.]+ (s|min)", quick.stderr)
    for name in ("nothing", "echo"):  # the baselines run beside it, in seconds
        assert f"== the baseline {name}" in quick.stdout
        assert meta(tree, f"{name}-dev-limit2")["status"] == "complete"
    for name in ("random", "newest", "oldest"):  # and the content-free floors, with a card
        assert f"== the content-free floor {name}" in quick.stdout
        m = meta(tree, f"{name}-dev-limit2")
        assert m["status"] == "complete" and m["card"]["name"] == name
    # page 02 shows the floors' recall@10 beside the run's; page 06 shows them, never ranked
    page = (root / "reports" / "hybrid-dev-limit2" / "02_run_dev.html").read_text()
    assert all(f"floor: {name}" in page for name in ("random", "newest", "oldest"))
    assert "margin over the best floor" in page
    board_page = (root / "reports" / "leaderboard-dev-limit2" / "06_leaderboard.html").read_text()
    assert "newest (content-free floor)" in board_page and "echo (baseline)" in board_page
    board = json.loads((root / "runs" / "leaderboard-dev-limit2" / "store.json").read_text())
    assert board["selection"]["limit"] == 2  # the leaderboard of this call
    kinds = sorted(
        json.loads(p.read_text())["identity"]["kind"]
        for p in (root / "runs" / "leaderboard-dev-limit2" / "entries").glob("*.json")
    )
    assert kinds == ["reference", *["test double"] * 5]  # hybrid, the baselines and floors
    assert (root / "reports" / "leaderboard-dev-limit2" / "06_leaderboard.html").exists()
    m = meta(tree, "hybrid-dev-limit2")
    assert m["limit"] == 2 and m["system"] == "hybrid" and m["status"] == "complete"
    assert sorted(p.name for p in (root / "reports" / "hybrid-dev-limit2").glob("*.html")) == [
        "02_run_dev.html",
        "03_slice_failures.html",
        "04_false_recalls.html",
    ]
    (sets_page,) = (root / "reports").glob("sets-*/01_validate_sets.html")  # once per sets
    assert meta(tree, "bm25-dev")["limit"] is None  # the full run is untouched

    # a complete run in a real memory system's folder joins the reports, an unfinished one not
    # (a copy of the bm25 run stands in for them: the Makefile reads only the folder and status)
    for name, status in (("mem0", "complete"), ("mempalace", "running")):
        shutil.copytree(root / "runs" / "bm25-dev", root / "runs" / f"{name}-dev")
        m = meta(tree, f"{name}-dev")  # another config: another leaderboard entry
        m["config"] = {**m["config"], "stand_in_for": name}
        (root / "runs" / f"{name}-dev" / "meta.json").write_text(
            json.dumps({**m, "status": status}, indent=1)
        )
    again = make(tree, "report", "SYSTEMS=bm25 dense")  # runs nothing
    assert "not run, left out:" in again.stdout and "dense-dev" in again.stdout
    assert "[membench] queries" not in again.stderr
    assert (root / "reports" / "bm25-dev" / "02_run_dev.html").exists()
    assert not (root / "runs" / "dense-dev").exists()
    index = (root / "reports" / "index.html").read_text()
    assert 'data-label="bm25-dev"' in index and 'data-label="hybrid-dev-limit2"' in index
    assert 'data-label="mem0-dev"' in index and 'data-label="mempalace-dev"' not in index
    for name in ("mem0", "mempalace"):
        shutil.rmtree(root / "runs" / f"{name}-dev")
    assert "leaderboard-dev/06_leaderboard.html" in index  # over the runs that exist
    # bm25 and the mem0 stand-in, and the baselines and floors `make runs SYSTEMS=bm25` ran
    kinds = sorted(
        json.loads(p.read_text())["identity"]["kind"]
        for p in (root / "runs" / "leaderboard-dev" / "entries").glob("*.json")
    )
    assert kinds == ["reference", "reference", *["test double"] * 5]

    none = make(tree, "report", "SYSTEMS=dense", check=False)
    assert none.returncode != 0 and "make runs SYSTEMS='dense' first" in none.stderr

    later = make(tree, "runs", "SYSTEMS=hybrid")  # a full run after a LIMIT one
    assert meta(tree, "hybrid-dev")["limit"] is None and "hybrid-dev" in later.stdout
    assert re.search(r"\[membench\] queries \(hybrid\) done: \d+ queries", later.stderr)


def test_any_registered_system_runs_through_make_doubles_and_libraries_included(tree):
    """`make all SYSTEMS=random LIMIT=N` (a test double: it takes no OCR setting; with the
    baselines and floors left out, no system but test doubles, so no leaderboard) and `make
    memsys MEMSYS=llamaindex LIMIT=N` work: the content layer's settings go to the content layer (CONTENT, --content), not to a
    system's config, and meta.json records them."""
    root = tree[0]
    double = make(tree, "all", "SYSTEMS=random oracle leaky", "LIMIT=2", "BASELINES=", "FLOORS=")
    assert "no leaderboard: test doubles only" in double.stdout
    # the first system alone until it has ingested (it does the OCR), then its queries beside
    # the other two, all complete; the flag file it touched is gone
    assert re.search(r"read the caches \([12] at a time\)", double.stdout)
    assert not list(root.rglob(".ingested-*"))
    for name in ("oracle", "leaky"):
        assert meta(tree, f"{name}-dev-limit2")["status"] == "complete"
    m = meta(tree, "random-dev-limit2")
    assert m["status"] == "complete" and m["config"] == {"seed": 0, "reads_gold": False}
    assert m["content"]["ocr_processes"] == 2 and m["store"]["atoms"] == m["atoms"]
    assert (root / "reports" / "random-dev-limit2" / "02_run_dev.html").exists()
    pytest.importorskip("llama_index.core")
    lib = make(tree, "memsys", "MEMSYS=llamaindex", "LIMIT=2")
    assert "== memsys: the real memory libraries llamaindex" in lib.stdout
    m = meta(tree, "llamaindex-dev-limit2")
    assert m["status"] == "complete" and m["content"]["ocr_processes"] == 2
    assert m["store"]["layout"] == "one" and m["store"]["per_store"]["all"]["atoms_stored"] > 0
