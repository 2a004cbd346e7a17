"""A piece of a TREC file as columns: fields, ranks and scores, id hashes (the reader's inner
loops; docs/runs.md, "TREC files at scale", and docs/speed.md, "Metric speed", say why so).

:mod:`.read` cuts a run into pieces that end at a line end; a piece (:class:`_Chunk`) is seen as
bytes and as unaligned 8-byte words starting at every byte, so 8 bytes of every token are
fetched with one gather. Start at :func:`_fields`, which turns a piece into columns without one
Python object per line:

* **parsing**: a chunk in the usual layout (single spaces, ``\\n`` line ends, no other byte
  below 0x20, every field non-empty, ranks that fit 32 bits, finite decimal scores) is parsed
  on a second thread while the previous chunk is looked up, by one C pass (:func:`_parse_c`,
  ``membench/trec/_trecscan.c``: fields, ranks, scores, docid hashes equal to :func:`_hash`'s,
  qid changes, docid words) where it was built (:data:`COMPILED_MISSING` says why not), else by
  pyarrow's CSV reader (``float()``-equal doubles). Any other chunk goes through the strict
  numpy reader, which accepts exactly what :func:`membench.run.files.trec_fields` accepts and
  names the file, line and field of an error; its scores use Clinger's exact fast path
  (decimal mantissa <= 2**53, |power of ten| <= 22: one correctly rounded multiply or divide),
  else ``float()``.
* **ids**: query ids are looked up once per run of equal consecutive qids
  (:class:`_QueryIndex`); document ids are hashed to 64 bits (a docid over 64 bytes is hashed
  and compared on its own); every hash match is confirmed on the bytes (:func:`_same_bytes`),
  so a hash collision can cost time, never a wrong value.

Touches no file (a ``path`` argument only names the file in an error); pyarrow is imported on
first use.
"""

from __future__ import annotations

import codecs
import hashlib
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..core.textfiles import c_atof, c_atol, trec_float, trec_int

#: why the compiled reader is not here (``None`` when it is)
COMPILED_MISSING: str | None = None
try:  # the C loops (membench/trec/_trecscan.c), built at install where a compiler is found
    import membench.trec._trecscan as _trecscan
except ImportError as e:  # pragma: no cover - numpy and pyarrow do the same, more slowly
    _trecscan = None
    COMPILED_MISSING = f"membench.trec._trecscan not built ({e}); reinstall with a C compiler"


def note_missing(stream) -> None:
    """One line on ``stream`` when the compiled reader is missing (else nothing)."""
    if COMPILED_MISSING:
        print(
            f"membench: note: {COMPILED_MISSING}: the run is read with numpy and pyarrow "
            "instead (the same output, more slowly)",
            file=stream,
            flush=True,
        )


_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_POW10 = 10.0 ** np.arange(23)  # exact doubles 1e0 .. 1e22
_TWO53 = np.uint64(1 << 53)


# --------------------------------------------------------------------------- fields

_MASKS = np.array(
    [0] + [(1 << (8 * k)) - 1 for k in range(1, 8)] + [(1 << 64) - 1], dtype=np.uint64
)


class _Chunk:
    """One piece of the file that ends at a line end, with two views: bytes (``buf``) and
    unaligned little-endian 8-byte words starting at every byte (``words``), so that 8 bytes
    of every token are fetched with one gather. ``raw`` has >= 8 bytes of slack after
    ``size`` (their content is masked off, never used)."""

    __slots__ = ("buf", "first_line", "raw", "size", "words")

    def __init__(self, raw: bytearray, size: int, first_line: int):
        self.raw, self.size, self.first_line = raw, size, first_line
        self.buf = np.frombuffer(raw, dtype=np.uint8, count=size)
        self.words = np.ndarray(shape=(size,), dtype="<u8", buffer=raw, offset=0, strides=(1,))

    def token(self, s: int, e: int) -> bytes:
        return bytes(self.raw[s:e])

    def byte(self, s: np.ndarray, c: int, words: dict[int, np.ndarray]) -> np.ndarray:
        """Byte ``c`` of every token starting at ``s`` (garbage past a token's end: callers
        mask by length; the gather is clamped to the piece). ``words`` caches the gathered
        8-byte words."""
        j = c >> 3
        w = words.get(j)
        if w is None:
            w = words[j] = self.words[np.minimum(s + 8 * j, self.size - 1)]
        return ((w >> np.uint64(8 * (c & 7))) & np.uint64(0xFF)).astype(np.uint8)

    def masked_word(self, s: np.ndarray, L: np.ndarray, j: int) -> np.ndarray:
        """Word ``j`` (bytes 8j..8j+7) of every token, bytes past the token's end zeroed."""
        return self.words[np.minimum(s + 8 * j, self.size - 1)] & _MASKS[np.clip(L - 8 * j, 0, 8)]


def _fields(
    path: Path, ch: _Chunk, compat: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Token start/end offsets, shaped (records, 6), and the piece-local line of each record
    (``None`` when every line is a record). A line without exactly 6 fields is an error
    naming it; with ``compat`` (trec_eval's reading) blank lines and lines whose first field
    starts with ``#`` are skipped, and fields after the sixth ignored."""
    sep = np.flatnonzero(ch.buf <= 32)  # every whitespace byte
    if len(sep) and (ch.buf[0] > 32) and bool(np.all(sep[1:] - sep[:-1] > 1)):
        # the usual layout: single separators, no leading/trailing blanks
        starts = np.empty(len(sep), dtype=np.int64)
        starts[0] = 0
        starts[1:] = sep[:-1] + 1
        ends = sep
    else:
        ws = ch.buf <= 32
        t = np.flatnonzero(ws[1:] != ws[:-1]) + 1  # every whitespace/token transition
        if not ws[0]:
            t = np.concatenate([[0], t])
        starts, ends = t[0::2], t[1::2]  # the piece ends with "\n": pairs close
    nl = np.flatnonzero(ch.buf[ends] == 10) if ends is sep else np.flatnonzero(ch.buf == 10)
    nl_pos = ends[nl] if ends is sep else nl
    n_lines = len(nl_pos)
    if (
        len(starts) == 6 * n_lines
        and n_lines
        and bool(np.all(ends[5::6] <= nl_pos))
        and bool(np.all(starts[6::6] > nl_pos[:-1]))
        and not (compat and bool((ch.buf[starts[0::6]] == 35).any()))
    ):
        return starts.reshape(-1, 6), ends.reshape(-1, 6), None
    line_start = np.concatenate([[0], nl_pos[:-1] + 1])
    first_tok = np.searchsorted(starts, line_start)
    counts = np.diff(np.append(first_tok, len(starts)))
    if not compat:
        bad = np.flatnonzero(counts != 6)
        i = int(bad[0]) if bad.size else 0
        raise InputError(
            path,
            ch.first_line + i + 1,
            None,
            "expected 6 fields (qid Q0 docid "
            f"rank score tag), got {int(counts[i])}"
            + (
                "; trec_eval ignores fields after the sixth, and so does membench "
                "trec-eval without --strict"
                if counts[i] > 6
                else ""
            ),
            rule="TREC",
        )
    has = counts > 0
    comment = np.zeros(n_lines, dtype=bool)
    comment[has] = ch.buf[starts[first_tok[has]]] == 35
    keep = np.flatnonzero(has & ~comment)
    short = keep[counts[keep] < 6]
    if short.size:
        i = int(short[0])
        raise InputError(
            path,
            ch.first_line + i + 1,
            None,
            f"expected at least 6 fields (qid Q0 docid rank score tag), got {int(counts[i])}",
            rule="TREC",
        )
    idx = (first_tok[keep][:, None] + np.arange(6)[None, :]).ravel()
    return starts[idx].reshape(-1, 6), ends[idx].reshape(-1, 6), keep


def _check_text(path: Path, ch: _Chunk) -> None:
    """The piece is UTF-8 and holds no control byte but whitespace (as
    :func:`membench.run.files.trec_fields` requires); else an error naming line and column."""
    view = memoryview(ch.raw)[: ch.size]
    bad_at = None
    b = ch.buf
    ctrl = (b < 9) | ((b > 13) & (b < 32))
    if ctrl.any():
        bad_at = int(ctrl.argmax())
        what = f"control byte 0x{ch.raw[bad_at]:02x}"
    try:
        codecs.utf_8_decode(view, "strict", True)
    except UnicodeDecodeError as e:
        if bad_at is None or e.start < bad_at:
            bad_at, what = e.start, f"not valid UTF-8: byte 0x{ch.raw[e.start]:02x} ({e.reason})"
    if bad_at is not None:
        line_start = ch.raw.rfind(b"\n", 0, bad_at) + 1
        line = ch.first_line + ch.raw.count(b"\n", 0, bad_at) + 1
        raise InputError(
            path,
            line,
            None,
            f"{what} at column {bad_at - line_start + 1}",
            rule="TREC" if what.startswith("control") else "ENCODING",
        )


# --------------------------------------------------------------------------- ids

_LONG = 64  # tokens longer than this are hashed and compared one by one, not word by word


def _hash(ch: _Chunk, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each token's bytes: 8 bytes per step, seeded with the length, for
    tokens of up to :data:`_LONG` bytes (a handful of vector steps); a longer token is hashed
    on its own (BLAKE2b), so the work stays linear in the bytes whatever the longest token
    (a word-by-word loop over every token would cost tokens x longest)."""
    L = e - s
    h = _FNV_OFFSET ^ L.astype(np.uint64)
    if len(L) == 0:
        return h
    lmax = int(L.max())
    if lmax > _LONG:
        long = np.flatnonzero(L > _LONG)
        short = np.flatnonzero(L <= _LONG)
        if short.size:
            h[short] = _hash(ch, s[short], e[short])
        view = memoryview(ch.raw)
        h[long] = np.fromiter(
            (
                int.from_bytes(hashlib.blake2b(view[a:b], digest_size=8).digest(), "little")
                for a, b in zip(s[long].tolist(), e[long].tolist())
            ),
            dtype=np.uint64,
            count=len(long),
        )
        return h
    lmin = int(L.min())
    for j in range((lmax + 7) // 8):
        alive = lmin > 8 * j  # every token has a byte in word j
        idx = s + 8 * j if alive else np.minimum(s + 8 * j, ch.size - 1)
        w = ch.words[idx]
        if lmin < 8 * j + 8:  # some token ends inside word j: mask it
            w &= _MASKS[np.clip(L - 8 * j, 0, 8)]
        nh = (h ^ w) * _FNV_PRIME
        nh ^= nh >> np.uint64(29)
        if alive:
            h = nh
        else:
            np.copyto(h, nh, where=L > 8 * j)
    return h


def _mix(doc_hash: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(query index, docid hash) -> one uint64 key; equal keys are only candidates (they are
    confirmed on the bytes), so a plain combination does."""
    return doc_hash ^ (q.astype(np.uint64) * _GOLDEN)


def _same_bytes(
    a: _Chunk, sa: np.ndarray, la: np.ndarray, b: _Chunk, sb: np.ndarray, lb: np.ndarray
) -> np.ndarray:
    """Token ``a[sa:sa+la]`` == token ``b[sb:sb+lb]``, element-wise: word by word up to
    :data:`_LONG` bytes, then pairs of longer tokens compared one by one (linear work)."""
    same = la == lb
    if len(la) == 0:
        return same
    for j in range((min(int(la.max()), _LONG) + 7) // 8):
        same &= a.masked_word(sa, la, j) == b.masked_word(sb, lb, j)
    for i in np.flatnonzero(same & (la > _LONG)).tolist():
        x, y, n = int(sa[i]), int(sb[i]), int(la[i])
        same[i] = a.raw[x : x + n] == b.raw[y : y + n]
    return same


def _changes(ch: _Chunk, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Per token: differs from the previous token (the first is always a change)."""
    n = len(s)
    out = np.ones(n, dtype=bool)
    if n > 1:
        L = e - s
        if int(L.max()) > _LONG:
            out[1:] = ~_same_bytes(ch, s[1:], L[1:], ch, s[:-1], L[:-1])
            return out
        diff = L[1:] != L[:-1]
        for j in range((int(L.max()) + 7) // 8):
            w = ch.masked_word(s, L, j)
            diff |= w[1:] != w[:-1]
        out[1:] = diff
    return out


# --------------------------------------------------------------------------- numbers


def _parse_floats(ch: _Chunk, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decimal floats ``[+-]digits[.digits][(e|E)[+-]digits]`` by Clinger's fast path.
    Returns (values, exact): ``exact`` marks the tokens decided here; the others must go
    through ``float()``."""
    n = len(s)
    L = e - s
    mant = np.zeros(n, dtype=np.uint64)
    ndig = np.zeros(n, dtype=np.int32)
    frac = np.zeros(n, dtype=np.int32)
    ev = np.zeros(n, dtype=np.int32)
    edig = np.zeros(n, dtype=np.int32)
    neg = np.zeros(n, dtype=bool)
    eneg = np.zeros(n, dtype=bool)
    dot = np.zeros(n, dtype=bool)
    inexp = np.zeros(n, dtype=bool)
    prev_e = np.zeros(n, dtype=bool)
    bad = L > 40
    ten = np.uint64(10)
    words: dict[int, np.ndarray] = {}
    any_exp = False
    for c in range(min(int(L.max()), 40) if n else 0):
        act = L > c
        chs = ch.byte(s, c, words)
        d = chs - np.uint8(48)  # wraps for non-digits
        isd = (d < 10) & act
        if any_exp:
            md = isd & ~inexp
            ed = isd & inexp
            np.copyto(ev, ev * 10 + d, where=ed & (edig < 5))
            edig += ed
        else:
            md = isd
        np.copyto(mant, mant * ten + d, where=md)
        ndig += md
        frac += md & dot
        isdot = (chs == 46) & act
        bad |= isdot & (dot | inexp)
        dot |= isdot
        other = act & ~isd & ~isdot
        if not other.any():  # digits and dots only (the usual case)
            prev_e = np.zeros(n, dtype=bool) if any_exp else prev_e
            continue
        issign = other & ((chs == 45) | (chs == 43))
        if c == 0:
            neg |= issign & (chs == 45)
        else:
            eneg |= issign & prev_e & (chs == 45)
            bad |= issign & ~prev_e
        ise = other & ((chs == 101) | (chs == 69))
        any_exp = any_exp or bool(ise.any())
        bad |= ise & (inexp | (ndig == 0))
        inexp |= ise
        prev_e = ise
        bad |= other & ~issign & ~ise
    bad |= (ndig == 0) | (inexp & (edig == 0)) | (ndig > 19) | (edig > 4)
    e10 = np.where(eneg, -ev, ev) - frac
    exact = ~bad & (mant <= _TWO53) & (np.abs(e10) <= 22)
    mf = mant.astype(np.float64)
    k = np.clip(np.abs(e10), 0, 22)
    val = np.where(e10 >= 0, mf * _POW10[k], mf / _POW10[k])
    return np.where(neg, -val, val), exact


def _parse_ints(ch: _Chunk, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unsigned decimal integers of <= 18 digits; (values, exact) as :func:`_parse_floats`."""
    n = len(s)
    L = e - s
    val = np.zeros(n, dtype=np.int64)
    bad = L > 18
    words: dict[int, np.ndarray] = {}
    for c in range(min(int(L.max()), 18) if n else 0):
        act = L > c
        d = ch.byte(s, c, words) - np.uint8(48)
        bad |= act & (d > 9)
        np.copyto(val, val * 10 + d, where=act)
    return val, ~bad


def _relevance(col, compat: bool) -> np.ndarray | None:
    """An arrow column of relevance tokens as int64: plain integers (``[+-]digits``, up to 18)
    directly; with ``compat`` any other token as C's ``atol`` reads it, else ``None`` (the
    line-by-line reader then names the line)."""
    tok, L = _binary_tokens(col)
    n = len(L)
    first = tok.ch.buf[np.minimum(tok.s, max(tok.ch.size - 1, 0))] if n else np.zeros(0, np.uint8)
    sign = ((first == 43) | (first == 45)) & (L > 0)
    val, ok = _parse_ints(tok.ch, tok.s + sign, tok.e)
    ok &= L - sign > 0
    val = np.where(sign & (first == 45), -val, val)
    if not bool(ok.all()):
        if not compat:
            return None
        for i in np.flatnonzero(~ok).tolist():
            val[i] = c_atol(tok.token(i))
    return val.astype(np.int64)


# --------------------------------------------------------------------------- docid words

_WORDS_MAX = 8  # docid words kept per line: docids of up to 64 bytes


def _docid_words(ch: _Chunk, s: np.ndarray, e: np.ndarray) -> np.ndarray | None:
    """The docids ``ch.raw[s:e]`` as (lines, K) big-endian uint64 words, zero-padded, K the
    longest docid's words: comparing rows word by word is comparing the bytes as C's strcmp
    does (a docid holds no NUL byte, so a prefix sorts first). ``None`` past 64 bytes."""
    L = e - s
    n = len(L)
    if n == 0:
        return np.zeros((0, 1), dtype=np.uint64)
    k = (int(L.max()) + 7) // 8
    if k > _WORDS_MAX:
        return None
    out = np.empty((n, max(k, 1)), dtype=np.uint64)
    for j in range(k):
        w = ch.masked_word(s, L, j)
        w.byteswap(inplace=True)
        out[:, j] = w
    return out


def _words_from(
    data: np.ndarray, pieces: list[tuple[int, int]] | None, n: int
) -> np.ndarray | None:
    """A part's docid words as written piece by piece (``data``, ``pieces``: (K, lines) of
    each) as one (n, K max) array; ``None`` when a piece had none."""
    if pieces is None or sum(c for _, c in pieces) != n:
        return None
    out = np.zeros((n, max((w for w, _ in pieces), default=1)), dtype=np.uint64)
    at = pos = 0
    for w, c in pieces:
        out[at : at + c, :w] = data[pos : pos + c * w].reshape(c, w)
        at, pos = at + c, pos + c * w
    return out


def _concat_words(parts: list[np.ndarray | None]) -> np.ndarray | None:
    """Docid words of several parts (zero columns added to the narrower ones); ``None`` if
    one part has none."""
    if any(p is None for p in parts):
        return None
    k = max(p.shape[1] for p in parts)
    if all(p.shape[1] == k for p in parts):
        return np.concatenate(parts)
    out = np.zeros((sum(len(p) for p in parts), k), dtype=np.uint64)
    at = 0
    for p in parts:
        out[at : at + len(p), : p.shape[1]] = p
        at += len(p)
    return out


# --------------------------------------------------------------------------- columns


def _have_arrow() -> bool:
    global _ARROW
    if _ARROW is None:
        try:
            import pyarrow  # noqa: F401
            import pyarrow.csv  # noqa: F401

            _ARROW = True
        except ImportError:  # pragma: no cover - pyarrow is a dependency
            _ARROW = False
    return _ARROW


_ARROW: bool | None = None
_RUN_COLUMNS = ["qid", "q0", "docid", "rank", "score", "tag"]


def _arrow_options(block: int):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    ro = pacsv.ReadOptions(column_names=_RUN_COLUMNS, block_size=block, use_threads=False)
    po = pacsv.ParseOptions(
        delimiter=" ",
        quote_char=False,
        escape_char=False,
        double_quote=False,
        newlines_in_values=False,
        ignore_empty_lines=False,
    )
    co = pacsv.ConvertOptions(
        column_types={
            "qid": pa.binary(),
            "q0": pa.binary(),
            "docid": pa.binary(),
            "rank": pa.int32(),
            "score": pa.float64(),
            "tag": pa.binary(),
        },
        null_values=[],
        true_values=[],
        false_values=[],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        check_utf8=False,
    )
    return ro, po, co


class _Tokens:
    """One column of tokens: ``ch`` holds the bytes, token i is ``ch.raw[s[i]:e[i]]``."""

    __slots__ = ("ch", "e", "s")

    def __init__(self, ch: _Chunk, s: np.ndarray, e: np.ndarray):
        self.ch, self.s, self.e = ch, s, e

    def token(self, i: int) -> bytes:
        return self.ch.token(int(self.s[i]), int(self.e[i]))


def _binary_tokens(col) -> tuple[_Tokens, np.ndarray]:
    """An arrow binary column (one chunk) as tokens over a padded copy of its data, and the
    token lengths."""
    arr = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    n = len(arr)
    off = np.frombuffer(
        arr.buffers()[1], dtype=np.int32, count=n + 1, offset=arr.offset * 4
    ).astype(np.int64)
    data = arr.buffers()[2]
    lo, hi = int(off[0]), int(off[-1])
    raw = bytearray(hi - lo + 16)
    raw[: hi - lo] = memoryview(data)[lo:hi]
    off -= lo
    return _Tokens(_Chunk(raw, hi - lo, 0), off[:-1], off[1:]), off[1:] - off[:-1]


def _parse_arrow(ch: _Chunk, opts) -> tuple | None:
    """The usual layout (single spaces, ``\\n`` line ends, no other byte below 0x20) parsed by
    pyarrow's CSV reader; ``None`` when the piece is anything else, or arrow refuses a value,
    or a score is not finite: the strict reader then decides (and locates any error)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        t = pacsv.read_csv(pa.py_buffer(memoryview(ch.raw)[: ch.size]), *opts)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    n = t.num_rows
    # every byte below 0x20 ends a row, and none is a CR (arrow ends a row at a lone CR, the
    # strict reader takes it for a blank): only "\n", no tab, form feed or control byte
    if n != int(np.count_nonzero(ch.buf < 32)) or ch.raw.find(b"\r", 0, ch.size) >= 0:
        return None
    qtok, ql = _binary_tokens(t.column("qid"))
    dtok, dl = _binary_tokens(t.column("docid"))
    if n and (ql.min() == 0 or dl.min() == 0):
        return None
    for name in ("q0", "tag"):  # an empty field = two adjacent separators
        c = t.column(name)
        a = c.chunk(0) if c.num_chunks == 1 else c.combine_chunks()
        off = np.frombuffer(a.buffers()[1], dtype=np.int32, count=n + 1, offset=a.offset * 4)
        if n and int(np.diff(off).min()) == 0:
            return None
    rank = t.column("rank").to_numpy()
    score = t.column("score").to_numpy()
    if n and not bool(np.isfinite(score).all()):
        return None
    qcol = t.column("qid")
    return (
        qtok,
        dtok,
        np.ascontiguousarray(rank, dtype=np.int32),
        np.ascontiguousarray(score, dtype=np.float64),
        qcol.chunk(0) if qcol.num_chunks == 1 else qcol.combine_chunks(),
    )


def _parse_c(ch: _Chunk, compat: bool, words: bool) -> tuple | None:
    """The usual layout (as :func:`_parse_arrow` takes it) in one C pass
    (``_trecscan.scan``): ``(parsed, docid hashes, qid changes, docid words or None)``, the
    hashes those of :func:`_hash`, the words those of :func:`_docid_words` (``words``: wanted);
    ``None`` when the compiled reader is missing or the piece is anything else (the strict
    reader then decides)."""
    if _trecscan is None:
        return None
    n = _trecscan.count_lines(ch.raw, ch.size)
    qs, qe, ds, de = (np.empty(n, np.int64) for _ in range(4))
    rank = np.empty(n, np.int32)
    score = np.empty(n, np.float64)
    dh = np.empty(n, np.uint64)
    qchange = np.empty(n, bool)
    got = _trecscan.scan(ch.raw, ch.size, compat, qs, qe, ds, de, rank, score, dh, qchange)
    if got is None or got[0] != n:
        return None
    longest = got[1]
    if longest > _LONG:  # hashed apart, as _hash does
        long = np.flatnonzero(de - ds > _LONG)
        dh[long] = _hash(ch, ds[long], de[long])
    dw = None
    if words and longest <= 8 * _WORDS_MAX:
        k = (longest + 7) // 8
        dw = np.empty((n, max(k, 1)), dtype=np.uint64)
        if n:
            _trecscan.words(ch.raw, ds, de, k, dw)
    return (_Tokens(ch, qs, qe), _Tokens(ch, ds, de), rank, score, None), dh, qchange, dw


def _at(first, i: int) -> int:
    """The file line (1-based) of record ``i``: ``first`` is the piece's first line, or per
    record the line minus the record index (when lines were skipped)."""
    return int(first if np.isscalar(first) else first[i]) + i + 1


def _parse_strict(
    path: Path, ch: _Chunk, compat: bool = False
) -> tuple[_Tokens, _Tokens, np.ndarray, np.ndarray, None]:
    """Any layout :func:`membench.run.files.trec_fields` accepts (runs of ASCII whitespace,
    CRLF, ...), with every error located."""
    _check_text(path, ch)
    S, E, rec_line = _fields(path, ch, compat)
    n = len(S)
    first = ch.first_line
    if rec_line is not None:  # records -> file lines, for the messages below
        first = np.int64(first) + rec_line - np.arange(n)
    rs, re_ = np.ascontiguousarray(S[:, 3]), np.ascontiguousarray(E[:, 3])
    rank, ok = _parse_ints(ch, rs, re_)
    for i in np.flatnonzero(~ok).tolist():
        tok = ch.token(rs[i], re_[i])
        try:
            v = trec_int(tok)
        except ValueError:
            if compat:  # trec_eval never reads the rank column
                rank[i] = min(max(c_atol(tok), -(2**31)), 2**31 - 1)
                continue
            raise InputError(
                path,
                _at(first, i),
                "rank",
                f"not an integer: {tok.decode('utf-8', 'replace')!r}"[:200],
                rule="TREC",
            ) from None
        if not -(2**31) <= v < 2**31 and compat:
            v = min(max(v, -(2**31)), 2**31 - 1)
        if not -(2**31) <= v < 2**31:
            raise InputError(path, _at(first, i), "rank", "out of the 32-bit range", rule="TREC")
        rank[i] = v
    if n and compat:
        np.clip(rank, -(2**31), 2**31 - 1, out=rank)
    if n and (rank.min() < -(2**31) or rank.max() >= 2**31):
        i = int(np.flatnonzero((rank < -(2**31)) | (rank >= 2**31))[0])
        raise InputError(path, _at(first, i), "rank", "out of the 32-bit range", rule="TREC")
    ss, se = np.ascontiguousarray(S[:, 4]), np.ascontiguousarray(E[:, 4])
    score, ok = _parse_floats(ch, ss, se)
    for i in np.flatnonzero(~ok).tolist():
        tok = ch.token(ss[i], se[i])
        try:
            score[i] = c_atof(tok) if compat else trec_float(tok)
        except ValueError:
            raise InputError(
                path,
                _at(first, i),
                "score",
                f"not a number: {tok.decode('utf-8', 'replace')!r}"[:200]
                + "; trec_eval reads it with C's atof, and so does membench "
                "trec-eval without --strict",
                rule="TREC",
            ) from None
    if n and not compat and not np.all(np.isfinite(score)):
        i = int(np.flatnonzero(~np.isfinite(score))[0])
        raise InputError(path, _at(first, i), "score", "must be finite", rule="TREC")
    return (
        _Tokens(ch, np.ascontiguousarray(S[:, 0]), np.ascontiguousarray(E[:, 0])),
        _Tokens(ch, np.ascontiguousarray(S[:, 2]), np.ascontiguousarray(E[:, 2])),
        rank.astype(np.int32),
        score,
        None,
    )


# --------------------------------------------------------------------------- query ids


class _QueryIndex:
    """qid -> query index (qrels queries first, then run queries in order of appearance)."""

    def __init__(self, qindex: dict[str, int]):
        self.index = qindex
        self._known = None  # the qids as an arrow array, in index order
        self._known_n = -1

    def lookup(self, tok: _Tokens, changes: np.ndarray | None = None, column=None) -> np.ndarray:
        """Query index of every token. Runs of equal consecutive qids are looked up once; when
        there are many runs (interleaved queries), the chunk's arrow ``column`` is dictionary
        encoded and its distinct qids matched against the known ones in bulk; without it,
        equal qids are grouped by a hash whose every match is confirmed on the bytes (in one C
        pass, ``_trecscan.distinct``, where it was built)."""
        n = len(tok.s)
        if n == 0:
            return np.zeros(0, dtype=np.int32)
        if changes is None:
            changes = _changes(tok.ch, tok.s, tok.e)
        seg = np.flatnonzero(changes)
        if 8 * len(seg) <= n or n < 64:
            rep = seg
            inv = None
        elif _trecscan is not None:  # equal qids numbered in one C pass
            inv = np.empty(n, dtype=np.int32)
            first = np.empty(n, dtype=np.int64)
            m = _trecscan.distinct(
                tok.ch.raw,
                np.ascontiguousarray(tok.s, dtype=np.int64),
                np.ascontiguousarray(tok.e, dtype=np.int64),
                np.ascontiguousarray(changes, dtype=bool),
                inv,
                first,
            )
            rep = first[:m]
        elif column is not None:
            return self._lookup_arrow(column)
        else:
            h = _hash(tok.ch, tok.s, tok.e)
            uniq, first, inv = np.unique(h, return_index=True, return_inverse=True)
            rep = first
            L = tok.e - tok.s
            same = _same_bytes(tok.ch, tok.s, L, tok.ch, tok.s[rep][inv], L[rep][inv])
            if not bool(same.all()):  # a hash collision: one lookup per line
                rep, inv = np.arange(n), None
                seg = rep
        idx = self.index
        vals = np.empty(len(rep), dtype=np.int32)
        for j, i in enumerate(rep.tolist()):
            qid = tok.token(i).decode("utf-8")  # (valid UTF-8: checked)
            vals[j] = idx.setdefault(qid, len(idx))
        if inv is not None:
            return vals[inv]
        return np.repeat(vals, np.diff(np.append(seg, n)))

    def qid(self, i: int) -> str:
        """The qid of query index ``i`` (for a message: a scan of the index)."""
        for qid, j in self.index.items():
            if j == i:
                return qid
        return str(i)

    def _lookup_arrow(self, column) -> np.ndarray:
        import pyarrow as pa
        import pyarrow.compute as pc

        enc = column.dictionary_encode()
        distinct = enc.dictionary
        if self._known_n != len(self.index):
            self._known = pa.array([k.encode("utf-8") for k in self.index], type=pa.binary())
            self._known_n = len(self.index)
        pos = pc.fill_null(pc.index_in(distinct, value_set=self._known), -1).to_numpy()
        pos = pos.astype(np.int32)
        new = np.flatnonzero(pos < 0)
        if new.size:
            idx = self.index
            for j, b in zip(new.tolist(), distinct.take(pa.array(new)).to_pylist()):
                pos[j] = idx.setdefault(b.decode("utf-8"), len(idx))
        return pos[enc.indices.to_numpy()]
