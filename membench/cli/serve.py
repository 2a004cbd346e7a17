"""``membench serve``: a Python memory system served over HTTP (membench-http/1) for
``membench run --system http://HOST:PORT``, through :func:`membench.serve.server.serve`.
:func:`membench.cli.main` runs it without the "still working" heartbeat lines (a server waits
for requests on purpose)."""

from __future__ import annotations

import argparse

from ..core.paths import corpus_root
from .common import CONTENT_HELP, CORPUS_HELP, FMT, TRUST, _content, _parse_config, port_number


def _serve_cmd(a: argparse.Namespace) -> int:
    from ..serve.server import serve

    _content(a.content)
    serve(
        a.system, _parse_config(a.config), a.host, a.port, corpus_root(a.corpus), exit_on_stop=True
    )
    return 0


def _add_serve(sub) -> None:
    sv = sub.add_parser(
        "serve",
        help="serve a Python memory system over HTTP (membench-http/1) "
        "for `membench run --system http://HOST:PORT`",
        formatter_class=FMT,
        epilog=TRUST,
        description="""\
Serve a memory system on the membench-http/1 protocol (docs/systems.md, docs/openapi.json):
health, card, ingest (batched items in, atoms out) and query. The server reads the item files
under the corpus root the client names, which must lie inside --corpus. It listens on
127.0.0.1 unless --host says otherwise (another address prints a warning: there is no
authentication). Ctrl-C stops it.""",
    )
    sv.add_argument(
        "--system",
        required=True,
        help="a registered name (bm25, dense, hybrid, "
        "...), an entry point in the membench.systems group, or module:Class",
    )
    sv.add_argument(
        "--config",
        action="append",
        metavar="KEY=VALUE",
        help="system parameter (JSON value), repeatable",
    )
    sv.add_argument("--content", action="append", metavar="KEY=VALUE", help=CONTENT_HELP)
    sv.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default "
        "127.0.0.1; anything but a loopback address is reachable from elsewhere)",
    )
    sv.add_argument(
        "--port", type=port_number, required=True, help="port to listen on (0: a free one, printed)"
    )
    sv.add_argument("--corpus", help=CORPUS_HELP + "; the only files the server reads")
    sv.set_defaults(func=_serve_cmd)


COMMANDS = {"serve": _add_serve}


def register(sub, name: str) -> None:
    """Add the subcommand ``name`` (a key of :data:`COMMANDS`) to the subparsers ``sub``."""
    COMMANDS[name](sub)
