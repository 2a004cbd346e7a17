"""Every bound membench puts on what it reads, waits for or allocates, in one place.

Each input a user (or a system under test, or a file from someone else) controls has a stated
limit here, and the code that enforces it imports the constant from this module, so the number
a user reads in the docs is the number the code applies. ``docs/robustness.md`` carries the
table :func:`membench.docsite.bounds.markdown_table` renders from the modules its ``MODULES``
lists (a test holds the two equal; add a module that registers a bound there).

A bound is registered with :func:`bound`, which returns its value::

    MAX_LINE_BYTES = bound("line_bytes", 64 << 20, "bytes", "one line of a JSON-lines or TREC file",
                           "located error (LINE_TOO_LONG) naming the file and line")

Keep names short and stable: they appear in error messages and in the docs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bound:
    """One limit: ``name`` (stable key), ``value`` in ``unit``, what it limits (``what``),
    what happens past it (``past``) and where it is enforced (``where``, a module path)."""

    name: str
    value: float | int
    unit: str
    what: str
    past: str
    where: str


REGISTRY: dict[str, Bound] = {}


def bound(name: str, value, unit: str, what: str, past: str, where: str = "") -> object:
    """Register one bound and return its value (a second registration of the same name must
    agree, so a constant imported twice stays one bound)."""
    b = Bound(name, value, unit, what, past, where)
    old = REGISTRY.get(name)
    if old is not None and old != b:
        raise ValueError(f"bound {name!r} registered twice with different values")
    REGISTRY[name] = b
    return value


# the numeric flags of the command line (membench.cli.common's argparse types; resamples,
# ports and shares have their own ranges there)
MAX_FLAG_COUNT = bound(
    "flag_count",
    (1 << 31) - 1,
    "",
    "a count given as a flag (--limit, --depth, --sample, --seeds, --cartridge-top, --rrf-k)",
    "refused argument (exit 2, one line stating the range)",
    "membench.cli.common",
)
MAX_FLAG_SEED = bound(
    "flag_seed",
    (1 << 32) - 1,
    "",
    "a seed given as a flag (--seed, --sample-seed; from 0)",
    "refused argument (exit 2, one line stating the range)",
    "membench.cli.common",
)
MAX_FLAG_WORKERS = bound(
    "flag_workers",
    256,
    "processes",
    "processes a flag starts at once (run --workers, report --jobs)",
    "refused argument (exit 2, one line stating the range)",
    "membench.cli.common",
)
MAX_FLAG_SECONDS = bound(
    "flag_seconds",
    86_400.0,
    "s",
    "a duration given as a flag (--connect-timeout; NaN and infinities are refused too)",
    "refused argument (exit 2, one line stating the range)",
    "membench.cli.common",
)
MAX_SYNTH_SIZE = bound(
    "synth_size",
    10_000_000,
    "",
    "atoms and queries `membench synth` makes (--atoms, --queries)",
    "refused argument (exit 2, one line stating the range)",
    "membench.cli.common",
)


def __getattr__(name: str):
    if name in ("all_bounds", "markdown_table"):  # here up to 0.1.0
        raise AttributeError(
            f"module {__name__!r} has no attribute {name!r}: the table is the "
            f"docs' (from membench.docsite.bounds import {name})"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
