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


def test_answerable_slots_stay_in_the_window_after_the_gold():
    tl = hourly(101)
    assert tl.window_start == 50 and tl.items == 101
    early = [tl.answerable_slot(10, f"q{i}") for i in range(4000)]
    assert set(early) == set(range(50, 101))                 # the whole window, nothing before
    late = {tl.answerable_slot(80, f"q{i}") for i in range(500)}
    assert late == set(range(80, 101))                       # never before the gold
    # P(s) proportional to 1 / V_s: slot 50 (V = 51) drawn about twice as often as 100 (V = 101)
    ratio = early.count(50) / early.count(100)
    assert 1.4 < ratio < 2.9
    assert tl.answerable_slot(100, "q") == 100


def test_keep_is_one_before_the_window_and_falls_to_its_end():
    tl = hourly(101)
    assert tl.keep(0) == tl.keep(50) == 1.0
    w = [tl.keep(g) for g in range(50, 101)]
    assert all(a > b for a, b in zip(w, w[1:]))
    assert tl.keep(100) == pytest.approx((1 / 101) / sum(1 / v for v in range(51, 102)))


def test_gold_rank_among_what_is_seen_is_uniform():
    """Hand-checkable on a 7-item timeline: over golds spread evenly, kept by keep() and placed by
    answerable_slot(), the gold's rank from the newest seen item is uniform given as_of's slot
    (so newest first and oldest first find it no sooner than random)."""
    tl = hourly(7)
    lo = tl.window_start
    assert lo == 3
    joint = {}
    for g in range(7):
        k = tl.keep(g)
        weights = [1 / (s + 1) for s in range(max(g, lo), 7)]
        for s, w in zip(range(max(g, lo), 7), weights):
            joint[g, s] = k * w / sum(weights)
    for s in range(lo, 7):
        probs = [joint.get((g, s), 0.0) for g in range(s + 1)]
        assert max(probs) == pytest.approx(min(probs))      # uniform over the s + 1 seen items


def test_items_sharing_a_time_count_as_seen_together():
    tls = build_timelines([("s", "h", T), ("s", "h", T), ("s", "h", T + H), ("s", "h", T + 2 * H)])
    tl = tls["h"]
    assert tl.counts == (2, 1, 1) and tl.seen(0) == 2 and tl.seen(2) == 4


def test_temporal_slots_fall_in_the_window_before_the_evidence_and_lean_towards_it():
    tl = hourly(101)
    got = [tl.temporal_slot(90, f"q{i}") for i in range(3000)]
    assert set(got) <= set(range(50, 90)) and 89 in got
    assert got.count(89) > got.count(50)                     # leans towards the evidence
    assert tl.temporal_slot(50, "q") is None                 # nothing of the window before it
    assert tl.temporal_slot(20, "q") is None


def test_a_window_of_the_last_slot_sees_everything():
    tl = build_timelines([("s", "h", T + i * H) for i in range(9)])["h"]
    from dataclasses import replace
    end = replace(tl, start_share=1.0)
    assert end.window_start == 8 and end.keep(8) == 1.0
    assert {end.answerable_slot(g, f"q{g}") for g in range(9)} == {8}


def test_instants_fill_their_slot_with_uniform_clock_digits():
    tl = hourly(5)
    got = [tl.instant(2, f"q{i}") for i in range(2000)]
    assert all(T + 2 * H <= t < T + 3 * H for t in got)
    assert len({t.second for t in got}) == 60 and len({t.minute for t in got}) == 60
    last = [tl.instant(4, f"q{i}") for i in range(200)]
    assert all(T + 4 * H <= t < T + 5 * H for t in last)     # the tail: the median gap
    assert tl.instant(2, "q7") == hourly(5).instant(2, "q7")  # seeded, nothing else
    assert tl.visible(tl.instant(2, "q7")) == 3
