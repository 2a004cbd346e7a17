"""The cartridge policy of the reference systems, and threshold calibration.

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

**Calibration** (:func:`calibrate`). Given the top-1 score of every answerable and every
unanswerable dev query (``None`` for a query with no hits), pick the threshold ``t`` that
maximises Youden's J = TPR(t) - FPR(t), where TPR is the share of answerable queries with
top-1 >= t and FPR the share of unanswerable ones (the false-recall rate the cartridge would
have, when the top-1 atom decides), subject to FPR(t) <= ``max_false_recall`` (0.10, the SPEC
gate). Candidates are the observed finite scores plus one value just above the largest
(``math.nextafter``; "always abstain"). The constraint counts as *achievable* when some
candidate with TPR > 0 satisfies it; otherwise the best unconstrained J is taken (and
:class:`Calibration` says so). Ties in J go to the higher threshold (fewer false recalls).
The rule is deterministic: same inputs, same threshold.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

MAX_FALSE_RECALL = 0.10


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


@dataclass(frozen=True)
class Calibration:
    threshold: float
    tpr: float               # share of answerable queries with top-1 >= threshold
    fpr: float               # share of unanswerable queries with top-1 >= threshold
    j: float                 # tpr - fpr
    constrained: bool        # True when the max_false_recall target was achievable
    n_answerable: int
    n_unanswerable: int


def _clean(scores: Iterable[float | None]) -> list[float]:
    out = []
    for s in scores:
        if s is None:
            out.append(-math.inf)
        else:
            s = float(s)
            if math.isnan(s):
                raise ValueError("NaN score in calibration input")
            out.append(s)
    return out


def _share_at_least(sorted_scores: list[float], t: float) -> float:
    if not sorted_scores:
        return 0.0
    import bisect
    return (len(sorted_scores) - bisect.bisect_left(sorted_scores, t)) / len(sorted_scores)


def calibrate_detail(scores_answerable_top1: Iterable[float | None],
                     scores_unanswerable_top1: Iterable[float | None],
                     max_false_recall: float = MAX_FALSE_RECALL) -> Calibration:
    """The calibration rule of this module (see the module docstring), with its figures."""
    pos = sorted(_clean(scores_answerable_top1))
    neg = sorted(_clean(scores_unanswerable_top1))
    finite = sorted({s for s in pos + neg if math.isfinite(s)})
    if not finite:
        raise ValueError("calibration needs at least one finite top-1 score")
    candidates = finite + [math.nextafter(finite[-1], math.inf)]
    rows = []
    for t in candidates:
        tpr, fpr = _share_at_least(pos, t), _share_at_least(neg, t)
        rows.append((t, tpr, fpr, tpr - fpr))
    feasible = [r for r in rows if r[2] <= max_false_recall and r[1] > 0]
    constrained = bool(feasible)
    pool = feasible if constrained else rows
    # best J; ties -> higher threshold
    t, tpr, fpr, j = max(pool, key=lambda r: (r[3], r[0]))
    return Calibration(threshold=t, tpr=tpr, fpr=fpr, j=j, constrained=constrained,
                       n_answerable=len(pos), n_unanswerable=len(neg))


def calibrate(scores_answerable_top1: Iterable[float | None],
              scores_unanswerable_top1: Iterable[float | None],
              max_false_recall: float = MAX_FALSE_RECALL) -> float:
    """The threshold chosen by :func:`calibrate_detail`."""
    return calibrate_detail(scores_answerable_top1, scores_unanswerable_top1,
                            max_false_recall).threshold
