"""The abstention measures (membench.metrics.abstention): the ROC AUC of the abstention order
against scikit-learn, and the answerable share kept at false recall <= 0.10 on hand-computed
cases with ties; silence scores 0 there and fails the false-recall gate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from test_metrics_hand import ATOMS, ITEMS, page, rec

from membench.metrics import compute_metrics, format_table
from membench.metrics.abstention import AUC, KEPT, Ordering, abstention_score, entries
from membench.metrics.measures import BY_NAME, MAX_SILENT_ABSTENTION

INF = math.inf


def _one(score, kept, answerable, strata=None):
    o = Ordering(score, kept, answerable, strata)
    share, fr = o.kept_at(0.10)
    return float(o.auc()[0]), float(share[0]), float(fr[0])


def test_hand_case_with_ties():
    # 5 answerable (scores 5, 4, 3, 3, 1), 10 unanswerable (4, 3, 2, 2, 2, 1, 1, 1, 0, 0), every
    # cartridge non-empty. Thresholds: t=5 keeps 1 answerable, 0 unanswerable; t=4 keeps 2 and
    # 1 (false recall 0.1: within); t=3 keeps 4 and 2 (0.2): the tie at 3 goes together.
    ans = [5, 4, 3, 3, 1]
    una = [4, 3, 2, 2, 2, 1, 1, 1, 0, 0]
    score = ans + una
    y = [True] * 5 + [False] * 10
    auc, share, fr = _one(score, [True] * 15, y)
    # pairs: 5 above all 10; 4 above 9 + half a tie; each 3 above 8 + half; 1 above 2 + 3 halves
    assert auc == pytest.approx((10 + 9.5 + 2 * 8.5 + 3.5) / 50) == 0.8
    assert auc == pytest.approx(roc_auc_score(y, score))
    assert share == pytest.approx(2 / 5) and fr == pytest.approx(0.1)
    # one more unanswerable at 4 ties the answerable 4: t=4 now keeps 2 of 11 (0.18 > 0.1), so
    # only t=5 is feasible
    auc2, share2, fr2 = _one(score + [4], [True] * 16, y + [False])
    assert share2 == pytest.approx(1 / 5) and fr2 == 0.0
    assert auc2 == pytest.approx(roc_auc_score(y + [False], score + [4]))


def test_an_empty_cartridge_is_never_kept_and_orders_below():
    # answerable: (5, abstained), (4, kept), (1, kept); unanswerable: (3, kept), (0, abstained)
    score = [5, 4, 1, 3, 0]
    kept = [False, True, True, True, False]
    y = [True, True, True, False, False]
    auc, share, fr = _one(score, kept, y)
    # keep nothing at t > 4; t = 4 keeps the answerable 4 (1 of 3) and no unanswerable;
    # t = 3 keeps the unanswerable 3 (1 of 2 > 0.1). The abstained 5 is never kept.
    assert share == pytest.approx(1 / 3) and fr == 0.0
    # order: (0,0)U < (0,5)A < (1,1)A < (1,3)U < (1,4)A; pairs above: A5>U0, A1>U0, A4>both
    assert auc == pytest.approx(4 / 6)
    key = [k * 100 + s for k, s in zip(kept, score)]  # the lexicographic order
    assert auc == pytest.approx(roc_auc_score(y, key))


def test_silence_scores_zero_and_keeps_its_auc_only_through_scores():
    y = [True] * 4 + [False] * 6
    s = [9, 8, 7, 6, 1, 1, 2, 3, 0, 0]
    auc, share, fr = _one(s, [False] * 10, y)
    assert share == 0.0 and fr == 0.0
    assert auc == pytest.approx(roc_auc_score(y, s)) == 1.0  # a score it never used
    auc, share, _ = _one([-INF] * 10, [False] * 10, y)  # no hits, no confidence
    assert (auc, share) == (0.5, 0.0)


def test_own_point_within_the_gate_is_reachable():
    # every answerable answered at a low score, every unanswerable abstained: the system's own
    # point (t = -inf) keeps all answerable with no false recall
    y = [True] * 3 + [False] * 3
    auc, share, fr = _one([0.1, 0.2, 0.3, 5, 6, 7], [True] * 3 + [False] * 3, y)
    assert (share, fr) == (1.0, 0.0)
    assert auc == 1.0


def test_undefined_without_unanswerable_items():
    o = Ordering([1.0, 2.0], [True, True], [True, True])
    assert np.isnan(o.auc()[0]) and np.isnan(o.kept_at(0.1)[0][0])
    e = entries(
        np.array([1.0, 2.0]),
        np.array([True, True]),
        np.array([True, True]),
        None,
        "k",
        max_false_recall=0.1,
        n_resamples=50,
    )
    assert e[KEPT] == {
        "value": None,
        "n": 0,
        "denominator": 2,
        "ci95": [None, None],
        "false_recall_at": None,
        "random_committer": None,
    }
    assert e[AUC] == {"value": None, "n": 0, "denominator": 2, "ci95": [None, None]}


def test_strata_compare_within_a_modality():
    # modality a: scores near 100, perfectly ordered; modality b: scores near 0, inverted.
    # Pooled over both, a raw AUC would reward a's scale; within modalities it is the share of
    # same-modality pairs in order.
    s = [101, 102, 100, 0.1, 0.3, 0.2, 0.4]
    y = [True, True, False, True, False, False, False]
    st = ["a", "a", "a", "b", "b", "b", "b"]
    auc, share, _ = _one(s, [True] * 7, y, st)
    a_pairs, b_pairs = 2 * 1, 1 * 3
    assert auc == pytest.approx((1.0 * a_pairs + 0.0 * b_pairs) / (a_pairs + b_pairs))
    # kept: a keeps both answerable with no false recall (t = 101); b keeps none (its
    # answerable is below every unanswerable): pooled 2 of 3
    assert share == pytest.approx(2 / 3)
    assert auc != pytest.approx(roc_auc_score(y, s))  # the pooled raw AUC differs
    # a stratum without unanswerable items counts in neither
    auc2, share2, _ = _one(s + [5.0], [True] * 8, y + [True], st + ["c"])
    assert (auc2, share2) == pytest.approx((auc, share))


def _brute_kept(score, kept, y, max_fr=0.1):
    s, k, a = np.asarray(score, float), np.asarray(kept, bool), np.asarray(y, bool)
    n_pos, n_neg = a.sum(), (~a).sum()
    best = 0.0
    for t in sorted(set(s[k].tolist())) + [INF]:
        keep = k & (s >= t)
        if (keep & ~a).sum() <= max_fr * n_neg + 1e-9:
            best = max(best, (keep & a).sum() / n_pos)
    return best


def test_random_against_sklearn_and_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(150):
        n = int(rng.integers(2, 40))
        s = rng.integers(0, 5, n).astype(float)  # many ties
        if rng.random() < 0.3:
            s[rng.random(n) < 0.3] = -INF
        k = rng.random(n) < 0.7
        y = rng.random(n) < 0.5
        if y.all() or (~y).all():
            continue
        o = Ordering(s, k, y)
        key = np.where(np.isinf(s), -1.0, s) + 10.0 * k  # the lexicographic order
        assert o.auc()[0] == pytest.approx(roc_auc_score(y, key), abs=1e-12)
        assert o.kept_at(0.1)[0][0] == pytest.approx(_brute_kept(s, k, y), abs=1e-12)
        # integer weights = repeated items (what a bootstrap resample is)
        w = rng.integers(0, 3, n).astype(float)
        if not (w[y].sum() and w[~y].sum()):
            continue
        assert o.auc(w[None, :])[0] == pytest.approx(
            roc_auc_score(y, key, sample_weight=w), abs=1e-12
        )
        rep = np.repeat(np.arange(n), w.astype(int))
        assert o.kept_at(0.1, w[None, :])[0][0] == pytest.approx(
            _brute_kept(s[rep], k[rep], y[rep]), abs=1e-12
        )


def test_intervals_are_reproducible_and_hold_the_value():
    rng = np.random.default_rng(1)
    y = rng.random(200) < 0.6
    s = rng.normal(size=200) + y
    k = s > -0.5
    e = entries(s, k, y, None, "slice", max_false_recall=0.1, n_resamples=300)
    assert e == entries(s, k, y, None, "slice", max_false_recall=0.1, n_resamples=300)
    for m in (AUC, KEPT):
        lo, hi = e[m]["ci95"]
        assert lo <= e[m]["value"] <= hi
    assert e[AUC]["n"] == e[AUC]["denominator"] == 200
    assert e[KEPT]["n"] == e[KEPT]["denominator"] == int(y.sum())
    assert e[KEPT]["false_recall_at"] <= 0.1


def test_the_random_committer_on_a_hand_case():
    # 2 answerable (one committed: c = 0.5), 1 unanswerable (k = floor(0.1) = 0). The random
    # committer commits its unanswerable with p 0.5: if not, it keeps its committed answerable
    # items (E = 2 c = 1); if so, those above it in a random order (half of them): 0.5.
    # Expected kept: 0.5 * 1 + 0.5 * 0.5 = 0.75 of 2 answerable = 0.375
    o = Ordering([3.0, 1.0, 2.0], [True, False, True], [True, True, False])
    assert o.random_kept(0.10) == pytest.approx(0.375)
    assert Ordering([1.0] * 3, [False] * 3, [True, True, False]).random_kept(0.10) == 0.0
    # every query committed (c = 1): U = N = 10, k = 1: 2 of 11 gaps
    o = Ordering([0.0] * 15, [True] * 15, [True] * 5 + [False] * 10)
    assert o.random_kept(0.10) == pytest.approx(2 / 11)
    e = entries(
        np.zeros(3),
        np.array([True, False, True]),
        np.array([True, True, False]),
        None,
        "slice",
        max_false_recall=0.1,
        n_resamples=20,
    )
    assert e[KEPT]["random_committer"] == pytest.approx(0.375)


def test_the_random_committer_is_the_mean_of_random_commits():
    # 30 answerable of which the system commits 6 (c = 0.2), 40 unanswerable (k = 4), and a
    # second modality; a seeded draw of random committers averages to the exact figure
    rng = np.random.default_rng(11)
    y = np.array([True] * 30 + [False] * 40 + [True] * 10 + [False] * 10)
    strata = np.array(["pdf"] * 70 + ["video"] * 20)
    kept = np.zeros(90, bool)
    kept[:6] = True
    kept[70:75] = True  # video: c = 0.5
    exact = Ordering(np.zeros(90), kept, y, strata).random_kept(0.10)
    draws = []
    for _ in range(4000):
        c = np.where(strata == "pdf", 0.2, 0.5)
        k = rng.random(90) < c
        draws.append(float(Ordering(rng.random(90), k, y, strata).kept_at(0.10)[0][0]))
    assert np.mean(draws) == pytest.approx(exact, abs=0.005)


def test_the_score_read_from_a_run_line():
    assert abstention_score(0.25, np.array([3.0, 9.0])) == 0.25  # reported: used as is
    assert abstention_score(None, np.array([3.0, 9.0])) == 9.0  # else the top-1 score
    assert abstention_score(None, np.zeros(0)) == -INF
    assert abstention_score(None, None) == -INF


# ------------------------------------------------------------------ end to end, with gates


def _run(records, cart, scores, confidence=None):
    out = []
    for i, r in enumerate(records):
        row = {
            "query_id": r["query_id"],
            "hits": [["p1", scores[i]]],
            "cartridge": ["p1"] if cart[i] else [],
            "latency_ms": 1,
        }
        if confidence is not None:
            row["confidence"] = confidence[i]
        out.append(row)
    return out


RECS = [rec(f"pdfh:a{i}", [page(1)]) for i in range(6)] + [rec(f"pdfh:u{i}", []) for i in range(10)]


def test_an_always_abstaining_system_gets_no_pass_and_scores_zero():
    scores = [5, 4, 3, 3, 2, 1] + [2, 2, 1, 1, 1, 0, 0, 0, 0, 0]
    m = compute_metrics(RECS, ITEMS, ATOMS, _run(RECS, [False] * 16, scores), n_resamples=100)
    pdf = m["pdf"]
    assert pdf["false_recall_rate"]["value"] == 0.0
    assert pdf["abstain_rate_answerable"]["value"] == 1.0 > MAX_SILENT_ABSTENTION
    assert pdf[KEPT]["value"] == 0.0 and pdf[KEPT]["n"] == 6
    assert pdf[AUC]["value"] == pytest.approx(roc_auc_score([1] * 6 + [0] * 10, scores))
    g = next(g for g in m["gates"] if g["scope"] == "pdf" and g["metric"] == "false_recall_rate")
    assert g["pass"] is False and g["silent"] is True
    assert "abstains on 1.000 of the answerable items" in g["why"]
    assert g["companion"] == {
        "metric": "abstain_rate_gated",
        "value": 1.0,
        "bound": MAX_SILENT_ABSTENTION,
    }
    text = format_table(m)
    assert "FAIL (silent)" in text and "abstain_rate_gated 1.0000" in text


def test_the_silent_bound_is_strict_and_a_mixed_system_passes():
    # 3 of 6 answerable abstained (0.5: not more than the bound), no false recall: PASS
    cart = [True] * 3 + [False] * 3 + [False] * 10
    scores = [5, 4, 3, 3, 2, 1] + [0] * 10
    m = compute_metrics(RECS, ITEMS, ATOMS, _run(RECS, cart, scores), n_resamples=100)
    g = next(g for g in m["gates"] if g["scope"] == "pdf" and g["metric"] == "false_recall_rate")
    assert m["pdf"]["abstain_rate_answerable"]["value"] == 0.5
    assert (g["pass"], g["silent"], g["why"]) == (True, False, "")
    assert m["pdf"][KEPT]["value"] == 0.5
    # one more abstention (4 of 6): FAIL (silent), though false recall is still 0
    cart[3 - 1] = False
    m = compute_metrics(RECS, ITEMS, ATOMS, _run(RECS, cart, scores), n_resamples=100)
    g = next(g for g in m["gates"] if g["scope"] == "pdf" and g["metric"] == "false_recall_rate")
    assert (g["pass"], g["silent"]) == (False, True)
    gate = BY_NAME["false_recall_rate"].gate
    assert gate.verdict(0.0, None) == (True, "")  # no answerable item
    assert gate.verdict(None, 1.0) == (None, "")  # no unanswerable item: n/a


def _code(i: int):
    """A code item, its atom and an answerable record on it (code has no unanswerable)."""
    from test_metrics_hand import T1, atom, item

    sid, path = f"codeh:f{i}", f"src/f{i}.py"
    return (
        item(sid, "codeh/dana", T1, "code"),
        atom(
            f"c{i}", sid, "codeh/dana", T1, {"path": path, "line_start": 1, "line_end": 9}, "code"
        ),
        rec(
            f"codeh:q{i}",
            [{"source_id": sid, "region": {"path": path, "line": 3}}],
            m="code",
            holder="codeh/dana",
        ),
    )


def test_the_all_silence_check_leaves_code_out():
    # pdf: abstains on all 6 answerable and all 10 unanswerable items; code (no unanswerable
    # item): answers all 8. Over all answerable items it abstains on 6 of 14 (0.43), but on
    # every answerable item beside which a false recall is measured: silent on "all"
    code = [_code(i) for i in range(8)]
    recs = RECS + [c[2] for c in code]
    run = _run(RECS, [False] * 16, [1.0] * 16) + [
        {
            "query_id": c[2]["query_id"],
            "hits": [[c[1]["atom_id"], 1.0]],
            "cartridge": [c[1]["atom_id"]],
            "latency_ms": 1,
        }
        for c in code
    ]
    m = compute_metrics(
        recs, ITEMS + [c[0] for c in code], ATOMS + [c[1] for c in code], run, n_resamples=50
    )
    assert m["all"]["abstain_rate_answerable"]["value"] == pytest.approx(6 / 14)
    assert m["all"]["abstain_rate_gated"]["value"] == 1.0
    assert m["all"]["abstain_rate_gated"]["n"] == 6
    assert m["code"]["abstain_rate_gated"]["value"] is None
    g = {x["scope"]: x for x in m["gates"] if x["metric"] == "false_recall_rate"}
    assert g["all"]["value"] == 0.0 and (g["all"]["pass"], g["all"]["silent"]) == (False, True)
    assert g["all"]["companion"]["value"] == 1.0 and g["pdf"]["silent"] is True
    assert g["code"]["pass"] is None  # no unanswerable item: n/a, never silent


def test_a_reported_confidence_is_the_score_read():
    # the top-1 hit scores say nothing (all 1.0); the confidence separates
    conf = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4] + [0.3, 0.2, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    run = _run(RECS, [True] * 16, [1.0] * 16, confidence=conf)
    m = compute_metrics(RECS, ITEMS, ATOMS, run, n_resamples=100)
    assert m["pdf"][AUC]["value"] == 1.0
    assert m["pdf"][KEPT]["value"] == 1.0  # t = 0.4 keeps every answerable, no FR
    m = compute_metrics(RECS, ITEMS, ATOMS, _run(RECS, [True] * 16, [1.0] * 16), n_resamples=100)
    assert m["pdf"][AUC]["value"] == 0.5 and m["pdf"][KEPT]["value"] == 0.0


def test_a_bad_confidence_is_a_located_error():
    from membench.core.errors import InputError
    from membench.run.files import parse_run_row

    row = {"query_id": "q", "hits": [], "cartridge": [], "latency_ms": 1, "confidence": "high"}
    with pytest.raises(
        InputError, match=r"run.jsonl:3: RUN_SCHEMA: field confidence: must be a finite"
    ):
        parse_run_row(row, "run.jsonl", 3)
    assert parse_run_row(dict(row, confidence=None), "run.jsonl", 3).confidence is None
    assert parse_run_row(dict(row, confidence=2), "run.jsonl", 3).confidence == 2.0


# ------------------------------------------------------------------ where it is shown


def test_badges_tables_and_next_steps_show_silence():
    from membench.analysis.summaries import gates_frame
    from membench.report.summary import next_steps, summary_html
    from membench.report.tables import gate_badges, gate_rows

    scores = [5, 4, 3, 3, 2, 1] + [2, 2, 1, 1, 1, 0, 0, 0, 0, 0]
    m = compute_metrics(RECS, ITEMS, ATOMS, _run(RECS, [False] * 16, scores), n_resamples=100)
    row = next(
        r for r in gate_rows(m) if r["scope"] == "pdf" and r["metric"] == "false_recall_rate"
    )
    assert row["result"] == "FAIL (silent)" and row["companion"] == 1.0
    assert (row["companion_n"], row["companion_denominator"]) == (6, 6)
    html = gate_badges(m)
    assert 'data-result="FAIL (silent)"' in html and "✗ fail (silent)" in html
    assert "abstains on 1.000 of answerable (n=6/6); silent above 0.50" in html
    assert 'title="silent: abstains on 1.000' in html
    df = gates_frame(m).set_index(["scope", "metric"])
    r = df.loc[("pdf", "false_recall_rate")]
    assert r["result"] == "FAIL (silent)" and r["abstain_rate_answerable"] == 1.0
    assert r["abstain_n/den"] == "6/6" and "silent" in r["why"]
    steps = " ".join(next_steps(m))
    assert "false_recall_rate = 0.000" in steps and "FAIL (silent): abstains on 1.000" in steps
    assert "<b>6 of 8 gates pass</b>, 2 fail, 0 n/a" in summary_html(m, "x")  # pdf and all


def test_a_silent_slice_fails_its_false_recall_gate():
    import pandas as pd

    from membench.analysis.slices import slice_table

    n = 8
    df = pd.DataFrame(
        {
            "modality": ["pdf"] * n,
            "source": ["a"] * 4 + ["b"] * 4,
            "answerable": [True, True, False, False] * 2,
            "audited": [True] * n,
            "recall@10": [1.0, 1.0, np.nan, np.nan] * 2,
            "false_recall": [np.nan, np.nan, 0.0, 0.0] * 2,
            # source a answers its answerable items; source b abstains on everything
            "abstained": [False, False, True, True, True, True, True, True],
            "holder_leak": [False] * n,
            "temporal_leak": [False] * n,
            "abstention_score": [3.0, 2.0, 1.0, 0.0] * 2,
        }
    )
    t = slice_table(
        df,
        "source",
        n_resamples=50,
        metrics=["recall@10", "false_recall_rate", "abstain_rate_answerable", KEPT],
    ).set_index("source")
    assert t.loc["a", "gate_failures"] == "" and t.loc["a", KEPT] == 1.0
    assert t.loc["b", "false_recall_rate"] == 0.0 and t.loc["b", "abstain_rate_answerable"] == 1.0
    assert t.loc["b", "gate_failures"] == "false_recall_rate (silent)"
    assert t.loc["b", "worst_metric"] == "false_recall_rate (silent)"
    assert t.loc["b", "worst_margin"] == pytest.approx(MAX_SILENT_ABSTENTION - 1.0)
    assert t.loc["b", KEPT] == 0.0
