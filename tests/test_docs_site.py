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
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                          cwd=root, env={**ENV, "PYTHONPATH": str(REPO_ROOT)},
                          capture_output=True, text=True, timeout=600)


def test_the_site_builds_with_no_warning(tmp_path):
    r = build(REPO_ROOT, tmp_path / "site")
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "WARNING" not in out, out[-4000:]
    for page in ("index", "your-system", "reports", "sets", "metrics", "results", "speed",
                 "trust", "cli", "notebooks/02_run_dev"):
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


def test_a_broken_link_a_missing_page_or_a_stale_table_fails_the_build(tmp_path):
    root = _copy_site(tmp_path)
    page = root / "docs" / "metrics.md"
    text = page.read_text()
    stale = re.sub(r"(<!-- metrics:start[^\n]*\n)\| measure", r"\1| a stale measure", text)
    assert stale != text
    page.write_text(stale + "\nSee [the old page](gone.md) and [a section](results.md#no-such-"
                    "section).\n")
    (root / "docs" / "cards.md").unlink()                    # in the nav, no longer a page
    (root / "docs" / "orphan.md").write_text("# Not in the nav\n")
    r = build(root, tmp_path / "site")
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "Aborted with" in out, out[-3000:]
    assert "'gone.md'" in out                                 # the broken link
    assert "no-such-section" in out                           # the missing anchor
    assert "cards.md" in out                                  # the missing page
    assert "orphan.md" in out                                 # the page nobody can reach
    assert "generated block 'metrics'" in out                 # the stale table


def test_the_readme_is_a_short_front_door_whose_links_resolve():
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.encode()) <= 8 * 1024
    assert "make all" in text and "make test" in text and "docs/img/report.png" in text
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert len(links) >= 12
    for link in links:
        assert not link.startswith(("http:", "https:")), link     # everything is in the repo
        assert (REPO_ROOT / link).exists(), f"README links to {link}, which does not exist"
    nav = (REPO_ROOT / "mkdocs.yml").read_text()
    for page in {link.removeprefix("docs/") for link in links if link.endswith(".md")}:
        assert page in nav, f"README links to docs/{page}, which is not in the site's nav"


def test_every_page_of_docs_is_a_page_of_the_site():
    nav = (REPO_ROOT / "mkdocs.yml").read_text()
    pages = {p.relative_to(REPO_ROOT / "docs").as_posix() for p in (REPO_ROOT / "docs")
             .glob("*.md")}
    assert pages and all(p in nav for p in pages), pages - {p for p in pages if p in nav}
    for nb in (REPO_ROOT / "notebooks").glob("*.ipynb"):
        assert f"notebooks/{nb.name}" in nav, nb.name


@pytest.mark.parametrize("page", ["metrics", "cli", "results", "robustness", "speed"])
def test_the_generated_tables_that_need_no_build_are_current(page):
    from membench.docsite.blocks import NEEDS_SETS, Context, GENERATORS, blocks, stale

    text = (REPO_ROOT / "docs" / f"{page}.md").read_text()
    names = {n for n in blocks(text) if n in GENERATORS and n not in NEEDS_SETS}
    assert names, page
    assert stale(text, Context(), with_sets=False) == []


def test_the_store_table_counts_what_the_stores_hold_in_every_row():
    """An "all" row names the atoms the stores held (the sum of the per-modality stores'),
    beside the count reported at ingest when the two differ (atoms without a letter or digit
    are reported and not stored)."""
    import re

    from membench.docsite.blocks import Context, GENERATORS

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
    from membench.docsite.blocks import NEEDS_SETS, Context, GENERATORS, blocks, stale

    text = (REPO_ROOT / "README.md").read_text()
    names = {n for n in blocks(text) if n in GENERATORS and n not in NEEDS_SETS}
    assert {"pdf-text-source", "mainjob-line"} <= names
    assert stale(text, Context(), with_sets=False) == []
