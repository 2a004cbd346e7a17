"""The sets' dataset card (``membench sets-card``, :mod:`membench.sets.card`): valid Croissant 1.1
for mlcroissant (and a broken card is not), sha256s equal to the files', the same bytes for the
same sets, every record field described with its type, licences, provenance and the RAI fields;
on a tiny sets folder and on the real sets."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import minisets
import pytest

from membench.cli import main
from membench.core.errors import InputError
from membench.core.paths import DEFAULT_SETS_DIR, LOCK_PATH, MANIFEST_PATH
from membench.sets.build import read_lock, set_digests
from membench.sets.card import CARD_FILE, CONFORMS_TO, card, card_text, write_card

mlc = pytest.importorskip("mlcroissant")

#: the one warning mlcroissant 1.1.1 gives the card: the sets have no publication date (a date
#: in the card would make two builds of the same sets differ)
EXPECTED_WARNINGS = ('Property "https://schema.org/datePublished" is recommended',)
RECORD_FIELDS = (
    "query_id",
    "modality",
    "question",
    "answer",
    "gold",
    "scope",
    "as_of",
    "unanswerable",
    "origin",
    "split",
)


def croissant_issues(jsonld: dict) -> tuple[list[str], list[str]]:
    """mlcroissant's errors and warnings for a card (an error it raises is one error)."""
    try:
        ds = mlc.Dataset(jsonld=copy.deepcopy(jsonld))
    except mlc.ValidationError as e:
        return [str(e)], []
    issues = ds.metadata.ctx.issues
    return sorted(issues.errors), sorted(issues.warnings)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def unexpected(warnings: list[str]) -> list[str]:
    return [w for w in warnings if not any(x in w for x in EXPECTED_WARNINGS)]


# ------------------------------------------------------------------------------ tiny sets

NOTES = "Example data. LICENSE: CC BY 4.0. The people in it are invented.\n"


@pytest.fixture
def tiny(tmp_path):
    """The mini sets (all six modalities), with coverage.json, stats.json, a manifest that
    lists one source's licence notes, and a corpus root holding them."""
    mods = minisets.REGIONS
    files = {**{f"{m}.jsonl": minisets.records(m) for m in mods}, "items.jsonl": minisets.items()}
    files["video.jsonl"][0]["gold"][0]["grade"] = 2  # one graded region
    for r in files["code.jsonl"]:  # no code record has an answer
        del r["answer"]
    paths = minisets.write(tmp_path / "sets", files)
    sets = paths["sets"]
    (sets / "coverage.json").write_text(
        json.dumps(
            [
                {
                    "source": f"{m}src",
                    "mirrored": True,
                    "upstream_items": 6,
                    "covered": 5,
                    "not_covered": {"image not in mirror": 1},
                    "normalised": {},
                    "notes": [],
                }
                for m in mods
            ]
        )
    )
    (sets / "stats.json").write_text(
        json.dumps(
            {
                "derivation": {},
                "modalities": {
                    m: {
                        "queries": 5,
                        "answerable": 3,
                        "native_unanswerable": 2,
                        "derived_transactive": 0,
                        "derived_temporal": 0,
                        "holders": 2,
                    }
                    for m in mods
                },
            }
        )
    )
    corpus = tmp_path / "corpus"
    (corpus / "example").mkdir(parents=True)
    (corpus / "example" / "LICENSE-NOTES.md").write_text(NOTES)
    lines = minisets.manifest_lines()
    lines[0]["files"].append(
        {
            "path": "example/LICENSE-NOTES.md",
            "sha256": sha256(corpus / "example" / "LICENSE-NOTES.md"),
            "bytes": len(NOTES),
            "note": "mirror metadata",
        }
    )
    paths["manifest"].write_text("".join(json.dumps(x) + "\n" for x in lines))
    return {**paths, "corpus": corpus}


def test_tiny_card_is_valid_croissant(tiny):
    c = card(tiny["sets"], tiny["manifest"], tiny["corpus"])
    errors, warnings = croissant_issues(c)
    assert errors == []
    assert unexpected(warnings) == []
    assert c["conformsTo"] == CONFORMS_TO


def test_sha256_and_size_of_every_file(tiny):
    c = card(tiny["sets"], tiny["manifest"], tiny["corpus"])
    files = {fo["name"]: fo for fo in c["distribution"]}
    assert set(files) == {
        *(f"{m}.jsonl" for m in minisets.REGIONS),
        "items.jsonl",
        "coverage.json",
        "stats.json",
    }
    for name, fo in files.items():
        assert fo["sha256"] == sha256(tiny["sets"] / name), name
        assert fo["contentSize"] == f"{(tiny['sets'] / name).stat().st_size} B"
    assert files["pdf.jsonl"]["encodingFormat"] == "application/jsonlines"
    # five records per modality file (minisets.records): 3 dev, 2 test
    assert files["pdf.jsonl"]["description"].startswith(
        "5 records; by source: Example 5; by split: dev 3, test 2"
    )
    assert files["pdf.jsonl"]["license"] == ["Example: L"]


def test_record_fields_and_types(tiny):
    c = card(tiny["sets"], tiny["manifest"], tiny["corpus"])
    rs = {r["@id"]: r for r in c["recordSet"]}
    assert set(rs) == {"splits", "items", *minisets.REGIONS}
    fields = {f["name"]: f for f in rs["video"]["field"]}
    assert set(RECORD_FIELDS) <= set(fields)
    rows = [json.loads(x) for x in (tiny["sets"] / "video.jsonl").read_text().splitlines()]
    assert set().union(*rows) == set(fields)  # every key a record has is described
    types = {n: f.get("dataType") for n, f in fields.items()}
    assert types["query_id"] == "sc:Text" and types["question"] == "sc:Text"
    assert types["as_of"] == "sc:DateTime" and types["unanswerable"] == "sc:Boolean"
    assert "one of: dev, test" in fields["split"]["description"]
    assert fields["split"]["references"] == {"field": {"@id": "splits/name"}}
    assert fields["gold"]["isArray"] is True
    assert [s["name"] for s in fields["gold"]["subField"]] == ["source_id", "region", "grade"]
    grade = fields["gold"]["subField"][2]
    assert grade["dataType"] == "sc:Integer"
    assert grade["source"]["transform"] == {"jsonPath": "[*].grade"}
    assert {s["name"] for s in fields["scope"]["subField"]} == {"holder", "session", "scenario"}
    assert fields["scope"]["subField"][0]["source"] == {
        "fileObject": {"@id": "video.jsonl"},
        "extract": {"column": "scope"},
        "transform": {"jsonPath": "holder"},
    }
    for f in fields.values():
        assert f["description"] and f["description"] != f["name"], f["name"]
    # a field no line of a file holds is not described for that file
    assert "answer" not in {f["name"] for f in rs["code"]["field"]}
    assert "judgments" not in fields
    assert rs["video"]["key"] == {"@id": "video/query_id"}
    assert rs["items"]["key"] == {"@id": "items/source_id"}
    assert rs["splits"]["data"] == [
        {"splits/name": "dev", "splits/url": "cr:ValidationSplit"},
        {"splits/name": "test", "splits/url": "cr:TestSplit"},
    ]


def test_licences_notes_and_provenance(tiny):
    c = card(tiny["sets"], tiny["manifest"], tiny["corpus"])
    by_name = {lic["name"]: lic for lic in c["license"]}
    assert len(by_name) == 1 and "Example: L" in by_name  # one name for six sources
    notes = [lic["description"] for lic in c["license"]]
    assert " ".join(NOTES.split()) in notes
    assert c["prov:wasDerivedFrom"][0]["version"] == minisets.REV
    assert c["prov:wasDerivedFrom"][0]["prov:generatedAtTime"] == "2026-01-01"
    assert all("not stated in the registry" in p for p in c["rai:personalSensitiveInformation"])


def test_same_sets_same_bytes_and_a_change_shows(tiny, tmp_path):
    a, da = write_card(tiny["sets"], tmp_path / "a.json", tiny["manifest"], tiny["corpus"])
    b, db = write_card(tiny["sets"], tmp_path / "b.json", tiny["manifest"], tiny["corpus"])
    assert a.read_bytes() == b.read_bytes() and da == db == sha256(a)
    with open(tiny["sets"] / "code.jsonl", "a") as f:
        f.write(json.dumps(minisets.record("code", 9)) + "\n")
    _, dc = write_card(tiny["sets"], tmp_path / "c.json", tiny["manifest"], tiny["corpus"])
    assert dc != da


def test_licence_notes_are_checked_against_the_manifest(tiny):
    (tiny["corpus"] / "example" / "LICENSE-NOTES.md").write_text(NOTES + "edited\n")
    with pytest.raises(InputError, match="DIGEST_DRIFT"):
        card(tiny["sets"], tiny["manifest"], tiny["corpus"])
    (tiny["corpus"] / "example" / "LICENSE-NOTES.md").unlink()
    with pytest.raises(InputError, match="MISSING_FILE"):
        card(tiny["sets"], tiny["manifest"], tiny["corpus"])


def test_unknown_source_and_bad_line_are_located(tiny):
    tiny["manifest"].write_text("")
    with pytest.raises(InputError, match="'pdfsrc'.*neither registered"):
        card(tiny["sets"], tiny["manifest"], tiny["corpus"])
    with open(tiny["sets"] / "pdf.jsonl", "a") as f:
        f.write('{"query_id": 7}\n')
    with pytest.raises(InputError) as e:
        card(tiny["sets"], tiny["manifest"], tiny["corpus"])
    assert str(e.value).startswith(f"{tiny['sets'] / 'pdf.jsonl'}:6: SCHEMA: field query_id")


@pytest.mark.parametrize(
    "breakage",
    [
        "no encodingFormat",
        "no sha256",
        "a field of a missing file",
        "a field with no type",
        "not Croissant",
    ],
)
def test_a_broken_card_fails_validation(tiny, breakage):
    c = card(tiny["sets"], tiny["manifest"], tiny["corpus"])
    assert croissant_issues(c)[0] == []
    field = c["recordSet"][1]["field"][0]
    if breakage == "no encodingFormat":
        del c["distribution"][0]["encodingFormat"]
    elif breakage == "no sha256":
        del c["distribution"][0]["sha256"]
    elif breakage == "a field of a missing file":
        field["source"]["fileObject"] = {"@id": "nowhere.jsonl"}
    elif breakage == "a field with no type":
        del field["dataType"]
    else:
        c["@type"] = "sc:Book"
    errors, _ = croissant_issues(c)
    assert errors, breakage


def test_cli_writes_the_card(tiny, tmp_path, capsys):
    out = tmp_path / "cards"
    out.mkdir()
    assert (
        main(
            [
                "sets-card",
                "--sets",
                str(tiny["sets"]),
                "--out",
                str(out),
                "--manifest",
                str(tiny["manifest"]),
                "--corpus",
                str(tiny["corpus"]),
            ]
        )
        == 0
    )
    path = out / CARD_FILE
    assert f"sha256 {sha256(path)}" in capsys.readouterr().out
    from membench.cli.sets import CARD_FILE as HELP_NAME  # the name its help gives

    assert HELP_NAME == CARD_FILE
    assert path.read_text() == card_text(card(tiny["sets"], tiny["manifest"], tiny["corpus"]))
    assert main(["sets-card", "--sets", str(tmp_path / "none"), "--out", str(out)]) == 2
    assert "MISSING_FILE: no set file here" in capsys.readouterr().err


# ------------------------------------------------------------------------------ real sets


@pytest.fixture(scope="module")
def real_sets(request) -> Path:
    """The real sets: bench/sets when it holds the locked files (read only), else the
    session's full build."""
    lock = read_lock(LOCK_PATH)
    if lock and set_digests(DEFAULT_SETS_DIR) == lock:
        return DEFAULT_SETS_DIR
    return request.getfixturevalue("built").out


def test_real_card(real_sets, corpus_root, tmp_path):
    path, digest = write_card(real_sets, tmp_path, MANIFEST_PATH, corpus_root)
    c = json.loads(path.read_text(encoding="utf-8"))
    errors, warnings = croissant_issues(c)
    assert errors == []
    assert unexpected(warnings) == []
    files = {fo["name"]: fo for fo in c["distribution"]}
    lock = read_lock(LOCK_PATH)
    for name, want in lock.items():  # the lock's sha256s, and the files'
        assert files[name]["sha256"] == want == sha256(real_sets / name), name
    from membench.sources import BY_KEY

    conv = [BY_KEY[k] for k in ("locomo", "prefeval", "realtalk")]
    assert sorted(files["conversation.jsonl"]["license"]) == sorted(
        f"{s.name}: {s.license}" for s in conv
    )
    privacy = {p.split(":", 1)[0]: p for p in c["rai:personalSensitiveInformation"]}
    assert "real people's private" in privacy["REALTALK"]
    assert "no records in these sets yet" not in privacy["REALTALK"]
    # a second card of the same sets is the same bytes
    again, digest2 = write_card(real_sets, tmp_path / "again.json", MANIFEST_PATH, corpus_root)
    assert digest2 == digest == sha256(again)
