"""How much of what an image shows the OCR text holds: the yardstick for OCR settings.

Two real sources of the mirror say what their images show:

* **TabMWP**: each problem's ``table_for_pd`` lists the table's column names and cells
  (``tables/<pid>.png`` is that table drawn). A cell is *found* when its text, lower-cased with
  runs of white space made one space, is a substring of the OCR text normalised the same way
  (the image's lines joined in reading order; tabs and newlines count as white space). So a
  recognizer that drops the spaces between words ("Numberofcoins") misses the cell.
* **FinChart-Bench**: each question names labels printed on its chart (years, quarters, figures:
  "2Q14", "2010", "Q1-21", "180"). A *value* is a white-space separated token of a question that
  holds a digit, with surrounding punctuation stripped; it is found when it is a substring of
  the OCR text with all white space removed, case-insensitive. The values of every question of
  an image are pooled (each distinct value once).

The share found over a sample of images is the quality figure that OCR settings are compared
on (``bench/bench_ocr.py``) and that ``tests/test_content_ocr.py`` holds at the level of the
settings in force. Reads only the two annotation files and the OCR results handed in.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

TABMWP_ANNOTATION = "tabmwp/problems_test1k.json"
TABMWP_TABLES = "tabmwp/tables"
FINCHART_ANNOTATION = "finchart-bench/QA_data.json"
FINCHART_IMAGES = "finchart-bench/QA_images"

_WS = re.compile(r"\s+")
_Q_SUFFIX = re.compile(r"_q\d+(?=\.[A-Za-z]+$)")
_STRIP = "\"'()[]{}?!.,;:"


@dataclass(frozen=True)
class Expected:
    """What one image shows: its path under the corpus root, its source, the strings to find."""

    path: str
    source: str  # "tabmwp" | "finchart"
    values: tuple[str, ...]


def _norm_spaced(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def _norm_tight(text: str) -> str:
    return _WS.sub("", text).lower()


def tabmwp_expected(corpus_root: Path) -> dict[str, Expected]:
    """Image path -> the table's column names and cells (distinct, in table order)."""
    data = json.loads((Path(corpus_root) / TABMWP_ANNOTATION).read_text(encoding="utf-8"))
    out: dict[str, Expected] = {}
    for pid, row in data.items():
        table = row.get("table_for_pd") if isinstance(row, dict) else None
        if not isinstance(table, dict):
            continue
        vals: list[str] = []
        for col, cells in table.items():
            vals.append(str(col))
            vals.extend(str(c) for c in (cells or []))
        vals = [v for v in dict.fromkeys(_norm_spaced(v) for v in vals) if v]
        path = f"{TABMWP_TABLES}/{pid}.png"
        out[path] = Expected(path, "tabmwp", tuple(vals))
    return out


def question_values(question: str) -> list[str]:
    """The tokens of a question that hold a digit, punctuation around them stripped."""
    out = []
    for tok in question.split():
        tok = tok.strip(_STRIP)
        if any(ch.isdigit() for ch in tok):
            out.append(tok.lower())
    return out


def finchart_expected(corpus_root: Path) -> dict[str, Expected]:
    """Image path -> the digit-bearing tokens of its questions (distinct, in row order)."""
    rows = json.loads((Path(corpus_root) / FINCHART_ANNOTATION).read_text(encoding="utf-8"))
    pooled: dict[str, list[str]] = {}
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("image"), str):
            continue
        name = _Q_SUFFIX.sub("", row["image"])
        pooled.setdefault(f"{FINCHART_IMAGES}/{name}", []).extend(
            question_values(str(row.get("question", "")))
        )
    return {p: Expected(p, "finchart", tuple(dict.fromkeys(v))) for p, v in pooled.items() if v}


def expected_all(corpus_root: Path) -> dict[str, Expected]:
    """Both sources, for the images that are in the mirror."""
    root = Path(corpus_root)
    out = {**tabmwp_expected(root), **finchart_expected(root)}
    return {p: e for p, e in out.items() if (root / p).is_file()}


def sample(
    expected: Mapping[str, Expected], source: str, n: int, salt: str = "ocr-quality"
) -> list[Expected]:
    """``n`` images of ``source``, chosen by sha256 of (salt, path): the same on every machine."""
    cand = sorted(
        (e for e in expected.values() if e.source == source),
        key=lambda e: hashlib.sha256(f"{salt}|{e.path}".encode()).hexdigest(),
    )
    return cand[:n]


def found(exp: Expected, text: str) -> int:
    """How many of ``exp.values`` the OCR ``text`` holds (see the module docstring)."""
    if exp.source == "tabmwp":
        hay = _norm_spaced(text)
        return sum(1 for v in exp.values if v in hay)
    hay = _norm_tight(text)
    return sum(1 for v in exp.values if _norm_tight(v) in hay)


@dataclass(frozen=True)
class Quality:
    source: str
    images: int
    values: int
    found: int

    @property
    def share(self) -> float:
        return self.found / self.values if self.values else float("nan")


def quality(pairs: Iterable[tuple[Expected, str]]) -> dict[str, Quality]:
    """Per source: images, values, values found, over ``(expected, OCR text)`` pairs."""
    acc: dict[str, list[int]] = {}
    for exp, text in pairs:
        a = acc.setdefault(exp.source, [0, 0, 0])
        a[0] += 1
        a[1] += len(exp.values)
        a[2] += found(exp, text)
    return {s: Quality(s, *a) for s, a in sorted(acc.items())}


__all__ = [
    "Expected",
    "Quality",
    "expected_all",
    "finchart_expected",
    "found",
    "question_values",
    "quality",
    "sample",
    "tabmwp_expected",
]
