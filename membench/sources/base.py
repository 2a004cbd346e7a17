"""What every source adapter returns, and the deterministic helpers they share.

An adapter is a function ``load(corpus_root: Path) -> AdapterResult``: it reads one third-party
dataset in its *real upstream format* from ``corpus_root / <folder>``, writes nothing, and
returns source items (what systems ingest), record drafts (queries with gold regions) and a
:class:`Coverage` account of every upstream question that did not become a record. Rules every
adapter keeps (SPEC sections 4, 5 and 9): gold comes only from the upstream annotation or
document structure, never from OCR or a model; gold is a region inside one source item, never
a whole file; nothing is dropped silently (``coverage.upstream_items == coverage.covered +
sum(coverage.not_covered.values())``); output is deterministic (sorted by id, no dependence on
dict order, file system order or time).

Every ``load`` is the same three named steps after a shared preamble::

    up = open_upstream(corpus_root, SPEC, files={...})   # folder, required files, PROVENANCE.jsonl
    cov = Coverage(source=KEY)
    revision = up.revision(ANNOTATION, cov)              # annotation_revision
    rows = _read(up)                 # upstream files -> plain upstream rows, located errors
    made = _map(up, rows, revision)  # rows -> items, drafts (or why not), repairs: a Mapped
    _account(cov, rows, made)        # the Coverage bookkeeping: book(cov, made) + notes
    return made.result(cov)

``_read`` decides nothing (it raises :class:`InputError` naming file and line); ``_map`` makes
holders, observed_at and gold and records each decision as data (:class:`Mapped`); only
``_account`` (and the revision lookup's note) writes the :class:`Coverage`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..contract.schema import RecordDraft, SourceItem
from ..core.errors import InputError
from ..core.hashing import hash_order
from ..core.jsonl import iter_json_lines

# Synthetic ingestion timelines start here when a source has no time structure of its own.
SYNTHETIC_EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)


@dataclass
class Coverage:
    """Per source: how many upstream questions exist, how many became records, and why the
    rest did not (reason -> count). ``normalised`` counts inputs that were repaired (e.g. a
    malformed evidence string) and kept."""

    source: str
    upstream_items: int = 0
    covered: int = 0
    not_covered: dict[str, int] = field(default_factory=dict)
    normalised: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    mirrored: bool = True

    def miss(self, reason: str, n: int = 1) -> None:
        self.not_covered[reason] = self.not_covered.get(reason, 0) + n

    def fix(self, what: str, n: int = 1) -> None:
        self.normalised[what] = self.normalised.get(what, 0) + n

    def balanced(self) -> bool:
        return self.upstream_items == self.covered + sum(self.not_covered.values())

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "mirrored": self.mirrored,
            "upstream_items": self.upstream_items,
            "covered": self.covered,
            "not_covered": dict(sorted(self.not_covered.items())),
            "normalised": dict(sorted(self.normalised.items())),
            "notes": list(self.notes),
        }


@dataclass
class AdapterResult:
    items: list[SourceItem]
    drafts: list[RecordDraft]
    coverage: Coverage
    # Text per source item taken from upstream structure (turns, code, captions, PDF text
    # layer, a dataset's own table text). Used only to decide whether a question may be
    # re-scoped to another holder (derived transactive unanswerables); never as gold.
    texts: dict[str, str] = field(default_factory=dict)
    # What a source item is about, for sources whose questions share few words with their
    # evidence (PrefEval's preference families): read by the derivation guards only, never
    # written to the sets (a system must find it by reading the item).
    topics: dict[str, str] = field(default_factory=dict)


Adapter = Callable[[Path], AdapterResult]


# --------------------------------------------------------------------------- map -> account


@dataclass
class Mapped:
    """What an adapter's map step made of its upstream rows, as data for the account step:
    source items (and their texts), one outcome per upstream question (its
    :class:`RecordDraft`, or the reason it was not covered) and the repairs made to input that
    was kept (kind -> count). An adapter may subclass it to carry what its notes report."""

    items: list[SourceItem] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    outcomes: list[RecordDraft | str] = field(default_factory=list)
    fixes: dict[str, int] = field(default_factory=dict)
    topics: dict[str, str] = field(default_factory=dict)

    def fix(self, what: str, n: int = 1) -> None:
        self.fixes[what] = self.fixes.get(what, 0) + n

    @property
    def drafts(self) -> list[RecordDraft]:
        return [o for o in self.outcomes if not isinstance(o, str)]

    def result(self, cov: Coverage) -> AdapterResult:
        """The adapter's answer: items sorted by source_id, drafts by query_id, texts as made."""
        return AdapterResult(
            items=sorted(self.items, key=lambda i: i.source_id),
            drafts=sorted(self.drafts, key=lambda d: d.query_id),
            coverage=cov,
            texts=self.texts,
            topics=self.topics,
        )


def book(cov: Coverage, made: Mapped) -> None:
    """The counting every account step shares: each outcome is one upstream question, covered
    when it is a draft, else not covered for its reason; the map step's repairs are added to
    ``normalised``. Writes only ``cov``."""
    for o in made.outcomes:
        cov.upstream_items += 1
        if isinstance(o, str):
            cov.miss(o)
        else:
            cov.covered += 1
    for what, n in made.fixes.items():
        cov.fix(what, n)


# --------------------------------------------------------------------------- helpers


def hash_groups(keys: Iterable[str], n_groups: int, salt: str) -> dict[str, int]:
    """Deal keys round-robin, in hash order, into ``n_groups`` groups of near-equal size.
    Used for holders of collections with no natural owner (a photo roll, a screenshot folder,
    a set of watched videos)."""
    order = hash_order(keys, salt)
    return {k: i % n_groups for i, k in enumerate(order)}


def synthetic_timeline(
    keys: Iterable[str], start: datetime = SYNTHETIC_EPOCH, step: timedelta = timedelta(hours=1)
) -> dict[str, datetime]:
    """observed_at for items without time structure: one ``step`` apart in hash order of the
    keys (:func:`membench.core.hashing.hash_order`), so an item's place on the timeline owes
    nothing to its name (sorted names put one upstream folder's items, and their questions,
    together at one end)."""
    return {k: start + i * step for i, k in enumerate(hash_order(keys, "synthetic-timeline"))}


def json_answer_format(answer: Any) -> str | None:
    """``answer_format`` from an upstream answer's JSON type: int, float, str or list; ``None``
    for anything else (a boolean, null, an object), which each adapter decides about."""
    if isinstance(answer, bool):
        return None
    for t, name in ((int, "int"), (float, "float"), (str, "str"), (list, "list")):
        if isinstance(answer, t):
            return name
    return None


_STRIP_Q = re.compile(r"\s+")


def norm_space(s: str) -> str:
    return _STRIP_Q.sub(" ", s).strip()


def rel(root: Path, p: Path) -> str:
    """Path relative to the corpus root, with forward slashes (what items.jsonl stores)."""
    return p.relative_to(root).as_posix()


def read_json(path: Path, expect: type | None = None, what: str = "") -> Any:
    """An upstream JSON file; not JSON (or not UTF-8) is an :class:`InputError` naming the line,
    and with ``expect`` (``list`` or ``dict``) so is another top-level type (``what`` says what
    was expected, e.g. "a JSON list of questions")."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, None, f"not valid JSON: {e.msg}") from None
    except UnicodeDecodeError as e:
        raise InputError(path, None, None, f"not UTF-8 text: {e.reason}") from None
    except RecursionError:
        raise InputError(path, None, None, "not readable JSON: nested too deeply") from None
    except ValueError as e:  # an integer past Python's digit limit
        raise InputError(path, None, None, f"not readable JSON: {e}"[:200]) from None
    if expect is not None and not isinstance(data, expect):
        raise InputError(
            path, None, None, f"expected {what or expect.__name__}, got {type(data).__name__}"
        )
    return data


def read_provenance(folder: Path, required: bool = False) -> dict[str, dict]:
    """``<folder>/PROVENANCE.jsonl`` rows by mirror path. Absent: ``{}``, or an
    :class:`InputError` when ``required``; a malformed line is an error naming it."""
    p = folder / "PROVENANCE.jsonl"
    if not p.is_file():
        if required:
            raise InputError(
                p,
                None,
                None,
                "PROVENANCE.jsonl missing: the upstream revision of "
                "the annotation files is unknown",
                rule="MISSING_FILE",
            )
        return {}
    out: dict[str, dict] = {}
    for no, row in iter_json_lines(p):
        if not isinstance(row.get("path"), str):
            raise InputError(p, no, "path", "missing or not a string", rule="PROVENANCE")
        out[row["path"]] = row
    return out


# --------------------------------------------------------------------------- load preamble


def annotation_revision(
    folder: Path,
    name: str | Sequence[str],
    cov: Coverage,
    *,
    required: bool = False,
    provenance: Mapping[str, dict] | None = None,
) -> str:
    """The upstream commit of annotation file ``name`` (``origin.revision`` of every record),
    from ``<folder>/PROVENANCE.jsonl`` or its rows already read (``provenance``); for several
    names, the first that has one. Without a commit: with ``required`` an :class:`InputError`
    (MISSING_FILE) naming the file, else ``"unknown"`` with a coverage note (the validator's
    REVISION_UNKNOWN rule then flags the records). Writes only that note."""
    names = [name] if isinstance(name, str) else list(name)
    rows = read_provenance(folder) if provenance is None else provenance
    for n in names:
        commit = (rows.get(n) or {}).get("commit")
        if commit:
            return str(commit)
    if required:
        raise InputError(
            folder / "PROVENANCE.jsonl",
            None,
            names[0],
            "no upstream commit recorded for this annotation file",
            rule="MISSING_FILE",
        )
    cov.notes.append(f"no commit for {' or '.join(names)} in PROVENANCE.jsonl: revision 'unknown'")
    return "unknown"


def require_file(p: Path, what: str) -> None:
    """A MISSING_FILE :class:`InputError` naming ``p`` unless it is a file."""
    if not p.is_file():
        raise InputError(p, None, None, f"{what} is missing", rule="MISSING_FILE")


@dataclass(frozen=True)
class Upstream:
    """One source's folder under the corpus root, opened by :func:`open_upstream`."""

    spec: Any  # the source's registry entry (SourceSpec: license, scenario)
    root: Path  # the corpus root
    folder: Path  # <root>/<spec.folder>
    provenance: dict[str, dict]  # PROVENANCE.jsonl rows by mirror path ({} when absent)

    def revision(self, name: str | Sequence[str], cov: Coverage, required: bool = False) -> str:
        """:func:`annotation_revision` of ``name`` over this folder's provenance rows."""
        return annotation_revision(
            self.folder, name, cov, required=required, provenance=self.provenance
        )


def open_upstream(
    corpus_root: Path,
    spec: Any,
    *,
    folder: str = "",
    files: Mapping[str, str] | None = None,
    provenance: bool = False,
) -> Upstream:
    """The preamble every adapter's load shares, for registry entry ``spec``. Checks, in this
    order: that ``<corpus_root>/<spec.folder>`` is a folder, when ``folder`` (what it is, for the
    message) is given; that each of ``files`` (a path under the folder -> what it is) is a file;
    then reads PROVENANCE.jsonl, which must exist when ``provenance``. A missing piece is a
    MISSING_FILE :class:`InputError` naming its path. Reads nothing else, writes nothing."""
    root = Path(corpus_root)
    base = root / spec.folder
    if folder and not base.is_dir():
        raise InputError(base, None, None, f"{folder} is missing", rule="MISSING_FILE")
    for name, what in (files or {}).items():
        require_file(base / name, what)
    return Upstream(
        spec=spec, root=root, folder=base, provenance=read_provenance(base, required=provenance)
    )
