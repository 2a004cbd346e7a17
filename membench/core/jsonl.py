"""Reading and writing JSON lines, deterministically and with located errors."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import InputError

M = TypeVar("M", bound=BaseModel)


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
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for r in rows:
            f.write(model_line(r) if isinstance(r, BaseModel) else dumps(r))
            f.write("\n")
            n += 1
    os.replace(tmp, path)
    return n


def iter_json_lines(path: str | Path, on_error: Callable[[InputError], None] | None = None
                    ) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)``; a line that is not a JSON object is an
    :class:`InputError` naming the file and line. Blank lines are errors too (a truncated
    write usually shows up as one). With ``on_error``, a bad line is handed to it and reading
    goes on (the validator reports every bad line, not just the first)."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "file not found", rule="MISSING_FILE")
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            try:
                yield no, _json_object(path, no, line.strip())
            except InputError as e:
                if on_error is None:
                    raise
                on_error(e)


def _json_object(path: Path, no: int, text: str) -> dict:
    if not text:
        raise InputError(path, no, None, "blank line", rule="JSON")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(path, no, None, f"not valid JSON: {e.msg} (column {e.colno})",
                         rule="JSON") from None
    if not isinstance(obj, dict):
        raise InputError(path, no, None, f"expected a JSON object, got {type(obj).__name__}",
                         rule="JSON")
    return obj


def validation_error(path: str | Path, line: int | None, err: ValidationError) -> InputError:
    """Turn pydantic's error into one located message (the first error; the rest counted)."""
    errs = err.errors()
    first = errs[0]
    field = ".".join(str(p) for p in first["loc"]) or None
    msg = first["msg"]
    if "input" in first and first["type"] not in ("missing",):
        shown = repr(first["input"])
        msg += f" (got {shown[:80]})"
    if len(errs) > 1:
        msg += f" [+{len(errs) - 1} more error(s) on this line]"
    return InputError(path, line, field, msg)


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
