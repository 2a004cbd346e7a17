"""Synthetic sets at scale, shaped like the real dev sets, for growth curves (docs/ray.md).

``membench synth --out DIR --atoms N --queries Q [--seed S]`` (:func:`generate`) writes
``DIR/sets`` (the seven set files, ``coverage.json`` and a ``SYNTHETIC`` marker),
``DIR/manifest.jsonl`` and an empty ``DIR/corpus`` (every item is inline); it reads only
``bench/synth/stats.json``. The folder passes every hard rule of
:func:`membench.sets.validate.validate_sets` and ``membench run --sets DIR/sets --corpus
DIR/corpus --manifest DIR/manifest.jsonl --no-lock`` runs it (synthetic sets are made, not
built from the mirror, so they are not in the lock).

It holds conversation sessions (inline turns ``{speaker, text, turn}``) of synthetic holders
and conversation records asked of them, every shape drawn with a seeded ``numpy`` generator
from the real dev conversations' statistics: turns per session, characters per turn and per
question, sessions per holder, gaps between sessions, the delay to ``as_of``, the
unanswerable share and gold turns per answerable record (:func:`real_stats` re-makes
``stats.json`` from a built sets folder). ``atoms`` counts the reference chunker's windows
(:func:`atoms_of`), ``queries`` the dev records. docs/ray.md ("Growth curves") says how words,
unanswerable questions and test holders are made.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..core.atomic import atomic_write_json, atomic_write_text, open_regular, refuse_special
from ..core.errors import MembenchError
from ..core.jsonl import dumps
from ..core.paths import BENCH_DIR
from ..modalities import MODALITIES
from .build import split_holders

STATS_PATH = BENCH_DIR / "synth" / "stats.json"
SOURCE = "synth"
MODALITY = "conversation"  # the one modality the synthetic sets hold
REVISION = "0" * 40
VOCAB = 50_000
ZIPF_S = 1.0
FROM_GOLD = 0.6
EPOCH = datetime(2021, 1, 1, tzinfo=timezone.utc)
_SYLL = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]


def _ts(x: Any) -> datetime:
    return datetime.fromisoformat(str(x))


def real_stats(sets_dir: Path, source: str = "locomo") -> dict:
    """The shape statistics of a built sets folder's dev conversations of ``source`` (lists of
    observed values, sorted): what :func:`generate` draws from."""
    from ..contract.schema import SourceItem
    from ..core.jsonl import read_models
    from .select import select_records

    sets_dir = Path(sets_dir)
    items_all = read_models(sets_dir / "items.jsonl", SourceItem)
    by_source: dict[str, set[str]] = {}
    for it in items_all:
        by_source.setdefault(it.source_id.split(":", 1)[0], set()).add(it.holder)
    hsplit = split_holders({k: sorted(v) for k, v in by_source.items()})
    records, _ = select_records(sets_dir, "dev", [MODALITY], None)
    data = SimpleNamespace(
        records=[r for r in records if r.query_id.split(":", 1)[0] == source],
        items=[
            it
            for it in items_all
            if it.modality in (MODALITY,)
            and hsplit[it.holder] == "dev"
            and it.source_id.split(":", 1)[0] == source
        ],
    )
    by_id = {it.source_id: it for it in data.items}
    turns, chars, words = [], [], []
    sessions: dict[str, list[datetime]] = {}
    for it in data.items:
        tt = [t for t in it.content if isinstance(t, dict)]
        turns.append(len(tt))
        for t in tt:
            text = str(t.get("text") or "")
            chars.append(len(text))
            words.extend(len(w) for w in text.split())
        sessions.setdefault(it.holder, []).append(it.observed_at)
    gaps = [
        (b - a).total_seconds()
        for ts in sessions.values()
        for a, b in zip(sorted(ts), sorted(ts)[1:])
    ]
    delays, golds = [], []
    for r in data.records:
        if not r.unanswerable and r.gold:
            golds.append(len(r.gold))
            delays.append(
                (r.as_of - max(by_id[g.source_id].observed_at for g in r.gold)).total_seconds()
            )
    return {
        "from": "dev conversation records and items of the built sets (LoCoMo)",
        "turns_per_session": sorted(turns),
        "chars_per_turn": sorted(chars),
        "word_chars": sorted(words)[:: max(1, len(words) // 2000)],
        "chars_per_question": sorted(len(r.question) for r in data.records),
        "sessions_per_holder": sorted(len(v) for v in sessions.values()),
        "session_gap_seconds": sorted(gaps),
        "as_of_delay_seconds": sorted(delays),
        "gold_per_answerable": sorted(golds),
        "unanswerable_share": sum(r.unanswerable for r in data.records) / len(data.records),
        "records": len(data.records),
        "items": len(data.items),
    }


def _vocab(rng: np.random.Generator, word_chars: list[int]) -> list[str]:
    lens = rng.choice(np.array(word_chars), VOCAB)
    out, seen = [], set()
    for i in range(VOCAB):
        n = max(1, math.ceil(int(lens[i]) / 2))
        while True:
            w = "".join(_SYLL[j] for j in rng.integers(0, len(_SYLL), n))
            if w not in seen:
                break
            n += 1
        seen.add(w)
        out.append(w)
    return out


def atoms_of(turns: int, window: int = 3, stride: int = 2) -> int:
    """Windows the reference chunker makes of a session of ``turns`` turns (conversation
    defaults: 3 every 2, the last ending at the last turn)."""
    return 1 if turns <= window else math.ceil((turns - window) / stride) + 1


class _Draws:
    """The random draws of one synthetic build (one generator, drawn in a fixed order): words
    by Zipf rank over a made-up vocabulary, and values from the stats' distributions."""

    def __init__(self, rng: np.random.Generator, st: dict):
        self.rng, self.st = rng, st
        self.vocab = np.array(_vocab(rng, st["word_chars"]), dtype=object)
        ranks = np.arange(1, VOCAB + 1, dtype=np.float64)
        self.cdf = np.cumsum(ranks**-ZIPF_S)
        self.cdf /= self.cdf[-1]
        self.mean_word = float(np.mean(st["word_chars"])) + 1.0

    def words(self, n: int) -> np.ndarray:
        return self.vocab[np.searchsorted(self.cdf, self.rng.random(n))]

    def draw(self, key: str, n: int | None = None):
        return self.rng.choice(np.array(self.st[key]), n)

    def turn_texts(self, nt: int) -> list[str]:
        lens = np.maximum(1, np.rint(self.draw("chars_per_turn", nt) / self.mean_word)).astype(int)
        flat = self.words(int(lens.sum()))
        return [" ".join(p) for p in np.split(flat, np.cumsum(lens)[:-1])]


def generate(
    out: Path, atoms: int, queries: int, seed: int = 0, stats_path: Path = STATS_PATH
) -> dict:
    """Write ``out/sets`` and ``out/manifest.jsonl`` (see the module docstring); returns the
    counts (dev atoms as the reference chunker makes them, dev queries, holders, items)."""
    # Long: one holder's draws in the order the sets' fields are written (the RNG's order)
    if atoms < 1 or queries < 1:
        raise MembenchError("synth: --atoms and --queries must be >= 1")
    st = json.loads(Path(stats_path).read_text())
    rng = np.random.default_rng(seed)
    d = _Draws(rng, st)

    # dev holders until the atom count is reached; as many test holders (split_holders)
    dev_sessions: list[list[int]] = []
    made = 0
    while made < atoms:
        k = int(d.draw("sessions_per_holder"))
        ts = [int(t) for t in d.draw("turns_per_session", k)]
        dev_sessions.append(ts)
        made += sum(atoms_of(t) for t in ts)
    n_dev = len(dev_sessions)
    names = [f"{SOURCE}/h{i:07d}" for i in range(2 * n_dev)]
    split = split_holders({SOURCE: names})
    dev_names = [h for h in names if split[h] == "dev"]
    test_names = [h for h in names if split[h] == "test"]
    weights = np.array([len(s) for s in dev_sessions], dtype=np.float64)
    per_holder = rng.multinomial(queries, weights / weights.sum())

    sets = Path(out) / "sets"
    sets.mkdir(parents=True, exist_ok=True)
    (Path(out) / "corpus").mkdir(exist_ok=True)  # empty: every item is inline
    n_items = n_atoms = 0
    recs: list[str] = []
    tmp = open_regular(sets / "items.jsonl.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(tmp, "w", encoding="utf-8") as fi:
        for hi, (holder, ts) in enumerate(zip(dev_names, dev_sessions)):
            hn = holder.split("/", 1)[1]
            sess = _dev_sessions(fi, d, holder, hn, ts)
            n_items += len(ts)
            n_atoms += sum(atoms_of(nt) for nt in ts)
            phantom: dict[int, list[str]] = {}
            for qi in range(int(per_holder[hi])):
                recs.append(_dev_question(d, sess, phantom, holder, f"{SOURCE}:{hn}:q{qi}"))
        for ti, holder in enumerate(test_names):
            hn = holder.split("/", 1)[1]
            sid = f"{SOURCE}:{hn}:s0"
            t = EPOCH + timedelta(days=ti % 1000)
            texts = [" ".join(d.words(8)) for _ in range(3)]
            fi.write(
                dumps(
                    {
                        "source_id": sid,
                        "modality": MODALITY,
                        "holder": holder,
                        "observed_at": t.isoformat(),
                        "content": [
                            {"speaker": "AB"[j % 2], "text": x, "turn": j + 1}
                            for j, x in enumerate(texts)
                        ],
                        "meta": {"turns": 3, "date_time": "synthetic"},
                    }
                )
                + "\n"
            )
            recs.append(
                _record(
                    f"{SOURCE}:{hn}:q0",
                    holder,
                    " ".join(d.words(8)).capitalize() + "?",
                    [],
                    t + timedelta(days=1),
                    "test",
                )
            )
    refuse_special(sets / "items.jsonl")
    (sets / "items.jsonl.tmp").replace(sets / "items.jsonl")
    atomic_write_text(sets / "conversation.jsonl", "".join(recs))
    for m in MODALITIES:
        if m not in (MODALITY,):
            atomic_write_text(sets / f"{m}.jsonl", "")
    counts = {
        "dev_atoms": n_atoms,
        "dev_queries": int(per_holder.sum()),
        "dev_holders": n_dev,
        "dev_items": n_items,
        "test_holders": len(test_names),
        "seed": seed,
    }
    atomic_write_json(
        sets / "coverage.json",
        [
            {
                "source": SOURCE,
                "mirrored": False,
                "upstream_items": 0,
                "covered": 0,
                "notes": ["synthetic sets (membench synth): not built from the mirror"],
            }
        ],
        indent=1,
    )
    atomic_write_json(
        sets / "SYNTHETIC",
        {"generator": "membench synth", "stats": str(stats_path), **counts},
        indent=1,
    )
    atomic_write_text(
        Path(out) / "manifest.jsonl",
        json.dumps(
            {
                "source": SOURCE,
                "name": "synthetic (membench synth)",
                "modality": MODALITY,
                "url": "none",
                "revision": REVISION,
                "revisions": [REVISION],
                "retrieved_at": "never",
                "annotation_source": "generated",
                "license": "none",
                "files": [],
            }
        )
        + "\n",
    )
    return counts


def _dev_sessions(
    fi, d: _Draws, holder: str, hn: str, ts: list[int]
) -> list[tuple[str, datetime, list[str]]]:
    """A dev holder's sessions of ``ts`` turns each, written to the items file ``fi``: per
    session its source id, time and turns' texts."""
    t = EPOCH + timedelta(seconds=float(d.rng.random() * 3 * 365 * 86400))
    sess: list = []
    for si, nt in enumerate(ts):
        if si:
            t += timedelta(seconds=float(d.draw("session_gap_seconds")))
        t = t.replace(microsecond=0)
        texts = d.turn_texts(nt)
        sid = f"{SOURCE}:{hn}:s{si}"
        content = [{"speaker": "AB"[j % 2], "text": x, "turn": j + 1} for j, x in enumerate(texts)]
        fi.write(
            dumps(
                {
                    "source_id": sid,
                    "modality": MODALITY,
                    "holder": holder,
                    "observed_at": t.isoformat(),
                    "content": content,
                    "meta": {
                        "turns": nt,
                        "date_time": t.strftime("%-I:%M %p on %-d %B, %Y").lower(),
                    },
                }
            )
            + "\n"
        )
        sess.append((sid, t, texts))
    return sess


def _dev_question(
    d: _Draws,
    sess: list[tuple[str, datetime, list[str]]],
    phantom: dict[int, list[str]],
    holder: str,
    qid: str,
) -> str:
    """The record line of a dev question ``qid`` of ``holder`` over its sessions ``sess``
    (``phantom``: the unheld twins of its sessions made so far, by session index)."""
    unans = bool(d.rng.random() < d.st["unanswerable_share"])
    nw = max(2, round(float(d.draw("chars_per_question")) / d.mean_word))
    si = int(d.rng.integers(0, len(sess)))
    sid, obs, texts = sess[si]
    gold = []
    if unans:
        # the same draw as an answerable question, from the twin of this session
        # that no one holds (made once, so a holder's unanswerables share turns
        # as its answerables do)
        if si not in phantom:
            phantom[si] = d.turn_texts(len(texts))
        texts = phantom[si]
    ng = min(int(d.draw("gold_per_answerable")), len(texts))
    turns = sorted(int(x) for x in d.rng.choice(len(texts), ng, replace=False))
    if not unans:
        gold = [{"source_id": sid, "region": {"turn": j + 1}} for j in turns]
    pool = " ".join(texts[j] for j in turns).split()
    k = min(len(pool), max(1, round(FROM_GOLD * nw)))
    q = np.concatenate(
        [d.rng.choice(np.array(pool, dtype=object), k, replace=False), d.words(nw - k)]
    )
    d.rng.shuffle(q)
    as_of = obs + timedelta(seconds=float(d.draw("as_of_delay_seconds")))
    return _record(qid, holder, " ".join(q).capitalize() + "?", gold, as_of, "dev")


def _record(qid: str, holder: str, question: str, gold: list, as_of: datetime, split: str) -> str:
    return (
        dumps(
            {
                "query_id": qid,
                "modality": MODALITY,
                "question": question,
                "answer": "synthetic" if gold else None,
                "answer_format": "str" if gold else "none",
                "gold": gold,
                "scope": {"holder": holder, "scenario": "synthetic"},
                "as_of": as_of.replace(microsecond=0).isoformat(),
                "unanswerable": not gold,
                "origin": {
                    "dataset": "membench/synthetic",
                    "revision": REVISION,
                    "item": qid,
                    "license": "none",
                },
                "split": split,
            }
        )
        + "\n"
    )


__all__ = ["STATS_PATH", "atoms_of", "generate", "real_stats"]
