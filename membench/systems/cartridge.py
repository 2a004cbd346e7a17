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

Early exit: when the caller says the hits are in descending score order (``descending=True``;
the reference systems' engines guarantee it, see :mod:`.retrieval`), the walk stops at the first
hit scoring below the lowest threshold of any modality: no later hit can pass rule 1, so the
cartridge is the one the full walk gives. Gate scores that are not in descending order (the
hybrid's dense gate over the RRF ranking) are walked to the end. And when the caller gives the
least token count of any atom the hits can name (``min_tokens``), the walk stops as soon as an
atom of that size would no longer fit the budget after the first admitted one: every later atom
is at least that long, so rule 3 would skip it (long code atoms spend the budget on the first
atom, and the walk used to visit the remaining hundreds of hits only to skip each).

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

    def compile(self, hits: Sequence[tuple[str, float]], atoms: Mapping[str, Any], *,
                descending: bool = False, tokens: Mapping[str, int] | None = None,
                min_tokens: int | None = None) -> list[str]:
        """Atom ids committed for ``hits`` (ranked); ``atoms`` maps atom_id to an object with
        ``modality`` and ``text``. ``descending``: the scores are known to be in descending
        order, so the walk may stop early (module docstring). ``tokens``: atom_id -> its
        text's whitespace token count, when the caller counted them once (else each visited
        atom's text is split). ``min_tokens``: no atom ``hits`` can name has fewer tokens, so
        the walk may stop when one that short would not fit (module docstring)."""
        out: list[str] = []
        used = 0
        floor = min([self.default_threshold, *self.thresholds.values()])
        thresholds: dict[str, float] = {}          # modality -> threshold, for this call
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
                break           # (out is not empty): no later atom can fit
        return out


def token_count(text: str | None) -> int:
    """The cartridge's token unit: whitespace tokens (``str.split``)."""
    return len((text or "").split())
