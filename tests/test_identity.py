"""What a run records of what ran (meta.json ``identity``), and cards by identity, never by
name: a user class called ``hybrid`` gets no reference card, and the leaderboard refuses it with
a line that says why; each leaderboard row says what ran and whether it was sealed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hostile_world import write_world

from membench.analysis.leaderboard import Refused, add_runs, format_leaderboard, leaderboard
from membench.run.runner import run_system
from membench.systems import make_system
from membench.systems.cards import card_for, load_card
from membench.systems.identity import identify, rerunnable

TESTS = Path(__file__).parent


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return write_world(tmp_path_factory.mktemp("w") / "w")


def _run(world, spec, out, config=None):
    return run_system(
        make_system(spec, config),
        world["sets"],
        "dev",
        out,
        world["corpus"],
        manifest=world["manifest"],
        lock=world["lock"],
    )


def test_a_class_named_like_a_reference_system_gets_no_reference_card(world, tmp_path, capsys):
    meta = _run(world, "namesakes:Hybrid", tmp_path / "h")
    assert meta["system"] == "hybrid"
    assert meta["card"] is None and "card_refused" not in meta
    ident = meta["identity"]
    assert ident["kind"] == "user module" and ident["class"] == "namesakes:Hybrid"
    assert ident["spec"] == "namesakes:Hybrid" and ident["args"] == {}
    src = (TESTS / "namesakes.py").read_bytes()
    h = hashlib.sha256(b"namesakes.py\0" + hashlib.sha256(src).digest()).hexdigest()
    assert ident["source_sha256"] == h and meta["sealed"] is False
    # the reference hybrid, by contrast, is membench's and gets the registry's card
    ref = make_system("hybrid")
    assert identify(ref)["kind"] == "reference"
    assert card_for(ref)[0] == load_card("hybrid")


def test_a_registry_card_on_a_user_class_is_refused(world, tmp_path, capsys):
    meta = _run(world, "namesakes:HybridCarded", tmp_path / "hc")
    assert meta["card"] is None
    assert meta["card_refused"].startswith(
        "card refused: it is named 'hybrid', the name of a card of membench's own registry"
    )
    assert "user module, not membench's hybrid" in meta["card_refused"]
    assert "membench: note: system hybrid: card refused" in capsys.readouterr().err


def test_the_leaderboard_refuses_both_and_says_what_ran(world, tmp_path):
    runs = {n: tmp_path / n for n in ("h", "hc", "mine")}
    _run(world, "namesakes:Hybrid", runs["h"])
    _run(world, "namesakes:HybridCarded", runs["hc"])
    _run(world, "namesakes:Mine", runs["mine"], {"top": 2})
    with pytest.raises(Refused) as e:
        add_runs([runs["h"], runs["hc"], runs["mine"]], tmp_path / "store", n_resamples=50)
    lines = e.value.lines
    assert len(lines) == 2
    assert f"{runs['h']}: refused: no model card: the system (user module) carries none" in lines[0]
    assert f"{runs['hc']}: refused: card refused: it is named 'hybrid'" in lines[1]
    assert not (tmp_path / "store").exists()
    add_runs([runs["mine"]], tmp_path / "store", n_resamples=50)
    lb = leaderboard(tmp_path / "store", n_resamples=50)
    w = lb.wide("<=1B", "gold")
    assert set(w["ran"]) == {"user module namesakes:Mine · not sealed"}
    assert set(w["verified"]) == {"not verified"}
    assert "[user module namesakes:Mine · not sealed; not verified]" in format_leaderboard(lb)


def test_a_meta_json_edited_to_claim_the_card_is_refused(world, tmp_path):
    out = tmp_path / "h"
    _run(world, "namesakes:Hybrid", out)
    meta = json.loads((out / "meta.json").read_text())
    meta["card"] = load_card("hybrid").record()
    (out / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(Refused) as e:
        add_runs([out], tmp_path / "store", n_resamples=50)
    assert "card refused: it is named 'hybrid'" in e.value.lines[0]
    del meta["identity"]
    (out / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(Refused) as e:
        add_runs([out], tmp_path / "store", n_resamples=50)
    assert "meta.json does not say what ran" in e.value.lines[0]


def test_identities_of_each_kind(world):
    assert identify(make_system("bm25"))["kind"] == "reference"
    assert identify(make_system("random"))["kind"] == "test double"
    assert identify(make_system("namesakes:Mine"))["kind"] == "user module"
    from namesakes import Mine

    made_here = identify(Mine())  # not made by name: its arguments are unknown
    assert made_here["spec"] is None and made_here["args"] is None
    assert "arguments are unknown" in rerunnable(made_here)
    assert rerunnable(identify(make_system("namesakes:Mine"))) is None
    assert "an HTTP service" in rerunnable({"kind": "HTTP service", "spec": "http://x:1"})
    assert "imported" in rerunnable({"kind": "imported"})
    absent = {
        "kind": "registered package",
        "spec": "x",
        "args": {},
        "class": "x:Y",
        "distribution": {"name": "no-such-distribution-here", "version": "1.0"},
    }
    assert rerunnable(absent) == "package no-such-distribution-here 1.0 is not installed"
    other = {**absent, "distribution": {"name": "numpy", "version": "0.0.1"}}
    assert rerunnable(other).startswith("package numpy 0.0.1 ran; ")


def test_report_pages_and_provenance_say_sealed_or_not(world, tmp_path):
    from membench.report.provenance import provenance
    from membench.report.summary import run_badge, summary_html

    meta = _run(world, "namesakes:Mine", tmp_path / "m")
    badge = run_badge(meta)
    assert 'data-sealed="no"' in badge and "in-process run (not sealed)" in badge
    assert "user module · namesakes:Mine" in badge
    sealed = run_badge(
        {"sealed": True, "identity": {"kind": "HTTP service", "spec": "http://<script>:1"}}
    )
    assert 'data-sealed="yes"' in sealed and "sealed run" in sealed
    assert "<script>" not in sealed and "&lt;script&gt;" in sealed
    assert badge in summary_html(None, "m", meta=meta)
    prov = provenance(tmp_path / "m")
    assert prov["sealed"] is False and prov["identity"]["kind"] == "user module"
