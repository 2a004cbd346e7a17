"""Each registry of things membench ships holds consistent records (docs/architecture.md,
"Where to add things"): a system's target imports and lives where its kind says
(membench/systems/__init__.py), a report page's notebook exists (membench/report/pages.py), a
trec_eval measure is computed under the names it declares, in trec_eval's output order
(membench/trec/measures.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
import tomllib

from membench.report import export
from membench.report.pages import PAGES, ROLES, RUN_ROLES, page_of
from membench.systems import BUILTIN, DOUBLES, KINDS, LIBRARIES, REGISTRY, resolve
from membench.systems.doubles import CONTENT_FREE
from membench.systems.identity import _LIBRARY_MODULES
from membench.trec.measures import (
    MEASURES,
    NOT_IMPLEMENTED,
    TREC_EVAL_TABLE,
    Judged,
    Scored,
    compute,
)
from membench.trec.trec_eval import trec_eval_values

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------- systems


def test_system_names_are_unique_and_the_views_follow_the_registry():
    names = [s.name for s in REGISTRY]
    assert len(names) == len(set(names))
    assert BUILTIN == {s.name: s.target for s in REGISTRY}
    assert LIBRARIES == {s.name: s.extra for s in REGISTRY if s.kind == "library"}
    assert DOUBLES == {s.name: s.sees_gold for s in REGISTRY if s.kind == "double"}


@pytest.mark.parametrize("spec", REGISTRY, ids=lambda s: s.name)
def test_a_system_record_imports_and_matches_its_kind(spec):
    """The target is a literal ``membench.systems.<module>:<attr>`` that imports (no library
    needed: adapters import theirs when made) to something callable in the module its kind
    says; only a library names an extra (one of pyproject's), only a double may see gold, and
    a double's class carries the registered name."""
    assert spec.kind in KINDS
    assert re.fullmatch(r"membench\.systems\.\w+:\w+", spec.target), spec.target
    module = spec.target.partition(":")[0].rsplit(".", 1)[1]
    obj = resolve(spec.name)
    assert callable(obj) and obj.__module__ == spec.target.partition(":")[0]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    if spec.kind == "reference":
        assert module == "reference"
    elif spec.kind == "library":
        assert module in _LIBRARY_MODULES and spec.extra in extras
    else:
        assert module == "doubles" and obj.name == spec.name
    assert bool(spec.extra) == (spec.kind == "library")
    assert not spec.sees_gold or spec.kind == "double"


def test_the_makefile_and_the_floors_name_registered_doubles():
    """The Makefile's ``DOUBLES`` (never ranked) are the registry's doubles, in its order; the
    content-free floors are doubles that see no gold."""
    line = re.search(r"^DOUBLES\s*:=(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert line and line.group(1).split() == list(DOUBLES)
    assert all(name in DOUBLES and DOUBLES[name] is False for name in CONTENT_FREE)


# ------------------------------------------------------------------------- report pages


def test_each_report_page_has_its_notebook_titles_and_role():
    notebooks = [p.notebook for p in PAGES]
    assert len(notebooks) == len(set(notebooks)) and notebooks == sorted(notebooks)
    for p in PAGES:
        assert (ROOT / "notebooks" / f"{p.notebook}.ipynb").is_file(), p.notebook
        number = p.notebook.split("_")[0]
        assert p.title.startswith(f"{number} · ") and p.short.startswith(f"{number} ")
        assert p.role in ROLES
    for role in ROLES:
        assert any(p.role == role for p in PAGES), role
        if role != "run":
            assert page_of(role)  # one page per role but "run"


def test_the_old_page_names_are_views_of_the_registry():
    assert export.RUN_NOTEBOOKS == tuple(p.notebook for p in PAGES if p.role in RUN_ROLES)
    assert export.SETS_NOTEBOOK == export.RUN_NOTEBOOKS[0] == page_of("sets")
    assert (export.COMPARE_NOTEBOOK, export.LEADERBOARD_NOTEBOOK, export.Q2D_NOTEBOOK) == (
        page_of("compare"),
        page_of("leaderboard"),
        page_of("q2d"),
    )
    assert list(export.PAGE_TITLES) == list(export.SHORT_TITLES) == [p.notebook for p in PAGES]


# ----------------------------------------------------------------------- trec_eval measures


def test_each_trec_measure_record_is_whole():
    """Keyed by its name, one of trec_eval's (its definition names trec_eval's file), known
    parameter and summary kinds, sorted defaults of the right type, and a compute function
    unless it is a summary only (``total``)."""
    assert not set(MEASURES) & set(NOT_IMPLEMENTED)
    for name, m in MEASURES.items():
        assert m.name == name and name in TREC_EVAL_TABLE
        assert m.definition.startswith(f"m_{name}.c: ")
        assert m.kind in ("none", "cutoffs", "points", "weight")
        assert m.summary in ("count", "mean", "gm", "runid")
        assert m.compute is not None or m.total is not None
        if m.kind == "cutoffs":
            assert m.default and all(isinstance(k, int) and k > 0 for k in m.default)
        elif m.kind == "points":
            assert m.default and all(isinstance(x, float) for x in m.default)
        else:
            assert m.default == ()
        assert list(m.default) == sorted(m.default)


def _scored(nq: int = 3) -> Scored:
    rng = np.random.default_rng(0)
    q = np.repeat(np.arange(nq), 4)
    rank = np.tile(np.arange(1, 5), nq)
    rel = rng.integers(-1, 3, len(q))
    j = Judged(np.full(nq, 6, dtype=np.int64), q, rank, rel)
    n_rel = np.bincount(q[rel >= 1], minlength=nq).astype(np.int64) + 1
    n_nonrel = np.bincount(q[rel == 0], minlength=nq).astype(np.int64)
    gq = np.repeat(np.arange(nq), 2)
    ideal = (gq, np.tile([2.0, 1.0], nq), np.tile([0, 1], nq))
    return Scored(j, j.ret.copy(), n_rel, n_nonrel, ideal, 1)


@pytest.mark.parametrize("name", [m for m in MEASURES if MEASURES[m].compute is not None])
def test_a_trec_measure_computes_one_array_per_declared_name(name):
    s = _scored()
    m = MEASURES[name]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = m.compute(s, m.default)
    assert len(out) == len(m.names(m.default))
    assert all(np.shape(v) == (s.nq,) for v in out)
    assert list(compute([(name, m.default)], s)) == m.names(m.default)


def test_every_trec_measure_is_printed_under_its_names_in_trec_eval_order(tmp_path):
    """Asked for all at once (two with parameters), the output names are the records' names
    in trec_eval's table order; each has its summary, and the per-query values are those of
    the measures printed per query."""
    (tmp_path / "qrels").write_text("q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 a 1\nq2 0 d 0\n")
    (tmp_path / "run").write_text(
        "q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 x 3 1 t\nq2 Q0 d 1 2 t\nq2 Q0 a 2 1 t\n"
    )
    asked = [m for m in MEASURES if m not in ("P", "set_F")] + ["P.3,7", "set_F.0.5"]
    names, rows, total = trec_eval_values(tmp_path / "qrels", tmp_path / "run", asked)
    params = {m: MEASURES[m].default for m in MEASURES}
    params.update({"P": (3, 7), "set_F": ("0.5", 0.5)})
    want = [n for t in TREC_EVAL_TABLE if t in MEASURES for n in MEASURES[t].names(params[t])]
    assert names == want and list(total) == want
    assert "P_3" in names and "set_F_0.5" in names
    per_query = [
        n
        for t in TREC_EVAL_TABLE
        if t in MEASURES and MEASURES[t].per_query
        for n in MEASURES[t].names(params[t])
    ]
    assert list(rows) == ["q1", "q2"] and all(list(r) == per_query for r in rows.values())


def test_only_one_class_is_called_measure():
    """``membench.metrics.measures.Measure``; trec_eval's record is ``TrecMeasure``."""
    found = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "membench").rglob("*.py"))
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name == "Measure"
    ]
    assert found == ["membench/metrics/measures.py"]
