"""Writing TREC files: a run (``qid Q0 docid rank score tag``) and qrels (``qid iter docid
rel``), one line per document, single spaces, ``\\n`` line ends; a score is written as its
``repr()``, which reads back as the same double. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


def write_trec_run(
    path: str | Path, run: Mapping[str, Sequence[tuple[str, float]]], tag: str = "membench"
) -> None:
    """Write ``{qid: [(docid, score), ...]}``; ranks are 1.. in the given order."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for qid, hits in run.items():
            f.writelines(f"{qid} Q0 {d} {i} {s!r} {tag}\n" for i, (d, s) in enumerate(hits, 1))


def write_trec_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for qid, docs in qrels.items():
            f.writelines(f"{qid} 0 {d} {int(r)}\n" for d, r in docs.items())
