"""A corpus copy holding hostile content files goes through ``membench build``, ``membench run
--system bm25`` and ``membench serve``: a truncated PDF, a 10,000-page PDF, a PDF whose one page
is 30000 x 30000 points, a truncated PNG and a PNG whose header claims 65535 x 65535 pixels.
Each command finishes (exit 0), prints no traceback, and each bad file is counted as not
covered (by its adapter at build time, or by the content layer at run time, named in one line),
while the other sources are built and run as they would be without them.

The time limits only keep a broken reader from hanging the suite; they check no speed."""

from __future__ import annotations

import json
import shutil
import signal

import minicorpus
import pytest
from http_helpers import serve_process
from test_content_bounds import pdf as pages_pdf
from test_fuzz_content import _forged_png, _pdf, _png

from membench.core.jsonl import sha256_file

FIXTURES = minicorpus.FIXTURES


def _hostile(corpus):
    """Add the mmlongbench fixture with three bad PDFs and two bad screenshots, each asked
    about, and make every PROVENANCE row match its file."""
    docs = corpus / "mmlongbench-doc"
    shutil.copytree(FIXTURES / "mmlongbench" / "mmlongbench-doc", docs)
    (docs / "documents").mkdir(exist_ok=True)
    good = _pdf(200, 100, 2)
    (docs / "documents" / "cut.pdf").write_bytes(good[: len(good) // 2])
    (docs / "documents" / "many.pdf").write_bytes(pages_pdf(10_000))
    (docs / "documents" / "huge.pdf").write_bytes(_pdf(30000, 30000, 1))
    samples = json.loads((docs / "samples.json").read_text())
    for name in ("cut.pdf", "many.pdf", "huge.pdf"):
        samples.append(
            {
                "doc_id": name,
                "doc_type": "Fixture",
                "question": f"What is in {name}?",
                "answer": "x",
                "evidence_pages": "[1]",
                "evidence_sources": "[]",
                "answer_format": "Str",
            }
        )
    (docs / "samples.json").write_text(json.dumps(samples))
    shots = corpus / "screenspot-v2"
    img = shots / "screenspotv2_image"
    png = _png(120, 240)
    (img / "mobile_cut-0008.png").write_bytes(png[: len(png) - 40])
    (img / "mobile_bomb-0009.png").write_bytes(_forged_png(65535, 65535))
    mobile = json.loads((shots / "screenspot_mobile_v2.json").read_text())
    for name in ("mobile_cut-0008.png", "mobile_bomb-0009.png"):
        mobile.append(
            {
                "img_filename": name,
                "bbox": [0, 0, 10, 10],
                "instruction": "tap it",
                "data_type": "icon",
                "data_source": "ios",
            }
        )
    (shots / "screenspot_mobile_v2.json").write_text(json.dumps(mobile))
    for folder in (docs, shots):
        prov = folder / "PROVENANCE.jsonl"
        rows = [json.loads(x) for x in prov.read_text().splitlines() if x.strip()]
        by = {r["path"]: r for r in rows}
        for p in sorted(q for q in folder.rglob("*") if q.is_file() and q.name != prov.name):
            rel = p.relative_to(folder).as_posix()
            r = by.setdefault(rel, {"path": rel, "commit": "0" * 40})
            r.update(sha256=sha256_file(p), bytes=p.stat().st_size)
        prov.write_text("".join(json.dumps(r) + "\n" for r in by.values()))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    corpus = minicorpus.make_corpus(root)
    _hostile(corpus)
    env = {"MEMBENCH_CACHE": str(root / "cache"), "MEMBENCH_PROGRESS": "quiet"}
    links = dict(minicorpus.LINKS)
    minicorpus.LINKS["mmlongbench-doc"] = "mmlongbench/mmlongbench-doc"
    try:
        frozen = minicorpus.freeze(corpus, root, env)
    finally:
        minicorpus.LINKS.clear()
        minicorpus.LINKS.update(links)
    return root, corpus, frozen, env


def test_build_counts_each_bad_file_as_not_covered(hostile):
    root, corpus, frozen, env = hostile
    cov = {c["source"]: c for c in json.loads((frozen["sets"] / "coverage.json").read_text())}
    items = [json.loads(x) for x in (frozen["sets"] / "items.jsonl").read_text().splitlines()]
    ids = {it["source_id"] for it in items}
    # the truncated and the 10,000-page PDF, and both bad screenshots, never become items
    assert not any(
        s.endswith(("cut.pdf", "many.pdf", "mobile_cut-0008.png", "mobile_bomb-0009.png"))
        for s in ids
    )
    assert sum(cov["mmlongbench"]["not_covered"].values()) >= 2
    assert sum(cov["screenspot"]["not_covered"].values()) >= 2
    assert {"locomo", "codesearchnet", "medvidqa"} <= {s.split(":", 1)[0] for s in ids}


def test_run_goes_on_past_the_bad_files(hostile):
    root, corpus, frozen, env = hostile
    out = root / "bm25-dev"
    p = minicorpus.membench(
        "run",
        "--system",
        "bm25",
        "--split",
        "dev",
        "--sets",
        str(frozen["sets"]),
        "--corpus",
        str(corpus),
        "--manifest",
        str(frozen["manifest"]),
        "--lock",
        str(frozen["lock"]),
        "--out",
        str(out),
        "--content",
        "ocr_processes=1",
        env=env,
    )
    assert "Traceback" not in p.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete"
    lines = [x for x in p.stderr.splitlines() if "huge.pdf" in x]
    if any(
        it.endswith("huge.pdf")
        for it in (
            json.loads(x)["source_id"]
            for x in (frozen["sets"] / "items.jsonl").read_text().splitlines()
        )
    ):
        assert len(lines) <= 1  # named once, if the content layer refused it


def test_serve_ingests_the_hostile_memory_and_stops_cleanly(hostile):
    root, corpus, frozen, env = hostile
    from membench.contract.schema import SourceItem
    from membench.systems.remote import HttpSystem

    items = [
        SourceItem.model_validate_json(x)
        for x in (frozen["sets"] / "items.jsonl").read_text().splitlines()
    ]
    with serve_process("--system", "bm25", "--corpus", str(corpus)) as (url, proc):
        atoms = HttpSystem(url).ingest(items, corpus)
        assert atoms and proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        err = proc.stderr.read()
    assert proc.returncode == 130 and "Traceback" not in err, err


def test_the_report_provenance_says_what_the_content_layer_refused():
    from membench.report.provenance import content_not_covered

    assert content_not_covered({}) == "not recorded"
    assert (
        content_not_covered({"content_not_covered": {"items": 0, "by_rule": {}, "first": {}}})
        == "none"
    )
    got = content_not_covered(
        {
            "content_not_covered": {
                "items": 2,
                "by_rule": {"PDF_PAGES": 1, "IMAGE_PIXELS": 1},
                "first": {
                    "s:a": "x/a.pdf: PDF_PAGES: 10,000 pages",
                    "s:b": "x/b.png: IMAGE_PIXELS",
                },
            }
        }
    )
    assert got == (
        "2 items (IMAGE_PIXELS: 1, PDF_PAGES: 1); the first: x/a.pdf: PDF_PAGES: 10,000 pages"
    )
