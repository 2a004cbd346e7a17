"""``membench serve``: any Python memory system on the ``membench-http/1`` protocol
(docs/systems.md, docs/openapi.json), for the client that runs it sealed, in another process.

* :mod:`.server`: the HTTP server around one system (:class:`~.server.SystemService`: the
  system's ingest and query behind the protocol's checks, bounds and watchdog).

The wire itself (paths, JSON shapes, the checks both ends apply) is
:mod:`membench.contract.wire`; the client, what ``membench run --system http://HOST:PORT`` runs,
is a system like any other: :class:`membench.systems.remote.HttpSystem`. (Its old path:
membench/moved.py.)
"""

from ..contract.wire import PROTOCOL

__all__ = ["PROTOCOL"]
