"""mem0 (``mem0ai``, open-source ``Memory``) as a memory: ``--system mem0``. Extra:
``pip install 'membench[mem0]'``.

Store: mem0's local Qdrant (``qdrant-client`` in local mode, under ``RUN_DIR/scratch/mem0/qdrant``),
history database ``RUN_DIR/scratch/mem0/history.db``, ``MEM0_DIR`` (where mem0 writes its
``config.json`` at import) ``RUN_DIR/scratch/mem0`` unless set.

Ingest: ``Memory.add(text, user_id=holder, metadata={"created_at": observed_at (ISO 8601, UTC),
"atom_id": ...}, infer=False)`` per atom: the text is stored verbatim, with the given
``created_at``.

Scope: ``Memory.search(question, filters={"user_id": holder, "created_at": {"lte": as_of}},
top_k=1000, threshold=0.0)`` (``--config search_threshold=0.1`` restores mem0's default). Score:
mem0's combined score as returned; offline that is the semantic cosine alone.

Offline: ``MEM0_TELEMETRY=False`` is set before mem0 is imported; neither fastembed's BM25 files
nor spaCy's model is installed; ``Memory.from_config`` is given a dummy OpenAI key, never used.

Embeddings: mem0's ``huggingface`` embedder on the bundled all-MiniLM-L6-v2, with membench's
embedding cache in front (an ``EmbeddingBase`` subclass mem0 calls for every add and search);
``--config embedder=library`` leaves mem0's own ``HuggingFaceEmbedding`` to embed everything.

Reads the corpus through the content layer (:mod:`.library`); writes under
``RUN_DIR/scratch/mem0/``. Start at :class:`Mem0System`. Why Qdrant, ``infer=False`` and the
threshold, and what being offline switches off: docs/systems.md, "Adapters".
"""

from __future__ import annotations

import logging
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from ..contract.protocol import Atom
from .library import Hit, LibrarySystem, build, require, set_env_default, utc


def _env(state: Path) -> None:
    """Telemetry off and mem0's folder in the scratch folder, before mem0 is imported. mem0
    reads ``MEM0_TELEMETRY`` once, at import, into module globals: if something imported it
    earlier with telemetry on, those globals are set to what ``MEM0_TELEMETRY=False`` gives
    (else ``Memory`` would open a telemetry store under ``MEM0_DIR`` and fetch a notice
    configuration from GitHub, which the guard refuses)."""
    import sys

    os.environ["MEM0_TELEMETRY"] = "False"
    set_env_default("MEM0_DIR", str(state))
    for mod in ("mem0.memory.telemetry", "mem0.memory.main"):
        if mod in sys.modules and getattr(sys.modules[mod], "MEM0_TELEMETRY", False):
            sys.modules[mod].MEM0_TELEMETRY = False


class Mem0System(LibrarySystem):
    library = "mem0ai"
    extra = "mem0"
    scope = (
        "mem0 user_id = holder; filters={'user_id': holder, 'created_at': {'lte': as_of "
        "(ISO 8601, UTC)}} (mem0's metadata range filter, Qdrant DatetimeRange)"
    )
    score = "mem0 search score as returned (semantic cosine; no BM25 or entity boost offline)"

    def __init__(self, *, search_threshold: float = 0.0, **kw: Any):
        super().__init__(**kw)
        require("mem0ai", "mem0")
        self.search_threshold = float(search_threshold)
        self.memory = None

    def library_config(self) -> dict[str, Any]:
        return {
            "vector_store": "qdrant (local, on disk)",
            "infer": False,
            "search": {"top_k": 1000, "threshold": self.search_threshold, "rerank": False},
            "telemetry": "off (MEM0_TELEMETRY=False)",
            "keyword_search": "off (fastembed Qdrant/bm25 not available offline)",
            "entities_and_lemmas": "off (spaCy model not available offline)",
            "embedder": (
                "mem0 huggingface embedder, served by " + str(self.embedder.config())
                if self.embedder_choice == "membench"
                else "mem0 huggingface embedder (HuggingFaceEmbedding) on the "
                "bundled all-MiniLM-L6-v2"
            ),
        }

    def _open(self, state: Path) -> None:
        from .dense import model_path, set_offline

        _env(state)
        set_offline()
        logging.getLogger("mem0").setLevel(logging.ERROR)
        from mem0 import Memory

        cfg = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "membench",
                    "path": str(state / "qdrant"),
                    "embedding_model_dims": 384,
                    "on_disk": True,
                },
            },
            "embedder": {
                "provider": "huggingface",
                "config": {
                    "model": str(model_path()),
                    "embedding_dims": 384,
                    "model_kwargs": {"device": "cpu", "local_files_only": True},
                },
            },
            # required by from_config even with infer=False; never called
            "llm": {
                "provider": "openai",
                "config": {"api_key": "offline-never-called", "model": "gpt-4o-mini"},
            },
            "history_db_path": str(state / "history.db"),
        }
        self.memory = Memory.from_config(cfg)
        if self.embedder_choice == "membench":
            self.memory.embedding_model = _cached_embedder(
                self.memory.embedding_model, self.embedder
            )

    def _store(self, atoms: list[Atom]) -> None:
        from ..core import progress

        if self.embedder_choice == "membench":
            self.embedder.preload([a.text for a in atoms])
        with progress.step(f"{self.name}: add", total=len(atoms), unit="memory") as bar:
            for a in atoms:
                self.memory.add(
                    a.text,
                    user_id=a.holder,
                    infer=False,
                    metadata={"created_at": utc(a.observed_at).isoformat(), "atom_id": a.atom_id},
                )
                bar.advance()

    def _search(self, question: str, holder: str, as_of: datetime, k: int) -> list[Hit]:
        try:
            res = self.memory.search(
                question,
                top_k=k,
                threshold=self.search_threshold,
                filters={"user_id": holder, "created_at": {"lte": utc(as_of).isoformat()}},
            )
        except ValueError as e:
            if "query" in str(e).lower():  # mem0 refuses an empty query
                return []
            raise
        return [((r.get("metadata") or {}).get("atom_id"), r["score"]) for r in res["results"]]


def _cached_embedder(library_embedder, shared):
    """A mem0 ``EmbeddingBase`` that serves the texts given to :meth:`SharedEmbedder.preload`
    from membench's cache and embeds questions with the same model (mem0's own embedder is kept
    for anything else)."""
    from mem0.embeddings.base import EmbeddingBase

    class MembenchCachedEmbedding(EmbeddingBase):
        def __init__(self):
            super().__init__(library_embedder.config)
            self.fallback = library_embedder

        def embed(self, text, memory_action=None):
            if memory_action == "search":
                return shared.query(text).tolist()
            if text in shared._memo:
                return shared._memo[text].tolist()
            return self.fallback.embed(text, memory_action)

        def embed_batch(self, texts, memory_action="add"):
            return [self.embed(t, memory_action) for t in texts]

    return MembenchCachedEmbedding()


def mem0(**cfg: Any) -> Mem0System:
    return build(Mem0System, "mem0", cfg, default_threshold=0.45)


__all__ = ["Mem0System", "mem0"]
