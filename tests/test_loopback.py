"""One loopback rule (membench.core.listening.is_loopback) and its three users: the listening
sockets a Ray run and ``membench serve`` are checked with, ``membench serve``'s warning, and
the network guard. Each takes loopback addresses and ``localhost`` alike and refuses every
interface and a LAN address. Nothing here opens a socket: the guard is exercised with
``sys.audit`` events, the server with ``make_server`` replaced."""

from __future__ import annotations

import socket
import sys

import pytest

from membench.core import listening, netguard
from membench.core.errors import MembenchError
from membench.core.listening import Listener, is_loopback
from membench.core.netguard import NetworkBlocked, NetworkGuard, is_local
from membench.serve import server

LOOPBACK = [
    "127.0.0.1",
    "127.4.5.6",
    "127.255.255.254",
    "::1",
    "[::1]",
    "::ffff:127.0.0.1",
    "::ffff:127.9.8.7",
    "localhost",
    "LOCALHOST",
    "a.localhost",
]
ELSEWHERE = [
    "0.0.0.0",
    "192.168.1.10",
    "::",
    "[::]",
    "::ffff:0.0.0.0",
    "::ffff:192.168.1.10",
    "10.0.0.1",
    "2001:db8::1",
    "fe80::1%eth0",
    "example.org",
    "localhost.example.org",
]


def test_the_rule():
    assert all(map(is_loopback, LOOPBACK)), [h for h in LOOPBACK if not is_loopback(h)]
    assert not any(map(is_loopback, ELSEWHERE)), [h for h in ELSEWHERE if is_loopback(h)]
    assert not is_loopback("")  # binding to "" is every interface


def test_users_share_it():
    assert server.is_loopback is listening.is_loopback is netguard.is_loopback


@pytest.mark.parametrize("host", LOOPBACK)
def test_a_listener_on_loopback(host):
    assert Listener(1, "x", host.strip("[]"), 80).loopback


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "::ffff:192.168.1.10"])
def test_a_listener_elsewhere_is_not_loopback(host):
    assert not Listener(1, "x", host, 80).loopback


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::"])
def test_the_guard_refuses(host):
    """A connection to every interface or a LAN address is counted and, in block mode, refused
    (the audit event CPython raises before the connect; nothing is sent)."""
    assert not is_local(host)
    g = NetworkGuard("block")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s, g.phase("query"):
        with pytest.raises(NetworkBlocked):
            sys.audit("socket.connect", s, (host, 80))
    assert g.attempts == 1 and g.by_target == {f"{host}:80": 1}


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "::ffff:127.0.0.1", "localhost"])
def test_the_guard_lets_loopback_through(host):
    assert is_local(host)
    g = NetworkGuard("block")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s, g.phase("query"):
        sys.audit("socket.connect", s, (host, 80))
    assert g.attempts == 0


def _serve(monkeypatch, corpus_root, host: str) -> None:
    def listen(*a, **k):
        raise MembenchError("not listening in a test")

    monkeypatch.setattr(server, "make_server", listen)
    with pytest.raises(MembenchError, match="not listening in a test"):
        server.serve("random", {}, host, 0, corpus_root)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::"])
def test_serve_warns_off_loopback(host, monkeypatch, capsys, corpus_root):
    _serve(monkeypatch, corpus_root, host)
    assert f"WARNING: listening on {host}, not a loopback address" in capsys.readouterr().err


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "::ffff:127.0.0.1", "localhost"])
def test_serve_is_quiet_on_loopback(host, monkeypatch, capsys, corpus_root):
    _serve(monkeypatch, corpus_root, host)
    assert "WARNING" not in capsys.readouterr().err
