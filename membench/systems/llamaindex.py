"""LlamaIndex (``llama-index-core`` + ``llama-index-retrievers-bm25``) as a memory, two ways:
``llamaindex`` (a ``VectorStoreIndex`` and its vector retriever) and ``llamaindex-bm25``
(the ``BM25Retriever`` over the same nodes). Extra: ``pip install 'membench[llamaindex]'``.

Ingest: one ``TextNode`` per atom (``id_`` = atom id) with metadata ``holder`` and ``ts``
(``observed_at`` as integer microseconds since the epoch), both in
``excluded_embed_metadata_keys`` and ``excluded_llm_metadata_keys``: the indexed text is the
atom's text alone.

Scope: every query carries LlamaIndex's own ``MetadataFilters`` (``holder == scope.holder`` AND
``ts <= as_of``):

* vector: ``index.as_retriever(similarity_top_k=1000, filters=...)`` over the in-memory
  ``SimpleVectorStore``; score: cosine similarity;
* BM25: ``BM25Retriever(existing_bm25=..., filters=..., similarity_top_k=...)`` over the index
  persisted once under ``RUN_DIR/scratch/llamaindex-bm25/``; score: bm25s's BM25 (Lucene
  variant, k1 1.5, b 0.75, PyStemmer English stemmer, English stop words: the retriever's
  defaults). Its filtered-out nodes come back at score 0 and are passed through as returned;
  when the filters leave no node, the query is answered with no hits.

Embeddings: :class:`MiniLMEmbedding` (a ``BaseEmbedding`` subclass) serves the bundled
all-MiniLM-L6-v2 through membench's embedding cache. ``LLAMA_INDEX_CACHE_DIR`` points into the
scratch folder. Reads the corpus through the content layer (:mod:`.library`); writes under
``RUN_DIR/scratch/``. Start at :class:`LlamaIndexVector` and :class:`LlamaIndexBM25`. Why, and
the BM25 retriever's leak: docs/systems.md, "Adapters".
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from ..contract.protocol import Atom
from .library import Hit, LibrarySystem, SharedEmbedder, build, require, set_env_default
from .retrieval import to_micros

META_KEYS = ["holder", "ts"]


def _embedding_class():
    from llama_index.core.embeddings import BaseEmbedding
    from pydantic import PrivateAttr

    class MiniLMEmbedding(BaseEmbedding):
        """The bundled all-MiniLM-L6-v2 through membench's embedding cache, as a LlamaIndex
        embedding (documents: the cache, then the model; queries: the model)."""

        _shared: Any = PrivateAttr()

        def __init__(self, shared: SharedEmbedder, **kw: Any):
            super().__init__(
                model_name="sentence-transformers/all-MiniLM-L6-v2 (bundled)",
                embed_batch_size=512,
                **kw,
            )
            self._shared = shared

        @classmethod
        def class_name(cls) -> str:
            return "MembenchMiniLMEmbedding"

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._shared.query(query).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._shared.documents([text])[0].tolist()

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._shared.documents(texts).tolist()

    return MiniLMEmbedding


class _LlamaBase(LibrarySystem):
    library = "llama-index-core"
    extra = "llamaindex"
    scope = (
        "LlamaIndex MetadataFilters on every query: holder == scope.holder AND ts <= as_of "
        "(ts: observed_at in integer microseconds); holder and ts excluded from the "
        "indexed text"
    )

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        require("llama-index-core", "llamaindex")

    def _nodes(self, atoms: list[Atom]):
        from llama_index.core.schema import TextNode

        return [
            TextNode(
                text=a.text,
                id_=a.atom_id,
                metadata={"holder": a.holder, "ts": to_micros(a.observed_at)},
                excluded_embed_metadata_keys=list(META_KEYS),
                excluded_llm_metadata_keys=list(META_KEYS),
            )
            for a in sorted(atoms, key=lambda a: a.atom_id)
        ]

    def _filters(self, holder: str, as_of: datetime):
        from llama_index.core.vector_stores import (
            FilterCondition,
            FilterOperator,
            MetadataFilter,
            MetadataFilters,
        )

        return MetadataFilters(
            filters=[
                MetadataFilter(key="holder", value=holder, operator=FilterOperator.EQ),
                MetadataFilter(key="ts", value=to_micros(as_of), operator=FilterOperator.LTE),
            ],
            condition=FilterCondition.AND,
        )

    def _open(self, state: Path) -> None:
        set_env_default("LLAMA_INDEX_CACHE_DIR", str(state / "llama_index_cache"))
        self.state = state


class LlamaIndexVector(_LlamaBase):
    score = "cosine similarity (LlamaIndex SimpleVectorStore), as the vector retriever returns it"

    def library_config(self) -> dict[str, Any]:
        return {
            "retriever": "VectorStoreIndex(SimpleVectorStore).as_retriever",
            "embed_model": "MiniLMEmbedding (BaseEmbedding subclass) "
            + (str(self.embedder.config()) if self.embedder_choice == "membench" else "library"),
        }

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        if self.embedder_choice != "membench":
            from ..core.errors import MembenchError

            raise MembenchError(
                f"system {self.name}: LlamaIndex has no offline embedder of "
                "its own (its default is hosted); embedder must be 'membench'"
            )
        self.index = None

    def _store(self, atoms: list[Atom]) -> None:
        from llama_index.core import StorageContext, VectorStoreIndex

        nodes = self._nodes(atoms)
        self.embedder.preload([n.get_content(metadata_mode=_embed_mode()) for n in nodes])
        self.index = (
            VectorStoreIndex(
                nodes,
                storage_context=StorageContext.from_defaults(),
                embed_model=_embedding_class()(self.embedder),
                show_progress=False,
            )
            if nodes
            else None
        )

    def _search(self, question: str, holder: str, as_of: datetime, k: int) -> list[Hit]:
        if self.index is None:
            return []
        retriever = self.index.as_retriever(
            similarity_top_k=k, filters=self._filters(holder, as_of)
        )
        return [(n.node.node_id, n.score) for n in retriever.retrieve(question)]


class LlamaIndexBM25(_LlamaBase):
    uses_embedder = False
    score = (
        "bm25s BM25 as the BM25Retriever returns it (filtered-out nodes multiplied by 0, "
        "still ranked)"
    )

    def library_config(self) -> dict[str, Any]:
        return {
            "retriever": f"BM25Retriever (llama-index-retrievers-bm25 "
            f"{require('llama-index-retrievers-bm25', 'llamaindex')}, bm25s "
            f"{require('bm25s', 'llamaindex')}): defaults (English stemmer and "
            "stop words), existing_bm25 + filters per query",
            "persisted": "RUN_DIR/scratch/llamaindex-bm25/bm25",
        }

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        require("llama-index-retrievers-bm25", "llamaindex")
        self.bm25 = None
        self.n_docs = 0

    def _store(self, atoms: list[Atom]) -> None:
        import bm25s
        from llama_index.retrievers.bm25 import BM25Retriever

        nodes = self._nodes(atoms)
        self.n_docs = len(nodes)
        if not nodes:
            self.bm25 = None
            return
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        built = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=min(1000, len(nodes)))
        where = self.state / "bm25"
        where.mkdir(parents=True, exist_ok=True)
        built.persist(str(where))
        # the retriever's own reload path: the index and its corpus (node metadata), from disk
        self.bm25 = bm25s.BM25.load(str(where), load_corpus=True)

    def _search(self, question: str, holder: str, as_of: datetime, k: int) -> list[Hit]:
        from llama_index.retrievers.bm25 import BM25Retriever

        if self.bm25 is None:
            return []
        try:
            retriever = BM25Retriever(
                existing_bm25=self.bm25,
                similarity_top_k=min(k, self.n_docs),
                filters=self._filters(holder, as_of),
            )
        except ValueError as e:
            if "filtered out" in str(e):  # the library's refusal: nothing in scope
                return []
            raise
        return [(n.node.node_id, n.score) for n in retriever.retrieve(question)]


def _embed_mode():
    from llama_index.core.schema import MetadataMode

    return MetadataMode.EMBED


def llamaindex(**cfg: Any) -> LlamaIndexVector:
    return build(LlamaIndexVector, "llamaindex", cfg, default_threshold=0.45)


def llamaindex_bm25(**cfg: Any) -> LlamaIndexBM25:
    return build(LlamaIndexBM25, "llamaindex-bm25", cfg, default_threshold=8.0)


__all__ = ["LlamaIndexBM25", "LlamaIndexVector", "llamaindex", "llamaindex_bm25"]
