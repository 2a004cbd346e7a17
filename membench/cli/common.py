"""What the command modules share: argparse types (:func:`positive_int`, :func:`resample_count`,
:func:`positive_seconds`, :func:`port_number`), the help texts several subcommands repeat, the
``--partial``/``--final`` reader flags, ``--config``/``--content`` parsing and the one way an
output file named on the command line is written. Nothing here imports a command module."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..core.atomic import atomic_write_text
from ..core.errors import InputError, MembenchError
from ..core.jsonl import loads

FMT = argparse.RawDescriptionHelpFormatter     # descriptions and epilogs keep their lines
CORPUS_HELP = "corpus root (default: $MEMBENCH_CORPUS, else ../shared/corpus)"
SETS_HELP = "sets folder (default: bench/sets)"

TRUST = """\
trust: --system module:Class (and a system registered under the membench.systems entry-point
group) imports and calls that code with your permissions, by design: it is how your system
runs. Run only code you trust. --config values are passed to it as keyword arguments. Data
files (sets, items, run directories, TREC runs from others) are only read and checked: they
cannot run code, and every corpus path they name must resolve inside the corpus root."""


CONTENT_HELP = ("a setting of the shared content layer (JSON value), repeatable, for every "
                "system that reads content through it: ocr_processes (OCR workers; the output "
                "does not depend on it), ocr_overlap, ocr_engine (openvino or onnxruntime), "
                "pdf_ocr_dpi, strict (1: a corpus PDF or image the layer refuses stops the run; "
                "default 0: reported and not covered); recorded in meta.json as content, never "
                "passed to the system")


def _read_flags(p: argparse.ArgumentParser) -> None:
    """--partial and --final: what a reader of run directories may be asked to accept."""
    p.add_argument("--partial", action="store_true", help="score an incomplete run on the "
                   "queries it answered (marked PARTIAL everywhere)")
    p.add_argument("--final", action="store_true", help="read a run on the frozen test split "
                   "(logged in bench/test_access.jsonl)")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (0 or a negative count is refused, not guessed)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def resample_count(text: str) -> int:
    """An argparse type: a resample count, 1 to the bound ``resamples``
    (:data:`membench.metrics.bootstrap.MAX_RESAMPLES`)."""
    from ..metrics.bootstrap import MAX_RESAMPLES

    v = positive_int(text)
    if v > MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(f"at most {MAX_RESAMPLES:,} (bound resamples), got "
                                         f"{v:,}")
    return v


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 < v < float("inf"):
        raise argparse.ArgumentTypeError(f"must be > 0 and finite, got {text}")
    return v


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 to 65535 (0: the system picks a free one)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {v}")
    return v


def _write_output(path: str | Path, text: str, flag: str) -> Path:
    """Write an output file named by ``flag`` atomically; a folder there is an InputError and
    a missing parent folder is created."""
    p = Path(path)
    if p.is_dir():
        raise InputError(p, None, None, f"is a folder; {flag} names a file to write",
                         rule="ARGUMENT")
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
            cfg[k] = v                      # not JSON: the text itself (e.g. gate=rrf)
        except (ValueError, RecursionError) as e:
            raise MembenchError(f"--config {k}=...: not a usable JSON value ({e})"[:200]) from None
    return cfg


def _content(pairs: list[str] | None) -> None:
    """``--content KEY=VALUE``: the content layer's settings for this process and the ones it
    starts (membench.content.config.CONTENT_KEYS), never a system's config."""
    if pairs:
        from ..content.config import set_content_settings

        set_content_settings(_parse_config(pairs))
