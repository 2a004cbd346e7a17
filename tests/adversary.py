"""A system that tries to read the gold from inside the process that runs it, as a submitter
who wants to win would (``--system adversary:GoldHunter``, with ``tests/`` on PYTHONPATH).

At ingest, at its first queries and every ``deep_every``-th query it hunts (:func:`hunt`):

* every frame of every thread (walking ``f_back`` from each), its locals and its globals;
* ``gc.get_objects()``: every object the collector tracks (dicts, lists, instances, models...),
  after ``gc.unfreeze()`` (the runner freezes what ingest built, which hides it from
  ``gc.get_objects()``; the hunter freezes it again afterwards);
* the globals of every ``membench`` module;
* from all of those, what they reach: dict keys and values, list/tuple/set items, instance
  ``__dict__`` and ``__slots__``, pydantic fields (strings and other untracked objects are
  found this way), up to ``max_objects`` objects.

It looks for anything gold-like: an object of membench's record types (``AnnotationRecord``,
``Gold``, ``Origin``, ``RecordDraft``, ``RunContext``, ``SplitData``), a dict or object with a
``gold`` / ``unanswerable`` / ``answer`` / ``derived_from`` / ``distractor`` / ``judgments``
key or attribute, a string holding a derived query's tell (``~temporal``, ``~transactive``),
and any string whose sha256 is in the needle file the test wrote (``$MEMBENCH_HUNT_NEEDLES``:
the sha256 of the split's query ids and answers; the test keeps the strings, the hunter gets
only their digests). Between deep hunts it walks the stack of every thread (cheap).

What it finds, it uses: it abstains on a query whose record it found marked unanswerable and
ranks the gold it found first. It writes what it scanned and found to ``$MEMBENCH_HUNT_REPORT``
(JSON) after every hunt, so the test reads it whatever happens to the run.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
import sys
import types
import weakref
from collections import deque
from pathlib import Path

from membench.contract.protocol import Result
from membench.systems.structural import structural_atoms

RECORD_TYPES = {"AnnotationRecord", "Gold", "Origin", "RecordDraft", "RunContext", "SplitData"}
# the keys of a record that hold gold, answers or answerability (see _gold_keys)
GOLD_KEYS = ("gold", "distractor", "judgments", "unanswerable", "answer", "derived_from")
TELL = re.compile(r"[A-Za-z0-9_.-]+:.*~(temporal|transactive)")
# a weak proxy raises ReferenceError on any use once its referent is gone (even isinstance);
# what it points to is reached, if alive, through the referent's own owners
_PROXY_TYPES = (weakref.ProxyType, weakref.CallableProxyType)
_SKIP_TYPES = (
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    type,
    types.CodeType,
    types.MethodType,
)


def _attr(obj: object, name: str) -> object:
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - a property that raises, a mock class
        return None


def _regionish(x: object) -> bool:
    """A gold region: a dict or object with a string ``source_id`` and a ``region``."""
    if type(x) in _PROXY_TYPES:
        return False
    if isinstance(x, dict):
        return isinstance(x.get("source_id"), str) and "region" in x
    return isinstance(_attr(x, "source_id"), str) and _attr(x, "region") is not None


def _gold_keys(d: dict) -> list[str]:
    """:func:`_gold_keys_of` ``d``; none when a value is a weak proxy whose referent is gone
    (any use of it raises ReferenceError, and it holds nothing any more)."""
    try:
        return _gold_keys_of(d)
    except ReferenceError:
        return []


def _gold_keys_of(d: dict) -> list[str]:
    """The keys of ``d`` that hold gold as data (not a schema, an annotation or a type):
    gold / distractor lists of regions, judgments mapping to such lists, an ``unanswerable``
    flag or an ``answer`` beside a question or query id, a ``derived_from`` query id."""

    def get(key):  # dict's own lookup: a subclass's get() may compute or import
        v = dict.get(d, key)  # (a proxy that is no dict raises TypeError: caught below)
        return None if type(v) in _PROXY_TYPES else v

    try:
        q = get("question"), get("query_id")
    except (TypeError, AttributeError):
        return []
    # a record's question or query id; not a class's __annotations__, where every field's
    # value is its annotation's text ("str", "Identifier", "list[Gold]", "Scope")
    annotations = isinstance(get("scope"), str) or isinstance(get("gold"), str)
    recordish = not annotations and any(isinstance(v, str) for v in q)
    out = []
    for k in ("gold", "distractor"):
        v = get(k)
        if isinstance(v, (list, tuple)) and v and all(_regionish(x) for x in v[:5]):
            out.append(k)
    j = get("judgments")
    if (
        isinstance(j, dict)
        and j
        and all(
            type(v) not in _PROXY_TYPES
            and isinstance(v, (list, tuple))
            and all(_regionish(x) for x in v[:5])
            for v in dict.values(j)
        )
    ):
        out.append("judgments")
    if isinstance(get("unanswerable"), bool) and recordish:
        out.append("unanswerable")
    if (
        dict.__contains__(d, "answer")
        and recordish
        and (get("answer") is None or isinstance(get("answer"), (str, int, float, list)))
    ):
        out.append("answer")
    df = get("derived_from")
    if isinstance(df, str) and ":" in df and " " not in df:
        out.append("derived_from")
    return out


class Hunt:
    """One hunt's state: what was seen, what was found."""

    def __init__(self, needles: set[str], max_objects: int, me: object, max_found: int = 50):
        self.needles = needles
        self.max_found = max_found
        self.max_objects = max_objects
        self.seen: set[int] = set()
        self.found: list[str] = []
        self.strings = 0
        self.objects = 0
        self.me = me
        self.frames: list[str] = []

    def note(self, what: str) -> None:
        if len(self.found) < self.max_found:
            self.found.append(what[:300])

    def string(self, s: str, where: str) -> None:
        self.strings += 1
        if "~" in s and TELL.fullmatch(s):
            self.note(f"{where}: a derived query's id {s[:120]!r}")
        if (
            self.needles
            and 2 <= len(s) <= 4096
            and hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest() in self.needles
        ):
            self.note(f"{where}: a needle (query id or answer): {s[:120]!r}")

    def walk(self, roots: list[tuple[object, str]]) -> None:
        """Breadth first from ``roots`` through containers and instance attributes."""
        todo = deque(roots)
        while todo and self.objects < self.max_objects:
            obj, where = todo.popleft()
            if type(obj) in _PROXY_TYPES:  # type() does not dereference; isinstance() does
                continue
            if obj is None or obj is self or obj is self.me or isinstance(obj, Hunt):
                continue
            if isinstance(obj, str):
                self.string(obj, where)
                continue
            if isinstance(obj, (int, float, bool, bytes, bytearray, complex)):
                continue
            if id(obj) in self.seen:
                continue
            self.seen.add(id(obj))
            self.objects += 1
            t = type(obj)
            if t.__name__ in RECORD_TYPES:
                self.note(f"{where}: an object of type {t.__module__}.{t.__name__}")
            if isinstance(obj, dict):
                hit = _gold_keys(obj)
                if hit:
                    self.note(f"{where}: a dict with gold data under {hit}")
                # dict's own storage: a subclass's items() may compute (transformers' lazy
                # mappings import models), and what it stores is what a hunter can read
                try:
                    pairs = list(dict.items(obj))[:100_000]
                except TypeError:  # a proxy that passes isinstance(dict) and is not one
                    continue
                for k, v in pairs:
                    todo.append((k, where))
                    todo.append((v, f"{where}[{str(k)[:40]!r}]"))
                continue
            if isinstance(obj, (list, tuple, set, frozenset)):
                for i, v in enumerate(list(obj)[:100_000]):
                    todo.append((v, f"{where}[{i}]"))
                continue
            if isinstance(obj, _SKIP_TYPES) or isinstance(obj, types.FrameType):
                continue
            attrs = _attr(obj, "__dict__")
            if isinstance(attrs, dict):
                hit = _gold_keys(attrs)
                if hit:
                    self.note(f"{where}: a {t.__name__} with gold data in attribute(s) {hit}")
                todo.append((attrs, f"{where}.__dict__"))
            slots = _attr(t, "__slots__") or ()
            for slot in (slots,) if isinstance(slots, str) else slots:
                if isinstance(slot, str):
                    todo.append((_attr(obj, slot), f"{where}.{slot}"))

    def stack_roots(self) -> list[tuple[object, str]]:
        roots = []
        for tid, frame in sys._current_frames().items():
            f, depth = frame, 0
            while f is not None:
                name = f"{f.f_globals.get('__name__')}.{f.f_code.co_name}"
                self.frames.append(name)
                roots.append((f.f_locals, f"thread {tid} frame {depth} {name} locals"))
                roots.append((f.f_globals, f"frame {name} globals"))
                f, depth = f.f_back, depth + 1
        return roots


class GoldHunter:
    """The adversary (module docstring). ``--config deep_every=N`` (default 400),
    ``max_objects`` (a deep hunt's, default 3,000,000) and ``quick_objects`` (a stack walk's,
    breadth first from the frames' locals, default 20,000)."""

    name = "gold-hunter"

    def __init__(
        self, deep_every: int = 400, max_objects: int = 3_000_000, quick_objects: int = 20_000
    ):
        self.deep_every, self.max_objects = deep_every, max_objects
        self.quick_objects = quick_objects
        self.report_path = Path(os.environ["MEMBENCH_HUNT_REPORT"])
        needles = os.environ.get("MEMBENCH_HUNT_NEEDLES")
        self.needles = set(Path(needles).read_text().split()) if needles else set()
        self.n = 0
        self.report = {
            "hunts": [],
            "found": [],
            "objects": 0,
            "strings": 0,
            "gc_objects": 0,
            "membench_modules": 0,
            "frames": [],
            "queries": 0,
            "stack_walks": 0,
            "threads": 0,
        }
        self.atoms = []
        self.unanswerable: set[str] = set()  # questions it learnt are unanswerable

    def config(self):
        return {
            "deep_every": self.deep_every,
            "max_objects": self.max_objects,
            "quick_objects": self.quick_objects,
        }

    # -- hunting -------------------------------------------------------------------
    def hunt(self, when: str, deep: bool) -> None:
        h = Hunt(self.needles, self.max_objects if deep else self.quick_objects, self)
        roots = h.stack_roots()
        if deep:
            frozen = gc.get_freeze_count()  # the runner freezes what ingest built: thaw it,
            gc.unfreeze()  # or gc.get_objects() would not list it
            objs = gc.get_objects()
            if frozen:
                gc.freeze()
            self.report["gc_objects"] = max(self.report["gc_objects"], len(objs))
            roots += [(o, f"gc.get_objects()[{i}] {type(o).__name__}") for i, o in enumerate(objs)]
            mods = [
                (n, m)
                for n, m in list(sys.modules.items())
                if n == "membench" or n.startswith("membench.")
            ]
            self.report["membench_modules"] = len(mods)
            roots += [(vars(m), f"module {n}") for n, m in mods]
            del objs
        h.walk(roots)
        self.report["hunts"].append(when)
        self.report["objects"] += h.objects
        self.report["strings"] += h.strings
        self.report["threads"] = max(self.report["threads"], len(sys._current_frames()))
        self.report["frames"] = sorted(set(self.report["frames"]) | set(h.frames))
        if not deep:
            self.report["stack_walks"] += 1
        for f in h.found:
            if f not in self.report["found"]:
                self.report["found"].append(f)
        self.cheat(h)
        self._write()

    def cheat(self, h: Hunt) -> None:
        """Use what was found: a record marked unanswerable makes its question abstain."""
        for o in gc.get_objects() if h.found else ():
            if type(o).__name__ == "AnnotationRecord" and getattr(o, "unanswerable", False):
                self.unanswerable.add(o.question)

    def _write(self) -> None:
        tmp = self.report_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.report))
        tmp.replace(self.report_path)

    # -- the protocol --------------------------------------------------------------
    def ingest(self, items, corpus_root):
        self.hunt("ingest", deep=True)
        self.atoms = structural_atoms(items)
        self.by_holder = {}
        for a in self.atoms:
            self.by_holder.setdefault(a.holder, []).append(a)
        return self.atoms

    def query(self, question, scope, as_of):
        self.n += 1
        self.report["queries"] = self.n
        deep = self.n <= 3 or self.n % self.deep_every == 0
        self.hunt(f"query {self.n}", deep=deep)
        mine = [a.atom_id for a in self.by_holder.get(scope.holder, ()) if a.observed_at <= as_of][
            :100
        ]
        hits = [(a, 1.0 - i / 1000) for i, a in enumerate(mine)]
        return Result(hits=hits, cartridge=[] if question in self.unanswerable else mine[:1])


def hunt_here(needles: set[str], max_objects: int = 3_000_000) -> list[str]:
    """One deep hunt in the calling process (the test's control: it must find the records the
    caller holds)."""
    me = object()
    h = Hunt(needles, max_objects, me, max_found=1_000_000)
    roots = h.stack_roots() + [(o, f"gc[{i}]") for i, o in enumerate(gc.get_objects())]
    h.walk(roots)
    return h.found


__all__ = ["GoldHunter", "hunt_here"]
