"""Servers for the HTTP tests: ``membench serve`` in a subprocess or the same service in a
thread, and systems that misbehave on purpose (hang, die, fail). Every server a test starts
is stopped when its ``with`` block ends, however the test ends."""

from __future__ import annotations

import io
import json
import os
import re
import selectors
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

from membench.serve.server import Handler, SystemService, make_server
from membench.systems import make_system

TESTS = Path(__file__).resolve().parent


def run_lines(run_dir: Path) -> dict[str, dict]:
    """``run.jsonl`` by query id, latency dropped; a query answered twice is an error."""
    out: dict[str, dict] = {}
    for line in (Path(run_dir) / "run.jsonl").read_text().splitlines():
        row = json.loads(line)
        row.pop("latency_ms")
        qid = row.pop("query_id")
        assert qid not in out, f"{qid} answered twice"
        out[qid] = row
    return out


class Wrapped:
    """bm25 (or ``inner``) with the same name and config, so a run resumes across it."""

    def __init__(self, inner: str = "bm25", **config):
        self.inner = make_system(inner, config)
        self.name = self.inner.name
        self.queries = 0
        self.ingests = 0

    def config(self):
        return self.inner.config()

    def ingest(self, items, root):
        self.ingests += 1
        return self.inner.ingest(items, root)

    def query(self, q, scope, as_of):
        self.queries += 1
        return self.inner.query(q, scope, as_of)


class DiesAfter(Wrapped):
    """The server process dies (``os._exit``) on query ``after + 1``, mid-answer."""

    def __init__(self, after: int, **kw):
        super().__init__(**kw)
        self.after = after

    def query(self, q, scope, as_of):
        if self.queries >= self.after:
            os._exit(3)
        return super().query(q, scope, as_of)


class HangsAfter(Wrapped):
    """Query ``after + 1`` and every later one wait until ``release`` is set (a hung server)."""

    def __init__(self, after: int, release: threading.Event, **kw):
        super().__init__(**kw)
        self.after, self.release = after, release

    def query(self, q, scope, as_of):
        if self.queries >= self.after:
            self.release.wait(60)
        return super().query(q, scope, as_of)


class FailsIngest(Wrapped):
    def ingest(self, items, root):
        raise RuntimeError("the index is corrupt")


@contextmanager
def thread_server(factory, roots, handler: type[Handler] = Handler):
    """``membench serve``'s service in a thread of this process: ``(url, service)``; the
    server's own log goes to ``service.log`` (a StringIO), apart from the client's output."""
    service = SystemService(factory, [Path(r) for r in roots], log=io.StringIO())
    srv = make_server(service, "127.0.0.1", 0, handler)
    t = threading.Thread(target=srv.serve_forever, name="test-http-server", daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", service
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(10)


@contextmanager
def serve_process(*args: str, timeout: float = 180.0):
    """``membench serve ARGS --port 0`` in a subprocess: ``(url, process)``; the URL is read
    from the line it prints when it listens."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    p = subprocess.Popen(
        [sys.executable, "-m", "membench", "serve", *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        sel = selectors.DefaultSelector()
        sel.register(p.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise AssertionError(f"membench serve {' '.join(args)}: no line in {timeout} s")
        line = p.stdout.readline()
        m = re.search(r" on (http://127\.0\.0\.1:\d+) ", line)
        if not m:
            p.kill()
            raise AssertionError(f"membench serve did not start: {line!r} {p.stderr.read()!r}")
        yield m.group(1), p
    finally:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(20)
        for f in (p.stdout, p.stderr):
            f.close()


class NativeIngest(Wrapped):
    """A system whose ingest sits in native code (libc's sleep through ctypes, the GIL
    released), as OCR or an embedding runtime does, and touches ``$MEMBENCH_TEST_GATE``
    first so a test knows it is there."""

    def ingest(self, items, root):
        import ctypes

        gate = os.environ.get("MEMBENCH_TEST_GATE")
        if gate:
            Path(gate).write_text("ingesting")
        ctypes.CDLL(None).sleep(120)
        return super().ingest(items, root)


class RaisesOnQuery(Wrapped):
    """A system whose query raises (a two-line message: the server's log must stay one line)."""

    def query(self, q, scope, as_of):
        raise RuntimeError("the index is corrupt\nsecond line of the message")


class NoneOnQuery(Wrapped):
    """A system whose query returns None instead of a Result."""

    def query(self, q, scope, as_of):
        return None


class NoneOnIngest(Wrapped):
    """A system whose ingest returns None instead of its atoms."""

    def ingest(self, items, root):
        return None
