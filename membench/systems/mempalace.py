"""MemPalace (``mempalace``, ChromaDB drawers) as a memory: ``--system mempalace``. Extra:
``pip install 'membench[mempalace]'``.

Store: a palace at ``RUN_DIR/scratch/mempalace/palace`` (MemPalace's default Chroma backend),
``MEMPALACE_CONFIG_DIR`` ``RUN_DIR/scratch/mempalace/config`` unless set; every MemPalace call
runs with ``HOME`` pointing at the scratch folder (:func:`_home`). Chroma's telemetry is off
(MemPalace's own client settings).

Ingest: one drawer per atom, ``mempalace.palace.get_collection(palace, create=True).upsert``:
id = atom id, document = the atom's text, metadata ``wing`` = holder, ``room`` = modality,
``source_file`` = the item's source id, ``chunk_index`` = the atom's place in its item,
``filed_at`` = ``observed_at`` (naive ISO timestamp, UTC) and ``atom_id``; the vectors
(``embeddings=``) come from membench's embedding cache (the bundled all-MiniLM-L6-v2).

Scope: ``mempalace.searcher.search_memories(question, palace, wing=holder, before=as_of + 1
microsecond, n_results=1000)`` (``before`` is exclusive), whose date window filters a pool of
:data:`POOL_SIZE` drawers; full pools are counted in meta.json ``store.date_pool``.

Hits keep MemPalace's hybrid order, scored ``1 - distance`` clipped never to rise down the list.
MemPalace embeds questions itself (Chroma's ``ONNXMiniLM_L6_V2``, ``DOWNLOAD_PATH`` pointed at an
ONNX export of the bundled weights under ``$MEMBENCH_CACHE/onnx/``).

Reads the corpus through the content layer (:mod:`.library`); writes under
``RUN_DIR/scratch/mempalace/`` and the ONNX cache. Start at :class:`MemPalaceSystem`. Why it does
what it does: docs/systems.md, "Adapters".
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..contract.protocol import Atom
from .library import Hit, LibrarySystem, build, require, set_env_default, utc

#: MemPalace 3.11.0's candidate pool for a search with a date window and the default
#: ("vector") candidate strategy: max(max(min(15 n, 500), n), 4 n) = 4 n (its
#: ``_candidate_pool_limits``); for n_results = 1000, 4000 candidates of the wing
POOL_SIZE = 4000
POOL_RULE = "max(max(min(15 n, 500), n), 4 n) with n = n_results = 1000 (MemPalace 3.11.0)"


def naive_utc(dt: datetime) -> str:
    """``dt`` as MemPalace stores times: a naive ISO timestamp (here: UTC wall clock)."""
    return utc(dt).replace(tzinfo=None).isoformat(timespec="microseconds")


def onnx_model_dir() -> Path:
    """A folder laid out like Chroma's ONNX MiniLM download (``onnx/model.onnx`` and the
    tokenizer files), exported from the bundled weights once and cached by their digest
    (:func:`membench.systems.models.onnx_export`, the file the dense reference system runs too)."""
    from .dense import model_path, weights_digest
    from .models import onnx_export

    src = model_path()
    return onnx_export(src, weights_digest(src))


@contextlib.contextmanager
def _home(state: Path) -> Iterator[None]:
    """Run MemPalace with ``HOME`` at ``state/home`` (its lock folder is ``~/.mempalace``)."""
    old = os.environ.get("HOME")
    home = state / "home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["HOME"] = str(home)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = old


class MemPalaceSystem(LibrarySystem):
    library = "mempalace"
    extra = "mempalace"
    scope = (
        "MemPalace wing = holder (Chroma where filter); before = as_of + 1 us on filed_at "
        "(MemPalace's [since, before) date window, applied to its candidate pool)"
    )
    score = (
        "MemPalace's reported cosine similarity (1 - distance) in MemPalace's order, "
        "clipped to never rise down the list"
    )

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        require("mempalace", "mempalace")
        require("onnx", "mempalace")
        self.palace: Path | None = None
        self.state: Path | None = None
        self.truncated = 0  # queries whose date-window pool came back full
        self.searched = 0

    def _reset(self) -> None:
        self.truncated = 0
        self.searched = 0

    def store_stats(self) -> dict[str, Any]:
        """The library's store, and how often MemPalace said its date window's candidate pool
        came back full (``date_filter_pool_truncated``): in-time drawers beyond it could not be
        found (misses, never leaks)."""
        stores = [self] if self.stores == "one" else list(self._children.values())
        return {
            **super().store_stats(),
            "date_pool": {
                "size": POOL_SIZE,
                "rule": POOL_RULE,
                "queries_truncated": sum(s.truncated for s in stores),
                "queries": sum(s.searched for s in stores),
            },
        }

    def library_config(self) -> dict[str, Any]:
        return {
            "backend": "chroma (MemPalace default)",
            "embedding_model": "minilm (default)",
            "search": {
                "n_results": 1000,
                "candidate_strategy": "vector (default)",
                "max_distance": 0.0,
            },
            "query_embedding": "MemPalace's default (Chroma ONNXMiniLM_L6_V2) on an ONNX "
            "export of the bundled weights",
            "drawer_embeddings": (
                "explicit (upsert embeddings=) from " + str(self.embedder.config())
                if self.embedder_choice == "membench"
                else "MemPalace's own embedding function"
            ),
            "time_format": "filed_at: naive ISO 8601, UTC wall clock",
        }

    def _open(self, state: Path) -> None:
        from .dense import set_offline

        set_offline()
        set_env_default("MEMPALACE_CONFIG_DIR", str(state / "config"))
        logging.getLogger("mempalace_mcp").setLevel(logging.ERROR)
        logging.getLogger("mempalace").setLevel(logging.ERROR)
        from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

        ONNXMiniLM_L6_V2.DOWNLOAD_PATH = onnx_model_dir()
        self.state = state
        self.palace = state / "palace"

    def _store(self, atoms: list[Atom]) -> None:
        from ..core import progress

        order: dict[str, int] = {}
        rows = []
        for a in atoms:
            n = order[a.source_id] = order.get(a.source_id, -1) + 1
            rows.append(
                (
                    a,
                    {
                        "wing": a.holder,
                        "room": a.modality,
                        "source_file": a.source_id,
                        "chunk_index": n,
                        "filed_at": naive_utc(a.observed_at),
                        "atom_id": a.atom_id,
                        "added_by": "membench",
                    },
                )
            )
        if self.embedder_choice == "membench":
            # before HOME points at the scratch folder: the embedding cache is the user's
            self.embedder.preload([a.text for a in atoms])
        with _home(self.state):
            from mempalace.palace import get_collection

            col = get_collection(str(self.palace), create=True)
            with progress.step(f"{self.name}: upsert", total=len(rows), unit="drawer") as bar:
                for s in range(0, len(rows), 256):
                    part = rows[s : s + 256]
                    kw: dict[str, Any] = {}
                    if self.embedder_choice == "membench":
                        kw["embeddings"] = self.embedder.documents(
                            [a.text for a, _ in part]
                        ).tolist()
                    col.upsert(
                        documents=[a.text for a, _ in part],
                        ids=[a.atom_id for a, _ in part],
                        metadatas=[m for _, m in part],
                        **kw,
                    )
                    bar.advance(len(part))

    def _search(self, question: str, holder: str, as_of: datetime, k: int) -> list[Hit]:
        with _home(self.state):
            from mempalace.searcher import search_memories

            before = naive_utc(as_of + timedelta(microseconds=1))
            res = search_memories(
                question, str(self.palace), wing=holder, before=before, n_results=k
            )
        if res.get("error"):
            if not self.stored:  # an empty palace: nothing to find
                return []
            raise RuntimeError(
                f"mempalace search: {res['error']}: {res.get('details', '')} "
                f"{res.get('hint', '')}".strip()
            )
        self.searched += 1
        if res.get("date_filter_pool_truncated"):
            self.truncated += 1
        hits: list[Hit] = []
        last = float("inf")
        for h in res["results"]:
            d = h.get("distance")
            s = min(1.0 - float(d) if d is not None else 0.0, last)
            last = s
            hits.append((h["drawer_id"], s))
        return hits


def mempalace(**cfg: Any) -> MemPalaceSystem:
    return build(MemPalaceSystem, "mempalace", cfg, default_threshold=0.45)


__all__ = ["MemPalaceSystem", "mempalace", "naive_utc", "onnx_model_dir"]
