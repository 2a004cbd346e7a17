"""``membench run --engine ray``: one run spread over Ray workers, with the local runner's files
(docs/ray.md says how the work is spread, why the cluster is loopback-only and what was measured).

Start at :func:`run_system_ray`: the local engine's checks, lock and files
(:mod:`membench.run.runner`; ``meta.json`` adds ``engine``; the same lines, ``latency_ms`` aside),
written by the run's keeper process (:mod:`membench.run.keeper`). The split's holders are dealt into shards
(:func:`shard_holders`), one :class:`ShardWorker` actor each (its ``config()`` equal to the
driver's); for the reference systems, PDF text, OCR and missing embeddings are computed first as
Ray tasks (:func:`extract_content`) into the content cache, which the shards read; queries go
out in windows of presentation order. A dead worker is replaced (its atoms must equal the first
ones; at most ``max_restarts`` per shard) and its unanswered queries asked again; a dead driver
leaves RUN_DIR resumable by either engine. The driver and the workers hold topics, never the
sets' records.

:func:`cluster` starts a local cluster (``num_cpus = workers``, no dashboard, session files in a
fresh temporary folder, removed) bound to 127.0.0.1 only, checked with :func:`check_loopback`,
with a reaper (:mod:`membench.run.ray_reaper`) so nothing outlives the driver; or joins
``address`` after :func:`probe_address` (``connect_timeout``, bound ``ray_connect_seconds``).
Touches: RUN_DIR, the content cache, the local cluster's temporary folder, its processes.

Why one file: the driver, its cluster (start, loopback check, the reaper's hand-off, the kill
at the end) and the shard workers are one protocol whose promises (each line written exactly
once, no process outlives the driver, no port off loopback) are read and tested together; the
process that reaps a dead driver's cluster is :mod:`membench.run.ray_reaper`.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..content.config import CONTENT_ENV, content_settings
from ..contract.protocol import Atom
from ..contract.schema import AnnotationRecord, SourceItem
from ..core import progress as _progress
from ..core.bounds import bound
from ..core.errors import MembenchError
from ..core.hashing import code_digest
from ..core.jsonl import dumps
from ..core.netguard import quiet_native_telemetry
from ..core.paths import MANIFEST_PATH, cache_dir
from .runner import (
    _check_hits,
    _write_json,
    answer_for_sending,
    begin_run,
    check_answer,
    check_confidence,
    finish_meta,
    located_os_errors,
    preflight,
    record_atoms,
    truncation_meta,
    warn_scope,
)

INSTALL_HINT = (
    "the ray engine needs Ray, an optional extra: pip install 'membench[ray]' (or pip install ray)"
)
DEFAULT_WINDOW = 256
MAX_RESTARTS = 3
OCR_PDF = ("pdf", "image", "ui_screenshot")
START_ATTEMPTS = 3  # a local cluster's start can fail on a loaded machine: try again
CONNECT_SECONDS = bound(
    "ray_connect_seconds",
    30.0,
    "s",
    "joining a Ray cluster at "
    "`--address`: a TCP connection, then its GCS must answer "
    "(`--connect-timeout`)",
    "exit 2, one line naming the address",
    "membench.run.ray_engine",
)


def import_ray():
    """The ``ray`` module, or a one-line :class:`MembenchError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise MembenchError(INSTALL_HINT) from None
    return ray


def default_workers() -> int:
    """Workers of a local cluster when not given: the cores, at most 4."""
    return max(1, min(os.cpu_count() or 1, 4))


# --------------------------------------------------------------------------- cluster

_STUB = 'raise ImportError("left out of Ray helper processes by membench (slow to import)")\n'


@contextmanager
def cluster(
    address: str | None = None,
    num_cpus: int | None = None,
    object_store_bytes: int = 1 << 30,
    connect_timeout: float | None = CONNECT_SECONDS,
) -> Iterator[dict]:
    """A Ray connection for the duration of the block; yields what it is (recorded in
    meta.json). Already connected (``ray.is_initialized()``: a test or a notebook made it):
    used as is and left open. ``address``: joins that cluster (which must answer within
    ``connect_timeout`` s: :func:`probe_address`; None: probed already), disconnects
    afterwards. Else a local cluster
    of ``num_cpus`` CPUs bound to 127.0.0.1 only (checked: :func:`check_loopback`), shut down
    afterwards, its session files in a fresh folder under ``$MEMBENCH_RAY_TMP`` (default: the
    system's temporary folder; keep the path short: Ray's socket paths must fit 107 bytes),
    removed afterwards, and a reaper that kills what is left of it if this process dies."""
    ray = import_ray()
    if ray.is_initialized():
        yield {"cluster": "connected before the run", "cpus": _cpus(ray)}
        return
    if address:
        if connect_timeout is not None:
            probe_address(address, connect_timeout)
        try:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise MembenchError(
                f"--address {address}: cannot join the Ray cluster: "
                f"{str(e).splitlines()[0][:200] if str(e) else type(e).__name__}"
            ) from None
        try:
            yield {"cluster": address, "cpus": _cpus(ray)}
        finally:
            ray.shutdown()
        return
    n = num_cpus or default_workers()
    tmp = Path(tempfile.mkdtemp(prefix="mbray-", dir=os.environ.get("MEMBENCH_RAY_TMP") or None))
    reaper = _start_reaper(tmp)  # before the environment names the folder
    stub = tmp / "pystub" / "rfc3987_syntax"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text(_STUB)
    env_before = {
        k: os.environ.get(k) for k in ("PYTHONPATH", "RAY_USAGE_STATS_ENABLED", _LOCAL_ONLY)
    }
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(stub.parent)] + ([env_before["PYTHONPATH"]] if env_before["PYTHONPATH"] else [])
    )
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ[_LOCAL_ONLY] = "0"  # node address 127.0.0.1, in every process it starts
    listening_before = _own_listeners()
    try:
        try:
            for attempt in range(1, START_ATTEMPTS + 1):
                nice = _boost()
                try:
                    with _loopback_node():
                        ray.init(
                            num_cpus=n,
                            include_dashboard=False,
                            log_to_driver=False,
                            configure_logging=False,
                            _node_ip_address="127.0.0.1",
                            _temp_dir=str(tmp / f"r{attempt}"),
                            object_store_memory=object_store_bytes,
                            _system_config={"worker_register_timeout_seconds": 600},
                        )
                    break
                except Exception as e:  # noqa: BLE001 - ray raises a bare Exception here
                    why = _start_failure(tmp / f"r{attempt}") or str(e).splitlines()[0]
                    if ray.is_initialized():
                        ray.shutdown()
                    _kill_session(tmp)  # a failed start leaves some helpers running
                    if attempt == START_ATTEMPTS:
                        raise MembenchError(
                            f"the local Ray cluster did not start ({attempt} "
                            f"tries; last: {why[:300]})"
                        ) from None
                finally:
                    _unboost(nice, tmp)
        finally:
            for k, v in env_before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        where = {
            "cluster": f"local ({n} CPUs)",
            "cpus": n,
            "folder": str(tmp),
            "listening_before": listening_before,
        }
        where["listening"] = check_loopback(where, "started")
        yield where
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _kill_session(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        _stop_reaper(reaper)


_LOCAL_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextmanager
def _loopback_node() -> Iterator[None]:
    """Ray's node address 127.0.0.1 for this process's ``ray.init``: Ray reads
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` once, at import, so its constant is set for the
    call (the environment variable, set by :func:`cluster`, reaches the processes it starts)."""
    try:
        from ray._private import ray_constants as rc
    except ImportError:  # another Ray layout: the socket check still refuses
        yield
        return
    old = getattr(rc, "ENABLE_RAY_CLUSTER", None)
    rc.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        rc.ENABLE_RAY_CLUSTER = old


def cluster_pids(where: dict) -> set[int]:
    """The processes of a local cluster :func:`cluster` started: those naming its folder and
    this process's descendants (Ray renames its helpers' command lines)."""
    return set(_session_pids(Path(where["folder"]))) | _descendants()


def _own_listeners() -> set[tuple[str, int]]:
    from ..core.listening import listeners

    return {(x.address, x.port) for x in listeners([os.getpid()])}


def exposed(where: dict) -> tuple[list, list]:
    """``(every listening socket, those not on a loopback address)`` of a local cluster: its
    processes', and those this process opened since the cluster started (the driver's core
    worker)."""
    from ..core.listening import listeners

    me = os.getpid()
    before = where.get("listening_before", set())
    found = [
        x
        for x in listeners(cluster_pids(where) | {me})
        if x.pid != me or (x.address, x.port) not in before
    ]
    return found, [x for x in found if not x.loopback]


def check_loopback(where: dict, when: str) -> int:
    """Refuse a local cluster that listens on anything but loopback (one line naming the
    sockets); returns how many sockets it listens on. Joined clusters are not checked."""
    if "folder" not in where:
        return 0
    found, wide = exposed(where)
    if wide:
        raise MembenchError(
            f"the local Ray cluster ({when}) listens beyond this machine: "
            + ", ".join(map(str, wide[:6]))
            + (f" and {len(wide) - 6} more" if len(wide) > 6 else "")
            + "; membench runs a local cluster on 127.0.0.1 only, and stops here (this Ray "
            "binds otherwise: docs/ray.md)"
        )
    return len(found)


def _start_reaper(tmp: Path) -> subprocess.Popen | None:
    """The reaper of this local cluster (:mod:`membench.run.ray_reaper`): told the folder, then
    waiting for the pipe to close."""
    try:
        p = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("ray_reaper.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        p.stdin.write(f"{tmp}\n".encode())
        p.stdin.flush()
        return p
    except OSError:  # no reaper: the finally of cluster() still shuts it down
        return None


def _stop_reaper(p: subprocess.Popen | None) -> None:
    if p is None:
        return
    try:
        p.stdin.close()
        p.wait(30)
    except (OSError, subprocess.TimeoutExpired):
        pass


def probe_address(address: str, timeout: float = CONNECT_SECONDS) -> None:
    """Within about ``timeout`` seconds, a TCP connection to ``address`` (``HOST:PORT``, or
    ``ray://HOST:PORT`` for Ray Client) and, for a GCS address, an answer from Ray's GCS
    client; else a :class:`MembenchError` naming the address and what failed."""
    import re

    t0 = time.monotonic()
    address = address.strip()
    client = address.startswith("ray://")
    target = address
    if not client:
        try:  # what ray.init will connect to ("auto", localhost -> this node's address)
            from ray._private.services import canonicalize_bootstrap_address

            target = canonicalize_bootstrap_address(address) or address
        except Exception:  # noqa: BLE001 - not an address Ray takes: the pattern below says so
            target = address
    m = re.fullmatch(r"(?:ray://)?(\[[^\]]+\]|[^:/\s\[\]]+):([0-9]{1,5})/?", target)
    if not m or not 0 < int(m.group(2)) < 65536:
        raise MembenchError(
            f"--address {address!r}: expected HOST:PORT (the head's GCS, e.g. "
            "10.0.0.5:6379) or ray://HOST:PORT"
        )
    host, port = m.group(1).strip("[]"), int(m.group(2))
    join = f"--address {address}: cannot join the Ray cluster" + (
        f" (Ray connects to {target})" if target != address else ""
    )
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except socket.gaierror as e:
        raise MembenchError(f"{join}: {host} does not resolve ({e.strerror or e})") from None
    except TimeoutError:
        raise MembenchError(
            f"{join}: no TCP connection within {timeout:g} s "
            "(ray_connect_seconds; --connect-timeout)"
        ) from None
    except ConnectionRefusedError:
        raise MembenchError(
            f"{join}: connection refused (nothing listens there: is the head "
            "running? `ray start --head`)"
        ) from None
    except OSError as e:
        raise MembenchError(f"{join}: {e.strerror or e}") from None
    if client:
        return  # Ray Client: ray.init connects with its own bounded retries
    left = timeout - (time.monotonic() - t0)
    why = _gcs_answers(f"[{host}]:{port}" if ":" in host else f"{host}:{port}", left)
    if why is not None:
        raise MembenchError(
            f"{join}: no Ray GCS answered there within {timeout:g} s ({why}; "
            "ray_connect_seconds, --connect-timeout)"
        )


def _gcs_answers(gcs: str, seconds: float) -> str | None:
    """None when a Ray GCS answers at ``gcs`` within about ``seconds``, else why not. Ray's
    client waits up to three times its timeout (the GCS, its pubsub, the cluster id), and its
    C++ logger writes warnings straight to file descriptor 2, which is captured meanwhile so
    that the command's error stays one line."""
    try:
        from ray._raylet import InnerGcsClient
    except ImportError:
        return None  # another Ray layout: ray.init decides
    ms = max(300, int(seconds * 1000 / 3))
    with tempfile.TemporaryFile() as cap:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(cap.fileno(), 2)
        try:
            InnerGcsClient.standalone(gcs, None, ms)
            return None
        except Exception as e:  # noqa: BLE001 - Ray raises its own RpcError
            return " ".join(str(e).split())[:200] or type(e).__name__
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _session_pids(tmp: Path) -> list[int]:
    """Processes (not this one) whose command line or environment names this local cluster's
    folder (Ray renames its helpers' command lines; their environment keeps the PYTHONPATH
    entry under that folder)."""
    from .ray_reaper import session_pids  # the reaper's own rule, one place

    return session_pids(str(tmp).encode(), {os.getpid()})


def _descendants() -> set[int]:
    """This process's descendants (Ray renames its helpers' command lines, so they are found
    by parentage too)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [os.getpid()]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _kill_session(tmp: Path) -> None:
    """Kill what is left of this local cluster (its processes name its folder: nothing else
    is touched)."""
    import signal

    for pid in _session_pids(tmp):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _boost() -> int | None:
    """Raise this process's priority by 10 while the cluster starts, where allowed (root):
    the raylet aborts when its agent takes over 15 s to start, which a loaded machine makes
    it do. Returns the old niceness (None: not allowed, nothing changed)."""
    try:
        old = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, old - 10)
        return old
    except (OSError, AttributeError):
        return None


def _unboost(old: int | None, tmp: Path) -> None:
    """Back to the old niceness: every thread of this process and of the cluster's processes
    (workers started later inherit it from the raylet)."""
    if old is None:
        return
    for pid in sorted({os.getpid(), *_session_pids(tmp), *_descendants()}):
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            tids = [pid]
        for tid in tids:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, old)
            except OSError:
                pass


def _start_failure(temp: Path) -> str | None:
    """The raylet's fatal line of a local cluster that did not start, if it left one."""
    for f in sorted(temp.glob("session_*/logs/raylet.out")):
        for line in f.read_text(errors="replace").splitlines():
            if "Check failed" in line or " C " in line[:40]:
                return line.split(")", 1)[-1].strip()
    return None


def _cpus(ray) -> int:
    return int(ray.cluster_resources().get("CPU", 0))


# --------------------------------------------------------------------------- sharding


def shard_holders(
    items: Iterable[SourceItem], records: Iterable[AnnotationRecord], n: int
) -> list[list[str]]:
    """Holders dealt into ``n`` shards: heaviest first (items + queries; ties by name), each
    to the least loaded shard (ties: the lower index). Deterministic; empty shards dropped."""
    weight: dict[str, int] = {}
    for it in items:
        weight[it.holder] = weight.get(it.holder, 0) + 1
    for r in records:
        weight[r.scope.holder] = weight.get(r.scope.holder, 0) + 1
    heap = [(0, i) for i in range(max(1, n))]
    shards: list[list[str]] = [[] for _ in range(max(1, n))]
    for h in sorted(weight, key=lambda h: (-weight[h], h)):
        load, i = heapq.heappop(heap)
        shards[i].append(h)
        heapq.heappush(heap, (load + weight[h], i))
    return [sorted(s) for s in shards if s]


# --------------------------------------------------------------------------- worker side

_SYSTEMS: dict[str, Any] = {}


def _worker_system(name: str, config: dict):
    from ..systems import make_system

    key = dumps([name, config])
    if key not in _SYSTEMS:
        _SYSTEMS[key] = make_system(name, dict(config))
    return _SYSTEMS[key]


def _worker_env(env: dict[str, str]) -> None:
    os.environ.update(env)


def _check_corpus(corpus_root: str) -> None:
    if not Path(corpus_root).is_dir():
        raise MembenchError(
            f"worker on {socket.gethostname()}: corpus root {corpus_root} is not "
            "a directory there (every node must see the corpus at the driver's "
            "path: docs/ray.md)"
        )


class ShardWorker:
    """One shard's system (a Ray actor: :func:`run_system_ray` makes it remote)."""

    def __init__(self, name: str, config: dict, env: dict[str, str]):
        _worker_env(env)
        from ..systems import make_system

        with _progress.configured("quiet"):
            self.system = make_system(name, dict(config))

    def hello(self) -> dict:
        package = Path(__file__).parent.parent  # the membench/ this worker runs
        return {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "code": code_digest(),
            "config": self.system.config(),
            "membench": str(package),
        }

    def ingest(self, items: list[SourceItem], corpus_root: str) -> tuple[list[Atom], float]:
        _check_corpus(corpus_root)
        t0 = time.perf_counter()
        with _progress.configured("quiet"):
            atoms = list(self.system.ingest(items, Path(corpus_root)))
        return atoms, time.perf_counter() - t0

    def peak_rss_mb(self) -> float:
        from ..core.memory import peak_rss_mb

        return peak_rss_mb()

    def answer(self, batch: list[tuple]) -> list[tuple]:
        out = []
        replay = getattr(self.system, "take_latency_replay", None)  # dense query_cache
        if replay is not None:
            replay()
        with _progress.configured("quiet"):
            for qid, question, scope, as_of in batch:
                t = time.perf_counter()
                res = self.system.query(question, scope, as_of)
                ms = (time.perf_counter() - t) * 1000.0
                if replay is not None:
                    ms = max(0.0, ms + replay() * 1000.0)
                out.append((qid, *answer_for_sending(res), ms))
        return out


def _dense_engines(engine) -> list:
    from ..systems.dense import DenseEngine

    if isinstance(engine, DenseEngine):
        return [engine]
    sub = getattr(engine, "dense", None)
    return [sub] if isinstance(sub, DenseEngine) else []


def _extract_task(
    name: str, config: dict, env: dict[str, str], items: list[SourceItem], corpus_root: str
) -> int:
    """Chunk ``items`` with the system's own chunker (PDF text and OCR land in the cache)."""
    _worker_env(env)
    _check_corpus(corpus_root)
    with _progress.configured("quiet"):
        system = _worker_system(name, config)
        return len(system.chunker(items, Path(corpus_root)))


def _embed_task(
    name: str, config: dict, env: dict[str, str], which: int, keys: list[bytes], texts: list[str]
) -> int:
    """Embed ``texts`` (one chunk, as the local engine would cut it) into the cache."""
    _worker_env(env)
    with _progress.configured("quiet"):
        eng = _dense_engines(_worker_system(name, config).engine)[which]
        vecs = eng.encode(texts)
        cache = eng.cache
        if cache is not None:
            cache.put_many([(k, vecs[j]) for j, k in enumerate(keys)])
    return len(texts)


# --------------------------------------------------------------------------- extraction


def _reference_chunker(system) -> bool:
    from .. import content
    from ..systems.retrieval import RetrievalSystem

    return (
        isinstance(system, RetrievalSystem)
        and getattr(system.chunker, "func", None) is content.chunk
    )


def _batches(seq: list, n: int) -> list[list]:
    return [seq[i : i + n] for i in range(0, len(seq), n)]


def extract_content(
    ray,
    system,
    name: str,
    config: dict,
    env: dict[str, str],
    items: list[SourceItem],
    corpus_root: Path,
    workers: int,
) -> dict:
    """Fill the content cache with Ray tasks before the shards ingest (see the module
    docstring); returns counts for meta.json. Systems whose chunker is not the reference one
    extract in their own ``ingest`` (nothing to do here)."""
    if not _reference_chunker(system):
        return {"tasks": 0, "note": "not a reference system: extraction runs in its ingest"}
    from ..systems.dense import DIM
    from ..systems.retrieval import has_terms

    extract = ray.remote(num_cpus=1, max_retries=3)(_extract_task)
    heavy = [it for it in items if it.modality in OCR_PDF]
    out = {"tasks": 0, "items": len(heavy), "embedded": 0}
    if heavy:
        size = max(1, min(16, -(-len(heavy) // (4 * workers))))
        parts = _batches(heavy, size)
        with _progress.step("extract (ray tasks)", total=len(heavy), unit="item") as bar:
            pending = {
                extract.remote(name, config, env, b, str(corpus_root)): len(b) for b in parts
            }
            out["tasks"] += len(parts)
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                _get(ray, ready[0])
                bar.advance(pending.pop(ready[0]))
    engines = _dense_engines(system.engine)
    if not engines:
        return out
    # the texts the local engine would embed, in its order: rows by (holder, atom_id) with a
    # letter or digit, distinct, minus the cache's; cut into its chunks
    with _progress.configured("quiet"):
        atoms = system.chunker(items, Path(corpus_root))
    rows = sorted(atoms, key=lambda a: (a.holder, a.atom_id))
    distinct = list(dict.fromkeys(a.text for a in rows if has_terms(a.text)))
    embed = ray.remote(num_cpus=1, max_retries=3)(_embed_task)
    for which, eng in enumerate(engines):
        mk = eng.model_key()
        keys = [
            hashlib.sha256((mk + "\n" + t).encode("utf-8", "surrogatepass")).digest()
            for t in distinct
        ]
        cache = eng.cache
        found = cache.get_many(keys, DIM) if cache else {}
        todo = [i for i, k in enumerate(keys) if k not in found]
        if not todo or cache is None:
            continue
        chunks = _batches(todo, eng.chunk_size)
        with _progress.step("embed (ray tasks)", total=len(todo), unit="text") as bar:
            pending = {
                embed.remote(
                    name, config, env, which, [keys[i] for i in c], [distinct[i] for i in c]
                ): len(c)
                for c in chunks
            }
            out["tasks"] += len(chunks)
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                _get(ray, ready[0])
                bar.advance(pending.pop(ready[0]))
        out["embedded"] += len(todo)
    return out


def _get(ray, ref):
    """``ray.get`` with a worker's exception re-raised as itself (a located InputError stays
    one line); a dead worker's error passes through for the caller to handle."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, BaseException) and not isinstance(cause, ray.exceptions.RayError):
            raise cause from None
        raise


# --------------------------------------------------------------------------- the run


class _Shards:
    """The shard actors, replaced when one dies (see the module docstring)."""

    def __init__(
        self,
        ray,
        actor_cls,
        name,
        config,
        env,
        shard_items,
        corpus_root,
        driver_config,
        max_restarts,
        on_event,
    ):
        self.ray, self.cls, self.name, self.config, self.env = ray, actor_cls, name, config, env
        self.items, self.root = shard_items, str(corpus_root)
        self.driver_config, self.max_restarts = driver_config, max_restarts
        self.on_event = on_event or (lambda kind, info: None)
        self.actors: list = [None] * len(shard_items)
        self.gen = [0] * len(shard_items)
        self.atoms: list[list[Atom] | None] = [None] * len(shard_items)
        self.restarts = 0
        self.last_error: BaseException | None = None
        self.pids: list[int] = [0] * len(shard_items)
        self.hosts: set[str] = set()
        self.ingest_seconds = [0.0] * len(shard_items)

    def _new(self, i: int):
        self.actors[i] = self.cls.remote(self.name, self.config, self.env)
        self.gen[i] += 1

    def _hello(self, i: int) -> None:
        info = _get(self.ray, self.actors[i].hello.remote())
        if info["code"] != self.driver_code:
            raise MembenchError(
                f"worker on {info['host']} runs other membench code than the "
                f"driver ({info['membench']}): install the same membench on "
                "every node (docs/ray.md)"
            )
        if info["config"] != self.driver_config:
            raise MembenchError(
                f"worker on {info['host']}: system {self.name} has another "
                "config there than in the driver (calibration files or "
                "packages differ between nodes?)"
            )
        self.pids[i] = info["pid"]
        self.hosts.add(info["host"])

    def start(self) -> None:
        """Start every shard and ingest (in parallel); a worker that dies is replaced."""
        self.driver_code = code_digest()
        for i in range(len(self.actors)):
            self._new(i)
        for i in range(len(self.actors)):
            self._retrying(i, self._hello)
        refs = {
            i: self.actors[i].ingest.remote(self.items[i], self.root)
            for i in range(len(self.actors))
        }
        for i, ref in refs.items():
            try:
                atoms, secs = _get(self.ray, ref)
                self.atoms[i], self.ingest_seconds[i] = atoms, secs
            except self.ray.exceptions.RayActorError as e:
                self.last_error = e
                self.recover(i, self.gen[i])
        self.on_event("workers", list(self.pids))

    def _retrying(self, i: int, fn) -> None:
        while True:
            try:
                return fn(i)
            except self.ray.exceptions.RayActorError as e:
                self.last_error = e
                self._count_restart(i)
                self._new(i)

    def _count_restart(self, i: int) -> None:
        self.restarts += 1
        self.on_event("restart", i)
        if self.restarts > self.max_restarts * len(self.actors):
            why = str(self.last_error).strip().splitlines()[-1][:200] if self.last_error else ""
            raise MembenchError(
                f"Ray workers died {self.restarts} times (shard {i} last"
                f"{': ' + why if why else ''}); what was written is intact: "
                "re-run the same command to resume"
            )

    def recover(self, i: int, gen: int) -> None:
        """Replace shard ``i``'s actor (unless that was done since generation ``gen``) and
        re-ingest; its atoms must equal the first ingest's."""
        if gen != self.gen[i]:
            return
        while True:
            self._count_restart(i)
            self._new(i)
            try:
                self._hello(i)
                atoms, secs = _get(self.ray, self.actors[i].ingest.remote(self.items[i], self.root))
            except self.ray.exceptions.RayActorError as e:
                self.last_error = e
                continue
            if self.atoms[i] is not None and [a.row() for a in atoms] != [
                a.row() for a in self.atoms[i]
            ]:
                raise MembenchError(
                    f"system {self.name}: shard {i} ingested other atoms after "
                    "its worker was replaced; it is not deterministic"
                )
            self.atoms[i] = atoms
            self.ingest_seconds[i] = max(self.ingest_seconds[i], secs)
            return

    def kill_all(self) -> None:
        for a in self.actors:
            if a is not None:
                try:
                    self.ray.kill(a)
                except Exception:  # noqa: BLE001 - already gone
                    pass


def run_system_ray(
    name: str,
    config: dict | None,
    sets_dir: Path,
    split: str,
    out: Path,
    corpus_root: Path,
    modalities: Iterable[str] | None = None,
    limit: int | None = None,
    final: bool = False,
    *,
    lock: Path | None = None,
    manifest: Path = MANIFEST_PATH,
    check_sets: bool = True,
    sample_seed: int | None = None,
    address: str | None = None,
    workers: int | None = None,
    window: int = DEFAULT_WINDOW,
    max_restarts: int = MAX_RESTARTS,
    progress=None,
    on_event: Callable[[str, Any], None] | None = None,
    connect_timeout: float = CONNECT_SECONDS,
) -> dict:
    """:func:`membench.run.runner.run_system` on Ray: system ``name`` with ``config`` over
    ``split`` into ``out`` (resuming a partial run of either engine), ``workers`` shards
    (default: the cluster's CPUs, at most 4 for a local one) on the cluster at ``address``
    (default: a local one, which must listen on loopback only; an ``address`` must answer
    within ``connect_timeout`` s). The sets are checked and selected by the run's keeper
    process (:mod:`membench.run.keeper`), which also writes run.jsonl: the driver and the
    workers hold topics, never the records. Returns meta.json's content. ``on_event(kind,
    info)`` is told ``"workers"`` (the shard actors' pids), ``"window"`` (lines written so
    far) and ``"restart"`` (a shard's index): for tests and monitoring."""
    from ..systems import make_system, receives_records

    ray = import_ray()
    config = dict(config or {})
    system = make_system(name, config)
    if receives_records(system):
        raise MembenchError(
            f"system {system.name} is handed the gold (a test double): run it with the local engine"
        )
    if hasattr(system, "use_scratch"):
        # its store belongs in RUN_DIR/scratch, one per run: the local engine's
        raise MembenchError(
            f"system {system.name} keeps its state in the run directory "
            "(use_scratch): run it with the local engine"
        )
    preflight(split, out, modalities, limit, final, sample_seed)
    if address and not ray.is_initialized():
        probe_address(address, connect_timeout)  # before RUN_DIR is touched
    from ..core.lock import run_dir_lock
    from .keeper import Keeper

    out = Path(out)
    corpus_root = Path(corpus_root).resolve()
    with Keeper() as keeper:
        sel = keeper.open(
            sets_dir, split, modalities, limit, sample_seed, corpus_root, lock, manifest, check_sets
        )
        with (
            run_dir_lock(out),
            located_os_errors(out),
            cluster(address, workers or default_workers(), connect_timeout=None) as where,
        ):
            meta = _run_on(
                ray,
                system,
                keeper,
                sel,
                name,
                config,
                sets_dir,
                split,
                out,
                corpus_root,
                modalities,
                limit,
                final,
                sample_seed,
                where,
                workers,
                window,
                max_restarts,
                progress,
                on_event,
            )
    warn_scope(system.name, meta["scope"])
    return meta


def _run_on(
    ray,
    system,
    keeper,
    sel,
    name,
    config,
    sets_dir,
    split,
    out,
    corpus_root,
    modalities,
    limit,
    final,
    sample_seed,
    where,
    workers,
    window,
    max_restarts,
    progress,
    on_event,
) -> dict:
    """The run on a connected cluster (:func:`run_system_ray` holds the keeper, RUN_DIR's
    lock and the cluster around it)."""
    # Long: twenty parameters (the run's options, passed on); the body is one sequence
    worker_config = {**config, "ocr_processes": 1} if "ocr_processes" in config else config
    telemetry = quiet_native_telemetry()
    env = {
        "MEMBENCH_CACHE": str(cache_dir("").resolve()),
        "MEMBENCH_PROGRESS": "quiet",
        **telemetry,  # and the content layer's settings (--content), one OCR process each
        CONTENT_ENV: json.dumps({**content_settings(), "ocr_processes": 1}),
    }
    n = workers or max(1, where["cpus"])
    engine = {
        "engine": "ray",
        "ray_version": ray.__version__,
        "workers": n,
        "cluster": where["cluster"],
    }
    meta = begin_run(
        system,
        sel,
        sets_dir,
        split,
        out,
        modalities,
        limit,
        final,
        engine=engine,
        sample_seed=sample_seed,
    )
    meta["native_telemetry"] = telemetry
    # the network guard watches one process (the local engine's); Ray's workers talk to
    # the cluster over the network, so nothing is counted here: said, not implied
    meta["network"] = {
        "watched": False,
        "why": "the network guard watches the local "
        "engine's process only; Ray's workers talk to the cluster over the "
        "network",
    }
    shards = shard_holders(sel.items, sel.topics, n)
    shard_of = {h: i for i, hs in enumerate(shards) for h in hs}
    shard_items = [[it for it in sel.items if shard_of[it.holder] == i] for i in range(len(shards))]
    t0 = time.perf_counter()
    engine["extraction"] = extract_content(
        ray, system, name, worker_config, env, sel.items, corpus_root, n
    )
    # every shard must fit at once (more shards than CPUs share them)
    per = min(1.0, where["cpus"] / len(shards)) if where["cpus"] else 1.0
    actor_cls = ray.remote(num_cpus=per, max_restarts=0, max_task_retries=0)(ShardWorker)
    pool = _Shards(
        ray,
        actor_cls,
        name,
        worker_config,
        env,
        shard_items,
        corpus_root,
        system.config(),
        max_restarts,
        on_event,
    )
    try:
        with _progress.step(
            f"ingest ({system.name}, {len(shards)} ray workers)", total=len(sel.items), unit="item"
        ) as bar:
            pool.start()
            bar.advance(len(sel.items))
        if "folder" in where:  # a local cluster: still loopback with its workers
            engine["listening"] = {
                "sockets": check_loopback(where, "with its workers"),
                "all_loopback": True,
            }
        order = {it.source_id: k for k, it in enumerate(sel.items)}
        atoms = sorted(
            (a for part in pool.atoms for a in part), key=lambda a: order.get(a.source_id, -1)
        )
        meta["ingest_seconds"] = round(time.perf_counter() - t0, 3)
        meta["truncation"] = truncation_meta(system, counted=False)
        engine.update(
            shards=len(shards),
            hosts=sorted(pool.hosts),
            shard_ingest_seconds=[round(s, 3) for s in pool.ingest_seconds],
        )
        record_atoms(system.name, atoms, sel.items, out, meta)
        t_queries = time.perf_counter()
        todo_n = _answer(
            ray,
            pool,
            keeper,
            system.name,
            sel.topics,
            shard_of,
            atoms,
            out,
            window,
            progress,
            on_event,
        )
        end = keeper.finish()
        meta["query_seconds"] = round(time.perf_counter() - t_queries, 3)
        engine["restarts"] = pool.restarts
        engine["worker_peak_rss_mb"] = [
            round(_get(ray, a.peak_rss_mb.remote()), 1) for a in pool.actors
        ]
    finally:
        pool.kill_all()
    finish_meta(meta, end, todo_n)
    _write_json(out / "meta.json", meta)
    return meta


def _answer(
    ray,
    pool: _Shards,
    keeper,
    name: str,
    topics: list,
    shard_of: dict[str, int],
    atoms: list[Atom],
    out: Path,
    window: int,
    progress,
    on_event,
) -> int:
    """Ask the unanswered topics, window by window, and hand their lines to the keeper in
    presentation order (as :func:`membench.run.runner._run_locked` does); returns how many
    were asked. Workers get (qid, question, scope, as_of): topics, never records."""
    run_path = out / "run.jsonl"
    known = {a.atom_id for a in atoms}
    done = keeper.done(run_path)
    keeper.atoms(out / "atoms.jsonl")
    todo = [t for t in topics if t.qid not in done]
    windows = _batches(todo, max(1, window))
    on_event = on_event or (lambda kind, info: None)

    def submit(w: list) -> dict[int, tuple]:
        parts: dict[int, list[tuple]] = {}
        for t in w:
            parts.setdefault(shard_of[t.scope.holder], []).append(
                (t.qid, t.question, t.scope, t.as_of)
            )
        return {i: (pool.actors[i].answer.remote(b), pool.gen[i], b) for i, b in parts.items()}

    def collect(sent: dict[int, tuple]) -> dict[str, tuple]:
        got: dict[str, tuple] = {}
        for i, (ref, gen, batch) in sent.items():
            while True:
                try:
                    rows = _get(ray, ref)
                    break
                except ray.exceptions.RayActorError as e:
                    pool.last_error = e
                    pool.recover(i, gen)
                    ref, gen = pool.actors[i].answer.remote(batch), pool.gen[i]
            got.update((row[0], row) for row in rows)
        return got

    written = 0
    keeper.start(run_path)
    with _progress.step(f"queries ({name}, ray)", total=len(topics), unit="query") as bar:
        bar.advance(len(done))
        if done:
            bar.count("answered before (resumed)", len(done))
        inflight = [submit(w) for w in windows[:2]]
        for k, w in enumerate(windows):
            got = collect(inflight.pop(0))
            if k + 2 < len(windows):
                inflight.append(submit(windows[k + 2]))
            for t in w:
                qid, hits, cart, conf, ms = got[t.qid]
                cart, hits = check_answer(name, qid, hits, cart, known)
                hits = _check_hits(name, qid, hits, known)
                conf = check_confidence(name, qid, conf)
                line = {
                    "query_id": qid,
                    "hits": hits,
                    "cartridge": cart,
                    "latency_ms": round(ms, 3),
                }
                if conf is not None:
                    line["confidence"] = conf
                keeper.write((dumps(line) + "\n").encode("utf-8"))
                written += 1
                bar.advance()
                if progress and written % 100 == 0:
                    progress(len(done) + written, len(topics))
            on_event("window", len(done) + written)
    return len(todo)


__all__ = [
    "INSTALL_HINT",
    "cluster",
    "default_workers",
    "extract_content",
    "import_ray",
    "run_system_ray",
    "shard_holders",
]
