"""The modalities membench knows, one module each, behind one interface and a registry.

=================  =====================================================================
module             what it owns
=================  =====================================================================
:mod:`.base`       the :class:`Modality` interface, shared shape checks, render helpers
:mod:`.pdf`        pages (and blocks) of a PDF
:mod:`.image`      whole images
:mod:`.ui_screenshot`  boxes on a screenshot
:mod:`.video`      time spans of a video, shown through its captions
:mod:`.code`       functions and lines of source files
:mod:`.conversation`  turns of a dialogue session
:mod:`.render`     pictures shared by the renderers (PDF pages, images, boxes)
=================  =====================================================================

Schema, validator, systems, metrics and the failure browser ask :func:`get` instead of
branching on a modality's name. Adding a modality is one new module (a :class:`Modality`
subclass) plus one line in :data:`_ALL` below, plus its tests.
"""

from __future__ import annotations

from typing import Any

from .base import Modality, RenderContext, RenderUnavailable
from .code import Code
from .conversation import Conversation
from .image import Image
from .pdf import Pdf
from .ui_screenshot import UiScreenshot
from .video import Video

# the registry, in the order reports list modalities
_ALL: tuple[Modality, ...] = (Pdf(), Image(), UiScreenshot(), Video(), Code(), Conversation())
REGISTRY: dict[str, Modality] = {m.name: m for m in _ALL}

#: modality names in report order
MODALITIES: tuple[str, ...] = tuple(REGISTRY)

#: the largest extent one atom may cover, per modality (SPEC section 6)
EXTENT_CAPS: dict[str, dict[str, float]] = {m.name: dict(m.cap) for m in _ALL}


class UnknownModality(ValueError):
    pass


def get(name: str) -> Modality:
    """The registered modality called ``name`` (:class:`UnknownModality` if none)."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownModality(f"unknown modality {name!r}") from None


def check_region(modality: str, region: Any) -> str | None:
    """``None`` when ``region`` has a gold-region shape of ``modality``; else a one-line
    reason naming the offending key."""
    m = REGISTRY.get(modality) if isinstance(modality, str) else None
    return f"unknown modality {modality!r}" if m is None else m.check_region(region)


def check_extent(modality: str, extent: Any) -> str | None:
    """``None`` when ``extent`` has an atom-extent shape of ``modality``; else why not."""
    m = REGISTRY.get(modality) if isinstance(modality, str) else None
    return f"unknown modality {modality!r}" if m is None else m.check_extent(extent)


def region_hit(modality: str, extent: dict[str, Any], region: dict[str, Any]) -> bool:
    """Does an atom with ``extent`` overlap gold ``region`` (both of ``modality``, both of the
    same source item)? The one-pair definition of SPEC section 7."""
    return get(modality).hit(extent, region)


__all__ = [
    "EXTENT_CAPS",
    "MODALITIES",
    "REGISTRY",
    "Modality",
    "RenderContext",
    "RenderUnavailable",
    "UnknownModality",
    "check_extent",
    "check_region",
    "get",
    "region_hit",
]
