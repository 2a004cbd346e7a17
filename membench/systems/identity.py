"""What a system *is*: the identity a run records (meta.json ``identity``), and its card by it.

A name says nothing (any class can call itself ``hybrid``), so a run records what ran, from the
object and from how it was named (:func:`membench.systems.make_system` remembers the
``--system`` spec and ``--config`` arguments of what it makes, :func:`origin_of`):

* ``kind``: ``reference``, ``library adapter``, ``test double``, ``registered package`` (an
  entry point of the ``membench.systems`` group), ``user module`` (``module:Class``, or an
  object made in Python), ``HTTP service`` or ``imported`` (:mod:`membench.run.importer`);
* ``spec`` and ``args`` (what ``--system`` and ``--config`` were given; ``null`` when unknown),
  with which a fresh process can make the same system again (``membench verify``);
* ``class`` (``module:qualname``), ``distribution`` (``{name, version}`` of the installed
  distribution the class comes from: membench for its own systems, the entry point's for a
  registered package, the one that ships a user module's top-level package from site-packages;
  ``null`` for a module in a working folder) and
  ``source_sha256`` (of the ``.py`` files of the class's top-level package, or of its one
  module file: :func:`source_sha256`);
* for an HTTP service, ``service``: the name and config its ``/card`` answer gives.

membench's own systems are recognised by their class, defined in a file of membench's own
package; cards follow the identity (:func:`membench.systems.cards.card_for`). Start at
:func:`identify`. Reads the source files it hashes and installed distributions' metadata; writes
nothing. docs/cards.md, "Cards belong to an identity, not a name".
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import weakref
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from ..core.bounds import bound
from ..core.hashing import PACKAGE, source_digest

#: the kinds of system a run can record
KINDS = (
    "reference",
    "library adapter",
    "test double",
    "registered package",
    "user module",
    "HTTP service",
    "imported",
)
#: the kinds whose code is membench's own (their cards come from its registry)
MEMBENCH_KINDS = ("reference", "library adapter", "test double")
MAX_SOURCE_FILES = bound(
    "identity_source_files",
    20_000,
    "files",
    "the .py files of a system's top-level package hashed into its identity's source_sha256",
    "the digest covers the first files in path order and the identity says so "
    "(source_files_hashed < source_files)",
    "membench.systems.identity",
)

_LIBRARY_MODULES = ("library", "mem0", "mempalace", "llamaindex")
_ORIGINS: dict[int, tuple[Any, str, dict | None, str, Any]] = {}


def remember(system: Any, spec: str, args: dict | None, how: str, dist: Any = None) -> None:
    """Record how :func:`membench.systems.make_system` made ``system``: the ``--system``
    spec, its ``--config`` arguments, how the spec resolved (``builtin``, ``entry point``,
    ``module``, ``http``) and, for an entry point, its distribution. Kept while the object
    lives (a weak reference where the object allows one)."""
    key = id(system)
    try:
        ref = weakref.ref(system, lambda _r, k=key: _ORIGINS.pop(k, None))
    except TypeError:  # no weak references: kept for the process
        ref = lambda s=system: s
    _ORIGINS[key] = (ref, spec, None if args is None else dict(args), how, dist)


def origin_of(system: Any) -> tuple[str, dict | None, str, Any] | None:
    """``(spec, args, how, dist)`` of a system made by ``make_system``, else ``None``."""
    o = _ORIGINS.get(id(system))
    if o is None or o[0]() is not system:
        return None
    return o[1], o[2], o[3], o[4]


def _is_membench_class(cls: type) -> bool:
    """A class defined in a file of membench's own package (not merely a module that calls
    itself ``membench.x``)."""
    if not cls.__module__.startswith("membench."):
        return False
    try:
        f = Path(inspect.getfile(cls)).resolve()
    except (TypeError, OSError):
        return False
    return PACKAGE in f.parents


def _module_files(module_name: str) -> tuple[list[Path], Path | None]:
    """The ``.py`` files of a module's top-level package (or its one file) and their root."""
    top = module_name.split(".")[0]
    mod = sys.modules.get(top)
    paths = list(getattr(mod, "__path__", []) or [])
    if paths:  # a package: its folder's parent is the base
        return (
            sorted(p.resolve() for d in paths for p in Path(d).rglob("*.py")),
            Path(paths[0]).resolve().parent,
        )
    f = getattr(sys.modules.get(module_name) or mod, "__file__", None)
    if f and Path(f).is_file():
        return [Path(f).resolve()], Path(f).resolve().parent
    return [], None


def source_sha256(module_name: str) -> dict[str, Any]:
    """``{"source_sha256", "source_files", "source_files_hashed"}`` of the ``.py`` files of a
    module's top-level package (each file's path relative to the package's folder and the
    sha256 of its bytes, in path order; at most :data:`MAX_SOURCE_FILES`), or of its one
    module file; ``source_sha256`` null when there is no file (a class made in a notebook)."""
    files, base = _module_files(module_name)
    if not files:
        return {"source_sha256": None, "source_files": 0, "source_files_hashed": 0}
    h = hashlib.sha256()
    hashed = files[:MAX_SOURCE_FILES]
    for p in hashed:
        rel = p.relative_to(base).as_posix() if base in p.parents else p.name
        h.update(rel.encode() + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return {
        "source_sha256": h.hexdigest(),
        "source_files": len(files),
        "source_files_hashed": len(hashed),
    }


@lru_cache(maxsize=1)
def _installed() -> dict[str, list[str]]:
    try:
        return metadata.packages_distributions()
    except Exception:  # noqa: BLE001 - broken metadata on the path: no distribution
        return {}


def _distribution_of(module_name: str) -> dict[str, str] | None:
    """The installed distribution that ships the module's top-level package: looked up only
    for a module installed into site-packages (a module in a working folder has none; reading
    every distribution's file list takes about a second)."""
    top = module_name.split(".")[0]
    f = getattr(sys.modules.get(top), "__file__", None) or ""
    if not {"site-packages", "dist-packages"} & set(Path(f).parts):
        return None
    names = _installed().get(top) or []
    for n in names:
        try:
            return {"name": n, "version": metadata.version(n)}
        except metadata.PackageNotFoundError:
            continue
    return None


def identify(system: Any) -> dict[str, Any]:
    """The identity of ``system`` (module docstring)."""
    from ..core.version import __version__

    cls = type(system)
    origin = origin_of(system)
    spec, args, how, dist = origin if origin else (None, None, None, None)
    out: dict[str, Any] = {
        "kind": None,
        "spec": spec,
        "args": args,
        "class": f"{cls.__module__}:{cls.__qualname__}",
    }
    from .remote import HttpSystem

    if isinstance(system, HttpSystem):
        out.update(
            kind="HTTP service",
            spec=system.url,
            args=None,
            service={"name": system.card.get("name"), "config": system.card.get("config")},
            distribution=None,
            source_sha256=None,
        )
        return out
    if _is_membench_class(cls):
        sub = cls.__module__.split(".")
        kind = (
            "test double"
            if sub[-1] == "doubles"
            else "library adapter"
            if sub[-1] in _LIBRARY_MODULES
            else "reference"
        )
        out.update(
            kind=kind,
            distribution={"name": "membench", "version": __version__},
            source_sha256=source_digest(),
        )
        return out
    out["kind"] = "registered package" if how == "entry point" else "user module"
    if dist is not None:
        out["distribution"] = {"name": dist.metadata["Name"], "version": dist.version}
    else:
        out["distribution"] = _distribution_of(cls.__module__)
    out.update(source_sha256(cls.__module__))
    if cls.__module__ == "__main__":
        out["note"] = "defined in __main__: another process cannot import it"
    return out


def rerunnable(identity: dict[str, Any]) -> str | None:
    """Why a fresh process cannot make the same system again from this identity (``None``
    when it can; whether the installed code is still the same is checked after)."""
    kind = identity.get("kind")
    if kind == "HTTP service":
        return f"an HTTP service ({identity.get('spec')}): membench cannot start it again"
    if kind == "imported":
        return "an imported run (a TREC file): there is no code to run"
    if kind == "test double":
        return "a test double"
    if not identity.get("spec") or identity.get("args") is None:
        return (
            "made in Python, not by name (`membench run --system ...` or make_system): "
            "its arguments are unknown"
        )
    if str(identity.get("class", "")).startswith("__main__:"):
        return "defined in __main__: another process cannot import it"
    d = identity.get("distribution")
    if kind in ("registered package", "user module") and d:
        try:
            have = metadata.version(d["name"])
        except metadata.PackageNotFoundError:
            return f"package {d['name']} {d['version']} is not installed"
        if have != d["version"]:
            return f"package {d['name']} {d['version']} ran; {have} is installed"
    return None


__all__ = [
    "KINDS",
    "MEMBENCH_KINDS",
    "identify",
    "origin_of",
    "remember",
    "rerunnable",
    "source_sha256",
]
