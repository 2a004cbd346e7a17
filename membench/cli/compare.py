"""Runs read side by side: ``membench calibrate``, ``compare`` and ``agreement``.

``calibrate`` fits cartridge thresholds per modality on a dev run
(:func:`membench.analysis.calibrate.calibrate_run`); ``compare`` puts runs' figures side by side
with paired tests (:func:`membench.analysis.compare.compare_runs`); ``agreement`` ranks the
runs' systems under every judgment set and measures the agreement
(:func:`membench.analysis.agreement.rank_agreement`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .common import _read_flags, _write_output, resample_count


def _calibrate_cmd(a: argparse.Namespace) -> int:
    from ..analysis.calibrate import calibrate_run
    from ..systems.reference import calibration_path

    cal = calibrate_run(Path(a.run_dir), Path(a.sets) if a.sets else None)
    out = Path(a.out) if a.out else calibration_path(cal["system"])
    _write_output(out, json.dumps(cal, indent=2, sort_keys=True) + "\n", "--out")

    def kept(half: dict, kind: str) -> str:  # "0.640 (332)"; "n/a (0)" without queries
        v = half[kind + "_kept"]
        return ("n/a" if v is None else f"{v:.3f}") + f" ({half['n_' + kind]})"

    for m, c in cal["modalities"].items():
        fit, held = c["fit"], c["held_out"]
        print(
            f"{m:14s} threshold {c['threshold']:.6g}  by {c['split']['by']}: "
            f"fit answerable kept {kept(fit, 'answerable')}, unanswerable kept "
            f"{kept(fit, 'unanswerable')}; held out answerable kept "
            f"{kept(held, 'answerable')}, unanswerable kept {kept(held, 'unanswerable')}"
            f"{'' if c['within_gate'] else '  (gate not reachable on the fit half)'}"
        )
    for m, why in cal.get("not_calibrated", {}).items():
        print(f"{m:14s} not calibrated: {why}")
    print(f"wrote {out}")
    return 0


def _compare_cmd(a: argparse.Namespace) -> int:
    from ..analysis.compare import compare_runs, format_comparison

    comp = compare_runs(
        a.run_dirs,
        Path(a.sets) if a.sets else None,
        n_resamples=a.resamples,
        partial=a.partial,
        final=a.final,
        judgment_set=a.judgments,
        **paired_metrics(a.metric),
    )
    print(format_comparison(comp, metrics=a.metric or None))
    if a.json:
        _write_output(a.json, comp.pairs.to_json(orient="records", indent=1) + "\n", "--json")
        print(f"wrote the paired tests to {a.json}")
    return 0


def paired_metrics(names: list[str] | None) -> dict:
    """``--metric`` names that are per-item means are also the measures tested pairwise."""
    from ..metrics.measures import MEAN_MEASURES

    chosen = [m for m in names or [] if m in MEAN_MEASURES]
    return {"metrics": chosen} if chosen else {}


def _agreement_cmd(a: argparse.Namespace) -> int:
    from ..analysis.agreement import AGREEMENT_METRICS, format_agreement, rank_agreement

    ag = rank_agreement(
        a.run_dirs,
        Path(a.sets) if a.sets else None,
        metrics=a.metric or AGREEMENT_METRICS,
        n_resamples=a.resamples,
        partial=a.partial,
        final=a.final,
    )
    print(format_agreement(ag))
    if a.json:
        _write_output(a.json, ag.tau.to_json(orient="records", indent=1) + "\n", "--json")
        print(f"wrote the rank agreement to {a.json}")
    return 0


def _add_calibrate(sub) -> None:
    ca = sub.add_parser("calibrate", help="cartridge thresholds per modality from a dev run")
    ca.add_argument("run_dir", metavar="RUN_DIR", help="a dev run directory")
    ca.add_argument("--sets", help="sets folder (default: the one recorded in meta.json)")
    ca.add_argument("--out", help="file to write (default: bench/calibration/<system>.json)")
    ca.set_defaults(func=_calibrate_cmd)


def _add_compare(sub) -> None:
    cp = sub.add_parser(
        "compare",
        help="compare runs item by item: figures side by side and "
        "paired tests (bootstrap, permutation, Holm)",
    )
    cp.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="two or more run directories")
    cp.add_argument("--sets", help="sets folder (default: the one each run recorded)")
    cp.add_argument(
        "--metric",
        action="append",
        help="only this measure (repeatable; shown "
        "and tested pairwise, Holm over those tests; default: the measures the "
        "registry compares pairwise)",
    )
    cp.add_argument(
        "--resamples",
        type=resample_count,
        default=10_000,
        help="bootstrap / permutation resamples (default 10000)",
    )
    cp.add_argument(
        "--judgments",
        metavar="SET",
        help="read relevance under this judgment "
        "set (default: gold; e.g. all_annotators, graded, session)",
    )
    cp.add_argument("--json", help="also write the paired tests as JSON here")
    _read_flags(cp)
    cp.set_defaults(func=_compare_cmd)


def _add_agreement(sub) -> None:
    ag = sub.add_parser(
        "agreement",
        help="rank the runs' systems under every judgment set "
        "and measure the agreement (Kendall's tau, bootstrap interval, n)",
    )
    ag.add_argument(
        "run_dirs",
        nargs="+",
        metavar="RUN_DIR",
        help="two or more run directories over the same items",
    )
    ag.add_argument("--sets", help="sets folder (default: the one each run recorded)")
    ag.add_argument(
        "--metric",
        action="append",
        help="rank by this measure (repeatable; "
        "default: recall@1000, recall@10, ndcg@10, ndcg_graded@10)",
    )
    ag.add_argument(
        "--resamples",
        type=resample_count,
        default=2000,
        help="bootstrap resamples over queries (default 2000)",
    )
    ag.add_argument("--json", help="also write the tau table as JSON here")
    _read_flags(ag)
    ag.set_defaults(func=_agreement_cmd)


COMMANDS = {"calibrate": _add_calibrate, "compare": _add_compare, "agreement": _add_agreement}


def register(sub, name: str) -> None:
    """Add the subcommand ``name`` (a key of :data:`COMMANDS`) to the subparsers ``sub``."""
    COMMANDS[name](sub)
