"""The vectorised TREC reader against a plain Python reference: messy whitespace, odd score
spellings, chunk boundaries, duplicates, unsorted and non-contiguous queries, forced hash
collisions, and located errors."""

from __future__ import annotations

import random

import numpy as np
import pytest

from membench.core.errors import InputError
from membench.metrics.ranking import FirstHits, rank_measures
from membench.trec import (
    evaluate_trec,
    parse,
    read,
    read_trec_qrels,
    read_trec_run,
    write_trec_qrels,
    write_trec_run,
)


def reference(lines: list[tuple[str, str, int, float]], qrels: dict[str, dict[str, int]]) -> dict:
    """Group by qid, order by (score desc, rank asc, line order), drop repeated docids."""
    by_q: dict[str, list[tuple[int, str, int, float]]] = {}
    for i, (q, d, r, s) in enumerate(lines):
        by_q.setdefault(q, []).append((i, d, r, s))
    qids = [q for q, docs in qrels.items() if any(v >= 1 for v in docs.values())]
    per_query, n_gold = [], []
    for q in qids:
        rows = sorted(by_q.get(q, []), key=lambda x: (-x[3], x[2], x[0]))
        ranked = list(dict.fromkeys(d for _, d, _, _ in rows))
        rel = [d for d, v in qrels[q].items() if v >= 1]
        per_query.append([ranked.index(d) + 1 if d in ranked else 0 for d in rel])
        n_gold.append(len(rel))
    return {"queries": qids, "per_query": rank_measures(FirstHits.from_lists(per_query, n_gold))}


SCORE_FORMS = [
    lambda x: f"{x:.6f}",
    lambda x: repr(x),
    lambda x: f"{x:e}",
    lambda x: f"{x:.3E}",
    lambda x: f"+{abs(x):.2f}",
    lambda x: f"{x:.0f}.",
    lambda x: f"{x:.25f}",
    lambda x: f"{int(x)}",
    lambda x: f"{x:.12g}",
    lambda x: f"{x * 1e-30:.6e}",
]


def messy_run(rng: random.Random, n_queries: int = 30) -> tuple[str, list, dict]:
    text, lines = [], []
    qids = [f"q{i}" if i % 3 else f"query:{i}:{'x' * rng.randint(0, 40)}" for i in range(n_queries)]
    blocks = []
    for q in qids:
        docs = [
            f"d{rng.randrange(60)}" + "y" * rng.choice([0, 0, 3, 17])
            for _ in range(rng.randint(0, 50))
        ]
        blocks.append((q, docs))
    # split some queries into two non-adjacent blocks
    extra = [(q, docs[len(docs) // 2 :]) for q, docs in blocks[::4]]
    blocks = [
        (q, docs[: len(docs) // 2]) if i % 4 == 0 else (q, docs)
        for i, (q, docs) in enumerate(blocks)
    ]
    blocks += extra
    for q, docs in blocks:
        for rank, d in enumerate(docs, 1):
            score = rng.choice([rng.uniform(-5, 5), float(rng.randrange(3)), rng.uniform(0, 1e6)])
            s_txt = rng.choice(SCORE_FORMS)(score)
            s = float(s_txt)
            r = rng.choice([rank, rank, rng.randrange(100)])
            sep = lambda: rng.choice([" ", " ", "\t", "  ", " \t "])
            lead = rng.choice(["", "", " "])
            end = rng.choice(["\n", "\n", "\r\n", " \n"])
            text.append(f"{lead}{q}{sep()}Q0{sep()}{d}{sep()}{r}{sep()}{s_txt}{sep()}tag{end}")
            lines.append((q, d, r, s))
    qrels = {}
    for q in qids + ["q_never_run"]:
        qrels[q] = {
            f"d{rng.randrange(60)}" + rng.choice(["", "yyy"]): rng.choice([0, 1, 1, 2])
            for _ in range(rng.randint(1, 6))
        }
    return "".join(text), lines, qrels


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("chunk", [64, 997, 1 << 20])
def test_fast_reader_equals_reference(tmp_path, seed, chunk):
    rng = random.Random(seed)
    text, lines, qrels = messy_run(rng)
    if seed % 2:
        text = text.rstrip("\n")  # no final newline
    path = tmp_path / "run.trec"
    path.write_text(text)
    got = evaluate_trec(read_trec_run(path, qrels, chunk_bytes=chunk), qrels)
    want = reference(lines, qrels)
    assert got["queries"] == want["queries"]
    for m, v in want["per_query"].items():
        assert got["per_query"][m].tolist() == pytest.approx(v.tolist(), abs=1e-12), m


def test_forced_hash_collisions_change_nothing(tmp_path, monkeypatch):
    rng = random.Random(9)
    text, _, qrels = messy_run(rng)
    path = tmp_path / "run.trec"
    path.write_text(text)
    honest = evaluate_trec(path, qrels)
    real = parse._hash
    colliding = lambda ch, s, e: real(ch, s, e) & np.uint64(3)  # noqa: E731
    monkeypatch.setattr(parse, "_hash", colliding)  # qids (and short tokens of a long one)
    monkeypatch.setattr(read, "_hash", colliding)  # the run's and the qrels' docids
    colliding = evaluate_trec(path, qrels)
    for m in honest["per_query"]:
        assert colliding["per_query"][m].tolist() == honest["per_query"][m].tolist()


def test_duplicates_unsorted_and_split_queries(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text(
        "q1 Q0 x 1 0.5 t\n"
        "q2 Q0 g 1 3.0 t\n"
        "q1 Q0 x 2 0.9 t\n"  # repeated docid, higher score: counts here (rank 1)
        "q1 Q0 g 3 0.1 t\n"
        "q1 Q0 y 4 0.9 t\n"  # ties with x at 0.9; rank column 4 > 2: after x
        "q2 Q0 h 2 3.0 t\n"
    )
    run = read_trec_run(path, {"q1": {"g": 1}, "q2": {"h": 1}})
    assert run.rank.tolist() == [0, 1, 1, 3, 2, 2]
    res = evaluate_trec(run, {"q1": {"g": 1}, "q2": {"h": 1}})
    assert res["per_query"]["mrr"].tolist() == [1 / 3, 0.5]


def test_float_fast_path_is_exact():
    rng = random.Random(1)
    toks = []
    for _ in range(4000):
        x = rng.choice(
            [
                rng.uniform(-1e3, 1e3),
                rng.random() * 10 ** rng.randint(-30, 30),
                float(rng.randrange(10**6)),
            ]
        )
        toks.append(rng.choice(SCORE_FORMS)(x))
    toks += [
        "0",
        "-0",
        "+0.0",
        "1e22",
        "1e23",
        "9007199254740993",
        "0.1",
        "1.",
        ".5",
        "-.5e-3",
        "123456789012345678901234",
        "1e-22",
        "4.9e-324",
        "1.7976931348623157e308",
    ]
    blob = bytearray(" ".join(toks).encode() + b"\n" + bytes(16))
    lens = [len(t) for t in toks]
    s = np.concatenate([[0], np.cumsum(np.array(lens) + 1)[:-1]])
    ch = parse._Chunk(blob, len(blob) - 16, 0)
    val, exact = parse._parse_floats(ch, s, s + np.array(lens))
    assert exact.mean() > 0.5
    for t, v, ok in zip(toks, val.tolist(), exact.tolist()):
        if ok:
            assert v == float(t) and np.signbit(v) == np.signbit(float(t)), t


@pytest.mark.parametrize(
    "content,line,field",
    [
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4\n", 2, None),
        ("q1 Q0 d1 1 0.5 t\n\nq1 Q0 d2 2 0.4 t\n", 2, None),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 abc t\n", 2, "score"),
        ("q1 Q0 d1 1 nan t\n", 1, "score"),
        ("q1 Q0 d1 1 inf t\n", 1, "score"),
        ("q1 Q0 d1 1.5 0.5 t\n", 1, "rank"),
        ("q1 Q0 d1 99999999999 0.5 t\n", 1, "rank"),
    ],
)
def test_located_errors(tmp_path, content, line, field):
    path = tmp_path / "run.trec"
    path.write_text(content)
    with pytest.raises(InputError) as e:
        read_trec_run(path)
    assert e.value.line == line and e.value.field == field and e.value.rule == "TREC"


def test_error_line_numbers_across_chunks(tmp_path):
    good = "".join(f"q{i % 7} Q0 d{i} {i} {1000 - i}.5 run\n" for i in range(500))
    path = tmp_path / "run.trec"
    path.write_text(good + "q1 Q0 broken\n" + good)
    with pytest.raises(InputError) as e:
        read_trec_run(path, chunk_bytes=256)
    assert e.value.line == 501


def test_round_trip_and_edges(tmp_path):
    run = {"a": [("d1", 2.0), ("d2", 1.5)], "b": [("d3", 0.25)]}
    qrels = {"a": {"d2": 1, "d9": 0}, "b": {"d3": 0}, "c": {"d1": 1}}
    write_trec_run(tmp_path / "r", run)
    write_trec_qrels(tmp_path / "q", qrels)
    assert read_trec_qrels(tmp_path / "q") == qrels
    res = evaluate_trec(tmp_path / "r", tmp_path / "q")
    assert res["queries"] == ["a", "c"]  # "b" has no relevant document
    assert res["per_query"]["mrr"].tolist() == [0.5, 0.0]  # "c" has no run lines
    assert res["mean"]["mrr"] == 0.25 and res["n"] == 2
    (tmp_path / "empty").write_text("")
    empty = evaluate_trec(tmp_path / "empty", qrels)
    assert empty["per_query"]["recall@10"].tolist() == [0.0, 0.0]
    (tmp_path / "q2").write_text("a 0 d1 1\na 0 d1 0\n")
    with pytest.raises(InputError, match="judged twice"):
        read_trec_qrels(tmp_path / "q2")


def test_long_lines_bigger_than_the_chunk(tmp_path):
    q = "q" * 300
    path = tmp_path / "run.trec"
    path.write_text(f"{q} Q0 {'d' * 500} 1 2.0 t\n{q} Q0 e 2 1.0 t\n")
    res = evaluate_trec(read_trec_run(path, {q: {"e": 1}}, chunk_bytes=32), {q: {"e": 1}})
    assert res["per_query"]["mrr"].tolist() == [0.5]


def _clean_run(rng: random.Random, n_queries: int = 25) -> tuple[str, list, dict]:
    """The usual layout (single spaces, \\n), so that pyarrow's reader takes it, with every
    score spelling the strict reader takes and arrow parses too (17 digits, exponents, signs,
    leading zeros, ".5", "5.")."""
    forms = [
        lambda x: repr(x),
        lambda x: f"{x:.17g}",
        lambda x: f"{x:e}",
        lambda x: f"{x:.3E}",
        lambda x: f"{x:.0f}.",
        lambda x: f"{x:.25f}",
        lambda x: f"{x:012.4f}",
        lambda x: f"{x * 1e-30:.6e}",
        lambda x: f"{x:.2f}".replace("0.", ".", 1),
        lambda x: f"{x:+.5f}",
    ]
    text, lines = [], []
    qids = [f"q{i}" if i % 2 else f"topic-{i}-é" for i in range(n_queries)]
    for q in qids:
        for rank in range(1, rng.randint(0, 40) + 1):
            d = f"d{rng.randrange(50)}"
            x = rng.choice([rng.uniform(-5, 5), float(rng.randrange(3)), rng.uniform(0, 1e6)])
            tok = rng.choice(forms)(x)
            r = rng.choice([rank, rank, -rank, rng.randrange(100)])
            r_tok = rng.choice([str(r), f"{r:05d}"]) if r >= 0 else str(r)
            text.append(f"{q} Q0 {d} {r_tok} {tok} run\n")
            lines.append((q, d, r, float(tok)))
    qrels = {q: {f"d{rng.randrange(50)}": rng.choice([0, 1, 2]) for _ in range(5)} for q in qids}
    return "".join(text), lines, qrels


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_arrow_path_equals_reference_and_is_taken(tmp_path, monkeypatch, seed, compiled):
    """The fast paths: the compiled reader (membench/trec/_trecscan.c) where it was built,
    and pyarrow's CSV reader without it."""
    if compiled and parse._trecscan is None:
        pytest.skip("membench.trec._trecscan was not built")
    if not compiled:
        monkeypatch.setattr(parse, "_trecscan", None)
    rng = random.Random(100 + seed)
    text, lines, qrels = _clean_run(rng)
    path = tmp_path / "run.trec"
    path.write_text(text)
    strict_calls, arrow_calls = [], []
    real = read._parse_strict
    monkeypatch.setattr(read, "_parse_strict", lambda p, ch: strict_calls.append(1) or real(p, ch))
    real_arrow = read._parse_arrow
    monkeypatch.setattr(read, "_parse_arrow", lambda *a: arrow_calls.append(1) or real_arrow(*a))
    got = evaluate_trec(read_trec_run(path, qrels, chunk_bytes=4096), qrels)
    assert not strict_calls  # every chunk went through a fast path
    assert bool(arrow_calls) != compiled
    want = reference(lines, qrels)
    assert got["queries"] == want["queries"]
    for m, v in want["per_query"].items():
        assert got["per_query"][m].tolist() == pytest.approx(v.tolist(), abs=1e-12), m


def test_arrow_scores_are_float_exact():
    rng = random.Random(4)
    toks = [repr(rng.uniform(-1e3, 1e3)) for _ in range(3000)]
    toks += [f"{rng.random() * 10 ** rng.randint(-30, 30):.17e}" for _ in range(3000)]
    toks += [
        "9007199254740993",
        "123456789012345678901234",
        "4.9e-324",
        "1e-400",
        ".5",
        "5.",
        "-0",
        "00012.5000",
        "1.7976931348623157e308",
        "2.2250738585072011e-308",
    ]
    raw = bytearray("".join(f"q Q0 d{i} {i} {t} x\n" for i, t in enumerate(toks)).encode())
    size = len(raw)
    raw += bytes(16)
    parsed = parse._parse_arrow(parse._Chunk(raw, size, 0), parse._arrow_options(size + 64))
    assert parsed is not None
    score = parsed[3]
    for t, v in zip(toks, score.tolist()):
        assert v == float(t) and np.signbit(v) == np.signbit(float(t)), t


@pytest.mark.parametrize(
    "content,line,field",
    [
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 +2 0.4 t\n", None, None),  # +2: strict path, accepted
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 Infinity t\n", 2, "score"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 1e400 t\n", 2, "score"),
        ("q1 Q0 d1 1 0.5 t\nq1  Q0 d2 2 0.4 t\n", None, None),  # two blanks: strict, accepted
        ("q1 Q0 d1 1 0.5 t\nq1 Q0  2 0.4 t\n", 2, None),  # an empty field
        ('q1 Q0 d1 1 0.5 t\nq1 Q0 "d2 2 0.4 t\n', None, None),  # a quote is a plain byte
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2147483648 0.4 t\n", 2, "rank"),
        # a lone CR: arrow ends a row there, the strict reader takes it for a blank (12 fields)
        ("q1 Q0 d1 1 0.5 t\rq1 Q0 d2 2 0.4 t\n", 1, None),
        ("q1  d1 1 0.5 t\n", 1, None),  # empty Q0 field
        ("q1 Q0 d1 1 0.5 \n", 1, None),  # empty tag field
    ],
)
def test_fast_path_refusals_are_located_or_accepted_as_strict(tmp_path, content, line, field):
    path = tmp_path / "run.trec"
    path.write_text(content)
    if line is None:
        run = read_trec_run(path)
        assert run.n_lines == 2 and run.rank.tolist() == [1, 2]
        return
    with pytest.raises(InputError) as e:
        read_trec_run(path)
    assert e.value.line == line and e.value.field == field


def test_interleaved_queries_go_through_disk_and_agree(tmp_path):
    rng = random.Random(11)
    text, lines, qrels = _clean_run(rng, 40)
    order = list(range(len(lines)))
    rng.shuffle(order)
    all_lines = text.splitlines(keepends=True)
    path = tmp_path / "run.trec"
    path.write_text("".join(all_lines[i] for i in order))
    run = read_trec_run(path, qrels, chunk_bytes=2048)
    assert run.interleaved
    got = evaluate_trec(run, qrels)
    want = reference([lines[i] for i in order], qrels)
    for m, v in want["per_query"].items():
        assert got["per_query"][m].tolist() == pytest.approx(v.tolist(), abs=1e-12), m
    from_path = evaluate_trec(path, qrels)
    assert from_path["mean"] == got["mean"]


@pytest.mark.parametrize("held", [None, 32 << 10, 1024])
@pytest.mark.parametrize("layout", ["shards", "shuffled"])
def test_grouping_held_in_memory_spilled_or_read_again_agree(tmp_path, monkeypatch, held, layout):
    """Non-contiguous queries are grouped in memory while the lines fit MAX_HELD_BYTES
    (None: the default), go to part files when they outgrow it after the first query came
    back (32 KiB: the 34 KB of lines outgrow it, the first shard fits), and are read a
    second time when it was outgrown before (1 KiB); parts of a few
    hundred lines. Every way gives the reference ranks, the rank column included."""
    rng = random.Random(5)
    text, lines, qrels = _clean_run(rng, 60)
    all_lines = text.splitlines(keepends=True)
    if layout == "shards":  # 8 shards, each in query order: queries come back late
        shard = [rng.randrange(8) for _ in lines]
        order = [i for s in range(8) for i in range(len(lines)) if shard[i] == s]
    else:
        order = list(range(len(lines)))
        rng.shuffle(order)
    # queries the qrels do not know, met after the grouping started, one coming back: their
    # parts wrap around (ranked all the same)
    for k in range(60):
        q, d, r, x = f"zz{k % 7}", f"d{k % 13}", k % 9, float(k % 11)
        lines.append((q, d, r, x))
        all_lines.append(f"{q} Q0 {d} {r} {x!r} run\n")
        order.append(len(lines) - 1)
    order.insert(0, order.pop())
    path = tmp_path / "run.trec"
    path.write_text("".join(all_lines[i] for i in order))
    want = reference([lines[i] for i in order], qrels)
    if held is not None:
        monkeypatch.setattr(read, "MAX_HELD_BYTES", held)
    monkeypatch.setattr(read, "_PART_LINES", 300)
    run = read_trec_run(path, qrels, chunk_bytes=4096)
    assert run.interleaved
    got = evaluate_trec(run, qrels)
    for m, v in want["per_query"].items():
        assert got["per_query"][m].tolist() == pytest.approx(v.tolist(), abs=1e-12), m
    # per line: the rank column of the reference order (duplicates 0)
    by_q: dict[str, list[int]] = {}
    for k, i in enumerate(order):
        by_q.setdefault(lines[i][0], []).append(k)
    expect = np.zeros(len(order), dtype=np.int64)
    for q, ks in by_q.items():
        ks.sort(key=lambda k: (-lines[order[k]][3], lines[order[k]][2], k))
        seen, r = set(), 0
        for k in ks:
            d = lines[order[k]][1]
            if d not in seen:
                seen.add(d)
                r += 1
                expect[k] = r
    assert run.rank.tolist() == expect.tolist()
