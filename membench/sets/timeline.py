"""Where a query's ``as_of`` sits on its holder's timeline, drawn so that neither the position of
the gold among what the holder has seen nor the position of ``as_of`` tells anything (SPEC
section 5, observed_at and "No tells").

A holder's timeline is the sorted distinct ``observed_at`` of its items ``T_0 < ... < T_{M-1}``;
slot ``j`` is ``[T_j, T_{j+1})`` (the last ends ``tail`` after ``T_{M-1}``) and sees ``V_j``
items; the window is slots ``L .. M-1``, ``L = floor(AS_OF_WINDOW_START * (M - 1))`` (the last
slot alone for a source with no unanswerable). The draws (:class:`Timeline`):

* answerable, latest evidence in slot ``g``: a slot over ``max(g, L) .. M-1`` with weight
  ``1 / V_s`` (:meth:`Timeline.answerable_slot`); its question cluster is kept with
  probability :meth:`Timeline.keep` ``= W(max(g, L)) / W(L)``, ``W(x) = sum_{s >= x} 1 / V_s``
  (the rest is the late pool of :mod:`membench.sets.derive`);
* temporal, earliest evidence in slot ``e``: a slot over ``L .. e-1`` with weight
  ``1 / (N - V_s + 1)^2`` (``N`` the holder's items);
* native and transactive unanswerables: the slot of an answerable query of the holder chosen
  by hash (:meth:`Timeline.free_slot` when it has none);
* inside the slot, ``floor(u * length)`` whole seconds (``u`` uniform in ``[0, 1)``; the last
  slot lasts the holder's median gap, else the source's, else one day).

Every draw is seeded by the query id; nothing here reads content or touches a file.
docs/sets.md ("Position tells nothing", "Decisions that hold for every source": as_of) says
why each weight is what it is.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..core.hashing import stable_hash

# as_of falls in the later part of each holder's timeline, from this share of its slots on: the
# earlier part holds the gold of the queries kept answerable at full rate; the later part is
# where the as_of of every kind of query falls (temporal ones need room before their evidence)
AS_OF_WINDOW_START = 0.5
DEFAULT_TAIL = timedelta(days=1)
_UNIT = float(1 << 64)


def uniform(*parts: str) -> float:
    """A number in ``[0, 1)`` from :func:`stable_hash` of ``parts`` (the same everywhere)."""
    return stable_hash(*parts) / _UNIT


def pick(n: int, *parts: str) -> int:
    """An integer uniform over ``0 .. n - 1`` seeded by ``parts``."""
    return min(n - 1, int(uniform(*parts) * n))


def weighted(weights: Sequence[float], *parts: str) -> int:
    """An index drawn with probability proportional to ``weights`` (all > 0), seeded by
    ``parts``: the first index whose running sum passes ``u * total``."""
    target = uniform(*parts) * math.fsum(weights)
    run = 0.0
    for i, w in enumerate(weights):
        run += w
        if target < run:
            return i
    return len(weights) - 1


@dataclass(frozen=True)
class Timeline:
    """One holder's distinct observation times, how many items each holds, and the length of
    its last slot."""

    times: tuple[datetime, ...]
    tail: timedelta
    counts: tuple[int, ...] = ()
    #: where the window starts, as a share of the slots (1.0: the last slot only, for a
    #: holder none of whose queries is unanswerable: nothing to tell apart, all seen)
    start_share: float = AS_OF_WINDOW_START

    def __post_init__(self) -> None:
        if not self.counts:
            object.__setattr__(self, "counts", (1,) * len(self.times))
        if len(self.counts) != len(self.times) or min(self.counts, default=1) < 1:
            raise ValueError("a timeline needs one positive item count per observation time")

    @property
    def slots(self) -> int:
        return len(self.times)

    @property
    def items(self) -> int:
        return sum(self.counts)

    @property
    def window_start(self) -> int:
        """``L``: the first slot an ``as_of`` may fall in."""
        return min(math.floor(self.start_share * (self.slots - 1)), self.window_end)

    @property
    def window_end(self) -> int:
        """The last slot an ``as_of`` may fall in: the one before the holder's last item (an
        item always remains to come, so no query sees everything and "as_of before the
        holder's last item" tells nothing), but for a holder of one item or a window of the
        last slot (``start_share`` 1.0)."""
        if self.slots < 2 or self.start_share >= 1.0:
            return self.slots - 1
        return self.slots - 2

    def seen(self, slot: int) -> int:
        """``V_slot``: how many items an ``as_of`` in ``slot`` sees."""
        return sum(self.counts[: slot + 1])

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

    def _tail_weight(self, start: int) -> float:
        """``W(start) = sum over s >= start (to the window's end) of 1 / V_s``."""
        run, out = self.seen(start - 1) if start > 0 else 0, 0.0
        for s in range(start, self.window_end + 1):
            run += self.counts[s]
            out += 1.0 / run
        return out

    def keep(self, gold: int) -> float:
        """The probability that a question cluster whose latest gold is in slot ``gold`` is
        kept answerable: ``W(max(gold, L)) / W(L)`` (the module docstring)."""
        lo = self.window_start
        if gold > self.window_end:
            return 0.0
        return self._tail_weight(max(gold, lo)) / self._tail_weight(lo)

    def answerable_slot(self, gold: int, seed: str) -> int:
        """The slot of an answerable query whose latest evidence is in slot ``gold``: over
        ``max(gold, L) .. M-1`` with probability proportional to ``1 / V_s``."""
        lo = max(gold, self.window_start)
        base = self.seen(lo - 1) if lo > 0 else 0
        weights, run = [], base
        for s in range(lo, max(lo, self.window_end) + 1):
            run += self.counts[s]
            weights.append(1.0 / run)
        return lo + weighted(weights, "as_of-slot", seed)

    def free_slot(self, seed: str) -> int:
        """A slot for a query without evidence in a holder that has no answerable query: drawn
        as for an answerable query whose gold is before the window."""
        return self.answerable_slot(0, seed)

    def temporal_slot(self, evidence: int, seed: str) -> int | None:
        """The slot of a temporal query whose earliest evidence is in slot ``evidence``: over
        ``L .. evidence-1`` with probability proportional to ``1 / (N - V_s + 1)^2`` (``None``
        when no slot of the window is before it)."""
        lo = self.window_start
        if evidence <= lo:
            return None
        n = self.items
        weights, run = [], self.seen(lo - 1) if lo > 0 else 0
        for s in range(lo, min(evidence, self.window_end + 1)):
            run += self.counts[s]
            weights.append(1.0 / (n - run + 1) ** 2)
        return lo + weighted(weights, "as_of-slot", seed)

    def instant(self, slot: int, seed: str) -> datetime:
        """``as_of`` inside ``slot``: its start plus ``floor(u * length)`` whole seconds."""
        seconds = math.floor(uniform("as_of-offset", seed) * self.length(slot).total_seconds())
        return self.times[slot] + timedelta(seconds=max(0, seconds))


def _median_gap(times: list[datetime]) -> timedelta | None:
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
    return timedelta(seconds=math.floor(statistics.median(gaps))) if gaps else None


def build_timelines(observed: Iterable[tuple[str, str, datetime]]) -> dict[str, Timeline]:
    """Timelines of every holder from ``(source, holder, observed_at)`` triples, one per item.
    The last slot's length is the holder's median gap, else the median of its source's
    holders' median gaps, else :data:`DEFAULT_TAIL`."""
    per: dict[str, Counter] = {}
    source_of: dict[str, str] = {}
    for source, holder, t in observed:
        per.setdefault(holder, Counter())[t] += 1
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
            tail = timedelta(seconds=math.floor(statistics.median(pool))) if pool else DEFAULT_TAIL
        if tail <= timedelta(0):
            tail = DEFAULT_TAIL
        times = tuple(sorted(ts))
        out[h] = Timeline(times, tail, tuple(ts[t] for t in times))
    return out
