"""The store of seeded statistics by content (membench.analysis.statcache) and the paired
test through it."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from membench.analysis import statcache
from membench.analysis.compare import _paired_test, paired_test


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMBENCH_STATS_CACHE", "1")
    monkeypatch.setattr(statcache, "_CON", None)
    yield tmp_path / "cache" / "stats" / "stats.sqlite3"
    statcache._CON = None


def _same(x: dict, y: dict) -> bool:
    return x.keys() == y.keys() and all(
        (isinstance(v, float) and math.isnan(v) and math.isnan(y[k])) or v == y[k]
        for k, v in x.items()
    )


def test_a_hit_is_the_computed_result_to_the_bit(cache):
    rng = np.random.default_rng(3)
    a, b = rng.random(500), rng.random(500)
    a[::7] = np.nan
    fresh = _paired_test(a, b, "k", n_resamples=2000, seed=1, level=0.95)
    first = paired_test(a, b, "k", n_resamples=2000, seed=1)
    assert cache.is_file() and _same(first, fresh)
    calls = []
    got = statcache.cached(
        "paired_test",
        statcache.__file__,
        (a, b),
        {"x": 1},
        lambda: calls.append(1) or {"v": 0.1 + 0.2},
    )
    again = statcache.cached(
        "paired_test", statcache.__file__, (a, b), {"x": 1}, lambda: calls.append(1) or {"v": -1.0}
    )
    assert calls == [1] and got == again == {"v": 0.1 + 0.2}
    second = paired_test(a, b, "k", n_resamples=2000, seed=1)
    assert _same(second, fresh) and second is not first
    # nothing computed the second time: a poisoned row shows it is read back
    con = sqlite3.connect(cache)
    con.execute("UPDATE result SET value = ?", ('{"poisoned": true}',))
    con.commit()
    assert paired_test(a, b, "k", n_resamples=2000, seed=1) == {"poisoned": True}


def test_other_inputs_other_keys(cache):
    a, b = np.arange(10.0), np.arange(10.0)[::-1].copy()
    base = statcache.key_of("t", statcache.__file__, (a, b), {"k": 1})
    b2 = b.copy()
    b2[0] += 1e-12
    assert base != statcache.key_of("t", statcache.__file__, (a, b2), {"k": 1})
    assert base != statcache.key_of("t", statcache.__file__, (a, b), {"k": 2})
    assert base != statcache.key_of("u", statcache.__file__, (a, b), {"k": 1})
    assert base != statcache.key_of("t", statcache.__file__, (b, a), {"k": 1})
    assert base != statcache.key_of("t", statcache.__file__, (a.astype(np.float32), b), {"k": 1})
    assert base == statcache.key_of("t", statcache.__file__, (a.copy(), b.copy()), {"k": 1})
    r1 = paired_test(a, b, "k1", n_resamples=500)
    r2 = paired_test(a, b, "k2", n_resamples=500)  # another key: another random stream
    assert r1["diff"] == r2["diff"]
    assert (r1["diff_ci95_lo"], r1["diff_ci95_hi"], r1["p_permutation"]) != (
        r2["diff_ci95_lo"],
        r2["diff_ci95_hi"],
        r2["p_permutation"],
    )


def test_torn_rows_and_an_unusable_cache_only_cost_time(cache, tmp_path, monkeypatch):
    a, b = np.linspace(0, 1, 50), np.linspace(1, 0, 50)
    first = paired_test(a, b, "k", n_resamples=300)
    con = sqlite3.connect(cache)
    con.execute("UPDATE result SET value = ?", ("{not json",))
    con.commit()
    assert _same(paired_test(a, b, "k", n_resamples=300), first)  # computed again
    monkeypatch.setattr(statcache, "_CON", None)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("MEMBENCH_CACHE", str(blocker))  # cache_dir cannot be made
    from membench.core.paths import cache_dir

    with pytest.raises(OSError):
        cache_dir("stats")
    assert _same(paired_test(a, b, "k", n_resamples=300), first)
    monkeypatch.setenv("MEMBENCH_STATS_CACHE", "0")
    calls = []
    statcache.cached("t", statcache.__file__, (a,), {}, lambda: calls.append(1) or {})
    statcache.cached("t", statcache.__file__, (a,), {}, lambda: calls.append(1) or {})
    assert calls == [1, 1]


def test_an_abstention_order_difference_is_stored_and_read_back_to_the_bit(cache):
    """ordering_difference: the paired bootstrap of an abstention-order statistic, computed
    once; the same orders give the stored result, other orders another key."""
    from membench.analysis.paired import ordering_difference
    from membench.metrics import abstention

    rng = np.random.default_rng(5)
    n = 400
    ans = rng.random(n) < 0.7
    mods = np.array(["pdf", "video"], dtype=object)[rng.integers(0, 2, n)]
    a = abstention.Ordering(rng.random(n), rng.random(n) < 0.8, ans, mods)
    b = abstention.Ordering(rng.random(n), rng.random(n) < 0.6, ans, mods)
    for m in (abstention.AUC, abstention.KEPT):
        fresh = abstention.paired_difference(
            a, b, m, "all|x", max_false_recall=0.1, n_resamples=300, seed=2
        )
        first = ordering_difference(a, b, m, "all|x", max_false_recall=0.1, n_resamples=300, seed=2)
        assert _same(first, fresh) and _same(
            ordering_difference(a, b, m, "all|x", max_false_recall=0.1, n_resamples=300, seed=2),
            fresh,
        )
    con = sqlite3.connect(cache)
    assert con.execute("SELECT count(*) FROM result").fetchone()[0] == 2
    con.execute("UPDATE result SET value = ?", ('{"poisoned": true}',))
    con.commit()
    assert ordering_difference(
        a, b, abstention.AUC, "all|x", max_false_recall=0.1, n_resamples=300, seed=2
    ) == {"poisoned": True}
    c = abstention.Ordering(rng.random(n), rng.random(n) < 0.8, ans, mods)
    other = ordering_difference(
        c, b, abstention.AUC, "all|x", max_false_recall=0.1, n_resamples=300, seed=2
    )
    assert _same(
        other,
        abstention.paired_difference(
            c, b, abstention.AUC, "all|x", max_false_recall=0.1, n_resamples=300, seed=2
        ),
    )
