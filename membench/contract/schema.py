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

Modality = Literal[MODALITIES]  # the registered modalities (membench.modalities)
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
    source_id: str = Field(
        min_length=1, description="the source item (items.jsonl) the region is in"
    )
    region: dict[str, Any] = Field(
        description=(
            "where in the item, a JSON object whose shape the modality fixes (a page, a bounding "
            "box, a time span, a line, a turn)"
        )
    )
    grade: StrictInt | None = Field(
        default=None,
        ge=0,
        description=(
            "the upstream relevance grade, where the upstream grades (0 = irrelevant); null "
            "otherwise"
        ),
    )


class Scope(Strict):
    """Whose memory a query is asked of, and in what setting (SPEC §3; ``as_of``, the query's
    time, sits beside it on the record)."""

    holder: str = Field(
        min_length=1,
        description=(
            "whose memory: a system answers from this holder's items only (another holder's atom "
            "in the hits or the cartridge fails holder correctness)"
        ),
    )
    session: str | None = Field(
        default=None,
        description=(
            "the holder's session the question belongs to, where a source defines one; null "
            "otherwise (no source of the mirror sets it)"
        ),
    )
    scenario: str = Field(
        min_length=1,
        description=(
            "the kind of memory task, one per source family (document-qa, chart-image-qa, "
            "gui-grounding, ...): the same for every query of a source, so it tells a system "
            "nothing about a single query"
        ),
    )


class Origin(Strict):
    dataset: str = Field(min_length=1, description="the upstream dataset (owner/name)")
    revision: str = Field(min_length=1, description="the upstream revision (commit) read")
    item: str = Field(min_length=1, description="the upstream question's place in its file")
    license: str = Field(min_length=1, description="the upstream data's license")
    derived_from: str | None = Field(
        default=None,
        description=(
            "the query_id of the upstream question a derived unanswerable replaces; null otherwise"
        ),
    )
    derivation: Derivation | None = Field(
        default=None,
        description=(
            "how it was derived: transactive (asked of another holder) or temporal (asked before "
            "its evidence); null otherwise"
        ),
    )
    # Upstream evidence ids kept for native unanswerables (e.g. LoCoMo category 5): a known
    # distractor, never gold.
    distractor: list[Any] | None = Field(
        default=None,
        description=(
            "the evidence an unanswerable was written about (upstream's, or the gold of the "
            "question it was derived from): a known distractor, never gold"
        ),
    )
    notes: str | None = Field(default=None, description="what the adapter notes of the item")
    # set by the build on every unanswerable record, null on answerable ones (membench/sets/
    # tells.py): ``kind`` is "native" (upstream's own) or the derivation; ``audited`` says
    # whether the record is in the population the build's no-tells audit gates (every derived
    # record; a native unless its source's questions carry a tell of their own). Gated and
    # headline false recall count audited records only.
    kind: UnanswerableKind | None = Field(
        default=None,
        description=(
            "an unanswerable's kind: native (upstream's own), transactive or temporal; null on "
            "answerable records"
        ),
    )
    audited: bool | None = Field(
        default=None,
        description=(
            "whether the no-tells audit gates this unanswerable; null on answerable records"
        ),
    )

    @model_validator(mode="after")
    def _derived_pair(self) -> Origin:
        if (self.derived_from is None) != (self.derivation is None):
            raise ValueError("derived_from and derivation go together")
        if self.derivation is not None and self.kind not in (None, self.derivation):
            raise ValueError(f"kind {self.kind!r} differs from derivation {self.derivation!r}")
        if self.derivation is None and self.kind not in (None, "native"):
            raise ValueError(f"kind {self.kind!r} without derived_from and derivation")
        if (self.kind is None) != (self.audited is None):
            raise ValueError("kind and audited go together")
        return self


AS_OF = "the query's time (ISO 8601): a system answers from the holder's items observed up to it"
SPLIT = "dev or test, by holder (no holder spans both); the test split is frozen"


class RecordDraft(Strict):
    """An annotation record as a source adapter produces it, before the build assigns
    ``as_of`` and ``split``."""

    query_id: Identifier = Field(description="<source key>:<upstream id>, unique over the sets")
    modality: Modality = Field(description="the modality of the items the question is about")
    question: str = Field(min_length=1, description="the question as a system is asked it")
    answer: Any = Field(
        default=None,
        description=(
            "the upstream answer, a JSON value of the type answer_format names; null when "
            "unanswerable"
        ),
    )
    answer_format: AnswerFormat = Field(
        description="the answer's type: str, int, float, list or none"
    )
    gold: list[Gold] = Field(
        description=(
            "the regions of source items that answer the question; empty when unanswerable"
        )
    )
    judgments: dict[str, list[Gold]] | None = Field(
        default=None,
        description=(
            "other judgment sets by name (a JSON object name -> regions), where the upstream "
            "judges otherwise too; null otherwise"
        ),
    )
    scope: Scope = Field(description="whose memory the question is asked of, and in what setting")
    as_of: Timestamp | None = Field(default=None, description=AS_OF)
    unanswerable: StrictBool = Field(
        description=(
            "true when nothing the holder has seen by as_of answers it (upstream's own, or derived)"
        )
    )
    origin: Origin = Field(description="where the record comes from upstream, and its license")
    split: Split | None = Field(default=None, description=SPLIT)

    @field_validator("as_of")
    @classmethod
    def _as_of_aware(cls, v: datetime | None) -> datetime | None:
        return None if v is None else _aware(v)

    @model_validator(mode="after")
    def _shape(self) -> RecordDraft:
        for name, golds in [
            ("gold", self.gold),
            *((f"judgments.{k}", v) for k, v in (self.judgments or {}).items()),
        ]:
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

    as_of: Timestamp = Field(description=AS_OF)
    split: Split = Field(description=SPLIT)

    @model_validator(mode="after")
    def _no_repeated_region(self) -> AnnotationRecord:
        for name, golds in [
            ("gold", self.gold),
            *((f"judgments.{k}", v) for k, v in (self.judgments or {}).items()),
        ]:
            for i, j in repeated_regions([(g.source_id, g.region) for g in golds]):
                raise ValueError(
                    f"{name}[{j}] repeats {name}[{i}] (the same source_id and "
                    "region): a gold region is listed once"
                )
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

    source_id: str = Field(min_length=1, description="<source key>:<upstream id>, unique")
    modality: Modality = Field(description="the item's modality")
    holder: str = Field(min_length=1, description="whose memory holds the item")
    observed_at: Timestamp = Field(description="when the holder saw the item (ISO 8601)")
    path: str | None = Field(
        default=None,
        description=("the item's file, relative to the corpus root; null when content is set"),
    )
    content: Any = Field(
        default=None,
        description=("the item itself (a JSON value) when it has no file; null otherwise"),
    )
    meta: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "a JSON object of what the harness needs to resolve regions (pages, size, duration, "
            "lines), never gold"
        ),
    )

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
    def _one_payload(self) -> SourceItem:
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
