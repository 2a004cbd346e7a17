"""Every import path the docs give users works: the dotted ``membench...`` names of README.md,
docs/, examples/, notebooks/ and bench/ scripts (modules, and names in them), both those they
give now and those they gave before the rooms moved (tests/fixtures/documented_paths.json,
taken from the docs of that time: each old path imports through membench/moved.py, with its
warning, as the very object of its new path; tests/test_moved.py tests the warning)."""

from __future__ import annotations

import importlib
import json
import re
import warnings
from pathlib import Path

import pytest

from membench.moved import new_path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = json.loads((ROOT / "tests" / "fixtures" / "documented_paths.json").read_text())
_FROM = re.compile(r"from[ \t]+(membench[\w.]*)[ \t]+import[ \t]+\(?([\w \t,]*)")
_DOTTED = re.compile(r"(?<![\w./-])membench(?:\.\w+)+(?::\w+)?")  # not .membench.lock


def named_paths() -> set[str]:
    """The dotted paths the docs name now (``from X import a, b`` as ``X.a``, ``X.b``; an
    entry point ``X:attr`` as ``X.attr``)."""
    files = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted((ROOT / "examples").rglob("*.py")),
        *sorted((ROOT / "examples").rglob("*.md")),
        *sorted((ROOT / "notebooks").rglob("*.ipynb")),
        *sorted((ROOT / "bench").glob("*.py")),
    ]
    names: set[str] = set()
    for f in files:
        text = f.read_text(encoding="utf-8")
        if f.suffix == ".ipynb":
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
        for m in _FROM.finditer(text):
            names |= {
                f"{m.group(1)}.{n.split()[0]}"
                for n in m.group(2).split(",")
                if n.split() and re.fullmatch(r"\w+", n.split()[0])
            }  # "a as b": a
        names |= {m.group(0).replace(":", ".") for m in _DOTTED.finditer(text)}
    return names


def resolve(name: str):
    """The object a dotted path names: the longest importable module, then attributes;
    raises ImportError / AttributeError."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError as e:
            if e.name and not ".".join(parts[:i]).startswith(e.name):
                raise  # the module exists but one of its imports is missing
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(name)


#: paths the docs gave that are gone on purpose -> where the name is now (the error says so)
RETIRED = {
    **{
        f"membench.metrics.{n}": f"membench.trec.{n}"  # metrics re-exported them up a floor
        for n in ("evaluate_trec", "read_trec_run", "write_trec_run")
    },
    "membench.core.bounds.markdown_table": "membench.docsite.bounds.markdown_table",
}


@pytest.mark.parametrize("name", BEFORE)
def test_a_path_the_docs_gave_still_imports(name):
    if name in RETIRED:
        new = RETIRED[name]
        with pytest.raises(
            AttributeError,
            match=re.escape(f"from {new.rpartition('.')[0]} import {new.rpartition('.')[2]}"),
        ):
            resolve(name)
        resolve(new)
    elif new_path(name) is not None:  # an old path: the very object of the new one
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            old = resolve(name)
        assert old is resolve(new_path(name)), name
    else:
        resolve(name)


def test_the_paths_the_docs_give_now_import():
    """Every path the docs name now resolves, but for words that only look like one (prose
    such as ``membench.systems`` the entry-point group, which also resolves)."""
    bad = []
    for name in sorted(named_paths()):
        try:
            resolve(name)
        except (ImportError, AttributeError) as e:
            bad.append(f"{name}: {type(e).__name__}: {e}")
    assert not bad, "\n".join(bad)


def test_a_path_that_is_not_there_fails():
    with pytest.raises(ImportError):
        resolve("membench_no_such_package.x")
    with pytest.raises(AttributeError):
        resolve("membench.contract.protocol.NoSuchName")
