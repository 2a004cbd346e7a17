"""`membench report` end to end on small real runs: page 01 once for the sets the runs share
(linked from each run), pages 02-04 for every run and 05 for the comparison, provenance in every
HTML (visible and in the head) matching the files on disk, key tables present, the index and
page 05 naming the best system per headline measure (margin, paired test, n), and every page
read in a real browser (headless Chromium, when installed: .ci/run installs it): no table cut
off at 1,280 px, no code cells, gate badges and the summary at the top, a link back to the
index, a title naming the run, no request leaving the machine, no console error, and page 04's
kernel-free stepper stepping through the cases."""

from __future__ import annotations

import json
import re

import pytest

from membench.core.jsonl import sha256_file
from membench.core.paths import MANIFEST_PATH
from membench.report.browser_check import check, chromium
from membench.report.escape import esc
from membench.report.render import report
from membench.run.runner import run_system
from membench.sets.build import SET_FILES
from membench.systems import make_system


@pytest.fixture(scope="module")
def rendered(built, corpus_root, tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    for name in ("oracle", "random"):
        run_system(make_system(name), built.out, "dev", runs / name, corpus_root, limit=12)
    out = tmp_path_factory.mktemp("reports")
    done = report([runs / "oracle"], out, built.out, compare=[runs / "random"])
    return out, done, built


RUN_PAGES = ["01_validate_sets", "02_run_dev", "03_slice_failures", "04_false_recalls"]
OWN_PAGES = RUN_PAGES[1:]  # page 01 lives in the folder of its sets


def summary_of(html: str) -> str:
    """The summary block at the top of a page (before its first cell)."""
    body = html[html.index("<body") :]
    return body[body.index('id="membench-summary"') : body.index('class="jp-Cell')]


def sets_folder(out):
    (d,) = [p for p in out.iterdir() if p.is_dir() and p.name.startswith("sets-")]
    return d


def test_every_run_gets_its_pages_and_the_index_lists_them(rendered):
    out, done, _ = rendered
    sets = sets_folder(out).name
    assert [r.notebook for r in done] == ["01_validate_sets", *OWN_PAGES * 2, "05_compare_systems"]
    assert [r.html.parent.name for r in done] == [sets] + ["oracle"] * 3 + ["random"] * 3 + [
        "compare-oracle-vs-random"
    ]
    assert all(r.ok and r.html.exists() for r in done)
    index = (out / "index.html").read_text()
    for r in done:
        assert f'href="{r.html.parent.name}/{r.html.name}"' in index
    rows = re.findall(r'<tr class="mb-run" data-label="([^"]+)">(.*?)</tr>', index, re.S)
    assert [lab for lab, _ in rows] == ["oracle", "random"]
    for _, row in rows:  # headline figures and gate verdicts
        assert re.search(r"\d+ of \d+ pass", row) and "mb-badge" in row
        assert re.search(r"\d\.\d{3}<br><small>\[\d\.\d{3}, \d\.\d{3}\]</small>", row)
        assert f'href="{sets}/01_validate_sets.html"' in row  # each run links its sets page
        assert "tell ROC AUC" in row or "no native with a tell" in row  # the natives' column
    head = index[
        index.index('id="membench-runs"') : index.index(
            "</thead>", index.index('id="membench-runs"')
        )
    ]
    assert "<th>false recall, audited<br>" in head
    assert "<th>false recall, natives with a tell<br><small>not gated" in head


def test_page_01_once_per_sets_content_linked_from_each_run(rendered):
    """The sets page is rendered once for the set files the runs share (keyed by their
    sha256s), every run's pages link to it, and no run folder holds a copy."""
    from membench.report.render import sets_label

    out, done, built = rendered
    folder = sets_folder(out)
    rec = json.loads((folder / "report.json").read_text())
    assert rec["used_by"] == ["oracle", "random"] and rec["pages"] == ["01_validate_sets"]
    assert rec["sets"] == {f: sha256_file(built.out / f) for f in SET_FILES}
    assert folder.name == sets_label(rec["sets"])
    assert sets_label({**rec["sets"], "pdf.jsonl": "0" * 64}) != folder.name
    html = (folder / "01_validate_sets.html").read_text()
    assert "oracle, random" in summary_of(html)  # whose sets
    for run in ("oracle", "random"):
        assert not (out / run / "01_validate_sets.html").exists()
        page = (out / run / "02_run_dev.html").read_text()
        nav = page[page.index('id="membench-nav"') : page.index("</nav>")]
        assert f'href="../{folder.name}/01_validate_sets.html"' in nav
        assert json.loads((out / run / "report.json").read_text())["links"] == {
            "01_validate_sets": f"{folder.name}/01_validate_sets.html"
        }


def test_the_sets_folder_holds_their_card_and_the_index_links_it(rendered):
    """Beside page 01: croissant.json, the Croissant card of those sets (their sha256s), its
    own sha256 in the folder's record and on the index, linked."""
    out, _, built = rendered
    folder = sets_folder(out)
    rec = json.loads((folder / "report.json").read_text())
    assert rec["card_error"] is None
    card = folder / rec["card"]["file"]
    assert rec["card"]["sha256"] == sha256_file(card)
    files = {fo["name"]: fo["sha256"] for fo in json.loads(card.read_text())["distribution"]}
    assert all(files[f] == sha256_file(built.out / f) for f in SET_FILES)
    index = (out / "index.html").read_text()
    assert f'href="{folder.name}/croissant.json"' in index and rec["card"]["sha256"] in index


def test_the_index_and_page_05_say_which_system_is_best(rendered):
    """Per headline measure of the registry that is ranked (not the report-only
    false_recall_native): the best system, its lead over the runner-up with the paired
    interval, the Holm-corrected permutation p and n; one verdict line."""
    from membench.metrics.measures import RANKED_HEADLINE

    out, done, _ = rendered
    rec = json.loads((out / "compare-oracle-vs-random" / "report.json").read_text())
    best = {r["measure"]: r for r in rec["best"]}
    assert set(best) == set(RANKED_HEADLINE)
    r10 = best["recall@10"]
    assert r10["best"] == "oracle" and r10["runner_up"] == "random" and r10["tested"]
    assert r10["diff"] > 0 and r10["diff_ci95"][0] <= r10["diff"] <= r10["diff_ci95"][1]
    assert r10["n"] > 0 and 0 < r10["p_holm"] <= 1 and r10["significant"]
    assert not best["latency_p50_ms"]["tested"] and "percentile" in best["latency_p50_ms"]["note"]
    assert rec["verdict"].startswith("Significantly best: oracle on ")
    index = (out / "index.html").read_text()
    top = index[: index.index('id="membench-runs"')]  # above the runs table
    assert "Which system is best: oracle, random" in top and esc(rec["verdict"]) in top
    for head in (
        "best system",
        "runner-up",
        "difference (best − runner-up) [95% CI]",
        "n (paired items)",
        "p (permutation, Holm)",
        "significant at 0.05",
    ):
        assert f"<th>{head}</th>" in top
    p05 = next(r for r in done if r.notebook == "05_compare_systems").html.read_text()
    summary = summary_of(p05)
    assert esc(rec["verdict"]) in summary and "<th>best system</th>" in summary


def test_pages_are_titled_by_run_and_start_with_the_summary(rendered):
    _, done, _ = rendered
    for r in done[1:7]:
        html = r.html.read_text()
        run = r.html.parent.name
        assert re.search(rf"<title>{run} · \d\d · [^<]+ · membench</title>", html)
        body = html[html.index("<body") :]
        assert (
            body.index('id="membench-nav"')
            < body.index('id="membench-summary"')
            < body.index("jp-Cell")
        )
        assert 'href="../index.html"' in body and "gates pass" in body
    assert "<title>compare-oracle-vs-random · 05" in done[7].html.read_text()
    assert re.search(r"<title>sets-[0-9a-f]{12} · 01 · ", done[0].html.read_text())


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
        if r.notebook != "01_validate_sets":  # the sets page is about both splits
            assert meta["membench:split"] == "dev"
        assert "membench:code_revision" in meta and "membench:generated_at" in meta
        footer = html[html.index('id="membench-provenance"') :]
        assert (
            sha256_file(MANIFEST_PATH) in footer and sha256_file(built.out / "pdf.jsonl") in footer
        )
        nb = json.loads(r.html.with_suffix(".ipynb").read_text())
        assert nb["metadata"]["membench"]["manifest_sha256"] == sha256_file(MANIFEST_PATH)


def test_key_tables_present(rendered):
    out, done, _ = rendered
    # the oracle's pages (done also holds the random run's, under the same notebook names)
    pages = {
        r.notebook: r.html.read_text()
        for r in done
        if r.html.parent.name in ("oracle", "compare-oracle-vs-random")
        or r.html.parent.name.startswith("sets-")
    }
    assert (
        "NOT A VALID SUBMISSION"
        not in next(
            r for r in done if r.html.parent.name == "random" and r.notebook == "02_run_dev"
        ).html.read_text()
    )
    assert (
        "REVISION_UNKNOWN" in pages["01_validate_sets"]
        and "not mirrored" in pages["01_validate_sets"].lower()
    )
    # the audit, with n, and the derivations the guards skipped
    assert (
        "metadata-only ROC AUC" in pages["01_validate_sets"] and "TELL" in pages["01_validate_sets"]
    )
    assert "skipped by a guard" in pages["01_validate_sets"]
    # the oracle saw the gold: its pages say so
    assert "NOT A VALID SUBMISSION" in pages["02_run_dev"]
    assert "NOT A VALID SUBMISSION" in pages["05_compare_systems"]
    assert "holder_correctness" in pages["02_run_dev"] and "PASS" in pages["02_run_dev"]
    # the content-free floor of the call (random) beside the oracle's recall@10 on page 02
    assert "floor: random" in pages["02_run_dev"]
    assert "margin over the best floor" in pages["02_run_dev"]
    assert "worst" in pages["03_slice_failures"].lower()
    assert not re.search(r"<th>\s*(True|False)\s*</th>", pages["03_slice_failures"])  # labelled
    assert "<th>unanswerable</th>" in pages["03_slice_failures"]
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
        assert not info["cut_off"], (page, info["cut_off"])  # no column cut off
        assert info["codeCells"] == 0, page  # no code
        if "/sets-" not in page:
            assert info["badges"] > 0, page  # gate verdicts
        assert not info["external"], (page, info["external"])  # nothing leaves
        assert not info["errors"], (page, info["errors"])
        assert not info["console_errors"], (page, info["console_errors"])  # policy = page
        if not page.endswith("index.html"):
            assert info["summary"] and info["indexLink"], page
        assert "NaN" not in info["text"] and "nan [" not in info["text"], page
    p04 = next(i for i in infos if i["page"].endswith("oracle/04_false_recalls.html"))
    assert p04["scripts"] == ["membench-stepper"] and p04["steppers"] == 1
    assert p04["widgets"] == 0  # no dead widget
    assert "needs a running Python kernel" in p04["text"]
    assert ".venv/bin/jupyter lab " in p04["text"] and "--allow-root" in p04["text"]


@pytest.mark.skipif(chromium() is None, reason="chromium not installed (apt-get install chromium)")
def test_page_04_steps_through_the_cases_without_a_kernel(rendered):
    """The stepper of page 04, clicked in a real browser: one case at a time, Next and Prev
    follow the order membench computes, the kind buttons switch the kind."""
    from playwright.sync_api import sync_playwright

    from membench.analysis.browse import load_run_cases
    from membench.report.browser_check import PW_FLAGS

    out, done, built = rendered
    run_dir = json.loads((out / "random" / "report.json").read_text())["run_dir"]
    data = load_run_cases(run_dir, built.out)
    page = out / "random" / "04_false_recalls.html"
    html = page.read_text()
    shown = [
        re.search(r'data-query-id="([^"]+)"', tag).group(1)
        for tag in re.findall(r'<div class="mb-case"[^>]*data-kind="miss"[^>]*>', html)
    ]
    misses = [c.query_id for c in data.of("miss", None)]
    assert len(shown) >= 2 and set(shown) <= set(misses)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=PW_FLAGS)
        try:
            pg = browser.new_page(viewport={"width": 1280, "height": 900})
            pg.goto(page.resolve().as_uri())
            label = pg.locator(".mb-step-label")
            pg.locator(".mb-step-button", has_text="answerable misses").click()
            assert label.inner_text().startswith(f"1 / {len(shown)} answerable misses")
            assert label.inner_text().endswith(shown[0])
            assert pg.locator(".mb-case:visible").count() == 1
            assert pg.locator(".mb-case:visible").get_attribute("data-query-id") == shown[0]
            pg.locator(".mb-step-button", has_text="Next").click()
            assert label.inner_text().startswith("2 / ") and label.inner_text().endswith(shown[1])
            pg.locator(".mb-step-button", has_text="Prev").click()
            assert label.inner_text().endswith(shown[0])
            assert pg.locator(".mb-step-button", has_text="Prev").is_disabled()
        finally:
            browser.close()


HOSTILE = '<img/src=x/onerror="alert(1)">bm25'  # (a system name has no whitespace)


@pytest.fixture(scope="module")
def board(built, corpus_root, tmp_path_factory):
    """Page 06 from a result store of two small bm25 runs (video and ui_screenshot, 5 queries
    each), one of them with a system name that is HTML."""
    import json as _json

    from membench.analysis.leaderboard import add_runs

    runs = tmp_path_factory.mktemp("lb-runs")
    for name, cfg in (("bm25", {}), ("bm25-3", {"max_atoms": 3})):
        run_system(
            make_system("bm25", cfg),
            built.out,
            "dev",
            runs / name,
            corpus_root,
            modalities=["video", "ui_screenshot"],
            limit=5,
        )
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
    summary = summary_of(html)
    assert "Why the rows are ordered as they are" in summary
    assert "Rows are ordered by recall@1000" in summary and "first-stage measure" in summary
    assert "Rows are ordered by answerable_kept@fr0.10" in summary  # the cartridge table
    assert "silence cannot head the cartridge table" in summary and "gated" in summary
    assert "Which system is best, size &lt;=1B" in summary and "<th>best system</th>" in summary
    assert HOSTILE not in html and "&lt;img/src=x/onerror=" in html  # escaped
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
    html = re.sub(
        r'<script type="application/vnd\.jupyter\.widget-state\+json">.*?</script>',
        "STATE",
        html,
        flags=re.S,
    )
    html = re.sub(r"[0-9a-f]{32}", "ID", html)
    html = re.sub(r"\.venv/bin/jupyter lab [^<]*", "LAB", html)  # where the .ipynb was written
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
    pages = ("02_run_dev", "03_slice_failures", "04_false_recalls")
    serial = report([run_dir], tmp_path, built.out, notebooks=pages, jobs=1)
    assert [r.notebook for r in serial] == list(pages)
    for r in serial:
        assert _stable(r.html.read_text()) == _stable((out / "oracle" / r.html.name).read_text())
    rec = json.loads((tmp_path / "oracle" / "report.json").read_text())
    assert rec["pages"] == list(pages) and rec["run_dir"] == run_dir
    assert 1 <= default_jobs() <= 4


def test_a_page_with_the_same_parameters_is_executed_once(rendered, tmp_path):
    """Jobs of one notebook with the same values of the parameters it declares share one
    execution (shared_groups); page 01 of a call for one run alone is the page of the call
    for both (the same sets), time stamps, ids and its list of runs aside, and it replaces a
    page 01 left in the run's folder by an older report."""
    from membench.report.render import Job, Page, shared_groups

    out, done, built = rendered
    jobs = [
        Job(
            n,
            {
                "run_dir": str(r),
                "sets_dir": str(built.out),
                "corpus": None,
                "partial": False,
                "final": False,
            },
            tmp_path / r,
            {},
            Page(r, ()),
        )
        for r in ("a", "b")
        for n in RUN_PAGES
    ]
    jobs.append(
        Job("01_validate_sets", {"sets_dir": str(tmp_path)}, tmp_path / "c", {}, Page("c", ()))
    )  # other sets: its own
    assert shared_groups(jobs) == [[0, 4], [1], [2], [3], [5], [6], [7], [8]]
    rec = json.loads((out / "random" / "report.json").read_text())
    (tmp_path / "random").mkdir()
    (tmp_path / "random" / "01_validate_sets.html").write_text("<p>an old page 01</p>")
    alone = report(
        [rec["run_dir"]],
        tmp_path,
        built.out,
        notebooks=("01_validate_sets", "02_run_dev"),
        jobs=1,
        force=True,
    )
    assert [r.notebook for r in alone] == ["01_validate_sets", "02_run_dev"]
    assert not (tmp_path / "random" / "01_validate_sets.html").exists()
    mine = (sets_folder(out) / "01_validate_sets.html").read_text()

    def body(html: str) -> str:  # the page without its summary (which runs use it)
        return re.sub(r'<section class="mb-summary".*?</section>', "", _stable(html), flags=re.S)

    assert body(alone[0].html.read_text()) == body(mine)
    assert "membench:system" not in head_meta(mine)


def test_jobs_beyond_twice_the_cpus_are_refused_in_one_line(tmp_path, monkeypatch):
    """--jobs is 1 to twice the CPUs the process may use: more, or 0, is refused in one line
    naming the option, before any run is read; report() refuses the same numbers."""
    import subprocess
    import sys

    from membench.core.errors import MembenchError
    from membench.report import notebooks

    top = notebooks.max_jobs()
    assert top == 2 * notebooks.usable_cpus() and notebooks.check_jobs(top) == top
    for bad in ("0", str(top + 1), "two"):
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "membench",
                "report",
                "--jobs",
                bad,
                "--run",
                str(tmp_path / "no-run"),
            ],
            capture_output=True,
            text=True,
        )
        assert p.returncode == 2, p.stderr
        (line,) = [x for x in p.stderr.splitlines() if "error" in x]
        assert "--jobs" in line and bad in line and "Traceback" not in p.stderr
    with pytest.raises(MembenchError, match=f"from 1 to {top} .*got {top + 1}"):
        report([tmp_path / "no-run"], tmp_path / "out", jobs=top + 1)
    monkeypatch.setattr(notebooks, "usable_cpus", lambda: 3)
    assert notebooks.max_jobs() == 6 and notebooks.default_jobs() == 3
