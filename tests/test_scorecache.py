"""A run's scores and metrics stored by the content of their inputs
(membench.metrics.scorecache): a hit equals a fresh computation to the bit, any changed input
is another key, a refused run stores nothing and is refused again, a broken file is computed
again."""

from __future__ import annotations

import json

import numpy as np
import pytest

from membench.core.errors import InputError
from membench.metrics import scorecache
from membench.metrics.rundir import RunDir
from membench.run.runner import run_system
from membench.systems import make_system


@pytest.fixture(scope="module")
def runs(built, corpus_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("scorecache-runs")
    # modalities whose content is read without the OCR or PDF caches a run fills (the tests
    # below use an empty cache): their scores are whole, so they are stored
    for name in ("oracle", "random"):
        run_system(
            make_system(name), built.out, "dev", out / name, corpus_root, limit=12, modalities=MODS
        )
    run_system(
        make_system("random"),
        built.out,
        "dev",
        out / "images",
        corpus_root,
        limit=5,
        modalities=["image"],
    )
    return out


MODS = ["video", "code", "conversation"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMBENCH_SCORE_CACHE", "1")
    return tmp_path / "cache" / "scores"


def _equal(a, b) -> None:
    assert [getattr(a, k) for k in scorecache.LISTS] == [getattr(b, k) for k in scorecache.LISTS]
    for k in scorecache.ARRAYS:
        x, y = getattr(a, k), getattr(b, k)
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), k
    for name in ("values", "atom_level"):
        da, db = getattr(a, name), getattr(b, name)
        assert list(da) == list(db)
        for m in da:
            assert da[m].dtype == db[m].dtype and np.array_equal(da[m], db[m], equal_nan=True)
    assert list(a.judgments) == list(b.judgments)
    for js in a.judgments:
        assert list(a.judgments[js]) == list(b.judgments[js])
        for m in a.judgments[js]:
            assert np.array_equal(a.judgments[js][m], b.judgments[js][m], equal_nan=True)
    assert a.atom_qrels == b.atom_qrels
    assert a.content == b.content


def test_a_hit_is_the_fresh_scores_and_metrics_to_the_bit(runs, cache, monkeypatch):
    for name in ("oracle", "random"):
        monkeypatch.setenv("MEMBENCH_SCORE_CACHE", "0")
        fresh = RunDir.open(runs / name)
        fresh_m = fresh.metrics(write=False, n_resamples=200)
        monkeypatch.setenv("MEMBENCH_SCORE_CACHE", "1")
        first = RunDir.open(runs / name)
        first_m = first.metrics(write=False, n_resamples=200)  # computed and stored
        again = RunDir.open(runs / name)
        calls = []
        monkeypatch.setattr("membench.metrics.rundir.score_items", lambda *a, **k: calls.append(1))
        monkeypatch.setattr("membench.metrics.rundir.aggregate", lambda *a, **k: calls.append(1))
        again_m = again.metrics(write=False, n_resamples=200)  # read back
        monkeypatch.undo()
        monkeypatch.setenv("MEMBENCH_CACHE", str(cache.parent))
        assert not calls
        _equal(fresh.scores(), first.scores())
        _equal(fresh.scores(), again.scores())
        assert (
            json.dumps(fresh_m, sort_keys=True)
            == json.dumps(first_m, sort_keys=True)
            == json.dumps(again_m, sort_keys=True)
        )
        assert fresh_m == again_m
    assert len(list(cache.glob("*.npz"))) == 2 and len(list(cache.glob("*.json"))) == 2


def test_scores_with_content_left_unread_are_not_stored(runs, cache):
    """Images whose OCR no run has cached here: their answer and context figures are left out
    (counted), and such scores are not kept, so they are computed again once the caches fill."""
    rd = RunDir.open(runs / "images")
    s = rd.scores()
    assert s.content["read"] and s.content["unread_records"] > 0
    assert rd._cache["scores_key"] is None
    assert not list(cache.glob("*.npz")) if cache.exists() else True
    calls = []
    import membench.metrics.rundir as rundir

    orig = rundir.score_items
    try:
        rundir.score_items = lambda *a, **k: calls.append(1) or orig(*a, **k)
        RunDir.open(runs / "images").scores()
    finally:
        rundir.score_items = orig
    assert calls == [1]  # computed again, not read back


def test_another_input_is_another_key_and_a_refusal_stores_nothing(runs, cache, tmp_path):
    import shutil

    d = tmp_path / "run"
    shutil.copytree(runs / "random", d)
    base = scorecache.key_of(RunDir.open(d))
    RunDir.open(d).scores()
    assert (cache / f"{base}.npz").is_file()
    keys = {base}
    lines = (d / "run.jsonl").read_text().splitlines(keepends=True)
    (d / "run.jsonl").write_text("".join(lines[:-1]))  # one line fewer: refused
    rd = RunDir.open(d)
    keys.add(scorecache.key_of(rd))
    with pytest.raises(InputError, match="no line"):
        rd.scores()
    assert not (cache / f"{scorecache.key_of(rd)}.npz").exists()
    with pytest.raises(InputError, match="no line"):  # and refused again
        RunDir.open(d).scores()
    assert scorecache.key_of(RunDir.open(d, partial=True)) not in keys  # partial: another key
    (d / "run.jsonl").write_text("".join(lines))
    assert scorecache.key_of(RunDir.open(d)) == base
    rd = RunDir.open(d)
    for change in ({"limit": 11}, {"modalities": ["pdf"]}, {"queries": 1}, {"split": "test"}):
        assert scorecache.key_of(RunDir(d, {**rd.meta, **change}, rd.sets_dir)) != base
    atoms = (d / "atoms.jsonl").read_bytes()
    (d / "atoms.jsonl").write_bytes(atoms + b"\n")
    assert scorecache.key_of(RunDir.open(d)) != base


def test_a_broken_file_is_computed_again_and_the_cache_can_be_off(runs, cache, monkeypatch):
    rd = RunDir.open(runs / "oracle")
    want = rd.scores()
    path = cache / f"{scorecache.key_of(rd)}.npz"
    for bad in (b"", b"not a zip", path.read_bytes()[:100]):
        path.write_bytes(bad)
        _equal(RunDir.open(runs / "oracle").scores(), want)
        assert path.read_bytes() not in (b"", b"not a zip") and len(path.read_bytes()) > 100
    monkeypatch.setenv("MEMBENCH_SCORE_CACHE", "0")
    path.unlink()
    RunDir.open(runs / "oracle").scores()
    assert not path.exists()


def test_source_digest_is_every_package_file_by_path_and_bytes():
    import hashlib

    from membench.core.hashing import PACKAGE, source_digest

    def by_hand(roots):
        h = hashlib.sha256()
        for root in roots:
            for src in sorted(root.rglob("*.py")):
                h.update(src.relative_to(PACKAGE).as_posix().encode() + b"\0")
                h.update(hashlib.sha256(src.read_bytes()).digest())
        return h.hexdigest()

    assert source_digest() == by_hand([PACKAGE])
    subs = ("sets", "core", "modalities")
    assert source_digest(subs) == by_hand([PACKAGE / s for s in subs])
    assert len({source_digest(), source_digest(subs), source_digest(("core",))}) == 3
    from membench.core.hashing import code_digest
    from membench.metrics import scorecache
    from membench.run import ray_engine

    assert code_digest() == source_digest()
    assert scorecache.code_digest is ray_engine.code_digest is code_digest  # one, imported


def test_the_same_lines_with_other_latencies_are_read_back_with_their_own(
    runs, cache, tmp_path, monkeypatch
):
    """A run again with the same lines but other latencies (every warm make all): its scores
    are read back with its own latencies, equal to a fresh scoring; its latency figures are
    its own (the aggregate's key holds them); a line not in the canonical form keys the whole
    file."""
    import re
    import shutil

    d = tmp_path / "run"
    shutil.copytree(runs / "random", d)
    first = RunDir.open(d)
    first_m = first.metrics(write=False, n_resamples=200)
    base = scorecache.key_of(first)
    data = (d / "run.jsonl").read_bytes()
    slower = re.sub(
        rb'"latency_ms":[^,]+,', lambda m: b'"latency_ms":%d.25,' % (len(m.group(0)) + 40), data
    )
    assert slower != data
    (d / "run.jsonl").write_bytes(slower)
    assert scorecache.key_of(RunDir.open(d)) == base
    calls = []
    import membench.metrics.rundir as rundir

    orig = rundir.score_items
    monkeypatch.setattr(rundir, "score_items", lambda *a, **k: calls.append(1) or orig(*a, **k))
    again = RunDir.open(d)
    again_m = again.metrics(write=False, n_resamples=200)
    assert not calls  # read back, not scored
    monkeypatch.setattr(rundir, "score_items", orig)
    monkeypatch.setenv("MEMBENCH_SCORE_CACHE", "0")
    fresh = RunDir.open(d)
    fresh_m = fresh.metrics(write=False, n_resamples=200)
    _equal(again.scores(), fresh.scores())
    assert not np.array_equal(again.scores().latency_ms, first.scores().latency_ms)
    assert (
        json.dumps(again_m, sort_keys=True)
        == json.dumps(fresh_m, sort_keys=True)
        != json.dumps(first_m, sort_keys=True)
    )
    monkeypatch.setenv("MEMBENCH_SCORE_CACHE", "1")
    spaced = slower.replace(b'"latency_ms":', b'"latency_ms": ', 1)  # not canonical
    (d / "run.jsonl").write_bytes(spaced)
    assert scorecache.lines_without_latency(d / "run.jsonl") is None
    assert scorecache.key_of(RunDir.open(d)) != base


def test_a_derived_object_is_keyed_by_the_scores_without_their_latencies(cache):
    """scorecache.derived: stored under the scores' key less its latency digest (the
    leaderboard's figures but the latency), read back for the same lines with other
    latencies; another name or scores key is computed; no key (cache off) computes."""
    calls = []

    def compute(v):
        return lambda: calls.append(v) or {"v": v, "nan_free": [0.1 + 0.2, None]}

    first = scorecache.derived("a" * 64 + "-lat1", "entry-1", compute(1))
    again = scorecache.derived("a" * 64 + "-lat2", "entry-1", compute(2))
    assert calls == [1] and first == again == {"v": 1, "nan_free": [0.1 + 0.2, None]}
    assert scorecache.derived("a" * 64 + "-lat1", "entry-2", compute(3))["v"] == 3
    assert scorecache.derived("b" * 64 + "-lat1", "entry-1", compute(4))["v"] == 4
    assert scorecache.derived(None, "entry-1", compute(5))["v"] == 5
    assert calls == [1, 3, 4, 5]
    assert scorecache.derived("c" * 64, "x", lambda: {"v": float("nan")})["v"] != 0  # not stored
    assert not (cache / f"{'c' * 64}.x.json").exists()
