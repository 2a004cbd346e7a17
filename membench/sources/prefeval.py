"""PrefEval (amazon-science/PrefEval, Zhao et al., ICLR 2025): user preferences that a later
question tests. Reads ``prefeval/`` under the corpus root, writes nothing; start at :func:`load`.
The reasoning behind the mapping is in docs/sets.md ("PrefEval").
Why longer: the upstream format and its mapping are this adapter's contract.

Upstream (``benchmark_dataset/``): one JSON list per topic (20) and form, row ``i`` of every
form the same preference: ``explicit_preference/<topic>.json`` ``{preference, question,
explanation}``; ``implicit_preference/choice-based/<topic>.json`` adds ``implicit_query,
options, aligned_op, conversation: {query, assistant_options, user_selection,
assistant_acknowledgment}``; ``implicit_preference/persona-driven/<topic>.json`` adds
``persona, conversation: {"0": {user, assistant}, ...}`` (the revealing turn is not labelled);
``mcq_options/<topic>.json`` adds ``classification_task_options`` (``[0]`` follows the
preference). ``mcq_options/travel_hotel copy.json`` is never read.

Mapping:

* sessions: one per row; turns 1-based ``{"turn", "speaker", "text"}``: explicit one turn;
  choice four (query, options, selection, acknowledgment); persona exchange ``"k"`` as turns
  ``2k+1`` and ``2k+2``. Ids opaque (:func:`item_id`), ``meta = {"turns", "speakers"}``;
  ``topics[item]`` is the family (:data:`FAMILY`), for the derivation's guards only.
* asked: each preference in one form (:func:`asked_form`); a cluster of preferences sharing a
  question or preference text (:func:`_clusters`) is asked once.
* users (:func:`_deal`): ``max(2, ceil(USERS_PER_QUESTION * asked))`` holders
  ``prefeval/user-<kkk>``, each holding :data:`ITEMS_PER_USER` sessions dealt in hash order: its
  asked ones, then sessions and copies of :data:`FILL_FAMILIES` families it is not asked about;
  never another session of an asked family, never two of one cluster.
* observed_at: synthetic (:func:`base.synthetic_timeline`, one hour apart, UTC).
* records: ``prefeval:<form>:<topic>:<i>``, question verbatim, of the user holding the session;
  gold ``{"turn": 1}`` (explicit) or ``{"turn": 3}`` (choice); ``judgments.session`` the whole
  session; answer ``classification_task_options[0]`` of the same mcq row when its question is
  the same, else ``None`` (counted); ``origin.item = <form folder>/<topic>.json#<i>``.
* not covered (counted): persona-driven (:data:`MISS_PERSONA`), the form not asked
  (:data:`MISS_OTHER_FORM`), twins (:data:`MISS_TWIN`), no user (:data:`MISS_NO_USER`), empty
  text, a clash (:data:`MISS_CLASH`). Bad input is an :class:`InputError` naming file and field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract.schema import Gold, Origin, RecordDraft, Scope, SourceItem
from ..core.errors import InputError
from ..core.hashing import hash_order, stable_hash
from . import BY_KEY
from .base import (
    AdapterResult,
    Coverage,
    Mapped,
    Upstream,
    book,
    norm_space,
    open_upstream,
    read_json,
    synthetic_timeline,
)

KEY = "prefeval"
SPEC = BY_KEY[KEY]
DATASET = "amazon-science/PrefEval"
MODALITY = "conversation"
#: form -> upstream folder
FORMS = {
    "explicit": "explicit_preference",
    "choice": "implicit_preference/choice-based",
    "persona": "implicit_preference/persona-driven",
}
MCQ = "mcq_options"
NEAR_COPY = "mcq_options/travel_hotel copy.json"
#: users (holders) per asked question: 0.8, so a user is asked 1.25 questions on average
#: (788 users on the mirror)
USERS_PER_QUESTION = 0.8
#: sessions each user holds: its own, then copies of other users' sessions
ITEMS_PER_USER = 24
#: families a user's other sessions (never asked of it) come from
FILL_FAMILIES = 3
USER_SALT = "prefeval-users"
ASK_SALT = "prefeval-asked-form"
FILL_SALT = "prefeval-fill"
COPY_SALT = "prefeval-copy"
ID_SALT = "prefeval-item-id"
#: topic -> family: topics a preference of one may bear on a question of another are one
#: family (a dietary need bears on restaurants; a fitness routine on health), so a user is
#: asked about a family once and a derived unanswerable goes only where the family is absent
FAMILY = {
    "lifestyle_dietary": "food",
    "travel_restaurant": "food",
    "lifestyle_fit": "health",
    "lifestyle_health": "health",
    "lifestyle_beauty": "health",
    "travel_activities": "travel",
    "travel_hotel": "travel",
    "travel_transportation": "travel",
    "entertain_games": "leisure",
    "entertain_music_book": "leisure",
    "entertain_shows": "leisure",
    "entertain_sports": "leisure",
    "shop_fashion": "shopping",
    "shop_home": "shopping",
    "shop_motors": "shopping",
    "shop_technology": "shopping",
    "education_learning_styles": "learning",
    "education_resources": "learning",
    "professional_work_location_style": "work",
    "pet_ownership": "pets",
}
#: the revealing turn of each labelled form
GOLD_TURN = {"explicit": 1, "choice": 3}
CHOICE_TURNS = (
    ("query", "user"),
    ("assistant_options", "assistant"),
    ("user_selection", "user"),
    ("assistant_acknowledgment", "assistant"),
)

MISS_PERSONA = "persona-driven: the revealing turn is not labelled upstream"
MISS_EMPTY_Q = "empty question"
MISS_NO_TURN = "the turn that states or reveals the preference is empty"
MISS_CLASH = "its user holds another session of the same question or preference"
MISS_NO_USER = "no user could hold it (every user holds its family or its cluster)"
MISS_OTHER_FORM = "the preference is asked in its other labelled form (one form per preference)"
MISS_TWIN = "another preference asks the same question or states the same preference"
FIX_MCQ = "mcq_options row asks another question (answer left none)"
SESSION = "session"


@dataclass(frozen=True)
class _Row:
    """One upstream row of one form: where it is, its question and preference, its turns."""

    form: str
    topic: str
    index: int
    file: str  # path under the source folder
    question: str
    preference: str
    turns: list[dict]  # [{"turn", "speaker", "text"}], 1-based

    @property
    def pref_key(self) -> str:
        return f"{self.topic}#{self.index}"

    @property
    def sid(self) -> str:
        return f"{KEY}:{self.form}:{self.topic}:{self.index}"


# --------------------------------------------------------------------------- load


def load(corpus_root: Path) -> AdapterResult:
    """Read ``<corpus_root>/prefeval``, map it to sessions and records, account for every
    question of the three forms."""
    up = open_upstream(corpus_root, SPEC, folder="the PrefEval folder", provenance=True)
    cov = Coverage(source=KEY)
    rows, mcq, revisions = _read(up, cov)
    made = _map(rows, mcq, revisions)
    _account(cov, made)
    return made.result(cov)


def _topics(up: Upstream) -> list[str]:
    """The topics: the JSON files of explicit_preference/, each required in every form folder
    and in mcq_options/ (a missing one is a MISSING_FILE error naming it)."""
    for folder in (*FORMS.values(), MCQ):
        if not (up.folder / folder).is_dir():
            raise InputError(
                up.folder / folder,
                None,
                None,
                "PrefEval form folder is missing",
                rule="MISSING_FILE",
            )
    topics = sorted(p.stem for p in (up.folder / FORMS["explicit"]).glob("*.json"))
    for folder in (*FORMS.values(), MCQ):
        for t in topics:
            p = up.folder / folder / f"{t}.json"
            if not p.is_file():
                raise InputError(
                    p,
                    None,
                    None,
                    f"topic {t!r} of explicit_preference/ is missing here",
                    rule="MISSING_FILE",
                )
    return topics


def _read(up: Upstream, cov: Coverage) -> tuple[list[_Row], dict[str, list], dict[str, str]]:
    """Every row of the three forms (topic order, then row order), the mcq rows per topic and
    the upstream commit of each file read. Raises InputError naming file and field."""
    rows: list[_Row] = []
    mcq: dict[str, list] = {}
    revisions: dict[str, str] = {}
    for t in _topics(up):
        for form, folder in FORMS.items():
            name = f"{folder}/{t}.json"
            revisions[name] = up.revision(name, cov)
            data = read_json(up.folder / name, list, "a JSON list of preferences")
            rows += [_row(up.folder / name, form, t, i, r, name) for i, r in enumerate(data)]
        name = f"{MCQ}/{t}.json"
        mcq[t] = read_json(up.folder / name, list, "a JSON list of answer options")
        for i, r in enumerate(mcq[t]):
            _text(up.folder / name, r, i, "question")
            opts = r.get("classification_task_options")
            if not isinstance(opts, list) or not opts or not all(isinstance(o, str) for o in opts):
                raise InputError(
                    up.folder / name,
                    None,
                    f"[{i}].classification_task_options",
                    "missing or not a non-empty list of strings",
                )
    return rows, mcq, revisions


def _text(path: Path, row: Any, i: int, key: str) -> str:
    if not isinstance(row, dict):
        raise InputError(path, None, f"[{i}]", "not an object")
    v = row.get(key)
    if not isinstance(v, str):
        raise InputError(path, None, f"[{i}].{key}", "missing or not a string")
    return v


def _row(path: Path, form: str, topic: str, i: int, r: Any, name: str) -> _Row:
    question = _text(path, r, i, "question")
    preference = _text(path, r, i, "preference")
    if form == "explicit":
        turns = [{"turn": 1, "speaker": "user", "text": preference}]
    else:
        conv = r.get("conversation")
        if not isinstance(conv, dict):
            raise InputError(path, None, f"[{i}].conversation", "missing or not an object")
        turns = _choice_turns(path, i, conv) if form == "choice" else _persona_turns(path, i, conv)
    return _Row(
        form=form,
        topic=topic,
        index=i,
        file=name,
        question=question,
        preference=preference,
        turns=turns,
    )


def _choice_turns(path: Path, i: int, conv: dict) -> list[dict]:
    out = []
    for t, (key, speaker) in enumerate(CHOICE_TURNS, 1):
        out.append(
            {
                "turn": t,
                "speaker": speaker,
                "text": _turn_text(path, conv.get(key), f"[{i}].conversation.{key}"),
            }
        )
    return out


def _persona_turns(path: Path, i: int, conv: dict) -> list[dict]:
    if sorted(conv, key=lambda k: (len(k), k)) != [str(k) for k in range(len(conv))]:
        raise InputError(
            path,
            None,
            f"[{i}].conversation",
            f'exchange keys must be "0".."{len(conv) - 1}", got {sorted(conv)}',
        )
    out = []
    for k in range(len(conv)):
        ex = conv[str(k)]
        if not isinstance(ex, dict):
            raise InputError(path, None, f"[{i}].conversation.{k}", "not an object")
        for j, speaker in enumerate(("user", "assistant")):
            out.append(
                {
                    "turn": 2 * k + 1 + j,
                    "speaker": speaker,
                    "text": _turn_text(path, ex.get(speaker), f"[{i}].conversation.{k}.{speaker}"),
                }
            )
    return out


def _turn_text(path: Path, v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise InputError(path, None, where, "missing or not a string")
    return v


# --------------------------------------------------------------------------- map


def _norm(s: str) -> str:
    return norm_space(s).casefold()


def _clusters(rows: list[_Row]) -> dict[str, str]:
    """Preference key -> its cluster: preferences sharing a question or preference text
    (normalised) are chained into one cluster, named by its smallest key."""
    parent: dict[str, str] = {}

    def find(k: str) -> str:
        while parent.setdefault(k, k) != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    seen: dict[str, str] = {}
    for r in rows:
        find(r.pref_key)
        for text in (r.question, r.preference):
            n = _norm(text)
            if not n:
                continue
            if n in seen:
                a, b = find(seen[n]), find(r.pref_key)
                if a != b:
                    parent[max(a, b)] = min(a, b)
            else:
                seen[n] = r.pref_key
    return {k: find(k) for k in sorted(parent)}


def asked_form(pref_key: str) -> str:
    """The one labelled form in which a preference is asked (by hash)."""
    return ("explicit", "choice")[stable_hash(ASK_SALT, pref_key) % 2]


@dataclass
class _Made(Mapped):
    users: int = 0
    copies: int = 0
    unplaced: int = 0


@dataclass
class _Users:
    """Who holds what: ``own`` user -> original session ids; ``copies`` user -> copied ones;
    the families a user is asked about and those its other sessions come from."""

    n: int
    own: dict[int, list[str]] = field(default_factory=dict)
    copies: dict[int, list[str]] = field(default_factory=dict)
    asked_families: dict[int, set[str]] = field(default_factory=dict)
    fill_families: dict[int, list[str]] = field(default_factory=dict)
    clusters: dict[int, set[str]] = field(default_factory=dict)
    unplaced: list[str] = field(default_factory=list)

    def take(self, u: int, sid: str, cluster: str) -> None:
        self.own.setdefault(u, []).append(sid)
        self.clusters.setdefault(u, set()).add(cluster)


def _deal(
    rows: list[_Row], cluster: dict[str, str], asked: set[str], n_users: int, per_user: int
) -> _Users:
    """Deal the sessions to ``n_users`` users (see the module docstring): the asked sessions
    round robin in hash order, at most one per family and cluster per user; the others to
    users whose fill families hold theirs; then copies up to ``per_user`` sessions each."""
    users = _Users(n_users)
    by_sid = {r.sid: r for r in rows}
    i = 0
    for sid in hash_order(asked, USER_SALT):
        r, k = by_sid[sid], 0
        fam, c = FAMILY[r.topic], cluster[r.pref_key]
        while k < n_users and (
            fam in users.asked_families.get((i + k) % n_users, set())
            or c in users.clusters.get((i + k) % n_users, set())
        ):
            k += 1
        if k == n_users:
            users.unplaced.append(sid)
            continue
        u = (i + k) % n_users
        users.take(u, sid, c)
        users.asked_families.setdefault(u, set()).add(fam)
        i += 1
    families = sorted({FAMILY[r.topic] for r in rows})
    for u in range(n_users):
        free = [f for f in families if f not in users.asked_families.get(u, set())]
        users.fill_families[u] = hash_order(free, f"{FILL_SALT}:{u}")[:FILL_FAMILIES]
    j = 0
    for sid in hash_order([r.sid for r in rows if r.sid not in asked], FILL_SALT):
        r, k = by_sid[sid], 0
        fam, c = FAMILY[r.topic], cluster[r.pref_key]
        while k < n_users and (
            fam not in users.fill_families[(j + k) % n_users]
            or c in users.clusters.get((j + k) % n_users, set())
        ):
            k += 1
        if k == n_users:
            users.unplaced.append(sid)
            continue
        users.take((j + k) % n_users, sid, c)
        j += 1
    pool: dict[str, list[str]] = {}
    for f in families:
        pool[f] = hash_order([r.sid for r in rows if FAMILY[r.topic] == f], COPY_SALT)
    for u in range(n_users):
        mine = set(users.own.get(u, []))
        need = per_user - len(mine)
        fams = [f for f in users.fill_families[u] if pool[f]]
        if not fams:
            users.copies[u] = []
            continue
        at = {f: stable_hash(COPY_SALT, str(u), f) % len(pool[f]) for f in fams}
        got: list[str] = []
        k = 0
        while len(got) < need and k < need * 4 + 100:
            f = fams[k % len(fams)]
            for step in range(len(pool[f])):
                sid = pool[f][(at[f] + step) % len(pool[f])]
                if sid not in mine and cluster[by_sid[sid].pref_key] not in users.clusters[u]:
                    at[f] = (at[f] + step + 1) % len(pool[f])
                    got.append(sid)
                    mine.add(sid)
                    break
            k += 1
        users.copies[u] = got
    return users


def holder_of(u: int) -> str:
    return f"{KEY}/user-{u:03d}"


def item_id(sid: str, user: int | None = None) -> str:
    """The source id of session ``sid`` (``prefeval:<form>:<topic>:<i>``) as the original
    (``user`` None) or as ``user``'s copy: opaque (a hash), so no id names a topic, a form or
    a copy."""
    who = "" if user is None else f"@{user}"
    return f"{KEY}:{stable_hash(ID_SALT, sid + who):016x}"


def _map(
    rows: list[_Row],
    mcq: dict[str, list],
    revisions: dict[str, str],
    n_users: int | None = None,
    per_user: int = ITEMS_PER_USER,
) -> _Made:
    """One session item per row and per copy; one outcome per row (a record, or why not)."""
    made = _Made()
    cluster = _clusters(rows)
    first = {}
    for k in sorted(cluster):
        first.setdefault(cluster[k], k)
    why: dict[str, str] = {}
    for r in rows:
        if r.form not in GOLD_TURN:
            why[r.sid] = MISS_PERSONA
        elif asked_form(r.pref_key) != r.form:
            why[r.sid] = MISS_OTHER_FORM
        elif first[cluster[r.pref_key]] != r.pref_key:
            why[r.sid] = MISS_TWIN
    asked = {r.sid for r in rows if r.sid not in why}
    if n_users is None:
        n_users = max(2, math.ceil(USERS_PER_QUESTION * len(asked)))
    users = _deal(rows, cluster, asked, n_users, per_user)
    for sid in users.unplaced:
        if sid in asked:
            why[sid] = MISS_NO_USER
    made.unplaced = len(users.unplaced)
    holder: dict[str, str] = {}  # item id -> holder
    session: dict[str, str] = {}  # item id -> upstream session (row sid)
    for u in range(n_users):
        for sid in users.own.get(u, []):
            holder[item_id(sid)] = holder_of(u)
            session[item_id(sid)] = sid
        for sid in users.copies.get(u, []):
            holder[item_id(sid, u)] = holder_of(u)
            session[item_id(sid, u)] = sid
    observed = synthetic_timeline(holder)
    by_sid = {r.sid: r for r in rows}
    # per holder: the normalised texts of its sessions' preferences and its questions, counted
    texts: dict[str, dict[str, int]] = {}
    for iid, h in holder.items():
        r = by_sid[session[iid]]
        bag = texts.setdefault(h, {})
        asked_here = iid == item_id(r.sid) and r.sid not in why
        for n in {_norm(r.preference), *((_norm(r.question),) if asked_here else ())}:
            bag[n] = bag.get(n, 0) + 1
    for iid in sorted(holder):
        r = by_sid[session[iid]]
        made.items.append(
            SourceItem(
                source_id=iid,
                modality=MODALITY,
                holder=holder[iid],
                observed_at=observed[iid],
                content=r.turns,
                meta={
                    "turns": len(r.turns),
                    "speakers": ["user", "assistant"] if len(r.turns) > 1 else ["user"],
                },
            )
        )
        # one line per turn (whitespace collapsed, as the chunker writes a turn)
        made.texts[iid] = "\n".join(f"{t['speaker']}: {norm_space(t['text'])}" for t in r.turns)
        made.topics[iid] = FAMILY[r.topic]
    for r in rows:
        made.outcomes.append(
            why.get(r.sid)
            or _record(
                r, holder[item_id(r.sid)], texts[holder[item_id(r.sid)]], mcq, revisions, made
            )
        )
    made.users = len(set(holder.values()))
    made.copies = sum(len(c) for c in users.copies.values())
    made.texts = dict(sorted(made.texts.items()))
    made.topics = dict(sorted(made.topics.items()))
    return made


def _record(
    r: _Row,
    holder: str,
    bag: dict[str, int],
    mcq: dict[str, list],
    revisions: dict[str, str],
    made: Mapped,
) -> RecordDraft | str:
    """The record of one row's question, or why it is not covered."""
    if not r.question.strip():
        return MISS_EMPTY_Q
    turn = GOLD_TURN[r.form]
    if not r.turns[turn - 1]["text"].strip():
        return MISS_NO_TURN
    if bag.get(_norm(r.question), 0) > 1 or bag.get(_norm(r.preference), 0) > 1:
        return MISS_CLASH
    answer: str | None = None
    opts = mcq[r.topic]
    if r.index < len(opts) and _norm(opts[r.index]["question"]) == _norm(r.question):
        answer = opts[r.index]["classification_task_options"][0]
    else:
        made.fix(FIX_MCQ)
    whole = {"turn_start": 1, "turn_end": len(r.turns)}
    return RecordDraft(
        query_id=r.sid,
        modality=MODALITY,
        question=r.question,
        answer=answer,
        answer_format="str" if answer is not None else "none",
        gold=[Gold(source_id=item_id(r.sid), region={"turn": turn})],
        judgments={SESSION: [Gold(source_id=item_id(r.sid), region=whole)]},
        scope=Scope(holder=holder, session=None, scenario=SPEC.scenario),
        unanswerable=False,
        origin=Origin(
            dataset=DATASET,
            revision=revisions[r.file],
            item=f"{r.file}#{r.index}",
            license=SPEC.license,
            notes=f"form {r.form}; preference: {r.preference!r}"
            + (
                "; answer: mcq_options classification_task_options[0]" if answer is not None else ""
            ),
        ),
    )


# --------------------------------------------------------------------------- account


def _account(cov: Coverage, made: _Made) -> None:
    """Coverage: every question's outcome and the repairs (:func:`base.book`), then the notes.
    Writes only ``cov``."""
    book(cov, made)
    cov.notes.append(f"{NEAR_COPY} (a near-copy of travel_hotel.json upstream ships) is not read")
    cov.notes.append(
        f"{made.users} users of {ITEMS_PER_USER} sessions each: the asked "
        "sessions (one labelled form per preference, at most one per family and "
        "user), the other sessions of other families, then copies of other users' "
        f"sessions of those families ({made.copies} copies); sessions no user "
        f"could hold: {made.unplaced}"
    )
    cov.notes.append(
        "gold = the user turn that states (explicit, turn 1) or reveals "
        "(choice-based user_selection, turn 3) the preference; judgments.session = "
        "the whole session"
    )
    cov.notes.append(
        "answer = mcq_options classification_task_options[0], the "
        "preference-following option by upstream's convention"
    )
    cov.notes.append("observed_at synthetic: hash order of the session ids, one hour apart (UTC)")
