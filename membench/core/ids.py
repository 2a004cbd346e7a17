"""One grammar for the identifiers membench reads from others and writes into files others read.

An **identifier** (an atom id, a query id, a system name, a card's name, model and components,
a judgment set's name in a result store) is 1 to :data:`MAX_ID_CHARS` characters, each of them
printable and none of them whitespace: no space, tab or newline, no control or format character
(``U+0000``-``U+001F``, ``U+007F``-``U+009F``, ``U+200B``, ``U+202E``, a BOM), no other
separator (``U+00A0``, ``U+2028``, ``U+3000``), no surrogate, private-use or unassigned code
point. In Python terms: ``s.isprintable() and " " not in s`` (``str.isprintable`` is false for
the Unicode categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs except the ASCII space). So an
identifier is one token wherever it is written: one field of a TREC line (split on
whitespace), one cell of a Markdown table, one line of a log, one JSON string that prints as
itself.

**Text** (a card's revision, license, notes and prefixes; a name shown in a table) may hold
the ASCII space but nothing else that :meth:`str.isprintable` refuses, and is at most
:data:`MAX_TEXT_CHARS` characters: it cannot start a new line or a new table row.

Where identifiers enter, each entry point checks them with :func:`id_problem` (or
:func:`check_id`, which raises a located :class:`~membench.core.errors.InputError`, rule
``ID``): the sets (query ids), atoms files and run lines (atom ids, query ids), a system's
atoms and answers in process and over HTTP (atom ids), TREC files given to ``import-run``, the
system's name (``run``, ``import-run --name``), model cards, and the leaderboard's result store.
:func:`ids_problem` checks many at once (one C pass of ``str.isprintable`` over their join).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .bounds import bound
from .errors import InputError

MAX_ID_CHARS = bound(
    "id_chars",
    256,
    "characters",
    "an identifier: atom id, query id, system name, card name and model, "
    "judgment set name (printable, no whitespace: `core.ids`)",
    "located error (ID) naming the file, line and field",
    "membench.core.ids",
)
MAX_TEXT_CHARS = bound(
    "text_chars",
    16_384,
    "characters",
    "a card's text fields (revision, license, notes, prefixes; printable, no line breaks)",
    "located error (CARD) naming the file and field",
    "membench.core.ids",
)

GRAMMAR = f"1 to {MAX_ID_CHARS} printable characters, no whitespace or control characters"


def _first_bad(s: str, allow_space: bool) -> tuple[int, str] | None:
    for i, c in enumerate(s):
        if not c.isprintable() or (c == " " and not allow_space):
            return i, c
    return None


def _describe(s: str, allow_space: bool) -> str:
    bad = _first_bad(s, allow_space)
    if bad is None:
        return ""
    i, c = bad
    what = "whitespace" if c.isspace() else "a control or unprintable character"
    return f"holds {what} (U+{ord(c):04X}) at character {i + 1}"


def id_problem(v: Any) -> str | None:
    """Why ``v`` is not an identifier (see the module docstring), or ``None``."""
    if not isinstance(v, str):
        return f"must be a string, got {type(v).__name__}"
    if not v:
        return "must not be empty"
    if len(v) > MAX_ID_CHARS:
        return f"{len(v):,} characters; an identifier has at most {MAX_ID_CHARS}"
    if v.isprintable() and " " not in v:
        return None
    return f"{_short(v)} {_describe(v, False)}; an identifier is {GRAMMAR}"


def ids_problem(values: Iterable[Any]) -> tuple[int, str] | None:
    """``(index, why)`` of the first value of ``values`` that is not an identifier, or
    ``None``: the common case (every value a valid identifier) in a few C passes."""
    vals = values if isinstance(values, (list, tuple)) else list(values)
    try:
        joined = "".join(vals)
    except TypeError:
        joined = None
    if (
        joined is not None
        and joined.isprintable()
        and " " not in joined
        and (not vals or (min(map(len, vals)) > 0 and max(map(len, vals)) <= MAX_ID_CHARS))
    ):
        return None
    for i, v in enumerate(vals):
        why = id_problem(v)
        if why:
            return i, why
    return None


def text_problem(v: Any, max_chars: int = MAX_TEXT_CHARS) -> str | None:
    """Why ``v`` is not text (printable, spaces allowed, no line break; at most
    ``max_chars``), or ``None``."""
    if not isinstance(v, str):
        return f"must be a string, got {type(v).__name__}"
    if len(v) > max_chars:
        return f"{len(v):,} characters; at most {max_chars:,}"
    if v.isprintable():
        return None
    return f"{_short(v)} {_describe(v, True)}; text here is printable, without line breaks"


def check_id(
    v: Any, file: str | None, line: int | None, field: str | None, rule: str = "ID"
) -> str:
    """``v`` if it is an identifier, else an :class:`InputError` (``rule``, ``ID`` by default)
    at ``file``:``line`` naming ``field``."""
    why = id_problem(v)
    if why:
        raise InputError(file if file is not None else "<input>", line, field, why, rule=rule)
    return v


def _short(v: str, n: int = 40) -> str:
    r = repr(v)
    return r if len(r) <= n else r[: n - 4] + "...'"


__all__ = [
    "GRAMMAR",
    "MAX_ID_CHARS",
    "MAX_TEXT_CHARS",
    "check_id",
    "id_problem",
    "ids_problem",
    "text_problem",
]
