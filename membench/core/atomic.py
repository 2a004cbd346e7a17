"""Writes that are all or nothing: a reader (or a crash, a full disk, Ctrl-C) sees either the
old file or the whole new one, never a torn one.

The text goes to a temporary file in the same folder (``mkstemp``: a unique name, so two writers
never share it), is flushed and ``fsync``-ed, then ``os.replace``-d over the target (atomic on
POSIX within one file system). On any failure the temporary file is removed and the target is
untouched. Touches only the target and its temporary sibling.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

# mkstemp makes 0600 files; the result gets the mode a plain open() would give it
_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (the parent folder must exist)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~_UMASK)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and e.filename is None:   # say which file (a full disk)
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Replace ``path`` with UTF-8 ``text`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any, **dump_kwargs: Any) -> None:
    """Replace ``path`` with ``json.dumps(obj, **dump_kwargs)`` and a final newline, atomically
    (the object is serialised before the file is touched)."""
    atomic_write_text(path, json.dumps(obj, **dump_kwargs) + "\n")
