"""A run's per-item scores and its ``metrics.json`` object stored by the content of their inputs,
under ``cache_dir("scores")`` (docs/speed.md, "The same lines are scored once", says why and
what it saves).

Start at :func:`scores` (what :meth:`membench.metrics.rundir.RunDir.scores` computes, keyed by
the sha256 of ``run.jsonl`` with each latency blanked (:func:`lines_without_latency`; a line
not in the canonical form keys the whole file), of ``atoms.jsonl`` and of every set file, the
selection meta.json records (split, modalities, limit, queries asked), ``partial``, the corpus
path (its files and the OCR cache are not hashed), the sha256 of the membench package's Python
source and numpy's version) and :func:`metrics` (the aggregate, keyed by the scores' key, the
digest of the run's latencies, the seed and the number of resamples). A stored result read back
gets this run's latencies, by query id. A hit equals a fresh computation to the bit
(``tests/test_scorecache.py``).

Refusals come first: :meth:`RunDir.open` runs before, and a scoring that raises stores nothing.
Stored as ``<key>.npz`` (read with ``allow_pickle=False``: nothing in the cache is executed) and
``<key>.metrics-<seed>-<n>.json``, each written whole (temporary file, then rename); a file that
cannot be read or does not fit is computed again, a folder that cannot be written only costs
time. ``MEMBENCH_SCORE_CACHE=0`` turns it off.

Touches: ``cache_dir("scores")`` only; reads the run's files and the sets.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..core.hashing import code_digest
from .score import ItemScores


class ScoredRun(Protocol):
    """What the cache reads of an opened run (a :class:`membench.metrics.rundir.RunDir`, which
    imports this module: the cache names only the fields it keys on)."""

    path: Path
    sets_dir: Path
    meta: dict[str, Any]
    partial: bool
    corpus_label: str


VERSION = "scores-5"

# ItemScores' fields: aligned string lists, and per-item arrays with their dtype kind
LISTS = ("query_id", "modality", "source", "holder", "as_of", "derivation")
ARRAYS = {
    "answerable": "b",
    "audited": "b",
    "has_run": "b",
    "n_gold": "i",
    "n_hits": "i",
    "cartridge_size": "i",
    "n_future": "i",
    "n_foreign": "i",
    "latency_ms": "f",
    "abstention_score": "f",
}


def enabled() -> bool:
    return os.environ.get("MEMBENCH_SCORE_CACHE", "1") != "0"


def _file_digest(p: Path) -> str:
    from ..core.jsonl import sha256_file

    return sha256_file(p) if p.is_file() else "missing"


#: the end of a canonical run line (sorted keys, no spaces: query_id is the last key)
_TAIL = re.compile(
    rb',"latency_ms":(null|-?[0-9][0-9.eE+-]*),"query_id":("(?:[^"\\\n]|\\.)*")}$', re.M
)


def lines_without_latency(path: Path) -> tuple[str, dict[str, float]] | None:
    """The sha256 of ``path`` (a run.jsonl) with every line's latency value blanked, and each
    query id's latency (NaN for null); None when a line is not in the canonical form or a
    query id repeats (the key is then the whole file's digest)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    lat: dict[str, float] = {}
    n = 0
    for m in _TAIL.finditer(data):
        qid = json.loads(m.group(2))
        if qid in lat:
            return None
        lat[qid] = math.nan if m.group(1) == b"null" else float(m.group(1))
        n += 1
    if n != data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1):
        return None
    return hashlib.sha256(_TAIL.sub(rb',"latency_ms":_,"query_id":\2}', data)).hexdigest(), lat


def key_of(rd: ScoredRun, lines: tuple[str, dict[str, float]] | None = None) -> str:
    """The hex key of ``rd``'s scores (see the module docstring); ``lines``: what
    :func:`lines_without_latency` gave for its run.jsonl (read when not given)."""
    from ..sets.build import set_digests

    if lines is None:
        lines = lines_without_latency(rd.path / "run.jsonl")
    run = (
        f"without-latency:{lines[0]}" if lines is not None else _file_digest(rd.path / "run.jsonl")
    )
    parts = {
        "version": VERSION,
        "code": code_digest(),
        "numpy": np.__version__,
        "run.jsonl": run,
        "atoms.jsonl": _file_digest(rd.path / "atoms.jsonl"),
        "sets": set_digests(rd.sets_dir),
        "split": rd.meta.get("split"),
        "modalities": rd.meta.get("modalities"),
        "limit": rd.meta.get("limit"),
        "sample_seed": rd.meta.get("sample_seed"),
        "queries": rd.meta.get("queries"),
        "partial": bool(rd.partial),
        "corpus": rd.corpus_label,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _folder() -> Path | None:
    from ..core.paths import cache_dir

    try:
        return cache_dir("scores")
    except OSError:
        return None


def _write_whole(path: Path, data: bytes) -> None:
    """:func:`membench.core.atomic.atomic_write_bytes`; a cache that cannot be written only
    costs time."""
    from ..core.atomic import atomic_write_bytes

    try:
        atomic_write_bytes(path, data)
    except OSError:
        pass


def dump(s: ItemScores) -> bytes:
    """``s`` as the bytes of an ``.npz`` (no object arrays)."""
    arrays: dict[str, np.ndarray] = {k: np.ascontiguousarray(getattr(s, k)) for k in ARRAYS}
    head = {
        "lists": {k: getattr(s, k) for k in LISTS},
        "atom_qrels": s.atom_qrels,
        "values": list(s.values),
        "atom_level": list(s.atom_level),
        "judgments": {js: list(v) for js, v in s.judgments.items()},
        "content": s.content,
    }
    for i, m in enumerate(s.values):
        arrays[f"v{i}"] = s.values[m]
    for i, m in enumerate(s.atom_level):
        arrays[f"a{i}"] = s.atom_level[m]
    for j, (js, per) in enumerate(s.judgments.items()):
        for i, m in enumerate(per):
            arrays[f"j{j}_{i}"] = per[m]
    arrays["head"] = np.frombuffer(json.dumps(head).encode("utf-8"), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def load(data: bytes) -> ItemScores:
    """The :class:`ItemScores` of :func:`dump`'s bytes; ``ValueError`` when they do not fit."""
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        head = json.loads(z["head"].tobytes().decode("utf-8"))
        lists = head["lists"]
        n = len(lists["query_id"])
        if any(not isinstance(lists[k], list) or len(lists[k]) != n for k in LISTS):
            raise ValueError("lists of different lengths")

        def arr(name: str, kind: str | None = "f") -> np.ndarray:
            a = np.array(z[name])
            if a.shape != (n,) or (kind and a.dtype.kind != kind):
                raise ValueError(f"{name}: shape {a.shape}, dtype {a.dtype}")
            return a

        fields = {k: arr(k, kind) for k, kind in ARRAYS.items()}
        values = {m: arr(f"v{i}") for i, m in enumerate(head["values"])}
        atom_level = {m: arr(f"a{i}") for i, m in enumerate(head["atom_level"])}
        judgments = {
            js: {m: arr(f"j{j}_{i}") for i, m in enumerate(ms)}
            for j, (js, ms) in enumerate(head["judgments"].items())
        }
    qrels = head["atom_qrels"]
    content = head["content"]
    if not isinstance(content, dict):
        raise ValueError("content")
    if not isinstance(qrels, list) or (qrels and len(qrels) != n):
        raise ValueError("atom_qrels")
    return ItemScores(
        **{k: list(lists[k]) for k in LISTS},
        **fields,
        values=values,
        judgments=judgments,
        atom_level=atom_level,
        atom_qrels=[dict(q) for q in qrels],
        content=content,
    )


def scores(rd: ScoredRun, compute: Callable[[], ItemScores]) -> tuple[ItemScores, str | None]:
    """``compute()``, or the stored scores of the same inputs; and the key (None when the
    cache is off or unusable)."""
    folder = _folder() if enabled() else None
    if folder is None:
        return compute(), None
    lines = lines_without_latency(rd.path / "run.jsonl")
    key = key_of(rd, lines)
    path = folder / f"{key}.npz"
    try:
        got = load(path.read_bytes())
        if lines is not None:  # this run's latencies, not the stored run's
            lat = lines[1]
            got.latency_ms = np.array(
                [lat.get(q, math.nan) for q in got.query_id], dtype=np.float64
            )
        return got, _with_latency(key, got)
    except Exception:  # absent, torn, not an npz, not ours: computed again  # noqa: BLE001
        pass
    result = compute()  # raises (and stores nothing) on a refused run
    note = result.content or {}
    if note.get("unread_records") or note.get("n_unread_items"):
        # content left unread (a cold OCR or PDF cache): not stored, so the scores are
        # computed again once a run has filled the caches (nor are their metrics)
        return result, None
    _write_whole(path, dump(result))
    return result, _with_latency(key, result)


def _with_latency(key: str, s: ItemScores) -> str:
    """The aggregate's key: the scores' key and the digest of their latencies."""
    lat = np.ascontiguousarray(s.latency_ms, dtype=np.float64)
    return f"{key}-{hashlib.sha256(lat.tobytes()).hexdigest()[:32]}"


def metrics(
    key: str | None, seed: int, n_resamples: int, compute: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """``compute()`` (the aggregate of the scores stored under ``key``), or its stored
    result for the same key, seed and number of resamples."""
    folder = _folder() if (enabled() and key) else None
    if folder is None:
        return compute()
    return _stored_json(folder / f"{key}.metrics-{int(seed)}-{int(n_resamples)}.json", compute)


def _stored_json(path: Path, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The JSON object stored at ``path``, else ``compute()``, stored there when it is plain
    JSON that reads back equal (a torn or foreign file is computed again)."""
    try:
        got = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(got, dict):
            return got
    except (OSError, ValueError):
        pass
    result = compute()
    try:
        data = json.dumps(result, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError):  # not plain JSON: not stored
        return result
    if json.loads(data) == result:  # stored only when it reads back equal
        _write_whole(path, data)
    return result


def derived(key: str | None, name: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``compute()``, or its stored result: a JSON object computed from the scores stored under
    ``key`` (:func:`scores`' key) alone and not from their latencies (the latency digest is
    left out of its key, so a run again with the same lines reads it), named ``name`` (which
    must hold every other parameter, e.g. the seed and the resamples)."""
    folder = _folder() if (enabled() and key) else None
    if folder is None:
        return compute()
    return _stored_json(folder / f"{key.split('-')[0]}.{name}.json", compute)


__all__ = [
    "scores",
    "metrics",
    "derived",
    "key_of",
    "lines_without_latency",
    "dump",
    "load",
    "enabled",
]
