"""What the command modules share: the argparse types of every numeric flag, each with a stated
range (:func:`int_in`, :func:`float_in`; :func:`positive_int`, :func:`seed_number`,
:func:`worker_count`, :func:`resample_count`, :func:`positive_seconds`, :func:`port_number`,
:func:`share_fraction`; the upper ends are bounds of :mod:`membench.core.bounds`), the help
texts several subcommands repeat, the ``--partial``/``--final`` reader flags,
``--config``/``--content`` parsing and the one way an output file named on the command line is
written. Nothing here imports a command module."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path

from ..core.atomic import atomic_write_text
from ..core.bounds import (
    MAX_FLAG_COUNT,
    MAX_FLAG_SECONDS,
    MAX_FLAG_SEED,
    MAX_FLAG_WORKERS,
    MAX_SYNTH_SIZE,
)
from ..core.errors import InputError, MembenchError
from ..core.jsonl import loads

FMT = argparse.RawDescriptionHelpFormatter  # descriptions and epilogs keep their lines
CORPUS_HELP = "corpus root (default: $MEMBENCH_CORPUS, else ../shared/corpus)"
SETS_HELP = "sets folder (default: bench/sets)"

TRUST = """\
trust: --system module:Class (and a system registered under the membench.systems entry-point
group) imports and calls that code with your permissions, by design: it is how your system
runs. Run only code you trust. --config values are passed to it as keyword arguments. Data
files (sets, items, run directories, TREC runs from others) are only read and checked: they
cannot run code, and every corpus path they name must resolve inside the corpus root."""


CONTENT_HELP = (
    "a setting of the shared content layer (JSON value), repeatable, for every "
    "system that reads content through it: ocr_processes (OCR workers; the output "
    "does not depend on it), ocr_overlap, ocr_engine (openvino or onnxruntime), "
    "pdf_ocr_dpi, strict (1: a corpus PDF or image the layer refuses stops the run; "
    "default 0: reported and not covered); recorded in meta.json as content, never "
    "passed to the system"
)


def _read_flags(p: argparse.ArgumentParser) -> None:
    """--partial and --final: what a reader of run directories may be asked to accept."""
    p.add_argument(
        "--partial",
        action="store_true",
        help="score an incomplete run on the queries it answered (marked PARTIAL everywhere)",
    )
    p.add_argument(
        "--final",
        action="store_true",
        help="read a run on the frozen test split (logged in bench/test_access.jsonl)",
    )


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:40]) + "..."


def int_in(lo: int, hi: int, name: str, bound: str = "") -> Callable[[str], int]:
    """An argparse type: an integer from ``lo`` to ``hi`` (``hi`` the bound named ``bound``,
    when it is one). Anything else is refused in one line stating the range. The function
    carries its range (``.range``), as :func:`float_in`'s do (and ``.lo_open``)."""
    limit = f"{lo:,} to {hi:,}" + (f" (bound {bound})" if bound else "")

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:  # (a number past Python's 4,300 digits too)
            raise argparse.ArgumentTypeError(
                f"expected an integer, {limit}, got {_shown(text)}"
            ) from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be {limit}, got {_shown(text)}")
        return v

    parse.__name__ = parse.__qualname__ = name
    parse.range = (lo, hi)  # type: ignore[attr-defined]
    return parse


def float_in(
    lo: float, hi: float, name: str, *, lo_open: bool = False, bound: str = "", unit: str = ""
) -> Callable[[str], float]:
    """An argparse type: a finite number in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``); NaN
    and infinities are refused, like anything outside the range, in one line stating it."""
    limit = f"{'>' if lo_open else '>='} {lo:g} and <= {hi:g}{unit}" + (
        f" (bound {bound})" if bound else ""
    )

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number {limit}, got {_shown(text)}"
            ) from None
        if not math.isfinite(v) or not (lo < v if lo_open else lo <= v) or not v <= hi:
            raise argparse.ArgumentTypeError(f"must be {limit}, got {_shown(text)}")
        return v

    parse.__name__ = parse.__qualname__ = name
    parse.range = (lo, hi)  # type: ignore[attr-defined]
    parse.lo_open = lo_open  # type: ignore[attr-defined]
    return parse


#: counts (--limit, --depth, --sample, --seeds, --cartridge-top, synth's sizes)
positive_int = int_in(1, MAX_FLAG_COUNT, "positive_int", "flag_count")
#: seeds (--seed, --sample-seed)
seed_number = int_in(0, MAX_FLAG_SEED, "seed_number", "flag_seed")
#: processes started at once (run --workers, report --jobs)
worker_count = int_in(1, MAX_FLAG_WORKERS, "worker_count", "flag_workers")
#: a count that may be 0 (pool --rrf-k)
count_or_zero = int_in(0, MAX_FLAG_COUNT, "count_or_zero", "flag_count")
#: a TCP port (0: the system picks a free one)
port_number = int_in(0, 65535, "port_number")
#: a duration in seconds (--connect-timeout)
positive_seconds = float_in(
    0, MAX_FLAG_SECONDS, "positive_seconds", lo_open=True, bound="flag_seconds", unit=" s"
)
#: a share of a whole (pool and q2d --share)
share_fraction = float_in(0, 1, "share_fraction", lo_open=True)
#: synth --atoms and --queries
synth_size = int_in(1, MAX_SYNTH_SIZE, "synth_size", "synth_size")


def resample_count(text: str) -> int:
    """An argparse type: a resample count, 1 to the bound ``resamples``
    (:data:`membench.metrics.bootstrap.MAX_RESAMPLES`)."""
    from ..metrics.bootstrap import MAX_RESAMPLES

    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer, 1 to {MAX_RESAMPLES:,} (bound resamples), got {_shown(text)}"
        ) from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    if v > MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(f"at most {MAX_RESAMPLES:,} (bound resamples), got {v:,}")
    return v


resample_count.range = (1, 100_000)  # type: ignore[attr-defined]  (checked: test_cli_flags)


def _write_output(path: str | Path, text: str, flag: str) -> Path:
    """Write an output file named by ``flag`` atomically; a folder there is an InputError and
    a missing parent folder is created."""
    p = Path(path)
    if p.is_dir():
        raise InputError(
            p, None, None, f"is a folder; {flag} names a file to write", rule="ARGUMENT"
        )
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(p, text)
    return p


def _parse_config(pairs: list[str] | None) -> dict:
    """``--config KEY=VALUE`` (repeatable) as a dict: each value read as JSON, else its text."""
    cfg = {}
    for p in pairs or []:
        k, sep, v = p.partition("=")
        if not sep:
            raise MembenchError(f"--config {p!r}: expected KEY=VALUE")
        try:
            cfg[k] = loads(v)
        except json.JSONDecodeError:
            cfg[k] = v  # not JSON: the text itself (e.g. gate=rrf)
        except (ValueError, RecursionError) as e:
            raise MembenchError(f"--config {k}=...: not a usable JSON value ({e})"[:200]) from None
    return cfg


def _content(pairs: list[str] | None) -> None:
    """``--content KEY=VALUE``: the content layer's settings for this process and the ones it
    starts (membench.content.config.CONTENT_KEYS), never a system's config."""
    if pairs:
        from ..content.config import set_content_settings

        set_content_settings(_parse_config(pairs))
