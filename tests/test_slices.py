"""membench.analysis: item frames, slice tables, worst slices, the threshold sweep, summaries.

Hand-made frames check the arithmetic; small real runs (oracle / random / leaky over the built
dev sets, ``limit`` queries per modality) check that slicing over ``modality`` gives back
metrics.json exactly. :func:`small_runs` is shared with test_compare and the notebook tests
(one set of runs per session).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from once import once

from membench.analysis import frames as frames_mod
from membench.analysis import slices, summaries, sweep
from membench.core.errors import InputError
from membench.metrics.rundir import run_status

LIMIT = 30
_RUNS: dict[str, dict[str, Path]] = {}


def small_runs(tmp_path_factory, built, corpus_root) -> dict[str, Path]:
    """oracle, random and leaky runs (``LIMIT`` per modality) with metrics.json, made once per
    session and sets folder (and for all xdist workers: tests/once.py)."""
    key = str(built.out)
    if key not in _RUNS:
        from membench.metrics import metrics_for_run_dir
        from membench.run.runner import run_system
        from membench.systems import make_system

        def make(root: Path) -> dict[str, Path]:
            out = {}
            for name in ("oracle", "random", "leaky"):
                d = root / name
                run_system(make_system(name), built.out, "dev", d, corpus_root, limit=LIMIT)
                metrics_for_run_dir(d)
                out[name] = d
            return out

        _RUNS[key] = once(tmp_path_factory, "nb_runs", make)
    return _RUNS[key]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, built, corpus_root):
    return small_runs(tmp_path_factory, built, corpus_root)


@pytest.fixture(scope="module")
def frames(runs):
    return {k: frames_mod.item_frame(v) for k, v in runs.items()}


# --------------------------------------------------------------------------- hand-made


def _hand() -> pd.DataFrame:
    """Two modalities: 'a' has 4 answerable (recall 1, 1, 0, 0.5) and 2 unanswerable (one
    false recall), one holder leak; 'b' has 2 unanswerable only (both false recalls)."""
    nan = np.nan
    return pd.DataFrame(
        {
            "modality": ["a"] * 6 + ["b"] * 2,
            "holder": ["h1", "h1", "h2", "h2", "h1", "h2", "h3", "h3"],
            "answerable": [True, True, True, True, False, False, False, False],
            "audited": [True] * 8,
            "recall@10": [1.0, 1.0, 0.0, 0.5, nan, nan, nan, nan],
            "rr": [1.0, 0.5, 0.0, 1.0, nan, nan, nan, nan],
            "false_recall": [nan, nan, nan, nan, 1.0, 0.0, 1.0, 1.0],
            "false_recall_native": [nan] * 8,
            "holder_leak": [False, False, True, False, False, False, False, False],
            "temporal_leak": [False] * 8,
            "abstained": [False, False, False, True, False, True, False, False],
            "latency_ms": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, np.nan],
            "top1_score": [0.9, 0.8, 0.7, 0.2, 0.95, 0.1, 0.5, np.nan],
            # no system reported a confidence: the top-1 score, -inf without hits
            "abstention_score": [0.9, 0.8, 0.7, 0.2, 0.95, 0.1, 0.5, -np.inf],
            "top1_hit": [True, False, False, True, False, False, False, False],
        }
    )


def test_slice_table_values_and_denominators():
    t = slices.slice_table(_hand(), "modality", sort=False).set_index("modality")
    a, b = t.loc["a"], t.loc["b"]
    assert (a["n"], a["n_answerable"], a["n_unanswerable"]) == (6, 4, 2)
    assert a["recall@10"] == pytest.approx(0.625)
    assert a["false_recall_rate"] == pytest.approx(0.5)
    assert a["holder_correctness"] == pytest.approx(5 / 6)
    assert a["temporal_correctness"] == 1.0
    assert a["recall@10_lo"] <= a["recall@10"] <= a["recall@10_hi"]
    # no answerable item: recall is undefined (NaN), never a made-up 0
    assert (b["n"], b["n_answerable"], b["n_unanswerable"]) == (2, 0, 2)
    assert math.isnan(b["recall@10"]) and math.isnan(b["recall@10_lo"])
    assert b["false_recall_rate"] == 1.0
    assert b["gate_failures"] == "false_recall_rate"
    assert set(a["gate_failures"].split(", ")) == {
        "recall@10",
        "false_recall_rate",
        "holder_correctness",
    }


def test_slice_table_worst_first_and_margins():
    t = slices.slice_table(_hand(), ["holder"])
    # margins: h1 recall 1.0 / false recall 1.0 -> -0.9; h2 recall 0.25 -> -0.65 ...
    assert list(t["worst_margin"]) == sorted(t["worst_margin"])
    assert t.iloc[0]["worst_metric"] == "false_recall_rate"
    h2 = t.set_index("holder").loc["h2"]
    assert h2["recall@10"] == pytest.approx(0.25)
    assert h2["worst_margin"] == pytest.approx(min(0.25 - 0.9, 0.10 - 0.0, 2 / 3 - 0.95))
    assert slices.gate_margin("recall@10", 0.95) == pytest.approx(0.05)
    assert slices.gate_margin("false_recall_rate", 0.3) == pytest.approx(-0.2)
    assert math.isnan(slices.gate_margin("mrr", 0.3))


def test_slice_table_multi_dim_and_extra_metrics():
    t = slices.slice_table(
        _hand(),
        ["modality", "holder"],
        metrics=["recall@10", "mrr", "abstain_rate_answerable", "latency_p50_ms"],
        sort=False,
    )
    assert len(t) == 3  # (a, h1), (a, h2), (b, h3)
    r = t.set_index(["modality", "holder"]).loc[("a", "h1")]
    assert r["mrr"] == pytest.approx(0.75)
    assert r["abstain_rate_answerable"] == 0.0
    assert r["latency_p50_ms"] == pytest.approx(2.0)  # 1, 2, 5
    c = slices.compact(t)
    assert "recall@10_lo" not in c.columns and c["recall@10"].iloc[0].count("[") == 1


def test_worst_slices_min_n():
    df = _hand()
    w = slices.worst_slices(df, k=3, dims=["modality", "holder"], min_n=3)
    assert list(w.columns[:2]) == ["dimension", "slice"]
    assert (w["n"] >= 3).all()
    assert w.attrs["dropped_small"] == 2  # modality b (2 items), holder h3 (2)
    assert len(w) == 3
    assert list(w["worst_margin"]) == sorted(w["worst_margin"])


def test_threshold_sweep_hand():
    df = _hand()
    s = sweep.threshold_sweep(df, thresholds=[0.0, 0.5, 0.85, 1.0])
    a = s[s["modality"] == "a"].set_index("threshold")
    # t = 0: every item with a top-1 keeps it
    assert a.loc[0.0, "false_recall_rate"] == 1.0
    assert a.loc[0.0, "answerable_recall_proxy"] == pytest.approx(2 / 4)
    assert a.loc[0.0, "abstain_rate_answerable"] == 0.0
    # t = 0.5: answerable scores 0.9, 0.8, 0.7 kept (hits: only the first); 0.2 dropped
    assert a.loc[0.5, "answerable_recall_proxy"] == pytest.approx(1 / 4)
    assert a.loc[0.5, "abstain_rate_answerable"] == pytest.approx(1 / 4)
    assert a.loc[0.5, "false_recall_rate"] == pytest.approx(1 / 2)  # 0.95 kept, 0.1 not
    assert a.loc[1.0, "false_recall_rate"] == 0.0
    assert a.loc[1.0, "kept_rate"] == 0.0
    b = s[s["modality"] == "b"].set_index("threshold")
    assert b.loc[0.0, "false_recall_rate"] == pytest.approx(1 / 2)  # NaN score never kept
    assert b["answerable_recall_proxy"].isna().all()
    # default grid: from keep-all to abstain-all per modality
    d = sweep.threshold_sweep(df)
    for _, g in d.groupby("modality"):
        assert g["kept_rate"].iloc[-1] == 0.0
    # the operating point is membench calibrate's rule: here no threshold with answerable items
    # kept reaches false recall <= 0.10, so the best unconstrained J (top-1 0.2: kept 4/4
    # answerable, 1/2 unanswerable) is taken and marked as outside the gate; the threshold is
    # the midpoint between 0.2 and the next lower top-1 score, 0.1
    op = sweep.operating_points(df).set_index("modality")
    assert op.loc["a", "threshold"] == pytest.approx(0.15) and not op.loc["a", "within_gate"]
    assert op.loc["a", "false_recall_rate"] == 0.5 and op.loc["a", "answerable_kept"] == 1.0
    assert op.loc["a", "answerable_recall_proxy"] == pytest.approx(2 / 4)
    # b has no answerable item: abstaining everywhere is best
    assert op.loc["b", "threshold"] > 0.5 and op.loc["b", "false_recall_rate"] == 0.0
    # a system that reports a confidence is swept on it, not on its top-1 score: the
    # unanswerable 0.95 reported 0.05, so t = 0.5 keeps no unanswerable item of a
    conf = df.copy()
    conf.loc[4, "abstention_score"] = 0.05
    c = sweep.threshold_sweep(conf, thresholds=[0.5]).set_index("modality")
    assert c.loc["a", "false_recall_rate"] == 0.0
    assert sweep.operating_points(conf).set_index("modality").loc["a", "within_gate"]
    assert math.isnan(op.loc["b", "answerable_kept"])
    # and it equals the calibration of the same top-1 scores
    from membench.analysis.operating_point import choose_threshold

    a = df[df["modality"] == "a"]
    c = choose_threshold(
        a.loc[a["answerable"], "top1_score"].tolist(),
        a.loc[~a["answerable"], "top1_score"].tolist(),
    )
    assert c.threshold == op.loc["a", "threshold"]


# --------------------------------------------------------------------------- real runs


def test_item_frame_columns(frames, runs):
    df = frames["leaky"]
    for c in (
        "query_id",
        "modality",
        "source",
        "holder",
        "scenario",
        "derivation",
        "answerable",
        "as_of",
        "as_of_bucket",
        "n_gold",
        "recall@10",
        "recall@100",
        "recall@1000",
        "rr",
        "ndcg@10",
        "cartridge_size",
        "cartridge_recall",
        "false_recall",
        "holder_leak",
        "temporal_leak",
        "abstained",
        "latency_ms",
        "top1_score",
    ):
        assert c in df.columns, c
    assert set(df["derivation"]) <= {"native", frames_mod.TELL_NATIVE, "transactive", "temporal"}
    # a native with an upstream tell is its own derivation, outside the audited false recall
    tell = df["derivation"] == frames_mod.TELL_NATIVE
    assert (tell == ~df["audited"]).all() and not df.loc[tell, "answerable"].any()
    assert df.loc[tell, "false_recall"].isna().all()
    assert df.loc[tell, "false_recall_native"].notna().all()
    assert df.loc[~tell, "false_recall_native"].isna().all()
    assert (df["source"] == df["query_id"].str.split(":").str[0]).all()
    assert df.loc[df["answerable"], "false_recall"].isna().all()
    assert df.loc[~df["answerable"], "recall@10"].isna().all()
    assert df["as_of_bucket"].str.fullmatch(r"[1-4]/4").all()
    # bucket order follows as_of within a source
    for _, g in df.groupby("source"):
        b = g["as_of_bucket"].str[0].astype(int)
        assert g.loc[b.idxmin(), "as_of"] <= g.loc[b.idxmax(), "as_of"]
    # leaky ignores scope; the oracle does not
    assert (
        df["holder_leak"].any() and df.loc[df["derivation"] == "transactive", "holder_leak"].all()
    )
    o = frames["oracle"]
    assert not o["holder_leak"].any() and not o["temporal_leak"].any()
    un = o.loc[~o["answerable"]]
    assert (un.loc[un["audited"], "false_recall"] == 0).all()
    assert (un.loc[~un["audited"], "false_recall_native"] == 0).all() and (~un["audited"]).any()
    assert o.attrs["system"] == "oracle"
    meta = json.loads((runs["oracle"] / "meta.json").read_text())
    assert len(o) == meta["queries"]


@pytest.mark.parametrize("system", ["random", "leaky"])
def test_slice_over_modality_equals_metrics_json(frames, runs, system):
    m = json.loads((runs[system] / "metrics.json").read_text())
    names = [
        "recall@10",
        "recall@100",
        "recall@1000",
        "mrr",
        "ndcg@10",
        "false_recall_rate",
        "false_recall_native",
        "holder_correctness",
        "temporal_correctness",
        "abstain_rate_answerable",
        "cartridge_recall",
        "latency_p50_ms",
        "latency_p95_ms",
        "abstention_auc",
        "answerable_kept@fr0.10",
    ]
    t = slices.slice_table(frames[system], "modality", metrics=names, sort=False)
    for _, r in t.iterrows():
        for k in names:
            e = m[r["modality"]][k]
            if e["value"] is None:
                assert math.isnan(r[k])
                continue
            assert r[k] == pytest.approx(e["value"], abs=1e-12), (r["modality"], k)
            assert [r[f"{k}_lo"], r[f"{k}_hi"]] == pytest.approx(e["ci95"], abs=1e-12)
        assert r["n_answerable"] == m[r["modality"]]["recall@10"]["denominator"]
        assert r["n_unanswerable"] == m[r["modality"]]["false_recall_rate"]["denominator"]
        assert r["n_native_tell"] == m[r["modality"]]["false_recall_native"]["denominator"]
    s = slices.slice_table(frames[system], "source", sort=False)
    for _, r in s.iterrows():
        e = m["by_source"][r["source"]]["recall@10"]
        assert (r["recall@10"] if e["value"] is not None else None) == (
            pytest.approx(e["value"]) if e["value"] is not None else None
        )


def test_summaries(runs, frames, built):
    m = summaries.load_metrics(runs["random"])
    g = summaries.gates_frame(m)
    assert set(g["result"]) <= {"PASS", "FAIL", "n/a (no items)"}
    assert (g["n"] == g["denominator"]).all()
    tab = summaries.metrics_table(m)
    assert "all" in tab.columns and "recall@10" in tab.index
    assert "/" in tab.loc["recall@10", "all"]
    cov = summaries.coverage_frame(built.out, frames["random"])
    assert {"mirrored", "not_covered", "evaluated_in_run"} <= set(cov.columns)
    assert cov.loc[~cov["mirrored"], "status"].str.contains("NOT MIRRORED").all()
    lat = summaries.latency_summary(frames["random"])
    assert lat.set_index("modality").loc["all", "denominator"] == len(frames["random"])
    assert run_status(runs["random"]) == "complete"


def test_load_run_errors(tmp_path):
    with pytest.raises(InputError, match="not a run directory"):
        frames_mod.item_frame(tmp_path)
    assert run_status(tmp_path) == "missing"


def test_a_doctored_metrics_json_is_not_what_reports_show(runs, tmp_path):
    # reports compute a run's figures from its files; an edited metrics.json changes nothing
    import json
    import shutil

    run = tmp_path / "run"
    shutil.copytree(runs["random"], run)
    honest = summaries.load_metrics(run)
    doctored = json.loads(json.dumps(honest))
    doctored["all"]["recall@10"]["value"] = 0.999
    (run / "metrics.json").write_text(json.dumps(doctored))
    (run / "metrics.json").touch()
    assert (
        summaries.load_metrics(run)["all"]["recall@10"]["value"]
        == honest["all"]["recall@10"]["value"]
        != 0.999
    )
    assert json.loads((run / "metrics.json").read_text())["all"]["recall@10"]["value"] == 0.999


def test_item_counts_names_every_column():
    df = pd.DataFrame(
        {
            "modality": ["pdf", "pdf", "pdf", "image"],
            "derivation": ["native", "native", "temporal", "native"],
            "answerable": [True, False, False, True],
        }
    )
    t = slices.item_counts(df, ["modality", "derivation"])
    assert list(t.columns) == ["answerable", "unanswerable", "all items"]
    assert t.loc[("pdf", "native")].tolist() == [1, 1, 2]
    assert t.loc[("pdf", "temporal")].tolist() == [0, 1, 1]
    assert t.loc[("image", "native")].tolist() == [1, 0, 1]  # no unanswerable: a 0 column
    only = slices.item_counts(df[df["answerable"]], "modality")
    assert list(only.columns) == ["answerable", "unanswerable", "all items"]
