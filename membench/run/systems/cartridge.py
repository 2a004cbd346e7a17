"""The cartridge policy of the reference systems.

**Compiling a cartridge** (:meth:`CartridgePolicy.compile`). Walk the ranked hits in order and
admit an atom when

1. its score is ``>= threshold`` for the atom's modality (``thresholds[modality]``, else
   ``default_threshold``; scores are the engine's own: BM25, cosine or RRF, so each engine has
   its own thresholds);
2. fewer than ``max_atoms`` atoms have been admitted; and
3. its text fits the remaining token budget (``token_budget`` whitespace tokens, counted with
   ``str.split()``). An atom that does not fit is skipped and the walk goes on, so a shorter
   atom further down may still fit. Exception: the *first* admitted atom is admitted even when
   it alone exceeds the budget (a long PDF page must not turn the best evidence into an
   abstention); nothing else is admitted after it if the budget is spent.

An empty cartridge means the system abstains. The cartridge keeps ranking order.

Its per-modality thresholds come from ``membench calibrate`` (the operating-point rule of
:mod:`membench.analysis.operating_point`), committed in ``bench/calibration/``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class CartridgePolicy:
    default_threshold: float = 0.0
    thresholds: dict[str, float] = field(default_factory=dict)   # per atom modality
    max_atoms: int = 5
    token_budget: int = 512

    def __post_init__(self) -> None:
        if self.max_atoms < 0 or self.token_budget < 0:
            raise ValueError("max_atoms and token_budget must be >= 0")
        for m, t in {"default": self.default_threshold, **self.thresholds}.items():
            if not isinstance(t, (int, float)) or math.isnan(t):
                raise ValueError(f"threshold for {m} must be a number, got {t!r}")

    def threshold(self, modality: str) -> float:
        return float(self.thresholds.get(modality, self.default_threshold))

    def config(self) -> dict[str, Any]:
        return {**asdict(self), "thresholds": dict(sorted(self.thresholds.items())),
                "token_unit": "whitespace tokens of atom text (str.split)",
                "oversize_first_atom": "admitted alone"}

    def compile(self, hits: Sequence[tuple[str, float]], atoms: Mapping[str, Any]) -> list[str]:
        """Atom ids committed for ``hits`` (ranked); ``atoms`` maps atom_id to an object with
        ``modality`` and ``text``."""
        out: list[str] = []
        used = 0
        for atom_id, score in hits:
            if len(out) >= self.max_atoms:
                break
            a = atoms[atom_id]
            if not score >= self.threshold(a.modality):
                continue
            n = len((a.text or "").split())
            if out and used + n > self.token_budget:
                continue
            out.append(atom_id)
            used += n
        return out
