"""The house: membench's rooms (top-level packages) on their floors, lowest first.

A module may import from its own room and from the rooms on the floors below, never from a
floor above; no two modules import each other, however indirectly (``tests/test_architecture.py``
walks every import statement and fails on an upward arrow or a circle, naming the files). The
floors are the pipeline: what a system is shown (content) comes before the systems, the
systems before the runs, the runs before their figures, the figures before their analysis
and reports, and the commands on top. ``docs/architecture.md`` draws this table (its
``house`` block is generated from :data:`ROOMS`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Room:
    names: tuple[str, ...]  # the package (or top-level modules) of membench/ on this floor
    holds: str  # what it is about
    touches: str  # what it reads and writes


ROOMS: tuple[Room, ...] = (
    Room(
        ("core",),
        "located errors and exit statuses, paths, strict JSON lines and sha256, atomic writes, "
        "the run-directory lock, deterministic hashing, bounds, progress, the network guard, "
        "the CPU's instruction set",
        "nothing of its own (a lock file in a RUN_DIR it is given; progress on stderr)",
    ),
    Room(
        ("modalities",),
        "one module per modality: region and extent shapes, cap, bounds, overlap rule, "
        "region renderer; the registry",
        "corpus files only to render a region",
    ),
    Room(
        ("contract",),
        "the records of a set (`schema.py`), which unanswerables carry a tell (`tells.py`), "
        "the system protocol and ranking rule (`protocol.py`), the same protocol over HTTP "
        "(`wire.py`)",
        "nothing",
    ),
    Room(
        ("sources",),
        "one adapter per upstream dataset (read -> map -> account) and their registry",
        "the corpus mirror",
    ),
    Room(
        ("sets",),
        "manifest and corpus check, the build (holders, splits, timelines, derived "
        "unanswerables and their guards) and its lock, the hard rules, the metadata-only "
        "audit, record selection and order, topics, sub-corpora",
        "reads the corpus; writes `bench/sets/`, the lock, the manifest",
    ),
    Room(
        ("content",),
        "what a system is shown of an item: PDF text layers, OCR, caption windows, code "
        "units, turn windows, as atoms with text",
        "reads the corpus; writes the content cache",
    ),
    Room(
        ("systems",),
        "everything that answers queries: the reference systems (bm25, dense, hybrid), the "
        "adapters of real memory libraries, the test doubles, the HTTP client "
        "(`remote.py`), the registry; model cards (`card.py`, `cards.py`), identity, model "
        "folders",
        "reads sets' items, cards and corpus; writes the model and embedding caches",
    ),
    Room(
        ("serve",),
        "`membench serve`: a Python system behind the membench-http/1 server",
        "reads the corpus for the system it serves",
    ),
    Room(
        ("run",),
        "the resumable runner, the keeper process that holds the gold and writes the lines, "
        "the split a run answers, the line file, the Ray engine, `import-run`, the run files' "
        "readers",
        "reads sets and corpus; writes RUN_DIR",
    ),
    Room(
        ("metrics",),
        "`RunDir` (the one reader of a run directory), the measure registry, one module per "
        "measure family, scoring, aggregation with intervals and gates, the score cache, "
        "export",
        "reads RUN_DIR and sets; writes `RUN_DIR/metrics.json`, exports, the score cache",
    ),
    Room(
        ("trec",),
        "plain TREC files: the bounded reader, the evaluator, the writers, and "
        "`membench trec-eval` (trec_eval 10.0's measures and output)",
        "reads TREC files",
    ),
    Room(
        ("analysis",),
        "item frames, slices, sweeps and the operating point, calibration, paired "
        "comparison, agreement between judgment sets, the failure browser, the frozen "
        "figures, the leaderboard (store, ranking, tables) and its verification, pools and "
        "the Q2D-Web experiment",
        "reads RUN_DIRs; writes calibration, expected figures, result stores, pools",
    ),
    Room(
        ("report",),
        "provenance, notebook execution and HTML pages, escaping, tables, plots, summaries, "
        "the browser checks",
        "writes `reports/`",
    ),
    Room(
        ("cli", "launch", "__main__", "docsite", "__init__", "api", "page", "moved"),
        "the `membench` command (one module per command in `cli/`), its entry point, the "
        "documentation site's generated tables, and the front door: `import membench as mb` "
        "(`__init__`, its functions in `api.py`, the report notebooks' namespace `page.py`, "
        "and the old import paths with their warnings until 0.3.0 (`moved.py`))",
        "what the command or function it runs touches; `docsite` rewrites generated blocks "
        "when asked",
    ),
)


def floor_of(module: str) -> int:
    """The floor (0 = lowest) of a dotted module name of membench's own."""
    top = module.split(".")[1] if "." in module else "__init__"
    for i, room in enumerate(ROOMS):
        if top in room.names:
            return i
    raise KeyError(f"{module}: in no room of membench/docsite/house.py")


def markdown() -> str:
    """The ``house`` block of docs/architecture.md."""
    rows = [
        "| floor | room | what it holds | reads / writes | may import |",
        "|---:|---|---|---|---|",
    ]
    for i, room in enumerate(ROOMS):
        names = ", ".join("`membench`" if n == "__init__" else f"`{n}`" for n in room.names)
        below = "its own room only" if i == 0 else f"its own and floors 0-{i - 1}"
        rows.append(f"| {i} | {names} | {room.holds} | {room.touches} | {below} |")
    return "\n".join(rows)
