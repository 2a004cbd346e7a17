"""``membench validate``: every hard rule of SPEC section 5 over a built sets folder.

Each finding is one line ``<file>:<line>: <RULE>: <message>``; any finding of level ``error``
makes the command exit non-zero. Reads the sets folder (and the corpus mirror with
``--corpus``); writes nothing. Start at :func:`validate_sets`.
Why longer: the table below is the rule list itself (:data:`RULES` is read from it).
The rules, in the order they are checked:

========================  ===================================================================
MISSING_FILE              a set file is absent
NOT_A_FILE                a set file's path is a folder (or a device, a pipe)
ENCODING                  a line is not valid UTF-8
LINE_TOO_LONG             a line is longer than the bound ``line_bytes`` (read no further)
FILE_TOO_LONG             a whole JSON file read (the lock) is longer than the bound
                          ``json_file_bytes``
JSON                      a line is not a JSON object (NaN, a repeated key or nesting past
                          the recursion limit included)
EMPTY_FILE                a set file holds no line (every modality of a build has records;
                          a warning when coverage.json shows no covered source of it)
SCHEMA                    a field is missing, of the wrong type, or unknown (names the field)
MODALITY_MISMATCH         a record's modality differs from its file's (``pdf.jsonl`` holds pdf)
REGION_SHAPE              a gold (or judgment set) region's keys/values do not match the
                          modality (SPEC table)
DUPLICATE_GOLD            the same gold region (source_id and region) twice in one record's
                          gold, or in one of its judgment sets (it would count twice in every
                          recall's denominator)
JUDGMENT_NAME             a judgment set named ``gold`` (the primary set's name) or not a
                          plain lower-case name (``[a-z][a-z0-9_]*``: it names columns and keys)
DUPLICATE_QUERY_ID        the same query_id twice (across all set files)
DUPLICATE_SOURCE_ID       the same source_id twice in items.jsonl
GOLD_MISSING              an answerable record with empty gold
GOLD_ON_UNANSWERABLE      an unanswerable record with non-empty gold
JUDGMENT_ON_UNANSWERABLE  an unanswerable record with a non-empty judgment set (every reading
                          of relevance finds nothing for it)
GOLD_UNKNOWN_ITEM         gold names a source item that items.jsonl does not have
GOLD_MODALITY             gold names an item of another modality
GOLD_OUT_OF_BOUNDS        page beyond the page count, bbox outside the image, span beyond the
                          video, line beyond the file, turn beyond the session
HOLDER_MISMATCH           a gold item's holder is not the query's scope.holder
HOLDER_UNKNOWN            scope.holder owns no source item
GOLD_AFTER_AS_OF          a gold item observed after the query's as_of
                          (the GOLD_* rules and HOLDER_MISMATCH hold for every judgment set's
                          regions too, named ``judgments.<set>[i]``)
DERIVED_TWIN              origin.derived_from names a record of the sets: a derived query
                          replaces the one it comes from (a pair would tell which is which)
REVISION_UNKNOWN          origin.revision not among the manifest's commits for the record's
                          source (its query_id prefix)
DIGEST_DRIFT              a set file's sha256 differs from the lock, or a corpus file's from
                          the manifest (with ``--corpus``)
PATH_OUTSIDE_CORPUS       an item's path leaves the corpus root (``..``, absolute, or a
                          symlink resolving outside it; with --corpus), or a manifest path does
ITEM_PATH_MISSING         an item's path does not exist under the corpus root (with --corpus)
ADDED_FILE                a file under the corpus root the manifest does not list (with
                          --corpus)
CONFLICTING_QUERY         two records a system cannot tell apart (same question, holder and
                          as_of) differ in answerability
AMBIGUOUS_QUERY           (warning) the same, with the same answerability
SPLIT_LEAK                a holder has records (or items' records) in both dev and test
UNANSWERABLE_SHARE        (warning) under 15% unanswerable records in a modality
TELL                      a metadata-only audit gate fails (:mod:`membench.sets.audit`): a
                          classifier's ROC AUC or a named rule's balanced accuracy separates
                          unanswerable from answerable records of a modality (with ``audit``)
========================  ===================================================================
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from .. import modalities
from ..contract.schema import AnnotationRecord, SourceItem, repeated_regions
from ..core import progress
from ..core.errors import InputError
from ..core.jsonl import check_readable_file, iter_json_lines, sha256_file, validation_error
from ..core.paths import confine
from ..modalities import MODALITIES, check_region
from .build import SET_FILES, read_lock
from .corpus import check_corpus, revisions_by_source

MIN_UNANSWERABLE_SHARE = 0.15
_JUDGMENT_NAME = re.compile(r"[a-z][a-z0-9_]*")
# The rule names, in the order of the table above (the table is the one place they are listed).
RULES: tuple[str, ...] = tuple(re.findall(r"^([A-Z_]+)\s{2,}", __doc__, re.M))


@dataclass(frozen=True)
class Finding:
    file: str
    line: int | None
    rule: str
    message: str
    level: str = "error"

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        tag = "" if self.level == "error" else f" ({self.level})"
        return f"{where}: {self.rule}{tag}: {self.message}"


def _bounds(modality: str, region: dict, item: SourceItem) -> str | None:
    return modalities.get(modality).region_bounds(region, item.meta)


def validate_sets(
    sets_dir: Path,
    manifest: Path,
    lock: Path | None = None,
    corpus: Path | None = None,
    audit: bool = True,
) -> list[Finding]:
    """Every hard rule over the sets in ``sets_dir`` (see the module docstring; ``audit``: the
    metadata-only audit's TELL gates too); reports the ``validate`` progress step."""
    with progress.step("validate", unit="finding") as bar:
        found = _validate_sets(sets_dir, manifest, lock, corpus, audit)
        bar.advance(len(found))
        return found


def _validate_sets(
    sets_dir: Path, manifest: Path, lock: Path | None, corpus: Path | None, audit: bool
) -> list[Finding]:
    sets_dir = Path(sets_dir)
    out: list[Finding] = []

    def add(file, line, rule, msg, level="error"):
        out.append(Finding(str(file), line, rule, msg, level))

    items = _read_items(sets_dir / "items.jsonl", corpus, add)
    read = _read_records(sets_dir, items, revisions_by_source(manifest), add)
    _check_twins(read.records, add)
    _check_indistinct(read.records, add)

    # ---- splits
    for h, splits in sorted(read.holder_splits.items()):
        if len(splits) > 1:
            p, no = read.holder_first[h]
            add(p, no, "SPLIT_LEAK", f"holder {h!r} has records in {sorted(splits)}")

    # ---- unanswerable share
    for m, (n, u) in read.counts.items():
        if n and u / n < MIN_UNANSWERABLE_SHARE:
            add(
                sets_dir / f"{m}.jsonl",
                None,
                "UNANSWERABLE_SHARE",
                f"{u}/{n} = {u / n:.1%} unanswerable, under {MIN_UNANSWERABLE_SHARE:.0%}",
                level="warning",
            )

    # ---- no tells (the audit needs well-formed sets: it runs when nothing above failed)
    if audit and not [f for f in out if f.level == "error"]:
        out.extend(_audit_findings_cached(sets_dir))

    # ---- digests
    if lock is not None:
        _check_lock(sets_dir, lock, add)
    if corpus is not None:
        for problem in check_corpus(corpus, manifest).problems:
            add(problem.file, problem.line, problem.rule, f"{problem.path}: {problem.message}")
    return out


def _read_items(items_path: Path, corpus: Path | None, add) -> dict[str, SourceItem]:
    """items.jsonl's items by source id (a repeated one: the first), each path checked under
    ``corpus`` when given."""
    items: dict[str, SourceItem] = {}
    for no, obj, model in _parse(items_path, SourceItem, add):
        if model is None:
            continue
        if model.source_id in items:
            add(items_path, no, "DUPLICATE_SOURCE_ID", model.source_id)
            continue
        items[model.source_id] = model
        if corpus is not None and model.path is not None:
            try:
                target = confine(corpus, model.path, file=items_path, line=no)
            except InputError as e:
                add(items_path, no, e.rule, f"field path: {e.message}")
                continue
            if not target.exists():
                add(items_path, no, "ITEM_PATH_MISSING", f"{model.path} not under {corpus}")
    return items


@dataclass
class _Records:
    """What :func:`_read_records` read of the modality files."""

    records: dict[str, tuple[Path, int, AnnotationRecord]]  # query id -> where, record
    holder_splits: dict[str, set[str]]  # holder -> the splits of its records
    holder_first: dict[str, tuple[Path, int]]  # holder -> where its first record is
    counts: dict[str, list[int]]  # modality -> [records, unanswerable]


def _read_records(
    sets_dir: Path, items: dict[str, SourceItem], revisions: dict[str, set[str]], add
) -> _Records:
    """Every record of the modality files (a repeated query id: the first), each checked on
    its own (:func:`_check_record`)."""
    holders = {it.holder for it in items.values()}
    records: dict[str, tuple[Path, int, AnnotationRecord]] = {}
    holder_splits: dict[str, set[str]] = defaultdict(set)
    holder_first: dict[str, tuple[Path, int]] = {}
    counts = {m: [0, 0] for m in MODALITIES}  # [records, unanswerable]
    not_covered = _modalities_not_covered(sets_dir)
    for m in MODALITIES:
        path = sets_dir / f"{m}.jsonl"
        for no, obj, rec in _parse(
            path, AnnotationRecord, add, modality=m, empty_ok=m in not_covered
        ):
            if rec is None:
                continue
            if rec.query_id in records:
                p0, l0, _ = records[rec.query_id]
                add(path, no, "DUPLICATE_QUERY_ID", f"{rec.query_id} (first at {p0}:{l0})")
                continue
            records[rec.query_id] = (path, no, rec)
            counts[m][0] += 1
            counts[m][1] += rec.unanswerable
            holder_splits[rec.scope.holder].add(rec.split)
            holder_first.setdefault(rec.scope.holder, (path, no))
            _check_record(path, no, rec, items, holders, revisions, add)
    return _Records(records, holder_splits, holder_first, counts)


def _check_record(
    path: Path,
    no: int,
    rec: AnnotationRecord,
    items: dict[str, SourceItem],
    holders: set[str],
    revisions: dict[str, set[str]],
    add,
) -> None:
    """The rules one record (line ``no`` of ``path``) answers to on its own."""
    if rec.unanswerable and rec.gold:
        add(path, no, "GOLD_ON_UNANSWERABLE", f"{len(rec.gold)} gold region(s)")
    for name, js in sorted((rec.judgments or {}).items()):
        if name == "gold" or not _JUDGMENT_NAME.fullmatch(name):
            add(
                path,
                no,
                "JUDGMENT_NAME",
                f"judgments.{name}: "
                + (
                    "'gold' is the primary set's name"
                    if name == "gold"
                    else "a judgment set name is [a-z][a-z0-9_]*"
                ),
            )
        if rec.unanswerable and js:
            add(
                path,
                no,
                "JUDGMENT_ON_UNANSWERABLE",
                f"judgments.{name}: {len(js)} region(s) on an unanswerable record",
            )
    if not rec.unanswerable and not rec.gold:
        add(path, no, "GOLD_MISSING", "answerable record with empty gold")
    if rec.scope.holder not in holders:
        add(path, no, "HOLDER_UNKNOWN", f"scope.holder {rec.scope.holder!r} owns no item")
    _check_golds(path, no, rec, items, add)
    source = rec.query_id.split(":", 1)[0]
    known = revisions.get(source)
    if known is None or rec.origin.revision not in known:
        add(
            path,
            no,
            "REVISION_UNKNOWN",
            f"origin.revision {rec.origin.revision} ({rec.origin.dataset}) is not among "
            f"the manifest's commits for source {source!r}",
        )


def _check_golds(
    path: Path, no: int, rec: AnnotationRecord, items: dict[str, SourceItem], add
) -> None:
    """The GOLD_* rules and HOLDER_MISMATCH over a record's gold and judgment sets' regions."""
    golds = [(f"gold[{i}]", g) for i, g in enumerate(rec.gold)] + [
        (f"judgments.{name}[{j}]", g)
        for name, gs in sorted((rec.judgments or {}).items())
        for j, g in enumerate(gs)
    ]
    for where, g in golds:
        it = items.get(g.source_id)
        if it is None:
            add(path, no, "GOLD_UNKNOWN_ITEM", f"{where}.source_id {g.source_id!r}")
            continue
        if it.modality != rec.modality:
            add(path, no, "GOLD_MODALITY", f"{where}: {g.source_id} is {it.modality}")
            continue
        why = _bounds(rec.modality, g.region, it)
        if why:
            add(path, no, "GOLD_OUT_OF_BOUNDS", f"{where}.region: {why}")
        if it.holder != rec.scope.holder:
            add(
                path,
                no,
                "HOLDER_MISMATCH",
                f"{where}: item holder {it.holder!r} != scope.holder {rec.scope.holder!r}",
            )
        if it.observed_at > rec.as_of:
            add(
                path,
                no,
                "GOLD_AFTER_AS_OF",
                f"{where}: {g.source_id} observed {it.observed_at.isoformat()} > as_of "
                f"{rec.as_of.isoformat()}",
            )


def _check_twins(records: dict[str, tuple[Path, int, AnnotationRecord]], add) -> None:
    """DERIVED_TWIN: a derived record whose source record is in the sets too."""
    for qid, (path, no, rec) in records.items():
        if rec.origin.derived_from and rec.origin.derived_from in records:
            p0, l0, _ = records[rec.origin.derived_from]
            add(
                path,
                no,
                "DERIVED_TWIN",
                f"derived_from {rec.origin.derived_from!r} is a record too ({p0}:{l0})",
            )


def _check_indistinct(records: dict[str, tuple[Path, int, AnnotationRecord]], add) -> None:
    """Queries a system cannot tell apart: it sees only (question, holder, as_of)."""
    same: dict[tuple, list[tuple[Path, int, AnnotationRecord]]] = defaultdict(list)
    for path, no, rec in records.values():
        same[(rec.question, rec.scope.holder, rec.as_of)].append((path, no, rec))
    for group in same.values():
        if len(group) < 2:
            continue
        path, no, rec = group[0]
        others = ", ".join(r.query_id for _, _, r in group[1:])
        if len({r.unanswerable for _, _, r in group}) > 1:
            add(
                path,
                no,
                "CONFLICTING_QUERY",
                f"{rec.query_id} and {others} have the same "
                "question, holder and as_of but differ in answerability",
            )
        else:
            add(
                path,
                no,
                "AMBIGUOUS_QUERY",
                f"{rec.query_id} and {others} have the same question, "
                "holder and as_of: a system cannot tell them apart (gold is scored per record)",
                level="warning",
            )


def _check_lock(sets_dir: Path, lock: Path, add) -> None:
    """DIGEST_DRIFT: a set file whose sha256 differs from the lock's (or no lock)."""
    frozen = read_lock(lock)
    if not frozen:
        add(lock, None, "DIGEST_DRIFT", "lock file missing or empty")
    for f in SET_FILES:
        p = sets_dir / f
        if f in frozen and p.exists() and sha256_file(p) != frozen[f]:
            add(
                p,
                None,
                "DIGEST_DRIFT",
                f"sha256 {sha256_file(p)[:12]}… differs from lock {frozen[f][:12]}… ({lock})",
            )


def _audit_findings_cached(sets_dir: Path) -> list[Finding]:
    """The audit's TELL findings, of :func:`membench.sets.audit.audit_sets_cached` (each
    ``membench run`` checks the sets before it ingests, and the audit is the slow part)."""
    from .audit import audit_sets_cached

    return audit_findings(sets_dir, audit_sets_cached(sets_dir))


def audit_findings(sets_dir: Path, result) -> list[Finding]:
    """The ``TELL`` findings of an audit (:class:`membench.sets.audit.Audit`): one per failed
    gate, on the modality's set file."""
    return [
        Finding(str(Path(sets_dir) / f"{m}.jsonl"), None, "TELL", msg)
        for m in result.modalities
        for msg in result.failures(m)
    ]


def _modalities_not_covered(sets_dir: Path) -> set[str]:
    """Modalities for which the build's coverage.json shows no source with a covered record
    (a mirror without that modality): their empty set file is expected, not an error. Without
    a readable coverage.json, none."""
    from ..sources import BY_KEY
    from .coverage import read_coverage

    path = sets_dir / "coverage.json"
    if not path.is_file():
        return set()
    try:
        rows = read_coverage(path)
    except InputError:
        return set()
    covered = {
        BY_KEY[r["source"]].modality
        for r in rows
        if r.get("source") in BY_KEY and r.get("mirrored") and (r.get("covered") or 0) > 0
    }
    return set(MODALITIES) - covered


def _parse(path: Path, model, add, modality: str | None = None, empty_ok: bool = False):
    """Yield ``(line, obj, model_or_None)``; problems are reported through ``add``."""
    try:
        check_readable_file(path)
    except InputError as e:
        add(path, None, e.rule, e.message)
        return
    lines = [0]  # lines read, good or bad

    def bad_line(e: InputError) -> None:
        lines[0] = max(lines[0], e.line or 0)
        add(e.file, e.line, e.rule, e.message)

    for no, obj in iter_json_lines(path, bad_line):
        lines[0] = no
        if modality is not None:
            if obj.get("modality") != modality:
                add(
                    path,
                    no,
                    "MODALITY_MISMATCH",
                    f"field modality: {obj.get('modality')!r} in {path.name}",
                )
                yield no, obj, None
                continue
            bad = False
            golds = obj.get("gold")
            regions = [
                (f"gold.{i}", g) for i, g in enumerate(golds if isinstance(golds, list) else [])
            ]
            js = obj.get("judgments")
            for name, gs in sorted(js.items() if isinstance(js, dict) else []):
                regions += [
                    (f"judgments.{name}.{j}", g)
                    for j, g in enumerate(gs if isinstance(gs, list) else [])
                ]
            for where, g in regions:
                why = check_region(modality, g.get("region") if isinstance(g, dict) else None)
                if why:
                    add(path, no, "REGION_SHAPE", f"field {where}.region: {why}")
                    bad = True
            lists: dict[str, list[tuple[str, dict]]] = defaultdict(list)
            for where, g in regions:
                if isinstance(g, dict):
                    lists[where.rsplit(".", 1)[0]].append((g.get("source_id"), g.get("region")))
            for name, pairs in lists.items():
                for i, j in repeated_regions(pairs):
                    add(
                        path,
                        no,
                        "DUPLICATE_GOLD",
                        f"field {name}.{j}: repeats {name}.{i} "
                        f"({pairs[j][0]!r}, region {pairs[j][1]}): a gold region is listed "
                        "once (twice, it would count twice in every recall's denominator)",
                    )
                    bad = True
            if bad:
                yield no, obj, None
                continue
        try:
            yield no, obj, model.model_validate(obj)
        except ValidationError as e:
            err = validation_error(path, no, e)
            add(
                path,
                no,
                "SCHEMA",
                f"field {err.field}: {err.message}" if err.field else err.message,
            )
            yield no, obj, None
    if lines[0] == 0 and empty_ok:
        add(
            path,
            None,
            "EMPTY_FILE",
            "no lines: no source of this modality is covered by the "
            "mirror (coverage.json), so it has no records and is not scored",
            level="warning",
        )
    elif lines[0] == 0:
        add(
            path,
            None,
            "EMPTY_FILE",
            "no lines: a built set file always has some (a modality "
            "without records cannot be scored)",
        )
