"""A system over HTTP gives the in-process run's lines: bm25 on the real dev conversations,
served by ``membench serve`` in a subprocess on 127.0.0.1 and run with ``membench run --system
http://...`` (latency aside: it is measured at the client)."""

from __future__ import annotations

import json

import pytest
from http_helpers import Wrapped, run_lines, serve_process, thread_server

from membench.cli import main
from membench.run.runner import load_split, run_system
from membench.systems import make_system


@pytest.fixture(scope="module")
def bm25_conversation(built, corpus_root, tmp_path_factory):
    """bm25 in process on the dev conversations (the reference lines)."""
    out = tmp_path_factory.mktemp("bm25-conv")
    run_system(make_system("bm25"), built.out, "dev", out, corpus_root, modalities=["conversation"])
    return out


def test_http_run_gives_the_in_process_lines(
    bm25_conversation, built, corpus_root, tmp_path, capsys
):
    out = tmp_path / "http"
    with serve_process("--system", "bm25", "--corpus", str(corpus_root)) as (url, _):
        code = main(
            [
                "--quiet",
                "run",
                "--system",
                url,
                "--sets",
                str(built.out),
                "--corpus",
                str(corpus_root),
                "--modality",
                "conversation",
                "--out",
                str(out),
                "--no-lock",
                "--config",
                "batch_items=100",
                "--config",
                "page_atoms=700",
            ]
        )
    assert code == 0, capsys.readouterr().err
    n = sum(r.modality == "conversation" for r in load_split(built.out, "dev").records)
    assert f"bm25 on dev: {n} queries" in capsys.readouterr().out
    ref, got = run_lines(bm25_conversation), run_lines(out)
    assert (
        len(got)
        == len(ref)
        == sum(r.modality == "conversation" for r in load_split(built.out, "dev").records)
    )
    assert got == ref
    assert (out / "atoms.jsonl").read_bytes() == (bm25_conversation / "atoms.jsonl").read_bytes()
    meta = json.loads((out / "meta.json").read_text())
    ref_meta = json.loads((bm25_conversation / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["system"] == "bm25"
    assert meta["config"] == {"protocol": "membench-http/1", "remote_config": ref_meta["config"]}
    # a sealed run: the system answered from another process; what it is, is the service's
    # word (its card is membench's bm25's, which an HTTP service cannot claim: not taken)
    assert meta["sealed"] is True and ref_meta["sealed"] is False
    assert meta["identity"]["kind"] == "HTTP service" and meta["identity"]["spec"] == url
    assert meta["identity"]["service"] == {"name": "bm25", "config": ref_meta["config"]}
    assert meta["card"] is None and ref_meta["card"]["name"] == "bm25"
    assert meta["card_refused"].startswith("card refused: it is named 'bm25'")
    lat = [json.loads(line)["latency_ms"] for line in (out / "run.jsonl").read_text().splitlines()]
    assert all(v > 0 for v in lat)  # measured at the client, for every query


def test_a_server_that_holds_the_memory_is_not_asked_to_ingest_again(built, corpus_root, tmp_path):
    made = []

    def factory():
        made.append(Wrapped())
        return made[-1]

    with thread_server(factory, [corpus_root]) as (url, service):
        for name in ("first", "second"):
            run_system(
                make_system(url),
                built.out,
                "dev",
                tmp_path / name,
                corpus_root,
                modalities=["conversation"],
                limit=10,
            )
        assert len(made) == 1 and made[0].ingests == 1  # one instance, one ingest, both runs
        assert run_lines(tmp_path / "first") == run_lines(tmp_path / "second")
        # another memory (another subset) gets a fresh instance
        run_system(
            make_system(url),
            built.out,
            "dev",
            tmp_path / "third",
            corpus_root,
            modalities=["video"],
            limit=5,
        )
        assert len(made) == 2 and service.current.state == "done"
