"""``membench export RUN_DIR --out DIR``: a run in the files the field's tools read.

Start at :func:`export_run`. Writes, for the queries the run is scored on
(:class:`~membench.metrics.rundir.RunDir`, which refuses what metrics refuses), in the run's
order (its ``run.jsonl`` lines):

* ``run.trec``: ``qid Q0 atom_id rank score membench``, each query's hits ranked by membench's
  rule (:data:`membench.contract.protocol.TIE_BREAKING`, repeated atoms dropped), the score
  column **rank-derived** (``n + 1 - rank`` for n ranked atoms) so that tools which break score
  ties by document id see membench's order (the system's own scores stay in ``run.jsonl``);
* ``qrels.trec``: ``qid 0 atom_id grade`` for every atom of the run that hits a gold region of
  an answerable query (:mod:`membench.metrics.atom_level`); unanswerable queries have no line;
* ``topics.jsonl``: the queries as a system sees them (:mod:`membench.sets.topics`).

trec_eval-style tools on ``run.trec`` + ``qrels.trec`` give ``metrics.json["atom_level"]``
exactly, once averaged over the run's answerable queries (``trec_eval -c``). Writes only into
``out``, each file atomically and never through a symlink (:mod:`membench.core.atomic`). The
line counts returned are counted in the bytes written, every line is checked to hold its six
(run) or four (qrels) fields first, and ids are identifiers (:mod:`membench.core.ids`), so no id
can add a line or a field.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..contract.protocol import rank_order
from ..core.atomic import atomic_write_text
from ..core.errors import MembenchError
from ..sets.topics import topic, topic_id, write_topics
from .rundir import RunDir

TAG = "membench"


def export_run(
    run: str | os.PathLike | RunDir,
    out: str | os.PathLike,
    sets_dir: str | os.PathLike | None = None,
    *,
    partial: bool = False,
    final: bool = False,
) -> dict[str, Any]:
    """Write ``run.trec``, ``qrels.trec`` and ``topics.jsonl`` of a run into ``out``; returns
    what was written (counts and paths)."""
    rd = (
        run if isinstance(run, RunDir) else RunDir.open(run, sets_dir, partial=partial, final=final)
    )
    scores = rd.scores()
    by_qid = {q: i for i, q in enumerate(scores.query_id)}
    records = {r.query_id: r for r in rd.records}
    order = [row.query_id for row in rd.rows if row.query_id in by_qid]  # the run's order
    out = Path(out)
    run_lines: list[str] = []
    for qid in order:
        row = rd.row_by_query[qid]
        ranked = rank_order(row.hit_ids, row.scores)
        t = topic_id(qid)
        n = len(ranked)
        run_lines.extend(f"{t} Q0 {a} {i} {n + 1 - i} {TAG}\n" for i, a in enumerate(ranked, 1))
    qrels_lines: list[str] = []
    n_answerable = 0
    for qid in order:
        i = by_qid[qid]
        if not scores.answerable[i]:
            continue
        n_answerable += 1
        qrels_lines.extend(f"{topic_id(qid)} 0 {a} {g}\n" for a, g in scores.atom_qrels[i].items())
    run_text, qrels_text = "".join(run_lines), "".join(qrels_lines)
    _check_lines(run_text, len(run_lines), 6, "run.trec")
    _check_lines(qrels_text, len(qrels_lines), 4, "qrels.trec")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "run.trec", run_text)
    atomic_write_text(out / "qrels.trec", qrels_text)
    n_topics = write_topics(out / "topics.jsonl", [topic(records[q]) for q in order])
    return {
        "out": str(out),
        "queries": len(order),
        "answerable": n_answerable,
        "run_lines": run_text.count("\n"),
        "qrels_lines": qrels_text.count("\n"),
        "topics": n_topics,
        "label": rd.label,
        "submission": rd.submission,
    }


def _check_lines(text: str, n: int, fields: int, name: str) -> None:
    """Every one of the ``n`` lines of ``text`` holds ``fields`` fields (a TREC reader splits
    on whitespace): else the ids let a line through that a reader would read otherwise, a bug
    the readers' identifier checks exist to prevent."""
    lines = text.splitlines()
    bad = next((j for j, line in enumerate(lines) if len(line.split()) != fields), None)
    if len(lines) != n or bad is not None:
        where = (
            f"line {bad + 1}: {lines[bad][:80]!r}"
            if bad is not None
            else f"{len(lines)} lines for {n} entries"
        )
        raise MembenchError(
            f"export: {name} would not read back as written ({where}); nothing written"
        )
