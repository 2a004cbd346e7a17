"""``membench verify``: does a leaderboard entry's stored run come from the system it names?

For each entry of a result store (:mod:`membench.analysis.leaderboard`) the system is made
again from its run's meta.json ``identity`` (:mod:`membench.systems.identity`) and run **in a
fresh process** (``python -m membench run``) on a hash-chosen sample of the entry's queries
(``--limit N --sample-seed S``: N per modality, default 50; the seed random unless given, and
recorded; an entry of a ``--limit`` run is re-run on that run's own selection, whole). Per
sampled query its hits (atom ids in order, scores within :data:`TOLERANCE`) and cartridge
(exactly) are compared with the stored ``run.jsonl``, which must still have the sha256 its run
recorded (``run_jsonl_sha256``) and the one it had when the entry was added. Each entry comes
out:

* ``verified``: every sampled line agrees, and the file is the one the run wrote;
* ``differs``: the first differing query (and what differs), or the file was edited;
* ``not re-runnable``: an HTTP service or an imported run, a system made in Python without a
  name, a package missing or of another version, code whose source digest differs, a config
  that differs now, a stored run that is gone, or a fresh run that failed (its last line).

Reads the store and the entries' run directories; writes ``STORE/verify/<entry id>.json`` (the
leaderboard shows it); the fresh runs go to a temporary folder. Start at :func:`verify_store`.
docs/runs.md ("What a run proves") says what a verification can and cannot catch.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..core.atomic import atomic_write_json
from ..core.errors import InputError, MembenchError
from ..core.jsonl import dumps, read_json_file, sha256_file
from ..core.paths import resolve_user_path

VERIFY_DIR = "verify"
TOLERANCE = 1e-6
DEFAULT_SAMPLE = 50


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_verifications(store_dir, entries: list[dict]) -> dict[str, dict]:
    """The stored ``membench verify`` result of each entry that has one."""
    d = resolve_user_path(store_dir) / VERIFY_DIR
    out = {}
    for e in entries:
        p = d / f"{e['id']}.json"
        if p.is_file():
            v = read_json_file(p, dict, "a membench verify result (a JSON object)")
            if v.get("id") != e["id"] or v.get("status") not in (
                "verified",
                "differs",
                "not re-runnable",
            ):
                raise InputError(p, None, "id", "not a verify result of this entry", rule="STORE")
            out[e["id"]] = v
    return out


def verify_text(v: dict[str, Any] | None) -> str:
    """``verified``, ``differs (first: QUERY ...)``, ``not re-runnable (why)`` or ``not
    verified`` (no ``membench verify`` result for the entry): what a leaderboard row and
    :func:`format_verification` say of an entry's last verification."""
    if not v:
        return "not verified"
    st = v.get("status")
    if st == "verified":
        return f"verified ({v.get('compared', '?')} queries)"
    if st == "differs":
        return f"differs ({v.get('detail', '')})"
    return f"not re-runnable ({v.get('detail', '')})"


def verify_store(
    store_dir,
    *,
    per_modality: int = DEFAULT_SAMPLE,
    seed: int | None = None,
    entries: list[str] | None = None,
    corpus: Path | None = None,
    manifest: Path | None = None,
    sets_dir: Path | None = None,
) -> list[dict]:
    """Verify the store's entries (``entries``: only these ids), one after the other; write
    each result to ``STORE/verify/<id>.json`` and return them."""
    # the store module, not the package: the package's ranking imports this module
    from .leaderboard.store import read_store

    d = resolve_user_path(store_dir)
    store, all_entries = read_store(d)
    if store is None or not all_entries:
        raise MembenchError(f"{d}: an empty result store; nothing to verify")
    if entries:
        unknown = sorted(set(entries) - {e["id"] for e in all_entries})
        if unknown:
            raise MembenchError(f"--entry {unknown[0]}: no such entry in {d}")
    seed = secrets.randbelow(1 << 31) if seed is None else int(seed)
    out = []
    for e in all_entries:
        if entries and e["id"] not in entries:
            continue
        r = verify_entry(
            e,
            per_modality=per_modality,
            seed=seed,
            corpus=corpus,
            manifest=manifest,
            sets_dir=sets_dir,
        )
        (d / VERIFY_DIR).mkdir(exist_ok=True)
        atomic_write_json(d / VERIFY_DIR / f"{e['id']}.json", r, indent=1, sort_keys=True)
        out.append(r)
    return out


def format_verification(results: list[dict]) -> str:
    lines = []
    for r in results:
        lines.append(
            f"{r['id']}  {r['system']}: {verify_text(r)}"
            + (
                f"  [seed {r['seed']}, {r['per_modality']} per modality]"
                if r.get("status") != "not re-runnable"
                else ""
            )
        )
    return "\n".join(lines)


def _fresh_run(
    ident: dict,
    meta: dict,
    run_dir: Path,
    out: Path,
    limit: int,
    sample_seed: int | None,
    corpus: Path | None,
    manifest: Path | None,
    sets_dir: Path | None,
) -> subprocess.CompletedProcess:
    sets = str(sets_dir) if sets_dir else str(meta.get("sets_dir") or "")
    if not sets:
        raise InputError(
            run_dir / "meta.json",
            None,
            "sets_dir",
            "no sets folder recorded: pass --sets",
            rule="RUN_META",
        )
    cmd = [
        sys.executable,
        "-m",
        "membench",
        "-q",
        "run",
        "--system",
        ident["spec"],
        "--split",
        meta["split"],
        "--sets",
        sets,
        "--no-lock",
        "--out",
        str(out),
        "--limit",
        str(limit),
    ]
    for k, v in (ident.get("args") or {}).items():
        cmd += ["--config", f"{k}={dumps(v)}"]
    for m in meta.get("modalities") or []:
        cmd += ["--modality", m]
    if sample_seed is not None:
        cmd += ["--sample-seed", str(sample_seed)]
    if meta["split"] == "test":
        cmd.append("--final")
    if corpus:
        cmd += ["--corpus", str(corpus)]
    if manifest:
        cmd += ["--manifest", str(manifest)]
    here = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        "MEMBENCH_PROGRESS": "quiet",
        "PYTHONPATH": os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def _first_difference(stored: dict, fresh: list) -> tuple[str | None, int]:
    """The first fresh line (in its order) that differs from the stored one, described, and how
    many lines were compared."""
    n = 0
    for row in fresh:
        old = stored.get(row.query_id)
        if old is None:
            return f"{row.query_id}: no line in the stored run", n
        n += 1
        if old.hit_ids != row.hit_ids:
            k = next(
                (i for i, (a, b) in enumerate(zip(old.hit_ids, row.hit_ids)) if a != b),
                min(len(old.hit_ids), len(row.hit_ids)),
            )
            a = old.hit_ids[k] if k < len(old.hit_ids) else "nothing"
            b = row.hit_ids[k] if k < len(row.hit_ids) else "nothing"
            return (
                f"{row.query_id}: hit #{k + 1} is {a} in the stored run, {b} when re-run "
                f"({len(old.hit_ids)} vs {len(row.hit_ids)} hits)"
            ), n
        if len(row.scores) and not np.allclose(old.scores, row.scores, rtol=0, atol=TOLERANCE):
            k = int(np.argmax(np.abs(old.scores - row.scores) > TOLERANCE))
            return (
                f"{row.query_id}: the score of hit #{k + 1} ({row.hit_ids[k]}) is "
                f"{old.scores[k]!r} in the stored run, {row.scores[k]!r} when re-run"
            ), n
        if old.cartridge != row.cartridge:
            return (
                f"{row.query_id}: the cartridge is {old.cartridge[:5]} in the stored run, "
                f"{row.cartridge[:5]} when re-run"
            ), n
    return None, n


def verify_entry(
    e: dict,
    *,
    per_modality: int = DEFAULT_SAMPLE,
    seed: int = 0,
    corpus: Path | None = None,
    manifest: Path | None = None,
    sets_dir: Path | None = None,
) -> dict[str, Any]:
    """One entry's verification (module docstring)."""
    from ..run.files import check_run_dir_files, read_meta, read_run
    from ..run.runner import code_revision
    from ..systems.identity import MEMBENCH_KINDS, rerunnable

    ident = e.get("identity") or {}
    base = {
        "id": e["id"],
        "system": e["system"],
        "seed": seed,
        "per_modality": per_modality,
        "checked": _now(),
        "code_revision": code_revision(),
    }

    def result(status: str, detail: str = "", **kw) -> dict:
        return {**base, "status": status, "detail": detail, **kw}

    run_dir = Path(str(e.get("run_dir") or ""))
    if e.get("run_dir"):  # a symlinked run file is refused, not re-run or read
        check_run_dir_files(run_dir)
    why = rerunnable(ident)
    if why:
        return result("not re-runnable", why)
    try:
        meta = read_meta(run_dir)
    except InputError as x:
        return result("not re-runnable", f"the stored run is gone ({x})")
    run_path = run_dir / "run.jsonl"
    if not run_path.is_file():
        return result("not re-runnable", f"the stored run has no {run_path.name}")
    now = sha256_file(run_path)
    edited = []
    if meta.get("run_jsonl_sha256") and now != meta["run_jsonl_sha256"]:
        edited.append(
            f"run.jsonl's sha256 is {now[:12]}…, its run recorded "
            f"{meta['run_jsonl_sha256'][:12]}… when it finished: edited after the run"
        )
    if e.get("run_jsonl_sha256") and now != e["run_jsonl_sha256"]:
        edited.append("run.jsonl changed since the entry was added to the store")
    stored_limit = meta.get("limit")
    if stored_limit is not None:  # a --limit run: its own selection, whole
        limit, sample_seed, whole = stored_limit, meta.get("sample_seed"), True
    else:
        limit, sample_seed, whole = per_modality, seed, False
    tmp = Path(tempfile.mkdtemp(prefix="membench-verify-"))
    try:
        proc = _fresh_run(
            ident, meta, run_dir, tmp / "run", limit, sample_seed, corpus, manifest, sets_dir
        )
        if proc.returncode != 0:
            last = next((ln for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "")
            return result(
                "not re-runnable", f"the fresh run failed (exit {proc.returncode}): {last[:300]}"
            )
        fresh_meta = json.loads((tmp / "run" / "meta.json").read_text())
        fi = fresh_meta.get("identity") or {}
        if fi.get("class") != ident.get("class"):
            return result(
                "not re-runnable",
                f"{ident['spec']} now makes {fi.get('class')}, the run's was {ident.get('class')}",
            )
        if ident["kind"] not in MEMBENCH_KINDS and fi.get("source_sha256") != ident.get(
            "source_sha256"
        ):
            return result(
                "not re-runnable",
                "the installed code differs from the run's "
                f"(source sha256 {str(fi.get('source_sha256'))[:12]}…, the run's "
                f"{str(ident.get('source_sha256'))[:12]}…)",
            )
        if fresh_meta.get("config") != meta.get("config"):
            keys = sorted(
                k
                for k in set(meta.get("config") or {}) | set(fresh_meta["config"] or {})
                if (meta.get("config") or {}).get(k) != (fresh_meta["config"] or {}).get(k)
            )
            return result("not re-runnable", f"the system's config differs now ({', '.join(keys)})")
        fresh = read_run(tmp / "run" / "run.jsonl")
        wanted = {r.query_id for r in fresh}
        stored = {r.query_id: r for r in read_run(run_path) if r.query_id in wanted}
        diff, n = _first_difference(stored, fresh)
        sample = {"queries": len(fresh), "whole": whole, "limit": limit, "sample_seed": sample_seed}
        if diff:
            return result("differs", diff, compared=n, sample=sample, edited=edited)
        if edited:
            return result(
                "differs",
                f"{edited[0]} (the {n} sampled lines agree)",
                compared=n,
                sample=sample,
                edited=edited,
            )
        return result("verified", f"{n} sampled queries agree", compared=n, sample=sample)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


__all__ = [
    "DEFAULT_SAMPLE",
    "TOLERANCE",
    "format_verification",
    "read_verifications",
    "verify_entry",
    "verify_store",
    "verify_text",
]
