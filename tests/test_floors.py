"""The content-free floors beside a run (membench.analysis.floors, page 02's floors table):
which runs count as floors, which are on the same items, the margin over the best floor, and
the grid the page shows."""

from __future__ import annotations

import json
import shutil

import pytest
from test_slices import small_runs

from membench.analysis.floors import floor_metrics, floor_runs, is_floor_run, margins
from membench.metrics.rundir import RunDir
from membench.report.tables import floors_grid


@pytest.fixture(scope="module")
def runs(tmp_path_factory, built, corpus_root):
    return small_runs(tmp_path_factory, built, corpus_root)


def _fig(v):
    return {"value": v, "n": 4, "denominator": 4, "ci95": [v, v]}


def test_the_margin_is_over_the_best_floor_of_each_scope():
    run = {
        "video": {"recall@10": _fig(0.9)},
        "code": {"recall@10": _fig(None)},
        "all": {"recall@10": _fig(0.5)},
        "submission": {"valid": True},
    }
    floors = {
        "random": {
            "video": {"recall@10": _fig(0.46)},
            "code": {"recall@10": _fig(0.0)},
            "all": {"recall@10": _fig(0.1)},
        },
        "newest": {
            "video": {"recall@10": _fig(0.06)},
            "code": {"recall@10": _fig(0.01)},
            "all": {"recall@10": _fig(0.2)},
        },
    }
    m = margins(run, floors)
    assert m["video"] == (pytest.approx(0.44), "random")
    assert m["all"] == (pytest.approx(0.3), "newest")
    assert m["code"] is None  # the run's value is missing
    html = floors_grid("bm25", run, floors).html
    assert html.index("bm25") < html.index("floor: random") < html.index("floor: newest")
    assert "+0.440" in html and "over random" in html and "+0.300" in html
    assert html.count('class="mb-baseline mb-floor"') == 2
    assert "margin over the best floor" not in floors_grid("bm25", run, {}).html


def test_floor_runs_are_the_complete_ones_on_the_same_items(runs, tmp_path):
    for name in ("oracle", "random", "leaky"):
        shutil.copytree(runs[name], tmp_path / name)
    assert is_floor_run(json.loads((tmp_path / "random" / "meta.json").read_text()))
    assert not is_floor_run(json.loads((tmp_path / "oracle" / "meta.json").read_text()))
    leaky = RunDir.open(tmp_path / "leaky")
    found, left = floor_runs(leaky)  # beside it: random alone
    assert [rd.system for rd in found] == ["random"] and left == []
    # another selection, an unfinished run, a run that is no floor's: left out, each said
    for name, change in (("random-other", {"limit": 7}), ("random-running", {"status": "running"})):
        shutil.copytree(runs["random"], tmp_path / name)
        meta = json.loads((tmp_path / name / "meta.json").read_text())
        (tmp_path / name / "meta.json").write_text(json.dumps({**meta, **change}))
    found, left = floor_runs(leaky)
    assert [rd.path.name for rd in found] == ["random"]
    assert any("random-other: evaluates other items" in x for x in left)
    assert any("random-running: the run is 'running', not complete" in x for x in left)
    found, left = floor_runs(leaky, [tmp_path / "oracle"])
    assert found == [] and "not a content-free floor's run (system 'oracle')" in left[0]
    figs, _ = floor_metrics(leaky)
    assert list(figs) == ["random"]
    assert (
        figs["random"]["all"]["recall@10"]
        == RunDir.open(runs["random"]).metrics(write=False)["all"]["recall@10"]
    )
