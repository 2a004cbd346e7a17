"""The two false-recall columns every table shows, and their labels (SPEC section 5: "Upstream
natives that fail this audit keep their text but are reported in their own column, never in a
gated or headline false recall").

``false_recall_rate`` counts the audited unanswerable records only (``origin.audited``:
:func:`membench.contract.tells.audited`); its header says so (:data:`AUDITED`).
``false_recall_native`` counts the natives whose source's questions carry an upstream tell
(:data:`membench.contract.tells.NATIVE_TELLS`); its header (:func:`native_header`) carries the
tell's strength: the set audit's ROC AUC of those natives against the answerable records of
their source (:mod:`membench.sets.audit`, each modality's ``native_tells``). Where the audit is
not at hand (the static tables of the docs, the frozen figures), the header names the sources
and points to docs/sets.md's audit table instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..contract.tells import NATIVE_TELLS

#: the headline, gated false recall's label
AUDITED = "false recall, audited"
#: the natives with an upstream tell: their own column, never gated
NATIVE = "false recall, natives with a tell"
#: where the tell's ROC AUC is published when the audit is not at hand
AUDIT_TABLE = "docs/sets.md, audit table"
#: measure -> label, for the tables that name measures
LABELS: dict[str, str] = {"false_recall_rate": AUDITED, "false_recall_native": NATIVE}


def tell_aucs(audit) -> dict[str, float | None]:
    """source -> ROC AUC of its natives against its answerable records, from a
    :class:`membench.sets.audit.Audit` (every modality's ``native_tells`` rows)."""
    return {
        src: row.get("auc")
        for m in audit.modalities.values()
        for src, row in m.native_tells.items()
    }


def sets_tells(sets_dir: str | os.PathLike) -> dict[str, float | None]:
    """:func:`tell_aucs` of the audit of a built sets folder
    (:func:`membench.sets.audit.audit_sets_cached`: computed once per sets content)."""
    from ..sets.audit import audit_sets_cached

    return tell_aucs(audit_sets_cached(sets_dir))


def tell_note(aucs: Mapping[str, float | None] | None) -> str:
    """The tell's strength for a label: ``tell ROC AUC locomo 0.81, mmlongbench 0.70`` from
    :func:`tell_aucs`; without the audit (``None``), the sources and :data:`AUDIT_TABLE`."""
    if aucs is None:
        return f"{', '.join(sorted(NATIVE_TELLS))}; tell ROC AUC: {AUDIT_TABLE}"
    if not aucs:
        return "no native with a tell in these sets"
    return "tell ROC AUC " + ", ".join(
        f"{src} {'—' if auc is None else format(auc, '.2f')}" for src, auc in sorted(aucs.items())
    )


def native_header(aucs: Mapping[str, float | None] | None = None) -> str:
    """The natives' column header: ``false recall, natives with a tell (n; tell ROC AUC ...)``
    (:func:`tell_note`)."""
    return f"{NATIVE} (n; {tell_note(aucs)})"


def audited_header() -> str:
    """The headline false recall's column header: ``false recall, audited (n)``."""
    return f"{AUDITED} (n)"


def label(measure: str, aucs: Mapping[str, float | None] | None = None) -> str:
    """A measure's name for a table row or column: the two false recalls as
    :func:`audited_header` / :func:`native_header` (without the ``n``), any other measure its
    registry name."""
    if measure == "false_recall_native":
        return f"{NATIVE} ({tell_note(aucs)})"
    return LABELS.get(measure, measure)


__all__ = [
    "AUDITED",
    "AUDIT_TABLE",
    "LABELS",
    "NATIVE",
    "audited_header",
    "label",
    "native_header",
    "sets_tells",
    "tell_aucs",
    "tell_note",
]
