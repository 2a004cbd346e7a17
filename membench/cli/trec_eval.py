"""``membench trec-eval``: trec_eval's measures and output on plain TREC files, membench's engine
(:mod:`membench.trec.trec_eval`: its options come from
:func:`membench.trec.trec_eval.add_arguments`, the command is
:func:`membench.trec.trec_eval.run_command`).

``membench trec-eval ...`` normally never gets here: :mod:`membench.launch` sends it straight
to :func:`membench.trec.trec_eval.main` without importing this package; this module serves
``membench trec-eval --help``, ``membench.cli.main(["trec-eval", ...])`` and the parser that
documents every command."""

from __future__ import annotations

import argparse


def _trec_eval_cmd(a: argparse.Namespace) -> int:
    from ..trec.trec_eval import run_command

    return run_command(a)


def _add_trec_eval(sub) -> None:
    from ..trec.trec_eval import add_arguments as _trec_eval_arguments

    te = sub.add_parser(
        "trec-eval",
        help="trec_eval's measures and output on plain TREC files "
        "(membench's engine; trec_eval 10.0's semantics and options)",
    )
    _trec_eval_arguments(te)
    te.set_defaults(func=_trec_eval_cmd)


COMMANDS = {"trec-eval": _add_trec_eval}


def register(sub, name: str) -> None:
    """Add the subcommand ``name`` (a key of :data:`COMMANDS`) to the subparsers ``sub``."""
    COMMANDS[name](sub)
