"""Tables of the default embedder, registered as its own migration set (no numpy: imported early)."""
from __future__ import annotations

from ..store.migrations import register as register_migrations

DDL = """
CREATE TABLE embed_terms(
  term_id INTEGER PRIMARY KEY,      -- 64-bit hash of the word; the word itself is not stored
  df INTEGER NOT NULL DEFAULT 0,
  ctx BLOB                          -- float32[256] context vector (sum of neighbours' index vectors)
);
CREATE TABLE embed_observed(       -- nodes whose text is counted in embed_terms (so nothing counts twice)
  node_id INTEGER PRIMARY KEY
);
CREATE TABLE embed_stats(
  key TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
"""

# The same tables on PostgreSQL (the baseline a PostgreSQL store starts from: store/migrations.py)
PG_DDL = """
CREATE TABLE embed_terms(
  term_id BIGINT PRIMARY KEY,      -- 64-bit hash of the word; the word itself is not stored
  df BIGINT NOT NULL DEFAULT 0,
  ctx BYTEA                          -- float32[256] context vector (sum of neighbours' index vectors)
);
CREATE TABLE embed_observed(       -- nodes whose text is counted in embed_terms (so nothing counts twice)
  node_id BIGINT PRIMARY KEY
);
CREATE TABLE embed_stats(
  key TEXT PRIMARY KEY,
  value BIGINT NOT NULL
);
CREATE TABLE embed_common(            -- running sum of all context vectors: the direction every word shares
  id BIGINT PRIMARY KEY CHECK (id = 1),
  vec BYTEA NOT NULL
);
"""
COMMON_DDL = """
CREATE TABLE embed_common(            -- running sum of all context vectors: the direction every word shares
  id INTEGER PRIMARY KEY CHECK (id = 1),
  vec BLOB NOT NULL
);
"""
register_migrations("embed-default", [("0001_terms", DDL), ("0002_common_direction", COMMON_DDL)],
                    postgresql=[("pg0001_baseline", PG_DDL)])
