"""The network guard (membench.core.netguard): what it counts, what it refuses, what it lets
through, and what a run records of it.

No test sends anything off this machine: a refused attempt is stopped by the audit hook before
the system call, and record mode is exercised with ``sys.audit`` events (what CPython raises
before a socket call), never with a real outbound socket."""

from __future__ import annotations

import json
import socket
import sys
import threading
import urllib.error
import urllib.request

import pytest

from membench.core.netguard import NetworkBlocked, NetworkGuard, is_local


def test_is_local():
    for h in (
        "127.0.0.1",
        "127.3.4.5",
        "::1",
        "[::1]",
        "localhost",
        "LOCALHOST",
        "a.localhost",
        None,
        "",
        b"",
    ):
        assert is_local(h), h
    for h in (
        "example.com",
        "10.0.0.1",
        "192.168.1.1",
        "8.8.8.8",
        "2001:db8::1",
        "localhost.example.com",
        b"example.com",
    ):
        assert not is_local(h), h


def test_block_refuses_before_any_lookup_and_counts():
    g = NetworkGuard("block")
    with g.phase("query"):
        with pytest.raises(NetworkBlocked):
            socket.getaddrinfo("example.com", 443)
        with pytest.raises(OSError):  # a library sees what an offline machine gives
            socket.create_connection(("example.com", 443), timeout=1)
        with pytest.raises(urllib.error.URLError) as e:
            urllib.request.urlopen("https://example.com/", timeout=1)
        assert isinstance(e.value.reason, NetworkBlocked)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            with pytest.raises(NetworkBlocked):
                s.sendto(b"x", ("192.0.2.1", 53))
            with pytest.raises(NetworkBlocked):
                s.connect(("192.0.2.1", 53))
        finally:
            s.close()
    r = g.report()
    assert r["attempts"] == 5 and r["blocked"] == 5
    assert r["by_phase"] == {"query": 5}
    assert r["by_target"]["example.com:443"] == 3
    assert r["by_target"]["192.0.2.1:53"] == 2
    # the packages on the stack name who tried (urllib here; this test module for the rest)
    assert any("urllib" in a["packages"] for a in r["first"])
    assert any("test_netguard" in a["packages"] for a in r["first"])
    assert "5 network attempt(s) refused" in g.summary()


def test_loopback_and_unix_sockets_pass_and_are_not_counted(tmp_path):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    t = threading.Thread(target=lambda: srv.accept()[0].close(), daemon=True)
    t.start()
    g = NetworkGuard("block")
    with g.phase("ingest"):
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
        t.join(5)
        c.close()
        socket.getaddrinfo("localhost", port)
        if hasattr(socket, "AF_UNIX"):
            u = socket.socket(socket.AF_UNIX)
            with pytest.raises(OSError):
                u.connect(str(tmp_path / "no-such-socket"))  # refused by the OS, not the guard
            u.close()
    srv.close()
    assert g.attempts == 0 and g.summary() == ""


def test_record_mode_counts_without_refusing_and_allow_list():
    g = NetworkGuard("record", allow=["models.internal"])
    with g.phase("ingest"):
        sys.audit("socket.getaddrinfo", "example.com", 443, 0, 0, 0)  # no exception
        sys.audit("socket.getaddrinfo", "models.internal", 443, 0, 0, 0)  # allowed: not counted
        sys.audit("socket.gethostbyname", "example.org")
    assert g.attempts == 2 and g.report()["blocked"] == 0
    assert "allowed and counted" in g.summary()


def test_inactive_guard_sees_nothing_and_guards_nest():
    outer, inner = NetworkGuard("record"), NetworkGuard("record")
    sys.audit("socket.getaddrinfo", "example.com", 80, 0, 0, 0)
    with outer.phase("a"):
        with inner.phase("b"):
            sys.audit("socket.getaddrinfo", "example.com", 80, 0, 0, 0)
        sys.audit("socket.getaddrinfo", "example.com", 80, 0, 0, 0)
    sys.audit("socket.getaddrinfo", "example.com", 80, 0, 0, 0)
    assert (outer.attempts, inner.attempts) == (2, 1)


def test_attempts_from_other_threads_count():
    g = NetworkGuard("block")
    errors = []

    def telemetry():
        try:
            socket.getaddrinfo("telemetry.example.com", 443)
        except NetworkBlocked as e:
            errors.append(e)

    with g.phase("ingest"):
        t = threading.Thread(target=telemetry)
        t.start()
        t.join()
    assert g.attempts == 1 and len(errors) == 1


def test_bad_mode():
    with pytest.raises(ValueError):
        NetworkGuard("allow")


class _Caller:
    """Wraps a reference system and makes one network attempt per query."""

    def __init__(self, inner, policy):
        self.inner, self.name = inner, "caller"
        if policy:
            self.network_policy = policy

    def config(self):
        return {"system": "caller", "inner": self.inner.config()}

    def ingest(self, items, root):
        return self.inner.ingest(items, root)

    def query(self, q, scope, as_of):
        try:
            socket.getaddrinfo("api.example.com", 443) if getattr(
                self, "network_policy", "record"
            ) == "block" else sys.audit("socket.getaddrinfo", "api.example.com", 443, 0, 0, 0)
        except NetworkBlocked:
            pass
        return self.inner.query(q, scope, as_of)


@pytest.mark.parametrize("policy", ["block", None])
def test_run_records_attempts_in_meta_and_warns(policy, built, corpus_root, tmp_path, capsys):
    from membench.run.runner import run_system
    from membench.systems import make_system

    out = tmp_path / "run"
    meta = run_system(
        _Caller(make_system("bm25"), policy),
        built.out,
        "dev",
        out,
        corpus_root,
        modalities=["video"],
        limit=3,
    )
    net = json.loads((out / "meta.json").read_text())["network"]
    assert net == meta["network"]
    assert net["mode"] == (policy or "record")
    assert net["attempts"] == 3 and net["by_phase"] == {"query": 3}
    assert net["blocked"] == (3 if policy else 0)
    assert net["first"][0]["host"] == "api.example.com"
    err = capsys.readouterr().err
    assert "warning: system caller (queries): 3 network attempt(s)" in err
    # a resumed run adds its session's attempts to the earlier ones
    lines = (out / "run.jsonl").read_text().splitlines()
    (out / "run.jsonl").write_text("\n".join(lines[:1]) + "\n")
    m = json.loads((out / "meta.json").read_text())
    m["status"] = "running"
    (out / "meta.json").write_text(json.dumps(m))
    run_system(
        _Caller(make_system("bm25"), policy),
        built.out,
        "dev",
        out,
        corpus_root,
        modalities=["video"],
        limit=3,
    )
    net2 = json.loads((out / "meta.json").read_text())["network"]
    assert net2["attempts"] == 2 and net2["attempts_all_sessions"] == 5
    assert net2["sessions"] == 2


def test_reference_run_has_no_attempts(built, corpus_root, tmp_path):
    from membench.run.runner import run_system
    from membench.systems import make_system

    meta = run_system(
        make_system("bm25"), built.out, "dev", tmp_path, corpus_root, modalities=["video"], limit=3
    )
    assert meta["network"]["mode"] == "block" and meta["network"]["attempts"] == 0


def test_native_telemetry_switches_are_set_unless_the_user_set_them(monkeypatch):
    from membench.core.netguard import NATIVE_OFFLINE, quiet_native_telemetry

    for k in NATIVE_OFFLINE:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "0")
    got = quiet_native_telemetry()
    assert got["ORT_DISABLE_TELEMETRY"] == "1" and got["ANONYMIZED_TELEMETRY"] == "False"
    assert got["HF_HUB_DISABLE_TELEMETRY"] == "0"  # the user's choice stands


def test_openvino_is_imported_without_its_usage_telemetry(tmp_path):
    """`import openvino` sends a Google Analytics event and writes ~/intel/ (openvino.tools.ovc);
    membench's import (the OCR engine's) leaves HOME empty and never loads openvino_telemetry.
    (The plain import is not run here: it would try to send that event.)"""
    import os
    import subprocess

    pytest.importorskip("openvino")
    from membench.core.paths import REPO_ROOT

    def run(code: str, home) -> list[str]:
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("CI", "TF_BUILD", "JENKINS_URL")}
        env.update(HOME=str(home), PYTHONPATH=str(REPO_ROOT))
        proc = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.strip() == "ok", proc.stdout
        return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())

    ours = run(
        "import sys\nfrom membench.core.netguard import import_openvino\n"
        "ov = import_openvino(); ov.Core()\n"
        "assert sys.modules.get('openvino_telemetry') is None\nprint('ok')",
        tmp_path / "ours",
    )
    assert ours == []  # the plain import writes intel/openvino_ga_cid and intel/stats here
