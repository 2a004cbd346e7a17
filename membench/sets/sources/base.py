"""What every source adapter returns, and the deterministic helpers they share.

An adapter is a function ``load(corpus_root: Path) -> AdapterResult``. It reads one
third-party dataset in its *real upstream format* from ``corpus_root / <folder>`` and turns it
into source items (what systems ingest) and record drafts (queries with gold regions), plus a
:class:`Coverage` account that explains every upstream question that did not become a record.

Rules every adapter keeps (SPEC sections 4, 5 and 9):

* gold comes only from the upstream annotation or document structure, never from OCR or a model;
* gold is a region inside one source item, never a whole file;
* nothing is dropped silently: ``coverage.upstream_items == coverage.covered +
  sum(coverage.not_covered.values())``;
* output is deterministic: sorted by id, no dependence on dict order, file system order or time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from ...core.errors import InputError
from ...core.hashing import hash_order
from ...core.jsonl import iter_json_lines
from ..schema import RecordDraft, SourceItem

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


Adapter = Callable[[Path], AdapterResult]


# --------------------------------------------------------------------------- helpers


def hash_groups(keys: Iterable[str], n_groups: int, salt: str) -> dict[str, int]:
    """Deal keys round-robin, in hash order, into ``n_groups`` groups of near-equal size.
    Used for holders of collections with no natural owner (a photo roll, a screenshot folder,
    a set of watched videos)."""
    order = hash_order(keys, salt)
    return {k: i % n_groups for i, k in enumerate(order)}


def synthetic_timeline(keys: Iterable[str], start: datetime = SYNTHETIC_EPOCH,
                       step: timedelta = timedelta(hours=1)) -> dict[str, datetime]:
    """observed_at for items without time structure: sorted key order, one ``step`` apart."""
    return {k: start + i * step for i, k in enumerate(sorted(set(keys)))}


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


def read_provenance(folder: Path, required: bool = False) -> dict[str, dict]:
    """``<folder>/PROVENANCE.jsonl`` rows by mirror path. Absent: ``{}``, or an
    :class:`InputError` when ``required``; a malformed line is an error naming it."""
    p = folder / "PROVENANCE.jsonl"
    if not p.is_file():
        if required:
            raise InputError(p, None, None, "PROVENANCE.jsonl missing: the upstream revision of "
                             "the annotation files is unknown", rule="MISSING_FILE")
        return {}
    out: dict[str, dict] = {}
    for no, row in iter_json_lines(p):
        if not isinstance(row.get("path"), str):
            raise InputError(p, no, "path", "missing or not a string", rule="PROVENANCE")
        out[row["path"]] = row
    return out


def provenance_commits(folder: Path) -> dict[str, str]:
    """``mirror path -> upstream commit`` from ``<folder>/PROVENANCE.jsonl`` ({} when absent)."""
    return {p: str(r["commit"]) for p, r in read_provenance(folder).items() if r.get("commit")}


def annotation_revision(folder: Path, name: str, cov: Coverage) -> str:
    """The upstream commit of annotation file ``name`` (``origin.revision`` of every record);
    ``"unknown"``, with a coverage note, when PROVENANCE.jsonl does not give it (the validator's
    REVISION_UNKNOWN rule then flags the records)."""
    rev = provenance_commits(folder).get(name)
    if not rev:
        cov.notes.append(f"no commit for {name} in PROVENANCE.jsonl: revision 'unknown'")
        return "unknown"
    return rev
