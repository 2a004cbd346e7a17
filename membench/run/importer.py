"""``membench import-run``: score a system that is not written in Python, from two files and no
code (docs/runs.md, "Run directory", says what an import covers and refuses, and why).

Start at :func:`import_trec`. Its inputs:

* an **atoms file** (the RUN_DIR ``atoms.jsonl`` contract: ``atom_id, source_id, modality,
  holder, observed_at, extent``; :func:`read_import_atoms`), checked against the split's items
  and the extent caps as the runner checks a Python system's atoms;
* a **TREC run** (``qid Q0 atom_id rank score tag``; :func:`read_trec_lines`), ranked by
  :data:`membench.contract.protocol.TIE_BREAKING`, at most 1000 hits per query kept; qids are
  the opaque ones of ``membench topics`` or the sets' query ids;
* cartridges from ``--cartridge FILE`` (``{query_id, cartridge, confidence?}`` lines, each query
  at most once: :func:`read_cartridges`) or ``--cartridge-top K`` (K >= 1,
  :func:`check_cartridge_top`); there is no default.

A file must cover the whole split, the part ``modalities`` / ``limit`` name, or be imported
``partial``; an atom twice for one query is refused naming both lines. ``identity`` is
``imported`` (the files' sha256), the ``card`` only a card file given
(:func:`membench.systems.cards.read_card`), never one of membench's registry names.
Latency is not measured (``latency_ms`` null). The sets are checked first, inputs bounded
(:mod:`membench.core.bounds`: ``import_atom_bytes``, ``import_atoms``, ``import_query_lines``).

Touches RUN_DIR only after every input is read and checked: an existing run there is refused
unless ``force``; under RUN_DIR's lock it writes each file atomically: ``meta.json`` with
``status: importing``, removes a stale ``metrics.json``, then atoms, run lines, final meta.json.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

from ..contract.protocol import MAX_DEPTH, order_hits
from ..core.atomic import atomic_write_json, atomic_write_text
from ..core.bounds import bound
from ..core.errors import InputError, MembenchError
from ..core.ids import id_problem
from ..core.jsonl import dumps, iter_json_lines, sha256_file
from ..core.lock import run_dir_lock
from ..core.paths import MANIFEST_PATH
from ..core.textfiles import check_readable_file
from ..modalities import EXTENT_CAPS
from ..sets.build import set_digests
from ..sets.select import check_modalities
from ..sets.topics import topic_id
from .files import (
    AtomRow,
    check_run_dir_files,
    parse_atom,
    repeated,
    trec_fields,
    trec_float,
    trec_int,
)
from .runner import (
    check_atoms,
    check_limit,
    check_sets_before_run,
    code_revision,
    load_split,
    log_test_access,
)


def read_trec_lines(path: Path):
    """``(line, qid, docid, rank, score)`` per line of a TREC run; a malformed line is an
    :class:`InputError` naming it. (Scoring a TREC file at scale without this Python loop is
    :func:`membench.trec.read_trec_run`'s job; an import is small and needs the ids.)"""
    for no, parts in trec_fields(path, "qid Q0 docid rank score tag"):
        hit = f"query {parts[0][:80]!r}, atom {parts[2][:80]!r}"
        try:
            rank = trec_int(parts[3])
        except ValueError:
            raise InputError(
                path, no, "rank", f"{hit}: rank {parts[3][:40]!r} is not an integer", rule="TREC"
            ) from None
        try:
            score = trec_float(parts[4])
        except ValueError:
            score = None
        if score is None or score != score or score in (float("inf"), float("-inf")):
            raise InputError(
                path,
                no,
                "score",
                f"{hit}: score {parts[4][:40]!r} is not a "
                "finite number (NaN and infinities cannot be ranked)",
                rule="TREC",
            ) from None
        yield no, parts[0], parts[2], rank, score


MAX_IMPORT_ATOM_BYTES = bound(
    "import_atom_bytes",
    256 << 20,
    "bytes",
    "the atoms file of `import-run --atoms` (its size, before a line is read)",
    "located error (TOO_LARGE) naming the file; not read",
    "membench.run.importer",
)
MAX_IMPORT_ATOMS = bound(
    "import_atoms",
    1_000_000,
    "atoms",
    "atoms in the atoms file of `import-run --atoms` (the imported system's memory)",
    "located error (TOO_LARGE) at the line past it; nothing written",
    "membench.run.importer",
)
MAX_IMPORT_QUERY_LINES = bound(
    "import_query_lines",
    10 * MAX_DEPTH,
    "lines",
    "lines of one "
    "query in the TREC file of `import-run --trec` (the first "
    "max_depth by rank are kept)",
    "located error (TOO_LARGE) at the line past it, naming the query; nothing written",
    "membench.run.importer",
)


def read_import_atoms(path: Path) -> list[AtomRow]:
    """The atoms file of an import (:func:`membench.run.files.parse_atom` per line), within
    its bounds: at most :data:`MAX_IMPORT_ATOM_BYTES` bytes (checked before reading) and
    :data:`MAX_IMPORT_ATOMS` atoms (checked at each line); past either, a located
    :class:`InputError` (rule TOO_LARGE)."""
    size = check_readable_file(path).stat().st_size
    if size > MAX_IMPORT_ATOM_BYTES:
        raise InputError(
            path,
            None,
            None,
            f"{size:,} bytes; an imported atoms file holds at "
            f"most {MAX_IMPORT_ATOM_BYTES:,} (bound import_atom_bytes): not read",
            rule="TOO_LARGE",
        )
    atoms: list[AtomRow] = []
    for no, obj in iter_json_lines(path):
        if len(atoms) >= MAX_IMPORT_ATOMS:
            raise InputError(
                path,
                no,
                None,
                f"more than {MAX_IMPORT_ATOMS:,} atoms (bound "
                "import_atoms): an imported system's memory is at most that",
                rule="TOO_LARGE",
            )
        atoms.append(parse_atom(obj, str(path), no))
    return atoms


RUN_FILES = ("meta.json", "atoms.jsonl", "run.jsonl", "metrics.json")
_CARTRIDGE_KEYS = (frozenset({"query_id", "cartridge"}), frozenset({"qid", "cartridge"}))
_CARTRIDGE_OPTIONAL = frozenset({"confidence"})


def read_cartridges(
    path: Path, qids: set[str] | dict[str, str], known: set[str], split: str = "dev"
) -> dict[str, list[str]]:
    """A cartridge file: JSON lines ``{query_id, cartridge: [atom_id, ...]}`` (or ``{qid, ...}``
    with a topics file's opaque qid) -> ``{query_id: cartridge}``. ``qids`` is the split's query
    ids, or a map from every accepted id (query id or topic qid) to its query id. A query of
    another split, an atom not in ``known``, an unknown field or a query named twice (the first
    line is named) is an :class:`InputError` at its line."""
    return read_cartridge_file(path, qids, known, split)[0]


def read_cartridge_file(
    path: Path, qids: set[str] | dict[str, str], known: set[str], split: str = "dev"
) -> tuple[dict[str, list[str]], dict[str, float]]:
    """:func:`read_cartridges`, and each line's optional ``confidence`` (a finite number;
    ``null`` or absent: none) as ``{query_id: confidence}``."""
    alias = qids if isinstance(qids, dict) else {q: q for q in qids}
    carts: dict[str, list[str]] = {}
    confidence: dict[str, float] = {}
    first: dict[str, int] = {}
    for no, obj in iter_json_lines(path):
        if set(obj) - _CARTRIDGE_OPTIONAL not in _CARTRIDGE_KEYS:
            raise InputError(
                path,
                no,
                None,
                "expected the fields "
                f"{' or '.join(str(sorted(k)) for k in _CARTRIDGE_KEYS)} (and an "
                f"optional confidence), got {sorted(obj)}"[:200],
                rule="CARTRIDGE",
            )
        conf = obj.get("confidence")
        if conf is not None and not (
            isinstance(conf, (int, float)) and not isinstance(conf, bool) and math.isfinite(conf)
        ):
            raise InputError(
                path,
                no,
                "confidence",
                f"must be a finite number or null, got {conf!r}"[:200],
                rule="CARTRIDGE",
            )
        qid, cart = obj.get("query_id", obj.get("qid")), obj["cartridge"]
        if not isinstance(qid, str) or qid not in alias:
            raise InputError(
                path, no, "query_id", f"{qid!r} is not a {split} query"[:200], rule="CARTRIDGE"
            )
        qid = alias[qid]
        if qid in first:
            raise InputError(
                path,
                no,
                "query_id",
                f"{qid!r} again (first at line {first[qid]}): one cartridge per query",
                rule="DUPLICATE_QUERY_ID",
            )
        if not isinstance(cart, list) or any(
            not isinstance(a, str) or a not in known for a in cart
        ):
            raise InputError(
                path,
                no,
                "cartridge",
                "must be a list of atom ids from the atoms file",
                rule="CARTRIDGE",
            )
        rep = repeated(cart)
        if rep:
            raise InputError(
                path,
                no,
                "cartridge",
                f"{qid}: atom {rep[0]!r} at positions "
                f"{rep[1] + 1} and {rep[2] + 1}: an atom is listed once per query",
                rule="DUPLICATE_HIT",
            )
        first[qid] = no
        carts[qid] = cart
        if conf is not None:
            confidence[qid] = float(conf)
    return carts, confidence


def check_cartridge_top(k: object) -> None:
    """``--cartridge-top K``: an integer >= 1 (0 is the empty policy the docs reject; a negative
    K would slice from the end)."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise MembenchError(
            f"--cartridge-top must be an integer >= 1, got {k!r} (a cartridge "
            "policy that abstains everywhere is not a policy)"
        )


def _selection_text(modalities, limit) -> str:
    parts = [f"--modality {m}" for m in modalities or []]
    if limit is not None:
        parts.append(f"--limit {limit}")
    return " ".join(parts) or "the whole split"


def _trec_lists(
    run_file: Path,
    atoms_file: Path,
    split: str,
    alias: dict[str, str],
    others: set[str],
    known: set[str],
    chosen: str,
) -> tuple[dict[str, list[tuple[str, float, int]]], int]:
    """The TREC file's hits per query (atom, score, rank; each query's in line order) and how
    many of its lines name a query by topic id; ``alias``: the selected queries by query and
    topic id, ``others``: the split's other queries (a line of one: an error naming the part
    ``chosen``), ``known``: the atom ids of the atoms file."""
    lists: dict[str, list[tuple[str, float, int]]] = {}
    first: dict[tuple[str, str], tuple[int, int]] = {}  # (query, atom) -> (rank, line)
    by_topic = 0
    for no, qid, doc, rank, score in read_trec_lines(run_file):
        if qid not in alias:
            if qid in others:
                raise InputError(
                    run_file,
                    no,
                    "qid",
                    f"{qid!r} is a {split} query outside the "
                    f"selected part ({chosen}): name the part the file covers, "
                    "as `membench topics` wrote it",
                    rule="TREC",
                )
            raise InputError(
                run_file,
                no,
                "qid",
                f"{qid!r} is not a {split} query (nor a topic id of one)",
                rule="TREC",
            )
        by_topic += alias[qid] != qid
        qid = alias[qid]
        if len(lists.get(qid, ())) >= MAX_IMPORT_QUERY_LINES:
            raise InputError(
                run_file,
                no,
                "qid",
                f"query {qid}: more than "
                f"{MAX_IMPORT_QUERY_LINES:,} lines (bound import_query_lines); "
                f"only the first {MAX_DEPTH:,} by rank are kept: cut the run at "
                "that depth",
                rule="TOO_LARGE",
            )
        if doc not in known:
            raise InputError(
                run_file,
                no,
                "docid",
                f"query {qid}: atom {doc!r} is not in {atoms_file}",
                rule="TREC",
            )
        seen = first.setdefault((qid, doc), (rank, no))
        if seen[1] != no:
            raise InputError(
                run_file,
                no,
                "docid",
                f"{qid}: atom {doc!r} at rank {rank} here "
                f"and at rank {seen[0]} on line {seen[1]}: an atom is listed once "
                "per query",
                rule="DUPLICATE_HIT",
            )
        lists.setdefault(qid, []).append((doc, score, rank))
    return lists, by_topic


def _run_lines(
    records: list,
    covered: set[str],
    lists: dict[str, list[tuple[str, float, int]]],
    carts: dict[str, list[str]] | None,
    confidence: dict[str, float],
    top: int | None,
) -> list[str]:
    """The run lines of the ``covered`` queries, in record order: the hits by score, the
    cartridge from ``carts`` (None: the first ``top`` hits)."""
    lines = []  # the run lines of the covered queries, in record order
    for r in records:
        if r.query_id not in covered:
            continue
        # score descending, then the rank column, then line order (stable sorts)
        rows = sorted(lists.get(r.query_id, []), key=lambda t: t[2])
        score = {d: s for d, s, _ in rows}  # (each atom once: checked above)
        hits = [[d, score[d]] for d in order_hits([(d, s) for d, s, _ in rows])][:MAX_DEPTH]
        cart = carts.get(r.query_id, []) if carts is not None else [d for d, _ in hits[:top]]
        line = {"query_id": r.query_id, "hits": hits, "cartridge": cart, "latency_ms": None}
        if r.query_id in confidence:
            line["confidence"] = confidence[r.query_id]
        lines.append(dumps(line) + "\n")
    return lines


def import_trec(
    run_file: Path,
    atoms_file: Path,
    sets_dir: Path,
    split: str,
    out: Path,
    system: str,
    cartridge_file: Path | None = None,
    cartridge_top: int | None = None,
    final: bool = False,
    force: bool = False,
    *,
    corpus_root: Path | None = None,
    manifest: Path = MANIFEST_PATH,
    lock: Path | None = None,
    check_sets: bool = True,
    modalities=None,
    limit: int | None = None,
    partial: bool = False,
    card: Path | None = None,
) -> dict:
    """Import a TREC run and an atoms file into RUN_DIR ``out`` (see the module docstring):
    the queries of ``split`` (``modalities``, ``limit`` per modality, as ``membench run``
    selects them), all covered unless ``partial``. Reads the inputs, the sets (checked against
    every hard rule unless ``check_sets`` is false, with ``corpus_root``, ``manifest`` and
    ``lock`` as ``membench run`` does); writes ``out`` (and, for a final run, the test-access
    log)."""
    # Long: twenty options, then import-run's checks in the order docs/runs.md gives its errors
    if split == "test" and not final:
        raise MembenchError("the test split is frozen: pass --final for a final, logged run")
    if (cartridge_file is None) == (cartridge_top is None):
        raise MembenchError("give exactly one of --cartridge FILE and --cartridge-top K")
    if cartridge_top is not None:
        check_cartridge_top(cartridge_top)
    why = id_problem(system)
    if why:
        raise MembenchError(f"--name: {why}")
    check_limit(limit)
    mods = check_modalities(modalities) if modalities else None
    the_card = _import_card(card)
    out = Path(out)
    _refuse_existing(out, force)
    if check_sets:
        check_sets_before_run(Path(sets_dir), corpus_root, Path(manifest), lock)
    data = load_split(sets_dir, split, mods, limit)
    whole = data if mods is None and limit is None else load_split(sets_dir, split)
    atoms = read_import_atoms(Path(atoms_file))
    check_atoms(system, atoms, whole.items)  # a memory of the split (any part of it)
    known = {a.atom_id for a in atoms}
    qids = {r.query_id for r in data.records}
    alias = {topic_id(q): q for q in qids}  # the topics' opaque ids
    alias.update({q: q for q in qids})
    rest = {r.query_id for r in whole.records} - qids  # the split's queries outside the part
    others = rest | {topic_id(q) for q in rest}
    chosen = _selection_text(mods, limit)

    lists, by_topic = _trec_lists(run_file, atoms_file, split, alias, others, known, chosen)

    carts: dict[str, list[str]] = {}
    confidence: dict[str, float] = {}
    if cartridge_file is not None:
        carts, confidence = read_cartridge_file(cartridge_file, alias, known, split)

    covered = set(lists) | set(carts)
    missing = [r.query_id for r in data.records if r.query_id not in covered]
    if missing and not partial:
        named = [topic_id(q) if by_topic else q for q in missing[:3]]
        raise InputError(
            run_file,
            None,
            None,
            f"covers {len(covered):,} of the {len(data.records):,} {split} queries "
            f"of {chosen}: {len(missing):,} have no line (e.g. "
            f"{', '.join(named)}); an import never invents an empty answer. Name "
            "the part the file answers as `membench topics` chose it (--modality "
            "M, --limit N), or pass --partial (scored on the covered queries only, "
            "marked PARTIAL everywhere); a query answered with no hits needs its "
            "line in --cartridge FILE",
            rule="INCOMPLETE_RUN",
        )

    lines = _run_lines(
        data.records, covered, lists, carts if cartridge_file else None, confidence, cartridge_top
    )
    meta = {
        "system": system,
        "config": {
            "imported_from": str(run_file),
            "atoms": str(atoms_file),
            "cartridge": str(cartridge_file) if cartridge_file else f"top {cartridge_top} hits",
        },
        "split": split,
        "modalities": mods,
        "limit": limit,
        "final": final,
        "queries": len(data.records),
        "items": len(data.items),
        "atoms": len(atoms),
        "sets_dir": str(Path(sets_dir).resolve()),
        "set_sha256": set_digests(sets_dir),
        "manifest_sha256": sha256_file(MANIFEST_PATH) if MANIFEST_PATH.exists() else None,
        "code_revision": code_revision(),
        "extent_caps": EXTENT_CAPS,
        "max_depth": MAX_DEPTH,
        "run_sha256": sha256_file(run_file),
        "atoms_sha256": sha256_file(atoms_file),
        "run_jsonl_sha256": hashlib.sha256("".join(lines).encode("utf-8")).hexdigest(),
        "latency": "not measured (imported run)",
        "status": "importing",
        "sees_gold": False,
        "card": the_card.record() if the_card else None,
        "sealed": False,
        "identity": {
            "kind": "imported",
            "spec": None,
            "args": None,
            "class": None,
            "trec_sha256": sha256_file(run_file),
            "atoms_sha256": sha256_file(atoms_file),
            "card_file": str(card) if card else None,
        },
    }
    if missing:
        meta["partial"] = {
            "covered": len(covered),
            "asked": len(data.records),
            "missing": len(missing),
        }
    with run_dir_lock(out):
        _refuse_existing(out, force)  # (again: another import may have just finished)
        check_run_dir_files(out)
        dump = {"indent": 2, "sort_keys": True}
        atomic_write_json(out / "meta.json", meta, **dump)
        (out / "metrics.json").unlink(missing_ok=True)  # it scored what is replaced
        atomic_write_text(out / "atoms.jsonl", "".join(dumps(a.row()) + "\n" for a in atoms))
        atomic_write_text(out / "run.jsonl", "".join(lines))
        meta["status"] = "partial" if missing else "complete"
        if final:
            log_test_access(system, out, meta["code_revision"])
        atomic_write_json(out / "meta.json", meta, **dump)
    return meta


def _import_card(card: Path | None):
    """The card file given to an import (``None`` without one), refused when it takes the
    name of a card of membench's own registry."""
    if card is None:
        return None
    from ..systems.cards import read_card, registry_claim

    c = read_card(card)
    why = registry_claim(c.name, "imported")
    if why:
        raise InputError(card, None, "name", why, rule="CARD")
    return c


def _refuse_existing(out: Path, force: bool) -> None:
    """An :class:`InputError` when ``out`` is not a folder, or holds a run and ``force`` is
    false."""
    if out.exists() and not out.is_dir():
        raise InputError(
            out,
            None,
            None,
            "exists and is not a folder (RUN_DIR must be a folder; give another --out)",
            rule="RUN_DIR",
        )
    there = [f for f in RUN_FILES if (out / f).exists()]
    if there and not force:
        raise InputError(
            out,
            None,
            None,
            f"already holds a run ({', '.join(there)}); pass "
            "--force to replace it, or give another --out",
            rule="RUN_EXISTS",
        )
