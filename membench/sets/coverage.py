"""Reading ``SETS/coverage.json`` (written by ``membench build``): per source, how many upstream
questions exist, how many became records and why the rest did not.

The file is a JSON list of objects; the fields a reader uses are typed strictly
(:class:`CoverageRow`: counts are integers >= 0, ``mirrored`` a bool), and for a mirrored
source the counts must add up (``upstream_items == covered + sum(not_covered)``, the rule the
build itself checks). Fields added by later builds are kept. Every problem is an
:class:`~membench.core.errors.InputError` naming the file and the list entry.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from ..core.errors import InputError
from ..core.jsonl import parse_model, read_json_file

Count = StrictInt


class CoverageRow(BaseModel):
    """One source's entry of coverage.json."""

    model_config = ConfigDict(extra="allow")

    source: StrictStr = Field(min_length=1)
    mirrored: StrictBool
    upstream_items: Count = Field(ge=0)
    covered: Count = Field(ge=0)
    not_covered: dict[StrictStr, Count] = Field(default_factory=dict)
    normalised: dict[StrictStr, Count] = Field(default_factory=dict)
    notes: list[StrictStr] = Field(default_factory=list)


def read_coverage(path: str | os.PathLike) -> list[dict[str, Any]]:
    """coverage.json as a list of dicts, each checked (:class:`CoverageRow`, counts adding up
    for mirrored sources). Reads only ``path``."""
    path = Path(path)
    rows = read_json_file(path, list, "a JSON list of per-source coverage objects")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InputError(
                path,
                None,
                f"[{i}]",
                f"expected an object, got {type(row).__name__}",
                rule="COVERAGE",
            )
        c = parse_model(CoverageRow, row, path, None)
        if any(v < 0 for v in (*c.not_covered.values(), *c.normalised.values())):
            raise InputError(
                path, None, f"[{i}] ({c.source})", "counts must be >= 0", rule="COVERAGE"
            )
        if c.mirrored and c.upstream_items != c.covered + sum(c.not_covered.values()):
            raise InputError(
                path,
                None,
                f"[{i}] ({c.source})",
                f"upstream_items {c.upstream_items} != covered {c.covered} + "
                f"not covered {sum(c.not_covered.values())}",
                rule="COVERAGE",
            )
    return rows
