"""The old import paths (membench/moved.py): each is the very module of its new path and warns
naming that path and the release that removes it; none is used inside the repository, and the
release that removes them has not come yet (docs/architecture.md)."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from membench.core.version import __version__
from membench.moved import MOVED, REMOVED_IN, message, new_path

ROOT = Path(__file__).resolve().parent.parent
#: where the old paths may be written: their table, this test, and the docs' paths of the time
ALLOWED = {"membench/moved.py", "tests/test_moved.py", "tests/fixtures/documented_paths.json"}
SCANNED = (
    "membench",
    "tests",
    "notebooks",
    "examples",
    "bench",
    "docs",
    "README.md",
    "Makefile",
    "pyproject.toml",
    "mkdocs.yml",
)


def _release(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v)[:3])


def old_paths_in(text: str) -> list[tuple[int, str]]:
    """``(line, old path)`` for every old path ``text`` names: dotted (``membench.run.protocol``,
    ``membench.run.systems.dense``) or imported from its package (``from membench.analysis
    import plots``)."""
    found = []
    for old in MOVED:
        parent, _, last = old.rpartition(".")
        for m in re.finditer(rf"(?<![\w.]){re.escape(old)}(?!\w)", text):
            found.append((text.count("\n", 0, m.start()) + 1, old))
        for m in re.finditer(rf"from\s+{re.escape(parent)}\s+import\s+\(?([\w\s,#\\]*)", text):
            names = {
                n.split()[0] for n in re.sub(r"#[^\n]*", "", m.group(1)).split(",") if n.split()
            }
            if last in names:
                found.append((text.count("\n", 0, m.start()) + 1, old))
    return sorted(set(found))


def _files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", *SCANNED],
        cwd=ROOT,
        text=True,
        capture_output=True,
        check=True,
    ).stdout
    return sorted(f for f in out.split("\0") if f)


def test_no_old_path_inside_the_repository():
    files = _files()
    assert "membench/moved.py" in files and any(f.startswith("notebooks/") for f in files)
    bad = []
    for f in files:
        if f in ALLOWED:
            continue
        try:
            text = (ROOT / f).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # binary, a submodule, or deleted and not yet committed
        bad += [f"{f}:{line}: {old} (now {MOVED[old]})" for line, old in old_paths_in(text)]
    assert not bad, "old import paths (membench/moved.py) inside the repository:\n" + "\n".join(bad)


def test_the_scan_finds_an_old_path():
    text = (
        "import membench.run.protocol\nx = 'membench.run.systems.dense:DenseEngine'\n"
        "from membench.analysis import (frames,\n    plots)\nfrom membench.run import files\n"
        "import membench.run.runner, membench.contract.protocol\n"
    )
    assert old_paths_in(text) == [
        (1, "membench.run.protocol"),
        (2, "membench.run.systems"),
        (3, "membench.analysis.plots"),
    ]


def test_an_old_path_is_the_new_module_itself():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for old in MOVED:
            assert importlib.import_module(old) is importlib.import_module(new_path(old)), old
        from membench.run.systems.dense import DenseEngine
    from membench.contract import protocol as new
    from membench.systems.dense import DenseEngine as New

    assert sys.modules["membench.run.protocol"] is new
    assert new.__name__ == "membench.contract.protocol"
    assert DenseEngine is New
    assert new_path("membench.run.runner") is None
    with pytest.raises(ImportError):  # no such module under the old path's package
        importlib.import_module("membench.run.content.no_such_module")


def test_an_old_path_warns_naming_the_new_path_and_the_release():
    """A fresh process (an old path warns when it is first imported), default warning filters
    as a user's script has them: the warning shows, on the line that imports the old path."""
    code = (
        "import membench\n"
        "import membench.run.protocol as p\n"
        "from membench.analysis import plots\n"
        "import membench.contract.protocol\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        text=True,
        capture_output=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "DeprecationWarning" in line]
    assert warned == [
        "<string>:2: DeprecationWarning: "
        + message("membench.run.protocol", "membench.contract.protocol"),
        "<string>:3: DeprecationWarning: "
        + message("membench.analysis.plots", "membench.report.plots"),
    ], proc.stderr
    assert f"membench {REMOVED_IN} removes it: import membench.contract.protocol" in warned[0]


def test_the_old_paths_go_in_the_release_the_docs_name():
    """docs/architecture.md names :data:`REMOVED_IN`, and this release comes before it: the
    release that reaches it deletes membench/moved.py (and this test)."""
    docs = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"retired in {REMOVED_IN}" in docs and f'REMOVED_IN = "{REMOVED_IN}"' in docs
    assert _release(__version__) < _release(REMOVED_IN), (
        f"membench {__version__} is the release that removes the old paths: delete "
        "membench/moved.py and its line in membench/__init__.py"
    )
