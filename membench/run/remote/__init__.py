"""A memory system over HTTP: the ``membench-http/1`` protocol (docs/systems.md, docs/openapi.json).

* :mod:`.wire`: the protocol's name, paths and JSON shapes, and the checks both ends apply;
* :mod:`.client`: :class:`~.client.HttpSystem`, what ``membench run --system http://HOST:PORT``
  runs: a :class:`membench.run.protocol.MemorySystem` whose ingest and query are HTTP calls
  (timeouts, retries with backoff, one clear line naming the endpoint when the server
  misbehaves);
* :mod:`.server`: ``membench serve``, which exposes any Python system on the protocol.
"""

from .wire import PROTOCOL

__all__ = ["PROTOCOL"]
