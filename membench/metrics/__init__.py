"""membench.metrics: the measures of SPEC section 7, per modality, with n, denominator and a
bootstrap 95% interval for every figure.

Modules, one per measure family:

* :mod:`.resolve`   the atom table: which atoms hit a gold region (each modality's overlap rule)
* :mod:`.ranking`   recall@k, MRR, nDCG@k from first-hit ranks; the tie-breaking rule
* :mod:`.scope`     temporal and holder correctness
* :mod:`.cartridge` false recall, abstention, cartridge recall
* :mod:`.abstention` the abstention AUC and the answerable share kept at false recall <= 0.10
  (statistics of the order of a slice's queries by their abstention score)
* :mod:`.latency`   p50 / p95 compile latency
* :mod:`.bootstrap` percentile bootstrap intervals
* :mod:`.score`     per-item join of records, items, atoms and run lines
* :mod:`.measures`  the measure registry: name, definition, denominator, gate, direction
* :mod:`.aggregate` slices, gates, judgment sets, ``metrics.json``, :func:`format_table`
* :mod:`.rundir`    a run directory (:class:`~membench.metrics.rundir.RunDir`); its files are read by
  :mod:`membench.run.files`
* :mod:`.trec`      fast TREC run / qrels reader and evaluator (same ranking formulas)

Tie-breaking (also written into every metrics.json as ``tie_breaking``): hits are ordered by
score descending; equal scores keep the order the system returned them in (stable sort; in a
TREC run file, the rank column and then the line order); a duplicate atom id counts only at its
first position and occupies no further rank. trec_eval breaks ties by document id descending
instead, so tests compare against pytrec_eval with rank-derived scores
(``tests/test_metrics_trust.py`` shows a tie case where naive input differs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..run.files import AtomRow, RunRow, read_atoms, read_run
from ..run.protocol import TIE_BREAKING, order_hits
from ..sets.schema import AnnotationRecord, SourceItem
from .aggregate import DEFINITIONS, aggregate, format_brief, format_table
from .bootstrap import N_RESAMPLES, SEED, bootstrap_ci
from .measures import GATES, MEASURES, METRICS, Measure
from .ranking import FirstHits
from .rundir import RunDir, metrics_for_run_dir
from .score import ItemScores, score_items
from .trec import evaluate_trec, read_trec_qrels, read_trec_run, write_trec_qrels, write_trec_run


def compute_metrics(records: Iterable[AnnotationRecord | Mapping],
                    items: Iterable[SourceItem | Mapping],
                    atoms: Iterable[AtomRow | Mapping],
                    run_rows: Iterable[RunRow | Mapping],
                    *, record_locs: Sequence[tuple[str, int | None]] | None = None,
                    seed: int = SEED, n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    """The ``metrics.json`` object for one run over ``records`` (see
    :mod:`membench.metrics.aggregate` for its shape)."""
    return aggregate(score_items(records, items, atoms, run_rows, record_locs=record_locs),
                     seed=seed, n_resamples=n_resamples)


__all__ = [
    "DEFINITIONS",
    "GATES",
    "MEASURES",
    "METRICS",
    "Measure",
    "N_RESAMPLES",
    "SEED",
    "TIE_BREAKING",
    "AtomRow",
    "FirstHits",
    "ItemScores",
    "RunDir",
    "RunRow",
    "aggregate",
    "bootstrap_ci",
    "compute_metrics",
    "evaluate_trec",
    "format_brief",
    "format_table",
    "metrics_for_run_dir",
    "order_hits",
    "read_atoms",
    "read_run",
    "read_trec_qrels",
    "read_trec_run",
    "score_items",
    "write_trec_qrels",
    "write_trec_run",
]
