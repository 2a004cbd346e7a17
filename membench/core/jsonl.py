"""Reading and writing JSON lines (and single JSON files), deterministically and with located
errors.

Reading is strict, because a lenient reader hides errors: a line must be UTF-8 (else ENCODING,
naming the byte and column), one JSON object (else JSON), with finite numbers (``NaN`` and
``Infinity`` are not JSON: RFC 8259 section 6), no key twice (RFC 8259 section 4 leaves a
repeated key's meaning to the parser; here it is an error), nesting within Python's recursion
limit and integers within Python's 4,300-digit conversion limit. A line longer than
:data:`MAX_LINE_BYTES` is an error (LINE_TOO_LONG) read no further than the limit, and so is a
whole JSON file longer than :data:`MAX_JSON_FILE_BYTES` (neither is ever held in memory). A
path that is a folder or not a regular file (a FIFO, a device) is an error too. Every problem
is an :class:`InputError` naming the file and line. Writing is atomic
(:mod:`membench.core.atomic`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .atomic import atomic_write_text
from .bounds import bound
from .errors import InputError
from .textfiles import check_readable_file, decode_line

M = TypeVar("M", bound=BaseModel)

MAX_LINE_BYTES = bound(
    "line_bytes",
    64 << 20,
    "bytes",
    "one line of a JSON-lines file (sets, items, atoms, run lines, "
    "cartridges, manifest); TREC files: trec_line_bytes",
    "located error (LINE_TOO_LONG) naming the file and line; the line is read no further",
    "membench.core.jsonl",
)
MAX_JSON_FILE_BYTES = bound(
    "json_file_bytes",
    256 << 20,
    "bytes",
    "a whole JSON file (meta.json, coverage.json, a card, a result "
    "store's entries, calibration and lock files)",
    "located error (FILE_TOO_LONG) naming the file; read no further",
    "membench.core.jsonl",
)


def dumps(obj: Any) -> str:
    """Canonical one-line JSON: sorted keys, no spaces, UTF-8 kept. Two builds of the same
    data give the same bytes."""
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def model_line(m: BaseModel) -> str:
    return dumps(m.model_dump(mode="json", exclude_none=True))


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    """Write rows (models or plain objects) atomically; returns the number written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [(model_line(r) if isinstance(r, BaseModel) else dumps(r)) + "\n" for r in rows]
    atomic_write_text(path, "".join(lines))
    return len(lines)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (numbers must be finite)")


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise ValueError(f"key {k!r} appears twice in one object")
            seen.add(k)
    return obj


def loads(text: str) -> Any:
    """``json.loads`` with the strict rules of the module docstring; raises ``ValueError``
    (``json.JSONDecodeError`` among them) or ``RecursionError``."""
    return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_repeated_keys)


def parse_json(text: str, path: str | Path, line: int | None = None) -> Any:
    """:func:`loads` with every failure an :class:`InputError` (rule JSON) at ``path``/``line``
    (for a whole document, the line of a syntax error)."""
    try:
        return loads(text)
    except json.JSONDecodeError as e:
        raise InputError(
            path,
            line if line is not None else e.lineno,
            None,
            f"not valid JSON: {e.msg} (column {e.colno})",
            rule="JSON",
        ) from None
    except RecursionError:
        raise InputError(
            path, line, None, "not readable JSON: nested too deeply", rule="JSON"
        ) from None
    except ValueError as e:  # a non-finite constant, a repeated key, a huge integer
        raise InputError(path, line, None, f"not valid JSON: {e}"[:300], rule="JSON") from None


def read_json_file(path: str | Path, expect: type | None = None, what: str = "") -> Any:
    """A whole JSON file, read strictly (see the module docstring); with ``expect`` (``dict``
    or ``list``) another top-level type is an error saying what was expected (``what``)."""
    path = check_readable_file(path)
    with open(path, "rb") as f:
        raw = f.read(MAX_JSON_FILE_BYTES + 1)
    if len(raw) > MAX_JSON_FILE_BYTES:
        raise InputError(
            path,
            None,
            None,
            f"longer than {MAX_JSON_FILE_BYTES:,} bytes (bound json_file_bytes): not read",
            rule="FILE_TOO_LONG",
        )
    data = parse_json(decode_line(path, None, raw), path)
    if expect is not None and not isinstance(data, expect):
        raise InputError(
            path,
            None,
            None,
            f"expected {what or 'a JSON ' + expect.__name__}, got {type(data).__name__}",
            rule="JSON",
        )
    return data


def iter_json_lines(
    path: str | Path, on_error: Callable[[InputError], None] | None = None
) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)``; a line that is not a JSON object (read strictly, see
    the module docstring) is an :class:`InputError` naming the file and line. Blank lines are
    errors too (a truncated write usually shows up as one). With ``on_error``, a bad line is
    handed to it and reading goes on (the validator reports every bad line, not just the
    first); a file that cannot be read at all is always raised."""
    path = check_readable_file(path)
    with open(path, "rb") as f:
        for no, raw in bounded_lines(f, path):
            try:
                if raw is None:
                    raise line_too_long(path, no)
                yield no, _json_object(path, no, decode_line(path, no, raw).strip())
            except InputError as e:
                if on_error is None:
                    raise
                on_error(e)


def bounded_lines(
    f, path: str | Path, limit: int | None = None
) -> Iterator[tuple[int, bytes | None]]:
    """``(line_number, raw line)`` of a binary file, each line read no further than ``limit``
    bytes (:data:`MAX_LINE_BYTES` by default, the newline not counted): a longer line is
    yielded as ``None`` (the caller raises :func:`line_too_long` or reports it) and skipped
    to its end in bounded chunks, so no line past the limit is ever held in memory."""
    limit = MAX_LINE_BYTES if limit is None else limit
    no = 0
    readline = f.readline
    while True:
        raw = readline(limit + 1)
        if not raw:
            return
        no += 1
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield no, raw
            continue
        while raw and not raw.endswith(b"\n"):  # the rest of the long line, unread
            raw = readline(1 << 20)
        yield no, None


def line_too_long(path: str | Path, no: int) -> InputError:
    return InputError(
        path,
        no,
        None,
        f"longer than {MAX_LINE_BYTES:,} bytes (bound line_bytes): not read",
        rule="LINE_TOO_LONG",
    )


def _json_object(path: Path, no: int, text: str) -> dict:
    if not text:
        raise InputError(path, no, None, "blank line", rule="JSON")
    obj = parse_json(text, path, no)
    if not isinstance(obj, dict):
        raise InputError(
            path, no, None, f"expected a JSON object, got {type(obj).__name__}", rule="JSON"
        )
    return obj


def validation_error(path: str | Path, line: int | None, err: ValidationError) -> InputError:
    """Turn pydantic's error into one located message (the first error; the rest counted)."""
    errs = err.errors()
    first = errs[0]
    field = ".".join(str(p) for p in first["loc"]) or None
    msg = first["msg"].removeprefix("Value error, ")
    if "input" in first and first["type"] not in ("missing",):
        msg += f" (got {_short_repr(first['input'])})"
    if len(errs) > 1:
        msg += f" [+{len(errs) - 1} more error(s) on this line]"
    return InputError(path, line, field, msg)


def _short_repr(v: Any, n: int = 80) -> str:
    """``repr(v)`` cut to ``n`` characters; a value too big or too deep to print says so."""
    try:
        return repr(v)[:n]
    except (ValueError, RecursionError):
        return f"a {type(v).__name__} too large to print"


def parse_model(model: type[M], obj: dict, path: str | Path, line: int | None) -> M:
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        raise validation_error(path, line, e) from None


def read_models(path: str | Path, model: type[M]) -> list[M]:
    return [parse_model(model, obj, path, no) for no, obj in iter_json_lines(path)]


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while b := f.read(chunk):
            h.update(b)
    return h.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
