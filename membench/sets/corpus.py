"""The corpus manifest: freezing the mirror (``membench corpus manifest``) and checking a corpus
root against it file by file (``membench corpus check``, the spec's ``manifest_check``).

The check reports every kind of drift: a listed file that is absent (MISSING_FILE), a listed
file whose bytes differ (DIGEST_DRIFT), a file or symlink under the root that the manifest does
not list (ADDED_FILE: a copied screenshot saved under an annotated name changes the sets as
surely as an edited one), and a listed path that leaves the root (PATH_OUTSIDE_CORPUS). A root
that holds none of the manifest's source folders is refused up front, naming the folder that
does hold them when one is near (``--corpus ../shared`` instead of ``../shared/corpus``).

The manifest is written from each mirrored folder's ``PROVENANCE.jsonl`` (upstream repository,
commit, path, sha256, bytes) plus the registry's annotation source and license, one line per
source. The mirror's own ``PROVENANCE.jsonl`` and ``LICENSE-NOTES.md`` are listed too, so any
edit to the mirror shows as drift.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from ..contract.schema import ManifestEntry, ManifestFile
from ..core import progress
from ..core.errors import InputError, MembenchError
from ..core.jsonl import iter_json_lines, parse_model, sha256_file, write_jsonl
from ..core.paths import confine
from ..sources import spec_for_folder

# Which file of each mirrored source carries the annotations: its commit is the revision that
# records cite in origin.revision.
ANNOTATION_FILE = {
    "mmlongbench-doc": "samples.json",
    "locomo": "locomo10.json",
    "codesearchnet": "resources/annotationStore.csv",
    "screenspot-v2": "screenspot_mobile_v2.json",
    "medvidqa": "test.json",
    "tabmwp": "problems_test1k.json",
    "finchart-bench": "QA_data.json",
    "prefeval": "explicit_preference/travel_restaurant.json",
    "realtalk": "Chat_1_Emi_Elise.json",
    "pstuts-vqa": "test.json",
}
MIRROR_META = ("PROVENANCE.jsonl", "LICENSE-NOTES.md")


def _provenance(folder: Path) -> list[dict]:
    """PROVENANCE.jsonl's rows, each with a ``path`` string (else a located error)."""
    prov = folder / "PROVENANCE.jsonl"
    rows = []
    for no, obj in iter_json_lines(prov):
        if not isinstance(obj.get("path"), str):
            raise InputError(prov, no, "path", "missing or not a string", rule="PROVENANCE")
        rows.append(obj)
    return rows


def build_manifest(root: Path, retrieved_at: dict[str, str] | None = None) -> list[ManifestEntry]:
    """Manifest entries for every registered source whose folder exists under ``root``."""
    retrieved_at = retrieved_at or {}
    today = date.today().isoformat()
    entries = []
    for folder in sorted(p.name for p in root.iterdir() if p.is_dir()):
        spec = spec_for_folder(folder)
        if spec is None:
            raise MembenchError(
                f"{root / folder}: folder is not a registered source "
                "(add it to membench/sources/__init__.py)"
            )
        rows = _provenance(root / folder)
        files = []
        ann = None
        for no, r in enumerate(rows, 1):
            rel = f"{folder}/{r['path']}"
            f = parse_model(
                ManifestFile, {**r, "path": rel}, root / folder / "PROVENANCE.jsonl", no
            )
            files.append(f)
            if r["path"] == ANNOTATION_FILE.get(folder):
                ann = f
        for meta in MIRROR_META:
            p = root / folder / meta
            files.append(
                ManifestFile(
                    path=f"{folder}/{meta}",
                    sha256=sha256_file(p),
                    bytes=p.stat().st_size,
                    note="mirror metadata",
                )
            )
        if ann is None:
            raise MembenchError(
                f"{root / folder}/PROVENANCE.jsonl: annotation file "
                f"{ANNOTATION_FILE.get(folder)!r} not listed"
            )
        files.sort(key=lambda f: f.path)
        entries.append(
            ManifestEntry(
                source=spec.key,
                name=spec.name,
                modality=spec.modality,
                url=f"https://github.com/{ann.upstream_repo}/tree/{ann.commit}",
                revision=ann.commit,
                revisions=sorted({f.commit for f in files if f.commit}),
                retrieved_at=retrieved_at.get(spec.key, today),
                annotation_source=spec.annotation_source,
                license=spec.license,
                files=files,
            )
        )
    return entries


def load_manifest(path: Path) -> list[ManifestEntry]:
    return [parse_model(ManifestEntry, obj, path, no) for no, obj in iter_json_lines(path)]


def write_manifest(root: Path, path: Path) -> list[ManifestEntry]:
    """(Re)write the manifest, keeping the retrieved_at dates already frozen in it."""
    old = {e.source: e.retrieved_at for e in load_manifest(path)} if path.exists() else {}
    entries = build_manifest(root, old)
    write_jsonl(path, entries)
    return entries


@dataclass(frozen=True)
class CorpusProblem:
    """One drift finding: at ``file`` (the manifest, or the added file itself) and ``line``,
    ``rule`` about corpus ``path``. ``str()`` is the one line ``corpus check`` prints."""

    file: str
    line: int | None
    rule: str
    path: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.rule}: {self.path}: {self.message}"


@dataclass
class CheckResult:
    checked: int = 0
    problems: list[CorpusProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def counts(self) -> dict[str, int]:
        """Problems per rule (ADDED_FILE, MISSING_FILE, DIGEST_DRIFT, PATH_OUTSIDE_CORPUS)."""
        out: dict[str, int] = {}
        for p in self.problems:
            out[p.rule] = out.get(p.rule, 0) + 1
        return out


def folders_near(root: Path, wanted: set[str]) -> Path | None:
    """A folder next to ``root`` (a child, the parent, or a child of the parent) that holds one
    of the ``wanted`` source folders: where the user probably meant to point."""
    candidates: list[Path] = []
    try:
        candidates += sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        pass
    parent = root.parent
    candidates.append(parent)
    try:
        candidates += sorted(p for p in parent.iterdir() if p.is_dir() and p != root)
    except OSError:
        pass
    for c in candidates:
        if any((c / w).is_dir() for w in wanted):
            return c
    return None


def check_corpus_root(root: Path, folders: set[str]) -> None:
    """Refuse a corpus root that holds none of ``folders`` (the source folders the manifest
    or the registry expects), naming a nearby folder that does hold them; one line, instead of
    thousands of MISSING_FILE lines or an empty build. Reads folder listings only."""
    root = Path(root)
    if not folders or any((root / f).is_dir() for f in folders):
        return
    shown = ", ".join(sorted(folders)[:4]) + (", ..." if len(folders) > 4 else "")
    near = folders_near(root, folders)
    hint = (
        f"; use --corpus {near}"
        if near is not None
        else " (pass --corpus DIR or set MEMBENCH_CORPUS)"
    )
    raise MembenchError(
        f"{root} is not a corpus root: it holds none of the source folders ({shown}){hint}"
    )


def manifest_folders(manifest_path: Path) -> set[str]:
    """The top-level folders of the corpus the manifest lists files in."""
    return {f.path.split("/", 1)[0] for e in load_manifest(manifest_path) for f in e.files}


def _walk_files(base: Path) -> list[Path]:
    """Every file and symlink under ``base`` (symlinked folders are listed, not entered)."""
    out: list[Path] = []
    if base.is_symlink() or not base.is_dir():
        return [base] if base.exists() or base.is_symlink() else []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        d = Path(dirpath)
        out += [d / n for n in filenames]
        out += [d / n for n in dirnames if (d / n).is_symlink()]
    return out


def check_corpus(root: Path, manifest_path: Path, sources: set[str] | None = None) -> CheckResult:
    """Verify the corpus under ``root`` against the manifest: every listed file present, inside
    the root, with the same byte count and sha256, and no file the manifest does not list (see
    the module docstring). ``sources``: only these manifest sources (and their folders). A root
    holding none of the manifest's folders is a :class:`MembenchError`
    (:func:`check_corpus_root`). Reads every listed file; writes nothing. Reports the
    ``corpus check`` progress step (files checked)."""
    with progress.step("corpus check", unit="file") as bar:
        return _check_corpus(root, manifest_path, sources, bar)


def _check_corpus(
    root: Path, manifest_path: Path, sources: set[str] | None, bar: progress.Step
) -> CheckResult:
    res = CheckResult()
    root = Path(root)
    entries = [
        (no, parse_model(ManifestEntry, obj, manifest_path, no))
        for no, obj in iter_json_lines(manifest_path)
    ]
    if sources is not None:
        entries = [(no, e) for no, e in entries if e.source in sources]
    listed: set[str] = set()
    for _, e in entries:
        listed |= {f.path for f in e.files}
    folders = {p.split("/", 1)[0] for p in listed}
    check_corpus_root(root, folders)
    for no, entry in entries:
        bar.note(entry.source)
        for f in entry.files:
            p = root / f.path
            res.checked += 1
            bar.advance()
            try:
                confine(root, f.path, file=manifest_path, line=no, field="files.path")
            except InputError as e:
                res.problems.append(
                    CorpusProblem(str(manifest_path), no, e.rule, str(p), e.message)
                )
                continue
            if not p.is_file():
                res.problems.append(
                    CorpusProblem(
                        str(manifest_path),
                        no,
                        "MISSING_FILE",
                        str(p),
                        f"listed for {entry.source} but absent",
                    )
                )
                continue
            size = p.stat().st_size
            digest = sha256_file(p)
            if digest != f.sha256 or size != f.bytes:
                res.problems.append(
                    CorpusProblem(
                        str(manifest_path),
                        no,
                        "DIGEST_DRIFT",
                        str(p),
                        f"sha256 {digest[:12]}… ({size} B), manifest has {f.sha256[:12]}… "
                        f"({f.bytes} B)",
                    )
                )
    if sources is None:
        try:
            bases = sorted(root.iterdir())
        except OSError:
            bases = []
    else:
        bases = [root / d for d in sorted(folders)]
    for base in bases:
        for p in _walk_files(base):
            rel = p.relative_to(root).as_posix()
            if rel not in listed:
                res.problems.append(
                    CorpusProblem(
                        str(manifest_path),
                        None,
                        "ADDED_FILE",
                        str(p),
                        "under the corpus root but not in the manifest",
                    )
                )
    return res


def revisions_by_source(manifest_path: Path) -> dict[str, set[str]]:
    """source key (the query_id prefix) -> every upstream commit the manifest lists for it."""
    return {e.source: set(e.revisions) for e in load_manifest(manifest_path)}


def manifest_sha256(path: Path) -> str:
    if not path.exists():
        raise InputError(path, None, None, "manifest not found", rule="MISSING_FILE")
    return sha256_file(path)
