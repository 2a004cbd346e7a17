"""The ``membench-http/1`` protocol: paths, JSON shapes, and the checks both ends apply.

Every body is one JSON object (UTF-8); ``{id}`` is an ingest id (``[A-Za-z0-9_-]``, 1 to 64
characters), ``{seq}`` a batch number from 0:

* ``GET /health`` -> ``{"protocol": "membench-http/1", "status": "ok"}``;
* ``GET /card`` -> ``{"protocol", "name", "config"}``, optionally ``"card"``
  (:class:`membench.systems.cards.Card`): who the system is and what determines its output;
* ``PUT /ingests/{id}/batches/{seq}`` ``{"items": [item, ...]}`` -> ``{"ingest_id", "seq",
  "received"}`` (a batch sent again replaces itself);
* ``PUT /ingests/{id}`` ``{"corpus_root", "batches", "items"}`` (commit) -> a status;
* ``GET /ingests/{id}`` -> ``{"ingest_id", "state", "items", "atoms", "error"}``, state
  ``receiving``, ``running``, ``done`` or ``failed``;
* ``GET /ingests/{id}/atoms?offset=&limit=`` -> ``{"atoms", "offset", "total", "next_offset"}``
  (``next_offset`` null on the last page);
* ``POST /ingests/{id}/query`` ``{"question", "scope", "as_of"}`` -> ``{"hits": [[atom_id,
  score], ...], "cartridge": [atom_id, ...]}``, optionally ``"confidence"`` (a number or null).

An *item* is a line of ``bench/sets/items.jsonl`` (a :class:`membench.contract.schema.SourceItem`),
an *atom* a line of a run's ``atoms.jsonl``; a failure is a 4xx/5xx status with ``{"error":
{"code", "message"}}``. The client chooses the ingest id (:func:`ingest_id`: a digest of the
corpus root and the items). The ``check_*`` functions are what the client applies to every
answer and the server to every request (:class:`ShapeError` says where: ``hits[3][1]``). Touches
nothing. docs/openapi.json describes the same shapes (``tests/test_http_openapi.py``), and
docs/your-system.md, "2. Over HTTP, in any language", explains them.
"""

from __future__ import annotations

import hashlib
import math
import re
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..core.ids import id_problem
from ..core.jsonl import dumps
from .protocol import MAX_DEPTH, Atom, Result
from .schema import Scope, SourceItem, Timestamp

PROTOCOL = "membench-http/1"
STATES = ("receiving", "running", "done", "failed")
#: a system's name: it names files (``runs/<name>-dev``, ``bench/calibration/<name>.json``)
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
INGEST_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: ISO 8601 with a timezone offset (docs/openapi.json's Timestamp)
TIMESTAMP_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?"
    r"(Z|[+-][0-9]{2}:?[0-9]{2})"
)
ATOM_KEYS = frozenset(
    {"atom_id", "source_id", "modality", "holder", "observed_at", "extent", "text"}
)

_TS = TypeAdapter(Timestamp)


class ShapeError(ValueError):
    """A JSON value without the protocol's shape: ``where`` is its place (``hits[3][1]``)."""

    def __init__(self, where: str, message: str):
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}" if where else message)


def _short(v: Any, n: int = 60) -> str:
    try:
        s = repr(v)
    except (ValueError, RecursionError):
        s = f"a {type(v).__name__}"
    return s if len(s) <= n else s[:n] + "..."


def _kind(v: Any) -> str:
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
    }.get(type(v), "a number" if isinstance(v, (int, float)) else type(v).__name__)


def obj(v: Any, where: str) -> dict:
    if not isinstance(v, dict):
        raise ShapeError(where, f"expected an object, got {_kind(v)}")
    return v


def field(o: dict, key: str, where: str) -> Any:
    if key not in o:
        raise ShapeError(f"{where}.{key}" if where else key, "missing")
    return o[key]


def string(v: Any, where: str, *, nonempty: bool = True) -> str:
    if not isinstance(v, str):
        raise ShapeError(where, f"expected a string, got {_kind(v)} {_short(v)}")
    if nonempty and not v:
        raise ShapeError(where, "must not be empty")
    return v


def identifier(v: Any, where: str) -> str:
    """An atom id: a string in the identifier grammar (:mod:`membench.core.ids`)."""
    why = id_problem(string(v, where))
    if why:
        raise ShapeError(where, why)
    return v


def integer(v: Any, where: str, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ShapeError(where, f"expected an integer, got {_kind(v)} {_short(v)}")
    if v < minimum:
        raise ShapeError(where, f"must be >= {minimum}, got {v}")
    return v


def number(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ShapeError(where, f"expected a number, got {_kind(v)} {_short(v)}")
    try:
        f = float(v)
    except OverflowError:
        raise ShapeError(where, "number too large for a float") from None
    if not math.isfinite(f):
        raise ShapeError(where, "must be finite")
    return f


def array(v: Any, where: str) -> list:
    if not isinstance(v, list):
        raise ShapeError(where, f"expected an array, got {_kind(v)}")
    return v


def _path(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _sub(o: dict, key: str, where: str) -> tuple[Any, str]:
    return field(o, key, where), _path(where, key)


# --------------------------------------------------------------------------- answers (client)


def check_protocol(o: dict, where: str = "") -> None:
    p = string(*_sub(o, "protocol", where))
    if p != PROTOCOL:
        raise ShapeError(
            _path(where, "protocol"), f"speaks {_short(p)}, membench speaks {PROTOCOL!r}"
        )


def check_health(v: Any) -> dict:
    o = obj(v, "")
    check_protocol(o)
    s = string(*_sub(o, "status", ""))
    if s != "ok":
        raise ShapeError("status", f"expected 'ok', got {_short(s)}")
    return o


def check_card(v: Any) -> dict:
    o = obj(v, "")
    check_protocol(o)
    name = string(*_sub(o, "name", ""))
    if not NAME_RE.fullmatch(name):
        raise ShapeError(
            "name",
            f"{_short(name)} cannot name a run (letters, digits, '.', "
            "'_', '-'; at most 64, starting with a letter or digit)",
        )
    obj(*_sub(o, "config", ""))
    if o.get("card") is not None:
        obj(o["card"], "card")
    return o


def check_batch_answer(v: Any, iid: str, seq: int, n: int) -> dict:
    o = obj(v, "")
    if string(*_sub(o, "ingest_id", "")) != iid:
        raise ShapeError("ingest_id", f"{_short(o['ingest_id'])}, but the batch was sent to {iid}")
    if integer(*_sub(o, "seq", "")) != seq:
        raise ShapeError("seq", f"{o['seq']}, but batch {seq} was sent")
    if integer(*_sub(o, "received", "")) != n:
        raise ShapeError("received", f"{o['received']} items, but {n} were sent")
    return o


def check_status(v: Any, iid: str) -> dict:
    o = obj(v, "")
    if string(*_sub(o, "ingest_id", "")) != iid:
        raise ShapeError("ingest_id", f"{_short(o['ingest_id'])}, but {iid} was asked")
    state = string(*_sub(o, "state", ""))
    if state not in STATES:
        raise ShapeError("state", f"{_short(state)} is none of {', '.join(STATES)}")
    integer(*_sub(o, "items", ""))
    atoms = field(o, "atoms", "")
    if atoms is not None:
        integer(atoms, "atoms")
    elif state == "done":
        raise ShapeError("atoms", "null, but the state is 'done'")
    err = o.get("error")
    if err is not None:
        string(err, "error", nonempty=False)
    return o


def atom_from_row(v: Any, where: str) -> Atom:
    """An atom row (a line of atoms.jsonl) -> :class:`Atom`; no key beyond :data:`ATOM_KEYS`."""
    o = obj(v, where)
    extra = sorted(set(o) - ATOM_KEYS)
    if extra:
        raise ShapeError(_path(where, extra[0]), "not a field of an atom")
    obs = string(*_sub(o, "observed_at", where))
    try:
        if not TIMESTAMP_RE.fullmatch(obs):
            raise ValueError
        at = datetime.fromisoformat(obs)
    except ValueError:
        raise ShapeError(
            _path(where, "observed_at"), f"{_short(obs)} is not ISO 8601 with a timezone offset"
        ) from None
    text = o.get("text", "")
    return Atom(
        atom_id=identifier(*_sub(o, "atom_id", where)),
        source_id=string(*_sub(o, "source_id", where)),
        modality=string(*_sub(o, "modality", where)),
        holder=string(*_sub(o, "holder", where)),
        observed_at=at,
        extent=obj(*_sub(o, "extent", where)),
        text=string(text, _path(where, "text"), nonempty=False),
    )


def check_atoms_page(v: Any, offset: int) -> tuple[list[Atom], int, int | None]:
    o = obj(v, "")
    if integer(*_sub(o, "offset", "")) != offset:
        raise ShapeError("offset", f"{o['offset']}, but offset {offset} was asked")
    total = integer(*_sub(o, "total", ""))
    rows = array(*_sub(o, "atoms", ""))
    if offset + len(rows) > total:
        raise ShapeError(
            "atoms", f"{len(rows)} atoms from offset {offset}: past the total of {total}"
        )
    atoms = [atom_from_row(r, f"atoms[{i}]") for i, r in enumerate(rows)]
    nxt = field(o, "next_offset", "")
    if nxt is not None:
        nxt = integer(nxt, "next_offset")
        if nxt != offset + len(atoms) or not rows:
            raise ShapeError(
                "next_offset",
                f"{nxt}, but the page holds atoms {offset} to {offset + len(atoms) - 1}",
            )
        if nxt >= total:
            raise ShapeError(
                "next_offset",
                f"{nxt}, but total is {total}: no atom is left "
                "(the last page's next_offset is null)",
            )
    elif offset + len(atoms) != total:
        raise ShapeError(
            "next_offset",
            f"null (last page) after {offset + len(atoms)} atoms, but total is {total}",
        )
    return atoms, total, nxt


def check_query_answer(v: Any) -> Result:
    o = obj(v, "")
    hits = []
    rows = array(*_sub(o, "hits", ""))
    if len(rows) > MAX_DEPTH:
        raise ShapeError("hits", f"{len(rows)} hits, at most {MAX_DEPTH}")
    for i, h in enumerate(rows):
        pair = array(h, f"hits[{i}]")
        if len(pair) != 2:
            raise ShapeError(f"hits[{i}]", f"expected [atom_id, score], got {len(pair)} values")
        atom = identifier(pair[0], f"hits[{i}][0]")
        try:
            hits.append((atom, number(pair[1], f"hits[{i}][1]")))
        except ShapeError as e:  # name the atom whose score is wrong
            raise ShapeError(f"hits[{i}][1] (atom {atom!r})", e.message) from None
    cart = [
        identifier(a, f"cartridge[{i}]") for i, a in enumerate(array(*_sub(o, "cartridge", "")))
    ]
    conf = o.get("confidence")
    return Result(
        hits=hits, cartridge=cart, confidence=None if conf is None else number(conf, "confidence")
    )


def _nf(v: Any) -> str | None:
    """``NaN``, ``Infinity`` or ``-Infinity`` (as JSON spells them) for such a float."""
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    return None


def non_finite(v: Any, where: str = "") -> str | None:
    """Where the first NaN or infinity sits in ``v`` (a value read by a lenient JSON parser,
    which takes ``NaN`` and ``Infinity``): ``hits[3][1] (atom 'a17'): NaN``; ``None`` when
    there is none. Says which hit broke an answer that strict JSON refuses."""
    if _nf(v):
        return f"{where}: {_nf(v)}"
    if isinstance(v, dict):
        for k, x in v.items():
            found = non_finite(x, f"{where}.{k}" if where else str(k))
            if found:
                return found
    if isinstance(v, list):
        for i, x in enumerate(v):
            if (
                where == "hits"
                and isinstance(x, list)
                and len(x) == 2
                and isinstance(x[0], str)
                and _nf(x[1])
            ):
                return f"hits[{i}][1] (atom {x[0][:80]!r}): {_nf(x[1])}"
            found = non_finite(x, f"{where}[{i}]")
            if found:
                return found
    return None


def error_of(v: Any) -> tuple[str, str] | None:
    """``(code, message)`` of an error body, or ``None`` when it is not one."""
    if not isinstance(v, dict) or not isinstance(v.get("error"), dict):
        return None
    e = v["error"]
    code, msg = e.get("code"), e.get("message")
    if not isinstance(code, str) or not isinstance(msg, str):
        return None
    return code, msg


# --------------------------------------------------------------------------- requests


def item_row(item: SourceItem) -> dict:
    """An item as the protocol sends it: its line of ``bench/sets/items.jsonl``."""
    return item.model_dump(mode="json", exclude_none=True)


def ingest_id(corpus_root: str, rows: list[dict]) -> str:
    """The id of an ingest: 32 hex digits of sha256 over the protocol, the corpus root and the
    items, so the same memory has the same id (and a server that holds it is not asked to
    ingest it again)."""
    h = hashlib.sha256()
    h.update(dumps({"protocol": PROTOCOL, "corpus_root": corpus_root}).encode())
    for r in rows:
        h.update(b"\n" + dumps(r).encode("utf-8"))
    return h.hexdigest()[:32]


def query_body(question: str, scope: Scope, as_of: datetime) -> dict:
    return {
        "question": question,
        "scope": scope.model_dump(mode="json", exclude_none=True),
        "as_of": as_of.isoformat(),
    }


def _pydantic_where(prefix: str, e: ValidationError) -> ShapeError:
    first = e.errors()[0]
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
    more = f" [+{len(e.errors()) - 1} more]" if len(e.errors()) > 1 else ""
    return ShapeError(f"{prefix}{loc}".lstrip("."), first["msg"] + more)


def parse_items(v: Any) -> list[SourceItem]:
    """A batch's body -> its items, each validated as a line of items.jsonl."""
    o = obj(v, "")
    out = []
    for i, row in enumerate(array(*_sub(o, "items", ""))):
        try:
            out.append(SourceItem.model_validate(obj(row, f"items[{i}]")))
        except ValidationError as e:
            raise _pydantic_where(f"items[{i}]", e) from None
    return out


def parse_commit(v: Any) -> tuple[str, int, int]:
    o = obj(v, "")
    return (
        string(*_sub(o, "corpus_root", "")),
        integer(*_sub(o, "batches", "")),
        integer(*_sub(o, "items", "")),
    )


def parse_query(v: Any) -> tuple[str, Scope, datetime]:
    o = obj(v, "")
    q = string(*_sub(o, "question", ""))
    try:
        scope = Scope.model_validate(obj(*_sub(o, "scope", "")))
    except ValidationError as e:
        raise _pydantic_where("scope", e) from None
    try:
        as_of = _TS.validate_python(field(o, "as_of", ""))
    except ValidationError as e:
        raise _pydantic_where("as_of", e) from None
    if as_of.tzinfo is None or as_of.utcoffset() is None:
        raise ShapeError("as_of", "timestamp must carry a timezone (ISO 8601 with offset)")
    return q, scope, as_of
