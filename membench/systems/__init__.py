"""The system registry: a name, an entry point or ``module:Class`` -> a MemorySystem.

``membench run --system NAME`` takes an ``http://`` or ``https://`` URL for a system served
over HTTP (:class:`membench.systems.remote.HttpSystem`), else looks NAME up in
:data:`BUILTIN` (the reference systems, the adapters of real memory libraries in
:data:`LIBRARIES`, the test doubles), then in the
``membench.systems`` entry-point group (so a package can register its own system), and finally
treats ``module:attr`` as an import path. The object found is called with the ``--config``
key/values as keyword arguments and must follow :class:`membench.contract.protocol.MemorySystem`.
A system that defines ``bind(ctx)`` is given a :class:`membench.systems.doubles.RunContext`
before ingest (only the test doubles do: it carries the gold).

Trust boundary: resolving a name imports and calls code (``module:attr`` may be anything
importable, e.g. ``os:system``, called with the ``--config`` values). That is how a user's
system runs, so it is by design; it is the one place where membench executes code the user
names. Data files never get here.
Only the registered test doubles of :data:`DOUBLES` that need it are given a
:class:`membench.systems.doubles.RunContext` (the split's records, gold included) before
ingest; the runner refuses any other system that asks for it (defines ``bind``), and marks the
runs of those that get it (``sees_gold``: "not a valid submission").
"""

from __future__ import annotations

import importlib
import sys
from importlib.metadata import entry_points
from typing import Any

from ..core.errors import MembenchError
from ..contract.protocol import Atom, MemorySystem, Result

BUILTIN: dict[str, str] = {
    "bm25": "membench.systems.reference:bm25",
    "dense": "membench.systems.reference:dense",
    "hybrid": "membench.systems.reference:hybrid",
    # real memory libraries (optional extras: pip install 'membench[mem0]' etc.;
    # membench.systems.library)
    "mem0": "membench.systems.mem0:mem0",
    "mempalace": "membench.systems.mempalace:mempalace",
    "llamaindex": "membench.systems.llamaindex:llamaindex",
    "llamaindex-bm25": "membench.systems.llamaindex:llamaindex_bm25",
    "oracle": "membench.systems.doubles:Oracle",
    "leaky": "membench.systems.doubles:Leaky",
    "random": "membench.systems.doubles:RandomSystem",
    "newest": "membench.systems.doubles:Newest",
    "oldest": "membench.systems.doubles:Oldest",
    "metadata": "membench.systems.doubles:MetadataRules",
    "stuffed": "membench.systems.doubles:Stuffed",
    "nothing": "membench.systems.doubles:Nothing",
    "echo": "membench.systems.doubles:Echo",
}

#: the adapters of real memory libraries: name -> the optional extra that installs the library
LIBRARIES: dict[str, str] = {"mem0": "mem0", "mempalace": "mempalace", "llamaindex": "llamaindex",
                             "llamaindex-bm25": "llamaindex"}

#: the registered test doubles: name -> whether it is handed the split's records (gold)
DOUBLES: dict[str, bool] = {"oracle": True, "leaky": True, "random": False, "newest": False,
                            "oldest": False, "metadata": False, "stuffed": False, "nothing": False,
                            "echo": False}


def receives_records(system: Any) -> bool:
    """True when ``system`` is an instance of exactly a registered test double's class (not a
    subclass) that is handed the split's records: the only systems that may see gold."""
    return any(gets and type(system) is _load(BUILTIN[name]) for name, gets in DOUBLES.items())


def _load(path: str):
    mod, _, attr = path.partition(":")
    if not mod or not attr:
        raise MembenchError(f"system {path!r}: expected a registered name or module:Class")
    try:
        obj = importlib.import_module(mod)
    except ImportError as e:
        raise MembenchError(f"system {path!r}: cannot import {mod}: {e}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise MembenchError(f"system {path!r}: {mod} has no attribute {attr}")
        obj = getattr(obj, part)
    return obj


def resolve(name: str):
    return _resolve(name)[0]


def _resolve(name: str):
    """``(factory, how, distribution)``: how ``name`` resolved (``http``, ``builtin``,
    ``entry point`` with its distribution, or ``module``)."""
    if name.startswith(("http://", "https://")):    # a system over HTTP (membench-http/1)
        from functools import partial

        from .remote import HttpSystem
        return partial(HttpSystem, name), "http", None
    if name in BUILTIN:
        return _load(BUILTIN[name]), "builtin", None
    for ep in entry_points(group="membench.systems"):
        if ep.name == name:
            return ep.load(), "entry point", ep.dist
    if ":" in name:
        return _load(name), "module", None
    known = ", ".join(sorted(BUILTIN))
    raise MembenchError(f"unknown system {name!r}: use one of {known}, an entry point in the "
                        "membench.systems group, or module:Class")


def make_system(name: str, config: dict[str, Any] | None = None) -> MemorySystem:
    """The system ``name`` (see the module docstring) made with ``config``; what it was made
    from (the name and the config) is remembered for its run's identity
    (:func:`membench.systems.identity.remember`)."""
    from .identity import remember

    factory, how, dist = _resolve(name)
    kwargs = dict(config or {})
    if getattr(factory, "wraps", False):    # made around another registered system
        kwargs["registry"] = sys.modules[__name__]
    try:
        system = factory(**kwargs)
    except TypeError as e:
        raise MembenchError(f"system {name!r}: bad config {config}: {e}") from None
    for attr in ("name", "config", "ingest", "query"):
        if not hasattr(system, attr):
            raise MembenchError(f"system {name!r} lacks {attr!r}: see membench.contract.protocol")
    remember(system, name, dict(config or {}), how, dist)
    return system


__all__ = ["BUILTIN", "DOUBLES", "LIBRARIES", "make_system", "receives_records", "resolve", "Atom", "Result",
           "MemorySystem"]
