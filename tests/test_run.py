"""The runner: protocol checks, the frozen test split, and resuming after a crash."""

from __future__ import annotations

import json

import pytest

from membench.cli import main
from membench.contract.protocol import Atom, Result
from membench.core.errors import MembenchError
from membench.run.runner import ProtocolError, load_split, run_system
from membench.systems import make_system


def lines(path):
    return [json.loads(l) for l in path.read_text().splitlines()]


class Crashing:
    """Wraps a system and dies after ``after`` queries, like a killed process."""

    def __init__(self, inner, after):
        self.inner, self.after, self.n = inner, after, 0
        self.name = inner.name
        self.card = getattr(inner, "card", None)  # the run it resumes is the inner's

    def config(self):
        return self.inner.config()

    def ingest(self, items, root):
        return self.inner.ingest(items, root)

    def query(self, q, scope, as_of):
        self.n += 1
        if self.n > self.after:
            raise KeyboardInterrupt("killed")
        return self.inner.query(q, scope, as_of)


def test_resume_after_crash_answers_every_query_once(built, corpus_root, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_system(
            Crashing(make_system("random"), 40), built.out, "dev", out, corpus_root, limit=15
        )
    first = lines(out / "run.jsonl")
    assert len(first) == 40
    assert json.loads((out / "meta.json").read_text())["status"] == "running"
    # a torn last line, as a crash mid-write leaves it
    with open(out / "run.jsonl", "a") as f:
        f.write('{"query_id": "pdf')
    meta = run_system(make_system("random"), built.out, "dev", out, corpus_root, limit=15)
    rows = lines(out / "run.jsonl")
    ids = [r["query_id"] for r in rows]
    expected = [r.query_id for r in load_split(built.out, "dev", limit=15).records]
    assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids)) == meta["queries"]
    assert rows[:40] == first  # nothing already written was lost or rewritten
    assert meta["status"] == "complete" and meta["resumed"] == 1


def test_queries_come_in_the_seeded_order_and_subsets_keep_it(built, corpus_root, tmp_path):
    from membench.sets.select import ORDER_SEED, presentation_order

    full = load_split(built.out, "dev")
    ids = [r.query_id for r in full.records]
    assert ids == presentation_order(ids) and ids != sorted(ids)
    assert len({r.modality for r in full.records[:20]}) > 1  # modalities interleaved
    sub = [r.query_id for r in load_split(built.out, "dev", limit=7).records]
    assert sub == [q for q in ids if q in set(sub)]  # same relative order
    meta = run_system(make_system("random"), built.out, "dev", tmp_path / "r", corpus_root, limit=7)
    assert meta["order"]["seed"] == ORDER_SEED and "sha256" in meta["order"]["rule"]
    assert [r["query_id"] for r in lines(tmp_path / "r" / "run.jsonl")] == sub


def test_a_limit_run_ingests_only_the_holders_it_asks(built, corpus_root, tmp_path):
    data = load_split(built.out, "dev", limit=3)
    asked = {r.scope.holder for r in data.records}
    assert {it.holder for it in data.items} == asked
    assert len(data.items) < len(load_split(built.out, "dev").items)
    meta = run_system(make_system("random"), built.out, "dev", tmp_path / "r", corpus_root, limit=3)
    assert meta["items"] == len(data.items) and "holders of the selected" in meta["memory"]


class Peeking:
    """Asks for the records like a test double, without being one."""

    name = "peeking"

    def config(self):
        return {}

    def bind(self, ctx):
        self.records = ctx.records

    def ingest(self, items, root):
        return []

    def query(self, q, scope, as_of):
        return Result(hits=[])


def test_only_registered_test_doubles_see_gold(built, corpus_root, tmp_path, capsys):
    from membench.systems.doubles import Oracle

    class SubOracle(Oracle):
        pass

    for system in (Peeking(), SubOracle()):
        with pytest.raises(MembenchError, match="only the registered test doubles"):
            run_system(system, built.out, "dev", tmp_path / system.name, corpus_root, limit=1)
        assert not (tmp_path / system.name / "run.jsonl").exists()
    m = run_system(make_system("oracle"), built.out, "dev", tmp_path / "o", corpus_root, limit=1)
    assert m["sees_gold"] is True
    m = run_system(make_system("random"), built.out, "dev", tmp_path / "r", corpus_root, limit=1)
    assert m["sees_gold"] is False


def test_resume_refuses_a_different_system(built, corpus_root, tmp_path):
    out = tmp_path / "run"
    run_system(make_system("random"), built.out, "dev", out, corpus_root, limit=2)
    with pytest.raises(MembenchError, match="different system"):
        run_system(make_system("oracle"), built.out, "dev", out, corpus_root, limit=2)


def test_test_split_needs_final(built, corpus_root, tmp_path, monkeypatch, capsys):
    with pytest.raises(MembenchError, match="frozen"):
        run_system(make_system("random"), built.out, "test", tmp_path / "t", corpus_root)
    code = main(
        [
            "run",
            "--system",
            "random",
            "--split",
            "test",
            "--sets",
            str(built.out),
            "--out",
            str(tmp_path / "t"),
        ]
    )
    assert code == 2 and "--final" in capsys.readouterr().err
    log = tmp_path / "access.jsonl"
    monkeypatch.setattr("membench.run.runner.TEST_ACCESS_LOG", log)
    meta = run_system(
        make_system("random"), built.out, "test", tmp_path / "t2", corpus_root, limit=1, final=True
    )
    assert meta["final"] is True
    assert json.loads(log.read_text())["system"] == "random"


class WholeFile:
    name = "wholefile"

    def config(self):
        return {}

    def ingest(self, items, root):
        it = next(i for i in items if i.modality == "code")
        return [
            Atom(
                "x1",
                it.source_id,
                "code",
                it.holder,
                it.observed_at,
                {
                    "path": it.meta["upstream_path"],
                    "line_start": 1,
                    "line_end": max(it.meta["lines"], 201),
                },
            )
        ]

    def query(self, q, scope, as_of):
        return Result([])


def test_atom_over_the_cap_is_rejected(built, corpus_root, tmp_path):
    with pytest.raises(ProtocolError, match="cap is 200"):
        run_system(
            WholeFile(), built.out, "dev", tmp_path / "w", corpus_root, modalities=["code"], limit=1
        )


class Unknown(WholeFile):
    name = "unknownhit"

    def ingest(self, items, root):
        return []

    def query(self, q, scope, as_of):
        return Result([("nope", 1.0)])


def test_hit_never_ingested_is_rejected(built, corpus_root, tmp_path):
    with pytest.raises(ProtocolError, match="never reported at ingest"):
        run_system(
            Unknown(), built.out, "dev", tmp_path / "u", corpus_root, modalities=["pdf"], limit=1
        )


def test_unknown_system_is_a_clear_error(capsys):
    assert main(["run", "--system", "nosuch"]) == 2
    assert "unknown system 'nosuch'" in capsys.readouterr().err


def test_module_class_systems_load(built, corpus_root, tmp_path):
    s = make_system("membench.systems.doubles:RandomSystem", {"seed": 3})
    assert s.config()["seed"] == 3


def test_bad_set_line_names_file_line_field(built, tmp_path, capsys):
    import shutil

    sets = tmp_path / "sets"
    shutil.copytree(built.out, sets)
    p = sets / "video.jsonl"
    rows = p.read_text().splitlines()
    row = json.loads(rows[2])
    row["as_of"] = 17
    rows[2] = json.dumps(row)
    p.write_text("\n".join(rows) + "\n")
    code = main(["run", "--system", "random", "--sets", str(sets), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{p}:3: SCHEMA: field as_of:" in err


@pytest.mark.parametrize("every, syncs", [(0.0, 6), (1e9, 1)])
def test_run_lines_are_fsynced_by_the_clock_and_at_the_end(tmp_path, monkeypatch, every, syncs):
    """Every line is written and flushed as it is answered (the keeper's LineFile, which the
    runner's loop hands each line to); fsync comes once FSYNC_SECONDS have passed since the
    last one, and at the end (0 s: after each of the 5 lines and at the end; a long interval:
    at the end only)."""
    import os
    from datetime import datetime, timezone
    from types import SimpleNamespace

    from membench.run import lines, runner

    calls: list[int] = []
    real = os.fsync

    def counting(fd):
        calls.append(os.path.getsize(tmp_path / "run.jsonl"))
        real(fd)

    class Echo:
        name = "echo"

        def query(self, question, scope, as_of):
            return Result(hits=[(question, 1.5)], cartridge=[question])

    monkeypatch.setattr(lines, "FSYNC_SECONDS", every)
    monkeypatch.setattr(lines.os, "fsync", counting)
    at = datetime(2024, 1, 1, tzinfo=timezone.utc)
    todo = [SimpleNamespace(qid=f"q{i}", question=f"a{i}", scope=None, as_of=at) for i in range(5)]
    sink = lines.LineFile(tmp_path / "run.jsonl")
    runner._answer(Echo(), todo, 0, 5, {f"a{i}" for i in range(5)}, sink)
    sink.close()
    assert len(calls) == syncs
    assert calls == sorted(calls) and calls[-1] == (tmp_path / "run.jsonl").stat().st_size
    assert [
        json.loads(l)["query_id"] for l in (tmp_path / "run.jsonl").read_text().splitlines()
    ] == [f"q{i}" for i in range(5)]


def test_a_run_without_the_c_hit_check_says_so_and_writes_the_same_lines(
    built, corpus_root, tmp_path, monkeypatch, capsys
):
    from membench.run import runner

    run_system(make_system("random"), built.out, "dev", tmp_path / "c", corpus_root, limit=3)
    assert "membench: note:" not in capsys.readouterr().err
    monkeypatch.setattr(runner, "plain_pairs", runner._plain_pairs_py)
    monkeypatch.setattr(runner, "HIT_CHECK_MISSING", "membench.run._hitcheck not built (x)")
    run_system(make_system("random"), built.out, "dev", tmp_path / "py", corpus_root, limit=3)
    err = capsys.readouterr().err
    assert (
        "membench: note: membench.run._hitcheck not built (x): the hits are checked in "
        "Python instead" in err
    )
    strip = [
        [
            {k: v for k, v in json.loads(l).items() if k != "latency_ms"}
            for l in (tmp_path / d / "run.jsonl").read_text().splitlines()
        ]
        for d in ("c", "py")
    ]
    assert strip[0] == strip[1] and len(strip[0]) > 3
