"""membench.analysis.compare: side-by-side tables, paired significance, comparability checks."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from test_slices import small_runs

from membench.analysis.compare import (
    ComparisonError,
    compare_runs,
    holm,
    paired_test,
    plot_first_stage,
)
from membench.run.runner import run_system
from membench.systems import make_system

B = 2000


@pytest.fixture(scope="module")
def runs(tmp_path_factory, built, corpus_root):
    return small_runs(tmp_path_factory, built, corpus_root)


@pytest.fixture(scope="module")
def oracle_vs_random(runs):
    return compare_runs([runs["oracle"], runs["random"]], n_resamples=B)


# --------------------------------------------------------------------------- the tests alone


def test_paired_test_identical_and_shifted():
    rng = np.random.default_rng(1)
    a = rng.random(50)
    t = paired_test(a, a.copy(), "k", n_resamples=B)
    assert t["diff"] == 0.0 and t["p_bootstrap"] == 1.0 and t["p_permutation"] == 1.0
    assert t["diff_ci95_lo"] == 0.0 == t["diff_ci95_hi"]
    t = paired_test(a + 1.0, a, "k", n_resamples=B)
    assert t["diff"] == pytest.approx(1.0)
    assert t["diff_ci95_lo"] == pytest.approx(1.0) and t["diff_ci95_hi"] == pytest.approx(1.0)
    assert t["p_permutation"] == pytest.approx(1 / (B + 1))  # never exactly 0
    assert t["p_bootstrap"] == pytest.approx(1 / (B + 1))


def test_permutation_p_matches_exact_sign_flip():
    # d = [1, 1, 1, 1]: exactly 2 of the 16 sign patterns reach |mean| >= 1 -> p = 1/8
    t = paired_test(np.ones(4), np.zeros(4), "exact", n_resamples=20_000)
    assert t["p_permutation"] == pytest.approx(0.125, abs=0.01)
    # NaN (outside the denominator) pairs are dropped, not counted
    a = np.array([1.0, np.nan, 0.0, 1.0])
    t = paired_test(a, np.array([0.0, np.nan, 0.0, 1.0]), "nan", n_resamples=500)
    assert t["n"] == 3 and t["diff"] == pytest.approx(1 / 3)
    e = paired_test(np.array([np.nan]), np.array([np.nan]), "empty", n_resamples=10)
    assert e["n"] == 0 and np.isnan(e["p_permutation"])


def test_paired_test_seeded():
    rng = np.random.default_rng(2)
    a, b = rng.random(30), rng.random(30)
    assert paired_test(a, b, "s", n_resamples=500) == paired_test(a, b, "s", n_resamples=500)


def test_holm():
    p = np.array([0.01, 0.04, np.nan, 0.03])
    h = holm(p)
    assert h[0] == pytest.approx(0.03) and h[3] == pytest.approx(0.06)
    assert h[1] == pytest.approx(0.06) and np.isnan(h[2])  # monotone


# --------------------------------------------------------------------------- real runs


def test_identical_runs(runs):
    c = compare_runs([runs["random"], runs["random"]], n_resamples=500)
    assert len(set(c.labels)) == 2
    assert (c.pairs["diff"].fillna(0) == 0).all()
    assert (c.pairs["p_permutation"].dropna() == 1.0).all()
    assert (c.pairs["p_bootstrap"].dropna() == 1.0).all()
    assert not c.pairs["significant_0.05"].any()


def test_oracle_vs_random(oracle_vs_random, runs):
    c = oracle_vs_random
    p = c.pairs.set_index(["scope", "metric"])
    for metric in ("recall@10", "ndcg@10", "mrr"):
        r = p.loc[("all", metric)]
        assert r["diff"] > 0 and r["diff_ci95_lo"] > 0
        assert r["p_permutation"] < 0.01 and r["p_bootstrap"] < 0.01 and r["significant_0.05"]
    fr = p.loc[("all", "false_recall_rate")]
    assert fr["diff"] < 0 and fr["p_permutation"] < 0.01  # the oracle abstains
    assert set(c.pairs["metric"]) == {
        "recall@10",
        "ndcg@10",
        "mrr",
        "false_recall_rate",
        "abstain_rate_answerable",
        "answerable_kept@fr0.10",
        "abstention_auc",
    }
    per_item = ~c.pairs["metric"].isin(["answerable_kept@fr0.10", "abstention_auc"])
    assert (c.pairs["n"] == c.pairs["denominator"])[per_item].all()
    # the abstention-order statistics: a paired bootstrap, no permutation p; the oracle
    # answers every answerable query and abstains on every unanswerable one
    kept = p.loc[("all", "answerable_kept@fr0.10")]
    assert kept["mean_a"] == 1.0 and kept["diff"] > 0 and kept["diff_ci95_lo"] > 0
    assert np.isnan(kept["p_permutation"]) and kept["p_perm_holm"] >= kept["p_bootstrap"]
    assert p.loc[("all", "abstention_auc")]["mean_a"] == 1.0


def test_summary_matches_metrics_json(oracle_vs_random, runs):
    c = oracle_vs_random
    for lab, name in zip(c.labels, ("oracle", "random")):
        m = json.loads((runs[name] / "metrics.json").read_text())
        s = c.summary[c.summary["system"] == lab]
        for _, r in s.iterrows():
            e = m[r["scope"]][r["metric"]]
            assert r["n"] == e["n"] and r["denominator"] == e["denominator"]
            if e["value"] is None:
                assert r["value"] is None or np.isnan(r["value"])
            else:
                assert r["value"] == pytest.approx(e["value"])
                assert [r["ci95_lo"], r["ci95_hi"]] == pytest.approx(e["ci95"])
    t = c.table(["recall@10"])
    assert ("all", "recall@10") in t.index and (c.labels[0], "n/den") in t.columns


def test_first_stage(oracle_vs_random):
    fs = oracle_vs_random.first_stage
    assert {"system", "modality", "recall@1000", "ndcg@10", "n_answerable"} <= set(fs.columns)
    assert len(fs) == 2 * fs["modality"].nunique()
    o = fs[fs["system"] == "oracle"]
    assert (o["recall@1000"] == 1.0).all()
    import matplotlib

    matplotlib.use("Agg")
    fig = plot_first_stage(oracle_vs_random)
    assert len([a for a in fig.axes if a.get_visible()]) == fs["modality"].nunique()


def test_mismatched_runs(runs, built, corpus_root, tmp_path):
    # different items: another limit
    other = tmp_path / "random5"
    run_system(make_system("random"), built.out, "dev", other, corpus_root, limit=5)
    with pytest.raises(ComparisonError, match="different items"):
        compare_runs([runs["random"], other], n_resamples=10)
    # different set files recorded in meta.json
    forged = tmp_path / "forged"
    shutil.copytree(runs["oracle"], forged)
    meta = json.loads((forged / "meta.json").read_text())
    meta["set_sha256"]["pdf.jsonl"] = "0" * 64
    (forged / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ComparisonError, match="sha256"):
        compare_runs([runs["oracle"], forged], n_resamples=10)
    # different split
    meta["set_sha256"] = json.loads((runs["oracle"] / "meta.json").read_text())["set_sha256"]
    meta["split"] = "test"
    (forged / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ComparisonError, match="different splits"):
        compare_runs([runs["oracle"], forged], n_resamples=10)
    with pytest.raises(ComparisonError, match="at least two"):
        compare_runs([runs["oracle"]], n_resamples=10)


def test_compare_command(runs, capsys, tmp_path):
    from membench.cli import main

    out = tmp_path / "pairs.json"
    assert (
        main(
            [
                "compare",
                str(runs["oracle"]),
                str(runs["random"]),
                "--resamples",
                "200",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    # the oracle saw the gold: every table names it so
    assert "2 systems: oracle [NOT A VALID SUBMISSION: saw the gold]" in text
    assert "paired differences" in text
    # the oracle's recall@10 over all items, with its n/denominator, side by side
    comp = compare_runs([runs["oracle"], runs["random"]], n_resamples=200)
    assert comp.labels == ["oracle [NOT A VALID SUBMISSION: saw the gold]", "random"]
    row = comp.summary[
        (comp.summary["scope"] == "all")
        & (comp.summary["metric"] == "recall@10")
        & (comp.summary["system"] == comp.labels[0])
    ].iloc[0]
    assert f"{row['value']:.4f} ({row['n']}/{row['denominator']})" in text
    pairs = json.loads(out.read_text())
    assert {p["metric"] for p in pairs} == {
        "recall@10",
        "ndcg@10",
        "mrr",
        "false_recall_rate",
        "abstain_rate_answerable",
        "answerable_kept@fr0.10",
        "abstention_auc",
    }
    assert "abstain_rate_answerable" in text and "answerable_kept@fr0.10" in text
    # one run is not a comparison: a located one-line error, exit 2
    assert main(["compare", str(runs["oracle"])]) == 2
    assert "at least two" in capsys.readouterr().err


# --------------------------------------------------------------------------- which is best


class _Scores:
    """The parts of ItemScores best_systems reads."""

    def __init__(self, ids, values, latency, modality=None, abst=None, answerable=None):
        self.query_id = list(ids)
        self.modality = list(modality or ["pdf"] * len(ids))
        self.values = {k: np.asarray(v, dtype=float) for k, v in values.items()}
        self.latency_ms = np.asarray(latency, dtype=float)
        if abst is not None:  # the abstention order: score, kept, answerable, audited
            self.abstention_score = np.asarray(abst, dtype=float)
            self.cartridge_size = np.ones(len(ids), dtype=int)
            self.answerable = np.asarray(answerable, dtype=bool)
            self.audited = np.ones(len(ids), dtype=bool)


def test_best_systems_margin_test_ties_and_percentiles():
    """The best per measure against the runner-up on the same items (aligned by query id,
    whatever each run's order), Holm over the measures tested; a shared lead is tested against
    the next system; a percentile is not tested; a lower-is-better measure picks the lowest."""
    from membench.analysis.compare import best_systems, verdict

    rng = np.random.default_rng(3)
    n = 200
    ids = [f"q{i}" for i in range(n)]
    good = (rng.random(n) < 0.8).astype(float)
    bad = (rng.random(n) < 0.4).astype(float)
    fr_lo = np.where(np.arange(n) % 2 == 0, np.nan, (rng.random(n) < 0.1).astype(float))
    fr_hi = np.where(np.arange(n) % 2 == 0, np.nan, (rng.random(n) < 0.5).astype(float))
    same = np.ones(n)
    a = _Scores(
        ids,
        {
            "recall@10": good,
            "false_recall_rate": fr_lo,
            "holder_correctness": same,
            "abstain_rate_answerable": bad,
        },
        np.full(n, 5.0),
    )
    rev = slice(None, None, -1)  # b lists its items backwards
    b = _Scores(
        ids[rev],
        {
            "recall@10": bad[rev],
            "false_recall_rate": fr_hi[rev],
            "holder_correctness": same,
            "abstain_rate_answerable": bad[rev],
        },
        np.full(n, 1.0),
    )
    c = _Scores(
        ids,
        {
            "recall@10": bad,
            "false_recall_rate": fr_hi,
            "holder_correctness": same,
            "abstain_rate_answerable": good,
        },
        np.full(n, 9.0),
    )
    rows = {
        r["measure"]: r
        for r in best_systems(
            {"a": a, "b": b, "c": c},
            measures=(
                "recall@10",
                "false_recall_rate",
                "holder_correctness",
                "abstain_rate_answerable",
                "latency_p50_ms",
                "mrr",
            ),
            n_resamples=2000,
        )
    }
    assert "mrr" not in rows  # not carried per item: left out
    r = rows["recall@10"]
    assert (r["best"], r["tied"], r["runner_up"]) == ("a", ["a"], "b")
    assert r["diff"] == pytest.approx(good.mean() - bad.mean())  # aligned by query id
    assert r["n"] == n and r["tested"] and r["significant"] and r["p_holm"] < 0.05
    fr = rows["false_recall_rate"]
    assert fr["best"] == "a" and fr["diff"] < 0 and fr["n"] == n // 2  # lower is better
    hc = rows["holder_correctness"]
    assert hc["runner_up"] is None and not hc["tested"] and hc["tied"] == ["a", "b", "c"]
    ab = rows["abstain_rate_answerable"]
    assert ab["tied"] == ["a", "b"] and ab["runner_up"] == "c" and ab["tested"]
    lat = rows["latency_p50_ms"]
    assert lat["best"] == "b" and lat["value"] == 1.0 and not lat["tested"]
    assert "percentile" in lat["note"]
    ps = [
        rows[m]["p_permutation"]
        for m in ("recall@10", "false_recall_rate", "abstain_rate_answerable")
    ]
    assert [
        rows[m]["p_holm"] for m in ("recall@10", "false_recall_rate", "abstain_rate_answerable")
    ] == pytest.approx(list(holm(np.array(ps))))
    text = verdict(list(rows.values()))
    assert text.startswith("Significantly best: a on recall@10 (+")
    assert "a = b on abstain_rate_answerable" in text
    assert "Every system the same: holder_correctness" in text
    assert "Not tested (a percentile): b on latency_p50_ms" in text
    with pytest.raises(ComparisonError, match="different items"):
        best_systems({"a": a, "d": _Scores(ids[:-1], {"recall@10": good[:-1]}, np.ones(n - 1))})
    with pytest.raises(ComparisonError, match="at least two"):
        best_systems({"a": a})


def test_best_systems_tests_an_abstention_order_measure_by_the_paired_bootstrap():
    """answerable_kept@fr0.10 has no per-item values: the best is tested against the runner-up
    by abstention.paired_difference, and its bootstrap p enters Holm."""
    from membench.analysis.compare import best_systems
    from membench.metrics import abstention

    rng = np.random.default_rng(5)
    n = 300
    ids = [f"q{i}" for i in range(n)]
    ans = rng.random(n) < 0.6
    sharp = np.where(ans, rng.normal(2.0, 1.0, n), rng.normal(0.0, 1.0, n))  # separates
    blunt = rng.normal(0.0, 1.0, n)  # does not
    a = _Scores(ids, {}, np.ones(n), abst=sharp, answerable=ans)
    b = _Scores(ids, {}, np.ones(n), abst=blunt, answerable=ans)
    (row,) = best_systems({"a": a, "b": b}, measures=("answerable_kept@fr0.10",), n_resamples=500)
    kept = {
        k: float(
            abstention.statistic(
                abstention.Ordering(v, np.ones(n, bool), ans, ["pdf"] * n),
                "answerable_kept@fr0.10",
                0.10,
            )[0]
        )
        for k, v in (("a", sharp), ("b", blunt))
    }
    assert row["best"] == "a" and row["runner_up"] == "b" and row["tested"]
    assert row["diff"] == pytest.approx(kept["a"] - kept["b"]) and row["diff"] > 0
    assert row["p_permutation"] is None and row["p_holm"] == pytest.approx(row["p_bootstrap"])
    assert row["significant"] and "bootstrap" in row["note"]
    assert row["n"] == int(ans.sum())


def test_a_silent_false_recall_is_never_named_best():
    """A system that never commits a cartridge has a false recall of 0 but a FAIL (silent)
    gate: best_systems (the index's "which system is best") names the best of the others;
    when every system is silent it names none ("no system: all silent")."""
    from membench.analysis.compare import best_systems, verdict
    from membench.metrics.measures import ALL_SILENT
    from membench.report.summary import best_table_html

    n = 40
    ids = [f"q{i}" for i in range(n)]
    una = np.arange(n) % 2 == 1  # 20 unanswerable, 20 answerable

    def fr(p):
        return np.where(una, (np.arange(n) % 20 < p * 20).astype(float), np.nan)

    def gated(a):
        return np.where(una, np.nan, (np.arange(n) < a * n).astype(float))

    quiet = _Scores(
        ids,
        {"false_recall_rate": fr(0.0), "abstain_rate_gated": np.where(una, np.nan, 1.0)},
        np.ones(n),
    )
    a = _Scores(ids, {"false_recall_rate": fr(0.1), "abstain_rate_gated": gated(0.2)}, np.ones(n))
    b = _Scores(ids, {"false_recall_rate": fr(0.4), "abstain_rate_gated": gated(0.1)}, np.ones(n))
    (row,) = best_systems(
        {"quiet": quiet, "a": a, "b": b}, measures=("false_recall_rate",), n_resamples=200
    )
    assert row["best"] == "a" and row["runner_up"] == "b" and row["silent"] == ["quiet"]
    assert "quiet" not in verdict([row]).split("(")[0]
    (row,) = best_systems(
        {"quiet": quiet, "a": a}, measures=("false_recall_rate",), n_resamples=200
    )
    assert row["best"] == "a" and row["runner_up"] is None and "never best" in row["note"]
    assert verdict([row]).startswith("Best as the only system not silent: a on false_recall_rate")
    (row,) = best_systems(
        {"quiet": quiet, "hush": quiet}, measures=("false_recall_rate",), n_resamples=200
    )
    assert row["best"] is None and row["all_silent"] and row["silent"] == ["quiet", "hush"]
    assert verdict([row]).startswith("No system: all silent on false_recall_rate")
    assert ALL_SILENT in best_table_html([row])
