"""The judgment sets the sources' adapters emit (SPEC section 3: "gold is the primary set;
items may carry more"; section 5: ``judgments {name: [gold...]}``), named once with what each
reading of relevance is. Every set comes from third-party annotation or document structure
only (SPEC section 9); ``docs/sets.md`` ("Judgment sets") says which sources carry which, and
why the others carry none.

Nothing here is read by the scoring: a set is scored by its name in the records, whatever it
is. Reports use :func:`describe` to say what a name means.
"""

from __future__ import annotations

#: the primary set's name (``gold`` in a record); never a key of ``judgments``
PRIMARY = "gold"

DESCRIPTIONS: dict[str, str] = {
    PRIMARY: "the primary set: each source's gold (CodeSearchNet: functions whose annotators' "
    "lower-median grade is >= 2; LoCoMo, LongMemEval: the evidence turns; "
    "MMLongBench-Doc: the evidence pages; the other sources: their one annotated "
    "region)",
    "any_annotator": "CodeSearchNet: functions some annotator graded >= 2 (grade = the highest)",
    "all_annotators": "CodeSearchNet: functions every annotator graded >= 2 (grade = the lowest)",
    "graded": "CodeSearchNet: every function whose lower-median grade is >= 1, with that 0-3 "
    "grade (weakly relevant ones included; graded nDCG gains 2**grade - 1)",
    "session": "LoCoMo, LongMemEval: the whole session holding an evidence turn (a turn "
    "range hit by any atom holding one of its turns; LongMemEval scores sessions)",
}


def describe(name: str) -> str:
    """What judgment set ``name`` is (a name no adapter emits: said so)."""
    return DESCRIPTIONS.get(
        name,
        "an alternative judgment set carried by the records (not one membench's adapters emit)",
    )


__all__ = ["DESCRIPTIONS", "PRIMARY", "describe"]
