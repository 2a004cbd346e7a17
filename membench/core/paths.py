"""Where things live: the corpus root, the repository's bench/ folder, the derived-data cache.

Corpus root, first that applies: the ``--corpus`` flag, ``$MEMBENCH_CORPUS``, then
``../shared/corpus`` next to the current directory or next to this checkout.
Cache (OCR text, embeddings, PDF text; keyed by content sha256, never in the repo):
``$MEMBENCH_CACHE`` or ``~/.cache/membench``.

Confinement (:func:`confine`): a path that data names under the corpus root (an item's
``path``, a manifest file) is read only if it is relative, has no ``..`` segment and, with every
symlink resolved (``Path.resolve``), stays inside the resolved root; otherwise a located
PATH_OUTSIDE_CORPUS error. One rule for every reader of corpus files.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import InputError, MembenchError

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
    raise MembenchError(
        "no corpus root: pass --corpus DIR or set MEMBENCH_CORPUS "
        "(expected ../shared/corpus next to the checkout)"
    )


def path_shape_problem(rel: object) -> str | None:
    """Why ``rel`` cannot be a path relative to the corpus root (``None`` when it can): not a
    non-empty string, absolute, a ``..`` or empty segment, a backslash or a NUL byte. This is
    the check that needs no file system; :func:`confine` adds symlinks."""
    if not isinstance(rel, str) or not rel:
        return "must be a non-empty string"
    if "\x00" in rel:
        return "contains a NUL byte"
    if "\\" in rel:
        return "contains a backslash (paths use /)"
    if rel.startswith("/"):
        return f"{rel!r} is absolute; item paths are relative to the corpus root"
    parts = rel.split("/")
    if ".." in parts:
        return f"{rel!r} climbs out with '..'; item paths stay under the corpus root"
    if "" in parts or "." in parts:
        return f"{rel!r} has an empty or '.' segment"
    return None


def confine(
    root: str | os.PathLike,
    rel: object,
    *,
    file: str | os.PathLike | None = None,
    line: int | None = None,
    field: str | None = "path",
) -> Path:
    """``root / rel`` with every symlink resolved, if it stays inside the (resolved) corpus
    root; otherwise an :class:`InputError` (rule PATH_OUTSIDE_CORPUS) naming ``file`` and
    ``line`` (where ``rel`` was read; the path itself when not given) and ``field``. The one
    confinement rule for every read of a corpus file named by data (validate, build, run, the
    content extractors and the region renderers). Reads only the file system's metadata."""
    where = file if file is not None else (rel if isinstance(rel, str) else "<path>")
    why = path_shape_problem(rel)
    if why is not None:
        raise InputError(where, line, field, why, rule="PATH_OUTSIDE_CORPUS")
    base = Path(root).resolve()
    target = (base / str(rel)).resolve()
    if target != base and base not in target.parents:
        raise InputError(
            where,
            line,
            field,
            f"{rel!r} resolves to {target}, outside the corpus root {base} (a symlink?)",
            rule="PATH_OUTSIDE_CORPUS",
        )
    return target


def resolve_user_path(p: str | os.PathLike) -> Path:
    """A path a user or a notebook parameter gave: absolute as is; relative to the current
    directory if it exists there, else relative to the repository root (papermill runs from
    the repository root, JupyterLab starts kernels in ``notebooks/``)."""
    p = Path(p)
    if p.is_absolute() or p.exists():
        return p
    alt = REPO_ROOT / p
    if alt.exists() or Path.cwd().resolve() == (REPO_ROOT / "notebooks").resolve():
        return alt  # (a path to create, from a kernel in notebooks/: the repo root's)
    return p


def cache_dir(kind: str) -> Path:
    base = Path(os.environ.get("MEMBENCH_CACHE") or Path.home() / ".cache" / "membench")
    p = base / kind
    p.mkdir(parents=True, exist_ok=True)
    return p
