"""Property-based fuzzing (hypothesis) of two more readers of files someone else may have
written: the leaderboard's result store (an entry file, and store.json, read by
``read_store`` and the tables of ``leaderboard``) and model cards (``read_card`` and
``load_card`` with its components). Same inputs and invariant as tests/test_fuzz_readers.py
(its helpers): a value or a :class:`MembenchError`, nothing else; and a store entry that was
changed at all is never read back as a result (refused, STORE_TAMPERED or another located
error), unless the change left its JSON equal. Profiles ``ci`` / ``long`` as there."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hostile_world import write_world
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_readers import check, fuzz, inputs, mutated_objects

from membench.analysis.leaderboard import ENTRIES, STORE_FILE, leaderboard, read_store
from membench.core.errors import MembenchError
from membench.core.paths import BENCH_DIR

CARDS = {
    n: json.loads((BENCH_DIR / "cards" / f"{n}.json").read_text())
    for n in ("bm25", "all-minilm-l6-v2", "hybrid")
}


@pytest.fixture(scope="module")
def store():
    """A small real store (one bm25 entry over the mini world's conversation queries), built
    once; each example works on a fresh copy."""
    from membench.analysis.leaderboard import add_runs
    from membench.run.runner import run_system
    from membench.systems import make_system

    d = Path(tempfile.mkdtemp(prefix="membench-fuzz-store-"))
    w = write_world(d / "w")
    run_system(
        make_system("bm25"),
        w["sets"],
        "dev",
        d / "run",
        w["corpus"],
        manifest=w["manifest"],
        lock=w["lock"],
        modalities=["conversation"],
    )
    add_runs([d / "run"], d / "s", n_resamples=50)
    entry = next((d / "s" / ENTRIES).iterdir())
    yield d / "s", entry.name, entry.read_bytes(), (d / "s" / STORE_FILE).read_bytes()
    shutil.rmtree(d, ignore_errors=True)


def _copy(store) -> Path:
    src = store[0]
    dst = Path(tempfile.mkdtemp(prefix="membench-fuzz-s-")) / "s"
    shutil.copytree(src, dst)
    return dst


@fuzz(60)
@given(draw=st.data())
def test_store_entry(store, draw):
    d, name, good, _ = store
    obj = json.loads(good)
    data = draw.draw(inputs([good], [obj]))
    s = _copy(store)
    try:
        (s / ENTRIES / name).write_bytes(data)
        try:
            _, entries = read_store(s)
        except MembenchError as e:
            assert str(e)
            return
        except RecursionError:  # the reader's own guard says so at the command line
            return
        # read back: only when the JSON did not change at all (an edit that keeps it equal,
        # e.g. whitespace), never a changed figure
        assert [json.loads(json.dumps(e)) for e in entries] == [obj], "a changed entry was read"
        check(lambda: leaderboard(s, n_resamples=20))
    finally:
        shutil.rmtree(s.parent, ignore_errors=True)


@fuzz(40)
@given(draw=st.data())
def test_store_json(store, draw):
    d, _, _, good = store
    obj = json.loads(good)
    data = draw.draw(
        inputs([good], None) | mutated_objects([obj], nested=True).map(lambda b: b.strip())
    )
    s = _copy(store)
    try:
        (s / STORE_FILE).write_bytes(data)
        check(lambda: read_store(s))
    finally:
        shutil.rmtree(s.parent, ignore_errors=True)


@fuzz(80)
@given(name=st.sampled_from(sorted(CARDS)), draw=st.data())
def test_cards(tmp_path_factory, name, draw):
    from membench.systems.cards import load_card, read_card

    good = json.dumps(CARDS[name], indent=1).encode()
    data = draw.draw(
        inputs([good], [CARDS[name]]).map(
            lambda b: b if not b.endswith(b"\n") or b.count(b"\n") > 1 else b.strip()
        )
    )
    d = tmp_path_factory.mktemp("cards")
    for n, c in CARDS.items():  # the components a hybrid names
        (d / f"{n}.json").write_text(json.dumps(c))
    (d / f"{name}.json").write_bytes(data)
    check(lambda: read_card(d / f"{name}.json"))
    check(lambda: load_card(name, d))
