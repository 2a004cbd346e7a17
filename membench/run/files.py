"""The run files, read with located errors: ``atoms.jsonl`` and ``run.jsonl`` (the run contract,
``docs/runs.md``). The runner and import-run write them; metrics, calibrate and the browser
read them through here (via :class:`membench.metrics.rundir.RunDir`).

``atoms.jsonl``: one atom per line ``{atom_id, source_id, modality, holder, observed_at,
extent}`` (plus an optional ``text``, a string: what the system indexed, which is kept by the
runner for the failure browser and not scored). ``run.jsonl``: one line per query ``{query_id, hits:
[[atom_id, score], ...], cartridge: [atom_id, ...], latency_ms}``, hits in the order the system
gave them, at most :data:`MAX_DEPTH`, plus an optional ``confidence`` (a finite number: the
score the system's abstention decision thresholds, :class:`membench.contract.protocol.Result`).

``meta.json`` (:func:`read_meta`): a JSON object; the fields readers act on are typed strictly
(:class:`RunMeta`: ``split``, ``modalities``, ``limit``, ``sample_seed``, ``queries``,
``final``, ``sets_dir``, ``set_sha256``, ``status``, ``system``), the others are kept as
written.

Every problem is an :class:`~membench.core.errors.InputError` naming the file and line. An atom's
holder and observed_at must agree with its source item's (``items.jsonl`` is the truth:
metrics use the item's values), see :func:`membench.metrics.resolve.build_atom_table`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, field_validator

from ..contract.protocol import MAX_DEPTH, Atom
from ..core.errors import InputError
from ..core.ids import id_problem, ids_problem
from ..core.jsonl import iter_json_lines, parse_model, read_json_file
from ..core.textfiles import MAX_TREC_LINE, TREC_CONTROL, trec_fields, trec_float, trec_int  # noqa: F401  (re-exported: TREC lines)
from ..core.times import timestamp_problem
from ..modalities import MODALITIES, check_extent

#: what a run directory holds (docs/runs.md), each a regular file when present
RUN_DIR_FILES = ("meta.json", "atoms.jsonl", "run.jsonl", "metrics.json", ".membench.lock")
#: the folder a system that keeps state on disk keeps it in (``use_scratch``)
SCRATCH = "scratch"

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = timedelta(microseconds=1)

_ATOM_KEYS = {"atom_id", "source_id", "modality", "holder", "observed_at", "extent"}
_ATOM_OPTIONAL = {"text"}
_RUN_KEYS = {"query_id", "hits", "cartridge", "latency_ms"}
_RUN_OPTIONAL = {"confidence"}


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
    scores: np.ndarray  # float64, aligned with hit_ids
    cartridge: list[str]
    latency_ms: float
    file: str = "<run>"
    line: int | None = None
    confidence: float | None = None  # the system's abstention score, when it reported one

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
        raise InputError(
            file, line, None, f"missing field(s) {sorted(_ATOM_KEYS - keys)}", rule="ATOM_SCHEMA"
        )
    if keys - _ATOM_KEYS - _ATOM_OPTIONAL:
        extra = sorted(keys - _ATOM_KEYS - _ATOM_OPTIONAL)
        raise InputError(file, line, None, f"unknown field(s) {extra}", rule="ATOM_SCHEMA")
    for k in ("atom_id", "source_id", "holder"):
        if not _nonempty_str(obj[k]):
            raise InputError(file, line, k, "must be a non-empty string", rule="ATOM_SCHEMA")
    why = id_problem(obj["atom_id"])
    if why:
        raise InputError(file, line, "atom_id", why, rule="ID")
    m = obj["modality"]
    if m not in MODALITIES:
        raise InputError(file, line, "modality", f"unknown modality {m!r}", rule="ATOM_SCHEMA")
    ts = _timestamp(obj["observed_at"])
    if ts is None:
        raise InputError(
            file,
            line,
            "observed_at",
            f"must be an ISO 8601 timestamp with a timezone, got {obj['observed_at']!r}"[:300],
            rule="ATOM_SCHEMA",
        )
    why = timestamp_problem(ts)
    if why:
        raise InputError(file, line, "observed_at", why, rule="TIMESTAMP_RANGE")
    why = check_extent(m, obj["extent"])
    if why:
        raise InputError(file, line, "extent", why, rule="ATOM_EXTENT")
    text = obj.get("text", "")
    if not isinstance(text, str):
        raise InputError(
            file,
            line,
            "text",
            f"must be a string (what the system indexed), got {type(text).__name__} {text!r}"[:160],
            rule="ATOM_SCHEMA",
        )
    return AtomRow(
        obj["atom_id"],
        obj["source_id"],
        m,
        obj["holder"],
        ts,
        dict(obj["extent"]),
        text,
        file=str(file),
        line=line,
    )


def read_atoms(path: str | Path) -> list[AtomRow]:
    return [parse_atom(obj, str(path), no) for no, obj in iter_json_lines(path)]


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def parse_run_row(obj: Mapping[str, Any], file: str = "<run>", line: int | None = None) -> RunRow:
    """One run line, shape-checked (atom ids are checked against the atoms later)."""
    keys = set(obj)
    if not _RUN_KEYS <= keys:
        raise InputError(
            file, line, None, f"missing field(s) {sorted(_RUN_KEYS - keys)}", rule="RUN_SCHEMA"
        )
    if keys - _RUN_KEYS - _RUN_OPTIONAL:
        raise InputError(
            file,
            line,
            None,
            f"unknown field(s) {sorted(keys - _RUN_KEYS - _RUN_OPTIONAL)}",
            rule="RUN_SCHEMA",
        )
    qid = obj["query_id"]
    if not _nonempty_str(qid):
        raise InputError(file, line, "query_id", "must be a non-empty string", rule="RUN_SCHEMA")
    why = id_problem(qid)
    if why:
        raise InputError(file, line, "query_id", why, rule="ID")
    hits = obj["hits"]
    if not isinstance(hits, list):
        raise InputError(
            file, line, "hits", "must be a list of [atom_id, score]", rule="RUN_SCHEMA"
        )
    if len(hits) > MAX_DEPTH:
        raise InputError(
            file, line, "hits", f"{len(hits)} hits; the depth cap is {MAX_DEPTH}", rule="RUN_DEPTH"
        )
    parsed = _bulk_hits(hits)
    if parsed is None:  # something is off: find and name the first culprit
        for j, h in enumerate(hits):
            if not (
                isinstance(h, (list, tuple))
                and len(h) == 2
                and _nonempty_str(h[0])
                and _number(h[1])
            ):
                raise InputError(
                    file,
                    line,
                    f"hits[{j}]",
                    f"must be [atom_id, finite score], got {h!r}"[:160],
                    rule="RUN_SCHEMA",
                )
        raise AssertionError("unreachable: bulk check and per-hit check disagree")
    bad = ids_problem(parsed[0])
    if bad:
        raise InputError(file, line, f"hits[{bad[0]}][0]", bad[1], rule="ID")
    cart = obj["cartridge"]
    if not (isinstance(cart, list) and all(_nonempty_str(a) for a in cart)):
        raise InputError(file, line, "cartridge", "must be a list of atom ids", rule="RUN_SCHEMA")
    bad = ids_problem(cart)
    if bad:
        raise InputError(file, line, f"cartridge[{bad[0]}]", bad[1], rule="ID")
    rep = repeated(parsed[0])
    if rep:
        raise InputError(
            file,
            line,
            "hits",
            f"{qid}: atom {rep[0]!r} at ranks {rep[1] + 1} and "
            f"{rep[2] + 1} of the list: an atom is listed once per query",
            rule="DUPLICATE_HIT",
        )
    rep = repeated(cart)
    if rep:
        raise InputError(
            file,
            line,
            "cartridge",
            f"{qid}: atom {rep[0]!r} at positions "
            f"{rep[1] + 1} and {rep[2] + 1} of the cartridge: an atom is listed "
            "once per query",
            rule="DUPLICATE_HIT",
        )
    lat = obj["latency_ms"]
    if lat is None:  # not measured (an imported run): left out of the latency figures
        lat = float("nan")
    elif not _number(lat) or lat < 0:
        raise InputError(
            file,
            line,
            "latency_ms",
            f"must be a number >= 0 or null, got {lat!r}",
            rule="RUN_SCHEMA",
        )
    conf = obj.get("confidence")
    if conf is not None and not _number(conf):
        raise InputError(
            file,
            line,
            "confidence",
            f"must be a finite number or null, got {conf!r}"[:160],
            rule="RUN_SCHEMA",
        )
    return RunRow(
        qid,
        parsed[0],
        parsed[1],
        list(cart),
        float(lat),
        str(file),
        line,
        None if conf is None else float(conf),
    )


def repeated(ids: list[str]) -> tuple[str, int, int] | None:
    """``(atom, first index, second index)`` of the first atom id listed twice in ``ids``
    (in the order given), or ``None`` (checked with one ``set`` first)."""
    if len(set(ids)) == len(ids):
        return None
    first: dict[str, int] = {}
    for i, a in enumerate(ids):
        if a in first:
            return a, first[a], i
        first[a] = i
    return None


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
        return None  # (bool is its own type: rejected)
    try:
        scores = np.array(raw, dtype=np.float64)
    except OverflowError:
        return None
    return (ids, scores) if bool(np.isfinite(scores).all()) else None


def read_run(path: str | Path) -> list[RunRow]:
    return [parse_run_row(obj, str(path), no) for no, obj in iter_json_lines(path)]


class RunMeta(BaseModel):
    """The fields of ``meta.json`` that readers act on, strictly typed (``"limit": "3"`` is an
    error, not 3); every other field is kept as written."""

    model_config = ConfigDict(extra="allow")

    split: StrictStr
    system: StrictStr | None = None  # an identifier (core.ids): checked below
    modalities: list[StrictStr] | None = None
    limit: StrictInt | None = Field(default=None, ge=1)
    sample_seed: StrictInt | None = None
    queries: StrictInt | None = Field(default=None, ge=0)
    final: StrictBool | None = None
    sets_dir: StrictStr | None = None
    set_sha256: dict[str, StrictStr] | None = None
    status: StrictStr | None = None

    @field_validator("system")
    @classmethod
    def _identifier(cls, v: str | None) -> str | None:
        why = None if v is None else id_problem(v)
        if why:
            raise ValueError(why)
        return v

    @field_validator("modalities")
    @classmethod
    def _known(cls, v: list[str] | None) -> list[str] | None:
        bad = [m for m in v or [] if m not in MODALITIES]
        if bad:
            raise ValueError(f"unknown modality {bad[0]!r}; known: {', '.join(MODALITIES)}")
        return v


def check_run_dir_files(run_dir: str | Path) -> None:
    """Refuse a run directory in which a run file (:data:`RUN_DIR_FILES`) is anything but a
    regular file (a symlink, a FIFO, a folder, a device), or ``scratch`` is anything but a
    folder (a symlink to one included): one :class:`InputError` (rule ``NOT_A_FILE``) naming
    it (:func:`membench.core.atomic.refuse_special`). The one check of a run folder's
    contents: writers (run, import-run) call it before writing, readers through
    :func:`read_meta` before reading."""
    import os
    import stat

    from ..core.atomic import refuse_special

    d = Path(run_dir)
    for name in RUN_DIR_FILES:
        refuse_special(d / name)
    try:
        st = os.lstat(d / SCRATCH)
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISDIR(st.st_mode):
        what = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a folder"
        raise InputError(
            d / SCRATCH,
            None,
            None,
            f"is {what}, where a system keeps its state "
            "in a folder of the run directory; remove it",
            rule="NOT_A_FILE",
        )


def read_meta(run_dir: str | Path) -> dict[str, Any]:
    """``RUN_DIR/meta.json`` as a dict, checked (:class:`RunMeta`): a run folder holding a
    symlink or another special file where a run file belongs (:func:`check_run_dir_files`:
    every reader of a run folder starts here), missing (not a run directory), not UTF-8, not
    JSON, not an object, or a field of the wrong type is an :class:`InputError` naming it."""
    check_run_dir_files(run_dir)
    meta_path = Path(run_dir) / "meta.json"
    if not meta_path.exists():
        raise InputError(
            meta_path,
            None,
            None,
            "file not found: not a run directory (make one "
            "with `membench run --system NAME --out RUN_DIR`)",
            rule="MISSING_FILE",
        )
    meta = read_json_file(meta_path, dict, "a JSON object (a run's meta.json)")
    parse_model(RunMeta, meta, meta_path, None)
    return meta
