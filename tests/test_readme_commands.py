"""Every command the README and the documentation site (docs/*.md) show runs as written from a
fresh clone, and the CLI explains itself: ``--version``, help text for every flag, no raw reST
in the help.

Commands are taken from the pages' fenced blocks and their inline code spans. A concrete
``membench`` command must parse (the real parser, ``parse_args``); a usage line (``[--flag X]``,
``NAME``) must name a real subcommand and only real flags; ``make`` targets and variables must
exist in the Makefile; ``.venv/bin/X`` must be installed in this virtualenv, and the files,
modules and notebook parameters a command names must exist. Bare ``python``, ``papermill`` or
``jupyter`` are refused: a fresh clone has them only in ``.venv/bin``. The cheap commands
(``--version``, ``sources``, ``corpus check``, ``bench/results.py``) are also run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from membench import __version__
from membench.cli import parser
from membench.core.paths import REPO_ROOT

PAGES = {
    p.relative_to(REPO_ROOT).as_posix(): p.read_text(encoding="utf-8")
    for p in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
}
MAKEFILE = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
STARTS = ("membench ", "make ", ".venv/bin/", "python", "papermill", "jupyter", ". .venv")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*(=[A-Z_]+)?$")


def _strip_comment(line: str) -> tuple[str, str]:
    i = line.find(" #")
    return (line, "") if i < 0 else (line[:i], line[i + 2 :])


def page_commands(text: str) -> list[tuple[str, str]]:
    """(command, the comment after it) for every command line of a page. An environment
    assignment before a command (``PYTHONPATH=examples .venv/bin/membench ...``) is dropped,
    and so is a trailing ``&``."""
    out: list[tuple[str, str]] = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S):
        for raw in block.splitlines():
            cmd, comment = _strip_comment(raw)
            cmd = cmd.rstrip().removesuffix("\\")
            cmd = re.sub(r"^\s*(?:[A-Z_]+=\S+\s+)+(?=\S)", "", cmd).removesuffix(" &")
            if raw[:1].isspace() and out:  # a continuation of the line above
                prev, pc = out[-1]
                out[-1] = (f"{prev} {cmd.strip()}".strip(), f"{pc} {comment}")
            elif cmd.strip().startswith(STARTS):
                out.append((cmd.strip(), comment))
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    for span in re.findall(r"`([^`]+)`", prose):
        text_ = " ".join(span.split())
        if text_.startswith(STARTS) and " " in text_:
            out.append((text_, ""))
    return out


def readme_commands() -> list[tuple[str, str, str]]:
    """(page, command, comment) for every command of the README and of every docs page."""
    return [(page, c, k) for page, text in PAGES.items() for c, k in page_commands(text)]


COMMANDS = readme_commands()


def test_the_pages_have_commands_to_check():
    kinds = {c.split()[0] for _, c, _ in COMMANDS}
    assert {"membench", "make"} <= kinds and len(COMMANDS) >= 100, kinds
    pages = {p for p, _, _ in COMMANDS}
    assert {
        "README.md",
        "docs/index.md",
        "docs/your-system.md",
        "docs/results.md",
        "docs/speed.md",
    } <= pages, pages


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    act = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return dict(act.choices)


def _options(p: argparse.ArgumentParser) -> set[str]:
    return {o for a in p._actions for o in a.option_strings}


def check_membench(cmd: str, comment: str) -> None:
    args = shlex.split(cmd)[1:]
    if args == ["--version"]:
        return
    top = _options(parser())
    while args and args[0] in top:  # global options come before the subcommand
        args = args[1:]
    if (
        args in (["…"], ["..."])
        or not args
        or args[0] in ("--help", "-h")
        or PLACEHOLDER.match(args[0])
        or args[0].startswith("[")
    ):
        return  # `membench --quiet …`, `membench COMMAND --help`, a usage line
    sub = _subparsers(parser())
    assert args and args[0] in sub, f"{cmd!r}: no such subcommand"
    p = sub[args[0]]
    flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", cmd + " " + comment))
    assert flags <= _options(p), f"{cmd!r}: unknown flag(s) {flags - _options(p)}"
    template = any("[" in a or a == "..." or PLACEHOLDER.match(a) or "|" in a for a in args)
    if len(args) == 1 and args[0] not in ("sources",):
        return  # a command named in prose (`membench run`), not a call
    if not template:
        try:
            parser().parse_args(args)
        except SystemExit:
            pytest.fail(f"README command does not parse: {cmd!r}")
    for a in args:
        if re.match(r"(notebooks|bench|docs|membench|tests)/", a):
            assert (REPO_ROOT / a).exists(), f"{cmd!r}: {a} does not exist"


def check_make(cmd: str) -> None:
    targets = set(re.findall(r"^([a-z][\w-]*)\s*:", MAKEFILE, re.M))
    variables = set(re.findall(r"^([A-Z_]+)\s*\?=", MAKEFILE, re.M))
    for a in shlex.split(cmd)[1:]:
        if "=" in a:
            assert a.split("=")[0] in variables, f"{cmd!r}: Makefile has no {a.split('=')[0]}"
        else:
            assert a in targets, f"{cmd!r}: Makefile has no target {a!r}"


def _notebook_parameters(nb: Path) -> set[str]:
    cells = json.loads(nb.read_text())["cells"]
    src = "".join(
        next(c["source"] for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    )
    return set(re.findall(r"^(\w+)\s*=", src, re.M))


def check_venv(cmd: str) -> None:
    args = shlex.split(cmd)
    exe = args[0].split("/")[-1]
    assert (BIN / exe).exists(), f"{cmd!r}: {exe} is not installed in the virtualenv"
    rest = args[1:]
    if exe == "membench":
        check_membench(" ".join(["membench", *rest]), "")
    elif exe == "python":
        if rest[:1] == ["-c"]:
            compile(rest[1], cmd, "exec")
        elif rest[:1] == ["-m"]:
            assert importlib.util.find_spec(rest[1]) is not None, f"{cmd!r}: no module"
        else:
            assert (REPO_ROOT / rest[0]).is_file(), f"{cmd!r}: no file {rest[0]}"
    elif exe == "papermill":
        nb = REPO_ROOT / rest[0]
        assert nb.is_file(), f"{cmd!r}: no notebook {rest[0]}"
        params = [rest[i + 1] for i, a in enumerate(rest) if a == "-p"]
        assert set(params) <= _notebook_parameters(nb), f"{cmd!r}: unknown parameter"
        # what it writes goes under reports/ (ignored by git) or a temporary folder
        assert rest[1].startswith(("reports/", "/tmp/")), (
            f"{cmd!r}: writes {rest[1]} into the repository; write under reports/ or /tmp"
        )
    elif exe == "jupyter":
        paths = [a for a in rest[1:] if not a.startswith("--")]
        flags = [a for a in rest[1:] if a.startswith("--")]
        # a notebook under reports/ is one `make all` writes (executed, next to its page)
        assert (
            rest[0] == "lab"
            and len(paths) == 1
            and ((REPO_ROOT / paths[0]).exists() or paths[0].startswith("reports/"))
        ), cmd
        assert set(flags) <= {"--allow-root"}, cmd


def test_the_jupyterlab_line_works_as_root():
    """JupyterLab refuses to start as root without --allow-root: the README says so where it
    gives the command."""
    lab = [c for _, c, _ in COMMANDS if c.startswith(".venv/bin/jupyter lab")]
    assert any("--allow-root" in c for c in lab) and any("--allow-root" not in c for c in lab)


@pytest.mark.parametrize(
    "page,cmd,comment", COMMANDS, ids=[f"{p}:{c[:60]}" for p, c, _ in COMMANDS]
)
def test_every_command_on_the_pages_runs_as_written(page, cmd, comment):
    first = cmd.split()[0]
    if first == "membench":
        check_membench(cmd, comment)
    elif first == "make":
        check_make(cmd)
    elif first.startswith(".venv/bin/"):
        check_venv(cmd)
    elif cmd.startswith(". .venv/bin/activate"):
        assert (BIN / "activate").is_file()
    else:
        pytest.fail(f"{cmd!r}: {first} is not on PATH in a fresh clone; write .venv/bin/{first}")


@pytest.mark.parametrize("cmd", [["--version"], ["sources"], ["corpus", "check"]])
def test_cheap_readme_commands_run(cmd):
    r = subprocess.run(
        [sys.executable, "-m", "membench", *cmd],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr


def test_results_script_runs():
    r = subprocess.run(
        [sys.executable, "bench/results.py"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert r.returncode == 0 and "| bm25 | pdf |" in r.stdout, r.stderr


# --------------------------------------------------------------------------- help


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        parser().parse_args(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"membench {__version__}"
    pyproject = (REPO_ROOT / "pyproject.toml").read_text()
    assert f'version = "{__version__}"' in pyproject


def test_every_flag_has_help():
    missing = []
    for name, p in [("membench", parser()), *_subparsers(parser()).items()]:
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if not (a.help or "").strip():
                missing.append(f"{name} {'/'.join(a.option_strings) or a.dest}")
    assert not missing, missing


def _help(*args: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "membench", *args, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_help_is_plain_text():
    for args in [(), *((n,) for n in _subparsers(parser()))]:
        text = _help(*args)
        assert not re.search(r"``|:func:|:class:|:mod:|:data:", text), (args, text)


def test_help_says_what_matters():
    top = _help()
    assert "exit status" in top and "130" in top and "disk full" in top
    run = _help("run")
    assert "trust:" in run and "module:Class" in run and "your permissions" in run
    corpus = _help("corpus")
    assert "REWRITE bench/corpus/manifest.jsonl" in corpus and "committed" in corpus
