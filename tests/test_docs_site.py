"""The documentation site builds, in CI, with zero warnings: `mkdocs build --strict` (mkdocs.yml)
fails on a broken link, an anchor that does not exist, a page left out of the nav, a nav entry
without a page, a snippet file that does not exist, and (the hook membench/docsite/hooks.py)
a generated table that differs from its generator. The README is a short front door whose every
link resolves."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from membench.core.paths import REPO_ROOT

ENV = dict(os.environ, NO_MKDOCS_2_WARNING="1")


def build(root: Path, site: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of the site whose mkdocs.yml is in ``root`` (run from there:
    the snippets' base path is the working directory)."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=root,
        env={**ENV, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_the_site_builds_with_no_warning(tmp_path):
    r = build(REPO_ROOT, tmp_path / "site")
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "WARNING" not in out, out[-4000:]
    for page in (
        "index",
        "your-system",
        "reports",
        "sets",
        "metrics",
        "results",
        "speed",
        "trust",
        "cli",
        "notebooks/02_run_dev",
    ):
        assert (tmp_path / "site" / f"{page}.html").is_file(), page
    # the examples are on the page, from the files themselves
    html = (tmp_path / "site" / "your-system.html").read_text()
    assert "ThreadingHTTPServer" in html and "WordOverlap" in html and "trec_overlap" in html


def _copy_site(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(REPO_ROOT / "mkdocs.yml", root)
    shutil.copytree(REPO_ROOT / "docs", root / "docs", symlinks=True)
    shutil.copytree(REPO_ROOT / "notebooks", root / "notebooks")
    shutil.copytree(REPO_ROOT / "examples", root / "examples")
    (root / "membench" / "docsite").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "membench" / "docsite" / "hooks.py", root / "membench" / "docsite")
    return root


@pytest.mark.slow
def test_a_broken_link_a_missing_page_or_a_stale_table_fails_the_build(tmp_path):
    root = _copy_site(tmp_path)
    page = root / "docs" / "metrics.md"
    text = page.read_text()
    stale = re.sub(r"(<!-- metrics:start[^\n]*\n)\| measure", r"\1| a stale measure", text)
    assert stale != text
    page.write_text(
        stale + "\nSee [the old page](gone.md) and [a section](results.md#no-such-section).\n"
    )
    (root / "docs" / "cards.md").unlink()  # in the nav, no longer a page
    (root / "docs" / "orphan.md").write_text("# Not in the nav\n")
    r = build(root, tmp_path / "site")
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "Aborted with" in out, out[-3000:]
    assert "'gone.md'" in out  # the broken link
    assert "no-such-section" in out  # the missing anchor
    assert "cards.md" in out  # the missing page
    assert "orphan.md" in out  # the page nobody can reach
    assert "generated block 'metrics'" in out  # the stale table


def test_the_readme_is_a_short_front_door_whose_links_resolve():
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.encode()) <= 8 * 1024
    assert "make all" in text and "make test" in text and "docs/img/report.png" in text
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert len(links) >= 12
    for link in links:
        assert not link.startswith(("http:", "https:")), link  # everything is in the repo
        assert (REPO_ROOT / link).exists(), f"README links to {link}, which does not exist"
    nav = (REPO_ROOT / "mkdocs.yml").read_text()
    for page in {link.removeprefix("docs/") for link in links if link.endswith(".md")}:
        assert page in nav, f"README links to docs/{page}, which is not in the site's nav"


def test_every_page_of_docs_is_a_page_of_the_site():
    nav = (REPO_ROOT / "mkdocs.yml").read_text()
    pages = {
        p.relative_to(REPO_ROOT / "docs").as_posix() for p in (REPO_ROOT / "docs").glob("*.md")
    }
    assert pages and all(p in nav for p in pages), pages - {p for p in pages if p in nav}
    for nb in (REPO_ROOT / "notebooks").glob("*.ipynb"):
        assert f"notebooks/{nb.name}" in nav, nb.name


@pytest.mark.parametrize(
    "page", ["metrics", "cli", "results", "robustness", "speed", "cards", "your-system", "runs"]
)
def test_the_generated_tables_that_need_no_build_are_current(page):
    from membench.docsite.blocks import GENERATORS, NEEDS_SETS, Context, blocks, stale

    text = (REPO_ROOT / "docs" / f"{page}.md").read_text()
    names = {n for n in blocks(text) if n in GENERATORS and n not in NEEDS_SETS}
    assert names, page
    assert stale(text, Context(), with_sets=False) == []


def test_the_store_table_counts_what_the_stores_hold_in_every_row():
    """An "all" row names the atoms the stores held (the sum of the per-modality stores'),
    beside the count reported at ingest when the two differ (atoms without a letter or digit
    are reported and not stored)."""
    import re

    from membench.docsite.blocks import GENERATORS, Context

    table = GENERATORS["memsys-stores"](Context())
    rows = [r.split(" | ") for r in table.splitlines()[2:]]
    per = {}
    for r in rows:
        if r[1] == "modality" and r[2] != "all":
            per.setdefault(r[0].lstrip("| "), 0)
            per[r[0].lstrip("| ")] += int(re.match(r"\d+ / (\d+)", r[7]).group(1))
    alls = [r for r in rows if r[2] == "all"]
    assert per and alls
    for r in alls:
        stored = int(re.match(r"\d+ / (\d+) \(every store", r[7]).group(1))
        assert stored == per[r[0].lstrip("| ")], r


def test_the_readme_figures_are_the_generated_ones():
    """The README's generated blocks (the pdf text-source figures, what make all costs) are
    what their generators give from bench/expected and bench/results."""
    from membench.docsite.blocks import GENERATORS, NEEDS_SETS, Context, blocks, stale

    text = (REPO_ROOT / "README.md").read_text()
    names = {n for n in blocks(text) if n in GENERATORS and n not in NEEDS_SETS}
    assert {"pdf-text-source", "mainjob-line"} <= names
    assert stale(text, Context(), with_sets=False) == []


def _glance_commands() -> list[tuple[str, str]]:
    """(subcommand, the text of its lines) of docs/cli.md's "At a glance" block."""
    text = (REPO_ROOT / "docs" / "cli.md").read_text()
    block = text[text.index("## At a glance") : text.index("## Every command and option")]
    block = block[block.index("```") + 3 : block.rindex("```")]
    out: list[tuple[str, str]] = []
    for line in block.splitlines():
        code = line.split("  #")[0]
        m = re.match(r"\s*membench ([a-z][a-z0-9-]*)", code)
        if m:
            out.append((m.group(1), code))
        elif out and code.startswith(" ") and code.strip():
            out[-1] = (out[-1][0], out[-1][1] + " " + code.strip())
    return out


def test_at_a_glance_shows_only_flags_that_exist_and_never_two_that_exclude_each_other():
    """Each command line of docs/cli.md's "At a glance": every flag shown is a flag of that
    command's parser, and two flags of one mutually exclusive group appear only as the
    alternatives of one "(--a ... | --b ...)" group, never side by side."""
    from membench.cli import parser

    subs = next(a for a in parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    seen = 0
    for cmd, line in _glance_commands():
        sub = subs.choices[cmd]
        nested = next(
            (a for a in sub._actions if a.__class__.__name__ == "_SubParsersAction"), None
        )
        if nested is not None:
            word = line.split()[2] if len(line.split()) > 2 else ""
            sub = nested.choices.get(word, sub)
        flags = {o for a in sub._actions for o in a.option_strings}
        shown = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", line))
        assert shown <= flags | {"--"}, (cmd, sorted(shown - flags))
        for group in sub._mutually_exclusive_groups:
            opts = {o for a in group._group_actions for o in a.option_strings}
            both = opts & shown
            if len(both) > 1:
                alts = re.findall(r"\(([^()]*\|[^()]*)\)", line)
                assert any(all(o in alt for o in both) for alt in alts), (cmd, sorted(both))
        seen += 1
    assert seen >= 20


def test_no_line_of_the_docs_holds_two_headings():
    """A heading is alone on its line (docs/cards.md once had "### A### A: ...")."""
    for page in sorted((REPO_ROOT / "docs").glob("*.md")) + [REPO_ROOT / "README.md"]:
        fence = False
        for i, line in enumerate(page.read_text().splitlines(), 1):
            if line.startswith("```"):
                fence = not fence
            if not fence and line.startswith("#"):
                assert not re.search(r"[^#\s]#{2,6} ", line), f"{page.name}:{i}: {line}"


def test_openapi_sends_readers_to_the_page_with_the_worked_example():
    """Every docs page docs/openapi.json names exists, and the worked example it points to is
    on that page (examples/http_server.py, door 2 of docs/your-system.md)."""
    text = (REPO_ROOT / "docs" / "openapi.json").read_text()
    pages = set(re.findall(r"docs/([a-z-]+\.md)", text))
    assert pages
    for p in pages:
        assert (REPO_ROOT / "docs" / p).is_file(), p
    m = re.search(r"docs/([a-z-]+\.md) explains it with a worked example", text)
    assert m and "examples/http_server.py" in (REPO_ROOT / "docs" / m.group(1)).read_text()
