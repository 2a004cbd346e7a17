"""``items.jsonl`` read once per process where that is turned on
(membench.run.split.read_items with KEEP_ITEMS, as the test suite runs): the same items as a
plain read, items of its own for every caller, and a file written again is read again."""

from __future__ import annotations

import json
import shutil

from membench.contract.schema import SourceItem
from membench.core.jsonl import read_models
from membench.run import split


def test_kept_items_are_the_files_and_each_caller_gets_its_own(fixtures, tmp_path, monkeypatch):
    sets = tmp_path / "sets"
    shutil.copytree(fixtures / "metrics" / "run_small" / "sets", sets)
    p = sets / "items.jsonl"
    rows = [json.loads(line) for line in p.read_text().splitlines()]
    rows[0]["meta"] = {"speakers": [{"name": "carol"}], "session": "s1"}
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plain = read_models(p, SourceItem)

    monkeypatch.setattr(split, "KEEP_ITEMS", True)
    monkeypatch.setattr(split, "_KEPT", {})
    calls = []
    real = split.read_models
    monkeypatch.setattr(split, "read_models", lambda *a: calls.append(1) or real(*a))
    a = split.read_items(sets)
    b = split.read_items(sets)
    assert a == plain and b == plain and len(calls) == 1  # parsed once
    assert all(x is not y for x, y in zip(a, b))
    a[0].meta["speakers"][0]["name"] = "changed"  # one caller changes its items
    a[0].meta["speakers"].append({})
    a[0].holder = "someone/else"
    assert split.read_items(sets) == plain  # the others do not see it

    rows[0]["content"] = "y"  # the same size, written again
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    again = split.read_items(sets)
    assert again[0].content == "y" and len(calls) == 2


def test_off_it_keeps_nothing(fixtures, monkeypatch):
    monkeypatch.setattr(split, "KEEP_ITEMS", False)
    monkeypatch.setattr(split, "_KEPT", {})
    items = split.read_items(fixtures / "metrics" / "run_small" / "sets")
    assert items and split._KEPT == {}
