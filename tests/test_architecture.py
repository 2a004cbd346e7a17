"""The package layout is the pipeline (docs/architecture.md, membench/docsite/house.py): no
module imports from a room on a floor above its own, no import circle between modules, no room
over 15% of the code, no file over 800 lines without saying why, and no modality is branched
on by name outside ``membench/modalities``."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from membench.docsite.house import ROOMS, floor_of
from membench.modalities import MODALITIES

PKG = Path(__file__).resolve().parent.parent / "membench"
DOCS = PKG.parent / "docs" / "architecture.md"
MAX_ROOM_SHARE = 0.15
MAX_LINES = 800
#: what a file over MAX_LINES says in its opening docstring, followed by its reason
LONG_NOTE = "Why one file:"


def _module(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), is_pkg


MODULES = {_module(p)[0]: p for p in sorted(PKG.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The module of membench's own that a dotted import target names (a package's name, a
    module's, or an attribute of one). A compiled module (``membench/trec/_trecscan.c``) is
    none of them: it imports nothing of membench's, so it closes no circle."""
    if (PKG.parent / (name.replace(".", "/") + ".c")).exists():
        return None
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every import statement of ``path`` (function-level and
    TYPE_CHECKING ones too) that names one of membench's modules."""
    mod, is_pkg = _module(path)
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                b = base[:len(base) - (node.level - 1)]
                target = ".".join(b + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("membench"):
                continue
            for a in node.names:
                t = _resolve(f"{target}.{a.name}")
                if t is not None:
                    out.append((node.lineno, t))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, t) for a in node.names if a.name.startswith("membench")
                    for t in [_resolve(a.name)] if t is not None]
    return out


@functools.cache
def _graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first import}."""
    g: dict[str, dict[str, int]] = {}
    for mod, path in MODULES.items():
        g[mod] = {}
        for line, target in _imports(path):
            if target != mod:
                g[mod].setdefault(target, line)
    return g


def _circles(g: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def _file(mod: str) -> str:
    return str(MODULES[mod].relative_to(PKG.parent))


def test_every_module_is_in_a_room():
    homeless = []
    for mod in MODULES:
        try:
            floor_of(mod)
        except KeyError:
            homeless.append(_file(mod))
    assert not homeless, "modules in no room of membench/docsite/house.py: " + ", ".join(homeless)


def test_no_import_runs_up_a_floor():
    bad = []
    for mod, targets in sorted(_graph().items()):
        for target, line in sorted(targets.items()):
            if floor_of(target) > floor_of(mod):
                bad.append(f"{_file(mod)}:{line}: {mod} (floor {floor_of(mod)}) imports "
                           f"{target} (floor {floor_of(target)})")
    assert not bad, "imports that run up a floor:\n" + "\n".join(bad)


def test_no_import_circle():
    g = _graph()
    found = _circles(g)
    lines = []
    for comp in found:
        lines.append("a circle of " + ", ".join(_file(m) for m in comp) + ":")
        lines += [f"  {_file(a)}:{g[a][b]} imports {b}" for a in comp for b in sorted(g[a])
                  if b in comp]
    assert not found, "\n".join(lines)


def test_the_circle_finder_finds_a_circle():
    g = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}, "e": {}}
    assert _circles(g) == [["a", "b", "c"]]
    assert _circles({"a": {"b": 1}, "b": {}}) == []


def test_no_room_over_its_share():
    lines: dict[str, int] = {}
    for mod, path in MODULES.items():
        room = "/".join(ROOMS[floor_of(mod)].names)
        lines[room] = lines.get(room, 0) + len(path.read_text(encoding="utf-8").splitlines())
    total = sum(lines.values())
    big = {r: n for r, n in lines.items() if n > MAX_ROOM_SHARE * total}
    assert not big, (f"rooms over {MAX_ROOM_SHARE:.0%} of {total} lines: "
                     + ", ".join(f"{r}: {n} ({n / total:.1%})" for r, n in big.items()))


def test_no_long_file_without_a_reason():
    """A file over 800 lines says why in its opening docstring (``Why one file: ...``)."""
    bad = []
    for mod, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        n = len(text.splitlines())
        if n > MAX_LINES and LONG_NOTE not in (ast.get_docstring(ast.parse(text)) or ""):
            bad.append(f"{_file(mod)}: {n} lines")
    assert not bad, (f"files over {MAX_LINES} lines whose opening docstring does not say "
                     f"{LONG_NOTE!r}:\n" + "\n".join(bad))


def test_the_docs_draw_this_house():
    """docs/architecture.md's generated ``house`` block is the table of :data:`ROOMS`, and
    every room is a package or module that exists."""
    from membench.docsite.blocks import blocks
    from membench.docsite.house import markdown

    assert blocks(DOCS.read_text(encoding="utf-8"))["house"] == markdown().strip()
    for room in ROOMS:
        for n in room.names:
            assert (PKG / n).is_dir() or (PKG / f"{n}.py").is_file(), n


def test_no_modality_branch_outside_the_registry():
    """``== "pdf"``-style comparisons and ``if m == ...`` chains on a modality's name live only
    in membench/modalities (and the source adapters, whose modality is data)."""
    names = "|".join(MODALITIES)
    pat = re.compile(rf"""(==|!=)\s*["']({names})["']|["']({names})["']\s*(==|!=)""")
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if rel.parts[0] in ("modalities", "sources"):
            continue
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pat.search(line):
                bad.append(f"membench/{rel}:{no}: {line.strip()}")
    assert not bad, "modality branches outside membench/modalities:\n" + "\n".join(bad)
