"""Whose card: a card follows what a system *is* (:func:`card_for`, from
:func:`membench.systems.identity.identify`), never its name. The registry is membench's: it is
looked up for membench's own systems (reference, library adapters, doubles) by the name
membench's code gives them; any other system has only the card it carries, and one that takes a
registry card's name is refused (:func:`registry_claim`).

The card itself (its shape, the registry's files, truncation) is :mod:`membench.systems.card`;
this module re-exports it, so ``membench.systems.cards`` gives the whole card API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .card import (
    _NAME,
    CARDS_DIR,
    MAX_INPUT_TOKENS,
    SIZE_CLASSES,
    Card,
    SourcePackage,
    applied_max_tokens,
    card_path,
    known_cards,
    load_card,
    read_card,
    size_class,
    truncation_record,
)
from .identity import MEMBENCH_KINDS, identify


def system_card(system: Any, cards_dir: Path | None = None) -> Card | None:
    """A system's card, by what it is (:func:`card_for`)."""
    return card_for(system, cards_dir=cards_dir)[0]


def card_for(
    system: Any, identity: dict[str, Any] | None = None, cards_dir: Path | None = None
) -> tuple[Card | None, str | None]:
    """``(card, why a card it carries was refused)`` of a system, from its identity
    (:func:`membench.systems.identity.identify`), never from its name alone:

    * membench's own systems (reference, library adapters, test doubles): their ``card``
      attribute, else the registry's ``bench/cards/<name>.json`` for the name membench's code
      gave them (how bm25, hybrid and the adapters get theirs);
    * any other system (a user module, a registered package, an HTTP service): the card it
      carries (a ``card`` attribute holding a :class:`Card`; an HTTP service's ``/card``
      answer), else none. A card it carries that takes a registry card's name (``hybrid``)
      is refused: that name is membench's own system's."""
    identity = identity or identify(system)
    own = getattr(system, "card", None)
    if not isinstance(own, Card):
        own = getattr(system, "model_card", None)
        own = own if isinstance(own, Card) else None
    if identity["kind"] in MEMBENCH_KINDS:
        if own is not None:
            return own, None
        name = getattr(system, "name", None)
        if isinstance(name, str) and _NAME.fullmatch(name) and card_path(name, cards_dir).is_file():
            return load_card(name, cards_dir), None
        return None, None
    if own is None:
        return None, None
    why = registry_claim(own.name, identity["kind"], cards_dir)
    return (None, why) if why else (own, None)


def registry_claim(card_name: str, kind: str, cards_dir: Path | None = None) -> str | None:
    """Why a card named ``card_name`` cannot belong to a system of ``kind`` (``None`` when it
    can): the registry's cards name membench's own systems."""
    if kind in MEMBENCH_KINDS or not isinstance(card_name, str) or not _NAME.fullmatch(card_name):
        return None
    path = card_path(card_name, cards_dir)
    if not path.is_file():
        return None
    return (
        f"card refused: it is named {card_name!r}, the name of a card of membench's own "
        f"registry ({path}), and this system is a {kind}, not membench's {card_name}; a "
        "card names what ran: give it a name of its own (docs/cards.md)"
    )


__all__ = [
    "CARDS_DIR",
    "Card",
    "MAX_INPUT_TOKENS",
    "SIZE_CLASSES",
    "SourcePackage",
    "applied_max_tokens",
    "card_for",
    "card_path",
    "known_cards",
    "load_card",
    "read_card",
    "registry_claim",
    "size_class",
    "system_card",
    "truncation_record",
]
