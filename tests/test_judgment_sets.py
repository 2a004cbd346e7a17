"""Judgment sets through the analysis: the item frame under a set, slices, comparisons and
the rank agreement between sets (Kendall's tau with a paired bootstrap interval)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau
from test_slices import small_runs

from membench.analysis import slices
from membench.analysis.agreement import (
    _ranks,
    agreement_markdown,
    bootstrap_tau,
    format_agreement,
    kendall_tau,
    rank_agreement,
    resampled_means,
)
from membench.analysis.compare import ComparisonError, compare_runs
from membench.analysis.frames import item_frame, judgment_sets, judgment_view
from membench.core.errors import MembenchError
from membench.metrics.measures import JUDGMENT_MEASURES


@pytest.fixture(scope="module")
def runs(tmp_path_factory, built, corpus_root):
    return small_runs(tmp_path_factory, built, corpus_root)


@pytest.fixture(scope="module")
def frames(runs):
    return {k: item_frame(v) for k, v in runs.items()}


def _metrics(runs, name):
    return json.loads((runs[name] / "metrics.json").read_text())


# --------------------------------------------------------------------------- the item frame


def test_the_sets_the_records_carry(frames):
    assert judgment_sets(frames["random"]) == [
        "gold",
        "all_annotators",
        "any_annotator",
        "graded",
        "same_question",
        "session",
    ]


def test_judgment_view_takes_the_sets_values(frames, runs):
    df = frames["random"]
    v = judgment_view(df, "session")
    assert v.attrs["judgment_set"] == "session"
    conv = (df["modality"] == "conversation") & df["answerable"]
    assert v["judged"].tolist() == conv.tolist()  # session judges answerable conversations
    for m in JUDGMENT_MEASURES:
        col = "rr" if m == "mrr" else m
        np.testing.assert_array_equal(v[col].to_numpy(), df[f"session/{m}"].to_numpy())
    # what does not depend on relevance is unchanged
    for c in ("false_recall", "holder_leak", "temporal_leak", "abstained", "latency_ms"):
        assert v[c].equals(df[c])
    # a session region is coarser than its turn: never harder to hit
    both = v["judged"].to_numpy()
    assert (v["recall@1000"].to_numpy()[both] >= df["recall@1000"].to_numpy()[both] - 1e-12).all()
    assert judgment_view(df, None)["judged"].equals(df["answerable"])
    with pytest.raises(MembenchError, match="no judgment set 'nope'.*gold, all_annotators"):
        judgment_view(df, "nope")


def test_slices_under_a_set_equal_metrics_json(frames, runs):
    m = _metrics(runs, "random")
    for js in ("all_annotators", "graded", "session"):
        t = slices.slice_table(
            frames["random"],
            "modality",
            metrics=list(JUDGMENT_MEASURES),
            sort=False,
            judgment_set=js,
        )
        block = m["judgment_sets"][js]
        seen = 0
        for _, r in t.iterrows():
            if r["modality"] not in block:
                assert r["n_answerable"] == 0 and math.isnan(r["recall@10"])
                continue
            seen += 1
            e = block[r["modality"]]
            assert r["n_answerable"] == e["recall@10"]["n"]
            for k in JUDGMENT_MEASURES:
                assert r[k] == pytest.approx(e[k]["value"], abs=1e-12), (js, k)
                assert [r[f"{k}_lo"], r[f"{k}_hi"]] == pytest.approx(e[k]["ci95"], abs=1e-12)
        assert seen == 1
    w = slices.worst_slices(frames["random"], k=3, judgment_set="session")
    assert len(w) and (w["n"] >= 5).all()


def test_graded_ndcg_differs_from_binary_on_code_only(frames):
    df = frames["random"]
    code = (df["modality"] == "code") & df["answerable"]
    other = (df["modality"] != "code") & df["answerable"]
    np.testing.assert_allclose(df.loc[other, "ndcg_graded@10"], df.loc[other, "ndcg@10"])
    g = judgment_view(frames["oracle"], "graded")  # the oracle ranks every gold function
    hit = code & (g["ndcg@10"] > 0)
    assert hit.sum() > 5
    assert (np.abs(g.loc[hit, "ndcg_graded@10"] - g.loc[hit, "ndcg@10"]) > 1e-9).any()


# --------------------------------------------------------------------------- comparison


def test_compare_under_a_set(runs):
    c = compare_runs([runs["oracle"], runs["random"]], n_resamples=200, judgment_set="session")
    assert c.judgment_set == "session"
    for lab, name in zip(c.labels, ("oracle", "random")):
        js = _metrics(runs, name)["judgment_sets"]["session"]
        prim = _metrics(runs, name)
        s = c.summary[c.summary["system"] == lab].set_index(["scope", "metric"])
        e, r = js["conversation"]["recall@10"], s.loc[("conversation", "recall@10")]
        assert (r["value"], r["n"]) == (pytest.approx(e["value"]), e["n"])
        assert [r["ci95_lo"], r["ci95_hi"]] == pytest.approx(e["ci95"])
        # not relevance: as under gold
        e, r = (
            prim["conversation"]["false_recall_rate"],
            s.loc[("conversation", "false_recall_rate")],
        )
        assert (r["value"], r["n"]) == (pytest.approx(e["value"]), e["n"])
        # a modality the set does not judge: no value, n = 0
        assert s.loc[("pdf", "recall@10"), "n"] == 0
    p = c.pairs[(c.pairs["scope"] == "conversation") & (c.pairs["metric"] == "recall@10")]
    assert int(p["n"].iloc[0]) == js["conversation"]["recall@10"]["n"]
    with pytest.raises(ComparisonError, match="judgment set 'nope'"):
        compare_runs([runs["oracle"], runs["random"]], n_resamples=10, judgment_set="nope")


def test_compare_command_with_a_set(runs, capsys):
    from membench.cli import main

    assert (
        main(
            [
                "compare",
                str(runs["oracle"]),
                str(runs["random"]),
                "--resamples",
                "100",
                "--judgments",
                "all_annotators",
                "--metric",
                "ndcg_graded@10",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "judgment set: all_annotators" in text and "ndcg_graded@10" in text
    assert main(["compare", str(runs["oracle"]), str(runs["random"]), "--judgments", "nope"]) == 2


def test_metrics_command_shows_every_set(runs, capsys):
    from membench.cli import main

    assert main(["metrics", str(runs["random"])]) == 0
    text = capsys.readouterr().out
    n = _metrics(runs, "random")["judgment_sets"]["session"]["conversation"]["recall@10"]["n"]
    line = next(
        ln
        for ln in text.splitlines()
        if ln.startswith("session:conversation") and " recall@10 " in ln
    )
    assert f"{n}/{n}" in line


# --------------------------------------------------------------------------- rank agreement


def test_ranks_share_ties():
    assert _ranks(np.array([0.5, 0.7, 0.5, 0.1])).tolist() == [2, 1, 2, 4]


def test_resampled_means_are_means_of_the_drawn_items():
    v = np.array([[1.0, np.nan, 0.0, 0.5], [0.0, np.nan, 1.0, 1.0]])
    counts = np.array(
        [
            [2.0, 1.0, 0.0, 1.0],  # items 0, 0, 1, 3 (1 is not judged)
            [0.0, 4.0, 0.0, 0.0],
        ]
    )  # only the unjudged item: no mean
    got = resampled_means(counts, v)
    assert got[0].tolist() == pytest.approx([(1 + 1 + 0.5) / 3, (0 + 0 + 1) / 3])
    assert np.isnan(got[1]).all()


def test_tau_by_hand():
    # three systems, far apart and constant per item: every resample ranks them alike
    va = np.array([[0.9] * 20, [0.5] * 20, [0.1] * 20])
    t = bootstrap_tau(va, va.copy(), "same", n_resamples=200)
    assert (t["tau"], t["ci95_lo"], t["ci95_hi"]) == pytest.approx((1.0, 1.0, 1.0))
    assert (t["n_systems"], t["n_items"], t["n_a"], t["n_b"]) == (3, 20, 20, 20)
    t = bootstrap_tau(va, va[::-1].copy(), "reversed", n_resamples=200)
    assert (t["tau"], t["ci95_lo"], t["ci95_hi"]) == pytest.approx((-1.0, -1.0, -1.0))
    # one swap of three pairs: (2 - 1) / 3; ties use tau-b (scipy's)
    assert kendall_tau(np.array([3, 2, 1.0]), np.array([3, 1, 2.0])) == pytest.approx(1 / 3)
    a, b = np.array([3, 2, 2, 1.0]), np.array([4, 3, 1, 2.0])
    assert kendall_tau(a, b) == pytest.approx(kendalltau(a, b).statistic)
    assert math.isnan(kendall_tau(np.array([1.0, 1.0]), np.array([1.0, 2.0])))


def test_tau_interval_is_paired_and_seeded():
    rng = np.random.default_rng(5)
    base = rng.random((5, 1, 60)) * np.linspace(0.2, 1.0, 5)[:, None, None]
    va = base[:, 0] + rng.normal(0, 0.05, (5, 60))
    vb = base[:, 0] + rng.normal(0, 0.05, (5, 60))
    vb[:, :10] = np.nan  # set b judges 50 of the 60 items
    t = bootstrap_tau(va, vb, "k", n_resamples=500)
    ma, mb = np.nanmean(va, axis=1), np.nanmean(vb, axis=1)
    assert t["tau"] == pytest.approx(kendalltau(ma, mb).statistic)
    assert (t["n_items"], t["n_a"], t["n_b"]) == (60, 60, 50)
    assert -1 <= t["ci95_lo"] <= t["ci95_hi"] <= 1
    assert t == bootstrap_tau(va, vb, "k", n_resamples=500)  # seeded by the key
    # unpaired noise would widen the interval; paired, two identical sets always agree
    same = bootstrap_tau(va, va.copy(), "k", n_resamples=500)
    assert (same["ci95_lo"], same["ci95_hi"]) == pytest.approx((1.0, 1.0))
    # nothing judged by one set: no tau
    e = bootstrap_tau(va, np.full_like(va, np.nan), "e", n_resamples=10)
    assert math.isnan(e["tau"]) and e["n_b"] == 0


def test_rank_agreement_on_runs(runs):
    ag = rank_agreement([runs["oracle"], runs["random"], runs["leaky"]], n_resamples=300)
    assert set(ag.tau["scope"]) == {"code", "conversation", "video"}  # video: PsTuts same_question
    conv = ag.tau[ag.tau["scope"] == "conversation"]
    assert set(zip(conv["set_a"], conv["set_b"])) == {("gold", "session")}
    code = ag.tau[(ag.tau["scope"] == "code") & (ag.tau["metric"] == "ndcg@10")]
    assert len(code) == 6  # four sets: six pairs
    # the dev code holders (JavaScript, Ruby, Go) have one annotator per function: the
    # annotator sets equal gold there, and say so; graded does not
    pair = code.set_index(["set_a", "set_b"])["identical"]
    assert pair[("gold", "any_annotator")] and pair[("gold", "all_annotators")]
    assert not pair[("gold", "graded")]
    # graded nDCG has no grade on conversations: left out there, kept on code
    assert "conversation ndcg_graded@10: no graded region, equal to ndcg@10" in ag.skipped
    assert ((ag.tau["scope"] == "code") & (ag.tau["metric"] == "ndcg_graded@10")).any()
    # the rankings' means and n are metrics.json's
    r = ag.rankings
    for name, lab in zip(("oracle", "random", "leaky"), ag.labels):
        m = _metrics(runs, name)
        row = r[
            (r["scope"] == "conversation") & (r["metric"] == "recall@10") & (r["system"] == lab)
        ].set_index("judgment_set")
        assert row.loc["gold", "value"] == pytest.approx(m["conversation"]["recall@10"]["value"])
        assert row.loc["gold", "n"] == m["conversation"]["recall@10"]["n"]
        e = m["judgment_sets"]["session"]["conversation"]["recall@10"]
        assert row.loc["session", "value"] == pytest.approx(e["value"])
        assert row.loc["session", "n"] == e["n"]
    # tau between the sets is scipy's tau-b between the systems' means
    for rec in ag.tau.to_dict("records"):
        g = r[(r["scope"] == rec["scope"]) & (r["metric"] == rec["metric"])]
        a = g[g["judgment_set"] == rec["set_a"]].set_index("system").loc[ag.labels, "value"]
        b = g[g["judgment_set"] == rec["set_b"]].set_index("system").loc[ag.labels, "value"]
        want = kendalltau(a.to_numpy(), b.to_numpy()).statistic
        assert rec["tau"] == pytest.approx(want) or (math.isnan(rec["tau"]) and math.isnan(want))
        assert rec["n_systems"] == 3
    t = ag.ranking_table("code", "ndcg@10")
    assert list(t.index) == ag.labels and len(t.columns) == 4
    text = format_agreement(ag)
    assert "tau(gold, session)" in text and "paired bootstrap over queries" in text
    assert agreement_markdown(ag).count("\n") == len(ag.tau) + 1
    assert (
        agreement_markdown(ag, skip_identical=True).count("\n") == (~ag.tau["identical"]).sum() + 1
    )
    with pytest.raises(MembenchError, match="per judgment set"):
        rank_agreement([runs["oracle"], runs["random"]], metrics=["false_recall_rate"])


def test_agreement_command(runs, capsys, tmp_path):
    from membench.cli import main

    out = tmp_path / "tau.json"
    assert (
        main(
            [
                "agreement",
                str(runs["oracle"]),
                str(runs["random"]),
                "--metric",
                "recall@10",
                "--resamples",
                "100",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "conversation · recall@10" in text and "tau(gold, session)" in text
    rows = json.loads(out.read_text())
    assert {r["metric"] for r in rows} == {"recall@10"}
    assert pd.DataFrame(rows)["n_systems"].eq(2).all()


def test_kendall_tau_rows_is_scipys_tau_b_to_the_bit():
    """The vectorised tau-b of the bootstrap against scipy.stats.kendalltau, row by row, on
    rows with ties (small integers), without ties, constant rows and resampled means."""
    from scipy.stats import kendalltau

    from membench.analysis.agreement import kendall_tau, kendall_tau_rows

    rng = np.random.default_rng(7)
    for systems in (2, 3, 4, 7):
        a = np.vstack(
            [
                rng.integers(0, 3, (300, systems)).astype(float),
                rng.random((300, systems)),
                np.ones((2, systems)),
                rng.random((50, systems)).round(2),
            ]
        )
        b = np.vstack(
            [
                rng.integers(0, 3, (300, systems)).astype(float),
                rng.random((300, systems)),
                rng.random((2, systems)),
                a[-50:] + rng.integers(0, 2, (50, systems)) * 0.01,
            ]
        )
        got = kendall_tau_rows(a, b)
        for x, y, g in zip(a, b, got):
            want = kendall_tau(x, y)
            if np.ptp(x) and np.ptp(y):
                assert want == float(kendalltau(x, y).statistic)
            assert (np.isnan(g) and np.isnan(want)) or g == want, (x, y, g, want)
        assert np.isnan(got[600:602]).all()  # a constant row: undefined
    # hand-computed: one discordant pair of three, no ties -> (2 - 1) / 3
    assert kendall_tau_rows(np.array([[3.0, 2.0, 1.0]]), np.array([[3.0, 1.0, 2.0]]))[
        0
    ] == pytest.approx(1 / 3)
    # a tie in b: pairs (0,1) c, (0,2) c, (1,2) tied in b -> 2 / sqrt(3) / sqrt(2)
    assert kendall_tau_rows(np.array([[3.0, 2.0, 1.0]]), np.array([[2.0, 1.0, 1.0]]))[
        0
    ] == pytest.approx(2 / np.sqrt(3) / np.sqrt(2))
