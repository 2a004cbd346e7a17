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
    tls = build_timelines(
        [
            ("s", "a", T + 3 * H),
            ("s", "a", T),
            ("s", "a", T),
            ("s", "a", T + H),
            ("s", "b", T),
            ("s", "c", T + 2 * H),
            ("s", "c", T + 6 * H),
            ("t", "d", T),
        ]
    )
    assert tls["a"].times == (T, T + H, T + 3 * H)
    assert tls["a"].tail == timedelta(hours=1.5)  # the holder's median gap (1 h, 2 h)
    assert tls["b"].tail == timedelta(hours=2.75)  # one item: median of a's and c's
    assert tls["d"].tail == DEFAULT_TAIL  # no gap anywhere in its source
    assert tls["a"].slot_of(T + H) == 1
    with pytest.raises(ValueError):
        tls["a"].slot_of(T + 2 * H)


def test_answerable_slots_stay_in_the_window_after_the_gold():
    tl = hourly(101)
    assert tl.window_start == 50 and tl.window_end == 99 and tl.items == 101
    early = [tl.answerable_slot(10, f"q{i}") for i in range(4000)]
    assert set(early) == set(range(50, 100))  # the whole window; the last item always to come
    late = {tl.answerable_slot(80, f"q{i}") for i in range(500)}
    assert late == set(range(80, 100))  # never before the gold
    # P(s) proportional to 1 / V_s: slot 50 (V = 51) drawn about twice as often as 99 (V = 100)
    ratio = early.count(50) / early.count(99)
    assert 1.4 < ratio < 2.9
    assert tl.answerable_slot(99, "q") == 99


def test_keep_is_one_before_the_window_falls_to_its_end_and_is_zero_after():
    tl = hourly(101)
    assert tl.keep(0) == tl.keep(50) == 1.0
    w = [tl.keep(g) for g in range(50, 100)]
    assert all(a > b for a, b in zip(w, w[1:]))
    assert tl.keep(99) == pytest.approx((1 / 100) / sum(1 / v for v in range(51, 101)))
    assert tl.keep(100) == 0.0  # gold in the last slot: nothing after it may be seen


def test_gold_rank_among_what_is_seen_is_uniform():
    """Hand-checkable on an 8-item timeline (window: slots 3 .. 6, the last item to come): over
    golds spread evenly, kept by keep() and placed by answerable_slot(), the gold's rank among
    the items seen is uniform given as_of's slot (so newest first and oldest first find it no
    sooner than random)."""
    tl = hourly(8)
    lo, hi = tl.window_start, tl.window_end
    assert (lo, hi) == (3, 6)
    joint = {}
    for g in range(8):
        k = tl.keep(g)
        slots = range(max(g, lo), hi + 1)
        weights = [1 / (s + 1) for s in slots]
        for s, w in zip(slots, weights):
            joint[g, s] = k * w / sum(weights)
        assert k == (
            0.0
            if g > hi
            else pytest.approx(
                sum(1 / (s + 1) for s in range(max(g, lo), hi + 1))
                / sum(1 / (s + 1) for s in range(lo, hi + 1))
            )
        )
    for s in range(lo, hi + 1):
        probs = [joint.get((g, s), 0.0) for g in range(s + 1)]
        assert max(probs) == pytest.approx(min(probs))  # uniform over the s + 1 seen items


def test_items_sharing_a_time_count_as_seen_together():
    tls = build_timelines([("s", "h", T), ("s", "h", T), ("s", "h", T + H), ("s", "h", T + 2 * H)])
    tl = tls["h"]
    assert tl.counts == (2, 1, 1) and tl.seen(0) == 2 and tl.seen(2) == 4


def test_temporal_slots_fall_in_the_window_before_the_evidence_and_lean_towards_it():
    tl = hourly(101)
    got = [tl.temporal_slot(90, f"q{i}") for i in range(3000)]
    assert set(got) <= set(range(50, 90)) and 89 in got
    assert {tl.temporal_slot(100, f"q{i}") for i in range(300)} <= set(range(50, 100))
    assert got.count(89) > got.count(50)  # leans towards the evidence
    assert tl.temporal_slot(50, "q") is None  # nothing of the window before it
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
    assert all(T + 4 * H <= t < T + 5 * H for t in last)  # the tail: the median gap
    assert tl.instant(2, "q7") == hourly(5).instant(2, "q7")  # seeded, nothing else
    assert tl.visible(tl.instant(2, "q7")) == 3
