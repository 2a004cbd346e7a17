"""The common retrieval base: time arithmetic, the tie rule, the MemorySystem wrapper (run on
the real BM25 engine: it is fast), and the depth being filled with in-scope atoms."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from membench.contract.protocol import MAX_DEPTH, Atom, MemorySystem, Result
from membench.contract.schema import Scope, SourceItem
from membench.systems.bm25 import BM25Engine, BM25System
from membench.systems.retrieval import has_terms, rank, to_micros

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)


def atom(atom_id: str, holder: str, text: str, at: datetime = T0) -> Atom:
    return Atom(
        atom_id,
        f"src:{atom_id}",
        "conversation",
        holder,
        at,
        {"turn_start": 1, "turn_end": 1},
        text,
    )


def content_chunker(items: list[SourceItem], corpus_root: Path) -> list[Atom]:
    """A stand-in for membench.content.chunk: one atom per item, its content as text."""
    return [
        Atom(
            f"c{i:03d}",
            it.source_id,
            it.modality,
            it.holder,
            it.observed_at,
            {"turn_start": 1, "turn_end": 1},
            str(it.content),
        )
        for i, it in enumerate(sorted(items, key=lambda it: it.source_id))
    ]


def test_to_micros_is_exact_and_needs_a_timezone():
    assert to_micros(datetime(1970, 1, 1, tzinfo=timezone.utc)) == 0
    a = datetime(2024, 1, 1, 10, 0, 0, 1, tzinfo=timezone(timedelta(hours=2)))
    b = datetime(2024, 1, 1, 8, 0, 0, 1, tzinfo=timezone.utc)
    assert to_micros(a) == to_micros(b) == to_micros(b - timedelta(microseconds=1)) + 1
    with pytest.raises(ValueError):
        to_micros(datetime(2024, 1, 1))


def test_has_terms():
    assert has_terms("a") and has_terms("42") and has_terms("été")
    assert not has_terms("") and not has_terms("  ?!-- ") and not has_terms(None)


def test_rank_orders_by_score_then_atom_id():
    hits = [("b", 1.0), ("a", 1.0), ("c", 2.0), ("d", 0.5)]
    assert rank(hits, 10) == [("c", 2.0), ("a", 1.0), ("b", 1.0), ("d", 0.5)]
    assert rank(hits, 2) == [("c", 2.0), ("a", 1.0)]


def test_system_protocol_ingest_query_config(tmp_path):
    items = [
        SourceItem(
            source_id="conv:1",
            modality="conversation",
            holder="alice",
            observed_at=T0,
            content="We booked the cabin at Lake Tahoe for July.",
        ),
        SourceItem(
            source_id="conv:2",
            modality="conversation",
            holder="alice",
            observed_at=T0,
            content="My sister adopted a beagle named Biscuit.",
        ),
        SourceItem(
            source_id="conv:3",
            modality="conversation",
            holder="bob",
            observed_at=T0,
            content="The cabin at Lake Tahoe is booked for July.",
        ),
    ]
    system = BM25System(content_chunker, chunker_config={"note": "test"}, default_threshold=0.0)
    assert isinstance(system, MemorySystem)
    atoms = system.ingest(items, tmp_path)
    assert [a.source_id for a in atoms] == ["conv:1", "conv:2", "conv:3"]
    res = system.query(
        "Where is the cabin booked?", Scope(holder="alice", scenario="s"), T0 + timedelta(days=1)
    )
    assert isinstance(res, Result)
    assert [h[0] for h in res.hits] == ["c000"]
    assert res.cartridge == ["c000"]
    cfg = system.config()
    json.dumps(cfg)  # recorded in meta.json
    assert cfg["system"] == "bm25" and cfg["chunker"]["note"] == "test"
    assert cfg["chunker"]["function"].endswith("content_chunker")
    assert cfg["cartridge"]["max_atoms"] == 5 and cfg["max_depth"] == MAX_DEPTH
    scope = Scope(holder="alice", scenario="s")
    assert system.top1_gate_score("cabin", scope, T0) == system.query("cabin", scope, T0).hits[0][1]
    assert system.top1_gate_score("nothing here", scope, T0) is None
    # abstain when nothing in scope matches
    res = system.query("beagle", Scope(holder="bob", scenario="s"), T0)
    assert res.hits == [] and res.cartridge == []


def test_duplicate_atom_ids_are_rejected():
    with pytest.raises(ValueError, match="duplicate"):
        BM25Engine().index([atom("a", "h", "x"), atom("a", "h", "y")])


def test_naive_as_of_is_rejected():
    e = BM25Engine()
    e.index([atom("a", "h", "x")])
    with pytest.raises(ValueError):
        e.search("x", "h", datetime(2024, 1, 1), 10)


def test_depth_is_capped_and_filled_with_in_scope_atoms():
    """1,200 weak in-scope matches and 1,200 perfect out-of-scope ones: the 1,000 hits are all
    in scope (the filter runs before the cut, not after it)."""
    q = "quarterly revenue growth in the northern region"
    atoms = []
    for i in range(1200):
        atoms.append(atom(f"in{i:04d}", "alice", f"revenue note {i}"))
        atoms.append(atom(f"other{i:04d}", "bob", q))
        atoms.append(atom(f"future{i:04d}", "alice", q, T0 + timedelta(days=1)))
    random.Random(0).shuffle(atoms)
    e = BM25Engine()
    e.index(atoms)
    hits = e.search(q, "alice", T0, 5000)
    assert len(hits) == MAX_DEPTH
    assert all(h[0].startswith("in") for h in hits)
    assert [h[0] for h in hits] == sorted(h[0] for h in hits)[:MAX_DEPTH]  # all tied: by id
