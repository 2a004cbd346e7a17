"""The test doubles of SPEC section 6 against the gates: an oracle passes every gate, a
scope-ignoring ("leaky") system fails the holder and temporal gates (and false recall)."""

from __future__ import annotations

import random
import sys
from datetime import datetime
from pathlib import Path

import pytest

from membench.metrics import compute_metrics

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "metrics"))
import synth


@pytest.fixture(scope="module")
def world() -> synth.World:
    # at most 10 gold regions per item: with more, even an oracle cannot put every region's
    # atom in the top 10 (recall@10 < 1 by definition, as in trec_eval)
    w = synth.make_world(11, queries=30, unanswerable=0.3, max_gold=10)
    # derived temporal unanswerables: asked before anything was observed
    for r in w.records:
        if r["unanswerable"] and int(r["query_id"].rsplit("q", 1)[1]) % 2:
            r["as_of"] = synth.T0.isoformat()
    return w


def _in_scope(w: synth.World, r: dict) -> list[str]:
    as_of = datetime.fromisoformat(r["as_of"])
    return [a for a in w.atoms_of_holder[r["scope"]["holder"]] if w.observed_of_atom[a] <= as_of]


def oracle(w: synth.World) -> list[dict]:
    rows = []
    for r in w.records:
        gold = w.gold_atoms[r["query_id"]]
        rest = [a for a in _in_scope(w, r) if a not in gold][:20]
        hits = [[a, 100.0 - i] for i, a in enumerate(gold + rest)]
        rows.append(
            {"query_id": r["query_id"], "hits": hits, "cartridge": list(gold), "latency_ms": 1.0}
        )
    return rows


def leaky(w: synth.World, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for r in w.records:
        gold = w.gold_atoms[r["query_id"]]
        pool = w.atoms_of_modality[r["modality"]]  # every holder, any time
        hits = list(dict.fromkeys(gold + rng.sample(pool, min(10, len(pool)))))
        rows.append(
            {
                "query_id": r["query_id"],
                "hits": [[a, 1.0] for a in hits],
                "cartridge": hits[:3],
                "latency_ms": 2.0,
            }
        )
    return rows


def _gates(m: dict) -> dict[tuple[str, str], bool | None]:
    return {(g["scope"], g["metric"]): g["pass"] for g in m["gates"]}


def test_oracle_passes_every_gate(world):
    m = compute_metrics(world.records, world.items, world.atoms, oracle(world))
    for scope in (*synth.MODALITIES, "all"):
        assert m[scope]["recall@10"]["value"] == 1.0, scope
        assert m[scope]["mrr"]["value"] == 1.0
        assert m[scope]["ndcg@10"]["value"] == pytest.approx(1.0)
        assert m[scope]["cartridge_recall"]["value"] == 1.0
        assert m[scope]["false_recall_rate"]["value"] == 0.0
        assert m[scope]["abstain_rate_answerable"]["value"] == 0.0
        assert m[scope]["temporal_correctness"]["value"] == 1.0
        assert m[scope]["holder_correctness"]["value"] == 1.0
        assert m[scope]["false_recall_rate"]["n"] > 0
    assert all(_gates(m).values()) and len(_gates(m)) == 4 * 7


def test_leaky_system_fails_scope_gates(world):
    m = compute_metrics(world.records, world.items, world.atoms, leaky(world))
    gates = _gates(m)
    for scope in (*synth.MODALITIES, "all"):
        assert m[scope]["holder_correctness"]["value"] < 0.95
        assert gates[(scope, "holder_correctness")] is False
        assert gates[(scope, "false_recall_rate")] is False
        assert m[scope]["recall@10"]["value"] == 1.0  # it finds the gold: recall is not enough
    assert m["all"]["temporal_correctness"]["value"] < 0.95
    assert gates[("all", "temporal_correctness")] is False


def test_scope_only_leak_is_caught_exactly(world):
    """The oracle plus exactly one foreign atom in one item's cartridge."""
    rows = oracle(world)
    r0 = world.records[0]
    other = next(
        h
        for h in world.atoms_of_holder
        if h != r0["scope"]["holder"] and h.startswith(r0["modality"])
    )
    rows[0]["cartridge"].append(world.atoms_of_holder[other][0])
    m = compute_metrics(world.records, world.items, world.atoms, rows)
    n = m[r0["modality"]]["holder_correctness"]["denominator"]
    assert m[r0["modality"]]["holder_correctness"]["value"] == pytest.approx((n - 1) / n)
    assert m[r0["modality"]]["temporal_correctness"]["value"] == 1.0
