"""A small, valid, self-contained world for fault and hostile-input tests: mini sets (all six
modalities, content items), a corpus folder whose files match a manifest with real digests,
and a lock, so that ``membench run`` passes its pre-flight checks in well under a second.

Also: test systems for ``--system tests_module:Class`` in subprocesses (``PYTHONPATH`` must
hold ``tests/``), and the commands to run membench in a scratch file system (a tmpfs in a
private mount namespace: read-only or nearly full), when the machine allows it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import minisets as ms

from membench.core.jsonl import dumps, sha256_file
from membench.sets.build import SET_FILES, write_lock

TESTS = Path(__file__).parent
REPO = TESTS.parent


def runnable_sets() -> dict[str, list[dict]]:
    """The mini sets with each record's split set to its holder's split as the build (and the
    runner) computes it (:func:`membench.sets.build.split_holders`)."""
    from membench.sets.build import split_holders

    items = ms.items()
    by_source: dict[str, set[str]] = {}
    for it in items:
        by_source.setdefault(it["source_id"].split(":", 1)[0], set()).add(it["holder"])
    split = split_holders({k: sorted(v) for k, v in by_source.items()})
    sets = {f"{m}.jsonl": ms.records(m) for m in ms.REGIONS}
    for rows in sets.values():
        for r in rows:
            r["split"] = split[r["scope"]["holder"]]
    return {**sets, "items.jsonl": items}


def write_world(root: Path, sets: dict[str, list[dict]] | None = None) -> dict[str, Path]:
    """Write ``root/{sets,corpus,manifest.jsonl,sets.lock.json}`` and return their paths."""
    p = ms.write(root / "sets", sets or runnable_sets())
    corpus = root / "corpus"
    (corpus / "example").mkdir(parents=True, exist_ok=True)
    lines = []
    for m in ms.REGIONS:
        f = corpus / "example" / f"{m}.json"
        f.write_text(f"{m}\n")
        line = ms.manifest_lines()[list(ms.REGIONS).index(m)]
        line["files"][0].update(sha256=sha256_file(f), bytes=f.stat().st_size)
        lines.append(line)
    p["manifest"].write_text("".join(json.dumps(x) + "\n" for x in lines))
    write_lock(p["lock"], {f: sha256_file(p["sets"] / f) for f in SET_FILES})
    return {**p, "corpus": corpus}


def cli_args(w: dict[str, Path]) -> list[str]:
    """The flags that point ``membench run`` at the world."""
    return [
        "--sets",
        str(w["sets"]),
        "--corpus",
        str(w["corpus"]),
        "--manifest",
        str(w["manifest"]),
        "--lock",
        str(w["lock"]),
    ]


def relock(w: dict[str, Path]) -> None:
    write_lock(w["lock"], {f: sha256_file(w["sets"] / f) for f in SET_FILES})


def rewrite(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(dumps(r) + "\n" for r in rows))


def membench_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "membench", *args]


def group_gone(pgid: int, within: float) -> bool:
    """Whether process group ``pgid`` has no process left, waiting up to ``within`` seconds (a
    stopped command's workers: the limit only keeps a broken stop from hanging the suite)."""
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(TESTS), env.get("PYTHONPATH", "")])
    env["MEMBENCH_PROGRESS"] = "quiet"  # these tests read stderr's one error line
    return env


# --------------------------------------------------------------------------- test systems


class Gated:
    """A random-like system whose ingest waits until the file named by ``$MEMBENCH_TEST_GATE``
    exists (so a test can hold a run mid-way, deterministically, without sleeping blindly)."""

    name = "gated"

    def __init__(self, **cfg):
        self.cfg = cfg

    def config(self):
        return dict(self.cfg)

    def ingest(self, items, corpus_root):
        gate = Path(os.environ["MEMBENCH_TEST_GATE"])
        (gate.parent / "ingesting").write_text(str(os.getpid()))
        deadline = time.time() + 120
        while not gate.exists() and time.time() < deadline:
            time.sleep(0.05)
        self.atoms = _structural(items)
        return self.atoms

    def query(self, question, scope, as_of):
        from membench.contract.protocol import Result

        ids = [
            a.atom_id for a in self.atoms if a.holder == scope.holder and a.observed_at <= as_of
        ][:50]
        return Result(hits=[(a, 1.0 - i / 100) for i, a in enumerate(ids)], cartridge=ids[:1])


class Wide:
    """Many atoms per item and 1,000 hits per query: run lines of ~30 KB, to fill a small
    disk quickly."""

    name = "wide"

    def config(self):
        return {}

    def ingest(self, items, corpus_root):
        from membench.contract.protocol import Atom

        self.atoms = []
        for it in items:
            if it.modality != "conversation":
                continue
            for t in range(1, 6):
                for k in range(60):
                    aid = hashlib.sha256(f"{it.source_id}{t}{k}".encode()).hexdigest()[:24]
                    self.atoms.append(
                        Atom(
                            aid,
                            it.source_id,
                            it.modality,
                            it.holder,
                            it.observed_at,
                            {"turn_start": t, "turn_end": t},
                        )
                    )
        return self.atoms

    def query(self, question, scope, as_of):
        from membench.contract.protocol import Result

        ids = [a.atom_id for a in self.atoms][:1000]
        return Result(hits=[(a, 1.0 - i / 1000) for i, a in enumerate(ids)], cartridge=[])


class Stubborn(Gated):
    """A system whose ingest swallows ``KeyboardInterrupt`` (as some libraries' retry loops
    do) and waits for the gate: a stop must still end the run."""

    name = "stubborn"

    def ingest(self, items, corpus_root):
        gate = Path(os.environ["MEMBENCH_TEST_GATE"])
        (gate.parent / "ingesting").write_text(str(os.getpid()))
        deadline = time.time() + 120
        while not gate.exists() and time.time() < deadline:
            try:
                time.sleep(0.05)
            except KeyboardInterrupt:
                (gate.parent / "swallowed").write_text("yes")
        self.atoms = _structural(items)
        return self.atoms


class Repeats(Gated):
    """Answers each query with its first atom twice (at ranks 1 and 3): refused."""

    name = "repeats"

    def ingest(self, items, corpus_root):
        self.atoms = _structural(items)
        return self.atoms

    def query(self, question, scope, as_of):
        from membench.contract.protocol import Result

        ids = [a.atom_id for a in self.atoms if a.holder == scope.holder][:2]
        hits = [(ids[0], 0.9), (ids[-1], 0.8), (ids[0], 0.7)] if ids else []
        return Result(hits=hits, cartridge=[])


class NewlineIds(Gated):
    """Reports atoms whose ids hold a newline: refused at ingest."""

    name = "newline-ids"

    def ingest(self, items, corpus_root):
        from dataclasses import replace

        self.atoms = [replace(a, atom_id=a.atom_id + "\nq 0 x 1") for a in _structural(items)]
        return self.atoms


def _structural(items):
    from membench.systems.structural import structural_atoms

    return structural_atoms(items)


# --------------------------------------------------------------------------- scratch file systems


def scratch_fs_available() -> bool:
    """Can this machine give a test a private tmpfs (``unshare -rm``: a user and mount
    namespace, no privileges needed where user namespaces are enabled)?"""
    if shutil.which("unshare") is None:
        return False
    try:
        r = subprocess.run(
            [
                "unshare",
                "-rm",
                "sh",
                "-c",
                "d=$(mktemp -d) && mount -t tmpfs "
                '-o size=64k none "$d" && mount -o remount,ro "$d"',
            ],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0


def in_scratch_fs(
    script: str, mount: Path, env: dict[str, str], timeout: int = 600
) -> subprocess.CompletedProcess:
    """Run the shell ``script`` in a private mount namespace where ``mount`` is a fresh
    tmpfs; the script may remount it (``mount -o remount,ro|size=... "$M"``). ``$M`` is the
    mount point, ``$PY`` this Python."""
    mount.mkdir(parents=True, exist_ok=True)
    env = {**env, "M": str(mount), "PY": sys.executable}
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
