"""Tables of the workstream view (migration owner "workstreams"), and every SQL statement on them.

- ws_slugs: the codebook of one scope. A slug is permanent (it seeds its vector); `status` is
  'active', or 'unminted' after `mint --undo` (the row stays: the slug may be minted again).
  `has_note` says a project note exists (an imported note, a confirmed tag, or a person's word).
- ws_aliases: other names of a slug (old names after a rename, an unknown folded into a
  project). Resolution happens when a query runs, so an alias joins history retroactively and
  removing it splits it again; recorded rows are never rewritten.
- ws_compositions: per scope and day, the weight of each workstream as it was recorded (the
  name it was recorded under, not resolved), where it came from, and the node ids behind it.
- ws_days: per scope and day, how many live memories the day had, how many had a workstream,
  and the fingerprint (float32 weighted sum of the recorded slugs' vectors) with its dim and seed.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterable, Sequence

import apsw

if TYPE_CHECKING:
    import numpy as np          # (imported where a fingerprint is read or written: see hypervector)

from .. import secrets
from ..store import migrations
from ..store.connection import changed, rows

DDL = """
CREATE TABLE ws_slugs(
  scope TEXT NOT NULL,
  slug TEXT NOT NULL,
  has_note INTEGER NOT NULL DEFAULT 0,
  note TEXT,
  status TEXT NOT NULL DEFAULT 'active' CHECK(status IN ('active', 'unminted')),
  dim INTEGER NOT NULL,
  seed TEXT NOT NULL,
  created_at TEXT NOT NULL,
  created_by TEXT NOT NULL,
  PRIMARY KEY(scope, slug)
);
CREATE TABLE ws_aliases(
  scope TEXT NOT NULL,
  alias TEXT NOT NULL,
  slug TEXT NOT NULL,
  created_at TEXT NOT NULL,
  created_by TEXT NOT NULL,
  PRIMARY KEY(scope, alias)
);
CREATE TABLE ws_compositions(
  scope TEXT NOT NULL,
  day TEXT NOT NULL,
  slug TEXT NOT NULL,
  weight REAL NOT NULL,
  source TEXT NOT NULL,
  evidence TEXT NOT NULL,
  generator TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(scope, day, slug)
);
CREATE INDEX ws_compositions_slug ON ws_compositions(scope, slug, day);
CREATE TABLE ws_days(
  scope TEXT NOT NULL,
  day TEXT NOT NULL,
  nodes INTEGER NOT NULL,
  assigned INTEGER NOT NULL,
  dim INTEGER NOT NULL,
  seed TEXT NOT NULL,
  fingerprint BLOB NOT NULL,
  composed_at TEXT NOT NULL,
  PRIMARY KEY(scope, day)
);
"""

# The same tables on PostgreSQL (the baseline a PostgreSQL store starts from: store/migrations.py)
PG_DDL = """
CREATE TABLE ws_slugs(
  scope TEXT NOT NULL,
  slug TEXT NOT NULL,
  has_note BIGINT NOT NULL DEFAULT 0,
  note TEXT,
  status TEXT NOT NULL DEFAULT 'active' CHECK(status IN ('active', 'unminted')),
  dim BIGINT NOT NULL,
  seed TEXT NOT NULL,
  created_at TEXT NOT NULL,
  created_by TEXT NOT NULL,
  PRIMARY KEY(scope, slug)
);
CREATE TABLE ws_aliases(
  scope TEXT NOT NULL,
  alias TEXT NOT NULL,
  slug TEXT NOT NULL,
  created_at TEXT NOT NULL,
  created_by TEXT NOT NULL,
  PRIMARY KEY(scope, alias)
);
CREATE TABLE ws_compositions(
  scope TEXT NOT NULL,
  day TEXT NOT NULL,
  slug TEXT NOT NULL,
  weight DOUBLE PRECISION NOT NULL,
  source TEXT NOT NULL,
  evidence TEXT NOT NULL,
  generator TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(scope, day, slug)
);
CREATE INDEX ws_compositions_slug ON ws_compositions(scope, slug, day);
CREATE TABLE ws_days(
  scope TEXT NOT NULL,
  day TEXT NOT NULL,
  nodes BIGINT NOT NULL,
  assigned BIGINT NOT NULL,
  dim BIGINT NOT NULL,
  seed TEXT NOT NULL,
  fingerprint BYTEA NOT NULL,
  composed_at TEXT NOT NULL, composer TEXT NOT NULL DEFAULT 'compose/offline-v1',
  PRIMARY KEY(scope, day)
);
CREATE TABLE ws_assignments(
  node_id BIGINT PRIMARY KEY REFERENCES nodes(id),
  slug TEXT NOT NULL,
  generator TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE ws_decisions(
  scope TEXT NOT NULL,
  name TEXT NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('dismissed', 'watching')),
  note TEXT,
  days_at BIGINT NOT NULL,
  mass_at DOUBLE PRECISION NOT NULL,
  decided_at TEXT NOT NULL,
  decided_by TEXT NOT NULL,
  previous TEXT,
  PRIMARY KEY(scope, name)
);
"""
ASSIGNMENTS_DDL = """
CREATE TABLE ws_assignments(
  node_id INTEGER PRIMARY KEY REFERENCES nodes(id),
  slug TEXT NOT NULL,
  generator TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE ws_decisions(
  scope TEXT NOT NULL,
  name TEXT NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('dismissed', 'watching')),
  note TEXT,
  days_at INTEGER NOT NULL,
  mass_at REAL NOT NULL,
  decided_at TEXT NOT NULL,
  decided_by TEXT NOT NULL,
  previous TEXT,
  PRIMARY KEY(scope, name)
);
"""
# ws_assignments: a model's answer to "which workstream is this memory" for memories no tag or
# note places, kept so a recomposition (after a mint or alias) never has to ask again.
# ws_decisions: a person's "not now" (dismissed) or "keep an eye on it" (watching) on an
# unknown workstream, with its size then (a dismissed one revives when it grows past that).
# which composer made a day: days composed by an earlier one are composed again (the first
# composer stretched the placed memories to 100% of the day and knew no offline unknowns)
COMPOSER_DDL = "ALTER TABLE ws_days ADD COLUMN composer TEXT NOT NULL DEFAULT 'compose/offline-v1';"
migrations.register("workstreams", [("0001_codebook_compositions", DDL), ("0002_assignments_decisions",
                                                                          ASSIGNMENTS_DDL),
                                    ("0003_day_composer", COMPOSER_DDL)],
                    postgresql=[("pg0001_baseline", PG_DDL)])


# -- codebook ---------------------------------------------------------------------------------

def slug_row(conn: apsw.Connection, scope: str, slug: str) -> dict | None:
    found = rows(conn, "SELECT * FROM ws_slugs WHERE scope=? AND slug=?", (scope, slug))
    return found[0] if found else None


def put_slug(conn: apsw.Connection, scope: str, slug: str, *, dim: int, seed: str, at: str, by: str,
             has_note: bool = False, note: str | None = None) -> None:
    note = secrets.mask_optional(note)          # a person's words, or a path
    conn.execute("INSERT INTO ws_slugs(scope, slug, has_note, note, status, dim, seed, created_at, created_by)"
                 " VALUES(?,?,?,?, 'active', ?,?,?,?) ON CONFLICT(scope, slug) DO UPDATE SET status='active',"
                 " has_note=CASE WHEN excluded.has_note > ws_slugs.has_note THEN excluded.has_note ELSE ws_slugs.has_note END,"
                 " note=coalesce(excluded.note, ws_slugs.note)",
                 (scope, slug, int(has_note), note, dim, seed, at, by))


def set_status(conn: apsw.Connection, scope: str, slug: str, status: str) -> None:
    conn.execute("UPDATE ws_slugs SET status=? WHERE scope=? AND slug=?", (status, scope, slug))


def mark_note(conn: apsw.Connection, scope: str, slug: str, note: str) -> None:
    note = secrets.mask_optional(note)
    conn.execute("UPDATE ws_slugs SET has_note=1, note=? WHERE scope=? AND slug=?", (note, scope, slug))


def codebook(conn: apsw.Connection, scope: str) -> list[dict]:
    """Active slugs of the scope, each with its aliases."""
    out = rows(conn, "SELECT * FROM ws_slugs WHERE scope=? AND status='active' ORDER BY slug", (scope,))
    names = aliases(conn, scope)
    for row in out:
        row["aliases"] = sorted(a for a, s in names.items() if s == row["slug"])
    return out


def aliases(conn: apsw.Connection, scope: str) -> dict[str, str]:
    return dict(conn.execute("SELECT alias, slug FROM ws_aliases WHERE scope=?", (scope,)))


def put_alias(conn: apsw.Connection, scope: str, alias: str, slug: str, at: str, by: str) -> None:
    conn.execute("INSERT INTO ws_aliases(scope, alias, slug, created_at, created_by) VALUES(?,?,?,?,?)",
                 (scope, alias, slug, at, by))


def drop_alias(conn: apsw.Connection, scope: str, alias: str) -> bool:
    return changed(conn, "DELETE FROM ws_aliases WHERE scope=? AND alias=?", (scope, alias)) == 1


# -- compositions -----------------------------------------------------------------------------

def replace_day(conn: apsw.Connection, scope: str, day: str, parts: Sequence[dict], *, nodes: int, assigned: int,
                dim: int, seed: str, fingerprint: np.ndarray, at: str, composer: str = "compose/offline-v1") -> None:
    """The day's rows and fingerprint, replaced whole (a day is recomputed from its memories)."""
    conn.execute("DELETE FROM ws_compositions WHERE scope=? AND day=?", (scope, day))
    conn.executemany("INSERT INTO ws_compositions(scope, day, slug, weight, source, evidence, generator, created_at)"
                     " VALUES(?,?,?,?,?,?,?,?)",
                     [(scope, day, p["slug"], p["weight"], p["source"], json.dumps(sorted(p["evidence"])),
                       p["generator"], at) for p in parts])
    if nodes:
        conn.execute("INSERT INTO ws_days(scope, day, nodes, assigned, dim, seed, fingerprint, composed_at, composer)"
                     " VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT(scope, day) DO UPDATE SET nodes=excluded.nodes,"
                     " assigned=excluded.assigned, dim=excluded.dim, seed=excluded.seed,"
                     " fingerprint=excluded.fingerprint, composed_at=excluded.composed_at, composer=excluded.composer",
                     (scope, day, nodes, assigned, dim, seed, fingerprint.astype("float32").tobytes(), at, composer))
    else:
        conn.execute("DELETE FROM ws_days WHERE scope=? AND day=?", (scope, day))


def composed_by_other(conn: apsw.Connection, composer: str) -> set[tuple[str, str]]:
    """(scope, day) of the days a different composer made."""
    return {(s, d) for s, d in conn.execute("SELECT scope, day FROM ws_days WHERE composer != ?", (composer,))}


def composition(conn: apsw.Connection, scope: str, day: str) -> list[dict]:
    out = rows(conn, "SELECT slug, weight, source, evidence, generator FROM ws_compositions WHERE scope=? AND day=?"
                     " ORDER BY weight DESC, slug", (scope, day))
    for row in out:
        row["evidence"] = json.loads(row["evidence"])
    return out


def day_row(conn: apsw.Connection, scope: str, day: str) -> dict | None:
    found = rows(conn, "SELECT * FROM ws_days WHERE scope=? AND day=?", (scope, day))
    if not found:
        return None
    import numpy as np
    row = found[0]
    row["fingerprint"] = np.frombuffer(row["fingerprint"], dtype=np.float32)
    return row


def days(conn: apsw.Connection, scope: str) -> list[dict]:
    import numpy as np
    out = rows(conn, "SELECT * FROM ws_days WHERE scope=? ORDER BY day", (scope,))
    for row in out:
        row["fingerprint"] = np.frombuffer(row["fingerprint"], dtype=np.float32)
    return out


def rows_for(conn: apsw.Connection, scope: str, names: Iterable[str], start: str | None = None,
             end: str | None = None) -> list[dict]:
    """Composition rows recorded under any of `names`, optionally within [start, end], by day."""
    names = list(names)
    if not names:
        return []
    marks = ",".join("?" * len(names))
    sql = f"SELECT day, slug, weight, source FROM ws_compositions WHERE scope=? AND slug IN ({marks})"
    params: list = [scope, *names]
    if start:
        sql, params = sql + " AND day >= ?", params + [start]
    if end:
        sql, params = sql + " AND day <= ?", params + [end]
    return rows(conn, sql + " ORDER BY day, slug", params)


def all_rows(conn: apsw.Connection, scope: str, start: str | None = None, end: str | None = None) -> list[dict]:
    sql, params = "SELECT day, slug, weight, source FROM ws_compositions WHERE scope=?", [scope]
    if start:
        sql, params = sql + " AND day >= ?", params + [start]
    if end:
        sql, params = sql + " AND day <= ?", params + [end]
    return rows(conn, sql + " ORDER BY day, slug", params)


def recorded_names(conn: apsw.Connection, scope: str) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT slug FROM ws_compositions WHERE scope=? ORDER BY slug",
                                       (scope,))]


# -- model assignments and unknown-workstream decisions ---------------------------------------

def assignments(conn: apsw.Connection, node_ids: Sequence[int]) -> dict[int, str]:
    ids = list(node_ids)
    out: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        out.update(dict(conn.execute(f"SELECT node_id, slug FROM ws_assignments WHERE node_id IN ({marks})", chunk)))
    return out


def put_assignment(conn: apsw.Connection, node_id: int, slug: str, generator: str, at: str) -> None:
    conn.execute("INSERT INTO ws_assignments(node_id, slug, generator, created_at) VALUES(?,?,?,?)"
                 " ON CONFLICT(node_id) DO UPDATE SET slug=excluded.slug, generator=excluded.generator,"
                 " created_at=excluded.created_at", (node_id, slug, generator, at))


def forget_node(conn: apsw.Connection, node_id: int) -> None:
    """Forget: a model's slug for the node is made from its words."""
    conn.execute("DELETE FROM ws_assignments WHERE node_id=?", (node_id,))


def decisions(conn: apsw.Connection, scope: str) -> dict[str, dict]:
    return {r["name"]: r for r in rows(conn, "SELECT * FROM ws_decisions WHERE scope=?", (scope,))}


def put_decision(conn: apsw.Connection, scope: str, name: str, status: str, note: str | None, days: int, mass: float,
                 at: str, by: str) -> None:
    """Record a decision; the one it replaces is kept inside it, so undo restores it."""
    note = secrets.mask_optional(note)          # why a name was dismissed, in a person's words
    before = decisions(conn, scope).get(name)
    previous = json.dumps({k: v for k, v in before.items() if k not in ("scope", "name")}) if before else None
    conn.execute("INSERT INTO ws_decisions(scope, name, status, note, days_at, mass_at, decided_at,"
                 " decided_by, previous) VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT(scope, name) DO UPDATE SET"
                 " status=excluded.status, note=excluded.note, days_at=excluded.days_at, mass_at=excluded.mass_at,"
                 " decided_at=excluded.decided_at, decided_by=excluded.decided_by, previous=excluded.previous",
                 (scope, name, status, note, days, mass, at, by, previous))


def drop_decision(conn: apsw.Connection, scope: str, name: str) -> bool:
    """Undo the latest decision: the one before it (if any) is back in force."""
    current = decisions(conn, scope).get(name)
    if current is None:
        return False
    conn.execute("DELETE FROM ws_decisions WHERE scope=? AND name=?", (scope, name))
    if current["previous"]:
        p = json.loads(current["previous"])
        conn.execute("INSERT INTO ws_decisions(scope, name, status, note, days_at, mass_at, decided_at, decided_by,"
                     " previous) VALUES(?,?,?,?,?,?,?,?,?)", (scope, name, p["status"], p["note"], p["days_at"],
                                                              p["mass_at"], p["decided_at"], p["decided_by"],
                                                              p["previous"]))
    return True


def drop_name(conn: apsw.Connection, scope: str, name: str) -> None:
    """Forget: decisions about an unknown whose only memories were forgotten (its name was
    made from their words)."""
    conn.execute("DELETE FROM ws_decisions WHERE scope=? AND name=?", (scope, name))


def recorded(conn: apsw.Connection, scope: str, name: str) -> bool:
    return any(conn.execute("SELECT 1 FROM ws_compositions WHERE scope=? AND slug=? LIMIT 1", (scope, name)))
