"""Hostile input and careless use, one test per case: reads that try to leave the corpus, run
directories written twice, malformed and oversized input, unchecked arguments, sets that break
hard rules, corpus drift. Each asserts what the user gets instead: a located one-line error,
its exit status, and nothing already written lost.

The faults of the machine itself (read-only folder, full disk, Ctrl-C, a killed lock holder)
are in ``test_faults.py``; the fuzzing of every reader in ``test_fuzz_readers.py``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import minisets as ms
import pytest
from hostile_world import cli_args, membench_cmd, relock, rewrite, subprocess_env, write_world

from membench.cli import main
from membench.core.errors import InputError, MembenchError
from membench.core.lock import LOCK_NAME
from membench.core.paths import confine
from membench.run.importer import import_trec
from membench.run.runner import run_system
from membench.sets.validate import validate_sets
from membench.systems import make_system

FIX_RUN = Path(__file__).parent / "fixtures" / "metrics" / "run_small"


@pytest.fixture(autouse=True)
def _quiet_progress(monkeypatch):
    """These tests read stderr's one error line: no progress lines beside it."""
    monkeypatch.setenv("MEMBENCH_PROGRESS", "quiet")


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path / "w")


def mutate(world, fn, relock_after=True):
    """Apply ``fn(rows_by_file)`` to the world's sets (and re-lock them)."""
    rows = {
        f: [json.loads(l) for l in (world["sets"] / f).read_text().splitlines()]
        for f in [*(f"{m}.jsonl" for m in ms.REGIONS), "items.jsonl"]
    }
    fn(rows)
    for f, r in rows.items():
        rewrite(world["sets"] / f, r)
    if relock_after:
        relock(world)


def errors(world, lock=True, corpus=True):
    found = validate_sets(
        world["sets"],
        world["manifest"],
        lock=world["lock"] if lock else None,
        corpus=world["corpus"] if corpus else None,
    )
    return {(f.rule, Path(f.file).name, f.line) for f in found if f.level == "error"}


def validate_cli(world, *extra):
    return main(
        [
            "validate",
            "--sets",
            str(world["sets"]),
            "--manifest",
            str(world["manifest"]),
            "--corpus",
            str(world["corpus"]),
            *extra,
        ]
    )


def to_path_item(world, n: int, path: str) -> None:
    """Make items.jsonl row ``n`` (a conversation item) a file item at ``path``."""

    def fn(s):
        s["items.jsonl"][n] = {**s["items.jsonl"][n], "content": None, "path": path}

    mutate(world, fn)


@pytest.fixture
def outside(tmp_path):
    """A file outside the corpus, standing in for /etc/passwd."""
    p = tmp_path / "secret.txt"
    p.write_text("root:x:0:0:secret\n")
    return p


class Recorder:
    """A system that reads every item file it is given (like the reference systems) and
    records what it read."""

    name = "recorder"

    def __init__(self):
        self.read: list[str] = []
        self.ingested = False

    def config(self):
        return {}

    def ingest(self, items, corpus_root):
        from membench.content.common import item_file
        from membench.systems.structural import structural_atoms

        self.ingested = True
        for it in items:
            if it.path is not None:
                self.read.append(item_file(it, corpus_root).read_text())
        return structural_atoms([it for it in items if it.path is None])

    def query(self, question, scope, as_of):
        from membench.contract.protocol import Result

        return Result([])


# --------------------------------------------------------------------------- reads stay inside


def test_item_path_climbing_out_fails_validate_no_lock(world, capsys):
    to_path_item(world, 8, "../../../../etc/passwd")
    assert validate_cli(world, "--no-lock") == 1
    out = capsys.readouterr().out
    assert f"{world['sets'] / 'items.jsonl'}:9: SCHEMA: field path:" in out and "'..'" in out


def test_absolute_item_path_fails_validate(world, outside, capsys):
    to_path_item(world, 8, str(outside))
    assert validate_cli(world, "--no-lock") == 1
    assert "items.jsonl:9: SCHEMA: field path:" in capsys.readouterr().out


def test_symlink_leaving_the_corpus_is_refused(world, outside):
    (world["corpus"] / "example" / "notes.txt").symlink_to(outside)
    to_path_item(world, 8, "example/notes.txt")
    found = errors(world)
    assert ("PATH_OUTSIDE_CORPUS", "items.jsonl", 9) in found
    assert ("ADDED_FILE", "manifest.jsonl", None) in found  # the symlink is not listed
    with pytest.raises(InputError, match="outside the corpus root") as e:
        confine(world["corpus"], "example/notes.txt")
    assert e.value.rule == "PATH_OUTSIDE_CORPUS"


def test_symlink_inside_the_corpus_is_fine(world):
    (world["corpus"] / "example" / "alias.json").symlink_to(
        world["corpus"] / "example" / "pdf.json"
    )
    assert (
        confine(world["corpus"], "example/alias.json")
        == (world["corpus"] / "example" / "pdf.json").resolve()
    )


def test_run_refuses_an_item_outside_the_corpus_before_ingest(world, outside, tmp_path):
    (world["corpus"] / "example" / "notes.txt").symlink_to(outside)
    to_path_item(world, 8, "example/notes.txt")
    system = Recorder()
    with pytest.raises(InputError) as e:
        run_system(
            system,
            world["sets"],
            "dev",
            tmp_path / "run",
            world["corpus"],
            manifest=world["manifest"],
            lock=world["lock"],
        )
    assert e.value.rule in ("PATH_OUTSIDE_CORPUS", "ADDED_FILE")
    assert not system.ingested and system.read == []


def test_content_reader_and_renderers_refuse_a_symlink_out(world, outside):
    from membench import modalities
    from membench.content.common import item_file
    from membench.contract.schema import SourceItem
    from membench.modalities.base import RenderContext

    (world["corpus"] / "example" / "a.py").symlink_to(outside)
    row = {
        "source_id": "codesrc:x",
        "modality": "code",
        "holder": "code/a",
        "observed_at": ms.T1,
        "path": "example/a.py",
        "meta": {"lines": 1},
    }
    with pytest.raises(InputError, match="outside the corpus root"):
        item_file(SourceItem.model_validate(row), world["corpus"])
    with pytest.raises(InputError, match="outside the corpus root"):
        modalities.get("code").render_html(
            row, {"path": "a.py", "line_start": 1, "line_end": 1}, RenderContext(world["corpus"])
        )


def test_failure_browser_items_are_checked(tmp_path):
    from membench.metrics.rundir import RunDir

    d = tmp_path / "run"
    shutil.copytree(FIX_RUN, d)
    items = [json.loads(l) for l in (d / "sets" / "items.jsonl").read_text().splitlines()]
    items[1] = {**items[1], "content": None, "path": "../../../../etc/passwd"}
    rewrite(d / "sets" / "items.jsonl", items)
    with pytest.raises(InputError) as e:
        RunDir.open(d).item_rows()
    assert e.value.line == 2 and e.value.field == "path"


def test_build_refuses_an_adapter_item_outside_the_corpus(world, outside, monkeypatch):
    from membench.contract.schema import SourceItem
    from membench.sets import build
    from membench.sources.base import AdapterResult, Coverage

    (world["corpus"] / "example" / "x.pdf").symlink_to(outside)

    class Spec:
        key, name, modality = "evil", "Evil", "pdf"

        def available(self, root):
            return True

        def load(self, root):
            it = SourceItem(
                source_id="evil:1",
                modality="pdf",
                holder="h",
                observed_at=ms.T1,
                path="example/x.pdf",
                meta={"pages": 1},
            )
            return AdapterResult([it], [], Coverage(source="evil"), {})

    monkeypatch.setattr(build, "SOURCES", (Spec(),))
    with pytest.raises(InputError, match="outside the corpus root") as e:
        build.collect(world["corpus"])
    assert e.value.file == "evil adapter"


# --------------------------------------------------------------------------- run directories


def _hold_lock(run_dir: Path, command: str = "membench run --system holder"):
    """A separate process holding RUN_DIR's lock until it is killed."""
    code = (
        "import sys, time\n"
        "from membench.core.lock import run_dir_lock\n"
        f"with run_dir_lock({str(run_dir)!r}, {command!r}):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(600)\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=subprocess_env()
    )
    assert p.stdout.readline().strip() == "held"
    return p


def test_two_runs_into_one_folder_the_second_is_refused(world, tmp_path, capsys):
    out, gate = tmp_path / "run", tmp_path / "gate"
    first = subprocess.Popen(
        membench_cmd("run", "--system", "hostile_world:Gated", *cli_args(world), "--out", str(out)),
        env={**subprocess_env(), "MEMBENCH_TEST_GATE": str(gate)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 120
        while not (tmp_path / "ingesting").exists() and time.time() < deadline:
            assert first.poll() is None, first.communicate()
            time.sleep(0.05)
        assert main(["run", "--system", "random", *cli_args(world), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert "RUN_DIR_LOCKED" in err and f"pid {first.pid}" in err
        assert "hostile_world:Gated" in err and "since" in err
        assert len(err.strip().splitlines()) == 1
        assert main(["metrics", str(out)]) == 2  # metrics waits its turn too
        assert "RUN_DIR_LOCKED" in capsys.readouterr().err
    finally:
        gate.write_text("go")
        stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    ids = [json.loads(l)["query_id"] for l in (out / "run.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == json.loads((out / "meta.json").read_text())["queries"]
    assert (out / LOCK_NAME).read_text() == ""  # released cleanly


def test_metrics_refused_while_another_process_writes(tmp_path, capsys):
    d = tmp_path / "run"
    shutil.copytree(FIX_RUN, d)
    holder = _hold_lock(d)
    try:
        assert main(["metrics", str(d)]) == 2
        err = capsys.readouterr().err
        assert f"pid {holder.pid}" in err and "membench run --system holder" in err
        assert not (d / "metrics.json").exists()
    finally:
        holder.kill()
        holder.wait()
    assert main(["metrics", str(d)]) == 0  # the dead holder's lock is taken over
    assert "taking over the lock left by pid" in capsys.readouterr().err


def _import_inputs(world, tmp_path):
    """A run of the random double on the world, as a TREC file and an atoms file."""
    native = tmp_path / "native"
    run_system(
        make_system("random"), world["sets"], "dev", native, None, manifest=world["manifest"]
    )
    trec = tmp_path / "run.trec"
    lines = []
    for l in (native / "run.jsonl").read_text().splitlines():
        r = json.loads(l)
        lines += [f"{r['query_id']} Q0 {a} {i} {s} x" for i, (a, s) in enumerate(r["hits"], 1)]
    trec.write_text("\n".join(lines) + "\n")
    return (
        trec,
        native / "atoms.jsonl",
        [json.loads(l)["query_id"] for l in (native / "run.jsonl").read_text().splitlines()],
    )


def test_import_run_refuses_to_overwrite_without_force(world, tmp_path, capsys):
    trec, atoms, _ = _import_inputs(world, tmp_path)
    out = tmp_path / "imported"
    args = [
        "import-run",
        "--trec",
        str(trec),
        "--atoms",
        str(atoms),
        "--name",
        "ext",
        *cli_args(world),
        "--out",
        str(out),
        "--cartridge-top",
        "1",
    ]
    assert main(args) == 0
    (out / "metrics.json").write_text("{}")
    before = (out / "run.jsonl").read_bytes()
    assert main([*args[:-1], "2"]) == 2
    err = capsys.readouterr().err
    assert "RUN_EXISTS" in err and "--force" in err
    assert (out / "run.jsonl").read_bytes() == before and (out / "metrics.json").exists()
    assert main([*args[:-1], "2", "--force"]) == 0
    assert (out / "run.jsonl").read_bytes() != before
    assert not (out / "metrics.json").exists()  # it scored the replaced run
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["config"]["cartridge"] == "top 2 hits"


def test_out_naming_an_existing_file_is_a_located_error(world, tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("x")
    assert main(["run", "--system", "random", *cli_args(world), "--out", str(f)]) == 2
    assert f"{f}: RUN_DIR: exists and is not a folder" in capsys.readouterr().err
    trec, atoms, _ = _import_inputs(world, tmp_path)
    assert (
        main(
            [
                "import-run",
                "--trec",
                str(trec),
                "--atoms",
                str(atoms),
                "--name",
                "e",
                *cli_args(world),
                "--out",
                str(f),
                "--cartridge-top",
                "1",
            ]
        )
        == 2
    )
    assert f"{f}: RUN_DIR: exists and is not a folder" in capsys.readouterr().err
    assert f.read_text() == "x"


def test_calibrate_out_naming_a_folder_is_a_located_error(tmp_path, capsys):
    d = tmp_path / "run"
    shutil.copytree(FIX_RUN, d)
    assert main(["calibrate", str(d), "--out", str(tmp_path)]) == 2
    assert f"{tmp_path}: ARGUMENT: is a folder" in capsys.readouterr().err


# --------------------------------------------------------------------------- malformed input


BAD_UTF8 = b'{"query_id": "\xff\xfe"}\n'
DEEP = ("[" * 100_000 + "]" * 100_000).encode()


@pytest.fixture
def run_dir(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(FIX_RUN, d)
    return d


@pytest.mark.parametrize("name", ["atoms.jsonl", "run.jsonl", "sets/pdf.jsonl", "sets/items.jsonl"])
@pytest.mark.parametrize(
    "payload,rule",
    [
        (BAD_UTF8, "ENCODING"),
        (b'{"a": ' + DEEP + b"}\n", "JSON"),
        (b'{"a": 1, "a": 2}\n', "JSON"),
        (b'{"a": ' + b"9" * 5000 + b"}\n", "JSON"),
    ],
)
def test_bad_lines_in_run_files_are_located(run_dir, capsys, name, payload, rule):
    p = run_dir / name
    n = len(p.read_bytes().splitlines())
    with open(p, "ab") as f:
        f.write(payload)
    assert main(["metrics", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert f"{p}:{n + 1}: {rule}:" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "text,field",
    [
        ("[1]\n", None),
        ('{"split": "dev", "limit": "3"}\n', "limit"),
        (b"\xff".decode("latin-1") + "\n", None),
    ],
)
def test_bad_meta_json_is_located(run_dir, capsys, text, field):
    (run_dir / "meta.json").write_bytes(text.encode("latin-1"))
    assert main(["metrics", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert f"{run_dir / 'meta.json'}" in err and (field is None or f"field {field}" in err)


def test_resuming_into_a_meta_json_that_is_a_list(world, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "meta.json").write_text("[1, 2]\n")
    assert main(["run", "--system", "random", *cli_args(world), "--out", str(out)]) == 2
    assert f"{out / 'meta.json'}: JSON: expected a JSON object" in capsys.readouterr().err


def test_integers_past_64_bits_in_extents_and_regions(run_dir, world, capsys):
    rows = [json.loads(l) for l in (run_dir / "atoms.jsonl").read_text().splitlines()]
    rows[0]["extent"] = {"page": 2**64}
    rewrite(run_dir / "atoms.jsonl", rows)
    assert main(["metrics", str(run_dir)]) == 2
    assert (
        "atoms.jsonl:1: ATOM_EXTENT: field extent: page must be a 64-bit integer"
        in capsys.readouterr().err
    )
    mutate(world, lambda s: s["code.jsonl"][0]["gold"][0]["region"].update(line=2**70))
    assert ("REGION_SHAPE", "code.jsonl", 1) in errors(world)


def test_trec_files_with_bad_bytes_are_located(tmp_path):
    from membench.trec import read_trec_qrels, read_trec_run

    run = tmp_path / "run.trec"
    run.write_bytes(b"q1 Q0 d1 1 1.0 t\nq1 Q0 d\xff 2 0.5 t\n")
    with pytest.raises(InputError) as e:
        read_trec_run(run)
    assert (e.value.line, e.value.rule) == (2, "ENCODING")
    run.write_bytes(b"q1 Q0 d1 1 1.0 t\nq1 Q0 d\x01 2 0.5 t\n")
    with pytest.raises(InputError) as e:
        read_trec_run(run)
    assert (e.value.line, e.value.rule) == (2, "TREC") and "control byte 0x01" in str(e.value)
    qrels = tmp_path / "qrels"
    qrels.write_bytes(b"q1 0 d1 1\nq1 0 d\xe9 1\n")
    with pytest.raises(InputError) as e:
        read_trec_qrels(qrels)
    assert (e.value.line, e.value.rule) == (2, "ENCODING")
    qrels.write_bytes(b"q1 0 d1 1_0\n")
    with pytest.raises(InputError, match="rel"):
        read_trec_qrels(qrels)


def test_a_set_path_that_is_a_folder(world, tmp_path, capsys):
    (world["sets"] / "video.jsonl").unlink()
    (world["sets"] / "video.jsonl").mkdir()
    assert ("NOT_A_FILE", "video.jsonl", None) in errors(world, lock=False)
    assert (
        main(
            [
                "run",
                "--system",
                "random",
                *cli_args(world),
                "--no-lock",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    assert "video.jsonl: NOT_A_FILE: is a folder" in capsys.readouterr().err


def test_gold_that_is_not_a_list(world):
    mutate(world, lambda s: s["pdf.jsonl"][0].update(gold=5))
    assert ("SCHEMA", "pdf.jsonl", 1) in errors(world)


def test_strict_types_in_records(world, capsys):
    def fn(s):
        s["pdf.jsonl"][0]["unanswerable"] = "false"
        s["video.jsonl"][1]["gold"][0]["grade"] = "2"

    mutate(world, fn)
    with open(world["sets"] / "image.jsonl", "a") as f:
        f.write(json.dumps(ms.record("image", 9, answer=math.nan)) + "\n")
    assert validate_cli(world, "--no-lock") == 1
    out = capsys.readouterr().out
    assert "pdf.jsonl:1: SCHEMA: field unanswerable: Input should be a valid boolean" in out
    assert "video.jsonl:2: SCHEMA: field gold.0.grade: Input should be a valid integer" in out
    assert "image.jsonl:6: JSON: not valid JSON: NaN is not a JSON number" in out


def test_empty_set_file_fails_validate_no_lock(world, capsys):
    (world["sets"] / "code.jsonl").write_text("")
    assert validate_cli(world, "--no-lock") == 1
    assert f"{world['sets'] / 'code.jsonl'}: EMPTY_FILE:" in capsys.readouterr().out


# --------------------------------------------------------------------------- arguments


@pytest.mark.parametrize("value", ["-1", "0", "x"])
def test_run_limit_must_be_positive(world, tmp_path, value, capsys):
    with pytest.raises(SystemExit) as e:
        main(
            [
                "run",
                "--system",
                "random",
                *cli_args(world),
                "--limit",
                value,
                "--out",
                str(tmp_path / "r"),
            ]
        )
    assert e.value.code == 2 and "--limit" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    with pytest.raises(MembenchError, match="--limit must be an integer >= 1"):
        run_system(
            make_system("random"),
            world["sets"],
            "dev",
            tmp_path / "r",
            None,
            limit=int(value) if value != "x" else value,
            manifest=world["manifest"],
        )


@pytest.mark.parametrize("value", ["-1", "0"])
def test_cartridge_top_must_be_positive(world, tmp_path, value, capsys):
    trec, atoms, _ = _import_inputs(world, tmp_path)
    with pytest.raises(SystemExit) as e:
        main(
            [
                "import-run",
                "--trec",
                str(trec),
                "--atoms",
                str(atoms),
                "--name",
                "e",
                *cli_args(world),
                "--out",
                str(tmp_path / "i"),
                "--cartridge-top",
                value,
            ]
        )
    assert e.value.code == 2 and "--cartridge-top" in capsys.readouterr().err
    with pytest.raises(MembenchError, match="--cartridge-top must be an integer >= 1"):
        import_trec(
            trec, atoms, world["sets"], "dev", tmp_path / "i", "e", cartridge_top=int(value)
        )
    assert not (tmp_path / "i").exists()


def test_repeated_query_in_a_cartridge_file(world, tmp_path, capsys):
    trec, atoms, qids = _import_inputs(world, tmp_path)
    cart = tmp_path / "cart.jsonl"
    cart.write_text(
        json.dumps({"query_id": qids[0], "cartridge": []})
        + "\n"
        + json.dumps({"query_id": qids[1], "cartridge": []})
        + "\n"
        + json.dumps({"query_id": qids[0], "cartridge": []})
        + "\n"
    )
    assert (
        main(
            [
                "import-run",
                "--trec",
                str(trec),
                "--atoms",
                str(atoms),
                "--name",
                "e",
                *cli_args(world),
                "--out",
                str(tmp_path / "i"),
                "--cartridge",
                str(cart),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert f"{cart}:3: DUPLICATE_QUERY_ID: field query_id:" in err and "line 1" in err
    assert not (tmp_path / "i").exists()


# --------------------------------------------------------------------------- run checks first


def _dup(s):
    s["pdf.jsonl"][1]["query_id"] = s["pdf.jsonl"][0]["query_id"]


def _leak(s):
    r = s["pdf.jsonl"][3]  # unanswerable, no gold: the split is all that changes
    r["split"] = "test" if r["split"] == "dev" else "dev"


def _after(s):
    s["video.jsonl"][0]["as_of"] = "2023-01-01T00:00:00+00:00"


def _bounds(s):
    s["pdf.jsonl"][0]["gold"][0]["region"] = {"page": 99}


@pytest.mark.parametrize(
    "fn,rule",
    [
        (_dup, "DUPLICATE_QUERY_ID"),
        (_leak, "SPLIT_LEAK"),
        (_after, "GOLD_AFTER_AS_OF"),
        (_bounds, "GOLD_OUT_OF_BOUNDS"),
    ],
)
def test_run_refuses_sets_breaking_a_hard_rule_before_ingest(world, tmp_path, fn, rule):
    mutate(world, fn)
    system = Recorder()
    with pytest.raises(InputError) as e:
        run_system(
            system,
            world["sets"],
            "dev",
            tmp_path / "r",
            world["corpus"],
            manifest=world["manifest"],
            lock=world["lock"],
        )
    assert e.value.rule == rule and e.value.line is not None
    assert not system.ingested and not (tmp_path / "r").exists()


def test_run_checks_the_lock(world, tmp_path, capsys):
    mutate(
        world, lambda s: s["pdf.jsonl"][0].update(question="another question?"), relock_after=False
    )
    assert main(["run", "--system", "random", *cli_args(world), "--out", str(tmp_path / "r")]) == 2
    assert "pdf.jsonl: DIGEST_DRIFT:" in capsys.readouterr().err
    assert (
        main(
            [
                "run",
                "--system",
                "random",
                *cli_args(world),
                "--no-lock",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 0
    )


# --------------------------------------------------------------------------- corpus drift


def test_corpus_check_reports_added_files(world, capsys):
    args = [
        "corpus",
        "check",
        "--corpus",
        str(world["corpus"]),
        "--manifest",
        str(world["manifest"]),
    ]
    assert main(args) == 0
    shutil.copy(
        world["corpus"] / "example" / "image.json", world["corpus"] / "example" / "image-copy.json"
    )
    assert main(args) == 1
    out = capsys.readouterr().out
    assert f"ADDED_FILE: {world['corpus'] / 'example' / 'image-copy.json'}" in out
    assert "1 problem(s) (1 added, 0 removed, 0 altered)" in out


def _locomo_corpus(tmp_path, corpus_root):
    from membench.core.paths import MANIFEST_PATH

    root = tmp_path / "shared" / "corpus"
    shutil.copytree(corpus_root / "locomo", root / "locomo")
    for p in (root / "locomo").rglob("*"):
        p.chmod(0o644)
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(
        next(
            l for l in MANIFEST_PATH.read_text().splitlines() if json.loads(l)["source"] == "locomo"
        )
        + "\n"
    )
    return root, manifest


def test_partial_build_checks_the_corpus(tmp_path, corpus_root, capsys):
    root, manifest = _locomo_corpus(tmp_path, corpus_root)
    args = [
        "build",
        "--corpus",
        str(root),
        "--manifest",
        str(manifest),
        "--source",
        "locomo",
        "--out",
        str(tmp_path / "sets"),
    ]
    assert main(args) == 0
    (root / "locomo" / "locomo11.json").write_text("[]")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert (
        "ADDED_FILE" in err and "locomo11.json" in err and "(1 added, 0 removed, 0 altered)" in err
    )


def test_corpus_root_one_level_off(tmp_path, corpus_root, capsys):
    root, manifest = _locomo_corpus(tmp_path, corpus_root)
    for cmd in (["corpus", "check"], ["build", "--out", str(tmp_path / "s")]):
        assert main([*cmd, "--corpus", str(root.parent), "--manifest", str(manifest)]) == 2
        err = capsys.readouterr().err
        assert f"{root.parent} is not a corpus root" in err and f"use --corpus {root}" in err
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()
    assert (
        main(["corpus", "check", "--corpus", str(root / "locomo"), "--manifest", str(manifest)])
        == 2
    )
    assert f"use --corpus {root}" in capsys.readouterr().err


def test_validate_and_manifest_rules_on_paths_in_the_manifest(world, capsys):
    lines = [json.loads(l) for l in world["manifest"].read_text().splitlines()]
    lines[0]["files"].append({"path": "../outside.json", "sha256": "0" * 64, "bytes": 1})
    world["manifest"].write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert (
        main(
            [
                "corpus",
                "check",
                "--corpus",
                str(world["corpus"]),
                "--manifest",
                str(world["manifest"]),
            ]
        )
        == 1
    )
    assert f"{world['manifest']}:1: PATH_OUTSIDE_CORPUS:" in capsys.readouterr().out


def test_a_system_name_from_a_run_directory_never_becomes_a_path(run_dir, tmp_path, capsys):
    from membench.systems.reference import CALIBRATION_DIR

    meta = json.loads((run_dir / "meta.json").read_text())
    meta["system"] = os.path.relpath(tmp_path / "evil", CALIBRATION_DIR)  # ../../../tmp/.../evil
    (run_dir / "meta.json").write_text(json.dumps(meta))
    assert main(["calibrate", str(run_dir)]) == 2
    assert "cannot name a calibration file" in capsys.readouterr().err
    assert not list(tmp_path.rglob("evil.json"))
    assert main(["calibrate", str(run_dir), "--out", str(tmp_path / "cal.json")]) == 0


@pytest.mark.parametrize("value", ["9" * 5000, "[" * 50_000])
def test_config_values_that_are_not_usable_json(value, capsys):
    assert main(["run", "--system", "random", "--config", f"seed={value}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("membench: --config seed=...: not a usable JSON value")


@pytest.mark.parametrize(
    "m,meta",
    [
        ("pdf", {"pages": None}),
        ("ui_screenshot", {"width": 10}),
        ("ui_screenshot", {"width": 10, "height": 0}),
        ("video", {"duration": "10"}),
        ("code", {"lines": -1}),
    ],
)
def test_item_meta_the_bounds_read_is_typed(world, m, meta):
    """(found by the long fuzzing profile: a null page count crashed the bounds check)"""

    def fn(s):
        row = next(r for r in s["items.jsonl"] if r["modality"] == m)
        row["meta"] = meta

    mutate(world, fn)
    n = next(i for i, r in enumerate(ms.items(), 1) if r["modality"] == m)
    assert ("SCHEMA", "items.jsonl", n) in errors(world)
