"""The judge-free answer layer: does a text hold the upstream answer?

Beside LLM-judged answer accuracy (LongMemEval asks GPT-4o whether an answer is right; memory
systems report LoCoMo with an LLM judge too, where LoCoMo itself scored token F1; MMLongBench-Doc
has GPT-4o extract an answer, then compares it by format: Str, Int, Float, List), membench asks
a narrower question that needs no model: does the text a system hands over *contain* the
upstream answer, as a token sequence, after one fixed normalisation? It is the "has answer"
test of first-stage retrieval (DPR's top-k retrieval accuracy, Karpukhin et al., EMNLP 2020: a
passage counts when it holds a span that matches the answer after SQuAD's normalisation,
Rajpurkar et al., EMNLP 2016), applied to the text membench reads for a system's atoms
(:mod:`membench.metrics.extent_text`), never to the text a system reports. It can only say "the
answer is there"; whether an answerer would use it is what the judges measure.

:func:`normalise` (both sides: the answer and the text), one rule a row, in this order:

=====================  ================================================  =====================
rule                   what it does                                      example
=====================  ================================================  =====================
Unicode                NFKC; every dash (hyphen, en, em, minus sign)     ``ﬁ`` = ``fi``;
                       becomes ``-``, curly and prime quotes become      ``3–4`` = ``3-4``
                       ``'`` and ``"``
case                   :meth:`str.casefold`                              ``Straße`` = ``strasse``
percent                ``%``, ``per cent`` and ``percent`` are one       ``50%`` = ``50 %`` =
                       word, ``percent``                                 ``50 percent``
thousands              a comma between a digit and exactly three         ``1,200`` = ``1200``
                       digits is dropped (a comma before 1, 2 or 4+      (``3,4`` stays two
                       digits separates)                                 numbers)
magnitude              a number with ``thousand``, ``million``,          ``1.2k`` = ``1200``;
                       ``billion``, ``trillion`` after it (a space or    ``3m`` = ``3 million``
                       none), or ``k``, ``m``, ``bn`` right after it,    = ``3000000``;
                       is written out (exact decimal arithmetic)         ``$2bn`` = ``2000000000``
bare decimal           a decimal point with no digit before it gets      ``.5`` = ``0.5``
                       a ``0``
trailing zeros         zeros at the end of a decimal fraction go, and    ``12.0`` = ``12``;
                       the point with them when nothing is left          ``12.50`` = ``12.5``
punctuation            every other character that is not a letter or     ``U.S.`` = ``u s``;
                       digit becomes a space; ``.``, ``-``, ``/`` and    ``Caroline's`` =
                       ``:`` are kept *between two digits* (decimal      ``caroline s``;
                       point, dates, fractions, times)                   ``2015-03-24`` stays
whitespace             runs of whitespace become one space, none at
                       either end
=====================  ================================================  =====================

Choices and their costs, stated: punctuation becomes a space, not nothing (SQuAD deletes it), so
``U.S.`` stays apart from the pronoun ``us`` and a possessive keeps its name (``Caroline's``
holds ``caroline``); the price is that ``US`` and ``U.S.`` differ. A sign goes with the
punctuation (``-5`` = ``5``: a text states a decrease as a plain number after "fell by" as
readily as with a sign). A number is one token with its decimal point, date dashes and slashes,
so ``24`` is not found inside ``2015-03-24`` nor ``12`` inside ``12.5``, and a range ``10-20``
holds neither ``10`` nor ``20``. Magnitudes are written out on both sides, so an answer ``8.8``
is not found in ``$8.8 billion`` (those are different numbers as written). ``m`` after a number
is read as million (``3m`` metres too): the reports and finance charts of the sets write money
that way. Articles are kept (SQuAD drops ``a``, ``an``, ``the``), and a decimal comma (``3,5``)
is not read as a point.

:func:`needles` turns an answer into the normalised strings that must *all* occur, or ``None``
when the answer is not extractive by rule (such items are left out of the answer layer's
denominator, and counted):

=====================  ===========================================================================
rule                   why
=====================  ===========================================================================
no answer              ``None``, ``answer_format`` ``none``, or nothing left after normalising:
                       nothing to look for
yes / no               ``yes``, ``no``, ``true``, ``false``: the answer is a judgement about the
                       text, not a span of it, and the words occur in any text
one character          ``2``, ``a``: a single digit or letter occurs on a token boundary in most
                       pages (page numbers, list markers), so its presence says nothing
over 20 words          a summary written by the annotator (LoCoMo's longer answers), not a span;
                       containment would be a paraphrase test
list                   MMLongBench-Doc writes a list as a Python literal string (``"['gray',
                       'red']"``): parsed with :func:`ast.literal_eval`; extractive only when every
                       element is (by these rules), and then every element is a needle and all
                       must occur (a list is there only when all of it is). A ``list``
                       answer that is no list literal is not extractive (its elements are
                       unknown); one that parses to a single value is that value
=====================  ===========================================================================

A ``str`` answer is one needle even when it has commas (LoCoMo's ``"divorce, job loss,
homelessness"``): only the ``list`` format says an answer has elements. :func:`occurs` says
whether every needle occurs in a text on token boundaries.
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
_UNIFY = str.maketrans({**{c: "-" for c in _DASHES}, **{c: "'" for c in _SINGLE},
                        **{c: '"' for c in _DOUBLE}})

_PER_CENT = re.compile(r"\bper\s+cent\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_MAGNITUDE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)"
                        r"(?:\s*(thousand|million|billion|trillion)|(k|m|bn))(?!\w)")
_FACTOR = {"thousand": 10**3, "k": 10**3, "million": 10**6, "m": 10**6,
           "billion": 10**9, "bn": 10**9, "trillion": 10**12}
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
