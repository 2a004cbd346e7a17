"""Where a module moved, so that an import path the docs once gave keeps working.

The package's rooms were laid out as the pipeline (docs/architecture.md) after users had
imported some modules by their old paths (``membench.run.protocol``, ``membench.run.systems``,
``membench.sets.schema``, ...). :data:`MOVED` maps each old path (a module, or a package with
everything under it) to where the code is now; :class:`MovedFinder`, installed by
``membench/__init__.py``, makes ``import old.path`` return the very module object of the new
path (the same classes, the same module state: ``isinstance`` and monkeypatching behave as
before), and nothing is imported until an old path is asked for. New code imports the new
paths; ``tests/test_documented_paths.py`` imports every path the docs name, old and new.
Standard library only: ``membench`` imports this module first.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

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


_OLD = tuple(MOVED)                    # (a name they start is checked by new_path)


def new_path(name: str) -> str | None:
    """Where the module ``name`` is now (``None`` when it did not move): the longest entry of
    :data:`MOVED` that is ``name`` or a package above it."""
    best = None
    for old in MOVED:
        if (name == old or name.startswith(old + ".")) and (best is None or len(old) > len(best)):
            best = old
    return None if best is None else MOVED[best] + name[len(best):]


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
        module.__spec__ = self.spec    # already executed under its new name


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds an old path of :data:`MOVED` (and nothing else)."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_OLD):   # every other import of the process: one C call
            return None
        new = new_path(fullname)
        if new is None or importlib.util.find_spec(new) is None:
            return None                # not moved, or no such module at the new path either
        return importlib.util.spec_from_loader(fullname, _Alias(new))


def install() -> None:
    """Put :class:`MovedFinder` first on ``sys.meta_path`` (once per process)."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())
