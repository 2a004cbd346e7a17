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

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..run.files import AtomRow, RunRow
    from ..contract.schema import AnnotationRecord, SourceItem

# the package's names, imported on first use (PEP 562): ``membench trec-eval`` imports
# membench.trec.trec_eval without pandas, pydantic or the sets' schema
_LAZY = {
    "AtomRow": "..run.files", "RunRow": "..run.files", "read_atoms": "..run.files",
    "read_run": "..run.files", "TIE_BREAKING": "..contract.protocol",
    "order_hits": "..contract.protocol", "AnnotationRecord": "..contract.schema",
    "SourceItem": "..contract.schema", "DEFINITIONS": ".aggregate", "aggregate": ".aggregate",
    "format_brief": ".aggregate", "format_table": ".aggregate", "N_RESAMPLES": ".bootstrap",
    "SEED": ".bootstrap", "bootstrap_ci": ".bootstrap", "GATES": ".measures",
    "MEASURES": ".measures", "METRICS": ".measures", "Measure": ".measures",
    "FirstHits": ".ranking", "RunDir": ".rundir", "metrics_for_run_dir": ".rundir",
    "ItemScores": ".score", "score_items": ".score", "evaluate_trec": "..trec",
    "read_trec_qrels": "..trec", "read_trec_run": "..trec", "write_trec_qrels": "..trec",
    "write_trec_run": "..trec",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def compute_metrics(records: Iterable[AnnotationRecord | Mapping],
                    items: Iterable[SourceItem | Mapping],
                    atoms: Iterable[AtomRow | Mapping],
                    run_rows: Iterable[RunRow | Mapping],
                    *, record_locs: Sequence[tuple[str, int | None]] | None = None,
                    seed: int | None = None, n_resamples: int | None = None,
                    content: Any = None) -> dict[str, Any]:
    """The ``metrics.json`` object for one run over ``records`` (see
    :mod:`membench.metrics.aggregate` for its shape); ``seed`` and ``n_resamples`` default to
    the bootstrap's :data:`~membench.metrics.bootstrap.SEED` and ``N_RESAMPLES``; ``content``:
    the :class:`~membench.metrics.answer_layer.ContentTexts` the answer layer and the context
    cost read (without one, their figures are null)."""
    from .aggregate import aggregate
    from .bootstrap import N_RESAMPLES, SEED
    from .score import score_items

    seed = SEED if seed is None else seed
    n_resamples = N_RESAMPLES if n_resamples is None else n_resamples
    return aggregate(score_items(records, items, atoms, run_rows, record_locs=record_locs,
                                 content=content),
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
