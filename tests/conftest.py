import os
from pathlib import Path

import pytest
from once import once

from membench.core.paths import corpus_root as _corpus_root

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def corpus_root() -> Path:
    """The real corpus mirror (../shared/corpus beside the checkout; CI has it there too)."""
    return _corpus_root()


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def built(tmp_path_factory, corpus_root):
    """The full build of the real corpus, once per test session (once for all xdist workers:
    tests/once.py)."""
    from membench.sets.build import build_sets

    return once(tmp_path_factory, "sets", lambda out: build_sets(corpus_root, out))


@pytest.fixture(scope="session")
def bm25_dev(built, corpus_root, tmp_path_factory):
    """bm25 on the whole dev split of the full build, once per test session and for all xdist
    workers (the frozen figures and the invariance tests read it). The sets' hard rules and
    audit gates are tests/test_build.py's; the run does not check them again
    (``check_sets=False``), so a gate that the built sets fail is one failure there, not an
    error in every test of a run."""
    from membench.run.runner import run_system
    from membench.systems import make_system

    def run(out: Path):
        # 2 OCR workers on a machine whose OCR cache is cold (the output does not depend on it)
        return out, run_system(
            make_system("bm25", {"ocr_processes": 2}),
            built.out,
            "dev",
            out,
            corpus_root,
            check_sets=False,
        )

    return once(tmp_path_factory, "bm25-dev", run)


@pytest.fixture(scope="session", autouse=True)
def _keep_items():
    """The test process parses an unchanged ``items.jsonl`` once (each in-process run, its
    scoring and each ``load_split`` read it again otherwise: seconds each on the real sets);
    every reader still gets items of its own (membench.run.split.read_items). Only this
    process: the runs' keepers and ``membench`` subprocesses read as a user's run does."""
    from membench.run import split

    split.KEEP_ITEMS = True
    yield
    split.KEEP_ITEMS = False
    split._KEPT.clear()


@pytest.fixture(scope="session", autouse=True)
def _no_score_cache():
    """Scores are computed in every test (a test that patches the scoring code must not read
    a stored result); tests/test_scorecache.py turns the cache on where it tests it."""
    import os

    old = os.environ.get("MEMBENCH_SCORE_CACHE")
    os.environ["MEMBENCH_SCORE_CACHE"] = "0"
    yield
    if old is None:
        os.environ.pop("MEMBENCH_SCORE_CACHE", None)
    else:
        os.environ["MEMBENCH_SCORE_CACHE"] = old


def pytest_report_header(config):
    """Whether the browser tests can run (they are skipped without Debian's chromium): said
    before the tests start, not only in the skip summary at the end."""
    from membench.report.browser_check import chromium

    exe = chromium()
    if exe:
        return f"browser tests: chromium at {exe}"
    return (
        "browser tests: SKIPPED: chromium is not installed (apt-get install chromium; "
        ".ci/run does); the report pages are not opened in a browser"
    )


#: session fixtures that make the full build of the real corpus (minutes on 2 cores, cold):
#: every test that asks for one is slow (make test-fast leaves it out)
FULL_BUILD = {"built", "bm25_dev"}
#: test files that are end-to-end runs of a whole tool on the fixture corpus, minutes each on
#: 2 cores (bench/results/testsuite.json's test-fast record): make's targets, a local Ray
#: cluster, library systems installed and run, every progress display, hostile report inputs
#: rendered. Slow as a whole: make test runs them, make test-fast leaves them out
SLOW_FILES = {
    "test_makefile.py",
    "test_ray_engine.py",
    "test_systems_library.py",
    "test_progress.py",
    "test_report_hostile.py",
}


def _file_seconds() -> dict[str, float]:
    """Each test file's seconds in the last measured whole suite (bench/results/testsuite.json,
    from bench/bench_testsuite.py --save); empty when there is none."""
    from membench.core.estimate import test_record

    rec = test_record("test") or {}
    files = rec.get("files")
    return files if isinstance(files, dict) else {}


def pytest_collection_modifyitems(config, items):
    """Marks every test that needs the full build, and every test of :data:`SLOW_FILES`, slow. Under pytest-xdist (make test: one
    file per worker at a time, in collection order) the files are ordered the longest first,
    by the last measure, and then those with a slow test, so that no long file starts last
    while the other workers have nothing left; a file's tests keep their order."""
    for item in items:
        if FULL_BUILD & set(getattr(item, "fixturenames", ())) or item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    seconds = _file_seconds()
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    root = Path(str(config.rootpath))

    def key(item):
        rel = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        return (-float(seconds.get(rel, 0.0)), item.path not in slow)

    items.sort(key=key)
