"""The run's keeper process and what a run says at its end: the scope line and
``--strict-scope``, a keeper that dies, ``--sample-seed``."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from hostile_world import cli_args, write_world

from membench.cli import main
from membench.metrics.rundir import RunDir
from membench.run.runner import load_split, run_system
from membench.systems import make_system


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("MEMBENCH_PROGRESS", "quiet")


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path / "w")


def _ids(out: Path) -> list[str]:
    return [json.loads(l)["query_id"] for l in (out / "run.jsonl").read_text().splitlines()]


def test_a_run_that_leaks_scope_ends_with_one_line_and_strict_makes_it_fail(
    world, tmp_path, capsys
):
    out = tmp_path / "leaky"
    assert main(["run", "--system", "leaky", *cli_args(world), "--out", str(out)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    meta = json.loads((out / "meta.json").read_text())
    s = meta["scope"]
    assert s["checked"] == meta["queries"] and s["other_holder"] > 0
    first = s["first"]["query_id"]
    assert first == _ids(out)[0] or first in _ids(out)
    assert err[0] == (
        f"membench: scope: system leaky: {s['other_holder']} of {s['checked']} "
        f"queries got atoms of another holder"
        + (
            f" and {s['after_as_of']} of {s['checked']} queries got atoms observed after as_of"
            if s["after_as_of"]
            else ""
        )
        + f" (first: {first}, atom {s['first']['other_holder_atom']}); holder "
        "and temporal correctness count them (`membench metrics`)"
    )
    # the count is the metrics' own: holder correctness is the share without such atoms
    m = RunDir.open(out).metrics(write=False)["all"]
    assert m["holder_correctness"]["value"] == pytest.approx(1 - s["other_holder"] / s["checked"])
    assert (
        main(
            [
                "run",
                "--system",
                "leaky",
                *cli_args(world),
                "--out",
                str(tmp_path / "s"),
                "--strict-scope",
            ]
        )
        == 1
    )
    assert capsys.readouterr().err.strip().splitlines() == err  # the same one line
    assert (
        main(
            [
                "run",
                "--system",
                "random",
                *cli_args(world),
                "--out",
                str(tmp_path / "r"),
                "--strict-scope",
            ]
        )
        == 0
    )
    assert "scope" not in capsys.readouterr().err
    assert json.loads((tmp_path / "r" / "meta.json").read_text())["scope"]["other_holder"] == 0


class KillsItsKeeper:
    """A random-like system that kills the run's keeper process at its third query."""

    name = "random"

    def __init__(self):
        self.inner, self.n = make_system("random"), 0
        self.card = self.inner.card  # the run it resumes is random's, card and all

    def config(self):
        return self.inner.config()

    def ingest(self, items, root):
        return self.inner.ingest(items, root)

    def query(self, q, scope, as_of):
        self.n += 1
        if self.n == 3:
            for d in Path("/proc").iterdir():
                if d.name.isdigit():
                    try:
                        stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
                        cmd = (d / "cmdline").read_bytes()
                    except OSError:
                        continue
                    if int(stat[1]) == os.getpid() and b"membench.run.keeper" in cmd:
                        os.kill(int(d.name), signal.SIGKILL)
        return self.inner.query(q, scope, as_of)


def test_a_keeper_that_dies_is_one_line_and_the_run_resumes(world, tmp_path, monkeypatch, capsys):
    import membench.systems as systems

    real = systems.make_system
    monkeypatch.setattr(
        systems,
        "make_system",
        lambda n, cfg=None: KillsItsKeeper() if n == "killer" else real(n, cfg),
    )
    out = tmp_path / "run"
    rest = [*cli_args(world), "--out", str(out)]
    assert main(["run", "--system", "killer", *rest]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("membench: the run's keeper process (pid ") and "\n" not in err
    assert "ended (status -9)" in err and "re-run the same command to resume" in err
    assert json.loads((out / "meta.json").read_text())["status"] == "running"
    assert len(_ids(out)) <= 2
    assert main(["run", "--system", "random", *rest]) == 0
    ids = _ids(out)
    assert len(ids) == len(set(ids)) == json.loads((out / "meta.json").read_text())["queries"]


def test_sample_seed_draws_another_sample_that_readers_follow(built, corpus_root, tmp_path):
    plain = [r.query_id for r in load_split(built.out, "dev", ["pdf"], limit=5).records]
    seeded = [r.query_id for r in load_split(built.out, "dev", ["pdf"], 5, 7).records]
    assert len(seeded) == 5 and set(seeded) != set(plain)
    out = tmp_path / "s"
    meta = run_system(
        make_system("random"),
        built.out,
        "dev",
        out,
        corpus_root,
        modalities=["pdf"],
        limit=5,
        sample_seed=7,
    )
    assert meta["sample_seed"] == 7 and sorted(_ids(out)) == sorted(seeded)
    assert RunDir.open(out).metrics(write=False)["pdf"]["false_recall_rate"]["n"] >= 0
    with pytest.raises(Exception, match="--sample-seed goes with --limit"):
        run_system(
            make_system("random"), built.out, "dev", tmp_path / "x", corpus_root, sample_seed=7
        )
