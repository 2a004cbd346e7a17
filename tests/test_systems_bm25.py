"""BM25 on tantivy: scope, ties, determinism, hostile questions and a realistic ranking."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from membench.contract.protocol import Atom
from membench.systems.bm25 import BM25Engine, make_analyzer

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)


def atom(atom_id: str, holder: str, text: str, at: datetime = T0, modality="pdf") -> Atom:
    return Atom(atom_id, f"src:{atom_id}", modality, holder, at, {"page": 1}, text)


# A small realistic collection: pages of an annual report, a few near-duplicates.
REPORT = [
    (
        "p01",
        "Chairman's letter. 2016 was a year of transition for the group, with revenue "
        "up 4% and a renewed focus on retail banking.",
    ),
    (
        "p02",
        "Net interest margin fell to 1.9% as deposit costs rose faster than loan yields; "
        "management expects the margin to stabilise next year.",
    ),
    (
        "p03",
        "Interest rate risk is managed through swaps; net exposure to a 100 basis point "
        "move is disclosed in note 14.",
    ),
    (
        "p04",
        "Loan loss provisions increased in the commercial real estate portfolio, mainly in "
        "the northern region.",
    ),
    (
        "p05",
        "Headcount: 12,400 employees at year end, of which 38% in branches. Net hiring "
        "was concentrated in technology.",
    ),
    (
        "p06",
        "The board proposes a dividend of 0.42 per share, subject to approval at the "
        "annual general meeting.",
    ),
    (
        "p07",
        "Margin trading accounts for retail clients grew, with interest income from "
        "margin loans up 12%.",
    ),
    ("p08", "Operating expenses were flat; the cost-to-income ratio improved to 58%."),
]


@pytest.fixture(scope="module")
def report_engine():
    e = BM25Engine()
    e.index([atom(i, "bank", t) for i, t in REPORT])
    return e


def test_exact_phrase_atom_ranks_first(report_engine):
    hits = report_engine.search("What was the net interest margin in 2016?", "bank", T0, 10)
    assert hits[0][0] == "p02"
    assert len(hits) >= 3  # the other pages sharing words are still ranked, below it


def test_stemming_matches_inflections(report_engine):
    hits = report_engine.search("provision increases", "bank", T0, 10)
    assert hits[0][0] == "p04"
    assert make_analyzer().analyze("Revenues jumped") == ["revenu", "jump"]


def test_scope_other_holder_and_future_never_returned():
    q = "Where did Caroline go hiking last weekend?"
    atoms = [
        atom("a-mine", "caroline", "We went to the beach on Saturday."),
        atom("b-other", "melanie", q),  # best match, other holder
        atom("c-future", "caroline", q, T0 + timedelta(seconds=1)),  # best match, future
        atom("d-mine", "caroline", "Caroline went hiking in the hills.", T0),
    ]
    e = BM25Engine()
    e.index(atoms)
    ids = [a for a, _ in e.search(q, "caroline", T0, 1000)]
    assert ids == ["d-mine"]
    # as_of is inclusive; the future atom arrives exactly at its observed_at
    ids = [a for a, _ in e.search(q, "caroline", T0 + timedelta(seconds=1), 1000)]
    assert ids[0] == "c-future" and "b-other" not in ids
    # a holder with no atoms, or a time before everything, gets nothing
    assert e.search(q, "nobody", T0, 10) == []
    assert e.search(q, "caroline", T0 - timedelta(days=1), 10) == []


def test_scope_compares_instants_across_timezones():
    e = BM25Engine()
    at = datetime(2024, 1, 1, 10, 0, tzinfo=timezone(timedelta(hours=2)))  # 08:00 UTC
    e.index([atom("a", "h", "lighthouse", at)])
    assert e.search("lighthouse", "h", datetime(2024, 1, 1, 8, 0, tzinfo=timezone.utc), 5)
    assert not e.search(
        "lighthouse", "h", datetime(2024, 1, 1, 7, 59, 59, 999999, tzinfo=timezone.utc), 5
    )


@pytest.mark.parametrize("question", ["", "   ", "?!", "-- ** ::", '"', "\\", "\u00a0\t\n"])
def test_questions_without_usable_terms(report_engine, question):
    assert report_engine.search(question, "bank", T0, 10) == []


def test_operators_are_words(report_engine):
    # "AND OR NOT" is three plain words, not an invalid boolean query; only p01 has "and"
    assert [a for a, _ in report_engine.search("AND OR NOT", "bank", T0, 10)] == ["p01"]


@pytest.mark.parametrize(
    "question",
    [
        'What is the "net interest margin" (NIM)? AND/OR: -loans +deposits [2016] {x} ^2 ~1 * \\',
        "margin:1.9% OR field:value",
        "interest) (margin",
    ],
)
def test_query_syntax_characters_are_plain_text(report_engine, question):
    hits = report_engine.search(question, "bank", T0, 10)
    assert hits and hits[0][0] in {"p02", "p07"}


def test_ties_broken_by_atom_id_also_at_the_cut():
    ids = [f"t{i:02d}" for i in range(40)]
    atoms = [atom(i, "h", "identical text about lighthouses") for i in ids]
    atoms.append(atom("zz", "h", "lighthouses lighthouses lighthouses"))
    random.Random(1).shuffle(atoms)
    e = BM25Engine()
    e.index(atoms)
    hits = e.search("lighthouses", "h", T0, 5)
    assert [a for a, _ in hits] == ["zz", "t00", "t01", "t02", "t03"]
    assert hits[1][1] == hits[4][1] < hits[0][1]


def test_deterministic_across_builds_and_input_order():
    rng = random.Random(7)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    atoms = [
        atom(
            f"a{i:03d}",
            f"h{i % 3}",
            " ".join(rng.choice(words) for _ in range(12)),
            T0 + timedelta(hours=i % 5),
        )
        for i in range(300)
    ]
    e1, e2 = BM25Engine(), BM25Engine()
    e1.index(atoms)
    e2.index(list(reversed(atoms)))
    for q in ("alpha beta", "theta kappa iota", "zeta"):
        for h in ("h0", "h1", "h2"):
            r1 = e1.search(q, h, T0 + timedelta(hours=3), 50)
            assert r1 == e2.search(q, h, T0 + timedelta(hours=3), 50)
            assert r1 == e1.search(q, h, T0 + timedelta(hours=3), 50)
            assert r1 == sorted(r1, key=lambda x: (-x[1], x[0]))


def test_filters_do_not_change_scores():
    """The time filter is zero-score: hits score exactly what the bare BM25 text query over
    the holder's index gives them."""
    import tantivy

    e = BM25Engine()
    e.index(
        [
            atom("a", "h1", "red apple pie"),
            atom("b", "h2", "green apple"),
            atom("c", "h1", "apple apple crumble pie", T0 + timedelta(days=2)),
        ]
    )
    schema, _, searcher, rows = e._holders["h1"]
    Q, Occ = tantivy.Query, tantivy.Occur
    bare = Q.boolean_query(
        [(Occ.Should, Q.term_query(schema, "text", t)) for t in e.terms("apple pie")]
    )
    res = searcher.search(bare, 10).hits
    ords = searcher.fast_field_values("ord", [addr for _, addr in res])
    unfiltered = {rows[o].atom_id: score for (score, _), o in zip(res, ords, strict=True)}
    assert set(unfiltered) == {"a", "c"}  # h1's index holds h1's atoms only
    hits = e.search("apple pie", "h1", T0, 5)
    assert [a for a, _ in hits] == ["a"]
    assert hits[0][1] == pytest.approx(unfiltered["a"], rel=0, abs=0)


def test_scores_do_not_depend_on_other_holders():
    """Statistics are per holder: adding another holder's memory (which would change IDF and
    average length in a shared index) leaves a holder's hits and scores exactly as they were."""
    mine = [atom(i, "bank", t) for i, t in REPORT]
    others = [
        atom(f"o{i:03d}", f"other{i % 4}", "interest margin " * (i % 7 + 1) + "loan")
        for i in range(200)
    ]
    alone, shared = BM25Engine(), BM25Engine()
    alone.index(mine)
    shared.index(mine + others)
    for q in ("What was the net interest margin in 2016?", "loan provisions", "dividend"):
        assert shared.search(q, "bank", T0, 100) == alone.search(q, "bank", T0, 100)


def _tie_heavy(n=600, holders=3, seed=11):
    """Short texts over a tiny vocabulary: most scores tie, at every depth."""
    rng = random.Random(seed)
    words = "red green blue".split()
    atoms = [
        atom(
            f"{rng.getrandbits(40):010x}",
            f"h{i % holders}",
            " ".join(rng.choice(words) for _ in range(rng.randint(1, 3))),
            T0 + timedelta(minutes=rng.randint(0, 50)),
        )
        for i in range(n)
    ]
    rng.shuffle(atoms)
    return atoms


def _exact(e, q, holder, as_of, k):
    """The exact path (widen, rank by score desc then atom_id asc) for the same query."""
    from membench.systems.retrieval import to_micros

    terms = e.terms(q)
    if not terms or holder not in e._holders:
        return []
    schema, _, searcher, _ = e._holders[holder]
    return e._search_widening(searcher, e._query(schema, terms, to_micros(as_of)), holder, k)


def test_tantivy_order_is_checked_and_equals_the_exact_ranking_ties_at_the_cut():
    e = BM25Engine()
    e.index(_tie_heavy())
    assert all(e._in_order.values())
    ties_at_cut = 0
    for h in ("h0", "h1", "h2"):
        for q in ("red", "green blue", "red green blue", "blue blue"):
            for minutes in (10, 30, 60):
                as_of = T0 + timedelta(minutes=minutes)
                for k in (1, 3, 7, 50, 120, 1000):
                    got = e.search(q, h, as_of, k)
                    want = _exact(e, q, h, as_of, k)
                    assert got == want, (h, q, minutes, k)
                    assert got == sorted(got, key=lambda x: (-x[1], x[0]))
                    full = _exact(e, q, h, as_of, 1000)
                    if len(full) > k and full[k - 1][1] == full[k][1]:
                        ties_at_cut += 1
    assert ties_at_cut > 50  # the cut really falls inside runs of equal scores


def test_an_index_of_several_segments_takes_the_exact_path(monkeypatch):
    atoms = _tie_heavy(n=300, holders=1)
    one = BM25Engine()
    one.index(atoms)

    def two_commits(self, rows):  # two segments: doc ids no longer one sequence
        schema = self.schema
        index = tantivy.Index(schema)
        index.register_tokenizer("membench_en", self.analyzer)
        writer = index.writer(heap_size=self.heap_size, num_threads=1)
        for part in (range(1, len(rows), 2), range(0, len(rows), 2)):
            for i in part:
                a = rows[i]
                writer.add_document(
                    tantivy.Document(
                        text=a.text, atom_id=a.atom_id, observed_at=to_micros(a.observed_at), ord=i
                    )
                )
            writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return schema, index, index.searcher(), rows

    import tantivy

    from membench.systems.retrieval import to_micros

    monkeypatch.setattr(BM25Engine, "_build_one", two_commits)
    two = BM25Engine()
    two.index(atoms)
    assert two._holders["h0"][2].num_segments == 2 and two._in_order == {"h0": False}
    for q in ("red", "green blue"):
        for k in (1, 5, 60, 1000):
            assert two.search(q, "h0", T0 + timedelta(hours=1), k) == one.search(
                q, "h0", T0 + timedelta(hours=1), k
            )
