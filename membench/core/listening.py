"""What a set of processes listens on, and whether any of it is reachable from elsewhere.

:func:`listeners` lists the listening TCP sockets (IPv4 and IPv6) of the given processes, read
with psutil (``psutil.net_connections``: ``/proc/net/tcp``, ``/proc/net/tcp6`` and each
process's descriptors on Linux); :func:`is_loopback` is membench's one loopback rule, for an
address or a host name (``127.0.0.0/8``, ``::1``, IPv4-mapped ``::ffff:127.x.y.z``, which is
what a dual-stack socket bound to 127.0.0.1 shows, and ``localhost``). The Ray engine refuses a
local cluster with a socket that is not loopback (:mod:`membench.run.ray_engine`), ``membench
serve`` warns when told to listen elsewhere (:mod:`membench.serve.server`), and the network
guard does not count loopback (:mod:`membench.core.netguard`). Touches nothing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Listener:
    """One listening socket: its process, that process's name, address and port."""

    pid: int
    name: str
    address: str
    port: int

    @property
    def loopback(self) -> bool:
        return is_loopback(self.address)

    def __str__(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{host}:{self.port} ({self.name}, pid {self.pid})"


#: host names that are loopback without a look-up (RFC 6761 section 6.3; Debian's /etc/hosts)
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def is_loopback(host: str) -> bool:
    """True for a loopback address (``127.0.0.0/8``, ``::1``, IPv4-mapped ``::ffff:127.x.y.z``;
    in brackets or with a zone too) or name (:data:`LOOPBACK_NAMES`, ``*.localhost``, in any
    case); False for anything else, the unspecified address (``0.0.0.0``, ``::``, ``""``:
    every interface) first of all."""
    h = host.strip().strip("[]").lower()
    if h in LOOPBACK_NAMES or h.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(h.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def listeners(pids: Iterable[int]) -> list[Listener]:
    """The listening TCP sockets of the processes ``pids`` (sorted; processes gone meanwhile
    are skipped)."""
    import psutil

    want = set(pids)
    try:
        conns = [(c.pid, c) for c in psutil.net_connections(kind="inet") if c.pid in want]
    except psutil.AccessDenied:  # (macOS without root) process by process: our own
        conns = []
        for pid in want:
            try:
                conns += [(pid, c) for c in psutil.Process(pid).net_connections(kind="inet")]
            except psutil.Error:
                pass
    out = set()
    for pid, c in conns:
        if c.status != psutil.CONN_LISTEN or not c.laddr:
            continue
        try:
            name = psutil.Process(pid).name()
        except psutil.Error:
            name = "?"
        out.add(Listener(pid, name, c.laddr.ip, c.laddr.port))
    return sorted(out, key=lambda x: (x.pid, x.port, x.address))


__all__ = ["LOOPBACK_NAMES", "Listener", "is_loopback", "listeners"]
