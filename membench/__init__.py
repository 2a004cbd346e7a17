"""membench: a benchmark and analysis suite for memory systems.

The package layout is the pipeline (docs/architecture.md), each layer importing only from the
layers before it: ``core`` -> ``modalities`` -> ``sets`` (sources, build, validate) -> ``run``
(systems, runner) -> ``metrics`` -> ``analysis`` (slices, compare, browse) -> ``report``, with
the ``membench`` command (``cli``) on top.
"""

__version__ = "0.1.0"
