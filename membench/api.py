"""The front door's functions: what ``import membench as mb`` gives, each a thin wrapper of the
one function of the pipeline that does the work (docs/api.md documents every name).

``membench/__init__.py`` resolves the door's names here on first use (PEP 562), so importing
this module must stay cheap: it imports the standard library only at its top, and each function
imports what it wraps when it is called. Nothing here holds logic of its own beyond choosing
defaults and accepting a path or an opened object; what a function reads and writes is what the
wrapped function reads and writes (named in each docstring). Start at :func:`open_run`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .analysis.browse import Browser
    from .analysis.compare import Comparison
    from .analysis.leaderboard.ranking import Leaderboard
    from .metrics.rundir import RunDir
    from .trec.evaluate import TrecRun

PathLike = str | os.PathLike


def open_sets(sets_dir: PathLike | None = None):
    """The records of a sets folder as a table: one row per record (``query_id``,
    ``modality``, ``source``, ``split``, ``holder``, ``scenario``, ``answerable``,
    ``derivation``, ``n_gold``), read by
    :func:`membench.report.sets_tables.records_frame` (default folder: ``bench/sets``)."""
    from .core import paths
    from .report.sets_tables import records_frame

    return records_frame(sets_dir if sets_dir is not None else paths.DEFAULT_SETS_DIR)


def open_run(
    run_dir: PathLike,
    sets_dir: PathLike | None = None,
    *,
    partial: bool = False,
    final: bool = False,
) -> RunDir:
    """A run directory opened by :meth:`membench.metrics.rundir.RunDir.open`, with its
    refusals (an incomplete run without ``partial``, a test-split run without ``final``,
    sets that drifted since the run)."""
    from .metrics.rundir import RunDir

    return RunDir.open(run_dir, sets_dir, partial=partial, final=final)


def _opened(run: RunDir | PathLike, sets_dir: PathLike | None = None, **kw) -> RunDir:
    from .metrics.rundir import RunDir

    return run if isinstance(run, RunDir) else open_run(run, sets_dir, **kw)


def run_system(
    system: str | Any,
    out: PathLike,
    *,
    split: str = "dev",
    config: Mapping[str, Any] | None = None,
    sets_dir: PathLike | None = None,
    corpus: PathLike | None = None,
    modalities: Iterable[str] | None = None,
    limit: int | None = None,
    **options: Any,
) -> RunDir:
    """Run a system, given by name or ``module:Class`` (:func:`membench.systems.make_system`,
    with ``config``) or as an object of the system protocol, over a split into ``out``
    (:func:`membench.run.runner.run_system`, resuming a partial run, as ``membench run``), and
    return the run opened (:func:`open_run`). (Not ``mb.run``: ``membench.run`` is the runner's
    package.) ``options`` go to ``run_system`` (``lock``, ``manifest``, ``sample_seed``,
    ``final``, ...); without ``lock``, the sets folder's lock as ``membench run`` picks it
    (:func:`membench.sets.subcorpus.lock_for`), without ``manifest`` bench's. Writes ``out``
    (and the caches the system fills)."""
    from .core import paths
    from .run.runner import run_system as _run_system
    from .sets.subcorpus import lock_for
    from .systems import make_system

    sets = Path(sets_dir) if sets_dir is not None else paths.DEFAULT_SETS_DIR
    options.setdefault("lock", lock_for(sets))
    options["manifest"] = Path(options.get("manifest") or paths.MANIFEST_PATH)
    if isinstance(system, str):
        system = make_system(system, dict(config or {}))
    elif config:
        raise TypeError("config goes with a system given by name; an object carries its own")
    _run_system(
        system,
        sets,
        split,
        Path(out),
        paths.corpus_root(corpus),
        modalities=modalities,
        limit=limit,
        **options,
    )
    return open_run(out, sets_dir, final=bool(options.get("final")))


def score(run: RunDir | PathLike, *, write: bool = True, **options: Any) -> dict[str, Any]:
    """A run's figures, the ``metrics.json`` object, computed from its files by
    :meth:`membench.metrics.rundir.RunDir.metrics` (``write``: also into
    ``RUN_DIR/metrics.json``, as ``membench metrics``). ``run`` is a run directory or an
    opened :class:`RunDir`; ``options``: ``sets_dir``, ``partial``, ``final`` (for opening),
    ``seed``, ``n_resamples``."""
    opening = {k: options.pop(k) for k in ("partial", "final") if k in options}
    rd = _opened(run, options.pop("sets_dir", None), **opening)
    return rd.metrics(write=write, **options)


def compare(
    runs: Sequence[RunDir | PathLike], sets_dir: PathLike | None = None, **options: Any
) -> Comparison:
    """Runs over the same items side by side, with paired tests
    (:func:`membench.analysis.compare.compare_runs`; ``options``: ``n_resamples``,
    ``judgment_set``, ``metrics``, ``partial``, ``final``, ...). Reads the runs' files;
    writes nothing."""
    from .analysis.compare import compare_runs

    return compare_runs([getattr(r, "path", r) for r in runs], sets_dir, **options)


def leaderboard(
    store_dir: PathLike,
    runs: Sequence[RunDir | PathLike] | None = None,
    *,
    sets_dir: PathLike | None = None,
    **options: Any,
) -> Leaderboard:
    """The leaderboard of a result store
    (:func:`membench.analysis.leaderboard.ranking.leaderboard`; ``options``: ``rank_by``,
    ``n_resamples``, ``seed``), after adding ``runs`` to it when given
    (:func:`membench.analysis.leaderboard.store.add_runs`, as ``membench leaderboard --runs
    ... --out STORE``: it writes the store)."""
    from .analysis.leaderboard import leaderboard as _leaderboard
    from .analysis.leaderboard.store import add_runs

    if runs:
        add_runs([getattr(r, "path", r) for r in runs], store_dir, sets_dir)
    return _leaderboard(store_dir, **options)


def read_trec(
    path: PathLike, qrels: Mapping[str, Mapping[str, int]] | PathLike | None = None, **options: Any
) -> TrecRun:
    """A TREC run file (``qid Q0 docid rank score tag``) read and ranked by
    :func:`membench.trec.read_trec_run`, with located errors; ``qrels``, a mapping or a qrels
    file (:func:`membench.trec.read_trec_qrels`), also marks the judged lines (``options``:
    ``ties``, ``chunk_bytes``)."""
    from .trec import read_trec_qrels, read_trec_run

    if qrels is not None and not isinstance(qrels, Mapping):
        qrels = read_trec_qrels(qrels)
    return read_trec_run(path, qrels, **options)


def write_trec(
    path: PathLike, run: Mapping[str, Sequence[tuple[str, float]]], tag: str = "membench"
) -> None:
    """Write ``{qid: [(docid, score), ...]}`` as a TREC run file, ranks 1.. in the given order
    (:func:`membench.trec.write_trec_run`)."""
    from .trec import write_trec_run

    write_trec_run(path, run, tag)


def browse(
    run: RunDir | PathLike,
    corpus: PathLike | None = None,
    *,
    sets_dir: PathLike | None = None,
    **options: Any,
) -> Browser:
    """A live ipywidgets browser of a run's failures
    (:class:`membench.analysis.browse.Browser`: false recalls first, answerable misses, scope
    leaks; Prev / Next; ``options``: ``kind``, ``modality``, ``link_hosts``). Display it as
    the last expression of a cell. Reads the run, its sets and the corpus files it renders."""
    from .analysis.browse import Browser

    return Browser(run, sets_dir, corpus, **options)
