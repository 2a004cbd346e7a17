"""Where a query's ``as_of`` sits on its holder's timeline, drawn so that it tells nothing
(SPEC section 5, "No tells").

A holder's **timeline** is the sorted distinct ``observed_at`` of its items, ``T_0 < T_1 < ... <
T_{M-1}``. **Slot** ``j`` is the interval ``[T_j, T_{j+1})`` (the last slot ends
``tail`` after ``T_{M-1}``): an ``as_of`` in slot ``j`` sees exactly the items observed at
``T_0 .. T_j``.

Every record's ``as_of`` is drawn the same way, seeded by its query id:

1. an **anchor** slot: for an answerable query the slot of its latest evidence (gold or any
   judgment set's), for a derived temporal query the slot of its earliest evidence; for a
   query with no evidence (a native or transactive unanswerable) the anchor of an answerable
   query of the same holder, chosen by hash, so that its position follows the same
   distribution;
2. a **step** ``d``, uniform over ``0 .. min(spread, room)`` with ``spread =
   floor(AS_OF_SPREAD * (M - 1))`` slots: the slot is ``anchor + d`` (answerable-like) or
   ``anchor - 1 - d`` (temporal: before the evidence, and never before the first item, so
   at least one item is always visible), so both kinds sit mid-timeline and answerable
   queries have later items too (temporal correctness then means something on them);
3. an **offset** inside the slot, ``floor(u * L)`` whole seconds with ``u`` uniform in
   ``[0, 1)`` and ``L`` the slot's length (the last slot's length is the holder's median gap
   between items, else the source's, else one day), so the clock digits and the gaps to the
   neighbouring items follow the same distribution for every kind of record.

Nothing here reads content; the same seed gives the same instant on every machine.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..core.hashing import stable_hash

# The step after (or before) the anchor spans up to this share of the holder's slots: wide
# enough that the evidence is not simply the latest item, narrow enough that answerable and
# temporal as_of fall in the same part of the timeline (the audit's gates bound it).
AS_OF_SPREAD = 0.1
DEFAULT_TAIL = timedelta(days=1)
_UNIT = float(1 << 64)


def uniform(*parts: str) -> float:
    """A number in ``[0, 1)`` from :func:`stable_hash` of ``parts`` (the same everywhere)."""
    return stable_hash(*parts) / _UNIT


def pick(n: int, *parts: str) -> int:
    """An integer uniform over ``0 .. n - 1`` seeded by ``parts``."""
    return min(n - 1, int(uniform(*parts) * n))


@dataclass(frozen=True)
class Timeline:
    """One holder's distinct observation times and the length of its last slot."""

    times: tuple[datetime, ...]
    tail: timedelta

    @property
    def slots(self) -> int:
        return len(self.times)

    @property
    def spread(self) -> int:
        """How many slots a step may cross (:data:`AS_OF_SPREAD` of the timeline)."""
        return math.floor(AS_OF_SPREAD * (self.slots - 1))

    def slot_of(self, t: datetime) -> int:
        """The slot whose start is ``t`` (an item's observation time)."""
        lo, hi = 0, len(self.times)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.times[mid] < t:
                lo = mid + 1
            else:
                hi = mid
        if lo == len(self.times) or self.times[lo] != t:
            raise ValueError(f"{t.isoformat()} is not an observation time of this holder")
        return lo

    def visible(self, as_of: datetime) -> int:
        """How many distinct observation times are at or before ``as_of``."""
        return sum(1 for t in self.times if t <= as_of)

    def length(self, slot: int) -> timedelta:
        return self.tail if slot == self.slots - 1 else self.times[slot + 1] - self.times[slot]

    def after(self, anchor: int, seed: str) -> int:
        """The slot of an answerable-like query anchored at ``anchor``: ``anchor + d``."""
        room = min(self.spread, self.slots - 1 - anchor)
        return anchor + pick(room + 1, "as_of-step", seed)

    def before(self, anchor: int, seed: str) -> int | None:
        """The slot of a temporal query whose evidence starts at ``anchor``: ``anchor - 1 - d``
        (``None`` when the evidence is at the first slot: nothing could be seen before it)."""
        if anchor < 1:
            return None
        room = min(self.spread, anchor - 1)
        return anchor - 1 - pick(room + 1, "as_of-step", seed)

    def instant(self, slot: int, seed: str) -> datetime:
        """``as_of`` inside ``slot``: its start plus ``floor(u * length)`` whole seconds."""
        seconds = math.floor(uniform("as_of-offset", seed) * self.length(slot).total_seconds())
        return self.times[slot] + timedelta(seconds=max(0, seconds))


def _median_gap(times: list[datetime]) -> timedelta | None:
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
    return timedelta(seconds=math.floor(statistics.median(gaps))) if gaps else None


def build_timelines(observed: Iterable[tuple[str, str, datetime]]) -> dict[str, Timeline]:
    """Timelines of every holder from ``(source, holder, observed_at)`` triples. The last
    slot's length is the holder's median gap, else the median of its source's holders'
    median gaps, else :data:`DEFAULT_TAIL`."""
    per: dict[str, set[datetime]] = {}
    source_of: dict[str, str] = {}
    for source, holder, t in observed:
        per.setdefault(holder, set()).add(t)
        source_of[holder] = source
    gaps: dict[str, timedelta | None] = {h: _median_gap(sorted(ts)) for h, ts in per.items()}
    by_source: dict[str, list[float]] = {}
    for h, g in gaps.items():
        if g is not None:
            by_source.setdefault(source_of[h], []).append(g.total_seconds())
    out = {}
    for h, ts in per.items():
        tail = gaps[h]
        if tail is None or tail <= timedelta(0):
            pool = by_source.get(source_of[h])
            tail = (timedelta(seconds=math.floor(statistics.median(pool))) if pool
                    else DEFAULT_TAIL)
        if tail <= timedelta(0):
            tail = DEFAULT_TAIL
        out[h] = Timeline(tuple(sorted(ts)), tail)
    return out
