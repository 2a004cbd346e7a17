"""membench: a benchmark and analysis suite for memory systems.

Pipeline, one module family per stage: ``sources`` (adapters) -> ``build`` (sets) ->
``validate`` -> ``run`` -> ``metrics`` -> ``slices`` -> ``report``.
"""

__version__ = "0.1.0"
