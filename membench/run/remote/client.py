"""``membench run --system http://HOST:PORT``: a memory system behind the ``membench-http/1``
protocol (:mod:`.wire`, docs/systems.md), run like any in-process system.

:class:`HttpSystem` is a :class:`membench.run.protocol.MemorySystem`: constructing it asks the
server's ``/health`` and ``/card`` (its ``name`` and ``config`` are the card's, so meta.json
records the remote system's own config); ``ingest`` uploads the items in batches, commits,
waits for the server's ingest (polling its status) and pages the atoms in; ``query`` is one
``POST``. The runner times ``query`` as for any system, so latency is measured here, at the
client, round trip and retries included.

Transport: the standard library's :mod:`http.client` on one kept-alive connection (no
dependency; a connection the server closed is reopened). ``--config`` keys (none of them
changes what the system answers, so none is recorded in meta.json and a run resumes under
other values):

* ``connect_timeout`` (seconds, default 5): to open a connection;
* ``read_timeout`` (default 60): the longest wait for each read of an answer;
* ``ingest_timeout`` (default 21600, six hours): the longest wait for the server's ingest
  (the commit call and the polling after it);
* ``retries`` (default 3) and ``backoff`` (default 0.5): a call that failed transiently
  (connection refused or reset, a timeout, HTTP 429, 502, 503, 504) is tried again up to
  ``retries`` times, after ``backoff``, ``2 * backoff``, ``4 * backoff``... seconds (at most
  30 s each). Every call of the protocol is idempotent (a batch sent twice replaces itself;
  a query must not change the memory), so every call may be retried;
* ``batch_items`` (default 256): items per upload batch;
* ``page_atoms`` (default 5000): atoms per page asked of ``/ingests/{id}/atoms``;
* ``corpus_root``: the corpus root to name in the commit, when the server reads the corpus
  at another path than this machine (default: this run's corpus root).

Anything else the server does wrong (an answer that is not JSON, a wrong shape, an error
status, a state that never comes) is one :class:`HttpSystemError` line naming the call, the
URL and what went wrong; it is never retried. The runner has written nothing it did not get:
re-running the same ``membench run`` resumes the run directory once the server is back.
"""

from __future__ import annotations

import http.client
import socket
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from ...core import progress as _progress
from ...core.errors import MembenchError
from ...core.jsonl import dumps, loads
from ...sets.schema import Scope, SourceItem
from ..protocol import Atom, Result
from . import wire

#: the longest answer body the client reads (an atoms page of long texts stays far below)
MAX_BODY = 256 << 20
_TRANSIENT_STATUS = {429, 502, 503, 504}
_RESUME = "re-run the same `membench run` to resume once the server answers"


class HttpSystemError(MembenchError):
    """The server failed a call: one line naming the call and what went wrong. ``code`` is
    the protocol's error code when the server sent one (``unknown_ingest``, ...)."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.code = code


class _Transient(Exception):
    """One attempt failed in a way another attempt may not."""


class _TooLong(Exception):
    """An answer longer than :data:`MAX_BODY` (not retried)."""


def _one_line(text: str, n: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n] + "..."


class _Connection:
    """One kept-alive HTTP(S) connection: ``connect_timeout`` to open it, then each read of an
    answer waits at most the call's read timeout."""

    def __init__(self, scheme: str, host: str, port: int, connect_timeout: float):
        cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        self.conn = cls(host, port, timeout=connect_timeout)

    def request(self, method: str, path: str, body: bytes | None,
                read_timeout: float) -> tuple[int, str, bytes]:
        c = self.conn
        if c.sock is None:
            c.connect()              # connect_timeout applies (the connection's own timeout)
            c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.sock.settimeout(read_timeout)
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        c.request(method, path, body=body, headers=headers)
        resp = c.getresponse()
        chunks, size = [], 0
        while True:
            b = resp.read(1 << 16)
            if not b:
                break
            size += len(b)
            if size > MAX_BODY:
                self.close()
                raise _TooLong(f"the answer is longer than {MAX_BODY >> 20} MiB")
            chunks.append(b)
        if resp.length:                 # read(amt) returns short at EOF without a word
            self.close()
            raise http.client.IncompleteRead(b"".join(chunks), resp.length)
        if resp.will_close:
            self.close()
        return resp.status, resp.getheader("Content-Type") or "", b"".join(chunks)

    def close(self) -> None:
        self.conn.close()


def _positive(name: str, v: Any, *, integer: bool = False, zero: bool = False) -> float | int:
    ok = not isinstance(v, bool) and isinstance(v, int if integer else (int, float))
    if not ok or not (v >= 0 if zero else v > 0) or v != v:
        what = "an integer" if integer else "a number"
        raise MembenchError(f"--config {name}={v!r}: expected {what} "
                            f"{'>= 0' if zero else '> 0'}")
    return v


def _addresses(host: str, port: int) -> tuple[str, ...]:
    """The addresses ``host`` resolves to (none when it does not resolve: the first call then
    names the failure)."""
    import socket

    try:
        return tuple(sorted({ai[4][0] for ai in socket.getaddrinfo(host, port)}))
    except OSError:
        return ()


class HttpSystem:
    """A system served at ``url`` over ``membench-http/1`` (module docstring)."""

    def __init__(self, url: str, *, connect_timeout: float = 5.0, read_timeout: float = 60.0,
                 ingest_timeout: float = 21600.0, retries: int = 3, backoff: float = 0.5,
                 batch_items: int = 256, page_atoms: int = 5000,
                 corpus_root: str | None = None):
        u = urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname or u.query or u.fragment \
                or u.username or u.password:
            raise MembenchError(f"--system {url!r}: expected http://HOST:PORT (or https://, "
                                "with an optional path prefix; no user, query or fragment)")
        try:
            port = u.port or (443 if u.scheme == "https" else 80)
        except ValueError as e:
            raise MembenchError(f"--system {url!r}: {e}") from None
        self.url = f"{u.scheme}://{u.netloc}{u.path.rstrip('/')}"
        self._prefix = u.path.rstrip("/")
        self.connect_timeout = _positive("connect_timeout", connect_timeout)
        self.read_timeout = _positive("read_timeout", read_timeout)
        self.ingest_timeout = _positive("ingest_timeout", ingest_timeout)
        self.retries = _positive("retries", retries, integer=True, zero=True)
        self.backoff = _positive("backoff", backoff, zero=True)
        self.batch_items = _positive("batch_items", batch_items, integer=True)
        self.page_atoms = _positive("page_atoms", page_atoms, integer=True)
        if corpus_root is not None and (not isinstance(corpus_root, str) or not corpus_root):
            raise MembenchError(f"--config corpus_root={corpus_root!r}: expected a path")
        self.corpus_root = corpus_root
        self._conn = _Connection(u.scheme, u.hostname, port, self.connect_timeout)
        # the run's network guard (membench.core.netguard) counts every other host: the server
        # this client names, and the addresses it resolves to, are the system itself
        self.network_policy = "record"
        self.network_allow = (u.hostname, *_addresses(u.hostname, port))
        self._ingest: str | None = None
        self.retried = 0            # attempts that failed transiently and were tried again
        self._call("GET", "/health", check=wire.check_health)
        self.card = self._call("GET", "/card", check=wire.check_card)
        self.name: str = self.card["name"]

    # -- the protocol ------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """What determines the answers: the remote system's own config (from its card)."""
        return {"protocol": wire.PROTOCOL, "remote_config": self.card["config"]}

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]:
        root = self.corpus_root or str(Path(corpus_root).resolve())
        rows = [wire.item_row(it) for it in items]
        iid = wire.ingest_id(root, rows)
        base = f"/ingests/{iid}"
        status = self._status(iid, missing_ok=True)
        if status is None or status["state"] in ("receiving", "failed"):
            batches = [rows[i:i + self.batch_items] for i in range(0, len(rows), self.batch_items)]
            with _progress.step(f"upload ({self.url})", total=len(rows), unit="item") as bar:
                for seq, batch in enumerate(batches):
                    self._call("PUT", f"{base}/batches/{seq}", {"items": batch},
                               check=lambda v, s=seq, n=len(batch):
                               wire.check_batch_answer(v, iid, s, n))
                    bar.advance(len(batch))
            status = self._call("PUT", base, {"corpus_root": root, "batches": len(batches),
                                              "items": len(rows)},
                                check=lambda v: wire.check_status(v, iid),
                                read_timeout=self.ingest_timeout)
        status = self._wait(iid, status)
        if status["items"] != len(rows):
            raise self._bad("GET", base, f"the server ingested {status['items']} items, "
                            f"{len(rows)} were sent")
        atoms = self._atoms(iid, status["atoms"])
        self._ingest = iid
        return atoms

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        if self._ingest is None:
            raise MembenchError(f"{self.url}: query before ingest")
        path = f"/ingests/{self._ingest}/query"
        try:
            return self._call("POST", path, wire.query_body(question, scope, as_of),
                              check=wire.check_query_answer)
        except HttpSystemError as e:
            if e.code == "unknown_ingest":
                raise HttpSystemError(f"POST {self.url}{path}: the server no longer holds this "
                                      f"run's memory (restarted?); {_RESUME} (it ingests "
                                      "again)", status=e.status, code=e.code) from None
            raise

    # -- ingest ------------------------------------------------------------------------
    def _status(self, iid: str, missing_ok: bool = False) -> dict | None:
        try:
            return self._call("GET", f"/ingests/{iid}", check=lambda v: wire.check_status(v, iid))
        except HttpSystemError as e:
            if missing_ok and e.code == "unknown_ingest":
                return None
            raise

    def _wait(self, iid: str, status: dict) -> dict:
        """Poll the status until ``done`` (``failed``: the server's reason, as an error)."""
        start, pause = time.monotonic(), 0.05
        with _progress.step(f"ingest on the server ({self.url})", total=None) as bar:
            while status["state"] != "done":
                if status["state"] == "failed":
                    raise HttpSystemError(f"PUT {self.url}/ingests/{iid}: the system's ingest "
                                          "failed on the server: "
                                          f"{_one_line(status.get('error') or '?', 300)}")
                if status["state"] == "receiving":
                    raise self._bad("PUT", f"/ingests/{iid}", "the server still says "
                                    "'receiving' after the commit")
                if time.monotonic() - start > self.ingest_timeout:
                    raise HttpSystemError(f"GET {self.url}/ingests/{iid}: the ingest was still "
                                          f"running after ingest_timeout={self.ingest_timeout:g} "
                                          f"s; {_RESUME}")
                bar.note(f"{status['items']} items, running")
                time.sleep(pause)
                pause = min(pause * 1.5, 2.0)
                status = self._status(iid)
            bar.count("atoms", status["atoms"])
        return status

    def _atoms(self, iid: str, expected: int) -> list[Atom]:
        out: list[Atom] = []
        offset: int | None = 0
        while offset is not None:
            path = f"/ingests/{iid}/atoms?offset={offset}&limit={self.page_atoms}"
            atoms, total, offset = self._call("GET", path,
                                              check=lambda v, o=offset: wire.check_atoms_page(v, o))
            if total != expected:
                raise self._bad("GET", path, f"total {total}, but the status said {expected} "
                                "atoms")
            out.extend(atoms)
        return out

    # -- transport ---------------------------------------------------------------------
    def _bad(self, method: str, path: str, what: str, status: int | None = None,
             code: str | None = None) -> HttpSystemError:
        return HttpSystemError(f"{method} {self.url}{path}: {what}", status=status, code=code)

    def _call(self, method: str, path: str, body: Any = None, *, check,
              read_timeout: float | None = None):
        """One protocol call: retried on transient failures (module docstring), its answer
        parsed strictly (no NaN, no key twice) and checked by ``check``."""
        data = None if body is None else dumps(body).encode("utf-8")
        timeout = read_timeout or self.read_timeout
        url_path = self._prefix + quote(path, safe="/?=&")
        attempts, t0, last = self.retries + 1, time.monotonic(), ""
        for attempt in range(attempts):
            if attempt:
                pause = min(self.backoff * 2 ** (attempt - 1), 30.0)
                self.retried += 1
                _progress.emit(f"{method} {self.url}{path}: {last}; trying again in "
                               f"{pause:g} s ({attempt}/{self.retries})")
                time.sleep(pause)
            try:
                return self._attempt(method, path, url_path, data, timeout, check)
            except _Transient as e:
                last = str(e)
        raise self._bad(method, path, f"{last} ({attempts} attempt{'s' if attempts > 1 else ''} "
                        f"in {time.monotonic() - t0:.1f} s); {_RESUME}")

    def _attempt(self, method, path, url_path, data, timeout, check):
        for fresh in (False, True):
            reused = self._conn.conn.sock is not None
            try:
                status, ctype, raw = self._conn.request(method, url_path, data, timeout)
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                self._conn.close()
                if reused and not fresh:
                    continue            # the kept-alive connection was closed: reopen once
                raise _Transient(f"connection lost ({type(e).__name__})") from None
            except ConnectionRefusedError:
                self._conn.close()
                raise _Transient("connection refused (is the server running?)") from None
            except (TimeoutError, socket.timeout):
                self._conn.close()
                raise _Transient(f"no answer within {timeout:g} s (timed out)") from None
            except _TooLong as e:
                raise self._bad(method, path, str(e)) from None
            except (http.client.HTTPException, OSError) as e:
                self._conn.close()
                raise _Transient(_one_line(f"{type(e).__name__}: {e}")) from None
        if status in _TRANSIENT_STATUS:
            raise _Transient(f"HTTP {status}")
        try:
            value = loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            start = _one_line(raw[:60].decode("utf-8", "replace"), 60)
            raise self._bad(method, path, f"the answer is not JSON (HTTP {status}, "
                            f"{ctype or 'no content type'}: {_one_line(str(e), 80)}; it starts "
                            f"{start!r})", status) from None
        if status >= 400:
            err = wire.error_of(value)
            if err is None:
                raise self._bad(method, path, f"HTTP {status} without an error object", status)
            raise self._bad(method, path, f"HTTP {status} {err[0]}: {_one_line(err[1], 300)}",
                            status, err[0])
        if not 200 <= status < 300:
            raise self._bad(method, path, f"unexpected HTTP {status}", status)
        try:
            return check(value)
        except wire.ShapeError as e:
            raise self._bad(method, path, f"the answer has the wrong shape: "
                            f"{_one_line(str(e), 200)}", status) from None
