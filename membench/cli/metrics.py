"""A run's figures: ``membench metrics`` and ``membench export``.

``metrics`` scores a run directory into RUN_DIR/metrics.json and prints the table
(:func:`membench.metrics.metrics_for_run_dir`; ``membench run --metrics`` calls
:func:`_metrics_cmd` too); ``export`` writes a run as TREC files
(:func:`membench.metrics.export.export_run`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .common import _read_flags


def _metrics_cmd(a: argparse.Namespace) -> int:
    from ..metrics import format_brief, format_table, metrics_for_run_dir

    m = metrics_for_run_dir(
        Path(a.run_dir), Path(a.sets) if a.sets else None, partial=a.partial, final=a.final
    )
    if a.json:
        print(json.dumps(m, indent=1))
    elif getattr(a, "brief", False):
        print(format_brief(m, Path(a.run_dir).name, where=str(a.run_dir)), end="")
    else:
        print(format_table(m))
    return 0


def _export_cmd(a: argparse.Namespace) -> int:
    from ..metrics.export import export_run

    done = export_run(
        Path(a.run_dir),
        Path(a.out),
        Path(a.sets) if a.sets else None,
        partial=a.partial,
        final=a.final,
    )
    print(
        f"{done['label']}: {done['queries']} queries ({done['answerable']} answerable) -> "
        f"{done['out']}: run.trec ({done['run_lines']} lines), qrels.trec "
        f"({done['qrels_lines']} lines), topics.jsonl"
    )
    return 0


def _add_export(sub) -> None:
    ex = sub.add_parser(
        "export", help="a run as TREC files: run.trec, qrels.trec (atom level) and topics.jsonl"
    )
    ex.add_argument("run_dir", help="the run directory to export")
    ex.add_argument("--out", required=True, help="folder for run.trec, qrels.trec, topics.jsonl")
    ex.add_argument("--sets", help="sets folder (default: the one recorded in meta.json)")
    _read_flags(ex)
    ex.set_defaults(func=_export_cmd)


def _add_metrics(sub) -> None:
    mt = sub.add_parser("metrics", help="score a run directory -> RUN_DIR/metrics.json")
    mt.add_argument("run_dir", metavar="RUN_DIR", help="a run directory")
    mt.add_argument("--sets", help="sets folder (default: the one recorded in meta.json)")
    mt.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    mt.add_argument(
        "--brief",
        action="store_true",
        help="the gates and the headline figures in a few lines instead of the full table",
    )
    _read_flags(mt)
    mt.set_defaults(func=_metrics_cmd)


COMMANDS = {"export": _add_export, "metrics": _add_metrics}


def register(sub, name: str) -> None:
    """Add the subcommand ``name`` (a key of :data:`COMMANDS`) to the subparsers ``sub``."""
    COMMANDS[name](sub)
