"""The database: connection factory, migrations, and one module per table family.

`open_store(settings)` is the only way the rest of TideMind gets a connection.
"""
from __future__ import annotations

from pathlib import Path

import apsw

from . import (access_tokens, audit, captures, clarifications, derived, fts, links, llm_calls, migrations, nodes, postgresql, recall_hits, review,
               syntheses, tags, task_runs, vectors, provider_state, scope_claims)
from .connection import connect, immediate, rows, scalar, storage_error
from .visibility import AsOf, visible


def _mask_quoted_secrets(conn: apsw.Connection) -> None:
    """Review payloads and syntheses were stored unmasked until their modules masked them (the stop
    hook's lessons quoted transcripts, and prepare served them to every session): mask what is
    there. A repeated-failure lesson is keyed by its text, so its key follows, or it is made twice."""
    for scope, before, after in review.remask_payloads(conn):
        syntheses.rename_digest(conn, syntheses.failure_lesson_digest(scope, before),
                                syntheses.failure_lesson_digest(scope, after))
    syntheses.remask_texts(conn)


def _syntheses_with_subjects(conn: apsw.Connection) -> None:
    if "subject" not in {r[1] for r in conn.execute("PRAGMA table_info(syntheses)")}:
        conn.execute(syntheses.READABLE_DDL)
    syntheses.backfill_subjects(conn)


CORE_MIGRATIONS = [
    ("0001_captures", captures.DDL),
    ("0002_nodes", nodes.DDL),
    ("0003_derived", derived.DDL),
    ("0004_tags", tags.DDL),
    ("0005_links", links.DDL),
    ("0006_review", review.DDL),
    ("0007_audit", audit.DDL),
    ("0008_fts", fts.DDL),
    ("0009_vectors", vectors.DDL),
    ("0010_task_runs", task_runs.DDL),
    ("0011_llm_calls", llm_calls.DDL),
    ("0012_syntheses", syntheses.DDL),
    ("0013_recall_hits", recall_hits.DDL),
    ("0014_derived_history", derived.HISTORY_DDL),
    ("0015_nodes_by_valid_day", nodes.VALID_DAY_DDL),
    ("0016_clarified_layer", clarifications.DDL),
    ("0017_tag_rejection_remembers_prior", tags.PRIOR_DDL),
    ("0018_mask_quoted_secrets", _mask_quoted_secrets),
    ("0019_fts_token_totals", fts.count_tokens),
    ("0020_import_context", nodes.CONTEXT_DDL + fts.CONTEXT_REBUILD),
    ("0021_superseded_valid_to", nodes.SUPERSEDED_VALID_TO),
    ("0022_tag_tombstones", tags.SCOPE_TOMBSTONES_DDL),
    ("0023_vectors_per_embedder", vectors.PER_EMBEDDER_DDL),
    ("0024_syntheses_with_subjects", _syntheses_with_subjects),
    ("0025_provider_state", provider_state.DDL),
    ("0026_tag_rejection_remembers_decided_at", tags.PRIOR_DECIDED_DDL),
    ("0027_scope_claims", scope_claims.DDL),
    ("0028_date_anchors_unindexed", derived.unindex_date_anchors),
    ("0029_fts_scope_key", nodes.SCOPE_KEY_DDL + fts.SCOPE_REBUILD),
    ("0030_audit_by_actor", audit.ACTOR_INDEX_DDL),
]
# a PostgreSQL store starts at the schema these migrations reach (store/postgresql.py)
PG_CORE_MIGRATIONS = [
    ("pg0001_baseline", "".join([postgresql.COMPAT_DDL, captures.PG_DDL, nodes.PG_DDL, derived.PG_DDL, tags.PG_DDL,
                                 links.PG_DDL, review.PG_DDL, audit.PG_DDL, fts.PG_DDL, vectors.PG_DDL,
                                 task_runs.PG_DDL, llm_calls.PG_DDL, syntheses.PG_DDL, recall_hits.PG_DDL,
                                 clarifications.PG_DDL, provider_state.PG_DDL, scope_claims.PG_DDL])),
    ("pg0002_vector_index_by_scope", vectors.partition_pg_indexes),
    ("pg0003_scope_partitions_attached", vectors.attach_partitions),
    ("pg0004_audit_by_actor", audit.ACTOR_INDEX_DDL),
]
migrations.register("core", CORE_MIGRATIONS, postgresql=PG_CORE_MIGRATIONS)
# owners whose tables reference core's register after it (the ledger applies owners in order)
from . import proxy_exchanges  # noqa: E402


def backup_to(conn: apsw.Connection, target: Path) -> None:
    """SQLite online backup of the live database into `target` (a consistent snapshot)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    dest = apsw.Connection(str(target))
    try:
        with dest.backup("main", conn, "main") as job:
            while not job.done:
                job.step(256)
    finally:
        dest.close()


def open_store(db_path: Path, busy_timeout_ms: int = 10_000) -> apsw.Connection:
    db_path = Path(db_path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(db_path, busy_timeout_ms)
    try:
        newer = migrations.unknown(conn)
        if newer:          # its tables may have changed in ways this code would corrupt
            from ..errors import InvalidInput

            raise InvalidInput(f"{db_path} was written by a newer TideMind ({', '.join(newer[:3])}); upgrade"
                               " TideMind to open it")
        migrations.migrate(conn, backup=lambda p: backup_to(conn, p), backup_dir=db_path.parent / "backups")
    except BaseException as exc:
        number = conn.system_errno
        conn.close()
        problem = storage_error(exc, db_path, number) if isinstance(exc, (apsw.Error, OSError)) else None
        if problem is None:
            raise
        raise problem from None
    return conn


def open_store_read_only(db_path: Path, busy_timeout_ms: int, why: str) -> apsw.Connection:
    """The store opened for reading only, where its folder cannot be written (`why` says so):
    reads answer, every write is refused in one line (store.connection.immediate). A store that
    still needs a migration cannot be read that way: migrating writes it."""
    from ..errors import InvalidInput, StorageError

    conn = connect(db_path, busy_timeout_ms, readonly=True)
    try:
        newer = migrations.unknown(conn)
        todo = migrations.pending(conn, create=False)
    except apsw.Error as exc:
        conn.close()
        raise StorageError(f"{why}, and {db_path} cannot be read there either ({exc})") from None
    if newer:
        conn.close()
        raise InvalidInput(f"{db_path} was written by a newer TideMind ({', '.join(newer[:3])}); upgrade TideMind"
                           " to open it")
    if todo:
        conn.close()
        raise StorageError(f"{why}; {db_path} needs upgrading to this version of TideMind first, which writes it")
    return conn


__all__ = ["AsOf", "access_tokens", "proxy_exchanges", "visible", "open_store", "open_store_read_only", "immediate", "rows", "scalar", "backup_to", "connect",
           "audit", "captures", "clarifications", "derived", "fts", "links", "migrations", "nodes", "recall_hits", "review", "syntheses", "tags", "task_runs",
           "vectors", "provider_state", "scope_claims"]
