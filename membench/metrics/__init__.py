"""membench.metrics: a run's measures (SPEC section 7) per modality, with n, denominator and a
bootstrap 95% interval for every figure.

Reads RUN_DIR and sets through :class:`~membench.metrics.rundir.RunDir`; writes
``RUN_DIR/metrics.json``, exports and the score cache. Imports only the floors below (``run``
and down): plain TREC files are :mod:`membench.trec`, a floor above. Start at
:func:`compute_metrics` or :func:`~membench.metrics.rundir.metrics_for_run_dir`; the modules,
one per measure family, are listed in docs/architecture.md ("Layout"), the tie-breaking rule
in :mod:`membench.contract.protocol` (``TIE_BREAKING``, also written into every metrics.json).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..contract.schema import AnnotationRecord, SourceItem
    from ..run.files import AtomRow, RunRow

# the package's names, imported on first use (PEP 562): ``membench trec-eval`` imports
# membench.trec.trec_eval without pandas, pydantic or the sets' schema
_LAZY = {
    "AtomRow": "..run.files",
    "RunRow": "..run.files",
    "read_atoms": "..run.files",
    "read_run": "..run.files",
    "TIE_BREAKING": "..contract.protocol",
    "order_hits": "..contract.protocol",
    "AnnotationRecord": "..contract.schema",
    "SourceItem": "..contract.schema",
    "DEFINITIONS": ".aggregate",
    "aggregate": ".aggregate",
    "format_brief": ".aggregate",
    "format_table": ".aggregate",
    "N_RESAMPLES": ".bootstrap",
    "SEED": ".bootstrap",
    "bootstrap_ci": ".bootstrap",
    "GATES": ".measures",
    "MEASURES": ".measures",
    "METRICS": ".measures",
    "Measure": ".measures",
    "FirstHits": ".ranking",
    "RunDir": ".rundir",
    "metrics_for_run_dir": ".rundir",
    "ItemScores": ".score",
    "score_items": ".score",
}

#: names this package re-exported from membench.trec up to 0.1.0 (an import up a floor); the
#: error for one of them says where it is
_TREC = ("evaluate_trec", "read_trec_qrels", "read_trec_run", "write_trec_qrels", "write_trec_run")


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    if name in _TREC:
        raise AttributeError(
            f"module {__name__!r} has no attribute {name!r}: plain TREC files "
            f"are membench.trec's (from membench.trec import {name})"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def compute_metrics(
    records: Iterable[AnnotationRecord | Mapping],
    items: Iterable[SourceItem | Mapping],
    atoms: Iterable[AtomRow | Mapping],
    run_rows: Iterable[RunRow | Mapping],
    *,
    record_locs: Sequence[tuple[str, int | None]] | None = None,
    seed: int | None = None,
    n_resamples: int | None = None,
    content: Any = None,
) -> dict[str, Any]:
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
    return aggregate(
        score_items(records, items, atoms, run_rows, record_locs=record_locs, content=content),
        seed=seed,
        n_resamples=n_resamples,
    )


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
    "format_brief",
    "format_table",
    "metrics_for_run_dir",
    "order_hits",
    "read_atoms",
    "read_run",
    "score_items",
]
