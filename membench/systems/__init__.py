"""The system registry: a name, an entry point or ``module:Class`` -> a MemorySystem.

``membench run --system NAME`` takes an ``http://`` or ``https://`` URL for a system served
over HTTP (:class:`membench.systems.remote.HttpSystem`), else looks NAME up in
:data:`REGISTRY` (one :class:`SystemSpec` per system that ships with membench: the reference
systems, the adapters of real memory libraries, the test doubles; :data:`BUILTIN`,
:data:`LIBRARIES` and :data:`DOUBLES` are views of it), then in the ``membench.systems``
entry-point group (so a package can register its own system), and finally
treats ``module:attr`` as an import path. The object found is called with the ``--config``
key/values as keyword arguments and must follow :class:`membench.contract.protocol.MemorySystem`.
A system that defines ``bind(ctx)`` is given a :class:`membench.systems.doubles.RunContext`
before ingest (only the test doubles do: it carries the gold).

Trust boundary: resolving a name imports and calls code (``module:attr`` may be anything
importable, e.g. ``os:system``, called with the ``--config`` values). That is how a user's
system runs, so it is by design; it is the one place where membench executes code the user
names. Data files never get here.
Only the registered test doubles whose record says ``sees_gold`` are given a
:class:`membench.systems.doubles.RunContext` (the split's records, gold included) before
ingest; the runner refuses any other system that asks for it (defines ``bind``), and marks the
runs of those that get it (``sees_gold``: "not a valid submission").
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from ..contract.protocol import Atom, MemorySystem, Result
from ..core.errors import MembenchError


@dataclass(frozen=True)
class SystemSpec:
    """One system that ships with membench: its ``--system`` name, where it lives
    (``"module:attr"``, imported only when the system is made), its ``kind`` (:data:`KINDS`),
    the optional extra that installs its library (``extra``: a library adapter's) and whether
    the runner hands it the split's records, gold included (``sees_gold``: a test double's)."""

    name: str
    target: str
    kind: str
    extra: str = ""
    sees_gold: bool = False


#: a reference system, an adapter of a real memory library (membench.systems.library), a test
#: double (membench.systems.doubles)
KINDS = ("reference", "library", "double")

#: every system that ships with membench, one record each; adding one is one record here
REGISTRY: tuple[SystemSpec, ...] = (
    SystemSpec("bm25", "membench.systems.reference:bm25", "reference"),
    SystemSpec("dense", "membench.systems.reference:dense", "reference"),
    SystemSpec("hybrid", "membench.systems.reference:hybrid", "reference"),
    # real memory libraries (optional extras: pip install 'membench[mem0]' etc.)
    SystemSpec("mem0", "membench.systems.mem0:mem0", "library", extra="mem0"),
    SystemSpec("mempalace", "membench.systems.mempalace:mempalace", "library", extra="mempalace"),
    SystemSpec(
        "llamaindex", "membench.systems.llamaindex:llamaindex", "library", extra="llamaindex"
    ),
    SystemSpec(
        "llamaindex-bm25",
        "membench.systems.llamaindex:llamaindex_bm25",
        "library",
        extra="llamaindex",
    ),
    SystemSpec("oracle", "membench.systems.doubles:Oracle", "double", sees_gold=True),
    SystemSpec("leaky", "membench.systems.doubles:Leaky", "double", sees_gold=True),
    SystemSpec("random", "membench.systems.doubles:RandomSystem", "double"),
    SystemSpec("newest", "membench.systems.doubles:Newest", "double"),
    SystemSpec("oldest", "membench.systems.doubles:Oldest", "double"),
    SystemSpec("metadata", "membench.systems.doubles:MetadataRules", "double"),
    SystemSpec("stuffed", "membench.systems.doubles:Stuffed", "double"),
    SystemSpec("nothing", "membench.systems.doubles:Nothing", "double"),
    SystemSpec("echo", "membench.systems.doubles:Echo", "double"),
)

# views of REGISTRY, for the callers that read them
#: name -> "module:attr" of every registered system
BUILTIN: dict[str, str] = {s.name: s.target for s in REGISTRY}
#: the adapters of real memory libraries: name -> the optional extra that installs the library
LIBRARIES: dict[str, str] = {s.name: s.extra for s in REGISTRY if s.kind == "library"}
#: the registered test doubles: name -> whether it is handed the split's records (gold)
DOUBLES: dict[str, bool] = {s.name: s.sees_gold for s in REGISTRY if s.kind == "double"}


def receives_records(system: Any) -> bool:
    """True when ``system`` is an instance of exactly a registered test double's class (not a
    subclass) that is handed the split's records: the only systems that may see gold."""
    return any(s.sees_gold and type(system) is _load(s.target) for s in REGISTRY)


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
    if name.startswith(("http://", "https://")):  # a system over HTTP (membench-http/1)
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
    raise MembenchError(
        f"unknown system {name!r}: use one of {known}, an entry point in the "
        "membench.systems group, or module:Class"
    )


def make_system(name: str, config: dict[str, Any] | None = None) -> MemorySystem:
    """The system ``name`` (see the module docstring) made with ``config``; what it was made
    from (the name and the config) is remembered for its run's identity
    (:func:`membench.systems.identity.remember`)."""
    from .identity import remember

    factory, how, dist = _resolve(name)
    kwargs = dict(config or {})
    if getattr(factory, "wraps", False):  # made around another registered system
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


__all__ = [
    "BUILTIN",
    "DOUBLES",
    "KINDS",
    "LIBRARIES",
    "REGISTRY",
    "SystemSpec",
    "make_system",
    "receives_records",
    "resolve",
    "Atom",
    "Result",
    "MemorySystem",
]
