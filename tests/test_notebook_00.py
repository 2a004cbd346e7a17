"""Notebook 00 (start here) runs top to bottom under papermill, from the repository root as the
reports' notebooks do, on dev runs of the fixture corpus (tests/minicorpus.py) in a runs folder
laid out as `make all` leaves it, and shows the headline figures, the plot and the failure
browser of the first run."""

from __future__ import annotations

import json

import nbformat
import pytest
from minicorpus import freeze, make_corpus

from membench.analysis.browse import load_run_cases
from membench.core.paths import REPO_ROOT
from membench.metrics.measures import HEADLINE
from membench.run.runner import run_system
from membench.systems import make_system

pm = pytest.importorskip("papermill")

NOTEBOOK = REPO_ROOT / "notebooks" / "00_start_here.ipynb"
SYSTEMS = ("newest", "oldest", "random")  # the content-free floors; newest-dev comes first


def test_notebook_shape():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    for name in ("run_dirs = None", 'runs_dir = "runs"', "sets_dir = None", "corpus = None"):
        assert name in code[0].source
    assert "import membench as mb" in code[1].source
    assert not any(c.get("outputs") for c in code)  # committed without outputs


@pytest.fixture(scope="module")
def dev_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("nb00")
    corpus = make_corpus(root)
    frozen = freeze(corpus, root, {"MEMBENCH_CACHE": str(root / "cache")})
    runs = root / "runs"
    for name in SYSTEMS:
        run_system(
            make_system(name),
            frozen["sets"],
            "dev",
            runs / f"{name}-dev",
            corpus,
            manifest=frozen["manifest"],
            lock=frozen["lock"],
        )
    (runs / "half-dev").mkdir()  # not a complete run: left out
    return {"runs": runs, "corpus": corpus, "sets": frozen["sets"], "cache": root / "cache"}


def test_notebook_00_runs_on_the_dev_runs(dev_runs, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMBENCH_CACHE", str(dev_runs["cache"]))
    out = tmp_path / "00.ipynb"
    pm.execute_notebook(
        str(NOTEBOOK),
        str(out),
        kernel_name="python3",
        cwd=str(REPO_ROOT),
        progress_bar=False,
        log_output=False,
        parameters={
            "runs_dir": str(dev_runs["runs"]),
            "corpus": str(dev_runs["corpus"]),
            "n_resamples": 200,
        },
    )
    nb = nbformat.read(out, as_version=4)
    text, images, widgets = [], 0, 0
    for c in nb.cells:
        for o in c.get("outputs", []):
            assert o["output_type"] != "error", f"{o.get('ename')}: {o.get('evalue')}"
            data = o.get("data", {})
            images += "image/png" in data
            widgets += "application/vnd.jupyter.widget-view+json" in data
            text += [o.get("text", "")] + [
                data[k] for k in ("text/plain", "text/html", "text/markdown") if k in data
            ]
    shown = "\n".join(text).replace("<wbr>", "")
    first = dev_runs["runs"] / "newest-dev"
    n_items = len(load_run_cases(first).denominators)
    assert f"3 runs on the dev split, {n_items} items each: newest, oldest, random" in shown
    assert "half-dev" not in shown
    assert "manifest_sha256" in shown  # provenance
    for m in HEADLINE:  # the headline table
        assert m in shown, m
    assert "n/den" in shown
    assert images >= 1  # the plot
    false_recalls = load_run_cases(first).of("false_recall", "all")
    assert false_recalls
    assert f"**newest**: {len(false_recalls)} false recalls" in shown  # the browser's count
    assert widgets == 1  # the live widget
    state = json.dumps(nb.metadata.get("widgets", {}))  # the case it shows
    assert f'data-query-id=\\"{false_recalls[0].query_id}\\"' in state, state[:300]
