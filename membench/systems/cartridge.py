"""The cartridge policy of the reference systems.

**Compiling a cartridge** (:meth:`CartridgePolicy.compile`). Walk the ranked hits in order and
admit an atom when

1. its score is ``>= threshold`` for the atom's modality (``thresholds[modality]``, else
   ``default_threshold``; scores are the engine's own, so each engine has its own thresholds);
2. fewer than ``max_atoms`` atoms have been admitted; and
3. its text fits the remaining token budget (``token_budget`` whitespace tokens,
   ``str.split()``). An atom that does not fit is skipped and the walk goes on; the *first*
   admitted atom is admitted even when it alone exceeds the budget.

An empty cartridge means the system abstains. The cartridge keeps ranking order.

Early exits, which give the cartridge the full walk gives: with ``descending=True`` (hits in
descending score order, as the reference engines guarantee: :mod:`.retrieval`) the walk stops
at the first hit below the lowest threshold of any modality; given ``min_tokens`` (the least
token count of any atom the hits can name) it stops once an atom of that size could no longer
fit after the first admitted one.

The thresholds come from ``membench calibrate`` (:mod:`membench.analysis.operating_point`),
committed in ``bench/calibration/``. Pure: touches no file. Why these rules: docs/runs.md,
"The cartridge walk".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class CartridgePolicy:
    default_threshold: float = 0.0
    thresholds: dict[str, float] = field(default_factory=dict)  # per atom modality
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
        return {
            **asdict(self),
            "thresholds": dict(sorted(self.thresholds.items())),
            "token_unit": "whitespace tokens of atom text (str.split)",
            "oversize_first_atom": "admitted alone",
        }

    def compile(
        self,
        hits: Sequence[tuple[str, float]],
        atoms: Mapping[str, Any],
        *,
        descending: bool = False,
        tokens: Mapping[str, int] | None = None,
        min_tokens: int | None = None,
    ) -> list[str]:
        """Atom ids committed for ``hits`` (ranked); ``atoms`` maps atom_id to an object with
        ``modality`` and ``text``. ``descending``: the scores are known to be in descending
        order, so the walk may stop early (module docstring). ``tokens``: atom_id -> its
        text's whitespace token count, when the caller counted them once (else each visited
        atom's text is split). ``min_tokens``: no atom ``hits`` can name has fewer tokens, so
        the walk may stop when one that short would not fit (module docstring)."""
        out: list[str] = []
        used = 0
        floor = min([self.default_threshold, *self.thresholds.values()])
        thresholds: dict[str, float] = {}  # modality -> threshold, for this call
        for atom_id, score in hits:
            if len(out) >= self.max_atoms:
                break
            if descending and score < floor:
                break
            a = atoms[atom_id]
            t = thresholds.get(a.modality)
            if t is None:
                t = thresholds[a.modality] = self.threshold(a.modality)
            if not score >= t:
                continue
            n = tokens[atom_id] if tokens is not None else token_count(a.text)
            if out and used + n > self.token_budget:
                continue
            out.append(atom_id)
            used += n
            if min_tokens is not None and used + min_tokens > self.token_budget:
                break  # (out is not empty): no later atom can fit
        return out


def token_count(text: str | None) -> int:
    """The cartridge's token unit: whitespace tokens (``str.split``)."""
    return len((text or "").split())
