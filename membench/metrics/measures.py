"""The measure registry: every figure membench reports, defined once.

Each :class:`Measure` carries its name (the key in ``metrics.json``), its definition (with the
citation it follows), its denominator, its direction, its gate (SPEC section 7), whether the
comparison of systems tests it pairwise, whether it is computed per judgment set, whether it
is a headline figure (frozen in ``bench/expected/dev.json`` and shown in the README table) and
whether "which system is best" ranks it (a report-only figure is shown, never ranked).
Aggregation, slices, comparison, expected figures and the reports all read this table; nothing
else defines a gate or a denominator.

The per-item values come from the measure families: :mod:`.ranking` (recall@k, MRR, nDCG@k),
:mod:`.judged` (judged@10), :mod:`.cartridge` (false recall, abstention, cartridge recall),
:mod:`.scope` (temporal and holder correctness) and :mod:`.latency` (percentiles), joined by
:mod:`.score`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..modalities import REGISTRY as _MODALITIES
from .answer_layer import ANSWER_BUDGET, ANSWER_BUDGETED
from .bootstrap import N_RESAMPLES, SEED
from .context import BUDGETS

#: the items a value is over: "audited unanswerable" (every unanswerable item but the natives
#: with an upstream tell: :func:`membench.contract.tells.audited`), "unanswerable with a tell"
#: (those natives), "answerable and audited" (every item but those natives)
#: "answer-bearing" (answerable items whose upstream answer occurs in the text of their gold
#: regions: :mod:`membench.metrics.answer_layer`), "pictures" (image and screenshot items),
#: "videos" (video items), "committed" (the items whose cartridge is not empty)
Denominator = Literal[
    "answerable",
    "audited unanswerable",
    "unanswerable with a tell",
    "answerable and audited",
    "all",
    "answer-bearing",
    "pictures",
    "videos",
    "committed",
]


#: a false-recall verdict is not PASS when the system abstains on more than this share of the
#: answerable items of the same scope: a system that always abstains would otherwise pass
#: every false-recall gate (a gate's ``silent`` verdict)
MAX_SILENT_ABSTENTION: float = 0.5
#: the measure the silence check of the false-recall gate reads (:attr:`Gate.silent_if`)
SILENCE = "abstain_rate_gated"
#: what "which system is best" names on a gated measure whose every contender is silent
ALL_SILENT = "no system: all silent"


@dataclass(frozen=True)
class Gate:
    op: Literal[">=", "<="]
    threshold: float
    #: for a gate silence would pass (the false-recall rate): the measure of the same scope
    #: that says how silent the system is, and the bound past which the verdict is
    #: ``FAIL (silent)`` whatever the gated value
    silent_if: tuple[str, float] | None = None

    def margin(self, value: float) -> float:
        """How far ``value`` is on the passing side (negative: the gate fails)."""
        return value - self.threshold if self.op == ">=" else self.threshold - value

    def passes(self, value: float | None) -> bool | None:
        """PASS / FAIL on the value alone, or ``None`` when there is no value (no items: never
        a pass). A mean that meets the threshold up to float rounding passes. The verdict a
        report shows is :meth:`verdict`, which also reads :attr:`silent_if`."""
        if value is None:
            return None
        return self.margin(value) >= -1e-12

    def silent(self, companion: float | None) -> bool:
        """The system abstains on more than the bound's share of the answerable items
        (``companion`` = the :attr:`silent_if` measure's value in the same scope; ``None``:
        no answerable items, nothing to tell)."""
        return (
            self.silent_if is not None
            and companion is not None
            and companion > self.silent_if[1] + 1e-12
        )

    def verdict(
        self, value: float | None, companion: float | None = None
    ) -> tuple[bool | None, str]:
        """``(pass, why)``: :meth:`passes`, except that a silent system (:meth:`silent`) never
        passes; ``why`` says so (empty otherwise). No value (no items) stays ``None``: there
        is nothing to judge."""
        ok = self.passes(value)
        if ok is not None and self.silent(companion):
            m, bound = self.silent_if
            return False, (
                f"silent: abstains on {companion:.3f} of the answerable items "
                f"({m} > {bound:g}); a false-recall rate bought by abstaining is "
                "not a pass"
            )
        return ok, ""


@dataclass(frozen=True)
class Measure:
    name: str
    definition: str
    denominator: Denominator  # the items a value is a mean (or percentile) over
    direction: Literal["higher", "lower"]
    family: Literal["ranking", "cartridge", "scope", "latency", "answer", "context"]
    gate: Gate | None = None
    #: a statistic of the order of a slice's queries by their abstention score
    #: (:mod:`.abstention`), not a mean of per-item values
    ordering: bool = False
    paired: bool = False  # tested pairwise when systems are compared
    per_judgment_set: bool = False  # also computed under every alternative judgment set
    headline: bool = False  # frozen in bench/expected/dev.json, shown in README
    #: "which system is best" tests it (compare.best_systems, the leaderboard's best of a
    #: column); a report-only figure (false_recall_native) is shown, never ranked
    ranked: bool = True
    citation: str = "SPEC section 7"
    percentile: float | None = None  # latency and context-cost measures: which percentile
    #: a percentile's per-item values: ``ItemScores.latency_ms`` (None) or the named array of
    #: ``ItemScores.values`` (the context costs)
    per_item: str | None = None

    @property
    def is_mean(self) -> bool:
        return self.percentile is None and not self.ordering


MEASURES: tuple[Measure, ...] = (
    Measure(
        "recall@10",
        "Mean over answerable items of the share of gold regions hit by an atom ranked <= 10.",
        "answerable",
        "higher",
        "ranking",
        gate=Gate(">=", 0.90),
        paired=True,
        per_judgment_set=True,
        headline=True,
        citation="SPEC section 7; as trec_eval's recall cut at 10 (Voorhees & Harman 2005), "
        "with regions for relevant documents",
    ),
    Measure(
        "judged@10",
        "Mean over answerable items of the share of the atoms ranked <= 10 "
        "that are judged: that hit (the hit rule of recall@k) a region of the item's gold "
        "or of any of its judgment sets, whatever its grade. Over min(10, n) for an item "
        "with n < 10 ranked atoms; 0 for an item with none. Not a quality figure: the "
        "share of the top 10 whose relevance is known, so 1 - judged@10 bounds how much "
        "recall@10 and nDCG@10 may understate where judgments are sparse; shown, never "
        "ranked.",
        "answerable",
        "higher",
        "ranking",
        ranked=False,
        citation="ir_measures' Judged@k (MacAvaney et al.; after OpenNIR's judged.py), "
        "with regions for judged documents: a cutoff past the run's length is cut "
        "to it, a query missing from the run scores 0",
    ),
    Measure(
        "recall@100",
        "As recall@10 with rank <= 100.",
        "answerable",
        "higher",
        "ranking",
        per_judgment_set=True,
    ),
    Measure(
        "recall@1000",
        "As recall@10 with rank <= 1000.",
        "answerable",
        "higher",
        "ranking",
        per_judgment_set=True,
        headline=True,
        citation="SPEC section 7; Q2D-Web's primary first-stage figure",
    ),
    Measure(
        "mrr",
        "Mean over answerable items of 1/rank of the first atom hitting any gold "
        "region (0 if none).",
        "answerable",
        "higher",
        "ranking",
        paired=True,
        per_judgment_set=True,
        headline=True,
        citation="SPEC section 7; Voorhees, TREC-8 QA track (1999)",
    ),
    Measure(
        "ndcg@10",
        "Mean over answerable items of DCG@10/IDCG@10; binary gain 1 at a rank "
        "whose atom hits at least one gold region not hit by an earlier atom; DCG = sum "
        "gain/log2(rank+1); IDCG from min(|gold|, 10) gains.",
        "answerable",
        "higher",
        "ranking",
        paired=True,
        per_judgment_set=True,
        headline=True,
        citation="SPEC section 7; Jarvelin & Kekalainen, TOIS 2002 (binary gains)",
    ),
    Measure(
        "ndcg_graded@10",
        "As ndcg@10 with graded gains: at a rank whose atom hits gold "
        "regions not hit earlier, gain = max over those regions of 2**grade - 1 (1 for an "
        "ungraded region, so it equals ndcg@10 where gold carries no grades); IDCG from the "
        "min(|gold|, 10) largest region gains.",
        "answerable",
        "higher",
        "ranking",
        per_judgment_set=True,
        citation="Jarvelin & Kekalainen, TOIS 2002; gains 2**grade - 1 as Burges et al., "
        "ICML 2005, and CodeSearchNet's relevanceeval.py (Husain et al. 2019)",
    ),
    Measure(
        "false_recall_rate",
        "Share of audited unanswerable items (origin.audited: every "
        "derived one, and the natives of a source without an upstream tell) whose "
        "cartridge is non-empty; the natives with a tell are false_recall_native's. Its "
        "gate is not passed by silence: the verdict is FAIL (silent) when "
        f"{SILENCE} of the same scope (the answerable items of the modalities with "
        f"audited unanswerable items) is above {MAX_SILENT_ABSTENTION:g}, and a silent "
        "figure is never named best.",
        "audited unanswerable",
        "lower",
        "cartridge",
        gate=Gate("<=", 0.10, silent_if=(SILENCE, MAX_SILENT_ABSTENTION)),
        paired=True,
        headline=True,
        citation="SPEC section 7; SPEC section 5: natives that fail the no-tells audit are "
        '"never in a gated or headline false recall"',
    ),
    Measure(
        "false_recall_native",
        "Share of unanswerable records with an upstream tell "
        "(origin.audited false: natives of a source whose questions give them away, "
        "membench.contract.tells.NATIVE_TELLS) whose cartridge is non-empty; never gated, never "
        "pooled with false_recall_rate. Shown beside it, labelled with the tell's ROC AUC "
        "from the set audit.",
        "unanswerable with a tell",
        "lower",
        "cartridge",
        headline=True,
        ranked=False,
        citation='SPEC section 5: "Upstream natives that fail this audit keep their text '
        'but are reported in their own column"',
    ),
    Measure(
        "temporal_correctness",
        "Share of all items whose returned hits and cartridge "
        "contain no atom observed after the item's as_of.",
        "all",
        "higher",
        "scope",
        gate=Gate(">=", 0.95),
        headline=True,
    ),
    Measure(
        "holder_correctness",
        "Share of all items whose returned hits and cartridge contain "
        "no atom of a holder other than scope.holder.",
        "all",
        "higher",
        "scope",
        gate=Gate(">=", 0.95),
        headline=True,
    ),
    Measure(
        "abstain_rate_answerable",
        "Share of answerable items whose cartridge is empty.",
        "answerable",
        "lower",
        "cartridge",
        paired=True,
        headline=True,
    ),
    Measure(
        SILENCE,
        "Share of answerable items whose cartridge is empty, over the answerable "
        "items of the modalities that have an audited unanswerable item among the scored "
        "ones (the modalities false_recall_rate is over: code has none). What the "
        "false-recall gate's silence check reads: equal to abstain_rate_answerable in such "
        "a modality, undefined in one without, and over all items it leaves out the "
        "answerable items no false recall is measured beside.",
        "answerable",
        "lower",
        "cartridge",
        ranked=False,
        citation="membench (the false-recall gate is not passed by silence)",
    ),
    Measure(
        "answerable_kept@fr0.10",
        "The false-recall gate read as an operating point: the "
        "largest share of answerable items that keep a non-empty cartridge when the system "
        "abstains on every query whose abstention score is below a threshold t, over every "
        "t at which at most 0.10 of the unanswerable items keep a non-empty cartridge (a "
        "query is kept at t when its own cartridge is non-empty and its score >= t; equal "
        "scores are kept or dropped together; over several modalities, per modality and "
        "pooled). The unanswerable items are the audited ones (as false_recall_rate). A "
        "system that always abstains scores 0. The abstention score: the confidence the "
        "system reported, else its top-1 hit score, else -inf. Undefined where the slice "
        "has no audited unanswerable item. Shown beside the random committer's "
        "(random_committer: the expected kept share of a committer with the same "
        "answerable abstention that commits at random).",
        "answerable",
        "higher",
        "cartridge",
        ordering=True,
        headline=True,
        citation="membench (the seed's false-recall gate as an operating point); "
        "membench/metrics/abstention.py",
    ),
    Measure(
        "abstention_auc",
        "ROC AUC of the abstention order, answerable (positive) against "
        "audited unanswerable items of the same modality (the natives with an upstream "
        "tell are left out, as from false_recall_rate): queries placed by (cartridge "
        "non-empty, abstention score), ties counting one half (Mann-Whitney). 0.5 is "
        "chance; no threshold involved. Undefined without both kinds of items.",
        "answerable and audited",
        "higher",
        "cartridge",
        ordering=True,
        citation="Hanley & McNeil, Radiology 1982 (AUC as the Mann-Whitney statistic); "
        "membench/metrics/abstention.py",
    ),
    Measure(
        "cartridge_recall",
        "Mean over answerable items of the share of gold regions hit by "
        "any cartridge atom (unranked).",
        "answerable",
        "higher",
        "cartridge",
        per_judgment_set=True,
    ),
    Measure(
        "latency_p50_ms",
        "Median per-query compile latency (ms) over queries with a run line "
        "(numpy linear percentile); n = those queries, denominator = all items.",
        "all",
        "lower",
        "latency",
        headline=True,
        percentile=50.0,
    ),
    Measure(
        "latency_p95_ms",
        "95th percentile of per-query compile latency (ms), as latency_p50_ms.",
        "all",
        "lower",
        "latency",
        percentile=95.0,
    ),
    Measure(
        "answer_bearing",
        "Share of answerable items that are answer-bearing: the upstream "
        "answer is extractive (membench.metrics.answers.needles: not yes/no, not one "
        "character, not over 20 words, every element of a list) and each of its normalised "
        "needles occurs in the text membench reads for one of the item's gold regions. A "
        "property of the records, not of the system; the denominator of answer@cartridge, "
        f"{ANSWER_BUDGETED}, answer@10 and grounded_answer@10. The answer text leaves out "
        "what a model generated about the content (a conversation's shared-image "
        "captions).",
        "answerable",
        "higher",
        "answer",
        ranked=False,
        citation="membench; the has-answer test of DPR's top-k retrieval accuracy "
        "(Karpukhin et al., EMNLP 2020)",
    ),
    Measure(
        ANSWER_BUDGETED,
        "Mean over answer-bearing items of 1 when the cartridge fits "
        f"{ANSWER_BUDGET} tokens (its atoms' tokens summed, counted as recall@<B>tok counts "
        "them: whitespace words of the text membench reads for each atom) and each needle "
        "of the normalised answer occurs in the answer text of one of its atoms, else 0: a "
        f"cartridge past {ANSWER_BUDGET} tokens scores 0 whatever it holds. The answer "
        "figure that is ranked: committing more than the budget buys nothing, so "
        "answer@cartridge, which volume can buy, is shown beside it with the committed "
        "tokens, never ranked.",
        "answer-bearing",
        "higher",
        "answer",
        citation='SPEC section 7 ("a figure that can be bought with cartridge volume is '
        "ranked within a stated token budget\"); DPR's top-k retrieval accuracy "
        "(Karpukhin et al., EMNLP 2020), on a cartridge within the budget",
    ),
    Measure(
        "answer@cartridge",
        "Mean over answer-bearing items of 1 when each needle of the "
        "normalised answer occurs in the answer text membench reads for one of the "
        "cartridge's atoms (never the text the system reports), else 0. A judge-free "
        "ceiling on what a reader of the cartridge can answer: beside LLM-judged QA "
        "accuracy (LoCoMo, LongMemEval), it says whether the answer was handed over, not "
        "whether a reader would use it. Uncut: a system can raise it by committing more "
        f"atoms, so it is shown beside {ANSWER_BUDGETED} and the committed tokens "
        "(context_tokens_committed_p50), never ranked.",
        "answer-bearing",
        "higher",
        "answer",
        ranked=False,
        citation="DPR's top-k retrieval accuracy (Karpukhin et al., EMNLP 2020), on the "
        "cartridge; beside LLM-judged accuracy (LoCoMo, LongMemEval)",
    ),
    Measure(
        "answer@10",
        "As answer@cartridge, over the atoms ranked <= 10 (ties broken as the "
        "ranking measures break them), whether or not they hit a gold region.",
        "answer-bearing",
        "higher",
        "answer",
        citation="DPR's top-k retrieval accuracy (Karpukhin et al., EMNLP 2020), k = 10",
    ),
    Measure(
        "grounded_answer@10",
        "As answer@10, over only those of the atoms ranked <= 10 "
        "that hit one of the item's gold regions (the hit rule of recall@k): the answer's "
        "words in an atom elsewhere (another conversation's trip to the same city) do not "
        "count. answer@10 minus grounded_answer@10 is the share answered by coincidence.",
        "answer-bearing",
        "higher",
        "answer",
        citation="DPR's top-k retrieval accuracy (Karpukhin et al., EMNLP 2020), k = 10, "
        "restricted to gold-hitting atoms as SPEC section 7's hit",
    ),
    *(
        Measure(
            f"recall@{b}tok",
            f"Mean over answerable items of the share of gold regions hit "
            f"by the atoms taken in rank order while their running total of tokens "
            f"(whitespace words of the text membench reads for each atom) stays <= {b}; the "
            f"first atom that would pass {b} ends the prefix. A system whose atoms are whole "
            f"items can win recall@10 and lose it.",
            "answerable",
            "higher",
            "context",
            citation="membench.metrics.context; beside MemoryBench's contextTokens "
            "(supermemory memorybench)",
        )
        for b in BUDGETS
    ),
    *(
        Measure(
            f"context_{what}_p{q}",
            f"{'Median' if q == 50 else '95th percentile'} per "
            f"query of {about} (numpy linear percentile); n = the queries with a run line "
            f"whose content was read.",
            den,
            "lower",
            "context",
            ranked=False,
            percentile=float(q),
            per_item=f"context_{what}",
            citation="membench.metrics.context; MemoryBench's contextTokens (supermemory "
            "memorybench) counts the answering model's tokens",
        )
        for what, about, den in (
            (
                "tokens",
                "the cartridge's tokens: the whitespace words of the text membench reads "
                "for each of its atoms, summed",
                "all",
            ),
            (
                "tokens_committed",
                "the tokens of a committed cartridge (as context_tokens, over the "
                "queries whose cartridge is not empty: where most cartridges are empty, the median "
                "over all queries is 0 and says nothing of what a commit costs)",
                "committed",
            ),
            (
                "area",
                "the cartridge's area: per picture item the union of its atoms' regions as "
                "a share of the item (a whole image is 1), summed; over image and screenshot "
                "queries",
                "pictures",
            ),
            (
                "seconds",
                "the cartridge's seconds: per video the length of the union of its "
                "atoms' spans, summed; over video queries",
                "videos",
            ),
        )
        for q in (50, 95)
    ),
)

BY_NAME: dict[str, Measure] = {m.name: m for m in MEASURES}

#: every measure name, in report order
METRICS: tuple[str, ...] = tuple(m.name for m in MEASURES)
#: the means (all but the latency percentiles and the abstention-order statistics)
MEAN_MEASURES: tuple[str, ...] = tuple(m.name for m in MEASURES if m.is_mean)
#: statistics of the abstention order (:mod:`.abstention`)
ORDERING_MEASURES: tuple[str, ...] = tuple(m.name for m in MEASURES if m.ordering)
#: the latency percentiles
LATENCY_PERCENTILES: dict[str, float] = {
    m.name: m.percentile for m in MEASURES if m.percentile is not None and m.per_item is None
}
#: the context-cost percentiles: name -> (the per-item array of ``ItemScores.values``, q)
COST_PERCENTILES: dict[str, tuple[str, float]] = {
    m.name: (m.per_item, m.percentile)
    for m in MEASURES
    if m.percentile is not None and m.per_item is not None
}
#: the judge-free answer layer and the context cost (never headline, never gated)
ANSWER_MEASURES: tuple[str, ...] = tuple(m.name for m in MEASURES if m.family == "answer")
CONTEXT_MEASURES: tuple[str, ...] = tuple(m.name for m in MEASURES if m.family == "context")
#: the per-item context costs ``ItemScores.values`` carries beside the means
COST_ARRAYS: tuple[str, ...] = tuple(dict.fromkeys(p for p, _ in COST_PERCENTILES.values()))
#: (metric, op, threshold), checked per modality and for "all"
GATES: tuple[tuple[str, str, float], ...] = tuple(
    (m.name, m.gate.op, m.gate.threshold) for m in MEASURES if m.gate
)
#: tested pairwise by :mod:`membench.analysis.compare`
PAIRED_METRICS: tuple[str, ...] = tuple(m.name for m in MEASURES if m.paired)
#: computed under every alternative judgment set
JUDGMENT_MEASURES: tuple[str, ...] = tuple(m.name for m in MEASURES if m.per_judgment_set)
#: frozen in bench/expected/dev.json and shown in the README's figures table
HEADLINE: tuple[str, ...] = tuple(m.name for m in MEASURES if m.headline)
#: the headline measures "which system is best" tests (the report-only ones left out)
RANKED_HEADLINE: tuple[str, ...] = tuple(m.name for m in MEASURES if m.headline and m.ranked)
#: the false-recall gate, the cap every cartridge operating point is chosen under
MAX_FALSE_RECALL: float = BY_NAME["false_recall_rate"].gate.threshold


def gate(metric: str) -> Gate | None:
    m = BY_NAME.get(metric)
    return m.gate if m else None


def never_best(metric: str, companion: float | None) -> bool:
    """The one rule of "which system is best" on silence: a figure whose gate verdict is
    ``FAIL (silent)`` (``companion``: the :attr:`Gate.silent_if` measure's value of the same
    system and scope) is never named best, however good its value. The leaderboard's best of a
    column (``leaderboard --brief``, page 06) and :func:`membench.analysis.compare.
    best_systems` (the index's "which system is best") read it; where every contender is
    silent they name :data:`ALL_SILENT`."""
    g = gate(metric)
    return g is not None and g.silent(companion)


def silence_of(metric: str) -> str | None:
    """The measure whose value is :func:`never_best`'s ``companion`` for ``metric``."""
    g = gate(metric)
    return g.silent_if[0] if g is not None and g.silent_if is not None else None


def _hit_definition() -> str:
    rules = "; ".join(f"{m.name} {m.hit_doc}" for m in _MODALITIES.values())
    return (
        "Gold region g is hit by atom a iff same source_id and overlapping extents: "
        f"{rules}. Atom holder and observed_at are those of its source item."
    )


def definitions() -> dict[str, str]:
    """What ``metrics.json`` carries under ``definitions``: the hit rule, every measure, and
    the notes on items, intervals and judgment sets."""
    out = {"hit": _hit_definition()}
    out.update({m.name: m.definition for m in MEASURES})
    out.update(
        {
            "items": "Denominators count annotated items, never hits. An item without a run line "
            "counts as having returned nothing (all-zero ranking measures, empty "
            "cartridge).",
            "ci95": f"Percentile bootstrap over the slice's items, {N_RESAMPLES} resamples, numpy "
            f"PCG64 seeded with (seed={SEED}, crc32('<slice>|<metric>')).",
            "judgment_sets": "Alternative judgment sets carried in records' `judgments`: ranking "
            "measures and cartridge recall over the items that carry the set, "
            "answerable = non-empty list under that set.",
        }
    )
    return out
