"""The leaderboard's columns, shared by the store, the ranking and the tables: which measures an
entry holds and a table shows (:data:`MEASURES`, the ones that follow the judgment set,
:data:`RELEVANCE`, and the others, :data:`OTHER`, with latency and the context cost beside
them), what the rows are ranked by by default, and the text of one cell (:func:`cell_text`,
:func:`gate_text`). See :mod:`membench.analysis.leaderboard`.

Reads and writes nothing: names and pure functions over the measure registry
(:mod:`membench.metrics.measures`).
"""

from __future__ import annotations

import numpy as np

from ...metrics import abstention
from ...metrics.answer_layer import ANSWER_BUDGETED
from ...metrics.judged import JUDGED
from ...metrics.measures import JUDGMENT_MEASURES, MEAN_MEASURES, ORDERING_MEASURES, SILENCE

PRIMARY = "gold"
#: the measures the leaderboard shows and tests (latency is shown, not tested; a report-only
#: measure, such as judged@10 and false_recall_native, is shown, never tested)
MEASURES: tuple[str, ...] = tuple(
    m
    for m in (
        "recall@1000",
        "recall@10",
        JUDGED,
        "mrr",
        "ndcg@10",
        *[
            x
            for x in JUDGMENT_MEASURES
            if x
            not in ("recall@1000", "recall@10", "mrr", "ndcg@10", "recall@100", "cartridge_recall")
        ],
        "answerable_kept@fr0.10",
        "false_recall_rate",
        "false_recall_native",
        "abstain_rate_answerable",
        SILENCE,
        "abstention_auc",
        "holder_correctness",
        "temporal_correctness",
        ANSWER_BUDGETED,
    )
    if m in MEAN_MEASURES or m in ORDERING_MEASURES
)
SHOWN_LATENCY = "latency_p50_ms"
#: the answer layer and the context cost, shown beside the ranked answer figure (never tested,
#: never ranked): the uncut answer@cartridge with the median tokens of a committed (non-empty)
#: cartridge, answer@10 and its grounded part, recall within 1024 tokens
SHOWN_CONTEXT: tuple[str, ...] = (
    "answer@cartridge",
    "context_tokens_committed_p50",
    "answer@10",
    "grounded_answer@10",
    "recall@1024tok",
)
#: the answer table's ranking: the answer handed over within the stated token budget
ANSWER_RANK_BY = ANSWER_BUDGETED
#: the answer table's columns: the ranked (tested) answer figure, then what is shown beside it
ANSWER_COLUMNS: tuple[str, ...] = (ANSWER_RANK_BY, *SHOWN_CONTEXT)
#: the measures that follow the judgment set (one table per set), with judged@10 beside
#: recall@10: it reads every set at once (one value per item), shown in each set's table over
#: the items that set judges ...
RELEVANCE: tuple[str, ...] = tuple(m for m in MEASURES if m in JUDGMENT_MEASURES or m == JUDGED)
#: ... and the ones that do not (one table per size class, shown under gold)
OTHER: tuple[str, ...] = (
    *(m for m in MEASURES if m not in RELEVANCE),
    SHOWN_LATENCY,
    *SHOWN_CONTEXT,
)
RANK_BY = "recall@1000"  # Q2D-Web's primary first-stage figure
#: the cartridge table's ranking: silence scores 0 on it
CARTRIDGE_RANK_BY = abstention.KEPT


def _num(v: float) -> float | None:
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)


def gate_text(c) -> str:
    """A leaderboard cell's gate verdict: ``PASS``, ``FAIL`` or ``FAIL (silent)`` (its
    ``gate_why`` says why)."""
    if c.get("gate_why"):
        return "FAIL (silent)"
    return "PASS" if c["gate_pass"] else "FAIL"


def cell_text(c, digits: int = 3) -> str:
    """One leaderboard cell as text (what :meth:`Leaderboard.wide` shows)."""

    def missing(v) -> bool:
        return v is None or (isinstance(v, float) and np.isnan(v))

    def p_text(p: float) -> str:
        return "<0.001" if p < 0.001 else f"{p:.3f}"

    if missing(c["value"]):
        return f"n/a (n={int(c['n'])})"
    s = f"{c['value']:.{digits}f}"
    if not (missing(c["ci95_lo"]) or missing(c["ci95_hi"])):
        s += f" [{c['ci95_lo']:.{digits}f}, {c['ci95_hi']:.{digits}f}]"
    s += f" n={int(c['n'])}"
    if isinstance(c.get("gate"), str) and c["gate"]:
        s += f" gate {c['gate']} {gate_text(c)}"
    if not missing(c.get("random_kept")):
        s += f" (random committer {c['random_kept']:.{digits}f})"
    if c.get("is_best"):
        s += " · best"
    elif not (c.get("p_holm") is None or np.isnan(c["p_holm"])):
        if c["significant"]:
            s += f" · {c['diff']:+.{digits}f} vs best (p_holm {p_text(c['p_holm'])})"
        else:
            s += f" · = best (p_holm {p_text(c['p_holm'])})"
    return s


__all__ = [
    "ANSWER_COLUMNS",
    "ANSWER_RANK_BY",
    "CARTRIDGE_RANK_BY",
    "JUDGED",
    "MEASURES",
    "OTHER",
    "PRIMARY",
    "RANK_BY",
    "RELEVANCE",
    "SHOWN_CONTEXT",
    "SHOWN_LATENCY",
    "cell_text",
    "gate_text",
]
