"""Systems of a user module for the identity and card tests (``--system namesakes:Class``,
``tests/`` on PYTHONPATH): one that calls itself like a reference system, one that carries a
reference system's card, one with a card of its own."""

from __future__ import annotations

from membench.contract.protocol import Result
from membench.systems.cards import Card, load_card
from membench.systems.structural import structural_atoms

OWN_CARD = Card(
    name="namesake-lexical",
    kind="lexical",
    revision="tests/namesakes.py",
    parameter_count=0,
    size_class="<=1B",
    pooling="none",
    normalisation="none",
    license="MIT",
    notes="a user system's own card (tests)",
)


class _Scoped:
    """In-scope structural atoms in a fixed order; the top one as the cartridge."""

    def __init__(self, top: int = 1):
        self.top = top

    def config(self):
        return {"top": self.top}

    def ingest(self, items, corpus_root):
        self.atoms = structural_atoms(items)
        return self.atoms

    def query(self, question, scope, as_of):
        ids = [
            a.atom_id for a in self.atoms if a.holder == scope.holder and a.observed_at <= as_of
        ][:100]
        return Result(
            hits=[(a, 1.0 - i / 1000) for i, a in enumerate(ids)], cartridge=ids[: self.top]
        )


class Hybrid(_Scoped):
    """Calls itself ``hybrid``; carries no card."""

    name = "hybrid"


class HybridCarded(_Scoped):
    """Calls itself ``hybrid`` and carries membench's hybrid card."""

    name = "hybrid"
    card = load_card("hybrid")


class Mine(_Scoped):
    """A system with a card of its own."""

    name = "namesake"
    card = OWN_CARD
