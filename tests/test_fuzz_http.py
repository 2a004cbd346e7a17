"""Property-based fuzzing (hypothesis) of the HTTP path: ``membench serve``'s endpoints and the
client's paging of atoms (docs/robustness.md, "Fuzzing").

* **The service** (:class:`membench.serve.server.SystemService`, what every request
  reaches): sequences of calls with methods, paths (ingest ids, batch numbers up to 10^10,
  ``offset``/``limit`` texts) and bodies drawn from valid bodies, valid bodies with one field
  replaced by an arbitrary JSON value, and arbitrary JSON. Invariant: a 2xx answer that is a
  JSON object, or an :class:`ApiError` with a 4xx status (5xx only for the system's own
  failures, which this system has none of); nothing else.
* **The server over a socket** (:class:`Handler`): raw requests, valid ones cut or with a byte
  changed, and arbitrary bytes. Invariant: an HTTP answer (a JSON body when it has one) or a
  closed connection; the server's log never holds a failed request, and it answers
  ``/health`` afterwards.
* **The client's paging** (:meth:`HttpSystem._atoms` through its real transport): pages whose
  offset, total, count and ``next_offset`` are drawn, followed by pages that never end.
  Invariant: exactly the declared number of atoms or one :class:`HttpSystemError`, after at
  most ``total + 1`` page calls.

Profiles as in ``tests/test_fuzz_readers.py``: ``ci`` (derandomised) and ``long``
(``MEMBENCH_FUZZ=long``: 10x the examples, random).
"""

from __future__ import annotations

import atexit
import io
import json
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membench.contract import wire
from membench.contract.protocol import Atom, Result
from membench.serve.server import ApiError, Handler, SystemService, make_server
from membench.systems import remote as client_mod
from membench.systems.remote import HttpSystem, HttpSystemError

PROFILE = os.environ.get("MEMBENCH_FUZZ", "ci")
SCALE = {"ci": 1, "long": 10}[PROFILE]


def fuzz(n: int):
    return settings(
        max_examples=n * SCALE,
        deadline=None,
        derandomize=PROFILE == "ci",
        database=None,
        suppress_health_check=list(HealthCheck),
    )


class Fake:
    """A system with no work in it: one atom per item, the first atom as the answer."""

    name = "fake"

    def config(self):
        return {}

    def ingest(self, items, root):
        return [
            Atom(f"a{i}", it.source_id, it.modality, it.holder, it.observed_at, {"turn": 1}, "text")
            for i, it in enumerate(items)
        ]

    def query(self, question, scope, as_of):
        return Result(hits=[("a0", 1.0)], cartridge=[])


ROOT = Path(tempfile.mkdtemp(prefix="mbfuzz"))  # the corpus root the fake reads nothing in
atexit.register(shutil.rmtree, ROOT, True)
ITEM = {
    "source_id": "locomo:c:s1",
    "modality": "conversation",
    "holder": "h1",
    "observed_at": "2024-01-01T00:00:00+00:00",
    "content": [{"speaker": "a", "text": "hello", "turn": 1}],
    "meta": {},
}
BODIES = {
    "batch": {"items": [ITEM, dict(ITEM, source_id="locomo:c:s2")]},
    "commit": {"corpus_root": str(ROOT), "batches": 1, "items": 2},
    "query": {
        "question": "hello",
        "scope": {"holder": "h1", "scenario": "s"},
        "as_of": "2024-02-01T00:00:00+00:00",
    },
}

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["", "/", "/etc", str(ROOT), "../x", "2024-01-01T00:00:00+00:00", "x" * 300]),
)
json_values = st.recursive(
    json_scalars,
    lambda ch: st.one_of(
        st.lists(ch, max_size=4), st.dictionaries(st.text(max_size=8), ch, max_size=4)
    ),
    max_leaves=10,
)


@st.composite
def bodies(draw):
    kind = draw(st.sampled_from(["valid", "mutated", "mutated", "any", "none"]))
    if kind == "none":
        return None
    if kind == "any":
        return draw(json_values)
    body = json.loads(json.dumps(BODIES[draw(st.sampled_from(sorted(BODIES)))]))
    if kind == "mutated":
        target = body
        if isinstance(body.get("items"), list) and draw(st.booleans()):
            target = body["items"][0]
        keys = sorted(target)
        op = draw(st.sampled_from(["replace", "replace", "remove", "add"]))
        if op == "replace":
            target[draw(st.sampled_from(keys))] = draw(json_values)
        elif op == "remove":
            del target[draw(st.sampled_from(keys))]
        else:
            target[draw(st.text(max_size=8))] = draw(json_values)
    return body


ids = st.one_of(st.sampled_from(["i1", "i2"]), st.text(max_size=70))
numbers = st.one_of(
    st.integers(-3, 3), st.sampled_from([999_999, 1_000_000, 10**10]), st.text(max_size=12)
)


@st.composite
def calls(draw):
    method = draw(st.sampled_from(["GET", "PUT", "POST", "DELETE", "PATCH"]))
    shape = draw(
        st.sampled_from(["health", "card", "batch", "commit", "status", "atoms", "query", "other"])
    )
    i = draw(ids)
    path = {
        "health": "/health",
        "card": "/card",
        "batch": f"/ingests/{i}/batches/{draw(numbers)}",
        "commit": f"/ingests/{i}",
        "status": f"/ingests/{i}",
        "atoms": f"/ingests/{i}/atoms?offset={draw(numbers)}&limit={draw(numbers)}",
        "query": f"/ingests/{i}/query",
        "other": "/" + draw(st.text(max_size=30)),
    }[shape]
    return method, path, draw(bodies())


@fuzz(200)
@given(st.lists(calls(), min_size=1, max_size=8))
def test_serve_endpoints(seq):
    service = SystemService(Fake, [ROOT], log=io.StringIO())
    for method, path, body in seq:
        size = len(json.dumps(body)) if body is not None else 0
        try:
            status, answer = service.handle(method, path, body, size)
        except ApiError as e:
            assert 400 <= e.status < 500 and e.code and e.message, (method, path, e.status)
            continue
        assert 200 <= status < 300 and isinstance(answer, dict), (method, path, status)
        json.dumps(answer, allow_nan=False)
        if service.current is not None and service.current.state == "running":
            for _ in range(200):  # the fake ingest is instant: let it finish
                if service.current.state != "running":
                    break
                threading.Event().wait(0.005)
    assert "Traceback" not in service.log.getvalue()


def _request(method: str, path: str, body: bytes) -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode("utf-8", "surrogateescape") + body


@st.composite
def raw_requests(draw):
    method, path, body = draw(calls())
    data = _request(method, path, b"" if body is None else json.dumps(body).encode())
    kind = draw(st.sampled_from(["valid", "cut", "flip", "bytes", "headers"]))
    if kind == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif kind == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1 :]
    elif kind == "bytes":
        data = draw(st.binary(max_size=300))
    elif kind == "headers":
        extra = draw(
            st.sampled_from(
                [
                    b"Transfer-Encoding: chunked\r\n",
                    b"Content-Length: 99999999999\r\n",
                    b"Content-Length: -1\r\n",
                    b"Content-Length: 1e3\r\n",
                    b"X: " + b"a" * 70000 + b"\r\n",
                    b"".join(b"H%d: v\r\n" % k for k in range(120)),
                ]
            )
        )
        head, sep, rest = data.partition(b"\r\n")
        data = head + sep + extra + rest
    return data


@pytest.fixture(scope="module")
def quick_server():
    service = SystemService(Fake, [ROOT], log=io.StringIO())
    handler = type("Quick", (Handler,), {"timeout": 0.5, "request_seconds": 2.0})
    srv = make_server(service, "127.0.0.1", 0, handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1], service
    srv.shutdown()
    srv.server_close()
    t.join(10)


@fuzz(60)
@given(data=raw_requests())
def test_serve_over_a_socket(quick_server, data):
    port, service = quick_server
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)  # no more bytes: the server must not wait
        except OSError:
            pass  # it closed first (a refused request)
        got = b""
        try:
            while chunk := s.recv(1 << 16):
                got += chunk
        except OSError:
            pass
    if got:
        assert got.startswith((b"HTTP/1.1 ", b"HTTP/1.0 ")), got[:80]
        head, _, body = got.partition(b"\r\n\r\n")
        if b"application/json" in head and body:
            json.loads(body.split(b"HTTP/1.1 ")[0])
    log = service.log.getvalue()
    assert "failed:" not in log and "Traceback" not in log, log


def test_serve_still_answers_after_the_socket_fuzz(quick_server):
    import http.client

    c = http.client.HTTPConnection("127.0.0.1", quick_server[0], timeout=10)
    c.request("GET", "/health")
    assert c.getresponse().status == 200
    c.close()


# --------------------------------------------------------------------------- the client's paging

ATOM = {
    "source_id": "locomo:c:s1",
    "modality": "conversation",
    "holder": "h1",
    "observed_at": "2024-01-01T00:00:00+00:00",
    "extent": {"turn": 1},
    "text": "t",
}


class FakeConnection:
    """Stands for the socket: answers /health and /card, then the drawn atom pages (then
    pages that never end), counting the page calls."""

    def __init__(self, pages):
        self.pages = list(pages)
        self.calls = 0
        self.conn = type("C", (), {"sock": None})()

    def request(self, method, path, body, read_timeout, deadline):
        if path == "/health":
            v = {"protocol": wire.PROTOCOL, "status": "ok"}
        elif path == "/card":
            v = {"protocol": wire.PROTOCOL, "name": "fake", "config": {}}
        else:
            offset = int(path.split("offset=")[1].split("&")[0])
            self.calls += 1
            make = self.pages.pop(0) if self.pages else ("endless",)
            v = page(offset, *make)
        return 200, "application/json", json.dumps(v).encode()

    def close(self):
        pass


def page(offset, kind, n=1, total=None, nxt=None, off=None):
    rows = [dict(ATOM, atom_id=f"a{offset + i}") for i in range(n)]
    if kind == "endless":
        return {"atoms": rows[:1], "offset": offset, "total": TOTAL, "next_offset": offset + 1}
    return {
        "atoms": rows,
        "offset": offset if off is None else off,
        "total": TOTAL if total is None else total,
        "next_offset": (offset + n if offset + n < TOTAL else None) if nxt == "right" else nxt,
    }


TOTAL = 5
page_kinds = st.tuples(
    st.just("drawn"),
    st.integers(0, 4),
    st.one_of(st.none(), st.integers(0, 8)),
    st.one_of(st.just("right"), st.none(), st.integers(-1, 9), st.just(10**12), st.just("7")),
    st.one_of(st.none(), st.integers(0, 8)),
)


@fuzz(200)
@given(st.lists(page_kinds, max_size=8))
def test_client_paging(monkeypatch, pages):
    conn = FakeConnection(pages)
    monkeypatch.setattr(client_mod, "_Connection", lambda *a, **k: conn)
    c = HttpSystem("http://127.0.0.1:9", page_atoms=2)
    end = (float("inf"), "no deadline")
    try:
        atoms = c._atoms("i1", TOTAL, end)
    except HttpSystemError as e:
        assert str(e).startswith("GET http://127.0.0.1:9/ingests/i1/atoms?offset="), str(e)
    else:
        assert len(atoms) == TOTAL and all(isinstance(a, Atom) for a in atoms)
        assert [a.atom_id for a in atoms] == [f"a{i}" for i in range(TOTAL)]
    assert conn.calls <= TOTAL + 1, conn.calls  # pages that never end are cut off


def test_the_endless_pages_alone_are_refused(monkeypatch):
    conn = FakeConnection([])
    monkeypatch.setattr(client_mod, "_Connection", lambda *a, **k: conn)
    with pytest.raises(HttpSystemError, match="next_offset: 5, but total is 5"):
        HttpSystem("http://127.0.0.1:9", page_atoms=2)._atoms("i1", TOTAL, (float("inf"), ""))
    assert conn.calls == TOTAL
