"""Which repository an old-style scope belongs to.

Before scope ids were random (recorded in each repository's git config), a repository's scope
was `project:<name>@<6 hex digits of its root commit>`, which another repository can forge in
seconds. The first repository that takes such a scope over records here the full root commit
(or path hash) it was derived from; a repository with another root is never given it.
"""
from __future__ import annotations

import apsw

from .connection import scalar

DDL = """
CREATE TABLE scope_claims(
  scope TEXT PRIMARY KEY,
  claimant TEXT NOT NULL,                 -- 'root:<full commit hash>' or 'path:<sha256 of the path>'
  claimed_at TEXT NOT NULL
) WITHOUT ROWID;
"""

# The same tables on PostgreSQL (the baseline a PostgreSQL store starts from: store/migrations.py)
PG_DDL = """
CREATE TABLE scope_claims(
  scope TEXT PRIMARY KEY,
  claimant TEXT NOT NULL,                 -- 'root:<full commit hash>' or 'path:<sha256 of the path>'
  claimed_at TEXT NOT NULL
);
"""


def claimant(conn: apsw.Connection, scope: str) -> str | None:
    return scalar(conn, "SELECT claimant FROM scope_claims WHERE scope=?", (scope,))


def claim(conn: apsw.Connection, scope: str, who: str, at: str) -> str:
    """Claim `scope` for `who` unless it is claimed; the claimant it has now."""
    conn.execute("INSERT INTO scope_claims(scope, claimant, claimed_at) VALUES(?,?,?) ON CONFLICT DO NOTHING", (scope, who, at))
    return claimant(conn, scope)
