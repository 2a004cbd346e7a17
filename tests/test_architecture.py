"""The package layout is the pipeline: no module imports from a layer above its own, and no
modality is branched on by name outside ``membench/modalities`` (docs/architecture.md)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from membench.modalities import MODALITIES

PKG = Path(__file__).resolve().parent.parent / "membench"

# lowest first; a module may import from its own layer and the layers before it
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core", "__init__", "__version__"),     # __init__ holds only the version string
    ("modalities",),
    ("sets",),
    ("run",),
    ("metrics",),
    ("analysis",),
    ("report",),
    ("cli", "launch", "__main__", "docsite"),   # docsite: the tables read every layer, CLI too
)


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"{module}: not in any layer of tests/test_architecture.py")


def _module(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), is_pkg


def _imports(path: Path) -> list[tuple[int, str]]:
    mod, is_pkg = _module(path)
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                b = base[:len(base) - (node.level - 1)]
                target = ".".join(b + ([node.module] if node.module else []))
                names = [target] if node.module else [f"{target}.{a.name}" for a in node.names]
            else:
                names = [node.module or ""]
            out += [(node.lineno, n) for n in names if n.startswith("membench")]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("membench")]
    return out


def test_no_import_runs_up_a_layer():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        mod, _ = _module(path)
        here = _layer(mod)
        for line, target in _imports(path):
            if _layer(target) > here:
                bad.append(f"{path.relative_to(PKG.parent)}:{line}: {mod} imports {target}")
    assert not bad, "imports that run up a layer:\n" + "\n".join(bad)


def test_no_modality_branch_outside_the_registry():
    """``== "pdf"``-style comparisons and ``if m == ...`` chains on a modality's name live only
    in membench/modalities (and the source adapters, whose modality is data)."""
    names = "|".join(MODALITIES)
    pat = re.compile(rf"""(==|!=)\s*["']({names})["']|["']({names})["']\s*(==|!=)""")
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if rel.parts[0] == "modalities" or rel.parts[:2] == ("sets", "sources"):
            continue
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pat.search(line):
                bad.append(f"membench/{rel}:{no}: {line.strip()}")
    assert not bad, "modality branches outside membench/modalities:\n" + "\n".join(bad)
