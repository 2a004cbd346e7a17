"""The reference systems as the registry builds them: ``bm25``, ``dense``, ``hybrid``.

Each is the content chunker (:func:`membench.content.chunk`: PDF text layer per page, OCR for
images and screenshots, caption windows, parsed code units, turn windows) + an engine
(:mod:`.bm25`, :mod:`.dense`, :mod:`.hybrid`) + the cartridge policy (:mod:`.cartridge`).

Cartridge thresholds come from ``bench/calibration/<system>.json`` when it exists (the hybrid
gates its cartridge on each fused candidate's dense cosine, ``gate="dense"``, and so uses
``dense.json``; ``--config gate=rrf`` thresholds the RRF score instead, which separates
answerable from unanswerable queries poorly: see docs/runs.md) (written by
``membench calibrate RUN_DIR``: per modality, the threshold on the top-1 score that best
separates answerable from unanswerable dev queries while keeping the false-recall rate within
the 0.10 gate where that is possible). The dev figures are therefore in-sample for the
cartridge; the test split uses the same frozen thresholds. ``--config thresholds=...`` or
``--config calibration=none`` override it.

``--config`` keys: any :class:`membench.content.ChunkConfig` field (e.g. ``ocr_processes=2``),
``max_atoms``, ``token_budget``, ``default_threshold``, ``thresholds``, ``calibration``
(a path, or ``none``), and for dense/hybrid the engine's keywords (e.g. ``batch_size``) and
``card`` (a model card in ``bench/cards``; the system is then named ``dense-<card>`` /
``hybrid-<card>``, calibrated under that name).
"""

from __future__ import annotations

import math
import re
from dataclasses import fields
from functools import partial
from pathlib import Path
from typing import Any

from ..content import ChunkConfig, chunk, content_meta
from ..core.errors import InputError, MembenchError
from ..core.jsonl import read_json_file
from ..core.paths import BENCH_DIR
from ..modalities import MODALITIES

CALIBRATION_DIR = BENCH_DIR / "calibration"
_CHUNK_FIELDS = {f.name for f in fields(ChunkConfig)}
_POLICY_KEYS = {"max_atoms", "token_budget", "default_threshold", "thresholds"}


def calibration_path(name: str) -> Path:
    """``bench/calibration/<name>.json``; ``name`` (a system name, which may come from someone
    else's meta.json) must be a plain file name, never a path."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise MembenchError(
            f"system name {str(name)[:80]!r} cannot name a calibration file "
            "(letters, digits, '.', '_', '-'); pass --out FILE"
        )
    return CALIBRATION_DIR / f"{name}.json"


def _finite_number(v: object) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:  # an int too large for a float
        return False


def read_calibration(path: Path) -> dict[str, float]:
    """A calibration file (``membench calibrate``'s output) -> ``{modality: threshold}``. It
    must be a JSON object whose ``modalities`` maps known modality names to objects with a
    finite numeric ``threshold`` (a bool or a string is not a number); anything else is an
    :class:`InputError` naming the file and field. Reads only ``path``."""
    data = read_json_file(path, dict, "a calibration file (a JSON object)")
    mods = data.get("modalities")
    if not isinstance(mods, dict):
        raise InputError(
            path,
            None,
            "modalities",
            "must be an object {modality: {threshold}}",
            rule="CALIBRATION",
        )
    out: dict[str, float] = {}
    for m, v in mods.items():
        if m not in MODALITIES:
            raise InputError(
                path, None, f"modalities.{m}"[:80], "unknown modality", rule="CALIBRATION"
            )
        t = v.get("threshold") if isinstance(v, dict) else None
        if not _finite_number(t):
            raise InputError(
                path,
                None,
                f"modalities.{m}.threshold",
                f"must be a finite number, got {str(t)[:40]!r}",
                rule="CALIBRATION",
            )
        out[m] = float(t)
    return out


def load_thresholds(name: str, where: str | None = None) -> tuple[dict[str, float], str]:
    """The cartridge thresholds of system ``name``: none (``where="none"``), the file
    ``where``, else ``bench/calibration/<name>.json`` when it exists (read by
    :func:`read_calibration`); returns them and where they came from."""
    if where == "none":
        return {}, "none"
    path = Path(where) if where else calibration_path(name)
    if not path.exists():
        if where:
            raise MembenchError(f"{path}: calibration file not found")
        return {}, "none (no calibration file)"
    return read_calibration(path), str(path.name)


def _build(cls, name: str, cfg: dict[str, Any]):
    cfg = dict(cfg)
    chunk_cfg = ChunkConfig(**{k: cfg.pop(k) for k in list(cfg) if k in _CHUNK_FIELDS})
    policy = {k: cfg.pop(k) for k in list(cfg) if k in _POLICY_KEYS}
    where = cfg.pop("calibration", None)
    # the hybrid's fused (RRF) score says how high an atom ranks, not how well it matches, so
    # its cartridge gate is each fused candidate's dense cosine, with dense's calibration
    calibrated_as = cfg.pop("calibration_as", None) or (
        "dense" if cfg.get("gate") == "dense" else name
    )
    if "thresholds" not in policy:
        policy["thresholds"], source = load_thresholds(calibrated_as, where)
    else:
        source = "--config thresholds"
    chunk_meta = content_meta(chunk_cfg)  # the config plus the OCR and PDF extractors' identity
    # no effect on the atoms: not part of the recorded config
    chunk_meta["chunk_config"] = {
        **chunk_meta["chunk_config"],
        "ocr_processes": None,
        "ocr_overlap": None,
    }
    system = cls(
        partial(chunk, config=chunk_cfg), chunker_config=chunk_meta, name=name, **policy, **cfg
    )
    system.extra_config["calibration"] = source
    return system


def bm25(**cfg: Any):
    from .bm25 import BM25System

    return _build(BM25System, "bm25", cfg)


def _card_name(base: str, cfg: dict[str, Any]) -> str:
    """``dense`` / ``hybrid`` with the default card, ``dense-<card>`` / ``hybrid-<card>`` with
    ``--config card=NAME`` (so its calibration file and its rows are its own)."""
    from .dense import DEFAULT_CARD

    card = cfg.get("card", DEFAULT_CARD)
    if not isinstance(card, str):
        raise MembenchError(f"--config card: a card name in bench/cards, got {card!r}")
    return base if card == DEFAULT_CARD else f"{base}-{card}"


def dense(**cfg: Any):
    from .dense import DenseSystem

    return _build(DenseSystem, _card_name("dense", cfg), cfg)


def hybrid(**cfg: Any):
    from .hybrid import HybridSystem

    cfg.setdefault("gate", "dense")
    name = _card_name("hybrid", cfg)
    if cfg.get("gate") == "dense" and name != "hybrid":
        cfg["calibration_as"] = name.replace("hybrid", "dense", 1)
    return _build(HybridSystem, name, cfg)
