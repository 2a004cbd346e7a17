"""membench: a benchmark and analysis suite for memory systems.

The front door, for notebooks and scripts (docs/api.md documents every name)::

    import membench as mb
    run = mb.open_run("runs/bm25-dev")      # membench.metrics.rundir.RunDir
    figures = mb.score(run)                 # the metrics.json object
    mb.browse(run)                          # the false recalls, with Prev / Next

:data:`__all__` is the door: ``open_sets``, ``open_run``, ``run_system``, ``score``,
``compare``, ``leaderboard``, ``read_trec``, ``write_trec``, ``browse`` (thin wrappers, in
:mod:`membench.api`), ``page`` (the report notebooks' tables, escaping, provenance and plots:
:mod:`membench.page`), and for writing a system ``Result`` (what ``query`` returns:
:class:`membench.contract.protocol.Result`) and ``chunk`` (the content layer's atoms:
:func:`membench.content.chunk`). They resolve on first use (PEP 562: :func:`__getattr__`), so
``import membench`` loads no pandas, numpy or model runtime (``tests/test_api.py`` checks it).

The package layout is the pipeline (docs/architecture.md, membench/docsite/house.py), each room
importing only from its own and the floors below: ``core`` -> ``modalities`` -> ``contract``
(records, system protocol, wire) -> ``sources`` -> ``sets`` -> ``content`` (what a system is
shown) -> ``systems`` -> ``serve`` -> ``run`` -> ``metrics`` -> ``trec`` -> ``analysis`` ->
``report``, with the ``membench`` command (``cli``) and this door on top. Importing the package
also installs the old import paths, each with its DeprecationWarning (membench/moved.py), and
nothing else.
"""

from .core.version import __version__  # noqa: E402,F401
from .moved import install as _install_moved  # noqa: E402  (old import paths: membench/moved.py)

_install_moved()

#: the door's functions (membench/api.py); ``page`` is the module membench/page.py
_API = (
    "open_sets",
    "open_run",
    "run_system",
    "score",
    "compare",
    "leaderboard",
    "read_trec",
    "write_trec",
    "browse",
)

__all__ = [*_API, "page", "Result", "chunk"]


def __getattr__(name: str) -> object:
    # `import membench.x as y`, not `from . import x`: the latter asks this hook for `x` first
    if name in _API:
        import membench.api as api

        value = getattr(api, name)
    elif name == "page":
        import membench.page as value
    elif name == "Result":
        from membench.contract.protocol import Result as value
    elif name == "chunk":
        from membench.content import chunk as value
    else:
        raise AttributeError(
            f"module 'membench' has no attribute {name!r} (the door's names: "
            f"{', '.join(__all__)}; docs/api.md)"
        )
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, "__version__"})
