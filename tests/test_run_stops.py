"""SIGINT and SIGTERM to ``membench run`` while its OCR worker processes read images (bm25 on
the image dev split) or while dense embeds (the conversation dev split), with cold caches on
the real mirror (only the sets' audit, which the run's check of the sets reads, is copied in
from a module fixture): exit 130 with the one status line, no traceback, and no worker left
(tests/test_stops.py holds that a stopped run resumes).

The time limits only keep a broken stop from hanging the suite; what is checked is the outcome."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest
from hostile_world import group_gone, membench_cmd, subprocess_env

from membench.core.errors import EXIT_INTERRUPTED

HANG_GUARD = 120


@pytest.fixture(scope="module")
def audit_cache(built):
    """The sets' audit, the slow part of the check every run makes before it ingests (a
    function of the set files and the code alone): made once (or read from the user's cache),
    and copied into each stop's otherwise empty cache. OCR and embedding still start cold."""
    from membench.core.paths import cache_dir
    from membench.sets.audit import audit_key, audit_sets_cached

    audit_sets_cached(built.out)
    path = cache_dir("audit") / f"{audit_key(built.out)}.audit.json"
    assert path.is_file()
    return path


@pytest.mark.parametrize(
    "system,modality,step",
    [("bm25", "image", "[membench] ocr"), ("dense", "conversation", "[membench] embed")],
)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_during_ocr_or_embedding_ends_every_worker(
    built, corpus_root, audit_cache, tmp_path, sig, system, modality, step
):
    cache = tmp_path / "cache"
    (cache / "audit").mkdir(parents=True)
    shutil.copy(audit_cache, cache / "audit" / audit_cache.name)
    env = {**subprocess_env(), "MEMBENCH_CACHE": str(cache)}
    env.pop("MEMBENCH_PROGRESS")  # its progress lines say when the step has begun
    err_path = tmp_path / "stderr.txt"
    cmd = membench_cmd(
        "run",
        "--system",
        system,
        "--split",
        "dev",
        "--modality",
        modality,
        "--limit",
        "5",
        "--sets",
        str(built.out),
        "--corpus",
        str(corpus_root),
        "--no-lock",
        "--out",
        str(tmp_path / "run"),
        "--content",
        "ocr_processes=2",
    )
    with err_path.open("w") as err:
        p = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True, start_new_session=True
        )
    try:
        deadline = time.time() + HANG_GUARD
        while step not in err_path.read_text():
            assert p.poll() is None and time.time() < deadline, err_path.read_text()
            time.sleep(0.1)
        time.sleep(3.0)  # the workers have started and are reading
        assert p.poll() is None
        os.kill(p.pid, sig)  # the command alone: its workers are its to end
        p.wait(timeout=HANG_GUARD)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    err = err_path.read_text()
    assert p.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith(f"membench: interrupted ({sig.name})"), err
    assert group_gone(p.pid, HANG_GUARD), "a worker outlived the run"
