"""Near-duplicate evidence: may another item of a memory answer a question in place of its gold?

A derived unanswerable (:mod:`membench.sets.derive`) is only unanswerable if the memory it is
asked of holds nothing that answers it. Byte-identical duplicates are merged by the adapters;
this module finds the near ones:

* **images**: the perceptual hash (DCT hash, ``imagehash.phash``, 64 bits; Zauner, 2010) of
  each image; two images are near-duplicates when the Hamming distance of their hashes is at
  most :data:`PHASH_MAX_DISTANCE`. On the mirror's FinChart and TabMWP images this flags the
  same chart saved under another file name (distance 4) and tables of one template with other
  numbers (a question about "Balloons sold" is answerable from either), and no pair further
  apart than 6 that looked alike by eye. Hashes are cached by the image's sha256 under
  ``$MEMBENCH_CACHE/phash`` (they depend on the decoded pixels only).
* **text** (every other modality; the adapters' upstream text of each item): the text is
  normalised (:func:`normalise`: lower case, every run of characters other than letters and
  digits one space). Where the modality shows which part of an item's text holds a gold
  region (:meth:`membench.modalities.Modality.region_text`: a PDF page's text layer, a
  conversation turn, the first lines of a function) and that part has at least
  :data:`MIN_REGION_CHARS` characters, an item that contains it verbatim is a near-duplicate;
  otherwise (caption tracks, short regions) an item that contains at least
  :data:`SHINGLE_CONTAINMENT` of the gold item's word 5-grams is.

Reads image files under the corpus root (and the hash cache); writes only the cache.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core import content_guard as guard
from ..core.jsonl import sha256_file
from ..core.paths import cache_dir

PHASH_MAX_DISTANCE = 6
SHINGLE = 5
SHINGLE_CONTAINMENT = 0.8
MIN_REGION_CHARS = 40
_NON_ALNUM = re.compile(r"[\W_]+", re.UNICODE)


def normalise(text: str) -> str:
    """Lower case, every run of characters that are not letters or digits one space."""
    return _NON_ALNUM.sub(" ", text.lower()).strip()


def shingles(text: str) -> frozenset[int]:
    """Hashes of the word 5-grams of normalised ``text`` (the whole text when shorter)."""
    words = normalise(text).split()
    if len(words) < SHINGLE:
        return frozenset({hash(tuple(words))}) if words else frozenset()
    return frozenset(map(hash, zip(*(words[i:] for i in range(SHINGLE)))))


# --------------------------------------------------------------------------- images


class PhashCache:
    """64-bit perceptual hashes by image sha256 in one SQLite file (safe for several
    processes)."""

    VERSION = "imagehash-phash-8x8-v1"

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else cache_dir("phash") / "phash.sqlite3"
        with self._connect() as con:
            con.execute("CREATE TABLE IF NOT EXISTS phash (key TEXT PRIMARY KEY, hash TEXT)")

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=120)
        con.execute("PRAGMA journal_mode=WAL")
        return con

    def get(self, keys: list[str]) -> dict[str, int]:
        con = self._connect()
        try:
            out = {}
            for i in range(0, len(keys), 500):
                part = [f"{self.VERSION}:{k}" for k in keys[i : i + 500]]
                q = f"SELECT key, hash FROM phash WHERE key IN ({','.join('?' * len(part))})"
                for k, h in con.execute(q, part):
                    out[k.split(":", 1)[1]] = int(h, 16)
            return out
        finally:
            con.close()

    def put(self, rows: dict[str, int]) -> None:
        con = self._connect()
        try:
            with con:
                con.executemany(
                    "INSERT OR REPLACE INTO phash (key, hash) VALUES (?, ?)",
                    [(f"{self.VERSION}:{k}", f"{h:016x}") for k, h in rows.items()],
                )
        finally:
            con.close()


def phash_file(path: Path) -> int:
    """The 64-bit DCT perceptual hash of one image file (opened through
    :mod:`membench.core.content_guard`: a file past its bounds is a located error)."""
    import imagehash

    with guard.open_image(path) as im:
        bits = imagehash.phash(im).hash.flatten()
    return int("".join("1" if b else "0" for b in bits), 2)


def image_hashes(
    paths: dict[str, Path], digests: dict[str, str] | None = None, cache: PhashCache | None = None
) -> dict[str, int]:
    """Perceptual hash per key of ``paths`` (key -> image file), through the cache keyed by
    each file's sha256 (``digests`` when known, else computed)."""
    digests = dict(digests or {})
    for k, p in paths.items():
        if k not in digests:
            digests[k] = sha256_file(p)
    cache = cache or PhashCache()
    found = cache.get(sorted(set(digests.values())))
    new: dict[str, int] = {}
    out = {}
    for k in sorted(paths):
        d = digests[k]
        if d not in found and d not in new:
            new[d] = phash_file(paths[k])
        out[k] = found.get(d, new.get(d))
    if new:
        cache.put(new)
    return out


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


# --------------------------------------------------------------------------- the index


@dataclass
class Evidence:
    """What identifies one piece of gold evidence: its item, and (text sources) the item's
    shingles and the region's normalised text."""

    source_id: str
    phash: int | None = None
    shingles: frozenset[int] = frozenset()
    region_texts: tuple[str, ...] = ()


class NearDupIndex:
    """Fingerprints of the items of one source: a perceptual hash per image, or (computed when
    first asked, then kept) the normalised text and shingles per text item. Shingles are
    Python string hashes: they are compared only within one build process."""

    def __init__(self, texts: dict[str, str] | None = None, phash: dict[str, int] | None = None):
        self.texts = {k: v for k, v in (texts or {}).items() if v}
        self.phash = dict(phash or {})
        self._norm: dict[str, str] = {}
        self._shingle: dict[str, frozenset[int]] = {}

    def norm(self, sid: str) -> str:
        if sid not in self._norm:
            self._norm[sid] = normalise(self.texts.get(sid, ""))
        return self._norm[sid]

    def shingle(self, sid: str) -> frozenset[int]:
        if sid not in self._shingle:
            self._shingle[sid] = shingles(self.texts.get(sid, ""))
        return self._shingle[sid]

    def evidence(self, source_id: str, region_texts: Iterable[str] = ()) -> Evidence:
        """The fingerprint of gold evidence in item ``source_id`` (with the regions' texts)."""
        if source_id in self.phash:
            return Evidence(source_id, phash=self.phash[source_id])
        texts = tuple(t for t in (normalise(x) for x in region_texts) if len(t) >= MIN_REGION_CHARS)
        if texts:
            return Evidence(source_id, region_texts=texts)
        return Evidence(source_id, shingles=self.shingle(source_id))

    def duplicates(self, ev: Evidence, candidates: Iterable[str]) -> str | None:
        """The first of ``candidates`` (source ids, other than the evidence's own item) that
        is a near-duplicate of ``ev``, or ``None``."""
        for sid in candidates:
            if sid == ev.source_id:
                continue
            if ev.phash is not None:
                other = self.phash.get(sid)
                if other is not None and hamming(ev.phash, other) <= PHASH_MAX_DISTANCE:
                    return sid
                continue
            if sid not in self.texts:
                continue
            if ev.region_texts:
                text = self.norm(sid)
                if any(t in text for t in ev.region_texts):
                    return sid
            elif ev.shingles:
                common = len(ev.shingles & self.shingle(sid))
                if common >= SHINGLE_CONTAINMENT * len(ev.shingles):
                    return sid
        return None
