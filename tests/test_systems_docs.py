"""The worked examples of docs/systems.md ("Add your own system") run as the page shows them:
its files are written into a scratch folder from the page's code blocks and its command blocks
are run there, line by line, on the real dev sets. Only what cannot run as written in a test
is changed, and said here: ``--sets`` names the test session's build, ``pip install -e .``
installs into a scratch target (``--no-deps --no-build-isolation --no-index --target``, then
``PYTHONPATH``) instead of this environment, and the example server's port is a free one."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from membench.cli import parser
from membench.core.paths import REPO_ROOT

DOC = (REPO_ROOT / "docs" / "systems.md").read_text(encoding="utf-8")
SECTION = DOC[DOC.index("## Add your own system"):DOC.index("\n## ", DOC.index(
    "## Add your own system") + 3)]
BLOCKS = re.findall(r"^```([^\n]*)\n(.*?)^```", SECTION, re.M | re.S)


def files() -> dict[str, str]:
    out = {}
    for info, body in BLOCKS:
        words = info.split()
        if len(words) == 2:
            assert words[1] not in out, f"{words[1]} shown twice"
            out[words[1]] = body
    return out


def commands() -> list[str]:
    return [line.strip() for info, body in BLOCKS if info.strip() == "sh"
            for line in body.splitlines() if line.strip()]


def test_the_page_shows_the_three_examples():
    assert set(files()) == {"my_memory.py", "pyproject.toml", "overlap_server.py"}
    assert len(commands()) == 5
    body = files()["my_memory.py"]
    code_lines = [ln for ln in body.splitlines() if ln.strip()]
    assert len(code_lines) <= 25, len(code_lines)        # "a Python class in 20 lines"
    assert not re.search(r"^\s*(import|from)\s+membench", files()["overlap_server.py"], re.M)


def test_every_membench_command_on_the_page_parses():
    cmds = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", DOC, re.M | re.S):
        for line in block.splitlines():
            line = line.split(" #")[0].strip()
            words = shlex.split(line) if "membench " in line else []
            while words and "=" in words[0]:
                words = words[1:]
            if words[:1] == ["membench"]:
                cmds.append(words[1:])
    assert len(cmds) >= 5
    for args in cmds:
        try:
            parser().parse_args(args)
        except SystemExit:
            pytest.fail(f"docs/systems.md: `membench {' '.join(args)}` does not parse")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"the example server exited: {proc.stderr.read()}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if json.loads(r.read())["status"] == "ok":
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer in {timeout} s")


def run_lines(path: Path) -> dict:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {r["query_id"]: (r["hits"], r["cartridge"]) for r in rows}


def test_the_worked_examples_run_as_shown(built, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for name, text in files().items():
        (work / name).write_text(text)
    target = tmp_path / "site"
    env = dict(os.environ, MEMBENCH_PROGRESS="quiet")
    env.pop("PYTHONPATH", None)
    port = str(_free_port())
    servers: list[subprocess.Popen] = []
    outs = []
    try:
        for line in commands():
            words = shlex.split(line.replace("8766", port))
            cmd_env = dict(env)
            while "=" in words[0]:
                k, v = words.pop(0).split("=", 1)
                cmd_env[k] = str((work / v).resolve()) if k == "PYTHONPATH" else v
            background = words[-1] == "&"
            if background:
                words = words[:-1]
            if words[:3] == ["pip", "install", "-e"]:
                argv = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--no-build-isolation", "--no-index", "--target", str(target),
                        words[3]]
                env["PYTHONPATH"] = str(target)          # "installed" for what follows
            elif words[0] == "membench":
                assert words[1] == "run"
                argv = [sys.executable, "-m", "membench", *words[1:], "--sets", str(built.out)]
                outs.append(work / words[words.index("--out") + 1])
            elif words[0] == "python":
                argv = [sys.executable, *words[1:]]
            else:
                raise AssertionError(f"docs/systems.md: cannot run {line!r}")
            if background:
                p = subprocess.Popen(argv, cwd=work, env=cmd_env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
                servers.append(p)
                _wait_for(f"http://127.0.0.1:{port}", p)
                continue
            r = subprocess.run(argv, cwd=work, env=cmd_env, capture_output=True, text=True,
                               timeout=900)
            assert r.returncode == 0, f"{line}\n{r.stdout}\n{r.stderr}"
            assert "Traceback" not in r.stderr, r.stderr
    finally:
        for p in servers:
            p.terminate()
            p.wait(20)
            p.stdout.close()
            p.stderr.close()
    assert len(outs) == 3
    runs = [run_lines(o / "run.jsonl") for o in outs]
    assert all(len(r) == 20 for r in runs)
    # the class run from its module and by its entry point are the same system
    assert runs[0] == runs[1]
    metas = [json.loads((o / "meta.json").read_text()) for o in outs]
    assert [m["system"] for m in metas] == ["overlap", "overlap", "overlap-http"]
    assert all(m["status"] == "complete" for m in metas)
    assert (outs[0] / "metrics.json").is_file() and (outs[2] / "metrics.json").is_file()
    # both rank something in scope: a real system, not an empty answer
    for r in (runs[0], runs[2]):
        assert sum(1 for hits, _ in r.values() if hits) >= 15
    for o in (outs[0], outs[2]):      # they respect scope, and they find evidence
        m = json.loads((o / "metrics.json").read_text())["conversation"]
        assert m["holder_correctness"]["value"] == m["temporal_correctness"]["value"] == 1.0
        assert m["holder_correctness"]["n"] == 20 and m["recall@100"]["value"] > 0.3
