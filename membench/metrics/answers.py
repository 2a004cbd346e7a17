"""The judge-free answer layer: does a text hold the upstream answer, as a token sequence, after
one fixed normalisation? (docs/metrics.md, "The answer normalisation, rule by rule", gives each
rule with examples and why.)

Start at :func:`needles` (an answer and its ``answer_format`` -> the normalised strings that must
*all* occur, or ``None`` when the answer is not extractive) and :func:`occurs` (does every
needle occur in a text on token boundaries); both sides go through :func:`normalise`: NFKC with
dashes and quotes unified, casefold, ``%`` / ``per cent`` -> ``percent``, thousands commas
dropped, magnitudes (``thousand`` .. ``trillion``, ``k``, ``m``, ``bn``) written out with exact
decimal arithmetic, a ``0`` before a bare decimal point, trailing fraction zeros dropped, every
other non-letter-or-digit a space (``.``, ``-``, ``/``, ``:`` kept between two digits), runs of
whitespace one space.

Not extractive (``None``): no answer or nothing left after normalising; yes / no / true /
false; one character; over 20 words; a ``list`` answer that is no Python list literal, or with
an element that is not extractive. A list literal's elements are needles that must all occur
(one that parses to a single value is that value); a ``str`` answer is one needle even with
commas.

Touches nothing: pure functions over strings. It is applied to the text membench reads for a
system's atoms (:mod:`membench.metrics.extent_text`), never to the text a system reports.
"""

from __future__ import annotations

import ast
import math
import re
import unicodedata
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

#: answers that judge the text rather than quote it (compared after :func:`normalise`)
YES_NO = frozenset({"yes", "no", "true", "false"})
#: longer answers (in normalised words) are summaries, not spans
MAX_WORDS = 20

_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_SINGLE = "\u2018\u2019\u201a\u201b\u2032\u0060\u00b4"
_DOUBLE = "\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb"
_UNIFY = str.maketrans(
    {**{c: "-" for c in _DASHES}, **{c: "'" for c in _SINGLE}, **{c: '"' for c in _DOUBLE}}
)

_PER_CENT = re.compile(r"\bper\s+cent\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_MAGNITUDE = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)"
    r"(?:\s*(thousand|million|billion|trillion)|(k|m|bn))(?!\w)"
)
_FACTOR = {
    "thousand": 10**3,
    "k": 10**3,
    "million": 10**6,
    "m": 10**6,
    "billion": 10**9,
    "bn": 10**9,
    "trillion": 10**12,
}
_BARE_POINT = re.compile(r"(?<![\w.])\.(?=\d)")
_TRAILING_ZEROS = re.compile(r"(\d)\.(\d*?)0+(?!\d)")
_LONE_JOINER = re.compile(r"(?<!\d)[.\-/:]|[.\-/:](?!\d)")
_OTHER = re.compile(r"[^\w\s.\-/:]|_")


def _written_out(m: re.Match) -> str:
    value = Decimal(m[1]) * _FACTOR[m[2] or m[3]]
    return format(value.normalize(), "f")


def normalise(text: str) -> str:
    """``text`` under the rules of the module docstring's first table."""
    s = unicodedata.normalize("NFKC", text).translate(_UNIFY).casefold()
    s = _PER_CENT.sub("percent", s).replace("%", " percent ")
    s = _THOUSANDS.sub("", s)
    s = _MAGNITUDE.sub(_written_out, s)
    s = _BARE_POINT.sub("0.", s)
    s = _TRAILING_ZEROS.sub(lambda m: m[1] + ("." + m[2] if m[2] else ""), s)
    s = _OTHER.sub(" ", _LONE_JOINER.sub(" ", s))
    return " ".join(s.split())


def _scalar_text(value: Any) -> str | None:
    """An answer value as text: numbers as written in decimal (``1e-05`` is ``0.00001``),
    booleans as ``true`` / ``false``; ``None`` for a non-finite number."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format(Decimal(repr(value)), "f") if math.isfinite(value) else None
    return str(value)


def _needle(value: Any) -> str | None:
    """The one needle of a scalar answer, or ``None`` when it is not extractive."""
    text = _scalar_text(value)
    if text is None:
        return None
    n = normalise(text)
    if len(n) <= 1 or n in YES_NO or len(n.split()) > MAX_WORDS:
        return None
    return n


def _elements(answer: Any) -> list[Any] | None:
    """The elements of a ``list`` answer (a list, or a string holding a Python list literal);
    a literal of one value is that value alone; ``None`` when it is no literal."""
    if isinstance(answer, str):
        try:
            answer = ast.literal_eval(answer.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return list(answer) if isinstance(answer, (list, tuple)) else [answer]


def needles(answer: Any, answer_format: str) -> list[str] | None:
    """The normalised strings whose occurrence (all of them) means "the answer is there", in
    answer order without repeats; ``None`` when the answer is not extractive (the module
    docstring's second table)."""
    if answer is None or answer_format == "none":
        return None
    if answer_format == "list" or isinstance(answer, (list, tuple)):
        values = _elements(answer)
    else:
        values = [answer]
    if not values:
        return None
    out: list[str] = []
    for v in values:
        if isinstance(v, (list, tuple)):
            inner = needles(v, "list")
            if inner is None:
                return None
            out.extend(inner)
            continue
        n = _needle(v)
        if n is None:
            return None
        out.append(n)
    return list(dict.fromkeys(out))


def occurs(needles: Sequence[str], text: str) -> bool:
    """Every needle occurs in ``normalise(text)`` on token boundaries (``12`` does not occur in
    ``123`` nor in ``12.5``). ``needles`` comes from :func:`needles` (never empty: an answer
    that is not extractive has no needles and must not be looked for)."""
    if not needles:
        raise ValueError("no needles: an answer that is not extractive is not looked for")
    hay = f" {normalise(text)} "
    return all(f" {n} " in hay for n in needles)


__all__ = ["MAX_WORDS", "YES_NO", "needles", "normalise", "occurs"]
