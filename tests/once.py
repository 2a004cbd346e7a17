"""Expensive test data made once per test session, also when pytest-xdist runs the suite in
several worker processes (``make test``: ``pytest -n auto``).

A session fixture runs once per worker; :func:`once` makes its value in the first worker that
asks, under a file lock in the session's shared temporary folder (the parent of each worker's
``tmp_path_factory`` base), pickles it there, and every other worker waits on the lock and
loads the pickle. Without xdist it simply makes the value. The folder handed to ``make`` is
shared by every worker: what is made in it must be read only afterwards (as a session
fixture's output already must be, for the tests that share it in one process).

Touches: ``NAME/``, ``NAME.lock`` and ``NAME.pickle`` in the session's temporary folder.
Start at :func:`once`; tests/conftest.py's ``built`` and ``bm25_dev`` use it.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def once(tmp_path_factory, name: str, make: Callable[[Path], T]) -> T:
    """``make(folder)`` for a fresh ``folder`` named after ``name``, computed once per session
    across xdist workers (see the module docstring). ``name`` must be unique per value."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return make(tmp_path_factory.mktemp(name))
    root = tmp_path_factory.getbasetemp().parent  # shared by the session's workers
    done = root / f"{name}.pickle"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if done.is_file():
            return pickle.loads(done.read_bytes())
        folder = root / name
        shutil.rmtree(folder, ignore_errors=True)  # a worker whose make failed: try again
        folder.mkdir()  # (its error is reported there too)
        value = make(folder)
        tmp = done.with_name(f"{done.name}.{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(value))
        os.replace(tmp, done)
        return value
