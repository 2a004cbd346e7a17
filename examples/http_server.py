"""A memory system over HTTP (membench-http/1, docs/openapi.json), standard library only: the
word-overlap memory of overlap.py behind the protocol's seven calls. One memory at a time, the
ingest done when the commit arrives. Run: .venv/bin/python examples/http_server.py 8766"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from overlap import atoms_of, rank

PROTOCOL = "membench-http/1"
batches, memories = {}, {}  # ingest id -> {seq: items}; ingest id -> (status, atoms)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one connection for the run
    disable_nagle_algorithm = True  # else ~40 ms per answer (delayed ACKs)

    def answer(self, status, body):
        data = json.dumps(body, allow_nan=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def route(self, method):
        url = urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        size = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(size)) if size else None
        if parts == ["health"]:
            return self.answer(200, {"protocol": PROTOCOL, "status": "ok"})
        if parts == ["card"]:
            return self.answer(
                200,
                {
                    "protocol": PROTOCOL,
                    "name": "overlap-http",
                    "config": {"top": 3, "cartridge_share": 0.5},
                },
            )
        iid, rest = parts[1] if len(parts) > 1 else "", parts[2:]
        if method == "PUT" and rest[:1] == ["batches"]:
            batches.setdefault(iid, {})[int(rest[1])] = body["items"]
            return self.answer(
                200, {"ingest_id": iid, "seq": int(rest[1]), "received": len(body["items"])}
            )
        if method == "PUT" and not rest:  # the commit: ingest now, answer "done"
            items = [it for _, part in sorted(batches.pop(iid, {}).items()) for it in part]
            atoms = atoms_of(items)
            memories[iid] = (
                {
                    "ingest_id": iid,
                    "state": "done",
                    "items": len(items),
                    "atoms": len(atoms),
                    "error": None,
                },
                atoms,
            )
        if iid not in memories:
            return self.answer(404, {"error": {"code": "unknown_ingest", "message": iid}})
        status, atoms = memories[iid]
        if method == "GET" and rest == ["atoms"]:
            q = parse_qs(url.query)
            offset, limit = int(q["offset"][0]), int(q["limit"][0])
            end = min(offset + limit, len(atoms))
            return self.answer(
                200,
                {
                    "atoms": atoms[offset:end],
                    "offset": offset,
                    "total": len(atoms),
                    "next_offset": end if end < len(atoms) else None,
                },
            )
        if method == "POST" and rest == ["query"]:
            hits, cartridge = rank(atoms, body["question"], body["scope"]["holder"], body["as_of"])
            return self.answer(200, {"hits": hits, "cartridge": cartridge})
        return self.answer(200, status)  # GET /ingests/{id}, and the commit

    def do_GET(self):
        self.route("GET")

    def do_PUT(self):
        self.route("PUT")

    def do_POST(self):
        self.route("POST")


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
