"""The manifest freezes the mirror; `membench corpus check` fails on a removed or altered file."""

from __future__ import annotations

import json
import shutil

from membench.cli import main
from membench.core.paths import MANIFEST_PATH
from membench.sets.corpus import build_manifest, check_corpus, load_manifest
from membench.sources import SOURCES


def test_committed_manifest_matches_the_mirror(corpus_root):
    res = check_corpus(corpus_root, MANIFEST_PATH)
    assert res.ok, res.problems[:5]
    assert res.checked > 4000


def test_committed_manifest_is_what_the_generator_writes(corpus_root):
    committed = load_manifest(MANIFEST_PATH)
    fresh = build_manifest(corpus_root, {e.source: e.retrieved_at for e in committed})
    assert [e.model_dump() for e in fresh] == [e.model_dump() for e in committed]


def test_manifest_covers_every_mirrored_source(corpus_root):
    entries = {e.source: e for e in load_manifest(MANIFEST_PATH)}
    mirrored = {s.key for s in SOURCES if s.mirrored}
    assert set(entries) == mirrored
    for e in entries.values():
        assert e.url.startswith("https://github.com/") and e.revision in e.url
        assert e.license and e.annotation_source and e.retrieved_at
        assert all(len(f.sha256) == 64 and f.bytes >= 0 for f in e.files)


def _small_corpus(tmp_path, corpus_root):
    root = tmp_path / "corpus"
    shutil.copytree(corpus_root / "locomo", root / "locomo")
    for p in (root / "locomo").rglob("*"):
        p.chmod(0o644)
    manifest = tmp_path / "manifest.jsonl"
    line = next(
        l for l in MANIFEST_PATH.read_text().splitlines() if json.loads(l)["source"] == "locomo"
    )
    manifest.write_text(line + "\n")
    return root, manifest


def test_check_fails_on_altered_file(tmp_path, corpus_root, capsys):
    root, manifest = _small_corpus(tmp_path, corpus_root)
    args = ["corpus", "check", "--corpus", str(root), "--manifest", str(manifest)]
    assert main(args) == 0
    target = root / "locomo" / "locomo10.json"
    data = bytearray(target.read_bytes())
    data[100] ^= 1  # one bit, same size
    target.write_bytes(bytes(data))
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "DIGEST_DRIFT" in out and "locomo10.json" in out and f"{manifest}:1:" in out


def test_check_fails_on_removed_file(tmp_path, corpus_root, capsys):
    root, manifest = _small_corpus(tmp_path, corpus_root)
    (root / "locomo" / "LICENSE.txt").unlink()
    assert main(["corpus", "check", "--corpus", str(root), "--manifest", str(manifest)]) == 1
    out = capsys.readouterr().out
    assert "MISSING_FILE" in out and "LICENSE.txt" in out


def test_unknown_folder_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "corpus" / "mystery").mkdir(parents=True)
    code = main(
        [
            "corpus",
            "manifest",
            "--corpus",
            str(tmp_path / "corpus"),
            "--manifest",
            str(tmp_path / "m.jsonl"),
        ]
    )
    assert code == 2
    assert "mystery: folder is not a registered source" in capsys.readouterr().err


def test_bad_manifest_line_names_file_line_field(tmp_path, corpus_root, capsys):
    m = tmp_path / "m.jsonl"
    m.write_text('{"source": "x", "name": "x", "modality": "audio"}\n')
    assert main(["corpus", "check", "--corpus", str(corpus_root), "--manifest", str(m)]) == 2
    err = capsys.readouterr().err
    assert f"{m}:1: SCHEMA: field modality:" in err
