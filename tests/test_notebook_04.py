"""Notebook 04 runs top to bottom under papermill (from the repository root, with -p
overrides) on a real leaky run, and its static HTML shows the first cases without a kernel."""

from __future__ import annotations

import os

import nbformat
import pytest

from membench.analysis.browse import cases
from membench.core.paths import REPO_ROOT
from membench.run.runner import run_system
from membench.systems import make_system

NOTEBOOK = REPO_ROOT / "notebooks" / "04_false_recalls.ipynb"


def test_notebook_shape():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert 'run_dir = "runs/bm25-dev"' in code[0].source
    for name in ("sets_dir = None", "corpus = None", "n_static = 20"):
        assert name in code[0].source
    assert "provenance_frame(provenance(" in code[1].source
    assert all(not c.get("outputs") for c in code)  # committed without outputs


def test_notebook_runs_with_papermill(built, corpus_root, tmp_path, monkeypatch):
    pm = pytest.importorskip("papermill")
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "leaky"
    run_system(make_system("leaky"), built.out, "dev", run, corpus_root, limit=30)
    out = tmp_path / "04.ipynb"
    pm.execute_notebook(
        str(NOTEBOOK),
        str(out),
        kernel_name="python3",
        cwd=str(REPO_ROOT),
        progress_bar=False,
        parameters={
            "run_dir": os.path.relpath(run, REPO_ROOT),
            "sets_dir": str(built.out),
            "corpus": str(corpus_root),
            "n_static": 2,
        },
    )
    nb = nbformat.read(out, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    html = "\n".join(
        o.get("data", {}).get("text/html", "")
        if isinstance(o.get("data", {}).get("text/html", ""), str)
        else "".join(o["data"]["text/html"])
        for o in outputs
    )
    first = cases(run, built.out)[0]
    assert f'data-query-id="{first.query_id}"' in html
    assert "manifest_sha256" in html  # the provenance table
    assert "false recalls" in html and "misses (no gold in top 10)" in html
    assert html.count("data-membench-stepper") == 1  # the kernel-free stepper's cases

    from nbconvert import HTMLExporter

    static, _ = HTMLExporter().from_notebook_node(nb)  # no kernel: the static cases show
    assert f'data-query-id="{first.query_id}"' in static
    assert "data:image/png;base64," in static
