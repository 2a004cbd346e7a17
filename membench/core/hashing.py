"""Deterministic hashing: the same numbers on every machine and run (no ``hash()``, no dict or
file-system order). Builds use it for holder groups and splits, runs for ``--limit`` subsets."""

from __future__ import annotations

import hashlib
from typing import Iterable


def stable_hash(*parts: str) -> int:
    """A 64-bit integer from sha256 of the parts; the same on every machine and run."""
    h = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big")


def hash_order(keys: Iterable[str], salt: str) -> list[str]:
    """Keys ordered by ``stable_hash(salt, key)`` (ties, impossible in practice, by key)."""
    return sorted(set(keys), key=lambda k: (stable_hash(salt, k), k))


def limit_subset(rows: list, limit: int | None, qid=lambda r: r) -> list:
    """The ``--limit`` rule: ``limit`` rows of one modality, those first in
    ``stable_hash("limit", query_id)`` order (returned in that order); all rows if None."""
    if limit is None:
        return list(rows)
    return sorted(rows, key=lambda r: (stable_hash("limit", qid(r)), qid(r)))[:limit]
