"""The three doors without traps: a missing sets folder says to build it; every error about a
system's answer names the query and the offending hit, on all three doors (the HTTP ones:
tests/test_http_faults.py); the HTTP ingest progress counts what the server took; the content
layer's settings (--content) go to the content layer, never to a system's config, and meta.json
records them and the store's size; a successful report prints no kernel noise."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from membench.cli import main
from membench.core import progress
from membench.core.paths import REPO_ROOT


@pytest.fixture(autouse=True)
def _clean_content_env(monkeypatch):
    """--content sets the environment of this process: each test starts without it."""
    from membench.content.config import CONTENT_ENV

    monkeypatch.delenv(CONTENT_ENV, raising=False)


def test_a_missing_sets_folder_says_to_build_it(tmp_path, capsys):
    code = main(
        [
            "run",
            "--system",
            "random",
            "--sets",
            str(tmp_path / "sets"),
            "--out",
            str(tmp_path / "run"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert (
        f"{tmp_path / 'sets'}: does not exist: the sets are not built; build them with "
        "`membench build` (or `make sets`), then run again" in err
    )
    (tmp_path / "sets").mkdir()
    main(
        [
            "run",
            "--system",
            "random",
            "--sets",
            str(tmp_path / "sets"),
            "--out",
            str(tmp_path / "run"),
        ]
    )
    assert "holds no items.jsonl: the sets are not built" in capsys.readouterr().err


@pytest.mark.parametrize("score, what", [("nan", "'nan'"), ("inf", "'inf'"), ("1,5", "'1,5'")])
def test_a_bad_trec_score_names_the_query_and_the_atom(
    built, corpus_root, tmp_path, capsys, score, what
):
    from membench.run.runner import load_split

    data = load_split(built.out, "dev", ["conversation"], limit=1)
    qid = data.records[0].query_id
    atoms = tmp_path / "atoms.jsonl"
    atoms.write_text("")
    trec = tmp_path / "run.trec"
    trec.write_text(f"{qid} Q0 a2 1 {score} t\n")
    code = main(
        [
            "import-run",
            "--trec",
            str(trec),
            "--atoms",
            str(atoms),
            "--name",
            "x",
            "--out",
            str(tmp_path / "o"),
            "--sets",
            str(built.out),
            "--cartridge-top",
            "1",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert (
        f"{trec}:1: TREC: field score: query '{qid}', atom 'a2': score {what} is not a "
        "finite number" in err
    ), err


def test_a_bad_trec_rank_names_the_query_and_the_atom(tmp_path):
    from membench.core.errors import InputError
    from membench.run.importer import read_trec_lines

    trec = tmp_path / "run.trec"
    trec.write_text("q1 Q0 a1 first 2.0 t\n")
    with pytest.raises(InputError) as e:
        list(read_trec_lines(trec))
    assert str(e.value) == (
        f"{trec}:1: TREC: field rank: query 'q1', atom 'a1': rank 'first' is not an integer"
    )


def test_http_ingest_progress_counts_what_the_server_took(built, corpus_root):
    from http_helpers import Wrapped, thread_server

    from membench.run.runner import load_split
    from membench.systems.remote import HttpSystem

    data = load_split(built.out, "dev", ["conversation"], limit=2)
    out = io.StringIO()
    with (
        thread_server(Wrapped, [corpus_root]) as (url, _),
        progress.configured("lines", stream=out),
    ):
        HttpSystem(url).ingest(data.items, corpus_root)
    done = [
        ln for ln in out.getvalue().splitlines() if "ingest on the server" in ln and " done: " in ln
    ]
    assert len(done) == 1 and f" done: {len(data.items)} items" in done[0], out.getvalue()
    assert len(data.items) > 0


def test_content_settings_go_to_the_content_layer_and_into_meta(built, corpus_root, tmp_path):
    """`make all SYSTEMS=random` passed the OCR worker setting as a config to a system that
    takes none; --content hands it to the content layer instead, for any system."""
    from membench.content.config import (
        ChunkConfig,
        content_scope,
        content_settings,
        set_content_settings,
    )

    before = content_settings()
    out = tmp_path / "random"
    code = main(
        [
            "--quiet",
            "run",
            "--system",
            "random",
            "--sets",
            str(built.out),
            "--modality",
            "conversation",
            "--limit",
            "3",
            "--content",
            "ocr_processes=2",
            "--content",
            "pdf_ocr_dpi=96",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["config"] == {"seed": 0, "reads_gold": False}  # not the system's
    assert meta["content"] == {
        "ocr_processes": 2,
        "ocr_overlap": True,
        "ocr_engine": "openvino",
        "pdf_ocr_dpi": 96,
        "strict": 0,
    }
    assert content_settings() == before  # the call's settings ended with it: no leak
    with content_scope():  # within one, the layer's defaults are them
        set_content_settings({"ocr_processes": 2, "pdf_ocr_dpi": 96})
        assert ChunkConfig().ocr_processes == 2 and ChunkConfig().pdf_ocr_dpi == 96
        assert ChunkConfig(ocr_processes=1).ocr_processes == 1  # a system's own config wins
    assert content_settings() == before
    # the store the queries were asked of: every atom, of the holders asked
    atoms = [json.loads(x) for x in (out / "atoms.jsonl").read_text().splitlines()]
    store = meta["store"]
    assert store["atoms"] == len(atoms) == meta["atoms"] > 0
    assert store["holders"] == len({a["holder"] for a in atoms})
    assert store["per_modality"] == {
        "conversation": {"atoms": len(atoms), "holders": store["holders"]}
    }
    assert store["items"] == meta["items"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["precision=fp32"], "--content precision: not a content-layer setting"),
        (["ocr_engine=tesseract"], "--content: bad ChunkConfig: ocr_engine must be"),
        (["ocr_processes=0"], "--content: bad ChunkConfig: ocr_processes must be >= 1"),
        (["ocr_processes=two"], "--content: "),
    ],
)
def test_bad_content_settings_are_one_line(tmp_path, capsys, args, message):
    code = main(
        [
            "run",
            "--system",
            "random",
            "--out",
            str(tmp_path / "r"),
            *[x for a in args for x in ("--content", a)],
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err, err


@pytest.mark.slow
def test_a_successful_report_prints_no_kernel_noise(tmp_path):
    """The kernel a report page runs in logs nothing of its own (ipykernel's transport warning
    at start, its KeyboardInterrupt at shutdown): with the settings membench.report.render
    starts it with, stderr has no kernel line; with papermill's defaults it has, so the test
    can tell."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    src = tmp_path / "t.ipynb"
    nbformat.write(nb, str(src))
    code = (
        "import sys, tempfile, papermill as pm\n"
        "from membench.report.render import KERNEL_QUIET, kernel_config\n"
        "kw = {}\n"
        "if sys.argv[3] == 'render':\n"
        "    kw = dict(config=kernel_config(tempfile.mkdtemp()), "
        "extra_arguments=KERNEL_QUIET)\n"
        "pm.execute_notebook(sys.argv[1], sys.argv[2], kernel_name='python3', "
        "progress_bar=False, log_output=False, **kw)\n"
    )

    def stderr(how: str) -> str:
        r = subprocess.run(
            [sys.executable, "-c", code, str(src), str(tmp_path / "o.ipynb"), how],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=REPO_ROOT,
        )
        assert r.returncode == 0, r.stderr
        return r.stderr

    assert "[IPKernelApp]" not in stderr("render")
    assert "[IPKernelApp]" in stderr("papermill")
