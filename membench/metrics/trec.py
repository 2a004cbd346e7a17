"""TREC runs and qrels: a fast, exact reader and an evaluator sharing membench's formulas.

Run files have one line per retrieved document, ``qid Q0 docid rank score tag`` (whitespace
separated); qrels have ``qid iter docid rel``. :func:`read_trec_run` parses a run with numpy,
chunk by chunk (2 MiB at a time), without one Python object per line. While reading it keeps
per line the query index, rank column, score and a (query, docid) hash key (24 bytes); the
result keeps the query index and the rank membench assigns (8 bytes per line) plus the judged
lines. Peak memory is therefore about 36 bytes per line (with one sort buffer) plus a chunk's
working set; 10 million lines take ~0.3 GB (``bench/bench_metrics.py``).

Exactness: document ids are compared through a 64-bit hash of their bytes, but every hash match
is confirmed on the bytes themselves (judged documents at parse time; duplicate candidates by
re-reading their lines), so a hash collision can cost time, never a wrong value. Scores are
parsed with Clinger's exact fast path (decimal mantissa <= 2**53 and |power of ten| <= 22: one
correctly rounded multiply or divide gives the same double as ``float()``); anything else
(long mantissas, big exponents, inf/nan, odd spellings) goes through ``float()``.

Ranking follows :data:`membench.run.protocol.TIE_BREAKING`: score descending, then the rank
column ascending, then line order; a repeated (qid, docid) counts only at its first position.
Relevant = qrels relevance >= 1 (trec_eval's default). Measures are averaged over the qrels
queries that have at least one relevant document, a query without run lines scoring 0
(trec_eval ``-c``); run queries absent from the qrels are ignored. Unlike the JSONL path, no
depth cap is applied (recall@1000 only looks at the top 1000 anyway; MRR looks at the whole
list, like trec_eval).
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..run.files import TREC_CONTROL, trec_fields, trec_float, trec_int
from .ranking import FirstHits, rank_measures

CHUNK_BYTES = 2 << 20
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


def read_trec_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """``qid iter docid rel`` lines -> ``{qid: {docid: rel}}`` (file order kept). A repeated
    (qid, docid) or a malformed line is an error naming the line."""
    out: dict[str, dict[str, int]] = {}
    path = Path(path)
    for no, (qid, _, doc, rel) in trec_fields(path, "qid iter docid rel"):
        try:
            r = trec_int(rel)
        except ValueError:
            raise InputError(path, no, "rel", f"not an integer: {rel!r}", rule="TREC") from None
        docs = out.setdefault(qid, {})
        if doc in docs:
            raise InputError(path, no, "docid", f"{qid} {doc} judged twice", rule="TREC")
        docs[doc] = r
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


def _read_chunks(path: Path, chunk_bytes: int) -> Iterator[tuple[int, bytearray, int]]:
    """(file offset, buffer, size): pieces of the file that end at a line end (a final
    newline is supplied), each in a buffer with >= 8 bytes of slack after ``size``. The
    buffer is reused: consumers must be done with a piece before asking for the next."""
    raw = bytearray(chunk_bytes + 16)
    have = 0
    offset = 0
    with open(path, "rb") as f:
        while True:
            if have >= len(raw) - 16:             # a line longer than the buffer
                bigger = bytearray(2 * len(raw))
                bigger[:have] = raw[:have]
                raw = bigger
            got = f.readinto(memoryview(raw)[have:len(raw) - 16])
            end = have + got
            if got == 0:
                if have:
                    raw[have] = 10
                    yield offset, raw, have + 1
                return
            cut = raw.rfind(b"\n", 0, end) + 1
            if cut == 0:
                have = end
                continue
            yield offset, raw, cut
            offset += cut
            raw[:end - cut] = raw[cut:end]
            have = end - cut


def _count_lines(path: Path, chunk_bytes: int) -> int:
    n = 0
    last = b"\n"
    with open(path, "rb") as f:
        while block := f.read(chunk_bytes):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def _fields(path: Path, ch: _Chunk) -> tuple[np.ndarray, np.ndarray]:
    """Token start/end offsets, shaped (lines, 6); a line without exactly 6 fields is an
    error naming it."""
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
            bool(np.all(ends[5::6] <= nl_pos)) and bool(np.all(starts[6::6] > nl_pos[:-1])):
        return starts.reshape(-1, 6), ends.reshape(-1, 6)
    line_start = np.concatenate([[0], nl_pos[:-1] + 1])
    first_tok = np.searchsorted(starts, line_start)
    counts = np.diff(np.append(first_tok, len(starts)))
    bad = np.flatnonzero(counts != 6)
    i = int(bad[0]) if bad.size else 0
    raise InputError(path, ch.first_line + i + 1, None, "expected 6 fields (qid Q0 docid "
                     f"rank score tag), got {int(counts[i])}", rule="TREC")


def _check_text(path: Path, ch: _Chunk) -> None:
    """The piece is UTF-8 and holds no control byte but whitespace (as
    :func:`membench.run.files.trec_fields` requires); else an error naming line and column."""
    view = memoryview(ch.raw)[:ch.size]
    bad_at = None
    m = TREC_CONTROL.search(view)
    if m:
        bad_at, what = m.start(), f"control byte 0x{ch.raw[m.start()]:02x}"
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


def _hash(ch: _Chunk, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each token's bytes (8 bytes per step, seeded with the length)."""
    L = e - s
    h = _FNV_OFFSET ^ L.astype(np.uint64)
    for j in range((int(L.max()) + 7) // 8 if len(L) else 0):
        w = ch.masked_word(s, L, j)
        nh = (h ^ w) * _FNV_PRIME
        nh ^= nh >> np.uint64(29)
        np.copyto(h, nh, where=L > 8 * j)
    return h


def _mix(doc_hash: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(query index, docid hash) -> one uint64 key (splitmix64 finaliser)."""
    z = doc_hash ^ (q.astype(np.uint64) * _GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _changes(ch: _Chunk, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Per token: differs from the previous token (the first is always a change)."""
    n = len(s)
    out = np.ones(n, dtype=bool)
    if n > 1:
        L = e - s
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


# --------------------------------------------------------------------------- run reader


@dataclass
class TrecRun:
    """A parsed run: per line its query index and membench rank (1-based; 0 for a dropped
    duplicate), plus the judged lines when read with qrels.

    ``qids[i]`` is query index i; when read with qrels, the qrels' queries come first, in
    qrels order, so index < ``n_qrels_queries`` means "judged query".
    """

    path: str
    qids: list[str]
    q: np.ndarray            # int32 per line
    rank: np.ndarray         # int32 per line
    judged_line: np.ndarray  # int64: lines whose (qid, docid) is in the qrels
    judged_rel: np.ndarray   # int64: their relevance
    n_qrels_queries: int
    n_relevant: np.ndarray   # int64 per qrels query: judged docs with rel >= 1

    @property
    def n_lines(self) -> int:
        return len(self.q)

    def first_hits(self) -> FirstHits:
        """One gold region per relevant qrels document (rel >= 1)."""
        lines = self.judged_line[self.judged_rel >= 1]
        q = self.q[lines].astype(np.int64)
        r = self.rank[lines].astype(np.int64)
        keep = (r > 0) & (q < self.n_qrels_queries)
        return FirstHits(self.n_relevant.copy(), q[keep], r[keep])


class _Qrels:
    """Qrels as sorted uint64 keys with the exact (query index, docid bytes, rel) behind each."""

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], qindex: dict[str, int]):
        qs, docs, rels = [], [], []
        for qid, judged in qrels.items():
            qi = qindex.setdefault(qid, len(qindex))
            for d, r in judged.items():
                qs.append(qi)
                docs.append(d.encode("utf-8"))
                rels.append(int(r))
        self.n_queries = len(qindex)
        self.n_relevant = np.bincount(np.asarray([q for q, r in zip(qs, rels) if r >= 1],
                                                 dtype=np.int64),
                                      minlength=self.n_queries).astype(np.int64)
        self.keys = np.zeros(0, dtype=np.uint64)
        if not docs:
            return
        blob = bytearray(b" ".join(docs) + b"\n" + bytes(16))
        lens = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
        s = np.concatenate([[0], np.cumsum(lens + 1)[:-1]])
        ch = _Chunk(blob, len(blob) - 16, 0)
        keys = _mix(_hash(ch, s, s + lens), np.asarray(qs, dtype=np.int64))
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.q = np.asarray(qs, dtype=np.int64)[order]
        self.docs = [docs[i] for i in order]
        self.rel = np.asarray(rels, dtype=np.int64)[order]
        # bucket index on the top bits (keys are well mixed): sorted keys of one bucket are
        # contiguous, so a lookup is two gathers and a compare per probe, not a binary search.
        # Equal keys (a hash collision) just share a bucket; the byte check decides.
        self.bits = max(1, min(22, int(np.ceil(np.log2(4 * len(self.keys))))))
        edges = np.arange(1 << self.bits, dtype=np.uint64) << np.uint64(64 - self.bits)
        self.bstart = np.append(np.searchsorted(self.keys, edges), len(self.keys)).astype(np.int64)
        self.probes = int(np.diff(self.bstart).max())

    def lookup(self, ch: _Chunk, key: np.ndarray, q: np.ndarray, ds: np.ndarray,
               de: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lines (piece-local) whose (query, docid) is judged, and their relevance; every hash
        match is confirmed on the bytes."""
        if len(self.keys) == 0 or len(key) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        b = (key >> np.uint64(64 - self.bits)).astype(np.int64)
        lo = self.bstart[b]
        cnt = self.bstart[b + 1] - lo
        cand_l, cand_p = [], []
        for t in range(self.probes):
            idx = np.flatnonzero(cnt > t)
            p = lo[idx] + t
            eq = self.keys[p] == key[idx]
            cand_l.append(idx[eq])
            cand_p.append(p[eq])
        lines, rels = [], []
        for i, p in zip(np.concatenate(cand_l).tolist(), np.concatenate(cand_p).tolist()):
            if self.q[p] == q[i] and ch.token(ds[i], de[i]) == self.docs[p]:
                lines.append(i)
                rels.append(self.rel[p])
        return np.asarray(lines, dtype=np.int64), np.asarray(rels, dtype=np.int64)


class _Columns:
    """Per-line columns, preallocated from a line count (no growth copies)."""

    def __init__(self, n: int):
        self.q = np.empty(n, dtype=np.int32)
        self.key = np.empty(n, dtype=np.uint64)
        self.score = np.empty(n, dtype=np.float64)
        self.rank = np.empty(n, dtype=np.int32)


def read_trec_run(path: str | os.PathLike, qrels: Mapping[str, Mapping[str, int]] | None = None,
                  *, chunk_bytes: int = CHUNK_BYTES) -> TrecRun:
    """Parse a TREC run file (see the module docstring); with ``qrels``, also mark judged
    lines. Errors (wrong field count, unparseable rank or score, non-finite score) name the
    file and line."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "file not found", rule="MISSING_FILE")
    qindex: dict[str, int] = {}
    qr = _Qrels(qrels or {}, qindex)
    cols = _Columns(_count_lines(path, chunk_bytes))
    judged_l: list[np.ndarray] = []
    judged_r: list[np.ndarray] = []
    chunk_info: list[tuple[int, int, int]] = []     # (file offset, bytes, first line index)
    n_lines = 0
    last_q = -1
    seen: set[int] = set()
    contiguous = True
    for offset, raw, size in _read_chunks(path, chunk_bytes):
        ch = _Chunk(raw, size, n_lines)
        _check_text(path, ch)
        S, E = _fields(path, ch)
        n = len(S)
        if n_lines + n > len(cols.q):
            raise InputError(path, None, None, "the file changed while it was read", rule="TREC")
        chunk_info.append((offset, size, n_lines))
        # query ids: runs of equal consecutive qids, each looked up once
        qs, qe = np.ascontiguousarray(S[:, 0]), np.ascontiguousarray(E[:, 0])
        seg = np.flatnonzero(_changes(ch, qs, qe))
        seg_q = np.empty(len(seg), dtype=np.int32)
        for j, i in enumerate(seg.tolist()):
            qid = ch.token(qs[i], qe[i]).decode("utf-8")   # (valid: _check_text)
            qi = qindex.setdefault(qid, len(qindex))
            if qi != last_q:
                if qi in seen:
                    contiguous = False
                seen.add(qi)
            last_q = qi
            seg_q[j] = qi
        q = np.repeat(seg_q, np.diff(np.append(seg, n)))
        sl = slice(n_lines, n_lines + n)
        cols.q[sl] = q
        # rank column
        rs, re_ = np.ascontiguousarray(S[:, 3]), np.ascontiguousarray(E[:, 3])
        rank, ok = _parse_ints(ch, rs, re_)
        for i in np.flatnonzero(~ok).tolist():
            tok = ch.token(rs[i], re_[i])
            try:
                v = trec_int(tok)
            except ValueError:
                raise InputError(path, n_lines + i + 1, "rank", f"not an integer: {tok!r}"[:200],
                                 rule="TREC") from None
            if not -2**31 <= v < 2**31:
                raise InputError(path, n_lines + i + 1, "rank", "out of the 32-bit range",
                                 rule="TREC")
            rank[i] = v
        if n and (rank.min() < -2**31 or rank.max() >= 2**31):
            i = int(np.flatnonzero((rank < -2**31) | (rank >= 2**31))[0])
            raise InputError(path, n_lines + i + 1, "rank", "out of the 32-bit range", rule="TREC")
        cols.rank[sl] = rank
        # score column
        ss, se = np.ascontiguousarray(S[:, 4]), np.ascontiguousarray(E[:, 4])
        score, ok = _parse_floats(ch, ss, se)
        for i in np.flatnonzero(~ok).tolist():
            tok = ch.token(ss[i], se[i])
            try:
                score[i] = trec_float(tok)
            except ValueError:
                raise InputError(path, n_lines + i + 1, "score", f"not a number: {tok!r}"[:200],
                                 rule="TREC") from None
        if not np.all(np.isfinite(score)):
            i = int(np.flatnonzero(~np.isfinite(score))[0])
            raise InputError(path, n_lines + i + 1, "score", "must be finite", rule="TREC")
        cols.score[sl] = score
        # document ids: keyed by (query, docid hash); judged ones confirmed on the bytes
        ds, de = np.ascontiguousarray(S[:, 2]), np.ascontiguousarray(E[:, 2])
        key = _mix(_hash(ch, ds, de), q)
        cols.key[sl] = key
        jl, jr = qr.lookup(ch, key, q, ds, de)
        judged_l.append(jl + n_lines)
        judged_r.append(jr)
        n_lines += n
        del ch, S, E
    if n_lines != len(cols.q):
        raise InputError(path, None, None, "the file changed while it was read", rule="TREC")
    q = cols.q
    final = _assign_ranks(path, cols, contiguous, chunk_info)
    return TrecRun(str(path), list(qindex), q, final,
                   np.concatenate(judged_l) if judged_l else np.zeros(0, np.int64),
                   np.concatenate(judged_r) if judged_r else np.zeros(0, np.int64),
                   qr.n_queries, qr.n_relevant)


def _in_order(cols: _Columns) -> bool:
    """Within every query, lines already in ranking order (score desc, rank column asc)?"""
    q, score, rank = cols.q, cols.score, cols.rank
    step = 1 << 22
    for a in range(0, max(len(q) - 1, 0), step):
        b = min(a + step, len(q) - 1)
        s0, s1 = score[a:b], score[a + 1:b + 1]
        later_rank = rank[a + 1:b + 1] >= rank[a:b]
        ok = (q[a + 1:b + 1] != q[a:b]) | (s1 < s0) | ((s1 == s0) & later_rank)
        if not ok.all():
            return False
    return True


def _assign_ranks(path: Path, cols: _Columns, contiguous: bool,
                  chunk_info: list[tuple[int, int, int]]) -> np.ndarray:
    """membench ranks (1-based, 0 = dropped duplicate) per line. Consumes ``cols``' score,
    rank and key columns."""
    q = cols.q
    n = len(q)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    order = None
    if not (contiguous and _in_order(cols)):
        order = np.lexsort((cols.rank, -cols.score, q))    # stable: then line order
    del cols.score, cols.rank
    key = cols.key
    del cols.key
    dup = _duplicates(path, q, key, order, chunk_info)
    del key
    sq = q if order is None else q[order]
    start = np.ones(n, dtype=bool)
    start[1:] = sq[1:] != sq[:-1]
    del sq
    starts = np.flatnonzero(start)
    del start
    lens = np.diff(np.append(starts, n))
    if dup is None:
        r = np.arange(1, n + 1, dtype=np.int32)
        r -= np.repeat(starts.astype(np.int32), lens)
    else:
        keep = ~(dup if order is None else dup[order])
        c = np.cumsum(keep, dtype=np.int32)
        before = (c - keep)[starts]
        r = c - np.repeat(before, lens)
        r[~keep] = 0
    if order is None:
        return r
    out = np.empty(n, dtype=np.int32)
    out[order] = r
    return out


def _duplicates(path: Path, q: np.ndarray, key: np.ndarray, order: np.ndarray | None,
                chunk_info: list[tuple[int, int, int]]) -> np.ndarray | None:
    """Per line: a later copy of an earlier (qid, docid) in ranking order. ``None`` when no
    two lines share a key (then there are no duplicates, exactly)."""
    sk = np.sort(key)
    rep = sk[1:][sk[1:] == sk[:-1]]
    del sk
    if rep.size == 0:
        return None
    cand = np.flatnonzero(np.isin(key, np.unique(rep)))
    docs = _reread_docids(path, cand, chunk_info)
    pos = None
    if order is not None:
        pos = np.empty(len(q), dtype=np.int64)
        pos[order] = np.arange(len(q))
    first: dict[tuple[int, bytes], int] = {}
    for line, d in sorted(zip(cand.tolist(), docs),
                          key=lambda x: x[0] if pos is None else int(pos[x[0]])):
        first.setdefault((int(q[line]), d), line)
    dup = np.zeros(len(q), dtype=bool)
    for line, d in zip(cand.tolist(), docs):
        if first[(int(q[line]), d)] != line:
            dup[line] = True
    return dup


def _reread_docids(path: Path, lines: np.ndarray,
                   chunk_info: list[tuple[int, int, int]]) -> list[bytes]:
    """Exact docid bytes of the given (0-based) lines, re-read piece by piece."""
    firsts = np.asarray([c[2] for c in chunk_info], dtype=np.int64)
    which = np.searchsorted(firsts, lines, side="right") - 1
    out: list[bytes] = [b""] * len(lines)
    with open(path, "rb") as f:
        for ci in np.unique(which).tolist():
            offset, size, first = chunk_info[ci]
            f.seek(offset)
            raw = bytearray(f.read(size))
            if len(raw) < size:           # the last piece had its newline supplied
                raw += b"\n"
            raw += bytes(16)
            ch = _Chunk(raw, size, first)
            S, E = _fields(path, ch)
            for k in np.flatnonzero(which == ci).tolist():
                i = int(lines[k]) - first
                out[k] = ch.token(S[i, 2], E[i, 2])
    return out


# --------------------------------------------------------------------------- evaluation


def evaluate_trec(run: TrecRun | str | os.PathLike,
                  qrels: Mapping[str, Mapping[str, int]] | str | os.PathLike) -> dict:
    """recall@10/100/1000, mrr and ndcg@10 of a TREC run against qrels.

    Returns ``{"queries": [qid, ...], "per_query": {measure: array}, "mean": {measure: float
    | None}, "n": int}`` over the qrels queries with at least one relevant document (see the
    module docstring). ``run`` may be a path or a :class:`TrecRun` read with the same qrels.
    """
    if not isinstance(qrels, Mapping):
        qrels = read_trec_qrels(qrels)
    if not isinstance(run, TrecRun):
        run = read_trec_run(run, qrels)
    fh = run.first_hits()
    per = rank_measures(fh)
    keep = fh.n_gold > 0
    idx = np.flatnonzero(keep)
    queries = [run.qids[i] for i in idx.tolist()]
    per_query = {m: v[idx] for m, v in per.items()}
    mean = {m: (float(v.mean()) if v.size else None) for m, v in per_query.items()}
    return {"queries": queries, "per_query": per_query, "mean": mean, "n": len(queries)}

