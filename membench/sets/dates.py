"""The dates a question names, and whether one is after a given instant: read by the build's
temporal derivation (a question naming a day still to come at its as_of is not derived) and by
the audit's date rule (:mod:`membench.sets.audit`). Pure functions of the question text; nothing
else is read."""

from __future__ import annotations

import re
from datetime import datetime, timezone

YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")
_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MON = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
# "8 May 2023", "8th of May, 2023", "May 8, 2023", "May 2023"
_DATES = (
    re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MON + r",?\s+(19\d\d|20\d\d)\b"),
    re.compile(r"\b" + _MON + r"\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(19\d\d|20\d\d)\b"),
    re.compile(r"\b" + _MON + r",?\s+(19\d\d|20\d\d)\b"),
)


def _month(word: str) -> int:
    return next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(word[:3]))


def named_dates(question: str) -> list[tuple[int, int, int]]:
    """The dates a question names, as (year, month, day) with 0 for a part it leaves out: "8
    May 2023" (or "May 8, 2023") -> (2023, 5, 8), "May 2023" -> (2023, 5, 0), a bare year ->
    (year, 0, 0). A day that does not exist (30 February) is read as its month."""
    q = question.lower()
    out: list[tuple[int, int, int]] = []
    taken: list[tuple[int, int]] = []
    for k, rx in enumerate(_DATES):
        for m in rx.finditer(q):
            if any(a <= m.start() < b for a, b in taken):
                continue
            g = m.groups()
            if k == 0:
                d, mo, y = int(g[0]), _month(g[1]), int(g[2])
            elif k == 1:
                mo, d, y = _month(g[0]), int(g[1]), int(g[2])
            else:
                mo, d, y = _month(g[0]), 0, int(g[1])
            try:
                if d:
                    datetime(y, mo, d)
            except ValueError:
                continue
            out.append((y, mo, d))
            taken.append((m.start(), m.end()))
    for m in YEAR.finditer(q):
        if not any(a <= m.start() < b for a, b in taken):
            out.append((int(m.group(1)), 0, 0))
    return out


def date_after(question: str, as_of: datetime) -> bool:
    """Whether a date the question names (:func:`named_dates`) begins after ``as_of``'s day,
    month or year (as precise as the date is): a question about a day still to come."""
    t = as_of.astimezone(timezone.utc)
    for y, mo, d in named_dates(question):
        if (y, mo or 0, d or 0) > (t.year, t.month if mo else 0, t.day if d else 0):
            return True
    return False
