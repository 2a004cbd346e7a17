"""The corpus manifest: freezing the mirror (``membench corpus manifest``) and checking a corpus
root against it file by file (``membench corpus check``, the spec's ``manifest_check``).

The manifest is written from each mirrored folder's ``PROVENANCE.jsonl`` (upstream repository,
commit, path, sha256, bytes) plus the registry's annotation source and license, one line per
source. The mirror's own ``PROVENANCE.jsonl`` and ``LICENSE-NOTES.md`` are listed too, so any
edit to the mirror shows as drift.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from ..core import progress
from ..core.errors import InputError, MembenchError
from ..core.jsonl import iter_json_lines, parse_model, sha256_file, write_jsonl
from .schema import ManifestEntry, ManifestFile
from .sources import spec_for_folder

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
}
MIRROR_META = ("PROVENANCE.jsonl", "LICENSE-NOTES.md")


def _provenance(folder: Path) -> list[dict]:
    prov = folder / "PROVENANCE.jsonl"
    return [obj for _, obj in iter_json_lines(prov)]


def build_manifest(root: Path, retrieved_at: dict[str, str] | None = None) -> list[ManifestEntry]:
    """Manifest entries for every registered source whose folder exists under ``root``."""
    retrieved_at = retrieved_at or {}
    today = date.today().isoformat()
    entries = []
    for folder in sorted(p.name for p in root.iterdir() if p.is_dir()):
        spec = spec_for_folder(folder)
        if spec is None:
            raise MembenchError(f"{root / folder}: folder is not a registered source "
                                "(add it to membench/sources/__init__.py)")
        rows = _provenance(root / folder)
        files = []
        ann = None
        for no, r in enumerate(rows, 1):
            rel = f"{folder}/{r['path']}"
            f = parse_model(ManifestFile, {**r, "path": rel}, root / folder / "PROVENANCE.jsonl", no)
            files.append(f)
            if r["path"] == ANNOTATION_FILE.get(folder):
                ann = f
        for meta in MIRROR_META:
            p = root / folder / meta
            files.append(ManifestFile(path=f"{folder}/{meta}", sha256=sha256_file(p),
                                      bytes=p.stat().st_size, note="mirror metadata"))
        if ann is None:
            raise MembenchError(f"{root / folder}/PROVENANCE.jsonl: annotation file "
                                f"{ANNOTATION_FILE.get(folder)!r} not listed")
        files.sort(key=lambda f: f.path)
        entries.append(ManifestEntry(
            source=spec.key, name=spec.name, modality=spec.modality,
            url=f"https://github.com/{ann.upstream_repo}/tree/{ann.commit}",
            revision=ann.commit,
            revisions=sorted({f.commit for f in files if f.commit}),
            retrieved_at=retrieved_at.get(spec.key, today),
            annotation_source=spec.annotation_source, license=spec.license, files=files))
    return entries


def load_manifest(path: Path) -> list[ManifestEntry]:
    return [parse_model(ManifestEntry, obj, path, no) for no, obj in iter_json_lines(path)]


def write_manifest(root: Path, path: Path) -> list[ManifestEntry]:
    """(Re)write the manifest, keeping the retrieved_at dates already frozen in it."""
    old = {e.source: e.retrieved_at for e in load_manifest(path)} if path.exists() else {}
    entries = build_manifest(root, old)
    write_jsonl(path, entries)
    return entries


@dataclass
class CheckResult:
    checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_corpus(root: Path, manifest_path: Path) -> CheckResult:
    """Verify every manifest file under ``root``: present, same byte count, same sha256.

    Each problem is one line ``<manifest>:<line>: RULE: <corpus path>: message``. Reports the
    ``corpus check`` progress step (files checked)."""
    with progress.step("corpus check", unit="file") as bar:
        return _check_corpus(root, manifest_path, bar)


def _check_corpus(root: Path, manifest_path: Path, bar: progress.Step) -> CheckResult:
    res = CheckResult()
    for no, obj in iter_json_lines(manifest_path):
        entry = parse_model(ManifestEntry, obj, manifest_path, no)
        bar.note(entry.source)
        for f in entry.files:
            p = root / f.path
            res.checked += 1
            bar.advance()
            if not p.is_file():
                res.problems.append(f"{manifest_path}:{no}: MISSING_FILE: {p}: listed for "
                                    f"{entry.source} but absent")
                continue
            size = p.stat().st_size
            digest = sha256_file(p)
            if digest != f.sha256 or size != f.bytes:
                res.problems.append(
                    f"{manifest_path}:{no}: DIGEST_DRIFT: {p}: sha256 {digest[:12]}… ({size} B), "
                    f"manifest has {f.sha256[:12]}… ({f.bytes} B)")
    return res


def revisions_by_source(manifest_path: Path) -> dict[str, set[str]]:
    """source key (the query_id prefix) -> every upstream commit the manifest lists for it."""
    return {e.source: set(e.revisions) for e in load_manifest(manifest_path)}


def manifest_sha256(path: Path) -> str:
    if not path.exists():
        raise InputError(path, None, None, "manifest not found", rule="MISSING_FILE")
    return sha256_file(path)

