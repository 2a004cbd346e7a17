"""The range of the timestamps membench reads (``observed_at``, ``as_of``), in one place.

Python's ``datetime`` stops at years 1 and 9999, and anything that moves a timestamp (to UTC,
by a time zone's offset, by a day) near those ends raises ``OverflowError``. A timestamp in a
set, an atoms file or a query must lie in [:data:`EARLIEST`, :data:`LATEST`) (UTC), far from
both ends and far around any memory a benchmark holds; outside it, :func:`timestamp_problem`
says why and the reader turns that into a located error (rule ``TIMESTAMP_RANGE`` where a
reader has its own rules, else the reader's schema rule). The check compares the wall-clock
value first, so it never does the arithmetic that overflows.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from .bounds import bound

EARLIEST = datetime.fromisoformat(
    bound(
        "timestamp_earliest",
        "1900-01-01T00:00:00+00:00",
        "",
        "earliest timestamp read (observed_at, as_of: sets, atoms files, queries over HTTP)",
        "located error (TIMESTAMP_RANGE, or the reader's schema rule) naming the file, line and "
        "field",
        "membench.core.times",
    )
)
LATEST = datetime.fromisoformat(
    bound(
        "timestamp_latest",
        "2200-01-01T00:00:00+00:00",
        "",
        "timestamps read are before this (as timestamp_earliest)",
        "located error (TIMESTAMP_RANGE, or the reader's schema rule) naming the file, line and "
        "field",
        "membench.core.times",
    )
)
assert EARLIEST.tzinfo is timezone.utc and LATEST.tzinfo is timezone.utc

_DAY = timedelta(days=1)
_NAIVE_LO = EARLIEST.replace(tzinfo=None) - _DAY  # no offset moves a time by a day or more
_NAIVE_HI = LATEST.replace(tzinfo=None) + _DAY


def timestamp_problem(dt: datetime) -> str | None:
    """Why ``dt`` is outside [EARLIEST, LATEST), or ``None`` (a ``dt`` without a timezone is
    checked on its wall-clock value only: whether it needs one is the reader's rule)."""
    naive = dt.replace(tzinfo=None)
    if _NAIVE_LO < naive < _NAIVE_HI and (dt.utcoffset() is None or EARLIEST <= dt < LATEST):
        return None
    return (
        f"{naive.isoformat()} (offset {_offset(dt)}) is outside the range membench reads: "
        f"from {EARLIEST.isoformat()} to before {LATEST.isoformat()}"
    )


def _offset(dt: datetime) -> str:
    try:
        off = dt.utcoffset()
    except (OverflowError, ValueError):
        return "?"
    if off is None:
        return "none"
    sign = "-" if off < timedelta(0) else "+"
    s = int(abs(off).total_seconds())
    return f"{sign}{s // 3600:02d}:{s % 3600 // 60:02d}"


__all__ = ["EARLIEST", "LATEST", "timestamp_problem"]
