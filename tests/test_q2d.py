"""membench q2d (membench.analysis.q2d): Kendall's tau-b against scipy and by hand, the
inflation and its intervals on hand-made cases, the spec's refusals, and the whole experiment
end to end on the fixture corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import kendalltau

from membench.analysis.q2d import (
    MEASURES,
    METHODS,
    evaluate,
    figures_frame,
    format_table,
    kendall_tau_b,
    read_spec,
    run_experiment,
    systems_frame,
)
from membench.core.errors import InputError


def test_tau_by_hand():
    assert kendall_tau_b([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert kendall_tau_b([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)  # C=2, D=1
    # a tie in x: pair (0, 1) counts in neither; S = 2, nx = 2, ny = 3
    assert kendall_tau_b([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / np.sqrt(6))
    assert np.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))


def test_tau_agrees_with_scipy_on_random_data_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(3, 12))
        x = rng.integers(0, 4, n).astype(float)
        y = rng.integers(0, 4, n).astype(float)
        ref = kendalltau(x, y, variant="b").statistic
        got = float(kendall_tau_b(x, y))
        assert (np.isnan(ref) and np.isnan(got)) or got == pytest.approx(ref, abs=1e-12)
    xs = rng.random((5, 7))
    ys = rng.random((5, 7))
    batch = kendall_tau_b(xs, ys)
    assert batch == pytest.approx([kendalltau(a, b).statistic for a, b in zip(xs, ys)])


def _full():
    return np.array([[0.2, 0.2, 0.2, 0.2], [0.5, 0.4, 0.6, 0.5], [0.9, 0.7, 0.8, 0.8]])


def test_a_constant_shift_inflates_by_it_and_keeps_the_ranking():
    full = _full()
    fig = evaluate(full, full + 0.1, resamples=500, key="t")
    assert fig["inflation_points"] == pytest.approx(10.0)
    assert fig["inflation_ci95"] == pytest.approx([10.0, 10.0])
    assert fig["kendall_tau"] == pytest.approx(1.0)
    assert (fig["systems"], fig["queries"], fig["sub_corpora"]) == (3, 4, 1)


def test_a_reversal_gives_tau_minus_one():
    full = _full()
    fig = evaluate(full, full[::-1], resamples=200, key="t")
    assert fig["kendall_tau"] == pytest.approx(-1.0)
    assert fig["inflation_points"] == pytest.approx(0.0)


def test_several_sub_corpora_average_and_give_a_range():
    full = _full()
    cond = np.stack([full + 0.1, full + 0.3])
    fig = evaluate(full, cond, resamples=1000, key="t")
    assert fig["inflation_points"] == pytest.approx(20.0)
    assert fig["inflation_range"] == pytest.approx([10.0, 30.0])
    lo, hi = fig["inflation_ci95"]
    assert 10.0 - 1e-9 <= lo < 20.0 < hi <= 30.0 + 1e-9  # the seeds' spread shows


def test_the_interval_is_over_queries():
    rng = np.random.default_rng(1)
    full = rng.random((4, 60))
    cond = full + rng.normal(0.05, 0.1, (4, 60))
    fig = evaluate(full, cond, resamples=2000, key="t")
    lo, hi = fig["inflation_ci95"]
    assert lo < fig["inflation_points"] < hi
    # reproducible: same key, same interval
    assert evaluate(full, cond, resamples=2000, key="t")["inflation_ci95"] == [lo, hi]


def _spec(tmp_path, **over):
    spec = {
        "modalities": ["conversation"],
        "shares": [0.5],
        "seeds": 2,
        "systems": [
            {"label": f"random-{k}", "system": "random", "config": {"seed": k}} for k in range(2)
        ]
        + [{"label": "metadata-0", "system": "metadata", "config": {}}],
    }
    spec.update(over)
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(spec))
    return p


@pytest.mark.parametrize(
    "over, field",
    [
        ({"seeds": 1}, "seeds"),
        ({"shares": [1.0]}, "shares[0]"),
        ({"shares": [0]}, "shares[0]"),
        ({"modalities": ["smell"]}, "modalities"),
        ({"headline": "mrr"}, "headline"),
        ({"split": "test"}, "split"),
        ({"extra": 1}, "extra"),
        ({"systems": [{"label": "a", "system": "bm25"}] * 3}, "systems"),
        ({"systems": [{"label": "A!", "system": "bm25"}] * 3}, "systems[0].label"),
        ({"systems": [{"label": f"b{k}", "system": "bm25"} for k in range(3)]}, "systems"),
    ],
)
def test_spec_refusals_name_the_field(tmp_path, over, field):
    with pytest.raises(InputError) as e:
        read_spec(_spec(tmp_path, **over))
    assert e.value.field == field and e.value.rule == "SPEC"


def test_the_committed_spec_reads():
    from membench.core.paths import BENCH_DIR

    spec = read_spec(BENCH_DIR / "q2d.json")
    assert len(spec.systems) >= 5 and spec.seeds >= 2


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    from minicorpus import freeze, make_corpus

    tmp = tmp_path_factory.mktemp("q2d")
    corpus = make_corpus(tmp)
    f = freeze(corpus, tmp)
    out = tmp / "q2d"
    spec = _spec(tmp)
    res = run_experiment(
        spec, out, f["sets"], corpus, resamples=200, manifest=f["manifest"], lock=f["lock"]
    )
    return {"res": res, "out": out, "spec": spec, "corpus": corpus, **f}


def test_experiment_end_to_end_on_the_fixture_corpus(experiment):
    """The fixture's dev conversations hold gold in every session, so every sub-corpus is the
    whole corpus: the runs on them must equal the full runs (inflation 0), whatever the method.
    This checks the plumbing (pools, runs, reading, figures), not the finding."""
    res, out = experiment["res"], experiment["out"]
    assert (out / "q2d.json").is_file()
    assert {(r["method"], r["measure"]) for r in res["figures"]} == {
        (m, x) for m in METHODS for x in MEASURES
    }
    for r in res["figures"]:
        assert r["inflation_points"] == pytest.approx(0.0, abs=1e-9)
        assert r["share_kept"] == pytest.approx(1.0)
    for c in res["comparisons"]:
        assert c["inflation_diff"] == pytest.approx(0.0, abs=1e-9)
    assert (out / "full" / "random-0" / "meta.json").is_file()
    assert (out / "runs" / "share-0.50" / "loo-random-1" / "random-1" / "run.jsonl").is_file()
    assert not (out / "runs" / "share-0.50" / "loo-random-1" / "random-0").exists()
    table = format_table(res)
    assert table.count("\n") == 2 + len(METHODS) - 1 and "random" in table
    assert len(figures_frame(res)) == len(METHODS) * len(MEASURES)
    # the family left out: the two random systems on a pool of the metadata run alone
    lfo = out / "pools" / "share-0.50" / "lfo-random" / "subcorpus.json"
    assert [r["system"] for r in json.loads(lfo.read_text())["runs"]] == ["metadata"]
    assert (out / "runs" / "share-0.50" / "lfo-random" / "random-1" / "run.jsonl").is_file()
    assert list(systems_frame(res, "recall@10").index) != []
    # resuming: nothing is run again, the same figures come out
    again = run_experiment(
        experiment["spec"],
        out,
        experiment["sets"],
        experiment["corpus"],
        resamples=200,
        manifest=experiment["manifest"],
        lock=experiment["lock"],
    )
    assert again["figures"] == res["figures"]


def test_notebook_07_renders_and_escapes(experiment, tmp_path):
    from membench.report.render import report

    q = tmp_path / "hostile"
    import shutil

    shutil.copytree(experiment["out"], q)
    res = json.loads((q / "q2d.json").read_text())
    res["spec"]["systems"][0]["label"] = "<script>alert(1)</script>"
    res["systems"]["<script>alert(1)</script>"] = res["systems"].pop("random-0")
    (q / "q2d.json").write_text(json.dumps(res))
    done = report([], tmp_path / "reports", q2d=q)
    assert [r.ok for r in done] == [True]
    html = done[0].html.read_text()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert "Kendall" in html and "07 · sub-corpus evaluation" in html
    assert "q2d-hostile" in (tmp_path / "reports" / "index.html").read_text()


def test_comparing_two_conditions_is_paired_on_the_queries():
    from membench.analysis.q2d import compare_conditions

    rng = np.random.default_rng(2)
    full = rng.random((4, 50))
    near = full + 0.01
    far = np.stack([full + 0.05 + rng.normal(0, 0.01, full.shape) for _ in range(3)])
    c = compare_conditions(full, near, far, resamples=1000, key="c")
    assert c["inflation_diff"] == pytest.approx(100 * (far.mean() - near.mean()))
    lo, hi = c["inflation_diff_ci95"]
    assert 0 < lo < c["inflation_diff"] < hi and c["inflation_diff_p_le_0"] == 0.0
    same = compare_conditions(full, near, near, resamples=200, key="c")
    assert same["inflation_diff"] == pytest.approx(0.0) and same["tau_diff"] == pytest.approx(0)
    assert same["inflation_diff_p_le_0"] == 1.0


def test_the_results_page_table_is_the_committed_result():
    """The results page's Q2D-Web table is what `membench q2d` prints from bench/expected/q2d.json (the
    copy of the experiment's q2d.json it was made from)."""
    from membench.analysis.q2d import load_result
    from membench.core.paths import BENCH_DIR, REPO_ROOT

    readme = (REPO_ROOT / "docs" / "results.md").read_text()
    start = readme.index("<!-- q2d:start")
    block = readme[readme.index("\n", start) + 1 : readme.index("<!-- q2d:end -->")].strip()
    result = load_result(BENCH_DIR / "expected")
    assert block == format_table(result)
    assert result["queries"] == 143 and len(result["spec"]["systems"]) == 8
    assert result["command"] == "membench q2d --spec bench/q2d.json --out runs/q2d"
