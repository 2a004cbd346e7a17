"""TREC runs and qrels: a fast, exact reader and an evaluator sharing membench's formulas.

Run files have one line per retrieved document, ``qid Q0 docid rank score tag`` (whitespace
separated); qrels have ``qid iter docid rel``. The run is read in 8 MiB chunks
(:data:`CHUNK_BYTES`) without one Python object per line:

* **parsing**: a chunk in the usual layout (single spaces, ``\n`` line ends, no other byte
  below 0x20, every field non-empty, ranks that fit 32 bits, finite decimal scores) is parsed
  by pyarrow's CSV reader (C++, exact ``float()``-equal doubles) on a second thread while the
  previous chunk is looked up; any other chunk (tabs, runs of blanks, CRLF, ``+5`` ranks, ...
  or a malformed line) goes through the strict numpy reader, which accepts exactly what
  :func:`membench.run.files.trec_fields` accepts and names the file, line and field of an
  error. Scores there are parsed with Clinger's exact fast path (decimal mantissa <= 2**53 and
  |power of ten| <= 22: one correctly rounded multiply or divide gives the same double as
  ``float()``); anything else goes through ``float()``.
* **bounds**: a line longer than :data:`MAX_TREC_LINE` is one located error, found after
  reading at most that much of it (a stream without newlines is read in fixed memory); a run
  that is not a regular file is copied to ``TMPDIR`` as it is read; three buffers are reused
  in turn.
* **ids**: query ids are looked up once per run of equal consecutive qids; document ids are
  hashed to 64 bits (8 bytes per step up to 64 bytes; a longer docid is hashed and compared
  on its own, so the work is linear in the bytes whatever the longest docid). Qrels sit in
  one small open-addressing table per query, behind a bit filter, so the judged lines are
  found without a Python object per line; every hash match is confirmed on the bytes, and
  equal (query, docid) keys (duplicate candidates) are confirmed by re-reading their docids,
  so a hash collision can cost time, never a wrong value.
* **grouping**: while queries come contiguously (each query's lines in one block, any order
  inside it), each group of whole queries is ranked as soon as the next query starts, so
  memory is a chunk plus one query; the chunks read are also held (32 bytes a line, up to
  :data:`MAX_HELD_BYTES`). When a query reappears after another one started
  (shards concatenated, a run sorted by docid), every line goes on to :meth:`_Scan.group`:
  split by ranges of query indices (mod P) into parts of about 2 million lines, held, then
  gathered and ranked part by part, without reading the file again. Past
  :data:`MAX_HELD_BYTES` the lines go to one temporary file per part (``TMPDIR``), and if
  the bound was passed before a query came back the file is read a second time: bounded
  memory for any order.
* **ranking** a group: in order already (checked) -> ranks are positions; else one sort of
  packed 64-bit keys (query, the score's high bits, position), the rare runs that agree in
  the kept bits put exactly in (score, rank column, line) order (:func:`_sort`).

Ranking follows :data:`membench.run.protocol.TIE_BREAKING`: score descending, then the rank
column ascending, then line order; a repeated (qid, docid) counts only at its first position.
``ties="trec_eval"`` ranks as trec_eval does instead: scores as 32-bit floats, descending,
then docid descending (bytes), the rank column ignored. Relevant = qrels relevance >= 1
(trec_eval's default). Measures are averaged over the qrels queries that have at least one
relevant document, a query without run lines scoring 0 (trec_eval ``-c``); run queries absent
from the qrels are ignored. Unlike the JSONL path, no depth cap is applied (recall@1000 only
looks at the top 1000 anyway; MRR looks at the whole list, like trec_eval).
``bench/bench_metrics.py`` measures time and memory against the trec_eval binary,
pytrec_eval, ranx and ir_measures (``docs/speed.md``, "Metric speed").
"""

from __future__ import annotations

import codecs
import collections
import hashlib
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.bounds import bound
from ..core.errors import InputError
from ..core.textfiles import (MAX_TREC_LINE, check_readable_file, trec_fields, trec_float,
                              trec_int)
from .ranking import FirstHits, rank_measures

CHUNK_BYTES = 8 << 20
MAX_HELD_BYTES = bound(
    "trec_held_bytes", 384 << 20, "bytes",
    "lines of a TREC run held in memory (32 bytes a line) to group queries whose lines are "
    "not contiguous (a run written by shards, sorted by docid, ...)",
    "the lines go to temporary files in TMPDIR, one per group of queries (no error; the file "
    "is read a second time as far as the bound was passed before the first query came back)",
    "membench.metrics.trec")
MAX_QRELS_BYTES = bound(
    "trec_qrels_bytes", 1 << 30, "bytes", "a qrels file (read whole into memory)",
    "located error TOO_LARGE naming the file", "membench.metrics.trec")
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_POW10 = 10.0 ** np.arange(23)          # exact doubles 1e0 .. 1e22
_TWO53 = np.uint64(1 << 53)


# --------------------------------------------------------------------------- writing


def write_trec_run(path: str | Path, run: Mapping[str, Sequence[tuple[str, float]]],
                   tag: str = "membench") -> None:
    """Write ``{qid: [(docid, score), ...]}``; ranks are 1.. in the given order."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for qid, hits in run.items():
            f.writelines(f"{qid} Q0 {d} {i} {s!r} {tag}\n" for i, (d, s) in enumerate(hits, 1))


def write_trec_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for qid, docs in qrels.items():
            f.writelines(f"{qid} 0 {d} {int(r)}\n" for d, r in docs.items())


# --------------------------------------------------------------------------- qrels


def read_trec_qrels(path: str | Path, compat: bool = False) -> dict[str, dict[str, int]]:
    """``qid iter docid rel`` lines -> ``{qid: {docid: rel}}`` (file order kept). A repeated
    (qid, docid) or a malformed line is an error naming the line. ``compat``: lines starting
    with ``#`` are comments, as in trec_eval 10."""
    out: dict[str, dict[str, int]] = {}
    path = Path(path)
    for no, (qid, _, doc, rel) in trec_fields(path, "qid iter docid rel", comment_lines=compat):
        try:
            r = trec_int(rel)
        except ValueError:
            raise InputError(path, no, "rel", f"not an integer: {rel!r}", rule="TREC") from None
        docs = out.setdefault(qid, {})
        if doc in docs:
            raise InputError(path, no, "docid", f"{qid} {doc} judged twice", rule="TREC")
        docs[doc] = r
    return out


def _spool(path: Path, tmpdir: Path, chunk_bytes: int, limit: int | None = None) -> Path:
    """A run or qrels that is not a regular file (a pipe, ``/dev/stdin``, a device) copied to
    ``tmpdir`` as it is read, so that it can be read again; its lines are bounded as they go
    (:func:`_read_chunks`), so ``/dev/zero`` ends in a located error after
    :data:`MAX_TREC_LINE` bytes. ``limit``: at most that many bytes in all."""
    out = tmpdir / "spooled"
    total = 0
    with open(out, "wb") as f:
        for _, raw, size in _read_chunks(path, chunk_bytes, count_lines=True):
            total += size
            if limit is not None and total > limit:
                raise InputError(path, None, None, f"larger than {limit:,} bytes",
                                 rule="TOO_LARGE")
            f.write(memoryview(raw)[:size])
    return out


# --------------------------------------------------------------------------- vector helpers

_MASKS = np.array([0] + [(1 << (8 * k)) - 1 for k in range(1, 8)] + [(1 << 64) - 1],
                  dtype=np.uint64)


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


def _read_chunks(path: Path, chunk_bytes: int, max_line: int | None = None,
                 count_lines: bool = False) -> Iterator[tuple[int, bytearray, int]]:
    """(file offset, buffer, size): pieces of the file that end at a line end (a final
    newline is supplied), with >= 8 bytes of slack after ``size``. A piece stays intact while
    the next one is read and used (the consumer may parse one piece while it looks up the
    previous one), and is overwritten when the one after that is read.

    Bounded: at most ``chunk_bytes`` are read at a time, a piece holds at most
    ``chunk_bytes + max_line`` bytes, and a line longer than ``max_line``
    (:data:`MAX_TREC_LINE`) is an :class:`InputError` (LINE_TOO_LONG) naming it, raised after
    reading at most that much of it: a stream without newlines is read in fixed memory, and
    the work is linear in the bytes read. ``count_lines``: count the lines as they go (for a
    stream, which cannot be read again to locate an error)."""
    max_line = MAX_TREC_LINE if max_line is None else max_line
    lines = 0 if count_lines else None
    cap = chunk_bytes + max_line + 16
    # three buffers in turn (a fresh one per piece would cost its page faults every time):
    # piece k is read into buffer k % 3 once the consumer is done with piece k - 2
    ring = [bytearray(cap)]
    raw = ring[0]
    k = 0
    have = 0               # bytes carried over: the start of a line, < max_line
    offset = 0
    with open(path, "rb") as f:
        while True:
            got = f.readinto(memoryview(raw)[have:have + chunk_bytes])
            end = have + got
            if got == 0:
                if have:
                    raw[have] = 10
                    yield offset, raw, have + 1
                return
            cut = raw.rfind(b"\n", 0, end) + 1
            _check_line_lengths(path, raw, end, max_line, offset, lines)
            if cut == 0:
                have = end
                continue
            yield offset, raw, cut
            offset += cut
            if lines is not None:
                lines += raw.count(b"\n", 0, cut)
            k += 1
            if len(ring) < 3:
                ring.append(bytearray(cap))
            nxt = ring[k % 3]
            nxt[:end - cut] = raw[cut:end]
            raw = nxt
            have = end - cut


def _check_line_lengths(path: Path, raw: bytearray, end: int, max_line: int,
                        offset: int, lines: int | None) -> None:
    """Every line in ``raw[:end]`` (the last one possibly unfinished; ``raw`` starts at a line
    start, at ``offset`` in the file) is at most ``max_line`` bytes long, newline included,
    else a located error. Each step jumps ``max_line`` bytes ahead and looks back for a
    newline, so a piece costs a few ``rfind`` calls that stop at the first newline they meet."""
    p = 0
    while end - p > max_line:
        q = raw.rfind(b"\n", p, p + max_line)
        if q < 0:                         # no line end within max_line bytes of p
            before = _lines_before(path, offset) if lines is None else lines
            line = before + raw.count(b"\n", 0, p) + 1
            raise InputError(path, line, None, f"line longer than {max_line:,} bytes (bound "
                             "trec_line_bytes); is this a TREC file?", rule="LINE_TOO_LONG")
        p = q + 1


def _lines_before(path: Path, offset: int) -> int:
    """Newlines in the first ``offset`` bytes of the file (for an error message only)."""
    n = 0
    with open(path, "rb") as f:
        while offset > 0:
            b = f.read(min(offset, 8 << 20))
            if not b:
                break
            n += b.count(b"\n")
            offset -= len(b)
    return n


def _fields(path: Path, ch: _Chunk,
            compat: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Token start/end offsets, shaped (records, 6), and the piece-local line of each record
    (``None`` when every line is a record). A line without exactly 6 fields is an error
    naming it; with ``compat`` (trec_eval's reading) blank lines and lines whose first field
    starts with ``#`` are skipped, and fields after the sixth ignored."""
    sep = np.flatnonzero(ch.buf <= 32)                  # every whitespace byte
    if len(sep) and (ch.buf[0] > 32) and bool(np.all(sep[1:] - sep[:-1] > 1)):
        # the usual layout: single separators, no leading/trailing blanks
        starts = np.empty(len(sep), dtype=np.int64)
        starts[0] = 0
        starts[1:] = sep[:-1] + 1
        ends = sep
    else:
        ws = ch.buf <= 32
        t = np.flatnonzero(ws[1:] != ws[:-1]) + 1        # every whitespace/token transition
        if not ws[0]:
            t = np.concatenate([[0], t])
        starts, ends = t[0::2], t[1::2]                  # the piece ends with "\n": pairs close
    nl = np.flatnonzero(ch.buf[ends] == 10) if ends is sep else np.flatnonzero(ch.buf == 10)
    nl_pos = ends[nl] if ends is sep else nl
    n_lines = len(nl_pos)
    if len(starts) == 6 * n_lines and n_lines and \
            bool(np.all(ends[5::6] <= nl_pos)) and bool(np.all(starts[6::6] > nl_pos[:-1])) \
            and not (compat and bool((ch.buf[starts[0::6]] == 35).any())):
        return starts.reshape(-1, 6), ends.reshape(-1, 6), None
    line_start = np.concatenate([[0], nl_pos[:-1] + 1])
    first_tok = np.searchsorted(starts, line_start)
    counts = np.diff(np.append(first_tok, len(starts)))
    if not compat:
        bad = np.flatnonzero(counts != 6)
        i = int(bad[0]) if bad.size else 0
        raise InputError(path, ch.first_line + i + 1, None, "expected 6 fields (qid Q0 docid "
                         f"rank score tag), got {int(counts[i])}"
                         + ("; trec_eval ignores fields after the sixth, and so does membench "
                            "trec-eval without --strict" if counts[i] > 6 else ""),
                         rule="TREC")
    has = counts > 0
    comment = np.zeros(n_lines, dtype=bool)
    comment[has] = ch.buf[starts[first_tok[has]]] == 35
    keep = np.flatnonzero(has & ~comment)
    short = keep[counts[keep] < 6]
    if short.size:
        i = int(short[0])
        raise InputError(path, ch.first_line + i + 1, None, "expected at least 6 fields (qid "
                         f"Q0 docid rank score tag), got {int(counts[i])}", rule="TREC")
    idx = (first_tok[keep][:, None] + np.arange(6)[None, :]).ravel()
    return starts[idx].reshape(-1, 6), ends[idx].reshape(-1, 6), keep


def _check_text(path: Path, ch: _Chunk) -> None:
    """The piece is UTF-8 and holds no control byte but whitespace (as
    :func:`membench.run.files.trec_fields` requires); else an error naming line and column."""
    view = memoryview(ch.raw)[:ch.size]
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
        raise InputError(path, line, None, f"{what} at column {bad_at - line_start + 1}",
                         rule="TREC" if what.startswith("control") else "ENCODING")


_LONG = 64    # tokens longer than this are hashed and compared one by one, not word by word


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
            (int.from_bytes(hashlib.blake2b(view[a:b], digest_size=8).digest(), "little")
             for a, b in zip(s[long].tolist(), e[long].tolist())), dtype=np.uint64,
            count=len(long))
        return h
    lmin = int(L.min())
    for j in range((lmax + 7) // 8):
        alive = lmin > 8 * j                 # every token has a byte in word j
        idx = s + 8 * j if alive else np.minimum(s + 8 * j, ch.size - 1)
        w = ch.words[idx]
        if lmin < 8 * j + 8:                 # some token ends inside word j: mask it
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


def _same_bytes(a: _Chunk, sa: np.ndarray, la: np.ndarray, b: _Chunk, sb: np.ndarray,
                lb: np.ndarray) -> np.ndarray:
    """Token ``a[sa:sa+la]`` == token ``b[sb:sb+lb]``, element-wise: word by word up to
    :data:`_LONG` bytes, then pairs of longer tokens compared one by one (linear work)."""
    same = la == lb
    if len(la) == 0:
        return same
    for j in range((min(int(la.max()), _LONG) + 7) // 8):
        same &= a.masked_word(sa, la, j) == b.masked_word(sb, lb, j)
    for i in np.flatnonzero(same & (la > _LONG)).tolist():
        x, y, n = int(sa[i]), int(sb[i]), int(la[i])
        same[i] = a.raw[x:x + n] == b.raw[y:y + n]
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
        d = chs - np.uint8(48)                       # wraps for non-digits
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
        if not other.any():                          # digits and dots only (the usual case)
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


# --------------------------------------------------------------------------- qrels as keys


def _qrels_arrays(path: Path, qindex: dict[str, int], compat: bool = False) -> tuple | None:
    """(query index, docid bytes, starts, lengths, relevance) of a qrels file in the usual
    layout (single spaces, ``\\n`` line ends, integer relevance, no judgment repeated), or
    ``None``."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    raw = bytearray(path.read_bytes())
    if raw and not raw.endswith(b"\n"):
        raw += b"\n"
    size = len(raw)
    raw += bytes(16)
    ch = _Chunk(raw, size, 0)
    if size == 0:
        return None
    try:
        codecs.utf_8_decode(memoryview(raw)[:size], "strict", True)
        t = pacsv.read_csv(
            pa.py_buffer(memoryview(raw)[:size]),
            pacsv.ReadOptions(column_names=["qid", "iter", "docid", "rel"],
                              block_size=size + 64, use_threads=False),
            pacsv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False,
                               double_quote=False, newlines_in_values=False,
                               ignore_empty_lines=False),
            pacsv.ConvertOptions(column_types={"qid": pa.binary(), "iter": pa.binary(),
                                               "docid": pa.binary(), "rel": pa.int64()},
                                 null_values=[], strings_can_be_null=False,
                                 quoted_strings_can_be_null=False, check_utf8=False))
    except (UnicodeDecodeError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    n = t.num_rows
    if n != int(np.count_nonzero(ch.buf < 32)):
        return None
    qtok, ql = _binary_tokens(t.column("qid"))
    itok, il = _binary_tokens(t.column("iter"))
    dtok, dl = _binary_tokens(t.column("docid"))
    if n and (ql.min() == 0 or il.min() == 0 or dl.min() == 0):
        return None
    if compat and n and bool((qtok.ch.buf[qtok.s] == 35).any()):    # a "#" comment line
        return None
    trial = dict(qindex)
    q = _QueryIndex(trial).lookup(qtok).astype(np.int64)
    key = _mix(_hash(dtok.ch, dtok.s, dtok.e), q)
    order = np.argsort(key, kind="stable")
    sk = key[order]
    eq = np.flatnonzero(sk[1:] == sk[:-1])
    if eq.size:                     # a repeated (query, docid) candidate: let the slow path say
        a, b = order[eq], order[eq + 1]
        same = _same_bytes(dtok.ch, dtok.s[a], dl[a], dtok.ch, dtok.s[b], dl[b]) & (q[a] == q[b])
        if same.any():
            return None
    qindex.clear()
    qindex.update(trial)
    rel = np.ascontiguousarray(t.column("rel").to_numpy(), dtype=np.int64)
    return q, dtok.ch, dtok.s, dl, rel


class _Qrels:
    """Qrels as one small open-addressing hash table per query (docid hash -> judgment), so
    that looking up a run's lines, which come query by query, stays in cache. Every hash match
    is confirmed on the bytes."""

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], qindex: dict[str, int],
                 arrays: tuple | None = None):
        if arrays is None:
            qs, docs, rels = [], [], []
            for qid, judged in qrels.items():
                qi = qindex.setdefault(qid, len(qindex))
                for d, r in judged.items():
                    qs.append(qi)
                    docs.append(d.encode("utf-8"))
                    rels.append(int(r))
            blob = bytearray(b" ".join(docs) + b"\n" + bytes(16))
            lens = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
            starts = np.concatenate([[0], np.cumsum(lens + 1)[:-1]]).astype(np.int64)
            arrays = (np.asarray(qs, dtype=np.int64), _Chunk(blob, len(blob) - 16, 0), starts,
                      lens, np.asarray(rels, dtype=np.int64))
        q, self.ch, self.s, lens, rel = arrays
        self.len = lens
        nq = self.n_queries = len(qindex)
        self.q = q
        self.rel = rel
        self.n_relevant = np.bincount(q[rel >= 1], minlength=nq).astype(np.int64)
        docs = lens            # (only its length is used below)
        h = _hash(self.ch, self.s, self.s + lens) if len(docs) else np.zeros(0, np.uint64)
        # per query a region of 2**k >= 2 * judged slots; the extra query index nq (and every
        # query without judgments) points at slot 0, which stays empty
        counts = np.bincount(q, minlength=nq + 1)
        cap = np.where(counts > 0, 1 << np.ceil(np.log2(np.maximum(2 * counts, 2))).astype(
            np.int64), 0)
        self.base = np.concatenate([[1], 1 + np.cumsum(cap)[:-1]]).astype(np.int64)
        self.base[counts == 0] = 0
        self.mask = np.maximum(cap - 1, 0).astype(np.uint64)
        size = 1 + int(cap.sum())
        self.table_h = np.zeros(size, dtype=np.uint64)
        self.table_i = np.full(size, -1, dtype=np.int64)
        pending = np.arange(len(docs), dtype=np.int64)
        probe = 0
        while pending.size:
            pq = q[pending]
            slot = self.base[pq] + ((h[pending] + np.uint64(probe)) & self.mask[pq]).astype(
                np.int64)
            free = self.table_i[slot] < 0
            u, first = np.unique(slot[free], return_index=True)
            won = pending[free][first]
            self.table_i[u] = won
            self.table_h[u] = h[won]
            placed = np.zeros(len(docs), dtype=bool)
            placed[won] = True
            pending = pending[~placed[pending]]
            probe += 1
        # a membership pre-filter on the (query, docid) key's top bits: most run lines are
        # not judged, and one gather in a small array tells most of them apart
        # (a bit set, 8 times smaller than a bool per slot: it stays in cache while the
        # run's lines are looked up at random in it)
        self.fbits = int(min(28, max(12, np.ceil(np.log2(32 * max(len(docs), 1))))))
        self.filter = np.zeros(1 << (self.fbits - 6), dtype=np.uint64)
        if len(docs):
            top = _mix(h, q) >> np.uint64(64 - self.fbits)
            np.bitwise_or.at(self.filter, (top >> np.uint64(6)).astype(np.int64),
                             np.uint64(1) << (top & np.uint64(63)))

    @classmethod
    def from_file(cls, path: Path, qindex: dict[str, int], tmpdir: Path | None = None,
                  compat: bool = False) -> _Qrels:
        """Qrels read straight into arrays (pyarrow, the usual layout); any other layout,
        a repeated judgment or a malformed line goes through :func:`read_trec_qrels`, which
        names the line. A qrels file is read whole: at most :data:`MAX_QRELS_BYTES` (a stream
        is first copied to ``tmpdir``, its lines bounded as it goes)."""
        shown = Path(path)
        path = _regular(shown, tmpdir, CHUNK_BYTES, MAX_QRELS_BYTES) \
            if tmpdir is not None else check_readable_file(shown)
        if path.stat().st_size > MAX_QRELS_BYTES:
            raise InputError(shown, None, None, f"larger than {MAX_QRELS_BYTES:,} bytes (bound "
                             "trec_qrels_bytes)", rule="TOO_LARGE")
        try:
            arrays = _qrels_arrays(path, qindex, compat) if _have_arrow() else None
            if arrays is None:
                qindex.clear()
                return cls(read_trec_qrels(path, compat), qindex)
        except InputError as e:
            if path != shown and Path(e.file) == path:
                e.file = str(shown)
            raise
        return cls({}, qindex, arrays)

    def lookup(self, ch: _Chunk, dhash: np.ndarray, key: np.ndarray, q: np.ndarray,
               ds: np.ndarray, de: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lines (piece-local) whose (query, docid) is judged, and their relevance (``key``:
        :func:`_mix` of ``dhash`` and ``q``)."""
        if len(self.rel) == 0 or len(q) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        top = key >> np.uint64(64 - self.fbits)
        w = self.filter[(top >> np.uint64(6)).astype(np.int64)]
        w >>= top & np.uint64(63)
        w &= np.uint64(1)
        todo = np.flatnonzero(w)
        qq = np.minimum(q, self.n_queries)
        slot = self.base[qq[todo]] + (dhash[todo] & self.mask[qq[todo]]).astype(np.int64)
        hit_l, hit_i = [], []
        while todo.size:
            ti = self.table_i[slot]
            occupied = ti >= 0
            todo, slot, ti = todo[occupied], slot[occupied], ti[occupied]
            m = self.table_h[slot] == dhash[todo]
            if m.any():
                ml, mi = todo[m], ti[m]
                ok = _same_bytes(ch, ds[ml], de[ml] - ds[ml], self.ch, self.s[mi], self.len[mi])
                hit_l.append(ml[ok])
                hit_i.append(mi[ok])
                keep = np.ones(len(todo), dtype=bool)
                keep[np.flatnonzero(m)[ok]] = False
                todo, slot = todo[keep], slot[keep]
            if todo.size:                       # linear probing inside the query's region
                qt = qq[todo]
                b = self.base[qt]
                slot = b + ((slot - b + 1) & self.mask[qt].astype(np.int64))
        if not hit_l:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        lines = np.concatenate(hit_l)
        idx = np.concatenate(hit_i)
        o = np.argsort(lines, kind="stable")
        return lines[o], self.rel[idx[o]]


# --------------------------------------------------------------------------- chunk parsing


def _have_arrow() -> bool:
    global _ARROW
    if _ARROW is None:
        try:
            import pyarrow  # noqa: F401
            import pyarrow.csv  # noqa: F401
            _ARROW = True
        except ImportError:                       # pragma: no cover - pyarrow is a dependency
            _ARROW = False
    return _ARROW


_ARROW: bool | None = None
_RUN_COLUMNS = ["qid", "q0", "docid", "rank", "score", "tag"]


def _arrow_options(block: int):
    import pyarrow as pa
    import pyarrow.csv as pacsv
    ro = pacsv.ReadOptions(column_names=_RUN_COLUMNS, block_size=block, use_threads=False)
    po = pacsv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False,
                            double_quote=False, newlines_in_values=False,
                            ignore_empty_lines=False)
    co = pacsv.ConvertOptions(
        column_types={"qid": pa.binary(), "q0": pa.binary(), "docid": pa.binary(),
                      "rank": pa.int32(), "score": pa.float64(), "tag": pa.binary()},
        null_values=[], true_values=[], false_values=[], strings_can_be_null=False,
        quoted_strings_can_be_null=False, check_utf8=False)
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
    off = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=n + 1,
                        offset=arr.offset * 4).astype(np.int64)
    data = arr.buffers()[2]
    lo, hi = int(off[0]), int(off[-1])
    raw = bytearray(hi - lo + 16)
    raw[:hi - lo] = memoryview(data)[lo:hi]
    off -= lo
    return _Tokens(_Chunk(raw, hi - lo, 0), off[:-1], off[1:]), off[1:] - off[:-1]


def _parse_arrow(ch: _Chunk, opts) -> tuple | None:
    """The usual layout (single spaces, ``\\n`` line ends, no other byte below 0x20) parsed by
    pyarrow's CSV reader; ``None`` when the piece is anything else, or arrow refuses a value,
    or a score is not finite: the strict reader then decides (and locates any error)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    try:
        t = pacsv.read_csv(pa.py_buffer(memoryview(ch.raw)[:ch.size]), *opts)
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
    for name in ("q0", "tag"):                    # an empty field = two adjacent separators
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
    return qtok, dtok, np.ascontiguousarray(rank, dtype=np.int32), \
        np.ascontiguousarray(score, dtype=np.float64), \
        qcol.chunk(0) if qcol.num_chunks == 1 else qcol.combine_chunks()


def _at(first, i: int) -> int:
    """The file line (1-based) of record ``i``: ``first`` is the piece's first line, or per
    record the line minus the record index (when lines were skipped)."""
    return int(first if np.isscalar(first) else first[i]) + i + 1


def _parse_strict(path: Path, ch: _Chunk, compat: bool = False
                  ) -> tuple[_Tokens, _Tokens, np.ndarray, np.ndarray, None]:
    """Any layout :func:`membench.run.files.trec_fields` accepts (runs of ASCII whitespace,
    CRLF, ...), with every error located."""
    _check_text(path, ch)
    S, E, rec_line = _fields(path, ch, compat)
    n = len(S)
    first = ch.first_line
    if rec_line is not None:              # records -> file lines, for the messages below
        first = np.int64(first) + rec_line - np.arange(n)
    rs, re_ = np.ascontiguousarray(S[:, 3]), np.ascontiguousarray(E[:, 3])
    rank, ok = _parse_ints(ch, rs, re_)
    for i in np.flatnonzero(~ok).tolist():
        tok = ch.token(rs[i], re_[i])
        try:
            v = trec_int(tok)
        except ValueError:
            raise InputError(path, _at(first, i), "rank", f"not an integer: {tok!r}"[:200],
                             rule="TREC") from None
        if not -2**31 <= v < 2**31:
            raise InputError(path, _at(first, i), "rank", "out of the 32-bit range", rule="TREC")
        rank[i] = v
    if n and (rank.min() < -2**31 or rank.max() >= 2**31):
        i = int(np.flatnonzero((rank < -2**31) | (rank >= 2**31))[0])
        raise InputError(path, _at(first, i), "rank", "out of the 32-bit range", rule="TREC")
    ss, se = np.ascontiguousarray(S[:, 4]), np.ascontiguousarray(E[:, 4])
    score, ok = _parse_floats(ch, ss, se)
    for i in np.flatnonzero(~ok).tolist():
        tok = ch.token(ss[i], se[i])
        try:
            score[i] = trec_float(tok)
        except ValueError:
            raise InputError(path, _at(first, i), "score", f"not a number: {tok!r}"[:200],
                             rule="TREC") from None
    if n and not np.all(np.isfinite(score)):
        i = int(np.flatnonzero(~np.isfinite(score))[0])
        raise InputError(path, _at(first, i), "score", "must be finite", rule="TREC")
    return (_Tokens(ch, np.ascontiguousarray(S[:, 0]), np.ascontiguousarray(E[:, 0])),
            _Tokens(ch, np.ascontiguousarray(S[:, 2]), np.ascontiguousarray(E[:, 2])),
            rank.astype(np.int32), score, None)


class _QueryIndex:
    """qid -> query index (qrels queries first, then run queries in order of appearance)."""

    def __init__(self, qindex: dict[str, int]):
        self.index = qindex
        self._known = None           # the qids as an arrow array, in index order
        self._known_n = -1

    def lookup(self, tok: _Tokens, changes: np.ndarray | None = None,
               column=None) -> np.ndarray:
        """Query index of every token. Runs of equal consecutive qids are looked up once; when
        there are many runs (interleaved queries), the chunk's arrow ``column`` is dictionary
        encoded and its distinct qids matched against the known ones in bulk; without it,
        equal qids are grouped by a hash whose every match is confirmed on the bytes."""
        n = len(tok.s)
        if n == 0:
            return np.zeros(0, dtype=np.int32)
        seg = np.flatnonzero(_changes(tok.ch, tok.s, tok.e) if changes is None else changes)
        if 8 * len(seg) <= n or n < 64:
            rep = seg
            inv = None
        elif column is not None:
            return self._lookup_arrow(column)
        else:
            h = _hash(tok.ch, tok.s, tok.e)
            uniq, first, inv = np.unique(h, return_index=True, return_inverse=True)
            rep = first
            L = tok.e - tok.s
            same = _same_bytes(tok.ch, tok.s, L, tok.ch, tok.s[rep][inv], L[rep][inv])
            if not bool(same.all()):                 # a hash collision: one lookup per line
                rep, inv = np.arange(n), None
                seg = rep
        idx = self.index
        vals = np.empty(len(rep), dtype=np.int32)
        for j, i in enumerate(rep.tolist()):
            qid = tok.token(i).decode("utf-8")       # (valid UTF-8: checked)
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


@dataclass
class _Lines:
    """Per-line columns of some lines of the run (in file order)."""

    line: np.ndarray     # int64: 0-based line number in the file
    q: np.ndarray        # int32: query index
    rank: np.ndarray     # int32: the rank column
    score: np.ndarray    # float64
    key: np.ndarray      # uint64: (query, docid) hash
    jpos: np.ndarray     # int64: positions (in these lines) of judged lines
    jrel: np.ndarray     # int64: their relevance

    def __len__(self) -> int:
        return len(self.q)

    @staticmethod
    def concat(parts: list[_Lines]) -> _Lines:
        if len(parts) == 1:
            return parts[0]
        sizes = np.cumsum([0] + [len(p) for p in parts])
        return _Lines(*(np.concatenate([getattr(p, f) for p in parts])
                        for f in ("line", "q", "rank", "score", "key")),
                      np.concatenate([p.jpos + s for p, s in zip(parts, sizes[:-1])]),
                      np.concatenate([p.jrel for p in parts]))

    def take(self, sl: slice) -> _Lines:
        a, b = sl.start, sl.stop
        keep = (self.jpos >= a) & (self.jpos < b)
        return _Lines(self.line[sl], self.q[sl], self.rank[sl], self.score[sl], self.key[sl],
                      self.jpos[keep] - a, self.jrel[keep])


_REC = np.dtype([("line", "<i8"), ("key", "<u8"), ("score", "<f8"), ("q", "<i4"),
                 ("rank", "<i4")])
_LINE_BYTES = _REC.itemsize          # what one held line costs (its five columns)
_PART_LINES = 1 << 21                # lines per part when grouping (arrays under 32 MiB)


class _Interleaved(Exception):
    """A query's lines are not contiguous: read again, grouping lines by query on disk."""


@dataclass
class _Ranked:
    """What the evaluator needs: per judged line its query, membench rank (0 = dropped
    duplicate) and relevance; per query the number of ranked (distinct) documents."""

    jq: list[np.ndarray]
    jrank: list[np.ndarray]
    jrel: list[np.ndarray]
    ret_q: list[np.ndarray]
    ret_n: list[np.ndarray]


class _Scan:
    """One reading of a run file: chunks parsed (arrow, else strict), query indices, docid
    hashes, judged lines; lines handed on in groups that hold whole queries."""

    def __init__(self, path: Path, qrels: _Qrels, qindex: dict[str, int], chunk_bytes: int,
                 ties: str, keep_lines: bool, compat: bool = False,
                 duplicates: str = "first", max_docs: int | None = None):
        self.path, self.qr, self.chunk_bytes = path, qrels, chunk_bytes
        self.duplicates, self.max_docs = duplicates, max_docs
        self.qindex = _QueryIndex(qindex)
        self.ties, self.keep_lines, self.compat = ties, keep_lines, compat
        self.chunk_info: list[tuple[int, int, int]] = []
        self.n_lines = 0        # records (= lines unless compat skipped some)
        self.file_lines = 0     # lines (compat only)
        self.out = _Ranked([], [], [], [], [])
        self.line_q: list[np.ndarray] = []         # keep_lines: query index per line
        self.line_rank: dict[int, np.ndarray] = {}  # keep_lines: chunk-free (line, rank) parts
        self.rank_parts: list[tuple[np.ndarray, np.ndarray]] = []

    def chunks(self) -> Iterator[_Lines]:
        """The run's lines, chunk by chunk. While one chunk is looked up here, a second thread
        parses the next one with pyarrow (which, like numpy, runs without the GIL)."""
        opts = _arrow_options(max(self.chunk_bytes, 1 << 16) + 64) if _have_arrow() else None

        def prepare(item):
            offset, raw, size = item
            parsed = None
            if opts is not None:
                try:
                    if size and int(np.frombuffer(raw, np.uint8, count=size).max()) > 127:
                        codecs.utf_8_decode(memoryview(raw)[:size], "strict", True)
                    parsed = _parse_arrow(_Chunk(raw, size, 0), opts)
                except UnicodeDecodeError:
                    parsed = None
            if parsed is not None and self.compat and len(parsed[2]) and \
                    bool((parsed[0].ch.buf[parsed[0].s] == 35).any()):
                parsed = None                      # a "#" comment line: the strict reader
            if parsed is None:
                return offset, raw, size, None, None, None
            qtok, dtok = parsed[0], parsed[1]
            return offset, raw, size, parsed, _hash(dtok.ch, dtok.s, dtok.e), \
                _changes(qtok.ch, qtok.s, qtok.e)

        pieces = _read_chunks(self.path, self.chunk_bytes)
        pool = ThreadPoolExecutor(1) if opts is not None else None
        try:
            first = next(pieces, None)
            fut = None if first is None else (pool.submit(prepare, first) if pool else first)
            while fut is not None:
                offset, raw, size, parsed, dh, qchange = fut.result() if pool else prepare(fut)
                nxt = next(pieces, None)
                fut = None if nxt is None else (pool.submit(prepare, nxt) if pool else nxt)
                first_line = self.file_lines if self.compat else self.n_lines
                if self.compat:
                    self.file_lines += raw.count(b"\n", 0, size)
                if parsed is None:
                    parsed = _parse_strict(self.path, _Chunk(raw, size, first_line),
                                           self.compat)
                qtok, dtok, rank, score, qcol = parsed
                if dh is None:
                    dh = _hash(dtok.ch, dtok.s, dtok.e)
                n = len(rank)
                q = self.qindex.lookup(qtok, qchange, qcol)
                key = _mix(dh, q)
                jl, jr = self.qr.lookup(dtok.ch, dh, key, q, dtok.s, dtok.e)
                self.chunk_info.append((offset, size, self.n_lines))
                lines = np.arange(self.n_lines, self.n_lines + n, dtype=np.int64)
                self.n_lines += n
                if self.keep_lines:
                    self.line_q.append(q)
                yield _Lines(lines, q, rank, score, key, jl, jr)
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            pieces.close()

    # ------------------------------------------------------------------ two ways of grouping

    def stream(self, tmpdir: Path) -> bool:
        """Queries contiguous in the file: rank each group of whole queries as soon as the
        next query starts (memory: a chunk and one open query). The lines read are also held
        (up to :data:`MAX_HELD_BYTES`; a contiguous run pays their page faults, about 0.2 s
        per 10 million lines), so that when a query comes back after another one started
        they go on to :meth:`group` without a second read; past that they are let go, and a
        query that comes back raises :class:`_Interleaved` (the caller reads the file again
        into :meth:`group`, as far as it was read twice). Returns whether the lines were
        grouped."""
        seen = np.zeros(1024, dtype=bool)
        pending: list[_Lines] = []
        held: collections.deque[_Lines] | None = collections.deque()
        held_bytes = 0
        open_q = -1
        it = self.chunks()
        for lines in it:
            n = len(lines)
            if held is not None:
                held.append(lines)
                held_bytes += _LINE_BYTES * n
                if held_bytes > MAX_HELD_BYTES:
                    held = None
            if n == 0:
                continue
            q = lines.q
            starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
            seg_q = q[starts]
            if int(seg_q.max()) >= len(seen):
                seen = np.concatenate([seen, np.zeros(max(len(seen), int(seg_q.max()) + 1),
                                                      dtype=bool)])
            new = seg_q if seg_q[0] != open_q else seg_q[1:]
            if len(np.unique(new)) != len(new) or bool(seen[new].any()):
                if held is None:
                    raise _Interleaved
                # what was ranked so far is ranked again with the rest, grouped
                self.out = _Ranked([], [], [], [], [])
                self.rank_parts = []
                seen_bytes = sum(c[1] for c in self.chunk_info) or 1
                est = int(self.path.stat().st_size * max(self.n_lines, 1) / seen_bytes) + 1

                def drain():
                    while held:
                        yield held.popleft()
                    yield from it

                self.group(drain(), tmpdir, est)
                return True
            seen[new] = True
            last = int(starts[-1])
            body = 0
            if seg_q[0] == open_q:                    # the open query goes on
                body = int(starts[1]) if len(starts) > 1 else n
                pending.append(lines.take(slice(0, body)))
                if len(starts) == 1:
                    continue
            if pending:                               # the open query is complete
                self.rank(_Lines.concat(pending), True)
            if last > body:                           # whole queries of this chunk: a view
                self.rank(lines.take(slice(body, last)), True)
            pending = [lines.take(slice(last, n))]
            open_q = int(seg_q[-1])
        if pending:
            self.rank(_Lines.concat(pending), True)
        return False

    def group(self, chunks: Iterator[_Lines], tmpdir: Path, est_lines: int) -> None:
        """Any order: lines are split into ``P`` parts by query index (ranges of it, modulo
        ``P``: about 2 million lines a part). The chunks are held as they are (with, per
        chunk, its lines' order by part) up to :data:`MAX_HELD_BYTES`, and each part is then
        gathered from
        them once and ranked; past the bound, every line goes to one file per part (32 bytes
        a line, in ``tmpdir``), read back one part at a time (memory: a chunk and one
        part)."""
        parts = min(4096, max(1, -(-est_lines // _PART_LINES)))
        held: list[tuple[_Lines, np.ndarray | None, np.ndarray, np.ndarray]] = []
        held_bytes = 0
        files: list | None = None
        judged: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

        # part of query q: (q // width) mod parts, width = the queries known now / parts, so
        # that a run of consecutive queries (a shard in query order) falls in one part and
        # goes there as a slice; queries met later wrap around
        width = np.int32(max(1, -(-len(self.qindex.index) // parts)))

        def split(lines: _Lines):
            """(order, bounds, part of each judged line): the chunk's positions by part
            (``order`` None: the chunk's lines are in part order already)."""
            if parts == 1:
                return None, np.array([0, len(lines)]), np.zeros(len(lines.jpos), np.int64)
            b = (lines.q // width % parts).astype(np.uint16)
            order = np.argsort(b, kind="stable") if bool((b[1:] < b[:-1]).any()) else None
            bounds = np.zeros(parts + 1, dtype=np.int64)
            np.cumsum(np.bincount(b, minlength=parts), out=bounds[1:])
            return order, bounds, b[lines.jpos].astype(np.int64)

        def write(lines: _Lines, order, bounds, jpart) -> None:
            rec = np.empty(len(lines), dtype=_REC)
            for f in ("line", "key", "score", "q", "rank"):
                col = getattr(lines, f)
                rec[f] = col if order is None else col[order]
            for i in np.flatnonzero(np.diff(bounds)).tolist():
                rec[bounds[i]:bounds[i + 1]].tofile(files[i])
            judged.append((lines.line[lines.jpos], jpart, lines.jrel))

        try:
            for lines in chunks:
                n = len(lines)
                if n == 0:
                    continue
                order, bounds, jpart = split(lines)
                if files is None and held_bytes + _LINE_BYTES * n > MAX_HELD_BYTES:
                    files = [open(tmpdir / f"part{i}.bin", "wb") for i in range(parts)]
                    for item in held:
                        write(*item)
                    held.clear()
                if files is None:
                    held.append((lines, order, bounds, jpart))
                    held_bytes += _LINE_BYTES * n
                else:
                    write(lines, order, bounds, jpart)
        finally:
            if files is not None:
                for f in files:
                    f.close()
        if files is None:
            for i in range(parts):
                g = self._gather(held, i)
                if g is not None:
                    self.rank(g, grouped=True)
            return
        jl = np.concatenate([j[0] for j in judged]) if judged else np.zeros(0, np.int64)
        jb = np.concatenate([j[1] for j in judged]) if judged else np.zeros(0, np.int64)
        jr = np.concatenate([j[2] for j in judged]) if judged else np.zeros(0, np.int64)
        for i in range(parts):
            p = tmpdir / f"part{i}.bin"
            rec = np.fromfile(p, dtype=_REC)
            p.unlink()
            if len(rec) == 0:
                continue
            mine = jb == i
            pos = np.searchsorted(rec["line"], jl[mine])
            self.rank(_Lines(rec["line"].copy(), rec["q"].copy(), rec["rank"].copy(),
                             rec["score"].copy(), rec["key"].copy(), pos, jr[mine]),
                      grouped=True)
            del rec

    @staticmethod
    def _gather(held, i: int) -> _Lines | None:
        """Part ``i``'s lines from the held chunks, in file order: one copy per column."""
        m = [int(b[i + 1] - b[i]) for _, _, b, _ in held]
        total = sum(m)
        if total == 0:
            return None
        line = np.empty(total, np.int64)
        q = np.empty(total, np.int32)
        rank = np.empty(total, np.int32)
        score = np.empty(total, np.float64)
        key = np.empty(total, np.uint64)
        jpos, jrel = [], []
        at = 0
        for (lines, order, b, jpart), k in zip(held, m):
            if k == 0:
                continue
            a, z = int(b[i]), int(b[i + 1])
            span = slice(at, at + k)
            if order is None:
                idx = np.arange(a, z)
                line[span] = lines.line[a:z]
                q[span] = lines.q[a:z]
                rank[span] = lines.rank[a:z]
                score[span] = lines.score[a:z]
                key[span] = lines.key[a:z]
            else:
                idx = order[a:z]
                np.add(idx, lines.line[0], out=line[span])    # a chunk's lines are consecutive
                np.take(lines.q, idx, out=q[span])
                np.take(lines.rank, idx, out=rank[span])
                np.take(lines.score, idx, out=score[span])
                np.take(lines.key, idx, out=key[span])
            mine = jpart == i
            if mine.any():
                jpos.append(np.searchsorted(idx, lines.jpos[mine]) + at)
                jrel.append(lines.jrel[mine])
            at += k
        return _Lines(line, q, rank, score, key,
                      np.concatenate(jpos) if jpos else np.zeros(0, np.int64),
                      np.concatenate(jrel) if jrel else np.zeros(0, np.int64))

    # ------------------------------------------------------------------ ranking a group

    def rank(self, g: _Lines, contiguous: bool = False, grouped: bool = False,
             qstep: int = 1) -> None:
        """membench ranks for a group of lines holding whole queries (lines in file order)."""
        n = len(g)
        if n == 0:
            return
        q = g.q
        if self.ties in ("trec_eval", "trec_eval9"):
            # 10.0 compares the scores as doubles (form_res_rels.c); 9.x, and pytrec_eval,
            # which bundles 9.0.8, as 32-bit floats
            score = g.score if self.ties == "trec_eval" else \
                g.score.astype(np.float32).astype(np.float64)
            order = self._order_trec_eval(g, score)
        else:
            order = None if not grouped and _in_order(q, g.score, g.rank, contiguous) else \
                _sort(q, g.score, g.rank, qstep)
        dup = _duplicates(self.path, g, order, self.chunk_info, self.compat)
        sq = q if order is None else q[order]
        start = np.flatnonzero(np.r_[True, sq[1:] != sq[:-1]])
        lens = np.diff(np.append(start, n))
        if dup is not None and self.duplicates == "refuse":
            self._refuse(g, dup, order, start, lens)
        if dup is None:
            r = np.arange(1, n + 1, dtype=np.int32) - np.repeat(start.astype(np.int32), lens)
            ret = lens
        else:
            keep = ~(dup if order is None else dup[order])
            c = np.cumsum(keep, dtype=np.int32)
            before = (c - keep)[start]
            r = c - np.repeat(before, lens)
            r[~keep] = 0
            ret = np.add.reduceat(keep.astype(np.int64), start)
        if order is not None:
            rr = np.empty(n, dtype=np.int32)
            rr[order] = r
            r = rr
        out = self.out
        out.ret_q.append(sq[start].astype(np.int64))
        out.ret_n.append(ret.astype(np.int64))
        out.jq.append(q[g.jpos].astype(np.int64))
        out.jrank.append(r[g.jpos].astype(np.int64))
        out.jrel.append(g.jrel)
        if self.keep_lines:
            self.rank_parts.append((g.line, r))

    def _refuse(self, g: _Lines, dup: np.ndarray, order: np.ndarray | None,
                start: np.ndarray, lens: np.ndarray) -> None:
        """trec_eval's refusal of a docid listed twice for a query (``form_res_rels.c``:
        "duplicate docs"), as a located error at the later copy (in ranking order). With
        ``max_docs`` (``-M``) only copies both inside a query's first ``max_docs`` are
        refused, as trec_eval checks after cutting the ranking."""
        n = len(g)
        d = dup if order is None else dup[order]
        if self.max_docs is not None:
            pos = np.arange(n) - np.repeat(start, lens)
            d = d & (pos < self.max_docs)
        if not d.any():
            return
        at = np.flatnonzero(d) if order is None else order[np.flatnonzero(d)]
        i = int(at[np.argmin(g.line[at])])
        rec = int(g.line[i])
        doc = _reread_docids(self.path, g.line[[i]], self.chunk_info, self.compat)[0]
        same = np.flatnonzero((g.key == g.key[i]) & (g.q == g.q[i]))
        same = same[same != i]
        docs = _reread_docids(self.path, g.line[same], self.chunk_info, self.compat)
        others = sorted(_record_line(self.path, self.chunk_info, int(g.line[k]), self.compat)
                        for k, dk in zip(same.tolist(), docs) if dk == doc)
        qid = self.qindex.qid(int(g.q[i]))
        also = f" (also line {others[0]})" if others else ""
        raise InputError(self.path, _record_line(self.path, self.chunk_info, rec, self.compat),
                         "docid", f"{doc.decode('utf-8', 'replace')[:200]!r} listed twice for "
                         f"query {qid!r}{also}: trec_eval refuses a run that repeats a docid "
                         "within a query (its 'duplicate docs'); --lenient counts the first "
                         "copy only", rule="DUPLICATE_DOC")

    def _order_trec_eval(self, g: _Lines, score: np.ndarray) -> np.ndarray:
        """trec_eval's order: ``score`` descending (doubles for 10.0; the caller rounds them
        to 32-bit floats for 9.x), then docid descending (bytes)."""
        n = len(g)
        o = np.argsort(-score, kind="stable")
        ss = score[o]
        eq = ss[1:] == ss[:-1]
        if eq.any():
            tied = np.zeros(n, dtype=bool)
            tied[1:] |= eq
            tied[:-1] |= eq
            pos = np.flatnonzero(tied)
            grp = np.cumsum(np.r_[True, ~eq])[pos]
            sub = o[pos]
            docs = _reread_docids(self.path, g.line[sub], self.chunk_info, self.compat)
            # a stable sort by (group, docid descending): negate bytes order via sort on
            # (group, docid) then reverse within each group
            idx = sorted(range(len(sub)), key=lambda k: (int(grp[k]), docs[k]))
            new = np.asarray(idx, dtype=np.int64)
            gs = grp[new]
            # reverse each group's run of positions
            bounds = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1], True])
            rev = np.concatenate([new[a:b][::-1] for a, b in zip(bounds[:-1], bounds[1:])])
            o[pos] = sub[rev]
        qq = g.q[o]
        return o[_stable_by_query(qq)]


def _stable_by_query(qq: np.ndarray) -> np.ndarray:
    """A stable argsort of query indices (radix sort when they span < 65,536)."""
    lo, hi = int(qq.min()), int(qq.max())
    if hi - lo < 1 << 16:
        return np.argsort((qq - lo).astype(np.uint16), kind="stable")
    return np.argsort(qq, kind="stable")


def _in_order(q: np.ndarray, score: np.ndarray, rank: np.ndarray, contiguous: bool) -> bool:
    """Each query one block of lines (known when ``contiguous``), already in ranking order
    (score desc, rank asc)?"""
    n = len(q)
    if n < 2:
        return True
    qchange = q[1:] != q[:-1]
    s0, s1 = score[:-1], score[1:]
    ok = qchange | (s1 < s0) | ((s1 == s0) & (rank[1:] >= rank[:-1]))
    if not bool(ok.all()):
        return False
    if contiguous:
        return True
    blocks = int(np.count_nonzero(qchange)) + 1
    return blocks == 1 or blocks == len(np.unique(q))


_SIGN = np.uint64(1 << 63)


def _desc_key(score: np.ndarray) -> np.ndarray:
    """uint64 keys whose ascending order is ``score``'s descending order (finite doubles;
    -0.0 is 0.0, as it compares). In place after one copy: fresh large arrays cost page
    faults."""
    u = np.add(score, 0.0).view(np.uint64)     # + 0.0 turns -0.0 into 0.0
    m = u >> np.uint64(63)                     # 1 for a negative score
    m *= np.uint64(0x7FFFFFFFFFFFFFFF)
    m |= _SIGN                                 # negative: all ones; else the sign bit
    m ^= u                                     # ascending doubles -> ascending keys
    np.invert(m, out=m)                        # descending
    return m


def _sort(q: np.ndarray, score: np.ndarray, rank: np.ndarray, qstep: int = 1) -> np.ndarray:
    """Positions in ranking order: query, score descending, rank column, then line order.

    One sort of packed 64-bit keys (numpy's vectorised sort of plain integers is several
    times faster than ``argsort``): (query, the high bits of an order-preserving key of the
    score, position). The runs whose query and kept score bits agree (equal or nearly equal
    scores: rare unless the run has ties) are then put exactly in (score, rank column,
    position) order. ``qstep``: the queries of ``q`` are equal modulo it (a part of
    :meth:`_Scan.group`), so ``(q - min) // qstep`` numbers them densely."""
    n = len(q)
    if n < 2:
        return np.arange(n)
    bits = max(1, (n - 1).bit_length())
    low = np.uint64((1 << bits) - 1)
    lo = int(q.min())
    qbits = ((int(q.max()) - lo) // qstep).bit_length()
    sbits = 64 - bits - qbits
    if sbits < 24:                             # (a group of > 2**20 queries: two sorts)
        o = _sort(np.zeros(n, np.int32), score, rank)
        return o[np.argsort(q[o], kind="stable")]
    k = _desc_key(np.ascontiguousarray(score, dtype=np.float64))
    k >>= np.uint64(64 - sbits)
    k <<= np.uint64(bits)
    k |= np.arange(n, dtype=np.uint64)
    if qbits:
        ql = (q - lo).astype(np.uint64)
        if qstep > 1:
            ql //= np.uint64(qstep)
        ql <<= np.uint64(bits + sbits)
        k |= ql
        del ql
    k.sort()
    o = (k & low).astype(np.int64)
    k >>= np.uint64(bits)
    eq = k[1:] == k[:-1]
    del k
    if eq.any():                               # equal in the kept bits: exactly, by the rule
        tied = np.zeros(n, dtype=bool)
        tied[1:] |= eq
        tied[:-1] |= eq
        at = np.flatnonzero(tied)
        grp = np.cumsum(np.r_[True, ~eq])[at]
        sub = o[at]
        o[at] = sub[np.lexsort((sub, rank[sub], -score[sub], grp))]
    return o


def _duplicates(path: Path, g: _Lines, order: np.ndarray | None,
                chunk_info: list[tuple[int, int, int]], compat: bool = False
                ) -> np.ndarray | None:
    """Per line: a later copy (in ranking order) of an earlier (qid, docid). ``None`` when no
    two lines share a key (then there are no duplicates, exactly); equal keys are confirmed on
    the docid bytes, re-read from the file."""
    key = g.key
    sk = np.sort(key)
    rep = sk[1:][sk[1:] == sk[:-1]]
    del sk
    if rep.size == 0:
        return None
    cand = np.flatnonzero(np.isin(key, np.unique(rep)))
    docs = _reread_docids(path, g.line[cand], chunk_info, compat)
    n = len(key)
    if order is None:
        pos = cand
    else:
        inv = np.empty(n, dtype=np.int64)
        inv[order] = np.arange(n)
        pos = inv[cand]
    q = g.q
    first: dict[tuple[int, bytes], int] = {}
    dup = np.zeros(n, dtype=bool)
    for k in np.argsort(pos, kind="stable").tolist():
        line = int(cand[k])
        ident = (int(q[line]), docs[k])
        if ident in first:
            dup[line] = True
        else:
            first[ident] = line
    return dup if dup.any() else None


def _record_line(path: Path, chunk_info: list[tuple[int, int, int]], record: int,
                 compat: bool = False) -> int:
    """The file line (1-based) of run record ``record`` (0-based): the same unless lines
    were skipped (``compat``: comments, blank lines)."""
    if not compat:
        return record + 1
    firsts = np.asarray([c[2] for c in chunk_info], dtype=np.int64)
    ci = int(np.searchsorted(firsts, record, side="right") - 1)
    with open(path, "rb") as f:
        ch, _, _, rec_line = _reread_chunk(path, f, chunk_info[ci], compat)
    i = record - ch.first_line
    return _lines_before(path, chunk_info[ci][0]) + \
        (int(rec_line[i]) if rec_line is not None else i) + 1


def _reread_chunk(path: Path, f, info: tuple[int, int, int], compat: bool = False):
    """``(chunk, field starts, field ends, per-record line offsets or None)`` of the piece
    ``info`` (offset, size, first record) of ``chunk_info``, read again from the open file
    ``f``."""
    offset, size, first = info
    f.seek(offset)
    raw = bytearray(f.read(size))
    if len(raw) < size:           # the last piece had its newline supplied
        raw += b"\n"
    raw += bytes(16)
    ch = _Chunk(raw, size, first)
    S, E, rec_line = _fields(path, ch, compat)
    return ch, S, E, rec_line


def _reread_docids(path: Path, lines: np.ndarray, chunk_info: list[tuple[int, int, int]],
                   compat: bool = False) -> list[bytes]:
    """Exact docid bytes of the given (0-based) lines, re-read piece by piece."""
    firsts = np.asarray([c[2] for c in chunk_info], dtype=np.int64)
    which = np.searchsorted(firsts, lines, side="right") - 1
    out: list[bytes] = [b""] * len(lines)
    with open(path, "rb") as f:
        for ci in np.unique(which).tolist():
            ch, S, E, _ = _reread_chunk(path, f, chunk_info[ci], compat)
            for k in np.flatnonzero(which == ci).tolist():
                i = int(lines[k]) - ch.first_line
                out[k] = ch.token(S[i, 2], E[i, 2])
    return out




# --------------------------------------------------------------------------- the run as read


@dataclass
class TrecRun:
    """A run as the evaluator needs it: per judged line (its (qid, docid) is in the qrels)
    the query index, membench rank (1-based; 0 for a dropped duplicate) and relevance; per
    query the number of ranked documents. :func:`read_trec_run` also keeps, per line, the
    query index (``q``) and rank (``rank``).

    ``qids[i]`` is query index i; the qrels' queries come first, in qrels order, so index <
    ``n_qrels_queries`` means "judged query".
    """

    path: str
    qids: list[str]
    n_lines: int
    judged_q: np.ndarray     # int64 per judged line
    judged_rank: np.ndarray  # int64: 0 = a dropped duplicate
    judged_rel: np.ndarray   # int64
    ret_q: np.ndarray        # int64: queries of the run
    ret_n: np.ndarray        # int64: their ranked (distinct) documents
    n_qrels_queries: int
    n_relevant: np.ndarray   # int64 per qrels query: judged docs with rel >= 1
    q: np.ndarray | None = None      # int32 per line (read_trec_run only)
    rank: np.ndarray | None = None   # int32 per line (read_trec_run only)
    interleaved: bool = False        # queries were not contiguous (grouped on disk)
    qrels_q: np.ndarray | None = None    # int64 per judgment: its query index
    qrels_rel: np.ndarray | None = None  # int64 per judgment: its relevance

    def first_hits(self) -> FirstHits:
        """One gold region per relevant qrels document (rel >= 1)."""
        keep = (self.judged_rel >= 1) & (self.judged_rank > 0) & \
            (self.judged_q < self.n_qrels_queries)
        return FirstHits(self.n_relevant.copy(), self.judged_q[keep], self.judged_rank[keep])


TIES = ("membench", "trec_eval", "trec_eval9")


def _scan_run(path: str | os.PathLike,
              qrels: Mapping[str, Mapping[str, int]] | str | os.PathLike | None,
              chunk_bytes: int, ties: str, keep_lines: bool, compat: bool = False,
              duplicates: str = "first", max_docs: int | None = None) -> TrecRun:
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    path = Path(path)
    with tempfile.TemporaryDirectory(prefix="membench-trec-") as tmp:
        tmpdir = Path(tmp)
        qrels_path = None if qrels is None or isinstance(qrels, Mapping) else Path(qrels)
        read_path = _regular(path, tmpdir / "run", chunk_bytes)
        try:
            return _scan(read_path, path, qrels, qrels_path, tmpdir, chunk_bytes, ties,
                         keep_lines, compat, duplicates, max_docs)
        except InputError as e:
            if read_path != path and Path(e.file) == read_path:
                e.file = str(path)         # name the file the user gave, not its copy
            raise


def _regular(path: Path, tmpdir: Path, chunk_bytes: int, limit: int | None = None) -> Path:
    """``path`` if it is a regular file, else a copy of the stream (:func:`_spool`)."""
    if not path.exists():
        raise InputError(path, None, None, "file not found", rule="MISSING_FILE")
    if path.is_dir():
        raise InputError(path, None, None, "is a folder; expected a file", rule="NOT_A_FILE")
    if path.is_file():
        return path
    tmpdir.mkdir(parents=True, exist_ok=True)
    return _spool(path, tmpdir, chunk_bytes, limit)


def _scan(path: Path, shown: Path, qrels, qrels_path: Path | None, tmpdir: Path,
          chunk_bytes: int, ties: str, keep_lines: bool, compat: bool,
          duplicates: str = "first", max_docs: int | None = None) -> TrecRun:
    base: dict[str, int] = {}
    if qrels_path is not None:
        qr = _Qrels.from_file(qrels_path, base, tmpdir / "qrels", compat)
    else:
        qr = _Qrels(qrels or {}, base)
    scan = _Scan(path, qr, dict(base), chunk_bytes, ties, keep_lines, compat, duplicates,
                 max_docs)
    spill = tmpdir / "spill"
    spill.mkdir()
    try:
        interleaved = scan.stream(spill)
    except _Interleaved:                 # past MAX_HELD_BYTES: read again, grouping
        interleaved = True
        seen_bytes = sum(c[1] for c in scan.chunk_info) or 1
        est = int(path.stat().st_size * max(scan.n_lines, 1) / seen_bytes) + 1
        scan = _Scan(path, qr, dict(base), chunk_bytes, ties, keep_lines, compat,
                     duplicates, max_docs)
        scan.group(scan.chunks(), spill, est)
    out = scan.out

    def cat(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    run = TrecRun(str(shown), list(scan.qindex.index), scan.n_lines, cat(out.jq),
                  cat(out.jrank), cat(out.jrel), cat(out.ret_q), cat(out.ret_n), qr.n_queries,
                  qr.n_relevant, interleaved=interleaved, qrels_q=qr.q, qrels_rel=qr.rel)
    if keep_lines:
        run.q = (np.concatenate(scan.line_q) if scan.line_q
                 else np.zeros(0, dtype=np.int32)).astype(np.int32)
        run.rank = np.zeros(scan.n_lines, dtype=np.int32)
        for lines, r in scan.rank_parts:
            run.rank[lines] = r
    return run


def read_trec_run(path: str | os.PathLike, qrels: Mapping[str, Mapping[str, int]] | None = None,
                  *, chunk_bytes: int = CHUNK_BYTES, ties: str = "membench") -> TrecRun:
    """Parse a TREC run file (see the module docstring), keeping per line its query index and
    rank; with ``qrels``, also the judged lines. Errors (wrong field count, unparseable rank
    or score, non-finite score) name the file and line."""
    return _scan_run(path, qrels, chunk_bytes, ties, keep_lines=True)


# --------------------------------------------------------------------------- evaluation


def evaluate_trec(run: TrecRun | str | os.PathLike,
                  qrels: Mapping[str, Mapping[str, int]] | str | os.PathLike, *,
                  chunk_bytes: int = CHUNK_BYTES) -> dict:
    """recall@10/100/1000, mrr and ndcg@10 of a TREC run against qrels.

    Returns ``{"queries": [qid, ...], "per_query": {measure: array}, "mean": {measure: float
    | None}, "n": int}`` over the qrels queries with at least one relevant document (see the
    module docstring). ``run`` may be a path (read without keeping per-line columns) or a
    :class:`TrecRun` read with the same qrels.
    """
    if not isinstance(run, TrecRun):
        run = _scan_run(run, qrels, chunk_bytes, "membench", keep_lines=False)
    fh = run.first_hits()
    per = rank_measures(fh)
    keep = fh.n_gold > 0
    idx = np.flatnonzero(keep)
    queries = [run.qids[i] for i in idx.tolist()]
    per_query = {m: v[idx] for m, v in per.items()}
    mean = {m: (float(v.mean()) if v.size else None) for m, v in per_query.items()}
    return {"queries": queries, "per_query": per_query, "mean": mean, "n": len(queries)}
