"""``metrics_for_run_dir``: score a run directory written by ``membench run``.

Reads ``RUN_DIR/meta.json`` (``split``, ``sets_dir``, and when present the run's
``modalities`` and ``limit`` selection and its ``queries`` count), ``RUN_DIR/atoms.jsonl``,
``RUN_DIR/run.jsonl``, the split's records from ``SETS_DIR/<modality>.jsonl`` and the source
items from ``SETS_DIR/items.jsonl``; writes ``RUN_DIR/metrics.json``.

The evaluated items are the records the run was asked about: the split, restricted to the
run's modalities and, for a ``limit``-ed run, to the same per-modality subset
``membench.run.runner.load_split`` picks (``limit`` records per modality, by ``stable_hash("limit",
query_id)``). If meta.json states how many queries the run had, the selection must match it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.hashing import limit_subset
from ..core.jsonl import iter_json_lines, parse_model
from ..modalities import MODALITIES
from ..run.files import read_atoms, read_run
from ..sets.schema import AnnotationRecord, SourceItem
from .aggregate import aggregate
from .bootstrap import N_RESAMPLES, SEED
from .score import score_items


def load_records(sets_dir: Path, split: str, modalities: list[str] | None = None,
                 limit: int | None = None) -> tuple[list[AnnotationRecord], list[tuple[str, int]]]:
    """Records of ``split`` (with their file and line), in file order per modality."""
    recs: list[AnnotationRecord] = []
    locs: list[tuple[str, int]] = []
    for m in modalities or MODALITIES:
        path = sets_dir / f"{m}.jsonl"
        if not path.exists():
            continue
        chosen = []
        for no, obj in iter_json_lines(path):
            r = parse_model(AnnotationRecord, obj, path, no)
            if r.split == split:
                chosen.append((r, (str(path), no)))
        if limit is not None:
            chosen = sorted(limit_subset(chosen, limit, lambda x: x[0].query_id),
                            key=lambda x: x[1][1])
        for r, loc in chosen:
            recs.append(r)
            locs.append(loc)
    return recs, locs


def _resolve_sets_dir(run_dir: Path, sets_dir: str | os.PathLike | None, meta: dict) -> Path:
    if sets_dir is not None:
        p = Path(sets_dir)
    else:
        if not meta.get("sets_dir"):
            raise InputError(run_dir / "meta.json", None, "sets_dir",
                             "no sets_dir in meta.json and none given", rule="RUN_META")
        p = Path(meta["sets_dir"])
        if not p.is_absolute():
            p = run_dir / p
    if not p.is_dir():
        raise InputError(p, None, None, "sets folder not found", rule="MISSING_FILE")
    return p


def metrics_for_run_dir(run_dir: str | os.PathLike, sets_dir: str | os.PathLike | None = None,
                        *, write: bool = True, seed: int = SEED,
                        n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    """Compute the metrics of a run directory and (by default) write ``metrics.json`` into it.
    ``sets_dir`` overrides meta.json's (a relative ``sets_dir`` in meta.json is taken from the
    run directory)."""
    run_dir = Path(run_dir)
    meta_path = run_dir / "meta.json"
    if not meta_path.exists():
        raise InputError(meta_path, None, None, "file not found", rule="MISSING_FILE")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(meta_path, e.lineno, None, f"not valid JSON: {e.msg}",
                         rule="JSON") from None
    split = meta.get("split")
    if split not in ("dev", "test"):
        raise InputError(meta_path, None, "split", f"must be dev or test, got {split!r}",
                         rule="RUN_META")
    sdir = _resolve_sets_dir(run_dir, sets_dir, meta)
    mods = meta.get("modalities") or None
    limit = meta.get("limit")
    recs, locs = load_records(sdir, split, mods, limit)
    if isinstance(meta.get("queries"), int) and meta["queries"] != len(recs):
        raise InputError(meta_path, None, "queries",
                         f"the run was asked {meta['queries']} queries but {sdir} gives "
                         f"{len(recs)} records for split={split}, modalities={mods}, "
                         f"limit={limit}; the sets changed since the run", rule="RUN_META")
    items_path = sdir / "items.jsonl"
    items = [parse_model(SourceItem, obj, items_path, no)
             for no, obj in iter_json_lines(items_path)]
    atoms = read_atoms(run_dir / "atoms.jsonl")
    rows = read_run(run_dir / "run.jsonl")
    scores = score_items(recs, items, atoms, rows, record_locs=locs)
    result = aggregate(scores, seed=seed, n_resamples=n_resamples)
    if write:
        out = run_dir / "metrics.json"
        tmp = out.with_name("metrics.json.tmp")
        tmp.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        os.replace(tmp, out)
    return result
