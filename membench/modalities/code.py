"""code: source files; regions are a function (symbol) or a line.

* region: ``{"path": str, "symbol": str}`` or ``{"path": str, "line": int}`` (lines 1-based)
* atom extent: ``{"path", "line_start", "line_end"[, "symbol"]}``; cap: 200 lines
* hit: paths equal, and either the gold ``line`` lies in ``[line_start, line_end]`` or the gold
  ``symbol`` equals the atom's declared symbol. A symbol gold is *not* hit by an atom that
  declares no symbol (the benchmark does not parse code to find the symbol's span)
* bounds: line <= the item's ``meta.lines``; path equals ``meta.upstream_path``
* shown as: the lines, with the gold line or the atom's range highlighted
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .base import Modality, RenderContext, RenderUnavailable, esc, is_int, item_file, missing_html

#: the structural atoms' window (lines)
STRUCTURAL_WINDOW = 40
#: lines shown around a gold line; dimmed lines around an atom's range
CONTEXT = 5
ATOM_CONTEXT = 2
#: lines of a function's start that identify it (near-duplicate evidence, membench.sets.neardup)
REGION_TEXT_LINES = 5


@dataclass
class _Cols:
    path: np.ndarray  # index into paths
    line0: np.ndarray
    line1: np.ndarray
    symbol: np.ndarray  # index into symbols, -1: none
    paths: dict[str, int] = field(default_factory=dict)
    symbols: dict[str, int] = field(default_factory=dict)


class Code(Modality):
    name = "code"
    words_from = "code"
    region_shapes = (frozenset({"path", "symbol"}), frozenset({"path", "line"}))
    extent_shapes = (
        frozenset({"path", "line_start", "line_end"}),
        frozenset({"path", "line_start", "line_end", "symbol"}),
    )
    cap = {"lines": 200}
    meta_types = {"lines": "count", "upstream_path": "text"}
    region_doc = '{"path", "symbol"} or {"path", "line"} (lines 1-based)'
    extent_doc = '{"path", "line_start", "line_end"[, "symbol"]}'
    hit_doc = (
        "same path and (gold line in [line_start, line_end] or gold symbol == the atom's "
        "declared symbol; a symbol gold is not hit by an atom without symbol)"
    )

    def region_values(self, region: dict) -> str | None:
        if not isinstance(region["path"], str) or not region["path"]:
            return "path must be a non-empty string"
        if "line" in region and (not is_int(region["line"]) or region["line"] < 1):
            return "line must be a 64-bit integer >= 1 (lines are 1-based)"
        if "symbol" in region and (not isinstance(region["symbol"], str) or not region["symbol"]):
            return "symbol must be a non-empty string"
        return None

    def extent_values(self, e: dict) -> str | None:
        if not isinstance(e["path"], str) or not e["path"]:
            return "path must be a non-empty string"
        if not (is_int(e["line_start"]) and is_int(e["line_end"])):
            return "line_start and line_end must be 64-bit integers"
        if not 1 <= e["line_start"] <= e["line_end"]:
            return f"need 1 <= line_start <= line_end, got {e['line_start']}..{e['line_end']}"
        if "symbol" in e and (not isinstance(e["symbol"], str) or not e["symbol"]):
            return "symbol must be a non-empty string"
        return None

    def region_bounds(self, region: dict, meta: dict) -> str | None:
        if "line" in region and "lines" in meta and region["line"] > meta["lines"]:
            return f"line {region['line']} > {meta['lines']} lines"
        if "path" in region and "upstream_path" in meta and region["path"] != meta["upstream_path"]:
            return f"path {region['path']!r} is not the item's path {meta['upstream_path']!r}"
        return None

    def extent_limits(self, e: dict, meta: dict) -> str | None:
        n = e["line_end"] - e["line_start"] + 1
        if n > self.cap["lines"]:
            return f"{n} lines; cap is {self.cap['lines']:.0f}"
        if "upstream_path" in meta and e["path"] != meta["upstream_path"]:
            return f"path {e['path']!r} is not the item's path {meta['upstream_path']!r}"
        return None

    def hit(self, extent: dict, region: dict) -> bool:
        if extent["path"] != region["path"]:
            return False
        if "line" in region:
            return extent["line_start"] <= region["line"] <= extent["line_end"]
        return "symbol" in extent and extent["symbol"] == region["symbol"]

    def columns(self, extents: Sequence[dict]) -> _Cols:
        paths: dict[str, int] = {}
        symbols: dict[str, int] = {}
        return _Cols(
            np.array([paths.setdefault(e["path"], len(paths)) for e in extents], dtype=np.int64),
            np.array([e["line_start"] for e in extents], dtype=np.int64),
            np.array([e["line_end"] for e in extents], dtype=np.int64),
            np.array(
                [
                    symbols.setdefault(e["symbol"], len(symbols)) if "symbol" in e else -1
                    for e in extents
                ],
                dtype=np.int64,
            ),
            paths,
            symbols,
        )

    def hit_mask(self, cols: _Cols, rows: np.ndarray, region: dict) -> np.ndarray:
        ok = cols.path[rows] == cols.paths.get(region["path"], -2)
        if "line" in region:
            ok &= (cols.line0[rows] <= region["line"]) & (region["line"] <= cols.line1[rows])
        else:
            ok &= cols.symbol[rows] == cols.symbols.get(region["symbol"], -2)
        return ok

    def region_text(self, region: dict, text: str, meta: dict) -> str | None:
        """The first :data:`REGION_TEXT_LINES` lines from a line gold (a function's
        signature and start); ``None`` for a symbol gold."""
        if "line" not in region:
            return None
        start = region["line"] - 1
        return "\n".join(text.split("\n")[start : start + REGION_TEXT_LINES])

    def passages(self, text: str, meta: dict) -> list[str]:
        """Windows of :data:`STRUCTURAL_WINDOW` lines (a function fits in one, or two)."""
        lines = text.split("\n")
        return [
            "\n".join(lines[s : s + STRUCTURAL_WINDOW])
            for s in range(0, max(len(lines), 1), STRUCTURAL_WINDOW)
        ]

    def structural_extents(self, item) -> list[dict]:
        lines = int(item.meta.get("lines", 1))
        path = item.meta.get("upstream_path", item.source_id)
        return [
            {"path": path, "line_start": s, "line_end": min(lines, s + STRUCTURAL_WINDOW - 1)}
            for s in range(1, lines + 1, STRUCTURAL_WINDOW)
        ]

    def gold_extents(self, region: dict) -> list[dict]:
        if "line" in region:
            return [
                {"path": region["path"], "line_start": region["line"], "line_end": region["line"]}
            ]
        return []  # a symbol gold: covering it would mean parsing the code

    def render_html(self, item: dict, extent: dict, ctx: RenderContext) -> str:
        path = item_file(item, ctx.corpus_root)
        if not path.is_file():
            raise RenderUnavailable(f"{path} not found")
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        marked = {int(m["line"]) for m in (*ctx.gold, *ctx.original) if "line" in m}
        if "line_start" in extent:  # an atom: its lines, with a little dimmed context
            a, b = int(extent["line_start"]), int(extent["line_end"])
            ctx_lines = ATOM_CONTEXT
        elif "line" in extent:  # a gold line: show it in context
            a = b = int(extent["line"])
            ctx_lines = CONTEXT
            marked.add(a)
        else:  # a symbol gold: show where the name first occurs
            sym = str(extent["symbol"])
            occ = [i + 1 for i, line in enumerate(lines) if sym in line][:1]
            if not occ:
                return missing_html(f"symbol {sym!r} not found in {item['path']}")
            a, b, ctx_lines = occ[0], occ[0] + 2 * CONTEXT, CONTEXT
            marked.add(occ[0])
        sym = f" · symbol {extent['symbol']}" if "symbol" in extent else ""
        head = (
            f"<div>{esc(str(extent.get('path', '')))} lines {a}–{min(b, len(lines))} of "
            f"{len(lines)}{esc(sym)} · file {esc(item['path'])}</div>"
        )
        if a > len(lines):
            return head + missing_html(f"line {a} is past the end of the file ({len(lines)} lines)")
        rows = []
        for n in range(max(1, a - ctx_lines), min(len(lines), b + ctx_lines) + 1):
            body = f'<span class="mb-ln" data-line="{n}">{n:>5}</span>  {esc(lines[n - 1])}'
            if n in marked:
                body = f'<span class="mb-hl">{body}</span>'
            elif not a <= n <= b:
                body = f'<span class="mb-ctx">{body}</span>'
            rows.append(body)
        return head + '<div class="mb-code">' + "\n".join(rows) + "</div>"
