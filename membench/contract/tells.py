"""Which unanswerable records the no-tells audit gates, and what each one is (SPEC section 5:
"Upstream natives that fail this audit keep their text but are reported in their own column,
never in a gated or headline false recall").

Every unanswerable record carries ``origin.kind`` (``native``: upstream's own; ``transactive``
or ``temporal``: derived by :mod:`membench.sets.derive`) and ``origin.audited``: whether it is
in the population the build's audit gates (:mod:`membench.sets.audit`; ``membench validate``
fails, rule ``TELL``, when a gate of that population does not pass). A derived record is
always audited. A native one is audited unless its source's questions carry a tell of their
own (:data:`NATIVE_TELLS`: measured by the audit on every build and shown with its ROC AUC
wherever a false recall is), which the build cannot remove without rewriting upstream.
"""

from __future__ import annotations

# upstream native unanswerables that carry a tell of their own (docs/sets.md): the build
# keeps upstream's questions verbatim, so the gates leave them out and the audit reports the
# tell's strength per source
NATIVE_TELLS: dict[str, str] = {
    "locomo": "LoCoMo's adversarial questions are name-swapped copies of answerable questions "
    "of the same conversation",
    "mmlongbench": "MMLongBench-Doc's unanswerable questions are altered copies (another "
    "year, page or label) of answerable questions of the same document",
}


def labels(source: str, derivation: str | None) -> tuple[str, bool]:
    """``(origin.kind, origin.audited)`` of an unanswerable record of ``source`` (the query id
    before ``:``) with ``origin.derivation`` ``derivation``."""
    if derivation is not None:
        return derivation, True
    return "native", source not in NATIVE_TELLS


def audited(record) -> bool:
    """Whether an unanswerable record counts in gated and headline false recall (its
    ``origin.audited``; a record written before the field existed: by its source)."""
    o = record.origin
    if o.audited is not None:
        return bool(o.audited)
    return labels(record.query_id.split(":", 1)[0], o.derivation)[1]
