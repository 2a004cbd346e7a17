"""Notebooks 02, 03 and 05 run top to bottom under papermill (from the repo root, as CI does)
on small oracle / random / leaky runs, and show what they promise."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from test_slices import small_runs

from membench.core.paths import REPO_ROOT

pm = pytest.importorskip("papermill")

NB = REPO_ROOT / "notebooks"
NOTEBOOKS = ("02_run_dev.ipynb", "03_slice_failures.ipynb", "05_compare_systems.ipynb")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, built, corpus_root):
    return small_runs(tmp_path_factory, built, corpus_root)


def execute(name: str, out: Path, **parameters) -> nbformat.NotebookNode:
    pm.execute_notebook(
        str(NB / name),
        str(out),
        parameters=parameters,
        kernel_name="python3",
        cwd=str(REPO_ROOT),
        progress_bar=False,
        log_output=False,
    )
    return nbformat.read(out, as_version=4)


def outputs(nb) -> tuple[str, int]:
    """All text the executed notebook shows, and its number of figures; fails on an error."""
    text, images = [], 0
    for c in nb.cells:
        for o in c.get("outputs", []):
            assert o["output_type"] != "error", f"{o.get('ename')}: {o.get('evalue')}"
            if o["output_type"] == "stream":
                text.append(o["text"])
                continue
            data = o.get("data", {})
            images += "image/png" in data
            for kind in ("text/plain", "text/html", "text/markdown"):
                if kind in data:
                    text.append(data[kind])
    return "\n".join(text).replace("<wbr>", ""), images  # headers may break at "_"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_shape(name):
    nb = nbformat.read(NB / name, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].cell_type == "code" and "parameters" in code[0].metadata.get("tags", [])
    assert "provenance_frame(provenance(" in code[1].source
    assert not any(c.get("outputs") for c in code)  # committed without outputs


def test_02_run_dev_on_leaky(runs, tmp_path):
    nb = execute("02_run_dev.ipynb", tmp_path / "o.ipynb", run_dir=str(runs["leaky"]))
    text, images = outputs(nb)
    assert "sha256 pdf.jsonl" in text and "manifest_sha256" in text  # provenance
    assert "recall@10" in text and "/" in text  # n/denominator
    assert "judged@10" in text  # beside recall@10
    assert "FAIL" in text and "holder_correctness" in text  # leaky fails
    assert "gates pass" in text
    assert "p50" in text and images >= 1  # latency
    assert "Not mirrored, never run" in text and "not_covered" in text  # coverage
    # every judgment set's figures, with n, and what each set is
    assert "code · gold, all_annotators, any_annotator, graded" in text
    assert "conversation · gold, session" in text and "ndcg_graded@10" in text
    assert "the whole session holding an evidence turn" in text
    # false recall with the answerable abstention beside it, and the measures silence loses
    assert "abstain_rate_answerable" in text and "abstain_n/den" in text
    assert (
        "answerable kept at false recall &lt;= 0.10, all modalities" in text
        or "answerable kept at false recall <= 0.10, all modalities" in text
    )
    assert "answerable_kept@fr0.10" in text and "abstention_auc" in text
    # past the anchors: the answer layer and the context cost, with what was read
    assert "answer@cartridge" in text and "answer@10" in text and "answer_bearing" in text
    assert "recall@1024tok" in text and "context_tokens_p95" in text
    # the content-free floors beside it (random's run is beside leaky's): recall@10 per
    # modality, and the margin over the best floor
    assert "floor: random" in text and "margin over the best floor" in text
    assert "floor: oracle" not in text and "floor: leaky" not in text


def test_02_floors_given_and_left_out(runs, tmp_path):
    nb = execute(
        "02_run_dev.ipynb",
        tmp_path / "o.ipynb",
        run_dir=str(runs["leaky"]),
        floor_dirs=[str(runs["oracle"])],
    )
    text, _ = outputs(nb)
    assert "left out: " in text and "not a content-free floor's run (system 'oracle')" in text
    assert "No content-free floor run on these items" in text and "floor: random" not in text


def test_02_runs_when_missing(built, tmp_path):
    run_dir = tmp_path / "random-dev"
    nb = execute(
        "02_run_dev.ipynb",
        tmp_path / "o.ipynb",
        run_dir=str(run_dir),
        sets_dir=str(built.out),
        system="random",
        run_if_missing=True,
        limit=3,
    )
    text, _ = outputs(nb)
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["limit"] == 3 and meta["system"] == "random"
    assert (run_dir / "metrics.json").exists()
    assert "system random" in text and "PASS" in text


def test_02_missing_run_is_a_clear_error(tmp_path):
    with pytest.raises(pm.PapermillExecutionError, match="no run.jsonl"):
        execute("02_run_dev.ipynb", tmp_path / "o.ipynb", run_dir=str(tmp_path / "nope"))


def test_03_slice_failures_on_random(runs, tmp_path):
    nb = execute("03_slice_failures.ipynb", tmp_path / "o.ipynb", run_dir=str(runs["random"]))
    text, images = outputs(nb)
    assert "sha256 items.jsonl" in text
    assert "worst_margin" in text and "gate_failures" in text
    for dim in ("modality", "source", "holder", "as_of_bucket", "scenario", "derivation"):
        assert f"by {dim}" in text
    assert "n_answerable" in text and "n_unanswerable" in text
    assert images >= 4  # heatmap, holder spread, latency CDF, threshold sweep
    assert "answerable_recall_proxy" in text
    assert "answerable_kept@fr0.10" in text and "abstain_rate_answerable" in text
    # the modality slices under every judgment set the records carry
    assert "judgment set: gold (sets the records carry: gold, all_annotators" in text
    for js in ("all_annotators", "any_annotator", "graded", "session"):
        assert js in text


def test_03_under_a_judgment_set(runs, tmp_path):
    nb = execute(
        "03_slice_failures.ipynb",
        tmp_path / "o.ipynb",
        run_dir=str(runs["random"]),
        judgment_set="session",
    )
    text, _ = outputs(nb)
    m = json.loads((runs["random"] / "metrics.json").read_text())
    n = m["judgment_sets"]["session"]["conversation"]["recall@10"]["n"]
    assert "judgment set: session" in text and f"{n} items judged" in text


def test_05_compare_systems(runs, tmp_path):
    dirs = [str(runs[k]) for k in ("oracle", "random", "leaky")]
    nb = execute("05_compare_systems.ipynb", tmp_path / "o.ipynb", run_dirs=dirs, n_resamples=500)
    text, images = outputs(nb)
    assert all(d in text for d in dirs)  # provenance per run
    assert "p_permutation" in text and "p_bootstrap" in text and "p_perm_holm" in text
    assert "diff<br><small>[95% CI]</small>" in text  # diff and its interval, one cell
    assert "n/den" in text
    printed = re.search(r"(\d+) tests, \d+ significant", text)
    appendix = re.search(r"all (\d+) paired tests", text)  # the appendix keeps every test
    assert printed and appendix and printed.group(1) == appendix.group(1)
    assert "recall@1000" in text and "ndcg@10" in text
    assert images >= 2  # the forest plot, first stage
    # rankings under every judgment set and Kendall's tau between them, with n
    assert "code · ndcg@10: rank (mean) per judgment set" in text
    assert "conversation · recall@10: rank (mean) per judgment set" in text
    assert "kendall_tau" in text and "n_systems" in text and "n_items" in text
    assert re.search(r"\d+ rank agreements over 3 systems; 2000 bootstrap", text)


def test_05_under_a_judgment_set(runs, tmp_path):
    dirs = [str(runs[k]) for k in ("oracle", "random")]
    nb = execute(
        "05_compare_systems.ipynb",
        tmp_path / "o.ipynb",
        run_dirs=dirs,
        n_resamples=200,
        judgment_set="all_annotators",
        agreement_resamples=100,
    )
    text, _ = outputs(nb)
    assert "judgment set: all_annotators" in text
