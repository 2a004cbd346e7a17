"""The results page's bm25 figures are a regression test: a fresh bm25 run on the whole dev split
reproduces bench/expected/dev.json (figures of every modality, to 1e-9)."""

from __future__ import annotations

import json

import pytest

from membench.analysis.expected import EXPECTED, KEYS
from membench.metrics import metrics_for_run_dir


@pytest.fixture(scope="module")
def expected():
    return json.loads(EXPECTED.read_text())["systems"]


def test_bm25_dev_reproduces_the_frozen_figures(expected, bm25_dev):
    exp = expected["bm25"]
    run_dir, meta = bm25_dev
    assert meta["set_sha256"] == exp["set_sha256"]
    got = metrics_for_run_dir(run_dir, write=False)
    for mod, figs in exp["modalities"].items():
        for k in KEYS:
            if k.startswith("latency"):
                assert got[mod][k]["n"] == figs[k]["n"]
                continue
            e, g = figs[k], got[mod][k]
            assert (g["n"], g["denominator"]) == (e["n"], e["denominator"]), (mod, k)
            assert g["value"] == pytest.approx(e["value"], abs=1e-9), (mod, k)
    # the natives' column label: the tells' ROC AUC of the audit of the sets the run read
    from membench.analysis.expected import figures

    assert figures(run_dir)["native_tells"] == exp["native_tells"]
    assert set(exp["native_tells"]) == {"locomo", "mmlongbench"}
    # the pdf figures split into text-layer and image-only (OCR) documents
    from membench.analysis.expected import pdf_text_source
    from membench.metrics.rundir import RunDir

    split = pdf_text_source(RunDir.open(run_dir))
    assert set(split) == set(exp["pdf_text_source"]) == {"pdf text layer", "pdf image-only (OCR)"}
    for src, figs in exp["pdf_text_source"].items():
        for k, e in figs.items():
            g = split[src][k]
            assert (g["n"], g["denominator"]) == (e["n"], e["denominator"]), (src, k)
            assert g["value"] == pytest.approx(e["value"], abs=1e-9), (src, k)
    # and they add up to the pdf row
    n = sum(f["recall@10"]["n"] for f in split.values())
    assert n == exp["modalities"]["pdf"]["recall@10"]["n"]
    mean = sum(f["recall@10"]["value"] * f["recall@10"]["n"] for f in split.values()) / n
    assert mean == pytest.approx(exp["modalities"]["pdf"]["recall@10"]["value"], abs=1e-12)


def test_every_frozen_system_has_its_command_and_sets(expected, built):
    answerable = sum(1 for r in built.records if r.split == "dev" and not r.unanswerable)
    for name, s in expected.items():
        assert s["command"].startswith(f"membench run --system {name} --split dev")
        assert set(s["set_sha256"]) >= {"pdf.jsonl", "items.jsonl"}
        # the whole dev split, not a --limit sample
        assert s["modalities"]["all"]["recall@10"]["n"] == answerable


def test_the_results_page_figures_are_the_frozen_ones(expected):
    from membench.analysis.expected import table
    from membench.core.paths import REPO_ROOT

    readme = (REPO_ROOT / "docs" / "results.md").read_text()
    start = readme.index("<!-- figures:start -->")
    block = readme[readme.index("\n", start) + 1 : readme.index("<!-- figures:end -->")].strip()
    assert block == table(list(expected.values()))


def test_every_generated_figure_block_of_the_results_page_is_current():
    """docs/results.md's blocks with a generator (membench.docsite.blocks: the frozen figures
    and their pdf text-layer split) are what the generators give (python -m
    membench.docsite.blocks docs/results.md rewrites them)."""
    from membench.core.paths import REPO_ROOT
    from membench.docsite.blocks import GENERATORS, Context, blocks, rewrite

    readme = (REPO_ROOT / "docs" / "results.md").read_text()
    have = blocks(readme)
    assert {"figures", "pdf-text-source"} <= set(have)
    # the figure blocks read only bench/expected; the set blocks need built sets
    new, changed = rewrite(readme, Context(), only={"figures", "pdf-text-source"})
    assert changed == [] and new == readme
    assert set(GENERATORS) >= {"counts", "coverage", "derived", "audit"}


def test_docblocks_rewrites_only_blocks_with_a_generator(tmp_path):
    from membench.docsite.blocks import GENERATORS, rewrite

    GENERATORS["t-one"] = lambda ctx: "| fresh |"
    try:
        text = (
            "intro\n<!-- t-one:start (note) -->\n| stale |\n<!-- t-one:end -->\n"
            "<!-- other:start -->\nkept\n<!-- other:end -->\n"
        )
        new, changed = rewrite(text, None)
        assert changed == ["t-one"]
        assert "| fresh |" in new and "| stale |" not in new and "kept" in new
        again, changed2 = rewrite(new, None)
        assert again == new and changed2 == []
    finally:
        del GENERATORS["t-one"]


def test_a_calibration_run_shows_no_cartridge_figures(expected):
    """A run made with calibration=none (the real memory systems' calibration runs) keeps its
    ranking figures but shows `uncal.` for false recall and abstention."""
    from membench.analysis.expected import table

    s = json.loads(json.dumps(expected["bm25"]))
    s["calibration"] = "none"
    row = next(r for r in table([s]).splitlines() if r.startswith("| bm25 | image |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    f = expected["bm25"]["modalities"]["image"]
    # false recall, audited; the natives with a tell (none in image: "—"; "—" too in a freeze
    # that predates them); the answerable abstention
    assert cells[6].startswith("uncal. (") and cells[7].startswith("—") and cells[8] == "uncal."
    assert cells[2] == f"{f['recall@10']['value']:.4f} ({f['recall@10']['n']})"
    calibrated = next(
        r for r in table([expected["bm25"]]).splitlines() if r.startswith("| bm25 | image |")
    )
    assert "uncal." not in calibrated
