"""The answer layer and the context cost of complete runs, for the docs' tables.

    .venv/bin/python bench/answer_context.py runs/bm25-dev runs/dense-dev runs/hybrid-dev \\
        runs/echo-dev runs/nothing-dev

scores each RUN_DIR (:meth:`membench.metrics.rundir.RunDir.metrics`, not written into the run:
the figures are computed from its files with the corpus the answer layer reads) and writes, per
run, its system, its sets' sha256 and per modality and over all items every figure of
:data:`membench.report.tables.ANSWER_CONTEXT_ROWS` (value, n, denominator, 95% interval) with
what the answer layer read (``metrics.json["answer_context"]``) to ``--json`` (default
``bench/results/answer-context.json``). The README's and the results page's ``answer-context``
block is printed from that file (:mod:`membench.docsite.blocks`), so the docs need no runs.
``nothing`` and ``echo`` (the baseline doubles: ``nothing`` holds no memory, ``echo`` is
question-word overlap over the memory; neither has a cartridge, so no answer handed over and
no context cost) are the floor beside the reference systems.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="complete run directories (dev)")
    ap.add_argument(
        "--sets", default=None, help="sets folder (default: the one each run recorded in meta.json)"
    )
    ap.add_argument("--json", default=str(REPO / "bench" / "results" / "answer-context.json"))
    a = ap.parse_args(argv)

    from membench.metrics.rundir import RunDir
    from membench.modalities import MODALITIES
    from membench.report.tables import ANSWER_CONTEXT_ROWS

    out = []
    for run in a.runs:
        rd = RunDir.open(run, a.sets)
        m = rd.metrics(write=False)
        scopes = [s for s in (*MODALITIES, "all") if s in m]
        out.append(
            {
                "system": rd.system,
                "label": rd.label,
                "split": rd.split,
                "queries": len(rd.records),
                "set_sha256": rd.meta.get("set_sha256"),
                "answer_context": {
                    k: v for k, v in (m.get("answer_context") or {}).items() if k != "corpus"
                },
                "figures": {
                    s: {k: m[s][k] for k in ANSWER_CONTEXT_ROWS if k in m[s]} for s in scopes
                },
            }
        )
        ac = m["all"]
        print(
            f"{rd.system}: answer@cartridge {ac['answer@cartridge']['value']} "
            f"(n={ac['answer@cartridge']['n']}), recall@1024tok "
            f"{ac['recall@1024tok']['value']}, tokens p50 "
            f"{ac['context_tokens_p50']['value']}, committed tokens p50 "
            f"{ac['context_tokens_committed_p50']['value']}"
        )
    doc = {
        "made": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(),
        "command": "bench/answer_context.py " + " ".join(f"runs/{Path(r).name}" for r in a.runs),
        "runs": out,
    }
    Path(a.json).write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
