"""The front door, ``import membench as mb`` (membench/__init__.py, membench/api.py,
membench/page.py, docs/api.md): importing it loads none of the pipeline (checked in a fresh
process), every documented name resolves to what it wraps, docs/api.md documents each of them
and its examples run as written, on runs of the fixture corpus (tests/minicorpus.py) standing
in for what ``make all`` writes."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from minicorpus import freeze, make_corpus

import membench
from membench.core.paths import REPO_ROOT

API_MD = REPO_ROOT / "docs" / "api.md"
#: what ``import membench`` must not load (the pipeline's heavy dependencies)
HEAVY = (
    "pandas",
    "numpy",
    "torch",
    "onnxruntime",
    "openvino",
    "pyarrow",
    "matplotlib",
    "ipywidgets",
    "pydantic",
    "tantivy",
    "sklearn",
    "scipy",
)
MAX_IMPORT_CPU = 0.2  # seconds of CPU for `import membench`


def _fresh(code: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        text=True,
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_is_light_in_a_fresh_process():
    out = _fresh(
        "import json, sys, time\n"
        "t = time.process_time()\n"
        "import membench as mb\n"
        "cpu = time.process_time() - t\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "ours = sorted(m for m in sys.modules if m.startswith('membench'))\n"
        "print(json.dumps({'cpu': cpu, 'heavy': heavy, 'ours': ours, 'file': mb.__file__}))"
    )
    assert Path(out["file"]).resolve() == (REPO_ROOT / "membench" / "__init__.py").resolve()
    assert out["heavy"] == []
    assert out["ours"] == ["membench", "membench.core", "membench.core.version", "membench.moved"]
    assert out["cpu"] < MAX_IMPORT_CPU, f"import membench took {out['cpu']:.3f} s of CPU"


def test_one_name_loads_only_what_it_wraps():
    """``mb.write_trec`` (standard library underneath) loads no pandas; ``mb.open_run``'s first
    call is what loads the run reader."""
    out = _fresh(
        "import json, sys\n"
        "import membench as mb\n"
        "f = mb.write_trec\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(json.dumps({'heavy': heavy, 'rundir': 'membench.metrics.rundir' in sys.modules,"
        " 'name': f.__module__ + '.' + f.__name__}))"
    )
    assert out == {"heavy": [], "rundir": False, "name": "membench.api.write_trec"}


def test_every_name_of_the_door_resolves():
    from membench import api, page
    from membench.content import chunk
    from membench.contract.protocol import Result

    assert membench.__all__ == [
        "open_sets",
        "open_run",
        "run_system",
        "score",
        "compare",
        "leaderboard",
        "read_trec",
        "write_trec",
        "browse",
        "page",
        "Result",
        "chunk",
    ]
    wrapped = {"page": page, "Result": Result, "chunk": chunk}
    for name in membench.__all__:
        value = getattr(membench, name)
        assert value is wrapped.get(name, getattr(api, name, None)), name
        assert value.__doc__ and len(value.__doc__) > 60 or name == "Result", name
    assert set(membench.__all__) <= set(dir(membench))
    with pytest.raises(AttributeError, match="docs/api.md"):
        membench.no_such_name
    # the submodules keep their own names: the door's function is not the runner's package
    importlib.import_module("membench.run.runner")
    assert callable(membench.run_system) and membench.run.__name__ == "membench.run"


def test_page_resolves_every_name_to_its_home():
    from membench import page

    for mod, names in page.HOMES.items():
        for name in names:
            value = getattr(page, name)
            home = sys.modules[mod]
            assert value is getattr(home, name), f"{name} from {mod}"
    assert set(page.__all__) <= set(dir(page))
    with pytest.raises(AttributeError, match="docs/api.md"):
        page.no_such_name


def test_page_homes_are_its_type_checking_imports():
    """page.HOMES (what resolves at run time) and the TYPE_CHECKING imports of membench/page.py
    (what type checkers and tests/test_architecture.py see) name the same things."""
    from membench import page

    tree = ast.parse(Path(page.__file__).read_text(encoding="utf-8"))
    block = next(
        n
        for n in tree.body
        if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"
    )
    seen: dict[str, set[str]] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1
        mod = "membench" + (f".{node.module}" if node.module else "")
        seen.setdefault(mod, set()).update(a.name for a in node.names)
    assert seen == {m: set(n) for m, n in page.HOMES.items()}


def test_docs_document_every_name():
    text = API_MD.read_text(encoding="utf-8")
    for name in membench.__all__:
        assert f"## `mb.{name}`" in text, name
        section = text.split(f"## `mb.{name}`", 1)[1].split("\n## ", 1)[0]
        assert "```python" in section, f"{name}: no example"
        if name != "page":
            assert f"`mb.{name}(" in section, f"{name}: no signature"
            for part in ("**Args**", "**Returns**", "**Raises**"):
                assert part in section, f"{name}: no {part}"
    from membench import page

    for name in page.__all__:
        assert f"`{name}`" in text, f"mb.page.{name} is not listed in docs/api.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The fixture corpus built, and in a working folder the runs `make all` would have
    written that the examples read (runs/random-dev, runs/newest-dev: content-free floors)."""
    from membench.run.runner import run_system
    from membench.systems import make_system

    root = tmp_path_factory.mktemp("api")
    corpus = make_corpus(root)
    frozen = freeze(corpus, root, {"MEMBENCH_CACHE": str(root / "cache")})
    work = root / "work"
    for name in ("random", "newest"):
        run_system(
            make_system(name),
            frozen["sets"],
            "dev",
            work / "runs" / f"{name}-dev",
            corpus,
            manifest=frozen["manifest"],
            lock=frozen["lock"],
        )
    # the store the leaderboard example writes, here (not the checkout's runs/leaderboard)
    (work / "runs" / "leaderboard").mkdir()
    return {**frozen, "corpus": corpus, "work": work, "cache": root / "cache"}


def test_the_examples_of_docs_api_run(made, monkeypatch, capsys):
    """Every ```python block of docs/api.md, in order, in one namespace, from the working
    folder, with the fixture corpus's sets, lock and manifest as the defaults the checkout's
    bench/ would give."""
    import membench.core.paths as paths
    import membench.sets.subcorpus as subcorpus

    monkeypatch.chdir(made["work"])
    monkeypatch.setenv("MEMBENCH_CORPUS", str(made["corpus"]))
    monkeypatch.setenv("MEMBENCH_CACHE", str(made["cache"]))
    for mod in (paths, subcorpus):
        monkeypatch.setattr(mod, "DEFAULT_SETS_DIR", made["sets"])
        monkeypatch.setattr(mod, "LOCK_PATH", made["lock"])
    monkeypatch.setattr(paths, "MANIFEST_PATH", made["manifest"])
    blocks = python_blocks(API_MD.read_text(encoding="utf-8"))
    assert len(blocks) == len(membench.__all__)
    ns: dict = {"__name__": "docs_api"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"docs/api.md block {i + 1}", "exec"), ns)
        except Exception as e:
            raise AssertionError(f"docs/api.md block {i + 1} fails:\n{code}") from e
    printed = capsys.readouterr().out
    # what the examples show is the run's own: the run made by the example, its figures,
    # the TREC file read back, the browser's first case
    assert (made["work"] / "runs" / "random-5" / "run.jsonl").is_file()
    assert ns["run"].system == "random" and "random" in printed
    assert ns["figures"]["all"]["recall@10"]["denominator"] > 0
    assert ns["trec"].qids[:2] == ["q1", "q2"] and ns["trec"].n_lines == 3
    assert "q1 Q0 d1 1 0.25 mine" in printed
    assert ns["comp"].labels == ["random", "newest"]
    assert len(ns["lb"].entries) == 2
    assert ns["browser"].cases and ns["browser"].pos == min(1, len(ns["browser"].cases) - 1)
    assert f"**{len(ns['items'])}** items, " in printed
    assert "false recalls" in printed
    # a system written in the notebook, run through the door, on the content layer's atoms
    assert ns["mine"].system == "newest-first" and ns["mine"].modalities == ["conversation"]
    assert ns["atoms"] and all(a.modality == "conversation" for a in ns["atoms"])


def _code(path: Path) -> list[tuple[str, str]]:
    """``(where, source)`` of each code cell of a notebook (IPython magics and shell lines
    blanked, so that the cell parses), or of a Python file."""
    if path.suffix != ".ipynb":
        return [(str(path.relative_to(REPO_ROOT)), path.read_text(encoding="utf-8"))]
    nb = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] == "code":
            src = "".join(c["source"])
            src = re.sub(r"^\s*[%!].*$", "", src, flags=re.M)
            out.append((f"{path.relative_to(REPO_ROOT)} cell {i}", src))
    return out


def outside_the_door(where: str, source: str) -> list[str]:
    """Each import of membench in ``source`` that is not ``import membench [as x]``,
    ``from membench import <door names>`` or ``from membench.page import <page names>``."""
    from membench import page

    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            bad += [
                f"{where}:{node.lineno}: import {a.name}"
                for a in node.names
                if a.name.startswith("membench.")
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("membench"):
            allowed = {"membench": membench.__all__, "membench.page": page.__all__}.get(
                node.module, ()
            )
            names = [a.name for a in node.names]
            if node.level or not set(names) <= set(allowed):
                bad.append(f"{where}:{node.lineno}: from {node.module} import {', '.join(names)}")
    return bad


def test_the_door_check_finds_what_it_must():
    assert (
        outside_the_door(
            "x",
            "import membench as mb\nfrom membench import page, browse\n"
            "from membench.page import show, frames\n",
        )
        == []
    )
    assert outside_the_door("x", "from membench.report.tables import show\n") == [
        "x:1: from membench.report.tables import show"
    ]
    assert outside_the_door("x", "import membench.metrics.rundir\n") == [
        "x:1: import membench.metrics.rundir"
    ]
    assert outside_the_door("x", "if 1:\n    from membench import RunDir\n") == [
        "x:2: from membench import RunDir"
    ]
    assert outside_the_door("x", "from membench.page import RunDir\n") == [
        "x:1: from membench.page import RunDir"
    ]


def test_notebooks_and_examples_import_only_from_the_door():
    files = [
        *sorted((REPO_ROOT / "notebooks").glob("*.ipynb")),
        *sorted((REPO_ROOT / "examples").glob("*.py")),
    ]
    assert len(files) >= 10
    bad = [line for f in files for where, src in _code(f) for line in outside_the_door(where, src)]
    assert not bad, "imports past the door (docs/api.md):\n" + "\n".join(bad)
