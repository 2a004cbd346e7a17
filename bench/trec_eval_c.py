"""trec_eval, the C program, for bench/bench_metrics.py and the conformance tests
(tests/test_trec_eval_conformance.py): find its source tree, build the binary once into a
cache outside the repository, and say why when neither can be had.

    .venv/bin/python bench/trec_eval_c.py                    # where it stands (and build)
    .venv/bin/python bench/trec_eval_c.py --src trec_eval-9.0.8.tar.gz

Where the sources come from, in this order:

1. ``--src`` / ``$MEMBENCH_TREC_EVAL_SRC``: a trec_eval source tree (the folder holding
   ``trec_eval.c``, ``Makefile`` and ``test/``) or its release archive (``.tar.gz``,
   ``.zip``), unpacked into the cache;
2. ``../shared/tools/trec_eval`` beside the checkout (:data:`SHARED`: trec_eval 10.0, NIST's
   tree with its PROVENANCE.md; read only: it is built in a copy);
3. a tree unpacked into the cache before;
4. the package index: the source distribution of pytrec_eval (``pytrec-eval-terrier``,
   whose setup.py builds trec_eval's C sources) fetched with pip; used when it bundles them
   (a ``trec_eval/`` folder with ``trec_eval.h``, which its setup.py looks for first).

The binary: ``--bin`` / ``$MEMBENCH_TREC_EVAL``, else ``trec_eval`` on ``PATH``, else built
from the sources with their own Makefile (``make``, the C compiler found) into
``$MEMBENCH_CACHE/trec_eval/`` (default ``~/.cache/membench``), keyed by the sources'
sha256. trec_eval is NIST's (its LICENSE.md: a public service, copies allowed with the
notice kept); none of it is in this repository.

The binary is built from a copy of the tree, into the cache, keyed by the sha256 of the
tree's ``*.c``, ``*.h`` and Makefile (about 6 s, once).

Measured on this machine: neither pytrec-eval-terrier 0.5.1 to 0.5.11 nor pytrec-eval 0.3 to
0.5 bundles the C sources (their source distributions are 9 to 18 kB: setup.py downloads
trec_eval's release archive from its repository at build time), and this machine reaches
the package registries only, so the binary cannot be had here unless ``--src`` points at a
copy of the sources.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

SDIST = "pytrec-eval-terrier"
REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "tools" / "trec_eval"


def cache_dir() -> Path:
    root = Path(os.environ.get("MEMBENCH_CACHE") or Path.home() / ".cache" / "membench")
    return root / "trec_eval"


def _is_tree(p: Path) -> bool:
    return (p / "trec_eval.c").is_file() and (p / "Makefile").is_file()


def _find_tree(root: Path) -> Path | None:
    if _is_tree(root):
        return root
    for c in sorted(root.rglob("trec_eval.c")):
        if _is_tree(c.parent):
            return c.parent
    return None


def _sha_of_file(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def _unpack(archive: Path) -> Path:
    out = cache_dir() / f"src-{_sha_of_file(archive)[:16]}"
    if not out.exists():
        tmp = Path(tempfile.mkdtemp(dir=cache_dir()))
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as z:
                z.extractall(tmp)
        else:
            with tarfile.open(archive) as t:
                t.extractall(tmp, filter="data")
        tmp.rename(out)
    tree = _find_tree(out)
    if tree is None:
        raise SystemExit(f"{archive}: no trec_eval source tree inside (trec_eval.c, Makefile)")
    return tree


def _from_index() -> tuple[Path | None, str]:
    """pytrec_eval's source distribution through pip. pip prepares an sdist's metadata by
    running its setup.py, which fetches trec_eval unless it is bundled; ``--no-clean`` keeps
    the unpacked sdist (in our own TMPDIR) to look into either way."""
    version = "0.5.11"
    try:
        from importlib.metadata import version as _v

        version = _v(SDIST)
    except Exception:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TMPDIR=tmp, PIP_DISABLE_PIP_VERSION_CHECK="1")
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--no-build-isolation",
                "--no-clean",
                "-d",
                str(Path(tmp) / "dl"),
                f"{SDIST}=={version}",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
        setups = sorted(Path(tmp).rglob("setup.py"))
        for setup in setups:
            bundled = setup.parent / "trec_eval"
            if (bundled / "trec_eval.h").is_file():
                dest = cache_dir() / f"src-{SDIST}-{version}"
                if not dest.exists():
                    shutil.copytree(setup.parent, dest)
                return dest / "trec_eval", f"{SDIST} {version} (source distribution)"
        if not setups:
            last = (p.stderr.strip().splitlines() or ["no output"])[-1]
            return None, f"pip could not fetch {SDIST}=={version}'s source distribution ({last})"
        remote = re.findall(r"REMOTE_TREC_EVAL_URI\s*=\s*['\"]([^'\"]+)", setups[0].read_text())
        how = (
            f"its setup.py downloads trec_eval's release archive "
            f"{remote[0].rsplit('/', 1)[-1]} from its repository at build time"
            if remote
            else "its setup.py downloads them at build time"
        )
        return (
            None,
            f"{SDIST} {version}'s source distribution bundles no trec_eval C "
            f"sources ({how}); pass --src (or set MEMBENCH_TREC_EVAL_SRC) to a "
            "trec_eval source tree or release archive",
        )


def source_tree(src: str | None = None, use_index: bool = True) -> tuple[Path | None, str]:
    """(trec_eval's source tree, where it came from) or (None, why there is none)."""
    src = src or os.environ.get("MEMBENCH_TREC_EVAL_SRC")
    cache_dir().mkdir(parents=True, exist_ok=True)
    if src:
        p = Path(src).expanduser()
        if p.is_dir():
            tree = _find_tree(p)
            if tree is None:
                return None, f"{p}: no trec_eval source tree (trec_eval.c, Makefile)"
            return tree, str(tree)
        if p.is_file():
            return _unpack(p), str(p)
        return None, f"{p}: not found"
    if _is_tree(SHARED):
        return SHARED, f"{SHARED} (beside the checkout)"
    for d in sorted(cache_dir().glob("src-*")):
        tree = _find_tree(d)
        if tree is not None:
            return tree, f"{tree} (unpacked before)"
    if not use_index:
        return None, "no trec_eval sources given (--src / MEMBENCH_TREC_EVAL_SRC) or cached"
    return _from_index()


def _tree_sha(tree: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(tree.glob("*.[ch]")) + [tree / "Makefile"]:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def binary(
    bin_path: str | None = None, src: str | None = None, use_index: bool = True
) -> tuple[Path | None, str]:
    """(the trec_eval binary, where it came from) or (None, why there is none)."""
    given = bin_path or os.environ.get("MEMBENCH_TREC_EVAL")
    if given:
        p = Path(given).expanduser()
        return (
            (p, str(p))
            if p.is_file() and os.access(p, os.X_OK)
            else (None, f"{p}: not an executable file")
        )
    if not src and not os.environ.get("MEMBENCH_TREC_EVAL_SRC"):
        found = shutil.which("trec_eval")
        if found:
            return Path(found), f"{found} (on PATH)"
    tree, where = source_tree(src, use_index)
    if tree is None:
        return None, where
    out = cache_dir() / f"bin-{_tree_sha(tree)}" / "trec_eval"
    if not out.is_file():
        if not (shutil.which("make") and (shutil.which("cc") or shutil.which("gcc"))):
            return None, f"cannot build trec_eval from {tree}: no make or C compiler"
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "src"
            shutil.copytree(tree, work)
            p = subprocess.run(
                ["make", "-C", str(work), "trec_eval"], capture_output=True, text=True, check=False
            )
            if p.returncode != 0 or not (work / "trec_eval").is_file():
                return None, f"building trec_eval from {tree} failed: " + (
                    p.stderr.strip().splitlines() or ["?"]
                )[-1]
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(work / "trec_eval", out)
    return out, f"built from {where}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", help="trec_eval source tree or release archive")
    ap.add_argument("--bin", help="a trec_eval binary to use as is")
    a = ap.parse_args(argv)
    path, why = binary(a.bin, a.src)
    print(f"trec_eval: {path}  ({why})" if path else f"trec_eval: not available: {why}")
    tree, where = source_tree(a.src, use_index=False) if path else (None, "")
    if tree is not None and (tree / "test").is_dir():
        print(f"test files: {tree / 'test'}")
    return 0 if path else 1


if __name__ == "__main__":
    sys.exit(main())
