"""Hybrid reference system: reciprocal rank fusion of BM25 and dense (Cormack, Clarke and
Buettcher, SIGIR 2009).

Each component retrieves its full in-scope ranking to depth ``component_depth`` (1000 =
:data:`~membench.contract.protocol.MAX_DEPTH`), both already filtered by holder and time, and an
atom's fused score is ``sum over the rankings that hold it of 1 / (rrf_k + rank)`` with
1-based ranks and ``rrf_k = 60``. An atom missing from one ranking gets nothing from it.
Ranks are positions in each component's tie-broken list (score desc, atom_id asc), so tied
component scores get consecutive ranks, deterministically. The fused list is ordered by fused
score desc, then atom_id asc, and cut at ``k``.

Cartridge gate. RRF scores say how high an atom sits in both lists (max 2/61 ~ 0.0328 for
rank 1 in both, 1/61 ~ 0.0164 for rank 1 in one list only), not how well it matches, so a
threshold on them is a weak abstention signal (on 200 LoCoMo questions against a holder swap,
calibrated top-1 RRF separated answerable from unanswerable with Youden J 0.22, dense cosine
0.88, BM25 0.79). ``gate="rrf"`` (default) thresholds the RRF score like the other systems do
their own scores; ``gate="dense"`` keeps the RRF ranking and cartridge order but thresholds each
candidate's dense cosine (an atom outside the dense top ``component_depth`` gets -inf and is
never admitted). Calibrate whichever gate is used with
:meth:`~membench.systems.retrieval.RetrievalSystem.top1_gate_score`. With ``gate="dense"``
an answer reports its ``confidence``: the best dense cosine among the fused candidates, the
score its cartridge decision thresholds (the RRF scores of its hits are not), which the
abstention measures read (:mod:`membench.metrics.abstention`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..contract.protocol import MAX_DEPTH, Atom, Result
from ..contract.schema import Scope
from .bm25 import BM25Engine
from .cards import MAX_INPUT_TOKENS, Card, load_card
from .cartridge import CartridgePolicy
from .dense import DEFAULT_THRESHOLD as DENSE_THRESHOLD
from .dense import REFERENCE_MAX_TOKENS, DenseEngine
from .retrieval import Chunker, Engine, Hit, RetrievalSystem, has_terms, rank, to_micros

RRF_K = 60
# Provisional, uncalibrated RRF threshold: roughly "in the top 3 of both lists"
# (1/61 + 1/63 = 0.0323; top of one list only is 0.0164).
DEFAULT_THRESHOLD = 0.03


HYBRID_CARD = "hybrid"  # bench/cards/hybrid.json: bm25 + all-minilm-l6-v2


def hybrid_card(dense: Card) -> Card:
    """The hybrid's card: ``bench/cards/hybrid.json`` when its dense component is that card's,
    else ``hybrid-<dense card>.json`` if it exists, else one made from bm25's and the dense
    card (components, parameter count, the dense card's settings)."""
    from .cards import card_path

    base = load_card(HYBRID_CARD)
    if dense.name in base.components:
        return base
    name = f"hybrid-{dense.name}"
    if card_path(name).is_file():
        return load_card(name)
    lexical = load_card("bm25")
    return Card.model_validate(
        {
            **base.model_dump(mode="json"),
            "name": name,
            "components": [lexical.name, dense.name],
            "parameter_count": lexical.parameter_count + dense.parameter_count,
            "size_class": "<=1B"
            if lexical.parameter_count + dense.parameter_count <= 10**9
            else ">1B",
            "embedding_dim": dense.embedding_dim,
            "max_input_tokens": dense.max_input_tokens,
            "query_prefix": dense.query_prefix,
            "document_prefix": dense.document_prefix,
            "pooling": dense.pooling,
            "normalisation": dense.normalisation,
            "license": f"{lexical.license}; {dense.license}",
            "notes": f"made from the cards bm25 and {dense.name} (no file {name}.json)",
        }
    )


def rrf(rankings: Sequence[Sequence[Hit]], k: int = MAX_DEPTH, rrf_k: int = RRF_K) -> list[Hit]:
    """Reciprocal rank fusion of ranked ``(atom_id, score)`` lists (order is what counts;
    component scores are ignored). Returns ``(atom_id, fused score)``, fused score desc, then
    atom_id asc, at most ``k``."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        seen: set[str] = set()
        for r, (atom_id, _) in enumerate(ranking, start=1):
            if atom_id in seen:
                raise ValueError(f"atom {atom_id!r} appears twice in one ranking")
            seen.add(atom_id)
            fused[atom_id] = fused.get(atom_id, 0.0) + 1.0 / (rrf_k + r)
    return rank(fused.items(), k)


class HybridEngine(Engine):
    name = "hybrid"

    def __init__(
        self,
        bm25: BM25Engine | None = None,
        dense: DenseEngine | None = None,
        *,
        rrf_k: int = RRF_K,
        component_depth: int = MAX_DEPTH,
    ):
        super().__init__()
        self.bm25 = bm25 if bm25 is not None else BM25Engine()
        self.dense = dense if dense is not None else DenseEngine()
        self.rrf_k = rrf_k
        self.component_depth = max(1, min(component_depth, MAX_DEPTH))

    def config(self) -> dict[str, Any]:
        return {
            "engine": "hybrid",
            "fusion": "reciprocal rank fusion (Cormack et al. 2009)",
            "rrf_k": self.rrf_k,
            "component_depth": self.component_depth,
            "components": {"bm25": self.bm25.config(), "dense": self.dense.config()},
        }

    def take_latency_replay(self) -> float:
        """The dense component's (:meth:`DenseEngine.take_latency_replay`)."""
        return self.dense.take_latency_replay()

    def warm(self, atoms: list[Atom], ocr_working=None) -> None:
        """Embed ``atoms`` ahead of :meth:`index` (see :meth:`DenseEngine.warm`)."""
        self.dense.warm(atoms, ocr_working)

    def _build(self, atoms: list[Atom]) -> None:
        self.bm25.index(atoms)
        self.dense.index(atoms)

    def _search(self, question: str, holder: str, as_of_us: int, k: int) -> list[Hit]:
        return self.fuse(question, holder, as_of_us, k)[0]

    def fuse(
        self, question: str, holder: str, as_of_us: int, k: int
    ) -> tuple[list[Hit], list[list[Hit]]]:
        """Fused hits and the component rankings (bm25, dense) they came from."""
        if not self.atoms or not has_terms(question) or k == 0:
            return [], [[], []]
        # the components filter by scope themselves (arguments were checked by search())
        lists = [
            e._search(question, holder, as_of_us, self.component_depth)
            for e in (self.bm25, self.dense)
        ]
        return rrf(lists, k, self.rrf_k), lists


class HybridSystem(RetrievalSystem):
    """BM25 + dense fused by RRF, with the shared cartridge policy; the threshold applies to
    the RRF score (``gate="rrf"``, default 0.03) or to each candidate's dense cosine
    (``gate="dense"``, default the dense system's 0.45)."""

    def __init__(
        self,
        chunker: Chunker,
        *,
        thresholds: dict[str, float] | None = None,
        default_threshold: float | None = None,
        max_atoms: int = 5,
        token_budget: int = 512,
        chunker_config: dict[str, Any] | None = None,
        name: str = "hybrid",
        rrf_k: int = RRF_K,
        gate: str = "rrf",
        **dense_kw: Any,
    ):
        if gate not in ("rrf", "dense"):
            raise ValueError(f"gate must be 'rrf' or 'dense', got {gate!r}")
        dense_kw.setdefault("max_tokens", REFERENCE_MAX_TOKENS)  # as the dense system reads
        self.gate = gate
        if default_threshold is None:
            default_threshold = DEFAULT_THRESHOLD if gate == "rrf" else DENSE_THRESHOLD
        policy = CartridgePolicy(
            default_threshold=default_threshold,
            thresholds=dict(thresholds or {}),
            max_atoms=max_atoms,
            token_budget=token_budget,
        )
        engine = HybridEngine(BM25Engine(), DenseEngine(**dense_kw), rrf_k=rrf_k)
        super().__init__(engine, chunker, policy, name=name, chunker_config=chunker_config)
        self.card = hybrid_card(engine.dense.card)

    def limit_inputs(self, benchmark_max: int = MAX_INPUT_TOKENS) -> None:
        self.engine.dense.limit_inputs(benchmark_max)  # type: ignore[attr-defined]

    def truncation(self) -> dict[str, Any]:
        return {
            **self.engine.dense.truncation(),  # type: ignore[attr-defined]
            "component": "dense (bm25 reads whole atoms)",
        }

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        cfg["cartridge"]["gate"] = (
            "RRF score" if self.gate == "rrf" else "dense cosine of each RRF-ranked candidate"
        )
        return cfg

    def query_detail(
        self, question: str, scope: Scope, as_of: datetime
    ) -> tuple[Result, list[Hit]]:
        if self.gate == "rrf":
            return super().query_detail(question, scope, as_of)
        eng: HybridEngine = self.engine  # type: ignore[assignment]
        hits, (_, dense) = eng.fuse(question, scope.holder, to_micros(as_of), MAX_DEPTH)
        cos = dict(dense)
        gated = [(a, cos.get(a, -math.inf)) for a, _ in hits]
        # the score the gate thresholds: the best cosine of a candidate (the cartridge is empty
        # exactly when it is below the modality's threshold); none when no candidate has one
        best = max((g for _, g in gated), default=-math.inf)
        return Result(
            hits=hits,
            cartridge=self.policy.compile(gated, eng.by_id),
            confidence=best if math.isfinite(best) else None,
        ), gated


__all__ = ["DEFAULT_THRESHOLD", "RRF_K", "HybridEngine", "HybridSystem", "rrf"]
