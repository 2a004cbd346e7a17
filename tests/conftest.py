from pathlib import Path

import pytest

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
    """The full build of the real corpus, once per test session."""
    from membench.sets.build import build_sets

    return build_sets(corpus_root, tmp_path_factory.mktemp("sets"))


@pytest.fixture(scope="session")
def bm25_dev(built, corpus_root, tmp_path_factory):
    """bm25 on the whole dev split of the full build, once per test session (the frozen
    figures and the invariance tests read it). The sets' hard rules and audit gates are
    tests/test_build.py's; the run does not check them again (``check_sets=False``), so a
    gate that the built sets fail is one failure there, not an error in every test of a
    run."""
    from membench.run.runner import run_system
    from membench.systems import make_system

    out = tmp_path_factory.mktemp("bm25-dev")
    # 2 OCR workers on a machine whose OCR cache is cold (the output does not depend on it)
    meta = run_system(make_system("bm25", {"ocr_processes": 2}), built.out, "dev", out,
                      corpus_root, check_sets=False)
    return out, meta


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
    return ("browser tests: SKIPPED: chromium is not installed (apt-get install chromium; "
            ".ci/run does); the report pages are not opened in a browser")
