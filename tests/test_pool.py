"""membench pool (membench.analysis.pool) and the sub-corpus folder (membench.sets.subcorpus):
RRF by hand, what a sub-corpus always keeps, the share per holder, byte-for-byte determinism,
refusals, and that runs and validate treat a sub-corpus as ordinary sets."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import minisets
import pytest

from membench.analysis.pool import (
    PoolParams,
    PoolRun,
    choose_items,
    fuse,
    pool,
    priorities,
    target_size,
)
from membench.core.errors import InputError, MembenchError
from membench.core.jsonl import dumps, sha256_file
from membench.run.runner import run_system
from membench.sets.build import SET_FILES, split_holders, write_lock
from membench.sets.subcorpus import (
    MANIFEST,
    OWN_LOCK,
    Parent,
    Required,
    check_keep,
    lock_for,
    required_items,
)
from membench.sets.validate import validate_sets
from membench.systems import make_system

T1 = "2024-01-02T00:00:00+00:00"
T2 = "2024-01-03T00:00:00+00:00"
HOLDERS = [f"code/h{k}" for k in range(4)]
N_ITEMS = 10


# ------------------------------------------------------------------------------ RRF by hand


def test_fuse_by_hand_with_ties():
    # run A: x y z ; run B: y x w ; rrf_k = 1 so the numbers are easy
    fused = fuse([["x", "y", "z"], ["y", "x", "w"]], depth=3, rrf_k=1)
    got = {k: round(v, 6) for k, v in fused}
    assert got == {
        "x": round(1 / 2 + 1 / 3, 6),
        "y": round(1 / 3 + 1 / 2, 6),
        "z": round(1 / 4, 6),
        "w": round(1 / 4, 6),
    }
    # x and y tie on score and best rank (1): item id decides; z and w tie too
    assert [k for k, _ in fused] == ["x", "y", "w", "z"]


def test_fuse_cuts_each_run_at_depth():
    fused = dict(fuse([["a", "b", "c"], ["c", "b", "a"]], depth=1, rrf_k=60))
    assert set(fused) == {"a", "c"} and fused["a"] == pytest.approx(1 / 61)


def test_priority_is_the_best_position_in_any_query():
    fused = {"q1": [("a", 0.5), ("b", 0.4), ("c", 0.1)], "q2": [("c", 0.9), ("d", 0.2)]}
    p = priorities(fused)
    assert p == {"a": (1, -0.5), "c": (1, -0.9), "b": (2, -0.4), "d": (2, -0.2)}
    # at the same position the higher fused score comes first: c (0.9) before a (0.5), then
    # b (0.4) before d (0.2)
    assert sorted(p, key=lambda i: p[i]) == ["c", "a", "b", "d"]


def test_target_size():
    assert target_size(0.3, 10, 0) == 3  # 0.3 * 10 is 3, not 4
    assert target_size(0.31, 10, 0) == 4
    assert target_size(0.3, 10, 5) == 5  # never below the required items
    assert target_size(1.0, 10, 0) == 10


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, float("nan"), True, "0.5"])
def test_share_is_range_checked(bad):
    with pytest.raises(MembenchError, match="--share"):
        PoolParams(share=bad)


# ------------------------------------------------------------------------------ a world


def _split() -> dict[str, str]:
    return split_holders({"codesrc": HOLDERS})


def _items() -> list[dict]:
    out = [it for it in minisets.items() if it["modality"] != "code"]
    for h in HOLDERS:
        for i in range(N_ITEMS):
            out.append(
                {
                    "source_id": f"codesrc:{h[-2:]}-{i:02d}",
                    "modality": "code",
                    "holder": h,
                    "observed_at": T1,
                    "content": f"def f{i}(): pass",
                    "meta": {"lines": 20, "upstream_path": f"src/f{i}.py"},
                }
            )
    return sorted(out, key=lambda it: it["source_id"])


def _gold(h: str, i: int) -> dict:
    return {"source_id": f"codesrc:{h[-2:]}-{i:02d}", "region": {"path": f"src/f{i}.py", "line": 3}}


def _code_records() -> list[dict]:
    split = _split()
    recs = []
    n = 0

    def rec(h, gold, **over):
        nonlocal n
        n += 1
        r = {
            "query_id": f"codesrc:q{n:03d}",
            "modality": "code",
            "question": f"how does function number {n} work?",
            "answer": None if not gold else "x",
            "answer_format": "none" if not gold else "str",
            "gold": gold,
            "scope": {"holder": h, "session": None, "scenario": "s"},
            "as_of": T2,
            "unanswerable": not gold,
            "origin": {
                "dataset": minisets.DATASET,
                "revision": minisets.REV,
                "item": f"row:{n}",
                "license": "L",
            },
            "split": split[h],
        }
        r.update(over)
        return r

    for k, h in enumerate(HOLDERS):
        recs.append(rec(h, [_gold(h, 0)]))
        recs.append(rec(h, [_gold(h, 1)], judgments={"any_annotator": [_gold(h, 1), _gold(h, 2)]}))
        origin = {
            "dataset": minisets.DATASET,
            "revision": minisets.REV,
            "item": "row:d",
            "license": "L",
            "derived_from": f"codesrc:orig{k}",
            "derivation": "temporal",
            "distractor": [_gold(h, 3)],
        }
        recs.append(rec(h, [], origin=origin))
    # a native unanswerable whose upstream distractor names no item: its holder is kept whole
    h = next(x for x in HOLDERS if split[x] == "dev")
    origin = {
        "dataset": minisets.DATASET,
        "revision": minisets.REV,
        "item": "row:raw",
        "license": "L",
        "distractor": ["D1:3"],
    }
    recs.append(rec(h, [], origin=origin))
    return recs


def _sets() -> dict[str, list[dict]]:
    sets = {f"{m}.jsonl": minisets.records(m) for m in minisets.REGIONS if m != "code"}
    sets["code.jsonl"] = _code_records()
    sets["items.jsonl"] = _items()
    return sets


WHOLE = next(h for h in HOLDERS if _split()[h] == "dev")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("pool-world")
    w = minisets.write(root / "sets", _sets())
    runs = []
    for seed in (0, 1, 2):
        out = root / f"random-{seed}"
        run_system(
            make_system("random", {"seed": seed}),
            w["sets"],
            "dev",
            out,
            root,
            modalities=["code"],
            check_sets=False,
        )
        runs.append(out)
    return {**w, "root": root, "runs": runs}


def _read(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_world_is_valid(world):
    errors = [
        f
        for f in validate_sets(world["sets"], world["manifest"], lock=world["lock"])
        if f.level == "error"
    ]
    assert not errors, errors


def test_same_runs_and_seed_give_the_same_bytes_in_any_order(world, tmp_path):
    a = pool(world["runs"], world["sets"], tmp_path / "a", PoolParams(share=0.5, seed=3))
    b = pool(
        list(reversed(world["runs"])), world["sets"], tmp_path / "b", PoolParams(share=0.5, seed=3)
    )
    assert _read(a.written.out) == _read(b.written.out)
    again = pool(world["runs"], world["sets"], tmp_path / "a", PoolParams(share=0.5, seed=3))
    assert again.written.unchanged
    for name in ("rrf", "random"):
        x = pool(
            world["runs"],
            world["sets"],
            tmp_path / f"{name}-x",
            PoolParams(share=0.4, seed=7, random=name == "random"),
        )
        y = pool(
            world["runs"],
            world["sets"],
            tmp_path / f"{name}-y",
            PoolParams(share=0.4, seed=7, random=name == "random"),
        )
        assert _read(x.written.out) == _read(y.written.out)


def _kept(out: Path) -> set[str]:
    lines = (out / "items.jsonl").read_text().splitlines()
    return {json.loads(line)["source_id"] for line in lines}


@pytest.mark.parametrize("random", [False, True])
@pytest.mark.parametrize("share", [0.1, 0.5, 0.8])
def test_keeps_every_judged_and_distractor_item_and_the_share(world, tmp_path, share, random):
    res = pool(
        world["runs"], world["sets"], tmp_path / "p", PoolParams(share=share, seed=1, random=random)
    )
    kept = _kept(tmp_path / "p")
    split = _split()
    for r in _code_records():
        named = {g["source_id"] for g in r["gold"]}
        named |= {g["source_id"] for gs in (r.get("judgments") or {}).values() for g in gs}
        named |= {
            d["source_id"] for d in r["origin"].get("distractor") or [] if isinstance(d, dict)
        }
        assert named <= kept, r["query_id"]
    ids = {h: {f"codesrc:{h[-2:]}-{i:02d}" for i in range(N_ITEMS)} for h in HOLDERS}
    for h in HOLDERS:
        mine = kept & ids[h]
        if split[h] == "test" or h == WHOLE:  # not pooled / kept whole
            assert mine == ids[h]
            continue
        required = 4  # gold 0, 1, judged 2, distractor 3
        assert len(mine) == max(required, -(-round(share * N_ITEMS, 9) // 1)), (h, mine)
        assert res.holders[h]["kept"] == len(mine)
    others = {it["source_id"] for it in _items() if it["modality"] != "code"}
    assert others <= kept  # other modalities kept whole
    manifest = json.loads((tmp_path / "p" / MANIFEST).read_text())
    assert manifest["method"] == ("random" if random else "rrf")
    assert manifest["required"]["holders_kept_whole"] == {WHOLE: 1}


def test_records_are_the_parents_bytes_and_items_a_subset_of_its_lines(world, tmp_path):
    pool(world["runs"], world["sets"], tmp_path / "p", PoolParams(share=0.5))
    for m in minisets.REGIONS:
        assert (tmp_path / "p" / f"{m}.jsonl").read_bytes() == (
            world["sets"] / f"{m}.jsonl"
        ).read_bytes()
    parent = (world["sets"] / "items.jsonl").read_text().splitlines()
    sub = (tmp_path / "p" / "items.jsonl").read_text().splitlines()
    assert set(sub) < set(parent) and sub == [x for x in parent if x in set(sub)]
    lock = json.loads((tmp_path / "p" / OWN_LOCK).read_text())["files"]
    assert lock == {f: sha256_file(tmp_path / "p" / f) for f in SET_FILES}


def test_rrf_prefers_what_the_runs_rank_first(world, tmp_path):
    """With one run, the kept non-required items of a holder are the ones that run puts at
    the best position of any query of that holder."""
    one = [world["runs"][0]]
    res = pool(one, world["sets"], tmp_path / "p", PoolParams(share=0.6, depth=100))
    parent = Parent.read(world["sets"])
    req = required_items(parent).items
    from membench.analysis.pool import read_input

    inp = read_input(one, world["sets"])
    ranks: dict[str, int] = {}
    for q, items in inp.runs[0].items_by_query.items():
        for pos, it in enumerate(items, 1):
            ranks[it] = min(ranks.get(it, pos), pos)
    kept = _kept(tmp_path / "p")
    for h, c in res.holders.items():
        if c["kept_whole"]:
            continue
        mine = [f"codesrc:{h[-2:]}-{i:02d}" for i in range(N_ITEMS)]
        extra = [i for i in mine if i in kept and i not in req]
        left = [i for i in mine if i not in kept]
        assert c["filled_at_random"] == 0 and len(extra) == c["from_pool"]
        assert max(ranks[i] for i in extra) <= min(ranks.get(i, 10**9) for i in left)


def test_random_has_the_rrf_size_and_depends_on_the_seed(world, tmp_path):
    r = pool(world["runs"], world["sets"], tmp_path / "r", PoolParams(share=0.6))
    a = pool(
        world["runs"], world["sets"], tmp_path / "a", PoolParams(share=0.6, seed=1, random=True)
    )
    seeds = [
        pool(
            world["runs"],
            world["sets"],
            tmp_path / f"s{k}",
            PoolParams(share=0.6, seed=k, random=True),
        )
        for k in range(6)
    ]
    for h in r.holders:
        assert r.holders[h]["kept"] == a.holders[h]["kept"]
    assert len({frozenset(_kept(s.written.out)) for s in seeds}) > 1


def test_check_keep_refuses_what_would_break_a_rule(world):
    parent = Parent.read(world["sets"])
    req = required_items(parent)
    everything = set(parent.item_lines)
    with pytest.raises(MembenchError, match="gold, judgments or distractors"):
        check_keep(parent, everything - {next(iter(req.items))})
    with pytest.raises(MembenchError, match="kept whole"):
        check_keep(parent, everything - {f"codesrc:{WHOLE[-2:]}-09"})
    # whatever the required items, a holder must keep one item (splits are drawn over them)
    h = HOLDERS[0]
    none = Required(set(), {}, {})
    with pytest.raises(MembenchError, match="own no item"):
        check_keep(parent, {i for i in everything if not i.startswith(f"codesrc:{h[-2:]}-")}, none)
    with pytest.raises(MembenchError, match="not items"):
        check_keep(parent, everything | {"codesrc:nope"})


def test_a_sub_corpus_passes_validate_with_its_own_lock(world, tmp_path):
    pool(world["runs"], world["sets"], tmp_path / "p", PoolParams(share=0.5))
    sub = tmp_path / "p"
    assert lock_for(sub) == sub / OWN_LOCK
    assert lock_for(world["sets"]) != world["sets"] / OWN_LOCK
    errors = [
        f for f in validate_sets(sub, world["manifest"], lock=lock_for(sub)) if f.level == "error"
    ]
    assert not errors, errors
    # checked against the build's lock, its items drift (it is not the build)
    drift = [
        f
        for f in validate_sets(sub, world["manifest"], lock=world["lock"])
        if f.rule == "DIGEST_DRIFT"
    ]
    assert [Path(f.file).name for f in drift] == ["items.jsonl"]
    # a sub-corpus edited after it was written drifts from its own lock
    p = sub / "items.jsonl"
    p.write_text("".join(p.read_text().splitlines(keepends=True)[:-1]))
    assert any(
        f.rule == "DIGEST_DRIFT" for f in validate_sets(sub, world["manifest"], lock=lock_for(sub))
    )


def test_a_run_on_a_sub_corpus_is_an_ordinary_run(world, tmp_path):
    from membench.metrics.rundir import RunDir

    pool(world["runs"], world["sets"], tmp_path / "p", PoolParams(share=0.5))
    out = tmp_path / "run"
    meta = run_system(
        make_system("random", {"seed": 5}),
        tmp_path / "p",
        "dev",
        out,
        world["root"],
        modalities=["code"],
        manifest=world["manifest"],
        lock=lock_for(tmp_path / "p"),
        check_sets=False,
    )
    full = RunDir.open(world["runs"][0])
    assert meta["queries"] == full.asked and meta["status"] == "complete"
    rd = RunDir.open(out)
    assert len(rd.scores()) == meta["queries"]


def test_out_is_refused_when_it_holds_something_else(world, tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not a sub-corpus"):
        pool(world["runs"], world["sets"], tmp_path / "x", PoolParams(share=0.5))
    pool(world["runs"], world["sets"], tmp_path / "y", PoolParams(share=0.5))
    with pytest.raises(InputError, match="--force"):
        pool(world["runs"], world["sets"], tmp_path / "y", PoolParams(share=0.7))
    pool(world["runs"], world["sets"], tmp_path / "y", PoolParams(share=0.7), force=True)
    assert json.loads((tmp_path / "y" / MANIFEST).read_text())["share"] == 0.7
    assert (tmp_path / "x" / "notes.txt").read_text() == "mine"


# ------------------------------------------------------------------------------ refusals


def test_refuses_runs_on_other_set_files(world, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(world["sets"], other)
    p = other / "code.jsonl"
    rows = p.read_text().splitlines()
    row = json.loads(rows[0])
    row["question"] += " (edited)"
    p.write_text("\n".join([dumps(row), *rows[1:]]) + "\n")
    with pytest.raises(InputError) as e:
        pool(world["runs"], other, tmp_path / "p", PoolParams(share=0.5))
    assert e.value.rule == "SET_DRIFT"


def _copy_run(src: Path, dst: Path, **meta) -> Path:
    shutil.copytree(src, dst)
    m = json.loads((dst / "meta.json").read_text())
    m.update(meta)
    (dst / "meta.json").write_text(json.dumps(m))
    return dst


def test_refuses_a_partial_run(world, tmp_path):
    bad = _copy_run(world["runs"][0], tmp_path / "partial", status="running")
    with pytest.raises(InputError) as e:
        pool([world["runs"][1], bad], world["sets"], tmp_path / "p", PoolParams(share=0.5))
    assert e.value.rule == "INCOMPLETE_RUN"
    cut = _copy_run(world["runs"][0], tmp_path / "cut")
    lines = (cut / "run.jsonl").read_text().splitlines(keepends=True)
    (cut / "run.jsonl").write_text("".join(lines[:-1]))
    with pytest.raises(InputError) as e:
        pool([cut], world["sets"], tmp_path / "p2", PoolParams(share=0.5))
    assert e.value.rule == "INCOMPLETE_RUN"


def test_refuses_a_run_that_saw_the_gold(world, tmp_path):
    out = tmp_path / "oracle"
    run_system(
        make_system("oracle"),
        world["sets"],
        "dev",
        out,
        world["root"],
        modalities=["code"],
        check_sets=False,
    )
    with pytest.raises(InputError) as e:
        pool([world["runs"][0], out], world["sets"], tmp_path / "p", PoolParams(share=0.5))
    assert e.value.rule == "SEES_GOLD"


def test_refuses_a_limit_run_and_runs_over_other_queries(world, tmp_path):
    lim = tmp_path / "limit"
    run_system(
        make_system("random"),
        world["sets"],
        "dev",
        lim,
        world["root"],
        modalities=["code"],
        limit=2,
        check_sets=False,
    )
    with pytest.raises(InputError, match="--limit"):
        pool([lim], world["sets"], tmp_path / "p", PoolParams(share=0.5))
    wide = tmp_path / "wide"
    run_system(
        make_system("random"),
        world["sets"],
        "dev",
        wide,
        world["root"],
        modalities=["code", "conversation"],
        check_sets=False,
    )
    with pytest.raises(InputError) as e:
        pool([world["runs"][0], wide], world["sets"], tmp_path / "p", PoolParams(share=0.5))
    assert e.value.rule == "RUN_MISMATCH"


def test_refuses_a_run_without_set_digests(world, tmp_path):
    bad = _copy_run(world["runs"][0], tmp_path / "nodigest", set_sha256={})
    with pytest.raises(InputError, match="no set sha256"):
        pool([bad], world["sets"], tmp_path / "p", PoolParams(share=0.5))


def test_choose_items_fills_at_random_when_the_pools_run_out(world):
    parent = Parent.read(world["sets"])
    req = required_items(parent)
    dev = [h for h in HOLDERS if _split()[h] == "dev" and h != WHOLE]
    h = dev[0]
    one = PoolRun("x", {}, {"q": [f"codesrc:{h[-2:]}-09"]})  # ranks one item only
    keep, holders, _ = choose_items(parent, req, PoolParams(share=0.8), "dev", ["code"], [one])
    c = holders[h]
    assert c["from_pool"] == 1 and c["filled_at_random"] == c["kept"] - c["required"] - 1
    assert f"codesrc:{h[-2:]}-09" in keep and c["kept"] == 8


# ------------------------------------------------------------------------------ the CLI


def test_cli_pool_then_run_and_validate_on_the_fixture_corpus(tmp_path):
    """On the fixture corpus (real adapters, real files): pool from a dev run, then
    `membench run --sets SUB` and `membench validate --sets SUB` pass with their default
    lock (the sub-corpus's own)."""
    from minicorpus import freeze, make_corpus, membench

    corpus = make_corpus(tmp_path)
    f = freeze(corpus, tmp_path)
    common = ["--corpus", str(corpus), "--manifest", str(f["manifest"])]
    membench(
        "run",
        "--system",
        "random",
        "--split",
        "dev",
        "--modality",
        "conversation",
        "--sets",
        str(f["sets"]),
        "--out",
        str(tmp_path / "r0"),
        "--lock",
        str(f["lock"]),
        "--quiet",
        *common,
    )
    sub = tmp_path / "sub"
    p = membench(
        "pool",
        "--runs",
        str(tmp_path / "r0"),
        "--sets",
        str(f["sets"]),
        "--share",
        "0.5",
        "--seed",
        "1",
        "--out",
        str(sub),
        "--quiet",
    )
    assert "wrote" in p.stdout and (sub / OWN_LOCK).is_file()
    membench("validate", "--sets", str(sub), *common, "--quiet")
    membench(
        "run",
        "--system",
        "random",
        "--split",
        "dev",
        "--modality",
        "conversation",
        "--sets",
        str(sub),
        "--out",
        str(tmp_path / "r1"),
        "--quiet",
        *common,
    )
    p = membench("metrics", str(tmp_path / "r1"), "--quiet")
    assert "recall@10" in p.stdout
    # every item of the fixture's dev conversations holds gold: the sub-corpus is the whole
    assert (sub / "items.jsonl").read_bytes() == (f["sets"] / "items.jsonl").read_bytes()
    bad = membench(
        "pool",
        "--runs",
        str(tmp_path / "r0"),
        "--sets",
        str(f["sets"]),
        "--share",
        "0",
        "--out",
        str(tmp_path / "z"),
        "--quiet",
        check=False,
    )
    assert bad.returncode == 2 and "--share" in bad.stderr and "Traceback" not in bad.stderr


def test_write_lock_format_is_the_builds(world, tmp_path):
    """The sub-corpus lock is read by the same reader as bench/sets.lock.json."""
    from membench.sets.build import read_lock

    pool(world["runs"], world["sets"], tmp_path / "p", PoolParams(share=0.5))
    ref = tmp_path / "ref.json"
    write_lock(ref, {f: sha256_file(tmp_path / "p" / f) for f in SET_FILES})
    assert read_lock(tmp_path / "p" / OWN_LOCK) == read_lock(ref)


def test_judged_shares_counts_what_every_sub_corpus_keeps(world):
    from membench.analysis.pool import judged_shares

    rows = {r["modality"]: r for r in judged_shares(world["sets"])}
    dev = [h for h in HOLDERS if _split()[h] == "dev"]
    code = rows["code"]
    # per dev holder 4 required items (gold 0, 1, judged 2, distractor 3), the whole-kept
    # holder all of its 10
    assert code["holders"] == len(dev) and code["items"] == N_ITEMS * len(dev)
    assert code["required"] == 4 * (len(dev) - 1) + N_ITEMS
    assert code["required_share"] == round(code["required"] / code["items"], 4)
