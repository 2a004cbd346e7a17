"""The bounds table of ``docs/robustness.md``: every bound of :mod:`membench.core.bounds`'s
registry, after importing the modules that register them (:data:`MODULES`). On the top floor
because it imports modules of every floor. Touches nothing.
"""

from __future__ import annotations

from ..core.bounds import REGISTRY, Bound

#: the modules that register bounds at import (add yours here)
MODULES: tuple[str, ...] = (
    "membench.core.bounds",
    "membench.cli.common",
    "membench.core.ids",
    "membench.core.stop",
    "membench.core.jsonl",
    "membench.metrics.bootstrap",
    "membench.core.times",
    "membench.systems.remote",
    "membench.serve.server",
    "membench.run.ray_engine",
    "membench.run.files",
    "membench.run.importer",
    "membench.trec.read",
    "membench.analysis.browse",
    "membench.systems.identity",
    "membench.core.content_guard",
)


def _fmt(v) -> str:
    if isinstance(v, (bool, str)):
        return str(v)
    if isinstance(v, int):
        for shift, suffix in ((30, " Gi"), (20, " Mi"), (10, " Ki")):
            if v >= (1 << shift) and v % (1 << shift) == 0:
                return f"{v >> shift:,}{suffix}"
        return f"{v:,}"
    return f"{v:g}"


def all_bounds() -> list[Bound]:
    """Every registered bound, after importing the modules that register them."""
    import importlib

    for mod in MODULES:
        importlib.import_module(mod)
    return sorted(REGISTRY.values(), key=lambda b: b.name)


def markdown_table() -> str:
    """The bounds table of ``docs/robustness.md``."""
    rows = ["| bound | value | limits | past it | enforced in |", "|---|---:|---|---|---|"]
    for b in all_bounds():
        unit = f" {b.unit}" if b.unit else ""
        rows.append(
            f"| `{b.name}` | {_fmt(b.value)}{unit} | {b.what} | {b.past} | "
            f"{('`' + b.where + '`') if b.where else ''} |"
        )
    return "\n".join(rows)
