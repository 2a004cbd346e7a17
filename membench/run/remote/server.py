"""``membench serve``: any Python memory system on the ``membench-http/1`` protocol (:mod:`.wire`).

``membench serve --system NAME [--config K=V] [--host 127.0.0.1] --port PORT [--corpus DIR]``
builds the system the way ``membench run`` does (a built-in name, an entry point of the
``membench.systems`` group, or ``module:Class``) and answers the protocol's calls:

* ``/card`` is the system's ``name`` and ``config()``;
* the batches of an ingest are kept until its commit; the commit starts the system's
  ``ingest(items, corpus_root)`` in a background thread (a fresh instance of the system for
  each new ingest: a run's memory is the one instance of an in-process run), and the status
  says ``running`` until it is ``done`` or ``failed`` (with the error's line);
* the corpus root is the one the client names in the commit (the server reads the item files
  there, as an in-process system does), and it must be, or lie inside, the server's own
  ``--corpus`` root (default: the usual ``$MEMBENCH_CORPUS`` or ``../shared/corpus``);
  another one is refused (403 ``corpus_root_refused``), so a client cannot make the server
  read files elsewhere;
* queries are answered one at a time (a lock: the systems are not asked to be thread-safe),
  while ``/health`` and the status answer at once;
* the server holds one memory: a new ingest replaces the last one (refused with 409 ``busy``
  while one is running).

Server: the standard library's :class:`http.server.ThreadingHTTPServer` with HTTP/1.1
keep-alive (no dependency; it serves one benchmark client, on the loopback address unless
``--host`` says otherwise). It has no authentication and reads files under the corpus root a
client names: ``--host`` with an address other than a loopback one prints a warning.
"""

from __future__ import annotations

import ipaddress
import json
import math
import socket
import sys
import threading
import traceback
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, Callable
from urllib.parse import parse_qs, urlsplit

from ...core.errors import MembenchError
from ...core.jsonl import loads
from ...sets.schema import SourceItem
from . import wire

#: the largest request body read (a batch of items with inline content stays far below)
MAX_REQUEST = 64 << 20
MAX_PAGE = 20000


class ApiError(Exception):
    """An error answer: HTTP status, protocol code, message."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class Ingest:
    ingest_id: str
    batches: dict[int, list[SourceItem]] = field(default_factory=dict)
    state: str = "receiving"
    commit: tuple[str, int, int] | None = None
    atoms: list[dict] | None = None
    error: str | None = None
    system: Any = None

    def received(self) -> int:
        return sum(len(b) for b in self.batches.values())

    def status(self) -> dict:
        return {"ingest_id": self.ingest_id, "state": self.state, "items": self.received(),
                "atoms": None if self.atoms is None else len(self.atoms), "error": self.error}


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _within(child: Path, roots: list[Path]) -> bool:
    return any(child == r or r in child.parents for r in roots)


class SystemService:
    """The protocol's state and answers for one system (no HTTP in here: :class:`Handler`
    turns requests into calls of :meth:`handle`)."""

    def __init__(self, factory: Callable[[], Any], corpus_roots: list[Path],
                 log: IO[str] | None = None):
        self.factory = factory
        self.log = log              # the server's own log (default: standard error)
        self.spare = factory()       # the first ingest's instance (and the card's source)
        if hasattr(self.spare, "bind"):
            raise MembenchError(f"system {self.spare.name}: it asks for the split's records "
                                "(gold) with bind(); only membench run hands them to the "
                                "registered test doubles, never over HTTP")
        self.card = {"protocol": wire.PROTOCOL, "name": self.spare.name,
                     "config": self.spare.config()}
        try:
            wire.check_card(json.loads(json.dumps(self.card, allow_nan=False, default=str)))
        except (wire.ShapeError, ValueError) as e:
            raise MembenchError(f"system {self.spare.name!r} cannot be served: its card: {e}") \
                from None
        self.card = json.loads(json.dumps(self.card, default=str))
        self.corpus_roots = [Path(r).resolve() for r in corpus_roots]
        self.lock = threading.Lock()          # the ingest state
        self.query_lock = threading.Lock()    # one query at a time
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

    def handle(self, method: str, target: str, body: Any) -> tuple[int, dict]:
        url = urlsplit(target)
        parts = tuple(p for p in url.path.split("/") if p)
        allowed = []
        for m, pattern, fn in self.ROUTES:
            if len(pattern) == len(parts) and all(p is None or p == q
                                                  for p, q in zip(pattern, parts)):
                if m == method:
                    args = [q for p, q in zip(pattern, parts) if p is None]
                    return getattr(self, fn)(*args, query=parse_qs(url.query), body=body)
                allowed.append(m)
        if allowed:
            raise ApiError(405, "method_not_allowed", f"{method} {url.path}: use "
                           f"{' or '.join(allowed)}")
        raise ApiError(404, "not_found", f"no such path: {url.path}")

    # -- the calls ---------------------------------------------------------------------
    def health(self, *, query, body):
        return 200, {"protocol": wire.PROTOCOL, "status": "ok"}

    def get_card(self, *, query, body):
        return 200, self.card

    def _id(self, iid: str) -> str:
        if not wire.INGEST_ID_RE.fullmatch(iid):
            raise ApiError(400, "bad_request", f"ingest id {iid[:80]!r}: 1 to 64 of "
                           "[A-Za-z0-9_-]")
        return iid

    def _known(self, iid: str) -> Ingest:
        cur = self.current
        if cur is None or cur.ingest_id != self._id(iid):
            raise ApiError(404, "unknown_ingest", f"this server holds no ingest {iid}"
                           + (f" (it holds {cur.ingest_id})" if cur else ""))
        return cur

    def put_batch(self, iid: str, seq: str, *, query, body):
        self._id(iid)
        if not seq.isdigit() or len(seq) > 9:
            raise ApiError(400, "bad_request", f"batch number {seq[:20]!r}: an integer >= 0")
        items = self._parse(wire.parse_items, body)
        with self.lock:
            cur = self.current
            if cur is None or cur.ingest_id != iid:
                if cur is not None and cur.state == "running":
                    raise ApiError(409, "busy", f"ingest {cur.ingest_id} is running; one "
                                   "memory at a time")
                cur = self.current = Ingest(iid)
            elif cur.state == "failed":
                cur = self.current = Ingest(iid)
            elif cur.state != "receiving":
                raise ApiError(409, "already_committed", f"ingest {iid} is {cur.state}; its "
                               "batches cannot change")
            cur.batches[int(seq)] = items
        return 200, {"ingest_id": iid, "seq": int(seq), "received": len(items)}

    def commit(self, iid: str, *, query, body):
        self._id(iid)
        root_text, n_batches, n_items = self._parse(wire.parse_commit, body)
        root = Path(root_text)
        if not root.is_absolute():
            raise ApiError(400, "bad_request", f"corpus_root {root_text[:200]!r}: an absolute "
                           "path")
        root = root.resolve()
        if not _within(root, self.corpus_roots):
            raise ApiError(403, "corpus_root_refused", f"corpus_root {root}: this server reads "
                           f"only under {', '.join(map(str, self.corpus_roots))} (membench "
                           "serve --corpus DIR)")
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
                    raise ApiError(409, "conflict", f"ingest {iid} was committed with other "
                                   "values")
                return 200, cur.status()
            missing = sorted(set(range(n_batches)) - set(cur.batches))
            extra = sorted(set(cur.batches) - set(range(n_batches)))
            if missing or extra:
                what = (f"batch {missing[0]} was never sent" if missing else
                        f"batch {extra[0]} is beyond the {n_batches} committed")
                raise ApiError(409, "incomplete_upload", f"ingest {iid}: {what}")
            if cur.received() != n_items:
                raise ApiError(409, "incomplete_upload", f"ingest {iid}: {cur.received()} items "
                               f"received, the commit says {n_items}")
            cur.commit = (str(root), n_batches, n_items)
            cur.state = "running"
            system, self.spare = self.spare or self.factory(), None
            cur.system = system
            items = [it for s in sorted(cur.batches) for it in cur.batches[s]]
        threading.Thread(target=self._ingest, args=(cur, system, items, root),
                         name=f"ingest:{iid}", daemon=True).start()
        return 202, cur.status()

    def _ingest(self, cur: Ingest, system, items: list[SourceItem], root: Path) -> None:
        try:
            atoms = system.ingest(items, root)
            rows = [a.row() for a in atoms]
            json.dumps(rows, allow_nan=False)
        except Exception as e:     # the system's failure is reported, the server goes on
            if not isinstance(e, MembenchError):
                traceback.print_exc(file=self.log or sys.stderr)
            with self.lock:
                cur.state, cur.error = "failed", f"{type(e).__name__}: {e}"[:2000]
            return
        with self.lock:
            cur.atoms, cur.state = rows, "done"

    def status(self, iid: str, *, query, body):
        with self.lock:
            return 200, self._known(iid).status()

    def atoms(self, iid: str, *, query, body):
        cur = self._known(iid)
        if cur.state != "done":
            raise ApiError(409, "not_ready", f"ingest {iid} is {cur.state}")

        def one(name: str, default: int) -> int:
            v = query.get(name, [str(default)])[-1]
            if not v.isdigit() or len(v) > 12:
                raise ApiError(400, "bad_request", f"{name}={v[:20]!r}: an integer >= 0")
            return int(v)

        offset, limit = one("offset", 0), min(max(one("limit", 1000), 1), MAX_PAGE)
        rows = cur.atoms[offset:offset + limit]
        end = offset + len(rows)
        return 200, {"atoms": rows, "offset": offset, "total": len(cur.atoms),
                     "next_offset": end if end < len(cur.atoms) else None}

    def query(self, iid: str, *, query, body):
        cur = self._known(iid)
        if cur.state != "done":
            raise ApiError(409, "not_ready", f"ingest {iid} is {cur.state}")
        question, scope, as_of = self._parse(wire.parse_query, body)
        with self.query_lock:
            try:
                res = cur.system.query(question, scope, as_of)
                hits = [[a, float(s)] for a, s in res.hits]
                cart = list(res.cartridge)
                conf = getattr(res, "confidence", None)
                if conf is not None:
                    conf = float(conf)
                    if not math.isfinite(conf):
                        raise ValueError(f"confidence must be a finite number, got {conf!r}")
            except Exception as e:
                if not isinstance(e, MembenchError):
                    traceback.print_exc(file=self.log or sys.stderr)
                raise ApiError(500, "system_error", f"{type(e).__name__}: {e}"[:2000]) from None
        return 200, {"hits": hits, "cartridge": cart,
                     **({} if conf is None else {"confidence": conf})}

    @staticmethod
    def _parse(fn, body):
        if body is None:
            raise ApiError(400, "bad_request", "this call needs a JSON body")
        try:
            return fn(body)
        except wire.ShapeError as e:
            raise ApiError(400, "bad_request", str(e)[:2000]) from None


class Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive; every answer is JSON with a Content-Length."""

    protocol_version = "HTTP/1.1"
    server_version = "membench-serve"
    # headers and body are two writes: without TCP_NODELAY, Nagle's algorithm and the
    # client's delayed ACK hold the body back about 40 ms per answer
    disable_nagle_algorithm = True
    service: SystemService          # set on the subclass :func:`make_server` builds

    def log_message(self, format: str, *args) -> None:  # quiet: one line per error only
        pass

    def _body(self) -> Any:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raise ApiError(411, "length_required", "send the body with a Content-Length")
        n = self.headers.get("Content-Length")
        if n is None or n == "0":
            return None
        if not n.isdigit():
            raise ApiError(400, "bad_request", "Content-Length is not a number")
        if int(n) > MAX_REQUEST:
            raise ApiError(413, "too_large", f"a body of {n} bytes; at most {MAX_REQUEST}")
        raw = self.rfile.read(int(n))
        try:
            return loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise ApiError(400, "bad_json", f"the body is not JSON: {e}"[:300]) from None

    def _answer(self, status: int, obj: dict) -> None:
        try:
            data = json.dumps(obj, ensure_ascii=False, allow_nan=False,
                              separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError) as e:     # a system answered something JSON cannot hold
            status = 500
            data = json.dumps({"error": {"code": "system_error",
                                         "message": f"the answer cannot be JSON: {e}"[:300]}}
                              ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _serve(self, method: str) -> None:
        try:
            body = self._body()
            status, obj = self.service.handle(method, self.path, body)
        except ApiError as e:
            if e.status >= 500:
                (self.service.log or sys.stderr).write(f"membench serve: {method} {self.path}: "
                                                       f"{e.message}\n")
            if e.status in (411, 413):
                self.close_connection = True   # the unread body would be taken for a request
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
    daemon_threads = True           # a hanging system does not keep the process alive

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return                  # the client went away (it timed out, or stopped): its loss
        super().handle_error(request, client_address)


class Server6(Server):
    address_family = socket.AF_INET6


def make_server(service: SystemService, host: str = "127.0.0.1", port: int = 0,
                handler: type[Handler] = Handler) -> Server:
    """A server bound to ``host:port`` (``port`` 0: a free one; ``server.server_address``
    says which), not yet serving: call ``serve_forever()`` (``shutdown()`` from another
    thread stops it)."""
    cls = type("BoundHandler", (handler,), {"service": service})
    try:
        return (Server6 if ":" in host else Server)((host, port), cls)
    except OSError as e:
        raise MembenchError(f"membench serve: cannot listen on {host}:{port}: "
                            f"{e.strerror or e}") from None


def serve(name: str, config: dict, host: str, port: int, corpus_root: Path,
          announce: Callable[[str], None] = print) -> None:
    """``membench serve``: build the system ``name`` with ``config``, listen on
    ``host:port`` and answer until interrupted (Ctrl-C, SIGTERM)."""
    from ..systems import make_system

    service = SystemService(lambda: make_system(name, config), [corpus_root])
    if not is_loopback(host):
        sys.stderr.write(f"membench serve: WARNING: listening on {host}, not a loopback "
                         "address: anyone who reaches it can query the memory and have the "
                         f"server read files under {corpus_root}; there is no "
                         "authentication\n")
    srv = make_server(service, host, port)
    h, p = srv.server_address[:2]
    shown = f"[{h}]" if ":" in str(h) else h
    announce(f"membench serve: {service.card['name']} on http://{shown}:{p} ({wire.PROTOCOL}; "
             f"corpus {corpus_root}); Ctrl-C stops")
    sys.stdout.flush()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        announce("membench serve: stopped")
    finally:
        srv.server_close()
