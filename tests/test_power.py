"""The power table (docs/sets.md, "How small a difference the dev split can tell"): the
minimum detectable difference on a hand-computed case, against an independent clustered
variance, against membench's own paired test by simulation, and the holder clustering."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from membench.analysis.power import (
    items_needed,
    mdd,
    mean_variance,
    power_sentence,
    simulate_power,
    typical_pair,
    z_sum,
)
from membench.report.summary import best_block_html
from membench.sets.build import read_lock

REPO = Path(__file__).resolve().parents[1]
Z = 1.959964 + 0.841621  # z_0.975 + z_0.80, from a normal table


def _scores(vals: dict[str, list[float]], holders: list[str], modality: str = "image"):
    n = len(holders)
    return {
        lab: SimpleNamespace(
            query_id=[f"q{i}" for i in range(n)],
            modality=[modality] * n,
            holder=list(holders),
            values={"recall@10": np.asarray(v, dtype=float)},
        )
        for lab, v in vals.items()
    }


def test_hand_computed_case():
    # d = a - b = [1, 0, 0, 1, -1, 1], mean 1/3; centred: 2/3, -1/3, -1/3, 2/3, -4/3, 2/3
    a = [1, 1, 0, 1, 0, 1]
    b = [0, 1, 0, 0, 1, 0]
    d = np.subtract(a, b)
    # by record: s^2 = (30/9) / 5 = 2/3, var of the mean = 2/3 / 6 = 1/9
    assert mean_variance(d) == pytest.approx(1 / 9)
    # by holder {0,1} {2,3} {4,5}: sums 1/3, 1/3, -2/3 -> squares 6/9; x 3/2 / 36 = 1/36
    g = ["x", "x", "y", "y", "z", "z"]
    assert mean_variance(d, g) == pytest.approx(1 / 36)
    assert z_sum() == pytest.approx(Z, abs=1e-6)
    assert mdd(1 / 3) == pytest.approx(Z / 3, abs=1e-6)  # 0.933862
    sc = _scores({"a": a, "b": b}, g)
    r = typical_pair(sc, "recall@10", min_holders=3)
    assert (r["unit"], r["n"], r["holders"]) == ("holders", 6, 3)
    assert r["mdd"] == pytest.approx(Z / 6, abs=1e-6)
    assert r["mdd_records"] == pytest.approx(Z / 3, abs=1e-6)
    assert r["design_effect"] == pytest.approx(0.25)
    # under min_holders: read by record
    assert typical_pair(sc, "recall@10", min_holders=4)["mdd"] == pytest.approx(Z / 3, abs=1e-6)


def test_items_needed_scales_the_variance_as_one_over_n():
    # the hand case's holder MDD is Z/6 over 6 items; an MDD half as large needs 4x the items,
    # and the same MDD needs no more than it has
    row = {"mdd": Z / 6, "n": 6}
    assert items_needed(row, Z / 12) == 24
    assert items_needed(row, Z / 6) == 6
    # 223 items at MDD 0.1155 for a target of 0.05: 223 * (0.1155 / 0.05)^2 = 1189.9 -> 1190
    assert items_needed({"mdd": 0.1155, "n": 223}, 0.05) == 1190
    assert items_needed({"mdd": None, "n": 10}, 0.05) is None


def _cluster_var_loop(d, g):
    """Cluster-robust variance of a mean, written out holder by holder."""
    m = sum(d) / len(d)
    hs = sorted(set(g))
    tot = 0.0
    for h in hs:
        s = sum(x - m for x, y in zip(d, g) if y == h)
        tot += s * s
    return len(hs) / (len(hs) - 1) * tot / len(d) ** 2


def test_clustered_variance_against_a_loop_and_one_item_per_holder():
    rng = np.random.default_rng(3)
    d = rng.integers(-1, 2, 90).astype(float)
    g = [f"h{i % 11}" for i in rng.permutation(90)]
    assert mean_variance(d, g) == pytest.approx(_cluster_var_loop(list(d), g), rel=1e-12)
    # one item per holder: the clustered variance is the by-record one
    assert mean_variance(d, [str(i) for i in range(90)]) == pytest.approx(mean_variance(d))


def test_duplicating_every_holders_queries_does_not_shrink_the_clustered_mdd():
    rng = np.random.default_rng(7)
    holders = [f"h{i}" for i in range(12) for _ in range(15)]
    eff = {h: rng.normal(0, 0.3) for h in set(holders)}  # a holder's queries move together
    a = [float(rng.random() < min(1, max(0, 0.6 + eff[h]))) for h in holders]
    b = [float(rng.random() < 0.55) for _ in holders]
    one = typical_pair(_scores({"a": a, "b": b}, holders), "recall@10")
    two = typical_pair(_scores({"a": a * 2, "b": b * 2}, holders * 2), "recall@10")
    assert one["unit"] == two["unit"] == "holders"
    assert two["mdd"] == pytest.approx(one["mdd"], rel=1e-9)
    # independent records would have gained sqrt(2) (up to the ddof of the sample variance)
    assert two["mdd_records"] == pytest.approx(one["mdd_records"] / math.sqrt(2), rel=0.01)
    assert two["mdd_records"] < 0.75 * one["mdd_records"]


def test_typical_pair_is_the_median_and_leaves_identical_pairs_out():
    holders = [f"h{i % 4}" for i in range(8)]
    sc = _scores(
        {
            "a": [1, 1, 1, 1, 0, 0, 0, 0],
            "b": [1, 0, 1, 0, 1, 0, 1, 0],
            "c": [1, 0, 1, 0, 1, 0, 1, 0],
            "d": [0, 0, 0, 0, 1, 1, 1, 1],
        },
        holders,
    )
    r = typical_pair(sc, "recall@10", min_holders=100)
    assert r["pairs"]["b vs c"]["identical"]
    var = sorted(
        mean_variance(np.subtract(sc[x].values["recall@10"], sc[y].values["recall@10"]))
        for x, y in [("a", "b"), ("a", "c"), ("a", "d"), ("b", "d"), ("c", "d")]
    )
    assert r["mdd"] == pytest.approx(Z * math.sqrt(var[2]), abs=1e-6)
    assert r["unit"] == "records"
    # every pair identical: no variance, no MDD
    same = _scores({"a": [1, 0, 1, 0], "b": [1, 0, 1, 0]}, ["h"] * 4)
    assert typical_pair(same, "recall@10")["mdd"] is None


def test_simulation_agrees_with_the_normal_approximation():
    """At the MDD, membench's paired test (permutation and bootstrap, p < 0.05) is significant
    about 80% of the time; with no difference, about 5% (small, seeded)."""
    rng = np.random.default_rng(11)
    d = rng.choice([-1.0, 0.0, 1.0], size=150, p=[0.15, 0.7, 0.15])
    delta = mdd(math.sqrt(mean_variance(d)))
    hit = simulate_power(d, delta, n_sims=150, n_resamples=400, seed=5)
    assert 0.68 <= hit["rate"] <= 0.92, hit
    null = simulate_power(d, 0.0, n_sims=150, n_resamples=400, seed=5)
    assert null["rate"] <= 0.12, null
    # half the MDD is detected far less often: the figure is not loose
    half = simulate_power(d, delta / 2, n_sims=150, n_resamples=400, seed=5)
    assert half["rate"] < 0.5, half


def test_sentence_and_index_block():
    holders = [f"h{i % 12}" for i in range(48)]
    rng = np.random.default_rng(1)
    sc = _scores({"a": rng.integers(0, 2, 48), "b": rng.integers(0, 2, 48)}, holders)
    for v in sc.values():
        v.values["false_recall_rate"] = v.values["recall@10"][::-1].copy()
    rows = {m: typical_pair(sc, m) for m in ("recall@10", "false_recall_rate")}
    s = power_sentence(rows, "dev")
    assert f"\u2265 {rows['recall@10']['mdd']:.3f} in recall@10" in s
    assert "clustered by holder: 12 holders" in s and "80% power" in s
    html = best_block_html([], "A <b> verdict", power=s)
    assert 'class="mb-power"' in html and "A &lt;b&gt; verdict" in html


def test_published_result_matches_the_lock():
    d = json.loads((REPO / "bench" / "results" / "power.json").read_text())
    assert d["set_sha256"] == read_lock(REPO / "bench" / "sets.lock.json")
    assert d["split"] == "dev" and len(d["runs"]) >= 2
    for scope, ms in d["power"].items():
        for r in ms.values():
            assert r["unit"] == ("holders" if r["holders"] >= r["min_holders"] else "records")
    assert d["counts"]["all"]["records"] == sum(
        c["records"] for s, c in d["counts"].items() if s != "all"
    )


def test_clustered_mdd_agrees_with_the_clustered_test():
    """Drawn by holder (as a new set of holders would be), membench's paired test, which now
    resamples by holder too, detects the holder-clustered MDD about 80% of the time and calls
    a zero difference significant about 5% of the time (small, seeded)."""
    rng = np.random.default_rng(13)
    lean = np.tanh(rng.normal(0.0, 0.8, 30))  # a holder's queries lean together
    r = rng.random((30, 20))
    d = np.where(r < 0.3 * (1 + lean)[:, None], 1.0, np.where(r < 0.6, -1.0, 0.0)).ravel()
    g = np.repeat([f"h{i}" for i in range(30)], 20)
    delta = mdd(math.sqrt(mean_variance(d, g)))
    assert delta > 1.5 * mdd(math.sqrt(mean_variance(d)))  # clustering matters here
    hit = simulate_power(d, delta, groups=g, n_sims=150, n_resamples=400, seed=5)
    assert hit["by"] == "holders" and 0.65 <= hit["rate"] <= 0.92, hit
    null = simulate_power(d, 0.0, groups=g, n_sims=150, n_resamples=400, seed=5)
    assert null["rate"] <= 0.10, null
