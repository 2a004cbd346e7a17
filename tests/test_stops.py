"""Clean stops (membench.core.stop): SIGINT and SIGTERM end a run with one line, status 130 and
a resumable run directory, also when SIGINT was ignored when membench started (a background job
of a non-interactive shell starts so: how test_ctrl_c_is_one_line_status_130_and_resumable ran
on for 120 s after its SIGINT), and also when the system swallows the interrupt (the watchdog
ends the process STOP_SECONDS later, its lock file emptied).

The time limits below only keep a broken stop from hanging the suite: they are far above what a
stop takes (well under a second on a quiet machine), and what each test checks is the outcome
(status, the one line, the run directory), never a duration."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from hostile_world import cli_args, membench_cmd, subprocess_env, write_world

from membench.core import stop
from membench.core.errors import EXIT_INTERRUPTED
from membench.core.lock import LOCK_NAME

# the system's own gate gives up after 120 s: a stop that did not work shows as a timeout
HANG_GUARD = 60


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path / "w")


def _start(
    world,
    out: Path,
    gate_dir: Path,
    system: str = "hostile_world:Gated",
    ignore_sigint: bool = False,
) -> subprocess.Popen:
    """A run held in its ingest (until ``gate_dir/gate`` exists); ``ignore_sigint``: started
    with SIGINT ignored, as a background job of a non-interactive shell is."""
    pre = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None
    p = subprocess.Popen(
        membench_cmd("run", "--system", system, *cli_args(world), "--out", str(out)),
        env={**subprocess_env(), "MEMBENCH_TEST_GATE": str(gate_dir / "gate")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=pre,
    )
    deadline = time.time() + 120
    while not (gate_dir / "ingesting").exists():
        assert p.poll() is None and time.time() < deadline, p.communicate()
        time.sleep(0.05)
    return p


def _stopped_cleanly(p: subprocess.Popen, out: Path, signame: str) -> None:
    _, err = p.communicate(timeout=HANG_GUARD)
    assert p.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.strip().startswith(f"membench: interrupted ({signame})"), err
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "running"  # resumable, not "complete"
    assert (out / LOCK_NAME).read_text() == ""  # released


def _resumes(world, out: Path, gate_dir: Path, system: str = "hostile_world:Gated") -> None:
    (gate_dir / "gate").write_text("go")
    r = subprocess.run(
        membench_cmd("run", "--system", system, *cli_args(world), "--out", str(out)),
        env={**subprocess_env(), "MEMBENCH_TEST_GATE": str(gate_dir / "gate")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["resumed"] == 1
    ids = [json.loads(line)["query_id"] for line in (out / "run.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == meta["queries"]


def test_sigint_stops_a_run_started_with_sigint_ignored(world, tmp_path):
    """The cause of the 120 s: Python keeps a SIGINT ignored at start; membench does not."""
    out = tmp_path / "run"
    p = _start(world, out, tmp_path, ignore_sigint=True)
    p.send_signal(signal.SIGINT)
    _stopped_cleanly(p, out, "SIGINT")
    _resumes(world, out, tmp_path)


def test_sigterm_is_one_line_status_130_and_resumable(world, tmp_path):
    out = tmp_path / "run"
    p = _start(world, out, tmp_path)
    p.send_signal(signal.SIGTERM)
    _stopped_cleanly(p, out, "SIGTERM")
    _resumes(world, out, tmp_path)


def test_a_system_that_swallows_the_interrupt_is_ended_by_the_watchdog(world, tmp_path):
    out = tmp_path / "run"
    p = _start(world, out, tmp_path, system="hostile_world:Stubborn")
    p.send_signal(signal.SIGTERM)
    _stopped_cleanly(p, out, "SIGTERM")
    assert (tmp_path / "swallowed").read_text() == "yes"  # it did swallow it
    _resumes(world, out, tmp_path, "hostile_world:Stubborn")


def test_a_second_signal_ends_a_stubborn_run_at_once(world, tmp_path):
    out = tmp_path / "run"
    p = _start(world, out, tmp_path, system="hostile_world:Stubborn")
    p.send_signal(signal.SIGINT)
    deadline = time.time() + 30
    while not (tmp_path / "swallowed").exists():  # the first was swallowed
        assert time.time() < deadline
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    _stopped_cleanly(p, out, "SIGINT")


def test_handlers_are_restored_after_a_command(monkeypatch):
    before = {s: signal.getsignal(s) for s in stop.SIGNALS}
    wake = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(wake)
    with stop.handling_stops():
        assert all(signal.getsignal(s) is stop._handler for s in stop.SIGNALS)
    assert {s: signal.getsignal(s) for s in stop.SIGNALS} == before
    assert signal.set_wakeup_fd(wake) == wake


def test_a_stop_in_process_unwinds_to_one_line(capsys):
    """Within one process (a notebook, a test): the handler raises Stopped, a
    KeyboardInterrupt, and main prints the one line."""
    from membench.cli import main

    def interrupted(a):
        signal.raise_signal(signal.SIGTERM)
        raise AssertionError("not reached")

    import membench.cli.metrics as cli

    real = cli._metrics_cmd
    try:
        cli._metrics_cmd = interrupted
        assert main(["metrics", "whatever"]) == EXIT_INTERRUPTED
    finally:
        cli._metrics_cmd = real
    err = capsys.readouterr().err.strip()
    assert err.startswith("membench: interrupted (SIGTERM)") and "\n" not in err
