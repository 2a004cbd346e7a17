"""membench.analysis.compare.paired_test by holder: the cluster sign-flip test and the holder
bootstrap where a comparison's items come from at least MIN_HOLDERS_CI holders, per item with
fewer (and said); its size under a holder-level null with correlated queries, its power, a
hand-enumerated case with ties, and the callers that show the unit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from membench.analysis.compare import (
    _paired_test,
    best_systems,
    format_comparison,
    paired_test,
    unit_note,
    verdict,
)
from membench.sets.audit import MIN_HOLDERS_CI


def _clustered_null(rng, k: int = 30, per: int = 20, shift: float = 0.0):
    """Differences in {-1, 0, 1} of ``k`` holders x ``per`` queries: each holder has its own
    lean ``tanh(u)``, u ~ N(0, 1) symmetric (so the holders' mean difference is 0 under no
    shift), and its queries follow it (strongly correlated within the holder); ``shift`` is
    added to every difference (a true difference)."""
    lean = np.tanh(rng.normal(0.0, 1.0, k))
    p_up = 0.3 * (1 + lean)
    p_down = 0.3 * (1 - lean)
    r = rng.random((k, per))
    d = np.where(r < p_up[:, None], 1.0, np.where(r < (p_up + p_down)[:, None], -1.0, 0.0))
    holders = np.repeat([f"h{i:02d}" for i in range(k)], per)
    return d.ravel() + shift, holders


def _rates(shift: float, n_sims: int = 300, n_resamples: int = 400):
    rng = np.random.default_rng(20240607)
    clus = flat = both = 0
    for s in range(n_sims):
        d, h = _clustered_null(rng, shift=shift)
        z = np.zeros_like(d)
        t = _paired_test(
            d,
            z,
            f"sim|{s}",
            n_resamples=n_resamples,
            seed=1,
            level=0.95,
            groups=np.unique(h, return_inverse=True)[1],
        )
        assert t["unit"] == "holder" and t["holders"] == 30
        o = _paired_test(d, z, f"sim|{s}", n_resamples=n_resamples, seed=1, level=0.95)
        assert o["unit"] == "record"
        clus += t["p_permutation"] < 0.05
        both += t["p_permutation"] < 0.05 and t["p_bootstrap"] < 0.05
        flat += o["p_permutation"] < 0.05
    return clus / n_sims, both / n_sims, flat / n_sims


def test_size_under_a_holder_level_null():
    """No true difference between the holders, queries strongly correlated within a holder:
    the clustered test rejects at about alpha; the per-query test (items as independent) far
    more often, which is why the test clusters."""
    clus, both, flat = _rates(0.0)
    assert 0.02 <= clus <= 0.09, clus
    assert both <= 0.09, both
    assert flat >= 0.3, flat  # the per-query test: about half, not 5%
    assert flat > 4 * clus


def test_power_with_a_true_shift():
    clus, both, flat = _rates(0.25, n_sims=100)
    assert clus >= 0.9 and both >= 0.9, (clus, both)


def test_hand_enumerated_cluster_sign_flip_with_ties():
    # three holders of two queries each; d = a - b per holder: A [1, 1], B [1, 0], C [0, 1]
    a = np.array([1, 1, 1, 0, 0, 1], dtype=float)
    b = np.zeros(6)
    g = ["A", "A", "B", "B", "C", "C"]
    # holder sums 2, 1, 1 (B and C tie); observed mean 4/6. The 2^3 flips give sums
    # 4, 2, 2, 0, 0, -2, -2, -4: |sum| >= 4 (reached with equality) in 2 of 8 -> p = 1/4
    sums = [sum(s * x for s, x in zip(f, (2, 1, 1))) for f in itertools.product((1, -1), repeat=3)]
    assert sorted(sums) == [-4, -2, -2, 0, 0, 2, 2, 4]
    t = paired_test(a, b, "hand", groups=g, n_resamples=40_000, min_holders=3)
    assert t["unit"] == "holder" and t["holders"] == 3 and t["n"] == 6
    assert t["diff"] == pytest.approx(4 / 6)
    assert t["p_permutation"] == pytest.approx(0.25, abs=0.008)
    # the per-query test sees 4 nonzero differences: 2 of the 16 flips reach 4 -> p = 1/8
    r = paired_test(a, b, "hand", n_resamples=40_000)
    assert r["unit"] == "record" and r["p_permutation"] == pytest.approx(0.125, abs=0.006)
    # the holder bootstrap: a draw of three holders (each brings 2 queries) has the mean
    # (sum of its holders' sums) / 6, between 3/6 (P = 8/27) and 6/6 (P = 1/27): the 95%
    # interval is [0.5, 1.0]; |m* - 4/6| >= 4/6 never happens, so p = 1 / (1 + B)
    assert (t["diff_ci95_lo"], t["diff_ci95_hi"]) == (pytest.approx(0.5), pytest.approx(1.0))
    assert t["p_bootstrap"] == pytest.approx(1 / 40_001)


def test_fewer_holders_fall_back_to_per_query_and_say_so():
    rng = np.random.default_rng(5)
    a, b = rng.random(90), rng.random(90)
    few = [f"h{i % (MIN_HOLDERS_CI - 1)}" for i in range(90)]
    t = paired_test(a, b, "few", groups=few, n_resamples=500)
    plain = paired_test(a, b, "few", n_resamples=500)
    assert t["unit"] == "record" and t["holders"] == MIN_HOLDERS_CI - 1
    assert {k: v for k, v in t.items() if k != "holders"} == {
        k: v for k, v in plain.items() if k != "holders"
    }  # the per-query test
    assert (
        unit_note(t["unit"], t["holders"])
        == f"resampled by record ({MIN_HOLDERS_CI - 1} holders, under {MIN_HOLDERS_CI})"
    )
    enough = [f"h{i % MIN_HOLDERS_CI}" for i in range(90)]
    t = paired_test(a, b, "few", groups=enough, n_resamples=500)
    assert t["unit"] == "holder" and t["holders"] == MIN_HOLDERS_CI
    assert unit_note("holder", 10) == "resampled by holder (10 holders)"
    # the holders counted are those of the items both systems define
    a2 = a.copy()
    a2[np.array([int(x[1:]) for x in enough]) == 0] = np.nan
    assert (
        paired_test(a2, b, "few", groups=enough, n_resamples=200)["holders"] == MIN_HOLDERS_CI - 1
    )
    with pytest.raises(ValueError):
        paired_test(a, b, "few", groups=enough[:-1], n_resamples=200)


def test_one_query_per_holder_is_the_per_query_test():
    # holders named in the items' order: the same draws, so the same p-values
    rng = np.random.default_rng(8)
    a, b = rng.random(40), rng.random(40)
    g = [f"h{i:02d}" for i in range(40)]
    t, r = (paired_test(a, b, "one", groups=x, n_resamples=800) for x in (g, None))
    assert t["unit"] == "holder" and r["unit"] == "record"
    for k in ("p_permutation", "p_bootstrap", "diff_ci95_lo", "diff_ci95_hi"):
        assert t[k] == pytest.approx(r[k], rel=1e-12)


def test_seeded_and_independent_of_holder_names():
    d, h = _clustered_null(np.random.default_rng(4))
    z = np.zeros_like(d)
    t = paired_test(d, z, "s", groups=h, n_resamples=300)
    assert t == paired_test(d, z, "s", groups=h, n_resamples=300)
    renamed = np.array([x.replace("h", "holder-") for x in h])
    assert paired_test(d, z, "s", groups=renamed, n_resamples=300) == t


class _Scores:
    def __init__(self, ids, rec, holders):
        self.query_id = list(ids)
        self.modality = ["pdf"] * len(ids)
        self.holder = list(holders)
        self.values = {"recall@10": np.asarray(rec, dtype=float)}
        self.latency_ms = np.ones(len(ids))


def test_best_systems_and_verdict_show_the_unit():
    rng = np.random.default_rng(9)
    d, h = _clustered_null(rng, k=12, per=10)
    ids = [f"q{i}" for i in range(d.size)]
    good = (d > 0).astype(float)
    bad = (d < 0).astype(float)
    rev = slice(None, None, -1)  # b lists its items backwards, with its holders
    rows = best_systems(
        {"a": _Scores(ids, good, h), "b": _Scores(ids[rev], bad[rev], h[rev])},
        measures=("recall@10",),
        n_resamples=500,
    )
    (r,) = rows
    assert (r["unit"], r["holders"]) == ("holder", 12)
    t = paired_test(good, bad, "best|all|recall@10", groups=h, n_resamples=500)
    assert r["p_permutation"] == t["p_permutation"]
    assert "resampled by holder (12 holders)" in verdict(rows)
    few = best_systems(
        {"a": _Scores(ids, good, ["x"] * len(ids)), "b": _Scores(ids, bad, ["x"] * len(ids))},
        measures=("recall@10",),
        n_resamples=200,
    )
    assert few[0]["unit"] == "record"
    assert f"resampled by record (1 holder, under {MIN_HOLDERS_CI})" in verdict(few)
    from membench.report.summary import best_table_html

    assert "resampled by holder (12 holders)" in best_table_html(rows)


def test_format_comparison_shows_the_unit():
    from types import SimpleNamespace

    import pandas as pd

    pairs = pd.DataFrame(
        [
            {
                "scope": "all",
                "metric": "recall@10",
                "system_a": "a",
                "system_b": "b",
                "n": 100,
                "diff": 0.1,
                "diff_ci95_lo": 0.0,
                "diff_ci95_hi": 0.2,
                "p_perm_holm": 0.04,
                "significant_0.05": True,
                "unit": "holder",
                "holders": 30,
            },
            {
                "scope": "pdf",
                "metric": "recall@10",
                "system_a": "a",
                "system_b": "b",
                "n": 50,
                "diff": 0.1,
                "diff_ci95_lo": 0.0,
                "diff_ci95_hi": 0.2,
                "p_perm_holm": 0.04,
                "significant_0.05": True,
                "unit": "record",
                "holders": 9,
            },
        ]
    )
    comp = SimpleNamespace(
        labels=["a", "b"],
        run_dirs=["ra", "rb"],
        judgment_set="gold",
        summary=pd.DataFrame(columns=["scope", "system", "metric", "value", "n", "denominator"]),
        pairs=pairs,
    )
    text = format_comparison(comp)
    assert "p_holm=0.0400 by holder (30)" in text
    assert "p_holm=0.0400 by record (9 holders)" in text
    assert f"at least {MIN_HOLDERS_CI} holders" in text
