"""CodeSearchNet expert relevance annotations (Husain et al., 2019) -> code records.

Upstream format (``<corpus_root>/codesearchnet/``):

* ``resources/queries.csv``: a header row ``query`` then the 99 natural-language queries, one a
  row. The query number used in ``query_id`` is the **0-based index among the data rows**
  (the header is not counted): ``codesearchnet:python:0`` is "convert int to string".
* ``resources/annotationStore.csv``: ``Language, Query, GitHubUrl, Relevance, Notes``; one row per
  (annotator, language, query, function). ``GitHubUrl`` is
  ``https://github.com/<owner>/<repo>/blob/<commit>/<path>#L<start>-L<end>`` (the function's
  span, 1-based lines as GitHub numbers them). Relevance is 0 (irrelevant) .. 3 (exact match).
  There are no annotator ids: several rows for the same (language, query, url) are taken as
  several annotators' grades.
* ``files/<commit>_<path with / replaced by _>``: verbatim copies of the annotated files
  (collected by sourcegraph-testing/codesearchnet). ``PROVENANCE.jsonl`` maps every mirrored
  file to its upstream ``owner/repo@commit:path`` in its ``note``; that exact mapping is used
  (the reconstructed name is only a fallback for a file whose note cannot be read, and is
  counted). Files the mirror lacks (LICENSE-NOTES: files over 300 KB; in fact more are
  missing, see ``coverage.normalised``) make their annotation rows not covered.

What the adapter makes:

* holders: one per language corpus, ``codesearchnet/<language lower-case>``.
* source items: every mirrored file referenced by any annotation row of that language
  (whatever its grade, and whether or not the (language, query) pair becomes a record), with
  ``meta = {upstream_repo, upstream_path, commit, lines, language}``. ``lines`` counts
  ``\\n``-separated lines as GitHub numbers them (a final line without a newline counts). A file
  annotated under two languages (none in the real data) belongs to the first language in sorted
  order; gold of the other language pointing at it would cross holders, so it is not emitted
  and is counted.
* observed_at: there is no time structure upstream, so a synthetic ingestion timeline per holder
  (``base.synthetic_timeline`` over the holder's sorted source ids, one hour apart from
  2024-01-01T00:00 UTC).
* records: one per (language, query) pair present in annotationStore. Grades of the same
  (language, query, url) are aggregated: ``grade`` = lower median of the annotators' grades.
  Primary gold = urls with grade >= 2 whose file is mirrored and whose span lies inside the
  file: ``Gold(source_id, {"path": <upstream path>, "line": <start line>}, grade)``.
  ``judgments`` always holds ``any_annotator`` (max grade >= 2, grade = max) and
  ``all_annotators`` (min grade >= 2, grade = min), possibly empty lists. Two urls of one pair
  with the same file and start line (different end) give one region with the higher grade
  (counted; none in the real data). The free-text ``Notes`` column is not used.
* A pair with no primary gold is not covered: "no relevant (grade>=2) annotation", or
  "relevant functions only in files absent from mirror". These are **not** unanswerable
  queries: upstream judged a sample of functions per query, not the whole corpus, so the absence
  of a relevant judgment says nothing about the holder's code. The adapter emits no native
  unanswerables.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ...core.errors import InputError
from ..schema import Gold, Origin, RecordDraft, Scope, SourceItem
from . import BY_KEY
from .base import AdapterResult, Coverage, rel, synthetic_timeline

KEY = "codesearchnet"
DATASET = "github/CodeSearchNet"
ANNOTATION_FILE = "resources/annotationStore.csv"
QUERIES_FILE = "resources/queries.csv"
PROVENANCE_FILE = "PROVENANCE.jsonl"
RELEVANT = 2  # grade >= 2 ("relevant" / "exact match") is relevant

_NOTE = re.compile(r"^verbatim copy of (?P<repo>[^/@\s]+/[^@\s]+)@(?P<commit>[0-9a-fA-F]{40}):(?P<path>.+)$")
_URL = re.compile(
    r"^https://github\.com/(?P<repo>[^/]+/[^/]+)/blob/(?P<commit>[0-9a-fA-F]{40})/(?P<path>[^#]+)"
    r"#L(?P<start>\d+)-L(?P<end>\d+)$")

R_NO_RELEVANT = "no relevant (grade>=2) annotation"
R_ABSENT = "relevant functions only in files absent from mirror"
R_OOB = "relevant spans only outside their file's lines"
R_NOT_IN_QUERIES = "query not in queries.csv"
R_NO_ROWS = "no interpretable annotation row"
R_OTHER_HOLDER = "relevant functions only in files held by another language"
R_UNUSABLE = "relevant functions absent, out of bounds or held by another language"


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


def _require(p: Path, what: str) -> None:
    if not p.is_file():
        raise InputError(p, None, None, f"missing {what}", rule="MISSING_FILE")


def load(corpus_root: Path) -> AdapterResult:
    spec = BY_KEY[KEY]
    base = Path(corpus_root) / spec.folder
    prov_p, ann_p, q_p = base / PROVENANCE_FILE, base / ANNOTATION_FILE, base / QUERIES_FILE
    _require(ann_p, "CodeSearchNet annotationStore.csv")
    _require(q_p, "CodeSearchNet queries.csv")
    _require(prov_p, "PROVENANCE.jsonl")
    cov = Coverage(source=KEY)

    # ---- provenance: exact (repo, commit, path) -> mirrored file name
    revision: str | None = None
    mirror: dict[tuple[str, str, str], str] = {}
    for n, line in enumerate(prov_p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            e = json.loads(line)
        except json.JSONDecodeError as ex:
            raise InputError(prov_p, n, None, f"not JSON: {ex}") from None
        path = e.get("path", "")
        if path == ANNOTATION_FILE:
            revision = e.get("commit")
        if not path.startswith("files/"):
            continue
        m = _NOTE.match(e.get("note") or "")
        if not m:
            cov.fix("provenance entry without a readable 'verbatim copy of' note (file unmapped)")
            continue
        k = (m["repo"], m["commit"].lower(), m["path"])
        if not (base / path).is_file():
            cov.fix("provenance lists a file that is not on disk (treated as absent)")
            continue
        mirror[k] = path[len("files/"):]
    if not revision:
        raise InputError(prov_p, None, None, f"no entry (with commit) for {ANNOTATION_FILE}",
                         rule="MISSING_FILE")
    mapped_names = set(mirror.values())

    def mirrored_name(repo: str, commit: str, path: str) -> str | None:
        name = mirror.get((repo, commit, path))
        if name is not None:
            return name
        guess = f"{commit}_{path.replace('/', '_')}"
        if guess not in mapped_names and (base / "files" / guess).is_file():
            cov.fix("file mapped by reconstructed name (no provenance note)")
            mirror[(repo, commit, path)] = guess
            return guess
        return None

    # ---- queries.csv: header "query", then one query a row; index among data rows
    qrows = _read_csv(q_p)
    if qrows and [c.strip().lower() for c in qrows[0]] == ["query"]:
        qrows = qrows[1:]
    query_index: dict[str, int] = {}
    for i, row in enumerate(qrows):
        if not row:
            continue
        q = row[0]
        if q in query_index:
            cov.fix("duplicate query in queries.csv (first index kept)")
            continue
        query_index[q] = i

    # ---- annotationStore.csv
    arows = _read_csv(ann_p)
    if not arows:
        raise InputError(ann_p, None, None, "empty annotation file", rule="MISSING_FILE")
    header = [c.strip() for c in arows[0]]
    need = ["Language", "Query", "GitHubUrl", "Relevance"]
    if any(h not in header for h in need):
        raise InputError(ann_p, 1, None, f"header must contain {need}, got {header}")
    col = {h: header.index(h) for h in need}

    # (Language, Query) -> url -> _Url; files referenced per language
    pairs: dict[tuple[str, str], dict[str, _Url]] = {}
    files_of_lang: dict[str, set[str]] = defaultdict(set)
    absent_rows = 0
    absent_files: set[tuple[str, str, str]] = set()
    for ln, row in enumerate(arows[1:], 2):
        if not any(c.strip() for c in row):
            continue
        if len(row) < len(header):
            row = row + [""] * (len(header) - len(row))
        lang, query, url, rel_s = (row[col[h]] for h in need)
        if not lang.strip() or not query:
            cov.fix("annotation row without language or query (ignored)")
            continue
        lang = lang.strip()
        urls = pairs.setdefault((lang, query), {})
        m = _URL.match(url.strip())
        if not m:
            cov.fix("annotation row with unparseable GitHubUrl (ignored)")
            continue
        if not re.fullmatch(r"[0-3]", rel_s.strip()):
            cov.fix("annotation row with relevance not in 0..3 (ignored)")
            continue
        start, end = int(m["start"]), int(m["end"])
        u = urls.get(url.strip())
        if u is None:
            u = urls[url.strip()] = _Url(m["repo"], m["commit"].lower(), m["path"], start, end)
        u.grades.append(int(rel_s.strip()))
        name = mirrored_name(u.repo, u.commit, u.path)
        if name is None:
            absent_rows += 1
            absent_files.add((u.repo, u.commit, u.path))
        else:
            files_of_lang[lang.lower()].add(name)
    if absent_rows:
        cov.fix("annotation rows pointing at files absent from mirror (judged on mirrored "
                "files only)", absent_rows)

    # ---- items: one holder per language; a file under two languages goes to the first
    owner: dict[str, str] = {}
    for lang in sorted(files_of_lang):
        for name in sorted(files_of_lang[lang]):
            if name in owner:
                cov.fix(f"file annotated under two languages (kept in {owner[name]})")
                continue
            owner[name] = lang
    by_key = {v: k for k, v in mirror.items()}
    items: list[SourceItem] = []
    texts: dict[str, str] = {}
    lines_of: dict[str, int] = {}
    per_holder: dict[str, list[str]] = defaultdict(list)
    for name, lang in owner.items():
        per_holder[lang].append(f"{KEY}:{name}")
    observed: dict = {}
    for lang, sids in per_holder.items():
        observed.update(synthetic_timeline(sids))
    for name in sorted(owner):
        lang = owner[name]
        p = base / "files" / name
        data = p.read_bytes()
        sid = f"{KEY}:{name}"
        repo, commit, upath = by_key[name]
        lines_of[name] = count_lines(data)
        texts[sid] = data.decode("utf-8", errors="replace")
        items.append(SourceItem(
            source_id=sid, modality="code", holder=f"{KEY}/{lang}", observed_at=observed[sid],
            path=rel(Path(corpus_root), p),
            meta={"upstream_repo": repo, "upstream_path": upath, "commit": commit,
                  "lines": lines_of[name], "language": lang}))

    # ---- records
    cov.upstream_items = len(pairs)
    drafts: list[RecordDraft] = []
    oob = other_holder = absent_relevant = dup_region = 0
    for (lang, query), urls in sorted(pairs.items()):
        low = lang.lower()
        if not urls:
            cov.miss(R_NO_ROWS)
            continue
        if query not in query_index:
            cov.miss(R_NOT_IN_QUERIES)
            continue
        sets: dict[str, dict[tuple[str, int], int]] = {"gold": {}, "any_annotator": {},
                                                       "all_annotators": {}}
        n_rel = n_absent = n_other = n_oob = 0
        for url in sorted(urls):
            u = urls[url]
            grade = {"gold": lower_median(u.grades), "any_annotator": max(u.grades),
                     "all_annotators": min(u.grades)}
            if max(u.grades) < RELEVANT:
                continue
            name = mirrored_name(u.repo, u.commit, u.path)
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
                if g < RELEVANT:
                    continue
                k = (f"{KEY}:{name}", u.start)
                if k in sets[s]:
                    dup_region += s == "gold"
                    g = max(g, sets[s][k])
                sets[s][k] = g
        absent_relevant += n_absent
        other_holder += n_other
        oob += n_oob
        if not sets["gold"]:
            if not n_rel:
                cov.miss(R_NO_RELEVANT)
            elif n_absent:
                cov.miss(R_ABSENT if n_absent == n_rel else R_UNUSABLE)
            elif n_other:
                cov.miss(R_OTHER_HOLDER if n_other == n_rel else R_UNUSABLE)
            else:
                cov.miss(R_OOB)
            continue

        def golds(chosen: dict[tuple[str, int], int]) -> list[Gold]:
            return [Gold(source_id=sid, region={"path": by_key[sid[len(KEY) + 1:]][2],
                                                 "line": line}, grade=g)
                    for (sid, line), g in sorted(chosen.items())]

        drafts.append(RecordDraft(
            query_id=f"{KEY}:{low}:{query_index[query]}", modality="code", question=query,
            answer=None, answer_format="none", gold=golds(sets["gold"]),
            judgments={"any_annotator": golds(sets["any_annotator"]),
                       "all_annotators": golds(sets["all_annotators"])},
            scope=Scope(holder=f"{KEY}/{low}", session=None, scenario=spec.scenario),
            unanswerable=False,
            origin=Origin(dataset=DATASET, revision=revision, item=f"{lang}/{query}",
                          license=spec.license)))
        cov.covered += 1
    for what, n in (("relevant (grade>=2) urls in files absent from mirror", absent_relevant),
                    ("relevant spans outside their file's lines (not emitted)", oob),
                    ("relevant urls in a file held by another language (not emitted)",
                     other_holder),
                    ("two relevant urls with the same file and start line (merged)", dup_region)):
        if n:
            cov.fix(what, n)
    cov.notes.append("grade = lower median of the annotators' grades for one (language, query, "
                     "url); gold = grade >= 2; judgments any_annotator (max >= 2) and "
                     "all_annotators (min >= 2)")
    cov.notes.append(f"{len(absent_files)} distinct annotated files are absent from the mirror "
                     f"({absent_rows} annotation rows); their judgments are not covered")
    cov.notes.append("upstream judged a sample of functions per query, not the whole corpus: "
                     "pairs without a relevant judgment are not covered, never unanswerable")
    cov.notes.append("query_id number = 0-based index among queries.csv data rows (header "
                     "'query' not counted); lines counted as GitHub numbers them")
    drafts.sort(key=lambda d: d.query_id)
    return AdapterResult(items=items, drafts=drafts, coverage=cov, texts=texts)
