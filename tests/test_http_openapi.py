"""docs/openapi.json is what the server really does: a valid OpenAPI 3.1 document whose every
path and method the server routes (and no other), and whose request and response schemas
validate (jsonschema, draft 2020-12) every exchange of a real run over HTTP and of the
server's error answers. The client's own checks (:mod:`membench.contract.wire`) refuse
every answer the document refuses, on mutations of real answers."""

from __future__ import annotations

import copy
import http.client
import json
import re
import threading
from urllib.parse import parse_qs, urlsplit

import pytest
from http_helpers import Wrapped, thread_server
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi

from membench.contract import wire
from membench.core.paths import REPO_ROOT
from membench.run.runner import load_split, run_system
from membench.serve.server import SystemService
from membench.systems import remote as client_mod
from membench.systems.remote import HttpSystem

SPEC = json.loads((REPO_ROOT / "docs" / "openapi.json").read_text())
METHODS = ("get", "put", "post", "delete", "patch")


def validator(schema: dict) -> Draft202012Validator:
    return Draft202012Validator({**schema, "components": SPEC["components"]})


def operation(method: str, target: str):
    """(template, operation, path parameters, query parameters) of a request, or None."""
    url = urlsplit(target)
    parts = url.path.strip("/").split("/")
    for template, item in SPEC["paths"].items():
        tparts = template.strip("/").split("/")
        if len(tparts) != len(parts) or method.lower() not in item:
            continue
        params = {}
        for t, p in zip(tparts, parts):
            if t.startswith("{"):
                params[t[1:-1]] = p
            elif t != p:
                break
        else:
            return template, item[method.lower()], params, parse_qs(url.query)
    return None


def test_the_document_is_valid_openapi_3_1():
    validate_openapi(SPEC)
    assert SPEC["openapi"].startswith("3.1") and SPEC["info"]["title"] == wire.PROTOCOL


def test_the_document_and_the_server_route_the_same_calls():
    documented = {
        (m.upper(), tuple(None if p.startswith("{") else p for p in path.strip("/").split("/")))
        for path, item in SPEC["paths"].items()
        for m in item
        if m in METHODS
    }
    routed = {(m, pattern) for m, pattern, _ in SystemService.ROUTES}
    assert documented == routed


class Recorder:
    """Records every exchange of the client (the bytes it sent and got)."""

    def __init__(self, monkeypatch):
        self.exchanges: list[dict] = []
        real = client_mod._Connection.request

        def request(conn, method, path, body, *args):
            status, ctype, raw = real(conn, method, path, body, *args)
            self.exchanges.append(
                {
                    "method": method,
                    "path": path,
                    "request": None if body is None else json.loads(body),
                    "status": status,
                    "ctype": ctype,
                    "response": json.loads(raw),
                }
            )
            return status, ctype, raw

        monkeypatch.setattr(client_mod._Connection, "request", request)


def raw_call(url: str, method: str, path: str, body: bytes | None = None) -> dict:
    u = urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.request(method, path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        try:
            sent = None if body is None else json.loads(body)
        except ValueError:
            sent = body.decode()
        return {
            "method": method,
            "path": path,
            "request": sent,
            "status": r.status,
            "ctype": r.getheader("Content-Type"),
            "response": json.loads(r.read()),
        }
    finally:
        c.close()


class Confident(Wrapped):
    """bm25 that also reports a confidence (its top-1 score) where it has hits."""

    def query(self, q, scope, as_of):
        from membench.contract.protocol import Result

        res = super().query(q, scope, as_of)
        return Result(res.hits, res.cartridge, confidence=res.hits[0][1] if res.hits else None)


class SlowIngest(Wrapped):
    gate = threading.Event()

    def ingest(self, items, root):
        self.gate.wait(60)
        return super().ingest(items, root)


@pytest.fixture(scope="module")
def exchanges(built, corpus_root, tmp_path_factory):
    """A real run over HTTP (several batches and atom pages), then the server's error answers."""
    mp = pytest.MonkeyPatch()
    rec = Recorder(mp)
    try:
        run_dir = tmp_path_factory.mktemp("oa") / "run"
        with thread_server(Confident, [corpus_root]) as (url, service):
            system = HttpSystem(url, batch_items=7, page_atoms=40)
            run_system(
                system, built.out, "dev", run_dir, corpus_root, modalities=["conversation"], limit=8
            )
            iid = service.current.ingest_id
            errors = [
                raw_call(url, "GET", "/ingests/nope"),
                raw_call(url, "GET", "/nothing/here"),
                raw_call(url, "DELETE", "/health"),
                raw_call(url, "PUT", "/ingests/x1/batches/0", b"{not json"),
                raw_call(
                    url,
                    "PUT",
                    "/ingests/x1/batches/0",
                    json.dumps({"items": [{"source_id": "s"}]}).encode(),
                ),
                raw_call(url, "PUT", "/ingests/x1/batches/1", json.dumps({"items": []}).encode()),
                raw_call(
                    url,
                    "PUT",
                    "/ingests/x1",
                    json.dumps(
                        {"corpus_root": str(corpus_root), "batches": 1, "items": 0}
                    ).encode(),
                ),
                raw_call(
                    url,
                    "PUT",
                    "/ingests/x1",
                    json.dumps({"corpus_root": "/", "batches": 2, "items": 0}).encode(),
                ),
                raw_call(
                    url,
                    "POST",
                    "/ingests/x1/query",
                    json.dumps(
                        {
                            "question": "q",
                            "scope": {"holder": "h", "scenario": "s"},
                            "as_of": "2024-01-01T00:00:00+00:00",
                        }
                    ).encode(),
                ),
                raw_call(url, "GET", "/ingests/x1/atoms?offset=-1"),
                raw_call(url, "PUT", "/ingests/bad$id/batches/0", b'{"items": []}'),
                raw_call(url, "PUT", "/ingests/x2/batches/1000000", b'{"items": []}'),
                raw_call(
                    url,
                    "PUT",
                    "/ingests/x2",
                    json.dumps(
                        {"corpus_root": str(corpus_root), "batches": 10**10, "items": 0}
                    ).encode(),
                ),
            ]
        with thread_server(SlowIngest, [corpus_root]) as (url, service):
            items = load_split(built.out, "dev", ["conversation"], limit=1).items
            rows = [wire.item_row(it) for it in items]
            raw_call(url, "PUT", "/ingests/slow/batches/0", json.dumps({"items": rows}).encode())
            running = [
                raw_call(
                    url,
                    "PUT",
                    "/ingests/slow",
                    json.dumps(
                        {"corpus_root": str(corpus_root), "batches": 1, "items": len(rows)}
                    ).encode(),
                ),
                raw_call(url, "GET", "/ingests/slow"),
                raw_call(url, "GET", "/ingests/slow/atoms"),
                raw_call(url, "POST", "/ingests/slow/query", b"{}"),
                raw_call(url, "PUT", "/ingests/other/batches/0", b'{"items": []}'),
            ]
            SlowIngest.gate.set()
    finally:
        mp.undo()
    return {"run": rec.exchanges, "errors": errors + running, "ingest_id": iid, "run_dir": run_dir}


def test_a_reported_confidence_travels_to_the_run_lines(exchanges):
    """The server sends a system's confidence with its answer, the client reads it, the
    runner writes it in the query's run line (the abstention measures read it)."""
    sent = [
        ex["response"]["confidence"]
        for ex in exchanges["run"]
        if ex["path"].endswith("/query") and "confidence" in ex["response"]
    ]
    assert sent
    lines = [json.loads(x) for x in (exchanges["run_dir"] / "run.jsonl").read_text().splitlines()]
    assert sorted(r["confidence"] for r in lines if "confidence" in r) == sorted(sent)
    for r in lines:
        assert ("confidence" in r) == bool(r["hits"])
        if r["hits"]:
            assert r["confidence"] == r["hits"][0][1]


def test_every_documented_call_happened_in_the_real_run(exchanges):
    seen = set()
    for ex in exchanges["run"]:
        template, *_ = operation(ex["method"], ex["path"])
        if 200 <= ex["status"] < 300:
            seen.add((template, ex["method"].lower()))
    documented = {(p, m) for p, item in SPEC["paths"].items() for m in item if m in METHODS}
    assert seen == documented
    pages = [ex for ex in exchanges["run"] if ex["path"].split("?")[0].endswith("/atoms")]
    batches = [ex for ex in exchanges["run"] if "/batches/" in ex["path"]]
    assert len(pages) > 1 and len(batches) > 1  # paging and batching were exercised


def _param_value(param: dict, text: str):
    return (
        int(text)
        if param["schema"].get("type") == "integer" and re.fullmatch(r"-?[0-9]+", text)
        else text
    )


def check_exchange(ex: dict) -> None:
    found = operation(ex["method"], ex["path"])
    if found is None:  # an unknown path or method: still an error body
        assert ex["status"] in (404, 405), ex
        errs = list(validator({"$ref": "#/components/schemas/Error"}).iter_errors(ex["response"]))
        assert not errs, (ex, errs[0].message)
        return
    template, op, path_params, query = found
    assert str(ex["status"]) in op["responses"], (
        f"{ex['method']} {template}: status {ex['status']} is not documented ({ex['response']})"
    )
    schema = op["responses"][str(ex["status"])]["content"]["application/json"]["schema"]
    errs = list(validator(schema).iter_errors(ex["response"]))
    assert not errs, f"{ex['method']} {ex['path']} -> {ex['status']}: {errs[0].message}"
    assert "json" in ex["ctype"]
    if 200 <= ex["status"] < 300:  # a request the server took is a documented request
        for p in op.get("parameters", []):
            values = [path_params[p["name"]]] if p["in"] == "path" else query.get(p["name"], [])
            assert values or not p.get("required"), (template, p["name"])
            for v in values:
                errs = list(validator(p["schema"]).iter_errors(_param_value(p, v)))
                assert not errs, (template, p["name"], v, errs[0].message)
        if "requestBody" in op:
            body_schema = op["requestBody"]["content"]["application/json"]["schema"]
            errs = list(validator(body_schema).iter_errors(ex["request"]))
            assert not errs, (
                f"{ex['method']} {template} request: {errs[0].message} at "
                f"{list(errs[0].absolute_path)}"
            )
        else:
            assert ex["request"] is None


def test_every_real_exchange_validates(exchanges):
    assert len(exchanges["run"]) > 10
    for ex in exchanges["run"]:
        check_exchange(ex)


def test_every_error_answer_validates(exchanges):
    statuses = set()
    for ex in exchanges["errors"]:
        check_exchange(ex)
        statuses.add(ex["status"])
        assert ex["status"] < 300 or wire.error_of(ex["response"]) is not None, ex
    assert {400, 403, 404, 405, 409, 413} <= statuses


# --------------------------------------------------------------------------- the client's checks


def client_check(ex: dict, value):
    template, _, params, query = operation(ex["method"], ex["path"])
    iid = params.get("ingest_id")
    if ex["status"] >= 400:  # the client reads the code and message, or refuses
        if wire.error_of(value) is None:
            raise wire.ShapeError("error", "not an error object")
        return value
    if template == "/health":
        return wire.check_health(value)
    if template == "/card":
        return wire.check_card(value)
    if template.endswith("/batches/{seq}"):
        return wire.check_batch_answer(value, iid, int(params["seq"]), len(ex["request"]["items"]))
    if template == "/ingests/{ingest_id}":
        return wire.check_status(value, iid)
    if template.endswith("/atoms"):
        return wire.check_atoms_page(value, int(query["offset"][0]))
    if template.endswith("/query"):
        return wire.check_query_answer(value)
    raise AssertionError(template)


WRONG = ["x", "", 1, -1, 1.5, True, None, [], {}, [1], {"a": 1}]


def mutations(value, path=(), depth=0):
    """(path, mutated copy of the root) pairs: a key dropped, a value of another type."""
    if isinstance(value, dict):
        for k in value:
            yield path + (k,), ("drop", k)
            yield from mutations(value[k], path + (k,), depth + 1)
        yield path + ("unexpected",), ("add", "unexpected")
    elif isinstance(value, list) and value:
        for i in sorted({0, len(value) - 1}):  # the first and the last element
            yield from mutations(value[i], path + (i,), depth + 1)
        yield path, ("long", None)
    if depth:
        for w in WRONG:
            yield path, ("set", w)


def apply(root, path, how):
    """A copy of ``root`` with ``how`` done at ``path``."""
    root = copy.deepcopy(root)
    kind, arg = how
    node = root
    for p in path if kind == "long" else path[:-1]:
        node = node[p]
    if kind == "drop":
        del node[arg]
    elif kind == "add":
        node[arg] = 1
    elif kind == "long":
        node.extend([node[0]] * 1001)
    else:
        node[path[-1]] = arg
    return root


def test_the_client_refuses_every_answer_the_document_refuses(exchanges):
    checked = refused = 0
    for ex in exchanges["run"] + exchanges["errors"]:
        if operation(ex["method"], ex["path"]) is None:
            continue  # an unknown path: no documented answer to mutate
        template, op, *_ = operation(ex["method"], ex["path"])
        schema = op["responses"][str(ex["status"])]["content"]["application/json"]["schema"]
        v = validator(schema)
        client_check(ex, ex["response"])  # the real answer passes both
        for path, how in mutations(ex["response"]):
            try:
                bad = apply(ex["response"], path, how)
            except (IndexError, KeyError, TypeError):
                continue
            if v.is_valid(bad):
                continue
            checked += 1
            with pytest.raises(wire.ShapeError):
                client_check(ex, bad)
                pytest.fail(f"{template}: the client took {how} at {path}")
            refused += 1
    assert checked > 500 and refused == checked
