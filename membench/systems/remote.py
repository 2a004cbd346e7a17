"""``membench run --system http://HOST:PORT``: a memory system behind the ``membench-http/1``
protocol (:mod:`membench.contract.wire`), run like any in-process system.

:class:`HttpSystem` is a :class:`membench.contract.protocol.MemorySystem`: constructing it asks the
server's ``/health`` and ``/card`` (its ``name`` and ``config`` are the card's, so meta.json
records the remote system's own config); ``ingest`` uploads the items in batches, commits,
polls the status and pages the atoms in; ``query`` is one ``POST``, timed by the runner at the
client, round trip and retries included.

Transport: :mod:`http.client` on one kept-alive connection. Every wait is bounded by a per-read
timeout and by a deadline over the whole call (a :class:`membench.core.deadline.Watchdog` shuts
the socket down when it passes), a whole ingest by ``ingest_timeout``. The ``--config`` keys
(``connect_timeout``, ``read_timeout``, ``deadline``, ``ingest_timeout``, ``retries``,
``backoff``, ``retry_budget``, ``batch_items``, ``page_atoms``, ``corpus_root``) change no
answer, so none is recorded in meta.json; their defaults are bounds of :mod:`membench.core.bounds`.
A transient failure (connection refused or reset, a read timeout, HTTP 429, 502, 503, 504) is
retried with doubling backoff while the call's deadline and the run's retry budget allow.
Anything else the server does wrong (not JSON, a wrong shape, an error status, a state that
never comes, pages past the declared total, an answer over ``http_answer_bytes``) is one
:class:`HttpSystemError` line naming the call, the URL and what went wrong, never retried.

Touches: the server's address only; writes nothing (the runner writes what it got, so a re-run
resumes). Start at :class:`HttpSystem`. Each key and the behaviour under faults:
docs/your-system.md, "2. Over HTTP, in any language"; the design: docs/systems.md, "Decisions".
"""

from __future__ import annotations

import http.client
import socket
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from ..contract import wire
from ..contract.protocol import Atom, Result
from ..contract.schema import Scope, SourceItem
from ..core import progress as _progress
from ..core.bounds import bound
from ..core.deadline import Watchdog
from ..core.errors import MembenchError
from ..core.jsonl import dumps, loads

_WHERE = "membench.systems.remote"
#: the longest answer body the client reads (an atoms page of long texts stays far below)
MAX_BODY = bound(
    "http_answer_bytes",
    256 << 20,
    "bytes",
    "one answer the HTTP client reads",
    "the call fails, one line (not retried)",
    _WHERE,
)
CONNECT_TIMEOUT = bound(
    "http_connect_timeout",
    5.0,
    "s",
    "opening a connection to a system's server (`--config connect_timeout=`)",
    "the attempt fails as transient (tried again)",
    _WHERE,
)
READ_TIMEOUT = bound(
    "http_read_timeout",
    60.0,
    "s",
    "each read of an answer: the server silent (`--config read_timeout=`)",
    "the attempt fails as transient (tried again)",
    _WHERE,
)
CALL_DEADLINE = bound(
    "http_call_deadline",
    120.0,
    "s",
    "one call over HTTP, connect + send + "
    "receive, every attempt and pause included (`--config deadline=`)",
    "the call fails, one line naming it (and the query); not retried",
    _WHERE,
)
INGEST_DEADLINE = bound(
    "http_ingest_deadline",
    21600.0,
    "s",
    "a whole ingest over HTTP: "
    "upload, commit, the server's ingest, atom pages (`--config "
    "ingest_timeout=`)",
    "the run stops, one line; re-running resumes",
    _WHERE,
)
RETRIES = bound(
    "http_retries",
    3,
    "",
    "attempts after the first of one call that failed transiently (`--config retries=`)",
    "the call fails, one line",
    _WHERE,
)
RETRY_BUDGET = bound(
    "http_retry_budget",
    100,
    "",
    "retries one run may spend over all its calls (`--config retry_budget=`)",
    "the next transient failure stops the run, one line",
    _WHERE,
)
MAX_ATOMS = bound(
    "http_atoms",
    10_000_000,
    "",
    "atoms one ingest over HTTP may declare (the pages must add up to the declared total)",
    "the ingest fails, one line naming the call",
    _WHERE,
)
_TRANSIENT_STATUS = {429, 502, 503, 504}
_RESUME = "re-run the same `membench run` to resume once the server answers"


class HttpSystemError(MembenchError):
    """The server failed a call: one line naming the call and what went wrong. ``code`` is
    the protocol's error code when the server sent one (``unknown_ingest``, ...)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        call: str | None = None,
        what: str | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.call, self.what = call, what

    def for_query(self, query_id: str) -> HttpSystemError:
        """The same error, naming the query it was asked for (the runner calls this)."""
        if self.call is None or self.what is None:
            return HttpSystemError(f"query {query_id}: {self}", status=self.status, code=self.code)
        return HttpSystemError(
            f"{self.call} (query {query_id}): {self.what}", status=self.status, code=self.code
        )


class _Transient(Exception):
    """One attempt failed in a way another attempt may not."""


class _TooLong(Exception):
    """An answer longer than :data:`MAX_BODY` (not retried)."""


class _DeadlinePassed(Exception):
    """The call's deadline passed during an attempt (not retried)."""


def _one_line(text: str, n: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n] + "..."


class _Connection:
    """One kept-alive HTTP(S) connection: ``connect_timeout`` to open it, then each read of an
    answer waits at most the call's read timeout, and the whole exchange ends by the call's
    deadline (a :class:`Watchdog` shuts the socket down when it passes)."""

    def __init__(self, scheme: str, host: str, port: int, connect_timeout: float):
        cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        self.conn = cls(host, port, timeout=connect_timeout)
        self.connect_timeout = connect_timeout
        self.dog = Watchdog("membench-http-deadline")

    def request(
        self, method: str, path: str, body: bytes | None, read_timeout: float, deadline: float
    ) -> tuple[int, str, bytes]:
        c = self.conn
        left = deadline - time.monotonic()
        if left <= 0:
            raise _DeadlinePassed
        if c.sock is None:
            c.timeout = min(self.connect_timeout, left)
            c.connect()  # bounded by the connect timeout and the deadline
            c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.sock.settimeout(max(0.001, min(read_timeout, deadline - time.monotonic())))
        self.dog.arm(c.sock, deadline)
        try:
            out = self._exchange(method, path, body)
        except BaseException:
            if self.dog.disarm():
                self.close()
                raise _DeadlinePassed from None
            raise
        if self.dog.disarm():  # shut down just as the answer ended: not a whole answer
            self.close()
            raise _DeadlinePassed
        return out

    def _exchange(self, method: str, path: str, body: bytes | None) -> tuple[int, str, bytes]:
        c = self.conn
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
                raise _TooLong(
                    f"the answer is longer than {MAX_BODY >> 20} MiB (http_answer_bytes)"
                )
            chunks.append(b)
        if resp.length:  # read(amt) returns short at EOF without a word
            self.close()
            raise http.client.IncompleteRead(b"".join(chunks), resp.length)
        if resp.will_close:
            self.close()
        return resp.status, resp.getheader("Content-Type") or "", b"".join(chunks)

    def close(self) -> None:
        self.conn.close()


def _non_finite(raw: bytes) -> str | None:
    """Where a NaN or infinity sits in an answer strict JSON refused (:func:`wire.non_finite`),
    read again by the standard library's lenient parser; ``None`` when that is not why."""
    import json

    try:
        return wire.non_finite(json.loads(raw.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _positive(name: str, v: Any, *, integer: bool = False, zero: bool = False) -> float | int:
    ok = not isinstance(v, bool) and isinstance(v, int if integer else (int, float))
    if not ok or not (v >= 0 if zero else v > 0) or v != v or v == float("inf"):
        what = "an integer" if integer else "a number"
        raise MembenchError(f"--config {name}={v!r}: expected {what} {'>= 0' if zero else '> 0'}")
    return v


def _addresses(host: str, port: int) -> tuple[str, ...]:
    """The addresses ``host`` resolves to (none when it does not resolve: the first call then
    names the failure)."""
    try:
        return tuple(sorted({ai[4][0] for ai in socket.getaddrinfo(host, port)}))
    except OSError:
        return ()


class HttpSystem:
    """A system served at ``url`` over ``membench-http/1`` (module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
        deadline: float = CALL_DEADLINE,
        ingest_timeout: float = INGEST_DEADLINE,
        retries: int = RETRIES,
        backoff: float = 0.5,
        retry_budget: int = RETRY_BUDGET,
        batch_items: int = 256,
        page_atoms: int = 5000,
        corpus_root: str | None = None,
    ):
        u = urlsplit(url)
        if (
            u.scheme not in ("http", "https")
            or not u.hostname
            or u.query
            or u.fragment
            or u.username
            or u.password
        ):
            raise MembenchError(
                f"--system {url!r}: expected http://HOST:PORT (or https://, "
                "with an optional path prefix; no user, query or fragment)"
            )
        try:
            port = u.port or (443 if u.scheme == "https" else 80)
        except ValueError as e:
            raise MembenchError(f"--system {url!r}: {e}") from None
        self.url = f"{u.scheme}://{u.netloc}{u.path.rstrip('/')}"
        self._prefix = u.path.rstrip("/")
        self.connect_timeout = _positive("connect_timeout", connect_timeout)
        self.read_timeout = _positive("read_timeout", read_timeout)
        self.deadline = _positive("deadline", deadline)
        self.ingest_timeout = _positive("ingest_timeout", ingest_timeout)
        self.retries = _positive("retries", retries, integer=True, zero=True)
        self.backoff = _positive("backoff", backoff, zero=True)
        self.retry_budget = _positive("retry_budget", retry_budget, integer=True, zero=True)
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
        self.retried = 0  # attempts that failed transiently and were tried again
        self._call("GET", "/health", check=wire.check_health)
        self.card = self._call("GET", "/card", check=wire.check_card)
        self.name: str = self.card["name"]
        self.model_card = self._model_card()

    def _model_card(self):
        """The model card the service declares in its ``/card`` answer (``None`` without one):
        a valid :class:`membench.systems.cards.Card`, else one :class:`HttpSystemError` line."""
        from pydantic import ValidationError

        from .card import Card

        raw = self.card.get("card")
        if raw is None:
            return None
        try:
            return Card.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise self._bad(
                "GET",
                "/card",
                f"its card is not a model card: card.{where}: {_one_line(err['msg'], 120)}",
            ) from None

    # -- the protocol ------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """What determines the answers: the remote system's own config (from its card)."""
        return {"protocol": wire.PROTOCOL, "remote_config": self.card["config"]}

    def ingest(self, items: list[SourceItem], corpus_root: Path) -> list[Atom]:
        end = (
            time.monotonic() + self.ingest_timeout,
            f"the ingest's deadline (ingest_timeout={self.ingest_timeout:g} s)",
        )
        root = self.corpus_root or str(Path(corpus_root).resolve())
        rows = [wire.item_row(it) for it in items]
        iid = wire.ingest_id(root, rows)
        base = f"/ingests/{iid}"
        status = self._status(iid, end, missing_ok=True)
        if status is None or status["state"] in ("receiving", "failed"):
            batches = [
                rows[i : i + self.batch_items] for i in range(0, len(rows), self.batch_items)
            ]
            with _progress.step(f"upload ({self.url})", total=len(rows), unit="item") as bar:
                for seq, batch in enumerate(batches):
                    self._call(
                        "PUT",
                        f"{base}/batches/{seq}",
                        {"items": batch},
                        check=lambda v, s=seq, n=len(batch): (  # noqa: B008 (binds this batch)
                            wire.check_batch_answer(v, iid, s, n)
                        ),
                        deadline=end,
                    )
                    bar.advance(len(batch))
            # a server may ingest before it answers the commit: its wait is the ingest's
            status = self._call(
                "PUT",
                base,
                {"corpus_root": root, "batches": len(batches), "items": len(rows)},
                check=lambda v: wire.check_status(v, iid),
                read_timeout=self.ingest_timeout,
                deadline=end,
                whole=True,
            )
        status = self._wait(iid, status, end)
        if status["items"] != len(rows):
            raise self._bad(
                "GET", base, f"the server ingested {status['items']} items, {len(rows)} were sent"
            )
        if status["atoms"] > MAX_ATOMS:
            raise self._bad(
                "GET",
                base,
                f"the server declares {status['atoms']:,} atoms; at "
                f"most {MAX_ATOMS:,} are read (bound http_atoms)",
            )
        atoms = self._atoms(iid, status["atoms"], end)
        self._ingest = iid
        return atoms

    def query(self, question: str, scope: Scope, as_of: datetime) -> Result:
        if self._ingest is None:
            raise MembenchError(f"{self.url}: query before ingest")
        path = f"/ingests/{self._ingest}/query"
        try:
            return self._call(
                "POST", path, wire.query_body(question, scope, as_of), check=wire.check_query_answer
            )
        except HttpSystemError as e:
            if e.code == "unknown_ingest":
                raise self._bad(
                    "POST",
                    path,
                    "the server no longer holds this run's memory "
                    f"(restarted?); {_RESUME} (it ingests again)",
                    e.status,
                    e.code,
                ) from None
            raise

    # -- ingest ------------------------------------------------------------------------
    def _status(self, iid: str, end: tuple[float, str], missing_ok: bool = False) -> dict | None:
        try:
            return self._call(
                "GET", f"/ingests/{iid}", check=lambda v: wire.check_status(v, iid), deadline=end
            )
        except HttpSystemError as e:
            if missing_ok and e.code == "unknown_ingest":
                return None
            raise

    def _wait(self, iid: str, status: dict, end: tuple[float, str]) -> dict:
        """Poll the status until ``done`` (``failed``: the server's reason, as an error)."""
        pause = 0.05
        with _progress.step(f"ingest on the server ({self.url})", total=None) as bar:
            while status["state"] != "done":
                if status["state"] == "failed":
                    raise HttpSystemError(
                        f"PUT {self.url}/ingests/{iid}: the system's ingest "
                        "failed on the server: "
                        f"{_one_line(status.get('error') or '?', 300)}"
                    )
                if status["state"] == "receiving":
                    raise self._bad(
                        "PUT",
                        f"/ingests/{iid}",
                        "the server still says 'receiving' after the commit",
                    )
                if time.monotonic() + pause >= end[0]:
                    raise HttpSystemError(
                        f"GET {self.url}/ingests/{iid}: the ingest was still "
                        f"running after ingest_timeout={self.ingest_timeout:g} "
                        f"s; {_RESUME}"
                    )
                bar.note(f"{status['items']} items, running")
                time.sleep(pause)
                pause = min(pause * 1.5, 2.0)
                status = self._status(iid, end)
            bar.advance(status["items"])  # what the server took, not what this call did
            bar.count("atoms", status["atoms"])
        return status

    def _atoms(self, iid: str, expected: int, end: tuple[float, str]) -> list[Atom]:
        """Every atom, page by page: each page must continue the last and stay within the
        declared total, so the pages end (at most ``expected`` of them)."""
        out: list[Atom] = []
        offset: int | None = 0
        while offset is not None:
            path = f"/ingests/{iid}/atoms?offset={offset}&limit={self.page_atoms}"
            atoms, total, offset = self._call(
                "GET", path, check=lambda v, o=offset: wire.check_atoms_page(v, o), deadline=end
            )
            if total != expected:
                raise self._bad("GET", path, f"total {total}, but the status said {expected} atoms")
            out.extend(atoms)
        return out

    # -- transport ---------------------------------------------------------------------
    def _bad(
        self, method: str, path: str, what: str, status: int | None = None, code: str | None = None
    ) -> HttpSystemError:
        call = f"{method} {self.url}{path}"
        return HttpSystemError(f"{call}: {what}", status=status, code=code, call=call, what=what)

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        check,
        read_timeout: float | None = None,
        deadline: tuple[float, str] | None = None,
        whole: bool = False,
    ):
        """One protocol call: retried on transient failures (module docstring), its answer
        parsed strictly (no NaN, no key twice) and checked by ``check``. It ends by its
        deadline: ``deadline`` (monotonic seconds, and what it is) when that comes first or
        ``whole``, else the call's own (``self.deadline`` from now)."""
        data = None if body is None else dumps(body).encode("utf-8")
        timeout = read_timeout or self.read_timeout
        url_path = self._prefix + quote(path, safe="/?=&")
        t0 = time.monotonic()
        end, end_name = t0 + self.deadline, f"the call's deadline ({self.deadline:g} s)"
        if deadline is not None and (whole or deadline[0] < end):
            end, end_name = deadline
        last, n = "", 0
        for attempt in range(self.retries + 1):
            if attempt:
                pause = min(self.backoff * 2 ** (attempt - 1), 30.0)
                if time.monotonic() + pause >= end:
                    raise self._bad(
                        method,
                        path,
                        f"{last} ({n} attempt{'s' if n > 1 else ''} "
                        f"in {time.monotonic() - t0:.1f} s; {end_name} leaves no "
                        f"time for another); {_RESUME}",
                    )
                if self.retry_budget - self.retried <= 0:
                    raise self._bad(
                        method,
                        path,
                        f"{last} ({n} attempt{'s' if n > 1 else ''}; "
                        f"the run's retry budget of {self.retry_budget} retries is "
                        f"spent); {_RESUME}",
                    )
                self.retried += 1
                _progress.emit(
                    f"{method} {self.url}{path}: {last}; trying again in "
                    f"{pause:g} s ({attempt}/{self.retries})"
                )
                time.sleep(pause)
            n += 1
            try:
                return self._attempt(method, path, url_path, data, timeout, end, check)
            except _Transient as e:
                last = str(e)
            except _DeadlinePassed:
                raise self._bad(
                    method,
                    path,
                    f"no complete answer by {end_name}: "
                    f"{time.monotonic() - t0:.1f} s, {n} attempt"
                    f"{'s' if n > 1 else ''} (a server that sends too slowly or "
                    f"not at all); {_RESUME}",
                ) from None
        raise self._bad(
            method,
            path,
            f"{last} ({n} attempt{'s' if n > 1 else ''} "
            f"in {time.monotonic() - t0:.1f} s); {_RESUME}",
        )

    def _attempt(self, method, path, url_path, data, timeout, end, check):
        for fresh in (False, True):
            reused = self._conn.conn.sock is not None
            try:
                status, ctype, raw = self._conn.request(method, url_path, data, timeout, end)
                break
            except _DeadlinePassed:
                raise
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                self._conn.close()
                if reused and not fresh:
                    continue  # the kept-alive connection was closed: reopen once
                raise _Transient(f"connection lost ({type(e).__name__})") from None
            except ConnectionRefusedError:
                self._conn.close()
                raise _Transient("connection refused (is the server running?)") from None
            except TimeoutError:
                self._conn.close()
                if time.monotonic() >= end - 0.01:
                    raise _DeadlinePassed from None
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
            bad = _non_finite(raw)
            if bad:
                raise self._bad(
                    method,
                    path,
                    f"the answer has a number JSON does not allow at "
                    f"{bad} (a score must be a finite number)",
                    status,
                ) from None
            start = _one_line(raw[:60].decode("utf-8", "replace"), 60)
            raise self._bad(
                method,
                path,
                f"the answer is not JSON (HTTP {status}, "
                f"{ctype or 'no content type'}: {_one_line(str(e), 80)}; it starts "
                f"{start!r})",
                status,
            ) from None
        if status >= 400:
            err = wire.error_of(value)
            if err is None:
                raise self._bad(method, path, f"HTTP {status} without an error object", status)
            raise self._bad(
                method, path, f"HTTP {status} {err[0]}: {_one_line(err[1], 300)}", status, err[0]
            )
        if not 200 <= status < 300:
            raise self._bad(method, path, f"unexpected HTTP {status}", status)
        try:
            return check(value)
        except wire.ShapeError as e:
            raise self._bad(
                method, path, f"the answer has the wrong shape: {_one_line(str(e), 200)}", status
            ) from None
