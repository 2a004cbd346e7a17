"""What membench writes stays in the output it was named: a symlink or a FIFO where a run file,
a lock or an output belongs is one located error (NOT_A_FILE), never followed (truncating a
symlinked lock emptied the file it pointed to) and never waited on (a FIFO run.jsonl blocked
a resume). Each case checks that the file a symlink points to is untouched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_world import cli_args, membench_cmd, subprocess_env, write_world

from membench.cli import main
from membench.core.atomic import atomic_write_text, open_append, open_regular, refuse_special
from membench.core.errors import InputError
from membench.core.lock import LOCK_NAME, raise_if_locked, run_dir_lock

FIX_RUN = Path(__file__).parent / "fixtures" / "metrics" / "run_small"
PRECIOUS = "precious: must never be truncated\n"


@pytest.fixture(autouse=True)
def _quiet_progress(monkeypatch):
    monkeypatch.setenv("MEMBENCH_PROGRESS", "quiet")


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path / "w")


@pytest.fixture
def precious(tmp_path) -> Path:
    p = tmp_path / "outside" / "precious.txt"
    p.parent.mkdir()
    p.write_text(PRECIOUS)
    return p


def _run(world, out, system="random"):
    return main(["run", "--system", system, *cli_args(world), "--out", str(out)])


def _fixture_run(tmp_path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(FIX_RUN, d)
    meta = json.loads((d / "meta.json").read_text())
    meta["sets_dir"] = str(FIX_RUN / "sets")
    (d / "meta.json").write_text(json.dumps(meta))
    return d


# --------------------------------------------------------------------------- the lock


@pytest.mark.parametrize("command", ["metrics", "run"])
def test_a_symlinked_lock_is_refused_and_its_target_untouched(
    world, tmp_path, precious, command, capsys
):
    d = _fixture_run(tmp_path) if command == "metrics" else tmp_path / "run"
    d.mkdir(exist_ok=True)
    (d / LOCK_NAME).symlink_to(precious)
    code = main(["metrics", str(d)]) if command == "metrics" else _run(world, d)
    err = capsys.readouterr().err
    assert code == 2 and f"{d / LOCK_NAME}: NOT_A_FILE: is a symlink (to {precious})" in err
    assert precious.read_text() == PRECIOUS
    assert len(err.strip().splitlines()) == 1


def test_a_fifo_lock_is_refused_without_waiting(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    os.mkfifo(d / LOCK_NAME)
    with pytest.raises(InputError, match="NOT_A_FILE: is a FIFO"):
        with run_dir_lock(d):
            pass
    with pytest.raises(InputError, match="NOT_A_FILE: is a FIFO"):
        raise_if_locked(d)  # a reader's check: O_RDONLY on a FIFO would block


# --------------------------------------------------------------------------- run files


@pytest.mark.parametrize("name", ["run.jsonl", "meta.json", "atoms.jsonl", "metrics.json"])
def test_a_symlinked_run_file_is_refused_before_anything_is_written(
    world, tmp_path, precious, name, capsys
):
    out = tmp_path / "run"
    assert _run(world, out) == 0  # a complete run, then one file replaced
    (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(precious)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and not p.is_symlink()}
    assert _run(world, out) == 2
    err = capsys.readouterr().err
    assert f"{out / name}: NOT_A_FILE: is a symlink" in err, err
    assert precious.read_text() == PRECIOUS
    assert {
        p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and not p.is_symlink()
    } == before


def test_resume_does_not_write_through_a_symlinked_run_jsonl(world, tmp_path, precious):
    """An interrupted run whose run.jsonl became a symlink to another file with a torn last
    line: the resume would have cut that file and appended to it."""
    out = tmp_path / "run"
    assert _run(world, out) == 0
    meta = json.loads((out / "meta.json").read_text())
    meta["status"] = "running"
    (out / "meta.json").write_text(json.dumps(meta))
    lines = (out / "run.jsonl").read_text().splitlines(keepends=True)
    precious.write_text("".join(lines[:2]) + '{"torn')
    before = precious.read_bytes()
    (out / "run.jsonl").unlink()
    (out / "run.jsonl").symlink_to(precious)
    assert _run(world, out) == 2
    assert precious.read_bytes() == before


def test_a_fifo_run_jsonl_is_refused_without_blocking(world, tmp_path):
    """In a child process with a time limit: the old resume blocked opening the FIFO."""
    out = tmp_path / "run"
    assert _run(world, out) == 0
    (out / "run.jsonl").unlink()
    os.mkfifo(out / "run.jsonl")
    r = subprocess.run(
        membench_cmd("run", "--system", "random", *cli_args(world), "--out", str(out)),
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert f"{out / 'run.jsonl'}: NOT_A_FILE: is a FIFO (named pipe)" in r.stderr


def test_a_scratch_symlink_is_refused(world, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (out / "scratch").symlink_to(tmp_path / "elsewhere")
    assert _run(world, out) == 2
    assert not any((tmp_path / "elsewhere").iterdir())


def test_import_run_into_a_symlinked_run_file_is_refused(world, tmp_path, precious, capsys):
    native = tmp_path / "native"
    assert _run(world, native) == 0
    trec = tmp_path / "run.trec"
    rows = [json.loads(line) for line in (native / "run.jsonl").read_text().splitlines()]
    trec.write_text(
        "".join(
            f"{r['query_id']} Q0 {a} {i} {s} x\n"
            for r in rows
            for i, (a, s) in enumerate(r["hits"], 1)
        )
    )
    out = tmp_path / "imp"
    out.mkdir()
    (out / "run.jsonl").symlink_to(precious)
    assert (
        main(
            [
                "import-run",
                "--trec",
                str(trec),
                "--atoms",
                str(native / "atoms.jsonl"),
                "--name",
                "ext",
                *cli_args(world),
                "--out",
                str(out),
                "--cartridge-top",
                "1",
                "--force",
            ]
        )
        == 2
    )
    assert "NOT_A_FILE: is a symlink" in capsys.readouterr().err
    assert precious.read_text() == PRECIOUS


# --------------------------------------------------------------------------- run folders read


def _link_out(d: Path, name: str, tmp_path: Path) -> Path:
    """Move ``d/name`` out of the run folder and leave a symlink to it in its place (the file
    is valid: only where it lives is wrong)."""
    away = tmp_path / "elsewhere" / d.name / name
    away.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(d / name, away)
    (d / name).symlink_to(away)
    return away


def _refused(code: int, err: str, link: Path) -> None:
    lines = err.strip().splitlines()
    assert code == 2, err
    assert any(f"{link}: NOT_A_FILE: is a symlink" in line for line in lines), err
    assert not any("Traceback" in line for line in lines), err


@pytest.mark.parametrize("name", ["meta.json", "run.jsonl", "atoms.jsonl"])
def test_metrics_refuses_a_symlinked_run_file(tmp_path, name, capsys):
    d = _fixture_run(tmp_path)
    _link_out(d, name, tmp_path)
    code = main(["metrics", str(d)])
    err = capsys.readouterr().err
    _refused(code, err, d / name)
    assert len(err.strip().splitlines()) == 1 and not (d / "metrics.json").exists()


def test_metrics_refuses_a_symlinked_scratch_folder(tmp_path, capsys):
    d = _fixture_run(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (d / "scratch").symlink_to(tmp_path / "elsewhere")
    code = main(["metrics", str(d)])
    err = capsys.readouterr().err
    assert code == 2 and f"{d / 'scratch'}: NOT_A_FILE: is a symlink" in err, err
    assert len(err.strip().splitlines()) == 1 and not (d / "metrics.json").exists()


def test_compare_refuses_a_symlinked_run_file(tmp_path, capsys):
    a = _fixture_run(tmp_path / "a")
    b = _fixture_run(tmp_path / "b")
    _link_out(b, "run.jsonl", tmp_path)
    code = main(["compare", str(a), str(b), "--resamples", "10"])
    err = capsys.readouterr().err
    _refused(code, err, b / "run.jsonl")
    assert len(err.strip().splitlines()) == 1


def test_report_refuses_a_symlinked_run_file(tmp_path, capsys):
    d = _fixture_run(tmp_path)
    _link_out(d, "atoms.jsonl", tmp_path)
    out = tmp_path / "reports"
    code = main(["report", "--run", str(d), "--out", str(out)])
    err = capsys.readouterr().err
    _refused(code, err, d / "atoms.jsonl")
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def _carded_run(world, d: Path) -> Path:
    """A complete run of a user system with a card of its own (what a store takes)."""
    from membench.run.runner import run_system
    from membench.systems import make_system

    run_system(
        make_system("namesakes:Mine", {"top": 2}),
        world["sets"],
        "dev",
        d,
        world["corpus"],
        manifest=world["manifest"],
        lock=world["lock"],
    )
    return d


def test_leaderboard_refuses_a_symlinked_run_file(world, tmp_path, capsys):
    d = _carded_run(world, tmp_path / "run")
    _link_out(d, "meta.json", tmp_path)
    store = tmp_path / "store"
    code = main(["leaderboard", "--runs", str(d), "--out", str(store), "--resamples", "10"])
    _refused(code, capsys.readouterr().err, d / "meta.json")
    assert not (store / "entries").exists()


def test_verify_refuses_a_stored_run_whose_file_became_a_symlink(world, tmp_path, capsys):
    d = _carded_run(world, tmp_path / "run")
    store = tmp_path / "store"
    assert main(["leaderboard", "--runs", str(d), "--out", str(store), "--resamples", "10"]) == 0
    capsys.readouterr()
    _link_out(d, "run.jsonl", tmp_path)
    code = main(
        [
            "verify",
            str(store),
            "--corpus",
            str(world["corpus"]),
            "--manifest",
            str(world["manifest"]),
        ]
    )
    err = capsys.readouterr().err
    _refused(code, err, d / "run.jsonl")
    assert len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- other outputs


def test_outputs_named_by_flags_are_not_written_through_symlinks(world, tmp_path, precious, capsys):
    link = tmp_path / "out.json"
    link.symlink_to(precious)
    base = [
        "--sets",
        str(world["sets"]),
        "--manifest",
        str(world["manifest"]),
        "--lock",
        str(world["lock"]),
        "--corpus",
        str(world["corpus"]),
        "--no-audit",
    ]
    assert main(["validate", *base, "--json", str(link)]) == 2
    assert main(["audit", str(world["sets"]), "--json", str(link)]) == 2
    d = _fixture_run(tmp_path)
    assert main(["calibrate", str(d), "--out", str(link)]) == 2
    err = capsys.readouterr().err
    assert err.count("NOT_A_FILE: is a symlink") == 3, err
    assert precious.read_text() == PRECIOUS


def test_export_into_a_folder_holding_a_symlink(tmp_path, precious, capsys):
    d = _fixture_run(tmp_path)
    out = tmp_path / "exp"
    out.mkdir()
    (out / "run.trec").symlink_to(precious)
    assert main(["export", str(d), "--out", str(out)]) == 2
    assert "NOT_A_FILE" in capsys.readouterr().err
    assert precious.read_text() == PRECIOUS


def test_synth_does_not_write_through_its_temporary_file(tmp_path, precious):
    out = tmp_path / "synth"
    (out / "sets").mkdir(parents=True)
    (out / "sets" / "items.jsonl.tmp").symlink_to(precious)
    assert main(["synth", "--out", str(out), "--atoms", "50", "--queries", "5"]) == 2
    assert precious.read_text() == PRECIOUS


# --------------------------------------------------------------------------- the primitives


def test_open_regular_refuses_what_is_not_a_regular_file(tmp_path, precious):
    link = tmp_path / "link"
    link.symlink_to(precious)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for p, what in ((link, "a symlink"), (fifo, "a FIFO"), (tmp_path, "a folder")):
        for flags in (os.O_RDONLY, os.O_WRONLY | os.O_APPEND, os.O_RDWR | os.O_CREAT):
            with pytest.raises(InputError, match=f"NOT_A_FILE: is {what}"):
                os.close(open_regular(p, flags))
        with pytest.raises(InputError, match=f"NOT_A_FILE: is {what}"):
            refuse_special(p)
    fd = open_regular(tmp_path / "new", os.O_RDWR | os.O_CREAT)
    assert os.get_blocking(fd)  # O_NONBLOCK only while opening
    os.close(fd)
    refuse_special(tmp_path / "new")
    refuse_special(tmp_path / "absent")
    assert precious.read_text() == PRECIOUS


def test_the_race_after_the_check_cannot_reach_outside(tmp_path, precious, monkeypatch):
    """A symlink swapped in after refuse_special: the atomic replace renames over the link
    itself (the target keeps its bytes) and an append is refused by O_NOFOLLOW."""
    link = tmp_path / "out.txt"
    link.symlink_to(precious)
    monkeypatch.setattr("membench.core.atomic.refuse_special", lambda p: None)
    atomic_write_text(link, "new\n")
    assert not link.is_symlink() and link.read_text() == "new\n"
    assert precious.read_text() == PRECIOUS
    link2 = tmp_path / "log.jsonl"
    link2.symlink_to(precious)
    with pytest.raises(InputError, match="is a symlink"):
        open_append(link2)
    assert precious.read_text() == PRECIOUS


def test_a_run_dir_that_is_a_symlink_to_a_folder_is_the_users_choice(world, tmp_path):
    """The folder named by --out may itself be a symlink (the user named it); only what is
    inside it is held to regular files."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "named").symlink_to(real)
    assert _run(world, tmp_path / "named") == 0
    assert (real / "run.jsonl").is_file()


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip("O_NOFOLLOW / mkfifo semantics as on Linux")
