"""SIGINT and SIGTERM during ``membench build``'s PDF read (a process pool of workers): exit 130
with one status line, no traceback from a pool thread, no worker left behind, and a build that
runs again to the end. Real PDFs of the mirror in a small corpus of their own, with an empty
cache so the workers are reading when the signal comes.

The time limits only keep a broken stop from hanging the suite; what is checked is the outcome."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time

import pytest
from hostile_world import group_gone, membench_cmd, subprocess_env

from membench.core.errors import EXIT_INTERRUPTED

HANG_GUARD = 60
N_PDFS = 24


@pytest.fixture(scope="module")
def pdf_corpus(corpus_root, tmp_path_factory):
    """``mmlongbench-doc`` with the mirror's N_PDFS largest PDFs, no questions, and a manifest."""
    root = tmp_path_factory.mktemp("pdfs") / "corpus"
    d = root / "mmlongbench-doc"
    (d / "documents").mkdir(parents=True)
    src = sorted(
        (corpus_root / "mmlongbench-doc" / "documents").glob("*.pdf"),
        key=lambda p: (-p.stat().st_size, p.name),
    )[:N_PDFS]
    for p in src:
        shutil.copyfile(p, d / "documents" / p.name)
    (d / "samples.json").write_text("[]")
    rows = []
    for p in sorted(x for x in d.rglob("*") if x.is_file()):
        b = p.read_bytes()
        rel = p.relative_to(d).as_posix()
        rows.append(
            {
                "path": rel,
                "sha256": hashlib.sha256(b).hexdigest(),
                "bytes": len(b),
                "commit": "0" * 40,
                "upstream_repo": "x/y",
                "upstream_path": rel,
            }
        )
    (d / "PROVENANCE.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "LICENSE-NOTES.md").write_text("test copy\n")
    manifest = root.parent / "manifest.jsonl"
    r = subprocess.run(
        membench_cmd("corpus", "manifest", "--corpus", str(root), "--manifest", str(manifest)),
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return root, manifest


def _build(pdf_corpus, tmp_path):
    root, manifest = pdf_corpus
    return membench_cmd(
        "build",
        "--corpus",
        str(root),
        "--manifest",
        str(manifest),
        "--source",
        "mmlongbench",
        "--out",
        str(tmp_path / "sets"),
    )


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_during_the_pdf_read_ends_every_worker(pdf_corpus, tmp_path, sig):
    env = {**subprocess_env(), "MEMBENCH_CACHE": str(tmp_path / "cache")}
    env.pop("MEMBENCH_PROGRESS")  # its progress lines say when the read has begun
    err_path = tmp_path / "stderr.txt"
    with err_path.open("w") as err:
        p = subprocess.Popen(
            _build(pdf_corpus, tmp_path),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
            start_new_session=True,
        )
    try:
        deadline = time.time() + HANG_GUARD
        while "pdf read (mmlongbench): started" not in err_path.read_text():
            assert p.poll() is None and time.time() < deadline, err_path.read_text()
            time.sleep(0.05)
        time.sleep(1.0)  # the workers are reading
        assert p.poll() is None, "the read ended before the signal: use larger PDFs"
        os.killpg(p.pid, sig)  # as a terminal or make does: the whole group
        p.wait(timeout=HANG_GUARD)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    err = err_path.read_text()
    assert p.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err and "InvalidStateError" not in err, err
    assert err.strip().splitlines()[-1].startswith(f"membench: interrupted ({sig.name})"), err
    assert group_gone(p.pid, HANG_GUARD), "a worker of the build outlived it"
    if sig == signal.SIGTERM:  # and the build runs again to its end
        r = subprocess.run(
            _build(pdf_corpus, tmp_path), env=env, capture_output=True, text=True, timeout=600
        )
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "sets" / "items.jsonl").is_file()
