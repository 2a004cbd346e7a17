"""Provenance of a report: which manifest, which set files, which system, split, code and time.

Every notebook shows :func:`provenance_frame` near its top, and :mod:`membench.report.render`
writes the same facts into the notebook metadata (``metadata.membench``) and into the HTML head
(``<meta name="membench:...">``), recomputing the sha256s from the files on disk at render time.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.jsonl import sha256_file
from ..core.paths import DEFAULT_SETS_DIR, LOCK_PATH, MANIFEST_PATH, resolve_user_path
from ..metrics.rundir import RunDir
from ..run.runner import TEST_ACCESS_LOG, code_revision
from ..sets.build import SET_FILES


def provenance(
    run_dir: str | Path | RunDir | None = None, sets_dir: str | Path | None = None
) -> dict[str, Any]:
    """The facts a report must carry. Set and manifest digests are computed now from the files;
    the run's own record of them (meta.json) is kept beside, so a mismatch is visible. With a
    run (a path, or a :class:`~membench.metrics.rundir.RunDir` already opened with its
    ``partial`` / ``final``), its sets are the run's (RunDir's rule), and whether its figures
    are a valid submission is stated; without, ``sets_dir`` or ``bench/sets``."""
    meta: dict[str, Any] = {}
    rd = None
    if run_dir is not None:
        rd = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir, sets_dir)
        meta, sets, run_dir = rd.meta, rd.sets_dir, rd.path
    else:
        sets = resolve_user_path(sets_dir) if sets_dir else DEFAULT_SETS_DIR
    lock = json.loads(LOCK_PATH.read_text())["files"] if LOCK_PATH.exists() else {}
    sets_now = {f: sha256_file(sets / f) for f in SET_FILES if (sets / f).exists()}
    out = {
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "code_revision": code_revision(),
        "manifest": str(MANIFEST_PATH),
        "manifest_sha256": sha256_file(MANIFEST_PATH),
        "sets_dir": str(sets.resolve()),
        "set_sha256": sets_now,
        "sets_match_lock": bool(lock) and sets_now == {f: lock.get(f) for f in sets_now},
        "test_accesses": _test_accesses(),
    }
    if meta:
        out.update(
            {
                "run_dir": str(Path(run_dir).resolve()),
                "system": meta.get("system"),
                "config": meta.get("config"),
                "split": meta.get("split"),
                "final": meta.get("final"),
                "run_code_revision": meta.get("code_revision"),
                "run_started": meta.get("started"),
                "run_finished": meta.get("finished"),
                "run_status": meta.get("status"),
                "limit": meta.get("limit"),
                "run_set_sha256_match": meta.get("set_sha256") == sets_now,
                "run_manifest_sha256_match": meta.get("manifest_sha256") == out["manifest_sha256"],
                "extent_caps": meta.get("extent_caps"),
                "sees_gold": bool(meta.get("sees_gold")),
                "sealed": bool(meta.get("sealed")),
                "identity": meta.get("identity"),
                "submission": (
                    "valid"
                    if rd.submission["valid"]
                    else "NOT A VALID SUBMISSION: " + "; ".join(rd.submission["reasons"])
                ),
                "presentation_order": meta.get("order"),
                "content_not_covered": content_not_covered(meta),
            }
        )
    return out


def content_not_covered(meta: dict[str, Any]) -> str:
    """What the run's content layer refused to read (meta.json ``content_not_covered``), in
    one line: "none", "N items (RULE: n, ...): first line", or "not recorded" for a run made
    before the field existed."""
    nc = meta.get("content_not_covered")
    if not isinstance(nc, dict):
        return "not recorded"
    n = nc.get("items") or 0
    if not n:
        return "none"
    rules = ", ".join(f"{k}: {v}" for k, v in sorted((nc.get("by_rule") or {}).items()))
    first = nc.get("first") or {}
    line = next(iter(first.values()), "") if isinstance(first, dict) else ""
    return f"{n} items ({rules})" + (f"; the first: {line}" if line else "")


def _test_accesses() -> list[dict]:
    if not TEST_ACCESS_LOG.exists():
        return []
    return [json.loads(l) for l in TEST_ACCESS_LOG.read_text().splitlines() if l.strip()]


def provenance_frame(prov: dict[str, Any]):
    """A two-column table (field, value) for display at the top of a notebook."""
    import pandas as pd

    rows = []
    for k, v in prov.items():
        if k == "set_sha256":
            rows += [(f"sha256 {f}", d) for f, d in v.items()]
        elif isinstance(v, (dict, list)):
            rows.append((k, json.dumps(v, sort_keys=True)))
        else:
            rows.append((k, v))
    return pd.DataFrame(rows, columns=["field", "value"]).set_index("field")
