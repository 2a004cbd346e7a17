"""Faults of the machine, not of the input: a read-only output folder, a full disk, Ctrl-C, a
run killed while it holds its lock. Each ends in one line and a documented exit status, and
what was written stays intact and resumable.

Read-only folders and full disks are real: a tmpfs in a private mount namespace (``unshare
-rm``), remounted read-only or made small. Where the machine does not allow user namespaces,
those tests are skipped (and say so); the in-process checks of the same paths always run.
"""

from __future__ import annotations

import errno
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_world import (
    cli_args,
    in_scratch_fs,
    membench_cmd,
    scratch_fs_available,
    subprocess_env,
    write_world,
)

from membench.cli import main
from membench.core.errors import EXIT_DISK_FULL, EXIT_FILESYSTEM, EXIT_INTERRUPTED
from membench.core.lock import LOCK_NAME, RunDirLocked, run_dir_lock

FIX_RUN = Path(__file__).parent / "fixtures" / "metrics" / "run_small"
SCRATCH = scratch_fs_available()
needs_scratch = pytest.mark.skipif(
    not SCRATCH, reason="no private tmpfs here (unshare -rm refused: user namespaces disabled)"
)


@pytest.fixture(autouse=True)
def _quiet_progress(monkeypatch):
    """These tests read stderr's one error line: no progress lines beside it."""
    monkeypatch.setenv("MEMBENCH_PROGRESS", "quiet")


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path / "w")


def _lines(p: Path) -> list[str]:
    return p.read_text().splitlines()


def _query_ids(run_dir: Path) -> list[str]:
    return [json.loads(l)["query_id"] for l in _lines(run_dir / "run.jsonl")]


# --------------------------------------------------------------------------- read-only folders


def _import_inputs(world, tmp_path):
    """A TREC file and an atoms file that import cleanly into the world's dev split."""
    from membench.run.runner import run_system
    from membench.systems import make_system

    native = tmp_path / "native"
    run_system(
        make_system("random"), world["sets"], "dev", native, None, manifest=world["manifest"]
    )
    lines = []
    for l in _lines(native / "run.jsonl"):
        r = json.loads(l)
        lines += [f"{r['query_id']} Q0 {a} {i} {s} x" for i, (a, s) in enumerate(r["hits"], 1)]
    (tmp_path / "run.trec").write_text("\n".join(lines) + "\n")
    return tmp_path / "run.trec", native / "atoms.jsonl"


@pytest.mark.slow
@needs_scratch
def test_read_only_output_folder_is_one_line_and_status_3(world, tmp_path):
    cal_run = tmp_path / "cal"
    shutil.copytree(FIX_RUN, cal_run)
    (cal_run / "meta.json").write_text(
        json.dumps(
            {**json.loads((cal_run / "meta.json").read_text()), "sets_dir": str(cal_run / "sets")}
        )
    )
    trec, atoms = _import_inputs(world, tmp_path)
    world_args = " ".join(cli_args(world))
    script = f"""
mount -t tmpfs -o size=4m none "$M" || exit 99
cp -r {FIX_RUN} "$M/run" && sed -i 's#"sets"#"{FIX_RUN}/sets"#' "$M/run/meta.json"
mount -o remount,ro "$M" || exit 98
$PY -m membench run --system random {world_args} --out "$M/run2"; echo "run=$?" >&2
$PY -m membench run --system random {world_args} --out "$M/run"; echo "run_existing=$?" >&2
$PY -m membench metrics "$M/run"; echo "metrics=$?" >&2
$PY -m membench import-run --trec {trec} --atoms {atoms} --name x {world_args} \
    --out "$M/imp" --cartridge-top 1; echo "import=$?" >&2
$PY -m membench calibrate {cal_run} --out "$M/cal.json"; echo "calibrate=$?" >&2
"""
    r = in_scratch_fs(script, tmp_path / "mnt", subprocess_env())
    assert "run=" in r.stderr, r.stderr
    codes = dict(l.split("=") for l in r.stderr.splitlines() if "=" in l and " " not in l)
    assert "Traceback" not in r.stderr, r.stderr
    err = [l for l in r.stderr.splitlines() if l.startswith("membench:")]
    assert codes == {
        k: str(EXIT_FILESYSTEM) for k in ("run", "run_existing", "metrics", "import", "calibrate")
    }, r.stderr
    assert len(err) == 5
    assert any("Read-only file system" in l and "run2" in l for l in err), err
    assert any("Read-only file system" in l and f"run/{LOCK_NAME}" in l for l in err), err
    assert any("Read-only file system" in l and "imp" in l for l in err), err
    assert any("Read-only file system" in l and "cal.json" in l for l in err), err


def test_permission_error_maps_to_status_3(monkeypatch, tmp_path, capsys):
    """The same path without a scratch file system: the handler turns PermissionError into
    one line naming the file."""

    def refuse(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "x"))

    monkeypatch.setattr("membench.cli.metrics._metrics_cmd", refuse)
    d = tmp_path / "run"
    shutil.copytree(FIX_RUN, d)
    assert main(["metrics", str(d)]) == EXIT_FILESYSTEM
    err = capsys.readouterr().err
    assert err.strip() == f"membench: {tmp_path / 'x'}: Permission denied"


# --------------------------------------------------------------------------- full disk


@needs_scratch
def test_disk_full_mid_run_keeps_lines_and_resumes(world, tmp_path):
    save = tmp_path / "save"
    save.mkdir()
    args = " ".join(["--system", "hostile_world:Wide", *cli_args(world)])
    script = f"""
mount -t tmpfs -o size=160k none "$M" || exit 99
$PY -m membench run {args} --out "$M/run"; echo "first=$?" >&2
cp -r "$M/run" {save}/after_full
mount -o remount,size=16m "$M" || exit 98
$PY -m membench run {args} --out "$M/run"; echo "second=$?" >&2
cp -r "$M/run" {save}/after_resume
"""
    r = in_scratch_fs(script, tmp_path / "mnt", subprocess_env())
    assert "Traceback" not in r.stderr, r.stderr
    codes = dict(l.split("=") for l in r.stderr.splitlines() if "=" in l and " " not in l)
    assert codes.get("first") == str(EXIT_DISK_FULL), r.stderr
    line = next(l for l in r.stderr.splitlines() if l.startswith("membench:"))
    assert "disk full" in line and "No space left on device" in line
    full = save / "after_full"
    assert json.loads((full / "meta.json").read_text())["status"] == "running"
    written = (full / "run.jsonl").read_bytes()
    whole = written[: written.rfind(b"\n") + 1].decode().splitlines()
    assert whole and all(json.loads(l)["query_id"] for l in whole)  # every whole line parses
    assert codes.get("second") == "0", r.stderr
    done = save / "after_resume"
    ids = _query_ids(done)
    assert len(ids) == len(set(ids)) == json.loads((done / "meta.json").read_text())["queries"]
    assert _lines(done / "run.jsonl")[: len(whole)] == whole  # nothing written was lost


class DiskFullAfter:
    """A system whose k-th query fails with ENOSPC (as if its own index write hit a full
    disk)."""

    def __init__(self, k):
        from membench.systems import make_system

        self.inner, self.k, self.n = make_system("random"), k, 0
        self.name = "random"
        self.card = self.inner.card  # the run it resumes is random's, card and all

    def config(self):
        return self.inner.config()

    def ingest(self, items, root):
        return self.inner.ingest(items, root)

    def query(self, q, scope, as_of):
        self.n += 1
        if self.n == self.k:
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.inner.query(q, scope, as_of)


def _with_system(monkeypatch, name: str, system) -> None:
    """``membench run --system NAME`` makes ``system`` (every other name as before)."""
    import membench.systems as systems

    real = systems.make_system
    monkeypatch.setattr(
        systems, "make_system", lambda n, cfg=None: system if n == name else real(n, cfg)
    )


def _resumes_complete(rest: list[str], out: Path) -> None:
    """A random-system run into ``out`` completes it, every query once."""
    assert main(["run", "--system", "random", *rest]) == 0
    ids = _query_ids(out)
    assert len(ids) == len(set(ids)) == json.loads((out / "meta.json").read_text())["queries"]


def test_disk_full_in_process_maps_to_status_4(world, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    _with_system(monkeypatch, "full", DiskFullAfter(4))
    rest = [*cli_args(world), "--out", str(out)]
    assert main(["run", "--system", "full", *rest]) == EXIT_DISK_FULL
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"membench: {out / 'run.jsonl'}: disk full") and "\n" not in err
    assert len(_query_ids(out)) == 3
    _resumes_complete(rest, out)


# --------------------------------------------------------------------------- Ctrl-C


def _start_gated(world, out: Path, gate_dir: Path) -> subprocess.Popen:
    p = subprocess.Popen(
        membench_cmd("run", "--system", "hostile_world:Gated", *cli_args(world), "--out", str(out)),
        env={**subprocess_env(), "MEMBENCH_TEST_GATE": str(gate_dir / "gate")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while not (gate_dir / "ingesting").exists():
        assert p.poll() is None and time.time() < deadline, p.communicate()
        time.sleep(0.05)
    return p


def test_ctrl_c_is_one_line_status_130_and_resumable(world, tmp_path):
    out = tmp_path / "run"
    p = _start_gated(world, out, tmp_path)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err and err.strip().startswith("membench: interrupted")
    assert len(err.strip().splitlines()) == 1
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "running" and (out / LOCK_NAME).read_text() == ""
    (tmp_path / "gate").write_text("go")
    r = subprocess.run(
        membench_cmd("run", "--system", "hostile_world:Gated", *cli_args(world), "--out", str(out)),
        env={**subprocess_env(), "MEMBENCH_TEST_GATE": str(tmp_path / "gate")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["resumed"] == 1
    ids = _query_ids(out)
    assert len(ids) == len(set(ids)) == meta["queries"]


# --------------------------------------------------------------------------- locks


def test_lock_killed_holder_is_taken_over(world, tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    p = _start_gated(world, out, tmp_path)
    holder = json.loads((out / LOCK_NAME).read_text())
    assert holder["pid"] == p.pid and "hostile_world:Gated" in holder["command"]
    p.kill()  # kill -9: no chance to release anything
    p.communicate(timeout=60)
    (tmp_path / "gate").write_text("go")
    monkeypatch.setenv("MEMBENCH_TEST_GATE", str(tmp_path / "gate"))
    assert (
        main(["run", "--system", "hostile_world:Gated", *cli_args(world), "--out", str(out)]) == 0
    )
    err = capsys.readouterr().err
    assert f"taking over the lock left by pid {p.pid}" in err
    ids = _query_ids(out)
    assert len(ids) == len(set(ids)) == json.loads((out / "meta.json").read_text())["queries"]


def test_lock_is_reentrant_in_one_process_and_exclusive_across(tmp_path):
    d = tmp_path / "run"
    with run_dir_lock(d, "outer"):
        with run_dir_lock(d, "inner"):
            assert json.loads((d / LOCK_NAME).read_text())["command"] == "outer"
        code = (
            "import sys\nfrom membench.core.lock import run_dir_lock, RunDirLocked\n"
            f"try:\n    with run_dir_lock({str(d)!r}):\n        sys.exit(0)\n"
            "except RunDirLocked as e:\n    print(e)\n    sys.exit(7)\n"
        )
        r = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env()
        )
        assert r.returncode == 7 and "running `outer` since" in r.stdout
    assert (d / LOCK_NAME).read_text() == ""
    with run_dir_lock(d):  # free again
        pass


def test_lock_refusal_names_the_holder():
    e = RunDirLocked(
        Path("runs/x"),
        {"pid": 42, "host": "h", "command": "membench run", "since": "2026-01-01T00:00:00+00:00"},
    )
    assert str(e).startswith("runs/x: RUN_DIR_LOCKED:") and "pid 42 on h" in str(e)
    assert "`membench run` since 2026-01-01T00:00:00+00:00" in str(e)


# --------------------------------------------------------------------------- bad answers


class BadPairs(DiskFullAfter):
    """A system whose 3rd answer holds a hit that is not a pair (an extra field)."""

    def query(self, q, scope, as_of):
        from membench.contract.protocol import Result

        self.n += 1
        res = self.inner.query(q, scope, as_of)
        if self.n == self.k and res.hits:
            return Result(hits=[(*res.hits[0], "extra"), *res.hits[1:]], cartridge=res.cartridge)
        return res


def test_a_hit_that_is_not_a_pair_is_one_line_and_the_run_resumes(
    world, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "run"
    _with_system(monkeypatch, "badpairs", BadPairs(3))
    rest = [*cli_args(world), "--out", str(out)]
    assert main(["run", "--system", "badpairs", *rest]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert (
        err.startswith("membench: system ")
        and "hit #0 must be a pair (atom_id, score), got tuple (" in err
    ), err
    assert len(_query_ids(out)) == 2  # the two answers before it are kept
    _resumes_complete(rest, out)
