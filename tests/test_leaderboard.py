"""The leaderboard's result store and tables, on small real runs (bm25, dense, hybrid on the
dev video and ui_screenshot queries, as test_reference_e2e): entries keyed by identity with
the figures of the run's files; every refusal one line with nothing written; the tables'
best, paired differences and Holm p checked against hand computations; size classes and
judgment sets taken from the entries, whatever they are."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from membench.analysis.leaderboard import (
    ENTRIES,
    MEASURES,
    RELEVANCE,
    SHOWN_CONTEXT,
    Refused,
    _sha,
    add_runs,
    leaderboard,
    read_store,
    sealed,
)
from membench.cli import main
from membench.core.errors import InputError
from membench.metrics.measures import BY_NAME, ORDERING_MEASURES
from membench.metrics.rundir import RunDir
from membench.run.runner import run_system
from membench.systems import make_system

MODS = ["video", "ui_screenshot"]


def _run(system, built, corpus_root, out, limit=15):
    """One small dev run on MODS. The sets' hard rules are tests/test_build.py's: each run's
    keeper does not check them again (``check_sets=False``, as tests/conftest.py's bm25_dev)."""
    return run_system(
        system, built.out, "dev", out, corpus_root, modalities=MODS, limit=limit, check_sets=False
    )


@pytest.fixture(scope="module")
def runs(built, corpus_root, tmp_path_factory):
    d = tmp_path_factory.mktemp("lb-runs")
    for name in (
        "bm25",
        "dense",
        "hybrid",
        "random",
        "newest",
        "metadata",
        "oracle",
        "nothing",
        "echo",
    ):
        _run(make_system(name), built, corpus_root, d / name)
    _run(make_system("bm25", {"max_atoms": 3}), built, corpus_root, d / "bm25-3")
    _run(make_system("bm25"), built, corpus_root, d / "bm25-limit5", limit=5)
    # a bm25 that always abstains (its thresholds out of reach): silence
    _run(
        make_system("bm25", {"thresholds": {m: 1e18 for m in MODS}}),
        built,
        corpus_root,
        d / "bm25-silent",
    )
    return d


@pytest.fixture(scope="module")
def store(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("store")
    added = add_runs([runs / "bm25", runs / "dense", runs / "hybrid"], out, n_resamples=200)
    return out, added


def _entries(out):
    return {e["system"]: e for e in read_store(out)[1]}


def test_meta_records_the_card_and_the_truncation(runs):
    bm = json.loads((runs / "bm25" / "meta.json").read_text())
    de = json.loads((runs / "dense" / "meta.json").read_text())
    hy = json.loads((runs / "hybrid" / "meta.json").read_text())
    assert bm["card"]["name"] == "bm25" and bm["truncation"]["applied_tokens"] is None
    assert de["card"]["name"] == "all-minilm-l6-v2" and len(de["card"]["sha256"]) == 64
    t = de["truncation"]
    # the reference systems read 128 word pieces (the model's training length) of the card's 256
    assert (
        t["applied_tokens"],
        t["card_max_tokens"],
        t["benchmark_max_tokens"],
        t["engine_max_tokens"],
    ) == (128, 256, 512, 128)
    assert 0 <= t["texts_truncated"] <= t["texts"] and t["texts"] > 0
    assert hy["card"]["components"] == ["bm25", "all-minilm-l6-v2"]
    assert hy["truncation"]["applied_tokens"] == 128
    assert json.loads((runs / "metadata" / "meta.json").read_text())["card"] is None
    floor = json.loads((runs / "random" / "meta.json").read_text())["card"]
    assert floor["name"] == "random" and "content-free floor" in floor["revision"]


def test_entries_are_keyed_by_identity(store):
    out, added = store
    assert added.entries == 3 and not any(a["replaced"] for a in added.added)
    st, entries = read_store(out)
    assert st["split"] == "dev" and st["selection"]["modalities"] == sorted(MODS)
    for e in entries:
        assert set(e["key"]) == {
            "card_sha256",
            "config_sha256",
            "code_revision",
            "set_sha256",
            "identity_sha256",
            "sealed",
        }
        assert e["key"]["identity_sha256"] == _sha(e["identity"]) and e["sealed"] is False
        assert e["identity"]["kind"] == "reference" and e["identity"]["spec"] == e["system"]
        assert e["id"] == _sha(e["key"])[:16]
        assert (out / ENTRIES / f"{e['id']}.json").is_file()
        assert e["key"]["set_sha256"] == st["set_sha256"]
    assert len({e["key"]["card_sha256"] for e in entries}) == 3


def test_figures_are_the_runs_own(store, runs):
    out, _ = store
    for name, e in _entries(out).items():
        m = RunDir.open(runs / name).metrics(write=False)
        for scope in [*MODS, "all"]:
            for k in (*MEASURES, *SHOWN_CONTEXT):  # the answer layer and context too
                got, exp = e["figures"]["gold"][scope][k], m[scope][k]
                assert (got["n"], got["denominator"]) == (exp["n"], exp["denominator"])
                assert (
                    got["value"] == pytest.approx(exp["value"], abs=1e-12)
                    if exp["value"] is not None
                    else got["value"] is None
                )
        vals = [v for v in e["items"]["values"]["gold"]["recall@10"] if v is not None]
        assert np.mean(vals) == pytest.approx(e["figures"]["gold"]["all"]["recall@10"]["value"])


def test_an_edited_metrics_json_changes_nothing(store, runs, tmp_path):
    out, _ = store
    before = _entries(out)["bm25"]["figures"]
    fake = (
        json.loads((runs / "bm25" / "metrics.json").read_text())
        if (runs / "bm25" / "metrics.json").exists()
        else {}
    )
    fake["all"] = {"recall@10": {"value": 1.0, "n": 1, "denominator": 1, "ci95": [1, 1]}}
    (runs / "bm25" / "metrics.json").write_text(json.dumps(fake))
    again = add_runs([runs / "bm25"], tmp_path / "s", n_resamples=200)
    assert again.entries == 1
    assert _entries(tmp_path / "s")["bm25"]["figures"] == before
    (runs / "bm25" / "metrics.json").unlink()


def test_adding_a_run_again_replaces_its_entry(store, runs):
    out, _ = store
    files = sorted(p.name for p in (out / ENTRIES).iterdir())
    again = add_runs([runs / "dense"], out, n_resamples=200)
    assert again.entries == 3 and again.added[0]["replaced"]
    assert sorted(p.name for p in (out / ENTRIES).iterdir()) == files


def _refused(runs_list, out):
    with pytest.raises(Refused) as e:
        add_runs(runs_list, out, n_resamples=200)
    return e.value.lines


def test_refusals_are_one_line_each_and_write_nothing(store, runs, tmp_path):
    out, _ = store
    files = {p.name: p.read_bytes() for p in (out / ENTRIES).iterdir()}
    partial = tmp_path / "partial"
    shutil.copytree(runs / "bm25-3", partial)
    meta = json.loads((partial / "meta.json").read_text())
    meta["status"] = "running"
    (partial / "meta.json").write_text(json.dumps(meta))
    lines = _refused(
        [runs / "metadata", runs / "oracle", partial, runs / "bm25-limit5", runs / "bm25-3"], out
    )
    assert len(lines) == 4 and all("\n" not in x for x in lines)
    assert "metadata: refused: no model card" in lines[0]
    assert "oracle: refused: the system saw the gold" in lines[1]
    assert "partial: refused" in lines[2] and "INCOMPLETE_RUN" in lines[2]
    assert "bm25-limit5: refused: evaluates other queries" in lines[3]
    assert {p.name: p.read_bytes() for p in (out / ENTRIES).iterdir()} == files
    _refused([runs / "oracle"], tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()


def test_runs_on_other_set_files_are_refused(store, built, corpus_root, tmp_path):
    out, _ = store
    sets = tmp_path / "sets"
    shutil.copytree(built.out, sets)
    lines = (sets / "code.jsonl").read_text().splitlines(keepends=True)  # not read by the runs
    (sets / "code.jsonl").write_text("".join(lines[:-1]))
    run_system(
        make_system("bm25"),
        sets,
        "dev",
        tmp_path / "run",
        corpus_root,
        modalities=MODS,
        limit=15,
        check_sets=False,
    )
    (line,) = _refused([tmp_path / "run"], out)
    assert "refused: made on other set files" in line and "code.jsonl" in line


def test_the_same_run_twice_in_one_call_is_refused(runs, tmp_path):
    lines = _refused([runs / "bm25", runs / "bm25"], tmp_path / "s")
    assert len(lines) == 1 and "the same entry" in lines[0]


def _holm(p):
    """Holm-Bonferroni by hand (the textbook step-down), NaN left out."""
    p = np.asarray(p, float)
    ok = np.flatnonzero(~np.isnan(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    out = np.full(p.shape, np.nan)
    run = 0.0
    for i, j in enumerate(order):
        run = max(run, min(1.0, (len(ok) - i) * p[j]))
        out[j] = run
    return out


def test_tables_mark_the_best_and_test_the_others_against_it(store):
    out, _ = store
    lb = leaderboard(out, n_resamples=500)
    entries = {e["id"]: e for e in lb.entries}
    # PsTuts's same_question judges video beside the gold
    assert lb.size_classes == ["<=1B"] and lb.judgment_sets == ["gold", "same_question"]
    rows = lb.rows
    for (scope, m), g in rows[rows["judgment_set"] == "gold"].groupby(["scope", "measure"]):
        vals = g.dropna(subset=["value"])
        if m in MEASURES and not BY_NAME[m].ranked:  # report-only: shown, never tested
            assert not g["is_best"].any() and g["p_holm"].isna().all()
            continue
        if vals.empty or m not in MEASURES:
            continue
        best = g[g["is_best"]]
        assert len(best) == 1
        hi = BY_NAME[m].direction == "higher"
        assert best["value"].iloc[0] == (vals["value"].max() if hi else vals["value"].min())
        b = entries[best["entry"].iloc[0]]
        for r in g[~g["is_best"]].to_dict("records"):
            e = entries[r["entry"]]
            if m in ORDERING_MEASURES:  # a statistic, no per-item values: its difference
                assert r["diff"] == pytest.approx(r["value"] - best["value"].iloc[0], abs=1e-12)
                assert np.isnan(r["p_permutation"]) and r["p_holm"] >= r["p_bootstrap"] - 1e-12
                continue
            mods = np.array(e["items"]["modality"])
            mask = np.ones(len(mods), bool) if scope == "all" else mods == scope
            x = np.array([np.nan if v is None else v for v in e["items"]["values"]["gold"][m]])[
                mask
            ]
            y = np.array([np.nan if v is None else v for v in b["items"]["values"]["gold"][m]])[
                mask
            ]
            ok = ~np.isnan(x) & ~np.isnan(y)
            assert r["diff"] == pytest.approx((x[ok] - y[ok]).mean(), abs=1e-12)
            assert r["diff_ci95_lo"] <= r["diff"] + 1e-12 <= r["diff_ci95_hi"] + 2e-12
            assert r["p_holm"] >= r["p_permutation"] - 1e-12
    for fam in ("relevance", "other"):
        g = lb.table("<=1B", "gold", family=fam)
        p = np.where(g["measure"].isin(ORDERING_MEASURES), g["p_bootstrap"], g["p_permutation"])
        assert np.allclose(_holm(p), g["p_holm"], equal_nan=True)
    rel = set(lb.table("<=1B", "gold", family="relevance")["measure"])
    assert rel == set(RELEVANCE)
    # the answer layer and the context cost are shown beside latency, never tested
    other = lb.table("<=1B", "gold", family="other")
    shown = other[other["measure"].isin(SHOWN_CONTEXT)]
    assert set(shown["measure"]) == set(SHOWN_CONTEXT)
    assert not shown["is_best"].any() and shown["p_permutation"].isna().all()
    # the answer within the token budget is ranked and tested; the answer table is ranked by it
    from membench.analysis.leaderboard import ANSWER_COLUMNS, ANSWER_RANK_BY

    assert ANSWER_RANK_BY in MEASURES and ANSWER_COLUMNS[0] == ANSWER_RANK_BY
    assert lb.rank_measure("answer") == ANSWER_RANK_BY
    assert (other["measure"] == ANSWER_RANK_BY).any()
    # (these runs are scored without their content: where a value exists, it has a best)
    ranked = other[(other["measure"] == ANSWER_RANK_BY) & other["value"].notna()]
    assert ranked.empty or ranked["is_best"].any()


def test_silence_cannot_win_the_cartridge_table(runs, tmp_path):
    """A bm25 that always abstains has the best false-recall rate (0) but its gate is FAIL
    (silent), it scores 0 on the answerable share kept at false recall <= 0.10, and the
    cartridge table, ranked by that share, puts it last; its abstention stands beside."""
    from membench.analysis.leaderboard import CARTRIDGE_RANK_BY, format_leaderboard
    from membench.report.leaderboard_tables import leaderboard_table

    out = tmp_path / "s"
    add_runs([runs / "bm25", runs / "bm25-silent"], out, n_resamples=100)
    lb = leaderboard(out, n_resamples=200)
    r = lb.rows[lb.rows["scope"] == "video"].set_index(["system", "measure"])
    silent = next(lab for lab in lb.labels.values() if "bm25-silent" in lab)
    normal = next(lab for lab in lb.labels.values() if lab != silent)
    assert r.loc[(silent, "false_recall_rate"), "value"] == 0.0
    assert r.loc[(silent, "abstain_rate_answerable"), "value"] == 1.0
    assert not r.loc[(silent, "false_recall_rate"), "gate_pass"]
    assert "silent" in r.loc[(silent, "false_recall_rate"), "gate_why"]
    assert r.loc[(silent, CARTRIDGE_RANK_BY), "value"] == 0.0
    assert r.loc[(normal, CARTRIDGE_RANK_BY), "value"] > 0.0
    assert bool(r.loc[(normal, CARTRIDGE_RANK_BY), "is_best"])
    assert lb.rank_measure("other") == CARTRIDGE_RANK_BY
    html = leaderboard_table(lb, "<=1B", "gold", "other", scopes=("video",)).html
    assert html.index(normal) < html.index(silent)  # ranked by the kept share
    assert "FAIL (silent)" in html and "abstain_rate_answerable" in html.replace("<wbr>", "")
    text = format_leaderboard(lb, scopes=("video",))
    assert "FAIL (silent)" in text and "abstain_rate_answerable" in text
    # beside the kept share, the random committer's at the same abstention: silence keeps 0
    assert r.loc[(silent, CARTRIDGE_RANK_BY), "random_kept"] == 0.0
    assert 0.0 < r.loc[(normal, CARTRIDGE_RANK_BY), "random_kept"] <= 1.0
    assert "random committer" in html and "(random committer 0.000)" in text


def test_a_silent_false_recall_is_never_named_best(runs, tmp_path):
    """A submitted system with a card that never commits a cartridge has a false recall of 0,
    but its gate is FAIL (silent): it is not the best of the column, not in --brief, not in
    page 06's "which system is best" (best_rows); alone, the answer is "no system: all
    silent"."""
    from membench.analysis.leaderboard import best_rows, format_brief
    from membench.metrics.measures import ALL_SILENT
    from membench.report.render import _leaderboard_best_html

    out = tmp_path / "s"
    add_runs([runs / "bm25", runs / "bm25-silent"], out, n_resamples=100)
    lb = leaderboard(out, n_resamples=200)
    silent = next(lab for lab in lb.labels.values() if "bm25-silent" in lab)
    normal = next(lab for lab in lb.labels.values() if lab != silent)
    fr = lb.rows[lb.rows["measure"] == "false_recall_rate"].set_index(["scope", "system"])
    named = []
    for scope in (*MODS, "all"):
        assert fr.loc[(scope, silent), "value"] == 0.0
        assert fr.loc[(scope, silent), "gate_why"] and not fr.loc[(scope, silent), "is_best"]
        if "silent" in (fr.loc[(scope, normal), "gate_why"] or ""):
            # bm25 itself abstains on most of this scope's few answerables (ui_screenshot's
            # sample): silent too, so no system is named best there
            assert not fr.loc[(scope, normal), "is_best"]
            continue
        assert fr.loc[(scope, normal), "is_best"]
        named.append(scope)
    assert {"video", "all"} <= set(named)
    (b,) = [b for b in best_rows(lb, "<=1B") if b["measure"] == "false_recall_rate"]
    assert b["best"] == normal and [o["system"] for o in b["others"]] == [silent]
    line = next(x for x in format_brief(lb).splitlines() if "false_recall_rate " in x)
    assert line.split()[1] == normal.split()[0]
    alone = tmp_path / "alone"
    add_runs([runs / "bm25-silent", runs / "nothing"], alone, n_resamples=100)
    lb = leaderboard(alone, n_resamples=200)
    (b,) = [b for b in best_rows(lb, "<=1B") if b["measure"] == "false_recall_rate"]
    assert b["best"] == ALL_SILENT and b["value"] is None and b["others"][0]["silent"]
    assert [f["system"] for f in b["baselines"]] == ["nothing"]
    line = next(x for x in format_brief(lb).splitlines() if "false_recall_rate " in x)
    assert f"false_recall_rate        {ALL_SILENT}; " in line and "FAIL (silent)" in line
    assert ALL_SILENT in _leaderboard_best_html(lb, "<=1B")


def test_the_no_memory_baselines_are_shown_never_ranked_never_tested(runs, tmp_path):
    """nothing and echo carry a card and join the store; their rows are marked baseline, stand
    under the ranked ones in every block, are never the best of a column (nothing's false
    recall 0 beats bm25's, echo's recall@10 may beat a weak system's) and carry no test; the
    other doubles carry no card and stay refused; the relevance table has the context column."""
    from membench.analysis.leaderboard import BASELINE_MARK, format_brief
    from membench.report.leaderboard_tables import CONTEXT_COLUMN, leaderboard_table

    out = tmp_path / "b"
    add_runs([runs / "bm25", runs / "nothing", runs / "echo"], out, n_resamples=100)
    lb = leaderboard(out, n_resamples=200)
    rows = lb.rows
    base = rows[rows["baseline"]]
    assert set(base["system"]) == {"nothing" + BASELINE_MARK, "echo" + BASELINE_MARK}
    assert not base["is_best"].any()
    assert base["p_permutation"].isna().all() and base["p_holm"].isna().all()
    ranked = rows[~rows["baseline"]]
    fr = ranked[(ranked["measure"] == "false_recall_rate") & (ranked["scope"] == "all")]
    assert fr["is_best"].all()  # bm25 is best though nothing's false recall is 0
    nothing_fr = base[
        (base["measure"] == "false_recall_rate")
        & (base["scope"] == "all")
        & base["system"].str.startswith("nothing")
    ]
    assert nothing_fr["value"].iloc[0] == 0.0
    html = leaderboard_table(lb, "<=1B", "gold").html
    for scope in ("video", "ui_screenshot", "all"):
        block = html[html.index(f"<b>{scope}</b>") :]
        assert block.index("bm25") < block.index("echo" + BASELINE_MARK)
    assert html.count('class="mb-baseline"') == 2 * 3  # two rows in each of 3 blocks
    assert CONTEXT_COLUMN in html.replace("<wbr>", "")
    brief = format_brief(lb)
    assert "no memory: echo " in brief and "nothing 0.000" in brief
    with pytest.raises(Refused, match="the system saw the gold|no model card"):
        add_runs([runs / "metadata"], tmp_path / "r", n_resamples=100)


def test_the_content_free_floors_are_shown_under_the_baselines_never_ranked(runs, tmp_path):
    """random and newest (content-free floors: they read no content) carry a card and join the
    store; their rows are labelled "content-free floor", not "baseline", stand under the
    baselines in every block, are never the best of a column and carry no test; --brief and
    page 06's "which system is best" list them apart from the baselines."""
    from membench.analysis.leaderboard import (
        BASELINE_MARK,
        FLOOR_MARK,
        best_rows,
        format_brief,
        format_markdown,
        is_floor,
    )
    from membench.report.leaderboard_tables import LEGEND, leaderboard_table
    from membench.report.render import _leaderboard_best_html

    out = tmp_path / "f"
    add_runs(
        [runs / "bm25", runs / "nothing", runs / "random", runs / "newest"], out, n_resamples=100
    )
    lb = leaderboard(out, n_resamples=200)
    assert sorted(e["system"] for e in lb.entries if is_floor(e)) == ["newest", "random"]
    rows = lb.rows
    floor = rows[rows["floor"]]
    assert set(floor["system"]) == {"random" + FLOOR_MARK, "newest" + FLOOR_MARK}
    assert floor["baseline"].all() and not floor["is_best"].any()
    assert floor["p_permutation"].isna().all() and floor["p_holm"].isna().all()
    assert set(rows[rows["baseline"] & ~rows["floor"]]["system"]) == {"nothing" + BASELINE_MARK}
    ranked = rows[~rows["baseline"]]
    assert ranked["is_best"].any() and set(ranked["system"]) == {"bm25"}
    html = leaderboard_table(lb, "<=1B", "gold").html
    for scope in ("video", "ui_screenshot", "all"):
        block = html[html.index(f"<b>{scope}</b>") :]
        assert (
            block.index("bm25")
            < block.index("nothing" + BASELINE_MARK)
            < block.index("newest" + FLOOR_MARK)
        )
        assert block.index("nothing" + BASELINE_MARK) < block.index("random" + FLOOR_MARK)
    assert html.count('class="mb-baseline mb-floor"') == 2 * 3  # two rows in each block
    assert html.count('class="mb-baseline"') == 1 * 3
    assert "content-free floor" in LEGEND
    md = format_markdown(lb).splitlines()
    names = [x.split(" | ")[2] for x in md[2:] if x.startswith("| <=1B | gold |")]
    assert names[0] == "bm25" and names[1] == "nothing" + BASELINE_MARK
    assert set(names[2:]) == {"random" + FLOOR_MARK, "newest" + FLOOR_MARK}
    (b,) = [b for b in best_rows(lb, "<=1B") if b["measure"] == "recall@10"]
    assert b["best"] == "bm25" and b["others"] == []
    assert [f["system"] for f in b["baselines"]] == ["nothing"]
    assert [f["system"] for f in b["floors"]] == ["newest", "random"]
    line = next(x for x in format_brief(lb).splitlines() if "recall@10 " in x)
    assert "no memory: nothing 0.000" in line and "content-free floors: newest " in line
    assert "content-free floors: newest" in _leaderboard_best_html(lb, "<=1B")


def test_the_natives_with_a_tell_have_their_own_labelled_column(store):
    """False recall is the audited one; the natives with an upstream tell are a column of their
    own, labelled with the tell's ROC AUC from the audit of the entries' sets (every entry
    carries it), never gated, never ranked."""
    from membench.analysis.leaderboard import format_markdown
    from membench.contract.tells import NATIVE_TELLS
    from membench.report.leaderboard_tables import leaderboard_table

    out, _ = store
    lb = leaderboard(out, n_resamples=100)
    assert "false_recall_native" in MEASURES
    assert all(e["native_tells"] == lb.tells for e in lb.entries)
    assert set(lb.tells) <= set(NATIVE_TELLS)
    nat = lb.rows[lb.rows["measure"] == "false_recall_native"]
    assert len(nat) and (nat["gate"] == "").all() and not nat["is_best"].any()
    head = format_markdown(lb).splitlines()[0]
    assert "| false recall, audited |" in head
    assert (
        "| false recall, natives with a tell (tell ROC AUC " in head
        or "| false recall, natives with a tell (no native with a tell in these sets) |" in head
    )
    html = leaderboard_table(lb, "<=1B", "gold", "other").html.replace("<wbr>", "")
    assert "false recall, natives with a tell (" in html
    with pytest.raises(Exception, match="rank-by"):
        leaderboard(out, rank_by="false_recall_native", n_resamples=100)


def test_judged_at_10_stands_beside_recall_at_10_never_tested(store):
    """judged@10 is in every relevance table right after recall@10 (HTML, Markdown), with the
    run's figures; never the best, never tested, never a ranking."""
    from membench.analysis.leaderboard import OTHER, format_markdown
    from membench.report.leaderboard_tables import leaderboard_table

    out, _ = store
    lb = leaderboard(out, n_resamples=100)
    assert RELEVANCE.index("judged@10") == RELEVANCE.index("recall@10") + 1
    assert "judged@10" in MEASURES and "judged@10" not in OTHER
    j = lb.rows[lb.rows["measure"] == "judged@10"]
    assert len(j) == len(lb.rows[lb.rows["measure"] == "recall@10"])
    assert (j["family"] == "relevance").all() and not j["is_best"].any()
    assert j["p_holm"].isna().all() and j["best"].isna().all()
    cols = leaderboard_table(lb, "<=1B", "gold").columns
    assert cols.index("judged@10") == cols.index("recall@10") + 1
    head = format_markdown(lb).splitlines()[0]
    assert "| recall@10 | judged@10 |" in head
    for e in lb.entries:
        vals = [v for v in e["items"]["values"]["gold"]["judged@10"] if v is not None]
        assert np.mean(vals) == pytest.approx(e["figures"]["gold"]["all"]["judged@10"]["value"])
    with pytest.raises(Exception, match="rank-by"):
        leaderboard(out, rank_by="judged@10", n_resamples=100)


def test_gates_are_marked(store):
    lb = leaderboard(store[0], n_resamples=200)
    r = lb.rows
    g = r[(r["measure"] == "recall@10") & (r["judgment_set"] == "gold")]  # gates read gold
    assert (g["gate"] == ">= 0.9").all()
    assert ((g["value"] >= 0.9 - 1e-12) == g["gate_pass"]).all()
    assert (r[r["measure"] == "ndcg@10"]["gate"] == "").all()


def _clone(out, e, **card):
    """A copy of entry ``e`` with another card (its key and id follow)."""
    c = json.loads(json.dumps(e))
    c["card"].update(card)
    from membench.systems.cards import Card

    body = {k: v for k, v in c["card"].items() if k != "sha256"}
    c["card"]["sha256"] = Card.model_validate(body).sha256()
    c["key"]["card_sha256"] = c["card"]["sha256"]
    c["id"] = _sha(c["key"])[:16]
    c = sealed(c)  # (an entry as the store writes it: with its sha256)
    (out / ENTRIES / f"{c['id']}.json").write_text(json.dumps(c))
    return c


def test_size_classes_and_judgment_sets_come_from_the_entries(store, tmp_path):
    out = tmp_path / "s"
    shutil.copytree(store[0], out)
    dense = _entries(out)["dense"]
    big = _clone(out, dense, name="big-model", parameter_count=7_000_000_000, size_class=">1B")
    big["system"] = "dense-big-model"
    for e in read_store(out)[1]:  # every entry gains another judgment set, "session"
        e["judgment_sets"] = [*e["judgment_sets"], "session"]
        e["figures"]["session"] = e["figures"]["gold"]
        e["items"]["values"]["session"] = e["items"]["values"]["gold"]
        (out / ENTRIES / f"{e['id']}.json").write_text(json.dumps(sealed(e)))
    lb = leaderboard(out, n_resamples=200)
    assert lb.size_classes == ["<=1B", ">1B"]
    assert lb.judgment_sets == ["gold", "same_question", "session"]
    assert set(lb.table(">1B", "session")["entry"]) == {big["id"]}
    assert len(set(lb.table("<=1B", "session")["entry"])) == 3
    assert lb.table("<=1B", "session", family="other").empty  # shown once, under gold


def test_an_edited_entry_is_refused(store, tmp_path):
    out = tmp_path / "s"
    shutil.copytree(store[0], out)
    p = next((out / ENTRIES).iterdir())
    e = json.loads(p.read_text())
    e["key"]["code_revision"] = "something else"
    p.write_text(json.dumps(e))
    with pytest.raises(InputError, match="STORE"):
        read_store(out)


def test_the_command(store, runs, tmp_path, capsys):
    out = tmp_path / "s"
    assert (
        main(
            [
                "--quiet",
                "leaderboard",
                "--runs",
                str(runs / "bm25"),
                str(runs / "dense"),
                "--out",
                str(out),
                "--resamples",
                "200",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "added" in text and "== size <=1B, judgment set gold" in text
    assert "best" in text
    assert (
        main(
            [
                "--quiet",
                "leaderboard",
                "--runs",
                str(runs / "metadata"),
                str(runs / "oracle"),
                "--out",
                str(out),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and err[-1].startswith("membench: nothing written")
    assert main(["--quiet", "leaderboard", "--out", str(out), "--resamples", "200"]) == 0


def test_a_calibration_run_has_no_cartridge_figures(runs, built, corpus_root, tmp_path):
    """A run at the uncalibrated default threshold (--config calibration=none, what membench
    calibrate reads) is ranked on relevance, but its false recall is not shown nor tested."""
    cal = tmp_path / "bm25-cal"
    _run(make_system("bm25", {"calibration": "none", "max_atoms": 4}), built, corpus_root, cal)
    out = tmp_path / "s"
    add_runs([runs / "bm25", cal], out, n_resamples=200)
    lb = leaderboard(out, n_resamples=200)
    cal_id = next(e["id"] for e in lb.entries if e["config"]["calibration"] == "none")
    mine = lb.rows[lb.rows["entry"] == cal_id]
    assert "recall@10" in set(mine["measure"]) and "false_recall_rate" not in set(mine["measure"])
    others = lb.rows[lb.rows["entry"] != cal_id]
    assert "false_recall_rate" in set(others["measure"])
    assert any("uncalibrated default threshold" in n for n in lb.notes)
