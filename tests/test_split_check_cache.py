"""The check of the sets before a run is remembered across processes
(membench.run.split.check_sets_before_run): a pass is stored under cache_dir("validate") by
the inputs' fingerprint and the code, a change to a set file checks again, a failure is
never stored."""

from __future__ import annotations

import pytest

from membench.core.errors import MembenchError
from membench.run import split
from membench.sets import validate
from membench.sets.synth import generate


def test_a_pass_is_read_back_and_a_changed_set_is_checked_again(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    generate(tmp_path / "a", atoms=400, queries=600, seed=7)
    sets, manifest, corpus = (
        tmp_path / "a" / "sets",
        tmp_path / "a" / "manifest.jsonl",
        tmp_path / "a" / "corpus",
    )
    calls = []
    real = validate.validate_sets

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(validate, "validate_sets", counted)
    monkeypatch.setattr(split, "_PASSED", set())
    split.check_sets_before_run(sets, corpus, manifest)
    assert calls == [1] and len(list((tmp_path / "cache" / "validate").glob("*.passed"))) == 1
    monkeypatch.setattr(split, "_PASSED", set())  # as a new process: read from the marker
    split.check_sets_before_run(sets, corpus, manifest)
    assert calls == [1]
    # membench validate's pass (remember_pass) is the same marker
    for f in (tmp_path / "cache" / "validate").glob("*.passed"):
        f.unlink()
    monkeypatch.setattr(split, "_PASSED", set())
    split.remember_pass(sets, corpus, manifest)
    monkeypatch.setattr(split, "_PASSED", set())
    split.check_sets_before_run(sets, corpus, manifest)
    assert calls == [1]
    # a set file changed: checked again, and a failure is not remembered
    recs = (sets / "conversation.jsonl").read_text().splitlines()
    (sets / "conversation.jsonl").write_text("\n".join([recs[0], recs[0], *recs[1:]]) + "\n")
    for _ in range(2):
        monkeypatch.setattr(split, "_PASSED", set())
        with pytest.raises(MembenchError):
            split.check_sets_before_run(sets, corpus, manifest)
    assert calls == [1, 1, 1]
    assert len(list((tmp_path / "cache" / "validate").glob("*.passed"))) == 1
