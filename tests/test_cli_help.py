"""`membench --help` and every `membench COMMAND --help` print exactly the texts in
tests/fixtures/cli_help.json (taken at COLUMNS=100 before membench/cli.py became the package
membench/cli/): splitting or moving a command's module must not change what a user reads.
A deliberate change of a help text rewrites the fixture:

    COLUMNS=100 python tests/test_cli_help.py > tests/fixtures/cli_help.json
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cli_help.json"
CLI = Path(__file__).resolve().parent.parent / "membench" / "cli"


def _help_of(argv: list[str]) -> str:
    from membench.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)
        except SystemExit:
            pass
    return out.getvalue()


def _subcommands() -> list[str]:
    from membench.cli import parser

    subs = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(subs.choices)


def help_texts() -> dict[str, str]:
    """ "" -> `membench --help`, "<cmd>" -> `membench <cmd> --help` (as the fixture holds them)."""
    return {"": _help_of(["--help"]), **{n: _help_of([n, "--help"]) for n in _subcommands()}}


@pytest.fixture(scope="module")
def snapshot() -> dict[str, str]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture
def columns_100(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # before any parser is built or formats help


def test_the_same_subcommands(columns_100, snapshot):
    assert set(_subcommands()) == set(snapshot) - {""}


def test_membench_help_is_unchanged(columns_100, snapshot):
    """The top-level text also fixes the order the subcommands are registered in."""
    assert _help_of(["--help"]) == snapshot[""]


@pytest.mark.parametrize(
    "cmd", sorted(json.loads(FIXTURE.read_text(encoding="utf-8")).keys() - {""})
)
def test_subcommand_help_is_unchanged(columns_100, snapshot, cmd):
    assert _help_of([cmd, "--help"]) == snapshot[cmd]


def test_every_command_module_registers_what_the_table_names():
    """membench.cli.COMMANDS names each subcommand once, and each command module's own
    COMMANDS are exactly those the table assigns to it."""
    import membench.cli as cli

    names = [n for n, _ in cli.COMMANDS]
    assert len(names) == len(set(names))
    for module in {m for _, m in cli.COMMANDS}:
        assert set(module.COMMANDS) == {n for n, m in cli.COMMANDS if m is module}, module


def test_command_modules_never_import_the_package():
    """membench/cli/__init__.py imports the command modules; they import .common (or a
    sibling), never the package itself: no cycle."""
    bad = []
    for path in sorted(CLI.glob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
                bad.append(f"{path.name}:{node.lineno}: from . import ...")
            elif (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and node.module == "membench.cli"
            ):
                bad.append(f"{path.name}:{node.lineno}: from membench.cli import ...")
            elif isinstance(node, ast.Import) and any(a.name == "membench.cli" for a in node.names):
                bad.append(f"{path.name}:{node.lineno}: import membench.cli")
    assert not bad, bad


if __name__ == "__main__":  # rewrite the fixture (the module docstring)
    import sys

    json.dump(help_texts(), sys.stdout, indent=1, sort_keys=True)
