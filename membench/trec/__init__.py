"""Plain TREC files: ``membench trec-eval`` and the reader and evaluator under it.

Reads TREC runs (``qid Q0 docid rank score tag``) and qrels (``qid iter docid rel``) with
bounded, located errors, ranks them by membench's tie-breaking (or trec_eval's), and scores
them with the same formulas as :mod:`membench.metrics.ranking`; :mod:`.trec_eval` prints
trec_eval 10.0's measures in its output format. Reads TREC files; writes nothing but its
output. (Its old path: membench/moved.py.)

The modules, each importing only those before it:

* :mod:`.parse`: a piece of a file as columns (fields, ranks and scores, id hashes; one C
  pass, ``_trecscan.c``, or pyarrow's CSV reader for the usual layout, else a strict numpy
  reader that locates every error);
* :mod:`.read`: the run read in bounded pieces, qrels as per-query hash tables, lines handed
  on in groups of whole queries (contiguous, or grouped in memory or on disk), the bounds
  :data:`MAX_HELD_BYTES` and :data:`MAX_QRELS_BYTES`, :func:`read_trec_qrels`;
* :mod:`.evaluate`: each group ranked (:data:`TIES`), :class:`TrecRun`,
  :func:`read_trec_run` and :func:`evaluate_trec`;
* :mod:`.output`: :func:`write_trec_run` and :func:`write_trec_qrels` (on their own);
* :mod:`.measures`: trec_eval's measures, one record each with its compute function (numpy
  only);
* :mod:`.trec_eval`: the command, on :mod:`.read` and :mod:`.evaluate`.
"""

from .evaluate import TIES, TrecRun, evaluate_trec, read_trec_run
from .output import write_trec_qrels, write_trec_run
from .read import CHUNK_BYTES, MAX_HELD_BYTES, MAX_QRELS_BYTES, read_trec_qrels

__all__ = [
    "CHUNK_BYTES",
    "MAX_HELD_BYTES",
    "MAX_QRELS_BYTES",
    "TIES",
    "TrecRun",
    "evaluate_trec",
    "read_trec_qrels",
    "read_trec_run",
    "write_trec_qrels",
    "write_trec_run",
]
