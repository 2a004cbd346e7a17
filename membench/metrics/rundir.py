"""A run directory, read one way: :class:`RunDir` (load, resolve its sets, check, score).

``membench run`` and ``membench import-run`` write RUN_DIR (``docs/runs.md``): ``meta.json``,
``atoms.jsonl``, ``run.jsonl``, and ``metrics`` adds ``metrics.json``. Every reader (metrics,
calibrate, slices, compare, the failure browser, report provenance) opens it through
:meth:`RunDir.open`, so they agree on:

* **which sets** it is scored against, one rule: the ``sets_dir`` a caller passes (``--sets``),
  else the ``sets_dir`` meta.json records (relative paths are taken from the run directory);
  no silent fallback to ``bench/sets``: a run without either is an error (RUN_META), and a
  folder that is gone is an error naming where the path came from (MISSING_FILE);
* **which records** it is about: :func:`membench.sets.select.select_records` with the run's
  split, modalities and ``limit`` from meta.json, which must give as many records as the run
  was asked (``queries``), else the sets changed since the run (RUN_META);
* **what each item scored**: :meth:`RunDir.scores` (:func:`membench.metrics.score.score_items`,
  computed once and cached), which metrics aggregate, slices tabulate and the browser filters.

Paths given by a user or a notebook parameter are resolved by
:func:`membench.core.paths.resolve_user_path` (as given, else from the repository root).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import progress
from ..core.errors import InputError
from ..core.jsonl import iter_json_lines, parse_model
from ..core.paths import resolve_user_path
from ..run.files import AtomRow, RunRow, read_atoms, read_run
from ..sets.build import set_digests
from ..sets.schema import AnnotationRecord, SourceItem
from ..sets.select import select_records
from .aggregate import aggregate
from .bootstrap import N_RESAMPLES, SEED
from .score import ItemScores, score_items

SPLITS = ("dev", "test")


def read_meta(run_dir: str | os.PathLike) -> dict[str, Any]:
    """A run directory's meta.json as a dict, with located errors: missing (not a run
    directory), not JSON, not a JSON object."""
    meta_path = Path(run_dir) / "meta.json"
    if not meta_path.is_file():
        raise InputError(meta_path, None, None, "file not found: not a run directory (make one "
                         "with `membench run --system NAME --out RUN_DIR`)", rule="MISSING_FILE")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(meta_path, e.lineno, None, f"not valid JSON: {e.msg}",
                         rule="JSON") from None
    if not isinstance(meta, dict):
        raise InputError(meta_path, None, None, f"must be a JSON object, got "
                         f"{type(meta).__name__}", rule="RUN_META")
    return meta


def run_status(run_dir: str | os.PathLike) -> str:
    """``"missing"`` (no run.jsonl), else meta.json's status (``"complete"``, ``"running"`` for
    an interrupted run; ``"unknown"`` without meta.json)."""
    path = resolve_user_path(run_dir)
    if not (path / "run.jsonl").exists():
        return "missing"
    if not (path / "meta.json").exists():
        return "unknown"
    return str(read_meta(path).get("status") or "unknown")


def resolve_sets_dir(run_dir: Path, meta: dict[str, Any],
                     sets_dir: str | os.PathLike | None = None) -> Path:
    """The sets folder of a run: ``sets_dir`` if given, else meta.json's (see the module
    docstring: one rule, no fallback)."""
    if sets_dir is not None:
        p, origin = resolve_user_path(sets_dir), "given"
    else:
        recorded = meta.get("sets_dir")
        if not isinstance(recorded, str) or not recorded:
            raise InputError(run_dir / "meta.json", None, "sets_dir",
                             "no sets_dir in meta.json and none given (pass --sets DIR)",
                             rule="RUN_META")
        p = Path(recorded)
        if not p.is_absolute():
            p = run_dir / p
        origin = f"recorded in {run_dir / 'meta.json'}"
    if not p.is_dir():
        raise InputError(p, None, None, f"sets folder not found ({origin})", rule="MISSING_FILE")
    return p


@dataclass
class RunDir:
    """One run directory and the sets it is scored against (make it with :meth:`open`)."""

    path: Path
    meta: dict[str, Any]
    sets_dir: Path
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, run_dir: str | os.PathLike,
             sets_dir: str | os.PathLike | None = None) -> RunDir:
        """Read meta.json, check its split and resolve the sets (nothing else is read yet)."""
        path = resolve_user_path(run_dir)
        meta = read_meta(path)
        if meta.get("split") not in SPLITS:
            raise InputError(path / "meta.json", None, "split",
                             f"must be dev or test, got {meta.get('split')!r}", rule="RUN_META")
        return cls(path, meta, resolve_sets_dir(path, meta, sets_dir))

    # ---------------------------------------------------------------- what meta.json says

    @property
    def system(self) -> str:
        return str(self.meta.get("system") or self.path.name)

    @property
    def split(self) -> str:
        return str(self.meta["split"])

    @property
    def status(self) -> str:
        """:func:`run_status` of this run."""
        return run_status(self.path)

    @property
    def modalities(self) -> list[str] | None:
        return self.meta.get("modalities") or None

    @property
    def limit(self) -> int | None:
        return self.meta.get("limit")

    # ---------------------------------------------------------------- inputs, read once

    def _once(self, key: str, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def _select(self) -> tuple[list[AnnotationRecord], list[tuple[str, int]]]:
        def make():
            recs, locs = select_records(self.sets_dir, self.split, self.modalities, self.limit)
            q = self.meta.get("queries")
            if isinstance(q, int) and q != len(recs):
                raise InputError(self.path / "meta.json", None, "queries",
                                 f"the run was asked {q} queries but {self.sets_dir} gives "
                                 f"{len(recs)} records for split={self.split}, modalities="
                                 f"{self.modalities}, limit={self.limit}; the sets changed "
                                 "since the run", rule="RUN_META")
            return recs, locs
        return self._once("select", make)

    @property
    def records(self) -> list[AnnotationRecord]:
        """The evaluated records (file order per modality)."""
        return self._select()[0]

    @property
    def record_locs(self) -> list[tuple[str, int]]:
        return self._select()[1]

    def split_records(self) -> dict[str, AnnotationRecord]:
        """Every record of the run's split and modalities by query id, ``limit`` or not (a
        derived record's ``derived_from`` may lie outside a limited subset)."""
        def make():
            if self.limit is None:
                return {r.query_id: r for r in self.records}
            recs, _ = select_records(self.sets_dir, self.split, self.modalities, None)
            return {r.query_id: r for r in recs}
        return self._once("split_records", make)

    @property
    def items(self) -> list[SourceItem]:
        p = self.sets_dir / "items.jsonl"
        return self._once("items", lambda: [parse_model(SourceItem, obj, p, no)
                                            for no, obj in iter_json_lines(p)])

    def item_rows(self) -> dict[str, dict[str, Any]]:
        """``items.jsonl`` rows as plain dicts by source id (what renderers take)."""
        p = self.sets_dir / "items.jsonl"
        return self._once("item_rows", lambda: {obj["source_id"]: obj
                                                for _, obj in iter_json_lines(p)})

    def _file(self, name: str) -> Path:
        p = self.path / name
        if not p.is_file():
            raise InputError(p, None, None, "file not found", rule="MISSING_FILE")
        return p

    @property
    def atoms(self) -> list[AtomRow]:
        return self._once("atoms", lambda: read_atoms(self._file("atoms.jsonl")))

    @property
    def rows(self) -> list[RunRow]:
        return self._once("rows", lambda: read_run(self._file("run.jsonl")))

    @property
    def row_by_query(self) -> dict[str, RunRow]:
        return self._once("row_by_query", lambda: {r.query_id: r for r in self.rows})

    # ---------------------------------------------------------------- scores

    def scores(self) -> ItemScores:
        """Every evaluated item's scores (computed once)."""
        return self._once("scores", lambda: score_items(
            self.records, self.items, self.atoms, self.rows, record_locs=self.record_locs))

    def metrics(self, *, write: bool = True, seed: int = SEED,
                n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
        """The ``metrics.json`` object; written into the run directory (atomically) unless
        ``write`` is false. Reports the ``score`` and ``bootstrap`` progress steps."""
        with progress.step(f"score ({self.path.name})", total=None, unit="item") as bar:
            scores = self.scores()
            bar.advance(len(scores))
        result = aggregate(scores, seed=seed, n_resamples=n_resamples)
        if write:
            out = self.path / "metrics.json"
            tmp = out.with_name("metrics.json.tmp")
            tmp.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n", encoding="utf-8")
            os.replace(tmp, out)
        return result

    def set_drift(self) -> list[str]:
        """Set files whose sha256 now differs from what the run recorded in meta.json."""
        rec = self.meta.get("set_sha256") or {}
        if not rec:
            return []
        now = set_digests(self.sets_dir)
        return sorted(f for f in set(rec) | set(now) if rec.get(f) != now.get(f))


def metrics_for_run_dir(run_dir: str | os.PathLike, sets_dir: str | os.PathLike | None = None,
                        *, write: bool = True, seed: int = SEED,
                        n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    """Compute the metrics of a run directory and (by default) write ``metrics.json`` into it
    (:meth:`RunDir.metrics`)."""
    return RunDir.open(run_dir, sets_dir).metrics(write=write, seed=seed,
                                                  n_resamples=n_resamples)
