"""BM25 reference system on tantivy (tantivy-py 0.27; tantivy's BM25, k1 = 1.2, b = 0.75).

Index (in RAM, rebuilt by every ``index``): one tantivy index per holder, so a query's collection
statistics are that holder's memory's alone (SPEC section 6), whatever else was ingested. One
document per atom: ``text`` analysed by ``membench_en`` (tantivy's ``en_stem`` chain: simple
tokenizer, tokens over 40 bytes removed, lowercase, English Snowball stemmer; no stop words),
``atom_id`` (raw, stored), ``observed_at`` (i64 microseconds, indexed + fast) and ``ord`` (i64
fast: the atom's row, in atom_id order, among its holder's atoms).

Query: the question, analysed by the same analyser object, gives its distinct terms as
``SHOULD`` term queries (built from tokens, never through the query parser), with
``observed_at <= as_of`` as a ``MUST`` range filter of constant score 0, searched in the scope
holder's index only. A question with no index term gets no hits.

Ranking: score desc, then atom_id asc (:func:`~membench.systems.retrieval.rank`), the smaller
atom_ids kept at the depth cut. A one-segment index whose document ids are the atoms' rows
(checked when it is built) gives tantivy's own top k; any other takes the exact path (widen
until the score at the cut is strictly above the next, then rank with numpy).

Reads the corpus through the content layer; writes nothing (the index is in RAM). Start at
:class:`BM25System` and :class:`BM25Engine`. Why: docs/runs.md, "The BM25 engine".
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import numpy as np
import tantivy

from ..contract.protocol import Atom
from .cards import load_card
from .cartridge import CartridgePolicy
from .retrieval import Chunker, Engine, Hit, RetrievalSystem, to_micros

ANALYZER_NAME = "membench_en"
CARD = "bm25"  # bench/cards/bm25.json
# Provisional, uncalibrated threshold on the raw BM25 score (calibrate on dev per modality).
DEFAULT_THRESHOLD = 8.0


def make_analyzer() -> tantivy.TextAnalyzer:
    """tantivy's ``en_stem`` chain, as an object we can also run on questions."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


class BM25Engine(Engine):
    name = "bm25"

    #: bounds of the query-object caches (cleared when full; they only save rebuilding)
    TERM_CACHE = 1 << 16
    FILTER_CACHE = 1 << 12

    def __init__(self, heap_size: int = 64_000_000):
        super().__init__()
        self.heap_size = heap_size
        self.analyzer = make_analyzer()
        self.schema = self._make_schema()  # one schema for every holder's index
        # holder -> (schema, index, searcher, the holder's atoms in atom_id order)
        self._holders: dict[
            str, tuple[tantivy.Schema, tantivy.Index, tantivy.Searcher, list[Atom]]
        ] = {}
        # holder -> the atom ids by row, and whether tantivy's order is ours (module docstring)
        self._ids: dict[str, list[str]] = {}
        self._in_order: dict[str, bool] = {}
        self._term_queries: dict[str, tantivy.Query] = {}
        self._filters: dict[int, tantivy.Query] = {}

    def config(self) -> dict[str, Any]:
        return {
            "engine": "bm25",
            "library": f"tantivy-py {version('tantivy')} ({tantivy.__version__})",
            "scoring": "tantivy BM25 (k1=1.2, b=0.75)",
            "analyzer": "simple tokenizer | remove_long(40) | lowercase | "
            "stemmer(english) (= tantivy en_stem)",
            "query": "OR of distinct analysed question terms in the holder's index; "
            "observed_at <= as_of range as a zero-score MUST filter",
            "statistics": "one index per holder: IDF and average length never cross holders",
            "time_unit": "microseconds since epoch",
        }

    def terms(self, text: str) -> list[str]:
        """Distinct analysed terms of ``text``, first occurrence first."""
        return list(dict.fromkeys(self.analyzer.analyze(text)))

    @staticmethod
    def _make_schema() -> tantivy.Schema:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("text", stored=False, tokenizer_name=ANALYZER_NAME)
        sb.add_text_field("atom_id", stored=True, tokenizer_name="raw")
        sb.add_integer_field("observed_at", indexed=True, fast=True)
        sb.add_integer_field("ord", fast=True)
        return sb.build()

    def _build(self, atoms: list[Atom]) -> None:
        by_holder: dict[str, list[Atom]] = {}
        for a in atoms:  # atoms come sorted by atom_id
            by_holder.setdefault(a.holder, []).append(a)
        self._holders = {h: self._build_one(rows) for h, rows in sorted(by_holder.items())}
        self._ids = {h: [a.atom_id for a in v[3]] for h, v in self._holders.items()}
        self._in_order = {
            h: self._tantivy_order_is_ours(v[2], len(v[3])) for h, v in self._holders.items()
        }

    def _build_one(self, atoms: list[Atom]):
        schema = self.schema
        index = tantivy.Index(schema)  # path=None: in RAM
        index.register_tokenizer(ANALYZER_NAME, self.analyzer)
        writer = index.writer(heap_size=self.heap_size, num_threads=1)
        for i, a in enumerate(atoms):
            writer.add_document(
                tantivy.Document(
                    text=a.text or "",
                    atom_id=a.atom_id,
                    observed_at=to_micros(a.observed_at),
                    ord=i,
                )
            )
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return schema, index, index.searcher(), atoms

    @staticmethod
    def _tantivy_order_is_ours(searcher: tantivy.Searcher, n: int) -> bool:
        """True when ``searcher``'s top k, ties included, is the (score desc, atom_id asc)
        ranking: one segment, and equal scores come back in row order, whole and cut."""
        if searcher.num_segments != 1 or searcher.num_docs != n:
            return False
        everything = tantivy.Query.all_query()  # every document scores 1.0
        for limit in sorted({n, max(1, n // 2)}):
            hits = searcher.search(everything, limit=limit, count=False).hits
            if [a.doc for _, a in hits] != list(range(limit)):
                return False
            if searcher.fast_field_values("ord", [a for _, a in hits]) != list(range(limit)):
                return False
        return True

    def _query(self, schema: tantivy.Schema, terms: list[str], as_of_us: int) -> tantivy.Query:
        Q, Occ = tantivy.Query, tantivy.Occur
        if schema is not self.schema:  # not one of ours: build it afresh
            text = Q.boolean_query([(Occ.Should, Q.term_query(schema, "text", t)) for t in terms])
            return Q.boolean_query([(Occ.Must, text), (Occ.Must, self._filter(schema, as_of_us))])
        cache = self._term_queries
        if len(cache) > self.TERM_CACHE:
            cache.clear()
        should = Occ.Should
        parts = []
        for t in terms:
            tq = cache.get(t)
            if tq is None:
                tq = cache[t] = Q.term_query(schema, "text", t)
            parts.append((should, tq))
        in_time = self._filters.get(as_of_us)
        if in_time is None:
            if len(self._filters) > self.FILTER_CACHE:
                self._filters.clear()
            in_time = self._filters[as_of_us] = self._filter(schema, as_of_us)
        return Q.boolean_query([(Occ.Must, Q.boolean_query(parts)), (Occ.Must, in_time)])

    @staticmethod
    def _filter(schema: tantivy.Schema, as_of_us: int) -> tantivy.Query:
        Q = tantivy.Query
        return Q.const_score_query(
            Q.range_query(
                schema,
                "observed_at",
                tantivy.FieldType.Integer,
                upper_bound=as_of_us,
                include_upper=True,
            ),
            0.0,
        )

    def _search(self, question: str, holder: str, as_of_us: int, k: int) -> list[Hit]:
        terms = self.terms(question)
        if not terms or holder not in self._holders:
            return []
        schema, _, searcher, _ = self._holders[holder]
        query = self._query(schema, terms, as_of_us)
        if self._in_order[holder]:
            ids = self._ids[holder]
            return [(ids[a.doc], s) for s, a in searcher.search(query, limit=k, count=False).hits]
        return self._search_widening(searcher, query, holder, k)

    def _search_widening(
        self, searcher: tantivy.Searcher, query: tantivy.Query, holder: str, k: int
    ) -> list[Hit]:
        """The exact path, which assumes nothing about tantivy's tie order: widen the limit
        until the k-th score is strictly above the last one (or every match is in), then rank
        by score desc, row asc (= atom_id asc) and cut at ``k``."""
        limit = k + 1
        while True:
            res = searcher.search(query, limit=limit, count=False).hits
            # stop when every match is in, or the k-th score is strictly above the last one
            if len(res) < limit or res[k - 1][0] > res[-1][0]:
                break
            limit *= 2
        if not res:
            return []
        scores = np.fromiter((s for s, _ in res), dtype=np.float64, count=len(res))
        rows = np.asarray(searcher.fast_field_values("ord", [a for _, a in res]), dtype=np.int64)
        top = np.lexsort((rows, -scores))[:k]
        ids = self._ids[holder]
        return [(ids[r], s) for r, s in zip(rows[top].tolist(), scores[top].tolist())]


class BM25System(RetrievalSystem):
    """BM25 over the chunker's atoms, with the shared cartridge policy."""

    def __init__(
        self,
        chunker: Chunker,
        *,
        thresholds: dict[str, float] | None = None,
        default_threshold: float = DEFAULT_THRESHOLD,
        max_atoms: int = 5,
        token_budget: int = 512,
        chunker_config: dict[str, Any] | None = None,
        name: str = "bm25",
    ):
        policy = CartridgePolicy(
            default_threshold=default_threshold,
            thresholds=dict(thresholds or {}),
            max_atoms=max_atoms,
            token_budget=token_budget,
        )
        super().__init__(BM25Engine(), chunker, policy, name=name, chunker_config=chunker_config)
        self.card = load_card(CARD)


__all__ = ["BM25Engine", "BM25System", "make_analyzer", "ANALYZER_NAME", "DEFAULT_THRESHOLD"]
