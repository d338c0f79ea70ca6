"""The study database of ``divmeter annotate``: SQLite in WAL mode, one transaction per answer.

Requests and their refusals are :mod:`divmeter.apps.web.requests`; the statistics of the answers
:mod:`divmeter.apps.web.summary` (both re-exported here).

One database file holds one or more *studies*; a study has one questionnaire kind, a list of
*items* and a number of ratings wanted per item. Annotators are invited to one study each and
identified by an unguessable token (:func:`secrets.token_urlsafe`, 32 bytes); every form they
post carries a per-annotator CSRF token. The kinds and what one *item* is (Tevet & Berant 2021,
section 6.2 and appendix A; the commonsense paper, section 4.1.2):

========  ================================================  ======================================
kind      item                                              rating fields (1-5)
========  ================================================  ======================================
``abs``   one response set                                  ``diversity`` (5 = highly diverse)
``asp``   one response set                                  ``form``, ``content``
``sim``   one unordered pair of responses of a set           ``similarity`` (5 = very similar)
``rnk``   two sets of the same context (A, B)               ``ranking`` (5 = A much more diverse)
``cs``    all sets of one context (a group)                 ``diversity_i`` per set + ``rank_i``
========  ================================================  ======================================

Every item is preceded by the warm-up of appendix A (Figure 7): the annotator writes a response
of their own to the context and rates the quality (1-5) of the first response shown; both are
stored. An item gets at most ``ratings`` answers, from distinct annotators: an annotator is
*leased* an item (an open assignment) and the lease counts against the item's capacity until it is
answered or expires, so concurrent annotators never over-fill an item. An annotator who comes
back after the lease expired keeps the item if it still has room; otherwise the assignment is
kept as ``expired`` (with its warm-up) and the item is never offered to them again.

simHDS turns pair similarities into a set diversity with the reduction of section 5:
``-(1 / C(|S|, 2)) * sum_{i > j} sim(s_i, s_j)``, where ``sim`` is the pair's mean rating.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from divmeter.apps.web import KINDS
from divmeter.apps.web.requests import RequestError, parse_answer, parse_rating
from divmeter.apps.web.summary import sim_reduction, summarise, unit_set_id
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.model import ResponseSet

__all__ = [
    "SCHEMA_VERSION",
    "RequestError",
    "Step",
    "Store",
    "create_study",
    "sim_reduction",
    "summarise",
]

SCHEMA_VERSION = 1
SCALE = (1, 5)
MAX_TEXT = 2000  # characters of an annotator's own warm-up response
MAX_RATINGS = 10_000  # ratings wanted per item (Tevet & Berant collect 10)
MAX_INVITES = 100_000  # annotator links made by one `annotate invite`

KIND_TITLES = {
    "abs": "absHDS: rate the diversity of a set",
    "asp": "aspHDS: rate form and content diversity",
    "sim": "simHDS: rate the similarity of two responses",
    "rnk": "rnkHDS: which of two sets is more diverse",
    "cs": "Commonsense form: rate each set, then rank them",
}

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE studies (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
  ratings INTEGER NOT NULL, source TEXT, created REAL NOT NULL);
CREATE TABLE items (
  id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL REFERENCES studies(id),
  item_key TEXT NOT NULL, position INTEGER NOT NULL, payload TEXT NOT NULL,
  UNIQUE (study_id, item_key));
CREATE TABLE annotators (
  id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL REFERENCES studies(id),
  token TEXT NOT NULL UNIQUE, csrf TEXT NOT NULL, name TEXT, created REAL NOT NULL);
CREATE TABLE assignments (
  id INTEGER PRIMARY KEY, annotator_id INTEGER NOT NULL REFERENCES annotators(id),
  item_id INTEGER NOT NULL REFERENCES items(id), status TEXT NOT NULL CHECK (status IN
  ('open', 'done', 'expired')), leased_at REAL NOT NULL, done_at REAL,
  UNIQUE (annotator_id, item_id));
CREATE INDEX assignments_item ON assignments (item_id, status);
CREATE TABLE warmups (
  assignment_id INTEGER PRIMARY KEY REFERENCES assignments(id),
  own_response TEXT NOT NULL, quality INTEGER NOT NULL CHECK (quality BETWEEN 1 AND 5),
  created REAL NOT NULL);
CREATE TABLE answers (
  id INTEGER PRIMARY KEY, assignment_id INTEGER NOT NULL UNIQUE REFERENCES assignments(id),
  annotator_id INTEGER NOT NULL REFERENCES annotators(id),
  item_id INTEGER NOT NULL REFERENCES items(id), created REAL NOT NULL,
  UNIQUE (annotator_id, item_id));
CREATE TABLE ratings (
  answer_id INTEGER NOT NULL REFERENCES answers(id), aspect TEXT NOT NULL,
  target TEXT NOT NULL, value INTEGER NOT NULL, PRIMARY KEY (answer_id, aspect, target));
"""


@dataclass(frozen=True)
class Step:
    """What an annotator sees next: a warm-up, a rating form, or the end of the study."""

    stage: str  # "warmup" | "rate" | "done"
    study: str
    kind: str
    csrf: str
    done: int
    total: int
    assignment: int | None = None
    item_key: str | None = None
    payload: dict[str, Any] | None = None


def _connect(path: str | os.PathLike[str]) -> sqlite3.Connection:
    con = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    con.row_factory = sqlite3.Row
    con.execute("PRAGMA busy_timeout = 30000")
    con.execute("PRAGMA foreign_keys = ON")
    con.execute("PRAGMA synchronous = FULL")
    return con


@contextmanager
def _write(con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One serialised write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``)."""
    con.execute("BEGIN IMMEDIATE")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _check_schema(con: sqlite3.Connection, path: str) -> None:
    version = con.execute("PRAGMA user_version").fetchone()[0]
    if version == 0:
        raise InvalidInputError(
            f"{path} is not a divmeter annotate study database; expected one made by "
            "`divmeter annotate init`."
        )
    if version > SCHEMA_VERSION:
        raise InvalidInputError(
            f"{path} has study schema version {version}; this divmeter reads versions up to "
            f"{SCHEMA_VERSION} (upgrade divmeter)."
        )


def _payload_set(s: ResponseSet, responses: Sequence[str] | None = None) -> dict[str, Any]:
    return {"set_id": s.set_id, "responses": list(s.responses if responses is None else responses),
            "label": s.label if isinstance(s.label, (int, float)) else None}


def _group_key(s: ResponseSet) -> str:
    group = s.metadata.get("group")
    if group is not None:
        return f"group:{group}"
    return f"prompt:{s.prompt}"


def invalid_reason(kind: str, s: ResponseSet) -> str | None:
    """Why one set cannot go into a study of ``kind`` (``None`` when it can)."""
    if not s.responses or not any(r.strip() for r in s.responses):
        return "no non-blank response"
    if kind == "sim" and len(s.responses) < 2:
        return f"{len(s.responses)} response (simHDS rates pairs: at least 2 needed)"
    return None


def split_valid(kind: str, sets: Sequence[ResponseSet]
                ) -> tuple[list[ResponseSet], list[tuple[str, str]]]:
    """The sets a study of ``kind`` can show, and ``(set_id, reason)`` for each one it cannot
    (``divmeter annotate init`` skips those unless ``--strict``)."""
    kept: list[ResponseSet] = []
    skipped: list[tuple[str, str]] = []
    for s in sets:
        why = invalid_reason(kind, s)
        if why is None:
            kept.append(s)
        else:
            skipped.append((s.set_id, why))
    return kept, skipped


def _items_for(kind: str, sets: Sequence[ResponseSet], source: str) -> list[tuple[str, dict]]:
    """The study's items (key, payload), validated; errors name the set."""
    for s in sets:
        if not s.responses or not any(r.strip() for r in s.responses):
            raise InvalidInputError(
                f"{source}: set {s.set_id!r} has no non-blank response; every set shown to "
                "annotators needs at least one."
            )
    items: list[tuple[str, dict]] = []
    if kind in ("abs", "asp"):
        for s in sets:
            items.append((s.set_id, {"prompt": s.prompt, "sets": [_payload_set(s)]}))
    elif kind == "sim":
        for s in sets:
            if len(s.responses) < 2:
                raise InvalidInputError(
                    f"{source}: set {s.set_id!r} has {len(s.responses)} response; simHDS rates "
                    "pairs, so every set needs at least 2."
                )
            for i, j in combinations(range(len(s.responses)), 2):
                pair = [s.responses[i], s.responses[j]]
                items.append((f"{s.set_id}:{i}-{j}", {
                    "prompt": s.prompt, "sets": [_payload_set(s, pair)], "pair": [i, j],
                    "n_responses": len(s.responses)}))
    else:
        groups: dict[str, list[ResponseSet]] = {}
        for s in sets:
            groups.setdefault(_group_key(s), []).append(s)
        for key, members in groups.items():
            if kind == "rnk" and len(members) != 2:
                raise InvalidInputError(
                    f"{source}: rnkHDS compares two sets of the same context; context "
                    f"{key!r} has {len(members)} set(s) ({', '.join(m.set_id for m in members)})."
                )
            if kind == "cs" and len(members) > 9:
                raise InvalidInputError(
                    f"{source}: the commonsense form ranks at most 9 sets of one context; "
                    f"context {key!r} has {len(members)}."
                )
            items.append(("|".join(m.set_id for m in members), {
                "prompt": members[0].prompt, "sets": [_payload_set(m) for m in members]}))
    keys = [k for k, _ in items]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise InvalidInputError(f"{source}: item {dup!r} appears twice; set ids must be unique.")
    return items


def create_study(
    db: str | os.PathLike[str],
    sets: Sequence[ResponseSet],
    *,
    kind: str,
    ratings: int,
    name: str,
    source: str = "tasks",
) -> int:
    """Create (or extend) a study database with one new study.

    Args:
        db: SQLite file; created with the schema when it does not exist.
        sets: The response sets (for ``rnk``/``cs`` grouped by ``metadata['group']`` when given,
            else by prompt).
        kind: ``abs``, ``asp``, ``sim``, ``rnk`` or ``cs``.
        ratings: Ratings wanted per item, from distinct annotators (Tevet & Berant use 10).
        name: The study's name, unique in the database.
        source: File name used in error messages.

    Returns:
        The number of items created.

    Raises:
        InvalidInputError: Unknown kind, ratings < 1, an empty set, a bad grouping, a name that
            exists already, or a file that is not a study database.
    """
    if kind not in KINDS:
        raise InvalidInputError(f"--kind must be one of {', '.join(KINDS)}; got {kind!r}.")
    if (isinstance(ratings, bool) or not isinstance(ratings, int)
            or not 1 <= ratings <= MAX_RATINGS):
        raise InvalidInputError(f"--ratings must be an integer from 1 to {MAX_RATINGS:,}; "
                                f"got {ratings!r}.")
    if not sets:
        raise InvalidInputError(f"{source}: no response sets found; a study needs at least one.")
    items = _items_for(kind, sets, source)
    path = str(db)
    fresh = not Path(path).exists() or Path(path).stat().st_size == 0
    con = _connect(path)
    try:
        if fresh:
            con.execute("PRAGMA journal_mode = WAL")
            # (executescript would commit on its own: run the statements inside one BEGIN)
            with _write(con):
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        con.execute(stmt)
                con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                con.execute("INSERT INTO meta VALUES ('admin_token', ?)",
                            (secrets.token_urlsafe(32),))
                con.execute("INSERT INTO meta VALUES ('created', ?)", (str(time.time()),))
        _check_schema(con, path)
        with _write(con):
            if con.execute("SELECT 1 FROM studies WHERE name = ?", (name,)).fetchone():
                raise InvalidInputError(
                    f"{path} already holds a study named {name!r}; choose another --name."
                )
            cur = con.execute(
                "INSERT INTO studies (name, kind, ratings, source, created) VALUES (?,?,?,?,?)",
                (name, kind, ratings, source, time.time()))
            sid = cur.lastrowid
            con.executemany(
                "INSERT INTO items (study_id, item_key, position, payload) VALUES (?,?,?,?)",
                [(sid, k, i, json.dumps(p, ensure_ascii=False)) for i, (k, p) in enumerate(items)])
    finally:
        con.close()
    return len(items)


class Store:
    """Access to one study database; every method opens and closes its own connection.

    Args:
        path: The SQLite file made by :func:`create_study`.
        lease: Seconds an item stays reserved for the annotator it was assigned to.

    Raises:
        InvalidInputError: The file does not exist or is not a study database.
    """

    def __init__(self, path: str | os.PathLike[str], *, lease: float = 3600.0) -> None:
        self.path = str(path)
        if not Path(self.path).is_file():
            raise InvalidInputError(
                f"{self.path}: no such study database; create one with `divmeter annotate init`."
            )
        if not lease > 0:
            raise InvalidInputError(f"lease must be > 0 seconds; got {lease!r}.")
        self.lease = float(lease)
        self._local = threading.local()
        con = _connect(self.path)
        try:
            _check_schema(con, self.path)
            mode = con.execute("PRAGMA journal_mode").fetchone()[0]
            if mode != "wal":
                con.execute("PRAGMA journal_mode = WAL")
        finally:
            con.close()

    @contextmanager
    def _con(self) -> Iterator[sqlite3.Connection]:
        # one long-lived connection per thread: closing the last connection of a WAL database
        # checkpoints it, which would cost a checkpoint per request
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._local.con = _connect(self.path)
        yield con

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None

    # ---------------------------------------------------------------- studies and annotators

    def studies(self) -> list[dict[str, Any]]:
        """Every study: name, kind, ratings, number of items."""
        with self._con() as con:
            rows = con.execute(
                "SELECT s.name, s.kind, s.ratings, s.source, COUNT(i.id) AS items FROM studies s "
                "LEFT JOIN items i ON i.study_id = s.id GROUP BY s.id ORDER BY s.id").fetchall()
        return [dict(r) for r in rows]

    def study(self, name: str | None) -> dict[str, Any]:
        """One study by name; ``None`` picks the only one.

        Raises:
            InvalidInputError: Unknown name, or ``None`` with several studies.
        """
        studies = self.studies()
        if name is None:
            if len(studies) != 1:
                raise InvalidInputError(
                    f"{self.path} holds {len(studies)} studies "
                    f"({', '.join(s['name'] for s in studies)}); name one with --study."
                )
            return studies[0]
        for s in studies:
            if s["name"] == name:
                return s
        raise InvalidInputError(
            f"{self.path} has no study named {name!r}; it has: "
            f"{', '.join(s['name'] for s in studies)}."
        )

    def admin_token(self) -> str:
        """The database's admin token (admin pages: status, export, invite)."""
        with self._con() as con:
            return str(con.execute("SELECT value FROM meta WHERE key='admin_token'").fetchone()[0])

    def invite(self, study: str | None, n: int, names: Sequence[str] | None = None) -> list[str]:
        """Create ``n`` annotators of one study and return their tokens.

        Raises:
            InvalidInputError: ``n`` < 1, unknown study.
        """
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_INVITES:
            raise InvalidInputError(f"the number of annotators must be an integer from 1 to "
                                    f"{MAX_INVITES:,} per call; got {n!r}.")
        name = self.study(study)["name"]
        tokens = [secrets.token_urlsafe(32) for _ in range(n)]
        with self._con() as con, _write(con):
            sid = con.execute("SELECT id FROM studies WHERE name=?", (name,)).fetchone()[0]
            con.executemany(
                "INSERT INTO annotators (study_id, token, csrf, name, created) VALUES (?,?,?,?,?)",
                [(sid, t, secrets.token_urlsafe(32), (names[i] if names and i < len(names)
                                                      else None), time.time())
                 for i, t in enumerate(tokens)])
        return tokens

    def _annotator(self, con: sqlite3.Connection, token: str) -> sqlite3.Row:
        row = None
        if isinstance(token, str) and 0 < len(token) <= 128:
            row = con.execute(
                "SELECT a.id, a.csrf, a.study_id, s.name, s.kind, s.ratings FROM annotators a "
                "JOIN studies s ON s.id = a.study_id WHERE a.token = ?", (token,)).fetchone()
        if row is None:
            raise RequestError(404, "unknown annotation link; ask the study's owner for yours.")
        return row

    # ---------------------------------------------------------------- assignment

    def _capacity_used(self, con: sqlite3.Connection, item_id: int, now: float,
                       except_annotator: int | None = None) -> int:
        return int(con.execute(
            "SELECT COUNT(*) FROM assignments WHERE item_id = ? AND annotator_id IS NOT ? AND "
            "(status = 'done' OR (status = 'open' AND leased_at > ?))",
            (item_id, except_annotator, now - self.lease)).fetchone()[0])

    def next_step(self, token: str) -> Step:
        """The annotator's current step; leases a new item when none is open.

        Raises:
            RequestError: 404 for an unknown token.
        """
        now = time.time()
        with self._con() as con, _write(con):
            ann = self._annotator(con, token)
            open_row = con.execute(
                "SELECT a.id, a.item_id, a.leased_at FROM assignments a WHERE a.annotator_id = ? "
                "AND a.status = 'open' ORDER BY a.id LIMIT 1", (ann["id"],)).fetchone()
            if open_row is not None and open_row["leased_at"] <= now - self.lease:
                # expired: keep it only if the item still has room
                used = self._capacity_used(con, open_row["item_id"], now, ann["id"])
                if used >= ann["ratings"]:  # kept (with its warm-up) as 'expired', never reused
                    con.execute("UPDATE assignments SET status = 'expired' WHERE id = ?",
                                (open_row["id"],))
                    open_row = None
            if open_row is not None:
                if open_row["leased_at"] < now - self.lease / 4:  # keep the lease alive
                    con.execute("UPDATE assignments SET leased_at = ? WHERE id = ?",
                                (now, open_row["id"]))
                assignment, item_id = open_row["id"], open_row["item_id"]
            else:
                pick = con.execute(
                    "SELECT i.id, (SELECT COUNT(*) FROM assignments a WHERE a.item_id = i.id AND "
                    "(a.status = 'done' OR (a.status = 'open' AND a.leased_at > ?))) AS used "
                    "FROM items i "
                    "WHERE i.study_id = ? AND NOT EXISTS (SELECT 1 FROM assignments a "
                    "WHERE a.item_id = i.id AND a.annotator_id = ?) AND used < ? "
                    "ORDER BY used, ((i.id + ?) * 2654435761) % 1000003, i.position LIMIT 1",
                    (now - self.lease, ann["study_id"], ann["id"], ann["ratings"],
                     ann["id"] * 7919),
                ).fetchone()
                if pick is None:
                    assignment = item_id = None
                else:
                    item_id = pick["id"]
                    # a stale row of this annotator for this item cannot exist (NOT EXISTS above)
                    assignment = con.execute(
                        "INSERT INTO assignments (annotator_id, item_id, status, leased_at) "
                        "VALUES (?, ?, 'open', ?)", (ann["id"], item_id, now)).lastrowid
            done = con.execute("SELECT COUNT(*) FROM answers WHERE annotator_id = ?",
                               (ann["id"],)).fetchone()[0]
            total = con.execute("SELECT COUNT(*) FROM items WHERE study_id = ?",
                                (ann["study_id"],)).fetchone()[0]
            base = {"study": ann["name"], "kind": ann["kind"], "csrf": ann["csrf"], "done": done,
                    "total": total}
            if assignment is None:
                return Step(stage="done", **base)
            item = con.execute("SELECT item_key, payload FROM items WHERE id = ?",
                               (item_id,)).fetchone()
            warm = con.execute("SELECT 1 FROM warmups WHERE assignment_id = ?",
                               (assignment,)).fetchone()
            return Step(stage="rate" if warm else "warmup", assignment=int(assignment),
                        item_key=item["item_key"], payload=json.loads(item["payload"]), **base)

    def _own_assignment(self, con: sqlite3.Connection, ann: sqlite3.Row, csrf: Any,
                        assignment: Any) -> sqlite3.Row:
        if not isinstance(csrf, str) or not secrets.compare_digest(
                csrf.encode("utf-8", "surrogatepass"), ann["csrf"].encode("utf-8")):
            raise RequestError(403, "missing or wrong CSRF token; reload the page and try again.")
        if not isinstance(assignment, str) or not assignment.isdigit() or len(assignment) > 18:
            raise RequestError(422, f"field 'assignment' must be an item number; got "
                                    f"{assignment!r}.")
        row = con.execute(
            "SELECT a.id, a.item_id, a.status, a.leased_at, i.payload FROM assignments a "
            "JOIN items i ON i.id = a.item_id WHERE a.id = ? AND a.annotator_id = ?",
            (int(assignment), ann["id"])).fetchone()
        if row is None:
            raise RequestError(404, f"item {assignment} is not assigned to this link.")
        if row["status"] == "done":
            raise RequestError(409, f"item {assignment} was already answered; answers are final.")
        if row["status"] == "expired":
            raise RequestError(409, f"the reservation of item {assignment} expired and others "
                                    "have rated it meanwhile; reload the page for the next item.")
        return row

    def _renew_or_refuse(self, con: sqlite3.Connection, ann: sqlite3.Row, row: sqlite3.Row,
                         now: float) -> None:
        if row["leased_at"] > now - self.lease:
            return
        if self._capacity_used(con, row["item_id"], now, ann["id"]) >= ann["ratings"]:
            raise RequestError(409, "this item's reservation expired and others have rated it "
                                    "meanwhile; reload the page for the next item.")

    def save_warmup(self, token: str, fields: Mapping[str, Any]) -> None:
        """Store the warm-up (own response + quality of the first response) of the open item.

        Raises:
            RequestError: 404 unknown token / item, 403 CSRF, 409 replay, 422 bad value.
        """
        now = time.time()
        with self._con() as con, _write(con):
            ann = self._annotator(con, token)
            row = self._own_assignment(con, ann, fields.get("csrf"), fields.get("assignment"))
            own = fields.get("own_response")
            if not isinstance(own, str) or not own.strip():
                raise RequestError(422, "field 'own_response' must be your own response to the "
                                        "context (non-empty text).")
            if len(own) > MAX_TEXT:
                raise RequestError(422, f"field 'own_response' must be at most {MAX_TEXT} "
                                        f"characters; got {len(own)}.")
            quality = parse_rating(fields.get("quality"), "quality")
            if con.execute("SELECT 1 FROM warmups WHERE assignment_id = ?",
                           (row["id"],)).fetchone():
                raise RequestError(409, "the warm-up of this item was already submitted.")
            self._renew_or_refuse(con, ann, row, now)
            con.execute("INSERT INTO warmups VALUES (?, ?, ?, ?)",
                        (row["id"], own.strip(), quality, now))
            con.execute("UPDATE assignments SET leased_at = ? WHERE id = ?", (now, row["id"]))

    def save_answer(self, token: str, fields: Mapping[str, Any]) -> None:
        """Validate and store one answer in its own transaction.

        Args:
            token: The annotator's token.
            fields: The posted form: ``csrf``, ``assignment`` and the kind's rating fields.

        Raises:
            RequestError: 404 unknown token / item, 403 CSRF, 409 replay or missing warm-up,
                422 a rating outside 1-5 or a ranking that is not a permutation / contradicts
                the ratings.
        """
        now = time.time()
        with self._con() as con, _write(con):
            ann = self._annotator(con, token)
            row = self._own_assignment(con, ann, fields.get("csrf"), fields.get("assignment"))
            values = parse_answer(ann["kind"], json.loads(row["payload"]), fields)
            if not con.execute("SELECT 1 FROM warmups WHERE assignment_id = ?",
                               (row["id"],)).fetchone():
                raise RequestError(409, "complete the warm-up of this item first.")
            self._renew_or_refuse(con, ann, row, now)
            answer = con.execute(
                "INSERT INTO answers (assignment_id, annotator_id, item_id, created) "
                "VALUES (?, ?, ?, ?)", (row["id"], ann["id"], row["item_id"], now)).lastrowid
            con.executemany("INSERT INTO ratings VALUES (?, ?, ?, ?)",
                            [(answer, a, t, v) for (a, t), v in values.items()])
            con.execute("UPDATE assignments SET status = 'done', done_at = ? WHERE id = ?",
                        (now, row["id"]))

    # ---------------------------------------------------------------- reading results

    def raw(self, study: str | None = None) -> list[dict[str, Any]]:
        """Every rating of a study, one row each (annotators by number, never by token)."""
        s = self.study(study)
        with self._con() as con:
            rows = con.execute(
                "SELECT i.item_key, i.payload, ans.annotator_id, r.aspect, r.target, r.value, "
                "ans.created, w.quality, w.own_response FROM ratings r "
                "JOIN answers ans ON ans.id = r.answer_id JOIN items i ON i.id = ans.item_id "
                "JOIN studies st ON st.id = i.study_id "
                "LEFT JOIN warmups w ON w.assignment_id = ans.assignment_id "
                "WHERE st.name = ? ORDER BY ans.id, r.aspect, r.target", (s["name"],)).fetchall()
        out = []
        for r in rows:
            payload = json.loads(r["payload"])
            out.append({"study": s["name"], "kind": s["kind"], "item_id": r["item_key"],
                        "set_id": r["target"] or unit_set_id(s["kind"], payload),
                        "annotator": int(r["annotator_id"]), "aspect": r["aspect"],
                        "value": int(r["value"]), "answered_at": float(r["created"]),
                        "warmup_quality": r["quality"], "warmup_response": r["own_response"]})
        return out

    def items(self, study: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        """(item_key, payload) of every item of a study, in file order."""
        s = self.study(study)
        with self._con() as con:
            rows = con.execute(
                "SELECT i.item_key, i.payload FROM items i JOIN studies st ON st.id = i.study_id "
                "WHERE st.name = ? ORDER BY i.position", (s["name"],)).fetchall()
        return [(r["item_key"], json.loads(r["payload"])) for r in rows]

    def unit_labels(self, study: str | None = None) -> dict[tuple[str, str], float | None]:
        """The label of every rated unit ``(item_id, set_id)`` as in :meth:`raw` (rnk: A - B)."""
        s = self.study(study)
        out: dict[tuple[str, str], float | None] = {}
        for key, p in self.items(s["name"]):
            sets = p["sets"]
            if s["kind"] == "rnk":
                la, lb = sets[0]["label"], sets[1]["label"]
                out[(key, unit_set_id("rnk", p))] = (la - lb if la is not None and lb is not None
                                                 else None)
            else:
                for st in sets:
                    out[(key, st["set_id"])] = st["label"]
        return out

    def export(self, study: str | None = None, *, level: str = "item") -> list[dict[str, Any]]:
        """Per-item (or, for simHDS, per-set) summaries; see :func:`summarise`."""
        s = self.study(study)
        return summarise(s["kind"], self.items(s["name"]), self.raw(s["name"]), level=level)

    def status(self) -> list[dict[str, Any]]:
        """Progress of every study: items, answers, open leases, complete items, annotators."""
        now = time.time()
        out = []
        with self._con() as con:
            for s in con.execute("SELECT id, name, kind, ratings FROM studies ORDER BY id"):
                q = {"sid": s["id"], "cut": now - self.lease}
                n_items = con.execute("SELECT COUNT(*) FROM items WHERE study_id=:sid",
                                      q).fetchone()[0]
                answers = con.execute(
                    "SELECT COUNT(*) FROM answers a JOIN items i ON i.id=a.item_id "
                    "WHERE i.study_id=:sid", q).fetchone()[0]
                complete = con.execute(
                    "SELECT COUNT(*) FROM (SELECT a.item_id FROM answers a JOIN items i ON "
                    "i.id=a.item_id WHERE i.study_id=:sid GROUP BY a.item_id HAVING COUNT(*) >= "
                    f"{int(s['ratings'])})", q).fetchone()[0]
                leases = con.execute(
                    "SELECT COUNT(*) FROM assignments a JOIN items i ON i.id=a.item_id WHERE "
                    "i.study_id=:sid AND a.status='open' AND a.leased_at > :cut", q).fetchone()[0]
                invited = con.execute("SELECT COUNT(*) FROM annotators WHERE study_id=:sid",
                                      q).fetchone()[0]
                active = con.execute(
                    "SELECT COUNT(DISTINCT a.annotator_id) FROM answers a JOIN items i ON "
                    "i.id=a.item_id WHERE i.study_id=:sid", q).fetchone()[0]
                wanted = n_items * int(s["ratings"])
                out.append({"study": s["name"], "kind": s["kind"], "items": n_items,
                            "ratings_per_item": s["ratings"], "answers": answers,
                            "answers_wanted": wanted, "items_complete": complete,
                            "open_leases": leases, "annotators_invited": invited,
                            "annotators_active": active,
                            "progress": round(answers / wanted, 4) if wanted else 0.0})
        return out
