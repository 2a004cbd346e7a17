"""A server that misbehaves (hangs, answers garbage, dies mid-run, fails its ingest, forgets
the memory) stops ``membench run --system http://...`` with one line naming the call and what
went wrong, never a traceback; the run directory keeps what was written, and re-running the
same command once a good server answers completes it with exactly one line per query, the
in-process run's lines. Servers run in threads or subprocesses of the test and are always
stopped."""

from __future__ import annotations

import json
import re
import socket
import threading

import pytest
from http_helpers import FailsIngest, HangsAfter, Wrapped, run_lines, serve_process, thread_server

from membench.cli import main
from membench.core.errors import MembenchError
from membench.run.runner import load_split, run_system
from membench.serve.server import Handler
from membench.systems import make_system
from membench.systems.remote import HttpSystem, HttpSystemError

LIMIT = 40  # queries per modality: conversations only, so 40 queries
FAST = ["--config", "read_timeout=0.5", "--config", "retries=1", "--config", "backoff=0.05"]


@pytest.fixture(scope="module")
def reference(built, corpus_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("bm25-ref")
    run_system(
        make_system("bm25"),
        built.out,
        "dev",
        out,
        corpus_root,
        modalities=["conversation"],
        limit=LIMIT,
    )
    return run_lines(out)


def run_cli(url, built, corpus_root, out, *extra):
    return main(
        [
            "--quiet",
            "run",
            "--system",
            url,
            "--sets",
            str(built.out),
            "--corpus",
            str(corpus_root),
            "--modality",
            "conversation",
            "--limit",
            str(LIMIT),
            "--out",
            str(out),
            "--no-lock",
            *extra,
        ]
    )


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


def named_query(line: str) -> str:
    """What follows ``membench: system NAME: QUERY_ID: `` in an error line about an answer (the
    line must start so: an error about a system's answer names the query)."""
    m = re.match(r"membench: system bm25: (t[0-9a-f]{16}): (.*)", line)  # the topic's qid
    assert m, line
    return m.group(2)


def resume_and_check(url, built, corpus_root, out, reference, capsys, answered_before):
    """The interrupted run kept its lines; re-running against a good server completes it."""
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "running"
    before = run_lines(out)
    assert len(before) == answered_before
    assert run_cli(url, built, corpus_root, out) == 0, capsys.readouterr().err
    after = run_lines(out)  # (run_lines fails on a query answered twice)
    assert after == reference
    assert {k: after[k] for k in before} == before
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["resumed"] == 1
    assert meta["answered_this_session"] == len(reference) - answered_before


def test_a_hanging_server_times_out_and_the_run_resumes(
    reference, built, corpus_root, tmp_path, capsys
):
    release = threading.Event()
    out = tmp_path / "run"
    try:
        with thread_server(lambda: HangsAfter(15, release), [corpus_root]) as (url, _):
            assert run_cli(url, built, corpus_root, out, *FAST) == 2
    finally:
        release.set()
    line = error_line(capsys)
    assert (
        line.startswith(f"membench: POST {url}/ingests/")
        and re.search(
            r"/query \(query [^)]+\): no answer within 0\.5 s \(timed out\) \(2 attempts in ", line
        )
        and "re-run the same `membench run`" in line
    ), line
    with thread_server(Wrapped, [corpus_root]) as (url, _):
        resume_and_check(url, built, corpus_root, out, reference, capsys, 15)


def garbage(
    after: int,
    raw: bytes,
    status: int = 200,
    ctype: str = "application/json",
    length: int | None = None,
):
    """A handler whose query answers are ``raw`` from query ``after + 1`` on (``length``: a
    Content-Length that promises more than is sent, then the connection closes)."""
    n = {"q": 0}

    class Garbage(Handler):
        def _serve(self, method):
            if self.path.endswith("/query"):
                n["q"] += 1
                if n["q"] > after:
                    self._body()
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(length or len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                    if length:
                        self.close_connection = True
                    return
            super()._serve(method)

    return Garbage


GARBAGE = {
    "html": (
        dict(raw=b"<html><body>Bad Gateway?</body></html>", ctype="text/html"),
        "the answer is not JSON (HTTP 200, text/html: ",
    ),
    "plain 500": (
        dict(raw=b"Internal Server Error", status=500, ctype="text/plain"),
        "the answer is not JSON (HTTP 500, text/plain",
    ),
    "NaN score": (
        dict(raw=b'{"hits": [["a", 1.0], ["b", NaN]], "cartridge": []}'),
        "the answer has a number JSON does not allow at hits[1][1] (atom 'b'): NaN "
        "(a score must be a finite number)",
    ),
    "infinite score": (
        dict(raw=b'{"hits": [["a", -Infinity]], "cartridge": []}'),
        "at hits[0][1] (atom 'a'): -Infinity",
    ),
    "score as text": (
        dict(raw=b'{"hits": [["a", "0.5"]], "cartridge": []}'),
        "the answer has the wrong shape: hits[0][1] (atom 'a'): expected a "
        "number, got a string '0.5'",
    ),
    "no cartridge": (
        dict(raw=b'{"hits": []}'),
        "the answer has the wrong shape: cartridge: missing",
    ),
    "a list": (
        dict(raw=b"[1, 2]"),
        "the answer has the wrong shape: expected an object, got an array",
    ),
    "error without an object": (
        dict(raw=b'{"detail": "nope"}', status=404),
        "HTTP 404 without an error object",
    ),
    "server error": (
        dict(raw=b'{"error": {"code": "system_error", "message": "boom\\nagain"}}', status=500),
        "HTTP 500 system_error: boom again",
    ),
    "cut short": (dict(raw=b'{"hits": [', length=500), "IncompleteRead"),
    "unknown atom": (
        dict(raw=b'{"hits": [["never-ingested", 1.0]], "cartridge": []}'),
        "hit 'never-ingested' was never reported at ingest",
    ),
}


@pytest.mark.parametrize("kind", list(GARBAGE))
def test_garbage_is_one_clear_line_and_the_run_resumes(
    kind, reference, built, corpus_root, tmp_path, capsys
):
    kw, expected = GARBAGE[kind]
    out = tmp_path / "run"
    with thread_server(Wrapped, [corpus_root], garbage(12, **kw)) as (url, _):
        assert run_cli(url, built, corpus_root, out, *FAST) == 2
    line = error_line(capsys)
    assert expected in line, line
    # every error about an answer names the query: the call's, or the runner's own check's
    if kind != "unknown atom":
        assert line.startswith(f"membench: POST {url}/ingests/") and re.search(
            r"/query \(query t[0-9a-f]{16}\): ", line
        ), line  # the topic's opaque qid
    else:
        assert named_query(line).startswith("hit 'never-ingested'"), line
    with thread_server(Wrapped, [corpus_root]) as (url, _):
        resume_and_check(url, built, corpus_root, out, reference, capsys, 12)


def test_a_server_that_dies_mid_run_leaves_a_resumable_run(
    reference, built, corpus_root, tmp_path, capsys
):
    out = tmp_path / "run"
    with serve_process(
        "--system", "http_helpers:DiesAfter", "--config", "after=25", "--corpus", str(corpus_root)
    ) as (url, proc):
        assert run_cli(url, built, corpus_root, out, *FAST) == 2
        assert proc.wait(20) == 3  # it died on query 26
    line = error_line(capsys)
    assert (
        line.startswith(f"membench: POST {url}/ingests/")
        and re.search(r"/query \(query [^)]+\): connection ", line)
        and "(2 attempts in " in line
    ), line
    # back, on another port: the URL is not part of the run's config
    with serve_process("--system", "bm25", "--corpus", str(corpus_root)) as (url2, _):
        resume_and_check(url2, built, corpus_root, out, reference, capsys, 25)


def test_no_server_is_a_clear_line_and_writes_nothing(built, corpus_root, tmp_path, capsys):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "run"
    assert run_cli(f"http://127.0.0.1:{port}", built, corpus_root, out, *FAST) == 2
    line = error_line(capsys)
    assert line.startswith(
        f"membench: GET http://127.0.0.1:{port}/health: connection refused "
        "(is the server running?) (2 attempts in "
    ), line
    assert not out.exists()


def test_a_failed_ingest_says_why(built, corpus_root, tmp_path, capsys):
    with thread_server(FailsIngest, [corpus_root]) as (url, service):
        assert run_cli(url, built, corpus_root, tmp_path / "run", *FAST) == 2
    assert "RuntimeError: the index is corrupt" in service.log.getvalue()  # the server's log
    line = error_line(capsys)
    assert (
        f"PUT {url}/ingests/" in line
        and "the system's ingest failed on the server: RuntimeError: the index is corrupt" in line
    ), line


def test_a_server_that_forgot_the_memory_says_so(built, corpus_root):
    data = load_split(built.out, "dev", ["conversation"], limit=3)
    with thread_server(Wrapped, [corpus_root]) as (url, service):
        client = HttpSystem(url, read_timeout=5)
        client.ingest(data.items, corpus_root)
        r = data.records[0]
        client.query(r.question, r.scope, r.as_of)
        service.current = None  # as a restarted server
        with pytest.raises(
            HttpSystemError,
            match="the server no longer holds this run's "
            r"memory \(restarted\?\); re-run the same `membench run`",
        ):
            client.query(r.question, r.scope, r.as_of)


def test_transient_failures_are_retried_with_backoff(built, corpus_root, tmp_path):
    fails = {"left": 2}

    class Flaky(Handler):
        def _serve(self, method):
            if self.path.endswith("/query") and fails["left"]:
                fails["left"] -= 1
                self._body()
                self._answer(503, {"error": {"code": "busy", "message": "restarting"}})
                return
            super()._serve(method)

    with thread_server(Wrapped, [corpus_root], Flaky) as (url, _):
        system = HttpSystem(url, retries=2, backoff=0.01)
        run_system(
            system,
            built.out,
            "dev",
            tmp_path / "run",
            corpus_root,
            modalities=["conversation"],
            limit=5,
        )
    assert system.retried == 2 and len(run_lines(tmp_path / "run")) == 5
    fails["left"] = 5  # more failures than retries: an error
    with thread_server(Wrapped, [corpus_root], Flaky) as (url, _):
        system = HttpSystem(url, retries=2, backoff=0.01)
        with pytest.raises(
            HttpSystemError,
            match=r"/query \(query [^)]+\): HTTP 503 \(3 attempts "
            r"in ",
        ):
            run_system(
                system,
                built.out,
                "dev",
                tmp_path / "run2",
                corpus_root,
                modalities=["conversation"],
                limit=5,
            )


class BadCard(Wrapped):
    def __init__(self):
        super().__init__()
        self.name = "../../etc"  # it would name runs/../../etc-dev


def test_the_card_and_health_are_checked(corpus_root):
    with pytest.raises(MembenchError, match="cannot be served: its card: name"):
        thread_server(BadCard, [corpus_root]).__enter__()

    class OtherProtocol(Handler):
        def _serve(self, method):
            self._answer(200, {"protocol": "membench-http/2", "status": "ok"})

    with thread_server(Wrapped, [corpus_root], OtherProtocol) as (url, _):
        with pytest.raises(
            HttpSystemError,
            match=r"GET .*/health: the answer has the wrong "
            "shape: protocol: speaks 'membench-http/2', membench speaks "
            "'membench-http/1'",
        ):
            HttpSystem(url)


def test_the_server_reads_only_under_its_corpus_root(built, corpus_root, tmp_path, capsys):
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    with thread_server(Wrapped, [elsewhere]) as (url, _):
        assert run_cli(url, built, corpus_root, tmp_path / "run", *FAST) == 2
    line = error_line(capsys)
    assert (
        f"HTTP 403 corpus_root_refused: corpus_root {corpus_root}: this server reads only "
        f"under {elsewhere}" in line
    ), line


@pytest.mark.parametrize(
    "config,why",
    [
        ({"read_timeout": 0}, "read_timeout=0: expected a number > 0"),
        ({"retries": 1.5}, "retries=1.5: expected an integer >= 0"),
        ({"batch_items": True}, "batch_items=True: expected an integer > 0"),
    ],
)
def test_client_config_is_checked(config, why):
    with pytest.raises(MembenchError, match=why):
        make_system("http://127.0.0.1:9", config)


@pytest.mark.parametrize(
    "url", ["ftp://x:1", "http://", "http://h:1/?q=1", "http://u:p@h:1", "http://h:99999"]
)
def test_bad_urls_are_refused(url):
    with pytest.raises(MembenchError, match="--system"):
        HttpSystem(url)


def test_serve_warns_off_the_loopback_address(monkeypatch, capsys, corpus_root):
    from membench.serve import server

    def listen(*a, **k):
        raise MembenchError("not listening in a test")

    monkeypatch.setattr(server, "make_server", listen)
    with pytest.raises(MembenchError, match="not listening in a test"):
        server.serve("random", {}, "0.0.0.0", 0, corpus_root)
    err = capsys.readouterr().err
    assert (
        "WARNING: listening on 0.0.0.0, not a loopback address" in err
        and "no authentication" in err
    )
    with pytest.raises(MembenchError, match="not listening in a test"):
        server.serve("random", {}, "127.0.0.1", 0, corpus_root)
    assert "WARNING" not in capsys.readouterr().err
    assert all(map(server.is_loopback, ["127.0.0.1", "127.4.5.6", "::1", "localhost"]))
    assert not any(map(server.is_loopback, ["0.0.0.0", "::", "10.0.0.1", "example.org"]))


def test_serve_refuses_a_system_that_reads_gold(corpus_root):
    from membench.serve.server import SystemService

    with pytest.raises(MembenchError, match="gold"):
        SystemService(lambda: make_system("oracle"), [corpus_root])
