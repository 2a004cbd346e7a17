"""Reading TREC runs and qrels: bounded pieces, qrels as hash tables, lines grouped by query
(docs/runs.md, "TREC files at scale" and "Bounded reading", says how and why; docs/speed.md,
"Metric speed", what it costs).

Run files have one line per retrieved document, ``qid Q0 docid rank score tag``; qrels have
``qid iter docid rel``. Start at :func:`read_trec_qrels` and :class:`_Scan`, which
:mod:`.evaluate` drives: the run is read in :data:`CHUNK_BYTES` pieces without one Python object
per line, each piece turned into columns by :mod:`.parse`, its judged lines found in the qrels
(:class:`_Qrels`: one open-addressing table per query behind a bit filter, every hash match
confirmed on the bytes), and its lines handed on in groups of whole queries to
:meth:`_Scan.rank`, which :mod:`.evaluate` supplies.

* **bounds**: a line longer than :data:`MAX_TREC_LINE` is one located error, found after reading
  at most that much of it; a run that is not a regular file is copied to ``TMPDIR`` as it is
  read; a qrels file is read whole, up to :data:`MAX_QRELS_BYTES`;
* **grouping**: contiguous queries are ranked group by group as the next query starts; when a
  query reappears, every line goes on to :meth:`_Scan.group` (parts by query index), held up
  to :data:`MAX_HELD_BYTES` (32 MiB with the compiled reader), past it spilled to one
  temporary file per part in ``TMPDIR``, and the file read a second time when needed;
* **docid words**: for trec_eval's ranking each line keeps its docid as big-endian 8-byte words
  (:func:`_docid_words`), so ties are ordered by one sort;
* **reading again**: the exact docid bytes of some lines and the file line of a record are read
  again from the file, piece by piece (:func:`_reread_docids`, :func:`_record_line`).

Touches: reads the two files; writes only temporary files under ``TMPDIR``, removed at the end.
"""

from __future__ import annotations

import codecs
import collections
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.bounds import bound
from ..core.errors import InputError
from ..core.textfiles import MAX_TREC_LINE, c_atol, check_readable_file, trec_fields, trec_int
from . import parse as _parse
from .parse import (
    _arrow_options,
    _binary_tokens,
    _changes,
    _Chunk,
    _concat_words,
    _docid_words,
    _fields,
    _hash,
    _have_arrow,
    _mix,
    _parse_arrow,
    _parse_c,
    _parse_strict,
    _QueryIndex,
    _relevance,
    _same_bytes,
    _words_from,
)

CHUNK_BYTES = 8 << 20
MAX_HELD_BYTES = bound(
    "trec_held_bytes",
    512 << 20,
    "bytes",
    "lines of a TREC run held in memory (32 bytes a line, and 8 to 64 of docid for trec_eval's "
    "ties) to group queries whose lines are "
    "not contiguous (a run written by shards, sorted by docid, ...)",
    "the lines go to temporary files in TMPDIR, one per group of queries (no error; the file "
    "is read a second time as far as the bound was passed before the first query came back)",
    "membench.trec.read",
)
MAX_QRELS_BYTES = bound(
    "trec_qrels_bytes",
    1 << 30,
    "bytes",
    "a qrels file (read whole into memory)",
    "located error TOO_LARGE naming the file",
    "membench.trec.read",
)


# --------------------------------------------------------------------------- files and pieces


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
                raise InputError(path, None, None, f"larger than {limit:,} bytes", rule="TOO_LARGE")
            f.write(memoryview(raw)[:size])
    return out


def _read_chunks(
    path: Path, chunk_bytes: int, max_line: int | None = None, count_lines: bool = False
) -> Iterator[tuple[int, bytearray, int]]:
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
    have = 0  # bytes carried over: the start of a line, < max_line
    offset = 0
    with open(path, "rb") as f:
        while True:
            got = f.readinto(memoryview(raw)[have : have + chunk_bytes])
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
            nxt[: end - cut] = raw[cut:end]
            raw = nxt
            have = end - cut


def _check_line_lengths(
    path: Path, raw: bytearray, end: int, max_line: int, offset: int, lines: int | None
) -> None:
    """Every line in ``raw[:end]`` (the last one possibly unfinished; ``raw`` starts at a line
    start, at ``offset`` in the file) is at most ``max_line`` bytes long, newline included,
    else a located error. Each step jumps ``max_line`` bytes ahead and looks back for a
    newline, so a piece costs a few ``rfind`` calls that stop at the first newline they meet."""
    p = 0
    while end - p > max_line:
        q = raw.rfind(b"\n", p, p + max_line)
        if q < 0:  # no line end within max_line bytes of p
            before = _lines_before(path, offset) if lines is None else lines
            line = before + raw.count(b"\n", 0, p) + 1
            raise InputError(
                path,
                line,
                None,
                f"line longer than {max_line:,} bytes (bound "
                "trec_line_bytes); is this a TREC file?",
                rule="LINE_TOO_LONG",
            )
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


# --------------------------------------------------------------------------- qrels


def read_trec_qrels(path: str | Path, compat: bool = False) -> dict[str, dict[str, int]]:
    """``qid iter docid rel`` lines -> ``{qid: {docid: rel}}`` (file order kept). A repeated
    (qid, docid) or a malformed line is an error naming the line. ``compat``: lines starting
    with ``#`` are comments and the relevance is read by C's ``atol``, as in trec_eval 10
    (``1.5`` is 1, ``0x10`` is 0); else it must be an integer."""
    out: dict[str, dict[str, int]] = {}
    path = Path(path)
    for no, (qid, _, doc, rel) in trec_fields(path, "qid iter docid rel", comment_lines=compat):
        try:
            r = c_atol(rel) if compat else trec_int(rel)
        except ValueError:
            raise InputError(
                path,
                no,
                "rel",
                f"not an integer: {rel!r}; trec_eval reads it as "
                f"{c_atol(rel)} (C's atol), and so does membench trec-eval without "
                "--strict",
                rule="TREC",
            ) from None
        docs = out.setdefault(qid, {})
        if doc in docs:
            raise InputError(path, no, "docid", f"{qid} {doc} judged twice", rule="TREC")
        docs[doc] = r
    return out


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
            pacsv.ReadOptions(
                column_names=["qid", "iter", "docid", "rel"],
                block_size=size + 64,
                use_threads=False,
            ),
            pacsv.ParseOptions(
                delimiter=" ",
                quote_char=False,
                escape_char=False,
                double_quote=False,
                newlines_in_values=False,
                ignore_empty_lines=False,
            ),
            pacsv.ConvertOptions(
                column_types={
                    "qid": pa.binary(),
                    "iter": pa.binary(),
                    "docid": pa.binary(),
                    "rel": pa.binary(),
                },
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                check_utf8=False,
            ),
        )
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
    if compat and n and bool((qtok.ch.buf[qtok.s] == 35).any()):  # a "#" comment line
        return None
    trial = dict(qindex)
    q = _QueryIndex(trial).lookup(qtok).astype(np.int64)
    key = _mix(_hash(dtok.ch, dtok.s, dtok.e), q)
    order = np.argsort(key, kind="stable")
    sk = key[order]
    eq = np.flatnonzero(sk[1:] == sk[:-1])
    if eq.size:  # a repeated (query, docid) candidate: let the slow path say
        a, b = order[eq], order[eq + 1]
        same = _same_bytes(dtok.ch, dtok.s[a], dl[a], dtok.ch, dtok.s[b], dl[b]) & (q[a] == q[b])
        if same.any():
            return None
    qindex.clear()
    qindex.update(trial)
    rel = _relevance(t.column("rel"), compat)
    if rel is None:
        return None
    return q, dtok.ch, dtok.s, dl, rel


class _Qrels:
    """Qrels as one small open-addressing hash table per query (docid hash -> judgment), so
    that looking up a run's lines, which come query by query, stays in cache. Every hash match
    is confirmed on the bytes."""

    def __init__(
        self,
        qrels: Mapping[str, Mapping[str, int]],
        qindex: dict[str, int],
        arrays: tuple | None = None,
    ):
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
            arrays = (
                np.asarray(qs, dtype=np.int64),
                _Chunk(blob, len(blob) - 16, 0),
                starts,
                lens,
                np.asarray(rels, dtype=np.int64),
            )
        q, self.ch, self.s, lens, rel = arrays
        self.len = lens
        nq = self.n_queries = len(qindex)
        self.q = q
        self.rel = rel
        self.n_relevant = np.bincount(q[rel >= 1], minlength=nq).astype(np.int64)
        docs = lens  # (only its length is used below)
        h = _hash(self.ch, self.s, self.s + lens) if len(docs) else np.zeros(0, np.uint64)
        # per query a region of 2**k >= 2 * judged slots; the extra query index nq (and every
        # query without judgments) points at slot 0, which stays empty
        counts = np.bincount(q, minlength=nq + 1)
        cap = np.where(
            counts > 0, 1 << np.ceil(np.log2(np.maximum(2 * counts, 2))).astype(np.int64), 0
        )
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
                np.int64
            )
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
            np.bitwise_or.at(
                self.filter,
                (top >> np.uint64(6)).astype(np.int64),
                np.uint64(1) << (top & np.uint64(63)),
            )

    @classmethod
    def from_file(
        cls, path: Path, qindex: dict[str, int], tmpdir: Path | None = None, compat: bool = False
    ) -> _Qrels:
        """Qrels read straight into arrays (pyarrow, the usual layout); any other layout,
        a repeated judgment or a malformed line goes through :func:`read_trec_qrels`, which
        names the line. A qrels file is read whole: at most :data:`MAX_QRELS_BYTES` (a stream
        is first copied to ``tmpdir``, its lines bounded as it goes)."""
        shown = Path(path)
        path = (
            _regular(shown, tmpdir, CHUNK_BYTES, MAX_QRELS_BYTES)
            if tmpdir is not None
            else check_readable_file(shown)
        )
        if path.stat().st_size > MAX_QRELS_BYTES:
            raise InputError(
                shown,
                None,
                None,
                f"larger than {MAX_QRELS_BYTES:,} bytes (bound trec_qrels_bytes)",
                rule="TOO_LARGE",
            )
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

    def lookup(
        self,
        ch: _Chunk,
        dhash: np.ndarray,
        key: np.ndarray,
        q: np.ndarray,
        ds: np.ndarray,
        de: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
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
            if todo.size:  # linear probing inside the query's region
                qt = qq[todo]
                b = self.base[qt]
                slot = b + ((slot - b + 1) & self.mask[qt].astype(np.int64))
        if not hit_l:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        lines = np.concatenate(hit_l)
        idx = np.concatenate(hit_i)
        o = np.argsort(lines, kind="stable")
        return lines[o], self.rel[idx[o]]


# --------------------------------------------------------------------------- the run, read


@dataclass
class _Lines:
    """Per-line columns of some lines of the run (in file order)."""

    line: np.ndarray  # int64: 0-based line number in the file
    q: np.ndarray  # int32: query index
    rank: np.ndarray  # int32: the rank column
    score: np.ndarray  # float64
    key: np.ndarray  # uint64: (query, docid) hash
    jpos: np.ndarray  # int64: positions (in these lines) of judged lines
    jrel: np.ndarray  # int64: their relevance
    # uint64 (lines, K): the docid's bytes as K big-endian words, zero-padded (ascending
    # words = C's strcmp order); None when not kept (membench's ties, a docid longer than
    # 64 bytes, lines read back from disk): the docids are then read again from the file
    dw: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.q)

    def held_bytes(self) -> int:
        """What holding these lines costs: their five columns and the docid words."""
        return _LINE_BYTES * len(self.q) + (0 if self.dw is None else self.dw.nbytes)

    @staticmethod
    def concat(parts: list[_Lines]) -> _Lines:
        if len(parts) == 1:
            return parts[0]
        sizes = np.cumsum([0] + [len(p) for p in parts])
        return _Lines(
            *(
                np.concatenate([getattr(p, f) for p in parts])
                for f in ("line", "q", "rank", "score", "key")
            ),
            np.concatenate([p.jpos + s for p, s in zip(parts, sizes[:-1])]),
            np.concatenate([p.jrel for p in parts]),
            _concat_words([p.dw for p in parts]),
        )

    def take(self, sl: slice) -> _Lines:
        a, b = sl.start, sl.stop
        keep = (self.jpos >= a) & (self.jpos < b)
        return _Lines(
            self.line[sl],
            self.q[sl],
            self.rank[sl],
            self.score[sl],
            self.key[sl],
            self.jpos[keep] - a,
            self.jrel[keep],
            None if self.dw is None else self.dw[sl],
        )


_REC = np.dtype([("line", "<i8"), ("key", "<u8"), ("score", "<f8"), ("q", "<i4"), ("rank", "<i4")])
_LINE_BYTES = _REC.itemsize  # what one held line costs (its five columns)
_PART_LINES = 1 << 19  # lines per part when grouping (arrays under 8 MiB)
# lines held while the queries come contiguously, where the compiled reader is built (a
# second read of what was not held costs less than holding it; without it, MAX_HELD_BYTES)
_STREAM_HELD_BYTES = 32 << 20


class _Interleaved(Exception):
    """A query's lines are not contiguous: read again, grouping lines by query on disk."""


class _Scan:
    """One reading of a run file: chunks parsed (arrow, else strict), query indices, docid
    hashes, judged lines; lines handed on in groups that hold whole queries, to
    :meth:`rank` (a subclass's: :class:`membench.trec.evaluate._RankingScan`)."""

    def __init__(
        self,
        path: Path,
        qrels: _Qrels,
        qindex: dict[str, int],
        chunk_bytes: int,
        keep_lines: bool,
        compat: bool = False,
    ):
        self.path, self.qr, self.chunk_bytes = path, qrels, chunk_bytes
        self.qindex = _QueryIndex(qindex)
        self.keep_lines, self.compat = keep_lines, compat
        self.docid_words = False  # keep each line's docid words (_Lines.dw) to rank by docid
        self.chunk_info: list[tuple[int, int, int]] = []
        self.n_lines = 0  # records (= lines unless compat skipped some)
        self.file_lines = 0  # lines (compat only)
        self.line_q: list[np.ndarray] = []  # keep_lines: query index per line

    def rank(self, g: _Lines, contiguous: bool = False, grouped: bool = False) -> None:
        """Take a group of lines holding whole queries (lines in file order; ``contiguous``:
        each query one block of them; ``grouped``: gathered by :meth:`group`)."""
        raise NotImplementedError

    def restart(self) -> None:
        """Forget every group taken so far: :meth:`stream` hands them on again, to
        :meth:`group`, with the rest."""

    def chunks(self) -> Iterator[_Lines]:
        """The run's lines, chunk by chunk. While one chunk is looked up here, a second thread
        parses the next one with pyarrow (which, like numpy, runs without the GIL)."""
        opts = _arrow_options(max(self.chunk_bytes, 1 << 16) + 64) if _have_arrow() else None

        def prepare(item):
            offset, raw, size = item
            parsed = None
            try:
                if size and int(np.frombuffer(raw, np.uint8, count=size).max()) > 127:
                    codecs.utf_8_decode(memoryview(raw)[:size], "strict", True)
            except UnicodeDecodeError:
                return offset, raw, size, None, None, None, None
            got = _parse_c(_Chunk(raw, size, 0), self.compat, self.docid_words)
            if got is not None:  # the compiled reader: everything at once
                return (offset, raw, size, *got)
            if opts is not None:
                parsed = _parse_arrow(_Chunk(raw, size, 0), opts)
            if (
                parsed is not None
                and self.compat
                and len(parsed[2])
                and bool((parsed[0].ch.buf[parsed[0].s] == 35).any())
            ):
                parsed = None  # a "#" comment line: the strict reader
            if parsed is None:
                return offset, raw, size, None, None, None, None
            qtok, dtok = parsed[0], parsed[1]
            return (
                offset,
                raw,
                size,
                parsed,
                _hash(dtok.ch, dtok.s, dtok.e),
                _changes(qtok.ch, qtok.s, qtok.e),
                _docid_words(dtok.ch, dtok.s, dtok.e) if self.docid_words else None,
            )

        pieces = _read_chunks(self.path, self.chunk_bytes)
        pool = ThreadPoolExecutor(1) if opts is not None or _parse._trecscan else None
        try:
            first = next(pieces, None)
            fut = None if first is None else (pool.submit(prepare, first) if pool else first)
            while fut is not None:
                offset, raw, size, parsed, dh, qchange, dw = fut.result() if pool else prepare(fut)
                nxt = next(pieces, None)
                fut = None if nxt is None else (pool.submit(prepare, nxt) if pool else nxt)
                first_line = self.file_lines if self.compat else self.n_lines
                if self.compat:
                    self.file_lines += raw.count(b"\n", 0, size)
                if parsed is None:
                    parsed = _parse_strict(self.path, _Chunk(raw, size, first_line), self.compat)
                qtok, dtok, rank, score, qcol = parsed
                if dh is None:
                    dh = _hash(dtok.ch, dtok.s, dtok.e)
                    if self.docid_words:
                        dw = _docid_words(dtok.ch, dtok.s, dtok.e)
                n = len(rank)
                q = self.qindex.lookup(qtok, qchange, qcol)
                key = _mix(dh, q)
                jl, jr = self.qr.lookup(dtok.ch, dh, key, q, dtok.s, dtok.e)
                self.chunk_info.append((offset, size, self.n_lines))
                lines = np.arange(self.n_lines, self.n_lines + n, dtype=np.int64)
                self.n_lines += n
                if self.keep_lines:
                    self.line_q.append(q)
                yield _Lines(lines, q, rank, score, key, jl, jr, dw)
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            pieces.close()

    # ------------------------------------------------------------------ two ways of grouping

    def stream(self, tmpdir: Path) -> bool:
        """Queries contiguous in the file: rank each group of whole queries as soon as the
        next query starts (memory: a chunk and one open query). The lines read are also held
        (up to :data:`MAX_HELD_BYTES`, or 32 MiB where the compiled reader is built, whose
        second read costs less than holding them; a contiguous run pays their page faults,
        about 0.2 s per 10 million lines), so that when a query comes back after another one started
        they go on to :meth:`group` without a second read; past that they are let go, and a
        query that comes back raises :class:`_Interleaved` (the caller reads the file again
        into :meth:`group`, as far as it was read twice). Returns whether the lines were
        grouped."""
        seen = np.zeros(1024, dtype=bool)
        limit = (
            MAX_HELD_BYTES if _parse._trecscan is None else min(MAX_HELD_BYTES, _STREAM_HELD_BYTES)
        )
        pending: list[_Lines] = []
        held: collections.deque[_Lines] | None = collections.deque()
        held_bytes = 0
        open_q = -1
        it = self.chunks()
        for lines in it:
            n = len(lines)
            if held is not None:
                held.append(lines)
                held_bytes += lines.held_bytes()
                if held_bytes > limit:
                    held = None
            if n == 0:
                continue
            q = lines.q
            starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
            seg_q = q[starts]
            if int(seg_q.max()) >= len(seen):
                seen = np.concatenate(
                    [seen, np.zeros(max(len(seen), int(seg_q.max()) + 1), dtype=bool)]
                )
            new = seg_q if seg_q[0] != open_q else seg_q[1:]
            if len(np.unique(new)) != len(new) or bool(seen[new].any()):
                if held is None:
                    raise _Interleaved
                # what was ranked so far is ranked again with the rest, grouped
                self.restart()
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
            if seg_q[0] == open_q:  # the open query goes on
                body = int(starts[1]) if len(starts) > 1 else n
                pending.append(lines.take(slice(0, body)))
                if len(starts) == 1:
                    continue
            if pending:  # the open query is complete
                self.rank(_Lines.concat(pending), True)
            if last > body:  # whole queries of this chunk: a view
                self.rank(lines.take(slice(body, last)), True)
            pending = [lines.take(slice(last, n))]
            open_q = int(seg_q[-1])
        if pending:
            self.rank(_Lines.concat(pending), True)
        return False

    def group(self, chunks: Iterator[_Lines], tmpdir: Path, est_lines: int) -> None:
        """Any order: lines are split into ``P`` parts by query index (ranges of it, modulo
        ``P``: about 500,000 lines a part). The chunks are held as they are (with, per
        chunk, its lines' order by part) up to :data:`MAX_HELD_BYTES`, and each part is then
        gathered from
        them once and ranked; past the bound, every line goes to one file per part (32 bytes
        a line, in ``tmpdir``), read back one part at a time (memory: a chunk and one
        part)."""
        parts = min(4096, max(1, -(-est_lines // _PART_LINES)))
        held: list[tuple[_Lines, np.ndarray | None, np.ndarray, np.ndarray]] = []
        held_bytes = 0
        files: list | None = None  # one file of lines per part, then one of docid words
        words: list = []  # per part: (K, lines) of each piece written, or None
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
            dw = lines.dw if lines.dw is None or order is None else lines.dw[order]
            for i in np.flatnonzero(np.diff(bounds)).tolist():
                rec[bounds[i] : bounds[i + 1]].tofile(files[i])
                if words[i] is not None:  # the docid words, beside: (K, lines)
                    if dw is None:
                        words[i] = None
                    else:
                        np.ascontiguousarray(dw[bounds[i] : bounds[i + 1]]).tofile(files[i + parts])
                        words[i].append((dw.shape[1], int(bounds[i + 1] - bounds[i])))
            judged.append((lines.line[lines.jpos], jpart, lines.jrel))

        try:
            for lines in chunks:
                n = len(lines)
                if n == 0:
                    continue
                order, bounds, jpart = split(lines)
                if files is None and held_bytes + lines.held_bytes() > MAX_HELD_BYTES:
                    files = [open(tmpdir / f"part{i}.bin", "wb") for i in range(parts)] + [
                        open(tmpdir / f"part{i}.dw", "wb") for i in range(parts)
                    ]
                    words = [[] for _ in range(parts)]
                    for item in held:
                        write(*item)
                    held.clear()
                if files is None:
                    held.append((lines, order, bounds, jpart))
                    held_bytes += lines.held_bytes()
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
            wp = tmpdir / f"part{i}.dw"
            dw = _words_from(np.fromfile(wp, dtype=np.uint64), words[i], len(rec))
            wp.unlink()
            if len(rec) == 0:
                continue
            mine = jb == i
            pos = np.searchsorted(rec["line"], jl[mine])
            self.rank(
                _Lines(
                    rec["line"].copy(),
                    rec["q"].copy(),
                    rec["rank"].copy(),
                    rec["score"].copy(),
                    rec["key"].copy(),
                    pos,
                    jr[mine],
                    dw,
                ),
                grouped=True,
            )
            del rec, dw

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
        have = [lines.dw for (lines, _, _, _), k in zip(held, m) if k]
        dw = (
            None
            if any(w is None for w in have)
            else np.zeros((total, max(w.shape[1] for w in have)), np.uint64)
        )
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
                if dw is not None:
                    dw[span, : lines.dw.shape[1]] = lines.dw[a:z]
            else:
                idx = order[a:z]
                np.add(idx, lines.line[0], out=line[span])  # a chunk's lines are consecutive
                np.take(lines.q, idx, out=q[span])
                np.take(lines.rank, idx, out=rank[span])
                np.take(lines.score, idx, out=score[span])
                np.take(lines.key, idx, out=key[span])
                if dw is not None:
                    dw[span, : lines.dw.shape[1]] = lines.dw[idx]
            mine = jpart == i
            if mine.any():
                jpos.append(np.searchsorted(idx, lines.jpos[mine]) + at)
                jrel.append(lines.jrel[mine])
            at += k
        return _Lines(
            line,
            q,
            rank,
            score,
            key,
            np.concatenate(jpos) if jpos else np.zeros(0, np.int64),
            np.concatenate(jrel) if jrel else np.zeros(0, np.int64),
            dw,
        )


# --------------------------------------------------------------------------- reading again


def _record_line(
    path: Path, chunk_info: list[tuple[int, int, int]], record: int, compat: bool = False
) -> int:
    """The file line (1-based) of run record ``record`` (0-based): the same unless lines
    were skipped (``compat``: comments, blank lines)."""
    if not compat:
        return record + 1
    firsts = np.asarray([c[2] for c in chunk_info], dtype=np.int64)
    ci = int(np.searchsorted(firsts, record, side="right") - 1)
    with open(path, "rb") as f:
        ch, _, _, rec_line = _reread_chunk(path, f, chunk_info[ci], compat)
    i = record - ch.first_line
    return (
        _lines_before(path, chunk_info[ci][0])
        + (int(rec_line[i]) if rec_line is not None else i)
        + 1
    )


def _reread_chunk(path: Path, f, info: tuple[int, int, int], compat: bool = False):
    """``(chunk, field starts, field ends, per-record line offsets or None)`` of the piece
    ``info`` (offset, size, first record) of ``chunk_info``, read again from the open file
    ``f``."""
    offset, size, first = info
    f.seek(offset)
    raw = bytearray(f.read(size))
    if len(raw) < size:  # the last piece had its newline supplied
        raw += b"\n"
    raw += bytes(16)
    ch = _Chunk(raw, size, first)
    S, E, rec_line = _fields(path, ch, compat)
    return ch, S, E, rec_line


def _reread_docids(
    path: Path, lines: np.ndarray, chunk_info: list[tuple[int, int, int]], compat: bool = False
) -> list[bytes]:
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
