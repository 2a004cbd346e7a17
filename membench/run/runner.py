"""``membench run``: one system over one split, written so that nothing is lost when it dies
(docs/runs.md, "Run directory", says what each file holds and why).

Start at :func:`run_system`. It writes RUN_DIR: ``meta.json`` (what ran, its card, sets and
code, ``status`` ``running`` until the last query is written, ``scope``, ``network``,
``truncation``, ``run_jsonl_sha256``), ``atoms.jsonl`` (every atom reported at ingest, checked
against the protocol: :func:`check_atoms`), ``run.jsonl`` (one line per query, ``{query_id,
hits, cartridge, latency_ms}`` and ``confidence`` when reported, :func:`run_line`) and
``scratch/`` for a system that defines ``use_scratch(path)``. ``meta.json`` and
``atoms.jsonl`` are replaced atomically; ``run.jsonl`` is appended by the run's keeper process.

No gold in this process: the keeper (:mod:`membench.run.keeper`) reads the sets' records, checks
the sets, selects the split and writes run.jsonl; this process gets topics (opaque qid, question,
scope, as_of) and the items. Only a registered test double that needs the records
(:func:`membench.systems.receives_records`) is handed them, and meta.json says ``sees_gold``;
any other system that defines ``bind`` is refused.

Before ingest: :func:`preflight` and the sets' check (every hard rule, the corpus, the lock),
RUN_DIR's lock (:func:`membench.core.lock.run_dir_lock`) held until it returns; the test split
only with ``final=True``, logged to ``bench/test_access.jsonl`` (:func:`log_test_access`). A
:class:`~membench.core.netguard.NetworkGuard` counts non-loopback attempts (refused under
``network_policy == "block"``). Queries go in a seeded shuffled order; a ``--limit`` run ingests
only its holders' items. Resuming re-ingests, checks the atoms equal those on disk, drops a torn
last line and answers only the queries without one; :func:`scope_line` prints one line when a
system returned another holder's atoms or atoms observed after as_of.
"""

from __future__ import annotations

import gc
import json
import math
import numbers
import operator
import subprocess
import sys
import time
from collections.abc import Iterable
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..content.config import content_settings
from ..contract.protocol import MAX_DEPTH, Atom, MemorySystem, check_atom
from ..contract.schema import SourceItem
from ..core import progress as _progress
from ..core.atomic import atomic_write_json, atomic_write_text, open_append
from ..core.errors import InputError, MembenchError
from ..core.ids import id_problem, ids_problem
from ..core.jsonl import dumps, read_json_file, sha256_file
from ..core.lock import prepare_run_dir, run_dir_lock
from ..core.netguard import NetworkGuard, quiet_native_telemetry
from ..core.paths import BENCH_DIR, MANIFEST_PATH, REPO_ROOT
from ..core.version import __version__
from ..modalities import EXTENT_CAPS, MODALITIES
from ..sets.build import set_digests
from ..sets.select import ORDER_RULE, ORDER_SEED, check_modalities
from .files import SCRATCH, check_run_dir_files, repeated
from .lines import FSYNC_SECONDS, LineFile, _done_queries, fsync_if_due  # noqa: F401 (re-exported)
from .split import SplitData, check_limit, check_sets_before_run, load_split, select_split  # noqa: F401,E501

TEST_ACCESS_LOG = BENCH_DIR / "test_access.jsonl"


class ProtocolError(MembenchError):
    """A system broke the protocol (bad atom, unknown hit id, too deep a list)."""


def code_revision() -> str:
    try:
        rev = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        if rev:
            return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return f"membench-{__version__} (no git)"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _write_json(path: Path, obj) -> None:
    atomic_write_json(path, obj, indent=2, sort_keys=True, default=str)


def log_test_access(system: str, out: Path, revision: str, action: str = "run") -> None:
    """Append one line per final (test split) run (``action`` "run") and per reading of a
    test-split run's figures (``"read"``: metrics, reports, comparisons); reports show this
    log. A read repeated on the same day, of the same run at the same revision, is logged
    once."""
    row = {
        "time": _now(),
        "system": system,
        "run_dir": str(Path(out).resolve()),
        "code_revision": revision,
        "action": action,
    }
    if action != "run" and TEST_ACCESS_LOG.exists():
        for line in TEST_ACCESS_LOG.read_text(encoding="utf-8").splitlines():
            try:
                old = json.loads(line)
            except json.JSONDecodeError:
                continue
            if (old.get("action"), old.get("run_dir"), old.get("code_revision")) == (
                action,
                row["run_dir"],
                revision,
            ) and str(old.get("time", ""))[:10] == row["time"][:10]:
                return
    with open_append(TEST_ACCESS_LOG, text=True) as f:
        f.write(dumps(row) + "\n")


def check_atoms(system_name: str, atoms: list[Atom], items: list[SourceItem]) -> None:
    """Every atom a system reported: an identifier for an id (:mod:`membench.core.ids`), each
    id once, and an extent its item and modality allow (:func:`check_atom`)."""
    by_id = {it.source_id: it for it in items}
    seen: set[str] = set()
    bad = ids_problem([a.atom_id for a in atoms])
    if bad:
        i, why = bad
        raise ProtocolError(f"system {system_name}: atom #{i}: atom_id {why}")
    for i, a in enumerate(atoms):
        if not isinstance(a.atom_id, str) or not a.atom_id:
            raise ProtocolError(
                f"system {system_name}: atom #{i}: atom_id must be a non-empty string"
            )
        if a.atom_id in seen:
            raise ProtocolError(f"system {system_name}: atom #{i}: duplicate atom_id {a.atom_id!r}")
        seen.add(a.atom_id)
        why = check_atom(a, by_id.get(a.source_id))
        if why:
            raise ProtocolError(
                f"system {system_name}: atom #{i} ({a.atom_id}): extent rejected: {why}"
            )


def run_system(
    system: MemorySystem,
    sets_dir: Path,
    split: str,
    out: Path,
    corpus_root: Path,
    modalities: Iterable[str] | None = None,
    limit: int | None = None,
    final: bool = False,
    progress=None,
    *,
    lock: Path | None = None,
    manifest: Path = MANIFEST_PATH,
    check_sets: bool = True,
    sample_seed: int | None = None,
    ingested: Path | None = None,
) -> dict:
    """Run ``system`` over ``split`` into ``out`` (resuming if ``out`` holds a partial run).

    First, in seconds: the arguments (:func:`preflight`), then the run's keeper process
    (:class:`membench.run.keeper.Keeper`) checks the sets (:func:`check_sets_before_run`
    unless ``check_sets`` is false; ``lock``: also the set files against this lock file) and
    selects the split; this process gets topics and items, never the records. Then RUN_DIR's
    lock for the whole run (a second writer is refused, naming this one). Writes RUN_DIR (see
    the module docstring; run.jsonl through the keeper) and, for a final run,
    ``bench/test_access.jsonl``. Reports the ``ingest`` and ``queries`` steps through
    :mod:`membench.core.progress`; ``progress(done, total)``, when given, is also called every
    100 queries. ``sample_seed`` (with ``limit``): the N queries per modality are drawn by
    another hash (:func:`membench.sets.select.select_records`). ``ingested``: a file created
    (empty) once ingest is done and the atoms are recorded, before the queries (``make runs``
    starts the other systems then: the content and embedding caches are full)."""
    from .keeper import Keeper

    preflight(split, out, modalities, limit, final, sample_seed)
    with Keeper() as keeper:
        sel = keeper.open(
            sets_dir, split, modalities, limit, sample_seed, corpus_root, lock, manifest, check_sets
        )
        with run_dir_lock(out), located_os_errors(out):
            return _run_locked(
                system,
                keeper,
                sel,
                sets_dir,
                split,
                out,
                corpus_root,
                modalities,
                limit,
                final,
                progress,
                sample_seed,
                ingested,
            )


def preflight(
    split: str,
    out: Path,
    modalities: Iterable[str] | None = None,
    limit: int | None = None,
    final: bool = False,
    sample_seed: int | None = None,
) -> None:
    """The checks every engine makes before anything reads the sets: the split (test needs
    ``final``), ``limit`` (and ``sample_seed``, which needs it), the modalities and RUN_DIR's
    shape. (The sets are checked by the run's keeper process.)"""
    if split not in ("dev", "test"):
        raise MembenchError(f"unknown split {split!r}")
    if split == "test" and not final:
        raise MembenchError("the test split is frozen: pass --final for a final, logged run")
    check_limit(limit)
    if sample_seed is not None and (
        limit is None or not isinstance(sample_seed, int) or isinstance(sample_seed, bool)
    ):
        raise MembenchError(
            "--sample-seed goes with --limit N (it draws the N queries per "
            "modality by another hash) and is an integer"
        )
    check_modalities(modalities)
    prepare_run_dir(out, create=False)
    check_run_dir_files(out)


@contextmanager
def located_os_errors(out: Path):
    """An OSError without a file name (a write to run.jsonl, e.g. a full disk) re-raised
    naming RUN_DIR/run.jsonl."""
    try:
        yield
    except OSError as e:
        if e.filename is None:
            raise OSError(e.errno, e.strerror, str(Path(out) / "run.jsonl")) from e
        raise


def _run_locked(
    system: MemorySystem,
    keeper,
    sel,
    sets_dir: Path,
    split: str,
    out: Path,
    corpus_root: Path,
    modalities: Iterable[str] | None = None,
    limit: int | None = None,
    final: bool = False,
    progress=None,
    sample_seed: int | None = None,
    ingested: Path | None = None,
) -> dict:
    """The run itself (:func:`run_system` holds RUN_DIR's lock and the keeper around it)."""
    out = Path(out)
    meta = begin_run(
        system, sel, sets_dir, split, out, modalities, limit, final, sample_seed=sample_seed
    )
    meta_old = {"network": meta.get("network")}  # an interrupted run's count, carried on
    meta_path, run_path = out / "meta.json", out / "run.jsonl"
    if meta["sees_gold"]:  # registered test doubles only: they are handed the gold on purpose
        from ..systems.doubles import RunContext

        system.bind(
            RunContext(
                Path(sets_dir),
                split,
                load_split(sets_dir, split, modalities, limit, sample_seed).records,
            )
        )
    guard = network_guard(system)
    meta["native_telemetry"] = quiet_native_telemetry()
    if hasattr(system, "use_scratch"):  # a library that keeps its state on disk
        system.use_scratch(out / SCRATCH)
    t0 = time.perf_counter()
    from ..content import not_covered

    not_covered(clear=True)  # what an earlier run in this process refused is not this one's
    with (
        _progress.step(f"ingest ({system.name})", total=len(sel.items), unit="item") as bar,
        guard.phase("ingest"),
    ):
        atoms = system.ingest(sel.items, corpus_root)
        bar.advance(len(sel.items))
        bar.count("atoms", len(atoms))
    meta["ingest_seconds"] = round(time.perf_counter() - t0, 3)
    # the items whose PDF or image the content layer refused (membench.core.content_guard)
    meta["content_not_covered"] = not_covered(clear=True)
    meta["truncation"] = truncation_meta(system)
    meta["network"] = _network_meta(meta_old, guard)
    _warn_network(system.name, "ingest", guard)
    record_atoms(system.name, atoms, sel.items, out, meta)
    if ingested is not None:
        Path(ingested).parent.mkdir(parents=True, exist_ok=True)
        Path(ingested).touch()

    known = {a.atom_id for a in atoms}
    done = keeper.done(run_path)
    keeper.atoms(out / "atoms.jsonl")
    todo = [t for t in sel.topics if t.qid not in done]
    # what ingest built lives until the run ends: the collector's full passes skip it
    frozen = gc.get_freeze_count() == 0
    if frozen:
        gc.freeze()
    seen = guard.attempts
    if HIT_CHECK_MISSING and todo:
        print(
            f"membench: note: {HIT_CHECK_MISSING}: the hits are checked in Python instead "
            "(the same lines, written more slowly)",
            file=sys.stderr,
            flush=True,
        )
    keeper.start(run_path)
    t_queries = time.perf_counter()
    try:
        with guard.phase("query"):
            _answer(system, todo, len(done), len(sel.topics), known, keeper, progress)
    finally:
        if frozen:
            gc.unfreeze()
    end = keeper.finish()
    meta["query_seconds"] = round(time.perf_counter() - t_queries, 3)
    meta["network"] = _network_meta(meta_old, guard)
    if guard.attempts > seen:
        _warn_network(system.name, "queries", guard)
    stats = getattr(system, "store_stats", None)
    if callable(stats):  # the system's own account of its store(s)
        meta["store"] = {**meta.get("store", {}), **stats()}
    finish_meta(meta, end, len(todo))
    _write_json(meta_path, meta)
    warn_scope(system.name, meta["scope"])
    return meta


def finish_meta(meta: dict, end: dict, answered: int) -> None:
    """What a finished run adds to meta.json: ``status`` complete, ``finished``,
    ``answered_this_session``, ``scope`` (the keeper's count of lines holding another holder's
    atoms or atoms observed after as_of, and the first such query) and ``run_jsonl_sha256``
    (of run.jsonl as the run left it: ``membench verify`` tells a file edited afterwards)."""
    meta["status"] = "complete"
    meta["finished"] = _now()
    meta["answered_this_session"] = answered
    meta["scope"] = end["scope"]
    meta["run_jsonl_sha256"] = end["run_sha256"]


def scope_line(name: str, scope: dict) -> str | None:
    """The one plain line a run ends with when its system returned another holder's atoms or
    atoms observed after as_of (``None`` when it did not)."""
    other, later = scope.get("other_holder", 0), scope.get("after_as_of", 0)
    if not (other or later):
        return None
    first = scope.get("first") or {}
    what = []
    if other:
        what.append(f"{other} of {scope['checked']} queries got atoms of another holder")
    if later:
        what.append(f"{later} of {scope['checked']} queries got atoms observed after as_of")
    atom = first.get("other_holder_atom") or first.get("after_as_of_atom")
    return (
        f"membench: scope: system {name}: {' and '.join(what)} (first: "
        f"{first.get('query_id')}, atom {atom}); holder and temporal correctness count "
        "them (`membench metrics`)"
    )


def warn_scope(name: str, scope: dict) -> None:
    line = scope_line(name, scope)
    if line:
        print(line, file=sys.stderr, flush=True)


def _answer(
    system: MemorySystem, todo: list, n_done: int, n_all: int, known: set[str], sink, progress=None
) -> None:
    """Ask ``todo``'s topics in order, handing one canonical line each to ``sink`` (its
    ``write``: the keeper, which writes it with the query id; or a :class:`LineFile`). A line
    names the topic's qid; errors name it too."""
    # work a system's cache replaced, at the time it took when done (dense query_cache)
    replay = getattr(system, "take_latency_replay", None)
    if replay is not None:
        replay()  # from a query before this loop (calibration, a probe)
    with _progress.step(f"queries ({system.name})", total=n_all, unit="query") as bar:
        bar.advance(n_done)
        if n_done:
            bar.count("answered before (resumed)", n_done)
        for n, t in enumerate(todo, 1):
            t0 = time.perf_counter()
            try:
                res = system.query(t.question, t.scope, t.as_of)
            except MembenchError as e:  # say which query it was
                named = getattr(e, "for_query", None)  # an error that can name the query
                if named is not None:
                    raise named(t.qid) from None
                raise _at_query(e, system.name, t.qid) from None
            t_end = time.perf_counter()
            if replay is not None:
                t_end = max(t0, t_end + replay())
            cart, hits = _answer_parts(system.name, t.qid, res, known)
            row = {
                "cartridge": cart,
                "hits": hits,
                "latency_ms": round((t_end - t0) * 1000.0, 3),
                "query_id": t.qid,
            }
            conf = check_confidence(system.name, t.qid, getattr(res, "confidence", None))
            if conf is not None:
                row["confidence"] = conf
            line = _fast_line(row, known)
            if line is None:  # the checks one hit at a time, then json.dumps
                row["hits"] = _check_hits(system.name, t.qid, hits, known)
                line = run_line(row)
            sink.write(line)
            bar.advance()
            if progress and n % 100 == 0:
                progress(n_done + n, n_all)


def _at_query(e: MembenchError, name: str, qid: str) -> MembenchError:
    """``e`` (raised by a system's ``query``) with its message naming the system and the
    query, unless it already names the query (a located :class:`InputError` is left as is)."""
    if isinstance(e, InputError) or qid in str(e):
        return e
    e.args = (f"system {name}: {qid}: {e}", *e.args[1:])
    return e


def _fast_line(row: dict, known: set[str]) -> bytes | None:
    """The run line of ``row`` (its ``hits`` as the system returned them) when they are what
    the reference systems return, checked in bulk: pairs of an atom id reported at ingest and
    a finite Python ``float``, every score 0 or of magnitude in [1e-4, 1e16) (where orjson
    and ``json.dumps`` write the same digits, see :func:`run_line`); ``None`` for anything
    else (and for a list deeper than MAX_DEPTH), which :func:`_check_hits` then checks one
    hit at a time, naming the first culprit, and :func:`run_line` writes. The pairs are
    written as they are: a ``tuple`` or ``list`` (orjson refuses any other type: ``None``)
    holding exactly ``(atom_id, score)`` gives the line ``[atom_id, float(score)]`` gives.

    The bulk test is :func:`plain_pairs`: one C loop (``membench/run/_hitcheck.c``) where the
    extension was built at install, else :func:`_plain_pairs_py`, six passes in Python; both
    accept only what gives the same bytes as the per-hit path (tests/test_run_lines.py)."""
    hits = row["hits"]
    if len(hits) > MAX_DEPTH:
        return None
    try:
        if not (
            plain_pairs(hits, known)
            and (row["latency_ms"] == 0.0 or _PLAIN_LO <= row["latency_ms"] < _PLAIN_HI)
            and _plain_floats([row["confidence"]] if "confidence" in row else [])
        ):
            return None
        if type(hits) is not list:
            row = {**row, "hits": list(hits)}
        # every number in the line (the scores, the latency) is 0 or of magnitude in [1e-4,
        # 1e16): plain decimals, the same digits as json.dumps (on every binade in
        # tests/test_run_lines.py)
        return orjson.dumps(row, option=_ORJSON_OPTS)
    except (TypeError, KeyError, IndexError, ValueError):  # orjson.JSONEncodeError is one
        return None


def _plain_pairs_py(hits, known: set[str]) -> bool:
    """Whether every hit is a pair of an atom id in ``known`` (each atom once) and a finite
    ``float`` (exactly) that is 0 or has a magnitude in [1e-4, 1e16): the bulk test of :func:`_fast_line` in
    Python, one pass per property. A pair here is anything of length 2 whose items 0 and 1
    can be read (orjson then refuses what is not a tuple or list); the C test takes only a
    tuple or list. May raise TypeError / KeyError / IndexError on odd hits (the caller's
    ``None``)."""
    ids = list(map(_FIRST, hits))
    if not (set(map(len, hits)) <= _TWO and known.issuperset(ids) and len(set(ids)) == len(ids)):
        return False
    scores = list(map(_SECOND, hits))
    return (
        set(map(type, scores)) <= _FLOAT
        and math.isfinite(sum(scores))
        and (
            not scores
            or _PLAIN_LO <= min(scores)
            and max(scores) < _PLAIN_HI
            or _plain_floats(scores)
        )
    )


_TWO, _FLOAT = {2}, {float}
_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)
# subclasses of str/int/list/dict and dataclasses are refused (json.dumps would write them
# differently or the per-hit loop converts them)
_ORJSON_OPTS = (
    orjson.OPT_APPEND_NEWLINE
    | orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
)

#: why the C test is not here (``None`` when it is)
HIT_CHECK_MISSING: str | None = None
try:  # the one-pass C test, built at install where a C compiler is found (setup.py)
    from ._hitcheck import plain_pairs
except ImportError as e:  # pragma: no cover - the same test in Python
    plain_pairs = _plain_pairs_py
    HIT_CHECK_MISSING = f"membench.run._hitcheck not built ({e}); reinstall with a C compiler"


def network_guard(system: MemorySystem) -> NetworkGuard:
    """The guard a run puts around ``system``'s ingest and queries
    (:mod:`membench.core.netguard`): mode from the system's ``network_policy`` attribute
    (``"block"``: refuse and count; ``"record"``, the default for a system that says nothing:
    count only, so a system that is a client of a remote service still runs), hosts it names in
    ``network_allow`` not counted."""
    mode = getattr(system, "network_policy", "record")
    allow = getattr(system, "network_allow", ())
    if mode not in ("block", "record"):
        raise MembenchError(
            f"system {system.name}: network_policy must be 'block' or 'record', got {mode!r}"
        )
    return NetworkGuard(mode, allow)


def _network_meta(old_meta: dict, guard: NetworkGuard) -> dict:
    """meta.json's ``network``: this session's report, and the attempts of every session of
    the run (a resumed run keeps the count of the sessions before it)."""
    before = old_meta.get("network") if isinstance(old_meta.get("network"), dict) else {}
    prev = before.get("attempts_all_sessions", before.get("attempts", 0))
    prev = prev if isinstance(prev, int) and not isinstance(prev, bool) else 0
    prev_done = before.get("sessions", 0) if isinstance(before.get("sessions"), int) else 0
    return {
        **guard.report(),
        "attempts_all_sessions": prev + guard.attempts,
        "sessions": prev_done + 1,
    }


def _warn_network(name: str, phase: str, guard: NetworkGuard) -> None:
    """One loud line on standard error (whatever the progress mode) when the system tried to
    reach the network."""
    if guard.attempts:
        print(
            f"membench: warning: system {name} ({phase}): {guard.summary()}; see meta.json network",
            file=sys.stderr,
            flush=True,
        )


def begin_run(
    system: MemorySystem,
    sel,
    sets_dir: Path,
    split: str,
    out: Path,
    modalities: Iterable[str] | None = None,
    limit: int | None = None,
    final: bool = False,
    engine: str | dict = "local",
    sample_seed: int | None = None,
) -> dict:
    """Write RUN_DIR/meta.json for the selection ``sel`` (a
    :class:`membench.run.keeper.Selection`) with status ``running`` (checked against an
    interrupted run's meta.json, whose ``started`` and ``resumed`` count it carries on); a
    final run is logged. ``engine`` is recorded as meta's ``engine``; ``identity`` says what
    the system is (:func:`membench.systems.identity.identify`), ``sealed`` whether it ran in
    another process than the one holding the sets (a system over HTTP), ``card`` its card as
    its identity gives it (:func:`membench.systems.cards.card_for`; ``card_refused`` says why a
    card it carries was not taken). Any system but the registered test doubles that need gold
    is refused if it defines ``bind``."""
    if split not in ("dev", "test"):
        raise MembenchError(f"unknown split {split!r}")
    if split == "test" and not final:
        raise MembenchError("the test split is frozen: pass --final for a final, logged run")
    out = Path(out)
    why = id_problem(system.name)
    if why:
        raise MembenchError(f"system name: {why}")
    out.mkdir(parents=True, exist_ok=True)
    check_run_dir_files(out)
    meta_path = out / "meta.json"

    from ..systems import DOUBLES, receives_records
    from ..systems.identity import identify

    sees_gold = receives_records(system)
    if hasattr(system, "bind") and not sees_gold:
        raise MembenchError(
            f"system {system.name}: it defines bind() to be handed the split's records, but "
            f"only the registered test doubles that need them ("
            f"{', '.join(k for k, v in DOUBLES.items() if v)}) may see gold"
        )
    from ..systems.cards import MAX_INPUT_TOKENS, card_for

    limit_inputs = getattr(system, "limit_inputs", None)
    if callable(limit_inputs):  # every encoder reads min(its card's max, 512) tokens
        limit_inputs(MAX_INPUT_TOKENS)
    identity = identify(system)
    card, refused = card_for(system, identity)
    meta = {
        "system": system.name,
        "config": system.config(),
        "split": split,
        "card": card.record() if card else None,
        "identity": identity,
        "sealed": identity["kind"] == "HTTP service",
        "sees_gold": sees_gold,
        "order": {"seed": ORDER_SEED, "rule": ORDER_RULE},
        "memory": (
            "the holders of the selected queries"
            if limit is not None
            else "every holder of the split in the selected modalities"
        ),
        "modalities": sel.modalities if modalities else list(MODALITIES),
        "limit": limit,
        "final": final,
        "queries": sel.queries,
        "items": len(sel.items),
        "sets_dir": str(Path(sets_dir).resolve()),
        "set_sha256": set_digests(sets_dir),
        "manifest_sha256": sha256_file(MANIFEST_PATH) if MANIFEST_PATH.exists() else None,
        "code_revision": code_revision(),
        "membench_version": __version__,
        "extent_caps": EXTENT_CAPS,
        "max_depth": MAX_DEPTH,
        "engine": engine,
        # the content layer's settings (membench run --content), whatever the system reads
        "content": content_settings(),
    }
    if refused:
        meta["card_refused"] = refused
        print(f"membench: note: system {system.name}: {refused}", file=sys.stderr, flush=True)
    if sample_seed is not None:
        meta["sample_seed"] = sample_seed
    if meta_path.exists():
        old = read_json_file(meta_path, dict, "a JSON object (a run's meta.json)")
        for k in (
            "system",
            "config",
            "split",
            "limit",
            "modalities",
            "set_sha256",
            "order",
            "card",
            "sample_seed",
        ):
            if old.get(k) != meta.get(k):
                raise MembenchError(
                    f"{meta_path}: existing run has a different {k}; "
                    "use another RUN_DIR (or delete this one)"
                )
        meta["started"] = old.get("started")
        meta["resumed"] = old.get("resumed", 0) + 1
        if "network" in old:
            meta["network"] = old["network"]
    else:
        meta["started"] = _now()
        meta["resumed"] = 0
    meta["status"] = "running"
    if final:
        log_test_access(system.name, out, meta["code_revision"])
    _write_json(meta_path, meta)
    return meta


def truncation_meta(system: MemorySystem, counted: bool = True) -> dict:
    """meta.json ``truncation``: the system's own record (the input limit its encoder applied
    and, after an ingest in this process, how many atom texts it cut), else its card's with no
    limit; ``counted=False`` when the ingest ran elsewhere (Ray workers), so nothing was
    counted here."""
    from ..systems.cards import system_card, truncation_record

    trunc = getattr(system, "truncation", None)
    rec = trunc() if callable(trunc) else truncation_record(system_card(system), None)
    if not counted:
        rec = {
            **rec,
            "texts_truncated": None,
            "why_not_counted": "the ingest ran in Ray workers; their counts are not collected",
        }
    return rec


def record_atoms(
    system_name: str, atoms: list[Atom], items: list[SourceItem], out: Path, meta: dict
) -> None:
    """Check the system's atoms (:func:`check_atoms`), write RUN_DIR/atoms.jsonl, or, when an
    interrupted run left one, insist the atoms are byte for byte the same; record the count
    in meta.json."""
    atoms_path = Path(out) / "atoms.jsonl"
    check_atoms(system_name, atoms, items)
    atom_lines = [dumps(a.row()) + "\n" for a in atoms]
    if atoms_path.exists():
        if atoms_path.read_bytes() != "".join(atom_lines).encode("utf-8"):
            raise MembenchError(
                f"{atoms_path}: the system's atoms differ from the interrupted "
                "run's; it is not deterministic, use a new RUN_DIR"
            )
    else:
        atomic_write_text(atoms_path, "".join(atom_lines))
    meta["atoms"] = len(atoms)
    meta["store"] = store_size(atoms, items)
    _write_json(Path(out) / "meta.json", meta)


def store_size(atoms: list[Atom], items: list[SourceItem]) -> dict:
    """meta.json ``store``: the size of the memory the system held while it was asked (a
    query's time can grow with it): atoms, the holders they belong to, items ingested, per
    modality too. A system with ``store_stats()`` (the library adapters) adds its own layout
    after the run."""
    per: dict[str, dict] = {}
    for a in atoms:
        p = per.setdefault(a.modality, {"atoms": 0, "holders": set()})
        p["atoms"] += 1
        p["holders"].add(a.holder)
    return {
        "atoms": len(atoms),
        "holders": len({it.holder for it in items}),
        "items": len(items),
        "per_modality": {
            m: {"atoms": p["atoms"], "holders": len(p["holders"])} for m, p in sorted(per.items())
        },
    }


def _brief(value: Any) -> str:
    """``repr(value)``, cut to 60 characters (for an error line)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Unsent:
    """What a Ray worker sends in place of an answer part it cannot pass on as a list (the
    answer itself when it is not a Result, or hits / a cartridge that are not lists): its type
    name and :func:`_brief` text, so the driver's error line is the in-process one."""

    def __init__(self, value: Any):
        self.type_name, self.text = type(value).__name__, _brief(value)


def _tname(value: Any) -> str:
    return value.type_name if isinstance(value, Unsent) else type(value).__name__


def _text(value: Any) -> str:
    return value.text if isinstance(value, Unsent) else _brief(value)


def _taken_apart(res: Any) -> tuple[Any, Any]:
    """``(res.hits, res.cartridge)``, or ``(Unsent(res), None)`` when ``res`` lacks either
    (not a Result): what :func:`check_answer` reads."""
    hits = getattr(res, "hits", None)
    cartridge = getattr(res, "cartridge", None)
    if hits is None or cartridge is None:
        return Unsent(res), None
    return hits, cartridge


def answer_for_sending(res: Any) -> tuple[Any, Any, Any]:
    """``(hits, cartridge, confidence)`` of an answer as a Ray worker sends them: lists where
    they are lists or tuples, else :class:`Unsent` (:func:`_taken_apart`); the confidence
    as it is when it is ``None`` or a number, else :class:`Unsent`."""
    hits, cartridge = _taken_apart(res)
    if cartridge is None:
        return hits, None, None
    conf = getattr(res, "confidence", None)
    if not (conf is None or isinstance(conf, numbers.Real) and not isinstance(conf, bool)):
        conf = Unsent(conf)
    return (
        *(list(x) if isinstance(x, (list, tuple)) else Unsent(x) for x in (hits, cartridge)),
        conf,
    )


def _answer_parts(name: str, qid: str, res: Any, known: set[str]) -> tuple[list[str], Any]:
    """The cartridge (a list of atom ids reported at ingest) and the hits (a list or tuple,
    checked by :func:`_fast_line` or :func:`_check_hits`) of a system's answer; anything else
    is a :class:`ProtocolError` naming the system, the query and what is wrong."""
    return check_answer(name, qid, *_taken_apart(res), known)


def check_answer(
    name: str, qid: str, hits: Any, cartridge: Any, known: set[str]
) -> tuple[list[str], Any]:
    """:func:`_answer_parts` for an answer already taken apart (the Ray engine's)."""
    where = f"system {name}: {qid}"
    if cartridge is None:  # (hits: the whole answer, Unsent)
        raise ProtocolError(
            f"{where}: query returned {_text(hits)}, not a Result with hits and a cartridge"
        )
    if not isinstance(hits, (list, tuple)):
        raise ProtocolError(
            f"{where}: hits must be a list of (atom_id, score) pairs, got "
            f"{_tname(hits)} {_text(hits)}"
        )
    if not isinstance(cartridge, (list, tuple)):
        raise ProtocolError(
            f"{where}: the cartridge must be a list of atom ids, got "
            f"{_tname(cartridge)} {_text(cartridge)}"
        )
    cart = list(cartridge)
    for i, a in enumerate(cart):
        if not isinstance(a, str):
            raise ProtocolError(
                f"{where}: cartridge entry #{i} must be an atom id (a string), "
                f"got {type(a).__name__} {_brief(a)}"
            )
        if a not in known:
            raise ProtocolError(f"{where}: cartridge atom {a!r} was never reported at ingest")
    rep = repeated(cart)
    if rep:
        raise ProtocolError(
            f"{where}: cartridge atom {rep[0]!r} at positions {rep[1] + 1} and "
            f"{rep[2] + 1}: an atom is listed once per query"
        )
    return cart, hits


def check_confidence(name: str, qid: str, conf: Any) -> float | None:
    """A system's ``confidence`` (:class:`membench.contract.protocol.Result`): ``None``, or a finite
    real number (``int``, ``float``, a numpy scalar; not a ``bool`` or a string), returned as
    a ``float``; anything else is a :class:`ProtocolError` naming the system and the query."""
    if conf is None:
        return None
    ok = isinstance(conf, numbers.Real) and not isinstance(conf, bool)
    if ok:
        try:
            value = float(conf)
        except OverflowError:  # an int beyond the float range
            ok = False
        else:
            ok = math.isfinite(value)
    if not ok:
        raise ProtocolError(
            f"system {name}: {qid}: confidence must be a finite number or None, "
            f"got {_tname(conf)} {_text(conf)}"
        )
    return value


# what unpacks into two values without being a pair
_NOT_PAIRS = (str, bytes, bytearray, dict, set, frozenset)


def _check_hits(name: str, qid: str, hits, known: set[str]) -> list[list]:
    """``hits`` checked one at a time: at most MAX_DEPTH; every hit a pair (a tuple, list or
    other sized pair; not a string, bytes, dict, set or iterator); every atom id a string
    reported at ingest; every score a finite number, not a string (converted with ``float``).
    The first culprit is named, by its position in the list."""
    if len(hits) > MAX_DEPTH:
        raise ProtocolError(f"system {name}: {qid}: {len(hits)} hits, depth cap is {MAX_DEPTH}")
    return _check_hits_loop(name, qid, hits, known)


def _check_hits_loop(name: str, qid: str, hits, known: set[str]) -> list[list]:
    out = []
    where = f"system {name}: {qid}"
    for i, hit in enumerate(hits):
        try:
            if isinstance(hit, _NOT_PAIRS) or not hasattr(hit, "__len__"):
                raise TypeError  # (an iterator would be consumed)
            atom_id, score = hit
        except (TypeError, ValueError):
            raise ProtocolError(
                f"{where}: hit #{i} must be a pair (atom_id, score), got "
                f"{type(hit).__name__} {_brief(hit)}"
            ) from None
        if not isinstance(atom_id, str):
            raise ProtocolError(
                f"{where}: hit #{i}: the atom id must be a string, got "
                f"{type(atom_id).__name__} {_brief(atom_id)}"
            )
        if atom_id not in known:
            raise ProtocolError(f"{where}: hit {atom_id!r} was never reported at ingest")
        try:
            if isinstance(score, (str, bytes, bytearray)):
                raise TypeError
            score = float(score)
        except (TypeError, ValueError, OverflowError):
            raise ProtocolError(
                f"{where}: hit #{i} ({atom_id!r}): the score must be a number, "
                f"got {type(score).__name__} {_brief(score)}"
            ) from None
        if score != score or score in (float("inf"), float("-inf")):
            raise ProtocolError(f"{where}: non-finite score for {atom_id!r}")
        out.append([atom_id, score])
    rep = repeated([h[0] for h in out])
    if rep:
        raise ProtocolError(
            f"{where}: hit {rep[0]!r} at ranks {rep[1] + 1} and {rep[2] + 1}: "
            "an atom is listed once per query"
        )
    return out


def _plain_floats(values) -> bool:
    """True when every value is 0 or has a magnitude in [1e-4, 1e16): where Python's ``repr``
    (and so ``json.dumps``) writes a float in plain decimal notation, and so does orjson, with
    the same shortest round-trip digits (see :func:`run_line`)."""
    if not values:
        return True
    lo, hi = min(values), max(values)
    if _PLAIN_LO <= lo and hi < _PLAIN_HI:
        return True
    a = np.abs(np.asarray(values, dtype=np.float64))
    return bool((((a >= _PLAIN_LO) & (a < _PLAIN_HI)) | (a == 0.0)).all())


_PLAIN_LO, _PLAIN_HI = 1e-4, 1e16


def run_line(row: dict) -> bytes:
    """One run.jsonl line (with its newline) as UTF-8 bytes, byte for byte what
    ``membench.core.jsonl.dumps(row) + "\\n"`` gives (sorted keys, no spaces, non-ASCII kept).

    orjson writes the line when it cannot differ: it escapes every code point as ``json.dumps``
    with ``ensure_ascii=False`` does, and writes the same shortest round-trip digits for a
    float; the two differ only in notation, for magnitudes in [1e-9, 1e-4) (Python ``1e-05``,
    orjson ``0.00001``; ``1.5e-07`` / ``1.5e-7``), so orjson is used when every score and the
    latency is 0 or in [1e-4, 1e16), where both write plain decimals. Otherwise, and when
    orjson refuses a value (a lone surrogate, an integer beyond 64 bits, a ``str`` subclass),
    ``json.dumps`` writes it. Tested on every code point, on floats over the whole range and
    on real run lines (tests/test_run_lines.py)."""
    try:
        scores = [h[1] for h in row["hits"]]
        if (
            _plain_floats(scores)
            and _plain_floats([row["latency_ms"]])
            and _plain_floats([row["confidence"]] if "confidence" in row else [])
        ):
            return orjson.dumps(row, option=_ORJSON_OPTS)
    except (TypeError, KeyError, IndexError, ValueError):
        pass
    return (dumps(row) + "\n").encode("utf-8")
