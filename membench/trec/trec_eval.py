"""``membench trec-eval QRELS RUN``: trec_eval 10.0's semantics on membench's TREC engine
(:mod:`membench.trec.read`, :mod:`membench.trec.evaluate`), with trec_eval's options, measure
names, order and output (docs/runs.md, "What trec_eval's semantics means here", gives each rule
and its source in trec_eval's C code).

Start at :func:`trec_eval` (and :func:`main` for the command line). By default its output is
trec_eval's line for line (checked against the C program, ``tests/test_trec_eval_conformance.py``):
ranking by score descending (doubles), then docid descending (``ties="trec_eval"``); reading as
trec_eval does (``compat``: scores by ``atof``, relevance by ``atol``,
:func:`membench.core.textfiles.c_atof`); its refusals (``lenient=False``) as located errors with
its exit status (:func:`exit_status`); options ``-q``, ``-c`` (``complete``), ``-l``
(``level``), ``-M`` (``max_docs``), ``-J`` (``judged_only``), ``-m`` (:func:`parse_request`);
output ``%-22s\\t%s\\t%6.4f`` in trec_eval's table order, per query (``-q``) in qid order
without ``runid``, ``num_q``, ``gm_map``.

Measures, one record each in :data:`membench.trec.measures.MEASURES`: ``runid``, ``num_q``,
``num_ret``, ``num_rel``, ``num_rel_ret``, ``map``, ``gm_map``, ``Rprec``, ``bpref``,
``recip_rank``, ``iprec_at_recall``, ``P``, ``recall``, ``Rprec_mult``, ``ndcg_cut``, ``map_cut``,
``success``, ``set_P``, ``set_recall``, ``set_map``, ``set_F``, ``num_nonrel_judged_ret``; any
other trec_eval measure, or a nickname holding one (``all_trec``), is refused by name.

Other rules, asked for by name: ``ties="membench"``
(:data:`membench.contract.protocol.TIE_BREAKING`), ``ties="trec_eval9"`` (scores as 32-bit
floats, as trec_eval 9 and pytrec_eval), ``compat=False`` (membench's strict reading),
``lenient=True`` (no refusal, as trec_eval 9 and pytrec_eval). Touches: reads the two files.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import EXIT_DISK_FULL, EXIT_INTERRUPTED, EXIT_OK, InputError, MembenchError
from ..core.textfiles import C_LONG_MAX, C_LONG_MIN, c_atof, c_atol
from .measures import (
    COUNTS,
    MEASURES,
    NICKNAMES,
    NOT_IMPLEMENTED,  # noqa: F401  (read from here by the docs and tests)
    TREC_EVAL_TABLE,
    Judged,
    Scored,
    Totals,
    compute,
)

DEFAULT_MEASURES = ("official",)

# trec_eval 10.0's exit statuses (trec_eval.c), which the command follows where it has them;
# membench's own (EXIT_OK, EXIT_DISK_FULL, EXIT_INTERRUPTED) from core/errors.py (docs/runs.md)
EXIT_ILLEGAL_MEASURE = 1  # not one of trec_eval's measures, "name." without parameters,
EXIT_USAGE = 1  # "P_5"; an unknown option or a wrong number of arguments
EXIT_CANNOT_READ = 2  # an empty (or unreadable) qrels or run; membench's other refusals
EXIT_QUERY_REFUSED = 4  # a docid twice in an evaluated query, a qrels query not in the run
_EXIT_BY_RULE = {
    "DUPLICATE_DOC": EXIT_QUERY_REFUSED,
    "MISSING_QUERY": EXIT_QUERY_REFUSED,
    "NO_RUN_LINE": EXIT_QUERY_REFUSED,
}


class IllegalMeasure(MembenchError):
    """A ``-m`` value trec_eval itself refuses ("illegal measure": exit status 1)."""


@dataclass
class Request:
    """Measures asked for, in trec_eval's order, with their parameters."""

    measures: list[tuple[str, tuple]]

    def names(self) -> list[str]:
        return [n for m, params in self.measures for n in MEASURES[m].names(params)]


def _params(name: str, kind: str, text: str, spec: str) -> tuple:
    if kind == "weight":  # m_set_F.c: atof of the first value, the text in the name
        return (text, c_atof(text.split(",")[0]))
    parts = text.split(",")
    if kind == "cutoffs":
        vals = [c_atol(p) for p in parts]
        if any(v <= 0 for v in vals):
            raise MembenchError(
                f"trec-eval: -m {spec}: cutoffs must be positive (trec_eval: "
                "'Negative cutoff detected')"
            )
    else:  # meas_init.c get_double_cutoffs: atof, no range check
        vals = [c_atof(p) for p in parts]
        if any(v != v for v in vals):
            raise MembenchError(f"trec-eval: -m {spec}: a parameter reads as NaN")
    vals.sort()
    if len(set(vals)) != len(vals):
        raise MembenchError(
            f"trec-eval: -m {spec}: duplicate cutoffs (trec_eval: 'duplicate cutoffs detected')"
        )
    return tuple(vals)


def parse_request(specs: Sequence[str] | None) -> Request:
    """trec_eval's ``-m`` arguments (each ``name``, ``name.p1,p2`` or a nickname; a measure
    asked twice is printed once, with the parameters given first, as trec_eval does; ``P_5``
    is an illegal measure, as in trec_eval) -> the measures in trec_eval's table order. A
    measure or nickname membench does not compute is a :class:`MembenchError` naming what is
    missing."""
    chosen: dict[str, tuple | None] = {}
    for spec in specs or DEFAULT_MEASURES:
        for part in spec.split():
            name, dot, params = part.partition(".")
            if dot and not params:
                raise IllegalMeasure(
                    f"trec-eval: illegal measure {part!r}: no parameter after "
                    "the '.' (trec_eval: 'improper measure in parameter')"
                )
            if not dot and name not in MEASURES and name not in NICKNAMES and "_" in name:
                base = name.rpartition("_")[0]
                if base in MEASURES and MEASURES[base].kind != "none":
                    raise IllegalMeasure(
                        f"trec-eval: illegal measure {name!r}: parameters "
                        f"follow a '.' (-m {base}.{name[len(base) + 1 :]}), "
                        "as trec_eval reads them"
                    )
            if name in NICKNAMES:
                missing = [m for m in NICKNAMES[name] if m not in MEASURES]
                if missing:
                    raise MembenchError(
                        f"trec-eval: -m {name}: membench does not compute "
                        f"{', '.join(missing)} (of trec_eval's '{name}' set); ask for the "
                        f"measures it has by name (docs/metrics.md lists both)"
                    )
                for m in NICKNAMES[name]:
                    chosen.setdefault(m, None)
                continue
            if name not in MEASURES:
                if name in TREC_EVAL_TABLE:
                    raise MembenchError(
                        f"trec-eval: -m {part}: trec_eval's {name} is not "
                        "computed by membench (docs/metrics.md lists what is)"
                    )
                raise IllegalMeasure(
                    f"trec-eval: illegal measure {name!r} (not trec_eval's); "
                    f"membench computes {', '.join(MEASURES)}"
                )
            kind = MEASURES[name].kind
            if params and kind != "none":
                if chosen.get(name) is None:
                    chosen[name] = _params(name, kind, params, part)
            else:
                chosen.setdefault(name, None)
    return Request(
        [
            (m, chosen[m] if chosen[m] is not None else MEASURES[m].default)
            for m in TREC_EVAL_TABLE
            if m in chosen
        ]
    )


def parse_measures(specs: Sequence[str] | None) -> list[str]:
    """The output names of ``specs`` (``["recall.10,100", "map"]`` -> ``["map",
    "recall_10", "recall_100"]``: trec_eval's order)."""
    return parse_request(specs).names()


# --------------------------------------------------------------------------- evaluation


def _fmt(name: str, qid: str, value) -> str:
    if isinstance(value, str):
        return f"{name:<22}\t{qid}\t{value}"
    if name in COUNTS:
        return f"{name:<22}\t{qid}\t{int(value)}"
    if value != value:  # NaN: as C's printf("%6.4f"), sign included
        return f"{name:<22}\t{qid}\t{'-nan' if math.copysign(1.0, value) < 0 else 'nan':>6}"
    return f"{name:<22}\t{qid}\t{value:6.4f}"


def _is_empty(path: str | os.PathLike) -> bool:
    """No byte at all (a stream, which cannot be sized again, counts as empty)."""
    p = Path(path)
    return not p.is_file() or p.stat().st_size == 0


def _last_tag(path: Path) -> str:
    """The sixth field of the run's last line that is not blank or a comment (trec_eval
    keeps the run_id of the last line it reads)."""
    size = path.stat().st_size
    step = 1 << 16
    with open(path, "rb") as f:
        end = size
        tail = b""
        while end > 0:
            start = max(0, end - step)
            f.seek(start)
            tail = f.read(end - start) + tail
            lines = tail.split(b"\n")
            for line in reversed(lines[1:] if start > 0 else lines):
                fields = line.split()
                if fields and not line.lstrip().startswith(b"#") and len(fields) >= 6:
                    return fields[5].decode("utf-8", "replace")
            end = start
            tail = lines[0] if start > 0 else b""
    return ""


def _refuse_empty(run, qrels_path, run_path, lenient: bool) -> None:
    """trec_eval's refusals of an empty qrels or run (none with ``lenient``)."""
    if lenient:
        return
    if run.n_qrels_queries == 0:
        raise InputError(
            qrels_path,
            None,
            None,
            "no qrels line: trec_eval refuses an empty "
            "qrels file ('Cannot read qrels file'); --lenient evaluates against it",
            rule="EMPTY",
        )
    if run.n_lines == 0:
        if _is_empty(run_path):
            raise InputError(
                run_path,
                None,
                None,
                "no run line: trec_eval refuses an empty "
                "run ('Cannot read results file'); --lenient evaluates it",
                rule="EMPTY",
            )
        raise InputError(
            run_path,
            None,
            None,
            "no run line (only comments or blank lines): "
            "trec_eval stops at the first qrels query ('result qid ... not "
            "found'); --lenient evaluates it",
            rule="NO_RUN_LINE",
        )


def _evaluated(
    run, in_run: np.ndarray, qrels_path, keep_missing: bool, complete: bool
) -> np.ndarray:
    """The qrels queries evaluated, in qid order (bytes): those in the run, or all of them
    with -c; one missing from the run is refused unless ``keep_missing`` (-c, --lenient)."""
    judged = np.arange(run.n_qrels_queries)
    if not keep_missing:
        missing = judged[~in_run[judged]]
        if len(missing):
            qid = min((run.qids[i] for i in missing.tolist()), key=lambda s: s.encode())
            raise InputError(
                qrels_path,
                None,
                "qid",
                f"query {qid!r} ({len(missing)} "
                f"qrels quer{'y' if len(missing) == 1 else 'ies'} in all) has no "
                "line in the run: trec_eval 10.0 stops here ('result qid ... not "
                "found'); -c evaluates it as an empty ranking, --lenient leaves "
                "it out",
                rule="MISSING_QUERY",
            )
    chosen = judged if complete else judged[in_run[judged]]
    return np.asarray(
        sorted(chosen.tolist(), key=lambda i: run.qids[i].encode("utf-8")), dtype=np.int64
    )


def _scored(
    run,
    in_run: np.ndarray,
    evaluated: np.ndarray,
    level: int,
    max_docs: int | None,
    judged_only: bool,
) -> Scored:
    """The evaluated queries as the measures read them (:class:`membench.trec.measures.Scored`):
    retrieved counts capped at -M, the judged retrieved lines (ranked among the judged under
    -J), the qrels per query and the ideal ordering for ndcg."""
    nq = len(evaluated)
    slot = np.full(len(run.qids) + 1, -1, dtype=np.int64)
    slot[evaluated] = np.arange(nq)
    # retrieved per query, capped at -M
    ret = np.zeros(nq, dtype=np.int64)
    has = slot[run.ret_q] >= 0
    np.add.at(ret, slot[run.ret_q[has]], run.ret_n[has])
    keep = (run.judged_rank > 0) & (slot[run.judged_q] >= 0)
    jq, jr, jg = slot[run.judged_q[keep]], run.judged_rank[keep], run.judged_rel[keep]
    if max_docs is not None:
        ret = np.minimum(ret, max_docs)
        inside = jr <= max_docs
        jq, jr, jg = jq[inside], jr[inside], jg[inside]
    o = np.lexsort((jr, jq))
    jq, jr, jg = jq[o], jr[o], jg[o]
    if judged_only:  # -J: only judged documents (relevance >= 0), ranked among them
        ok = jg >= 0
        jq, jg = jq[ok], jg[ok]
        first = np.searchsorted(jq, np.arange(nq))
        jr = (np.arange(len(jq)) - first[jq] + 1).astype(np.int64)
        ret = np.bincount(jq, minlength=nq).astype(np.int64)
    # trec_eval -c ranks a missing query as one unjudged document, "ceci_nest_pas_un_docno"
    # (trec_eval.c), then prints num_ret 0: the measures see one retrieved document (none
    # under -J, which removes it, or -M 0)
    bogus = ~in_run[evaluated]
    shown_ret = ret.copy()
    if bogus.any() and not judged_only and (max_docs is None or max_docs >= 1):
        ret[bogus] = 1
    # the qrels of each evaluated query
    qq = slot[run.qrels_q]
    qsel = qq >= 0
    qq, qrel = qq[qsel], run.qrels_rel[qsel]
    n_rel = np.bincount(qq[qrel >= level], minlength=nq).astype(np.int64)
    n_nonrel = np.bincount(qq[(qrel >= 0) & (qrel < level)], minlength=nq).astype(np.int64)
    pos = qrel > 0
    gq, gg = qq[pos], qrel[pos].astype(np.float64)
    og = np.lexsort((-gg, gq))
    gq, gg = gq[og], gg[og]
    ideal = (gq, gg, np.arange(len(gq)) - np.searchsorted(gq, np.arange(nq))[gq])
    return Scored(Judged(ret, jq, jr, jg), shown_ret, n_rel, n_nonrel, ideal, level)


def trec_eval_values(
    qrels_path: str | os.PathLike,
    run_path: str | os.PathLike,
    measures: Sequence[str] | None = None,
    *,
    complete: bool = False,
    ties: str = "trec_eval",
    compat: bool = True,
    lenient: bool = False,
    level: int = 1,
    max_docs: int | None = None,
    judged_only: bool = False,
) -> tuple[list[str], dict[str, dict[str, float]], dict[str, object]]:
    """``(output names, {qid: {name: value}}, {name: summary value})``: what
    :func:`trec_eval` prints, unrounded (queries in qid order); the arguments are its
    options (module docstring)."""
    from .evaluate import TIES, _scan_run
    from .read import CHUNK_BYTES

    if ties not in TIES:
        raise MembenchError(f"trec-eval: --ties must be one of {', '.join(TIES)}")
    if level < 0:
        raise MembenchError(f"trec-eval: -l {level}: the relevance level must be >= 0")
    if max_docs is not None and max_docs < 0:
        raise MembenchError(f"trec-eval: -M {max_docs}: must be >= 0")
    request = parse_request(measures)
    names = request.names()
    run = _scan_run(
        Path(run_path),
        Path(qrels_path),
        CHUNK_BYTES,
        ties,
        keep_lines=False,
        compat=compat,
        duplicates="first" if lenient else "refuse",
        max_docs=max_docs,
    )
    _refuse_empty(run, qrels_path, run_path, lenient)
    in_run = np.zeros(len(run.qids), dtype=bool)
    in_run[run.ret_q] = True
    evaluated = _evaluated(run, in_run, qrels_path, complete or lenient, complete)
    s = _scored(run, in_run, evaluated, level, max_docs, judged_only)
    per = compute(request.measures, s)
    single = [
        n
        for m, params in request.measures
        if MEASURES[m].per_query
        for n in MEASURES[m].names(params)
    ]
    qids = [run.qids[i] for i in evaluated.tolist()]
    rows = {qid: {n: per[n][i].item() for n in single} for i, qid in enumerate(qids)}
    # trec_eval -c (m_num_rel.c): num_rel sums relevance > 0 over every qrels query
    totals = Totals(
        s.nq,
        lambda: _last_tag(Path(run_path)),
        int(np.count_nonzero(run.qrels_rel > 0)) if complete else None,
    )
    total = {
        n: MEASURES[m].summed(per.get(n), totals)
        for m, params in request.measures
        for n in MEASURES[m].names(params)
    }
    return names, rows, total


def trec_eval(
    qrels_path: str | os.PathLike,
    run_path: str | os.PathLike,
    measures: Sequence[str] | None = None,
    *,
    per_query: bool = False,
    summary: bool = True,
    **options,
) -> Iterator[str]:
    """The output lines of ``membench trec-eval`` (the module docstring; ``summary``: the
    ``all`` lines, trec_eval's ``-n`` turns them off; ``options``: those of
    :func:`trec_eval_values`)."""
    names, rows, total = trec_eval_values(qrels_path, run_path, measures, **options)
    if per_query:
        for qid, values in rows.items():
            for m, v in values.items():
                yield _fmt(m, qid, v)
    if summary:
        for m in names:
            yield _fmt(m, "all", total[m])


# --------------------------------------------------------------------------- the command

TIES_HELP = (
    "how equal scores are ordered. trec_eval (default): trec_eval 10.0's rule, scores "
    "descending (as doubles), then docid descending, the rank column ignored. trec_eval9: "
    "the same with scores compared as 32-bit floats (trec_eval 9, pytrec_eval). membench: "
    "score descending, then the rank column ascending, then line order (the system's own "
    "order of a tie). Example: 'q Q0 a 1 1.0 t' and 'q Q0 b 2 1.0 t' with b relevant give "
    "recip_rank 1.0 by trec_eval's rule (b > a) and 0.5 by membench's (a, then b)"
)


def _c_long(text: str) -> int:
    """An integer flag as trec_eval reads it into a C ``long``: a value past the 64-bit range is
    clamped to it (``-M 99999999999999999999999``: every document); not an integer: refused."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text[:40]!r}") from None
    return max(C_LONG_MIN, min(C_LONG_MAX, v))


def add_arguments(p) -> None:
    """The ``trec-eval`` command's arguments (on ``p``, an argparse parser), trec_eval's
    letters."""
    p.add_argument("qrels", help="qrels file: qid iter docid rel")
    p.add_argument("run", help="run file: qid Q0 docid rank score tag")
    p.add_argument(
        "-m",
        dest="measure",
        action="append",
        metavar="MEASURE",
        help="measure, trec_eval style (map / P.5,10 / ndcg_cut.10 / "
        "iprec_at_recall..1,.5 ...) or nickname (official); repeatable; default: "
        "official (" + " ".join(NICKNAMES["official"]) + ")",
    )
    p.add_argument("-q", action="store_true", help="also one line per query and measure")
    p.add_argument(
        "-c",
        action="store_true",
        help="evaluate every qrels query, as trec_eval "
        "-c: one missing from the run against an empty ranking",
    )
    p.add_argument(
        "-l",
        dest="level",
        type=_c_long,
        default=1,
        metavar="LEVEL",
        help="relevance >= LEVEL is relevant (default 1)",
    )
    p.add_argument(
        "-M",
        dest="max_docs",
        type=_c_long,
        default=None,
        metavar="N",
        help="only the first N documents of each ranking",
    )
    p.add_argument(
        "-J",
        dest="judged_only",
        action="store_true",
        help="judged documents only: unjudged ones removed, ranks among the judged",
    )
    p.add_argument(
        "-n",
        dest="no_summary",
        action="store_true",
        help="no summary: the per-query lines only (with -q)",
    )
    p.add_argument(
        "-R",
        dest="rel_format",
        default="qrels",
        metavar="FORMAT",
        help="relevance format: qrels only (trec_eval's prefs, qrels_prefs and "
        "qrels_jg are refused: not implemented)",
    )
    p.add_argument(
        "-T",
        dest="results_format",
        default="trec_results",
        metavar="FORMAT",
        help="results format: trec_results only",
    )
    p.add_argument(
        "-Z",
        dest="zscores",
        default=None,
        metavar="FILE",
        help="(trec_eval's z-scores: refused, not implemented)",
    )
    p.add_argument(
        "-N",
        dest="num_docs",
        default=None,
        metavar="N",
        help="(trec_eval's collection size, used by measures membench does not compute: refused)",
    )
    p.add_argument(
        "-D",
        dest="debug",
        default=None,
        metavar="LEVEL",
        help="(trec_eval's debug output: refused, not implemented)",
    )
    p.add_argument(
        "-o",
        dest="old_format",
        action="store_true",
        help="(trec_eval's old output format: refused, not implemented)",
    )
    p.add_argument(
        "--ties",
        choices=["trec_eval", "trec_eval9", "membench"],
        default="trec_eval",
        help=TIES_HELP,
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="membench's strict reading: a run line with fields after the sixth, a "
        "blank line or a '#' line (a qrels line starting with '#'), a score that is "
        "not a finite decimal number, a rank or relevance that is not an integer is "
        "a located error; by default they are read as trec_eval reads them "
        "(ignored, skipped; scores by C's atof: inf, nan, 0x1p3, 1.5abc; rank and "
        "relevance by atol: 0x10 is 0, 1.5 is 1)",
    )
    p.add_argument(
        "--lenient",
        action="store_true",
        help="no refusal of trec_eval's: a docid repeated for a query counts once "
        "(its first position), an empty run is evaluated, a qrels query missing "
        "from the run is left out (as trec_eval 9 and pytrec_eval)",
    )
    p.add_argument(
        "--trec-eval-compat",
        action="store_true",
        help="(kept for old command lines: trec_eval's reading is the default)",
    )


def exit_status(e: MembenchError) -> int:
    """trec_eval's exit status for the refusal ``e`` (:data:`EXIT_ILLEGAL_MEASURE`,
    :data:`EXIT_QUERY_REFUSED`; anything else :data:`EXIT_CANNOT_READ`, membench's 2)."""
    if isinstance(e, IllegalMeasure):
        return EXIT_ILLEGAL_MEASURE
    return _EXIT_BY_RULE.get(getattr(e, "rule", ""), EXIT_CANNOT_READ)


def run_command(a) -> int:
    """Print what ``a`` (parsed by :func:`add_arguments`) asks for; a refusal is one line on
    stderr and trec_eval's exit status (:func:`exit_status`)."""
    import sys

    from .parse import note_missing

    try:
        note_missing(sys.stderr)  # without the compiled reader: one line says so
        return _run(a, sys.stdout)
    except MembenchError as e:
        print(f"membench: {e}", file=sys.stderr)
        return exit_status(e)
    except BrokenPipeError:
        raise
    except OSError as e:
        code, line = os_error(e)
        print(f"membench: {line}", file=sys.stderr)
        return code


def os_error(e: OSError) -> tuple[int, str]:
    """The exit status and one line for a file-system error: disk full (no space left or
    quota exceeded, writing the output or a temporary file in TMPDIR) is
    :data:`EXIT_DISK_FULL` (membench's status; trec_eval ignores a failed write and exits 0),
    anything else (a file that cannot be opened or read) :data:`EXIT_CANNOT_READ`, as
    trec_eval's "Quit in file"."""
    import errno

    where = e.filename2 or e.filename or "standard output"
    what = e.strerror or type(e).__name__
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return EXIT_DISK_FULL, (
            f"{where}: disk full ({what}): the output is incomplete; free "
            "some space and run it again"
        )
    return EXIT_CANNOT_READ, f"{where}: {what}"


def _run(a, out) -> int:
    if a.rel_format != "qrels":
        raise MembenchError(
            f"trec-eval: -R {a.rel_format}: membench reads qrels only "
            "(trec_eval's preference and judgment-group formats are not "
            "implemented; docs/metrics.md)"
        )
    if a.results_format != "trec_results":
        raise MembenchError(f"trec-eval: -T {a.results_format}: membench reads trec_results only")
    if a.zscores is not None:
        raise MembenchError(
            "trec-eval: -Z (z-scores against a topic file): not implemented "
            "by membench (docs/metrics.md)"
        )
    if a.debug is not None or a.old_format:
        raise MembenchError(
            f"trec-eval: {'-D' if a.debug is not None else '-o'}: trec_eval's "
            "debug and old output formats are not implemented by membench"
        )
    if a.num_docs is not None:
        raise MembenchError(
            "trec-eval: -N: no measure membench computes uses the collection "
            "size; not implemented (docs/metrics.md)"
        )
    summary = not a.no_summary
    for line in trec_eval(
        a.qrels,
        a.run,
        a.measure,
        per_query=a.q,
        complete=a.c,
        ties=a.ties,
        compat=not a.strict,
        lenient=a.lenient,
        level=a.level,
        max_docs=a.max_docs,
        judged_only=a.judged_only,
        summary=summary,
    ):
        out.write(line + "\n")
    out.flush()  # a write error is reported here, not lost at exit
    return EXIT_OK


class _NoPandas:
    """A meta-path finder under which ``import pandas`` fails as when it is not installed
    (:func:`main` keeps pandas out of ``membench trec-eval``'s start-up)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(
                f"No module named {name!r} (kept out of membench trec-eval)", name=name
            )
        return None


def main(argv: Sequence[str]) -> int:
    """``membench trec-eval ARGS`` without the rest of membench's command line: numpy and
    this module only, so that start-up stays a fraction of a second (``membench.launch``).
    Errors as the full command line prints them: one line, a status of docs/runs.md's table."""
    import argparse
    import sys

    class _Parser(argparse.ArgumentParser):
        def error(self, message):  # trec_eval's usage error: status 1
            self.print_usage(sys.stderr)
            self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    p = _Parser(
        prog="membench trec-eval",
        description="trec_eval's measures and output on plain TREC "
        "files (membench's engine; trec_eval 10.0's semantics)",
    )
    add_arguments(p)
    p.add_argument("--quiet", action="store_true", help="(no progress lines are printed)")
    # pyarrow imports pandas (0.3 s of start-up) the first time it converts an array, to look
    # for pandas objects; this process hands it none, so pandas is kept out: an import of it
    # fails as if it were not installed (pyarrow then goes on without it). Not None in
    # sys.modules: pyarrow's compiled import takes that None for the module and fails on it.
    hide = "pandas" not in sys.modules
    blocker = _NoPandas()
    if hide:
        sys.meta_path.insert(0, blocker)
    try:
        return run_command(p.parse_args(list(argv)))
    except MembenchError as e:
        print(f"membench: {e}", file=sys.stderr)
        return exit_status(e)
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        print("membench: stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as e:
        code, line = os_error(e)
        print(f"membench: {line}", file=sys.stderr)
        return code
    finally:
        if hide:
            sys.meta_path.remove(blocker)
