"""The cartridge policy (threshold, max atoms, token budget)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from membench.systems.cartridge import CartridgePolicy


def atoms(**spec):
    """name=(modality, n_tokens) -> objects with modality and text."""
    return {k: SimpleNamespace(modality=m, text=" ".join(["w"] * n)) for k, (m, n) in spec.items()}


def test_threshold_and_abstention():
    a = atoms(a=("pdf", 10), b=("pdf", 10), c=("pdf", 10))
    p = CartridgePolicy(default_threshold=0.5)
    assert p.compile([("a", 0.9), ("b", 0.5), ("c", 0.49)], a) == ["a", "b"]
    assert p.compile([("c", 0.49)], a) == []  # abstain
    assert p.compile([], a) == []


def test_per_modality_thresholds():
    a = atoms(p=("pdf", 5), v=("video", 5))
    p = CartridgePolicy(default_threshold=0.5, thresholds={"video": 0.8})
    assert p.threshold("pdf") == 0.5 and p.threshold("video") == 0.8
    assert p.compile([("v", 0.7), ("p", 0.6)], a) == ["p"]
    assert p.compile([("v", 0.8), ("p", 0.6)], a) == ["v", "p"]


def test_max_atoms():
    a = atoms(**{f"a{i}": ("pdf", 1) for i in range(9)})
    hits = [(f"a{i}", 1.0 - i / 10) for i in range(9)]
    assert CartridgePolicy(max_atoms=5).compile(hits, a) == ["a0", "a1", "a2", "a3", "a4"]
    assert CartridgePolicy(max_atoms=0).compile(hits, a) == []


def test_token_budget_skips_what_does_not_fit():
    a = atoms(a=("pdf", 300), b=("pdf", 250), c=("pdf", 200), d=("pdf", 12))
    hits = [("a", 4.0), ("b", 3.0), ("c", 2.0), ("d", 1.0)]
    # a (300) fits; b would make 550 > 512: skipped; c makes 500; d would make 512: fits
    assert CartridgePolicy(token_budget=512).compile(hits, a) == ["a", "c", "d"]
    assert CartridgePolicy(token_budget=511).compile(hits, a) == ["a", "c"]


def test_an_oversize_first_atom_is_admitted_alone():
    a = atoms(big=("pdf", 900), small=("pdf", 10))
    assert CartridgePolicy(token_budget=512).compile([("big", 2.0), ("small", 1.0)], a) == ["big"]
    # below threshold it is still not admitted
    assert CartridgePolicy(default_threshold=3.0).compile([("big", 2.0)], a) == []


def test_config_is_complete():
    cfg = CartridgePolicy(default_threshold=0.4, thresholds={"video": 0.6, "code": 0.5}).config()
    assert cfg["default_threshold"] == 0.4 and list(cfg["thresholds"]) == ["code", "video"]
    assert cfg["max_atoms"] == 5 and cfg["token_budget"] == 512


def test_policy_rejects_nonsense():
    with pytest.raises(ValueError):
        CartridgePolicy(max_atoms=-1)
    with pytest.raises(ValueError):
        CartridgePolicy(default_threshold=float("nan"))


def test_early_exit_gives_the_full_walks_cartridge():
    """descending=True (and counted tokens) stops the walk early; the cartridge is the one the
    full walk gives, over random policies, modalities, texts and descending scores."""
    import random

    from membench.systems.cartridge import token_count

    rng = random.Random(3)
    for trial in range(400):
        mods = ["pdf", "image", "code"]
        policy = CartridgePolicy(
            default_threshold=rng.uniform(0, 10),
            thresholds={m: rng.uniform(0, 10) for m in mods if rng.random() < 0.6},
            max_atoms=rng.randint(0, 6),
            token_budget=rng.randint(0, 40),
        )
        atoms = {
            f"a{i}": SimpleNamespace(
                modality=rng.choice(mods),
                text=" ".join("w" * rng.randint(0, 2) for _ in range(rng.randint(0, 30))),
            )
            for i in range(40)
        }
        scores = sorted(
            (rng.choice([rng.uniform(0, 12), 5.0, 5.0]) for _ in range(40)), reverse=True
        )
        hits = list(zip(atoms, scores))
        tokens = {k: token_count(a.text) for k, a in atoms.items()}
        full = policy.compile(hits, atoms)
        assert policy.compile(hits, atoms, descending=True) == full, trial
        assert policy.compile(hits, atoms, descending=True, tokens=tokens) == full, trial
        least = min(tokens.values())
        for lower in {least, max(0, least - 1), 0}:  # the least count, or any lower bound
            assert (
                policy.compile(hits, atoms, descending=True, tokens=tokens, min_tokens=lower)
                == full
            ), trial
            assert policy.compile(hits, atoms, min_tokens=lower) == full, trial


def test_budget_exit_stops_the_walk_once_nothing_can_fit():
    """With min_tokens, the walk ends when the shortest atom would not fit after the first one:
    later hits are not looked at (an atom missing from ``atoms`` there would be a KeyError)."""
    policy = CartridgePolicy(default_threshold=0.0, max_atoms=5, token_budget=10)
    atoms = {
        "long": SimpleNamespace(modality="code", text="w " * 9),
        "short": SimpleNamespace(modality="code", text="w w"),
    }
    hits = [("long", 9.0), ("short", 8.0)] + [(f"gone{i}", 1.0) for i in range(50)]
    tokens = {"long": 9, "short": 2}
    # 9 used, the shortest is 2: 11 > 10, nothing later can fit
    assert policy.compile(hits, atoms, descending=True, tokens=tokens, min_tokens=2) == ["long"]
    with pytest.raises(KeyError):  # without the bound the walk goes on and looks them up
        policy.compile(hits, atoms, descending=True, tokens=tokens)
    # a bound of 1 lets the walk go on: "short" (2) does not fit either, so it looks further
    with pytest.raises(KeyError):
        policy.compile(hits, atoms, descending=True, tokens=tokens, min_tokens=1)
