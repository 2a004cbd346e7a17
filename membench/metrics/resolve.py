"""Resolution: when does an atom *hit* a gold region (SPEC section 7, first paragraph).

Gold region ``g`` is hit by atom ``a`` iff ``a.source_id == g.source_id`` and their extents
overlap. Gold region shapes are ``schema.check_region``'s; atom extents are the run contract's:

=============== =========================================== ====================================
modality        atom extent                                 gold region -> hit when
=============== =========================================== ====================================
pdf             ``{"page"[, "block"]}``                     same page; if *both* carry a block,
                                                            the blocks are equal (a page-level
                                                            gold is hit by any block of its
                                                            page, a block-level gold by a
                                                            page-level atom of its page)
image           ``{}``                                      always (same source item)
ui_screenshot   ``{"bbox": [x0, y0, x1, y1]}``              intersection *area* > 0: boxes that
                                                            only touch along an edge or a corner
                                                            are not hits
video           ``{"t_start", "t_end"}`` (seconds)          closed intervals intersect: spans
                                                            that touch at one instant are hits
code            ``{"path", "line_start", "line_end"         paths equal, and either the gold
                [, "symbol"]}``                             ``line`` lies in
                                                            ``[line_start, line_end]`` or the
                                                            gold ``symbol`` equals the atom's
                                                            declared symbol. A symbol gold is
                                                            *not* hit by an atom that declares no
                                                            symbol (the benchmark does not parse
                                                            code to find the symbol's span)
conversation    ``{"turn_start", "turn_end"}``              gold ``turn`` in
                                                            ``[turn_start, turn_end]``
=============== =========================================== ====================================

:func:`region_hit` is the readable one-pair definition; :class:`AtomTable` holds every atom's
extent in numpy columns and answers the same question for many atoms at once
(:meth:`AtomTable.hit_mask`). Tests check that the two agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..sets.schema import _is_int, _is_num

_EXTENT_KEYS: dict[str, tuple[frozenset[str], ...]] = {
    "pdf": (frozenset({"page"}), frozenset({"page", "block"})),
    "image": (frozenset(),),
    "ui_screenshot": (frozenset({"bbox"}),),
    "video": (frozenset({"t_start", "t_end"}),),
    "code": (frozenset({"path", "line_start", "line_end"}),
             frozenset({"path", "line_start", "line_end", "symbol"})),
    "conversation": (frozenset({"turn_start", "turn_end"}),),
}


def check_extent(modality: str, extent: Any) -> str | None:
    """``None`` when ``extent`` has the atom shape of the run contract for ``modality``,
    otherwise a one-line reason. (Caps on the extent's size are the runner's business,
    ``membench.run.systems.base.EXTENT_CAPS``; resolution only needs a well-formed shape.)"""
    if modality not in _EXTENT_KEYS:
        return f"unknown modality {modality!r}"
    if not isinstance(extent, dict):
        return f"extent must be an object, got {type(extent).__name__}"
    keys = frozenset(extent)
    if keys not in _EXTENT_KEYS[modality]:
        want = " or ".join("{" + ", ".join(sorted(s)) + "}" for s in _EXTENT_KEYS[modality])
        return f"{modality} extent must have keys {want}, got {{{', '.join(sorted(keys))}}}"
    e = extent
    if modality == "pdf":
        if not _is_int(e["page"]) or e["page"] < 1:
            return "page must be an integer >= 1 (pages are 1-based)"
        if "block" in e and (not _is_int(e["block"]) or e["block"] < 0):
            return "block must be an integer >= 0"
    elif modality == "ui_screenshot":
        b = e["bbox"]
        if not (isinstance(b, list) and len(b) == 4 and all(_is_num(x) for x in b)):
            return "bbox must be [x0, y0, x1, y1] numbers"
        if not (0 <= b[0] < b[2] and 0 <= b[1] < b[3]):
            return f"bbox {b} must satisfy 0 <= x0 < x1 and 0 <= y0 < y1"
    elif modality == "video":
        if not (_is_num(e["t_start"]) and _is_num(e["t_end"])):
            return "t_start and t_end must be numbers (seconds)"
        if not 0 <= e["t_start"] <= e["t_end"]:
            return f"need 0 <= t_start <= t_end, got {e['t_start']}..{e['t_end']}"
    elif modality == "code":
        if not isinstance(e["path"], str) or not e["path"]:
            return "path must be a non-empty string"
        if not (_is_int(e["line_start"]) and _is_int(e["line_end"])):
            return "line_start and line_end must be integers"
        if not 1 <= e["line_start"] <= e["line_end"]:
            return f"need 1 <= line_start <= line_end, got {e['line_start']}..{e['line_end']}"
        if "symbol" in e and (not isinstance(e["symbol"], str) or not e["symbol"]):
            return "symbol must be a non-empty string"
    elif modality == "conversation":
        if not (_is_int(e["turn_start"]) and _is_int(e["turn_end"])):
            return "turn_start and turn_end must be integers"
        if not 1 <= e["turn_start"] <= e["turn_end"]:
            return f"need 1 <= turn_start <= turn_end, got {e['turn_start']}..{e['turn_end']}"
    return None


def region_hit(modality: str, extent: dict[str, Any], region: dict[str, Any]) -> bool:
    """Does an atom with ``extent`` overlap gold ``region`` (both of ``modality``, both of
    the same source item)? The one-pair definition; see the module table."""
    if modality == "pdf":
        if extent["page"] != region["page"]:
            return False
        return not ("block" in extent and "block" in region) or extent["block"] == region["block"]
    if modality == "image":
        return True
    if modality == "ui_screenshot":
        a, g = extent["bbox"], region["bbox"]
        w = min(a[2], g[2]) - max(a[0], g[0])
        h = min(a[3], g[3]) - max(a[1], g[1])
        return w > 0 and h > 0          # area > 0; checking w * h > 0 would accept w, h < 0
    if modality == "video":
        return max(extent["t_start"], region["t_start"]) <= min(extent["t_end"], region["t_end"])
    if modality == "code":
        if extent["path"] != region["path"]:
            return False
        if "line" in region:
            return extent["line_start"] <= region["line"] <= extent["line_end"]
        return "symbol" in extent and extent["symbol"] == region["symbol"]
    if modality == "conversation":
        return extent["turn_start"] <= region["turn"] <= extent["turn_end"]
    raise ValueError(f"unknown modality {modality!r}")


@dataclass(frozen=True)
class GoldRef:
    """One gold region ready for resolution: its source item's index in the atom table's
    source numbering, the record's modality and the region."""

    source: int
    modality: str
    region: dict[str, Any]


class AtomTable:
    """Every atom of a run as numpy columns, so that one gold region can be tested against
    all candidate atoms at once.

    Columns: ``source`` (index into ``source_ids``), ``holder`` (index into ``holders``),
    ``observed_us`` (microseconds since the epoch, from the atom's *source item*), and the
    extent columns of each modality (``-1`` / NaN where an atom has no such field).
    """

    def __init__(self, atom_ids: Sequence[str], source: Sequence[int], holder: Sequence[int],
                 observed_us: Sequence[int], modality: Sequence[str],
                 extents: Sequence[dict[str, Any]], n_sources: int):
        n = len(atom_ids)
        self.atom_ids = list(atom_ids)
        self.index: dict[str, int] = {a: i for i, a in enumerate(self.atom_ids)}
        self.source = np.asarray(source, dtype=np.int64).reshape(n)
        self.holder = np.asarray(holder, dtype=np.int64).reshape(n)
        self.observed_us = np.asarray(observed_us, dtype=np.int64).reshape(n)
        self.modality = list(modality)
        self.n_sources = n_sources
        i64 = lambda: np.full(n, -1, dtype=np.int64)
        f64 = lambda: np.full(n, np.nan, dtype=np.float64)
        self.page, self.block = i64(), i64()
        self.x0, self.y0, self.x1, self.y1 = f64(), f64(), f64(), f64()
        self.t0, self.t1 = f64(), f64()
        self.path, self.line0, self.line1, self.symbol = i64(), i64(), i64(), i64()
        self.turn0, self.turn1 = i64(), i64()
        self.paths: dict[str, int] = {}
        self.symbols: dict[str, int] = {}
        for i, (m, e) in enumerate(zip(self.modality, extents)):
            if m == "pdf":
                self.page[i] = e["page"]
                self.block[i] = e.get("block", -1)
            elif m == "ui_screenshot":
                self.x0[i], self.y0[i], self.x1[i], self.y1[i] = e["bbox"]
            elif m == "video":
                self.t0[i], self.t1[i] = e["t_start"], e["t_end"]
            elif m == "code":
                self.path[i] = self.paths.setdefault(e["path"], len(self.paths))
                self.line0[i], self.line1[i] = e["line_start"], e["line_end"]
                if "symbol" in e:
                    self.symbol[i] = self.symbols.setdefault(e["symbol"], len(self.symbols))
            elif m == "conversation":
                self.turn0[i], self.turn1[i] = e["turn_start"], e["turn_end"]

    def __len__(self) -> int:
        return len(self.atom_ids)

    def hit_mask(self, gold: GoldRef, idx: np.ndarray) -> np.ndarray:
        """Boolean mask over atom indices ``idx``: which of them hit ``gold``
        (same source and overlapping extent, :func:`region_hit` vectorised)."""
        same = self.source[idx] == gold.source
        r, m = gold.region, gold.modality
        if m == "pdf":
            ok = self.page[idx] == r["page"]
            if "block" in r:
                b = self.block[idx]
                ok &= (b < 0) | (b == r["block"])
        elif m == "image":
            ok = np.ones(len(idx), dtype=bool)
        elif m == "ui_screenshot":
            gx0, gy0, gx1, gy1 = r["bbox"]
            with np.errstate(invalid="ignore"):
                ok = ((np.minimum(self.x1[idx], gx1) - np.maximum(self.x0[idx], gx0)) > 0) & \
                     ((np.minimum(self.y1[idx], gy1) - np.maximum(self.y0[idx], gy0)) > 0)
        elif m == "video":
            with np.errstate(invalid="ignore"):
                ok = np.maximum(self.t0[idx], r["t_start"]) <= np.minimum(self.t1[idx], r["t_end"])
        elif m == "code":
            pid = self.paths.get(r["path"], -2)
            ok = self.path[idx] == pid
            if "line" in r:
                ok &= (self.line0[idx] <= r["line"]) & (r["line"] <= self.line1[idx])
            else:
                ok &= self.symbol[idx] == self.symbols.get(r["symbol"], -2)
        elif m == "conversation":
            ok = (self.turn0[idx] <= r["turn"]) & (r["turn"] <= self.turn1[idx])
        else:
            raise ValueError(f"unknown modality {m!r}")
        return same & ok

    def first_positions(self, gold: Sequence[GoldRef], idx: np.ndarray) -> np.ndarray:
        """For each gold region, the position (0-based) in ``idx`` of the first atom that hits
        it, or -1. ``idx`` is a ranked, de-duplicated list of atom indices (or an unranked
        set, when only ``>= 0`` matters)."""
        out = np.full(len(gold), -1, dtype=np.int64)
        if len(idx) == 0 or len(gold) == 0:
            return out
        src = self.source[idx]
        cand_by_source: dict[int, np.ndarray] = {}
        for j, g in enumerate(gold):
            cand = cand_by_source.get(g.source)
            if cand is None:
                cand = cand_by_source[g.source] = np.flatnonzero(src == g.source)
            if len(cand):
                hit = cand[self.hit_mask(g, idx[cand])]
                if len(hit):
                    out[j] = hit[0]
        return out

