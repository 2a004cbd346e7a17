"""BM25 reference system on tantivy (tantivy-py 0.27; tantivy's BM25, k1 = 1.2, b = 0.75).

Index (in RAM, rebuilt by every ``index``): **one tantivy index per holder**, so that the
collection statistics (document frequencies, IDF, average length) are that holder's memory's
alone: a query's scores never depend on which other holders, modalities or ``--limit`` subset
were ingested with it (SPEC section 6; tested by comparing a ``--modality`` run's lines with
the full run's). One document per atom with

* ``text``: the atom text, analysed by ``membench_en`` = tantivy's simple tokenizer (runs of
  letters/digits), remove tokens longer than 40 bytes, lowercase, English Snowball stemmer.
  This is exactly tantivy's built-in ``en_stem`` chain; it is registered under our own name so
  the very same :class:`tantivy.TextAnalyzer` object analyses the questions. No stop-word
  removal (BM25's IDF already discounts "the", and a question made only of stop words should
  still find something). Stemming because questions paraphrase inflections ("revenues" /
  "revenue", "jumped" / "jumping").
* ``atom_id`` (raw, stored), ``observed_at`` (i64 microseconds since the epoch, indexed +
  fast) and ``ord`` (i64 fast: the atom's row, in atom_id order, among its holder's atoms,
  used to map hits back without loading stored documents).

Query: the question is analysed with the same analyser, the distinct terms (first-occurrence
order; query term frequency is ignored) become ``SHOULD`` term queries over ``text`` (built
from tokens, never through the query parser, so ``?``, ``:``, quotes, ``AND`` or ``-`` in a
question are plain text and can never be a syntax error), searched in the scope holder's
index only, with ``range(observed_at <= as_of)`` as a ``MUST`` filter wrapped in
``const_score_query(.., 0.0)`` so it does not change the BM25 score. tantivy filters before it
collects the top k, so the depth is filled with in-scope atoms. A question with no index term
gets no hits.

Statistics are the holder's whole memory's, future items included (as a memory indexes what
it has seen so far, it would not know them yet; the filter keeps them out of the results, and
the scores stay a function of the holder alone).

Ties: tantivy's collector breaks ties by its own document order, so the search widens its
limit until the score at the cut is strictly above the next one (or every match is in), then
ranks by score desc, atom_id asc (:func:`~membench.run.systems.retrieval.rank`).
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import tantivy

from ..cards import load_card
from ..protocol import Atom
from .cartridge import CartridgePolicy
from .retrieval import Chunker, Engine, Hit, RetrievalSystem, rank, to_micros

ANALYZER_NAME = "membench_en"
CARD = "bm25"       # bench/cards/bm25.json
# Provisional, uncalibrated threshold on the raw BM25 score (calibrate on dev per modality).
DEFAULT_THRESHOLD = 8.0


def make_analyzer() -> tantivy.TextAnalyzer:
    """tantivy's ``en_stem`` chain, as an object we can also run on questions."""
    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(40))
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.stemmer("english"))
            .build())


class BM25Engine(Engine):
    name = "bm25"

    def __init__(self, heap_size: int = 64_000_000):
        super().__init__()
        self.heap_size = heap_size
        self.analyzer = make_analyzer()
        # holder -> (schema, index, searcher, the holder's atoms in atom_id order)
        self._holders: dict[str, tuple[tantivy.Schema, tantivy.Index, tantivy.Searcher,
                                       list[Atom]]] = {}

    def config(self) -> dict[str, Any]:
        return {"engine": "bm25",
                "library": f"tantivy-py {version('tantivy')} ({tantivy.__version__})",
                "scoring": "tantivy BM25 (k1=1.2, b=0.75)",
                "analyzer": "simple tokenizer | remove_long(40) | lowercase | "
                            "stemmer(english) (= tantivy en_stem)",
                "query": "OR of distinct analysed question terms in the holder's index; "
                         "observed_at <= as_of range as a zero-score MUST filter",
                "statistics": "one index per holder: IDF and average length never cross "
                              "holders",
                "time_unit": "microseconds since epoch"}

    def terms(self, text: str) -> list[str]:
        """Distinct analysed terms of ``text``, first occurrence first."""
        return list(dict.fromkeys(self.analyzer.analyze(text)))

    def _build(self, atoms: list[Atom]) -> None:
        by_holder: dict[str, list[Atom]] = {}
        for a in atoms:                       # atoms come sorted by atom_id
            by_holder.setdefault(a.holder, []).append(a)
        self._holders = {h: self._build_one(rows) for h, rows in sorted(by_holder.items())}

    def _build_one(self, atoms: list[Atom]):
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("text", stored=False, tokenizer_name=ANALYZER_NAME)
        sb.add_text_field("atom_id", stored=True, tokenizer_name="raw")
        sb.add_integer_field("observed_at", indexed=True, fast=True)
        sb.add_integer_field("ord", fast=True)
        schema = sb.build()
        index = tantivy.Index(schema)  # path=None: in RAM
        index.register_tokenizer(ANALYZER_NAME, self.analyzer)
        writer = index.writer(heap_size=self.heap_size, num_threads=1)
        for i, a in enumerate(atoms):
            writer.add_document(tantivy.Document(
                text=a.text or "", atom_id=a.atom_id, observed_at=to_micros(a.observed_at),
                ord=i))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return schema, index, index.searcher(), atoms

    def _query(self, schema: tantivy.Schema, terms: list[str], as_of_us: int) -> tantivy.Query:
        Q, Occ = tantivy.Query, tantivy.Occur
        text = Q.boolean_query([(Occ.Should, Q.term_query(schema, "text", t)) for t in terms])
        in_time = Q.const_score_query(
            Q.range_query(schema, "observed_at", tantivy.FieldType.Integer,
                          upper_bound=as_of_us, include_upper=True), 0.0)
        return Q.boolean_query([(Occ.Must, text), (Occ.Must, in_time)])

    def _search(self, question: str, holder: str, as_of_us: int, k: int) -> list[Hit]:
        terms = self.terms(question)
        if not terms or holder not in self._holders:
            return []
        schema, _, searcher, atoms = self._holders[holder]
        query = self._query(schema, terms, as_of_us)
        limit = k + 1
        while True:
            res = searcher.search(query, limit=limit, count=False).hits
            # stop when every match is in, or the k-th score is strictly above the last one
            if len(res) < limit or res[k - 1][0] > res[-1][0]:
                break
            limit *= 2
        if not res:
            return []
        ords = searcher.fast_field_values("ord", [addr for _, addr in res])
        pairs = zip(res, ords, strict=True)
        return rank(((atoms[o].atom_id, float(score)) for (score, _), o in pairs), k)


class BM25System(RetrievalSystem):
    """BM25 over the chunker's atoms, with the shared cartridge policy."""

    def __init__(self, chunker: Chunker, *, thresholds: dict[str, float] | None = None,
                 default_threshold: float = DEFAULT_THRESHOLD, max_atoms: int = 5,
                 token_budget: int = 512, chunker_config: dict[str, Any] | None = None,
                 name: str = "bm25"):
        policy = CartridgePolicy(default_threshold=default_threshold,
                                 thresholds=dict(thresholds or {}),
                                 max_atoms=max_atoms, token_budget=token_budget)
        super().__init__(BM25Engine(), chunker, policy, name=name,
                         chunker_config=chunker_config)
        self.card = load_card(CARD)


__all__ = ["BM25Engine", "BM25System", "make_analyzer", "ANALYZER_NAME", "DEFAULT_THRESHOLD"]
