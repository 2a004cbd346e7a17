"""Where as_of sits on a holder's timeline: slots, steps, offsets (membench.sets.timeline)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from membench.sets.timeline import DEFAULT_TAIL, Timeline, build_timelines

T = datetime(2024, 1, 1, tzinfo=timezone.utc)
H = timedelta(hours=1)


def hourly(n: int) -> Timeline:
    return build_timelines([("s", "h", T + i * H) for i in range(n)])["h"]


def test_timelines_are_distinct_sorted_times_with_a_tail():
    tls = build_timelines([("s", "a", T + 3 * H), ("s", "a", T), ("s", "a", T), ("s", "a", T + H),
                           ("s", "b", T), ("s", "c", T + 2 * H), ("s", "c", T + 6 * H),
                           ("t", "d", T)])
    assert tls["a"].times == (T, T + H, T + 3 * H)
    assert tls["a"].tail == timedelta(hours=1.5)            # the holder's median gap (1 h, 2 h)
    assert tls["b"].tail == timedelta(hours=2.75)           # one item: median of a's and c's
    assert tls["d"].tail == DEFAULT_TAIL                    # no gap anywhere in its source
    assert tls["a"].slot_of(T + H) == 1
    with pytest.raises(ValueError):
        tls["a"].slot_of(T + 2 * H)


def test_steps_stay_on_their_side_of_the_anchor_within_the_spread():
    tl = hourly(101)
    assert tl.spread == 10
    after = {tl.after(40, f"q{i}") for i in range(500)}
    assert after == set(range(40, 51))                       # every step 0..10 is drawn
    before = {tl.before(40, f"q{i}") for i in range(500)}
    assert before == set(range(29, 40))
    assert {tl.after(98, f"q{i}") for i in range(200)} == {98, 99, 100}   # never past the end
    assert {tl.before(3, f"q{i}") for i in range(200)} == {0, 1, 2}       # never before the start
    assert tl.before(0, "q") is None                         # nothing can be seen before it


def test_instants_fill_their_slot_with_uniform_clock_digits():
    tl = hourly(5)
    got = [tl.instant(2, f"q{i}") for i in range(2000)]
    assert all(T + 2 * H <= t < T + 3 * H for t in got)
    assert len({t.second for t in got}) == 60 and len({t.minute for t in got}) == 60
    last = [tl.instant(4, f"q{i}") for i in range(200)]
    assert all(T + 4 * H <= t < T + 5 * H for t in last)     # the tail: the median gap
    assert tl.instant(2, "q7") == hourly(5).instant(2, "q7")  # seeded, nothing else
    assert tl.visible(tl.instant(2, "q7")) == 3
