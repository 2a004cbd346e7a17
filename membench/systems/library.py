"""The common base of the adapters of real memory libraries (mem0, MemPalace, LlamaIndex).

An adapter is the library, driven through its own public API, behind the membench protocol
(SPEC section 6). What membench does and what it leaves to the library:

* **Content** is membench's: :func:`membench.content.chunk` makes exactly the reference
  systems' atoms, and each atom with text becomes one memory of the library, stored with its
  holder, its ``observed_at`` and its atom id (an atom without a letter or digit is reported
  but not stored).
* **Scope** is the library's: the holder is its tenant key and ``as_of`` goes through its own
  time filter. membench never filters, re-ranks or cuts what comes back beyond
  :data:`~membench.contract.protocol.MAX_DEPTH`, which is also what is asked for.
* **Scores** are the library's, so the cartridge policy
  (:class:`~membench.systems.cartridge.CartridgePolicy`) is calibrated per adapter
  (``bench/calibration/<name>.json``).
* **State** goes to ``RUN_DIR/scratch/<name>/`` (:meth:`LibrarySystem.use_scratch`), rebuilt
  at every ingest; **network**: ``network_policy = "block"`` (:mod:`membench.core.netguard`).
* **Embeddings**, where the library embeds: the bundled all-MiniLM-L6-v2 through the library's
  own embedder hook, with membench's embedding cache in front (:class:`SharedEmbedder`);
  ``embedder="library"`` lets the library embed with its own code instead.

Start at :class:`LibrarySystem` (and :func:`build`). Reads the corpus through the content layer
and the embedding cache; writes under the scratch folder and the embedding cache. Why:
docs/systems.md, "Adapters".
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import fields
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from ..content import ChunkConfig, chunk, content_meta
from ..contract.protocol import MAX_DEPTH, Atom, Result
from ..contract.schema import Scope, SourceItem
from ..core.errors import MembenchError
from .cartridge import CartridgePolicy
from .retrieval import has_terms

_CHUNK_FIELDS = {f.name for f in fields(ChunkConfig)}
_POLICY_KEYS = {"max_atoms", "token_budget", "default_threshold", "thresholds"}
Hit = tuple[str, float]
#: ``--config stores=...``: how many stores of the library hold the split's atoms
STORES: dict[str, str] = {
    "one": "one store for every holder (a multi-tenant memory: the library's own tenant key "
    "and filters scope each query)",
    "modality": "one store per modality, each holding the holders of that modality; a query "
    "goes to its holder's store (the library's tenant key and filters still scope "
    "it)",
}


def require(dist: str, extra: str) -> str:
    """The installed version of distribution ``dist``, or a one-line error naming the extra
    that installs it."""
    try:
        return version(dist)
    except PackageNotFoundError:
        raise MembenchError(
            f"{dist} is not installed: pip install 'membench[{extra}]' (or "
            f"make setup, which installs it)"
        ) from None


def utc(dt: datetime) -> datetime:
    """``dt`` in UTC (it must be timezone-aware)."""
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"timestamp {dt.isoformat()} has no timezone")
    return dt.astimezone(timezone.utc)


class SharedEmbedder:
    """The bundled all-MiniLM-L6-v2 through membench's embedding cache: texts through
    :meth:`membench.systems.dense.DenseEngine.embed` (each distinct text embedded once,
    cached by the model's weights digest and the text), questions through
    :meth:`~membench.systems.dense.DenseEngine.encode` (never cached, as in dense). The
    vectors are the model's, L2-normalised float32, identical to what dense indexes."""

    def __init__(self, **engine_kw: Any):
        from .dense import DenseEngine

        # float32, as the libraries' own embedders compute (not the dense system's bf16)
        engine_kw.setdefault("precision", "fp32")
        engine_kw.setdefault("runtime", "torch")  # the libraries embed with PyTorch
        self.engine = DenseEngine(**engine_kw)
        self._memo: dict[str, np.ndarray] = {}

    def preload(self, texts: Sequence[str]) -> None:
        """Embed ``texts`` in one pass (cache first; the ``embed`` progress step)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if todo:
            for t, v in zip(todo, self.engine.embed(todo), strict=True):
                self._memo[t] = v

    def documents(self, texts: Sequence[str]) -> np.ndarray:
        self.preload(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self._memo[t]
        return out

    def query(self, text: str) -> np.ndarray:
        return self.engine.encode([text])[0]

    def release(self) -> None:
        """Drop the ingest-time vectors (the library holds its own copy)."""
        self._memo.clear()

    @property
    def dim(self) -> int:
        from .dense import DIM

        return DIM

    def config(self) -> dict[str, Any]:
        cfg = self.engine.config()
        return {
            "model": cfg["model"],
            "model_package": cfg["model_package"],
            "weights_sha256": cfg["weights_sha256"],
            "max_seq_length": cfg["max_seq_length"],
            "normalize": "l2",
            "dim": cfg["dim"],
            "precision": cfg["precision"],
            "cache": "membench embedding cache (shared with dense; key: model weights "
            "digest + text)",
        }


class LibrarySystem:
    """Base class: subclasses set :attr:`library` (the PyPI distribution), :attr:`extra`,
    :attr:`score` (what the hit scores are), :attr:`scope` (how holder and as_of reach the
    library) and implement :meth:`_open`, :meth:`_store` and :meth:`_search`."""

    library = "?"
    extra = "?"
    score = "?"
    scope = "?"
    network_policy = "block"

    #: whether the adapter embeds with :class:`SharedEmbedder` (the stores of ``stores=
    #: "modality"`` then share one model)
    uses_embedder = True

    def __init__(
        self,
        *,
        name: str,
        chunk_config: ChunkConfig,
        policy: CartridgePolicy,
        calibration: str,
        embedder: str = "membench",
        stores: str = "one",
    ):
        if embedder not in ("membench", "library"):
            raise MembenchError(
                f"system {name}: embedder must be 'membench' or 'library', got {embedder!r}"
            )
        if stores not in STORES:
            raise MembenchError(
                f"system {name}: stores must be one of {', '.join(STORES)}, got {stores!r}"
            )
        self.stores = stores
        self._children: dict[str, LibrarySystem] = {}  # stores="modality": key -> store
        self._route: dict[str, LibrarySystem] = {}  # holder -> its store
        self.name = name
        self.chunk_config = chunk_config
        self.policy = policy
        self.calibration = calibration
        self.embedder_choice = embedder
        self.scratch: Path | None = None
        self._tmp: str | None = None
        self.by_id: dict[str, Atom] = {}
        self.stored = 0
        self._embedder: SharedEmbedder | None = None

    # -- what the runner calls -------------------------------------------------------
    def use_scratch(self, path: Path) -> None:
        """Keep the library's state under ``path/<name>`` (inside the run directory)."""
        self.scratch = Path(path) / self.name

    def config(self) -> dict[str, Any]:
        cm = content_meta(self.chunk_config)
        cm["chunk_config"] = {**cm["chunk_config"], "ocr_processes": None}  # no effect
        return {
            "system": self.name,
            "library": f"{self.library} {require(self.library, self.extra)}",
            **self.library_config(),
            "stores": {"layout": self.stores, "what": STORES[self.stores]},
            "content": {
                "function": "membench.content.chunk",
                **cm,
                "stored": "atoms whose text has a letter or digit",
            },
            "scope": self.scope,
            "score": self.score,
            "cartridge": self.policy.config(),
            "calibration": self.calibration,
            "max_depth": MAX_DEPTH,
            "pass_through": "hits are the library's results in its order with its scores; "
            "membench filters nothing",
            "state": "RUN_DIR/scratch/<name>/ (rebuilt at every ingest)",
            "network_policy": self.network_policy,
        }

    def library_config(self) -> dict[str, Any]:
        return {}

    def truncation(self) -> dict[str, Any]:
        """meta.json ``truncation``: the input limit of the embedding model the card names
        (min(card max, 512) tokens; none for a lexical library). The library makes its own
        embedding calls, so how many atom texts were cut is not counted."""
        from .cards import applied_max_tokens, system_card, truncation_record

        card = system_card(self)
        applied = applied_max_tokens(card) if card is not None and card.max_input_tokens else None
        rec = truncation_record(card, applied)
        if applied is not None:
            rec["texts_truncated"] = None
            rec["why_not_counted"] = "the library embeds the atoms through its own calls"
        return rec

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]:
        atoms = chunk(items, Path(corpus_root), config=self.chunk_config)
        self.by_id = {a.atom_id: a for a in atoms}
        keep = [a for a in atoms if has_terms(a.text)]
        self._holders = {a.holder for a in keep}
        if self.stores == "one":
            self._open(self._fresh_dir())
            self._store(keep)
        else:
            self._store_apart(items, keep)
        self.stored = len(keep)
        if self._embedder is not None:
            self._embedder.release()
        return atoms

    def _store_apart(self, items: list[SourceItem], keep: list[Atom]) -> None:
        """``stores="modality"``: one store of the library per modality (the holders of each
        modality's items together, as a deployment that keeps one collection per kind of
        content would), each in its own folder; a query goes to its holder's store."""
        if self.uses_embedder and self.embedder_choice == "membench":
            self.embedder  # one model for every store (created before they are)
        key_of: dict[str, set[str]] = {}
        for it in items:
            key_of.setdefault(it.holder, set()).add(it.modality)
        keys = {h: "+".join(sorted(m)) for h, m in key_of.items()}
        parts: dict[str, list[Atom]] = {}
        for a in keep:
            parts.setdefault(keys[a.holder], []).append(a)
        if self.scratch is None and self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix=f"membench-{self.name}-")
        base = self.scratch if self.scratch is not None else Path(self._tmp)
        self._children = {}
        for key, part in sorted(parts.items()):
            child = copy.copy(self)
            child.stores, child._children, child._route = "one", {}, {}
            child.scratch, child._tmp = base / key, None
            child._reset()
            child._open(child._fresh_dir())
            child._store(part)
            child.stored = len(part)
            child._holders = {a.holder for a in part}
            self._children[key] = child
        self._route = {h: self._children[k] for h, k in keys.items() if k in self._children}

    def _reset(self) -> None:
        """A copy's own per-store state before it opens its store (subclasses add theirs)."""

    def store_stats(self) -> dict[str, Any]:
        """What meta.json's ``store`` records about the library's store(s) after a run: the
        layout, and per store the holders and the atoms it held (the size a query's time
        depends on)."""
        if self.stores == "one":
            per = {"all": self._one_store_stats()}
        else:
            per = {k: c._one_store_stats() for k, c in self._children.items()}
        return {"layout": self.stores, "stored": self.stored, "per_store": per}

    def _one_store_stats(self) -> dict[str, Any]:
        return {"holders": len(getattr(self, "_holders", ())), "atoms_stored": self.stored}

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        store = self if self.stores == "one" else self._route.get(scope.holder)
        found = store._search(question, scope.holder, as_of, MAX_DEPTH) if store else []
        hits = [(a, float(s)) for a, s in found][:MAX_DEPTH]
        return Result(hits=hits, cartridge=self.policy.compile(hits, self.by_id))

    # -- for subclasses --------------------------------------------------------------
    @property
    def embedder(self) -> SharedEmbedder:
        if self._embedder is None:
            # float32, as the libraries' own embedders compute (their vectors are checked
            # against these): not the dense reference system's bf16 default
            self._embedder = SharedEmbedder(precision="fp32")
        return self._embedder

    def _fresh_dir(self) -> Path:
        """An empty folder for the library's state: ``RUN_DIR/scratch/<name>`` when the runner
        gave one (emptied first), else a temporary folder (tests and notebooks)."""
        if self.scratch is None:
            if self._tmp is None:
                self._tmp = tempfile.mkdtemp(prefix=f"membench-{self.name}-")
            d = Path(self._tmp) / "state"
        else:
            d = self.scratch
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        return d

    def _open(self, state: Path) -> None:
        raise NotImplementedError

    def _store(self, atoms: list[Atom]) -> None:
        raise NotImplementedError

    def _search(self, question: str, holder: str, as_of: datetime, k: int) -> list[Hit]:
        raise NotImplementedError


def build(cls, name: str, cfg: dict[str, Any], default_threshold: float):
    """An adapter from ``--config`` values: :class:`ChunkConfig` fields, the cartridge policy's
    keys (``max_atoms``, ``token_budget``, ``default_threshold``, ``thresholds``),
    ``calibration`` (a file, or ``none``; default ``bench/calibration/<name>.json``) and the
    adapter's own keywords."""
    from .reference import load_thresholds

    cfg = dict(cfg)
    chunk_cfg = ChunkConfig(**{k: cfg.pop(k) for k in list(cfg) if k in _CHUNK_FIELDS})
    policy_kw = {k: cfg.pop(k) for k in list(cfg) if k in _POLICY_KEYS}
    where = cfg.pop("calibration", None)
    if "thresholds" not in policy_kw:
        policy_kw["thresholds"], source = load_thresholds(name, where)
    else:
        source = "--config thresholds"
    policy_kw.setdefault("default_threshold", default_threshold)
    try:
        policy = CartridgePolicy(**policy_kw)
        return cls(name=name, chunk_config=chunk_cfg, policy=policy, calibration=source, **cfg)
    except (TypeError, ValueError) as e:
        raise MembenchError(f"system {name}: bad config {cfg}: {e}") from None


def set_env_default(key: str, value: str) -> None:
    """Set an environment variable the library reads, unless the user set it."""
    os.environ.setdefault(key, value)


__all__ = ["LibrarySystem", "SharedEmbedder", "build", "require", "utc", "set_env_default"]
