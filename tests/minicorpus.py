"""A small corpus root made of the upstream-format fixtures (copied into a temporary folder:
every corpus read must stay inside the corpus root, so symlinks out of it would be refused),
with its own manifest and lock: four mirrored sources (ScreenSpot-v2 with three screenshots to
OCR, CodeSearchNet, MedVidQA, LoCoMo) and six not mirrored. Builds in about a second, so
end-to-end tests of the command line and the Makefile run in seconds on a cold cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from membench.core.paths import REPO_ROOT

FIXTURES = Path(__file__).parent / "fixtures"
LINKS = {
    "screenspot-v2": "screenspot/screenspot-v2",
    "codesearchnet": "codesearchnet/codesearchnet",
    "medvidqa": "medvidqa/medvidqa",
    "locomo": "locomo",
}


def make_corpus(root: Path) -> Path:
    """``root/corpus`` with a copy of each fixture source; returns the corpus root."""
    import shutil

    corpus = root / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for name, rel in LINKS.items():
        shutil.copytree(FIXTURES / rel, corpus / name)
    return corpus


def membench(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO_ROOT, check: bool = True
) -> subprocess.CompletedProcess:
    """``python -m membench ARGS`` from the repository root (this checkout's code)."""
    proc = subprocess.run(
        [sys.executable, "-m", "membench", *args],
        cwd=cwd,
        text=True,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=900,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"membench {' '.join(args)} -> {proc.returncode}\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return proc


def write_manifest(corpus: Path, sets: Path | None, manifest: Path) -> Path:
    """A manifest for the fixture corpus: every file of each copied source with its sha256 and
    size, and as revisions the ``origin.revision`` values its built records carry (none yet
    when ``sets`` is None: a manifest to check the corpus against before the first build)."""
    import json

    from membench.core.jsonl import sha256_file
    from membench.sources import SOURCES

    revisions: dict[str, set[str]] = {}
    for f in sets.glob("*.jsonl") if sets is not None else ():
        for line in f.read_text().splitlines():
            row = json.loads(line)
            if "origin" in row:
                revisions.setdefault(row["query_id"].split(":", 1)[0], set()).add(
                    row["origin"]["revision"]
                )
    lines = []
    for spec in SOURCES:
        if spec.folder not in LINKS:
            continue
        files = sorted(p for p in (corpus / spec.folder).rglob("*") if p.is_file())
        revs = sorted(revisions.get(spec.key, set())) or ["0" * 40]
        lines.append(
            json.dumps(
                {
                    "source": spec.key,
                    "name": spec.name,
                    "modality": spec.modality,
                    "url": "fixture",
                    "revision": revs[0],
                    "revisions": revs,
                    "retrieved_at": "2026-01-01",
                    "annotation_source": "fixture",
                    "license": "fixture",
                    "files": [
                        {
                            "path": str(p.relative_to(corpus)),
                            "sha256": sha256_file(p),
                            "bytes": p.stat().st_size,
                        }
                        for p in files
                    ],
                },
                sort_keys=True,
            )
        )
    manifest.write_text("\n".join(lines) + "\n")
    return manifest


def freeze(corpus: Path, root: Path, env: dict[str, str] | None = None) -> dict[str, Path]:
    """Build the fixture corpus once under ``root`` and write its manifest and lock (what the
    committed ones are for the real mirror); returns their paths and the sets folder."""
    manifest, lock, sets = root / "manifest.jsonl", root / "sets.lock.json", root / "sets"
    write_manifest(corpus, None, manifest)  # the build checks the corpus against it
    membench(
        "build",
        "--corpus",
        str(corpus),
        "--out",
        str(sets),
        "--lock",
        str(lock),
        "--manifest",
        str(manifest),
        "--update-lock",
        "--quiet",
        env=env,
    )
    write_manifest(corpus, sets, manifest)  # now with the records' revisions
    return {"manifest": manifest, "lock": lock, "sets": sets}
