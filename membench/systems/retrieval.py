"""The common base of the reference retrieval systems (BM25, dense, hybrid).

Two layers:

* an :class:`Engine` indexes a list of :class:`~membench.contract.protocol.Atom` (by their ``text``)
  and answers ``search(question, holder, as_of, k) -> [(atom_id, score), ...]``;
* a :class:`RetrievalSystem` wraps an engine, a chunker and a
  :class:`~membench.systems.cartridge.CartridgePolicy` into the
  :class:`~membench.contract.protocol.MemorySystem` protocol (SPEC section 6).

Rules every engine follows (and the tests check):

* **Scope inside the engine.** Only atoms with ``atom.holder == holder`` and
  ``atom.observed_at <= as_of`` are returned, filtered *before* the top-k cut, so the depth is
  filled with in-scope atoms. Time is compared as integer microseconds since the Unix epoch
  (:func:`to_micros`); ``as_of`` must be timezone-aware.
* **Ranking and ties.** Score descending, then ``atom_id`` ascending (plain ``str`` order), the
  smaller atom ids kept at the depth cut (:func:`rank`): the list is a pure function of
  (index, question, scope).
* **Depth.** ``k`` is at most :data:`~membench.contract.protocol.MAX_DEPTH` (1000).
* **Nothing to match.** A question without a letter or digit (:func:`has_terms`) gets no hits;
  an atom whose text has none stays in the reported atom list but is never returned.

Reads the corpus through the chunker; writes nothing. Start at :class:`RetrievalSystem`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..contract.protocol import MAX_DEPTH, Atom, Result
from ..contract.schema import Scope, SourceItem
from .cards import Card, truncation_record
from .cartridge import CartridgePolicy, token_count

Chunker = Callable[[list[SourceItem], Path], list[Atom]]
Hit = tuple[str, float]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICRO = timedelta(microseconds=1)
_WORD = re.compile(r"\w", re.UNICODE)


def to_micros(dt: datetime) -> int:
    """``dt`` as integer microseconds since the Unix epoch (exact; ``dt`` must be aware)."""
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"timestamp {dt.isoformat()} has no timezone")
    return (dt - _EPOCH) // _MICRO


def has_terms(text: str | None) -> bool:
    """True when ``text`` holds at least one letter or digit (anything an engine can match)."""
    return bool(text) and _WORD.search(text) is not None


def rank(hits: Iterable[Hit], k: int) -> list[Hit]:
    """Order ``hits`` by score descending, then atom_id ascending, and keep the first ``k``."""
    return sorted(hits, key=lambda h: (-h[1], h[0]))[: max(k, 0)]


def check_k(k: int) -> int:
    if not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    return min(k, MAX_DEPTH)


class Engine(ABC):
    """A retrieval engine over atom texts. Subclasses set :attr:`name`."""

    name: str = "engine"

    def __init__(self) -> None:
        self.atoms: list[Atom] = []
        self.by_id: dict[str, Atom] = {}

    def index(self, atoms: list[Atom]) -> None:
        """(Re)build the index over ``atoms``, replacing whatever was indexed before."""
        by_id: dict[str, Atom] = {}
        for a in atoms:
            if a.atom_id in by_id:
                raise ValueError(f"{self.name}: duplicate atom_id {a.atom_id!r}")
            to_micros(a.observed_at)  # rejects naive timestamps early
            by_id[a.atom_id] = a
        # Index in atom_id order: internal row/document order then agrees with the tie rule.
        self.atoms = sorted(atoms, key=lambda a: a.atom_id)
        self.by_id = by_id
        self._build(self.atoms)

    @abstractmethod
    def _build(self, atoms: list[Atom]) -> None:
        """Build the index over ``atoms`` (sorted by atom_id, ids unique)."""

    def search(self, question: str, holder: str, as_of: datetime, k: int = MAX_DEPTH) -> list[Hit]:
        """In-scope atoms ranked for ``question``: at most ``k`` (<= MAX_DEPTH) pairs
        ``(atom_id, score)``, score descending, then atom_id ascending."""
        k = check_k(k)
        as_of_us = to_micros(as_of)
        if k == 0 or not self.atoms or not has_terms(question):
            return []
        return self._search(question, holder, as_of_us, k)

    @abstractmethod
    def _search(self, question: str, holder: str, as_of_us: int, k: int) -> list[Hit]:
        """``search`` after argument checks; must filter by holder and time before ranking."""

    @abstractmethod
    def config(self) -> dict[str, Any]:
        """Every parameter that determines the engine's output (JSON-serialisable)."""


def _takes(fn: Callable, name: str) -> bool:
    """Whether ``fn`` accepts the keyword argument ``name``."""
    import inspect

    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _chunker_name(chunker: Callable) -> str:
    f = getattr(chunker, "func", chunker)  # functools.partial
    mod = getattr(f, "__module__", None) or "?"
    return f"{mod}.{getattr(f, '__qualname__', type(f).__name__)}"


class RetrievalSystem:
    """A :class:`~membench.contract.protocol.MemorySystem` made of a chunker, an engine and a
    cartridge policy.

    ``chunker(items, corpus_root) -> list[Atom]`` turns the split's source items into atoms
    with text (for the benchmark: ``functools.partial(membench.content.chunk, config=...)``);
    ``chunker_config`` is recorded verbatim in :meth:`config` so the run's ``meta.json`` says
    how atoms were made.
    """

    #: the run's network guard refuses (and counts) any network attempt (membench.core.netguard)
    network_policy = "block"
    #: the system's model card (:mod:`membench.systems.cards`); the runner records it in meta.json
    card: Card | None = None

    def truncation(self) -> dict[str, Any]:
        """What the input limit did (meta.json ``truncation``); a system without an encoder
        reads whole atoms."""
        return truncation_record(self.card, None)

    def __init__(
        self,
        engine: Engine,
        chunker: Chunker,
        policy: CartridgePolicy | None = None,
        *,
        name: str | None = None,
        chunker_config: dict[str, Any] | None = None,
    ):
        self.engine = engine
        self.chunker = chunker
        self.policy = policy if policy is not None else CartridgePolicy()
        self.name = name or engine.name
        self.chunker_config = dict(chunker_config or {})
        self.extra_config: dict[str, Any] = {}  # e.g. where the cartridge thresholds came from
        self._tokens: dict[str, int] = {}  # atom_id -> cartridge tokens, of _tokens_of
        self._tokens_of: dict | None = None
        self._min_tokens = 0  # the least of _tokens (0 when empty)

    def config(self) -> dict[str, Any]:
        return {
            "system": self.name,
            "engine": self.engine.config(),
            "cartridge": self.policy.config(),
            "chunker": {"function": _chunker_name(self.chunker), **self.chunker_config},
            "max_depth": MAX_DEPTH,
            "scope_filter": "holder == scope.holder and observed_at <= as_of, inside the engine",
            "ties": "score desc, then atom_id asc",
            **self.extra_config,
        }

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]:
        kw: dict[str, Any] = {}
        warm = getattr(self.engine, "warm", None)
        if warm is not None and _takes(self.chunker, "while_ocr"):
            kw["while_ocr"] = warm  # e.g. embed the atoms that need no OCR while OCR runs
        atoms = list(self.chunker(items, Path(corpus_root), **kw))
        self.index(atoms)
        return atoms

    def index(self, atoms: list[Atom]) -> None:
        """Index atoms made elsewhere (tests, benchmarks, a shared chunking pass)."""
        self.engine.index(atoms)
        self._token_counts()

    def search(self, question: str, holder: str, as_of: datetime, k: int = MAX_DEPTH) -> list[Hit]:
        return self.engine.search(question, holder, as_of, k)

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        return self.query_detail(question, scope, as_of)[0]

    def take_latency_replay(self) -> float:
        """Seconds the runner adds to the latency it measured of the queries since the last
        call: work a cache replaced, at the time it took when it was done, less the time the
        cache took (the dense question cache, :meth:`DenseEngine.take_latency_replay`); 0.0
        for an engine without one."""
        take = getattr(self.engine, "take_latency_replay", None)
        return float(take()) if take is not None else 0.0

    def query_detail(
        self, question: str, scope: Scope, as_of: datetime
    ) -> tuple[Result, list[Hit]]:
        """The result, and the hits with the scores the cartridge threshold was applied to
        (the same atoms in the same order; for BM25 and dense they are the hits themselves)."""
        hits = self.engine.search(question, scope.holder, as_of, MAX_DEPTH)
        # engines return score desc (module docstring): the cartridge walk may stop early,
        # and once the budget cannot take the shortest indexed atom
        tokens = self._token_counts()
        cart = self.policy.compile(
            hits, self.engine.by_id, descending=True, tokens=tokens, min_tokens=self._min_tokens
        )
        return Result(hits=hits, cartridge=cart), hits

    def _token_counts(self) -> dict[str, int]:
        """Each indexed atom's cartridge token count, counted once per index."""
        by_id = self.engine.by_id
        if self._tokens_of is not by_id:
            self._tokens = {k: token_count(a.text) for k, a in by_id.items()}
            self._min_tokens = min(self._tokens.values(), default=0)
            self._tokens_of = by_id
        return self._tokens

    def top1_gate_score(self, question: str, scope: Scope, as_of: datetime) -> float | None:
        """The gate score of the first hit (``None`` without hits): the calibration input of
        :func:`~membench.systems.cartridge.calibrate`."""
        gated = self.query_detail(question, scope, as_of)[1]
        return gated[0][1] if gated else None
