"""``membench sets-card``: the Croissant 1.1 JSON-LD dataset card (``croissant.json``) of built
sets.

Reads a sets folder (its record files, ``items.jsonl``, ``coverage.json``, ``stats.json``), the
source registry (:data:`membench.sources.SOURCES`), the corpus manifest and, for each source
whose manifest entry lists one, the mirror's ``LICENSE-NOTES.md`` (its sha256 must be the
manifest's). Writes only the card file. Everything in the card comes from those inputs and from
the record contract (:mod:`membench.contract.schema`: fields, types, descriptions); nothing in it
depends on the time or the machine, so the same inputs give the same bytes.

Start at :func:`card` (the JSON-LD as a dict) and :func:`write_card`; docs/sets.md ("The
dataset card") says what goes where in the card and why.
"""

from __future__ import annotations

import hashlib
import json
import types
import typing
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..contract.schema import AnnotationRecord, ManifestEntry, SourceItem
from ..core.atomic import atomic_write_text
from ..core.errors import InputError
from ..core.jsonl import iter_json_lines, read_json_file, sha256_file
from ..core.paths import confine
from ..core.version import __version__
from ..sources import BY_KEY, SourceSpec
from .build import SET_FILES
from .corpus import load_manifest

CARD_FILE = "croissant.json"
CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
LICENSE_NOTES = "LICENSE-NOTES.md"
SUMMARY_FILES = ("coverage.json", "stats.json")
JSONL = "application/jsonlines"

#: the JSON-LD context: Croissant 1.1's (its Appendix 1, with mlcroissant's spelling of the
#: schema.org namespace) plus the RAI and PROV-O namespaces the card uses
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/",
    "prov": "http://www.w3.org/ns/prov#",
    "annotation": "cr:annotation",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "excludes": "cr:excludes",
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "readLines": "cr:readLines",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sdVersion": "cr:sdVersion",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
    "unArchive": "cr:unArchive",
    "value": "cr:value",
}

#: the Croissant meaning of each split name (cr:Split values)
SPLIT_URLS = {"dev": "cr:ValidationSplit", "test": "cr:TestSplit"}
#: a record file with fewer records is named among the limitations
SMALL = 100

_SCALARS = {
    str: "sc:Text",
    bool: "sc:Boolean",
    int: "sc:Integer",
    float: "sc:Float",
    datetime: "sc:DateTime",
}


# ------------------------------------------------------------------------------ inputs


@dataclass
class _Source:
    """What the card says of one source: its registry entry and manifest entry (either may be
    missing: a sets folder of sources the registry does not know, or not mirrored), its
    licence notes, and what the set files hold of it."""

    key: str
    spec: SourceSpec | None
    entry: ManifestEntry | None
    notes: str = ""
    records: Counter = field(default_factory=Counter)  # set file -> records
    items: int = 0
    unanswerable: int = 0
    licenses: set[str] = field(default_factory=set)  # origin.license of its records
    coverage: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name if self.spec else self.entry.name if self.entry else self.key

    @property
    def license(self) -> str:
        if self.entry:
            return self.entry.license
        if self.spec:
            return self.spec.license
        return "; ".join(sorted(self.licenses)) or "not stated"

    @property
    def url(self) -> str | None:
        return self.entry.url if self.entry else self.spec.upstream if self.spec else None

    @property
    def n_records(self) -> int:
        return sum(self.records.values())


def _key(value: Any, path: Path, line: int, name: str) -> str:
    if not isinstance(value, str) or ":" not in value:
        raise InputError(path, line, name, "missing, or not a '<source>:<id>' string")
    return value.split(":", 1)[0]


def _keys(obj: dict) -> set[str]:
    """The keys a line holds: its own, and ``key.sub`` of an object value or of the objects
    of a list value (what a record set's fields and subfields can be read from)."""
    out = set(obj)
    for k, v in obj.items():
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, dict):
                out.update(f"{k}.{sub}" for sub in x)
    return out


def _read_sets(sets_dir: Path, sources: dict[str, _Source], make) -> dict[str, dict[str, Any]]:
    """Count what every set file holds, per source; returns per file its records (or items),
    splits and sources."""
    files: dict[str, dict[str, Any]] = {}
    for name in SET_FILES:
        path = sets_dir / name
        if not path.is_file():
            continue
        rows, splits, by_source, keys = 0, Counter(), Counter(), set()
        for no, obj in iter_json_lines(path):
            rows += 1
            keys.update(_keys(obj))
            if name == "items.jsonl":
                src = make(_key(obj.get("source_id"), path, no, "source_id"))
                src.items += 1
            else:
                src = make(_key(obj.get("query_id"), path, no, "query_id"))
                src.records[name] += 1
                src.unanswerable += obj.get("unanswerable") is True
                origin = obj.get("origin")
                if isinstance(origin, dict) and isinstance(origin.get("license"), str):
                    src.licenses.add(origin["license"])
                splits[str(obj.get("split"))] += 1
            by_source[src.key] += 1
        files[name] = {
            "rows": rows,
            "splits": dict(sorted(splits.items())),
            "keys": keys,
            "sources": dict(sorted(by_source.items())),
        }
    if not files:
        raise InputError(
            sets_dir,
            None,
            None,
            "no set file here (" + ", ".join(SET_FILES) + ")",
            rule="MISSING_FILE",
        )
    return files


def _licence_notes(entry: ManifestEntry, manifest: Path, corpus: Path | None) -> str:
    """The mirror's LICENSE-NOTES.md of a source, whitespace folded; checked against the
    sha256 the manifest froze. '' when the manifest lists none."""
    listed = [f for f in entry.files if Path(f.path).name == LICENSE_NOTES]
    if not listed:
        return ""
    f = listed[0]
    if corpus is None:
        raise InputError(
            manifest,
            None,
            f"{entry.source}.files",
            f"{f.path} is listed but no corpus root was given to read it",
            rule="MISSING_FILE",
        )
    path = confine(corpus, f.path, file=manifest, field=f"{entry.source}.files")
    if not path.is_file():
        raise InputError(
            path,
            None,
            None,
            "licence notes listed in the manifest are missing",
            rule="MISSING_FILE",
        )
    if sha256_file(path) != f.sha256:
        raise InputError(
            path,
            None,
            None,
            f"sha256 differs from the manifest's ({manifest}): run `membench corpus check`",
            rule="DIGEST_DRIFT",
        )
    return " ".join(path.read_text(encoding="utf-8").split())


def _gather(
    sets_dir: Path, manifest: Path, corpus: Path | None
) -> tuple[list[_Source], dict[str, dict[str, Any]], dict, list]:
    entries = {e.source: e for e in load_manifest(manifest)} if manifest.is_file() else {}
    sources: dict[str, _Source] = {}

    def make(key: str) -> _Source:
        if key not in sources:
            sources[key] = _Source(key, BY_KEY.get(key), entries.get(key))
        return sources[key]

    files = _read_sets(sets_dir, sources, make)
    stats = read_json_file(sets_dir / "stats.json", dict, "the build's stats (a JSON object)")
    coverage = read_json_file(
        sets_dir / "coverage.json", list, "the build's coverage (a JSON list)"
    )
    for i, c in enumerate(coverage):
        if not isinstance(c, dict) or not isinstance(c.get("source"), str):
            raise InputError(
                sets_dir / "coverage.json", None, f"[{i}].source", "missing or not a string"
            )
        make(c["source"]).coverage = c
    for src in sources.values():
        if src.spec is None and src.entry is None:
            raise InputError(
                manifest,
                None,
                None,
                f"source {src.key!r} of {sets_dir} is neither "
                "registered (membench/sources) nor in the manifest",
            )
        if src.entry is not None:
            src.notes = _licence_notes(src.entry, manifest, corpus)
    order = {s: i for i, s in enumerate(BY_KEY)}
    ordered = sorted(sources.values(), key=lambda s: (order.get(s.key, len(order)), s.key))
    return ordered, files, stats, coverage


# ------------------------------------------------------------------------------ fields


def _optional(tp: Any) -> Any:
    """``X | None`` -> ``X``, and ``Annotated[X, ...]`` (``StrictInt``) -> ``X``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            tp = args[0]
    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _field(
    rs: str,
    name: str,
    info,
    file_id: str,
    keys: set[str],
    parents: tuple[str, ...] = (),
    in_array: bool = False,
) -> dict[str, Any] | None:
    """The cr:Field of one contract field (``info``: its pydantic FieldInfo), read from the
    JSON lines file ``file_id``: a scalar's type, a list's items (isArray), a model's fields
    (subField); a free JSON value (``Any``, an object) is its JSON text (sc:Text)."""
    path = (*parents, name)
    if ".".join(path) not in keys:  # no line of the file holds it: nothing to read
        return None
    tp = _optional(info.annotation)
    is_array = typing.get_origin(tp) is list
    if is_array:
        tp = _optional(typing.get_args(tp)[0])
    source: dict[str, Any] = {"fileObject": {"@id": file_id}, "extract": {"column": path[0]}}
    if len(path) > 1:
        source["transform"] = {
            "jsonPath": ".".join(path[1:]) if not in_array else "[*]." + ".".join(path[1:])
        }
    out: dict[str, Any] = {
        "@type": "cr:Field",
        "@id": f"{rs}/{'/'.join(path)}",
        "name": name,
        "description": info.description or name,
    }
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        out["subField"] = [
            f
            for sub, sinfo in tp.model_fields.items()
            if (f := _field(rs, sub, sinfo, file_id, keys, path, in_array or is_array))
        ]
    else:
        if typing.get_origin(tp) is typing.Literal:
            kinds = {type(v) for v in typing.get_args(tp)}
            tp = kinds.pop() if len(kinds) == 1 else Any
            out["description"] += (
                " (one of: "
                + ", ".join(map(str, typing.get_args(_optional(info.annotation))))
                + ")"
            )
        out["dataType"] = _SCALARS.get(tp, "sc:Text")
        if tp not in _SCALARS:
            out["description"] += " [JSON text]"
        out["source"] = source
    if is_array:
        out["isArray"] = True
        out["arrayShape"] = "-1"
    if name == "split" and not parents:
        out["references"] = {"field": {"@id": "splits/name"}}
    return out


def _record_set(
    file: str, model: type[BaseModel], description: str, keys: set[str]
) -> dict[str, Any]:
    """The cr:RecordSet of a JSON lines file: a field per contract field that some line of the
    file holds (a key no line has, e.g. ``answer`` where every record is unanswerable or has
    none, is left out: a reader finds no column to read it from)."""
    rs = file.removesuffix(".jsonl")
    key = "query_id" if "query_id" in model.model_fields else "source_id"
    return {
        "@type": "cr:RecordSet",
        "@id": rs,
        "name": rs,
        "description": description,
        "key": {"@id": f"{rs}/{key}"},
        "field": [
            f for n, info in model.model_fields.items() if (f := _field(rs, n, info, file, keys))
        ],
    }


def _splits(files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    names = sorted({s for f in files.values() for s in f["splits"]} & set(SPLIT_URLS))
    return {
        "@type": "cr:RecordSet",
        "@id": "splits",
        "name": "splits",
        "dataType": "cr:Split",
        "key": {"@id": "splits/name"},
        "description": "the splits of the records: by holder, dev to develop on, test frozen",
        "field": [
            {
                "@type": "cr:Field",
                "@id": "splits/name",
                "name": "name",
                "description": "the split's name in the records",
                "dataType": "sc:Text",
            },
            {
                "@type": "cr:Field",
                "@id": "splits/url",
                "name": "url",
                "description": "the split's Croissant meaning",
                "dataType": "sc:URL",
            },
        ],
        "data": [{"splits/name": n, "splits/url": SPLIT_URLS[n]} for n in names],
    }


# ------------------------------------------------------------------------------ the card


def _counts(c: dict[str, Any], names: dict[str, str] | None = None) -> str:
    """``name count, ...`` (counts with thousands separators)."""
    return ", ".join(
        f"{(names or {}).get(k, k)} {f'{v:,}' if isinstance(v, int) else v}" for k, v in c.items()
    )


def _file_object(
    name: str, sets_dir: Path, digest: str, description: str, licences: list[str] | None = None
) -> dict[str, Any]:
    fo = {
        "@type": "cr:FileObject",
        "@id": name,
        "name": name,
        "contentUrl": name,
        "contentSize": f"{(sets_dir / name).stat().st_size} B",
        "encodingFormat": JSONL if name.endswith(".jsonl") else "application/json",
        "sha256": digest,
        "description": description,
    }
    if licences:
        fo["license"] = licences
    return fo


def _source_line(s: _Source) -> str:
    rev = s.entry.revision if s.entry else "not mirrored"
    where = f"{s.url} (revision {rev}" + (
        f", retrieved {s.entry.retrieved_at})" if s.entry else ")"
    )
    ann = s.entry.annotation_source if s.entry else s.spec.annotation_source if s.spec else ""
    return f"{s.name} [{s.key}]: {where}; annotations: {ann}"


def _coverage_line(s: _Source) -> str | None:
    c = s.coverage
    if not c:
        return None
    if not c.get("mirrored", True):
        return f"{s.name}: registered, not in the corpus mirror: no records"
    why = "; ".join(f"{k}: {v:,}" for k, v in (c.get("not_covered") or {}).items())
    return (
        f"{s.name}: {c.get('covered', 0):,} of {c.get('upstream_items', 0):,} upstream "
        "questions became records" + (f" (not covered: {why})" if why else "")
    )


def card(sets_dir: str | Path, manifest: str | Path, corpus: str | Path | None) -> dict:
    """The Croissant 1.1 description of the sets in ``sets_dir`` (see the module docstring)."""
    sets_dir, manifest = Path(sets_dir), Path(manifest)
    corpus = Path(corpus) if corpus is not None else None
    sources, files, stats, coverage = _gather(sets_dir, manifest, corpus)
    digests = {f: sha256_file(sets_dir / f) for f in (*files, *SUMMARY_FILES)}
    fingerprint = hashlib.sha256(
        json.dumps(sorted(digests.items()), separators=(",", ":")).encode()
    ).hexdigest()
    names = {s.key: s.name for s in sources}
    in_sets = [s for s in sources if s.n_records or s.items]
    mods = stats.get("modalities") or {}

    distribution = _distribution(sets_dir, files, digests, in_sets, names)
    record_sets = _record_sets(files, mods)

    total = sum(i["rows"] for f, i in files.items() if f != "items.jsonl")
    n_items = files.get("items.jsonl", {}).get("rows", 0)
    record_mods = [f.removesuffix(".jsonl") for f in files if f != "items.jsonl"]
    description = (
        f"membench's annotation sets: {total:,} questions over {n_items:,} source items in "
        f"{len(record_mods)} modalities ({', '.join(record_mods)}), each asked of one holder's "
        "memory at a time (as_of), with gold regions inside the items, or unanswerable. Built "
        f"by `membench build` from {len(in_sets)} upstream benchmarks mirrored at pinned "
        "revisions ("
        + ", ".join(s.name for s in in_sets)
        + "); the set files' sha256s are frozen in "
        f"bench/sets.lock.json. Sets fingerprint (sha256 of the files' sha256s): {fingerprint}."
    )

    licenses = [
        {
            "@type": "sc:CreativeWork",
            "name": f"{s.name}: {s.license}",
            **({"url": s.url} if s.url else {}),
            "description": s.notes or "no licence notes in the manifest",
        }
        for s in in_sets
    ]
    keep = [
        s for s in sources if s.n_records or s.items or (s.coverage.get("mirrored") and s.entry)
    ]
    derivation = stats.get("derivation") or {}
    not_derived = [
        f"{names.get(k, k)}, {kind}: {why}"
        for k, d in derivation.items()
        for kind, why in sorted((d.get("not_derived") or {}).items())
    ]
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": "membench-sets",
        "description": description,
        "version": __version__,
        "identifier": f"sha256:{fingerprint}",
        "keywords": [
            "memory systems",
            "retrieval",
            "benchmark",
            "holder scope",
            "time scope",
            "unanswerable questions",
            *record_mods,
        ],
        "license": licenses,
        "creator": {"@type": "sc:Organization", "name": "membench"},
        "citeAs": (
            f"@misc{{membench_sets_{fingerprint[:12]}, title={{membench annotation sets}}, "
            f"note={{membench {__version__}; sets sha256 {fingerprint}}}}}"
        ),
        "citation": [_source_line(s) for s in in_sets],
        "isBasedOn": [s.url for s in in_sets if s.url],
        "prov:wasDerivedFrom": [
            {
                "@id": s.url,
                "prov:label": s.name,
                **(
                    {"prov:generatedAtTime": s.entry.retrieved_at, "version": s.entry.revision}
                    if s.entry
                    else {}
                ),
            }
            for s in in_sets
            if s.url
        ],
        "prov:wasGeneratedBy": {
            "@type": "prov:Activity",
            "prov:label": f"membench build (membench {__version__}): adapters map each "
            "upstream format into records and items; split by holder hash; "
            "as_of drawn on each holder's timeline; derived unanswerables",
        },
        "distribution": distribution,
        "recordSet": record_sets,
        # Croissant RAI vocabulary
        **_rai(sources, in_sets, keep, files, record_mods, mods, names, coverage, not_derived),
    }


def _distribution(
    sets_dir: Path,
    files: dict[str, dict],
    digests: dict[str, str],
    in_sets: list[_Source],
    names: dict[str, str],
) -> list[dict[str, Any]]:
    """The card's ``distribution``: a file object per set file and summary file."""
    distribution = []
    for f, info in files.items():
        what = "source items (what systems ingest)" if f == "items.jsonl" else "records"
        lic = sorted({f"{s.name}: {s.license}" for s in in_sets if s.key in info["sources"]})
        distribution.append(
            _file_object(
                f,
                sets_dir,
                digests[f],
                f"{info['rows']:,} {what}; by source: "
                f"{_counts(info['sources'], names)}"
                + (f"; by split: {_counts(info['splits'])}" if info["splits"] else ""),
                lic,
            )
        )
    distribution.append(
        _file_object(
            "coverage.json",
            sets_dir,
            digests["coverage.json"],
            "per source: upstream questions, how many became records and why the others did not",
        )
    )
    distribution.append(
        _file_object(
            "stats.json",
            sets_dir,
            digests["stats.json"],
            "per modality: queries, answerable and unanswerable (native and derived), holders, "
            "dev and test; per source: the derivations and why the guards skipped the others",
        )
    )
    return distribution


def _record_sets(files: dict[str, dict], mods: dict[str, dict]) -> list[dict[str, Any]]:
    """The card's ``recordSet``: the splits, and a record set per set file."""
    record_sets = [_splits(files)]
    for f, info in files.items():
        if f == "items.jsonl":
            record_sets.append(
                _record_set(
                    f,
                    SourceItem,
                    "the source items systems ingest, one "
                    "per line: a file under the corpus root or inline "
                    "content",
                    info["keys"],
                )
            )
        else:
            m = f.removesuffix(".jsonl")
            s = mods.get(m) or {}
            record_sets.append(
                _record_set(
                    f,
                    AnnotationRecord,
                    (
                        f"{m} annotation records, one query per line: {info['rows']:,} queries"
                        + (
                            f", {s.get('answerable', 0):,} answerable, "
                            f"{s.get('native_unanswerable', 0):,} native unanswerable, "
                            f"{s.get('derived_transactive', 0):,} derived transactive, "
                            f"{s.get('derived_temporal', 0):,} derived temporal; "
                            f"{s.get('holders', 0):,} holders"
                            if s
                            else ""
                        )
                    ),
                    info["keys"],
                )
            )
    return record_sets


def _rai(
    sources: list[_Source],
    in_sets: list[_Source],
    keep: list[_Source],
    files: dict[str, dict],
    record_mods: list[str],
    mods: dict[str, dict],
    names: dict[str, str],
    coverage: list[dict],
    not_derived: list[str],
) -> dict[str, Any]:
    """The card's Croissant RAI fields (``rai:*``)."""
    return {
        "rai:dataCollection": (
            "Secondary data: questions and their evidence from published benchmarks, read from "
            "a mirror of their repositories at pinned revisions (checked file by file against "
            "the manifest's sha256s) by one adapter per source, deterministically. "
            + " | ".join(_source_line(s) for s in keep)
        ),
        "rai:dataCollectionType": ["Secondary data analysis"],
        "rai:dataCollectionMissingData": " | ".join(
            x for x in (_coverage_line(s) for s in sources) if x
        ),
        "rai:dataAnnotationProtocol": [
            f"{s.name}: {s.entry.annotation_source if s.entry else s.spec.annotation_source}"
            for s in in_sets
        ],
        "rai:machineAnnotationTools": [
            "membench build: derived unanswerables (transactive: asked of another holder; "
            "temporal: asked before the evidence), kept only where the anchor guards hold; "
            "per modality, derived transactive / temporal: "
            + _counts(
                {
                    m: f"{s.get('derived_transactive', 0):,} / {s.get('derived_temporal', 0):,}"
                    for m, s in mods.items()
                }
            )
            if mods
            else "membench build: derived unanswerables"
        ],
        "rai:dataPreprocessingProtocol": [
            "holders split by hash into dev and test (no holder in both)",
            "as_of drawn on each holder's timeline so that it tells nothing "
            "(membench/sets/timeline.py)",
            "repairs of upstream input, per source: "
            + (
                " | ".join(
                    f"{names.get(c['source'], c['source'])}: " + _counts(c["normalised"])
                    for c in coverage
                    if c.get("normalised")
                )
                or "none"
            ),
        ],
        "rai:dataUseCases": [
            "evaluating memory systems (retrieval under holder and time scope, abstention on "
            "unanswerable questions); dev to develop on, test frozen for final runs",
            "not for training: the upstream licences are research or evaluation licences ("
            + "; ".join(sorted({s.license for s in in_sets}))
            + ")",
        ],
        "rai:dataBiases": [
            "records per source: " + _counts({s.name: s.n_records for s in in_sets}),
            "records per modality: "
            + _counts(
                {
                    m: i["rows"]
                    for m, i in zip(record_mods, (files[f"{m}.jsonl"] for m in record_mods))
                }
            ),
            "the questions and the judgments are the upstream authors' (their topics, "
            "languages and annotators): see each source's citation",
        ],
        "rai:dataLimitations": [
            *(
                f"{s.name}: "
                + (
                    "mirrored, not yet mapped into the sets"
                    if s.coverage.get("mirrored")
                    else "registered, not in the corpus mirror"
                )
                + ": no records"
                for s in sources
                if s.coverage and not (s.n_records or s.items)
            ),
            *(
                f"{m}: only {i['rows']:,} records: its figures have wide intervals"
                for m, i in zip(record_mods, (files[f"{m}.jsonl"] for m in record_mods))
                if i["rows"] < SMALL
            ),
            *(f"not derived: {x}" for x in not_derived),
        ],
        "rai:personalSensitiveInformation": [
            f"{s.name}: "
            + (
                s.spec.personal_data
                if s.spec and s.spec.personal_data
                else "not stated in the registry"
            )
            + (
                ""
                if s.n_records or s.items
                else " (registered and mirrored; no records in these sets yet)"
            )
            for s in keep
        ],
        "rai:dataReleaseMaintenancePlan": (
            "The sets are rebuilt from the corpus mirror by `membench build`, which must "
            "reproduce the sha256s of bench/sets.lock.json byte for byte; an intended change is "
            "frozen with `membench build --update-lock` and explained in docs/sets.md. This "
            "card is regenerated from the sets by `membench sets-card`."
        ),
    }


def card_text(c: dict) -> str:
    """The card's bytes: sorted keys, two-space indent, UTF-8 kept, one final newline."""
    return json.dumps(c, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def write_card(
    sets_dir: str | Path, out: str | Path, manifest: str | Path, corpus: str | Path | None
) -> tuple[Path, str]:
    """Write the card of ``sets_dir`` to ``out`` (a file, or a folder to hold
    ``croissant.json``); returns its path and sha256."""
    out = Path(out)
    if out.is_dir():
        out = out / CARD_FILE
    text = card_text(card(sets_dir, manifest, corpus))
    atomic_write_text(out, text)
    return out, hashlib.sha256(text.encode("utf-8")).hexdigest()
