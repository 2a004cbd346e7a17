"""Do two checkouts' ``make all`` give the same outputs? (a restructuring's check)

    python bench/same_outputs.py BEFORE AFTER

BEFORE and AFTER are two repository folders where ``make all`` ran (each with its own
``bench/sets``, ``runs/`` and ``reports/``). Prints, and exits 1 unless all hold:

* the built set files and ``bench/sets.lock.json``: byte for byte;
* each run's ``atoms.jsonl`` byte for byte, and ``run.jsonl`` line for line but for
  ``latency_ms``;
* each run's ``metrics.json`` but for what a second run of the same code changes too: times and
  latencies, the code revision and code digests, folder paths, and the module paths the run
  records of where its code lives (``function``, ``class``, ``definitions``), which a move of
  modules changes by design (these are listed, not failed);
* the report pages' names (the same on both sides); and their visible text, word by word,
  after the two folders' paths are made equal: each table's rows (the same rows in another
  order are counted; a leaderboard's long table lists entries by id, a hash that includes
  times, so its row order differs between any two runs), and every differing run of words,
  counted and shown with the words before it, so that what is left after times, latencies,
  revisions and digests can be read in full (the text is shown, not judged).

Standard library only; reads both folders, writes nothing.
"""

from __future__ import annotations

import collections
import difflib
import hashlib
import html
import json
import re
import sys
from pathlib import Path

#: keys whose values differ between two runs of the same code (or name where code lives)
VOLATILE = re.compile(
    r"latency|_ms$|seconds|time|started|finished|elapsed|code_revision|"
    r"duration|rss|wall|sets_dir|run_dir|^path$|source_sha256|generated"
)
WHERE_CODE_LIVES = re.compile(r"^(function|class|definitions)$")
VOLATILE_WORDS = re.compile(r"^[+-]?\d+(\.\d+)?$|^\d{4}-\d\d-\d\dT|^[0-9a-f]{16,64}(\+dirty)?$")


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def strip(o, moved: list, at: str = ""):
    if isinstance(o, dict):
        out = {}
        for k, v in o.items():
            if VOLATILE.search(k):
                continue
            if WHERE_CODE_LIVES.match(k):
                moved.append((f"{at}.{k}", v))
                continue
            out[k] = strip(v, moved, f"{at}.{k}")
        return out
    if isinstance(o, list):
        return [strip(v, moved, at) for v in o]
    return o


def _text(fragment: str, roots: tuple[Path, Path]) -> str:
    t = html.unescape(re.sub(r"<[^>]+>", " ", fragment))
    for r in roots:
        t = t.replace(str(r), "ROOT")
    return t


def page(p: Path, roots: tuple[Path, Path]) -> tuple[list[str], list[list[tuple[str, ...]]]]:
    """A page's words outside its tables, and each table's rows (cells' text)."""
    t = re.sub(
        r"<script.*?</script>|<style.*?</style>", "", p.read_text(encoding="utf-8"), flags=re.S
    )
    tables = []
    for m in re.finditer(r"<table.*?</table>", t, flags=re.S):
        rows = [
            tuple(
                " ".join(_text(c, roots).split())
                for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r, flags=re.S)
            )
            for r in re.findall(r"<tr.*?</tr>", m.group(0), flags=re.S)
        ]
        tables.append(rows)
    rest = re.sub(r"<table.*?</table>", " TABLE ", t, flags=re.S)
    return _text(rest, roots).split(), tables


def main(a: Path, b: Path) -> int:
    ok = True
    sets_a, sets_b = (
        {p.relative_to(r): sha(p) for p in sorted((r / "bench/sets").rglob("*")) if p.is_file()}
        for r in (a, b)
    )
    differ = sorted(str(k) for k in set(sets_a) | set(sets_b) if sets_a.get(k) != sets_b.get(k))
    same_lock = sha(a / "bench/sets.lock.json") == sha(b / "bench/sets.lock.json")
    print(
        f"set files: {len(sets_a)} and {len(sets_b)}; differing: {differ or 'none'}; "
        f"lock identical: {same_lock}"
    )
    ok &= not differ and same_lock
    for run in sorted(d for d in (a / "runs").glob("*") if (d / "metrics.json").is_file()):
        other = b / "runs" / run.name
        atoms = sha(run / "atoms.jsonl") == sha(other / "atoms.jsonl")
        la, lb = (
            [
                {k: v for k, v in json.loads(x).items() if k != "latency_ms"}
                for x in (d / "run.jsonl").read_text().splitlines()
            ]
            for d in (run, other)
        )
        moved_a: list = []
        moved_b: list = []
        ma = strip(json.loads((run / "metrics.json").read_text()), moved_a)
        mb = strip(json.loads((other / "metrics.json").read_text()), moved_b)
        print(
            f"{run.name}: atoms.jsonl identical {atoms}; run.jsonl {len(la)} lines identical "
            f"but latency {la == lb}; metrics.json identical but times {ma == mb}"
        )
        for (where, x), (_, y) in zip(moved_a, moved_b):
            if x != y:
                print(f"    where code lives, {where}: differs (a module moved)")
        ok &= atoms and la == lb and ma == mb
    pages_a = sorted(p.relative_to(a / "reports") for p in (a / "reports").rglob("*.html"))
    pages_b = sorted(p.relative_to(b / "reports") for p in (b / "reports").rglob("*.html"))
    pages = [p for p in pages_a if p in pages_b]
    only = sorted(set(pages_a) ^ set(pages_b))
    print(
        f"report pages: {len(pages_a)} and {len(pages_b)}; the same names on both sides: "
        f"{not only}" + (f" (on one side only: {', '.join(map(str, only))})" if only else "")
    )
    ok &= not only
    runs = collections.Counter()
    n_tables = reordered = 0
    for r in pages:
        (wa, ta), (wb, tb) = page(a / "reports" / r, (a, b)), page(b / "reports" / r, (a, b))
        n_tables += len(ta)
        if len(ta) != len(tb):
            runs[f"{r}: {len(ta)} tables -> {len(tb)}"] += 1
        for x, y in zip(ta, tb):
            if x == y:
                continue
            # latency rows differ between any two runs: shown among the words, not as rows
            x = [row for row in x if not any("latency" in c for c in row)]
            y = [row for row in y if not any("latency" in c for c in row)]
            if x == y:
                continue
            if x[:1] == y[:1] and sorted(x[1:]) == sorted(y[1:]):
                reordered += 1  # the same rows (header first), in another order
                continue
            gone, new = sorted(set(x) - set(y)), sorted(set(y) - set(x))
            for row in gone:
                wa += ["ROW:", *row]
            for row in new:
                wb += ["ROW:", *row]
        sm = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
        for op, i1, i2, j1, j2 in sm.get_opcodes():
            if op == "equal":
                continue
            old, new = wa[i1:i2], wb[j1:j2]
            if all(VOLATILE_WORDS.match(w.strip("\"',[]()")) for w in old + new):
                runs["(numbers, times, digests)"] += 1
                continue
            runs[
                f"...{' '.join(wa[max(0, i1 - 4) : i1])[-50:]} | {' '.join(old)[:70]!r} -> "
                f"{' '.join(new)[:70]!r}"
            ] += 1
    print(
        f"report tables: {n_tables}; the same rows in another order: {reordered} (a "
        "leaderboard's long table lists entries by id)"
    )
    print("report text (outside tables, and the rows that differ): differing runs of words:")
    for k, n in runs.most_common():
        print(f"  {n:5d}  {k}")
    print("SAME" if ok else "DIFFERENT")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
