"""The run files, read with located errors: ``atoms.jsonl`` and ``run.jsonl`` (the run contract,
``docs/runs.md``). The runner and import-run write them; metrics, calibrate and the browser
read them through here (via :class:`membench.metrics.rundir.RunDir`).

``atoms.jsonl``: one atom per line ``{atom_id, source_id, modality, holder, observed_at,
extent}`` (plus an optional ``text``, what the system indexed, which is kept by the runner for
the failure browser and ignored here). ``run.jsonl``: one line per query ``{query_id, hits:
[[atom_id, score], ...], cartridge: [atom_id, ...], latency_ms}``, hits in the order the system
gave them, at most :data:`MAX_DEPTH`.

Every problem is an :class:`~membench.core.errors.InputError` naming the file and line. An atom's
holder and observed_at must agree with its source item's (``items.jsonl`` is the truth:
metrics use the item's values), see :func:`membench.metrics.resolve.build_atom_table`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.jsonl import iter_json_lines
from ..modalities import MODALITIES, check_extent
from .protocol import MAX_DEPTH, Atom

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = timedelta(microseconds=1)

_ATOM_KEYS = {"atom_id", "source_id", "modality", "holder", "observed_at", "extent"}
_ATOM_OPTIONAL = {"text"}
_RUN_KEYS = {"query_id", "hits", "cartridge", "latency_ms"}


@lru_cache(maxsize=1 << 16)
def to_us(dt: datetime) -> int:
    """Microseconds since the Unix epoch (exact, timezone-aware)."""
    return (dt - EPOCH) // _US


@dataclass(frozen=True)
class AtomRow(Atom):
    """An atom as read from an atoms file: the protocol's :class:`Atom` and where it was read
    (for located errors)."""

    file: str = "<atoms>"
    line: int | None = None


@dataclass
class RunRow:
    """One run line: hit atom ids and their scores in the order the system gave them."""

    query_id: str
    hit_ids: list[str]
    scores: np.ndarray          # float64, aligned with hit_ids
    cartridge: list[str]
    latency_ms: float
    file: str = "<run>"
    line: int | None = None

    @property
    def hits(self) -> list[tuple[str, float]]:
        return list(zip(self.hit_ids, self.scores.tolist()))


def _nonempty_str(v: Any) -> bool:
    return isinstance(v, str) and v != ""


@lru_cache(maxsize=1 << 16)
def _parse_timestamp(v: str) -> datetime | None:
    try:
        dt = datetime.fromisoformat(v)
    except ValueError:
        return None
    return dt if dt.tzinfo is not None and dt.utcoffset() is not None else None


def _timestamp(v: Any) -> datetime | None:
    if isinstance(v, datetime):
        return v if v.tzinfo is not None and v.utcoffset() is not None else None
    return _parse_timestamp(v) if isinstance(v, str) else None


def parse_atom(obj: Mapping[str, Any], file: str = "<atoms>", line: int | None = None) -> AtomRow:
    """One atom line, shape-checked (not yet checked against the items)."""
    keys = set(obj)
    if not _ATOM_KEYS <= keys:
        raise InputError(file, line, None, f"missing field(s) {sorted(_ATOM_KEYS - keys)}",
                         rule="ATOM_SCHEMA")
    if keys - _ATOM_KEYS - _ATOM_OPTIONAL:
        extra = sorted(keys - _ATOM_KEYS - _ATOM_OPTIONAL)
        raise InputError(file, line, None, f"unknown field(s) {extra}", rule="ATOM_SCHEMA")
    for k in ("atom_id", "source_id", "holder"):
        if not _nonempty_str(obj[k]):
            raise InputError(file, line, k, "must be a non-empty string", rule="ATOM_SCHEMA")
    m = obj["modality"]
    if m not in MODALITIES:
        raise InputError(file, line, "modality", f"unknown modality {m!r}", rule="ATOM_SCHEMA")
    ts = _timestamp(obj["observed_at"])
    if ts is None:
        raise InputError(file, line, "observed_at", "must be an ISO 8601 timestamp with a "
                         f"timezone, got {obj['observed_at']!r}", rule="ATOM_SCHEMA")
    why = check_extent(m, obj["extent"])
    if why:
        raise InputError(file, line, "extent", why, rule="ATOM_EXTENT")
    return AtomRow(obj["atom_id"], obj["source_id"], m, obj["holder"], ts, dict(obj["extent"]),
                   str(obj.get("text") or ""), file=str(file), line=line)


def read_atoms(path: str | Path) -> list[AtomRow]:
    return [parse_atom(obj, str(path), no) for no, obj in iter_json_lines(path)]


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def parse_run_row(obj: Mapping[str, Any], file: str = "<run>", line: int | None = None) -> RunRow:
    """One run line, shape-checked (atom ids are checked against the atoms later)."""
    keys = set(obj)
    if not _RUN_KEYS <= keys:
        raise InputError(file, line, None, f"missing field(s) {sorted(_RUN_KEYS - keys)}",
                         rule="RUN_SCHEMA")
    if keys - _RUN_KEYS:
        raise InputError(file, line, None, f"unknown field(s) {sorted(keys - _RUN_KEYS)}",
                         rule="RUN_SCHEMA")
    qid = obj["query_id"]
    if not _nonempty_str(qid):
        raise InputError(file, line, "query_id", "must be a non-empty string", rule="RUN_SCHEMA")
    hits = obj["hits"]
    if not isinstance(hits, list):
        raise InputError(file, line, "hits", "must be a list of [atom_id, score]",
                         rule="RUN_SCHEMA")
    if len(hits) > MAX_DEPTH:
        raise InputError(file, line, "hits", f"{len(hits)} hits; the depth cap is {MAX_DEPTH}",
                         rule="RUN_DEPTH")
    parsed = _bulk_hits(hits)
    if parsed is None:                     # something is off: find and name the first culprit
        for j, h in enumerate(hits):
            if not (isinstance(h, (list, tuple)) and len(h) == 2 and _nonempty_str(h[0])
                    and _number(h[1])):
                raise InputError(file, line, f"hits[{j}]",
                                 f"must be [atom_id, finite score], got {h!r}"[:160],
                                 rule="RUN_SCHEMA")
        raise AssertionError("unreachable: bulk check and per-hit check disagree")
    cart = obj["cartridge"]
    if not (isinstance(cart, list) and all(_nonempty_str(a) for a in cart)):
        raise InputError(file, line, "cartridge", "must be a list of atom ids", rule="RUN_SCHEMA")
    lat = obj["latency_ms"]
    if lat is None:  # not measured (an imported run): left out of the latency figures
        lat = float("nan")
    elif not _number(lat) or lat < 0:
        raise InputError(file, line, "latency_ms", f"must be a number >= 0 or null, got {lat!r}",
                         rule="RUN_SCHEMA")
    return RunRow(qid, parsed[0], parsed[1], list(cart), float(lat), str(file), line)


def _bulk_hits(hits: list) -> tuple[list[str], np.ndarray] | None:
    """``[[atom_id, score], ...]`` -> (ids, float64 scores) with the checks done in bulk
    (``map``/``set`` run in C); ``None`` when any hit is malformed."""
    if not hits:
        return [], np.zeros(0, dtype=np.float64)
    if not set(map(type, hits)) <= {list, tuple} or set(map(len, hits)) != {2}:
        return None
    ids = [h[0] for h in hits]
    raw = [h[1] for h in hits]
    if set(map(type, ids)) != {str} or "" in ids or not set(map(type, raw)) <= {int, float}:
        return None                        # (bool is its own type: rejected)
    try:
        scores = np.array(raw, dtype=np.float64)
    except OverflowError:
        return None
    return (ids, scores) if bool(np.isfinite(scores).all()) else None


def read_run(path: str | Path) -> list[RunRow]:
    return [parse_run_row(obj, str(path), no) for no, obj in iter_json_lines(path)]


def trec_fields(path: str | Path, layout: str) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` per line of a whitespace-separated TREC file whose lines have
    the fields named in ``layout`` (e.g. ``"qid Q0 docid rank score tag"``); a missing file or
    a line with another field count is an :class:`InputError` naming it."""
    path = Path(path)
    n = len(layout.split())
    if not path.exists():
        raise InputError(path, None, None, "file not found", rule="MISSING_FILE")
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != n:
                raise InputError(path, no, None, f"expected {n} fields ({layout}), got "
                                 f"{len(parts)}", rule="TREC")
            yield no, parts
