"""The text membench reads for an atom extent or a gold region: the content, never
:attr:`membench.contract.protocol.Atom.text` (docs/metrics.md, "The text of an extent", says
why and what a cold cache costs).

Start at :class:`ExtentText`: :meth:`~ExtentText.text` (what an atom hands over, counted by the
context cost) and :meth:`~ExtentText.answer_text` (the same without what a model generated,
:data:`GENERATED`: a conversation turn's image caption; read by the answer layer).
:meth:`~ExtentText.available` says whether an item's text can be had without running OCR or a
PDF's text extraction. Each extent is checked against its modality's atom-extent or gold-region
shapes first (``ValueError``). The text per modality is a reference atom's
(:mod:`membench.content`, same :class:`~membench.content.ChunkConfig`):

* ``pdf``: the page's text layer, else its OCR; a ``block`` reads its whole page; past the end "";
* ``image``: its OCR text in reading order; ``ui_screenshot``: the OCR lines (above the
  confidence cut) whose boxes meet the ``bbox`` with positive area, in reading order;
* ``video``: the caption cues overlapping ``[t_start, t_end]`` for longer than 0 s (a cue of no
  length: when inside), one a line;
* ``code``: lines ``line_start..line_end`` or ``line`` (as ``meta.lines`` counts them); a
  ``symbol``: the lines of the reference chunker's ranges that declare it
  (:func:`~membench.content.code.code_ranges`), "" when none does; ``path`` is not read;
* ``conversation``: turns ``turn_start..turn_end`` (or ``turn``) as ``speaker: text`` with any
  shared image's caption (:func:`~membench.content.conversation.turn_line`); no session date.

Reads the item files under the corpus and the content cache (``cache_dir("ocr")``,
``cache_dir("pdftext")``); a cold cache runs OCR and fills it. Each item is read once per object.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import modalities
from ..content import ChunkConfig
from ..content import ocr as _ocr
from ..content import pdf as _pdf
from ..content import video as _video
from ..content.code import code_ranges, read_lines
from ..content.common import item_file
from ..content.conversation import turn_line
from ..content.image import chunk_image
from ..contract.schema import SourceItem
from ..core.errors import MembenchError
from ..core.jsonl import read_models


class _Pages:
    """A PDF's pages, read as the reference page atoms read them."""

    def __init__(self, item: SourceItem, root: Path, config: ChunkConfig) -> None:
        self.pages = {a.extent["page"]: a.text for a in _pdf.chunk_pdf(item, root, config)}

    def text(self, extent: dict) -> str:
        return self.pages.get(extent["page"], "")

    @staticmethod
    def ocr_sources(item: SourceItem, root: Path, config: ChunkConfig) -> list[str] | None:
        """The OCR sources of the pages without a text layer; None when the text layer itself
        is not cached (reading it is a run's work, never the scorer's)."""
        f = item_file(item, root)
        texts = _pdf.cached_page_texts(f)
        if texts is None:
            return None
        return [_ocr.page_source(f, p) for p in _pdf.pages_without_text(item, texts, config)]


class _Image:
    """A whole image's OCR text."""

    def __init__(self, item: SourceItem, root: Path, config: ChunkConfig) -> None:
        self.whole = chunk_image(item, root, config)[0].text

    def text(self, extent: dict) -> str:
        return self.whole

    @staticmethod
    def ocr_sources(item: SourceItem, root: Path, config: ChunkConfig) -> list[str]:
        return [str(item_file(item, root))]


def _intersects(box: tuple[float, ...] | list[float], bbox: list[float]) -> bool:
    """The two boxes ``[x0, y0, x1, y1]`` share an area larger than 0."""
    return min(box[2], bbox[2]) > max(box[0], bbox[0]) and min(box[3], bbox[3]) > max(
        box[1], bbox[1]
    )


class _Screen:
    """A screenshot's OCR lines with their boxes."""

    def __init__(self, item: SourceItem, root: Path, config: ChunkConfig) -> None:
        res = _ocr.ocr_image(
            item_file(item, root),
            upscale_min_side=config.ocr_upscale_min_side,
            engine=config.ocr_engine,
        )
        self.lines = res.kept(config.ocr_min_confidence)

    def text(self, extent: dict) -> str:
        bbox = [float(v) for v in extent["bbox"]]
        return _ocr.ocr_text([ln for ln in self.lines if _intersects(ln.box, bbox)])

    ocr_sources = _Image.ocr_sources


class _Cues:
    """A video's caption cues ``(start, end, text)``."""

    def __init__(self, item: SourceItem, root: Path, config: ChunkConfig) -> None:
        self.cues = _video._cues(item)

    def text(self, extent: dict) -> str:
        t0, t1 = float(extent["t_start"]), float(extent["t_end"])
        return "\n".join(
            t for s, e, t in self.cues if (s < t1 and e > t0) or (s == e and t0 <= s <= t1)
        )

    @staticmethod
    def ocr_sources(item: SourceItem, root: Path, config: ChunkConfig) -> list[str]:
        return []


class _Lines:
    """A source file's lines (and, for symbol regions, the reference chunker's ranges)."""

    def __init__(self, item: SourceItem, root: Path, config: ChunkConfig) -> None:
        self.lines = read_lines(item_file(item, root))
        self.language = str(item.meta.get("language") or "").lower()
        self.config = config

    def text(self, extent: dict) -> str:
        if "symbol" in extent and "line_start" not in extent:
            spans = [
                (a, b)
                for a, b, sym in code_ranges(self.lines, self.language, self.config)
                if sym == extent["symbol"]
            ]
        else:
            line = extent.get("line")
            spans = [(extent.get("line_start", line), extent.get("line_end", line))]
        return "\n".join(ln.rstrip("\r") for a, b in spans for ln in self.lines[a - 1 : b])

    ocr_sources = _Cues.ocr_sources


class _Turns:
    """A session's turns by their own numbers, as the reference chunker numbers them."""

    def __init__(self, item: SourceItem, root: Path, config: ChunkConfig) -> None:
        turns = [t for t in (item.content or []) if isinstance(t, dict)]
        self.turns: list[tuple[int, str, str]] = []
        for i, t in enumerate(turns, 1):
            n = t.get("turn", i)
            ok = isinstance(n, int) and not isinstance(n, bool) and n >= 1
            said = {k: v for k, v in t.items() if k not in GENERATED["conversation"]}
            self.turns.append((n if ok else i, turn_line(t), turn_line(said)))
        self.turns.sort(key=lambda x: x[0])

    def _lines(self, extent: dict, which: int) -> str:
        a = extent.get("turn_start", extent.get("turn"))
        b = extent.get("turn_end", extent.get("turn"))
        return "\n".join(t[which] for t in self.turns if a <= t[0] <= b)

    def text(self, extent: dict) -> str:
        return self._lines(extent, 1)

    def answer_text(self, extent: dict) -> str:
        return self._lines(extent, 2)

    ocr_sources = _Cues.ocr_sources


#: per modality, the fields of its content that a model generated about it rather than the
#: source saying it, and what they are: in the text handed over (and its tokens), never in the
#: answer text (:meth:`ExtentText.answer_text`). A modality not named has none.
GENERATED: dict[str, dict[str, str]] = {
    "conversation": {
        "image_caption": "a shared image's caption, written by an image "
        'captioning model (LoCoMo\'s blip_caption: "a photography of ..."), not '
        "by the speakers"
    }
}

#: the reader of each modality's content (what :class:`ExtentText` keeps per item)
READERS: dict[str, Callable[..., Any]] = {
    "pdf": _Pages,
    "image": _Image,
    "ui_screenshot": _Screen,
    "video": _Cues,
    "code": _Lines,
    "conversation": _Turns,
}


def check_shape(modality: str, extent: Any) -> None:
    """``ValueError`` unless ``extent`` is an atom extent or a gold region of ``modality``."""
    as_region = modalities.check_region(modality, extent)
    if as_region is not None and modalities.check_extent(modality, extent) is not None:
        raise ValueError(f"neither an atom extent nor a gold region: {as_region}")


class ExtentText:
    """The content text of extents of the items of one sets folder (``items.jsonl``), read
    from the corpus under ``corpus_root`` with ``config`` (the reference systems' chunking
    settings by default)."""

    def __init__(
        self, sets_dir: str | Path, corpus_root: str | Path, config: ChunkConfig | None = None
    ) -> None:
        self.sets_dir = Path(sets_dir)
        self.corpus_root = Path(corpus_root)
        self.config = config or ChunkConfig()
        self._items: dict[str, SourceItem] | None = None
        self._read: dict[str, Any] = {}

    def item(self, source_id: str) -> SourceItem:
        """The item ``source_id`` of ``items.jsonl`` (a :class:`MembenchError` when there is
        none)."""
        if self._items is None:
            self._items = {
                it.source_id: it for it in read_models(self.sets_dir / "items.jsonl", SourceItem)
            }
        try:
            return self._items[source_id]
        except KeyError:
            raise MembenchError(
                f"{source_id!r} is not an item of {self.sets_dir / 'items.jsonl'}"
            ) from None

    def text(self, source_id: str, extent: dict[str, Any]) -> str:
        """The content text of ``extent`` (an atom extent or a gold region) of the item
        (module docstring); may run OCR when the cache is cold (:meth:`available`)."""
        return self._doc(source_id, extent).text(extent)

    def _doc(self, source_id: str, extent: dict[str, Any]) -> Any:
        """The item's reader (made once), after checking ``extent``'s shape."""
        it = self.item(source_id)
        check_shape(it.modality, extent)
        doc = self._read.get(source_id)
        if doc is None:
            doc = self._read[source_id] = READERS[it.modality](it, self.corpus_root, self.config)
        return doc

    def answer_text(self, source_id: str, extent: dict[str, Any]) -> str:
        """The text of ``extent`` the answer is looked for in: :meth:`text` without the fields
        :data:`GENERATED` names for the item's modality (the same text where it names none)."""
        doc = self._doc(source_id, extent)
        answer_text = getattr(doc, "answer_text", None)
        return doc.text(extent) if answer_text is None else answer_text(extent)

    def available(self, source_id: str) -> bool:
        """Whether the item's text can be read without running OCR: already read here, or
        every image and PDF page of it that needs OCR is in the OCR cache."""
        if source_id in self._read:
            return True
        it = self.item(source_id)
        c = self.config
        memo: dict[Path, str] = {}
        sources = READERS[it.modality].ocr_sources(it, self.corpus_root, c)
        if sources is None:  # a PDF whose text layer no run has cached
            return False
        return all(
            _ocr.cache_path(
                _ocr.source_sha(src, c.pdf_ocr_dpi, memo), c.ocr_upscale_min_side, c.ocr_engine
            ).is_file()
            for src in sources
        )


__all__ = ["GENERATED", "READERS", "ExtentText", "check_shape"]
