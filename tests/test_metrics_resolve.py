"""Resolution edge cases per modality (SPEC section 7: when does an atom hit a gold region),
for the one-pair definition and the vectorised table, which must agree."""

from __future__ import annotations

import random

import numpy as np
import pytest

from membench.metrics.resolve import AtomTable, GoldRef
from membench.modalities import check_extent, region_hit

SPAN = {"path": "a.py", "line_start": 10, "line_end": 20}

# (modality, atom extent, gold region, hit?)
CASES = [
    # pdf: same page; blocks must match only when both carry one
    ("pdf", {"page": 3}, {"page": 3}, True),
    ("pdf", {"page": 3}, {"page": 4}, False),
    ("pdf", {"page": 3, "block": 2}, {"page": 3}, True),  # page gold, block atom
    ("pdf", {"page": 3}, {"page": 3, "block": 2}, True),  # block gold, page atom
    ("pdf", {"page": 3, "block": 2}, {"page": 3, "block": 2}, True),
    ("pdf", {"page": 3, "block": 1}, {"page": 3, "block": 2}, False),
    ("pdf", {"page": 2, "block": 2}, {"page": 3, "block": 2}, False),
    # image: the whole item
    ("image", {}, {}, True),
    # ui_screenshot: the atom box's centre inside the gold box, edges included (ScreenSpot)
    ("ui_screenshot", {"bbox": [0, 0, 5, 5]}, {"bbox": [2, 2, 8, 8]}, True),  # (2.5, 2.5)
    ("ui_screenshot", {"bbox": [0, 0, 5, 5]}, {"bbox": [4, 4, 8, 8]}, False),  # overlap only
    ("ui_screenshot", {"bbox": [0, 0, 5, 5]}, {"bbox": [2.5, 0, 9, 5]}, True),  # centre on edge
    ("ui_screenshot", {"bbox": [0, 0, 5, 5]}, {"bbox": [0, 0, 2.5, 2.5]}, True),  # on a corner
    ("ui_screenshot", {"bbox": [0, 0, 5, 5]}, {"bbox": [2.501, 0, 9, 5]}, False),
    ("ui_screenshot", {"bbox": [0, 0, 5, 5]}, {"bbox": [7, 7, 9, 9]}, False),  # apart
    ("ui_screenshot", {"bbox": [0, 0, 10, 10]}, {"bbox": [2, 2, 3, 3]}, False),  # contains it
    ("ui_screenshot", {"bbox": [2, 2, 3, 3]}, {"bbox": [0, 0, 10, 10]}, True),  # inside it
    ("ui_screenshot", {"bbox": [0, 0, 1000, 2000]}, {"bbox": [400, 900, 600, 1100]}, True),
    ("ui_screenshot", {"bbox": [0, 0, 500, 2000]}, {"bbox": [400, 900, 600, 1100]}, False),
    # video: the spans overlap for longer than 0 s
    ("video", {"t_start": 0.0, "t_end": 5.0}, {"t_start": 5.0, "t_end": 9.0}, False),  # touch
    ("video", {"t_start": 5.0, "t_end": 9.0}, {"t_start": 0.0, "t_end": 5.0}, False),  # touch
    ("video", {"t_start": 0.0, "t_end": 5.0}, {"t_start": 4.999, "t_end": 9.0}, True),
    ("video", {"t_start": 0.0, "t_end": 5.0}, {"t_start": 5.001, "t_end": 9.0}, False),
    ("video", {"t_start": 2.0, "t_end": 3.0}, {"t_start": 0.0, "t_end": 10.0}, True),
    ("video", {"t_start": 0.0, "t_end": 10.0}, {"t_start": 2.0, "t_end": 3.0}, True),
    ("video", {"t_start": 4.0, "t_end": 4.0}, {"t_start": 0.0, "t_end": 9.0}, False),  # instant
    ("video", {"t_start": 30, "t_end": 60}, {"t_start": 59.5, "t_end": 75}, True),
    # code: path equal and (line inside the span, or symbol equal)
    ("code", SPAN, {"path": "a.py", "line": 10}, True),
    ("code", SPAN, {"path": "a.py", "line": 20}, True),
    ("code", SPAN, {"path": "a.py", "line": 21}, False),
    ("code", SPAN, {"path": "a.py", "line": 9}, False),
    ("code", SPAN, {"path": "b.py", "line": 15}, False),
    (
        "code",
        {"path": "a.py", "line_start": 1, "line_end": 9, "symbol": "f"},
        {"path": "a.py", "symbol": "f"},
        True,
    ),
    (
        "code",
        {"path": "a.py", "line_start": 1, "line_end": 9, "symbol": "f"},
        {"path": "a.py", "symbol": "g"},
        False,
    ),
    (
        "code",
        {"path": "a.py", "line_start": 1, "line_end": 9, "symbol": "f"},
        {"path": "b.py", "symbol": "f"},
        False,
    ),  # same name, other file
    (
        "code",
        {"path": "a.py", "line_start": 1, "line_end": 999},
        {"path": "a.py", "symbol": "f"},
        False,
    ),  # no symbol on the atom
    (
        "code",
        {"path": "a.py", "line_start": 1, "line_end": 9, "symbol": "f"},
        {"path": "a.py", "line": 12},
        False,
    ),  # line gold ignores symbol
    # conversation: turn inside [turn_start, turn_end]
    ("conversation", {"turn_start": 3, "turn_end": 5}, {"turn": 3}, True),
    ("conversation", {"turn_start": 3, "turn_end": 5}, {"turn": 5}, True),
    ("conversation", {"turn_start": 3, "turn_end": 5}, {"turn": 6}, False),
    ("conversation", {"turn_start": 3, "turn_end": 5}, {"turn": 2}, False),
    # conversation: a turn range (a session-level judgment) is hit by any intersecting atom
    ("conversation", {"turn_start": 3, "turn_end": 5}, {"turn_start": 1, "turn_end": 3}, True),
    ("conversation", {"turn_start": 3, "turn_end": 5}, {"turn_start": 5, "turn_end": 9}, True),
    ("conversation", {"turn_start": 3, "turn_end": 5}, {"turn_start": 4, "turn_end": 4}, True),
    ("conversation", {"turn_start": 3, "turn_end": 5}, {"turn_start": 1, "turn_end": 20}, True),
    ("conversation", {"turn_start": 3, "turn_end": 5}, {"turn_start": 6, "turn_end": 20}, False),
    ("conversation", {"turn_start": 3, "turn_end": 5}, {"turn_start": 1, "turn_end": 2}, False),
]


def _table(modality: str, extents: list[dict], sources: list[int] | None = None) -> AtomTable:
    n = len(extents)
    src = sources if sources is not None else [0] * n
    return AtomTable(
        [f"a{i}" for i in range(n)],
        src,
        [0] * n,
        [0] * n,
        [modality] * n,
        extents,
        n_sources=max(src) + 1 if n else 1,
    )


@pytest.mark.parametrize("modality,extent,region,hit", CASES)
def test_overlap_cases(modality, extent, region, hit):
    assert check_extent(modality, extent) is None
    assert region_hit(modality, extent, region) is hit
    t = _table(modality, [extent])
    assert bool(t.hit_mask(GoldRef(0, modality, region), np.array([0]))[0]) is hit


@pytest.mark.parametrize("modality,extent,region,hit", [c for c in CASES if c[3]])
def test_other_source_never_hits(modality, extent, region, hit):
    t = _table(modality, [extent], sources=[1])
    assert not t.hit_mask(GoldRef(0, modality, region), np.array([0]))[0]


def _random_extent(m: str, rng: random.Random) -> dict:
    if m == "pdf":
        e = {"page": rng.randint(1, 4)}
        if rng.random() < 0.5:
            e["block"] = rng.randint(0, 3)
        return e
    if m == "image":
        return {}
    if m == "ui_screenshot":
        x0, y0 = rng.randint(0, 8), rng.randint(0, 8)
        return {"bbox": [x0, y0, x0 + rng.randint(1, 4), y0 + rng.randint(1, 4)]}
    if m == "video":
        s = rng.randint(0, 8) / 2
        return {"t_start": s, "t_end": s + rng.randint(0, 4) / 2}
    if m == "code":
        s = rng.randint(1, 10)
        e = {
            "path": rng.choice(["a.py", "b.py"]),
            "line_start": s,
            "line_end": s + rng.randint(0, 4),
        }
        if rng.random() < 0.5:
            e["symbol"] = rng.choice(["f", "g"])
        return e
    s = rng.randint(1, 8)
    return {"turn_start": s, "turn_end": s + rng.randint(0, 3)}


def _random_region(m: str, rng: random.Random) -> dict:
    if m == "pdf":
        r = {"page": rng.randint(1, 4)}
        if rng.random() < 0.5:
            r["block"] = rng.randint(0, 3)
        return r
    if m == "image":
        return {}
    if m == "ui_screenshot":
        x0, y0 = rng.randint(0, 8), rng.randint(0, 8)
        return {"bbox": [x0, y0, x0 + rng.randint(1, 4), y0 + rng.randint(1, 4)]}
    if m == "video":
        s = rng.randint(0, 8) / 2
        return {"t_start": s, "t_end": s + rng.randint(1, 4) / 2}  # a gold span has a length
    if m == "code":
        p = rng.choice(["a.py", "b.py"])
        return (
            {"path": p, "line": rng.randint(1, 14)}
            if rng.random() < 0.5
            else {"path": p, "symbol": rng.choice(["f", "g", "h"])}
        )
    if rng.random() < 0.3:
        s = rng.randint(1, 12)
        return {"turn_start": s, "turn_end": s + rng.randint(0, 6)}
    return {"turn": rng.randint(1, 12)}


@pytest.mark.parametrize(
    "modality", ["pdf", "image", "ui_screenshot", "video", "code", "conversation"]
)
def test_vectorised_agrees_with_definition(modality):
    rng = random.Random(modality)
    extents = [_random_extent(modality, rng) for _ in range(300)]
    sources = [rng.randint(0, 2) for _ in extents]
    t = _table(modality, extents, sources)
    idx = np.arange(len(extents))
    seen = set()
    for _ in range(200):
        region = _random_region(modality, rng)
        src = rng.randint(0, 2)
        got = t.hit_mask(GoldRef(src, modality, region), idx)
        want = [s == src and region_hit(modality, e, region) for e, s in zip(extents, sources)]
        assert got.tolist() == want
        seen.update(want)
    assert seen == {True, False}


def test_first_positions():
    t = _table(
        "conversation",
        [
            {"turn_start": 1, "turn_end": 2},
            {"turn_start": 3, "turn_end": 4},
            {"turn_start": 2, "turn_end": 3},
        ],
    )
    gold = [
        GoldRef(0, "conversation", {"turn": 3}),
        GoldRef(0, "conversation", {"turn": 9}),
        GoldRef(0, "conversation", {"turn": 2}),
    ]
    # ranked list: atom 2 first, then 0, then 1
    assert t.first_positions(gold, np.array([2, 0, 1])).tolist() == [0, -1, 0]
    assert t.first_positions(gold, np.array([1, 0])).tolist() == [0, -1, 1]
    assert t.first_positions(gold, np.array([], dtype=np.int64)).tolist() == [-1, -1, -1]


@pytest.mark.parametrize(
    "modality,extent",
    [
        ("pdf", {"page": 0}),
        ("pdf", {"page": 1, "block": -1}),
        ("pdf", {"page": "1"}),
        ("pdf", {"page": True}),
        ("image", {"page": 1}),
        ("ui_screenshot", {"bbox": [5, 0, 5, 5]}),
        ("ui_screenshot", {"bbox": [0, 0, 5]}),
        ("video", {"t_start": 3, "t_end": 2}),
        ("video", {"t_start": float("nan"), "t_end": 2}),
        ("code", {"path": "a", "line": 3}),
        ("code", {"path": "a", "line_start": 5, "line_end": 4}),
        ("code", {"path": "", "line_start": 1, "line_end": 4}),
        ("code", {"path": "a", "line_start": 1, "line_end": 4, "symbol": ""}),
        ("conversation", {"turn": 3}),
        ("conversation", {"turn_start": 0, "turn_end": 2}),
        ("nope", {}),
    ],
)
def test_bad_extents_are_rejected(modality, extent):
    assert check_extent(modality, extent) is not None


def test_video_gold_spans_need_a_length_atom_windows_may_be_empty():
    """A gold span of no length can never be hit under the positive-overlap rule: refused as a
    region; an empty atom window is well-formed (it hits nothing)."""
    from membench.modalities import check_region

    assert "t_start < t_end" in check_region("video", {"t_start": 2.0, "t_end": 2.0})
    assert check_region("video", {"t_start": 2.0, "t_end": 2.5}) is None
    assert check_extent("video", {"t_start": 2.0, "t_end": 2.0}) is None
