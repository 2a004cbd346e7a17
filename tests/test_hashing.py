"""membench.core.hashing's keyed generator: the draws every seeded statistic makes (bootstrap
intervals, paired tests, rank agreement, Q2D-Web), pinned to the bit, and written once."""

from __future__ import annotations

import ast
import zlib
from pathlib import Path

import numpy as np
import pytest

from membench.core.hashing import keyed_rng

PACKAGE = Path(__file__).resolve().parents[1] / "membench"

# the first two raw PCG64 outputs of the generator of (seed, key), as the three copies of
# ``_rng(seed, key)`` in metrics/bootstrap.py, analysis/paired.py and analysis/agreement.py
# (and q2d.py's ``_rng(key)`` with seed 20240101) drew them before they were folded into one
PINNED = [
    (0, "", [11749869230777074271, 4976686463289251617]),
    (1, "map", [16541779478931700533, 12990649283948116080]),
    (20240101, "recall@10|bootstrap", [12685475296077105883, 15662465507884665387]),
    (20240607, "pdf/holder:7|permutation", [6081963719431238596, 17082654481405572007]),
    (2**40 + 3, "é∂ü", [13610508836431512875, 6340391677047773215]),
    (20240101, "qk", [8806986346751919578, 155562782001025753]),
]


@pytest.mark.parametrize("seed,key,raw", PINNED)
def test_keyed_rng_draws_what_the_copies_drew(seed, key, raw):
    assert [int(x) for x in keyed_rng(seed, key).bit_generator.random_raw(2)] == raw


@pytest.mark.parametrize("seed", [0, 7, 20240101, 2**31 - 1, 2**63])
@pytest.mark.parametrize("key", ["", "map", "x" * 300, "é∂ü|bootstrap"])
def test_keyed_rng_is_default_rng_of_seed_and_crc32(seed, key):
    """The rule the docs state (PCG64 seeded with (seed, crc32(key))), over the draws the
    statistics make: integers, uniforms, normals."""
    a = keyed_rng(seed, key)
    b = np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])
    assert np.array_equal(a.integers(0, 1000, 257), b.integers(0, 1000, 257))
    assert np.array_equal(a.random(33), b.random(33))
    assert np.array_equal(a.standard_normal(9), b.standard_normal(9))


def test_different_keys_draw_differently():
    draws = {
        k: tuple(keyed_rng(20240101, k).bit_generator.random_raw(4))
        for k in ("map|bootstrap", "map|permutation", "recall", "")
    }
    assert len(set(draws.values())) == len(draws)


def test_no_other_module_seeds_a_generator_from_crc32():
    """One keyed generator: a module that seeds ``default_rng`` with a crc32 of its own is a
    copy that can drift from the frozen figures' draws."""
    copies = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "core" / "hashing.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", None) == "default_rng"
                and "crc32" in ast.unparse(node)
            ):
                copies.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not copies, copies
