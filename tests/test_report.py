"""`membench report` end to end on small real runs: pages 01-04 for every run and 05 for the
comparison, provenance in every HTML (visible and in the head) matching the files on disk, key
tables present, and every page read in a real browser (headless Chromium, when installed:
.ci/run installs it): no table cut off at 1,280 px, no code cells, gate badges and the summary
at the top, a link back to the index, a title naming the run, no request leaving the machine."""

from __future__ import annotations

import json
import re

import pytest

from membench.core.jsonl import sha256_file
from membench.core.paths import MANIFEST_PATH
from membench.report.browser_check import check, chromium
from membench.report.render import report
from membench.run.runner import run_system
from membench.run.systems import make_system
from membench.sets.build import SET_FILES


@pytest.fixture(scope="module")
def rendered(built, corpus_root, tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    for name in ("oracle", "random"):
        run_system(make_system(name), built.out, "dev", runs / name, corpus_root, limit=12)
    out = tmp_path_factory.mktemp("reports")
    done = report([runs / "oracle"], out, built.out, compare=[runs / "random"])
    return out, done, built


RUN_PAGES = ["01_validate_sets", "02_run_dev", "03_slice_failures", "04_false_recalls"]


def test_every_run_gets_its_pages_and_the_index_lists_them(rendered):
    out, done, _ = rendered
    assert [r.notebook for r in done] == RUN_PAGES * 2 + ["05_compare_systems"]
    assert [r.html.parent.name for r in done] == ["oracle"] * 4 + ["random"] * 4 + \
        ["compare-oracle-vs-random"]
    assert all(r.ok and r.html.exists() for r in done)
    index = (out / "index.html").read_text()
    for r in done:
        assert f'href="{r.html.parent.name}/{r.html.name}"' in index
    rows = re.findall(r'<tr class="mb-run" data-label="([^"]+)">(.*?)</tr>', index, re.S)
    assert [lab for lab, _ in rows] == ["oracle", "random"]
    for _, row in rows:                              # headline figures and gate verdicts
        assert re.search(r"\d+ of \d+ pass", row) and "mb-badge" in row
        assert re.search(r"\d\.\d{3}<br><small>\[\d\.\d{3}, \d\.\d{3}\]</small>", row)


def test_pages_are_titled_by_run_and_start_with_the_summary(rendered):
    _, done, _ = rendered
    for r in done[:8]:
        html = r.html.read_text()
        run = r.html.parent.name
        assert re.search(rf"<title>{run} · \d\d · [^<]+ · membench</title>", html)
        body = html[html.index("<body"):]
        assert body.index('id="membench-nav"') < body.index('id="membench-summary"') < \
            body.index("jp-Cell")
        assert 'href="../index.html"' in body and "gates pass" in body
    assert "<title>compare-oracle-vs-random · 05" in done[8].html.read_text()


def head_meta(html: str) -> dict[str, str]:
    return dict(re.findall(r'<meta name="(membench:[^"]+)" content="([^"]*)">', html))


def test_provenance_matches_the_files(rendered):
    out, done, built = rendered
    for r in done:
        html = r.html.read_text()
        meta = head_meta(html)
        assert meta["membench:manifest_sha256"] == sha256_file(MANIFEST_PATH)
        for f in SET_FILES:
            assert meta[f"membench:set_sha256:{f}"] == sha256_file(built.out / f), (r.notebook, f)
        assert meta["membench:split"] == "dev"
        assert "membench:code_revision" in meta and "membench:generated_at" in meta
        footer = html[html.index('id="membench-provenance"'):]
        assert sha256_file(MANIFEST_PATH) in footer and sha256_file(built.out / "pdf.jsonl") in footer
        nb = json.loads(r.html.with_suffix(".ipynb").read_text())
        assert nb["metadata"]["membench"]["manifest_sha256"] == sha256_file(MANIFEST_PATH)


def test_key_tables_present(rendered):
    out, done, _ = rendered
    # the oracle's pages (done also holds the random run's, under the same notebook names)
    pages = {r.notebook: r.html.read_text() for r in done
             if r.html.parent.name in ("oracle", "compare-oracle-vs-random")}
    assert "NOT A VALID SUBMISSION" not in \
        next(r for r in done if r.html.parent.name == "random" and
             r.notebook == "02_run_dev").html.read_text()
    assert "REVISION_UNKNOWN" in pages["01_validate_sets"] and "not mirrored" in pages["01_validate_sets"].lower()
    # the audit, with n, and the derivations the guards skipped
    assert "metadata-only ROC AUC" in pages["01_validate_sets"] and "TELL" in pages["01_validate_sets"]
    assert "skipped by a guard" in pages["01_validate_sets"]
    # the oracle saw the gold: its pages say so
    assert "NOT A VALID SUBMISSION" in pages["02_run_dev"]
    assert "NOT A VALID SUBMISSION" in pages["05_compare_systems"]
    assert "holder_correctness" in pages["02_run_dev"] and "PASS" in pages["02_run_dev"]
    assert "worst" in pages["03_slice_failures"].lower()
    assert "data:image/png;base64" in pages["03_slice_failures"]  # the plots
    assert "p_perm" in pages["05_compare_systems"] or "permutation" in pages["05_compare_systems"]
    # no cell raised
    for name, html in pages.items():
        assert "Traceback" not in html and "PapermillExecutionError" not in html, name


@pytest.mark.skipif(chromium() is None, reason="chromium not installed (apt-get install chromium)")
def test_a_report_renders_in_a_real_browser(rendered, tmp_path):
    out, done, _ = rendered
    st = check(done[1].html, tmp_path / "page.png")
    assert st["ok"], st


@pytest.mark.skipif(chromium() is None, reason="chromium not installed (apt-get install chromium)")
def test_pages_read_well_at_1280_px(rendered):
    from membench.report.browser_check import dom_check

    out, done, _ = rendered
    infos = dom_check([out / "index.html", *(r.html for r in done)])
    for info in infos:
        page = info["page"]
        assert info["tables"], page
        assert not info["cut_off"], (page, info["cut_off"])           # no column cut off
        assert info["codeCells"] == 0, page                           # no code
        assert info["badges"] > 0, page                               # gate verdicts
        assert not info["external"], (page, info["external"])         # nothing leaves
        assert not info["errors"], (page, info["errors"])
        if not page.endswith("index.html"):
            assert info["summary"] and info["indexLink"], page
        assert "NaN" not in info["text"] and "nan [" not in info["text"], page
    p04 = next(i for i in infos if i["page"].endswith("oracle/04_false_recalls.html"))
    assert "membench-widgets" in p04["scripts"] and p04["widgets"] >= 2   # Prev / Next, bundled


HOSTILE = '<img/src=x/onerror="alert(1)">bm25'   # (a system name has no whitespace)


@pytest.fixture(scope="module")
def board(built, corpus_root, tmp_path_factory):
    """Page 06 from a result store of two small bm25 runs (video and ui_screenshot, 5 queries
    each), one of them with a system name that is HTML."""
    import json as _json

    from membench.analysis.leaderboard import add_runs

    runs = tmp_path_factory.mktemp("lb-runs")
    for name, cfg in (("bm25", {}), ("bm25-3", {"max_atoms": 3})):
        run_system(make_system("bm25", cfg), built.out, "dev", runs / name, corpus_root,
                   modalities=["video", "ui_screenshot"], limit=5)
    meta = _json.loads((runs / "bm25-3" / "meta.json").read_text())
    meta["system"] = HOSTILE
    (runs / "bm25-3" / "meta.json").write_text(_json.dumps(meta))
    store = tmp_path_factory.mktemp("lb") / "leaderboard-small"
    add_runs([runs / "bm25", runs / "bm25-3"], store, n_resamples=200)
    out = tmp_path_factory.mktemp("lb-reports")
    done = report([], out, leaderboard=store)
    return out, done


def test_the_leaderboard_page(board):
    out, done = board
    assert [r.notebook for r in done] == ["06_leaderboard"] and done[0].ok
    html = done[0].html.read_text()
    assert done[0].html == out / "leaderboard-small" / "06_leaderboard.html"
    assert re.search(r"<title>leaderboard-small · 06 · [^<]+ · membench</title>", html)
    assert "size &lt;=1B · judgment set gold" in html
    assert "false recall, scope and latency" in html and "<b>best</b>" in html
    assert "recall@1000" in html and "gate &gt;= 0.9" in html
    assert HOSTILE not in html and "&lt;img/src=x/onerror=" in html      # escaped
    assert "script-src &#x27;none&#x27;" in html and "Traceback" not in html
    assert 'href="leaderboard-small/06_leaderboard.html"' in (out / "index.html").read_text()


@pytest.mark.skipif(chromium() is None, reason="chromium not installed (apt-get install chromium)")
def test_the_leaderboard_page_reads_well_at_1280_px(board):
    from membench.report.browser_check import dom_check

    out, done = board
    (info,) = dom_check([done[0].html])
    assert info["tables"] and not info["cut_off"], info["cut_off"]
    assert info["codeCells"] == 0 and not info["external"] and not info["errors"]
    assert info["summary"] and info["indexLink"]
    assert "NaN" not in info["text"] and "nan [" not in info["text"]


def _stable(html: str) -> str:
    """A page without what differs between two renderings of the same notebook: the time of
    rendering, the notebook's random cell and widget ids, and the navigation bar (it lists the
    pages the call rendered)."""
    html = re.sub(r'<script type="application/vnd\.jupyter\.widget-state\+json">.*?</script>',
                  "STATE", html, flags=re.S)
    html = re.sub(r"[0-9a-f]{32}", "ID", html)
    html = re.sub(r'<nav class="mb-nav" id="membench-nav">.*?</nav>', "NAV", html, flags=re.S)
    html = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00", "TIME", html)
    return re.sub(r'id="cell-id=[0-9a-f-]+"', 'id="cell-id=X"', html)


def test_pages_rendered_one_at_a_time_are_the_parallel_ones(rendered, tmp_path):
    """--jobs only changes how many notebooks run at once: the pages of a serial rendering
    equal those of the fixture's (several at once on a machine with 2 or more CPUs), the time
    of rendering and the cell ids aside, and the folder's record is the same."""
    from membench.report.render import default_jobs

    out, done, built = rendered
    run_dir = json.loads((out / "oracle" / "report.json").read_text())["run_dir"]
    serial = report([run_dir], tmp_path, built.out, notebooks=("02_run_dev", "04_false_recalls"),
                    jobs=1)
    assert [r.notebook for r in serial] == ["02_run_dev", "04_false_recalls"]
    for r in serial:
        assert _stable(r.html.read_text()) == _stable((out / "oracle" / r.html.name).read_text())
    rec = json.loads((tmp_path / "oracle" / "report.json").read_text())
    assert rec["pages"] == ["02_run_dev", "04_false_recalls"] and rec["run_dir"] == run_dir
    assert 1 <= default_jobs() <= 4


def test_a_page_with_the_same_parameters_is_executed_once_for_every_run(rendered, tmp_path):
    """Page 01 declares only the sets and the corpus: the runs of one call on the same sets
    share one execution of it (shared_groups), and each run's page is the one a call for that
    run alone renders (its own provenance, summary and title), time stamps and ids aside."""
    from membench.report.render import Job, Page, shared_groups

    out, done, built = rendered
    jobs = [Job(n, {"run_dir": str(r), "sets_dir": str(built.out), "corpus": None,
                    "partial": False, "final": False}, tmp_path / r, {}, Page(r, ()))
            for r in ("a", "b") for n in RUN_PAGES]
    jobs.append(Job("01_validate_sets", {"sets_dir": str(tmp_path)}, tmp_path / "c", {},
                    Page("c", ())))                                  # other sets: its own
    assert shared_groups(jobs) == [[0, 4], [1], [2], [3], [5], [6], [7], [8]]
    rec = json.loads((out / "random" / "report.json").read_text())
    alone = report([rec["run_dir"]], tmp_path, built.out, notebooks=("01_validate_sets",),
                   jobs=1)
    mine = (out / "random" / "01_validate_sets.html").read_text()
    assert _stable(alone[0].html.read_text()) == _stable(mine)
    assert head_meta(mine)["membench:system"] == "random"
    assert head_meta((out / "oracle" / "01_validate_sets.html").read_text())[
        "membench:system"] == "oracle"
