"""A run directory, read one way: :class:`RunDir` (load, resolve its sets, check, score).

``membench run`` and ``membench import-run`` write RUN_DIR (``docs/runs.md``): ``meta.json``,
``atoms.jsonl``, ``run.jsonl``, and ``metrics`` adds ``metrics.json``. Start at
:meth:`RunDir.open`: every reader (metrics, calibrate, slices, compare, the failure browser,
report provenance) opens a run through it, so they agree on

* **which sets**: the ``sets_dir`` a caller passes, else the one meta.json records (relative to
  the run directory); no fallback to ``bench/sets`` (RUN_META), a folder that is gone is
  MISSING_FILE naming where the path came from;
* **which records**: :func:`membench.sets.select.select_records` with meta.json's split,
  modalities, ``limit`` and ``sample_seed``; a count other than ``queries`` is RUN_META;
* **what each item scored**: :meth:`RunDir.scores` (:func:`membench.metrics.score.score_items`,
  computed once and cached);
* **what it refuses** (one located line, exit 2 at the command line): ``TEST_SPLIT`` unless
  ``final=True`` (then appended to ``bench/test_access.jsonl``); ``INCOMPLETE_RUN`` (status not
  ``complete``, or an evaluated query without a line) unless ``partial=True``, which scores the
  answered queries only (a missing line is never an abstention) and marks it PARTIAL;
  ``SET_DRIFT`` (a set file's sha256 differs from meta.json's); ``ATOM_CAP`` and the other atom
  rules (:func:`membench.metrics.resolve.build_atom_table`). A run whose system saw the gold
  (``sees_gold``) is read and marked "not a valid submission" (:attr:`RunDir.submission`).

Reads the run directory and its sets; writes only ``bench/test_access.jsonl`` (a final read)
and the score cache. User paths go through :func:`membench.core.paths.resolve_user_path`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract.schema import AnnotationRecord, SourceItem
from ..core import progress
from ..core.atomic import atomic_write_json
from ..core.errors import InputError
from ..core.jsonl import iter_json_lines, parse_model
from ..core.lock import raise_if_locked, run_dir_lock
from ..core.paths import resolve_user_path
from ..run.files import AtomRow, RunRow, read_atoms, read_meta, read_run
from ..sets.build import set_digests
from ..sets.select import select_records
from .aggregate import aggregate
from .bootstrap import N_RESAMPLES, SEED
from .score import ItemScores, score_items

SPLITS = ("dev", "test")


def run_status(run_dir: str | os.PathLike) -> str:
    """``"missing"`` (no run.jsonl), else meta.json's status (``"complete"``, ``"running"`` for
    an interrupted run; ``"unknown"`` without meta.json)."""
    path = resolve_user_path(run_dir)
    if not (path / "run.jsonl").exists():
        return "missing"
    if not (path / "meta.json").exists():
        return "unknown"
    return str(read_meta(path).get("status") or "unknown")


def resolve_sets_dir(
    run_dir: Path, meta: dict[str, Any], sets_dir: str | os.PathLike | None = None
) -> Path:
    """The sets folder of a run: ``sets_dir`` if given, else meta.json's (see the module
    docstring: one rule, no fallback)."""
    if sets_dir is not None:
        p, origin = resolve_user_path(sets_dir), "given"
    else:
        recorded = meta.get("sets_dir")
        if not isinstance(recorded, str) or not recorded:
            raise InputError(
                run_dir / "meta.json",
                None,
                "sets_dir",
                "no sets_dir in meta.json and none given (pass --sets DIR)",
                rule="RUN_META",
            )
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
    partial: bool = False
    final: bool = False
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def open(
        cls,
        run_dir: str | os.PathLike,
        sets_dir: str | os.PathLike | None = None,
        *,
        partial: bool = False,
        final: bool = False,
    ) -> RunDir:
        """Read meta.json, check its split (a test-split run needs ``final``, and is logged),
        its status (an incomplete run needs ``partial``), resolve the sets and check their
        sha256 against meta.json's. Appends to the test access log; reads nothing else yet."""
        path = resolve_user_path(run_dir)
        meta = read_meta(path)
        if meta.get("split") not in SPLITS:
            raise InputError(
                path / "meta.json",
                None,
                "split",
                f"must be dev or test, got {meta.get('split')!r}",
                rule="RUN_META",
            )
        if meta["split"] == "test":
            if not final:
                raise InputError(
                    path / "meta.json",
                    None,
                    "split",
                    "a run on the frozen test split: reading its figures is a "
                    "final access; pass --final (it is logged)",
                    rule="TEST_SPLIT",
                )
            from ..run.runner import code_revision, log_test_access

            log_test_access(
                str(meta.get("system") or path.name), path, code_revision(), action="read"
            )
        status = meta.get("status")
        if status is not None and status != "complete":
            raise_if_locked(path)  # being written now: name the writer
        if status == "partial" and not partial:
            raise InputError(
                path / "meta.json",
                None,
                "status",
                "an import of part of the split (`membench import-run "
                "--partial`): read it with --partial (marked PARTIAL; the queries "
                "it does not cover are left out, never counted as abstentions)",
                rule="INCOMPLETE_RUN",
            )
        if status is not None and status != "complete" and not partial:
            raise InputError(
                path / "meta.json",
                None,
                "status",
                f"the run is {status!r}, not complete: finish it (the same "
                "command resumes it) or read it with --partial (marked PARTIAL; "
                "unanswered queries left out, never counted as abstentions)",
                rule="INCOMPLETE_RUN",
            )
        rd = cls(path, meta, resolve_sets_dir(path, meta, sets_dir), partial, final)
        drift = rd.set_drift()
        if drift:
            f = drift[0]
            rec = (meta.get("set_sha256") or {}).get(f) or "nothing"
            now = set_digests(rd.sets_dir).get(f) or "no file"
            raise InputError(
                rd.sets_dir / f,
                None,
                None,
                f"sha256 {now[:12]}… but the run recorded {rec[:12]}… in "
                f"{path / 'meta.json'}: it was made on other sets "
                f"({len(drift)} file(s) differ: {', '.join(drift)})",
                rule="SET_DRIFT",
            )
        return rd

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
            recs, locs = select_records(
                self.sets_dir, self.split, self.modalities, self.limit, self.meta.get("sample_seed")
            )
            q = self.meta.get("queries")
            if isinstance(q, int) and q != len(recs):
                raise InputError(
                    self.path / "meta.json",
                    None,
                    "queries",
                    f"the run was asked {q} queries but {self.sets_dir} gives "
                    f"{len(recs)} records for split={self.split}, modalities="
                    f"{self.modalities}, limit={self.limit}; the sets changed "
                    "since the run",
                    rule="RUN_META",
                )
            return recs, locs

        return self._once("select", make)

    def _evaluated(self) -> tuple[list[AnnotationRecord], list[tuple[str, int]]]:
        """The selected records that are evaluated: all of them when every one has a run line;
        else an INCOMPLETE_RUN error, or with ``partial`` the answered ones only."""

        def make():
            recs, locs = self._select()
            ids = {r.query_id for r in recs}
            first: dict[str, RunRow] = {}
            for row in self.rows:  # a line's own error comes before a missing line
                if row.query_id not in ids:
                    raise InputError(
                        row.file,
                        row.line,
                        "query_id",
                        f"{row.query_id!r} is not an annotated item of the evaluated set",
                        rule="RUN_QUERY",
                    )
                if row.query_id in first:
                    raise InputError(
                        row.file,
                        row.line,
                        "query_id",
                        f"{row.query_id!r} has a "
                        f"second run line (first at line {first[row.query_id].line})",
                        rule="DUPLICATE_QUERY_ID",
                    )
                first[row.query_id] = row
            answered = set(first)
            missing = [r.query_id for r in recs if r.query_id not in answered]
            if not missing:
                return recs, locs
            if not self.partial:
                raise InputError(
                    self.path / "run.jsonl",
                    None,
                    None,
                    f"{len(missing)} of {len(recs)} queries have no line (e.g. "
                    f"{missing[0]}): the run is incomplete; finish it or read it "
                    "with --partial (unanswered queries are left out, never "
                    "counted as abstentions)",
                    rule="INCOMPLETE_RUN",
                )
            keep = [i for i, r in enumerate(recs) if r.query_id in answered]
            return [recs[i] for i in keep], [locs[i] for i in keep]

        return self._once("evaluated", make)

    @property
    def records(self) -> list[AnnotationRecord]:
        """The evaluated records (file order per modality; with ``partial``, the answered
        ones)."""
        return self._evaluated()[0]

    @property
    def record_locs(self) -> list[tuple[str, int]]:
        return self._evaluated()[1]

    @property
    def asked(self) -> int:
        """How many queries the run was asked (its selection)."""
        return len(self._select()[0])

    @property
    def is_partial(self) -> bool:
        """Read with ``partial`` and not complete: some asked queries are left out."""
        return self.partial and (
            self.meta.get("status") not in (None, "complete") or len(self.records) < self.asked
        )

    @property
    def submission(self) -> dict[str, Any]:
        """Whether the run's figures are a valid submission, and why not: the system saw the
        gold (a registered test double), or the run is read PARTIAL."""
        why = []
        if self.meta.get("sees_gold"):
            why.append("the system saw the gold (a registered test double)")
        if self.is_partial:
            why.append(
                f"PARTIAL: {len(self.records)} of {self.asked} queries answered; the "
                "others are left out, not counted as abstentions"
            )
        return {
            "valid": not why,
            "reasons": why,
            "sees_gold": bool(self.meta.get("sees_gold")),
            "partial": self.is_partial,
            "answered": len(self.records),
            "asked": self.asked,
        }

    @property
    def label(self) -> str:
        """The system's name as every table shows it: marked NOT A VALID SUBMISSION (saw the
        gold) and PARTIAL where that applies."""
        s = self.system
        if self.meta.get("sees_gold"):
            s += " [NOT A VALID SUBMISSION: saw the gold]"
        if self.is_partial:
            s += f" [PARTIAL {len(self.records)}/{self.asked}]"
        return s

    @property
    def items(self) -> list[SourceItem]:
        from ..run.split import read_items

        return self._once("items", lambda: read_items(self.sets_dir))

    def item_rows(self) -> dict[str, dict[str, Any]]:
        """``items.jsonl`` rows as plain dicts by source id (what renderers take), each checked
        against the schema first (a path that climbs out of the corpus is refused here)."""
        p = self.sets_dir / "items.jsonl"

        def make():
            rows = {}
            for no, obj in iter_json_lines(p):
                parse_model(SourceItem, obj, p, no)
                rows[obj["source_id"]] = obj
            return rows

        return self._once("item_rows", make)

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

    def _corpus(self) -> tuple[Path | None, str]:
        """The corpus the answer layer reads (:func:`membench.core.paths.corpus_root`), or
        ``None`` and why not."""

        def make():
            from ..core.paths import corpus_root

            if os.environ.get("MEMBENCH_ANSWER_LAYER", "1") == "0":
                return None, "MEMBENCH_ANSWER_LAYER=0: the answer and context figures are null"
            try:
                return corpus_root(), ""
            except Exception as e:  # noqa: BLE001
                return None, (
                    f"no corpus to read the content from ({e}): the answer and "
                    "context figures are null"
                )

        return self._once("corpus", make)

    @property
    def corpus_label(self) -> str | None:
        """The corpus path the answer layer reads, or None (what the score cache keys)."""
        root, _ = self._corpus()
        return str(root) if root is not None else None

    def scores(self) -> ItemScores:
        """Every evaluated item's scores (computed once per RunDir, and stored by the content
        of their inputs: :mod:`membench.metrics.scorecache`). The answer layer and the context
        cost read the corpus (:meth:`_corpus`); without one their figures are null, and
        ``metrics.json["answer_context"]`` says why."""
        from . import scorecache
        from .answer_layer import ContentTexts

        def compute() -> ItemScores:
            root, why = self._corpus()
            content = ContentTexts.open(self.sets_dir, root) if root is not None else None
            return score_items(
                self.records,
                self.items,
                self.atoms,
                self.rows,
                record_locs=self.record_locs,
                content=content,
                no_content=why,
            )

        def make() -> ItemScores:
            s, self._cache["scores_key"] = scorecache.scores(self, compute)
            return s

        return self._once("scores", make)

    def metrics(
        self, *, write: bool = True, seed: int = SEED, n_resamples: int = N_RESAMPLES
    ) -> dict[str, Any]:
        """The ``metrics.json`` object; written into the run directory (atomically, holding
        RUN_DIR's lock from reading to writing: :func:`membench.core.lock.run_dir_lock`) unless
        ``write`` is false. Reports the ``score`` and ``bootstrap`` progress steps."""

        def compute() -> dict[str, Any]:
            from . import scorecache

            with progress.step(f"score ({self.path.name})", total=None, unit="item") as bar:
                scores = self.scores()
                bar.advance(len(scores))
            result = dict(
                scorecache.metrics(
                    self._cache.get("scores_key"),
                    seed,
                    n_resamples,
                    lambda: aggregate(scores, seed=seed, n_resamples=n_resamples),
                )
            )
            result["submission"] = {**self.submission, "system": self.system, "label": self.label}
            return result

        if not write:
            return compute()
        with run_dir_lock(self.path):  # one writer: not while a run or import writes here
            result = compute()
            atomic_write_json(self.path / "metrics.json", result, indent=2, allow_nan=False)
        return result

    def set_drift(self) -> list[str]:
        """Set files whose sha256 now differs from what the run recorded in meta.json."""
        rec = self.meta.get("set_sha256") or {}
        if not rec:
            return []
        now = set_digests(self.sets_dir)
        return sorted(f for f in set(rec) | set(now) if rec.get(f) != now.get(f))


def metrics_for_run_dir(
    run_dir: str | os.PathLike,
    sets_dir: str | os.PathLike | None = None,
    *,
    write: bool = True,
    seed: int = SEED,
    n_resamples: int = N_RESAMPLES,
    partial: bool = False,
    final: bool = False,
) -> dict[str, Any]:
    """Compute the metrics of a run directory and (by default) write ``metrics.json`` into it
    (:meth:`RunDir.metrics`; ``partial`` and ``final`` as :meth:`RunDir.open`)."""
    return RunDir.open(run_dir, sets_dir, partial=partial, final=final).metrics(
        write=write, seed=seed, n_resamples=n_resamples
    )
