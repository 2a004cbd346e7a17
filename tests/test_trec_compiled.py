"""The compiled TREC reader (membench/trec/_trecscan.c) against the numpy/pyarrow path it
stands in for: the same columns, hashes and docid words for every piece it takes, None for
every piece it must leave to the strict reader, trec_eval's order equal to the lexsort's,
``membench trec-eval`` output identical with and without it, and the one-line notice when
it was not built."""

from __future__ import annotations

import random

import numpy as np
import pytest

from membench.trec import evaluate, parse, read
from membench.trec.trec_eval import main as trec_eval_main
from membench.trec.trec_eval import trec_eval

if parse._trecscan is None:
    pytest.skip("membench.trec._trecscan was not built", allow_module_level=True)


def _chunk(text: str) -> parse._Chunk:
    raw = bytearray(text.encode())
    size = len(raw)
    raw += bytes(16)
    return parse._Chunk(raw, size, 0)


SCORES = [
    "9007199254740993",
    "123456789012345678901234",
    "4.9e-324",
    "1e-400",
    ".5",
    "5.",
    "-0",
    "+0.25",
    "00012.5000",
    "1.7976931348623157e308",
    "2.2250738585072011e-308",
    "0.1",
    "-0.30000000000000004",
    "1E5",
    "1e+022",
    "1e-22",
    "1e23",
    "123.456e-5",
    "0.000000000000000000001",
    "12345678901234567890",
    "0e999999999999",
    "1" * 40 + ".5",
    "0." + "3" * 60,
]


def _spellings(rng: random.Random) -> list[str]:
    toks = list(SCORES)
    toks += [repr(rng.uniform(-1e3, 1e3)) for _ in range(500)]
    toks += [f"{rng.random() * 10 ** rng.randint(-30, 30):.17e}" for _ in range(500)]
    toks += [f"{rng.random():.{rng.randint(0, 19)}f}" for _ in range(500)]
    return toks


@pytest.mark.parametrize("compat", [False, True])
def test_scan_equals_the_python_readers(compat):
    rng = random.Random(3)
    toks = _spellings(rng)
    lines = []
    for i, t in enumerate(toks):
        q = f"q{i // 7}" if i % 50 else f"topic-é-{i}"
        d = "d" * rng.choice([1, 6, 7, 8, 9, 16, 56, 60]) + str(i)[:4]
        r = rng.choice([str(i), f"+{i}", f"-{i}", "2147483647", "-2147483648", "007"])
        lines.append(f"{q} Q0 {d} {r} {t} tag{i % 3}\n")
    ch = _chunk("".join(lines))
    got = parse._parse_c(ch, compat, True)
    assert got is not None
    (qtok, dtok, rank, score, col), dh, qchange, dw = got
    assert col is None
    want = parse._parse_strict("x", _chunk("".join(lines)), compat)
    assert rank.tolist() == want[2].tolist()
    assert score.view(np.uint64).tolist() == want[3].view(np.uint64).tolist()  # bit for bit
    assert [float(t) for t in toks] == score.tolist()
    assert [qtok.token(i) for i in range(len(toks))] == [want[0].token(i) for i in range(len(toks))]
    assert [dtok.token(i) for i in range(len(toks))] == [want[1].token(i) for i in range(len(toks))]
    assert dh.tolist() == parse._hash(dtok.ch, dtok.s, dtok.e).tolist()
    assert qchange.tolist() == parse._changes(qtok.ch, qtok.s, qtok.e).tolist()
    assert dw.tolist() == parse._docid_words(dtok.ch, dtok.s, dtok.e).tolist()
    arrow = parse._parse_arrow(_chunk("".join(lines)), parse._arrow_options(1 << 20))
    if arrow is not None:
        assert score.view(np.uint64).tolist() == arrow[3].view(np.uint64).tolist()


def test_scan_hashes_long_docids_as_the_python_path_does():
    lines = [
        f"q{i % 3} Q0 {'x' * n}{i} {i} 1.5 t\n" for i, n in enumerate([5, 64, 65, 200, 3000, 8])
    ]
    ch = _chunk("".join(lines))
    (qtok, dtok, *_), dh, _, dw = parse._parse_c(ch, False, True)
    assert dh.tolist() == parse._hash(dtok.ch, dtok.s, dtok.e).tolist()
    assert dw is None  # past 64 bytes: no docid words, as _docid_words
    (_, _, *_), _, _, none = parse._parse_c(_chunk("q Q0 d 1 1 t\n"), False, False)
    assert none is None  # not asked for


@pytest.mark.parametrize(
    "text",
    [
        "q1\tQ0 d1 1 0.5 t\n",  # a tab
        "q1 Q0 d1 1 0.5 t\r\n",  # CRLF
        "q1 Q0 d1 1 0.5 t\rq2 Q0 d1 1 0.5 t\n",
        "q1  Q0 d1 1 0.5 t\n",  # two blanks
        " q1 Q0 d1 1 0.5 t\n",  # a leading blank
        "q1 Q0 d1 1 0.5 t \n",  # a trailing blank
        "q1 Q0 d1 1 0.5 t\n\n",  # a blank line
        "q1 Q0 d1 1 0.5\n",  # five fields
        "q1 Q0 d1 1 0.5 t x\n",  # seven
        "q1 Q0 d1 1 inf t\n",
        "q1 Q0 d1 1 nan t\n",
        "q1 Q0 d1 1 1e400 t\n",
        "q1 Q0 d1 1 0x10 t\n",
        "q1 Q0 d1 1 1.5.5 t\n",
        "q1 Q0 d1 1 1e t\n",
        "q1 Q0 d1 1 - t\n",
        "q1 Q0 d1 1 . t\n",
        "q1 Q0 d1 1 1_0 t\n",
        "q1 Q0 d1 1 0.5x t\n",
        "q1 Q0 d1 1 1e5.0 t\n",
        "q1 Q0 d1 1.5 0.5 t\n",
        "q1 Q0 d1 2147483648 0.5 t\n",
        "q1 Q0 d1 -2147483649 0.5 t\n",
        "q1 Q0 d1 + 0.5 t\n",
        "q1 Q0 d1 1 0.5 t\x01\n",
    ],
)
def test_scan_leaves_every_other_layout_to_the_strict_reader(text):
    assert parse._parse_c(_chunk(text), False, True) is None
    assert parse._parse_c(_chunk(text), True, True) is None


def test_scan_leaves_comments_to_the_strict_reader_in_compat_only():
    text = "#q1 Q0 d1 1 0.5 t\n"
    assert parse._parse_c(_chunk(text), True, True) is None
    assert parse._parse_c(_chunk(text), False, True) is not None  # "#q1" is a qid there


@pytest.mark.parametrize("seed", range(6))
def test_order_equals_the_lexsort(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    span = [3, 200, 1 << 30][seed % 3]  # the last: one merge sort, not by query
    q = rng.integers(0, span, n).astype(np.int32)
    score = np.round(rng.random(n), int(rng.integers(0, 3)))
    score[rng.random(n) < 0.1] = -0.0
    score[rng.random(n) < 0.1] = 0.0
    score[rng.random(n) < 0.05] *= -1
    k = int(rng.integers(1, 4))
    dw = rng.integers(0, 3, (n, k)).astype(np.uint64)  # repeated docids too
    dw[:, 0] |= np.uint64(1 << 63)
    want = evaluate._lexsort_trec_eval(q, score, dw)
    assert evaluate._order_by_words(q, score, dw).tolist() == want.tolist()


def _world(tmp_path, layout: str, pad: int = 50) -> tuple:
    """A run of 60 queries x 120 lines in ``layout``, 2-decimal scores (ties), docids of up
    to ``pad`` + 5 bytes, graded qrels."""
    rng = np.random.default_rng(5)
    nq, depth = 60, 120
    q = np.repeat(np.arange(nq), depth)
    doc = rng.permutation(nq * depth)
    score = np.round(1 - (np.tile(np.arange(depth), nq) + rng.random(nq * depth)) / depth, 2)
    order = {
        "sorted": np.arange(len(q)),
        "shuffled": np.lexsort((rng.random(len(q)), q)),
        "shards": np.lexsort((np.arange(len(q)), rng.integers(0, 4, len(q)))),
        "docid": np.argsort(doc),
    }[layout]
    run = tmp_path / f"{layout}.run"
    run.write_text(
        "".join(
            f"{q[i]} Q0 D{doc[i]:x}{'z' * (doc[i] % pad)} 0 {score[i]:.2f} t\n"
            for i in order.tolist()
        )
    )
    qrels = tmp_path / "qrels"
    qrels.write_text(
        "".join(
            f"{i} 0 D{doc[i * depth + j]:x}{'z' * (doc[i * depth + j] % pad)} {j % 3}\n"
            for i in range(nq)
            for j in range(0, depth, 7)
        )
    )
    return qrels, run


@pytest.mark.parametrize(
    "layout,pad", [("sorted", 50), ("shuffled", 50), ("shards", 50), ("docid", 50), ("shards", 90)]
)
def test_output_identical_without_the_compiled_reader(tmp_path, monkeypatch, layout, pad):
    """(pad 90: some docids past 64 bytes, hashed apart and ordered without docid words)"""
    qrels, run = _world(tmp_path, layout, pad)
    measures = ["map", "P.10", "ndcg_cut.10", "recall.1000", "Rprec", "bpref"]
    monkeypatch.setattr(read, "CHUNK_BYTES", 1 << 16)  # several pieces
    calls = []
    real = parse._trecscan.scan
    monkeypatch.setattr(parse._trecscan, "scan", lambda *a: calls.append(1) or real(*a))
    compiled = list(trec_eval(qrels, run, measures, per_query=True, complete=True))
    assert calls  # the compiled reader read it
    sorts = []
    real_order = evaluate._lexsort_trec_eval
    monkeypatch.setattr(
        evaluate, "_lexsort_trec_eval", lambda *a: sorts.append(1) or real_order(*a)
    )
    monkeypatch.setattr(parse, "_trecscan", None)
    calls.clear()
    fallback = list(trec_eval(qrels, run, measures, per_query=True, complete=True))
    assert not calls and bool(sorts) == (pad < 60)  # numpy and pyarrow read it
    assert compiled == fallback
    for ties in ("trec_eval9", "membench"):
        monkeypatch.undo()
        a = list(trec_eval(qrels, run, measures, per_query=True, ties=ties))
        monkeypatch.setattr(parse, "_trecscan", None)
        assert a == list(trec_eval(qrels, run, measures, per_query=True, ties=ties))


def test_a_missing_build_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    qrels, run = _world(tmp_path, "sorted")
    assert trec_eval_main([str(qrels), str(run)]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(parse, "_trecscan", None)
    monkeypatch.setattr(parse, "COMPILED_MISSING", "membench.trec._trecscan not built (x)")
    assert trec_eval_main([str(qrels), str(run)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "membench: note: membench.trec._trecscan not built (x): the run is read with numpy"
    )
