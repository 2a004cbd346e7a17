"""Generated blocks in Markdown pages: ``<!-- NAME:start ... -->`` ... ``<!-- NAME:end -->``.

Published tables (the sets' counts, coverage, derivations and audit) are never pasted by hand:
each block's body is what a generator in :data:`GENERATORS` returns, and the tests hold each
page's blocks equal to it. After a change that moves them (a re-frozen build, say)::

    python -m membench.docsite.blocks README.md docs/*.md     # rewrite the blocks in place
    python -m membench.docsite.blocks --check README.md        # exit 1 where a block differs

A generator takes a context (:class:`Context`: the built sets folder) and returns the block's
text. Blocks whose name has no generator here are left alone (their own tests check them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.paths import REPO_ROOT

_BLOCK = re.compile(
    r"(<!-- (?P<name>[a-z0-9-]+):start[^>]*-->\n)(?P<body>.*?)(\n?<!-- (?P=name):end -->)",
    re.DOTALL)


@dataclass
class Context:
    """What generators read: the built sets folder (``bench/sets`` by default); the run
    figures come from ``bench/expected/dev.json``."""

    sets: Path = field(default_factory=lambda: REPO_ROOT / "bench" / "sets")


def _stats(ctx: Context) -> dict:
    return json.loads((ctx.sets / "stats.json").read_text())


def _coverage(ctx: Context) -> list[dict]:
    return json.loads((ctx.sets / "coverage.json").read_text())


def _counts(ctx: Context) -> str:
    from ..sets.build import render_counts

    return render_counts(_stats(ctx))


def _coverage_table(ctx: Context) -> str:
    from ..sets.build import render_coverage

    return render_coverage(_coverage(ctx))


def _derived(ctx: Context) -> str:
    from ..sets.build import render_derivation

    return render_derivation(_coverage(ctx))


def _audit(ctx: Context) -> str:
    from ..sets.audit import audit_sets, render_audit

    return render_audit(audit_sets(ctx.sets))


def _expected(ctx: Context) -> list[dict]:
    from ..analysis.expected import EXPECTED

    return list(json.loads(EXPECTED.read_text())["systems"].values())


def _figures(ctx: Context) -> str:
    from ..analysis.expected import table

    return table(_expected(ctx))


def _pdf_text_source(ctx: Context) -> str:
    from ..analysis.expected import text_source_table

    return text_source_table(_expected(ctx))


def _metrics_table(ctx: Context) -> str:
    """Every measure of the registry (membench.metrics.measures): what it is, over what, its
    gate, and what it follows."""
    from ..metrics.measures import MEASURES, definitions

    rows = ["| measure | definition | denominator | better | gate | per judgment set | "
            "paired test | follows |", "|---|---|---|---|---|---|---|---|"]
    for m in MEASURES:
        gate = f"{m.gate.op} {m.gate.threshold:g}" if m.gate else "—"
        rows.append(f"| `{m.name}` | {_cell(m.definition)} | {m.denominator} | {m.direction} | "
                    f"{gate} | {'yes' if m.per_judgment_set else 'no'} | "
                    f"{'yes' if m.paired else 'no'} | {_cell(m.citation)} |")
    hit = definitions().get("hit")
    if hit:
        rows += ["", f"**hit**: {_cell(hit)}"]
    return "\n".join(rows)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _cli(ctx: Context) -> str:
    """Every subcommand of ``membench`` and its options, from the argparse parser itself."""
    import argparse

    from ..cli import parser

    top = parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    out = [f"`{top.format_usage().strip().removeprefix('usage: ')}`", "",
           "| global option | what |", "|---|---|"]
    out += [_option_row(a) for a in top._actions
            if a.option_strings and not isinstance(a, argparse._HelpAction)]
    for name, p in sub.choices.items():
        usage = " ".join(p.format_usage().split()).removeprefix("usage: ")
        out += ["", f"### membench {name}", "", _cell(helps.get(name) or ""), "",
                f"`{usage}`", "", "| argument | what |", "|---|---|"]
        out += [_option_row(a) for a in p._actions if not isinstance(a, argparse._HelpAction)]
    return "\n".join(out)


def _option_row(a) -> str:
    import argparse

    names = ", ".join(a.option_strings) or a.dest
    if a.metavar and not isinstance(a, (argparse._StoreTrueAction, argparse._VersionAction)):
        names += f" {a.metavar}"
    elif a.choices and a.option_strings:
        names += " {" + ",".join(map(str, a.choices)) + "}"
    return f"| `{names}` | {_cell(a.help or '').replace('%(prog)s', 'membench')} |"


def _calibration(ctx: Context) -> str:
    """The cartridge operating point of every calibrated system (bench/calibration/*.json):
    per modality the top-1 score threshold and what it keeps."""
    from ..core.paths import BENCH_DIR

    rows = ["| system | modality | threshold | answerable kept (n) | unanswerable kept = false "
            "recall (n) | within the 0.10 gate |", "|---|---|---:|---|---|---|"]
    for f in sorted((BENCH_DIR / "calibration").glob("*.json")):
        d = json.loads(f.read_text())
        for mod, c in sorted(d.get("modalities", {}).items()):
            rows.append(f"| {d.get('system', f.stem)} | {mod} | {c['threshold']:.4f} | "
                        f"{c['answerable_kept']:.3f} ({c['n_answerable']}) | "
                        f"{c['unanswerable_kept']:.3f} ({c['n_unanswerable']}) | "
                        f"{'yes' if c.get('within_gate') else 'no'} |")
        for mod, why in sorted(d.get("not_calibrated", {}).items()):
            rows.append(f"| {d.get('system', f.stem)} | {mod} | — (default) | {_cell(why)} | — "
                        "| — |")
    return "\n".join(rows)


STORES_RESULT = REPO_ROOT / "bench" / "results" / "memsys-stores.json"


def _memsys_stores(ctx: Context) -> str:
    """The real memory libraries with one store and one per modality
    (bench/memsys_stores.py -> bench/results/memsys-stores.json): per modality the ranking
    figures next to p50 and the store the queries were asked of."""
    from ..analysis.expected import value_text

    d = json.loads(STORES_RESULT.read_text())
    rows = ["| system | stores | modality | recall@10 (n) | MRR | holder / temporal ok | "
            "p50 ms | the store asked: holders / atoms stored |",
            "|---|---|---|---|---|---|---:|---|"]
    for r in d["runs"]:
        st = r.get("store") or {}
        per = st.get("per_store") or {}
        for mod, f in r["modalities"].items():
            if mod == "all":
                # the library stores the atoms whose text has a letter or digit: the runner's
                # count is of the atoms reported at ingest, which can be a few more
                kept = sum(p.get("atoms_stored", 0) for p in per.values()) if per else None
                reported = st.get("atoms", "?")
                where = (f"{st.get('holders', '?')} / {kept} (every store; {reported} reported "
                         "at ingest)" if kept is not None and kept != reported else
                         f"{st.get('holders', '?')} / {reported} (every store)")
            elif r["mode"] == "one" and "all" in per:
                where = f"{per['all']['holders']} / {per['all']['atoms_stored']} (all modalities)"
            elif mod in per:
                where = f"{per[mod]['holders']} / {per[mod]['atoms_stored']} ({mod} only)"
            else:
                where = "—"

            def v(k, dd=4):
                return value_text(f, k, dd)
            rows.append(f"| {r['system']} | {r['mode']} | {mod} | {v('recall@10')} "
                        f"({f['recall@10']['n']}) | {v('mrr')} | {v('holder_correctness', 2)} / "
                        f"{v('temporal_correctness', 2)} | {v('latency_p50_ms', 1)} | {where} |")
    return "\n".join(rows)


def _memsys_runs(ctx: Context) -> str:
    """How each run of the stores table was made: the command, its time and the load."""
    d = json.loads(STORES_RESULT.read_text())
    rows = ["| run | ingest s | queries s | load average before / after | command |",
            "|---|---:|---:|---|---|"]
    for r in d["runs"]:
        m = r["measured"]
        load = (f"{m['load_before'][0]:.1f} / {m['load_after'][0]:.1f}"
                if m.get("load_before") else "not recorded")
        rows.append(f"| {r['system']}, {r['mode']} | {m['ingest_seconds']:.0f} | "
                    f"{m['query_seconds']:.0f} | {load} | `{r['command']}` |")
    return "\n".join(rows)


def _bounds(ctx: Context) -> str:
    from ..core.bounds import markdown_table

    return markdown_table()


def _q2d(ctx: Context) -> str:
    from ..analysis.q2d import format_table, load_result
    from ..core.paths import BENCH_DIR

    return format_table(load_result(BENCH_DIR / "expected"))


#: the modality of the atom shown on the "Your own system" page (the examples' modality)
ATOM_EXAMPLE_MODALITY = "conversation"


def _atom_example(ctx: Context) -> str:
    """The first atom of the first conversation item of the built sets, as the content layer
    makes it (its text, in a fenced block)."""
    from ..core.jsonl import read_models
    from ..sets.schema import SourceItem
    from ..run.content import chunk

    item = next(it for it in read_models(ctx.sets / "items.jsonl", SourceItem)
                if it.modality == ATOM_EXAMPLE_MODALITY)
    atom = chunk([item], REPO_ROOT)[0]
    return f"`{item.source_id}`, turns {atom.extent['turn_start']}-{atom.extent['turn_end']}:" \
           f"\n\n```text\n{atom.text}\n```"


def _reference_store(ctx: Context) -> str:
    """The memory every reference system held in a dev run (every dev holder, every modality,
    one store): holders and items per modality, from the built sets."""
    from ..core.jsonl import read_models
    from ..modalities import MODALITIES
    from ..sets.build import split_holders
    from ..sets.schema import SourceItem

    items = read_models(ctx.sets / "items.jsonl", SourceItem)
    by_source: dict[str, set[str]] = {}
    for it in items:
        by_source.setdefault(it.source_id.split(":", 1)[0], set()).add(it.holder)
    split = split_holders({k: sorted(v) for k, v in by_source.items()})
    dev = [it for it in items if split[it.holder] == "dev"]
    rows = ["| modality | dev holders | dev items |", "|---|---:|---:|"]
    for m in MODALITIES:
        part = [it for it in dev if it.modality == m]
        rows.append(f"| {m} | {len({it.holder for it in part})} | {len(part)} |")
    rows.append(f"| **one store, every modality** | **{len({it.holder for it in dev})}** | "
                f"**{len(dev)}** |")
    return "\n".join(rows)


MAINJOB_RESULT = REPO_ROOT / "bench" / "results" / "mainjob.json"


def _mmss(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60}:{s % 60:02d}"


def _mainjob_record() -> dict:
    return json.loads(MAINJOB_RESULT.read_text())


def _mainjob(ctx: Context) -> str:
    """The cost of ``make all`` cold and warm, part by part (bench/bench_mainjob.py --save
    -> bench/results/mainjob.json)."""
    d = _mainjob_record()
    cold, warm = d["cold"], d["warm"]
    ocr = cold.get("ocr") or {}
    what = {
        "sets": "corpus check, build (reading every PDF's text layer) and validate",
        "dense": (f"dense: OCR of {ocr.get('first_time', 0):,} images, screenshots and "
                  f"image-only PDF pages ({_mmss(ocr['seconds'])} cold, 2 workers) while the "
                  "other atoms are embedded; then its queries" if ocr.get("seconds") else
                  "dense: its ingest and queries"),
        "bm25": "bm25 (reads the OCR cache)",
        "hybrid": "hybrid (reads both caches; embeds its questions)",
        "leaderboard": "leaderboard (result store of the three runs)",
        "reports": "reports (the notebook pages, two at a time)",
    }
    rows = ["| part of `make all` (dev) | cold | warm |", "|---|---:|---:|"]
    for part, text in what.items():
        if part in cold["parts"]:
            rows.append(f"| {text} | {_mmss(cold['parts'][part])} | "
                        f"{_mmss(warm['parts'].get(part, 0))} |")
    rows.append(f"| **all** (`make all`'s wall time) | **{_mmss(cold['seconds'])}** | "
                f"**{_mmss(warm['seconds'])}** |")
    rows.append("")
    rows.append(f"One run of `{d['command']}` on {d['measured']} (commit {d['commit']}), "
                f"{d['cpus']} CPUs; load average {cold['load_before']:.1f} before the cold run "
                f"and {warm['load_before']:.1f} before the warm one (the machine is shared: "
                "a higher load is a slower run).")
    return "\n".join(rows)


def _mainjob_line(ctx: Context) -> str:
    """The README's sentence on what ``make all`` costs, from the same record."""
    d = _mainjob_record()
    cold, warm = d["cold"], d["warm"]
    ocr = cold.get("ocr") or {}
    of = (f" ({_mmss(ocr['seconds'])} of it the OCR of {ocr['first_time']:,} images and "
          "image-only PDF pages)") if ocr.get("seconds") else ""
    return (f"`make all` took **{_mmss(cold['seconds'])} cold**{of} and "
            f"**{_mmss(warm['seconds'])} warm** on a {d['cpus']}-CPU machine (load average "
            f"{cold['load_before']:.1f} and {warm['load_before']:.1f} before), one run of "
            f"`{d['command']}` on {d['measured']}.")


GENERATORS: dict[str, Callable[[Context], str]] = {
    "mainjob": _mainjob,
    "mainjob-line": _mainjob_line,
    "figures": _figures,
    "pdf-text-source": _pdf_text_source,
    "counts": _counts,
    "coverage": _coverage_table,
    "derived": _derived,
    "audit": _audit,
    "metrics": _metrics_table,
    "cli": _cli,
    "calibration": _calibration,
    "memsys-stores": _memsys_stores,
    "memsys-runs": _memsys_runs,
    "bounds": _bounds,
    "q2d": _q2d,
    "atom-example": _atom_example,
    "reference-store": _reference_store,
}

#: the blocks that read the built sets (bench/sets, or --sets): checked where they exist
NEEDS_SETS = frozenset({"counts", "coverage", "derived", "audit", "atom-example",
                        "reference-store"})


def stale(text: str, ctx: Context, with_sets: bool = True) -> list[str]:
    """The names of the blocks of ``text`` that differ from their generator's output (those
    that need the built sets only when ``with_sets``)."""
    only = {n for n in blocks(text) if n in GENERATORS and (with_sets or n not in NEEDS_SETS)}
    out = []
    for name in sorted(only):
        try:
            out += rewrite(text, ctx, {name})[1]
        except Exception as e:          # (a missing input file, say): stale, and why
            out.append(f"{name} (its generator failed: {type(e).__name__}: {e})")
    return out


def blocks(text: str) -> dict[str, str]:
    """Every generated block's name -> body (stripped) in ``text``."""
    return {m["name"]: m["body"].strip() for m in _BLOCK.finditer(text)}


def rewrite(text: str, ctx: Context, only: set[str] | None = None) -> tuple[str, list[str]]:
    """``text`` with every block that has a generator re-generated; and the names changed."""
    changed: list[str] = []
    cache: dict[str, str] = {}

    def sub(m: re.Match) -> str:
        name = m["name"]
        gen = GENERATORS.get(name)
        if gen is None or (only and name not in only):
            return m.group(0)
        if name not in cache:
            cache[name] = gen(ctx).strip()
        if cache[name] != m["body"].strip():
            changed.append(name)
        return f"{m.group(1)}{cache[name]}\n<!-- {name}:end -->"

    return _BLOCK.sub(sub, text), changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m membench.docsite.blocks",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("pages", nargs="+", help="Markdown files to rewrite (or check)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 on a difference")
    ap.add_argument("--sets", default=str(REPO_ROOT / "bench" / "sets"), help="built sets folder")
    ap.add_argument("--only", action="append", help="only this block name (repeatable)")
    a = ap.parse_args(argv)
    ctx = Context(sets=Path(a.sets))
    bad = 0
    for page in a.pages:
        p = Path(page)
        old = p.read_text(encoding="utf-8")
        new, changed = rewrite(old, ctx, set(a.only) if a.only else None)
        for name in changed:
            print(f"{p}: block {name}: {'differs' if a.check else 'rewritten'}")
        if changed and not a.check:
            p.write_text(new, encoding="utf-8")
        bad += bool(changed)
    return 1 if (a.check and bad) else 0


if __name__ == "__main__":
    sys.exit(main())
