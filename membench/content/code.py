"""Code items: line ranges of one file, extent ``{"path", "line_start", "line_end"}`` plus
``"symbol"`` when the range holds that symbol's definition line.

Start at :func:`chunk_code` and :func:`code_ranges`. Lines are counted as ``meta.lines`` counts
them (``\\n``-separated, 1-based, a last line without newline counts), read as UTF-8 with
``errors="replace"``; ``path`` is ``meta.upstream_path``. A file is cut at *cut lines*:

* **python** (``code_python_ast``, :func:`python_cuts`): every function and class of the module
  body and, recursively, of class bodies; a cut at each definition's first line (its first
  decorator, or the comment lines right above it), symbol = the qualified name
  (``Class.method``), and a cut after its last line (code between definitions has no symbol).
  Functions nested in functions stay inside their parent.
* **java, javascript, go, php, ruby** (and python that does not parse), ``code_other="defs"``
  (:func:`pattern_cuts`): per-language patterns for definition lines; a cut at each (moved up
  over the comment/annotation lines above it), symbol = the name, qualified by the enclosing
  class/receiver where the pattern sees it; only definitions indented at most one level deeper
  than the file's least indented function count.
* no definition found, a language without patterns, or ``code_other="windows"``: windows of
  ``code_window_lines`` lines every ``code_window_stride`` lines.

Segments of only blank lines are dropped; one longer than ``code_max_lines`` is split into equal
parts (the symbol stays on the part holding the definition line). Every non-blank line is in
some atom. Text: with ``code_path_header`` a first line with the upstream path, then the lines.
Touches: reads the item's file under the corpus root.
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from pathlib import Path

from ..contract.protocol import Atom
from ..contract.schema import SourceItem
from .common import dedupe, item_file, make_atom
from .config import ChunkConfig
from .windows import spans

# (line, symbol or None, definition line or None)
Cut = tuple[int, "str | None", "int | None"]

_COMMENT_LEAD = ("//", "/*", "*", "#", "@")


def read_lines(path: Path) -> list[str]:
    """The file's lines as ``meta.lines`` counts them (``\\n``-separated; a final newline does
    not start a line); carriage returns are kept."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def _lead_ok(line: str) -> bool:
    t = line.strip()
    return bool(t) and t.startswith(_COMMENT_LEAD)


def _move_up(lines: list[str], start: int, floor: int) -> int:
    s = start
    while s - 1 > floor and _lead_ok(lines[s - 2]):
        s -= 1
    return s


# ----------------------------------------------------------------------------- python (ast)


def python_cuts(lines: list[str]) -> list[Cut] | None:
    src = "\n".join(lines)
    if "\r" in src.replace("\r\n", ""):
        return None  # a lone CR is a line break to the parser but not to meta.lines
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(src)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    cuts: list[Cut] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                start = _move_up(lines, first, 0)
                name = prefix + node.name
                cuts.append((start, name, node.lineno))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, name + ".")
                end = getattr(node, "end_lineno", None) or node.lineno
                cuts.append((end + 1, None, None))

    visit(tree.body, "")
    return cuts


# ----------------------------------------------------------------------------- patterns

_MODS_JAVA = r"(?:(?:public|protected|private|static|final|abstract|synchronized|native|default|strictfp)\s+)"
_NOT_TYPES = {
    "return",
    "new",
    "else",
    "throw",
    "throws",
    "case",
    "if",
    "for",
    "while",
    "switch",
    "catch",
    "do",
    "try",
    "assert",
    "yield",
    "await",
    "import",
    "package",
    "goto",
    "instanceof",
    "super",
    "this",
    "function",
    "typeof",
    "delete",
    "elseif",
    "echo",
    "print",
    "require",
    "include",
}

# language -> (function patterns, type patterns); group "name" is the symbol, optional group
# "recv" qualifies it.
_PATTERNS: dict[str, tuple[list[re.Pattern], list[re.Pattern]]] = {
    "go": (
        [
            re.compile(
                r"^func\s*(?:\(\s*(?:\w+\s+)?\*?\s*(?P<recv>\w+)(?:\[[^\]]*\])?\s*\)\s*)?"
                r"(?P<name>\w+)\s*[\[(]"
            )
        ],
        [re.compile(r"^type\s+(?P<name>\w+)(?:\[[^\]]*\])?\s+(?:struct|interface)\b")],
    ),
    "java": (
        [
            re.compile(
                r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*" + _MODS_JAVA + r"*(?:<[^>]*>\s+)?"
                r"(?P<type>[\w$][\w$<>\[\],.?]*(?:\s*<[^()]*>)?(?:\[\])*)\s+(?P<name>[\w$]+)\s*\("
                r"(?!.*;\s*$)"
            ),
            re.compile(r"^\s*(?:public|protected|private)\s+(?P<name>[A-Z][\w$]*)\s*\((?!.*;\s*$)"),
        ],
        [
            re.compile(
                r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*"
                r"(?:(?:public|protected|private|static|final|abstract|sealed|strictfp)\s+)*"
                r"(?:class|interface|enum|record|@interface)\s+(?P<name>[\w$]+)"
            )
        ],
    ),
    "javascript": (
        [
            re.compile(
                r"^\s*(?:export\s+(?:default\s+)?)?(?:async\s+)?function\s*\*?\s*"
                r"(?P<name>[\w$]+)\s*\("
            ),
            re.compile(
                r"^\s*(?:export\s+)?(?:const|let|var)\s+(?P<name>[\w$]+)\s*=\s*(?:async\s+)?"
                r"(?:function\b|\([^)]*\)\s*=>|[\w$]+\s*=>)"
            ),
            re.compile(r"^\s*(?P<name>(?:[\w$]+\.)*[\w$]+)\s*=\s*(?:async\s+)?function\b"),
            re.compile(r"^\s*,?\s*(?P<name>[\w$]+)\s*:\s*(?:async\s+)?function\b"),
            re.compile(
                r"^\s*(?:static\s+)?(?:async\s+)?(?:[gs]et\s+)?\*?(?P<name>[\w$]+)\s*"
                r"\([^)]*\)\s*\{\s*$"
            ),
        ],
        [re.compile(r"^\s*(?:export\s+(?:default\s+)?)?class\s+(?P<name>[\w$]+)")],
    ),
    "php": (
        [
            re.compile(
                r"^\s*(?:(?:public|protected|private|static|final|abstract)\s+)*function\s+&?\s*"
                r"(?P<name>\w+)\s*\("
            )
        ],
        [
            re.compile(
                r"^\s*(?:(?:abstract|final|readonly)\s+)*(?:class|interface|trait|enum)\s+"
                r"(?P<name>\w+)"
            )
        ],
    ),
    "ruby": (
        [re.compile(r"^\s*def\s+(?P<name>(?:self\.)?[\w.]+[?!=]?)")],
        [re.compile(r"^\s*(?:class|module)\s+(?P<name>[A-Z][\w:]*)")],
    ),
    "python": (
        [re.compile(r"^\s*(?:async\s+)?def\s+(?P<name>\w+)\s*\(")],
        [re.compile(r"^\s*class\s+(?P<name>\w+)")],
    ),
}


def _indent(line: str) -> int:
    n = 0
    for ch in line:
        if ch == " ":
            n += 1
        elif ch == "\t":
            n += 4
        else:
            break
    return n


def _indent_unit(lines: list[str]) -> int:
    """One indentation level: the smallest positive indent of a code line (comment lines such
    as `` * text`` inside a doc comment do not count), between 2 and 8 columns."""
    pos = [_indent(ln) for ln in lines if ln.strip() and not _lead_ok(ln) and _indent(ln) > 0]
    return max(2, min(min(pos), 8)) if pos else 4


def pattern_cuts(lines: list[str], language: str) -> list[Cut] | None:
    """Cuts at definition lines found by the language's patterns; None when the language has
    none."""
    pats = _PATTERNS.get(language)
    if pats is None:
        return None
    fn_pats, type_pats = pats
    found: list[tuple[int, str, str, int]] = []  # (line, kind, symbol, indent)
    for i, ln in enumerate(lines, 1):
        if not ln.strip() or len(ln) > 400:
            continue
        for p in type_pats:
            m = p.match(ln)
            if m:
                found.append((i, "type", m.group("name"), _indent(ln)))
                break
        else:
            for p in fn_pats:
                m = p.match(ln)
                if not m:
                    continue
                name = m.group("name")
                typ = m.groupdict().get("type")
                if name in _NOT_TYPES or (typ and typ in _NOT_TYPES):
                    continue
                recv = m.groupdict().get("recv")
                found.append((i, "fn", f"{recv}.{name}" if recv else name, _indent(ln)))
                break
    fns = [f for f in found if f[1] == "fn"]
    if not found:
        return []
    top = min(f[3] for f in fns) if fns else min(f[3] for f in found)
    max_fn = top + _indent_unit(lines)
    cuts: list[Cut] = []
    stack: list[tuple[int, str]] = []  # enclosing types: (indent, name)
    floor = 0
    for line, kind, sym, ind in found:
        while stack and stack[-1][0] >= ind:
            stack.pop()
        if kind == "type":
            if ind <= top:
                qual = stack[-1][1] + "." + sym if stack else sym
                stack.append((ind, qual))
                start = _move_up(lines, line, floor)
                cuts.append((start, qual, line))
                floor = line
            continue
        if ind > max_fn:
            continue
        if stack and "." not in sym:
            sym = stack[-1][1] + "." + sym
        start = _move_up(lines, line, floor)
        cuts.append((start, sym, line))
        floor = line
    return cuts


# ----------------------------------------------------------------------------- segments


def segments(n: int, cuts: list[Cut]) -> list[tuple[int, int, str | None, int | None]]:
    """Partition lines 1..n at the cuts: ``(start, end, symbol, definition line)``. At one
    line a cut with a symbol wins over one without."""
    at: dict[int, tuple[str | None, int | None]] = {1: (None, None)}
    for line, sym, def_line in cuts:
        if not 1 <= line <= n:
            continue
        if sym is not None or line not in at:
            if line in at and at[line][0] is not None and sym is not None:
                continue  # keep the first symbol cut at this line (outermost)
            at[line] = (sym, def_line)
    starts = sorted(at)
    out = []
    for k, s in enumerate(starts):
        e = starts[k + 1] - 1 if k + 1 < len(starts) else n
        sym, dl = at[s]
        if sym is not None and not (dl is not None and s <= dl <= e):
            sym, dl = None, None
        out.append((s, e, sym, dl))
    return out


def _split(s: int, e: int, max_lines: int) -> list[tuple[int, int]]:
    n = e - s + 1
    if n <= max_lines:
        return [(s, e)]
    parts = math.ceil(n / max_lines)
    size = math.ceil(n / parts)
    return [(a, min(e, a + size - 1)) for a in range(s, e + 1, size)]


def code_ranges(
    lines: list[str], language: str, config: ChunkConfig
) -> list[tuple[int, int, str | None]]:
    """The atoms' line ranges ``(line_start, line_end, symbol or None)`` for one file."""
    n = len(lines)
    cuts: list[Cut] | None = None
    if language == "python" and config.code_python_ast:
        cuts = python_cuts(lines)
    if cuts is None and config.code_other == "defs":
        cuts = pattern_cuts(lines, language)
    out: list[tuple[int, int, str | None]] = []
    if not cuts:
        for s, e in spans(n, config.code_window_lines, config.code_window_stride, start=1):
            if any(lines[i - 1].strip() for i in range(s, e)):
                out.append((s, e - 1, None))
        return out
    for s, e, sym, dl in segments(n, cuts):
        if not any(lines[i - 1].strip() for i in range(s, e + 1)):
            continue
        for a, b in _split(s, e, config.code_max_lines):
            out.append((a, b, sym if (sym and dl is not None and a <= dl <= b) else None))
    return out


def chunk_code(item: SourceItem, corpus_root: Path, config: ChunkConfig) -> list[Atom]:
    lines = read_lines(item_file(item, corpus_root))
    path = item.meta.get("upstream_path") or item.path
    language = str(item.meta.get("language") or "").lower()
    atoms = []
    for a, b, sym in code_ranges(lines, language, config):
        extent = {"path": path, "line_start": a, "line_end": b}
        if sym:
            extent["symbol"] = sym
        body = "\n".join(ln.rstrip("\r") for ln in lines[a - 1 : b])
        text = f"{path}\n{body}" if config.code_path_header else body
        atoms.append(make_atom(item, extent, text))
    return dedupe(atoms)
