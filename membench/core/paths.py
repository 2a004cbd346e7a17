"""Where things live: the corpus root, the repository's bench/ folder, the derived-data cache.

Corpus root, first that applies: the ``--corpus`` flag, ``$MEMBENCH_CORPUS``, then
``../shared/corpus`` next to the current directory or next to this checkout.
Cache (OCR text, embeddings, PDF text; keyed by content sha256, never in the repo):
``$MEMBENCH_CACHE`` or ``~/.cache/membench``.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import MembenchError

REPO_ROOT = Path(__file__).resolve().parents[2]
BENCH_DIR = REPO_ROOT / "bench"
MANIFEST_PATH = BENCH_DIR / "corpus" / "manifest.jsonl"
LOCK_PATH = BENCH_DIR / "sets.lock.json"
DEFAULT_SETS_DIR = BENCH_DIR / "sets"


def corpus_root(explicit: str | os.PathLike | None = None) -> Path:
    if explicit:
        p = Path(explicit)
        if not p.is_dir():
            raise MembenchError(f"corpus root {p} is not a directory")
        return p.resolve()
    env = os.environ.get("MEMBENCH_CORPUS")
    if env:
        p = Path(env)
        if not p.is_dir():
            raise MembenchError(f"$MEMBENCH_CORPUS={env} is not a directory")
        return p.resolve()
    for base in (Path.cwd(), REPO_ROOT):
        p = base.parent / "shared" / "corpus"
        if p.is_dir():
            return p.resolve()
    raise MembenchError("no corpus root: pass --corpus DIR or set MEMBENCH_CORPUS "
                        "(expected ../shared/corpus next to the checkout)")


def resolve_user_path(p: str | os.PathLike) -> Path:
    """A path a user or a notebook parameter gave: absolute as is; relative to the current
    directory if it exists there, else relative to the repository root (papermill runs from
    the repository root, JupyterLab starts kernels in ``notebooks/``)."""
    p = Path(p)
    if p.is_absolute() or p.exists():
        return p
    alt = REPO_ROOT / p
    if alt.exists() or Path.cwd().resolve() == (REPO_ROOT / "notebooks").resolve():
        return alt      # (a path to create, from a kernel in notebooks/: the repo root's)
    return p


def cache_dir(kind: str) -> Path:
    base = Path(os.environ.get("MEMBENCH_CACHE") or Path.home() / ".cache" / "membench")
    p = base / kind
    p.mkdir(parents=True, exist_ok=True)
    return p
