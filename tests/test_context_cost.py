"""membench.metrics.context by hand: token counts, the cost of a cartridge (tokens, picture
area, video seconds), and recall within a token budget (prefix rule, ties, empty inputs, and a
coarse atom that wins recall@10 but loses recall@1024)."""

from __future__ import annotations

import math

import pytest

from membench.contract.protocol import order_hits
from membench.contract.schema import Gold
from membench.metrics.context import (
    BUDGETS,
    Cost,
    CostAtom,
    cartridge_cost,
    count_tokens,
    hits_region,
    recall_at_budget,
    recall_at_budgets,
    taken,
    union_area,
    union_length,
)

SCREEN = {"width": 100, "height": 100}


def words(n: int) -> str:
    return " ".join(["w"] * n)


def turns(a: int, b: int, n_words: int, sid: str = "c:1") -> CostAtom:
    return CostAtom(sid, "conversation", {"turn_start": a, "turn_end": b}, words(n_words))


def gold(sid: str, region: dict) -> Gold:
    return Gold(source_id=sid, region=region)


# ----------------------------------------------------------------------------- tokens


def test_count_tokens():
    assert count_tokens("") == 0
    assert count_tokens("   \n\t ") == 0
    assert count_tokens("  one\ttwo\n\nthree  ") == 3
    assert count_tokens("a\u00a0b\u3000c") == 3  # Unicode spaces split too
    assert count_tokens("don't stop-now, 1,200.") == 3  # punctuation stays in its word
    assert CostAtom("c:1", "conversation", {"turn_start": 1, "turn_end": 1}, "a b c").tokens == 3


# ----------------------------------------------------------------------------- cartridge cost


def test_empty_cartridge_costs_nothing():
    assert cartridge_cost([]) == Cost(atoms=0, tokens=0, area=0.0, seconds=0.0)


def test_tokens_are_summed_even_when_atoms_overlap():
    c = cartridge_cost([turns(1, 3, 30), turns(3, 5, 20), turns(3, 5, 20, sid="c:2")])
    assert c == Cost(atoms=3, tokens=70, area=0.0, seconds=0.0)


def test_whole_images_count_one_each():
    img = [
        CostAtom("i:1", "image", {}, "x y"),
        CostAtom("i:1", "image", {}, "z"),
        CostAtom("i:2", "image", {}, ""),
    ]
    assert cartridge_cost(img) == Cost(atoms=3, tokens=3, area=2.0, seconds=0.0)


def test_screenshot_boxes_union_share():
    a = CostAtom("s:1", "ui_screenshot", {"bbox": [0, 0, 50, 50]}, meta=SCREEN)
    b = CostAtom("s:1", "ui_screenshot", {"bbox": [25, 25, 75, 75]}, meta=SCREEN)
    inside = CostAtom("s:1", "ui_screenshot", {"bbox": [30, 30, 40, 40]}, meta=SCREEN)
    other = CostAtom("s:2", "ui_screenshot", {"bbox": [0, 0, 10, 10]}, meta=SCREEN)
    # 2500 + 2500 - 625 overlap = 4375 of 10000; the box inside adds nothing
    assert cartridge_cost([a, b, inside]).area == pytest.approx(0.4375)
    assert cartridge_cost([a, b, inside, other]).area == pytest.approx(0.4475)
    img = CostAtom("i:1", "image", {})
    assert cartridge_cost([a, img]).area == pytest.approx(1.25)


def test_screenshot_share_needs_the_item_size():
    with pytest.raises(ValueError, match="meta.width"):
        cartridge_cost([CostAtom("s:1", "ui_screenshot", {"bbox": [0, 0, 5, 5]})])


def test_video_seconds_are_the_union_of_spans_per_video():
    def span(sid, s, e):
        return CostAtom(sid, "video", {"t_start": s, "t_end": e}, "cue")

    c = cartridge_cost(
        [
            span("v:1", 0.0, 30.0),
            span("v:1", 15.0, 45.0),
            span("v:1", 50, 60),
            span("v:2", 0.0, 10.0),
            span("v:2", 5.0, 5.0),
        ]
    )
    assert c == Cost(atoms=5, tokens=5, area=0.0, seconds=65.0)


def test_union_helpers():
    assert union_area([]) == 0.0
    assert union_area([[0, 0, 2, 2], [2, 0, 4, 2]]) == 8.0  # touching: no overlap
    assert union_area([[0, 0, 4, 4], [1, 1, 2, 2]]) == 16.0  # contained
    assert union_area([[0, 0, 2, 4], [0, 1, 4, 2]]) == 10.0  # a cross
    assert union_length([]) == 0.0
    assert union_length([(5.0, 7.0), (0.0, 2.0), (1.0, 3.0), (3.0, 3.0)]) == 5.0


# ----------------------------------------------------------------------------- budgets


def test_taken_is_a_prefix():
    assert taken([100, 100, 56], 256) == 3  # exactly the budget: taken
    assert taken([100, 100, 57], 256) == 2
    assert taken([100, 200, 10], 256) == 1  # nothing after the first refusal
    assert taken([300, 1], 256) == 0
    assert taken([0, 0, 256, 0], 256) == 4  # empty atoms cost nothing
    assert taken([], 256) == 0


def test_recall_at_budget_by_hand():
    ranked = [
        (a, a.tokens)
        for a in [turns(1, 2, 100), turns(4, 5, 100), turns(7, 8, 100), turns(9, 9, 10)]
    ]
    g = [
        gold("c:1", {"turn": 1}),
        gold("c:1", {"turn": 5}),
        gold("c:1", {"turn": 9}),
        gold("c:2", {"turn": 1}),
    ]
    assert recall_at_budget(ranked, g, hits_region, 99) == 0.0
    assert recall_at_budget(ranked, g, hits_region, 100) == 0.25
    assert recall_at_budget(ranked, g, hits_region, 299) == 0.5
    assert recall_at_budget(ranked, g, hits_region, 310) == 0.75
    assert recall_at_budgets(ranked, g, hits_region) == {256: 0.5, 1024: 0.75, 4096: 0.75}
    assert BUDGETS == (256, 1024, 4096)


def test_a_gold_region_hit_twice_counts_once():
    ranked = [(turns(1, 3, 10), 10), (turns(2, 4, 10), 10)]
    assert (
        recall_at_budget(
            ranked, [gold("c:1", {"turn": 2}), gold("c:1", {"turn": 9})], hits_region, 256
        )
        == 0.5
    )


def test_empty_inputs():
    g = [gold("c:1", {"turn": 1})]
    assert recall_at_budget([], g, hits_region, 256) == 0.0  # an empty cartridge
    assert math.isnan(recall_at_budget([(turns(1, 1, 5), 5)], [], hits_region, 256))
    assert all(math.isnan(v) for v in recall_at_budgets([], [], hits_region).values())


def test_ties_keep_the_systems_order_then_the_budget_cuts():
    atoms = {"a": turns(1, 1, 200), "b": turns(2, 2, 200), "c": turns(3, 3, 50)}
    # b and a tie on score: b stays first (the system's order, a stable sort)
    order = order_hits([["c", 0.5], ["b", 0.9], ["a", 0.9]])
    assert order == ["b", "a", "c"]
    ranked = [(atoms[x], atoms[x].tokens) for x in order]
    g = [gold("c:1", {"turn": 1}), gold("c:1", {"turn": 2})]
    assert recall_at_budget(ranked, g, hits_region, 256) == 0.5  # b only: a crosses
    assert recall_at_budget(ranked, g, hits_region, 400) == 1.0


def test_a_coarse_atom_wins_recall_at_10_and_loses_recall_at_1024():
    """One huge atom (the whole session) against windows of 3 turns: the coarse system finds
    every gold turn in its top 10 but hands over 5,000 words to do it; within 1,024 words it
    gives nothing, where the fine-grained one keeps what it ranked high."""
    g = [gold("c:1", {"turn": t}) for t in (2, 14, 50)]
    coarse = [CostAtom("c:1", "conversation", {"turn_start": 1, "turn_end": 60}, words(5000))]
    fine = [
        turns(1, 3, 200),
        turns(40, 42, 200),
        turns(13, 15, 200),
        turns(4, 6, 200),
        turns(7, 9, 200),
        turns(16, 18, 200),
        turns(19, 21, 200),
        turns(22, 24, 200),
        turns(25, 27, 200),
        turns(28, 30, 200),
        turns(49, 51, 200),
    ]

    def recall_at_10(atoms):
        return sum(any(hits_region(a, x) for a in atoms[:10]) for x in g) / len(g)

    def at_budget(atoms, b):
        return recall_at_budget([(a, a.tokens) for a in atoms], g, hits_region, b)

    assert recall_at_10(coarse) == 1.0 and recall_at_10(fine) == pytest.approx(2 / 3)
    assert at_budget(coarse, 1024) == 0.0 and at_budget(fine, 1024) == pytest.approx(2 / 3)
    assert at_budget(coarse, 4096) == 0.0 and at_budget(fine, 4096) == 1.0  # all 11 fit
    assert cartridge_cost(coarse).tokens == 5000 and cartridge_cost(fine[:3]).tokens == 600


def test_hits_region_is_spec_section_7():
    a = CostAtom("v:1", "video", {"t_start": 0.0, "t_end": 30.0})
    assert hits_region(a, gold("v:1", {"t_start": 29.0, "t_end": 40.0}))
    assert not hits_region(a, gold("v:1", {"t_start": 30.0, "t_end": 40.0}))  # touching
    assert not hits_region(a, gold("v:2", {"t_start": 0.0, "t_end": 5.0}))  # another item
    s = CostAtom("s:1", "ui_screenshot", {"bbox": [0, 0, 10, 10]}, meta=SCREEN)
    assert hits_region(s, gold("s:1", {"bbox": [4, 4, 6, 6]}))  # centre inside
    assert not hits_region(s, gold("s:1", {"bbox": [0, 0, 4, 4]}))
