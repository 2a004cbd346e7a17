"""Bounds on the HTTP path, each reproduced by a client or a server that abuses it: a server that
drips its answer one byte a second (the client's per-call deadline), atom pages that never end
(the declared total and the hard cap), a retry budget, a commit of 10^10 batches and an ingest
too large for the server, a system that raises or answers None (one line in the server's log),
slow and idle clients (the server's request deadline and idle timeout), too many connections,
and ``membench serve`` listening on loopback only. Runs on the fixture corpus (seconds)."""

from __future__ import annotations

import json
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from http_helpers import Wrapped, serve_process, thread_server
from minicorpus import freeze, make_corpus

from membench.cli import main
from membench.core.bounds import REGISTRY
from membench.core.listening import is_loopback, listeners
from membench.run.runner import load_split
from membench.serve import server as server_mod
from membench.serve.server import Handler, SystemService, make_server
from membench.sets.topics import topic_id
from membench.systems import remote as client_mod
from membench.systems.remote import HttpSystem, HttpSystemError


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    root = tmp_path_factory.mktemp("httpmini")
    corpus = make_corpus(root)
    return {"corpus": corpus, **freeze(corpus, root)}


@pytest.fixture(scope="module")
def items(mini):
    return load_split(mini["sets"], "dev", ["conversation"]).items


def run_cli(url, mini, out, *extra):
    return main(
        [
            "--quiet",
            "run",
            "--system",
            url,
            "--sets",
            str(mini["sets"]),
            "--corpus",
            str(mini["corpus"]),
            "--manifest",
            str(mini["manifest"]),
            "--no-lock",
            "--modality",
            "conversation",
            "--out",
            str(out),
            *extra,
        ]
    )


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


def raw(url: str, method: str, path: str, body: bytes | None = None) -> tuple[int, dict]:
    import http.client

    u = urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.request(method, path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, json.loads(r.read())
    finally:
        c.close()


# --------------------------------------------------------------------------- the client


def test_a_slow_drip_answer_fails_within_the_deadline_naming_the_query(mini, tmp_path, capsys):
    """A server that sends one byte a second held one query for 66.5 s under read_timeout=3
    and the run exited 0; now the call's deadline ends it, one line naming the query."""
    started: dict = {}
    stop = threading.Event()

    class Drip(Handler):
        def _serve(self, method):
            if not self.path.endswith("/query") or "t" in started:
                return super()._serve(method)
            self._body()
            started["t"] = time.monotonic()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "200")
            self.end_headers()
            try:
                for b in (b'{"hits": [], "cartridge": []}' + b" " * 200)[:200]:
                    if stop.wait(1.0):
                        break
                    self.wfile.write(bytes([b]))  # one byte a second
                    self.wfile.flush()
            except OSError:
                started["client_left"] = time.monotonic()
            self.close_connection = True

    out = tmp_path / "run"
    try:
        with thread_server(Wrapped, [mini["corpus"]], Drip) as (url, _):
            rc = run_cli(
                url,
                mini,
                out,
                "--config",
                "read_timeout=3",
                "--config",
                "deadline=4",
                "--config",
                "retries=1",
            )
            ended = time.monotonic()
    finally:
        stop.set()
    assert rc == 2
    line = error_line(capsys)
    # the drip is 200 s long; the deadline is 4 s (generous slack for a loaded machine)
    assert ended - started["t"] < 20, ended - started["t"]
    # the line names the topic's opaque qid (the runner's process holds no query ids)
    topic = {
        topic_id(r.query_id): r.query_id
        for r in load_split(mini["sets"], "dev", ["conversation"]).records
    }
    written = {json.loads(x)["query_id"] for x in (out / "run.jsonl").read_text().splitlines()}
    named = line.split("/query (query ", 1)[1].split("):", 1)[0]
    assert named in topic and topic[named] not in written, line
    assert (
        line.startswith(f"membench: POST {url}/ingests/")
        and "no complete answer by the call's deadline (4 s)" in line
        and "1 attempt" in line
    ), line


def test_a_silent_server_is_retried_within_the_deadline_only(mini, items):
    """read_timeout bounds each read (retried); the deadline bounds the call with its retries."""
    hang = threading.Event()

    class Silent(Handler):
        def _serve(self, method):
            if self.path.endswith("/query"):
                self._body()
                hang.wait(30)
                self.close_connection = True
                return
            super()._serve(method)

    try:
        with thread_server(Wrapped, [mini["corpus"]], Silent) as (url, _):
            c = HttpSystem(url, read_timeout=0.5, deadline=1.6, retries=10, backoff=0.05)
            c.ingest(items, mini["corpus"])
            r = load_split(mini["sets"], "dev", ["conversation"]).records[0]
            t0 = time.monotonic()
            # the third attempt starts at about 1.15 s: either it is cut at 1.6 s, or (on a
            # slow machine) the deadline leaves no time for it
            with pytest.raises(
                HttpSystemError,
                match=r"/query: (no complete answer by the "
                r"call's deadline \(1\.6 s\): [0-9.]+ s, [23] attempts|no answer "
                r"within 0\.5 s \(timed out\) \([23] attempts in [0-9.]+ s; the "
                r"call's deadline \(1\.6 s\) leaves no time for another\))",
            ):
                c.query(r.question, r.scope, r.as_of)
            assert time.monotonic() - t0 < 10
    finally:
        hang.set()


def test_the_retry_budget_is_per_run(mini, items):
    class Down(Handler):
        def _serve(self, method):
            if self.path.endswith("/query"):
                self._body()
                self._answer(503, {"error": {"code": "busy", "message": "restarting"}})
                return
            super()._serve(method)

    recs = load_split(mini["sets"], "dev", ["conversation"]).records
    with thread_server(Wrapped, [mini["corpus"]], Down) as (url, _):
        c = HttpSystem(url, retries=5, backoff=0.01, retry_budget=2)
        c.ingest(items, mini["corpus"])
        with pytest.raises(
            HttpSystemError,
            match=r"/query: HTTP 503 \(3 attempts; the run's "
            r"retry budget of 2 retries is spent\)",
        ):
            c.query(recs[0].question, recs[0].scope, recs[0].as_of)
        assert c.retried == 2
        with pytest.raises(
            HttpSystemError,
            match=r"HTTP 503 \(1 attempt; the run's retry "
            "budget",
        ):  # spent: no retry on the next call
            c.query(recs[1].question, recs[1].scope, recs[1].as_of)


def endless_pages(kind: str, served: list):
    """A handler whose atom pages go on past the total the status declares."""

    class Endless(Handler):
        def _serve(self, method):
            url = urlsplit(self.path)
            if method != "GET" or not url.path.endswith("/atoms"):
                return super()._serve(method)
            off = int(parse_qs(url.query)["offset"][0])
            served.append(off)
            iid = url.path.split("/")[2]
            status, real = self.service.handle(
                "GET", f"/ingests/{iid}/atoms?offset=0&limit=1", None
            )
            total = real["total"]
            row = dict(real["atoms"][0], atom_id=f"x{off}")
            page = {"atoms": [row], "offset": off, "total": total, "next_offset": off + 1}
            if kind == "growing total":
                page["total"] = off + 2
            if kind == "past the total":
                page["next_offset"] = None if off > total + 5 else off + 1
                page["atoms"] = [row] * (1 if off < total else 2)
            self._answer(200, page)

    return Endless


@pytest.mark.parametrize(
    "kind,why",
    [
        ("next_offset forever", "next_offset: [0-9]+, but total is [0-9]+: no atom is left"),
        ("growing total", "total [0-9]+, but the status said [0-9]+ atoms"),
        ("past the total", "past the total of|but total is"),
    ],
)
def test_atom_pages_that_never_end_stop_at_the_declared_total(kind, why, mini, items):
    served: list = []
    with thread_server(Wrapped, [mini["corpus"]], endless_pages(kind, served)) as (url, svc):
        c = HttpSystem(url, page_atoms=1)
        with pytest.raises(
            HttpSystemError,
            match=f"GET {url}/ingests/.*/atoms.*: (the answer has the wrong shape: .*)?({why})",
        ):
            c.ingest(items, mini["corpus"])
        total = len(svc.current.atoms)
    assert 1 <= len(served) <= total + 1  # bounded by the total, not forever


def test_an_ingest_past_the_atom_cap_is_refused_before_paging(mini, items, monkeypatch):
    monkeypatch.setattr(client_mod, "MAX_ATOMS", 2)  # the conversations make 3
    with thread_server(Wrapped, [mini["corpus"]]) as (url, svc):
        with pytest.raises(
            HttpSystemError,
            match=r"the server declares [0-9,]+ atoms; at most 2 "
            r"are read \(bound http_atoms\)",
        ):
            HttpSystem(url).ingest(items, mini["corpus"])
        assert len(svc.current.atoms) > 2


# --------------------------------------------------------------------------- the server


def test_a_commit_of_ten_billion_batches_is_refused_at_once(mini):
    with thread_server(Wrapped, [mini["corpus"]]) as (url, _):
        t0 = time.monotonic()
        status, body = raw(
            url,
            "PUT",
            "/ingests/x1",
            json.dumps(
                {"corpus_root": str(mini["corpus"]), "batches": 10**10, "items": 0}
            ).encode(),
        )
        assert time.monotonic() - t0 < 10  # no set(range(10**10)) built first
        assert status == 413 and body["error"]["code"] == "too_large"
        assert "at most 1,000,000 per ingest (serve_batches)" in body["error"]["message"]
        status, body = raw(
            url, "PUT", f"/ingests/x1/batches/{server_mod.MAX_BATCHES}", b'{"items": []}'
        )
        assert status == 413 and "serve_batches" in body["error"]["message"]
        status, _ = raw(
            url, "PUT", f"/ingests/x1/batches/{server_mod.MAX_BATCHES - 1}", b'{"items": []}'
        )
        assert status == 200


def test_the_batches_of_one_ingest_are_bounded_in_bytes(mini, items, monkeypatch):
    from membench.contract import wire

    batch = json.dumps({"items": [wire.item_row(it) for it in items[:2]]}).encode()
    monkeypatch.setattr(server_mod, "MAX_INGEST_BYTES", 2 * len(batch) + 10)
    with thread_server(Wrapped, [mini["corpus"]]) as (url, _):
        for seq in (0, 1, 1):  # a batch sent again replaces itself
            assert raw(url, "PUT", f"/ingests/y1/batches/{seq}", batch)[0] == 200
        status, body = raw(url, "PUT", "/ingests/y1/batches/2", batch)
        assert status == 413 and "serve_ingest_bytes" in body["error"]["message"]


@pytest.mark.parametrize(
    "system,client_says,log_says",
    [
        (
            "RaisesOnQuery",
            "HTTP 500 system_error: RuntimeError: the index is corrupt second line",
            "/query: RuntimeError: the index is corrupt second line of the message",
        ),
        (
            "NoneOnQuery",
            "HTTP 500 system_error: TypeError: the system's query returned None",
            "/query: TypeError: the system's query returned None, not a Result",
        ),
        (
            "NoneOnIngest",
            "the system's ingest failed on the server: TypeError: the system's ingest "
            "returned None",
            "failed: TypeError: the system's ingest returned None, not a list of atoms",
        ),
    ],
)
def test_a_system_that_fails_is_one_line_in_the_server_log(
    system, client_says, log_says, mini, items
):
    recs = load_split(mini["sets"], "dev", ["conversation"]).records
    with serve_process("--system", f"http_helpers:{system}", "--corpus", str(mini["corpus"])) as (
        url,
        proc,
    ):
        c = HttpSystem(url, retries=0)
        with pytest.raises(HttpSystemError) as e:
            c.ingest(items, mini["corpus"])
            c.query(recs[0].question, recs[0].scope, recs[0].as_of)
        assert client_says in str(e.value), str(e.value)
        assert raw(url, "GET", "/health")[0] == 200  # the server goes on
        proc.terminate()
        err = proc.communicate(timeout=30)[1]
    # (the system's own progress lines aside: "[membench] content ...", and the one status
    # line of a stopped command, last)
    assert proc.returncode == 130 and err.strip().splitlines()[-1].startswith(
        "membench: interrupted (SIGTERM)"
    ), err
    lines = [
        ln
        for ln in err.splitlines()
        if ln.strip()
        and not ln.startswith("[membench]")
        and not ln.startswith("membench: interrupted")
    ]
    assert "Traceback" not in err and len(lines) == 1, err
    assert lines[0].startswith("membench serve: ") and log_says in lines[0], lines[0]


@contextmanager
def small_server(corpus, *, idle=1.0, request=2.0, connections=64):
    """``membench serve``'s server in a thread with short bounds: ``(url, log)``."""
    import io

    service = SystemService(Wrapped, [Path(corpus)], log=io.StringIO())
    handler = type("Quick", (Handler,), {"timeout": idle, "request_seconds": request})
    srv = make_server(service, "127.0.0.1", 0, handler)
    srv.max_connections = connections
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield srv.server_address[1], service.log
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(10)


def _closed_after(
    port: int, burst: bytes = b"", drip: bytes = b"", every: float = 0.25, limit: float = 30.0
) -> float:
    """Connect, send ``burst`` at once, then ``drip`` one byte every ``every`` s (then
    nothing) until the server closes the connection; seconds it took (``limit``: never)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        t0 = time.monotonic()
        sock.sendall(burst)
        sock.settimeout(every)
        i = 0
        while time.monotonic() - t0 < limit:
            try:
                if sock.recv(1 << 16) == b"":
                    return time.monotonic() - t0
            except TimeoutError:
                pass
            except OSError:
                return time.monotonic() - t0
            if i < len(drip):
                try:
                    sock.sendall(drip[i : i + 1])
                except OSError:
                    return time.monotonic() - t0
                i += 1
        return limit


def test_a_slowloris_client_is_cut_off_and_does_not_hold_the_server(mini):
    head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 400 + b"\r\n\r\n"
    put = b"PUT /ingests/z1/batches/0 HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n"
    with small_server(mini["corpus"], idle=1.0, request=2.0) as (port, log):
        # a byte every 0.25 s never trips the 1 s idle timeout; the 2 s deadline cuts it
        assert _closed_after(port, drip=head) < 12  # request line, headers
        assert _closed_after(port, burst=put, drip=b'{"items": [' + b" " * 400) < 12  # the body
        said = "did not arrive in full within 2 s (serve_request_seconds)"
        until = time.monotonic() + 10  # the handler logs just after it shuts the socket
        while log.getvalue().count(said) < 2 and time.monotonic() < until:
            time.sleep(0.05)
        assert log.getvalue().count(said) == 2, log.getvalue()
        assert _closed_after(port) < 12  # idle: nothing sent
        assert _closed_after(port, burst=put[:-2]) < 12  # idle within a request
        assert raw(f"http://127.0.0.1:{port}", "GET", "/health")[0] == 200
        assert "Traceback" not in log.getvalue()


def test_connections_past_the_cap_are_closed_at_once(mini):
    with small_server(mini["corpus"], idle=5.0, request=10.0, connections=2) as (port, log):
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        try:
            time.sleep(0.3)
            assert _closed_after(port, limit=4) < 4
            assert (
                "refused a connection from 127.0.0.1: 2 are open (serve_connections)"
                in log.getvalue()
            )
        finally:
            for s in held:
                s.close()
        deadline = time.monotonic() + 10  # the held ones are gone: served again
        while raw_ok(port) is False and time.monotonic() < deadline:
            time.sleep(0.1)
        assert raw_ok(port)


def raw_ok(port: int) -> bool:
    try:
        return raw(f"http://127.0.0.1:{port}", "GET", "/health")[0] == 200
    except (OSError, ValueError):
        return False


def test_serve_listens_on_loopback_only_by_default(mini):
    with serve_process("--system", "bm25", "--corpus", str(mini["corpus"])) as (url, proc):
        found = listeners([proc.pid])
    assert found and all(x.loopback for x in found), found
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and is_loopback("::ffff:127.0.0.1")


def test_every_http_bound_is_registered():
    from membench.docsite.bounds import all_bounds

    names = {b.name for b in all_bounds()}
    assert {
        "http_call_deadline",
        "http_retry_budget",
        "http_read_timeout",
        "http_connect_timeout",
        "http_ingest_deadline",
        "http_atoms",
        "http_answer_bytes",
        "serve_request_bytes",
        "serve_batches",
        "serve_ingest_bytes",
        "serve_idle_timeout",
        "serve_request_seconds",
        "serve_connections",
        "ray_connect_seconds",
    } <= names
    assert (
        REGISTRY["http_call_deadline"].value
        == client_mod.CALL_DEADLINE
        == HttpSystem.__init__.__kwdefaults__["deadline"]
    )
    assert REGISTRY["serve_idle_timeout"].value == Handler.timeout
