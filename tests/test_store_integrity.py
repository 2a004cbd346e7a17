"""A result store that checks itself: every entry carries the sha256 of its content, and its
mean figures are recomputed from its per-item values whenever the store is read. An edited
entry is refused (STORE_TAMPERED, naming its file), never shown as a result: the adversarial
pass showed an edited recall of 0.999 outside its own interval [0.000, 0.250]."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hostile_world import write_world

from membench.analysis.leaderboard import (
    ENTRIES,
    FORMAT,
    add_runs,
    entry_sha256,
    leaderboard,
    read_store,
    sealed,
    tampered,
)
from membench.cli import main
from membench.core.errors import InputError
from membench.run.runner import run_system
from membench.systems import make_system


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Two bm25 entries (another config each) over the mini world's conversation queries."""
    d = tmp_path_factory.mktemp("store")
    w = write_world(d / "w")
    runs = []
    for name, cfg in (("a", {}), ("b", {"max_atoms": 1})):
        run_system(
            make_system("bm25", cfg),
            w["sets"],
            "dev",
            d / name,
            w["corpus"],
            manifest=w["manifest"],
            lock=w["lock"],
            modalities=["conversation"],
        )
        runs.append(d / name)
    add_runs(runs, d / "s", n_resamples=200)
    return d / "s"


@pytest.fixture
def copy(store, tmp_path) -> Path:
    out = tmp_path / "s"
    shutil.copytree(store, out)
    return out


def _entry(out: Path) -> tuple[Path, dict]:
    p = sorted((out / ENTRIES).iterdir())[0]
    return p, json.loads(p.read_text())


def test_entries_carry_their_sha256_and_read_back(store):
    _, entries = read_store(store)
    assert len(entries) == 2
    for e in entries:
        assert e["sha256"] == entry_sha256(e) and tampered(e) is None
    lb = leaderboard(store, n_resamples=200)
    assert len(lb.entries) == 2


def test_an_edited_figure_is_refused_not_shown(copy, capsys):
    p, e = _entry(copy)
    f = e["figures"]["gold"]["all"]["false_recall_rate"]
    f["value"] = 0.999  # outside its own interval
    p.write_text(json.dumps(e, indent=1))
    with pytest.raises(InputError, match="STORE_TAMPERED") as err:
        read_store(copy)
    assert str(err.value).startswith(
        f"{p}: STORE_TAMPERED: tampered: its content does not hash to its sha256"
    )
    assert main(["--quiet", "leaderboard", "--out", str(copy), "--resamples", "200"]) == 2
    out, err_text = capsys.readouterr()
    assert "0.999" not in out and "STORE_TAMPERED" in err_text


def test_an_edit_that_recomputes_the_digest_is_caught_by_the_items(copy):
    """Whoever rewrites the digest too must also rewrite the per-item values: a figure that is
    not their mean is refused."""
    p, e = _entry(copy)
    e["figures"]["gold"]["all"]["recall@10"]["value"] = 0.999
    p.write_text(json.dumps(sealed(e), indent=1))
    with pytest.raises(
        InputError,
        match=r"STORE_TAMPERED.*figures\.gold\.all\.recall@10: "
        r"value 0\.999",
    ):
        read_store(copy)


def test_an_abstention_figure_is_checked_against_the_items_abstention_scores(copy):
    """The abstention-order statistics have no per-item values: they are recomputed from the
    items' abstention scores and cartridge states; an edit of either is caught."""
    p, e = _entry(copy)
    good = p.read_bytes()
    e["figures"]["gold"]["all"]["answerable_kept@fr0.10"]["value"] = 0.999
    p.write_text(json.dumps(sealed(e), indent=1))
    with pytest.raises(
        InputError,
        match=r"STORE_TAMPERED.*figures\.gold\.all\."
        r"answerable_kept@fr0\.10: value 0\.999",
    ):
        read_store(copy)
    p.write_bytes(good)
    assert read_store(copy)[1]  # the entry as written reads
    e = json.loads(good)
    ab = e["items"]["abstention"]
    # scores that put every answerable item above every unanswerable one: AUC 1, not 0.5
    ab["score"] = [1.0 if a else 0.0 for a in ab["answerable"]]
    assert e["figures"]["gold"]["all"]["abstention_auc"]["value"] != 1.0
    p.write_text(json.dumps(sealed(e), indent=1))
    with pytest.raises(InputError, match=r"STORE_TAMPERED.*abstention scores give"):
        read_store(copy)


@pytest.mark.parametrize(
    "edit",
    [
        lambda e: e.pop("sha256"),
        lambda e: e["items"]["abstention"]["score"].__setitem__(0, 123.0),
        lambda e: e["items"]["values"]["gold"]["recall@10"].__setitem__(0, 1.0),
        lambda e: e.__setitem__("system", "other"),
        lambda e: e["figures"]["gold"]["all"]["recall@10"].__setitem__("n", 99),
    ],
)
def test_any_edit_is_refused(copy, edit):
    p, e = _entry(copy)
    edit(e)
    p.write_text(json.dumps(e, indent=1))
    with pytest.raises(InputError, match="STORE_TAMPERED"):
        read_store(copy)


def test_identifiers_in_an_entry(copy):
    p, e = _entry(copy)
    e["items"]["query_id"][0] = "q\nx"
    p.write_text(json.dumps(sealed(e), indent=1))
    with pytest.raises(InputError, match=r"ID: field items\.query_id\[0\]"):
        read_store(copy)


def test_a_store_of_the_older_format_says_so(copy):
    st = json.loads((copy / "store.json").read_text())
    (copy / "store.json").write_text(json.dumps({**st, "format": 1}))
    with pytest.raises(InputError, match=f"field format: 1, this membench reads {FORMAT}"):
        read_store(copy)


@pytest.mark.parametrize("old", [4, 5])
def test_a_store_without_the_answer_layer_is_refused_and_says_what_it_lacks(copy, old):
    st = json.loads((copy / "store.json").read_text())
    (copy / "store.json").write_text(json.dumps({**st, "format": old}))
    with pytest.raises(
        InputError,
        match=f"field format: {old}, this membench reads {FORMAT} "
        r"\(re-make the store.*the answer layer and the context cost",
    ):
        read_store(copy)


def test_re_adding_after_deleting_the_tampered_entry_restores_it(store, copy, tmp_path):
    p, e = _entry(copy)
    good = p.read_bytes()
    e["figures"]["gold"]["all"]["recall@10"]["value"] = 0.5
    p.write_text(json.dumps(e))
    with pytest.raises(InputError, match="STORE_TAMPERED"):
        read_store(copy)
    p.unlink()
    run = Path(e["run_dir"])
    add_runs([run], copy, n_resamples=200)
    again = json.loads(p.read_text())
    assert tampered(again) is None
    assert again["figures"] == json.loads(good)["figures"]
