"""Deterministic hashing: the same numbers on every machine and run (no ``hash()``, no dict or
file-system order). Builds use it for holder groups and splits, runs for ``--limit`` subsets,
the statistics for their seeded draws (:func:`keyed_rng`), the caches and the Ray engine for
the code's digest (:func:`code_digest`). Touches nothing but membench's own source (read)."""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: the membench package folder (membench/)
PACKAGE = Path(__file__).resolve().parents[1]
_SOURCE: dict[tuple[str, ...], str] = {}


def stable_hash(*parts: str) -> int:
    """A 64-bit integer from sha256 of the parts; the same on every machine and run."""
    h = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big")


def hash_order(keys: Iterable[str], salt: str) -> list[str]:
    """Keys ordered by ``stable_hash(salt, key)`` (ties, impossible in practice, by key)."""
    return sorted(set(keys), key=lambda k: (stable_hash(salt, k), k))


def limit_subset(rows: list, limit: int | None, qid=lambda r: r, seed: int | None = None) -> list:
    """The ``--limit`` rule: ``limit`` rows of one modality, those first in
    ``stable_hash("limit", query_id)`` order (with ``seed``: ``stable_hash("limit", str(seed),
    query_id)``, another sample; ``membench verify`` draws one per check) (returned in that
    order); all rows if None."""
    if limit is None:
        return list(rows)
    salt = ("limit",) if seed is None else ("limit", str(seed))
    return sorted(rows, key=lambda r: (stable_hash(*salt, qid(r)), qid(r)))[:limit]


def keyed_rng(seed: int, key: str) -> np.random.Generator:
    """The random generator of the draws named ``key`` under ``seed``: numpy's
    ``default_rng([seed, crc32(key as UTF-8)])``. Every seeded resampling (bootstrap intervals,
    paired tests, rank agreement, Q2D-Web) draws from it, so the frozen figures depend on this
    exact rule."""
    import numpy as np

    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def source_digest(subpackages: Iterable[str] = ()) -> str:
    """sha256 over membench's own ``.py`` files (each one's path relative to the package, as
    POSIX, and the sha256 of its bytes), in path order; only those under ``subpackages``
    (``("sets", "core")``) when given, else the whole package. Memoised per process: the key
    of every cache that must not outlive a change to the code that made it (the scores, the
    audit) and the check that a Ray worker runs the driver's code."""
    subs = tuple(subpackages)
    if subs not in _SOURCE:
        h = hashlib.sha256()
        for root in [PACKAGE / s for s in subs] if subs else [PACKAGE]:
            for src in sorted(root.rglob("*.py")):
                h.update(src.relative_to(PACKAGE).as_posix().encode() + b"\0")
                h.update(hashlib.sha256(src.read_bytes()).digest())
        _SOURCE[subs] = h.hexdigest()
    return _SOURCE[subs]


def code_digest() -> str:
    """:func:`source_digest` of the whole package, once per process: the key of the caches
    that any change to the code must invalidate (the score cache) and the check that every
    Ray worker runs the driver's code."""
    return source_digest()
