"""mkdocs hooks of the documentation site (mkdocs.yml ``hooks:``).

Every generated block of a page (``<!-- NAME:start -->`` ... ``<!-- NAME:end -->``,
:mod:`membench.docsite.blocks`) must be what its generator gives: a stale block is a warning,
and the site is built with ``strict: true``, so it fails the build. The blocks that read the
built sets are checked when ``bench/sets`` is built (the tests check them on their own build
too: tests/test_build.py). ``python -m membench.docsite.blocks docs/*.md`` rewrites them.
"""

from __future__ import annotations

import logging

from membench.core.paths import REPO_ROOT
from membench.docsite.blocks import Context, stale

log = logging.getLogger("mkdocs.plugins.membench")
_CTX = Context()


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_path.endswith(".md"):
        with_sets = (_CTX.sets / "stats.json").is_file()
        for name in stale(markdown, _CTX, with_sets=with_sets):
            log.warning(
                f"{page.file.src_path}: generated block '{name}' is not what its "
                "generator gives: python -m membench.docsite.blocks "
                f"{(REPO_ROOT / 'docs' / page.file.src_path).relative_to(REPO_ROOT)}"
            )
    return markdown
