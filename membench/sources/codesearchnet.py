"""CodeSearchNet expert relevance annotations (Husain et al., 2019) -> code records. Reads
``codesearchnet/`` under the corpus root; writes nothing. Start at :func:`load`.
Why longer: the upstream format and its mapping are this adapter's contract.

Upstream (``<corpus_root>/codesearchnet/``):

* ``resources/queries.csv``: a header ``query``, then the 99 queries; the query number of a
  ``query_id`` is the **0-based index among the data rows** (``codesearchnet:python:0``).
* ``resources/annotationStore.csv``: ``Language, Query, GitHubUrl, Relevance, Notes``, one row
  per (annotator, language, query, function); ``GitHubUrl`` ends in ``#L<start>-L<end>``
  (1-based lines); Relevance 0 .. 3. No annotator ids: several rows for one (language, query,
  url) are several annotators' grades. ``Notes`` is not used.
* ``files/<commit>_<path with / as _>``: the annotated files; ``PROVENANCE.jsonl`` maps each
  to ``owner/repo@commit:path`` (the reconstructed name is a counted fallback). Rows whose file
  the mirror lacks are not covered.

Mapping:

* holder: one per language, ``codesearchnet/<language lower-case>``.
* item: every mirrored file any row of the language references, ``meta = {upstream_repo,
  upstream_path, commit, lines, language}`` (``lines`` as GitHub numbers them). A file under two
  languages belongs to the first in sorted order; the other's gold on it is counted, not made.
* observed_at: synthetic per holder (:func:`base.synthetic_timeline`, one hour apart, UTC).
* records: one per (language, query) pair; ``grade`` = lower median of the annotators' grades;
  gold = ``{"path": <upstream path>, "line": <start line>}`` with grade >= 2, file mirrored and
  span inside it; ``judgments``: ``any_annotator`` (max >= 2, grade max), ``all_annotators``
  (min >= 2, grade min), ``graded`` (lower median >= 1). Two urls with one file and start line
  give one region with the higher grade (counted).
* a pair without gold is not covered (never a native unanswerable: upstream judged a sample).

docs/sets.md ("Per source", "Judgment sets") says why the grades combine by the lower median.
"""

from __future__ import annotations

import csv
import io
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..contract.schema import Gold, Origin, RecordDraft, Scope, SourceItem
from ..core.errors import InputError
from . import BY_KEY
from .base import (
    AdapterResult,
    Coverage,
    Mapped,
    Upstream,
    book,
    open_upstream,
    rel,
    synthetic_timeline,
)

KEY = "codesearchnet"
SPEC = BY_KEY[KEY]
DATASET = "github/CodeSearchNet"
ANNOTATION_FILE = "resources/annotationStore.csv"
QUERIES_FILE = "resources/queries.csv"
FILES_DIR = "files"
COLUMNS = ("Language", "Query", "GitHubUrl", "Relevance")  # the annotationStore.csv columns used
RELEVANT = 2  # grade >= 2 ("relevant" / "exact match") is relevant
GRADED = "graded"
#: per set (the primary gold and the judgment sets): the grade a url needs to be in it
THRESHOLD = {"gold": RELEVANT, "any_annotator": RELEVANT, "all_annotators": RELEVANT, GRADED: 1}

_NOTE = re.compile(
    r"^verbatim copy of (?P<repo>[^/@\s]+/[^@\s]+)@(?P<commit>[0-9a-fA-F]{40}):(?P<path>.+)$"
)
_URL = re.compile(
    r"^https://github\.com/(?P<repo>[^/]+/[^/]+)/blob/(?P<commit>[0-9a-fA-F]{40})/(?P<path>[^#]+)"
    r"#L(?P<start>\d+)-L(?P<end>\d+)$"
)

R_NO_RELEVANT = "no relevant (grade>=2) annotation"
R_ABSENT = "relevant functions only in files absent from mirror"
R_OOB = "relevant spans only outside their file's lines"
R_NOT_IN_QUERIES = "query not in queries.csv"
R_NO_ROWS = "no interpretable annotation row"
R_OTHER_HOLDER = "relevant functions only in files held by another language"
R_UNUSABLE = "relevant functions absent, out of bounds or held by another language"

F_ABSENT_ROWS = (
    "annotation rows pointing at files absent from mirror (judged on mirrored files only)"
)
F_ABSENT_RELEVANT = "relevant (grade>=2) urls in files absent from mirror"
F_OOB = "relevant spans outside their file's lines (not emitted)"
F_OTHER_HOLDER = "relevant urls in a file held by another language (not emitted)"
F_DUP_REGION = "two relevant urls with the same file and start line (merged)"


def lower_median(grades: list[int]) -> int:
    """The lower median: for an even count, the smaller of the two middle grades."""
    s = sorted(grades)
    return s[(len(s) - 1) // 2]


def count_lines(data: bytes) -> int:
    """Lines as GitHub numbers them: ``\\n``-separated, a last line without newline counts."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


@dataclass
class _Url:
    repo: str
    commit: str
    path: str
    start: int
    end: int
    grades: list[int] = field(default_factory=list)


def _read_csv(p: Path) -> list[list[str]]:
    text = p.read_text(encoding="utf-8-sig", errors="replace")
    return list(csv.reader(io.StringIO(text, newline="")))


# --------------------------------------------------------------------------- adapter


def load(corpus_root: Path) -> AdapterResult:
    """Read ``<corpus_root>/codesearchnet``, map it to items and records, account for every
    (language, query) pair."""
    up = open_upstream(
        corpus_root,
        SPEC,
        provenance=True,
        files={
            ANNOTATION_FILE: "CodeSearchNet annotationStore.csv",
            QUERIES_FILE: "CodeSearchNet queries.csv",
        },
    )
    cov = Coverage(source=KEY)
    revision = up.revision(ANNOTATION_FILE, cov, required=True)
    rows = _read(up)
    made = _map(up, rows, revision)
    _account(cov, made)
    return made.result(cov)


@dataclass
class _Rows:
    queries: list[list[str]]  # queries.csv data rows (header "query" dropped), as upstream
    # annotationStore.csv: the COLUMNS of every non-blank data row, as upstream
    annotations: list[tuple[str, ...]]


def _read(up: Upstream) -> _Rows:
    """queries.csv and annotationStore.csv as CSV rows. Raises InputError on an empty
    annotation file or one whose header lacks a needed column."""
    queries = _read_csv(up.folder / QUERIES_FILE)
    if queries and [c.strip().lower() for c in queries[0]] == ["query"]:
        queries = queries[1:]
    ann = up.folder / ANNOTATION_FILE
    arows = _read_csv(ann)
    if not arows:
        raise InputError(ann, None, None, "empty annotation file", rule="MISSING_FILE")
    header = [c.strip() for c in arows[0]]
    need = list(COLUMNS)
    if any(h not in header for h in need):
        raise InputError(ann, 1, None, f"header must contain {need}, got {header}")
    col = [header.index(h) for h in need]
    annotations: list[tuple[str, ...]] = []
    for row in arows[1:]:
        if not any(c.strip() for c in row):
            continue
        if len(row) < len(header):
            row = row + [""] * (len(header) - len(row))
        annotations.append(tuple(row[c] for c in col))
    return _Rows(queries, annotations)


class _Mirror:
    """Upstream ``(repo, commit, path)`` -> mirrored file name under ``files/``: the exact
    mapping of the PROVENANCE.jsonl notes, else (counted) the reconstructed name."""

    def __init__(self, up: Upstream, made: Mapped):
        self.dir = up.folder / FILES_DIR
        self.names: dict[tuple[str, str, str], str] = {}
        for path, e in up.provenance.items():
            if not path.startswith(f"{FILES_DIR}/"):
                continue
            m = _NOTE.match(e.get("note") or "")
            if not m:
                made.fix(
                    "provenance entry without a readable 'verbatim copy of' note (file unmapped)"
                )
                continue
            k = (m["repo"], m["commit"].lower(), m["path"])
            if not (up.folder / path).is_file():
                made.fix("provenance lists a file that is not on disk (treated as absent)")
                continue
            self.names[k] = path[len(FILES_DIR) + 1 :]
        self.noted = set(self.names.values())

    def name(self, repo: str, commit: str, path: str, made: Mapped) -> str | None:
        """The mirrored file of an upstream file, or None when the mirror lacks it."""
        name = self.names.get((repo, commit, path))
        if name is not None:
            return name
        guess = f"{commit}_{path.replace('/', '_')}"
        if guess not in self.noted and (self.dir / guess).is_file():
            made.fix("file mapped by reconstructed name (no provenance note)")
            self.names[(repo, commit, path)] = guess
            return guess
        return None


@dataclass
class _Made(Mapped):
    # for the notes: annotation rows / distinct files pointing at files the mirror lacks
    absent_rows: int = 0
    absent_files: set[tuple[str, str, str]] = field(default_factory=set)


def _map(up: Upstream, rows: _Rows, revision: str) -> _Made:
    """Items (every mirrored file an annotation row points at, one holder per language) and
    one outcome per (language, query) pair."""
    made = _Made()
    mirror = _Mirror(up, made)
    query_index = _query_index(rows.queries, made)
    pairs, files_of_lang = _pairs(rows.annotations, mirror, made)
    upstream_of = {v: k for k, v in mirror.names.items()}
    owner, lines_of = _items(up, files_of_lang, upstream_of, made)
    for (lang, query), urls in sorted(pairs.items()):
        made.outcomes.append(
            _record(
                lang, query, urls, query_index, mirror, owner, lines_of, upstream_of, revision, made
            )
        )
    return made


def _query_index(queries: list[list[str]], made: Mapped) -> dict[str, int]:
    """Query text -> its 0-based index among queries.csv data rows (first one kept)."""
    index: dict[str, int] = {}
    for i, row in enumerate(queries):
        if not row:
            continue
        q = row[0]
        if q in index:
            made.fix("duplicate query in queries.csv (first index kept)")
            continue
        index[q] = i
    return index


def _pairs(
    annotations: list[tuple[str, ...]], mirror: _Mirror, made: _Made
) -> tuple[dict[tuple[str, str], dict[str, _Url]], dict[str, set[str]]]:
    """(Language, Query) -> url -> its grades; mirrored files referenced per language (lower
    case). Rows that cannot be read are counted and ignored."""
    pairs: dict[tuple[str, str], dict[str, _Url]] = {}
    files_of_lang: dict[str, set[str]] = defaultdict(set)
    for lang, query, url, rel_s in annotations:
        if not lang.strip() or not query:
            made.fix("annotation row without language or query (ignored)")
            continue
        lang = lang.strip()
        urls = pairs.setdefault((lang, query), {})
        m = _URL.match(url.strip())
        if not m:
            made.fix("annotation row with unparseable GitHubUrl (ignored)")
            continue
        if not re.fullmatch(r"[0-3]", rel_s.strip()):
            made.fix("annotation row with relevance not in 0..3 (ignored)")
            continue
        start, end = int(m["start"]), int(m["end"])
        u = urls.get(url.strip())
        if u is None:
            u = urls[url.strip()] = _Url(m["repo"], m["commit"].lower(), m["path"], start, end)
        u.grades.append(int(rel_s.strip()))
        name = mirror.name(u.repo, u.commit, u.path, made)
        if name is None:
            made.absent_rows += 1
            made.absent_files.add((u.repo, u.commit, u.path))
        else:
            files_of_lang[lang.lower()].add(name)
    if made.absent_rows:
        made.fix(F_ABSENT_ROWS, made.absent_rows)
    return pairs, files_of_lang


def _items(
    up: Upstream,
    files_of_lang: dict[str, set[str]],
    upstream_of: dict[str, tuple[str, str, str]],
    made: Mapped,
) -> tuple[dict[str, str], dict[str, int]]:
    """One item (and its text) per referenced mirrored file, added to ``made``; a file under
    two languages goes to the first. Reads those files. Returns (file -> language, file ->
    lines)."""
    owner: dict[str, str] = {}
    for lang in sorted(files_of_lang):
        for name in sorted(files_of_lang[lang]):
            if name in owner:
                made.fix(f"file annotated under two languages (kept in {owner[name]})")
                continue
            owner[name] = lang
    per_holder: dict[str, list[str]] = defaultdict(list)
    for name, lang in owner.items():
        per_holder[lang].append(f"{KEY}:{name}")
    observed: dict = {}
    for sids in per_holder.values():
        observed.update(synthetic_timeline(sids))
    lines_of: dict[str, int] = {}
    for name in sorted(owner):
        lang = owner[name]
        p = up.folder / FILES_DIR / name
        data = p.read_bytes()
        sid = f"{KEY}:{name}"
        repo, commit, upath = upstream_of[name]
        lines_of[name] = count_lines(data)
        made.texts[sid] = data.decode("utf-8", errors="replace")
        made.items.append(
            SourceItem(
                source_id=sid,
                modality="code",
                holder=f"{KEY}/{lang}",
                observed_at=observed[sid],
                path=rel(up.root, p),
                meta={
                    "upstream_repo": repo,
                    "upstream_path": upath,
                    "commit": commit,
                    "lines": lines_of[name],
                    "language": lang,
                },
            )
        )
    return owner, lines_of


def _record(
    lang: str,
    query: str,
    urls: dict[str, _Url],
    query_index: dict[str, int],
    mirror: _Mirror,
    owner: dict[str, str],
    lines_of: dict[str, int],
    upstream_of: dict[str, tuple[str, str, str]],
    revision: str,
    made: Mapped,
) -> RecordDraft | str:
    """The record of one (language, query) pair, or why it is not covered; relevant urls that
    give no region are counted in ``made``."""
    low = lang.lower()
    if not urls:
        return R_NO_ROWS
    if query not in query_index:
        return R_NOT_IN_QUERIES
    sets: dict[str, dict[tuple[str, int], int]] = {s: {} for s in THRESHOLD}
    n_rel = n_absent = n_other = n_oob = 0
    for url in sorted(urls):
        u = urls[url]
        grade = {
            "gold": lower_median(u.grades),
            "any_annotator": max(u.grades),
            "all_annotators": min(u.grades),
            GRADED: lower_median(u.grades),
        }
        if all(grade[s] < THRESHOLD[s] for s in THRESHOLD):
            continue
        name = mirror.name(u.repo, u.commit, u.path, made)
        rel_ = grade["gold"] >= RELEVANT
        n_rel += rel_
        if name is None:
            n_absent += rel_
            continue
        if owner.get(name) != low:
            n_other += rel_
            continue
        if not (1 <= u.start <= u.end <= lines_of[name]):
            n_oob += rel_
            continue
        for s, g in grade.items():
            if g < THRESHOLD[s]:
                continue
            k = (f"{KEY}:{name}", u.start)
            if k in sets[s]:
                if s == "gold":
                    made.fix(F_DUP_REGION)
                g = max(g, sets[s][k])
            sets[s][k] = g
    for what, n in ((F_ABSENT_RELEVANT, n_absent), (F_OTHER_HOLDER, n_other), (F_OOB, n_oob)):
        if n:
            made.fix(what, n)
    if not sets["gold"]:
        if not n_rel:
            return R_NO_RELEVANT
        if n_absent:
            return R_ABSENT if n_absent == n_rel else R_UNUSABLE
        if n_other:
            return R_OTHER_HOLDER if n_other == n_rel else R_UNUSABLE
        return R_OOB

    def golds(chosen: dict[tuple[str, int], int]) -> list[Gold]:
        return [
            Gold(
                source_id=sid,
                region={"path": upstream_of[sid[len(KEY) + 1 :]][2], "line": line},
                grade=g,
            )
            for (sid, line), g in sorted(chosen.items())
        ]

    return RecordDraft(
        query_id=f"{KEY}:{low}:{query_index[query]}",
        modality="code",
        question=query,
        answer=None,
        answer_format="none",
        gold=golds(sets["gold"]),
        judgments={s: golds(sets[s]) for s in THRESHOLD if s != "gold"},
        scope=Scope(holder=f"{KEY}/{low}", session=None, scenario=SPEC.scenario),
        unanswerable=False,
        origin=Origin(
            dataset=DATASET, revision=revision, item=f"{lang}/{query}", license=SPEC.license
        ),
    )


def _account(cov: Coverage, made: _Made) -> None:
    """Coverage: every pair's outcome and the repairs (:func:`base.book`), then the notes.
    Writes only ``cov``."""
    book(cov, made)
    cov.notes.append(
        "grade = lower median of the annotators' grades for one (language, query, "
        "url); gold = grade >= 2; judgments any_annotator (max >= 2), "
        "all_annotators (min >= 2) and graded (grade >= 1, for graded nDCG)"
    )
    cov.notes.append(
        f"{len(made.absent_files)} distinct annotated files are absent from the "
        f"mirror ({made.absent_rows} annotation rows); their judgments are not "
        "covered"
    )
    cov.notes.append(
        "upstream judged a sample of functions per query, not the whole corpus: "
        "pairs without a relevant judgment are not covered, never unanswerable"
    )
    cov.notes.append(
        "query_id number = 0-based index among queries.csv data rows (header "
        "'query' not counted); lines counted as GitHub numbers them"
    )
