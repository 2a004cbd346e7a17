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
