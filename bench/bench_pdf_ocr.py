"""Image-only PDF pages: text found against time, per render resolution, on real slide pages.

    .venv/bin/python bench/bench_pdf_ocr.py [--pages 40] [--repeats 2] [--dpi 72,96,144,192]
                                            [--det 736,480] [--json FILE]

The sample: hash-chosen gold pages of the answerable questions asked of MMLongBench-Doc's
image-only decks (``meta.text_pages == 0``), read from the built sets (``bench/sets``, run
``membench build`` first). Every variant renders each page with pypdfium2 at its resolution and
OCRs it with membench's engine (``ocr_engine=openvino``, one inference thread, the upscale rule
of images), interleaved page by page, ``--repeats`` times; nothing is cached. Per variant:

* CPU seconds per page (``time.process_time`` of this process: render + OCR; min / median / max
  over the repeats of the per-page mean) and wall seconds per page (median);
* **answers found**: the share of sampled questions whose upstream answer (short answers of
  format str/int/float, normalised: lower case, alphanumerics) occurs in its gold page's OCR
  text (lines of confidence >= 0.5, ``ChunkConfig.ocr_min_confidence``);
* **question words found**: the share of the sampled questions' content words (>= 4
  letters, not stop words: the build's anchor words) that occur on the gold page;
* words: distinct lower-cased words per page;
* where the CPU goes: the detector's and the recognizer's share of it (their ``__call__``,
  pre- and post-processing included; the rest is rendering, the upscale and the crops).

``--det`` adds the detector's input size as a second axis (``limit_side_len``: the shorter
side is scaled to at least this many pixels; the engine's default and membench's is 736):
every (dpi, det) pair is a variant, run side by side like the resolutions.

The machine's load average is printed with the table: CPU seconds are the figure to compare,
wall seconds move with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

_NORM = re.compile(r"[^a-z0-9]+")
_WORD = re.compile(r"[a-z0-9]+")


def norm(s: str) -> str:
    return _NORM.sub(" ", s.lower()).strip()


def sample(sets: Path, corpus: Path, n: int) -> list[dict]:
    """Hash-chosen (question, gold page) pairs of answerable questions on image-only decks."""
    from membench.core.hashing import hash_order

    items = {}
    for line in (sets / "items.jsonl").read_text().splitlines():
        it = json.loads(line)
        if it["modality"] == "pdf" and it["meta"].get("text_pages") == 0:
            items[it["source_id"]] = it
    pairs = {}
    for line in (sets / "pdf.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["unanswerable"] or not r["gold"] or r["gold"][0]["source_id"] not in items:
            continue
        g = r["gold"][0]
        it = items[g["source_id"]]
        pairs[r["query_id"]] = {
            "query_id": r["query_id"],
            "question": r["question"],
            "answer": r["answer"],
            "format": r["answer_format"],
            "path": str(corpus / it["path"]),
            "page": g["region"]["page"],
        }
    order = hash_order(pairs, "bench_pdf_ocr")
    return [pairs[q] for q in order[:n]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--dpi", default="72,96,144,192")
    ap.add_argument("--det", default="736", help="detector input sizes (limit_side_len)")
    ap.add_argument("--sets", default=str(REPO / "bench" / "sets"))
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from membench.content import ocr
    from membench.content.config import ChunkConfig
    from membench.core.paths import corpus_root
    from membench.sets.derive import anchors

    corpus = Path(a.corpus) if a.corpus else corpus_root()
    pairs = sample(Path(a.sets), corpus, a.pages)
    if not pairs:
        print("no image-only deck questions in the sets: run membench build first", file=sys.stderr)
        return 2
    variants = [(int(d), int(t)) for d in a.dpi.split(",") for t in a.det.split(",")]
    cfg = ChunkConfig()
    eng = ocr._get_engine(1, cfg.ocr_engine)  # models loaded before any clock starts
    det_default = eng.text_det.limit_side_len
    stage = {"det": 0.0, "rec": 0.0}

    def timed(cls, key):
        call = cls.__call__

        def wrapped(self, *args, **kw):
            c0 = time.process_time()
            try:
                return call(self, *args, **kw)
            finally:
                stage[key] += time.process_time() - c0

        cls.__call__ = wrapped

    timed(type(eng.text_det), "det")
    timed(type(eng.text_rec), "rec")
    ocr._run_engine(
        Path(ocr.page_source(pairs[0]["path"], pairs[0]["page"])),
        cfg.ocr_upscale_min_side,
        threads=1,
        engine=cfg.ocr_engine,
        dpi=72,
    )
    cpu = {v: [] for v in variants}
    wall = {v: [] for v in variants}
    share = {v: {"det": 0.0, "rec": 0.0, "all": 0.0} for v in variants}
    texts: dict[tuple, list[str]] = {v: [""] * len(pairs) for v in variants}
    for _ in range(a.repeats):
        c = {v: 0.0 for v in variants}
        w = {v: 0.0 for v in variants}
        for k, p in enumerate(pairs):
            src = Path(ocr.page_source(p["path"], p["page"]))
            for v in variants:
                d, eng.text_det.limit_side_len = v
                stage["det"] = stage["rec"] = 0.0
                c0, w0 = time.process_time(), time.perf_counter()
                obj = ocr._run_engine(
                    src, cfg.ocr_upscale_min_side, threads=1, engine=cfg.ocr_engine, dpi=d
                )
                dc = time.process_time() - c0
                c[v] += dc
                w[v] += time.perf_counter() - w0
                for key in ("det", "rec"):
                    share[v][key] += stage[key]
                share[v]["all"] += dc
                res = ocr._from_cache("-", obj)
                texts[v][k] = ocr.ocr_text(res.kept(cfg.ocr_min_confidence))
        for v in variants:
            cpu[v].append(c[v] / len(pairs))
            wall[v].append(w[v] / len(pairs))
    eng.text_det.limit_side_len = det_default
    short = [
        k
        for k, p in enumerate(pairs)
        if p["format"] in ("str", "int", "float") and p["answer"] and len(norm(p["answer"])) >= 2
    ]
    rows = []
    for v in variants:
        found = sum(norm(pairs[k]["answer"]) in norm(texts[v][k]) for k in short)
        qw_have = qw_all = 0
        words = []
        for k, p in enumerate(pairs):
            toks = set(_WORD.findall(texts[v][k].lower()))
            words.append(len(toks))
            aw = anchors(p["question"])
            qw_all += len(aw)
            qw_have += len(aw & toks)
        tot = max(share[v]["all"], 1e-9)
        rows.append(
            {
                "dpi": v[0],
                "det": v[1],
                "cpu_s_per_page": [min(cpu[v]), statistics.median(cpu[v]), max(cpu[v])],
                "wall_s_per_page": statistics.median(wall[v]),
                "answers_found": [found, len(short)],
                "question_words_found": [qw_have, qw_all],
                "words_per_page": statistics.mean(words),
                "cpu_share": {"det": share[v]["det"] / tot, "rec": share[v]["rec"] / tot},
            }
        )
    load = os.getloadavg()
    print(
        f"{len(pairs)} deck pages (gold pages of answerable questions), {a.repeats} repeats, "
        f"load {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}"
    )
    print(
        "| render dpi | detector size | CPU s / page (min / median / max) | wall s / page | "
        "answers found | question words found | distinct words / page | CPU in detector / "
        "recognizer |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---|")
    for r in rows:
        c = r["cpu_s_per_page"]
        af, an = r["answers_found"]
        qh, qa = r["question_words_found"]
        print(
            f"| {r['dpi']} | {r['det']} | {c[0]:.2f} / {c[1]:.2f} / {c[2]:.2f} | "
            f"{r['wall_s_per_page']:.2f} | "
            f"{af}/{an} ({af / max(an, 1):.0%}) | {qh}/{qa} ({qh / max(qa, 1):.0%}) | "
            f"{r['words_per_page']:.0f} | {r['cpu_share']['det']:.0%} / "
            f"{r['cpu_share']['rec']:.0%} |"
        )
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {"pages": len(pairs), "repeats": a.repeats, "load": load, "rows": rows}, indent=1
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
