"""The network guard: count, and refuse, a system's network attempts while it ingests and answers
(docs/runs.md, "Network", says why a run is offline and what the guard cannot see).

Start at :class:`NetworkGuard`. It watches this process through a CPython audit hook
(:func:`sys.addaudithook`, PEP 578) that sees every socket operation Python code makes, whatever
library makes it: name look-ups (``socket.getaddrinfo``, ``gethostbyname``,
``gethostbyname_ex``, ``gethostbyaddr``, ``getnameinfo``) and connections and datagrams
(``socket.connect``, also raised by ``connect_ex``, ``sendto``, ``sendmsg``).

Loopback (:func:`membench.core.listening.is_loopback`: 127.0.0.0/8, ``::1``, IPv4-mapped
``::ffff:127.x.y.z``, ``localhost``), Unix-domain sockets and the hosts a system names in
``network_allow`` are never counted. Anything else is an **attempt**: recorded (event, host,
port, phase, and the top-level packages on the Python stack that made it) and, in ``"block"``
mode, refused by raising :class:`NetworkBlocked` (a :class:`ConnectionRefusedError`, what a
library would see without a network); ``"record"`` mode counts without refusing.

The hook is installed once per process and does nothing while no guard is active (audit hooks
cannot be removed). It sees this process only: child processes and native code that opens
sockets without Python's socket module are not watched. :func:`quiet_native_telemetry` sets,
before it loads, the switches that keep the native code membench loads offline: ONNX Runtime
(the OCR engine, MemPalace's embedder) otherwise looks up ``mobile.events.data.microsoft.com``
from C++ and writes a device id under ``~/.cache/Microsoft``, unseen by the hook (found with
strace, which ``tests/test_systems_library.py`` runs whenever it is installed).

Touches: environment variables (:func:`quiet_native_telemetry`) and the process's audit hook.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from .listening import is_loopback

MODES = ("block", "record")
_LOOKUPS = {
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyname_ex",
    "socket.gethostbyaddr",
    "socket.getnameinfo",
}
_SENDS = {"socket.connect", "socket.sendto", "socket.sendmsg"}
KEEP = 50  # attempts kept verbatim per guard (all are counted)

_ACTIVE: list[NetworkGuard] = []
_LOCK = threading.Lock()
_INSTALLED = False
_IN_HOOK = threading.local()


#: environment switches that keep native libraries from calling home (set if unset)
NATIVE_OFFLINE = {
    "ORT_DISABLE_TELEMETRY": "1",  # ONNX Runtime's 1DS telemetry (C++, not Python sockets)
    "HF_HUB_DISABLE_TELEMETRY": "1",  # huggingface_hub
    "ANONYMIZED_TELEMETRY": "False",  # Chroma's product telemetry (MemPalace sets it off too)
}


def quiet_native_telemetry() -> dict[str, str]:
    """Set :data:`NATIVE_OFFLINE` in this process's environment (inherited by its children)
    unless the user set them; returns the values in force. Call it before the libraries load
    (the runner does, before ingest)."""
    import os

    for k, v in NATIVE_OFFLINE.items():
        os.environ.setdefault(k, v)
    return {k: os.environ[k] for k in NATIVE_OFFLINE}


def import_openvino():
    """``import openvino`` without its usage telemetry, which no environment switch turns off:
    importing OpenVINO imports ``openvino.tools.ovc``, which sends a Google Analytics "import"
    event from a thread (a DNS lookup and a connection) and writes ``~/intel/openvino_ga_cid``
    and ``~/intel/stats``, unless an opt-out file exists under HOME or ``CI=true`` (found by
    tracing an OCR run with strace). With ``openvino_telemetry`` made unimportable before the
    first import, OpenVINO falls back to its own no-op stub
    (``openvino/tools/ovc/telemetry_stub.py``). Every membench import of OpenVINO goes through
    here (the OCR engine, in each OCR worker)."""
    if "openvino" not in sys.modules:
        sys.modules.setdefault("openvino_telemetry", None)  # None: ImportError on import
    import openvino

    return openvino


class NetworkBlocked(ConnectionRefusedError):
    """A network attempt refused by an active :class:`NetworkGuard` in ``"block"`` mode."""


def is_local(host: Any) -> bool:
    """True for loopback addresses and names (:func:`membench.core.listening.is_loopback`),
    the unspecified host of a look-up (``None``, ``""``: a passive look-up for binding), and
    anything that is not a host name (a Unix socket path)."""
    if host is None or isinstance(host, (bytes, bytearray)) and not host:
        return True
    if isinstance(host, (bytes, bytearray)):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return True
    return not host.strip().strip("[]") or is_loopback(host)


def _host_port(event: str, args: tuple) -> tuple[Any, Any, bool]:
    """(host, port, counted) of an audited socket event."""
    if event in _LOOKUPS:
        if event == "socket.getnameinfo":
            addr = args[0] if args else None
            host, port = (
                (addr[0], addr[1] if len(addr) > 1 else None)
                if isinstance(addr, tuple) and addr
                else (addr, None)
            )
        else:
            host = args[0] if args else None
            port = args[1] if event == "socket.getaddrinfo" and len(args) > 1 else None
        return host, port, True
    # connect / sendto / sendmsg: (socket, address)
    addr = args[1] if len(args) > 1 else None
    if addr is None or isinstance(addr, (str, bytes, bytearray)):
        return addr, None, False  # a connected socket's send, or an AF_UNIX path
    if isinstance(addr, tuple) and addr:
        return addr[0], addr[1] if len(addr) > 1 else None, True
    return addr, None, False


def _packages() -> list[str]:
    """Top-level packages on the calling Python stack, innermost first, without repeats
    (the guard and the standard library's socket layer left out)."""
    out: list[str] = []
    f = sys._getframe(2)
    while f is not None:
        name = (f.f_globals.get("__name__") or "?").split(".", 1)[0]
        if name not in out and name not in ("membench", "socket", "ssl", "__main__"):
            out.append(name)
        f = f.f_back
    return out[:12]


def _hook(event: str, args: tuple) -> None:
    if (
        not _ACTIVE
        or not event.startswith("socket.")
        or (event not in _LOOKUPS and event not in _SENDS)
    ):
        return
    if getattr(_IN_HOOK, "busy", False):
        return
    _IN_HOOK.busy = True
    try:
        host, port, counted = _host_port(event, args)
        if not counted or is_local(host):
            return
        with _LOCK:
            guards = list(_ACTIVE)
        blocked = False
        for g in guards:
            if g._allowed(host):
                continue
            g._record(event, host, port)
            blocked = blocked or g.mode == "block"
    finally:
        _IN_HOOK.busy = False
    if blocked:
        raise NetworkBlocked(
            f"membench network guard: {event} to {host}:{port} refused "
            "(membench runs systems offline)"
        )


def _install() -> None:
    global _INSTALLED
    with _LOCK:
        if not _INSTALLED:
            sys.addaudithook(_hook)
            _INSTALLED = True


class NetworkGuard:
    """Counts (and in ``"block"`` mode refuses) non-loopback network attempts of this process
    while one of its :meth:`phase` blocks is open. ``allow``: more host names or addresses
    that are not counted (e.g. the host of a system served over HTTP)."""

    def __init__(self, mode: str = "block", allow: Iterable[str] = ()):
        if mode not in MODES:
            raise ValueError(f"network guard mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.allow = frozenset(str(a).strip("[]").lower() for a in allow)
        self.attempts = 0
        self.by_phase: Counter[str] = Counter()
        self.by_target: Counter[str] = Counter()
        self.kept: list[dict[str, Any]] = []
        self._phase = "?"
        self._lock = threading.Lock()

    def _allowed(self, host: Any) -> bool:
        return isinstance(host, str) and host.strip("[]").lower() in self.allow

    def _record(self, event: str, host: Any, port: Any) -> None:
        pk = _packages()
        with self._lock:
            self.attempts += 1
            self.by_phase[self._phase] += 1
            self.by_target[f"{host}:{port}"] += 1
            if len(self.kept) < KEEP:
                self.kept.append(
                    {
                        "event": event,
                        "host": str(host)[:200],
                        "port": port if isinstance(port, (int, str)) else None,
                        "phase": self._phase,
                        "packages": pk,
                        "blocked": self.mode == "block",
                    }
                )

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[NetworkGuard]:
        """Watch the process while the block runs; attempts are booked under ``name``."""
        _install()
        self._phase = name
        with _LOCK:
            _ACTIVE.append(self)
        try:
            yield self
        finally:
            with _LOCK:
                _ACTIVE.remove(self)

    def report(self) -> dict[str, Any]:
        """What meta.json records: mode, attempts (all counted), per phase and target, and the
        first :data:`KEEP` attempts with the packages that made them."""
        return {
            "mode": self.mode,
            "attempts": self.attempts,
            "blocked": self.attempts if self.mode == "block" else 0,
            "by_phase": dict(sorted(self.by_phase.items())),
            "by_target": dict(self.by_target.most_common(20)),
            "first": list(self.kept),
            "watches": "this process's Python socket calls (audit hook): name look-ups, "
            "connect, sendto, sendmsg; loopback and Unix sockets not counted",
        }

    def summary(self) -> str:
        """One line for a warning (empty when there was no attempt)."""
        if not self.attempts:
            return ""
        targets = ", ".join(f"{t} x{n}" for t, n in self.by_target.most_common(3))
        who = sorted({p for a in self.kept for p in a["packages"][:3]})
        verb = "refused" if self.mode == "block" else "allowed and counted"
        return (
            f"{self.attempts} network attempt(s) {verb}: {targets}"
            f"{' (from ' + ', '.join(who) + ')' if who else ''}"
        )


__all__ = [
    "MODES",
    "NATIVE_OFFLINE",
    "NetworkBlocked",
    "NetworkGuard",
    "is_local",
    "quiet_native_telemetry",
    "import_openvino",
]
