"""run.jsonl on disk: appended line by line, fsync'd about once a second, and read back on
resume (a torn last line cut off). The runner, the run's keeper process and the Ray engine
write through these. Touches only the run file it is given.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..core.atomic import open_append, open_regular
from ..core.errors import InputError
from ..core.jsonl import iter_json_lines
from .files import parse_run_row


def _done_queries(run_path: Path) -> set[str]:
    """Query ids already answered; a torn last line (a crash mid-write) is cut off. The file
    is opened by :func:`membench.core.atomic.open_regular` (never through a symlink, never a
    FIFO), so the cut happens to this run's own file or not at all."""
    if not os.path.lexists(run_path):
        return set()
    with os.fdopen(open_regular(run_path, os.O_RDWR), "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        if size:
            f.seek(size - 1)
            if f.read(1) != b"\n":  # a torn last line: cut it, reading back in chunks
                end = size
                while end > 0:
                    start = max(0, end - (1 << 20))
                    f.seek(start)
                    at = f.read(end - start).rfind(b"\n")
                    if at >= 0:
                        end = start + at + 1
                        break
                    end = start
                f.truncate(end)
    done: set[str] = set()
    for no, obj in iter_json_lines(run_path):
        qid = parse_run_row(obj, str(run_path), no).query_id
        if qid in done:
            raise InputError(run_path, no, "query_id", f"{qid!r} twice", rule="DUPLICATE_QUERY_ID")
        done.add(qid)
    return done


#: run.jsonl is fsync'd once this many seconds have passed since its last fsync (and at the
#: end): a power cut or kernel crash loses at most about the last second's lines (a dying
#: process loses none: every line is written and flushed as it is answered)
FSYNC_SECONDS = 1.0


def fsync_if_due(f, synced: float, now: float) -> float:
    """fsync ``f`` when :data:`FSYNC_SECONDS` have passed from ``synced`` to ``now`` (readings
    of one monotonic clock); returns the time of the last fsync. The local loop, the Ray loop
    and bench/bench_query.py's rewrite of the lines all sync by this rule."""
    if now - synced >= FSYNC_SECONDS:
        os.fsync(f.fileno())
        return now
    return synced


class LineFile:
    """run.jsonl as the keeper writes it: appended line by line, each written and flushed,
    fsync'd by :func:`fsync_if_due` and at :meth:`close`."""

    def __init__(self, path: Path):
        self.f = open_append(path)
        self.synced = time.perf_counter()

    def write(self, line: bytes) -> None:
        self.f.write(line)
        self.f.flush()
        self.synced = fsync_if_due(self.f, self.synced, time.perf_counter())

    def close(self) -> None:
        try:
            self.f.flush()
            os.fsync(self.f.fileno())
        finally:
            self.f.close()
