"""Reciprocal rank fusion: hand-computed ranks, ties, and the hybrid engine on real components."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from membench.contract.protocol import Atom
from membench.contract.schema import Scope
from membench.systems.hybrid import HybridEngine, HybridSystem, rrf

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)


def atom(atom_id: str, holder: str, text: str, at: datetime = T0) -> Atom:
    return Atom(
        atom_id,
        f"src:{atom_id}",
        "conversation",
        holder,
        at,
        {"turn_start": 1, "turn_end": 2},
        text,
    )


def test_rrf_hand_computed():
    bm25 = [("x", 9.0), ("y", 5.0), ("z", 1.0)]
    dense = [("z", 0.9), ("x", 0.8)]
    fused = rrf([bm25, dense])
    assert [a for a, _ in fused] == ["x", "z", "y"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1][1] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2][1] == pytest.approx(1 / 62)
    # component scores do not matter, only ranks
    assert rrf([[("x", 1e9), ("y", -5.0), ("z", 0.0)], [("z", 0.0), ("x", 0.0)]]) == fused
    assert rrf([bm25, dense], k=2) == fused[:2]
    assert rrf([bm25], rrf_k=0)[0][1] == pytest.approx(1.0)


def test_rrf_ties_go_to_the_smaller_atom_id():
    fused = rrf([[("q", 1.0), ("p", 0.5)], [("p", 1.0), ("q", 0.5)]])
    assert [a for a, _ in fused] == ["p", "q"] and fused[0][1] == fused[1][1]
    assert rrf([[], []]) == []


def test_rrf_rejects_a_repeated_atom():
    with pytest.raises(ValueError):
        rrf([[("a", 1.0), ("a", 0.5)]])


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory):
    system = HybridSystem(
        lambda items, root: [],
        default_threshold=0.03,
        cache_path=tmp_path_factory.mktemp("emb") / "e.sqlite3",
    )
    q = "When is Melanie's pottery class?"
    system.index(
        [
            atom(
                "m1", "melanie", "My pottery class is on Tuesday evenings at the community center."
            ),
            atom("m2", "melanie", "I signed up for a ceramics workshop that meets every Tuesday."),
            atom("m3", "melanie", "The kids loved the camping trip to the lake."),
            atom("m4", "melanie", "Painting classes start in May."),
            atom("o1", "caroline", q),  # other holder
            atom("f1", "melanie", q, T0 + timedelta(days=30)),  # future
        ]
    )
    return system, q


def test_hybrid_is_the_rrf_of_its_in_scope_components(hybrid):
    system, q = hybrid
    eng: HybridEngine = system.engine
    b = eng.bm25.search(q, "melanie", T0, 1000)
    d = eng.dense.search(q, "melanie", T0, 1000)
    got = eng.search(q, "melanie", T0, 1000)
    assert got == rrf([b, d])
    assert got[0][0] == "m1"
    assert {a for a, _ in got} <= {"m1", "m2", "m3", "m4"}


def test_hybrid_query_scope_and_cartridge(hybrid):
    system, q = hybrid
    res = system.query(q, Scope(holder="melanie", scenario="s"), T0)
    assert "o1" not in [a for a, _ in res.hits] and "f1" not in [a for a, _ in res.hits]
    assert res.cartridge[0] == "m1"  # top of both lists: 2/61 >= 0.03
    assert all(s >= 0.03 for a, s in res.hits if a in res.cartridge)
    later = system.query(q, Scope(holder="melanie", scenario="s"), T0 + timedelta(days=30))
    assert later.hits[0][0] == "f1"
    cfg = system.config()
    assert cfg["engine"]["rrf_k"] == 60 and set(cfg["engine"]["components"]) == {"bm25", "dense"}
    nothing = system.query("", Scope(holder="melanie", scenario="s"), T0)
    assert nothing.hits == [] and nothing.cartridge == []


def test_dense_gate_keeps_the_ranking_and_thresholds_the_cosine(tmp_path):
    system = HybridSystem(
        lambda items, root: [],
        gate="dense",
        default_threshold=0.5,
        cache_path=tmp_path / "e.sqlite3",
    )
    q = "When is Melanie's pottery class?"
    system.index(
        [
            atom(
                "m1", "melanie", "My pottery class is on Tuesday evenings at the community center."
            ),
            atom("m3", "melanie", "The kids loved the camping trip to the lake."),
            atom("o1", "caroline", q),
        ]
    )
    scope = Scope(holder="melanie", scenario="s")
    res, gated = system.query_detail(q, scope, T0)
    assert [a for a, _ in gated] == [a for a, _ in res.hits]  # same atoms, same order
    cos = dict(system.engine.dense.search(q, "melanie", T0, 10))
    assert gated == [(a, cos[a]) for a, _ in res.hits]
    assert res.cartridge == [a for a, s in gated if s >= 0.5] == ["m1"]
    assert system.top1_gate_score(q, scope, T0) == cos["m1"]
    assert system.top1_gate_score("", scope, T0) is None
    # the answer reports the score its cartridge decision thresholds: the best cosine of a
    # candidate (the RRF scores of its hits are not what the gate reads)
    assert res.confidence == max(cos[a] for a, _ in res.hits) == cos["m1"]
    assert system.query("", scope, T0).confidence is None  # no candidate
    assert "dense cosine" in system.config()["cartridge"]["gate"]
    with pytest.raises(ValueError):
        HybridSystem(lambda items, root: [], gate="bm25")
