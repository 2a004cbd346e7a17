"""The README's bm25 figures are a regression test: a fresh bm25 run on the whole dev split
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


def test_every_frozen_system_has_its_command_and_sets(expected):
    for name, s in expected.items():
        assert s["command"].startswith(f"membench run --system {name} --split dev")
        assert set(s["set_sha256"]) >= {"pdf.jsonl", "items.jsonl"}
        assert s["modalities"]["all"]["recall@10"]["n"] > 1500


def test_readme_figures_are_the_frozen_ones(expected):
    from membench.analysis.expected import table
    from membench.core.paths import REPO_ROOT

    readme = (REPO_ROOT / "README.md").read_text()
    start = readme.index("<!-- figures:start -->")
    block = readme[readme.index("\n", start) + 1:readme.index("<!-- figures:end -->")].strip()
    assert block == table(list(expected.values()))


def test_a_calibration_run_shows_no_cartridge_figures(expected):
    """A run made with calibration=none (the real memory systems' calibration runs) keeps its
    ranking figures but shows `uncal.` for false recall and abstention."""
    from membench.analysis.expected import table

    s = json.loads(json.dumps(expected["bm25"]))
    s["calibration"] = "none"
    row = next(r for r in table([s]).splitlines() if r.startswith("| bm25 | image |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[6].startswith("uncal. (") and cells[7] == "uncal."
    f = expected["bm25"]["modalities"]["image"]
    assert cells[2] == f"{f['recall@10']['value']:.4f} ({f['recall@10']['n']})"
    calibrated = next(r for r in table([expected["bm25"]]).splitlines()
                      if r.startswith("| bm25 | image |"))
    assert "uncal." not in calibrated
