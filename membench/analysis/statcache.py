"""Results of pure, seeded statistics by the content of their inputs, in one SQLite file
under ``cache_dir("stats")`` (safe for concurrent processes, as the embedding cache is).

The paired tests of a comparison and of a leaderboard (10,000 bootstrap and 10,000 sign-flip
resamples each, hundreds of tests per leaderboard) are a function of their input arrays, their
key, their parameters, the code that computes them and numpy's version alone; ``make all``
asks for the same ones up to three times (``membench leaderboard``, the report's summary,
notebook 06) and again on every warm run. :func:`cached` returns the stored result when these
very inputs were computed by this code before, else computes and stores it. The stored value
is JSON (floats round-trip exactly, NaN included), so a hit returns what a fresh computation
would, to the last bit. A cache that cannot be opened or written only costs time; a torn row
is computed again. ``MEMBENCH_STATS_CACHE=0`` turns it off.

Touches: ``cache_dir("stats")/stats.sqlite3`` only.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

VERSION = "stats-1"
_CON: tuple[int, sqlite3.Connection] | None = None
_CODE: dict[str, str] = {}


def enabled() -> bool:
    return os.environ.get("MEMBENCH_STATS_CACHE", "1") != "0"


def code_digest(module_file: str) -> str:
    """sha256 of a module's source (the code a cached result depends on), once per process."""
    if module_file not in _CODE:
        _CODE[module_file] = hashlib.sha256(Path(module_file).read_bytes()).hexdigest()
    return _CODE[module_file]


def key_of(
    kind: str, module_file: str, arrays: tuple[np.ndarray, ...], params: dict[str, Any]
) -> bytes:
    """The 32-byte key: kind, the module's source digest, numpy's version, each array's dtype,
    shape and bytes, the parameters as sorted JSON."""
    h = hashlib.sha256(
        f"{VERSION}\n{kind}\n{code_digest(module_file)}\nnumpy=={np.__version__}\n".encode()
    )
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}\n".encode())
        h.update(a.tobytes())
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    return h.digest()


def _connect() -> sqlite3.Connection | None:
    global _CON
    if _CON is not None and _CON[0] == os.getpid():
        return _CON[1]
    from ..core.paths import cache_dir

    try:
        con = sqlite3.connect(cache_dir("stats") / "stats.sqlite3", timeout=60)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("CREATE TABLE IF NOT EXISTS result (key BLOB PRIMARY KEY, value TEXT NOT NULL)")
        con.commit()
    except (OSError, sqlite3.Error):
        return None
    _CON = (os.getpid(), con)
    return con


def cached(
    kind: str,
    module_file: str,
    arrays: tuple[np.ndarray, ...],
    params: dict[str, Any],
    compute: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """``compute()`` (a JSON-able dict), or its stored result for the same inputs."""
    if not enabled():
        return compute()
    key = key_of(kind, module_file, arrays, params)
    con = _connect()
    if con is not None:
        try:
            row = con.execute("SELECT value FROM result WHERE key = ?", (key,)).fetchone()
            if row is not None:
                value = json.loads(row[0])
                if isinstance(value, dict):
                    return value
        except (sqlite3.Error, ValueError):
            pass
    value = compute()
    if con is not None:
        try:
            con.execute(
                "INSERT OR REPLACE INTO result (key, value) VALUES (?, ?)", (key, json.dumps(value))
            )
            con.commit()
        except (sqlite3.Error, TypeError, ValueError):
            pass
    return value


__all__ = ["cached", "code_digest", "enabled", "key_of"]
