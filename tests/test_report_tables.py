"""Report tables, badges, the summary and the escaping helper, without a kernel or a browser:
intervals in one cell, three decimals, 0/0 as n/a, verdict columns first and coloured, long
tables collapsed (nothing dropped), every data string escaped, links only inside the report."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from membench.report.escape import UnsafeLink, esc, href, markdown, md
from membench.report.render import csp, safe_label, unique_labels
from membench.report.summary import next_steps, summary_html
from membench.report.tables import collapsed, fmt_interval, fmt_num, gate_badges, metrics_grid, show

PAYLOAD = '<script>window.__membench_pwned=true</script><img src=x onerror="alert(1)">'


def test_numbers_three_decimals_and_na():
    assert fmt_num(0.8123456) == "0.812"
    assert fmt_num(float("nan")) == "n/a" and fmt_num(None) == "n/a"
    assert fmt_num(12) == "12"
    assert fmt_num(0.00004, p_value=True) == "<0.001"
    assert fmt_interval(0.81, 0.79, 0.83) == "0.810 [0.790, 0.830]"
    assert fmt_interval(float("nan"), 0.1, 0.2) == "n/a"
    assert fmt_interval(0.5, None, None) == "0.500"


def test_show_merges_intervals_puts_verdicts_first_and_colours_them():
    df = pd.DataFrame(
        {
            "scope": ["pdf", "image"],
            "metric": ["recall@10", "recall@10"],
            "value": [0.81, float("nan")],
            "ci95_lo": [0.79, float("nan")],
            "ci95_hi": [0.83, float("nan")],
            "n": [10, 0],
            "result": ["PASS", "FAIL"],
        }
    )
    t = show(df)
    assert t.columns[0] == "result"  # verdict first
    assert "value [95% CI]" in t.columns and "ci95_lo" not in t.columns
    assert "0.810 [0.790, 0.830]" in t.html  # one cell
    assert ">n/a<" in t.html and "nan" not in t.html.lower().replace("n/a", "")
    assert 'class="mb-s mb-pass">PASS' in t.html and 'class="mb-s mb-fail">FAIL' in t.html


def test_show_collapses_long_tables_without_dropping_rows():
    df = pd.DataFrame({"x": range(60), "y": [f"row{i}" for i in range(60)]})
    t = show(df, max_rows=10)
    first, rest = t.html.split("<details", 1)
    assert first.count("<tr>") == 11 and "row9<" in first and "row10<" not in first
    assert "show the other 50 of 60 rows" in rest and rest.count("<tr>") == 51
    assert "row59<" in rest


def test_show_escapes_every_cell_and_header():
    df = pd.DataFrame({PAYLOAD: [PAYLOAD], "n": [1]}).set_index(pd.Index([PAYLOAD], name="k"))
    html = show(df).html
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;" in html


def test_wide_interval_tables_stack_the_interval_under_the_value():
    df = pd.DataFrame(
        {f"m{i}": [0.5] for i in range(3)}
        | {f"m{i}_lo": [0.4] for i in range(3)}
        | {f"m{i}_hi": [0.6] for i in range(3)}
    )
    assert "0.500<br><small>[0.400, 0.600]</small>" in show(df).html
    narrow = df[["m0", "m0_lo", "m0_hi"]]
    assert "0.500 [0.400, 0.600]" in show(narrow).html


def metrics_fixture() -> dict:
    def e(v, n, lo=None, hi=None):
        return {"value": v, "n": n, "denominator": n, "ci95": [lo, hi]}

    return {
        "pdf": {"recall@10": e(0.6, 40, 0.5, 0.7), "false_recall_rate": e(None, 0)},
        "all": {
            "recall@10": e(0.95, 400, 0.93, 0.97),
            "false_recall_rate": e(0.05, 100, 0.01, 0.1),
        },
        "gates": [
            {
                "scope": "pdf",
                "metric": "recall@10",
                "op": ">=",
                "threshold": 0.9,
                "value": 0.6,
                "pass": False,
            },
            {
                "scope": "pdf",
                "metric": "false_recall_rate",
                "op": "<=",
                "threshold": 0.1,
                "value": None,
                "pass": None,
            },
            {
                "scope": "all",
                "metric": "recall@10",
                "op": ">=",
                "threshold": 0.9,
                "value": 0.95,
                "pass": True,
            },
            {
                "scope": "all",
                "metric": "false_recall_rate",
                "op": "<=",
                "threshold": 0.1,
                "value": 0.05,
                "pass": True,
            },
        ],
    }


def test_gate_badges_carry_verdict_value_interval_and_n():
    html = gate_badges(metrics_fixture())
    assert (
        'data-gate="pdf|recall@10" data-result="FAIL">✗ fail 0.600 [0.500, 0.700] n=40/40' in html
    )
    assert 'data-gate="pdf|false_recall_rate" data-result="n/a">n/a n/a n=0/0' in html
    assert 'data-result="PASS">✓ pass 0.950 [0.930, 0.970] n=400/400' in html


def test_the_natives_with_a_tell_stand_beside_the_audited_false_recall():
    """Gated false recall is headed as the audited one; the natives with an upstream tell are a
    column of their own next to it, never gated, headed with the tell's ROC AUC (or, without
    the audit, the sources and a pointer to docs/sets.md)."""
    m = metrics_fixture()
    native = {"value": 0.5, "n": 20, "denominator": 20, "ci95": [0.3, 0.7]}
    m["all"]["false_recall_native"] = native
    m["pdf"]["false_recall_native"] = {
        "value": None,
        "n": 0,
        "denominator": 0,
        "ci95": [None, None],
    }
    html = gate_badges(m, {"locomo": 0.8149, "mmlongbench": 0.7023})
    heads = re.findall(r"<th>(.*?)</th>", html)
    assert heads[2].startswith("false recall, audited<br><small>gate &lt;= 0.1")
    assert heads[3] == (
        "false recall, natives with a tell<br><small>not gated; tell ROC AUC "
        "locomo 0.81, mmlongbench 0.70</small>"
    )
    assert (
        'data-beside="false_recall_native">0.500<br><small>[0.300, 0.700]</small><br>'
        "<small>n=20/20</small></td>"
    ) in html
    assert not any(
        g.endswith("|false_recall_native")  # no verdict badge
        for g in re.findall(r'data-gate="([^"]+)"', html)
    )
    assert "docs/sets.md, audit table" in gate_badges(m)
    assert "false_recall_native" not in gate_badges(metrics_fixture())  # older figures
    grid = metrics_grid(
        m, ["false_recall_rate", "false_recall_native"], tells={"locomo": 0.81}
    ).html
    assert 'false_recall_rate<br><small class="mb-wrap">false recall, audited</small>' in grid
    assert (
        'false_recall_native<br><small class="mb-wrap">false recall, natives with a tell '
        "(tell ROC AUC locomo 0.81)</small>"
    ) in grid


def test_metrics_grid_shows_na_for_zero_denominators():
    html = metrics_grid(metrics_fixture()).html
    assert "0.600 [0.500, 0.700]<br><small>40/40</small>" in html
    assert "n/a<br><small>0/0</small>" in html


def test_next_steps_name_the_failing_gate_first_and_the_page_to_read():
    steps = next_steps(metrics_fixture())
    assert steps[0].startswith(
        "pdf: recall@10 = 0.600 [0.500, 0.700] (n=40/40) misses its gate >= 0.9: see 03"
    )
    assert any(s.startswith("Not judged") and "pdf false_recall_rate" in s for s in steps)
    m = metrics_fixture()
    m["gates"] = [g for g in m["gates"] if g["pass"]]
    assert next_steps(m)[0].startswith("Every judged gate passes")


def test_summary_escapes_labels():
    html = summary_html(metrics_fixture(), PAYLOAD)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert summary_html(None, "x", missing=PAYLOAD).count("<script>") == 0


def test_collapsed_keeps_the_table():
    t = collapsed(PAYLOAD, show(pd.DataFrame({"a": [1]})))
    assert t.html.startswith('<details class="mb-more"><summary>&lt;script&gt;')
    assert "<table" in t.html


# ----------------------------------------------------------------------------- escaping


def test_md_neutralises_markdown_and_html():
    s = md("a`b <script>x</script> [l](javascript:alert(1)) **b** # h\nnext")
    assert "<" not in s and "`" not in s.replace("\\`", "")
    assert "\\[l\\]\\(javascript:alert\\(1\\)\\)" in s
    assert "\n" not in s
    assert markdown("run {}", "`x`").data == "run \\`x\\`"


def test_esc_quotes_attributes():
    assert esc('"><script>') == "&quot;&gt;&lt;script&gt;"
    assert esc(None) == ""


@pytest.mark.parametrize(
    "bad",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:x",
        "data:text/html,x",
        "/etc/passwd",
        "../index.html",
        "a/../../b",
        "//host/x",
        "http://host/x",
        "a\\b",
        "",
    ],
)
def test_href_refuses_anything_but_relative_paths_inside(bad):
    with pytest.raises(UnsafeLink):
        href(bad)


def test_href_encodes_segments():
    assert href("bm25-dev/02_run_dev.html") == "bm25-dev/02_run_dev.html"
    assert href('a b/"x".html') == "a%20b/%22x%22.html"


def test_labels_are_safe_and_unique():
    assert safe_label("javascript:alert(1)") == "javascript_alert_1_"
    assert safe_label("../..") == "_.."  # a plain folder name, not a path
    assert safe_label("...") == "run"
    assert unique_labels(["a/bm25-dev", "b/bm25-dev", "c/bm25 dev", "d/bm25-dev"]) == [
        "bm25-dev",
        "bm25-dev-2",
        "bm25_dev",
        "bm25-dev-3",
    ]


def test_csp_allows_only_membench_scripts_by_hash():
    assert "script-src 'none'" in csp("<p>no script</p>")
    page = '<script id="membench-stepper">var a=1;</script><script>evil()</script>'
    policy = csp(page)
    assert policy.count("'sha256-") == 1 and "unsafe-inline" not in policy.split("style-src")[0]
    assert "unsafe-eval" not in policy  # the stepper evaluates nothing
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy


def test_forest_plot_has_a_panel_per_metric_and_n_on_every_row():
    from membench.report.plots import plot_forest

    rows = [
        {
            "scope": s,
            "metric": m,
            "system_a": "bm25",
            "system_b": "dense",
            "n": 10 + i,
            "diff": 0.1,
            "diff_ci95_lo": -0.05,
            "diff_ci95_hi": 0.2,
            "significant_0.05": s == "all",
        }
        for m in ("recall@10", "mrr", "ndcg@10")
        for i, s in enumerate(("pdf", "all"))
    ]
    fig = plot_forest(pd.DataFrame(rows))
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title().split(":")[0] for ax in panels] == ["recall@10", "mrr", "ndcg@10"]
    assert [t.get_text() for t in panels[0].get_yticklabels()] == [  # top row first
        "pdf: bm25 − dense (n=10)",
        "all: bm25 − dense (n=11)",
    ]
    assert any(abs(line.get_xdata()[0]) < 1e-12 for line in panels[0].get_lines())  # 0 line


def test_index_never_links_a_folder_name_that_looks_like_a_scheme(tmp_path):
    from membench.report.render import write_index

    for name in ("javascript:alert(1)", "ok-run"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "02_run_dev.html").write_text("<p>x</p>")
    index = write_index(tmp_path).read_text()
    assert 'href="javascript' not in index and "folder name not linkable" in index
    assert 'href="ok-run/02_run_dev.html"' in index
    assert "javascript:alert(1)" in index.replace("&#x27;", "'")  # named, as text


def test_a_live_widget_becomes_a_note_and_loads_no_manager():
    """A widget view cannot work on a static page: the page shows the JupyterLab command in
    its place and carries neither widget state nor a script for it; the notebook keeps both."""
    import nbformat

    from membench.report.render import WIDGET_VIEW, to_html

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("browser")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                WIDGET_VIEW: {"model_id": "abc", "version_major": 2, "version_minor": 0},
                "text/plain": "VBox()",
            },
        )
    ]
    nb.cells = [cell]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    html = to_html(nb, {"system": "x"}, ipynb="reports/x/04_false_recalls.ipynb")
    assert "needs a running Python kernel" in html
    assert ".venv/bin/jupyter lab reports/x/04_false_recalls.ipynb" in html
    assert "--allow-root" in html
    assert (
        "widget-state" not in html
        and "<script" not in html
        and "script-src 'none'" in html.replace("&#x27;", "'")
    )
    assert WIDGET_VIEW in nb.cells[0].outputs[0]["data"] and "widgets" in nb.metadata


def test_the_stepper_script_is_inlined_only_where_there_are_cases_and_allowed_by_hash():
    import nbformat

    from membench.report.render import to_html

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"text/html": '<div class="mb-stepper" data-membench-stepper="1"></div>'},
        )
    ]
    nb.cells = [cell]
    html = to_html(nb, {"system": "x"})
    assert html.count('<script id="membench-stepper">') == 1
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert policy.replace("&#x27;", "'").count("'sha256-") == 1 and "eval" not in policy
    nb.cells[0].outputs[0]["data"]["text/html"] = "<p>no cases</p>"
    assert "<script" not in to_html(nb, {"system": "x"})


def test_the_index_lists_a_sets_page_with_the_runs_that_link_it_now(tmp_path):
    """Page 01 lives in its sets' folder: the index names it with the runs whose pages link it,
    and leaves out a sets page no run links any more (its runs were made on other sets)."""
    import json

    from membench.report.render import write_index

    def folder(name: str, page: str, rec: dict) -> None:
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{page}.html").write_text("<p>x</p>")
        (tmp_path / name / "report.json").write_text(json.dumps({"label": name, **rec}))

    folder("sets-new", "01_validate_sets", {"pages": ["01_validate_sets"], "used_by": ["a"]})
    folder("sets-old", "01_validate_sets", {"pages": ["01_validate_sets"], "used_by": ["a"]})
    folder(
        "a",
        "02_run_dev",
        {"pages": ["02_run_dev"], "links": {"01_validate_sets": "sets-new/01_validate_sets.html"}},
    )
    index = write_index(tmp_path).read_text()
    assert 'href="sets-new/01_validate_sets.html"' in index and "sets-old" not in index
    row = re.search(r'<tr class="mb-run" data-label="a">.*?</tr>', index, re.S).group(0)
    assert 'href="sets-new/01_validate_sets.html"' in row and 'href="a/02_run_dev.html"' in row


def test_the_holder_spread_is_the_same_figure_whatever_numpy_drew_before():
    """The strip of per-holder points is jittered from a fixed seed, not numpy's global
    generator: two renderings give the same PNG, whatever the kernel drew before."""
    import io

    import matplotlib
    import numpy as np

    from membench.report.plots import plot_holder_spread

    matplotlib.use("Agg")
    df = pd.DataFrame(
        {
            "modality": ["video"] * 6 + ["code"] * 4,
            "holder": [f"h{i % 5}" for i in range(10)],
            "answerable": True,
            "recall@10": np.linspace(0, 1, 10),
        }
    )
    pngs, rows = [], []
    for seed in (1, 2):
        np.random.seed(seed)
        fig = plot_holder_spread(df)
        offsets = [c.get_offsets() for c in fig.axes[0].collections if len(c.get_offsets())]
        rows.append(np.concatenate(offsets))
        buf = io.BytesIO()
        fig.savefig(buf, format="png", metadata={"Software": None})
        pngs.append(buf.getvalue())
    assert np.array_equal(rows[0], rows[1]) and pngs[0] == pngs[1]
    assert (np.abs(rows[0][:, 1] - np.round(rows[0][:, 1])) <= 0.1).all()  # near its row
    assert len(np.unique(rows[0][:, 1])) > 2  # spread out


def test_the_index_links_each_sets_card_with_its_sha256(tmp_path):
    """A sets folder's row links its Croissant card with the card's sha256, read from the file
    and checked against the record; a card edited since is not linked; a sets folder without a
    card says why."""
    import hashlib
    import json

    from membench.report.render import write_index

    def folder(name: str, page: str, rec: dict) -> None:
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{page}.html").write_text("<p>x</p>")
        (tmp_path / name / "report.json").write_text(json.dumps({"label": name, **rec}))

    card = b'{"@type": "sc:Dataset"}\n'
    digest = hashlib.sha256(card).hexdigest()
    folder(
        "sets-a",
        "01_validate_sets",
        {
            "pages": ["01_validate_sets"],
            "used_by": ["a"],
            "card": {"file": "croissant.json", "sha256": digest},
        },
    )
    (tmp_path / "sets-a" / "croissant.json").write_bytes(card)
    folder(
        "sets-b",
        "01_validate_sets",
        {
            "pages": ["01_validate_sets"],
            "used_by": ["b"],
            "card": None,
            "card_error": "x.jsonl: <no manifest>",
        },
    )
    for run, sets in (("a", "sets-a"), ("b", "sets-b")):
        folder(
            run,
            "02_run_dev",
            {
                "pages": ["02_run_dev"],
                "links": {"01_validate_sets": f"{sets}/01_validate_sets.html"},
            },
        )
    index = write_index(tmp_path).read_text()
    rows = dict(re.findall(r"<tr><td class=\"mb-s\"><b>(sets-[ab])</b>(.*?)</tr>", index, re.S))
    assert 'href="sets-a/croissant.json"' in rows["sets-a"] and digest in rows["sets-a"]
    assert "no card: x.jsonl: &lt;no manifest&gt;" in rows["sets-b"]
    (tmp_path / "sets-a" / "croissant.json").write_bytes(card + b" ")
    index = write_index(tmp_path).read_text()
    assert 'href="sets-a/croissant.json"' not in index and "differs from its record" in index


def test_a_report_writes_the_sets_card_or_says_why_not(tmp_path):
    """membench.report.render.sets_card: for sets it cannot describe (here: no stats.json),
    no card file and the located reason, which the index shows."""
    import minisets

    from membench.report.render import sets_card

    sets = minisets.write(tmp_path / "sets")["sets"]
    rec = sets_card(sets, tmp_path / "sets-x", tmp_path)
    assert rec["card"] is None
    assert rec["card_error"] == f"{sets / 'stats.json'}: MISSING_FILE: file not found"
    assert not (tmp_path / "sets-x" / "croissant.json").exists()


def test_one_html_escape():
    """Reports, the modalities' region renderers and the failure browser escape HTML with the
    same function (membench.core.links.esc); no other module calls html.escape."""
    import ast
    from pathlib import Path

    from membench.analysis import browse
    from membench.core import links
    from membench.modalities import base

    assert esc is links.esc is base.esc is browse.e
    assert esc(PAYLOAD) == (
        "&lt;script&gt;window.__membench_pwned=true&lt;/script&gt;&lt;img "
        "src=x onerror=&quot;alert(1)&quot;&gt;"
    )
    assert esc(None) == "" and esc(3) == "3" and esc("'&") == "&#x27;&amp;"
    pkg = Path(links.__file__).resolve().parents[1]
    calls = [
        f"{p.relative_to(pkg)}:{n.lineno}"
        for p in sorted(pkg.rglob("*.py"))
        if p != pkg / "core" / "links.py"
        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(n, ast.Attribute)
        and n.attr == "escape"
        and isinstance(n.value, ast.Name)
        and n.value.id == "html"
    ]
    assert not calls, calls
