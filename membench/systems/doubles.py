"""Test doubles and baselines: systems whose scores are known in advance, to show the metrics can tell.

* ``oracle`` returns, per query, one atom per gold region in gold order, the same atoms as its
  cartridge, and abstains on unanswerable queries. Its atoms: one per distinct gold region of
  the split, shaped as the region (a video span longer than the cap is cut into windows), plus
  structural atoms (:mod:`membench.systems.structural`) for everything else.
* ``leaky`` ignores scope: the gold atoms of every record with the question's text (and, for a
  derived unanswerable, of the query it derives from: ``origin.distractor``), then atoms from
  the whole multi-tenant memory. It never abstains.
* ``random`` ranks in-scope atoms in a seeded random order; ``newest`` / ``oldest`` rank the
  holder's in-scope atoms by ``observed_at`` alone (ties: source id, then the atom's place in
  its item). They read no content, commit the top atom, never abstain, and carry a card: the
  content-free floors (:data:`CONTENT_FREE`, :func:`membench.analysis.leaderboard.is_floor`).
* ``metadata`` ranks like ``random`` but abstains when ``as_of`` is before the holder's last
  item or the question was asked before in this run (the rules of :mod:`membench.sets.audit`).
* ``stuffed`` wraps another system that sees no gold (``--config system=bm25``; ``random`` by
  default), keeps its ranking and commit decision, and commits its top ``atoms`` (100) instead.
* ``nothing`` reports no atoms and answers every query with no hits and an empty cartridge.
* ``echo`` ingests the content layer's atoms (:func:`membench.content.chunk`) and ranks the
  holder's in-scope atoms by how many distinct question words (casefolded ``\\w+`` runs; no
  stemming, stop words or weights) their text holds, atoms holding none left out, ties by atom
  id ascending, at most ``depth`` (100); its cartridge is always empty.

Only ``oracle`` and ``leaky`` are handed the records (:data:`membench.systems.DOUBLES`). Writes
nothing. What each shows, and why: docs/runs.md, "What each double shows".
"""

from __future__ import annotations

import random as _random
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import modalities
from ..content import ChunkConfig, chunk, content_meta
from ..contract.protocol import Atom, Result, order_hits
from ..contract.schema import AnnotationRecord, Gold, Scope, SourceItem
from ..core.hashing import stable_hash
from .cards import Card
from .retrieval import rank
from .structural import atom_id, structural_atoms


@dataclass
class RunContext:
    """What the runner tells a system that asks for it (``bind``): the split's records. Only
    test doubles use it; a real system must not read gold."""

    sets_dir: Path
    split: str
    records: list[AnnotationRecord]


def _region_extents(modality: str, region: dict) -> list[dict]:
    return modalities.get(modality).gold_extents(region)


class _Double:
    """What every test double shares: a name, a seed and a seeded random order."""

    name = "double"
    reads_gold = False

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.atoms: list[Atom] = []

    def config(self) -> dict[str, Any]:
        return {"seed": self.seed, "reads_gold": self.reads_gold}

    def rng(self, question: str) -> _random.Random:
        return _random.Random(stable_hash(str(self.seed), self.name, question))

    def in_scope(self, question: str, scope: Scope, as_of: datetime, k: int = 100) -> list[str]:
        """Up to ``k`` in-scope atoms in a seeded order of (question, holder, as_of)."""
        if getattr(self, "_scoped", None) is None or self._scoped[0] is not self.atoms:
            by: dict[str, list[Atom]] = {}
            for a in self.atoms:  # atom order kept within a holder
                by.setdefault(a.holder, []).append(a)
            self._scoped = (self.atoms, by)
        pool = [a.atom_id for a in self._scoped[1].get(scope.holder, ()) if a.observed_at <= as_of]
        return self.rng(question + scope.holder + as_of.isoformat()).sample(pool, min(len(pool), k))


class _GoldIndex(_Double):
    """A double that is handed the split's records (gold) before ingest."""

    name = "gold-index"
    reads_gold = True

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.ctx: RunContext | None = None

    def bind(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]:
        by_id = {it.source_id: it for it in items}
        self.region_atoms: dict[tuple, list[str]] = {}
        atoms: dict[str, Atom] = {}
        for r in self.ctx.records if self.ctx else []:
            for g in [*r.gold, *_original_gold(r)]:
                it = by_id.get(g.source_id)
                if it is None:
                    continue
                key = (g.source_id, repr(sorted(g.region.items())))
                ids = []
                for ext in _region_extents(r.modality, g.region):
                    a = Atom(
                        atom_id("g", g.source_id, ext),
                        g.source_id,
                        it.modality,
                        it.holder,
                        it.observed_at,
                        ext,
                    )
                    atoms[a.atom_id] = a
                    ids.append(a.atom_id)
                self.region_atoms[key] = ids
        for a in structural_atoms(items):
            atoms.setdefault(a.atom_id, a)
        self.atoms = sorted(atoms.values(), key=lambda a: a.atom_id)
        self.by_query: dict[tuple, list[AnnotationRecord]] = {}
        self.by_question: dict[str, list[AnnotationRecord]] = {}
        for r in self.ctx.records if self.ctx else []:
            self.by_query.setdefault((r.question, r.scope.holder, r.as_of), []).append(r)
            self.by_question.setdefault(r.question, []).append(r)
        return self.atoms

    def gold_atoms(self, records: list[AnnotationRecord], original: bool = False) -> list[str]:
        """The first atom of each gold region of ``records`` (and, with ``original``, of the
        gold of the queries derived records come from)."""
        out: list[str] = []
        for r in records:
            for g in [*r.gold, *(_original_gold(r) if original else [])]:
                for a in self.region_atoms.get((g.source_id, repr(sorted(g.region.items()))), [])[
                    :1
                ]:
                    if a not in out:
                        out.append(a)
        return out


def _original_gold(r: AnnotationRecord) -> list[Gold]:
    """The gold of the query a derived record comes from (kept in ``origin.distractor``)."""
    if not r.origin.derived_from:
        return []
    return [Gold(**g) for g in (r.origin.distractor or []) if isinstance(g, dict)]


class Oracle(_GoldIndex):
    name = "oracle"

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        recs = [
            r for r in self.by_query.get((question, scope.holder, as_of), []) if not r.unanswerable
        ]
        ids = self.gold_atoms(recs)[:1000]
        return Result(hits=[(a, 1.0 - i / 1000) for i, a in enumerate(ids)], cartridge=ids)


class Leaky(_GoldIndex):
    name = "leaky"

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        ids = self.gold_atoms(self.by_question.get(question, []), original=True)
        pool = [a.atom_id for a in self.atoms]
        extra = self.rng(question).sample(pool, min(len(pool), 20))
        for a in extra:
            if a not in ids:
                ids.append(a)
        ids = ids[:1000]
        return Result(hits=[(a, 1.0 - i / 1000) for i, a in enumerate(ids)], cartridge=ids[:3])


#: the content-free floors: registered doubles that read no content and rank by a seeded order
#: or by ``observed_at`` alone; they carry a card, so the leaderboard shows them as floors
CONTENT_FREE: tuple[str, ...] = ("random", "newest", "oldest")


def _floor_card(name: str, ranks: str) -> Card:
    """The card of a content-free floor (:data:`CONTENT_FREE`): what puts its row on the
    leaderboard, as a content-free floor, never ranked or tested."""
    return _baseline_card(
        name,
        f"membench content-free floor: ranks by {ranks}; reads no content",
        notes=f"A content-free floor (membench.systems.doubles): it ranks the "
        f"holder's in-scope atoms by {ranks}; it reads no content, so its "
        "recall is what position alone reaches. Shown on the leaderboard "
        "beside the ranked rows as a content-free floor; never ranked.",
    )


def _baseline_card(name: str, revision: str, notes: str = "") -> Card:
    """The card of a baseline: what puts its row on the leaderboard, as a baseline (a test
    double's entry is never ranked or tested: :mod:`membench.analysis.leaderboard`)."""
    return Card(
        name=name,
        kind="lexical",
        revision=revision,
        parameter_count=0,
        size_class="<=1B",
        pooling="none",
        normalisation="none",
        license="Apache-2.0 (membench)",
        notes=notes
        or "A no-memory baseline (membench.systems.doubles): shown on the "
        "leaderboard as the floor every figure is read against; never "
        "ranked.",
    )


class RandomSystem(_Double):
    name = "random"
    card = _floor_card("random", "a seeded order")

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]:
        self.atoms = structural_atoms(items)
        return self.atoms

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        ids = self.in_scope(question, scope, as_of)
        return Result(hits=[(a, 1.0 - i / 1000) for i, a in enumerate(ids)], cartridge=ids[:1])


class _ByTime(_Double):
    """Ranks the holder's in-scope atoms by ``observed_at`` only (``newest``: latest first)."""

    newest = True

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]:
        self.atoms = structural_atoms(items)
        by: dict[str, list[tuple]] = {}
        for i, a in enumerate(self.atoms):  # structural order: source id, then extent
            t = a.observed_at.timestamp()
            by.setdefault(a.holder, []).append(((-t if self.newest else t), i, a))
        self.by_holder = {
            h: [(a.observed_at, a.atom_id) for _, _, a in sorted(v)] for h, v in by.items()
        }
        return self.atoms

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        ids = [aid for t, aid in self.by_holder.get(scope.holder, ()) if t <= as_of][:100]
        return Result(hits=[(a, 1.0 - i / 1000) for i, a in enumerate(ids)], cartridge=ids[:1])


class Newest(_ByTime):
    name = "newest"
    newest = True
    card = _floor_card("newest", "observed_at alone, newest first")


class Oldest(_ByTime):
    name = "oldest"
    newest = False
    card = _floor_card("oldest", "observed_at alone, oldest first")


class MetadataRules(_Double):
    """Ranks like ``random``; abstains when ``as_of`` is before the holder's last item or the
    question (lower case, single spaces) was asked before in this run, else commits its top
    atom. Keeps only the holders' last observation times and the questions it was asked."""

    name = "metadata"
    RULES = ("as_of before the holder's last item", "question asked before in this run")

    def config(self) -> dict[str, Any]:
        return {**super().config(), "abstains_when": list(self.RULES)}

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]:
        self.atoms = structural_atoms(items)
        self.last: dict[str, datetime] = {}
        for it in items:
            if it.holder not in self.last or it.observed_at > self.last[it.holder]:
                self.last[it.holder] = it.observed_at
        self.seen: set[str] = set()
        return self.atoms

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        ids = self.in_scope(question, scope, as_of)
        key = " ".join(question.lower().split())
        last = self.last.get(scope.holder)
        fires = (last is not None and as_of < last) or key in self.seen
        self.seen.add(key)
        return Result(
            hits=[(a, 1.0 - i / 1000) for i, a in enumerate(ids)],
            cartridge=[] if fires else ids[:1],
        )


class Stuffed(_Double):
    """Another system's ranking and commit decision, with its top ``atoms`` ranked atoms as the
    cartridge wherever it commits (the module docstring)."""

    name = "stuffed"
    #: made around another registered system: ``make_system`` hands it the registry
    #: (``registry``: membench.systems, passed in, not imported, as the registry names this class)
    wraps = True

    def __init__(
        self,
        seed: int = 0,
        system: str = "random",
        atoms: int = 100,
        registry: Any = None,
        **config: Any,
    ) -> None:
        if registry is None:
            raise ValueError(
                "stuffed wraps a registered system: make it with "
                "membench.systems.make_system('stuffed', config)"
            )
        super().__init__(seed)
        if system == self.name or registry.DOUBLES.get(system) or system in registry.LIBRARIES:
            raise ValueError(
                f"stuffed wraps a registered system that sees no gold and keeps "
                f"no store on disk, not {system!r}"
            )
        if not isinstance(atoms, int) or isinstance(atoms, bool) or atoms < 1:
            raise ValueError(f"atoms: a whole number >= 1, got {atoms!r}")
        self.system, self.n_atoms = system, atoms
        self.inner = registry.make_system(system, config)

    def config(self) -> dict[str, Any]:
        return {
            **super().config(),
            "system": self.system,
            "atoms": self.n_atoms,
            "wrapped": self.inner.config(),
        }

    def truncation(self) -> dict:
        """The wrapped system's truncation record (what the runner writes to meta.json)."""
        from .cards import system_card, truncation_record

        trunc = getattr(self.inner, "truncation", None)
        return trunc() if callable(trunc) else truncation_record(system_card(self.inner), None)

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]:
        self.atoms = self.inner.ingest(items, corpus_root)
        return self.atoms

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        r = self.inner.query(question, scope, as_of)
        committed = order_hits(r.hits)[: self.n_atoms] if r.cartridge else []
        return Result(hits=r.hits, cartridge=committed, confidence=r.confidence)


class Nothing(_Double):
    """No memory: no atoms, no hits, an empty cartridge (the module docstring)."""

    name = "nothing"
    card = _baseline_card(
        "nothing", "membench no-memory baseline: no atoms, no hits, an empty cartridge"
    )

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]:
        return []

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        return Result(hits=[], cartridge=[])


_WORDS = re.compile(r"\w+")


def words(text: str) -> set[str]:
    """The distinct casefolded ``\\w+`` runs of ``text`` (what ``echo`` compares)."""
    return set(_WORDS.findall(text.casefold()))


class Echo(_Double):
    """Ranks in-scope content atoms by the question's words they hold; hands over nothing
    (the module docstring)."""

    name = "echo"
    card = _baseline_card(
        "echo",
        "membench baseline: question-word overlap over the memory, "
        "empty cartridge (in-scope content atoms ranked by the distinct "
        "question words they hold, depth 100)",
        notes="Question-word overlap over the memory, empty cartridge "
        "(membench.systems.doubles): it reads the memory's atoms and ranks "
        "them by the question's words, so its recall is not a no-memory "
        "figure (the no-memory floor is nothing); its cartridge is empty, so "
        "it hands over no answer at no context cost. Shown on the "
        "leaderboard beside the ranked rows as a floor; never ranked.",
    )

    def __init__(self, seed: int = 0, depth: int = 100) -> None:
        super().__init__(seed)
        self.depth = depth

    def config(self) -> dict[str, Any]:
        return {
            **super().config(),
            "depth": self.depth,
            "score": "distinct casefolded \\w+ question words in the atom's text",
            "content": content_meta(ChunkConfig()),
        }

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]:
        self.atoms = chunk(items, corpus_root, ChunkConfig())
        # per holder: word -> positions (in self.atoms) of the atoms whose text holds it
        self.index: dict[str, dict[str, list[int]]] = {}
        for i, a in enumerate(self.atoms):
            by_word = self.index.setdefault(a.holder, {})
            for w in words(a.text):
                by_word.setdefault(w, []).append(i)
        return self.atoms

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        by_word = self.index.get(scope.holder, {})
        held = Counter(i for w in words(question) for i in by_word.get(w, ()))
        hits = [
            (self.atoms[i].atom_id, float(n))
            for i, n in held.items()
            if self.atoms[i].observed_at <= as_of
        ]
        return Result(hits=rank(hits, self.depth), cartridge=[])
