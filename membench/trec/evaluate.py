"""Ranking a TREC run and scoring it with membench's formulas (:mod:`membench.metrics.ranking`).

Start at :func:`evaluate_trec` and :func:`read_trec_run` (here, not in :mod:`.read`, because the
run it returns is ranked: :class:`TrecRun`, per judged line its query, rank and relevance).
:mod:`.read` hands the lines on in groups of whole queries; :class:`_RankingScan` ranks each:

* **ranking**: lines in order already (checked) take their positions; else one sort of packed
  64-bit keys (query, the score's high bits, position), the rare lines that agree in the kept
  bits put exactly in (score, rank column, line) order (:func:`_sort`); trec_eval's order by
  (query, score, docid words) is one C sort (``_trecscan.order_trec_eval``) where it was
  built, else one lexsort (:func:`_order_by_words`);
* **duplicates**: equal (query, docid) keys are candidates, confirmed on their docid bytes read
  again from the file (:func:`_duplicates`): a hash collision costs time, never a wrong value.

Ranking follows :data:`membench.contract.protocol.TIE_BREAKING` (score descending, rank column
ascending, line order; a repeated (qid, docid) counts only at its first position);
``ties="trec_eval"`` ranks as trec_eval 10.0 (scores as doubles descending, docid descending,
rank column ignored), ``ties="trec_eval9"`` compares scores as 32-bit floats. Relevant = qrels
relevance >= 1. Measures are averaged over the qrels queries with a relevant document, a query
without run lines scoring 0 (trec_eval ``-c``); run queries absent from the qrels are ignored.
No depth cap is applied (MRR looks at the whole list, as trec_eval). Touches: reads the run and
qrels files (through :mod:`.read`). ``bench/bench_metrics.py`` measures it (docs/speed.md,
"Metric speed").
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..metrics.ranking import FirstHits, rank_measures
from . import parse as _parse
from .parse import _Chunk
from .read import (
    CHUNK_BYTES,
    _Interleaved,
    _Lines,
    _Qrels,
    _record_line,
    _regular,
    _reread_chunk,
    _reread_docids,
    _Scan,
)

# --------------------------------------------------------------------------- ranking a group


@dataclass
class _Ranked:
    """What the evaluator needs: per judged line its query, membench rank (0 = dropped
    duplicate) and relevance; per query the number of ranked (distinct) documents."""

    jq: list[np.ndarray]
    jrank: list[np.ndarray]
    jrel: list[np.ndarray]
    ret_q: list[np.ndarray]
    ret_n: list[np.ndarray]


class _RankingScan(_Scan):
    """A :class:`~membench.trec.read._Scan` that ranks each group of lines it hands on:
    ``ties`` one of :data:`TIES`; ``duplicates`` "first" (a repeated docid counts at its first
    position) or "refuse" (trec_eval's refusal, :meth:`_refuse`); ``max_docs`` trec_eval's
    ``-M``. ``keep_lines``: also the rank of every line (``rank_parts``)."""

    def __init__(
        self,
        path: Path,
        qrels: _Qrels,
        qindex: dict[str, int],
        chunk_bytes: int,
        ties: str,
        keep_lines: bool,
        compat: bool = False,
        duplicates: str = "first",
        max_docs: int | None = None,
    ):
        super().__init__(path, qrels, qindex, chunk_bytes, keep_lines, compat)
        self.ties, self.duplicates, self.max_docs = ties, duplicates, max_docs
        self.docid_words = ties in ("trec_eval", "trec_eval9")
        self.out = _Ranked([], [], [], [], [])
        self.rank_parts: list[tuple[np.ndarray, np.ndarray]] = []  # keep_lines: (lines, ranks)

    def restart(self) -> None:
        self.out = _Ranked([], [], [], [], [])
        self.rank_parts = []

    def rank(
        self, g: _Lines, contiguous: bool = False, grouped: bool = False, qstep: int = 1
    ) -> None:
        """membench ranks for a group of lines holding whole queries (lines in file order)."""
        n = len(g)
        if n == 0:
            return
        q = g.q
        if self.ties in ("trec_eval", "trec_eval9"):
            # 10.0 compares the scores as doubles (form_res_rels.c); 9.x, and pytrec_eval,
            # which bundles 9.0.8, as 32-bit floats
            score = (
                g.score
                if self.ties == "trec_eval"
                else g.score.astype(np.float32).astype(np.float64)
            )
            order = self._order_trec_eval(g, score)
        else:
            order = (
                None
                if not grouped and _in_order(q, g.score, g.rank, contiguous)
                else _sort(q, g.score, g.rank, qstep)
            )
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

    def _refuse(
        self,
        g: _Lines,
        dup: np.ndarray,
        order: np.ndarray | None,
        start: np.ndarray,
        lens: np.ndarray,
    ) -> None:
        """trec_eval's refusal of a docid listed twice for a query (``form_res_rels.c``:
        "duplicate docs"), as a located error at the later copy (in ranking order). With
        ``max_docs`` (``-M``) only copies both inside a query's first ``max_docs`` are
        refused, as trec_eval checks after cutting the ranking; a query without qrels is never
        evaluated by trec_eval, so its copies are not refused."""
        n = len(g)
        d = dup if order is None else dup[order]
        d = d & ((g.q if order is None else g.q[order]) < self.qr.n_queries)
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
        others = sorted(
            _record_line(self.path, self.chunk_info, int(g.line[k]), self.compat)
            for k, dk in zip(same.tolist(), docs)
            if dk == doc
        )
        qid = self.qindex.qid(int(g.q[i]))
        also = f" (also line {others[0]})" if others else ""
        raise InputError(
            self.path,
            _record_line(self.path, self.chunk_info, rec, self.compat),
            "docid",
            f"{doc.decode('utf-8', 'replace')[:200]!r} listed twice for "
            f"query {qid!r}{also}: trec_eval refuses a run that repeats a docid "
            "within a query (its 'duplicate docs'); --lenient counts the first "
            "copy only",
            rule="DUPLICATE_DOC",
        )

    def _order_trec_eval(self, g: _Lines, score: np.ndarray) -> np.ndarray:
        """trec_eval's order: per query ``score`` descending (doubles for 10.0; the caller
        rounds them to 32-bit floats for 9.x), then docid descending (bytes), a docid listed
        twice its later line first. With the lines' docid words (:attr:`_Lines.dw`, docids of
        up to 64 bytes): one sort by (query, score, docid words), no docid read again
        (:func:`_order_by_words`). Else one stable sort by (query, score), and the lines
        whose score equals a neighbour's in the same query are put in docid order by one
        more sort, of their docids' ranks (:func:`_docid_ranks`, read again from the file).
        A query holding a NaN score is ordered as glibc's qsort orders it under trec_eval's
        comparator (:func:`_qsort_order`)."""
        q = g.q
        if g.dw is not None:
            o = _order_by_words(q, score, g.dw)
            ss = score[o]
            nan = np.isnan(ss)
            if nan.any():
                o = _with_nan_queries(
                    self.path, g, o, score, np.unique(q[o][nan]), self.chunk_info, self.compat
                )
            return o
        o = np.argsort(-score, kind="stable")
        o = o[_stable_by_query(q[o])]
        qs, ss = q[o], score[o]
        eq = (ss[1:] == ss[:-1]) & (qs[1:] == qs[:-1])
        if eq.any():
            tied = np.zeros(len(o), dtype=bool)
            tied[1:] |= eq
            tied[:-1] |= eq
            pos = np.flatnonzero(tied)
            grp = np.cumsum(np.r_[True, ~eq])[pos]
            sub = o[pos]
            drank = _docid_ranks(self.path, g.line[sub], self.chunk_info, self.compat)
            # docid descending; a repeated docid: its later line first (the copy refused)
            o[pos] = sub[np.lexsort((-np.arange(len(sub)), -drank, grp))]
        nan = np.isnan(ss)
        if nan.any():
            o = _with_nan_queries(
                self.path, g, o, score, np.unique(qs[nan]), self.chunk_info, self.compat
            )
        return o


def _order_by_words(q: np.ndarray, score: np.ndarray, dw: np.ndarray) -> np.ndarray:
    """trec_eval's order by (query, score descending, docid words descending, later line
    first): the compiled sort (``_trecscan.order_trec_eval``: by query, then each query's
    lines merge-sorted) where it was built, else :func:`_lexsort_trec_eval`, the same
    order."""
    c = _parse._trecscan
    if c is None:
        return _lexsort_trec_eval(q, score, dw)
    o = np.empty(len(q), dtype=np.int64)
    c.order_trec_eval(
        np.ascontiguousarray(q, dtype=np.int32),
        np.ascontiguousarray(score, dtype=np.float64),
        np.ascontiguousarray(dw, dtype=np.uint64),
        dw.shape[1],
        o,
    )
    return o


def _lexsort_trec_eval(q: np.ndarray, score: np.ndarray, dw: np.ndarray) -> np.ndarray:
    """Positions in trec_eval's order, one ``np.lexsort``: query, score descending, docid
    descending (its big-endian words, inverted), then the later line first (the lines are
    sorted in reverse, and lexsort is stable)."""
    n = len(q)
    r = slice(None, None, -1)
    keys = [~dw[r, j] for j in range(dw.shape[1] - 1, -1, -1)]
    keys += [np.negative(score[r]), q[r]]
    o = np.lexsort(keys)
    return (n - 1) - o


def _reread_docid_bytes(
    path: Path, lines: np.ndarray, chunk_info: list[tuple[int, int, int]], compat: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The docids of the given (0-based) lines, in their order, as one byte array and its
    offsets (docid i is ``data[off[i]:off[i + 1]]``): each piece holding some is read again
    once, and their bytes gathered without a Python object per line."""
    firsts = np.asarray([c[2] for c in chunk_info], dtype=np.int64)
    which = np.searchsorted(firsts, lines, side="right") - 1
    order = np.argsort(which, kind="stable")
    cis, first = np.unique(which[order], return_index=True)  # each piece's run in order
    ends_at = [*first[1:].tolist(), len(order)]
    lens, parts = [], []
    with open(path, "rb") as f:
        for ci, a, b in zip(cis.tolist(), first.tolist(), ends_at):
            ch, S, E, _ = _reread_chunk(path, f, chunk_info[ci], compat)
            i = lines[order[a:b]] - ch.first_line
            s, L = S[i, 2], E[i, 2] - S[i, 2]
            ends = np.cumsum(L)
            idx = np.arange(int(ends[-1]) if len(L) else 0, dtype=np.int64) + np.repeat(
                s - (ends - L), L
            )
            parts.append(ch.buf[idx])
            lens.append(L)
    L = np.concatenate(lens) if lens else np.zeros(0, np.int64)
    data = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    pos = np.zeros(len(L), dtype=np.int64)  # start of each docid, in read order
    np.cumsum(L[:-1], out=pos[1:])
    back = np.empty(len(order), dtype=np.int64)
    back[order] = np.arange(len(order))
    L, pos = L[back], pos[back]
    off = np.zeros(len(L) + 1, dtype=np.int64)
    np.cumsum(L, out=off[1:])
    idx = np.arange(int(off[-1]), dtype=np.int64) + np.repeat(pos - off[:-1], L)
    return data[idx], off


def _docid_ranks(
    path: Path, lines: np.ndarray, chunk_info: list[tuple[int, int, int]], compat: bool = False
) -> np.ndarray:
    """Per line of ``lines``, the rank of its docid among theirs (equal docids, equal ranks),
    in bytes order as C's strcmp compares them: the docids are read again
    (:func:`_reread_docid_bytes`) and sorted by their big-endian 8-byte words, zero-padded
    (a docid holds no NUL byte, so a prefix sorts first, as strcmp puts it); a docid longer
    than 64 bytes makes it one sort of byte strings."""
    data, off = _reread_docid_bytes(path, lines, chunk_info, compat)
    n = len(off) - 1
    L = np.diff(off)
    if n == 0:
        return np.zeros(0, np.int64)
    if int(L.max()) > 64:
        docs = [data[a:b].tobytes() for a, b in zip(off[:-1].tolist(), off[1:].tolist())]
        _, inv = np.unique(np.asarray(docs, dtype=object), return_inverse=True)
        return inv.astype(np.int64)
    raw = bytearray(data.tobytes() + bytes(16))
    ch = _Chunk(raw, max(len(data), 1), 0)
    words = [ch.masked_word(off[:-1], L, j).byteswap() for j in range((int(L.max()) + 7) // 8)]
    o = np.lexsort(words[::-1])
    diff = np.zeros(n, dtype=bool)
    for w in words:
        ws = w[o]
        diff[1:] |= ws[1:] != ws[:-1]
    diff[0] = True
    rank = np.empty(n, dtype=np.int64)
    rank[o] = np.cumsum(diff)
    return rank


def _with_nan_queries(
    path: Path,
    g: _Lines,
    o: np.ndarray,
    score: np.ndarray,
    nan_q: np.ndarray,
    chunk_info,
    compat: bool,
) -> np.ndarray:
    """``o`` with the lines of each query in ``nan_q`` (a query holding a NaN score) put in
    the order glibc's qsort gives them under trec_eval's comparator (:func:`_qsort_order`)."""
    qo = g.q[o]
    for qi in nan_q.tolist():
        at = np.flatnonzero(qo == qi)
        sub = o[at]
        docs = _reread_docids(path, g.line[sub], chunk_info, compat)
        o[at] = sub[_qsort_order(docs, score[sub].tolist())]
    return o


def _qsort_order(docs: list[bytes], sims: list[float]) -> np.ndarray:
    """The positions of one query's lines in the order trec_eval 10.0 ranks them when a score
    is NaN: its comparator (``form_res_rels.c``: sim descending, then docno descending) finds a
    NaN equal to every score, so the order is the sort algorithm's. trec_eval reads a query's
    lines sorted by docno (``get_trec_results.c``) and sorts them with glibc's ``qsort``, a
    top-down merge sort (``msort.c``: halves of n // 2 and n - n // 2, the left element taken
    on a tie); this repeats that merge sort, comparison for comparison."""

    def cmp(a: int, b: int) -> int:
        if sims[a] > sims[b]:
            return -1
        if sims[a] < sims[b]:
            return 1
        return (docs[b] > docs[a]) - (docs[b] < docs[a])

    def msort(items: list[int]) -> list[int]:
        if len(items) <= 1:
            return items
        h = len(items) // 2
        left, right = msort(items[:h]), msort(items[h:])
        out, i, j = [], 0, 0
        while i < len(left) and j < len(right):
            if cmp(left[i], right[j]) <= 0:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
        return out + left[i:] + right[j:]

    start = sorted(range(len(docs)), key=lambda k: docs[k])
    return np.asarray(msort(start), dtype=np.int64)


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
    u = np.add(score, 0.0).view(np.uint64)  # + 0.0 turns -0.0 into 0.0
    m = u >> np.uint64(63)  # 1 for a negative score
    m *= np.uint64(0x7FFFFFFFFFFFFFFF)
    m |= _SIGN  # negative: all ones; else the sign bit
    m ^= u  # ascending doubles -> ascending keys
    np.invert(m, out=m)  # descending
    return m


def _sort(q: np.ndarray, score: np.ndarray, rank: np.ndarray, qstep: int = 1) -> np.ndarray:
    """Positions in ranking order: query, score descending, rank column, then line order.

    One sort of packed 64-bit keys (numpy's vectorised sort of plain integers is several
    times faster than ``argsort``): (query, the high bits of an order-preserving key of the
    score, position). The runs whose query and kept score bits agree (equal or nearly equal
    scores: rare unless the run has ties) are then put exactly in (score, rank column,
    position) order. ``qstep``: the queries of ``q`` are equal modulo it (a part of
    :meth:`.read._Scan.group`), so ``(q - min) // qstep`` numbers them densely."""
    n = len(q)
    if n < 2:
        return np.arange(n)
    bits = max(1, (n - 1).bit_length())
    low = np.uint64((1 << bits) - 1)
    lo = int(q.min())
    qbits = ((int(q.max()) - lo) // qstep).bit_length()
    sbits = 64 - bits - qbits
    if sbits < 24:  # (a group of > 2**20 queries: two sorts)
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
    if eq.any():  # equal in the kept bits: exactly, by the rule
        tied = np.zeros(n, dtype=bool)
        tied[1:] |= eq
        tied[:-1] |= eq
        at = np.flatnonzero(tied)
        grp = np.cumsum(np.r_[True, ~eq])[at]
        sub = o[at]
        o[at] = sub[np.lexsort((sub, rank[sub], -score[sub], grp))]
    return o


def _duplicates(
    path: Path,
    g: _Lines,
    order: np.ndarray | None,
    chunk_info: list[tuple[int, int, int]],
    compat: bool = False,
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
    judged_q: np.ndarray  # int64 per judged line
    judged_rank: np.ndarray  # int64: 0 = a dropped duplicate
    judged_rel: np.ndarray  # int64
    ret_q: np.ndarray  # int64: queries of the run
    ret_n: np.ndarray  # int64: their ranked (distinct) documents
    n_qrels_queries: int
    n_relevant: np.ndarray  # int64 per qrels query: judged docs with rel >= 1
    q: np.ndarray | None = None  # int32 per line (read_trec_run only)
    rank: np.ndarray | None = None  # int32 per line (read_trec_run only)
    interleaved: bool = False  # queries were not contiguous (grouped on disk)
    qrels_q: np.ndarray | None = None  # int64 per judgment: its query index
    qrels_rel: np.ndarray | None = None  # int64 per judgment: its relevance

    def first_hits(self) -> FirstHits:
        """One gold region per relevant qrels document (rel >= 1)."""
        keep = (
            (self.judged_rel >= 1) & (self.judged_rank > 0) & (self.judged_q < self.n_qrels_queries)
        )
        return FirstHits(self.n_relevant.copy(), self.judged_q[keep], self.judged_rank[keep])


TIES = ("membench", "trec_eval", "trec_eval9")


def _scan_run(
    path: str | os.PathLike,
    qrels: Mapping[str, Mapping[str, int]] | str | os.PathLike | None,
    chunk_bytes: int,
    ties: str,
    keep_lines: bool,
    compat: bool = False,
    duplicates: str = "first",
    max_docs: int | None = None,
) -> TrecRun:
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    path = Path(path)
    with tempfile.TemporaryDirectory(prefix="membench-trec-") as tmp:
        tmpdir = Path(tmp)
        qrels_path = None if qrels is None or isinstance(qrels, Mapping) else Path(qrels)
        read_path = _regular(path, tmpdir / "run", chunk_bytes)
        try:
            return _scan(
                read_path,
                path,
                qrels,
                qrels_path,
                tmpdir,
                chunk_bytes,
                ties,
                keep_lines,
                compat,
                duplicates,
                max_docs,
            )
        except InputError as e:
            if read_path != path and Path(e.file) == read_path:
                e.file = str(path)  # name the file the user gave, not its copy
            raise


def _scan(
    path: Path,
    shown: Path,
    qrels,
    qrels_path: Path | None,
    tmpdir: Path,
    chunk_bytes: int,
    ties: str,
    keep_lines: bool,
    compat: bool,
    duplicates: str = "first",
    max_docs: int | None = None,
) -> TrecRun:
    base: dict[str, int] = {}
    if qrels_path is not None:
        qr = _Qrels.from_file(qrels_path, base, tmpdir / "qrels", compat)
    else:
        qr = _Qrels(qrels or {}, base)
    scan = _RankingScan(
        path, qr, dict(base), chunk_bytes, ties, keep_lines, compat, duplicates, max_docs
    )
    spill = tmpdir / "spill"
    spill.mkdir()
    try:
        interleaved = scan.stream(spill)
        again = False
    except _Interleaved:  # past the lines held: read again, grouping
        again = True
    if again:  # (outside the handler: its traceback holds the
        interleaved = True  # first reading's pieces)
        seen_bytes = sum(c[1] for c in scan.chunk_info) or 1
        est = int(path.stat().st_size * max(scan.n_lines, 1) / seen_bytes) + 1
        scan = _RankingScan(
            path, qr, dict(base), chunk_bytes, ties, keep_lines, compat, duplicates, max_docs
        )
        scan.group(scan.chunks(), spill, est)
    out = scan.out

    def cat(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    run = TrecRun(
        str(shown),
        list(scan.qindex.index),
        scan.n_lines,
        cat(out.jq),
        cat(out.jrank),
        cat(out.jrel),
        cat(out.ret_q),
        cat(out.ret_n),
        qr.n_queries,
        qr.n_relevant,
        interleaved=interleaved,
        qrels_q=qr.q,
        qrels_rel=qr.rel,
    )
    if keep_lines:
        run.q = (
            np.concatenate(scan.line_q) if scan.line_q else np.zeros(0, dtype=np.int32)
        ).astype(np.int32)
        run.rank = np.zeros(scan.n_lines, dtype=np.int32)
        for lines, r in scan.rank_parts:
            run.rank[lines] = r
    return run


def read_trec_run(
    path: str | os.PathLike,
    qrels: Mapping[str, Mapping[str, int]] | None = None,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    ties: str = "membench",
) -> TrecRun:
    """Parse a TREC run file (read by :mod:`.read`, ranked here: see both module docstrings),
    keeping per line its query index and rank; with ``qrels``, also the judged lines. Errors
    (wrong field count, unparseable rank or score, non-finite score) name the file and
    line."""
    return _scan_run(path, qrels, chunk_bytes, ties, keep_lines=True)


# --------------------------------------------------------------------------- evaluation


def evaluate_trec(
    run: TrecRun | str | os.PathLike,
    qrels: Mapping[str, Mapping[str, int]] | str | os.PathLike,
    *,
    chunk_bytes: int = CHUNK_BYTES,
) -> dict:
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
