"""The modality interface: everything membench knows about one kind of source item.

A modality owns, in one module (see :mod:`membench.modalities`):

* the **region** shapes a gold annotation may take (SPEC section 5) and their value checks;
* the **extent** shapes an atom may declare (the run contract, ``docs/runs.md``);
* the **cap** on one atom's extent (SPEC section 6: whole-file atoms cannot score) and the
  check of an extent against its item (cap and bounds);
* the **bounds** check of a gold region against its item (validator rule GOLD_OUT_OF_BOUNDS);
* the **overlap rule** (SPEC section 7: when an atom *hits* a gold region), once for a pair
  (:meth:`Modality.hit`) and once vectorised over many atoms (:meth:`Modality.columns`,
  :meth:`Modality.hit_mask`); tests check that the two agree;
* **structural extents**: atoms from item structure alone (the test doubles' memory), and the
  extents that cover a gold region within the cap (the oracle);
* **near-duplicate evidence** (the build's guard on derived unanswerables,
  :mod:`membench.sets.neardup`): whether items are compared by picture or by text, and the
  part of an item's upstream text that holds a gold region;
* the **renderer** that shows a region as it is, for the failure browser.

Nothing here knows about runs, records or systems: callers hand in plain dicts (an extent, a
region, an ``items.jsonl`` row or its ``meta``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..core.links import esc
from ..core.paths import confine

Shapes = tuple[frozenset[str], ...]

HL = ' class="mb-hl"'


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def is_int(v: Any) -> bool:
    """An ``int`` (not a bool) within the signed 64-bit range: extents and regions become
    int64 numpy columns, and a larger JSON integer must be an error there, not an overflow."""
    return isinstance(v, int) and not isinstance(v, bool) and INT64_MIN <= v <= INT64_MAX


def is_num(v: Any) -> bool:
    """A finite float, or an :func:`is_int` integer."""
    return is_int(v) or (isinstance(v, float) and math.isfinite(v))


def shape_error(what: str, modality: str, shapes: Shapes, obj: Any) -> str | None:
    """``None`` when ``obj`` is a dict whose key set is one of ``shapes``; else why not."""
    if not isinstance(obj, dict):
        return f"{what} must be an object, got {type(obj).__name__}"
    keys = frozenset(obj)
    if keys not in shapes:
        want = " or ".join("{" + ", ".join(sorted(s)) + "}" for s in shapes)
        return f"{modality} {what} must have keys {want}, got {{{', '.join(sorted(keys))}}}"
    return None


@dataclass(frozen=True)
class RenderContext:
    """What a renderer needs besides the item and the extent.

    ``kind``: ``"atom"`` (a returned atom's extent), ``"gold"`` or ``"original"`` (a gold
    region of the item, or of the query an unanswerable item derives from). ``gold`` and
    ``original`` are the regions of those kinds *on the same item*, to mark too; ``others``
    are more atom extents of the same item to outline (screenshots). ``link_hosts``: the hosts
    a URL from data may be a live link to (``https`` only; :func:`membench.core.links.external`);
    None, the default: every such URL is shown as text."""

    corpus_root: Path | None = None
    kind: str = "atom"
    gold: Sequence[dict] = ()
    original: Sequence[dict] = ()
    others: Sequence[dict] = ()
    link_hosts: frozenset[str] | None = None


class RenderUnavailable(Exception):
    """The region cannot be drawn (no renderer, file missing, unreadable file)."""


def missing_html(msg: str) -> str:
    return f'<div class="mb-missing">{esc(msg)}</div>'


def short_json(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def item_file(item: dict, corpus_root: Path | None) -> Path:
    """The file of an ``items.jsonl`` row under the corpus root (for renderers), confined to it
    (:func:`membench.core.paths.confine`: a path that leaves the root, symlinks resolved, is an
    ``InputError``, never read). Reads file-system metadata only."""
    if corpus_root is None:
        raise RenderUnavailable("no corpus root: the source file cannot be shown")
    if not item.get("path"):
        raise RenderUnavailable(f"{item.get('source_id')} has no file")
    return confine(corpus_root, item["path"], field=f"{item.get('source_id')}.path")


class Modality:
    """One modality (subclass per module; instances are registered by :attr:`name`)."""

    name: ClassVar[str]
    #: key sets a gold region may have (exactly one must match)
    region_shapes: ClassVar[Shapes]
    #: key sets an atom extent may have
    extent_shapes: ClassVar[Shapes]
    #: the largest extent one atom may cover (printed in reports and meta.json)
    cap: ClassVar[dict[str, float]]
    #: one line each, for docs and reports
    region_doc: ClassVar[str]
    extent_doc: ClassVar[str]
    hit_doc: ClassVar[str]
    #: how near-duplicate evidence is found: ``"phash"`` (pictures: perceptual hash of the
    #: file) or ``"text"`` (the adapters' upstream text of each item)
    near_duplicate: ClassVar[str] = "text"

    #: ``items.jsonl`` meta keys the harness reads (bounds, caps, renderers) and their kind:
    #: ``"size"`` an integer >= 1, ``"count"`` an integer >= 0 (both within 64 bits),
    #: ``"seconds"`` a finite number >= 0, ``"text"`` a string. Other keys are free.
    meta_types: ClassVar[dict[str, str]] = {}
    #: keys that are present together or not at all (a width needs its height)
    meta_together: ClassVar[tuple[frozenset[str], ...]] = ()
    #: where the words of an item of this modality come from, for the ``text_source`` slice
    #: (:mod:`membench.analysis.frames`); :meth:`text_source` may refine it per item
    words_from: ClassVar[str] = "content"

    def text_source(self, meta: dict) -> str:
        """Where the words of an item with this ``meta`` come from (a slice label)."""
        return self.words_from

    # ---------------------------------------------------------------- shapes and bounds

    def check_meta(self, meta: Any) -> str | None:
        """``None`` when an item's ``meta`` gives every key of :attr:`meta_types` it has the
        right kind (and :attr:`meta_together` keys together); else why not. Bounds and caps
        compare against these values, so a ``null`` page count must be an error here."""
        if not isinstance(meta, dict):
            return f"meta must be an object, got {type(meta).__name__}"
        for group in self.meta_together:
            if 0 < len(group & set(meta)) < len(group):
                return f"meta keys {', '.join(sorted(group))} go together"
        for k, kind in self.meta_types.items():
            if k not in meta:
                continue
            v = meta[k]
            ok = {
                "size": lambda v: is_int(v) and v >= 1,
                "count": lambda v: is_int(v) and v >= 0,
                "seconds": lambda v: is_num(v) and v >= 0,
                "text": lambda v: isinstance(v, str),
            }[kind](v)
            if not ok:
                want = {
                    "size": "an integer >= 1",
                    "count": "an integer >= 0",
                    "seconds": "a finite number >= 0",
                    "text": "a string",
                }[kind]
                return f"meta.{k} must be {want} (64-bit), got {str(v)[:40]!r}"
        return None

    def check_region(self, region: Any) -> str | None:
        """``None`` when ``region`` has a gold-region shape of this modality; else why not."""
        return shape_error("region", self.name, self.region_shapes, region) or self.region_values(
            region
        )

    def region_values(self, region: dict) -> str | None:
        return None

    def check_extent(self, extent: Any) -> str | None:
        """``None`` when ``extent`` has an atom-extent shape of this modality; else why not.
        (The cap is :meth:`extent_limits`' business.)"""
        return shape_error("extent", self.name, self.extent_shapes, extent) or self.extent_values(
            extent
        )

    def extent_values(self, extent: dict) -> str | None:
        return None

    def region_bounds(self, region: dict, meta: dict) -> str | None:
        """A well-formed gold region against its item's ``meta`` (page count, image size,
        duration, line count, turns): ``None`` when inside, else why not."""
        return None

    def extent_limits(self, extent: dict, meta: dict) -> str | None:
        """A well-formed atom extent against the cap and its item's ``meta``."""
        return None

    # ---------------------------------------------------------------- overlap

    def hit(self, extent: dict, region: dict) -> bool:
        """Does an atom with ``extent`` overlap gold ``region`` (same source item)?"""
        raise NotImplementedError

    def columns(self, extents: Sequence[dict]) -> Any:
        """The extents of many atoms as numpy columns, for :meth:`hit_mask`."""
        raise NotImplementedError

    def hit_mask(self, cols: Any, rows: np.ndarray, region: dict) -> np.ndarray:
        """:meth:`hit` for the atoms at ``rows`` of ``cols`` at once (a bool array)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- structure

    def structural_extents(self, item: Any) -> list[dict]:
        """Atom extents from the item's structure alone (a ``SourceItem``), within the cap."""
        raise NotImplementedError

    def gold_extents(self, region: dict) -> list[dict]:
        """Atom extents, within the cap, that together cover gold ``region`` (the oracle's
        memory); ``[]`` when a region cannot be covered without reading content."""
        return [dict(region)]

    def region_text(self, region: dict, text: str, meta: dict) -> str | None:
        """The part of an item's upstream ``text`` that holds gold ``region``, when the
        text's structure shows it (``None`` otherwise); ``meta`` is the item's."""
        return None

    def passages(self, text: str, meta: dict) -> list[str]:
        """An item's upstream ``text`` cut into the pieces one piece of evidence fits in (the
        build's anchor guard asks whether one of them holds a question's words): the whole
        text by default."""
        return [text]

    # ---------------------------------------------------------------- display

    def render_html(self, item: dict, extent: dict, ctx: RenderContext) -> str:
        """The region ``extent`` (an atom extent or a gold region) of ``item`` (an
        ``items.jsonl`` row) as HTML; every text escaped, pictures as ``data:`` URIs. May
        raise :class:`RenderUnavailable`."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<modality {self.name}>"
