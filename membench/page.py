"""``mb.page``: what a report notebook shows a run with, in one namespace of the front door.

The report notebooks (``notebooks/0*_*.ipynb``) import ``membench`` and this module only
(``import membench as mb``, ``from membench.page import show, ...``). Every name here is the
very object of the module that defines it (tables, escaping, provenance, plots, the analysis
modules the pages call); nothing is defined here. Names resolve on first use (PEP 562), so a
notebook loads only the modules it asks for. :data:`HOMES` says where each name lives; the
``TYPE_CHECKING`` block below says the same as import statements (for type checkers and
``tests/test_architecture.py``; ``tests/test_api.py`` checks that the two agree). Touches
nothing itself. docs/api.md lists the names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .analysis import frames, q2d, slices, summaries, sweep
    from .analysis.agreement import rank_agreement
    from .analysis.browse import counts_frame, load_run_cases, static_browser_html
    from .analysis.compare import plot_first_stage
    from .analysis.floors import floor_metrics
    from .analysis.summaries import coverage_frame
    from .analysis.tell_columns import sets_tells
    from .core.links import manifest_link_hosts
    from .core.paths import (
        DEFAULT_SETS_DIR,
        LOCK_PATH,
        MANIFEST_PATH,
        corpus_root,
        resolve_user_path,
    )
    from .metrics.measures import HEADLINE
    from .metrics.rundir import run_status
    from .modalities import MODALITIES
    from .report import plots, provenance, provenance_frame
    from .report.escape import html_block, markdown
    from .report.leaderboard_tables import LEGEND, cards_table, context_table, leaderboard_table
    from .report.plots import plot_forest
    from .report.sets_tables import counts_table, digest_table, records_frame, rules_frame
    from .report.tables import (
        answer_context_grid,
        answer_context_note,
        collapsed,
        comparison_grid,
        floors_grid,
        judgment_sets_grid,
        metrics_grid,
        show,
    )
    from .sets.audit import (
        audit_frame,
        audit_sets_cached,
        kinds_table,
        native_tells_table,
        rules_table,
        splits_table,
    )
    from .sets.build import derivation_frame
    from .sets.judgments import describe
    from .sets.validate import audit_findings, validate_sets

#: module -> the names this namespace takes from it (a module of its own when the name is the
#: module's last part and it is not an attribute of the package: ``frames``, ``plots``, ...)
HOMES: dict[str, tuple[str, ...]] = {
    "membench.analysis": ("frames", "q2d", "slices", "summaries", "sweep"),
    "membench.analysis.agreement": ("rank_agreement",),
    "membench.analysis.browse": ("counts_frame", "load_run_cases", "static_browser_html"),
    "membench.analysis.compare": ("plot_first_stage",),
    "membench.analysis.floors": ("floor_metrics",),
    "membench.analysis.summaries": ("coverage_frame",),
    "membench.analysis.tell_columns": ("sets_tells",),
    "membench.core.links": ("manifest_link_hosts",),
    "membench.core.paths": (
        "DEFAULT_SETS_DIR",
        "LOCK_PATH",
        "MANIFEST_PATH",
        "corpus_root",
        "resolve_user_path",
    ),
    "membench.metrics.measures": ("HEADLINE",),
    "membench.metrics.rundir": ("run_status",),
    "membench.modalities": ("MODALITIES",),
    "membench.report": ("plots", "provenance", "provenance_frame"),
    "membench.report.escape": ("html_block", "markdown"),
    "membench.report.leaderboard_tables": (
        "LEGEND",
        "cards_table",
        "context_table",
        "leaderboard_table",
    ),
    "membench.report.plots": ("plot_forest",),
    "membench.report.sets_tables": ("counts_table", "digest_table", "records_frame", "rules_frame"),
    "membench.report.tables": (
        "answer_context_grid",
        "answer_context_note",
        "collapsed",
        "comparison_grid",
        "floors_grid",
        "judgment_sets_grid",
        "metrics_grid",
        "show",
    ),
    "membench.sets.audit": (
        "audit_frame",
        "audit_sets_cached",
        "kinds_table",
        "native_tells_table",
        "rules_table",
        "splits_table",
    ),
    "membench.sets.build": ("derivation_frame",),
    "membench.sets.judgments": ("describe",),
    "membench.sets.validate": ("audit_findings", "validate_sets"),
}

_HOME = {name: mod for mod, names in HOMES.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    mod = _HOME.get(name)
    if mod is None:
        raise AttributeError(
            f"module 'membench.page' has no attribute {name!r} (docs/api.md lists the names)"
        )
    try:
        value = getattr(importlib.import_module(mod), name)
    except AttributeError:  # a submodule not imported by its package yet
        value = importlib.import_module(f"{mod}.{name}")
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
