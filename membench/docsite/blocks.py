"""Generated blocks in Markdown pages: ``<!-- NAME:start ... -->`` ... ``<!-- NAME:end -->``.

Published tables (the sets' counts, coverage, derivations and audit) are never pasted by hand:
each block's body is what a generator in :data:`GENERATORS` returns, and the tests hold each
page's blocks equal to it. After a change that moves them (a re-frozen build, say)::

    python -m membench.docsite.blocks README.md docs/*.md     # rewrite the blocks in place
    python -m membench.docsite.blocks --check README.md        # exit 1 where a block differs

A generator takes a context (:class:`Context`: the built sets folder) and returns the block's
text. Blocks whose name has no generator here are left alone (their own tests check them).

Why one file: :data:`GENERATORS` is the one registry of every published table, and each
generator is a few lines that read one result file; a reader looking for where a table comes
from finds all of them here, beside the rewrite and the check.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import MembenchError
from ..core.paths import REPO_ROOT

_BLOCK = re.compile(
    r"(<!-- (?P<name>[a-z0-9-]+):start[^>]*-->\n)(?P<body>.*?)(\n?<!-- (?P=name):end -->)",
    re.DOTALL,
)


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


def _headline(ctx: Context) -> str:
    """The README's headline: each reference system's pooled row of the figures table."""
    from ..analysis.expected import table

    return table(_expected(ctx), modalities=("all",))


def _pdf_text_source(ctx: Context) -> str:
    from ..analysis.expected import text_source_table

    return text_source_table(_expected(ctx))


def _metrics_table(ctx: Context) -> str:
    """Every measure of the registry (membench.metrics.measures): what it is, over what, its
    gate, and what it follows."""
    from ..metrics.measures import MEASURES, definitions

    rows = [
        "| measure | definition | denominator | better | gate | per judgment set | "
        "paired test | follows |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in MEASURES:
        gate = f"{m.gate.op} {m.gate.threshold:g}" if m.gate else "—"
        rows.append(
            f"| `{m.name}` | {_cell(m.definition)} | {m.denominator} | {m.direction} | "
            f"{gate} | {'yes' if m.per_judgment_set else 'no'} | "
            f"{'yes' if m.paired else 'no'} | {_cell(m.citation)} |"
        )
    hit = definitions().get("hit")
    if hit:
        rows += ["", f"**hit**: {_cell(hit)}"]
    return "\n".join(rows)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _house(ctx: Context) -> str:
    """The rooms of membench/ on their floors (membench/docsite/house.py)."""
    from .house import markdown

    return markdown()


def _cli(ctx: Context) -> str:
    """Every subcommand of ``membench`` and its options, from the argparse parser itself."""
    import argparse

    from ..cli import parser

    top = parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    out = [
        f"`{top.format_usage().strip().removeprefix('usage: ')}`",
        "",
        "| global option | what |",
        "|---|---|",
    ]
    out += [
        _option_row(a)
        for a in top._actions
        if a.option_strings and not isinstance(a, argparse._HelpAction)
    ]
    for name, p in sub.choices.items():
        usage = " ".join(p.format_usage().split()).removeprefix("usage: ")
        out += [
            "",
            f"### membench {name}",
            "",
            _cell(helps.get(name) or ""),
            "",
            f"`{usage}`",
            "",
            "| argument | what |",
            "|---|---|",
        ]
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
    per modality the top-1 score threshold, how dev was split, and what the threshold keeps on
    the fit half (in sample) and on the held-out half (``membench calibrate``,
    :mod:`membench.analysis.calibrate`; false recall counts audited unanswerables only). A
    file written before the split (no ``held_out``) was fitted on all of dev, with every
    unanswerable query: its held-out columns are empty."""
    from ..core.paths import BENCH_DIR

    def kept(v, n) -> str:
        return f"{'n/a' if v is None else f'{v:.3f}'} ({n})"

    def gate(v, limit) -> str:
        return "n/a" if v is None else ("yes" if v <= limit else "no")

    rows = [
        "| system | modality | threshold | split (fit / held-out holders) | fit: answerable "
        "kept (n) | fit: false recall (n) | held out: answerable kept (n) | held out: false "
        "recall (n) | within the 0.10 gate (fit / held out) |",
        "|---|---|---:|---|---|---|---|---|---|",
    ]
    for f in sorted((BENCH_DIR / "calibration").glob("*.json")):
        d = json.loads(f.read_text())
        limit = d.get("max_false_recall", 0.10)
        name = d.get("system", f.stem)
        for mod, c in sorted(d.get("modalities", {}).items()):
            fit = (
                f"{kept(c['answerable_kept'], c['n_answerable'])} | "
                f"{kept(c['unanswerable_kept'], c['n_unanswerable'])}"
            )
            fit_gate = "yes" if c.get("within_gate") else "no"
            h = c.get("held_out")
            if h is None:
                rows.append(
                    f"| {name} | {mod} | {c['threshold']:.4f} | none: fitted on all of "
                    f"dev (all unanswerables) | {fit} | — | — | {fit_gate} / — |"
                )
                continue
            sp = c.get("split", {})
            split = (
                f"by holder, {len(c['fit']['holders'])} / {len(h['holders'])}"
                if sp.get("by") == "holder"
                else f"by query: {_cell(sp.get('why') or '')}"
            )
            if c.get("unaudited_left_out"):
                split += f"; {c['unaudited_left_out']} unaudited natives left out"
            rows.append(
                f"| {name} | {mod} | {c['threshold']:.4f} | {split} | {fit} | "
                f"{kept(h['answerable_kept'], h['n_answerable'])} | "
                f"{kept(h['unanswerable_kept'], h['n_unanswerable'])} | "
                f"{fit_gate} / {gate(h['unanswerable_kept'], limit)} |"
            )
        for mod, why in sorted(d.get("not_calibrated", {}).items()):
            rows.append(f"| {name} | {mod} | — (default) | — | {_cell(why)} | — | — | — | — |")
    return "\n".join(rows)


STORES_RESULT = REPO_ROOT / "bench" / "results" / "memsys-stores.json"


def _memsys_stores(ctx: Context) -> str:
    """The real memory libraries with one store and one per modality
    (bench/memsys_stores.py -> bench/results/memsys-stores.json): per modality the ranking
    figures next to p50 and the store the queries were asked of."""
    from ..analysis.expected import value_text

    d = json.loads(STORES_RESULT.read_text())
    rows = [
        "| system | stores | modality | recall@10 (n) | MRR | holder / temporal ok | "
        "p50 ms | the store asked: holders / atoms stored |",
        "|---|---|---|---|---|---|---:|---|",
    ]
    for r in d["runs"]:
        st = r.get("store") or {}
        per = st.get("per_store") or {}
        for mod, f in r["modalities"].items():
            if mod == "all":
                # the library stores the atoms whose text has a letter or digit: the runner's
                # count is of the atoms reported at ingest, which can be a few more
                kept = sum(p.get("atoms_stored", 0) for p in per.values()) if per else None
                reported = st.get("atoms", "?")
                where = (
                    f"{st.get('holders', '?')} / {kept} (every store; {reported} reported "
                    "at ingest)"
                    if kept is not None and kept != reported
                    else f"{st.get('holders', '?')} / {reported} (every store)"
                )
            elif r["mode"] == "one" and "all" in per:
                where = f"{per['all']['holders']} / {per['all']['atoms_stored']} (all modalities)"
            elif mod in per:
                where = f"{per[mod]['holders']} / {per[mod]['atoms_stored']} ({mod} only)"
            else:
                where = "—"

            def v(k, dd=4):
                return value_text(f, k, dd)

            rows.append(
                f"| {r['system']} | {r['mode']} | {mod} | {v('recall@10')} "
                f"({f['recall@10']['n']}) | {v('mrr')} | {v('holder_correctness', 2)} / "
                f"{v('temporal_correctness', 2)} | {v('latency_p50_ms', 1)} | {where} |"
            )
    return "\n".join(rows)


def _memsys_runs(ctx: Context) -> str:
    """How each run of the stores table was made: the command, its time and the load."""
    d = json.loads(STORES_RESULT.read_text())
    rows = [
        "| run | ingest s | queries s | load average before / after | command |",
        "|---|---:|---:|---|---|",
    ]
    for r in d["runs"]:
        m = r["measured"]
        load = (
            f"{m['load_before'][0]:.1f} / {m['load_after'][0]:.1f}"
            if m.get("load_before")
            else "not recorded"
        )
        rows.append(
            f"| {r['system']}, {r['mode']} | {m['ingest_seconds']:.0f} | "
            f"{m['query_seconds']:.0f} | {load} | `{r['command']}` |"
        )
    return "\n".join(rows)


ANSWER_CONTEXT_RESULT = REPO_ROOT / "bench" / "results" / "answer-context.json"


def _fig(e: dict | None, digits: int = 3) -> str:
    if not e or e.get("value") is None:
        return "—"
    return f"{e['value']:.{digits}f}"


def _answer_context(ctx: Context) -> str:
    """The answer layer and the context cost of the reference runs and the baseline doubles
    (bench/answer_context.py -> bench/results/answer-context.json): over all items, then
    answer@cartridge / answer@10 per modality with the answer-bearing items."""
    from ..metrics.answer_layer import ANSWER_BUDGETED
    from ..modalities import MODALITIES

    d = json.loads(ANSWER_CONTEXT_RESULT.read_text())
    runs = d["runs"]
    rows = [
        "| system (dev, all items) | recall@10 | recall@256tok | recall@1024tok | "
        f"recall@4096tok | {ANSWER_BUDGETED} (ranked) | answer@cartridge | answer@10 | "
        "grounded_answer@10 | tokens p50 / p95 | "
        "committed tokens p50 / p95 | area p50 / p95 | seconds p50 / p95 |",
        "|---|" + "---:|" * 12,
    ]
    for r in runs:
        a = r["figures"]["all"]
        rows.append(
            f"| {r['label']} | "
            + " | ".join(
                _fig(a.get(k))
                for k in (
                    "recall@10",
                    "recall@256tok",
                    "recall@1024tok",
                    "recall@4096tok",
                    ANSWER_BUDGETED,
                    "answer@cartridge",
                    "answer@10",
                    "grounded_answer@10",
                )
            )
            + f" | {_fig(a.get('context_tokens_p50'), 0)} / {_fig(a.get('context_tokens_p95'), 0)}"
            + f" | {_fig(a.get('context_tokens_committed_p50'), 0)} / "
            f"{_fig(a.get('context_tokens_committed_p95'), 0)}"
            + f" | {_fig(a.get('context_area_p50'), 2)} / {_fig(a.get('context_area_p95'), 2)}"
            + f" | {_fig(a.get('context_seconds_p50'), 0)} / "
            f"{_fig(a.get('context_seconds_p95'), 0)} |"
        )
    first = runs[0]["figures"]
    mods = [m for m in MODALITIES if m in first]
    rows += [
        "",
        "| modality | answer-bearing / answerable | "
        + " | ".join(
            f"{r['label']}: @cartridge_1024tok / @cartridge / @10 / grounded @10" for r in runs
        )
        + " |",
        "|---|---:|" + "---:|" * len(runs),
    ]
    for m in [*mods, "all"]:
        ab = first[m]["answer_bearing"]
        n = first[m]["answer@cartridge"]["n"]
        share = (
            f"{n} / {ab['denominator']} ({_fig(ab)})"
            if ab.get("value") is not None
            else f"— / {ab['denominator']}"
        )
        rows.append(
            f"| {m} | {share} | "
            + " | ".join(
                " / ".join(
                    _fig(r["figures"][m].get(k))
                    for k in (
                        ANSWER_BUDGETED,
                        "answer@cartridge",
                        "answer@10",
                        "grounded_answer@10",
                    )
                )
                for r in runs
            )
            + " |"
        )
    unread = sum(r["answer_context"].get("unread_records") or 0 for r in runs)
    rows += [
        "",
        f"`{d['command']}` (commit {d['commit']}, {d['made'][:10]}): "
        f"{runs[0]['queries']:,} dev queries a run; "
        + (
            "every text read from the content layer."
            if not unread
            else f"{unread} records left out where an item's text could not be read."
        ),
    ]
    return "\n".join(rows)


def _answer_context_brief(ctx: Context) -> str:
    """The README's lines of :func:`_answer_context`: per run over all dev items, the ranked
    answer figure (within 1,024 tokens), the uncut answer@cartridge with a committed
    cartridge's tokens, answer@10 and its grounded part, recall within 1,024 tokens."""
    from ..metrics.answer_layer import ANSWER_BUDGETED

    d = json.loads(ANSWER_CONTEXT_RESULT.read_text())
    rows = [
        f"| system (dev) | {ANSWER_BUDGETED} (n) | answer@cartridge | committed tokens "
        "p50 | answer@10 | grounded_answer@10 | recall@1024tok |",
        "|---|" + "---:|" * 6,
    ]
    for r in d["runs"]:
        a = r["figures"]["all"]
        n = (a.get(ANSWER_BUDGETED) or {}).get("n")
        rows.append(
            f"| {r['label']} | {_fig(a.get(ANSWER_BUDGETED))} ({n}) | "
            f"{_fig(a.get('answer@cartridge'))} | "
            f"{_fig(a.get('context_tokens_committed_p50'), 0)} | "
            f"{_fig(a.get('answer@10'))} | {_fig(a.get('grounded_answer@10'))} | "
            f"{_fig(a.get('recall@1024tok'))} |"
        )
    return "\n".join(rows)


POSITION_FLOOR_RESULT = REPO_ROOT / "bench" / "results" / "position-floor.json"
#: how far above ``random`` a ranker that reads no content may reach (docs/sets.md)
POSITION_MARGIN = 0.05


SHAPE_FLOOR_RESULT = REPO_ROOT / "bench" / "results" / "shape-floor.json"


def _shape_floor(ctx: Context) -> str:
    """recall@10 of the conversation ranker that reads only each turn's speaker and place
    (bench/shape_floor.py -> bench/results/shape-floor.json) against random's, per source
    and split, with whether it stays within :data:`POSITION_MARGIN` of random."""
    d = json.loads(SHAPE_FLOOR_RESULT.read_text())
    rows = [
        f"| source | split | answerable n | random | speaker and place | within random + "
        f"{POSITION_MARGIN:.2f} |",
        "|---|---|---:|---:|---:|---|",
    ]
    for source, splits in sorted(d["sources"].items()):
        for split, v in sorted(splits.items()):
            ok = v["shape"] <= v["random"] + POSITION_MARGIN
            rows.append(
                f"| {source} | {split} | {v['n']} | {v['random']:.3f} | "
                f"{v['shape']:.3f} | {'yes' if ok else '**no**'} |"
            )
    return "\n".join(rows)


def _position_floor(ctx: Context) -> str:
    """recall@10 of the rankers that read no content (bench/position_floor.py ->
    bench/results/position-floor.json), per modality on dev, with whether newest-first and
    oldest-first stay within :data:`POSITION_MARGIN` of random."""
    from ..modalities import MODALITIES

    d = json.loads(POSITION_FLOOR_RESULT.read_text())
    sy = d["systems"]
    pos = d.get("positions", {})

    def items(m: str) -> str:
        """median items seen (dev / test) and test's gold-is-newest / -oldest rate against
        chance, at the item level (read from the set files: the test split is never run)."""
        dv, te = pos.get("dev", {}).get(m), pos.get("test", {}).get(m)
        if not dv or not te:
            return "— | —"
        return (
            f"{dv['median_seen']:g} / {te['median_seen']:g} | {te['newest']:.3f} / "
            f"{te['oldest']:.3f} / {te['chance']:.3f} (n = {te['n']})"
        )

    rows = [
        "| modality (dev) | answerable n | random | newest first | oldest first | "
        f"within random + {POSITION_MARGIN:.2f} | median items seen (dev / test) | "
        "test, items: gold newest / first / chance |",
        "|---|---:|---:|---:|---:|---|---:|---|",
    ]
    for m in [*MODALITIES, "all"]:
        if m not in sy["random"]:
            continue
        r, n, o = (sy[k][m]["recall@10"] for k in ("random", "newest", "oldest"))
        if r["value"] is None:
            continue
        if not sy["random"][m]["recall@1000"]["value"]:
            rows.append(
                f"| {m} | {r['n']} | {_fig(r)} | {_fig(n)} | {_fig(o)} | not measured: "
                "no structural atom hits its gold (random's recall@1000 is 0) | "
                f"{items(m)} |"
            )
            continue
        bad = [
            name
            for name, e in (("newest", n), ("oldest", o))
            if e["value"] > r["value"] + POSITION_MARGIN
        ]
        rows.append(
            f"| {m} | {r['n']} | {_fig(r)} | {_fig(n)} | {_fig(o)} | "
            + ("yes" if not bad else "**no**: " + ", ".join(bad))
            + f" | {items(m)} |"
        )
    return "\n".join(rows)


POWER_RESULT = REPO_ROOT / "bench" / "results" / "power.json"


#: the smallest detectable difference in false recall that issue-level goals ask of dev
TARGET_MDD = 0.05


def _power(ctx: Context) -> str:
    """The minimum detectable difference of the paired test on dev, per modality and over all
    items, for a typical pair of systems (bench/power.py -> bench/results/power.json;
    :mod:`membench.analysis.power`), and the simulation that checks it."""
    from ..modalities import MODALITIES

    d = json.loads(POWER_RESULT.read_text())
    pw, counts = d["power"], d["counts"]

    def cell(r: dict) -> str:
        return "n/a" if r["mdd"] is None else f"{r['mdd']:.3f}"

    def need(n: int | None) -> str:
        return "n/a" if n is None else f"{n:,}"

    def unit(r: dict, holders: int) -> str:
        if r["unit"] == "holders":
            return f"holders ({holders})"
        return f"records ({holders} holders, under {r['min_holders']})"

    from ..analysis.power import items_needed

    rows = [
        "| modality (dev) | holders | records | answerable | audited unanswerable | "
        "MDD recall@10 | MDD false recall | variance read by | MDD recall@10 by record / "
        f"by holder | audited unanswerable for an MDD of {TARGET_MDD} in false recall |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for m in [*MODALITIES, "all"]:
        if m not in pw:
            continue
        c, r, f = counts[m], pw[m]["recall@10"], pw[m]["false_recall_rate"]
        other = " / ".join(
            "n/a" if x is None else f"{x:.3f}" for x in (r["mdd_records"], r["mdd_holders"])
        )
        rows.append(
            f"| {m} | {c['holders']} | {c['records']} | {c['answerable']} | "
            f"{c['audited_unanswerable']} | {cell(r)} | {cell(f)} | "
            f"{unit(r, c['holders'])} | {other} | {need(items_needed(f, TARGET_MDD))} |"
        )
    pairs = ", ".join(f"{k}: {v}" for k, v in d["runs"].items())
    rows += ["", f"Runs: {pairs} (every pair; a pair equal on every item is left out)."]
    short = []
    for m in ("conversation", "all"):
        f, c = pw.get(m, {}).get("false_recall_rate"), counts.get(m)
        n = items_needed(f, TARGET_MDD) if f and c else None
        if n is not None and n > c["audited_unanswerable"]:
            short.append(
                f"{m} would need {n:,} audited unanswerables in dev where it holds "
                f"{c['audited_unanswerable']:,} ({n / c['audited_unanswerable']:.1f}x;"
                f" its dev split has {c['records']:,} records in all)"
            )
    if short:
        rows.append(
            f"For an MDD of {TARGET_MDD} in false recall, at the same pair's variance "
            "and design effect: " + "; ".join(short) + "."
        )
    for s in d.get("simulations", []):
        lo, hi = s["rate_ci95"]
        what = "power" if s["delta"] else "significant under no difference"
        rows.append(
            f"Simulated ({s['n_sims']} samples of {s['scope']}'s {s['n']} "
            f"{s['measure']} differences of {s['pair']}, drawn by {s['by'][:-1]}, "
            f"true difference {s['delta']:.3f}): membench's paired test "
            f"(resampled by {s.get('test_unit', 'record')}, permutation and "
            f"bootstrap p < 0.05) calls {s['rate']:.1%} significant "
            f"[{lo:.1%}, {hi:.1%}] ({what})."
        )
    return "\n".join(rows)


def _bounds(ctx: Context) -> str:
    from .bounds import markdown_table

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
    from ..content import chunk
    from ..contract.schema import SourceItem
    from ..core.jsonl import read_models

    item = next(
        it
        for it in read_models(ctx.sets / "items.jsonl", SourceItem)
        if it.modality == ATOM_EXAMPLE_MODALITY
    )
    atom = chunk([item], REPO_ROOT)[0]
    return (
        f"`{item.source_id}`, turns {atom.extent['turn_start']}-{atom.extent['turn_end']}:"
        f"\n\n```text\n{atom.text}\n```"
    )


def _reference_store(ctx: Context) -> str:
    """The memory every reference system held in a dev run (every dev holder, every modality,
    one store): holders and items per modality, from the built sets."""
    from ..contract.schema import SourceItem
    from ..core.jsonl import read_models
    from ..modalities import MODALITIES
    from ..sets.build import split_holders

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
    rows.append(
        f"| **one store, every modality** | **{len({it.holder for it in dev})}** | **{len(dev)}** |"
    )
    return "\n".join(rows)


MAINJOB_RESULT = REPO_ROOT / "bench" / "results" / "mainjob.json"


def _mmss(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60}:{s % 60:02d}"


#: the instruction-set paths in the order the docs show them: the AVX2 path (any x86-64
#: laptop or cloud VM) first
PATH_ORDER = ("avx2", "avx512", "avx512-bf16", "amx")
PATH_NAMES = {
    "avx2": "AVX2 path (x86-64-v3: any laptop or cloud VM of the last decade)",
    "avx512": "AVX-512",
    "avx512-bf16": "AVX-512 with BF16",
    "amx": "native path of this CPU (AVX-512, AMX)",
}


def _mainjob_paths() -> list[tuple[str, dict]]:
    """The records of bench/results/mainjob.json, AVX2 path first."""
    d = json.loads(MAINJOB_RESULT.read_text())
    paths = d["paths"]
    order = [p for p in PATH_ORDER if p in paths] + sorted(set(paths) - set(PATH_ORDER))
    return [(p, paths[p]) for p in order]


def _estimates(d: dict) -> str:
    """What make said before each run of a record, against what the run took."""
    got = []
    for r in d.get("runs") or []:
        for which in ("cold", "warm"):
            e = r[which].get("estimate")
            if e and e.get("seconds"):
                got.append(f"{which} {e['seconds'] / r[which]['seconds']:.2f}x")
    return (
        (" `make all`'s own estimate before each run was " + ", ".join(got) + " what it took.")
        if got
        else ""
    )


def _runs_note(name: str, d: dict) -> str:
    return _runs_note_plain(name, d) + _estimates(d) + _earlier(d)


def _earlier(d: dict) -> str:
    """The path's earlier records (bench_mainjob.save keeps them), newest first."""
    got = [
        f"cold {_mmss(e['cold']['seconds'])}, warm {_mmss(e['warm']['seconds'])} on "
        f"{e['measured']} (commit {e['commit']}, {e.get('cpu_model') or 'x86-64'}, load "
        f"{e['cold']['load_before']:.1f} before the cold run)"
        for e in d.get("earlier") or []
    ]
    return " Earlier records of this path: " + "; ".join(got) + "." if got else ""


def _runs_note_plain(name: str, d: dict) -> str:
    runs = d.get("runs") or []
    if len(runs) > 1:
        cs = ", ".join(_mmss(r["cold"]["seconds"]) for r in runs)
        ws = ", ".join(_mmss(r["warm"]["seconds"]) for r in runs)
        loads = ", ".join(f"{r['cold']['load_before']:.1f}" for r in runs)
        return (
            f"{name}: the median of {len(runs)} runs of `{d['command']}` on {d['measured']} "
            f"(commit {d['commit']}), {d['cpus']} CPUs; cold {cs}, warm {ws}, load average "
            f"{loads} before each cold run (the machine is shared: a higher load is a "
            "slower run)."
        )
    cold, warm = d["cold"], d["warm"]
    return (
        f"{name}: one run of `{d['command']}` on {d['measured']} (commit {d['commit']}), "
        f"{d['cpus']} CPUs; load average {cold['load_before']:.1f} before the cold run and "
        f"{warm['load_before']:.1f} before the warm one (the machine is shared: a higher "
        "load is a slower run)."
    )


def _mainjob(ctx: Context) -> str:
    """The cost of ``make all`` cold and warm, part by part, on each instruction-set path
    measured (bench/bench_mainjob.py --save -> bench/results/mainjob.json)."""
    recs = _mainjob_paths()
    what = {
        "sets": "corpus check, build (reading every PDF's text layer) and validate",
        "dense": "dense: OCR of {n} images, screenshots and image-only PDF pages (2 workers) "
        "while the other atoms are embedded; then its queries",
        "bm25": "bm25 (reads the OCR cache)",
        "hybrid": "hybrid (reads both caches; embeds its questions)",
        "beside": "the baselines and content-free floors run beside them (nothing, echo, "
        "random, newest, oldest)",
        "leaderboard": "leaderboard (result store of the three runs)",
        "reports": "reports (the notebook pages, two at a time)",
    }
    n = next(
        (
            f"{d['cold']['ocr']['first_time']:,}"
            for _, d in recs
            if (d["cold"].get("ocr") or {}).get("first_time")
        ),
        "the",
    )
    head = (
        "| part of `make all` (dev) | "
        + " | ".join(f"{p}: cold | {p}: warm" for p, _ in recs)
        + " |"
    )
    rows = [head, "|---|" + "---:|---:|" * len(recs)]
    parts = [p for p in what if any(p in d["cold"]["parts"] for _, d in recs)]
    for part in parts:
        cells = []
        for _, d in recs:
            c, w = d["cold"]["parts"].get(part), d["warm"]["parts"].get(part)
            cells += [_mmss(c) if c is not None else "-", _mmss(w) if w is not None else "-"]
        rows.append(f"| {what[part].format(n=n)} | " + " | ".join(cells) + " |")
        if part == "dense":
            ocr = []
            for _, d in recs:
                o = d["cold"].get("ocr") or {}
                ocr += [_mmss(o["seconds"]) if o.get("seconds") else "-", "-"]
            rows.append("| &nbsp;&nbsp;of which the OCR step | " + " | ".join(ocr) + " |")
    rows.append(
        "| **all** (`make all`'s wall time) | "
        + " | ".join(
            f"**{_mmss(d['cold']['seconds'])}** | **{_mmss(d['warm']['seconds'])}**"
            for _, d in recs
        )
        + " |"
    )
    rows.append("")
    for p, d in recs:
        rows.append(f"- {_runs_note(PATH_NAMES.get(p, p), d)}")
    return "\n".join(rows)


def _mainjob_line(ctx: Context) -> str:
    """The README's sentence on what ``make all`` costs, from the same record: the AVX2 path
    first."""
    parts = []
    for p, d in _mainjob_paths():
        cold, warm = d["cold"], d["warm"]
        n = len(d.get("runs") or [1])
        how = f"median of {n} runs" if n > 1 else "one run"
        where = (
            "on the AVX2 path (any x86-64 CPU since 2013: `make bench-cold ISA=avx2` "
            "masks what this CPU has beyond AVX2)"
            if p == "avx2"
            else f"on this CPU's own {p.upper()} path"
        )
        parts.append(
            f"**{_mmss(cold['seconds'])} cold** and **{_mmss(warm['seconds'])} warm** "
            f"{where} ({how}, load average {cold['load_before']:.1f} before the cold "
            f"run)"
        )
    d0 = _mainjob_paths()[0][1]
    return (
        f"`make all` took {'; and '.join(parts)}, on a {d0['cpus']}-CPU machine "
        f"({d0['cpu_model'] or 'x86-64'}), `make bench-cold` on {d0['measured']}."
    )


def _testsuite_line(ctx: Context) -> str:
    """What ``make test`` and ``make test-fast`` took when last measured
    (``bench/results/testsuite.json``, from ``bench/bench_testsuite.py --save``)."""
    from ..core.estimate import test_record, test_summary

    parts = [
        f"`make {t}` ({what}) took {test_summary(r)}"
        for t, what in (("test", "the whole suite"), ("test-fast", "the tests not marked slow"))
        if (r := test_record(t)) is not None
    ]
    return "; ".join(parts) + "." if parts else "Not measured yet (bench/bench_testsuite.py)."


def _testsuite_brief(ctx: Context) -> str:
    """The README's short form of :func:`_testsuite_line` (the README stays under 8 KiB)."""
    from ..core.estimate import mmss, test_record

    t, f = test_record("test"), test_record("test-fast")
    fast = f"; `make test-fast`: **{mmss(float(f['seconds']))}**" if f else ""
    return (
        f"`make test`: **{mmss(float(t['seconds']))}** ({t['workers']} workers, load "
        f"{float(t['load_before']):.1f} before, {float(t['load_during']):.1f} during){fast} "
        "([Speed](docs/speed.md#the-test-suite))."
        if t
        else "Not measured yet (bench/bench_testsuite.py)."
    )


def _cards(ctx: Context) -> str:
    """Every card in bench/cards, one row each (membench.systems.cards.load_card reads them, so a
    card that does not validate fails the docs build)."""
    from ..systems.cards import CARDS_DIR, applied_max_tokens, load_card

    order = {"lexical": 0, "dense": 1, "hybrid": 2, "library": 3}
    cards = [load_card(p.stem) for p in sorted(CARDS_DIR.glob("*.json"))]
    cards.sort(key=lambda c: (order.get(c.kind, 9), c.name))
    rows = [
        "| card | kind | parameters | size class | dim | max tokens (applied) | "
        "pooling, normalisation | source |",
        "|---|---|---:|---|---:|---|---|---|",
    ]
    for c in cards:
        limit = (
            "none (whole atoms)"
            if c.max_input_tokens is None
            else f"{c.max_input_tokens} ({applied_max_tokens(c)})"
        )
        sp = c.source_package
        if c.components:
            src = " + ".join(c.components) + (f" ({sp.name} {sp.version})" if sp else "")
        else:
            src = f"{sp.name} {sp.version}" if sp else (c.revision or "—")
        rows.append(
            f"| `{c.name}` | {c.kind} | {c.parameter_count:,} | {c.size_class} | "
            f"{c.embedding_dim or '—'} | {limit} | {c.pooling}, {c.normalisation} | "
            f"{src} |"
        )
    return "\n".join(rows)


def _truncation(ctx: Context) -> str:
    """The frozen dense run's meta.json ``truncation`` (bench/expected/dev.json) and what it
    says, for docs/cards.md."""
    from ..analysis.expected import EXPECTED

    sys_ = json.loads(EXPECTED.read_text())["systems"]["dense"]
    t = sys_["truncation"]
    body = json.dumps(t, indent=1, sort_keys=True)
    return (
        f'```json\n"truncation": {body}\n```\n\n`texts_truncated` counts the distinct '
        "atom texts (with the document prefix) whose token count with special tokens is "
        f"over the limit: on the dev split {t['texts_truncated']:,} of {t['texts']:,} texts "
        f"are cut at {t['applied_tokens']} word pieces for the dense reference system "
        f"(`{sys_['command']}`)."
    )


def _dense_max_tokens(ctx: Context) -> str:
    """Dense on the whole dev split at each input limit measured (bench/dense_max_tokens.py
    --save -> bench/results/dense-max-tokens.json)."""
    from ..modalities import MODALITIES

    d = json.loads((REPO_ROOT / "bench" / "results" / "dense-max-tokens.json").read_text())
    limits = sorted(d["limits"], key=int)
    mods = [m for m in (*MODALITIES, "all") if m in d["limits"][limits[0]]["figures"]]
    rows = [
        "| modality (answerable n) | "
        + " | ".join(f"recall@10, {k} pieces | MRR, {k}" for k in limits)
        + " |",
        "|---|" + "---:|---:|" * len(limits),
    ]
    for m in mods:
        f0 = d["limits"][limits[0]]["figures"][m]
        cells = []
        for k in limits:
            f = d["limits"][k]["figures"][m]
            cells += [f"{f['recall@10']['value']:.4f}", f"{f['mrr']['value']:.4f}"]
        name = f"**{m}**" if m == "all" else m
        rows.append(f"| {name} ({f0['recall@10']['n']:,}) | " + " | ".join(cells) + " |")
    cpu = [d["limits"][k].get("cpu_seconds") for k in limits]
    if all(cpu):
        rows.append(
            "| CPU seconds of the whole run (the index embedded from nothing) | "
            + " | ".join(f"{c:.0f} | " for c in cpu)
            + "|"
        )
    rows.append("")
    rows.append(f"`{d['command']}` on {d['date']} ({d['path']} path, {d['cpu']}).")
    return "\n".join(rows)


def _import_refusal(ctx: Context) -> str:
    """docs/runs.md's example of an import refused for covering part of the dev split, with
    the dev split's query count of the frozen runs (bench/expected/dev.json)."""
    from ..analysis.expected import EXPECTED

    n = json.loads(EXPECTED.read_text())["systems"]["bm25"]["modalities"]["all"][
        "holder_correctness"
    ]["n"]
    return (
        f"A file that covers only part of the split is refused; 40 lines of the {n:,} dev "
        f"queries give `part40.trec: INCOMPLETE_RUN: covers 40 of the {n:,} dev queries of "
        f"the whole split: {n - 40:,} have no line (e.g. QID, QID, QID); an import never "
        "invents an empty answer. Name the part the file answers as membench topics chose "
        "it (--modality M, --limit N), or pass --partial ...`."
    )


def _query_fields(ctx: Context) -> str:
    """What a system is asked per query: the topic's fields and ``Scope``'s, from the pydantic
    model (membench.contract.schema.Scope) itself."""
    from ..contract.schema import Scope

    rows = [
        "| field | type | what it is |",
        "|---|---|---|",
        "| `question` | string | the upstream question, verbatim |",
        "| `as_of` | ISO 8601 time with a time zone | the query's time: an atom observed "
        "after it must not be returned (temporal correctness) |",
    ]
    for name, f in Scope.model_fields.items():
        typ = getattr(f.annotation, "__name__", None) or str(f.annotation).replace("typing.", "")
        typ = {"str": "string", "str | None": "string or null"}.get(typ, typ)
        rows.append(
            f"| `scope.{name}` | {typ}{'' if f.is_required() else ' (optional)'} | "
            f"{f.description} |"
        )
    return "\n".join(rows)


def _dense_isa(ctx: Context) -> str:
    """The dense reference system on the AVX2 path against the native path, whole dev split
    (bench/dense_isa.py --save -> bench/results/dense-isa.json)."""
    d = json.loads((REPO_ROOT / "bench" / "results" / "dense-isa.json").read_text())
    q = d["queries"]
    rows = [
        "| compared, AVX2 path against the native path | result |",
        "|---|---|",
        f"| figures (every modality and key of the frozen figures) | "
        f"{d['figures_equal_1e-12']} of {d['figures']} equal to 1e-12, "
        f"{d['figures_equal_printed']} to the printed 4 decimals |",
        f"| cartridges | {d['identical_cartridges']:,} of {q:,} queries identical"
        + (
            f"; {len(d['cartridges_differing_by_a_tie'])} other(s) differ only where two "
            f"atoms tied within {d['tie']:g} swapped places and the token budget admitted "
            f"the other ({', '.join(f'`{x}`' for x in d['cartridges_differing_by_a_tie'])})"
            if d.get("cartridges_differing_by_a_tie")
            else ""
        )
        + " |",
        f"| ranked atoms (up to 1,000 per query) | the same atoms for {d['identical_hit_sets']:,}"
        f" of {q:,} queries, in the same order for {d['identical_rankings']:,} |",
        f"| where an order differs | from rank {d['first_rank_that_differs'] or '-'} down, "
        f"between atoms whose scores differ by less than the noise |",
        f"| largest difference of two scores at one rank | "
        f"{d['largest_score_difference_at_a_rank']:.1e} |",
        f"| largest difference of one vector component | "
        f"{d['largest_vector_difference']:.1e} over {d['vectors_compared']:,} vectors |",
        "",
        f"`{d['command']}` on {d['date']}: {d['cpu']}, native path {d['native_path']}; "
        f"the dense run took {d['seconds']['native']:.0f} s native and "
        f"{d['seconds']['avx2']:.0f} s on the AVX2 path, each embedding the index from "
        "nothing.",
    ]
    return "\n".join(rows)


def _trec_eval_measures(ctx: Context) -> str:
    """What ``membench trec-eval`` computes of trec_eval 10.0's measures and options, and
    what it does not, from the measure registry (membench.trec.measures)."""
    from ..trec.measures import MEASURES, NICKNAMES, NOT_IMPLEMENTED

    rows = [
        "| measure | parameters (trec_eval's default) | summary | definition |",
        "|---|---|---|---|",
    ]
    for m in MEASURES.values():
        params = ", ".join(f"{x:g}" for x in m.default) if m.default else ""
        rows.append(f"| `{m.name}` | {params} | {m.summary} | {_cell(m.definition)} |")
    nick = [f"`{n}`" for n, ms in NICKNAMES.items() if all(x in MEASURES for x in ms)]
    refused = [f"`{n}`" for n, ms in NICKNAMES.items() if not all(x in MEASURES for x in ms)]
    return "\n".join(rows) + (
        f"\n\nNicknames: {', '.join(nick)} (the default) computed; {', '.join(refused)} "
        f"refused, naming the measures missing.\n\n"
        f"**Not implemented** ({len(NOT_IMPLEMENTED)} of trec_eval's "
        f"{len(NOT_IMPLEMENTED) + len(MEASURES)} measures; each is refused by name): "
        + ", ".join(f"`{n}`" for n in NOT_IMPLEMENTED)
        + ". Options not implemented (refused with one line): `-R` other than `qrels`, `-T` "
        "other than `trec_results`, `-Z`, `-N`, `-D`, `-o`."
    )


def _trec_whole(ctx: Context) -> str:
    """``membench trec-eval`` against trec_eval and pytrec_eval as whole processes
    (bench/bench_trec_whole.py --save -> bench/results/trec-whole.json)."""
    d = json.loads((REPO_ROOT / "bench" / "results" / "trec-whole.json").read_text())
    tools = d["tools"]
    others = [t for t in tools if t != "membench"]
    head = ["input", "lines", "membench CPU s", "membench MB"]
    for t in others:
        head += [f"{t} CPU s", f"{t} MB", f"{t} ÷ membench, CPU"]
    rows = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    shape = {"fixed": "1,000 a query", "ragged": "1-1,000 a query, graded, missing queries"}
    for r in d["rows"]:
        m = r.get("membench")
        cells = [
            f"{r['shape']} ({shape[r['shape']]}), {r['decimals']} decimals, {r['layout']}",
            f"{r['lines']:,}",
            f"{m['cpu']:.2f}" if m else "-",
            f"{m['rss_mb']:,}" if m else "-",
        ]
        for t in others:
            x = r.get(t)
            cells += [
                f"{x['cpu']:.2f}" if x else "-",
                f"{x['rss_mb']:,}" if x else "-",
                f"**{x['cpu'] / m['cpu']:.2f}**" if x and m else "-",
            ]
        rows.append("| " + " | ".join(cells) + " |")
    reps = sorted({x["repeats"] for r in d["rows"] for t in tools if (x := r.get(t))})
    loads = d["load_before_repeats"]
    load = (
        f"load average {min(loads):.1f}-{max(loads):.1f} before the repeats"
        if loads
        else "the record built from the run's progress lines (`--from-log`), the run "
        "stopped before its last repeat"
    )
    return "\n".join(rows) + (
        f"\n\n`{d['command'].strip()}` on {d['measured']} (commit {d['commit']}), "
        f"{d['cpus']} CPUs shared with other work, {d['queries']:,} queries; measures "
        + " ".join(f"`{x}`" for x in d["measures"])
        + " (`-c`); CPU seconds (user + system) "
        f"of the whole process, the median of {' to '.join(map(str, [reps[0], reps[-1]][: len(set(reps))]))} "
        f"interleaved repeats (pytrec_eval: the fewest); peak RSS in MB; {load}. membench's "
        "output equals trec_eval's, line for line, on every input."
    )


GENERATORS: dict[str, Callable[[Context], str]] = {
    "cards": _cards,
    "trec-eval-measures": _trec_eval_measures,
    "dense-isa": _dense_isa,
    "trec-whole": _trec_whole,
    "query-fields": _query_fields,
    "import-refusal": _import_refusal,
    "dense-max-tokens": _dense_max_tokens,
    "truncation": _truncation,
    "mainjob": _mainjob,
    "mainjob-line": _mainjob_line,
    "testsuite-line": _testsuite_line,
    "testsuite-brief": _testsuite_brief,
    "figures": _figures,
    "headline": _headline,
    "pdf-text-source": _pdf_text_source,
    "answer-context-brief": _answer_context_brief,
    "counts": _counts,
    "coverage": _coverage_table,
    "derived": _derived,
    "audit": _audit,
    "metrics": _metrics_table,
    "cli": _cli,
    "house": _house,
    "calibration": _calibration,
    "memsys-stores": _memsys_stores,
    "memsys-runs": _memsys_runs,
    "bounds": _bounds,
    "q2d": _q2d,
    "atom-example": _atom_example,
    "reference-store": _reference_store,
    "answer-context": _answer_context,
    "position-floor": _position_floor,
    "shape-floor": _shape_floor,
    "power": _power,
}

#: the blocks that read the built sets (bench/sets, or --sets): checked where they exist
NEEDS_SETS = frozenset(
    {"counts", "coverage", "derived", "audit", "atom-example", "reference-store"}
)


def stale(text: str, ctx: Context, with_sets: bool = True) -> list[str]:
    """The names of the blocks of ``text`` that differ from their generator's output (those
    that need the built sets only when ``with_sets``)."""
    only = {n for n in blocks(text) if n in GENERATORS and (with_sets or n not in NEEDS_SETS)}
    out = []
    for name in sorted(only):
        try:
            out += rewrite(text, ctx, {name})[1]
        except Exception as e:  # (a missing input file, say): stale, and why
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
    ap = argparse.ArgumentParser(
        prog="python -m membench.docsite.blocks", description=__doc__.split("\n\n")[0]
    )
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
        try:
            new, changed = rewrite(old, ctx, set(a.only) if a.only else None)
        except MembenchError as e:  # a missing or bad input: one line, the page untouched
            print(
                f"{p}: {e} (build the sets first: membench build --out {a.sets})", file=sys.stderr
            )
            return 2
        for name in changed:
            print(f"{p}: block {name}: {'differs' if a.check else 'rewritten'}")
        if changed and not a.check:
            p.write_text(new, encoding="utf-8")
        bad += bool(changed)
    return 1 if (a.check and bad) else 0


if __name__ == "__main__":
    sys.exit(main())
