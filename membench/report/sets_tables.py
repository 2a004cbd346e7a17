"""Tables about the built sets, for notebook 01 (counts, rule results, digests; coverage is
:func:`membench.analysis.summaries.coverage_frame`)."""

from __future__ import annotations

from pathlib import Path

from ..contract.schema import AnnotationRecord
from ..core.jsonl import read_models, sha256_file
from ..core.paths import DEFAULT_SETS_DIR, LOCK_PATH, MANIFEST_PATH
from ..modalities import MODALITIES
from ..sets.build import SET_FILES, read_lock
from ..sets.validate import RULES, Finding


def records_frame(sets_dir: str | Path | None = None):
    import pandas as pd

    sets = Path(sets_dir) if sets_dir else DEFAULT_SETS_DIR
    rows = []
    for m in MODALITIES:
        for r in read_models(sets / f"{m}.jsonl", AnnotationRecord):
            rows.append(
                {
                    "query_id": r.query_id,
                    "modality": m,
                    "source": r.query_id.split(":", 1)[0],
                    "split": r.split,
                    "holder": r.scope.holder,
                    "scenario": r.scope.scenario,
                    "answerable": not r.unanswerable,
                    "derivation": r.origin.derivation
                    or ("native unanswerable" if r.unanswerable else "answerable"),
                    "n_gold": len(r.gold),
                }
            )
    return pd.DataFrame(rows)


def counts_table(df, by=("modality", "source", "split", "derivation")):
    """Record counts by the given columns (derivation as columns), with totals."""
    t = df.pivot_table(
        index=list(by[:-1]), columns=by[-1], values="query_id", aggfunc="count", fill_value=0
    )
    t["total"] = t.sum(axis=1)
    return t


def rules_frame(findings: list[Finding]):
    """One row per rule of membench.sets.validate, with its result: pass, or the count of findings."""
    import pandas as pd

    rows = []
    for rule in RULES:
        hits = [f for f in findings if f.rule == rule]
        level = hits[0].level if hits else ""
        result = "pass" if not hits else ("warning" if level == "warning" else "FAIL")
        rows.append(
            {
                "rule": rule,
                "result": result,
                "findings": len(hits),
                "first": str(hits[0]) if hits else "",
            }
        )
    return pd.DataFrame(rows).set_index("rule")


def digest_table(sets_dir: str | Path | None = None):
    import pandas as pd

    sets = Path(sets_dir) if sets_dir else DEFAULT_SETS_DIR
    lock = read_lock(LOCK_PATH)
    rows = [
        {
            "file": str(MANIFEST_PATH.relative_to(MANIFEST_PATH.parents[2])),
            "sha256": sha256_file(MANIFEST_PATH),
            "lock": "",
            "match": "",
        }
    ]
    for f in SET_FILES:
        d = sha256_file(sets / f) if (sets / f).exists() else "missing"
        rows.append({"file": f, "sha256": d, "lock": lock.get(f, ""), "match": d == lock.get(f)})
    return pd.DataFrame(rows).set_index("file")
