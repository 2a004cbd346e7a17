"""BM25 reference system on tantivy (tantivy-py 0.27; tantivy's BM25, k1 = 1.2, b = 0.75).

Index (in RAM, rebuilt by every ``index``): one document per atom with

* ``text``: the atom text, analysed by ``membench_en`` = tantivy's simple tokenizer (runs of
  letters/digits), remove tokens longer than 40 bytes, lowercase, English Snowball stemmer.
  This is exactly tantivy's built-in ``en_stem`` chain; it is registered under our own name so
  the very same :class:`tantivy.TextAnalyzer` object analyses the questions. No stop-word
  removal (BM25's IDF already discounts "the", and a question made only of stop words should
  still find something). Stemming because questions paraphrase inflections ("revenues" /
  "revenue", "jumped" / "jumping").
* ``atom_id`` (raw, stored), ``holder`` (raw, indexed), ``observed_at`` (i64 microseconds
  since the epoch, indexed + fast) and ``ord`` (i64 fast: the atom's row in atom_id order, used
  to map hits back without loading stored documents).

Query: the question is analysed with the same analyser, the distinct terms (first-occurrence
order; query term frequency is ignored) become ``SHOULD`` term queries over ``text`` (built
from tokens, never through the query parser, so ``?``, ``:``, quotes, ``AND`` or ``-`` in a
question are plain text and can never be a syntax error), and the scope is two ``MUST``
filters wrapped in ``const_score_query(.., 0.0)`` so they do not change the BM25 score:
``term(holder)`` and ``range(observed_at <= as_of)``. tantivy filters before it collects the
top k, so the depth is filled with in-scope atoms. A question with no index term gets no hits.

Collection statistics (IDF, average length) are those of the whole multi-tenant index, as in
any shared index; they never let an out-of-scope atom into the results.

Ties: tantivy's collector breaks ties by its own document order, so the search widens its
limit until the score at the cut is strictly above the next one (or every match is in), then
ranks by score desc, atom_id asc (:func:`~membench.run.systems.retrieval.rank`).
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import tantivy

from ..protocol import Atom
from .cartridge import CartridgePolicy
from .retrieval import Chunker, Engine, Hit, RetrievalSystem, rank, to_micros

ANALYZER_NAME = "membench_en"
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
        self._index: tantivy.Index | None = None
        self._searcher: tantivy.Searcher | None = None
        self._schema: tantivy.Schema | None = None

    def config(self) -> dict[str, Any]:
        return {"engine": "bm25",
                "library": f"tantivy-py {version('tantivy')} ({tantivy.__version__})",
                "scoring": "tantivy BM25 (k1=1.2, b=0.75)",
                "analyzer": "simple tokenizer | remove_long(40) | lowercase | "
                            "stemmer(english) (= tantivy en_stem)",
                "query": "OR of distinct analysed question terms; holder term + "
                         "observed_at <= as_of range as zero-score MUST filters",
                "time_unit": "microseconds since epoch"}

    def terms(self, text: str) -> list[str]:
        """Distinct analysed terms of ``text``, first occurrence first."""
        return list(dict.fromkeys(self.analyzer.analyze(text)))

    def _build(self, atoms: list[Atom]) -> None:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("text", stored=False, tokenizer_name=ANALYZER_NAME)
        sb.add_text_field("atom_id", stored=True, tokenizer_name="raw")
        sb.add_text_field("holder", stored=False, tokenizer_name="raw")
        sb.add_integer_field("observed_at", indexed=True, fast=True)
        sb.add_integer_field("ord", fast=True)
        schema = sb.build()
        index = tantivy.Index(schema)  # path=None: in RAM
        index.register_tokenizer(ANALYZER_NAME, self.analyzer)
        writer = index.writer(heap_size=self.heap_size, num_threads=1)
        for i, a in enumerate(atoms):
            writer.add_document(tantivy.Document(
                text=a.text or "", atom_id=a.atom_id, holder=a.holder,
                observed_at=to_micros(a.observed_at), ord=i))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        self._schema, self._index = schema, index
        self._searcher = index.searcher()

    def _query(self, terms: list[str], holder: str, as_of_us: int) -> tantivy.Query:
        s, Q, Occ = self._schema, tantivy.Query, tantivy.Occur
        text = Q.boolean_query([(Occ.Should, Q.term_query(s, "text", t)) for t in terms])
        in_holder = Q.const_score_query(Q.term_query(s, "holder", holder), 0.0)
        in_time = Q.const_score_query(
            Q.range_query(s, "observed_at", tantivy.FieldType.Integer,
                          upper_bound=as_of_us, include_upper=True), 0.0)
        return Q.boolean_query([(Occ.Must, text), (Occ.Must, in_holder), (Occ.Must, in_time)])

    def _search(self, question: str, holder: str, as_of_us: int, k: int) -> list[Hit]:
        terms = self.terms(question)
        if not terms or self._searcher is None:
            return []
        query = self._query(terms, holder, as_of_us)
        limit = k + 1
        while True:
            res = self._searcher.search(query, limit=limit, count=False).hits
            # stop when every match is in, or the k-th score is strictly above the last one
            if len(res) < limit or res[k - 1][0] > res[-1][0]:
                break
            limit *= 2
        if not res:
            return []
        ords = self._searcher.fast_field_values("ord", [addr for _, addr in res])
        atoms = self.atoms
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


__all__ = ["BM25Engine", "BM25System", "make_analyzer", "ANALYZER_NAME", "DEFAULT_THRESHOLD"]
