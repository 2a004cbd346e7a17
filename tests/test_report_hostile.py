"""A report rendered from runs whose system name, run directory names, questions and items'
URLs carry script payloads: the pages show them as text and no script from data runs (checked
in headless Chromium through the DOM); report folders stay unique when run names collide; links
stay inside the report (a URL from items.jsonl is text, and with --live-links a link only when
https to a host of the corpus manifest); an existing report is not overwritten without force;
the Content-Security-Policy stops a script that would slip through."""

from __future__ import annotations

import json
import re

import nbformat
import pytest
from minicorpus import freeze, make_corpus

from membench.core.errors import MembenchError
from membench.core.jsonl import dumps
from membench.report.browser_check import chromium
from membench.report.render import report, to_html
from membench.run.runner import run_system
from membench.systems.doubles import RandomSystem

MARK = "window.__membench_pwned=true"
PAYLOAD = f'<script>{MARK}</script><img src=x onerror="{MARK}">'
# a system name is an identifier (membench.core.ids: no whitespace): the same attack, with the
# slashes HTML also takes between attributes
NAME_PAYLOAD = f"<script>{MARK}</script><img/src=x/onerror={MARK}>"
DIRNAME = f"run`<img src=x onerror={MARK}>`"  # a backtick breaks out of a code span
LINKNAME = f"javascript:{MARK}"
# a video's meta.url in items.jsonl (set files can come from someone else)
EVIL_URL = f'https://evil.example/watch?v=1"><script>{MARK}</script>'
URLS = {
    "medvidqa:vidAAAAAAA1": EVIL_URL,
    "medvidqa:vidBBBBBBB2": "https://github.com/ok/v",
    "medvidqa:-dash00000": f"javascript:{MARK}",
}

needs_browser = pytest.mark.skipif(
    chromium() is None, reason="chromium not installed (apt-get install chromium)"
)


class EvilLeaky(RandomSystem):
    """A payload-named system that commits on every query (false recalls for page 04). Not a
    subclass of the leaky double: only the registered doubles may be handed the gold."""

    name = "leaky" + NAME_PAYLOAD
    seed = 1


class EvilRandom(RandomSystem):
    name = "random" + NAME_PAYLOAD


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    corpus = make_corpus(root)
    frozen = freeze(corpus, root, {"MEMBENCH_CACHE": str(root / "cache")})
    sets = frozen["sets"]
    for f in sorted(sets.glob("*.jsonl")):
        rows = [json.loads(line) for line in f.read_text().splitlines()]
        for r in rows:
            if f.name == "items.jsonl":
                if r["source_id"] in URLS:
                    r["meta"]["url"] = URLS[r["source_id"]]
            else:
                r["question"] = PAYLOAD + " " + r["question"]
        f.write_text("".join(dumps(r) + "\n" for r in rows))
    runs = [root / "a" / DIRNAME, root / "b" / DIRNAME, root / "c" / LINKNAME]
    for system, run in zip((EvilLeaky(), EvilRandom(), EvilRandom()), runs):
        run_system(system, sets, "dev", run, corpus, manifest=frozen["manifest"])
    out = root / "reports"
    done = report(runs, out, corpus=corpus, notebooks=("02_run_dev", "04_false_recalls"))
    return out, done, runs, corpus


def test_folders_are_unique_and_links_stay_inside(hostile):
    out, done, runs, _ = hostile
    folders = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert len(folders) == 4  # three runs and the comparison
    assert sum(f.startswith("run_img_src_x_onerror") for f in folders) == 2
    assert any(f.endswith("-2") for f in folders)
    for d in folders:
        assert re.fullmatch(r"[A-Za-z0-9._-]+", d) and not d.startswith((".", "-"))
    pages = {r.html for r in done}
    assert len(pages) == len(done) == 7  # nothing overwritten
    index = (out / "index.html").read_text()
    hrefs = re.findall(r'href="([^"]*)"', index)
    assert hrefs and all(
        not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", h)
        and not h.startswith("/")
        and ".." not in h.split("/")
        for h in hrefs
    )
    for h in hrefs:
        assert (out / h).exists(), h


def test_no_data_string_reaches_the_html_raw(hostile):
    out, done, _, _ = hostile
    for r in done:
        html = r.html.read_text()
        assert f"<script>{MARK}" not in html, r.html  # only ever as &lt;script&gt;
        assert "<img src=x onerror" not in html and "<img/src" not in html, r.html
        assert "&lt;img src=x onerror" in html or "&lt;img/src=x/onerror" in html, r.html
        # there, as text
    index = (out / "index.html").read_text()
    assert f"<script>{MARK}" not in index and 'href="javascript:' not in index.lower()


def test_report_refuses_to_overwrite_without_force(hostile):
    out, _, runs, _ = hostile
    with pytest.raises(MembenchError, match="--force"):
        report(runs[:1], out, notebooks=("02_run_dev",))


def _links(html: str) -> list[str]:
    return re.findall(r'<a\b[^>]*\bhref="([^"]*)"', html)


def test_a_url_from_the_items_is_text_not_a_link(hostile):
    """page 04 shows each video window with its item's meta.url: as text, whatever it is (an
    https URL with a script in it, javascript:, even a host the manifest names)."""
    from membench.report.escape import esc

    out, done, _, _ = hostile
    pages = [r.html.read_text() for r in done if r.notebook == "04_false_recalls"]
    shown = [u for u in URLS.values() if any(esc(u) in h for h in pages)]
    assert shown, "no video URL on page 04: the fixture no longer shows a video case"
    for h in pages:
        external = [
            x for x in _links(h) if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", x) or x.startswith("//")
        ]
        assert external == [], external  # nothing links out of the report
        assert "<script>" + MARK not in h
        assert (
            "external links</th><td><code>text: URLs from set and run files are shown as text" in h
        )  # the provenance says so


def test_live_links_only_to_https_hosts_of_the_manifest(hostile, tmp_path):
    """--live-links: the https URL to a host the corpus manifest names becomes a link (new tab,
    no referrer); the others stay text; the provenance and the policy say so."""
    from membench.contract.protocol import Result
    from membench.core.links import manifest_link_hosts
    from membench.core.paths import MANIFEST_PATH

    class NoHits(RandomSystem):
        """Misses every answerable query, so page 04 shows every gold region (both videos)."""

        name = "nohits"

        def query(self, question, scope, as_of):
            return Result(hits=[], cartridge=[])

    assert "github.com" in manifest_link_hosts(MANIFEST_PATH)
    _, _, runs, corpus = hostile
    root = runs[0].parents[1]
    run = tmp_path / "nohits"
    run_system(NoHits(), root / "sets", "dev", run, corpus, manifest=root / "manifest.jsonl")
    done = report(
        [run],
        tmp_path / "live",
        corpus=corpus,
        notebooks=("04_false_recalls",),
        live_links=True,
        extra={"n_static": 50},
    )
    h = done[0].html.read_text()
    links = [x for x in _links(h) if not x.endswith(".html") and not x.startswith("#")]
    assert links and all(x.startswith("https://github.com/ok/v?t=") for x in links), links
    tags = re.findall(r'<a\b[^>]*href="https://github\.com/ok/v\?t=[0-9]+"[^>]*>', h)
    assert tags and all(
        'rel="noopener noreferrer nofollow"' in t and 'target="_blank"' in t for t in tags
    ), tags
    assert "evil.example/watch" in h and 'href="https://evil' not in h
    assert 'href="javascript:' not in h.lower()
    assert "live (--live-links): https URLs to github.com" in h
    assert '<meta name="membench:external_links" content="live (--live-links)' in h
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', h).group(1)
    assert "default-src &#x27;none&#x27;" in policy and "http" not in policy  # loads nothing


@needs_browser
def test_payloads_show_as_text_and_never_run(hostile):
    from membench.report.browser_check import dom_check

    out, done, _, _ = hostile
    infos = dom_check([out / "index.html", *(r.html for r in done)])
    for info in infos:
        assert not info["pwned"] and not info["dialogs"], info["page"]
        assert not info["external"], (info["page"], info["external"])
    by_page = {info["page"]: info for info in infos}
    for r in done:
        text = by_page[str(r.html)]["text"]
        assert PAYLOAD in text or f"<script>{MARK}</script>" in text, r.html  # shown as text
    assert any(f"<img src=x onerror={MARK}>" in i["text"] for i in infos)  # the dir name too


@needs_browser
def test_the_policy_stops_a_script_that_slipped_through(tmp_path):
    """Not escaping is caught above; this checks the second line: a raw script in an output
    does not run under the page's Content-Security-Policy (and does run without it)."""
    from membench.report.browser_check import dom_check

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"text/html": f'<p>raw</p><script>{MARK}</script><img src=x onerror="{MARK}">'},
        )
    ]
    nb.cells = [cell]
    page = tmp_path / "p.html"
    page.write_text(to_html(nb, {"system": "x"}))
    bare = tmp_path / "bare.html"
    bare.write_text(
        re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text())
    )
    guarded, unguarded = dom_check([page, bare], wait_ms=500)
    assert not guarded["pwned"]
    assert any("Content Security Policy" in c for c in guarded["console"])
    assert unguarded["pwned"]  # the check can fail


@needs_browser
def test_browser_check_fails_a_page_whose_console_logs_an_error(tmp_path, capsys):
    """A page whose own policy blocks something it asks for (a font, as the widget manager's
    did) logs a console error: `browser_check --dom` calls it a problem, not "ok"."""
    from membench.report.browser_check import main as browser_check

    def page(name: str, html_out: str):
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell("x")
        cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": html_out})]
        nb.cells = [cell]
        path = tmp_path / name
        path.write_text(to_html(nb, {"system": "x"}))
        return path

    clean = page("clean.html", "<table><tr><th>a</th></tr><tr><td>1</td></tr></table>")
    fonts = page(
        "fonts.html",
        "<style>@font-face{font-family:mbx;src:url(mbx.woff2)}"
        "td{font-family:mbx}</style><table><tr><th>a</th></tr><tr><td>1</td></tr>"
        "</table>",
    )
    assert browser_check(["--dom", str(clean)]) == 0
    assert capsys.readouterr().out.rstrip().endswith(": ok")
    assert browser_check(["--dom", str(fonts)]) == 1
    out = capsys.readouterr().out
    assert "console error(s)" in out and "font-src" in out
