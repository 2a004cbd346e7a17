"""``membench serve``: any Python memory system on the ``membench-http/1`` protocol (:mod:`.wire`).

``membench serve --system NAME [--config K=V] [--host 127.0.0.1] --port PORT [--corpus DIR]``
builds the system as ``membench run`` does (a built-in name, an entry point of the
``membench.systems`` group, or ``module:Class``). Start at :class:`SystemService` (the calls)
and :func:`make_server` (:class:`Server`: the standard library's
:class:`http.server.ThreadingHTTPServer`, HTTP/1.1 keep-alive, loopback unless ``--host``
says otherwise, which prints a warning: there is no authentication).

* ``/card``: the system's ``name``, ``config()`` and model card when it has one
  (:func:`membench.systems.cards.card_for`);
* an ingest's batches are kept until its commit, which starts ``ingest(items, corpus_root)``
  on a fresh instance in a background thread; the status says ``running``, then ``done`` or
  ``failed`` (with the error's line). One memory: a new ingest replaces the last (409 ``busy``
  while one runs);
* the commit's corpus root must be, or lie inside, the server's ``--corpus`` root (default
  ``$MEMBENCH_CORPUS`` or ``../shared/corpus``), else 403 ``corpus_root_refused``;
* queries are answered one at a time (a lock: systems need not be thread-safe), while
  ``/health`` and the status answer at once; a system that raises or answers ``None`` gives a
  500 and one log line, never a traceback.

Bounds (:mod:`membench.core.bounds`; docs/robustness.md, "Bounds"): ``serve_request_bytes``,
``serve_batches`` and ``serve_ingest_bytes`` (413), ``serve_idle_timeout``,
``serve_request_seconds`` (a whole request, the system's own work not counted) and
``serve_connections``. Touches: reads item files under the corpus root; writes nothing itself.
"""

from __future__ import annotations

import json
import math
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

from ..contract import wire
from ..contract.schema import SourceItem
from ..core.bounds import bound
from ..core.deadline import Watchdog
from ..core.errors import MembenchError
from ..core.jsonl import loads
from ..core.listening import is_loopback

_WHERE = "membench.serve.server"
#: the largest request body read (a batch of items with inline content stays far below)
MAX_REQUEST = bound(
    "serve_request_bytes",
    64 << 20,
    "bytes",
    "one request body `membench serve` reads",
    "413 `too_large`, the connection closed",
    _WHERE,
)
MAX_PAGE = bound(
    "serve_page_atoms",
    20000,
    "",
    "atoms in one page `membench serve` answers (`limit` is clipped to it)",
    "a shorter page",
    _WHERE,
)
MAX_BATCHES = bound(
    "serve_batches",
    1_000_000,
    "",
    "batches of one ingest on `membench serve` (a batch number, and the count a commit declares)",
    "413 `too_large`",
    _WHERE,
)
MAX_INGEST_BYTES = bound(
    "serve_ingest_bytes",
    4 << 30,
    "bytes",
    "the request bodies of all the batches of one ingest `membench serve` holds",
    "413 `too_large`",
    _WHERE,
)
IDLE_TIMEOUT = bound(
    "serve_idle_timeout",
    30.0,
    "s",
    "a connection to `membench serve` "
    "without a byte either way (between requests, within one, or an answer "
    "not read)",
    "the connection is closed",
    _WHERE,
)
REQUEST_SECONDS = bound(
    "serve_request_seconds",
    60.0,
    "s",
    "a whole request to `membench serve` (line, headers, body), from when the server waits for it",
    "the connection is closed, one line in the server's log",
    _WHERE,
)
MAX_CONNECTIONS = bound(
    "serve_connections",
    64,
    "",
    "connections `membench serve` holds at once",
    "a new connection is closed at once, one line in the log",
    _WHERE,
)


def _line(text: str, n: int = 2000) -> str:
    """``text`` on one line (a log line or an error message), at most ``n`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n] + "..."


class ApiError(Exception):
    """An error answer: HTTP status, protocol code, message."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class Ingest:
    ingest_id: str
    batches: dict[int, list[SourceItem]] = field(default_factory=dict)
    sizes: dict[int, int] = field(default_factory=dict)  # request bytes of each batch
    held: int = 0  # their sum
    state: str = "receiving"
    commit: tuple[str, int, int] | None = None
    atoms: list[dict] | None = None
    error: str | None = None
    system: Any = None

    def received(self) -> int:
        return sum(len(b) for b in self.batches.values())

    def status(self) -> dict:
        return {
            "ingest_id": self.ingest_id,
            "state": self.state,
            "items": self.received(),
            "atoms": None if self.atoms is None else len(self.atoms),
            "error": self.error,
        }


def _within(child: Path, roots: list[Path]) -> bool:
    return any(child == r or r in child.parents for r in roots)


class SystemService:
    """The protocol's state and answers for one system (no HTTP in here: :class:`Handler`
    turns requests into calls of :meth:`handle`)."""

    def __init__(
        self, factory: Callable[[], Any], corpus_roots: list[Path], log: IO[str] | None = None
    ):
        self.factory = factory
        self.log = log  # the server's own log (default: standard error)
        self.spare = factory()  # the first ingest's instance (and the card's source)
        if hasattr(self.spare, "bind"):
            raise MembenchError(
                f"system {self.spare.name}: it asks for the split's records "
                "(gold) with bind(); only membench run hands them to the "
                "registered test doubles, never over HTTP"
            )
        self.card = {
            "protocol": wire.PROTOCOL,
            "name": self.spare.name,
            "config": self.spare.config(),
        }
        from ..systems.cards import card_for

        model_card = card_for(self.spare)[0]
        if model_card is not None:  # the client records it (docs/cards.md)
            self.card["card"] = model_card.model_dump(mode="json")
        try:
            wire.check_card(json.loads(json.dumps(self.card, allow_nan=False, default=str)))
        except (wire.ShapeError, ValueError) as e:
            raise MembenchError(
                f"system {self.spare.name!r} cannot be served: its card: {e}"
            ) from None
        self.card = json.loads(json.dumps(self.card, default=str))
        self.corpus_roots = [Path(r).resolve() for r in corpus_roots]
        self.lock = threading.Lock()  # the ingest state
        self.query_lock = threading.Lock()  # one query at a time
        self.current: Ingest | None = None

    # -- dispatch ----------------------------------------------------------------------
    ROUTES = (
        ("GET", ("health",), "health"),
        ("GET", ("card",), "get_card"),
        ("PUT", ("ingests", None, "batches", None), "put_batch"),
        ("PUT", ("ingests", None), "commit"),
        ("GET", ("ingests", None), "status"),
        ("GET", ("ingests", None, "atoms"), "atoms"),
        ("POST", ("ingests", None, "query"), "query"),
    )

    def handle(self, method: str, target: str, body: Any, size: int = 0) -> tuple[int, dict]:
        """Answer one call: ``(status, JSON object)``; ``size`` is the request body's length
        in bytes (an ingest's batches are bounded in all)."""
        url = urlsplit(target)
        parts = tuple(p for p in url.path.split("/") if p)
        allowed = []
        for m, pattern, fn in self.ROUTES:
            if len(pattern) == len(parts) and all(
                p is None or p == q for p, q in zip(pattern, parts)
            ):
                if m == method:
                    args = [q for p, q in zip(pattern, parts) if p is None]
                    return getattr(self, fn)(*args, query=parse_qs(url.query), body=body, size=size)
                allowed.append(m)
        if allowed:
            raise ApiError(
                405, "method_not_allowed", f"{method} {url.path}: use {' or '.join(allowed)}"
            )
        raise ApiError(404, "not_found", f"no such path: {url.path}")

    # -- the calls ---------------------------------------------------------------------
    def health(self, *, query, body, size=0):
        return 200, {"protocol": wire.PROTOCOL, "status": "ok"}

    def get_card(self, *, query, body, size=0):
        return 200, self.card

    def _id(self, iid: str) -> str:
        if not wire.INGEST_ID_RE.fullmatch(iid):
            raise ApiError(400, "bad_request", f"ingest id {iid[:80]!r}: 1 to 64 of [A-Za-z0-9_-]")
        return iid

    def _known(self, iid: str) -> Ingest:
        cur = self.current
        if cur is None or cur.ingest_id != self._id(iid):
            raise ApiError(
                404,
                "unknown_ingest",
                f"this server holds no ingest {iid}"
                + (f" (it holds {cur.ingest_id})" if cur else ""),
            )
        return cur

    def put_batch(self, iid: str, seq: str, *, query, body, size=0):
        self._id(iid)
        if not seq.isdigit() or len(seq) > 9:
            raise ApiError(400, "bad_request", f"batch number {seq[:20]!r}: an integer >= 0")
        if int(seq) >= MAX_BATCHES:
            raise ApiError(
                413,
                "too_large",
                f"batch number {seq}: at most {MAX_BATCHES:,} "
                "batches per ingest (serve_batches); send larger batches",
            )
        items = self._parse(wire.parse_items, body)
        with self.lock:
            cur = self.current
            if cur is None or cur.ingest_id != iid:
                if cur is not None and cur.state == "running":
                    raise ApiError(
                        409, "busy", f"ingest {cur.ingest_id} is running; one memory at a time"
                    )
                cur = self.current = Ingest(iid)
            elif cur.state == "failed":
                cur = self.current = Ingest(iid)
            elif cur.state != "receiving":
                raise ApiError(
                    409,
                    "already_committed",
                    f"ingest {iid} is {cur.state}; its batches cannot change",
                )
            held = cur.held - cur.sizes.get(int(seq), 0)  # a batch sent again replaces
            if held + size > MAX_INGEST_BYTES:
                raise ApiError(
                    413,
                    "too_large",
                    f"ingest {iid}: its batches would hold "
                    f"{held + size:,} bytes; at most {MAX_INGEST_BYTES:,} "
                    "(serve_ingest_bytes)",
                )
            cur.batches[int(seq)] = items
            cur.sizes[int(seq)] = size
            cur.held = held + size
        return 200, {"ingest_id": iid, "seq": int(seq), "received": len(items)}

    def commit(self, iid: str, *, query, body, size=0):
        self._id(iid)
        root_text, n_batches, n_items = self._parse(wire.parse_commit, body)
        if n_batches > MAX_BATCHES:
            raise ApiError(
                413,
                "too_large",
                f"a commit of {n_batches:,} batches: at most "
                f"{MAX_BATCHES:,} per ingest (serve_batches)",
            )
        root = Path(root_text)
        if not root.is_absolute():
            raise ApiError(400, "bad_request", f"corpus_root {root_text[:200]!r}: an absolute path")
        root = root.resolve()
        if not _within(root, self.corpus_roots):
            raise ApiError(
                403,
                "corpus_root_refused",
                f"corpus_root {root}: this server reads "
                f"only under {', '.join(map(str, self.corpus_roots))} (membench "
                "serve --corpus DIR)",
            )
        if not root.is_dir():
            raise ApiError(400, "bad_request", f"corpus_root {root}: not a folder here")
        with self.lock:
            cur = self.current
            if (cur is None or cur.ingest_id != iid) and n_batches == 0:
                if cur is not None and cur.state == "running":
                    raise ApiError(409, "busy", f"ingest {cur.ingest_id} is running")
                cur = self.current = Ingest(iid)
            cur = self._known(iid)
            if cur.state != "receiving":
                if cur.commit != (str(root), n_batches, n_items):
                    raise ApiError(409, "conflict", f"ingest {iid} was committed with other values")
                return 200, cur.status()
            missing = next((i for i in range(n_batches) if i not in cur.batches), None)
            extra = sorted(s for s in cur.batches if s >= n_batches)
            if missing is not None or extra:
                what = (
                    f"batch {missing} was never sent"
                    if missing is not None
                    else f"batch {extra[0]} is beyond the {n_batches} committed"
                )
                raise ApiError(409, "incomplete_upload", f"ingest {iid}: {what}")
            if cur.received() != n_items:
                raise ApiError(
                    409,
                    "incomplete_upload",
                    f"ingest {iid}: {cur.received()} items received, the commit says {n_items}",
                )
            cur.commit = (str(root), n_batches, n_items)
            cur.state = "running"
            system, self.spare = self.spare or self.factory(), None
            cur.system = system
            items = [it for s in sorted(cur.batches) for it in cur.batches[s]]
        threading.Thread(
            target=self._ingest, args=(cur, system, items, root), name=f"ingest:{iid}", daemon=True
        ).start()
        return 202, cur.status()

    def _ingest(self, cur: Ingest, system, items: list[SourceItem], root: Path) -> None:
        try:
            atoms = system.ingest(items, root)
            if atoms is None:
                raise TypeError("the system's ingest returned None, not a list of atoms")
            rows = [a.row() for a in atoms]
            json.dumps(rows, allow_nan=False)
        except Exception as e:  # the system's failure is reported, the server goes on
            why = _line(f"{type(e).__name__}: {e}")
            self.say(f"ingest {cur.ingest_id} failed: {why}")
            with self.lock:
                cur.state, cur.error = "failed", why
            return
        with self.lock:
            cur.atoms, cur.state = rows, "done"

    def status(self, iid: str, *, query, body, size=0):
        with self.lock:
            return 200, self._known(iid).status()

    def atoms(self, iid: str, *, query, body, size=0):
        cur = self._known(iid)
        if cur.state != "done":
            raise ApiError(409, "not_ready", f"ingest {iid} is {cur.state}")

        def one(name: str, default: int) -> int:
            v = query.get(name, [str(default)])[-1]
            if not v.isdigit() or len(v) > 12:
                raise ApiError(400, "bad_request", f"{name}={v[:20]!r}: an integer >= 0")
            return int(v)

        offset, limit = one("offset", 0), min(max(one("limit", 1000), 1), MAX_PAGE)
        rows = cur.atoms[offset : offset + limit]
        end = offset + len(rows)
        return 200, {
            "atoms": rows,
            "offset": offset,
            "total": len(cur.atoms),
            "next_offset": end if end < len(cur.atoms) else None,
        }

    def query(self, iid: str, *, query, body, size=0):
        cur = self._known(iid)
        if cur.state != "done":
            raise ApiError(409, "not_ready", f"ingest {iid} is {cur.state}")
        question, scope, as_of = self._parse(wire.parse_query, body)
        with self.query_lock:
            try:
                res = cur.system.query(question, scope, as_of)
                if res is None:
                    raise TypeError("the system's query returned None, not a Result")
                hits = [[a, float(s)] for a, s in res.hits]
                cart = list(res.cartridge)
                conf = getattr(res, "confidence", None)
                if conf is not None:
                    conf = float(conf)
                    if not math.isfinite(conf):
                        raise ValueError(f"confidence must be a finite number, got {conf!r}")
            except Exception as e:  # one line in the log (Handler._serve), a 500 to the client
                raise ApiError(500, "system_error", _line(f"{type(e).__name__}: {e}")) from None
        return 200, {
            "hits": hits,
            "cartridge": cart,
            **({} if conf is None else {"confidence": conf}),
        }

    def say(self, line: str) -> None:
        """One line in the server's log (standard error unless ``log`` was given)."""
        out = self.log or sys.stderr
        out.write(f"membench serve: {_line(line)}\n")
        out.flush()

    @staticmethod
    def _parse(fn, body):
        if body is None:
            raise ApiError(400, "bad_request", "this call needs a JSON body")
        try:
            return fn(body)
        except wire.ShapeError as e:
            raise ApiError(400, "bad_request", str(e)[:2000]) from None


class _Cut(Exception):
    """The request did not arrive in full (its deadline passed, or the client went away):
    the connection is closed without an answer."""


class Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive; every answer is JSON with a Content-Length. Each connection
    has an idle timeout (the socket's, for every read and write) and each request a deadline
    for arriving in full (a :class:`Watchdog`): see the module docstring."""

    protocol_version = "HTTP/1.1"
    server_version = "membench-serve"
    # headers and body are two writes: without TCP_NODELAY, Nagle's algorithm and the
    # client's delayed ACK hold the body back about 40 ms per answer
    disable_nagle_algorithm = True
    timeout = IDLE_TIMEOUT  # socketserver applies it to the connection (every recv/send)
    request_seconds = REQUEST_SECONDS
    service: SystemService  # set on the subclass :func:`make_server` builds

    def log_message(self, format: str, *args) -> None:  # quiet: one line per error only
        pass

    def setup(self) -> None:
        super().setup()
        self._dog = Watchdog("membench-serve-request")
        self._size = 0

    def finish(self) -> None:
        self._dog.close()
        try:
            super().finish()
        except OSError:  # the client went away (or the deadline shut the socket)
            pass

    def handle_one_request(self) -> None:
        self._dog.arm(self.connection, time.monotonic() + self.request_seconds)
        try:
            super().handle_one_request()
        except OSError:  # reset, or shut down by the deadline: nothing to answer
            self.close_connection = True
        finally:
            if self._dog.disarm():
                self.close_connection = True
                self.service.say(
                    f"closed the connection from {self.client_address[0]}: a "
                    f"request did not arrive in full within "
                    f"{self.request_seconds:g} s (serve_request_seconds)"
                )

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if self.request_version == "HTTP/0.9":  # a bare "GET /": no headers, no length
            self.send_error(400, "HTTP/0.9 requests are refused: send HTTP/1.1")
            return False
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None):
        """http.server's own refusals (a malformed request line, headers past its limits, an
        unknown method) as the protocol's error object, and the connection closed."""
        self.close_connection = True
        if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":
            self.request_version = "HTTP/1.0"  # a status line, not a bare body (0.9)
        why = message or explain or HTTPStatus(code).phrase
        try:
            self._answer(
                code,
                {
                    "error": {
                        "code": "bad_request" if code < 500 else "not_implemented",
                        "message": _line(why, 300),
                    }
                },
            )
        except OSError:
            pass

    def _body(self) -> Any:
        self._size = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raise ApiError(411, "length_required", "send the body with a Content-Length")
        n = self.headers.get("Content-Length")
        if n is None or n == "0":
            return None
        if not n.isdigit():
            raise ApiError(400, "bad_request", "Content-Length is not a number")
        if int(n) > MAX_REQUEST:
            raise ApiError(
                413,
                "too_large",
                f"a body of {n} bytes; at most {MAX_REQUEST} (serve_request_bytes)",
            )
        raw = self.rfile.read(int(n))
        if len(raw) < int(n):
            raise _Cut
        self._size = len(raw)
        try:
            return loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise ApiError(400, "bad_json", f"the body is not JSON: {e}"[:300]) from None

    def _answer(self, status: int, obj: dict) -> None:
        try:
            data = json.dumps(
                obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")
            ).encode("utf-8")
        except (TypeError, ValueError) as e:  # a system answered something JSON cannot hold
            status = 500
            data = json.dumps(
                {
                    "error": {
                        "code": "system_error",
                        "message": f"the answer cannot be JSON: {e}"[:300],
                    }
                }
            ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _serve(self, method: str) -> None:
        try:
            try:
                body = self._body()
            finally:
                if self._dog.disarm():  # the request came too slowly: no answer
                    raise _Cut
            status, obj = self.service.handle(method, self.path, body, self._size)
        except _Cut:
            self.close_connection = True
            return
        except ApiError as e:
            if e.status >= 500:
                self.service.say(f"{method} {self.path[:200]}: {e.message}")
            if e.status in (411, 413):
                self.close_connection = True  # the unread body would be taken for a request
            status, obj = e.status, {"error": {"code": e.code, "message": e.message}}
        self._answer(status, obj)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")


class Server(ThreadingHTTPServer):
    daemon_threads = True  # a hanging system does not keep the process alive
    max_connections = MAX_CONNECTIONS

    def __init__(self, *args, **kw):
        self._open = 0
        self._open_lock = threading.Lock()
        super().__init__(*args, **kw)

    def process_request(self, request, client_address) -> None:
        with self._open_lock:
            full = self._open >= self.max_connections
            if not full:
                self._open += 1
        if full:
            self._say(
                f"refused a connection from {client_address[0]}: "
                f"{self.max_connections} are open (serve_connections)"
            )
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._open_lock:
                self._open -= 1

    def _say(self, line: str) -> None:
        service = getattr(self.RequestHandlerClass, "service", None)
        if service is not None:
            service.say(line)
        else:
            sys.stderr.write(f"membench serve: {_line(line)}\n")

    def handle_error(self, request, client_address) -> None:
        e = sys.exc_info()[1]
        if isinstance(e, (ConnectionError, TimeoutError)):
            return  # the client went away (it timed out, or stopped): its loss
        self._say(f"a request from {client_address[0]} failed: {type(e).__name__}: {e}")


class Server6(Server):
    address_family = socket.AF_INET6


def make_server(
    service: SystemService, host: str = "127.0.0.1", port: int = 0, handler: type[Handler] = Handler
) -> Server:
    """A server bound to ``host:port`` (``port`` 0: a free one; ``server.server_address``
    says which), not yet serving: call ``serve_forever()`` (``shutdown()`` from another
    thread stops it)."""
    cls = type("BoundHandler", (handler,), {"service": service})
    try:
        return (Server6 if ":" in host else Server)((host, port), cls)
    except OSError as e:
        raise MembenchError(
            f"membench serve: cannot listen on {host}:{port}: {e.strerror or e}"
        ) from None


def serve(
    name: str,
    config: dict,
    host: str,
    port: int,
    corpus_root: Path,
    announce: Callable[[str], None] = print,
    *,
    exit_on_stop: bool = False,
) -> None:
    """``membench serve``: build the system ``name`` with ``config``, listen on
    ``host:port`` and answer until interrupted (Ctrl-C, SIGTERM), then re-raise the interrupt.
    ``exit_on_stop`` (the command's own process): end the process there with status 130 by
    ``os._exit``, once the socket is closed and the output flushed, instead of unwinding the
    interpreter while a request thread may sit in native code (OCR, embedding): its runtime's
    threads would be torn down under it (``terminate called without an active exception``,
    SIGABRT or SIGSEGV)."""
    from ..systems import make_system

    service = SystemService(lambda: make_system(name, config), [corpus_root])
    if not is_loopback(host):
        sys.stderr.write(
            f"membench serve: WARNING: listening on {host}, not a loopback "
            "address: anyone who reaches it can query the memory and have the "
            f"server read files under {corpus_root}; there is no "
            "authentication\n"
        )
    srv = make_server(service, host, port)
    h, p = srv.server_address[:2]
    shown = f"[{h}]" if ":" in str(h) else h
    announce(
        f"membench serve: {service.card['name']} on http://{shown}:{p} ({wire.PROTOCOL}; "
        f"corpus {corpus_root}); Ctrl-C stops"
    )
    sys.stdout.flush()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        announce("membench serve: stopped")
        srv.server_close()
        if exit_on_stop:
            from ..core.stop import hard_exit

            hard_exit()
        raise
    finally:
        srv.server_close()
