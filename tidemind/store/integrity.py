"""Is this database a sound TideMind store? One list of checks for `doctor` (the live store) and
`restore` (a backup, checked in a side file before anything is replaced)."""
from __future__ import annotations

import apsw

from . import clarifications, fts, nodes, schema, vectors
from .connection import dialect, scalar


def check(conn: apsw.Connection) -> tuple[dict[str, str], list[str]]:
    """(checks: name → "ok" or what is wrong, problems: one line each). Read inside the caller's
    snapshot when counts must agree with each other."""
    checks: dict[str, str] = {}
    problems: list[str] = []
    if dialect(conn) == "sqlite":
        result = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        checks["sqlite"] = "ok" if result == ["ok"] else "; ".join(result[:5])
        if result != ["ok"]:
            problems.append("sqlite: " + checks["sqlite"])
        schema_problems = schema.problems(conn)
    else:
        # a server's pages are its own to check (amcheck); its schema is guarded by who may change it
        schema_problems = schema.missing_tables(conn)
    checks["schema"] = "ok" if not schema_problems else "; ".join(schema_problems[:5])
    problems += schema_problems
    if any(p.startswith("schema: missing") for p in schema_problems):
        return checks, problems          # the checks below would read tables that are not there
    fts_problems = fts.integrity_problems(conn)
    counted = fts.counted_documents(conn)
    indexed = scalar(conn, "SELECT count(*) FROM nodes WHERE status != 'forgotten'")
    if counted != indexed:
        fts_problems.append(f"fts: term statistics count {counted} documents, the store has {indexed}")
    checks["fts"] = "ok" if not fts_problems else "; ".join(fts_problems)
    problems += fts_problems
    vec_problems = vectors.integrity_problems(conn)
    checks["vectors"] = "ok" if not vec_problems else "; ".join(vec_problems)
    problems += vec_problems
    bad_hash = nodes.hash_mismatches(conn)
    checks["authored"] = "ok" if not bad_hash else f"{len(bad_hash)} node(s) whose text no longer matches its hash"
    if bad_hash:
        problems.append(f"authored: text changed outside a correction in node(s) {bad_hash[:10]}")
    drifted = clarifications.mirror_mismatches(conn)
    checks["clarified"] = "ok" if not drifted else f"{len(drifted)} node(s) whose indexed clarifications differ"
    if drifted:
        problems.append(f"clarified: the searchable copy of the answers differs in node(s) {drifted[:10]}")
    return checks, problems
