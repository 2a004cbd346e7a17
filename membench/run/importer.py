"""``membench import-run``: score a system that is not written in Python.

An external system hands in two files and no code:

* an **atoms file** (JSON lines, the RUN_DIR ``atoms.jsonl`` contract: ``atom_id, source_id,
  modality, holder, observed_at, extent``), checked against the split's items and the extent
  caps exactly as the runner checks a Python system's atoms;
* a **TREC run** (``qid Q0 atom_id rank score tag``), ranked by membench's tie-breaking rule
  (score descending, then the rank column, then line order; see
  :data:`membench.run.protocol.TIE_BREAKING`), at most 1000 hits per query kept. Its qids are
  the opaque ones of ``membench topics`` (:func:`membench.sets.topics.topic_id`) or the sets'
  query ids; a cartridge file may use either too.

Its cartridges come from either ``--cartridge FILE`` (JSON lines ``{query_id, cartridge: [...]}``)
or an explicit ``--cartridge-top K`` policy (the top K hits, recorded in meta.json); there is no
default, because an empty cartridge would score a perfect false-recall rate by abstaining
everywhere. Latency is not measured for imported runs (``latency_ms`` is null and the latency
metrics show n = 0).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.errors import InputError, MembenchError
from ..core.jsonl import dumps, iter_json_lines, sha256_file
from ..core.paths import MANIFEST_PATH
from ..modalities import EXTENT_CAPS
from ..sets.build import set_digests
from ..sets.topics import topic_id
from .files import read_atoms, trec_fields
from .protocol import MAX_DEPTH, order_hits
from .runner import check_atoms, code_revision, load_split, log_test_access


def read_trec_lines(path: Path):
    """``(line, qid, docid, rank, score)`` per line of a TREC run; a malformed line is an
    :class:`InputError` naming it. (Scoring a TREC file at scale without this Python loop is
    :func:`membench.metrics.read_trec_run`'s job; an import is small and needs the ids.)"""
    for no, parts in trec_fields(path, "qid Q0 docid rank score tag"):
        try:
            rank, score = int(parts[3]), float(parts[4])
        except ValueError:
            raise InputError(path, no, "rank/score", "rank must be an integer and score a "
                             "number", rule="TREC") from None
        if score != score or score in (float("inf"), float("-inf")):
            raise InputError(path, no, "score", "must be finite", rule="TREC")
        yield no, parts[0], parts[2], rank, score


def import_trec(run_file: Path, atoms_file: Path, sets_dir: Path, split: str, out: Path,
                system: str, cartridge_file: Path | None = None,
                cartridge_top: int | None = None, final: bool = False) -> dict:
    if split == "test" and not final:
        raise MembenchError("the test split is frozen: pass --final for a final, logged run")
    if (cartridge_file is None) == (cartridge_top is None):
        raise MembenchError("give exactly one of --cartridge FILE and --cartridge-top K")
    data = load_split(sets_dir, split)
    atoms = read_atoms(atoms_file)
    check_atoms(system, atoms, data.items)
    known = {a.atom_id for a in atoms}
    qids = {r.query_id for r in data.records}
    alias = {topic_id(q): q for q in qids}          # the topics' opaque ids
    alias.update({q: q for q in qids})

    lists: dict[str, list[tuple[str, float, int]]] = {}
    for no, qid, doc, rank, score in read_trec_lines(run_file):
        if qid not in alias:
            raise InputError(run_file, no, "qid", f"{qid!r} is not a {split} query (nor a "
                             "topic id of one)", rule="TREC")
        qid = alias[qid]
        if doc not in known:
            raise InputError(run_file, no, "docid", f"{doc!r} is not in {atoms_file}", rule="TREC")
        lists.setdefault(qid, []).append((doc, score, rank))

    carts: dict[str, list[str]] = {}
    if cartridge_file is not None:
        for no, obj in iter_json_lines(cartridge_file):
            qid, cart = obj.get("query_id", obj.get("qid")), obj.get("cartridge")
            if qid not in alias:
                raise InputError(cartridge_file, no, "query_id", f"{qid!r} is not a {split} query",
                                 rule="CARTRIDGE")
            qid = alias[qid]
            if not isinstance(cart, list) or any(a not in known for a in cart):
                raise InputError(cartridge_file, no, "cartridge",
                                 "must be a list of atom ids from the atoms file", rule="CARTRIDGE")
            carts[qid] = cart

    out.mkdir(parents=True, exist_ok=True)
    (out / "atoms.jsonl").write_text("".join(dumps(a.row()) + "\n" for a in atoms))
    with open(out / "run.jsonl", "w", encoding="utf-8") as f:
        for r in data.records:
            # score descending, then the rank column, then line order (stable sorts)
            rows = sorted(lists.get(r.query_id, []), key=lambda t: t[2])
            score: dict[str, float] = {}
            for d, s, _ in rows:  # a repeated atom ranks at its best score (order_hits)
                score[d] = max(s, score.get(d, s))
            hits = [[d, score[d]] for d in order_hits([(d, s) for d, s, _ in rows])][:MAX_DEPTH]
            cart = carts.get(r.query_id, []) if cartridge_file else [d for d, _ in hits[:cartridge_top]]
            f.write(dumps({"query_id": r.query_id, "hits": hits, "cartridge": cart,
                           "latency_ms": None}) + "\n")
    meta = {
        "system": system, "config": {"imported_from": str(run_file), "atoms": str(atoms_file),
                                     "cartridge": str(cartridge_file) if cartridge_file
                                     else f"top {cartridge_top} hits"},
        "split": split, "modalities": None, "limit": None, "final": final,
        "queries": len(data.records), "items": len(data.items), "atoms": len(atoms),
        "sets_dir": str(Path(sets_dir).resolve()), "set_sha256": set_digests(sets_dir),
        "manifest_sha256": sha256_file(MANIFEST_PATH) if MANIFEST_PATH.exists() else None,
        "code_revision": code_revision(), "extent_caps": EXTENT_CAPS, "max_depth": MAX_DEPTH,
        "run_sha256": sha256_file(run_file), "atoms_sha256": sha256_file(atoms_file),
        "latency": "not measured (imported run)", "status": "complete", "sees_gold": False,
    }
    if final:
        log_test_access(system, out, meta["code_revision"])
    (out / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta
