"""Resolution: when does an atom *hit* a gold region (SPEC section 7, first paragraph).

Gold region ``g`` is hit by atom ``a`` iff ``a.source_id == g.source_id`` and their extents
overlap. The overlap rule is each modality's (:mod:`membench.modalities`, one module per
modality, with its region and extent shapes); ``region_hit`` and ``check_extent`` below are the
registry's.

:class:`AtomTable` holds every atom of a run in numpy columns (its source, holder and
observation time, and each modality's extent columns) and answers the hit question for many
atoms at once (:meth:`AtomTable.hit_mask`, through :meth:`Modality.hit_mask`). Tests check that
the vectorised and the one-pair definitions agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import modalities
from ..contract.schema import SourceItem
from ..core.errors import InputError
from ..run.files import AtomRow, to_us


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
    ``observed_us`` (microseconds since the epoch, from the atom's *source item*), and per
    modality the extent columns of that modality's atoms (:meth:`Modality.columns`), reached
    through ``local`` (an atom's row among the atoms of its modality).
    """

    def __init__(
        self,
        atom_ids: Sequence[str],
        source: Sequence[int],
        holder: Sequence[int],
        observed_us: Sequence[int],
        modality: Sequence[str],
        extents: Sequence[dict[str, Any]],
        n_sources: int,
    ):
        n = len(atom_ids)
        self.atom_ids = list(atom_ids)
        self.index: dict[str, int] = {a: i for i, a in enumerate(self.atom_ids)}
        self.source = np.asarray(source, dtype=np.int64).reshape(n)
        self.holder = np.asarray(holder, dtype=np.int64).reshape(n)
        self.observed_us = np.asarray(observed_us, dtype=np.int64).reshape(n)
        self.modality = list(modality)
        self.extents = list(extents)
        self.n_sources = n_sources
        self.local = np.zeros(n, dtype=np.int64)
        rows: dict[str, list[int]] = {}
        for i, m in enumerate(self.modality):
            rows.setdefault(m, []).append(i)
        self.cols: dict[str, Any] = {}
        for m, idx in rows.items():
            self.local[idx] = np.arange(len(idx))
            self.cols[m] = modalities.get(m).columns([extents[i] for i in idx])

    def __len__(self) -> int:
        return len(self.atom_ids)

    def of_source(self, source: int) -> np.ndarray:
        """Indices of the atoms of source item ``source`` (computed once for all sources)."""
        if not hasattr(self, "_by_source"):
            order = np.argsort(self.source, kind="stable")
            bounds = np.searchsorted(self.source[order], np.arange(self.n_sources + 1))
            self._by_source = (order, bounds)
        order, bounds = self._by_source
        return order[bounds[source] : bounds[source + 1]]

    def hit_mask(self, gold: GoldRef, idx: np.ndarray) -> np.ndarray:
        """Boolean mask over atom indices ``idx``: which of them hit ``gold`` (same source and
        overlapping extent: the gold modality's :meth:`~membench.modalities.Modality.hit_mask`).
        An atom's modality is its source item's, so the same source means the same modality."""
        same = self.source[idx] == gold.source
        out = np.zeros(len(idx), dtype=bool)
        sel = np.flatnonzero(same)
        if sel.size and gold.modality in self.cols:
            out[sel] = modalities.get(gold.modality).hit_mask(
                self.cols[gold.modality], self.local[idx[sel]], gold.region
            )
        elif gold.modality not in modalities.REGISTRY:
            raise ValueError(f"unknown modality {gold.modality!r}")
        return out

    def hits_any(self, gold: Sequence[GoldRef], idx: np.ndarray) -> np.ndarray:
        """Boolean mask over atom indices ``idx``: which of them hit at least one region of
        ``gold`` (:meth:`hit_mask`, the test every recall measure reads)."""
        out = np.zeros(len(idx), dtype=bool)
        for g in gold:
            out |= self.hit_mask(g, idx)
        return out

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


@dataclass
class Universe:
    """Numbering shared by atoms, gold and scopes: source items and holders."""

    items: dict[str, SourceItem]
    source_index: dict[str, int]
    holder_index: dict[str, int]


def index_items(items: Iterable[SourceItem]) -> Universe:
    by_id: dict[str, SourceItem] = {}
    for it in items:
        if it.source_id in by_id:
            raise InputError(
                "<items>",
                None,
                "source_id",
                f"duplicate source item {it.source_id!r}",
                rule="DUPLICATE_ITEM",
            )
        by_id[it.source_id] = it
    ids = sorted(by_id)
    holders = sorted({it.holder for it in by_id.values()})
    return Universe(by_id, {s: i for i, s in enumerate(ids)}, {h: i for i, h in enumerate(holders)})


def build_atom_table(atoms: Iterable[AtomRow], uni: Universe) -> AtomTable:
    """Check every atom against its source item and tabulate them.

    Errors (file:line): duplicate atom_id; source_id not in items.jsonl; modality differing
    from the item's; declared holder or observed_at (compared as instants) disagreeing with
    the item's; an extent beyond its modality's cap or the item's bounds (ATOM_CAP, re-checked
    here whatever wrote the file: :meth:`membench.modalities.Modality.extent_limits`). The
    table carries the *item's* holder and observed_at.
    """
    ids: list[str] = []
    seen: set[str] = set()
    src: list[int] = []
    hold: list[int] = []
    obs: list[int] = []
    mods: list[str] = []
    exts: list[dict] = []
    for a in atoms:
        if a.atom_id in seen:
            raise InputError(
                a.file, a.line, "atom_id", f"duplicate atom_id {a.atom_id!r}", rule="DUPLICATE_ATOM"
            )
        seen.add(a.atom_id)
        it = uni.items.get(a.source_id)
        if it is None:
            raise InputError(
                a.file,
                a.line,
                "source_id",
                f"{a.source_id!r} is not a source item (items.jsonl)",
                rule="ATOM_SOURCE",
            )
        if a.modality != it.modality:
            raise InputError(
                a.file,
                a.line,
                "modality",
                f"{a.modality!r} but source item {it.source_id} is {it.modality!r}",
                rule="ATOM_SOURCE",
            )
        if a.holder != it.holder:
            raise InputError(
                a.file,
                a.line,
                "holder",
                f"declares {a.holder!r} but source item {it.source_id} belongs to {it.holder!r}",
                rule="ATOM_HOLDER",
            )
        if to_us(a.observed_at) != to_us(it.observed_at):
            raise InputError(
                a.file,
                a.line,
                "observed_at",
                f"declares {a.observed_at.isoformat()} but source item "
                f"{it.source_id} was observed {it.observed_at.isoformat()}",
                rule="ATOM_OBSERVED_AT",
            )
        mod = modalities.get(it.modality)
        why = mod.check_extent(a.extent) or mod.extent_limits(a.extent, it.meta)
        if why:
            raise InputError(
                a.file,
                a.line,
                "extent",
                f"{a.atom_id}: {why} (item {it.source_id})",
                rule="ATOM_CAP",
            )
        ids.append(a.atom_id)
        src.append(uni.source_index[it.source_id])
        hold.append(uni.holder_index[it.holder])
        obs.append(to_us(it.observed_at))
        mods.append(it.modality)
        exts.append(a.extent)
    return AtomTable(ids, src, hold, obs, mods, exts, n_sources=len(uni.source_index))
