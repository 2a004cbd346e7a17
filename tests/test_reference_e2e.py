"""The reference systems through the real runner and metrics on real dev items: they respect
scope (holder and temporal correctness 1.0) and retrieve far better than chance.

To keep CI fast on a fresh machine, BM25 runs on every modality but image (whose 500 dev
images need OCR; the image chunker is tested on a few real images in test_content_*), and the
dense/hybrid systems on video and ui_screenshot (a few hundred atoms to embed). OCR text and
embeddings are cached by content hash, so reruns are quick.
"""

from __future__ import annotations

import pytest

from membench.metrics import metrics_for_run_dir
from membench.run.runner import run_system
from membench.systems import make_system

NOT_IMAGE = ["pdf", "ui_screenshot", "video", "code", "conversation"]


@pytest.fixture(scope="module")
def bm25(built, corpus_root, tmp_path_factory):
    d = tmp_path_factory.mktemp("bm25")
    run_system(
        make_system("bm25"), built.out, "dev", d, corpus_root, modalities=NOT_IMAGE, limit=25
    )
    return metrics_for_run_dir(d)


@pytest.fixture(scope="module")
def random_run(built, corpus_root, tmp_path_factory):
    d = tmp_path_factory.mktemp("random")
    run_system(
        make_system("random"), built.out, "dev", d, corpus_root, modalities=NOT_IMAGE, limit=25
    )
    return metrics_for_run_dir(d)


def test_bm25_respects_scope(bm25):
    for m in [*NOT_IMAGE, "all"]:
        assert bm25[m]["holder_correctness"]["value"] == 1.0, m
        assert bm25[m]["temporal_correctness"]["value"] == 1.0, m


def test_bm25_beats_random(bm25, random_run):
    assert bm25["all"]["recall@10"]["value"] > random_run["all"]["recall@10"]["value"] + 0.2
    assert bm25["all"]["mrr"]["value"] > 2 * random_run["all"]["mrr"]["value"]


@pytest.mark.parametrize("name", ["dense", "hybrid"])
def test_dense_and_hybrid_respect_scope_and_retrieve(name, built, corpus_root, tmp_path):
    run_system(
        make_system(name),
        built.out,
        "dev",
        tmp_path,
        corpus_root,
        modalities=["video", "ui_screenshot"],
        limit=15,
    )
    m = metrics_for_run_dir(tmp_path)
    assert m["all"]["holder_correctness"]["value"] == 1.0
    assert m["all"]["temporal_correctness"]["value"] == 1.0
    assert m["video"]["recall@10"]["value"] > 0.5
