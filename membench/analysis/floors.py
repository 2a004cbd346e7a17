"""The content-free floors beside a run: what position alone reaches on the same items.

The registered doubles ``random`` (a seeded order), ``newest`` and ``oldest`` (``observed_at``
alone) rank a holder's in-scope atoms without reading them
(:data:`membench.systems.doubles.CONTENT_FREE`). A figure a system reaches is read against
theirs: page 02 shows their recall@10 per modality beside the run's, with the run's margin over
the best of them (:func:`membench.report.tables.floors_grid`); ``make all`` runs them on dev.

* :func:`is_floor_run`: a run's ``meta.json`` is a content-free floor's (its card's name is one
  of them and what ran is a test double: the leaderboard's
  :func:`membench.analysis.leaderboard.is_floor`).
* :func:`floor_runs`: from candidate run directories (default: the run directory's siblings),
  the complete floor runs on the same items as the run: the same split, set files (sha256)
  and selection (modalities, limit, sample seed, queries asked). Each candidate left out is
  named with why, in one line (a sibling that is no floor's run, or no readable run, is passed
  over silently).
* :func:`floor_metrics`: their figures (:func:`membench.analysis.summaries.load_metrics`),
  by label.

Reads run directories (meta.json; the chosen runs' files and sets through
:class:`membench.metrics.rundir.RunDir`); writes nothing. Start at :func:`floor_metrics`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..core.errors import MembenchError
from ..metrics.rundir import RunDir


def is_floor_run(meta: dict[str, Any]) -> bool:
    """A run's ``meta.json`` is a content-free floor's: a test double whose card's name is in
    :data:`membench.systems.doubles.CONTENT_FREE`."""
    from ..systems.doubles import CONTENT_FREE

    return (meta.get("identity") or {}).get("kind") == "test double" and (
        meta.get("card") or {}
    ).get("name") in CONTENT_FREE


def _items(meta: dict[str, Any]) -> tuple:
    """What decides the items a run is evaluated on (its meta.json)."""
    mods = meta.get("modalities")
    return (
        meta.get("split"),
        sorted((meta.get("set_sha256") or {}).items()),
        sorted(mods) if mods else None,
        meta.get("limit"),
        meta.get("sample_seed"),
        meta.get("queries"),
    )


def floor_runs(
    run: RunDir, candidates: list[str | os.PathLike] | None = None
) -> tuple[list[RunDir], list[str]]:
    """``(runs, left_out)``: the complete content-free floor runs among ``candidates`` (default:
    every directory beside ``run``'s, by name) that evaluate the same items as ``run``, opened
    on ``run``'s sets; and one line per candidate left out, saying why. ``run`` itself is a
    candidate like any other (a floor's own page shows it among the floors)."""
    from ..run.files import read_meta

    given = candidates is not None
    if candidates is None:
        parent = run.path.parent
        candidates = (
            sorted(
                (p for p in parent.iterdir() if (p / "meta.json").is_file()), key=lambda p: p.name
            )
            if parent.is_dir()
            else []
        )
    want = _items(run.meta)
    out: list[RunDir] = []
    left: list[str] = []
    for c in candidates:
        path = Path(c)
        try:
            meta = run.meta if path.resolve() == run.path.resolve() else read_meta(path)
        except (MembenchError, OSError) as e:
            if given:  # a sibling that is no run is passed over
                left.append(f"{path}: not read ({str(e).splitlines()[0]})")
            continue
        if not is_floor_run(meta):
            if given:
                left.append(
                    f"{path}: not a content-free floor's run (system {meta.get('system')!r})"
                )
            continue
        if meta.get("status") not in (None, "complete"):
            left.append(f"{path}: the run is {meta.get('status')!r}, not complete")
            continue
        if _items(meta) != want:
            left.append(
                f"{path}: evaluates other items (split, set files, modalities, limit "
                f"or queries differ from {run.path.name}'s)"
            )
            continue
        try:
            out.append(RunDir.open(path, run.sets_dir))
        except MembenchError as e:
            left.append(f"{path}: {str(e).splitlines()[0]}")
    return out, left


def floor_metrics(
    run: RunDir, candidates: list[str | os.PathLike] | None = None
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """``({label: metrics}, left_out)``: the figures of :func:`floor_runs`' runs, each labelled
    by its system (``random``, ``newest``, ``oldest``), by its run directory's name where two
    runs share a system."""
    from .summaries import load_metrics

    runs, left = floor_runs(run, candidates)
    systems = [rd.system for rd in runs]
    out: dict[str, dict[str, Any]] = {}
    for rd in runs:
        label = rd.system if systems.count(rd.system) == 1 else rd.path.name
        out[label] = load_metrics(rd)
    return out, left


def margins(
    metrics: dict[str, Any], floors: dict[str, dict[str, Any]], measure: str = "recall@10"
) -> dict[str, tuple[float, str] | None]:
    """Per scope of ``metrics``: ``(the run's value minus the best floor's, that floor's
    label)``, or ``None`` where the run's value or every floor's is missing."""
    from ..modalities import MODALITIES

    out: dict[str, tuple[float, str] | None] = {}
    for scope in (*MODALITIES, "all"):
        if measure not in (metrics.get(scope) or {}):
            continue
        mine = (metrics[scope].get(measure) or {}).get("value")
        vals = [((f.get(scope) or {}).get(measure) or {}).get("value") for f in floors.values()]
        best = max(
            ((v, lab) for v, lab in zip(vals, floors) if v is not None),
            default=None,
            key=lambda x: x[0],
        )
        out[scope] = None if mine is None or best is None else (mine - best[0], best[1])
    return out


__all__ = ["floor_metrics", "floor_runs", "is_floor_run", "margins"]
