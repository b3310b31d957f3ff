"""The clarified layer and the questions that feed it.

A unit whose words are genuinely ambiguous ("next Friday" said on a Wednesday, "Alex" when the
scope knows two) may be held out of every read (`nodes.held_until`) with one question. A
person's answer is appended to `clarified` (never updated: a trigger refuses it) and mirrored
into `nodes.clarified_text`, which FTS indexes between the authored and the derived text and the
embedder reads with the content. The authored text is never touched. A hold ends when the
question is answered, skipped or closed, or by itself at `hold_until` (the visibility predicate
compares it with the time of the read), so a forgotten question never buries a memory.
"""
from __future__ import annotations

import json
from typing import Sequence

import apsw

from .. import secrets
from . import fts
from .connection import inserted, rows, scalar
from ..text import has_phrase
from .visibility import visible

DDL = """
ALTER TABLE nodes ADD COLUMN held_until TEXT;          -- awaiting clarification: hidden until then
ALTER TABLE nodes ADD COLUMN clarified_text TEXT NOT NULL DEFAULT '';   -- index mirror of `clarified`
CREATE TABLE questions(
  id INTEGER PRIMARY KEY,
  node_id INTEGER NOT NULL REFERENCES nodes(id),
  scope TEXT NOT NULL,
  kind TEXT NOT NULL,                     -- 'date' | 'referent' | 'acronym'
  term TEXT NOT NULL,                     -- the unit's own words the question is about
  question TEXT NOT NULL,
  options TEXT NOT NULL DEFAULT '[]',     -- JSON list of likely answers (any text is accepted)
  asked_at TEXT NOT NULL,
  hold_until TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'open' CHECK(state IN ('open','answered','skipped','closed')),
  closed_at TEXT
);
CREATE INDEX questions_open ON questions(state, scope, id);
CREATE INDEX questions_node ON questions(node_id);
CREATE TABLE clarified(                   -- a person's answers: append-only
  id INTEGER PRIMARY KEY,
  node_id INTEGER NOT NULL REFERENCES nodes(id),
  question_id INTEGER REFERENCES questions(id),
  term TEXT NOT NULL,
  answer TEXT NOT NULL,
  actor TEXT NOT NULL,
  at TEXT NOT NULL
);
CREATE INDEX clarified_node ON clarified(node_id, id);
CREATE TRIGGER clarified_append_only BEFORE UPDATE ON clarified BEGIN
  SELECT RAISE(ABORT, 'the clarified layer is append-only');
END;
""" + fts.CLARIFIED_REBUILD

# What the scope knows a word can mean: the second word of a two-word name ("alex" -> "Chen"),
# an acronym's spelled-out form ("CR" -> "change request"), one row per unit that says so. It
# holds words of the units, so forget removes a unit's rows; reads join `visible`, so archived,
# held and other-scope units never count.
REFERENTS_DDL = """
CREATE TABLE referents(
  scope TEXT NOT NULL,
  kind TEXT NOT NULL,                     -- 'person' | 'name' (weaker) | 'acronym' | 'answered_acronym'
  word TEXT NOT NULL,                     -- folded: 'alex', 'CR'
  reading TEXT NOT NULL,                  -- 'Chen', 'change request'
  node_id INTEGER NOT NULL REFERENCES nodes(id),
  PRIMARY KEY(scope, kind, word, reading, node_id)
) WITHOUT ROWID;
CREATE INDEX referents_node ON referents(node_id);
"""

# Which units' words another unit's question or anchors copied (a question's options, an
# acronym's expansion): forget must reach those copies too.
SOURCES_DDL = """
CREATE TABLE clarify_sources(
  node_id INTEGER NOT NULL REFERENCES nodes(id),         -- the unit whose question/anchors quote...
  source_node_id INTEGER NOT NULL REFERENCES nodes(id),  -- ...this unit's words
  PRIMARY KEY(source_node_id, node_id)
) WITHOUT ROWID;
"""

QUESTION_COLUMNS = "q.id, q.node_id, q.scope, q.kind, q.term, q.question, q.options, q.asked_at, q.hold_until," \
                   " q.state, q.closed_at"


def _decode(found: list[dict]) -> list[dict]:
    for r in found:
        r["options"] = json.loads(r["options"])
    return found


def ask(conn: apsw.Connection, *, node_id: int, scope: str, kind: str, term: str, question: str,
        options: Sequence[str], at: str, hold_until: str) -> int:
    # made from the unit's (masked) words, and from other units' words for the options
    (term, question, options), _ = secrets.mask_tree([term, question, list(options)])
    question_id = inserted(conn, "INSERT INTO questions(node_id, scope, kind, term, question, options, asked_at,"
                                 " hold_until) VALUES(?,?,?,?,?,?,?,?)",
                           (node_id, scope, kind, term, question, json.dumps(list(options)), at, hold_until))
    conn.execute("UPDATE nodes SET held_until = ? WHERE id = ?", (hold_until, node_id))
    return question_id


def get(conn: apsw.Connection, question_id: int) -> dict | None:
    found = _decode(rows(conn, f"SELECT {QUESTION_COLUMNS} FROM questions q WHERE q.id = ?", (question_id,)))
    return found[0] if found else None


def last_for_node(conn: apsw.Connection, node_id: int, state: str) -> dict | None:
    found = _decode(rows(conn, f"SELECT {QUESTION_COLUMNS} FROM questions q WHERE q.node_id = ? AND q.state = ?"
                               " ORDER BY q.id DESC LIMIT 1", (node_id, state)))
    return found[0] if found else None


def open_for_node(conn: apsw.Connection, node_id: int) -> dict | None:
    found = _decode(rows(conn, f"SELECT {QUESTION_COLUMNS} FROM questions q WHERE q.node_id = ? AND q.state = 'open'"
                               " ORDER BY q.id LIMIT 1", (node_id,)))
    return found[0] if found else None


def listing(conn: apsw.Connection, scopes: Sequence[str], state: str | None = "open", limit: int = 200,
            holding_at: str | None = None) -> list[dict]:
    """Questions about live units in `scopes` (the unit may still be held: that is the point),
    newest first, each with the unit's text so the person sees what is asked about.
    `holding_at`: only open questions whose hold has not lapsed at that time."""
    pred, args = visible("n", scopes, held="include")      # held units too: that is the point
    where = ""
    if state:
        where, args = " AND q.state = ?", [*args, state]
    if holding_at:
        where, args = where + " AND q.state = 'open' AND q.hold_until > ?", [*args, holding_at]
    return _decode(rows(conn, f"""
        SELECT {QUESTION_COLUMNS}, n.content, n.recorded_at, n.valid_from FROM questions q
        JOIN nodes n ON n.id = q.node_id
        WHERE {pred}{where}
        ORDER BY q.id DESC LIMIT ?""", [*args, limit]))


def count_open(conn: apsw.Connection, scopes: Sequence[str], holding_at: str | None = None) -> int:
    pred, args = visible("n", scopes, held="include")
    lapse, extra = (" AND q.hold_until > ?", [holding_at]) if holding_at else ("", [])
    return scalar(conn, f"SELECT count(*) FROM questions q JOIN nodes n ON n.id = q.node_id WHERE q.state = 'open'"
                        f" AND {pred}{lapse}", [*args, *extra])


def count_by_state(conn: apsw.Connection, scopes: Sequence[str] | None = None) -> dict[str, int]:
    where, args = "", []
    if scopes:
        where, args = f" WHERE scope IN ({','.join('?' * len(scopes))})", list(scopes)
    return dict(conn.execute(f"SELECT state, count(*) FROM questions{where} GROUP BY state", args))


def close(conn: apsw.Connection, question_id: int, state: str, at: str) -> None:
    """Answered, skipped or closed (its unit was corrected, archived or forgotten); the unit's
    hold ends with its last open question."""
    conn.execute("UPDATE questions SET state = ?, closed_at = ? WHERE id = ?", (state, at, question_id))
    conn.execute("UPDATE nodes SET held_until = NULL WHERE id = (SELECT node_id FROM questions WHERE id = ?)"
                 " AND NOT EXISTS (SELECT 1 FROM questions WHERE node_id = nodes.id AND state = 'open')",
                 (question_id,))


def close_for_node(conn: apsw.Connection, node_id: int, at: str) -> list[int]:
    ids = [i for (i,) in conn.execute("SELECT id FROM questions WHERE node_id = ? AND state = 'open'", (node_id,))]
    for question_id in ids:
        close(conn, question_id, "closed", at)
    return ids


def append(conn: apsw.Connection, *, node_id: int, question_id: int | None, term: str, answer: str, actor: str,
           at: str) -> int:
    (term, answer), _ = secrets.mask_tree([term, answer])       # a person's answer, in their words
    clarified_id = inserted(conn, "INSERT INTO clarified(node_id, question_id, term, answer, actor, at) VALUES(?,?,?,?,?,?)",
                            (node_id, question_id, term, answer, actor, at))
    conn.execute("UPDATE nodes SET clarified_text = ? WHERE id = ?", (_mirror_text(conn, node_id), node_id))
    return clarified_id


def _mirror_text(conn: apsw.Connection, node_id: int) -> str:
    """The searchable copy: each question's latest answer (a person may answer again to put a
    wrong answer right; the earlier row stays in the layer, which is append-only)."""
    return "\n".join(f"{term}: {answer}" for term, answer in conn.execute(
        "SELECT term, answer FROM clarified c WHERE node_id = ? AND (question_id IS NULL OR id = (SELECT max(id)"
        " FROM clarified d WHERE d.question_id = c.question_id)) ORDER BY id", (node_id,)))


def latest_answer(conn: apsw.Connection, question_id: int) -> str | None:
    for (answer,) in conn.execute("SELECT answer FROM clarified WHERE question_id = ? ORDER BY id DESC LIMIT 1",
                                  (question_id,)):
        return answer
    return None


def mirror_mismatches(conn: apsw.Connection) -> list[int]:
    """Nodes whose `clarified_text` is not the mirror of their answers (doctor)."""
    found = [i for (i,) in conn.execute("SELECT DISTINCT node_id FROM clarified")]
    found += [i for (i,) in conn.execute("SELECT id FROM nodes WHERE clarified_text != ''")]
    return sorted(i for i in set(found) if scalar(conn, "SELECT clarified_text FROM nodes WHERE id = ?", (i,))
                  != _mirror_text(conn, i))


def for_node(conn: apsw.Connection, node_id: int) -> list[dict]:
    return rows(conn, "SELECT id, question_id, term, answer, actor, at FROM clarified WHERE node_id = ? ORDER BY id",
                (node_id,))


def scrub_node(conn: apsw.Connection, node_id: int) -> None:
    """Forget: the questions quote the unit's words and the answers explain them; both go."""
    conn.execute("DELETE FROM clarified WHERE node_id = ?", (node_id,))
    conn.execute("DELETE FROM questions WHERE node_id = ?", (node_id,))
    conn.execute("DELETE FROM referents WHERE node_id = ?", (node_id,))
    conn.execute("DELETE FROM clarify_sources WHERE node_id = ? OR source_node_id = ?", (node_id, node_id))
    conn.execute("UPDATE nodes SET held_until = NULL, clarified_text = '' WHERE id = ?", (node_id,))


def index_readings(conn: apsw.Connection, node_id: int, scope: str,
                   readings: Sequence[tuple[str, str, str]]) -> None:
    readings, _ = secrets.mask_tree(readings)                  # an answered acronym's reading is an answer
    conn.executemany("INSERT OR IGNORE INTO referents(scope, kind, word, reading, node_id) VALUES(?,?,?,?,?)",
                     [(scope, kind, word, reading, node_id) for kind, word, reading in readings])


def readings_for(conn: apsw.Connection, scope: str, kind: str, word: str, exclude_capture: int | None = None,
                 limit: int = 8) -> tuple[list[str], set[int], dict[str, int]]:
    """The readings visible units of `scope` give `word`, most often said first, the units that
    give them, and how many units give each."""
    pred, params = visible("n", [scope])
    extra, args = "", []
    if exclude_capture is not None:
        extra, args = " AND n.capture_id IS NOT ?", [exclude_capture]
    found = conn.execute(
        f"SELECT r.reading, count(*) AS c, group_concat(r.node_id) FROM referents r JOIN nodes n ON n.id = r.node_id"
        f" WHERE r.scope = ? AND r.kind = ? AND r.word = ? AND {pred}{extra}"
        f" GROUP BY r.reading ORDER BY c DESC, r.reading LIMIT ?", [scope, kind, word, *params, *args, limit]).fetchall()
    return ([r for r, _, _ in found], {int(i) for _, _, ids in found for i in ids.split(",")},
            {r: c for r, c, _ in found})


def clear_referents(conn: apsw.Connection) -> None:
    conn.execute("DELETE FROM referents")


def record_sources(conn: apsw.Connection, node_id: int, sources: set[int]) -> None:
    conn.executemany("INSERT OR IGNORE INTO clarify_sources(node_id, source_node_id) VALUES(?, ?)",
                     [(node_id, s) for s in sources if s != node_id])


def quoted_by_others(conn: apsw.Connection, source_node_id: int) -> tuple[list[int], list[tuple[str, str, str]]]:
    """Before `source_node_id` is forgotten: the units whose questions or anchors copied its
    words, and its readings (kind, word, reading). Every reading counts, even one another unit
    also gives: withdrawing a question too many is cheap, leaving a copy is not."""
    dependents = [i for (i,) in conn.execute("SELECT node_id FROM clarify_sources WHERE source_node_id = ?",
                                             (source_node_id,))]
    readings = [tuple(r) for r in conn.execute("SELECT DISTINCT kind, word, reading FROM referents WHERE node_id = ?",
                                               (source_node_id,))]
    return dependents, readings


def withdraw_quotes(conn: apsw.Connection, node_id: int, readings: Sequence[tuple[str, str, str]], at: str,
                    forgotten_text: str = "") -> int:
    """Forget reached another unit's question: a name or acronym question whose options quote
    one of the forgotten unit's readings ("Alex Chen", an expansion), or name someone its text
    named (a pronoun's candidates), loses its text and options (and its hold, if open).
    Returns how many questions were withdrawn."""
    phrases = [f"{word} {reading}" if kind in ("name", "person") else reading for kind, word, reading in readings]
    withdrawn = 0
    for q in _decode(rows(conn, f"SELECT {QUESTION_COLUMNS} FROM questions q WHERE q.node_id = ?", (node_id,))):
        if q["kind"] not in ("referent", "acronym"):
            continue
        text = " ".join([q["question"], *q["options"]])
        if any(has_phrase(text, phrase, ignore_case=True) for phrase in phrases) or \
                (forgotten_text and any(has_phrase(forgotten_text, option, ignore_case=True) for option in q["options"])):
            conn.execute("UPDATE questions SET question = '(withdrawn: it quoted a forgotten memory)', options = '[]'"
                         " WHERE id = ?", (q["id"],))
            if q["state"] == "open":
                close(conn, q["id"], "closed", at)
            withdrawn += 1
    return withdrawn
