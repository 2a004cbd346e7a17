"""Dense embedding speed and equivalence: fp32 against bf16 (and batch, thread, order settings)
on real atoms of the dev split, side by side.

    .venv/bin/python bench/bench_dense.py [--sets bench/sets] [--per-modality 256]
                                          [--repeats 3] [--variants NAME,NAME] [--json FILE]

Atoms: the dev split's code and conversation atoms as the reference systems make them
(:func:`membench.run.content.chunk`, no OCR needed), ``--per-modality`` of each chosen by
sha256 of the atom id. Each variant (``VARIANTS``) runs in a fresh process that loads the
model, encodes 16 texts to warm up, then encodes the sample through
:meth:`membench.run.systems.dense.DenseEngine.encode` in chunks of 1024 (as ingest does,
the embedding cache is not used) and reports atoms per second of wall time and of the
process's CPU time. Variants run interleaved, ``--repeats`` times; min / median / max over
the repeats. Each variant's vectors are compared with the fp32 variant's: the lowest and the
mean cosine. Nothing is asserted; ``tests/test_systems_dense.py`` holds the equivalence bar.
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

VARIANTS: dict[str, dict] = {
    "fp32": {"precision": "fp32"},
    "bf16": {"precision": "bf16"},
    "bf16-batch32": {"precision": "bf16", "batch_size": 32},
    "bf16-batch128": {"precision": "bf16", "batch_size": 128},
    "bf16-2threads": {"precision": "bf16", "torch_threads": 2},
    "bf16-unsorted": {"precision": "bf16", "order": "as given, one encode call per 64 texts"},
}


def sample_texts(sets: Path, corpus: Path, per_modality: int) -> dict[str, list[str]]:
    from membench.run.content import chunk
    from membench.run.runner import load_split
    from membench.run.systems.retrieval import has_terms

    out = {}
    for mod in ("code", "conversation"):
        data = load_split(sets, "dev", [mod])
        atoms = [a for a in chunk(data.items, corpus) if has_terms(a.text)]
        atoms.sort(key=lambda a: hashlib.sha256(a.atom_id.encode()).hexdigest())
        out[mod] = [a.text for a in atoms[:per_modality]]
    return out


def worker(name: str, texts_file: Path, vec_file: Path) -> dict:
    import numpy as np

    from membench.run.systems.dense import DenseEngine

    v = dict(VARIANTS[name])
    order = v.pop("order", None)
    texts = json.loads(texts_file.read_text())
    eng = DenseEngine(use_cache=False, **v)
    eng.encode([t for m in texts.values() for t in m][:16])       # load + warm up
    res = {"variant": name}
    vecs = {}
    for mod, ts in texts.items():
        c0, w0 = time.process_time(), time.perf_counter()
        if order:
            parts = [eng.encode(ts[i:i + 64]) for i in range(0, len(ts), 64)]
        else:
            parts = [eng.encode(ts[i:i + 1024]) for i in range(0, len(ts), 1024)]
        vecs[mod] = np.concatenate(parts)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        res[mod] = {"atoms": len(ts), "atoms_per_s_wall": len(ts) / wall,
                    "atoms_per_s_cpu": len(ts) / cpu}
    np.savez(vec_file, **vecs)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default=str(REPO / "bench" / "sets"))
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--per-modality", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variants", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--worker", nargs=3, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.worker[0], Path(a.worker[1]), Path(a.worker[2]))))
        return 0
    import numpy as np

    from membench.core.paths import corpus_root

    corpus = Path(a.corpus) if a.corpus else corpus_root()
    names = a.variants.split(",") if a.variants else list(VARIANTS)
    if "fp32" not in names:
        names.insert(0, "fp32")
    tmp = Path(tempfile.mkdtemp(prefix="bench-dense-"))
    tf = tmp / "texts.json"
    texts = sample_texts(Path(a.sets), corpus, a.per_modality)
    tf.write_text(json.dumps(texts))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    runs: dict[str, list[dict]] = {n: [] for n in names}
    for r in range(a.repeats):
        for n in names:
            vf = tmp / f"{n}-{r}.npz"
            out = subprocess.run([sys.executable, __file__, "--worker", n, str(tf), str(vf)],
                                 env=env, capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(f"{n}: {out.stderr[-2000:]}")
            runs[n].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"repeat {r + 1}: {n} done", file=sys.stderr)
    ref = np.load(tmp / "fp32-0.npz")
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores; "
          f"{a.per_modality} code + {a.per_modality} conversation atoms of dev, "
          f"{a.repeats} repeats")
    print("| setting | code atoms/s wall (min/med/max) | conversation atoms/s wall | "
          "code atoms/s CPU (med) | conversation atoms/s CPU | lowest cosine to fp32 | "
          "mean cosine |")
    print("|---|---|---|---:|---:|---:|---:|")
    summary = {}
    for n in names:
        got = np.load(tmp / f"{n}-0.npz")
        cos = np.concatenate([(got[m] * ref[m]).sum(1) for m in texts])

        def mmm(mod, key="atoms_per_s_wall"):
            xs = sorted(x[mod][key] for x in runs[n])
            return xs[0], statistics.median(xs), xs[-1]

        c, v = mmm("code"), mmm("conversation")
        cc, vc = mmm("code", "atoms_per_s_cpu")[1], mmm("conversation", "atoms_per_s_cpu")[1]
        summary[n] = {"code": c, "conversation": v, "code_cpu": cc, "conversation_cpu": vc,
                      "min_cos": float(cos.min()), "mean_cos": float(cos.mean())}
        print(f"| `{n}` {json.dumps(VARIANTS[n])} | {c[0]:.1f} / {c[1]:.1f} / {c[2]:.1f} | "
              f"{v[0]:.1f} / {v[1]:.1f} / {v[2]:.1f} | {cc:.1f} | {vc:.1f} | "
              f"{cos.min():.6f} | {cos.mean():.6f} |")
    if a.json:
        Path(a.json).write_text(json.dumps({"load": load, "runs": runs, "summary": summary},
                                           indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
