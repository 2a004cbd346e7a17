"""``membench corpus`` and ``membench sources``: the corpus mirror.

``corpus check`` compares the mirror with the manifest (:func:`membench.sets.corpus.check_corpus`),
``corpus manifest`` rewrites the manifest (:func:`membench.sets.corpus.write_manifest`);
``sources`` lists :data:`membench.sources.SOURCES` and which of them are mirrored. Every build
path checks the corpus first through :func:`_check_corpus_before_build` (here, used by
``membench build``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.errors import MembenchError
from ..core.paths import MANIFEST_PATH, corpus_root
from .common import CORPUS_HELP, FMT


def _corpus_cmd(a: argparse.Namespace) -> int:
    from ..sets.corpus import check_corpus, write_manifest

    root = corpus_root(a.corpus)
    manifest = Path(a.manifest)
    if a.action == "manifest":
        from ..sets.corpus import check_corpus_root, folders_near
        from ..sources import SOURCES

        folders = {s.folder for s in SOURCES}
        if not any((root / f).is_dir() for f in folders) and (
            folders_near(root, folders) is not None or not any(p.is_dir() for p in root.iterdir())
        ):
            check_corpus_root(root, folders)  # one level off, or empty: never an empty manifest
        entries = write_manifest(root, manifest)
        print(
            f"wrote {manifest}: {len(entries)} sources, {sum(len(e.files) for e in entries)} files"
        )
        return 0
    res = check_corpus(root, manifest)
    for p in res.problems:
        print(p)
    print(
        f"corpus check: {res.checked} files against {manifest}: "
        f"{'OK' if res.ok else f'{len(res.problems)} problem(s) ' + _drift_counts(res)}"
    )
    return 0 if res.ok else 1


def _drift_counts(res) -> str:
    """``(1 added, 2 removed, 3 altered)`` from a corpus check's problems."""
    c = res.counts()
    parts = [
        f"{c.get('ADDED_FILE', 0)} added",
        f"{c.get('MISSING_FILE', 0)} removed",
        f"{c.get('DIGEST_DRIFT', 0)} altered",
    ]
    if c.get("PATH_OUTSIDE_CORPUS"):
        parts.append(f"{c['PATH_OUTSIDE_CORPUS']} outside the root")
    return "(" + ", ".join(parts) + ")"


def _check_corpus_before_build(root: Path, manifest: Path, only: set[str] | None) -> None:
    """Every build path checks the corpus first (the sources it builds, against the
    manifest): drift is refused with its first problems and counts, before anything is read."""
    from ..sets.corpus import check_corpus

    res = check_corpus(root, manifest, sources=only)
    if not res.ok:
        for p in res.problems[:20]:
            print(p, file=sys.stderr)
        more = " (the first 20 above)" if len(res.problems) > 20 else ""
        raise MembenchError(
            f"{root}: the corpus differs from {manifest}: "
            f"{len(res.problems)} problem(s) {_drift_counts(res)}{more}; "
            "`membench corpus check` lists them; the sets are built only from "
            "the mirror the manifest freezes"
        )


def _sources_cmd(a: argparse.Namespace) -> int:
    from ..sources import SOURCES

    root = None
    try:
        root = corpus_root(a.corpus)
    except MembenchError:
        pass
    print("| source | name | modality | in mirror | annotation source | license |")
    print("|---|---|---|---|---|---|")
    for s in SOURCES:
        here = "yes" if root and s.available(root) else "no"
        print(
            f"| {s.key} | {s.name} | {s.modality} | {here} | {s.annotation_source} | {s.license} |"
        )
    return 0


def _add_corpus(sub) -> None:
    c = sub.add_parser(
        "corpus",
        help="check the corpus mirror against the manifest, or rewrite the manifest",
        formatter_class=FMT,
        description="""\
check     every manifest file under the corpus root: present, same bytes (sha256), and no
          file the manifest does not list (added, removed and altered files are reported;
          exit 1 on any).
manifest  REWRITE bench/corpus/manifest.jsonl (a committed file) from every mirrored
          folder's PROVENANCE.jsonl, keeping the retrieved_at dates already in it. Do this
          only when the mirror is meant to change, and commit the result.""",
    )
    c.add_argument("action", choices=["check", "manifest"], help="check or manifest (above)")
    c.add_argument("--corpus", help=CORPUS_HELP)
    c.add_argument(
        "--manifest",
        default=str(MANIFEST_PATH),
        help="manifest file (default: bench/corpus/manifest.jsonl)",
    )
    c.set_defaults(func=_corpus_cmd)


def _add_sources(sub) -> None:
    s = sub.add_parser("sources", help="list every registered source, mirrored or not")
    s.add_argument("--corpus", help=CORPUS_HELP)
    s.set_defaults(func=_sources_cmd)


COMMANDS = {"corpus": _add_corpus, "sources": _add_sources}


def register(sub, name: str) -> None:
    """Add the subcommand ``name`` (a key of :data:`COMMANDS`) to the subparsers ``sub``."""
    COMMANDS[name](sub)
