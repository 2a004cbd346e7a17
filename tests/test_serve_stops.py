"""SIGINT and SIGTERM to ``membench serve`` while a request thread sits in native code (an
ingest in OCR or an embedding runtime): exit 130 with the one status line, no native abort
(``terminate called without an active exception``, SIGABRT, SIGSEGV), no process left.

The time limits only keep a broken stop from hanging the suite; what is checked is the outcome."""

from __future__ import annotations

import signal
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from http_helpers import serve_process

from membench.contract.schema import SourceItem
from membench.core.stop import EXIT_STOPPED
from membench.systems.remote import HttpSystem

HANG_GUARD = 60


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_during_a_native_ingest_is_status_130(tmp_path, monkeypatch, sig):
    gate = tmp_path / "gate"
    monkeypatch.setenv("MEMBENCH_TEST_GATE", str(gate))
    item = SourceItem(
        source_id="s:1",
        modality="conversation",
        holder="h",
        observed_at=datetime(2024, 1, 1, tzinfo=timezone.utc),
        content=[["a", "hello there"]],
    )
    with serve_process("--system", "http_helpers:NativeIngest", "--corpus", str(tmp_path)) as (
        url,
        proc,
    ):
        client = threading.Thread(target=lambda: _ingest(url, item, tmp_path), daemon=True)
        client.start()
        deadline = time.time() + HANG_GUARD
        while not gate.exists():
            assert proc.poll() is None and time.time() < deadline, "the ingest never began"
            time.sleep(0.05)
        proc.send_signal(sig)
        proc.wait(timeout=HANG_GUARD)
        out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.returncode == EXIT_STOPPED, (proc.returncode, err)
    assert "membench serve: stopped" in out
    assert "terminate called" not in err and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith(f"membench: interrupted ({sig.name})"), err


def _ingest(url: str, item: SourceItem, root: Path) -> None:
    try:
        HttpSystem(url).ingest([item], root)
    except Exception:  # the server went away mid-ingest: what this test causes
        pass
