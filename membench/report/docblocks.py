"""Generated blocks in Markdown pages: ``<!-- NAME:start ... -->`` ... ``<!-- NAME:end -->``.

Published tables (the sets' counts, coverage, derivations and audit) are never pasted by hand:
each block's body is what a generator in :data:`GENERATORS` returns, and the tests hold each
page's blocks equal to it. After a change that moves them (a re-frozen build, say)::

    python -m membench.report.docblocks README.md docs/*.md     # rewrite the blocks in place
    python -m membench.report.docblocks --check README.md        # exit 1 where a block differs

A generator takes a context (:class:`Context`: the built sets folder) and returns the block's
text. Blocks whose name has no generator here are left alone (their own tests check them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.paths import REPO_ROOT

_BLOCK = re.compile(
    r"(<!-- (?P<name>[a-z0-9-]+):start[^>]*-->\n)(?P<body>.*?)(\n?<!-- (?P=name):end -->)",
    re.DOTALL)


@dataclass
class Context:
    """What generators read: the built sets folder (``bench/sets`` by default); the run
    figures come from ``bench/expected/dev.json``."""

    sets: Path = field(default_factory=lambda: REPO_ROOT / "bench" / "sets")


def _stats(ctx: Context) -> dict:
    return json.loads((ctx.sets / "stats.json").read_text())


def _coverage(ctx: Context) -> list[dict]:
    return json.loads((ctx.sets / "coverage.json").read_text())


def _counts(ctx: Context) -> str:
    from ..sets.build import render_counts

    return render_counts(_stats(ctx))


def _coverage_table(ctx: Context) -> str:
    from ..sets.build import render_coverage

    return render_coverage(_coverage(ctx))


def _derived(ctx: Context) -> str:
    from ..sets.build import render_derivation

    return render_derivation(_coverage(ctx))


def _audit(ctx: Context) -> str:
    from ..sets.audit import audit_sets, render_audit

    return render_audit(audit_sets(ctx.sets))


def _expected(ctx: Context) -> list[dict]:
    from ..analysis.expected import EXPECTED

    return list(json.loads(EXPECTED.read_text())["systems"].values())


def _figures(ctx: Context) -> str:
    from ..analysis.expected import table

    return table(_expected(ctx))


def _pdf_text_source(ctx: Context) -> str:
    from ..analysis.expected import text_source_table

    return text_source_table(_expected(ctx))


GENERATORS: dict[str, Callable[[Context], str]] = {
    "figures": _figures,
    "pdf-text-source": _pdf_text_source,
    "counts": _counts,
    "coverage": _coverage_table,
    "derived": _derived,
    "audit": _audit,
}


def blocks(text: str) -> dict[str, str]:
    """Every generated block's name -> body (stripped) in ``text``."""
    return {m["name"]: m["body"].strip() for m in _BLOCK.finditer(text)}


def rewrite(text: str, ctx: Context, only: set[str] | None = None) -> tuple[str, list[str]]:
    """``text`` with every block that has a generator re-generated; and the names changed."""
    changed: list[str] = []
    cache: dict[str, str] = {}

    def sub(m: re.Match) -> str:
        name = m["name"]
        gen = GENERATORS.get(name)
        if gen is None or (only and name not in only):
            return m.group(0)
        if name not in cache:
            cache[name] = gen(ctx).strip()
        if cache[name] != m["body"].strip():
            changed.append(name)
        return f"{m.group(1)}{cache[name]}\n<!-- {name}:end -->"

    return _BLOCK.sub(sub, text), changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m membench.report.docblocks",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("pages", nargs="+", help="Markdown files to rewrite (or check)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 on a difference")
    ap.add_argument("--sets", default=str(REPO_ROOT / "bench" / "sets"), help="built sets folder")
    ap.add_argument("--only", action="append", help="only this block name (repeatable)")
    a = ap.parse_args(argv)
    ctx = Context(sets=Path(a.sets))
    bad = 0
    for page in a.pages:
        p = Path(page)
        old = p.read_text(encoding="utf-8")
        new, changed = rewrite(old, ctx, set(a.only) if a.only else None)
        for name in changed:
            print(f"{p}: block {name}: {'differs' if a.check else 'rewritten'}")
        if changed and not a.check:
            p.write_text(new, encoding="utf-8")
        bad += bool(changed)
    return 1 if (a.check and bad) else 0


if __name__ == "__main__":
    sys.exit(main())
