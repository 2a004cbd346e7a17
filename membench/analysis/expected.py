"""The reference systems' dev figures, kept next to the commands that produce them.

    python bench/results.py runs/bm25-dev runs/dense-dev runs/hybrid-dev   # print the table
    python bench/results.py ... --freeze           # and update bench/expected/dev.json
    python bench/results.py                        # the table of the frozen figures

``bench/expected/dev.json`` holds, per system, the command that made the run and the figures of
its ``metrics.json`` (per modality and all). ``tests/test_expected_figures.py`` re-runs bm25 on
dev and checks it reproduces them (pyserini's "2CR" idea: the results table is a regression
test); the README's figures table is printed from the same file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from membench.analysis.tell_columns import audited_header, native_header
from membench.core.paths import BENCH_DIR
from membench.metrics.measures import HEADLINE
from membench.modalities import MODALITIES

EXPECTED = BENCH_DIR / "expected" / "dev.json"
KEYS = HEADLINE  # the measure registry's headline figures
ORDER = (*MODALITIES, "all")


def figures(run_dir: Path) -> dict:
    """The frozen figures of one run, computed from its files (never from a metrics.json that
    could have been edited); a run whose figures are not a valid submission (it saw the gold,
    or it was read PARTIAL) cannot be frozen."""
    from ..metrics.rundir import RunDir

    rd = RunDir.open(run_dir)
    meta, m = rd.meta, rd.metrics(write=False)
    sub = m.get("submission") or {}
    if not sub.get("valid", True):
        raise SystemExit(
            f"{run_dir}: not a valid submission ({'; '.join(sub['reasons'])}): "
            "its figures cannot be frozen"
        )
    out = {
        "command": f"membench run --system {meta['system']} --split dev --out {run_dir} --metrics",
        "system": meta["system"],
        "set_sha256": meta["set_sha256"],
        "calibration": meta["config"].get("calibration"),
        "modalities": {},
    }
    for mod in ORDER:
        if mod not in m:
            continue
        out["modalities"][mod] = {
            k: {
                "value": m[mod][k]["value"],
                "n": m[mod][k]["n"],
                "denominator": m[mod][k]["denominator"],
            }
            for k in KEYS
        }
    out["pdf_text_source"] = pdf_text_source(rd)
    out["store"] = store_of(rd)
    # the strength of each upstream tell, from the audit of the sets the run read: the label
    # of the natives' column wherever these figures are shown
    from .tell_columns import sets_tells

    out["native_tells"] = {
        k: (None if v is None else round(float(v), 4))
        for k, v in sets_tells(meta["sets_dir"]).items()
    }
    if meta.get("truncation"):  # what an encoder read of the atoms (docs/cards.md)
        out["truncation"] = meta["truncation"]
    if meta.get("limit") is not None:
        out["limit"] = meta["limit"]
        out["command"] = out["command"].replace(" --metrics", f" --limit {meta['limit']} --metrics")
    return out


def store_of(rd) -> dict:
    """The store a run's queries were asked of (meta.json ``store``; for a run made before it
    was recorded, counted from its atoms and items): atoms, holders, per modality, and a
    library adapter's layout (``one`` store or one per ``modality``)."""
    meta = rd.meta
    if isinstance(meta.get("store"), dict) and "atoms" in meta["store"]:
        st = meta["store"]
    else:
        from ..core.jsonl import iter_json_lines

        per: dict[str, dict] = {}
        for _, a in iter_json_lines(rd.path / "atoms.jsonl"):
            p = per.setdefault(a["modality"], {"atoms": 0, "holders": set()})
            p["atoms"] += 1
            p["holders"].add(a["holder"])
        st = {
            "atoms": sum(p["atoms"] for p in per.values()),
            "holders": len(set().union(*(p["holders"] for p in per.values()))) if per else 0,
            "per_modality": {
                m: {"atoms": p["atoms"], "holders": len(p["holders"])}
                for m, p in sorted(per.items())
            },
        }
    keep = ("atoms", "holders", "items", "per_modality", "layout", "per_store", "date_pool")
    return {k: st[k] for k in keep if k in st}


#: the figures of the pdf split by where a holder's words come from (text layer or OCR)
SOURCE_KEYS = (
    "recall@10",
    "mrr",
    "false_recall_rate",
    "false_recall_native",
    "abstain_rate_answerable",
)


def pdf_text_source(rd) -> dict:
    """pdf figures per ``text_source`` (:mod:`membench.analysis.frames`: ``pdf text layer`` /
    ``pdf image-only (OCR)``): value, n and denominator of :data:`SOURCE_KEYS`, each the mean
    of the per-item values over the items in that measure's denominator (the run's own per-item
    scores, nothing recomputed)."""
    import math

    from ..modalities.pdf import Pdf
    from .frames import item_frame, metric_values

    df = item_frame(rd)
    df = df[df["modality"].to_numpy() == Pdf.name]
    out: dict = {}
    for src in sorted(df["text_source"].unique()):
        part = df[df["text_source"] == src]
        figs = {}
        for k in SOURCE_KEYS:
            v = metric_values(part, k)
            v = v[~_isnan(v)]
            figs[k] = {
                "value": (float(v.mean()) if v.size else None),
                "n": int(v.size),
                "denominator": int(v.size),
            }
            if figs[k]["value"] is not None and math.isnan(figs[k]["value"]):
                figs[k]["value"] = None
        out[src] = figs
    return out


def _isnan(v):
    import numpy as np

    return np.isnan(v.astype(float))


def value_text(figures: dict, key: str, digits: int = 4) -> str:
    """A measure of ``figures`` (``{measure: {"value": ...}}``) as a table cell: its value to
    ``digits`` decimals, ``—`` when it has no value (no item to measure)."""
    x = figures[key]["value"]
    return "—" if x is None else f"{x:.{digits}f}"


def with_n(figures: dict, key: str, value: str) -> str:
    """A cell ``value (n)``; ``—`` when ``figures`` predate the measure (a freeze made before
    it existed: ``false_recall_native``, say)."""
    return f"{value} ({figures[key]['n']})" if key in figures else "—"


#: the false-recall columns of the frozen tables: audited (gated, headline), then the natives
#: with an upstream tell, labelled with the sources and a pointer to docs/sets.md's audit table
#: (the audit is not at hand here; :mod:`membench.analysis.tell_columns`)
def false_recall_heads(systems: list[dict]) -> str:
    """The two false-recall headers of a table of frozen systems, the natives' labelled with
    the tells' ROC AUC frozen with them (``native_tells``; a freeze made before it was: the
    sources and where the audit table is)."""
    tells = [s.get("native_tells") for s in systems]
    aucs = None
    if tells and all(isinstance(t, dict) for t in tells):
        aucs = {}
        for t in tells:
            aucs.update(t)
    return f"{audited_header()} | {native_header(aucs)}"


#: marks a false recall frozen before the natives with a tell had their own column
POOLED = "†"
POOLED_NOTE = (
    f"{POOLED} frozen before false recall left the natives with a tell out "
    "(bench/expected/dev.json has no false_recall_native): this figure counts every "
    "unanswerable item, those natives included; `python bench/results.py RUN_DIR "
    "... --freeze` re-freezes it."
)


def false_recall_cells(figures: dict, value) -> tuple[str, str]:
    """The two false-recall cells of a frozen row, ``value(key)`` giving a measure's text: the
    audited one (a value marked :data:`POOLED` when the freeze predates the split) and the
    natives with a tell (``—`` then)."""
    audited = with_n(figures, "false_recall_rate", value("false_recall_rate"))
    if "false_recall_native" not in figures:
        pooled = (figures.get("false_recall_rate") or {}).get("value") is not None
        return audited + (POOLED if pooled else ""), "—"
    return audited, with_n(figures, "false_recall_native", value("false_recall_native"))


def _pooled_note(rows: list[str]) -> list[str]:
    """:data:`POOLED_NOTE` under a table that shows a pooled false recall."""
    return [*rows, "", POOLED_NOTE] if any(f"){POOLED} |" in r for r in rows) else rows


def text_source_table(systems: list[dict]) -> str:
    """The README's table of pdf figures split into text-layer and image-only documents."""
    rows = [
        f"| system | pdf documents | recall@10 (n) | MRR | {false_recall_heads(systems)} | "
        "abstain, answerable |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in systems:
        for src, f in sorted((s.get("pdf_text_source") or {}).items(), reverse=True):

            def v(k):
                return value_text(f, k) if k in f else "—"

            audited, native = false_recall_cells(f, v)
            rows.append(
                f"| {s['system']} | {src} | {v('recall@10')} ({f['recall@10']['n']}) | "
                f"{v('mrr')} | {audited} | {native} | {v('abstain_rate_answerable')} |"
            )
    return "\n".join(_pooled_note(rows))


#: the cartridge measures, which depend on the run's thresholds
CARTRIDGE_KEYS = (
    "false_recall_rate",
    "false_recall_native",
    "abstain_rate_answerable",
    "answerable_kept@fr0.10",
)


def table(systems: list[dict], modalities: tuple[str, ...] | None = None) -> str:
    """The figures table (docs/results.md; the README's headline block: ``modalities=("all",)``,
    the pooled row of each system). A run made with ``--config calibration=none`` (its cartridge
    at the uncalibrated default threshold: a calibration run) shows ``uncal.`` instead of its
    false recall and abstention, which would say nothing about the system."""
    head = (
        "| system | modality | recall@10 (n) | recall@1000 | MRR | nDCG@10 | "
        f"{false_recall_heads(systems)} | abstain, answerable | answerable kept at false recall "
        "<= 0.10 | holder / temporal ok | p50 ms |"
    )
    rows = [head, "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in systems:
        uncal = str(s.get("calibration") or "").startswith("none")
        for mod in [
            m for m in ORDER if m in s["modalities"] and (modalities is None or m in modalities)
        ]:
            f = s["modalities"][mod]

            def v(k, d=4):
                if k not in f:  # a freeze made before the measure
                    return "—"
                if uncal and k in CARTRIDGE_KEYS and f[k]["value"] is not None:
                    return "uncal."
                return value_text(f, k, d)

            audited, native = false_recall_cells(f, v)
            rows.append(
                f"| {s['system']} | {mod} | {v('recall@10')} ({f['recall@10']['n']}) | "
                f"{v('recall@1000')} | {v('mrr')} | {v('ndcg@10')} | "
                f"{audited} | {native} | {v('abstain_rate_answerable')} | "
                f"{v('answerable_kept@fr0.10')} | {v('holder_correctness', 2)} / "
                f"{v('temporal_correctness', 2)} | {v('latency_p50_ms', 1)} |"
            )
    return "\n".join(_pooled_note(rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", type=Path)
    ap.add_argument("--freeze", action="store_true", help=f"write {EXPECTED}")
    a = ap.parse_args(argv)
    if a.runs:
        systems = [figures(r) for r in a.runs]
    else:
        systems = list(json.loads(EXPECTED.read_text())["systems"].values())
    if a.freeze:
        EXPECTED.parent.mkdir(parents=True, exist_ok=True)
        EXPECTED.write_text(
            json.dumps(
                {"split": "dev", "systems": {s["system"]: s for s in systems}},
                indent=1,
                sort_keys=True,
            )
            + "\n"
        )
        print(f"wrote {EXPECTED}", file=sys.stderr)
    print(table(systems))
    return 0


if __name__ == "__main__":
    sys.exit(main())
