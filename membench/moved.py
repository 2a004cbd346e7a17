"""Old import paths, retired on a schedule: where a module moved, and the warning that says so.

:data:`MOVED` maps each old dotted path (a module, or a package with everything under it) to
its new home. :class:`MovedFinder`, put first on ``sys.meta_path`` by ``membench/__init__.py``,
makes ``import old.path`` return the very module object of the new path (same classes, same
state) and warns with a ``DeprecationWarning`` naming the new path and :data:`REMOVED_IN`, the
release that drops this module. Nothing is imported until an old path is asked for. On the top
floor: it imports modules of every floor. Touches nothing else. Start at :func:`new_path`;
``tests/test_moved.py`` keeps the old paths out of the repository (docs/architecture.md).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

from .core.version import __version__

#: the release that removes :data:`MOVED` and this module
REMOVED_IN = "0.3.0"

#: old dotted path -> new dotted path; a package's entry covers its submodules too
MOVED: dict[str, str] = {
    "membench.sets.schema": "membench.contract.schema",
    "membench.sets.sources": "membench.sources",
    "membench.sets.tells": "membench.contract.tells",
    "membench.run.protocol": "membench.contract.protocol",
    "membench.run.content": "membench.content",
    "membench.run.systems": "membench.systems",
    "membench.run.cards": "membench.systems.cards",
    "membench.run.identity": "membench.systems.identity",
    "membench.run.models": "membench.systems.models",
    "membench.run.remote": "membench.serve",
    "membench.run.remote.wire": "membench.contract.wire",
    "membench.run.remote.client": "membench.systems.remote",
    "membench.run.remote.server": "membench.serve.server",
    "membench.metrics.trec": "membench.trec",
    "membench.metrics.trec_eval": "membench.trec.trec_eval",
    "membench.analysis.plots": "membench.report.plots",
}


_OLD = tuple(MOVED)  # (a name they start is checked by new_path)


def new_path(name: str) -> str | None:
    """Where the module ``name`` is now (``None`` when it did not move): the longest entry of
    :data:`MOVED` that is ``name`` or a package above it."""
    best = None
    for old in MOVED:
        if (name == old or name.startswith(old + ".")) and (best is None or len(old) > len(best)):
            best = old
    return None if best is None else MOVED[best] + name[len(best) :]


def message(old: str, new: str) -> str:
    """The warning an import of the old path ``old`` gives."""
    return (
        f"{old} is an old path of {new} (membench {__version__}); membench {REMOVED_IN} "
        f"removes it: import {new}"
    )


def _stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside this module and importlib (the line that
    imports the old path), counted from the caller of this function."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (
        frame.f_globals.get("__name__") == __name__
        or frame.f_globals.get("__name__", "").startswith("importlib")
    ):
        frame = frame.f_back
        name = frame.f_code.co_filename if frame is not None else ""
        if not ("importlib" in name and "_bootstrap" in name):  # warnings skips those itself
            level += 1
    return level


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec):
        # the module of the new path itself: importlib keeps its name and file, and sets its
        # __spec__ to the old path's, which exec_module puts back
        module = importlib.import_module(self.target)
        self.spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        module.__spec__ = self.spec  # already executed under its new name


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds an old path of :data:`MOVED` (and nothing else), with its warning."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_OLD):  # every other import of the process: one C call
            return None
        new = new_path(fullname)
        if new is None or importlib.util.find_spec(new) is None:
            return None  # not moved, or no such module at the new path either
        warnings.warn(message(fullname, new), DeprecationWarning, stacklevel=_stacklevel())
        return importlib.util.spec_from_loader(fullname, _Alias(new))


def install() -> None:
    """Put :class:`MovedFinder` first on ``sys.meta_path`` (once per process)."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())
