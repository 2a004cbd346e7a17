"""The worked examples of docs/your-system.md run as the page shows them, on all three doors:
every command block of the page is run, line by line, in a scratch folder laid out like a
fresh clone after `make sets` (``examples/`` copied in, ``bench/sets`` the test session's build),
and the three doors must give the same answers. Only what cannot run as written in a test is
changed, and said here: ``make sets`` is the session's build (linked as ``bench/sets`` and
passed as ``--sets``); ``.venv/bin/X`` is this environment's; ``pip install -e examples``
installs into a scratch target (``--no-deps --no-build-isolation --no-index --target``, then
``PYTHONPATH``) instead of this environment; the example server's port is a free one, and
``kill %1`` stops it. The page shows the example files themselves (``--8<--`` snippets of
``examples/``), so what runs is what a reader sees."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from membench.cli import parser
from membench.core.paths import REPO_ROOT

DOC = (REPO_ROOT / "docs" / "your-system.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```([^\n]*)\n(.*?)^```", DOC, re.M | re.S)
EXAMPLES = REPO_ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))


def commands() -> list[str]:
    return [
        line.split(" #")[0].strip()
        for info, body in BLOCKS
        if info.strip() == "sh"
        for line in body.splitlines()
        if line.strip()
    ]


def test_the_page_shows_the_example_files_and_the_three_doors():
    shown = set(re.findall(r'--8<-- "examples/([^"]+)"', DOC))
    assert shown == {p.name for p in EXAMPLES.iterdir() if p.is_file()}, shown
    body = (EXAMPLES / "my_memory.py").read_text()
    assert len([ln for ln in body.splitlines() if ln.strip()]) <= 25  # "in 20 lines"
    for f in ("overlap.py", "http_server.py", "trec_overlap.py"):  # no membench in them
        assert not re.search(r"^\s*(import|from)\s+membench", (EXAMPLES / f).read_text(), re.M)
    cmds = commands()
    assert cmds[0].startswith("make sets")
    assert any("--system my_memory:WordOverlap" in c for c in cmds)
    assert any("--system http://127.0.0.1:8766" in c for c in cmds)
    assert any(c.startswith(".venv/bin/membench import-run") for c in cmds)


def test_every_membench_command_on_the_page_parses():
    n = 0
    for cmd in commands():
        words = [w for w in shlex.split(cmd) if w != "&"]
        while words and "=" in words[0]:
            words = words[1:]
        if words and words[0] == ".venv/bin/membench":
            n += 1
            try:
                parser().parse_args(words[1:])
            except SystemExit:
                pytest.fail(f"docs/your-system.md: `{cmd}` does not parse")
    assert n >= 6


def test_the_examples_atoms_are_the_content_layers(built, corpus_root):
    """examples/overlap.py makes exactly membench's conversation atoms (text and extent), as
    the page says: on every conversation item of the build."""
    from overlap import atoms_of

    from membench.content import chunk
    from membench.contract.schema import SourceItem
    from membench.core.jsonl import read_models

    items = [
        it
        for it in read_models(built.out / "items.jsonl", SourceItem)
        if it.modality == "conversation"
    ]
    rows = [json.loads(it.model_dump_json(exclude_none=True)) for it in items]
    mine = [(a["source_id"], a["extent"], a["text"]) for a in atoms_of(rows)]
    theirs = [(a.source_id, a.extent, a.text) for a in chunk(items, corpus_root)]
    assert len(mine) > 1000 and mine == theirs


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


def _lines(run_dir: Path) -> dict:
    return {
        r["query_id"]: r for r in map(json.loads, (run_dir / "run.jsonl").read_text().splitlines())
    }


def test_the_worked_examples_run_as_shown(built, tmp_path):
    work = tmp_path / "clone"
    shutil.copytree(EXAMPLES, work / "examples")
    (work / "bench").mkdir(parents=True)
    (work / "bench" / "sets").symlink_to(built.out)
    target = tmp_path / "site-packages"
    # this checkout's membench, whatever the environment has installed
    env = dict(os.environ, MEMBENCH_PROGRESS="quiet", PYTHONPATH=str(REPO_ROOT))
    port = str(_free_port())
    servers: list[subprocess.Popen] = []
    try:
        for line in commands():
            words = shlex.split(line.replace("8766", port))
            cmd_env = dict(env)
            while "=" in words[0]:
                k, v = words.pop(0).split("=", 1)
                cmd_env[k] = os.pathsep.join(filter(None, [str((work / v).resolve()), env.get(k)]))
            background = words[-1] == "&"
            words = [w for w in words if w != "&"]
            if words[:2] == ["make", "sets"]:
                continue  # the session's build, linked above
            if words[:2] == ["kill", "%1"]:
                servers.pop().terminate()
                continue
            if words[:3] == [".venv/bin/pip", "install", "-e"]:
                argv = [
                    sys.executable,
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--no-deps",
                    "--no-build-isolation",
                    "--no-index",
                    "--target",
                    str(target),
                    str(work / words[3]),
                ]
                env["PYTHONPATH"] = os.pathsep.join([str(target), str(REPO_ROOT)])  # installed
            elif words[0] == ".venv/bin/membench":
                argv = [sys.executable, "-m", "membench", *words[1:]]
                if words[1] in ("run", "import-run", "topics", "metrics"):
                    argv += ["--sets", str(built.out)]
            elif words[0] == ".venv/bin/python":
                argv = [sys.executable, *words[1:]]
            else:
                raise AssertionError(f"docs/your-system.md: cannot run {line!r}")
            if background:
                p = subprocess.Popen(
                    argv,
                    cwd=work,
                    env=cmd_env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                servers.append(p)
                _wait_for(f"http://127.0.0.1:{port}", p)
                continue
            r = subprocess.run(
                argv, cwd=work, env=cmd_env, capture_output=True, text=True, timeout=900
            )
            assert r.returncode == 0, f"{line}\n{r.stdout}\n{r.stderr}"
            assert "Traceback" not in r.stderr, r.stderr
    finally:
        for p in servers:
            p.terminate()
        for p in servers:
            p.wait(20)
            p.stdout.close()
            p.stderr.close()
    runs = {
        name: work / "runs" / name
        for name in ("overlap-dev", "overlap-ep-dev", "overlap-http-dev", "overlap-trec-dev")
    }
    metas = {k: json.loads((d / "meta.json").read_text()) for k, d in runs.items()}
    assert [m["system"] for m in metas.values()] == [
        "overlap",
        "overlap",
        "overlap-http",
        "overlap-trec",
    ]
    assert all(m["status"] == "complete" for m in metas.values())
    lines = {k: _lines(d) for k, d in runs.items()}
    asked = set(lines["overlap-dev"])
    assert len(asked) == 20 and set(lines["overlap-http-dev"]) == asked
    assert lines["overlap-dev"] == {
        q: {**r, "latency_ms": lines["overlap-dev"][q]["latency_ms"]}
        for q, r in lines["overlap-ep-dev"].items()
    }

    # the three doors rank the same atoms (same item, same extent) in the same order, with
    # the same scores and the same cartridge, query by query
    def extents(name):
        atoms = {
            a["atom_id"]: (a["source_id"], json.dumps(a["extent"], sort_keys=True))
            for a in map(json.loads, (runs[name] / "atoms.jsonl").read_text().splitlines())
        }
        return {
            q: (
                [(atoms[a], round(s, 12)) for a, s in lines[name][q]["hits"]],
                [atoms[a] for a in lines[name][q]["cartridge"]],
            )
            for q in asked
        }

    python, http, trec = (
        extents(n) for n in ("overlap-dev", "overlap-http-dev", "overlap-trec-dev")
    )
    assert python == http == trec
    assert sum(1 for hits, _ in python.values() if hits) >= 15  # a real ranking
    for name in ("overlap-dev", "overlap-http-dev"):  # scope kept, evidence found
        m = json.loads((runs[name] / "metrics.json").read_text())["conversation"]
        assert m["holder_correctness"]["value"] == m["temporal_correctness"]["value"] == 1.0
        assert m["holder_correctness"]["n"] == 20 and m["recall@100"]["value"] > 0.3
    assert metas["overlap-http-dev"]["store"]["atoms"] == metas["overlap-trec-dev"]["atoms"]


def test_the_readme_shows_each_door_with_its_first_steps():
    """README's three doors are the page's commands (which the test above runs), each with
    the steps before it on the page: the server started (and stopped) for door 2, the topics
    written and answered for door 3."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    body = readme[readme.index("## Your own system") : readme.index("## The manual")]
    block = re.search(r"^```sh\n(.*?)^```", body, re.M | re.S).group(1)
    shown = [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]
    page = {info_body for info, info_body in BLOCKS if info.strip() == "sh"}
    page_blocks = [[ln.split(" #")[0].strip() for ln in b.splitlines() if ln.strip()] for b in page]
    doors = (
        "--system my_memory:WordOverlap",
        "--system http://127.0.0.1:8766",
        "membench import-run",
    )
    for door in doors:
        line = next(c for c in shown if door in c)
        where = next(b for b in page_blocks if line in b)
        i = where.index(line)
        steps = where[: i + 1] + [c for c in where[i + 1 :] if c.startswith("kill ")]
        steps = [c for c in steps if not c.startswith(".venv/bin/membench metrics")]
        assert any(shown[k : k + len(steps)] == steps for k in range(len(shown))), (door, steps)
