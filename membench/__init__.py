"""membench: a benchmark and analysis suite for memory systems.

The package layout is the pipeline (docs/architecture.md, membench/docsite/house.py), each room
importing only from its own and the floors below: ``core`` -> ``modalities`` -> ``contract``
(records, system protocol, wire) -> ``sources`` -> ``sets`` -> ``content`` (what a system is
shown) -> ``systems`` -> ``serve`` -> ``run`` -> ``metrics`` -> ``trec`` -> ``analysis`` ->
``report``, with the ``membench`` command (``cli``) on top.
"""

__version__ = "0.1.0"

from .core import moved as _moved  # noqa: E402  (old import paths: membench/core/moved.py)

_moved.install()
