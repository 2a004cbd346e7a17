"""Dense embedding: the runtimes and settings side by side, on the native path and the AVX2
path, on real atoms of the dev split.

    .venv/bin/python bench/bench_dense.py [--per-modality 128] [--repeats 3]
                                          [--variants NAME,NAME] [--paths native,avx2,avx2-amd]
                                          [--json FILE] [--write-docs docs/speed.md]

Atoms: the dev split's code, conversation and pdf (text layer) atoms as the reference systems
make them (:func:`membench.content.chunk`; no OCR needed), ``--per-modality`` of each
chosen by sha256 of the atom id: upstream text, not text written for the benchmark, in the
three lengths the index holds (code 196 word pieces on average, conversation 117, pdf 493
before the input limit). Each (variant, path) runs in a fresh process that loads the model,
encodes 16 texts to warm up, then encodes the sample (each modality in one call, as ingest's
chunks; no cache) and reports texts and word pieces per CPU second of the process
(``time.process_time``; a shared machine moves wall time more than CPU time) and per wall
second. Paths: ``native`` (what the CPU offers), ``avx2`` (``python -m membench.core.isa
avx2``: every library sees an x86-64-v3 CPU, the path of an ordinary laptop or cloud VM) and
``avx2-amd`` (the same, the CPU reported as AMD: PyTorch's MKL chooses kernels by vendor).
Variants and paths run interleaved, ``--repeats`` times; min / median / max over the repeats.

Each variant's vectors are compared with PyTorch fp32's on the native path (the vectors
sentence-transformers gives): lowest and mean cosine, and the largest difference between a
variant's native and AVX2 vectors. Nothing is asserted here: tests/test_systems_dense.py holds
the bars. ``--write-docs`` rewrites the ``dense-runtimes`` block of the page.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: name -> DenseEngine keywords, or an ``onnxruntime`` runner (measured, not offered)
VARIANTS: dict[str, dict] = {
    "openvino-fp32": {"runtime": "openvino", "streams": 1},
    "torch-fp32": {"runtime": "torch", "precision": "fp32"},
    "onnxruntime-fp32": {"onnxruntime": "fp32"},
    "onnxruntime-int8": {"onnxruntime": "int8"},
    "torch-bf16": {"runtime": "torch", "precision": "bf16"},
    "openvino-fp32-batch8": {"runtime": "openvino", "streams": 1, "batch_size": 8},
    "openvino-fp32-batch16": {"runtime": "openvino", "streams": 1, "batch_size": 16},
    "openvino-fp32-batch32": {"runtime": "openvino", "streams": 1, "batch_size": 32},
    "openvino-fp32-batch64": {"runtime": "openvino", "streams": 1, "batch_size": 64},
    "openvino-fp32-128tokens": {"runtime": "openvino", "streams": 1, "max_tokens": 128},
    "openvino-fp32-2streams": {"runtime": "openvino", "streams": 2},
}
DEFAULT_VARIANTS = "openvino-fp32,torch-fp32,onnxruntime-fp32,onnxruntime-int8,torch-bf16"
REFERENCE = "torch-fp32"
MODALITIES = ("code", "conversation", "pdf")


def sample_texts(sets: Path, corpus: Path, per_modality: int) -> dict[str, list[str]]:
    from membench.content import chunk
    from membench.content.config import ChunkConfig
    from membench.run.runner import load_split
    from membench.systems.retrieval import has_terms

    out = {}
    for mod in MODALITIES:
        data = load_split(sets, "dev", [mod])
        cfg = ChunkConfig(pdf_ocr_dpi=0) if mod == "pdf" else None  # text layers only
        atoms = [a for a in chunk(data.items, corpus, cfg) if has_terms(a.text)]
        atoms.sort(key=lambda a: hashlib.sha256(a.atom_id.encode()).hexdigest())
        out[mod] = list(dict.fromkeys(a.text for a in atoms))[:per_modality]
    return out


class OrtEncoder:
    """ONNX Runtime on the same exported transformer (fp32, or int8: dynamic quantization of
    the weight matrices, per channel, the attention products left in float), one thread,
    batches of 8 padded to 16 word pieces, mean pooling and L2 as the dense engine; for the
    measurement only."""

    def __init__(self, kind: str, max_tokens: int, batch: int = 8):
        import onnxruntime as ort

        from membench.systems.dense import PAD_MULTIPLE, model_path, weights_digest
        from membench.systems.models import onnx_export

        self.pad = PAD_MULTIPLE
        src = model_path()
        path = onnx_export(src, weights_digest(src)) / "onnx" / "model.onnx"
        if kind == "int8":
            q = path.with_name("model-int8-bench.onnx")
            if not q.is_file():
                import onnx
                from onnxruntime.quantization import QuantType, quantize_dynamic

                m = onnx.load(str(path))
                weights = {i.name for i in m.graph.initializer}
                attention = [
                    n.name
                    for n in m.graph.node
                    if n.op_type == "MatMul" and n.input[1] not in weights
                ]
                quantize_dynamic(
                    str(path),
                    str(q),
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    op_types_to_quantize=["MatMul"],
                    nodes_to_exclude=attention,
                )
            path = q
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        self.sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        from transformers import AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(str(src), local_files_only=True)
        self.max_tokens = max_tokens
        self.batch = batch

    def encode(self, texts: list[str]):
        import numpy as np

        ids = self.tok(texts, truncation=True, max_length=self.max_tokens)["input_ids"]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.zeros((len(texts), 384), np.float32)
        for s in range(0, len(order), self.batch):
            b = order[s : s + self.batch]
            w = -(-max(len(ids[i]) for i in b) // self.pad) * self.pad
            x = np.zeros((len(b), w), np.int64)
            m = np.zeros_like(x)
            for j, i in enumerate(b):
                x[j, : len(ids[i])] = ids[i]
                m[j, : len(ids[i])] = 1
            h = self.sess.run(
                None, {"input_ids": x, "attention_mask": m, "token_type_ids": np.zeros_like(x)}
            )[0]
            mm = m[..., None].astype(np.float32)
            v = (h * mm).sum(1) / mm.sum(1)
            out[b] = v / np.linalg.norm(v, axis=1, keepdims=True)
        return out


def worker(name: str, texts_file: Path, vec_file: Path) -> dict:
    import numpy as np

    from membench.core import isa
    from membench.systems.dense import DenseEngine

    v = dict(VARIANTS[name])
    texts = json.loads(texts_file.read_text())
    res = {"variant": name, "isa": isa.isa_class(), "masked": isa.masked()}
    try:
        if "onnxruntime" in v:
            eng = OrtEncoder(v["onnxruntime"], 256)
            encode = eng.encode
            tok = eng.tok
        else:
            eng = DenseEngine(use_cache=False, **v)
            encode = eng.encode
            tok = eng.tokenizer
    except Exception as e:  # a refused setting (bf16 without bf16 instructions)
        res["refused"] = str(e).splitlines()[0]
        return res
    encode([t for m in texts.values() for t in m][:16])  # load + warm up
    vecs = {}
    limit = v.get("max_tokens", 256)
    for mod, ts in texts.items():
        pieces = sum(
            min(len(x), limit) for x in tok(ts, add_special_tokens=True, verbose=False)["input_ids"]
        )
        c0, w0 = time.process_time(), time.perf_counter()
        vecs[mod] = encode(ts)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        res[mod] = {
            "texts": len(ts),
            "pieces": pieces,
            "texts_per_cpu_s": len(ts) / cpu,
            "pieces_per_cpu_s": pieces / cpu,
            "texts_per_wall_s": len(ts) / wall,
        }
    np.savez(vec_file, **vecs)
    return res


def path_env(path: str) -> dict[str, str]:
    from membench.core import isa

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if path == "native":
        return env
    return isa.avx2_env(env, vendor="amd" if path == "avx2-amd" else None)


def docs_block(summary: dict, meta: dict) -> str:
    lines = [
        f"{meta['per_modality']} code + {meta['per_modality']} conversation + "
        f"{meta['per_modality']} pdf atoms of dev ({meta['pieces']:,} word pieces), "
        f"{meta['repeats']} interleaved repeats, one thread; load {meta['load_before']:.1f} "
        f"before, {meta['load_after']:.1f} after; {meta['cpu']}",
        "",
        "| runtime, setting | path | word pieces per CPU s (min / median / max) | "
        "atoms per CPU s (median) | lowest / mean cosine to PyTorch fp32 | "
        "largest change, AVX2 vs native |",
        "|---|---|---|---:|---|---:|",
    ]
    for (name, path), s in summary.items():
        if s.get("refused"):
            lines.append(f"| `{name}` | {path} | refused: {s['refused']} | | | |")
            continue
        p = s["pieces"]
        lines.append(
            f"| `{name}` | {path} | {p[0]:,.0f} / **{p[1]:,.0f}** / {p[2]:,.0f} | "
            f"{s['texts_med']:.1f} | {s['min_cos']:.7f} / {s['mean_cos']:.7f} | "
            f"{s['isa_change']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default=str(REPO / "bench" / "sets"))
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--per-modality", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variants", default=DEFAULT_VARIANTS)
    ap.add_argument("--paths", default="native,avx2,avx2-amd")
    ap.add_argument("--json", default=None)
    ap.add_argument("--write-docs", default=None, metavar="PAGE")
    ap.add_argument("--worker", nargs=3, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.worker[0], Path(a.worker[1]), Path(a.worker[2]))))
        return 0
    import numpy as np

    from membench.core import isa
    from membench.core.paths import corpus_root

    corpus = Path(a.corpus) if a.corpus else corpus_root()
    names = a.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    if REFERENCE not in names:
        names.insert(0, REFERENCE)
    paths = a.paths.split(",")
    if "native" not in paths:
        paths.insert(0, "native")
    tmp = Path(tempfile.mkdtemp(prefix="bench-dense-"))
    tf = tmp / "texts.json"
    texts = sample_texts(Path(a.sets), corpus, a.per_modality)
    tf.write_text(json.dumps(texts))
    load_before = os.getloadavg()[0]
    runs: dict[tuple[str, str], list[dict]] = {(n, p): [] for n in names for p in paths}
    for r in range(a.repeats):
        for n in names:
            for p in paths:
                vf = tmp / f"{n}-{p}-{r}.npz"
                out = subprocess.run(
                    [sys.executable, __file__, "--worker", n, str(tf), str(vf)],
                    env=path_env(p),
                    capture_output=True,
                    text=True,
                )
                if out.returncode:
                    raise SystemExit(f"{n} on {p}: {out.stderr[-2000:]}")
                got = json.loads(out.stdout.strip().splitlines()[-1])
                if p != "native" and not got["masked"]:
                    raise SystemExit(f"{n} on {p}: the CPUID mask was not armed")
                runs[(n, p)].append(got)
                print(f"repeat {r + 1}: {n} on {p} done", file=sys.stderr)
    load_after = os.getloadavg()[0]
    ref = np.load(tmp / f"{REFERENCE}-native-0.npz")
    summary: dict[tuple[str, str], dict] = {}
    for (n, p), rs in runs.items():
        if rs[0].get("refused"):
            summary[(n, p)] = {"refused": rs[0]["refused"]}
            continue
        got = np.load(tmp / f"{n}-{p}-0.npz")
        cos = np.concatenate([(got[m] * ref[m]).sum(1) for m in texts])
        pieces = sorted(
            sum(x[m]["pieces"] for m in texts)
            / sum(x[m]["pieces"] / x[m]["pieces_per_cpu_s"] for m in texts)
            for x in rs
        )
        tps = statistics.median(
            sum(x[m]["texts"] for m in texts)
            / sum(x[m]["texts"] / x[m]["texts_per_cpu_s"] for m in texts)
            for x in rs
        )
        change = "-"
        if p != "native" and (tmp / f"{n}-native-0.npz").is_file():
            nat = np.load(tmp / f"{n}-native-0.npz")
            change = f"{max(float(np.abs(got[m] - nat[m]).max()) for m in texts):.1e}"
        summary[(n, p)] = {
            "pieces": (pieces[0], statistics.median(pieces), pieces[-1]),
            "texts_med": tps,
            "min_cos": float(cos.min()),
            "mean_cos": float(cos.mean()),
            "isa_change": change,
        }
    d = isa.describe()
    meta = {
        "per_modality": a.per_modality,
        "repeats": a.repeats,
        "pieces": sum(runs[(REFERENCE, "native")][0][m]["pieces"] for m in texts),
        "load_before": load_before,
        "load_after": load_after,
        "cpu": f"{d['cpu_model']}, {d['cpus']} CPUs, native path {d['cpu_class']}",
        "date": time.strftime("%Y-%m-%d"),
    }
    block = docs_block(summary, meta)
    print(block)
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {
                    "meta": meta,
                    "summary": {f"{n}|{p}": s for (n, p), s in summary.items()},
                    "runs": {f"{n}|{p}": r for (n, p), r in runs.items()},
                },
                indent=1,
            )
        )
    if a.write_docs:
        from bench.bench_metrics import write_docs

        write_docs(Path(a.write_docs), block, "dense-runtimes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
