"""Pydantic models for everything membench reads or writes as JSON lines.

The contract is ``SPEC.md`` section 5: annotation records (``bench/sets/<modality>.jsonl``),
source items (``bench/sets/items.jsonl``) and the corpus manifest
(``bench/corpus/manifest.jsonl``). Every model forbids unknown fields so that a typo in a
hand-edited file is an error, not a silently ignored key.

Region shapes depend on the modality: :func:`membench.modalities.check_region` enforces them
for gold (each modality's module owns its shapes).

Types are strict where a coercion would hide an error: ``"unanswerable": "false"`` or ``1`` is
not a bool, ``"grade": "2"`` or ``2.0`` is not an int (pydantic's strict mode for those fields;
https://docs.pydantic.dev/latest/concepts/strict_mode/). An item ``path`` must be relative to
the corpus root without ``..`` (:func:`membench.core.paths.path_shape_problem`); where the root
is known, :func:`membench.core.paths.confine` also resolves symlinks.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

from .. import modalities
from ..core.ids import id_problem
from ..core.paths import path_shape_problem
from ..core.times import timestamp_problem
from ..modalities import MODALITIES, check_region

Modality = Literal[MODALITIES]   # the registered modalities (membench.modalities)
Split = Literal["dev", "test"]
AnswerFormat = Literal["str", "int", "float", "list", "none"]
Derivation = Literal["transactive", "temporal"]
UnanswerableKind = Literal["native", "transactive", "temporal"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


def _aware(v: datetime) -> datetime:
    if v.tzinfo is None or v.utcoffset() is None:
        raise ValueError("timestamp must carry a timezone (ISO 8601 with offset)")
    return v


def _iso_text(v: Any) -> Any:
    # pydantic would read a bare number as Unix seconds; the sets hold ISO 8601 text only
    if not isinstance(v, (str, datetime)):
        raise ValueError("timestamp must be an ISO 8601 string with a timezone")
    return v


def _in_range(v: datetime) -> datetime:
    why = timestamp_problem(v)
    if why:
        raise ValueError(why)
    return v


def _identifier(v: str) -> str:
    why = id_problem(v)
    if why:
        raise ValueError(why)
    return v


#: ISO 8601 text in the range membench reads (:mod:`membench.core.times`)
Timestamp = Annotated[datetime, BeforeValidator(_iso_text), AfterValidator(_in_range)]
#: an identifier (:mod:`membench.core.ids`: printable, no whitespace, at most 256 characters)
Identifier = Annotated[str, AfterValidator(_identifier)]


def iso(dt: datetime) -> str:
    """Canonical text form for timestamps in built files."""
    return _aware(dt).isoformat()


# --------------------------------------------------------------------------- records


class Gold(Strict):
    source_id: str = Field(min_length=1)
    region: dict[str, Any]
    grade: StrictInt | None = Field(default=None, ge=0)


class Scope(Strict):
    """Whose memory a query is asked of, and in what setting (SPEC §3; ``as_of``, the query's
    time, sits beside it on the record)."""

    holder: str = Field(min_length=1, description=(
        "whose memory: a system answers from this holder's items only (another holder's atom "
        "in the hits or the cartridge fails holder correctness)"))
    session: str | None = Field(default=None, description=(
        "the holder's session the question belongs to, where a source defines one; null "
        "otherwise (no source of the mirror sets it)"))
    scenario: str = Field(min_length=1, description=(
        "the kind of memory task, one per source family (document-qa, chart-image-qa, "
        "gui-grounding, ...): the same for every query of a source, so it tells a system "
        "nothing about a single query"))


class Origin(Strict):
    dataset: str = Field(min_length=1)
    revision: str = Field(min_length=1)
    item: str = Field(min_length=1)
    license: str = Field(min_length=1)
    derived_from: str | None = None
    derivation: Derivation | None = None
    # Upstream evidence ids kept for native unanswerables (e.g. LoCoMo category 5): a known
    # distractor, never gold.
    distractor: list[Any] | None = None
    notes: str | None = None
    # set by the build on every unanswerable record, null on answerable ones (membench/sets/
    # tells.py): ``kind`` is "native" (upstream's own) or the derivation; ``audited`` says
    # whether the record is in the population the build's no-tells audit gates (every derived
    # record; a native unless its source's questions carry a tell of their own). Gated and
    # headline false recall count audited records only.
    kind: UnanswerableKind | None = None
    audited: bool | None = None

    @model_validator(mode="after")
    def _derived_pair(self) -> "Origin":
        if (self.derived_from is None) != (self.derivation is None):
            raise ValueError("derived_from and derivation go together")
        if self.derivation is not None and self.kind not in (None, self.derivation):
            raise ValueError(f"kind {self.kind!r} differs from derivation {self.derivation!r}")
        if self.derivation is None and self.kind not in (None, "native"):
            raise ValueError(f"kind {self.kind!r} without derived_from and derivation")
        if (self.kind is None) != (self.audited is None):
            raise ValueError("kind and audited go together")
        return self


class RecordDraft(Strict):
    """An annotation record as a source adapter produces it, before the build assigns
    ``as_of`` and ``split``."""

    query_id: Identifier
    modality: Modality
    question: str = Field(min_length=1)
    answer: Any = None
    answer_format: AnswerFormat
    gold: list[Gold]
    judgments: dict[str, list[Gold]] | None = None
    scope: Scope
    as_of: Timestamp | None = None
    unanswerable: StrictBool
    origin: Origin
    split: Split | None = None

    @field_validator("as_of")
    @classmethod
    def _as_of_aware(cls, v: datetime | None) -> datetime | None:
        return None if v is None else _aware(v)

    @model_validator(mode="after")
    def _shape(self) -> "RecordDraft":
        for name, golds in [("gold", self.gold), *((f"judgments.{k}", v) for k, v in (self.judgments or {}).items())]:
            for i, g in enumerate(golds):
                why = check_region(self.modality, g.region)
                if why:
                    raise ValueError(f"{name}[{i}].region: {why}")
        if self.unanswerable and self.answer is not None:
            raise ValueError("answer must be null when unanswerable")
        if not self.unanswerable and self.origin.kind is not None:
            raise ValueError("origin.kind is set on an answerable record")
        return self


class AnnotationRecord(RecordDraft):
    """One line of ``bench/sets/<modality>.jsonl`` (SPEC section 5). A gold region listed twice
    in one list (``gold``, or one judgment set) is refused (:func:`repeated_regions`): it would
    count twice in the denominator of every recall."""

    as_of: Timestamp
    split: Split

    @model_validator(mode="after")
    def _no_repeated_region(self) -> "AnnotationRecord":
        for name, golds in [("gold", self.gold),
                            *((f"judgments.{k}", v) for k, v in (self.judgments or {}).items())]:
            for i, j in repeated_regions([(g.source_id, g.region) for g in golds]):
                raise ValueError(f"{name}[{j}] repeats {name}[{i}] (the same source_id and "
                                 "region): a gold region is listed once")
        if self.unanswerable and self.origin.kind is None:
            # a record written without them (a user's set, a test's): what the build writes
            from .tells import labels
            kind, audited = labels(self.query_id.split(":", 1)[0], self.origin.derivation)
            self.origin.kind, self.origin.audited = kind, audited
        return self


def repeated_regions(golds: list[tuple[Any, Any]]) -> list[tuple[int, int]]:
    """``(first, again)`` index pairs of the (source_id, region) pairs of ``golds`` listed
    more than once (regions compared as canonical JSON)."""
    import json

    first: dict[str, int] = {}
    out = []
    for j, (sid, region) in enumerate(golds):
        try:
            key = json.dumps([sid, region], sort_keys=True, separators=(",", ":"))
        except (TypeError, ValueError):
            continue
        if key in first:
            out.append((first[key], j))
        else:
            first[key] = j
    return out


class SourceItem(Strict):
    """One line of ``bench/sets/items.jsonl``: what a system ingests.

    Exactly one of ``path`` (relative to the corpus root) and ``content`` is set. ``meta``
    carries what the harness needs to resolve and display regions (page count, image size,
    duration, line count), never gold.
    """

    source_id: str = Field(min_length=1)
    modality: Modality
    holder: str = Field(min_length=1)
    observed_at: Timestamp
    path: str | None = None
    content: Any = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("observed_at")
    @classmethod
    def _aware(cls, v: datetime) -> datetime:
        return _aware(v)

    @field_validator("path")
    @classmethod
    def _relative_path(cls, v: str | None) -> str | None:
        why = None if v is None else path_shape_problem(v)
        if why:
            raise ValueError(why)
        return v

    @model_validator(mode="after")
    def _one_payload(self) -> "SourceItem":
        if (self.path is None) == (self.content is None):
            raise ValueError("exactly one of path and content must be set")
        why = modalities.get(self.modality).check_meta(self.meta)
        if why:
            raise ValueError(why)
        return self


# --------------------------------------------------------------------------- manifest


class ManifestFile(Strict):
    path: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: StrictInt = Field(ge=0)
    upstream_repo: str | None = None
    commit: str | None = None
    upstream_path: str | None = None
    note: str | None = None


class ManifestEntry(Strict):
    """One line of ``bench/corpus/manifest.jsonl``: one mirrored source."""

    source: str = Field(min_length=1)
    name: str
    modality: Modality
    url: str
    revision: str
    revisions: list[str]
    retrieved_at: str
    annotation_source: str
    license: str
    files: list[ManifestFile]
