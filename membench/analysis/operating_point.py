"""The one operating-point rule: which cartridge score threshold a system should use.

Given the top-1 score of every answerable and every unanswerable query (``None`` for a query
with no hits), pick the threshold ``t`` that maximises Youden's J = TPR(t) - FPR(t), where TPR
is the share of answerable queries with top-1 >= t and FPR the share of unanswerable ones (the
false-recall rate the cartridge would have, when the top-1 atom decides), subject to
FPR(t) <= ``max_false_recall`` (the false-recall gate of :mod:`membench.metrics.measures`,
0.10). Candidates are the observed finite scores plus one value just above the largest
(``math.nextafter``; "always abstain"). The constraint counts as *achievable* when some
candidate with TPR > 0 satisfies it; otherwise the best unconstrained J is taken (and
:class:`Calibration` says so). Ties in J go to the higher threshold (fewer false recalls).
The rule is deterministic: same inputs, same threshold.

The threshold written is the **midpoint** between the chosen score and the next lower observed
score (the chosen score minus ``margin`` when none is lower; the largest plus ``margin`` for
"always abstain", ``margin = 1e-6 * max(1, |score|)``): it keeps every calibration query on the
same side (TPR and FPR unchanged) and sits as far as it can from each of them, so scores that
differ by float rounding (another BLAS, another thread count: about 1e-7 for cosines) cannot
move a query across it, as a threshold equal to one query's own score would.

``membench calibrate`` (:mod:`membench.analysis.calibrate`) writes the reference systems'
thresholds with it (fitted on one half of the dev holders, with audited unanswerables only,
and measured on the other half), and the threshold sweep of notebook 03
(:func:`membench.analysis.sweep.operating_points`) marks the point the same rule picks on
the whole run.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from dataclasses import dataclass

from ..metrics.measures import MAX_FALSE_RECALL


@dataclass(frozen=True)
class Calibration:
    threshold: float
    tpr: float  # share of answerable queries with top-1 >= threshold
    fpr: float  # share of unanswerable queries with top-1 >= threshold
    j: float  # tpr - fpr
    constrained: bool  # True when the max_false_recall target was achievable
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
    return (len(sorted_scores) - bisect.bisect_left(sorted_scores, t)) / len(sorted_scores)


def choose_threshold(
    scores_answerable_top1: Iterable[float | None],
    scores_unanswerable_top1: Iterable[float | None],
    max_false_recall: float = MAX_FALSE_RECALL,
) -> Calibration:
    """The operating point by the rule of this module (see the module docstring), with its
    figures."""
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
    return Calibration(
        threshold=midpoint(t, finite),
        tpr=tpr,
        fpr=fpr,
        j=j,
        constrained=constrained,
        n_answerable=len(pos),
        n_unanswerable=len(neg),
    )


def _margin(s: float) -> float:
    return 1e-6 * max(1.0, abs(s))


def midpoint(t: float, finite: list[float]) -> float:
    """The threshold written for the chosen candidate ``t`` (module docstring): halfway to the
    next lower observed score in ``finite`` (sorted, distinct), or ``margin`` away at either
    end."""
    if t > finite[-1]:  # "always abstain"
        return finite[-1] + _margin(finite[-1])
    k = bisect.bisect_left(finite, t)  # finite[k] == t
    if k == 0:
        return t - _margin(t)
    return (finite[k - 1] + t) / 2.0
