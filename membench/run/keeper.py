"""The run's keeper: the one process that holds the sets' records while a system runs (docs/runs.md,
"The protocol", says why the system's process never holds them).

Start at :class:`Keeper`, which the runner starts before the system runs as ``python -m
membench.run.keeper``. The keeper reads the annotation records (gold, answers, answerability,
origins, the sets' query ids), checks the sets (:func:`membench.run.split.check_sets_before_run`)
and selects the split (:func:`membench.run.split.select_split`). It hands back only the topics
of the selection (:class:`membench.sets.topics.Topic`) in presentation order, the positions of
the items to ingest in ``items.jsonl``, the selection's size and modalities, and for a resumed
run the qids answered before. It writes ``run.jsonl``: each line as the runner hands it over,
with the sets' query id in place of the topic's qid (the last key of a canonical line), flushed
and fsync'd (:func:`membench.run.lines.fsync_if_due`); and it checks each line's scope against
the run's atoms (:func:`_scope_of`) for the one line ``membench run`` ends with.

Protocol (pipes; one JSON object per line each way): the parent writes control lines
``{"op": ...}`` (``open``, ``done``, ``atoms``, ``write``, ``finish``), each answered by one
line (``{"ok": true, ...}`` or ``{"error": {...}}``, rebuilt in the parent as the same
:class:`InputError`, :class:`MembenchError` or :class:`OSError`), and between ``write`` and
``finish`` the run lines themselves, unanswered (a canonical line starts with ``{"cartridge"``,
a control line with ``{"op"``). The keeper ignores SIGINT; at the end of its input it writes out
every line it received, fsyncs and exits. A keeper that dies makes the parent's next write fail,
and the parent reports why. The test doubles that need gold get it from the runner instead.

Touches: reads the sets; writes only RUN_DIR's ``run.jsonl``.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..core.errors import InputError, MembenchError

#: what a canonical run line ends with: ``"query_id":"<qid>"}\n``, the qid 17 bytes
_QID_KEY = b'"query_id":"'
_SUFFIX = len(_QID_KEY) + 17 + 3
PIPE_BYTES = 1 << 20  # the pipe's buffer asked of Linux (F_SETPIPE_SZ), where allowed


@dataclass
class Selection:
    """What the process that runs a system knows of the queries: topics in presentation
    order, the items it ingests, the selection's modalities (of its records) and size."""

    topics: list  # membench.sets.topics.Topic
    items: list  # membench.contract.schema.SourceItem
    modalities: list[str]
    queries: int


# --------------------------------------------------------------------------- parent side


def _rebuild(err: dict) -> BaseException:
    kind = err.get("type")
    if kind == "InputError":
        return InputError(
            err["file"],
            err.get("line"),
            err.get("field"),
            err["message"],
            rule=err.get("rule") or "SCHEMA",
        )
    if kind == "OSError":
        return OSError(
            err.get("errno") or errno.EIO, err.get("strerror") or "I/O error", err.get("filename")
        )
    if kind == "MembenchError":
        return MembenchError(err["message"])
    return MembenchError(f"the run's keeper process failed: {err.get('message')}")


class Keeper:
    """The parent's end (a context manager): starts ``python -m membench.run.keeper`` with
    this membench on its path, asks it, streams run lines to it, and on exit closes its input
    and waits for it (it writes out every line it received first)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self._fd = -1
        self.written = 0

    def __enter__(self) -> Keeper:
        from ..core import progress

        here = str(Path(__file__).resolve().parents[2])  # the folder holding membench/
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [env.get("PYTHONPATH")])])
        env["MEMBENCH_PROGRESS"] = progress.current_mode()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "membench.run.keeper"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self._fd = self.proc.stdin.fileno()
        try:  # room for a few long lines in flight
            fcntl.fcntl(self._fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except (OSError, AttributeError):
            pass
        return self

    def __exit__(self, *exc) -> None:
        self.close(quiet=exc[0] is not None)

    # -- calls ---------------------------------------------------------------------
    def _put(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except BrokenPipeError:
            raise self._died() from None

    def _died(self) -> BaseException:
        """The keeper's own error line if it left one, else what became of it."""
        line = self.proc.stdout.readline() if self.proc else b""
        if line:
            try:
                msg = orjson.loads(line)
                if isinstance(msg, dict) and isinstance(msg.get("error"), dict):
                    return _rebuild(msg["error"])
            except orjson.JSONDecodeError:
                pass
        code = self.proc.wait() if self.proc else None
        return MembenchError(
            f"the run's keeper process (pid {self.proc.pid if self.proc else '?'}"
            f") ended (status {code}); what was written is intact: re-run the "
            "same command to resume"
        )

    def call(self, op: str, **kw: Any) -> dict:
        self._put(orjson.dumps({"op": op, **kw}) + b"\n")
        line = self.proc.stdout.readline()
        if not line:
            raise self._died()
        msg = orjson.loads(line)
        if "error" in msg:
            raise _rebuild(msg["error"])
        return msg

    def open(
        self,
        sets_dir: Path,
        split: str,
        modalities,
        limit: int | None,
        sample_seed: int | None,
        corpus_root: Path | None,
        lock: Path | None,
        manifest: Path,
        check_sets: bool,
    ) -> Selection:
        """Check the sets (unless ``check_sets`` is false) and select the split, in the
        keeper; return what the system's process may know (:class:`Selection`)."""
        from ..sets.topics import Topic
        from .split import read_items

        def p(x):
            return None if x is None else str(x)

        ans = self.call(
            "open",
            sets_dir=str(sets_dir),
            split=split,
            modalities=list(modalities) if modalities else None,
            limit=limit,
            sample_seed=sample_seed,
            corpus_root=p(corpus_root),
            lock=p(lock),
            manifest=str(manifest),
            check_sets=bool(check_sets),
        )
        items_all = read_items(Path(sets_dir))
        if len(items_all) != ans["item_count"]:
            raise MembenchError(
                f"{Path(sets_dir) / 'items.jsonl'} changed while the run "
                "started (the keeper read another number of items)"
            )
        topics = [Topic.model_validate(t) for t in ans["topics"]]
        return Selection(
            topics, [items_all[i] for i in ans["items"]], ans["modalities"], ans["queries"]
        )

    def done(self, run_path: Path) -> set[str]:
        """The qids a run.jsonl already answers (its torn last line cut)."""
        return set(self.call("done", run_path=str(run_path))["done"])

    def atoms(self, atoms_path: Path) -> None:
        """The keeper reads the recorded atoms, for the scope check of every line."""
        self.call("atoms", atoms_path=str(atoms_path))

    def start(self, run_path: Path) -> None:
        """Open run.jsonl for the lines that follow (:meth:`write`)."""
        self.call("write", run_path=str(run_path))

    def write(self, line: bytes) -> None:
        """Hand over one canonical run line whose ``query_id`` is the topic's qid."""
        self._put(line)
        self.written += 1

    def finish(self) -> dict:
        """Every line written and fsync'd: ``{"written", "scope", "run_sha256"}``."""
        return self.call("finish")

    def close(self, quiet: bool = False) -> None:
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=600)
        except subprocess.TimeoutExpired:  # pragma: no cover - it never hangs
            proc.kill()
            proc.wait()
        proc.stdout.close()


# --------------------------------------------------------------------------- keeper side


def _scope_of(ids, holder_atoms: frozenset, obs_us: dict, as_of_us: int):
    """``(another holder's atom or None, an atom observed after as_of or None)`` of one
    answer's atom ids."""
    other = None if holder_atoms.issuperset(ids) else next(a for a in ids if a not in holder_atoms)
    later = None
    if ids and max(map(obs_us.__getitem__, ids)) > as_of_us:
        later = next(a for a in ids if obs_us[a] > as_of_us)
    return other, later


class _State:
    def __init__(self) -> None:
        self.records: dict[str, Any] = {}  # qid -> record
        self.encoded: dict[bytes, bytes] = {}  # qid -> the query id as JSON
        self.by_query: dict[str, str] = {}  # query id -> qid
        self.out = None
        self.run_path: Path | None = None
        self.written = 0
        self.atoms_by_holder: dict[str, frozenset] | None = None
        self.obs_us: dict[str, int] = {}
        self.scope = {"checked": 0, "other_holder": 0, "after_as_of": 0, "first": None}
        self.scoped: set[str] = set()

    # -- ops -------------------------------------------------------------------------
    def open(self, m: dict) -> dict:
        from ..core.jsonl import dumps
        from ..sets.topics import topic, topic_id
        from .split import check_sets_before_run, select_split

        sets_dir = Path(m["sets_dir"])
        if m["check_sets"]:
            check_sets_before_run(
                sets_dir,
                m["corpus_root"] and Path(m["corpus_root"]),
                Path(m["manifest"]),
                m["lock"] and Path(m["lock"]),
            )
        recs, positions, items_all = select_split(
            sets_dir, m["split"], m["modalities"], m["limit"], m["sample_seed"]
        )
        for r in recs:
            q = topic_id(r.query_id)
            if q in self.records:
                raise MembenchError(
                    f"{r.query_id} and {self.records[q].query_id} share the topic id {q}"
                )
            self.records[q] = r
            self.encoded[q.encode()] = dumps(r.query_id).encode("utf-8")
            self.by_query[r.query_id] = q
        return {
            "ok": True,
            "topics": [topic(r) for r in recs],
            "items": positions,
            "item_count": len(items_all),
            "queries": len(recs),
            "modalities": sorted({r.modality for r in recs}),
        }

    def done(self, m: dict) -> dict:
        from .lines import _done_queries

        done = _done_queries(Path(m["run_path"]))
        return {"ok": True, "done": [self.by_query[q] for q in done if q in self.by_query]}

    def atoms(self, m: dict) -> dict:
        from .files import read_atoms, to_us

        by: dict[str, set[str]] = {}
        for a in read_atoms(m["atoms_path"]):
            by.setdefault(a.holder, set()).add(a.atom_id)
            self.obs_us[a.atom_id] = to_us(a.observed_at)
        self.atoms_by_holder = {h: frozenset(s) for h, s in by.items()}
        return {"ok": True}

    def write(self, m: dict) -> dict:
        from .files import read_run
        from .lines import LineFile

        self.run_path = Path(m["run_path"])
        if self.atoms_by_holder is not None and self.run_path.exists():
            for row in read_run(self.run_path):  # the lines of earlier sessions
                q = self.by_query.get(row.query_id)
                if q is not None:
                    self._check(q, row.hit_ids, row.cartridge)
        self.out = LineFile(self.run_path)
        return {"ok": True}

    def finish(self, m: dict) -> dict:
        from ..core.jsonl import sha256_file

        self.close()
        sha = sha256_file(self.run_path) if self.run_path and self.run_path.exists() else None
        first = self.scope["first"]
        return {
            "ok": True,
            "written": self.written,
            "run_sha256": sha,
            "scope": {**self.scope, "first": first},
        }

    # -- lines -----------------------------------------------------------------------
    def line(self, raw: bytes) -> None:
        if self.out is None:
            raise MembenchError("a run line before 'write' (a bug in the runner)")
        q = raw[-_SUFFIX + len(_QID_KEY) : -3]
        enc = self.encoded.get(q) if raw[-_SUFFIX : -_SUFFIX + len(_QID_KEY)] == _QID_KEY else None
        if enc is None or not raw.endswith(b'"}\n'):
            raise MembenchError(
                f"a run line without a known topic qid at its end: "
                f"{raw[-60:]!r} (a bug in the runner)"
            )
        self.out.write(raw[:-_SUFFIX] + b'"query_id":' + enc + b"}\n")
        self.written += 1
        if self.atoms_by_holder is not None:
            row = orjson.loads(raw)
            self._check(q.decode(), [h[0] for h in row["hits"]], row["cartridge"])

    def _check(self, q: str, hit_ids, cartridge) -> None:
        if q in self.scoped:
            return
        self.scoped.add(q)
        r = self.records[q]
        from .files import to_us

        ids = [*hit_ids, *cartridge]
        other, later = _scope_of(
            ids, self.atoms_by_holder.get(r.scope.holder, frozenset()), self.obs_us, to_us(r.as_of)
        )
        s = self.scope
        s["checked"] += 1
        s["other_holder"] += other is not None
        s["after_as_of"] += later is not None
        if (other or later) and s["first"] is None:
            s["first"] = {
                "query_id": r.query_id,
                "qid": q,
                "other_holder_atom": other,
                "after_as_of_atom": later,
            }

    def close(self) -> None:
        if self.out is not None:
            out, self.out = self.out, None
            out.close()


def _error(e: BaseException) -> dict:
    if isinstance(e, InputError):
        return {
            "type": "InputError",
            "file": e.file,
            "line": e.line,
            "field": e.field,
            "message": e.message,
            "rule": e.rule,
        }
    if isinstance(e, MembenchError):
        return {"type": "MembenchError", "message": str(e)}
    if isinstance(e, OSError):
        return {
            "type": "OSError",
            "errno": e.errno,
            "strerror": e.strerror,
            "filename": None if e.filename is None else str(e.filename),
        }
    return {"type": "other", "message": f"{type(e).__name__}: {e}"[:500]}


def main() -> int:
    """The keeper process: answer the parent's control lines and write its run lines (module
    docstring) until its input ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # anything printed goes to stderr
    state = _State()
    ops = {
        "open": state.open,
        "done": state.done,
        "atoms": state.atoms,
        "write": state.write,
        "finish": state.finish,
    }
    code = 0
    try:
        for raw in sys.stdin.buffer:
            if raw.startswith(b'{"op"'):
                m = orjson.loads(raw)
                answers.write(orjson.dumps(ops[m["op"]](m)) + b"\n")
            else:
                state.line(raw)
    except BaseException as e:  # noqa: BLE001 - every failure is answered, then we stop
        try:
            answers.write(orjson.dumps({"error": _error(e)}) + b"\n")
        except OSError:
            pass
        code = 1
    finally:
        try:
            state.close()
        except OSError:
            code = 1
    return code


if __name__ == "__main__":
    sys.exit(main())
