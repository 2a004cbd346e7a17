"""Plain text files read line by line, without pydantic or pandas (so that ``membench
trec-eval`` starts fast): a readable-file check, strict UTF-8 decoding with a located error,
and the fields of TREC run and qrels lines (:func:`trec_fields`, the integer and score rules).
:mod:`membench.core.jsonl` and :mod:`membench.run.files` re-export them."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

from .bounds import bound
from .errors import InputError


def check_readable_file(path: str | Path) -> Path:
    """``path`` if it is a regular file (symlinks followed); else an :class:`InputError`:
    MISSING_FILE when absent, NOT_A_FILE for a folder, a device or a pipe."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "file not found", rule="MISSING_FILE")
    if not path.is_file():
        what = "a folder" if path.is_dir() else "not a regular file"
        raise InputError(path, None, None, f"is {what}; expected a file", rule="NOT_A_FILE")
    return path


def decode_line(path: str | Path, no: int | None, raw: bytes) -> str:
    """``raw`` as UTF-8 text; invalid UTF-8 is an :class:`InputError` (rule ENCODING) naming the
    first bad byte and its column."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            path,
            no,
            None,
            f"not valid UTF-8: byte 0x{raw[e.start]:02x} at column {e.start + 1} ({e.reason})",
            rule="ENCODING",
        ) from None


_TREC_INT = re.compile(r"[+-]?[0-9]+")
_TREC_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# bytes that are neither text nor one of bytes.split()'s separators (space \t \n \r \v \f)
TREC_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1f]")

# C's strtod/strtol prefixes (glibc, "C" locale): what atof and atol read, the rest ignored
_C_FLOAT = re.compile(
    r"[ \t\n\v\f\r]*([+-]?)(?:0x((?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)"
    r"(?:p[+-]?[0-9]+)?)|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?)"
    r"|(inf(?:inity)?)|(nan(?:\([0-9a-z_]*\))?))",
    re.IGNORECASE,
)
_C_INT = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")
C_LONG_MIN, C_LONG_MAX = -(1 << 63), (1 << 63) - 1


def c_atof(tok: str | bytes) -> float:
    """C's ``atof`` (glibc's ``strtod``): leading blanks, a sign, then the longest decimal,
    hexadecimal (``0x1p3``), ``inf``/``infinity`` or ``nan`` prefix; the rest is ignored, and
    no number at all reads 0.0. Out of range: +-inf (``1e400``), as strtod returns."""
    t = tok.decode("ascii", errors="replace") if isinstance(tok, bytes) else tok
    m = _C_FLOAT.match(t)
    if m is None:
        return 0.0
    sign, hexa, dec, inf, nan = m.groups()
    neg = sign == "-"
    if hexa is not None:
        try:
            v = float.fromhex(hexa if "p" in hexa.lower() else hexa + "p0")
        except OverflowError:
            v = math.inf
    elif dec is not None:
        v = float(dec)
    else:
        v = math.inf if inf is not None else math.nan
    return math.copysign(v, -1.0) if neg else v


def c_atol(tok: str | bytes) -> int:
    """C's ``atol`` (glibc's ``strtol``, base 10): leading blanks, a sign, decimal digits; the
    rest is ignored (``0x10`` reads 0, ``1.5`` reads 1), no digit reads 0, and a value past
    the 64-bit range is clamped to it."""
    t = tok.decode("ascii", errors="replace") if isinstance(tok, bytes) else tok
    m = _C_INT.match(t)
    if m is None:
        return 0
    return max(C_LONG_MIN, min(C_LONG_MAX, int(m.group(1))))


def trec_int(tok: str | bytes) -> int:
    """A TREC integer field: ASCII digits with an optional sign, nothing else (``int()`` alone
    would also take ``1_000`` and non-ASCII digits); ``ValueError`` otherwise."""
    t = tok.decode("ascii", errors="replace") if isinstance(tok, bytes) else tok
    if not _TREC_INT.fullmatch(t):
        raise ValueError(f"not an integer: {t[:40]!r}")
    return int(t)


def trec_float(tok: str | bytes) -> float:
    """A TREC score: a decimal number ``[+-]digits[.digits][e[+-]digits]``, nothing else
    (``float()`` alone would also take ``1_0``, ``inf``, ``nan``); ``ValueError`` otherwise."""
    t = tok.decode("ascii", errors="replace") if isinstance(tok, bytes) else tok
    if not _TREC_FLOAT.fullmatch(t):
        raise ValueError(f"not a number: {t[:40]!r}")
    return float(t)


MAX_TREC_LINE = bound(
    "trec_line_bytes",
    4 << 20,
    "bytes",
    "one line of a TREC run or qrels file (newline included; a docid of several MiB fits)",
    "located error LINE_TOO_LONG naming the file and line, found after reading at most this "
    "much of the line (a stream without newlines is read in fixed memory)",
    "membench.run.files",
)


def trec_fields(
    path: str | Path, layout: str, comment_lines: bool = False
) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` per line of a whitespace-separated TREC file whose lines have
    the fields named in ``layout`` (e.g. ``"qid Q0 docid rank score tag"``). Lines end at
    ``\\n``; fields are separated by ASCII whitespace (``bytes.split()``), the same bytes the
    vectorised reader (:func:`membench.trec.read_trec_run`) splits on. A missing file, a
    line that is not UTF-8, holds another control byte, or has another field count is an
    :class:`InputError` naming it. ``comment_lines``: a line whose first byte is ``#`` is
    skipped (trec_eval 10's qrels comments, ``membench trec-eval`` without ``--strict``)."""
    path = check_readable_file(path)
    n = len(layout.split())
    with open(path, "rb") as f:
        # readline(limit): a line longer than the bound is never held whole, and the error
        # comes after reading at most that much of it (a stream without newlines ends there)
        for no, raw in enumerate(iter(lambda: f.readline(MAX_TREC_LINE + 1), b""), 1):
            if len(raw) > MAX_TREC_LINE:
                raise InputError(
                    path,
                    no,
                    None,
                    f"line longer than {MAX_TREC_LINE:,} bytes (bound trec_line_bytes)",
                    rule="LINE_TOO_LONG",
                )
            if comment_lines and raw[:1] == b"#":
                continue
            bad = TREC_CONTROL.search(raw)
            if bad:
                raise InputError(
                    path,
                    no,
                    None,
                    f"control byte 0x{raw[bad.start()]:02x} at column {bad.start() + 1}",
                    rule="TREC",
                )
            parts = decode_line(path, no, raw).encode("utf-8").split()
            if len(parts) != n:
                raise InputError(
                    path, no, None, f"expected {n} fields ({layout}), got {len(parts)}", rule="TREC"
                )
            yield no, [p.decode("utf-8") for p in parts]
