"""``membench run --engine ray`` on a local multi-worker Ray cluster: the same files as the local
engine (run lines equal but for latency_ms, atoms byte for byte), a killed worker replaced, an
interrupted run resumed, the usual refusals, and no Ray process left behind (after the run, and
after its driver is killed). Nothing the local cluster starts listens beyond loopback (its
sockets listed with psutil during a run), and an ``--address`` that does not answer fails
within 30 s; one that does is joined.

One local cluster (2 CPUs, so it fits a 2-core machine) serves the module; the command-line
test starts and stops its own. Runs use the fixture corpus (tests/minicorpus.py: OCR'd
screenshots, code, captions, conversations over 7 dev holders) and, for the identity on real
data, a --limit slice of the real dev sets.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from membench.core.errors import MembenchError
from membench.run.runner import run_system
from membench.systems import make_system

ray = pytest.importorskip("ray")

from membench.run import ray_engine  # noqa: E402


def _ray_pids(tag: str) -> set[int]:
    """Processes whose command line or environment names this local cluster's folder (every
    process of the cluster has its PYTHONPATH entry under it)."""
    return set(ray_engine._session_pids(Path(tag)))


def _lines(run_dir: Path) -> list[dict]:
    rows = [json.loads(x) for x in (run_dir / "run.jsonl").read_text().splitlines()]
    for r in rows:
        assert r.pop("latency_ms") >= 0
    return rows


def _same(local: Path, other: Path) -> int:
    assert (other / "atoms.jsonl").read_bytes() == (local / "atoms.jsonl").read_bytes()
    a, b = _lines(local), _lines(other)
    assert a == b
    assert len(a) > 0
    return len(a)


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    from minicorpus import freeze, make_corpus

    root = tmp_path_factory.mktemp("raymini")
    corpus = make_corpus(root)
    return {"corpus": corpus, **freeze(corpus, root)}


def _kw(mini):
    return dict(lock=mini["lock"], manifest=mini["manifest"])


def _dev(mini, mods: list[str] | None = None) -> int:
    """How many dev queries the mini sets hold (of ``mods``, default all): what a complete run
    answers."""
    from membench.run.runner import load_split

    return sum(
        1 for r in load_split(mini["sets"], "dev").records if mods is None or r.modality in mods
    )


@pytest.fixture(scope="module")
def local_bm25(mini, tmp_path_factory):
    out = tmp_path_factory.mktemp("local-bm25") / "run"
    run_system(make_system("bm25"), mini["sets"], "dev", out, mini["corpus"], **_kw(mini))
    return out


def test_cli_ray_run_equals_local_and_leaves_no_ray_process(mini, local_bm25, tmp_path):
    import tempfile

    raytmp = tempfile.mkdtemp(prefix="mbt", dir="/tmp")  # short: Ray's socket paths
    out = tmp_path / "cli"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "membench",
            "run",
            "--system",
            "bm25",
            "--engine",
            "ray",
            "--workers",
            "2",
            "--sets",
            str(mini["sets"]),
            "--corpus",
            str(mini["corpus"]),
            "--manifest",
            str(mini["manifest"]),
            "--lock",
            str(mini["lock"]),
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "MEMBENCH_RAY_TMP": raytmp},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _same(local_bm25, out) == _dev(mini)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["engine"]["engine"] == "ray" and meta["engine"]["shards"] == 2
    assert meta["status"] == "complete"
    assert meta["engine"]["listening"]["all_loopback"] and meta["engine"]["listening"]["sockets"]
    assert json.loads((local_bm25 / "meta.json").read_text())["engine"] == "local"
    assert _ray_pids(raytmp) == set(), "a Ray process outlived the run"
    assert os.listdir(raytmp) == []  # its session folder is gone
    os.rmdir(raytmp)


@pytest.fixture(scope="module")
def cluster():
    try:
        with ray_engine.cluster(num_cpus=2) as where:
            yield where
    finally:
        assert not ray.is_initialized()
    assert _ray_pids(where["folder"]) == set(), "a Ray process outlived ray.shutdown()"
    assert not Path(where["folder"]).exists()


def test_ray_equals_local_with_ocr_extraction_tasks(cluster, mini, local_bm25, tmp_path):
    events = []
    meta = ray_engine.run_system_ray(
        "bm25",
        {},
        mini["sets"],
        "dev",
        tmp_path,
        mini["corpus"],
        workers=3,
        window=4,
        on_event=lambda k, i: events.append(k),
        **_kw(mini),
    )
    assert _same(local_bm25, tmp_path) == _dev(mini)
    assert meta["engine"]["shards"] == 3 and meta["engine"]["restarts"] == 0
    # the screenshots were OCR'd (or read from the cache) by Ray tasks
    assert meta["engine"]["extraction"]["items"] == 2 and meta["engine"]["extraction"]["tasks"] >= 1
    assert events.count("window") == 4


def test_killed_worker_is_replaced_and_results_are_identical(cluster, mini, local_bm25, tmp_path):
    from membench.run.runner import load_split

    data = load_split(mini["sets"], "dev")
    shards = ray_engine.shard_holders(data.items, data.records, 2)
    last = next(i for i, s in enumerate(shards) if data.records[-1].scope.holder in s)
    state: dict = {"killed": None}

    def on_event(kind, info):
        if kind == "workers":
            state["pids"] = info
        if kind == "window" and info >= 2 and state["killed"] is None:
            state["killed"] = state["pids"][last]  # the worker the last query waits for
            os.kill(state["killed"], signal.SIGKILL)

    meta = ray_engine.run_system_ray(
        "bm25",
        {},
        mini["sets"],
        "dev",
        tmp_path,
        mini["corpus"],
        workers=2,
        window=1,
        on_event=on_event,
        **_kw(mini),
    )
    assert state["killed"] is not None
    assert meta["engine"]["restarts"] >= 1  # the dead worker was noticed and replaced
    assert meta["status"] == "complete" and meta["answered_this_session"] == _dev(mini)
    assert _same(local_bm25, tmp_path) == _dev(mini)


def test_interrupted_ray_run_resumes_with_identical_results(cluster, mini, local_bm25, tmp_path):
    def stop(kind, info):
        if kind == "window" and info >= 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ray_engine.run_system_ray(
            "bm25",
            {},
            mini["sets"],
            "dev",
            tmp_path,
            mini["corpus"],
            workers=2,
            window=5,
            on_event=stop,
            **_kw(mini),
        )
    assert len((tmp_path / "run.jsonl").read_text().splitlines()) == 5
    assert json.loads((tmp_path / "meta.json").read_text())["status"] == "running"
    meta = ray_engine.run_system_ray(
        "bm25", {}, mini["sets"], "dev", tmp_path, mini["corpus"], workers=2, **_kw(mini)
    )
    assert meta["resumed"] == 1 and meta["answered_this_session"] == _dev(mini) - 5
    assert _same(local_bm25, tmp_path) == _dev(mini)
    # and the local engine resumes a ray run too (nothing left to ask)
    meta = run_system(
        make_system("bm25"), mini["sets"], "dev", tmp_path, mini["corpus"], **_kw(mini)
    )
    assert meta["answered_this_session"] == 0 and meta["engine"] == "local"


def test_hybrid_ray_equals_local(cluster, mini, tmp_path, monkeypatch):
    """Dense and BM25 at once, each engine on its own cold cache: the embeddings the Ray tasks
    make (in the local engine's chunks) are the floats the local run makes."""
    local, other = tmp_path / "local", tmp_path / "ray"
    mods = ["conversation", "code"]
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache-local"))
    run_system(
        make_system("hybrid"),
        mini["sets"],
        "dev",
        local,
        mini["corpus"],
        modalities=mods,
        **_kw(mini),
    )
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache-ray"))
    meta = ray_engine.run_system_ray(
        "hybrid",
        {},
        mini["sets"],
        "dev",
        other,
        mini["corpus"],
        modalities=mods,
        workers=2,
        **_kw(mini),
    )
    assert meta["engine"]["extraction"]["embedded"] > 0  # made by Ray tasks, not the shards
    assert _same(local, other) == _dev(mini, mods)


def test_real_dev_bm25_ray_equals_local(cluster, built, corpus_root, tmp_path):
    local, other = tmp_path / "local", tmp_path / "ray"
    mods = ["conversation", "code", "video"]
    run_system(
        make_system("bm25"),
        built.out,
        "dev",
        local,
        corpus_root,
        modalities=mods,
        limit=20,
        check_sets=False,
    )
    ray_engine.run_system_ray(
        "bm25",
        {},
        built.out,
        "dev",
        other,
        corpus_root,
        modalities=mods,
        limit=20,
        workers=2,
        check_sets=False,
    )
    assert _same(local, other) == 60


def test_refusals_before_any_cluster(mini, tmp_path):
    with pytest.raises(MembenchError, match="frozen"):
        ray_engine.run_system_ray(
            "bm25", {}, mini["sets"], "test", tmp_path, mini["corpus"], **_kw(mini)
        )
    with pytest.raises(MembenchError, match="gold"):
        ray_engine.run_system_ray(
            "oracle", {}, mini["sets"], "dev", tmp_path, mini["corpus"], **_kw(mini)
        )
    assert not (tmp_path / "meta.json").exists()


def test_without_ray_the_command_says_how_to_install_it(monkeypatch, capsys, mini, tmp_path):
    from membench import cli

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    rc = cli.main(
        [
            "run",
            "--system",
            "bm25",
            "--engine",
            "ray",
            "--sets",
            str(mini["sets"]),
            "--out",
            str(tmp_path / "r"),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "pip install 'membench[ray]'" in err[0]
    assert not (tmp_path / "r").exists()
    rc = cli.main(
        [
            "run",
            "--system",
            "bm25",
            "--address",
            "x:1",
            "--sets",
            str(mini["sets"]),
            "--out",
            str(tmp_path / "r"),
        ]
    )
    assert rc == 2 and "--engine ray" in capsys.readouterr().err


def test_shard_holders_is_a_balanced_deterministic_partition():
    from types import SimpleNamespace as N

    items = [N(holder=f"h{i % 7}") for i in range(50)] + [N(holder="big")] * 30
    recs = [N(scope=N(holder=f"h{i % 5}")) for i in range(20)]
    shards = ray_engine.shard_holders(items, recs, 3)
    assert shards == ray_engine.shard_holders(items, recs, 3)
    flat = [h for s in shards for h in s]
    assert sorted(flat) == sorted({*(f"h{i}" for i in range(7)), "big"})
    w = {
        h: sum(i.holder == h for i in items) + sum(r.scope.holder == h for r in recs) for h in flat
    }
    loads = [sum(w[h] for h in s) for s in shards]  # here 37, 30, 33
    assert max(loads) - min(loads) <= sorted(w.values())[-2]  # greedy: within one holder
    assert len(ray_engine.shard_holders(items, recs, 20)) == 8  # no empty shards


# --------------------------------------------------------------------------- network and time


def _listening(pids) -> list[tuple[int, str, str, int]]:
    """Listening TCP sockets of ``pids``, read with psutil process by process (independent of
    membench.core.listening): (pid, name, address, port)."""
    import psutil

    out = []
    for pid in pids:
        try:
            p = psutil.Process(pid)
            for c in p.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN:
                    out.append((pid, p.name(), c.laddr.ip, c.laddr.port))
        except psutil.Error:
            pass
    return out


def _loopback(ip: str) -> bool:
    import ipaddress

    a = ipaddress.ip_address(ip)
    return (getattr(a, "ipv4_mapped", None) or a).is_loopback


def test_a_local_ray_run_listens_on_loopback_only(cluster, mini, local_bm25, tmp_path):
    """Every socket the cluster's processes (GCS, raylet, agents, workers, the driver) listen
    on while the shards answer is loopback. (Before: the driver, Ray's core processes and both
    workers listened on every interface, an agent on 0.0.0.0, another on the LAN address.)"""
    seen: dict = {}

    def on_event(kind, info):
        if kind == "workers":
            pids = set(_ray_pids(cluster["folder"])) | ray_engine._descendants() | set(info)
            seen["sockets"] = _listening(pids | {os.getpid()})
            seen["workers"] = info

    meta = ray_engine.run_system_ray(
        "bm25",
        {},
        mini["sets"],
        "dev",
        tmp_path,
        mini["corpus"],
        workers=2,
        on_event=on_event,
        **_kw(mini),
    )
    socks = seen["sockets"]
    names = {n for _, n, _, _ in socks}
    assert "gcs_server" in names and "raylet" in names, socks
    assert {pid for pid, *_ in socks} >= set(seen["workers"])  # the shards listen too
    wide = [x for x in socks if not _loopback(x[2])]
    assert not wide, wide
    # membench's own check agrees (the module's cluster was made before the run, so the run
    # did not check it itself; the command-line test checks meta.json's record)
    assert ray_engine.check_loopback(cluster, "after the run") >= 4
    assert meta["status"] == "complete" and _same(local_bm25, tmp_path) == _dev(mini)


def test_the_loopback_check_refuses_a_cluster_that_listens_wider(monkeypatch):
    """(the check itself: a socket on the wildcard address stops the run, naming it)"""
    from membench.core.listening import Listener

    wide = Listener(4242, "raylet", "::", 40000)
    monkeypatch.setattr(ray_engine, "exposed", lambda where: ([wide], [wide]))
    with pytest.raises(
        MembenchError,
        match=r"listens beyond this machine: \[::\]:40000 "
        r"\(raylet, pid 4242\); membench runs a local cluster on 127\.0\.0\.1 only",
    ):
        ray_engine.check_loopback({"folder": "/nowhere"}, "started")


_DRIVER = """
import os, sys, time
from membench.run import ray_engine
import ray
with ray_engine.cluster(num_cpus=2) as where:
    @ray.remote
    class Worker:
        def pid(self):
            return os.getpid()
    w = Worker.remote()
    print("up", ray.get(w.pid.remote()), flush=True)
    time.sleep(600)
"""


def test_a_killed_driver_leaves_no_ray_process(tmp_path):
    """SIGKILL to the driver (no finally runs): every process of its local cluster is gone
    within 15 s, and its folder too. (Before: DashboardAgent and RuntimeEnvAgent outlived it by
    more than 15 s; 62 s measured here.)"""
    import tempfile
    import time

    raytmp = tempfile.mkdtemp(prefix="mbk", dir="/tmp")
    env = {
        **os.environ,
        "MEMBENCH_RAY_TMP": raytmp,
        "PYTHONPATH": os.pathsep.join(
            [
                str(Path(ray_engine.__file__).parents[2]),
                *filter(None, [os.environ.get("PYTHONPATH")]),
            ]
        ),
    }
    p = subprocess.Popen(
        [sys.executable, "-c", _DRIVER],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        line = p.stdout.readline()
        assert line.startswith("up "), line
        before = _ray_pids(raytmp) - {p.pid}
        assert int(line.split()[1]) in before and len(before) >= 5
        os.kill(p.pid, signal.SIGKILL)
        p.wait(30)
        t0 = time.monotonic()
        while _ray_pids(raytmp) - {p.pid} and time.monotonic() - t0 < 15:
            time.sleep(0.2)
        left = _ray_pids(raytmp) - {p.pid}
        assert not left, f"Ray processes outlived their killed driver by 15 s: {left}"
        while os.listdir(raytmp) and time.monotonic() - t0 < 15:
            time.sleep(0.2)
        assert os.listdir(raytmp) == []
    finally:
        if p.poll() is None:
            p.kill()
        for pid in _ray_pids(raytmp) - {p.pid}:  # (only if the test failed)
            os.kill(pid, signal.SIGKILL)
        p.stdout.close()
    os.rmdir(raytmp)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_address_nobody_answers_fails_within_30_s(mini, tmp_path):
    import socket
    import threading
    import time

    port = _free_port()
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "membench",
            "run",
            "--system",
            "bm25",
            "--engine",
            "ray",
            "--address",
            f"127.0.0.1:{port}",
            "--sets",
            str(mini["sets"]),
            "--corpus",
            str(mini["corpus"]),
            "--manifest",
            str(mini["manifest"]),
            "--lock",
            str(mini["lock"]),
            "--out",
            str(tmp_path / "r"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - t0  # the whole command, Python's start included
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"--address 127.0.0.1:{port}: cannot join the Ray cluster" in lines[0]
    assert took < 30, took
    assert not (tmp_path / "r").exists()  # refused before RUN_DIR is touched
    # a port that accepts and never speaks: Ray's client waits, within the stated time
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held: list = []
    threading.Thread(
        target=lambda: [held.append(srv.accept()) for _ in range(8)], daemon=True
    ).start()
    try:
        addr = f"127.0.0.1:{srv.getsockname()[1]}"
        t0 = time.monotonic()
        # (Ray's local-only mode: 127.0.0.1 stays 127.0.0.1, as for a cluster membench started)
        with ray_engine._loopback_node():
            with pytest.raises(
                MembenchError,
                match=rf"--address {addr}: cannot join the Ray "
                r"cluster: no Ray GCS answered there within 30 s",
            ):
                ray_engine.probe_address(addr)  # the default: 30 s
            assert time.monotonic() - t0 < 31
            with pytest.raises(MembenchError, match=r"within 2 s"):
                ray_engine.probe_address(addr, 2)
    finally:
        srv.close()
        for c, _ in held:
            c.close()


def test_an_address_that_answers_is_joined(mini, local_bm25, tmp_path):
    """The probe does not refuse a real cluster: a local one in another process (loopback
    only, so the joining command resolves 127.0.0.1 as Ray's local-only mode does)."""
    import time

    head = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _DRIVER.replace(
                'print("up", ray.get(w.pid.remote()), flush=True)',
                'print("up", ray._private.worker._global_node.gcs_address, flush=True)',
            ),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [
                    str(Path(ray_engine.__file__).parents[2]),
                    *filter(None, [os.environ.get("PYTHONPATH")]),
                ]
            ),
        },
    )
    try:
        line = head.stdout.readline()
        assert line.startswith("up 127.0.0.1:"), line
        gcs = line.split()[1]
        t0 = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "membench",
                "run",
                "--system",
                "bm25",
                "--engine",
                "ray",
                "--address",
                gcs,
                "--workers",
                "2",
                "--sets",
                str(mini["sets"]),
                "--corpus",
                str(mini["corpus"]),
                "--manifest",
                str(mini["manifest"]),
                "--lock",
                str(mini["lock"]),
                "--out",
                str(tmp_path / "joined"),
                "--quiet",
            ],
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token"},
        )  # the local head has Ray's token auth on
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert time.monotonic() - t0 < 600
        meta = json.loads((tmp_path / "joined" / "meta.json").read_text())
        assert meta["engine"]["cluster"] == gcs and "listening" not in meta["engine"]
        assert _same(local_bm25, tmp_path / "joined") == _dev(mini)
    finally:
        head.terminate()
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            head.kill()
        head.stdout.close()
