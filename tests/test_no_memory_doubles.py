"""The no-memory baselines ``nothing`` and ``echo`` through the real runner and metrics on the
real dev split (``--limit``): registered and marked as test doubles, never handed gold, empty
cartridges, and figures at the floor (nothing) or at the floor of lexical overlap (echo)."""

from __future__ import annotations

import json
import re

import pytest

from membench.metrics import metrics_for_run_dir
from membench.modalities import MODALITIES
from membench.run.runner import run_system
from membench.systems import BUILTIN, DOUBLES, make_system, receives_records
from membench.systems.doubles import Echo, words
from membench.systems.identity import identify, rerunnable

LIMIT = 20
NAMES = ("nothing", "echo")


@pytest.fixture(scope="module")
def runs(built, corpus_root, tmp_path_factory):
    out = {}
    for name in NAMES:
        d = tmp_path_factory.mktemp(name)
        meta = run_system(make_system(name), built.out, "dev", d, corpus_root, limit=LIMIT)
        lines = [json.loads(x) for x in (d / "run.jsonl").read_text().splitlines()]
        atoms = [json.loads(x) for x in (d / "atoms.jsonl").read_text().splitlines()]
        out[name] = {
            "meta": meta,
            "lines": lines,
            "atoms": atoms,
            "metrics": metrics_for_run_dir(d),
        }
    return out


@pytest.mark.parametrize("name", NAMES)
def test_registered_and_marked_as_doubles(name):
    system = make_system(name)
    assert BUILTIN[name].startswith("membench.systems.doubles:")
    assert DOUBLES[name] is False and not receives_records(system)
    assert not hasattr(system, "bind")
    assert identify(system)["kind"] == "test double"
    assert rerunnable(identify(system)) == "a test double"
    assert system.config()["reads_gold"] is False


@pytest.mark.parametrize("name", NAMES)
def test_runs_are_marked_and_see_no_gold(runs, name):
    meta = runs[name]["meta"]
    assert meta["sees_gold"] is False
    assert meta["identity"]["kind"] == "test double"
    assert meta["status"] == "complete" and meta["limit"] == LIMIT
    assert len(runs[name]["lines"]) == meta["queries"] > 0


@pytest.mark.parametrize("name", NAMES)
def test_cartridges_are_empty(runs, name):
    assert runs[name]["lines"]
    assert all(line["cartridge"] == [] for line in runs[name]["lines"])
    m = runs[name]["metrics"]["all"]
    assert m["abstain_rate_answerable"]["value"] == 1.0
    assert m["false_recall_rate"]["value"] == 0.0
    assert m["cartridge_recall"]["value"] == 0.0
    assert m["holder_correctness"]["value"] == 1.0
    assert m["temporal_correctness"]["value"] == 1.0


def test_nothing_has_no_memory_and_scores_zero(runs):
    r = runs["nothing"]
    assert r["atoms"] == [] and r["meta"]["atoms"] == 0
    assert all(line["hits"] == [] for line in r["lines"])
    for mod in MODALITIES:
        m = r["metrics"][mod]
        assert m["recall@10"]["n"] == m["recall@10"]["denominator"] > 0
        for k in ("recall@10", "recall@1000", "mrr", "ndcg@10"):
            assert m[k]["value"] == 0.0, (mod, k)


def test_echo_ranks_content_atoms_by_the_questions_words(runs, built):
    r = runs["echo"]
    assert r["atoms"] and all(re.fullmatch(r"a[0-9a-f]{16}", a["atom_id"]) for a in r["atoms"])
    assert all(0 < len(line["hits"]) <= 100 or line["hits"] == [] for line in r["lines"])
    scores = [[s for _, s in line["hits"]] for line in r["lines"]]
    assert all(s == sorted(s, reverse=True) and all(x >= 1 for x in s) for s in scores)
    m = r["metrics"]
    # it finds something by echoing the question, but nothing beyond the floor of overlap
    assert 0 < m["all"]["recall@100"]["value"] <= 1
    assert m["all"]["recall@10"]["value"] <= m["all"]["recall@100"]["value"]
    nothing = runs["nothing"]["metrics"]["all"]
    assert m["all"]["recall@10"]["value"] > nothing["recall@10"]["value"] == 0.0


def test_echo_score_is_the_count_of_shared_question_words(runs, built):
    """Every hit of every line: its score is the number of distinct question words its atom's
    text holds, and no in-scope atom left out shares more."""
    from membench.run.runner import load_split

    r = runs["echo"]
    text = {a["atom_id"]: a["text"] for a in r["atoms"]}
    question = {q.query_id: q.question for q in load_split(built.out, "dev", limit=LIMIT).records}
    checked = 0
    for line in r["lines"]:
        q = words(question[line["query_id"]])
        for atom_id, score in line["hits"]:
            assert score == len(q & words(text[atom_id]))
            checked += 1
    assert checked > 0


def test_echo_query_by_hand():
    from datetime import datetime, timezone

    from membench.contract.protocol import Atom
    from membench.contract.schema import Scope

    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    t1 = datetime(2024, 6, 1, tzinfo=timezone.utc)

    def atom(i, holder, when, text):
        return Atom(
            f"a{i}", "c:1", "conversation", holder, when, {"turn_start": i, "turn_end": i}, text
        )

    e = Echo(depth=2)
    e.atoms = [
        atom(1, "h", t0, "The cat sat."),
        atom(2, "h", t0, "A cat and a dog sat"),
        atom(3, "h", t1, "cat dog sat mat"),
        atom(4, "x", t0, "cat dog sat mat"),
        atom(5, "h", t0, "nothing shared"),
        atom(6, "h", t0, "dog, CAT!"),
    ]
    e.index = {}
    for i, a in enumerate(e.atoms):
        for w in words(a.text):
            e.index.setdefault(a.holder, {}).setdefault(w, []).append(i)
    scope = Scope(holder="h", scenario="s")
    res = e.query("Where did the Cat and the dog sit?", scope, t0)
    # a2 holds cat, and, dog (3); a1 holds the, cat (2); a6 holds dog, cat (2): a1 < a6 by id
    assert res.hits == [("a2", 3.0), ("a1", 2.0)] and res.cartridge == []
    later = e.query("cat dog sat mat", scope, t1)
    assert later.hits == [("a3", 4.0), ("a2", 3.0)]  # a3 observed by then; a4 not h's
    assert e.query("zebra", scope, t1).hits == []


def test_each_baseline_is_labelled_for_what_it_is():
    """nothing is the no-memory floor; echo reads the memory (question-word overlap over it,
    with an empty cartridge) and its card says so, never "no memory"."""
    from membench.analysis.leaderboard import BASELINE_MARK
    from membench.systems.doubles import Nothing

    assert "no-memory" not in BASELINE_MARK
    assert "question-word overlap over the memory, empty cartridge" in Echo.card.revision
    assert "no-memory baseline" not in Echo.card.revision
    assert "Question-word overlap over the memory, empty cartridge" in Echo.card.notes
    assert "no-memory baseline" in Nothing.card.revision


def test_the_content_free_floors_carry_a_floor_card_the_other_doubles_none():
    """random, newest and oldest carry a card that says what they rank by and that they read no
    content; oracle, leaky and metadata carry none (the leaderboard refuses them)."""
    from membench.analysis.leaderboard import FLOOR_MARK, is_floor
    from membench.systems.cards import system_card
    from membench.systems.doubles import CONTENT_FREE

    assert CONTENT_FREE == ("random", "newest", "oldest")
    for name, ranks in (
        ("random", "a seeded order"),
        ("newest", "observed_at alone, newest first"),
        ("oldest", "observed_at alone, oldest first"),
    ):
        card = system_card(make_system(name))
        assert card.name == name and card.parameter_count == 0
        assert card.revision == f"membench content-free floor: ranks by {ranks}; reads no content"
        assert "content-free floor" in card.notes and "no-memory" not in card.notes
        entry = {"identity": identify(make_system(name)), "card": card.model_dump()}
        assert is_floor(entry)
    assert not is_floor(
        {
            "identity": identify(make_system("nothing")),
            "card": system_card(make_system("nothing")).model_dump(),
        }
    )
    assert "floor" in FLOOR_MARK and "baseline" not in FLOOR_MARK
    for name in ("oracle", "leaky", "metadata"):
        assert system_card(make_system(name)) is None


def test_stuffed_is_a_double_that_never_sees_gold_and_carries_no_card():
    from membench.systems.cards import system_card

    s = make_system("stuffed", {"system": "random"})
    assert BUILTIN["stuffed"].startswith("membench.systems.doubles:")
    assert DOUBLES["stuffed"] is False and not receives_records(s) and not hasattr(s, "bind")
    assert identify(s)["kind"] == "test double"
    assert s.config()["system"] == "random" and s.config()["atoms"] == 100
    assert system_card(s) is None  # so the leaderboard refuses its runs
    for inner in ("oracle", "leaky", "stuffed", "mem0"):
        with pytest.raises(Exception, match="stuffed wraps"):
            make_system("stuffed", {"system": inner})
