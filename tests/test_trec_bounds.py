"""The TREC readers' bounds (membench.core.bounds: trec_line_bytes, trec_qrels_bytes): a line
longer than the bound is one located error, found after reading at most about that much of it
(a stream without newlines is read in fixed memory); a long docid below the bound is read and
matched like any other. How long these take is measured in bench/bench_metrics.py
(--bounds), not here."""

from __future__ import annotations

import os
import threading
import tracemalloc

import pytest

from membench.cli import main
from membench.core.errors import InputError
from membench.docsite.bounds import all_bounds
from membench.run.files import MAX_TREC_LINE, trec_fields
from membench.trec import MAX_QRELS_BYTES, evaluate_trec, read_trec_run


def test_the_bounds_are_registered():
    names = {b.name: b for b in all_bounds()}
    assert names["trec_line_bytes"].value == MAX_TREC_LINE
    assert names["trec_qrels_bytes"].value == MAX_QRELS_BYTES


def test_dev_zero_as_the_run_is_one_located_error(tmp_path, capsys):
    (tmp_path / "qrels").write_text("q 0 d 1\n")
    assert main(["trec-eval", str(tmp_path / "qrels"), "/dev/zero"]) == 2
    err = capsys.readouterr().err
    assert "membench: /dev/zero:1: LINE_TOO_LONG" in err and "Traceback" not in err
    assert main(["trec-eval", "/dev/zero", str(tmp_path / "qrels")]) == 2
    assert "/dev/zero:1: LINE_TOO_LONG" in capsys.readouterr().err


def test_a_1gb_line_is_found_in_fixed_memory(tmp_path):
    """A 1 GiB second line (sparse: no disk used) ends after a few MiB were read."""
    p = tmp_path / "run"
    with open(p, "wb") as f:
        f.write(b"q Q0 d 1 1.0 t\n")
        f.truncate(15 + (1 << 30))
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as e:
            read_trec_run(p, {"q": {"d": 1}})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (e.value.line, e.value.rule) == (2, "LINE_TOO_LONG")
    assert peak < 4 * MAX_TREC_LINE + (32 << 20), peak
    # the line-by-line reader (qrels, import-run) holds the same bound
    with pytest.raises(InputError) as e:
        list(trec_fields(p, "qid Q0 docid rank score tag"))
    assert (e.value.line, e.value.rule) == (2, "LINE_TOO_LONG")


def test_a_stream_without_newline_is_one_located_error(tmp_path):
    """A pipe that never sends a newline: the error names the pipe and line 1, after the
    bound (the writer is then cut off)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sent = []

    def writer():
        block = b"x" * (1 << 20)
        try:
            with open(fifo, "wb") as f:
                for _ in range(1024):  # up to 1 GiB
                    f.write(block)
                    sent.append(len(block))
        except BrokenPipeError:
            pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    with pytest.raises(InputError) as e:
        evaluate_trec(fifo, {"q": {"d": 1}})
    t.join(timeout=30)
    assert (e.value.file, e.value.line, e.value.rule) == (str(fifo), 1, "LINE_TOO_LONG")
    assert sum(sent) < 4 * MAX_TREC_LINE + (64 << 20)


def test_a_run_read_from_a_pipe_equals_the_file(tmp_path):
    lines = "".join(f"q{i % 7} Q0 d{i} {i} {1000 - i} t\n" for i in range(2000))
    (tmp_path / "run").write_text(lines)
    qrels = {f"q{k}": {f"d{k * 11}": 1, f"d{k * 13 + 5}": 2} for k in range(7)}
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    t = threading.Thread(target=lambda: fifo.write_text(lines), daemon=True)
    t.start()
    got = evaluate_trec(fifo, qrels)
    t.join(timeout=30)
    want = evaluate_trec(tmp_path / "run", qrels)
    assert got["mean"] == want["mean"] and got["n"] == 7


@pytest.mark.parametrize("chunk", [1 << 20, 8 << 20])
def test_a_1mib_docid_is_read_and_matched(tmp_path, chunk):
    """A 1 MiB docid (in the run, the qrels and repeated: a duplicate to confirm on the
    bytes) is read like any docid, at its rank; queries interleaved, so the file is grouped
    on disk too. Another docid equal to it but for its last byte is not a match."""
    big = "x" * (1 << 20)
    near = big[:-1] + "y"
    lines = [f"q{i % 5} Q0 d{i} {i} {500 - i} t\n" for i in range(400)]
    lines.insert(17, f"q1 Q0 {big} 1 250.5 t\n")  # q1 lines 1, 6, 11 ...: rank 50
    lines.insert(3, f"q2 Q0 {near} 1 1000 t\n")  # first of q2, not judged
    lines.append(f"q1 Q0 {big} 1 0.1 t\n")  # a later duplicate: ignored
    (tmp_path / "run").write_text("".join(lines))
    (tmp_path / "qrels").write_text(f"q1 0 {big} 1\nq2 0 d2 1\n")
    res = evaluate_trec(
        read_trec_run(tmp_path / "run", tmp_path / "qrels", chunk_bytes=chunk), tmp_path / "qrels"
    )
    scores_q1 = sorted([500 - i for i in range(400) if i % 5 == 1] + [250.5], reverse=True)
    rank_big = scores_q1.index(250.5) + 1
    assert res["queries"] == ["q1", "q2"]
    assert res["per_query"]["mrr"].tolist() == [1 / rank_big, 1 / 2]


def test_a_qrels_larger_than_its_bound_is_refused(tmp_path, monkeypatch):
    import membench.trec.read as trec

    monkeypatch.setattr(trec, "MAX_QRELS_BYTES", 10)
    (tmp_path / "qrels").write_text("q 0 d 1\nq 0 e 1\n")
    (tmp_path / "run").write_text("q Q0 d 1 1 t\n")
    with pytest.raises(InputError) as e:
        evaluate_trec(tmp_path / "run", tmp_path / "qrels")
    assert e.value.rule == "TOO_LARGE" and e.value.file == str(tmp_path / "qrels")
