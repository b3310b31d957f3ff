"""The FTS5 index: external content over `nodes` (authored text + mirrored derived text).

Triggers keep it in step with `nodes`, so no write path can forget to index. User text never
reaches MATCH as syntax: `match_expression` quotes every token.
"""
from __future__ import annotations

import functools
import hashlib
import re
import weakref
from collections import Counter
from typing import Sequence

import apsw

from ..text import TextMemo
from .connection import data_version, dialect

DDL = """
CREATE VIRTUAL TABLE nodes_fts USING fts5(
  content, derived_text, content='nodes', content_rowid='id', tokenize='porter unicode61'
);
-- document frequency per scope and Porter stem of authored text, keyed by a 64-bit hash of the
-- stem (no text, so forget leaves nothing here); term_id 0 holds the scope's document count.
-- fts5vocab gives store-wide numbers only, and walks a term's whole doclist to count it
-- (~1 ms per common term at 100k).
CREATE TABLE fts_terms(
  scope TEXT NOT NULL,
  term_id INTEGER NOT NULL,
  df INTEGER NOT NULL,
  PRIMARY KEY(scope, term_id)
) WITHOUT ROWID;
CREATE TRIGGER nodes_fts_ai AFTER INSERT ON nodes BEGIN
  INSERT INTO nodes_fts(rowid, content, derived_text) VALUES (new.id, new.content, new.derived_text);
END;
CREATE TRIGGER nodes_fts_ad AFTER DELETE ON nodes BEGIN
  INSERT INTO nodes_fts(nodes_fts, rowid, content, derived_text) VALUES ('delete', old.id, old.content, old.derived_text);
END;
CREATE TRIGGER nodes_fts_au AFTER UPDATE OF content, derived_text ON nodes BEGIN
  INSERT INTO nodes_fts(nodes_fts, rowid, content, derived_text) VALUES ('delete', old.id, old.content, old.derived_text);
  INSERT INTO nodes_fts(rowid, content, derived_text) VALUES (new.id, new.content, new.derived_text);
END;
"""

# The same tables on PostgreSQL (the baseline a PostgreSQL store starts from: store/migrations.py)
PG_DDL = """
CREATE TABLE fts_terms(
  scope TEXT NOT NULL,
  term_id BIGINT NOT NULL,
  df BIGINT NOT NULL,
  PRIMARY KEY(scope, term_id)
);
-- PostgreSQL's own full text search in place of FTS5: one weighted tsvector per memory, kept by a
-- trigger as FTS5's are (so no write path can forget it), with the column weights of WEIGHTS as
-- the labels A (authored) B (clarified) C (derived) D (context)
ALTER TABLE nodes ADD COLUMN search_vector tsvector NOT NULL DEFAULT ''::tsvector;
CREATE FUNCTION nodes_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.search_vector :=
    setweight(to_tsvector('english', NEW.content), 'A') ||
    setweight(to_tsvector('english', NEW.clarified_text), 'B') ||
    setweight(to_tsvector('english', NEW.derived_text), 'C') ||
    setweight(to_tsvector('english', NEW.context_text), 'D');
  RETURN NEW;
END $$;
CREATE TRIGGER nodes_search_vector BEFORE INSERT OR UPDATE OF content, derived_text, clarified_text, context_text
  ON nodes FOR EACH ROW EXECUTE FUNCTION nodes_search_vector();
CREATE INDEX nodes_search ON nodes USING gin(search_vector);
"""

# The clarified layer (migration 0016): a third column, between what was said and what a model
# derived. The migration rebuilds the index from `nodes`, which holds all three texts.
CLARIFIED_REBUILD = """
DROP TRIGGER nodes_fts_ai;
DROP TRIGGER nodes_fts_ad;
DROP TRIGGER nodes_fts_au;
DROP TABLE nodes_fts;
CREATE VIRTUAL TABLE nodes_fts USING fts5(
  content, derived_text, clarified_text, content='nodes', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER nodes_fts_ai AFTER INSERT ON nodes BEGIN
  INSERT INTO nodes_fts(rowid, content, derived_text, clarified_text)
  VALUES (new.id, new.content, new.derived_text, new.clarified_text);
END;
CREATE TRIGGER nodes_fts_ad AFTER DELETE ON nodes BEGIN
  INSERT INTO nodes_fts(nodes_fts, rowid, content, derived_text, clarified_text)
  VALUES ('delete', old.id, old.content, old.derived_text, old.clarified_text);
END;
CREATE TRIGGER nodes_fts_au AFTER UPDATE OF content, derived_text, clarified_text ON nodes BEGIN
  INSERT INTO nodes_fts(nodes_fts, rowid, content, derived_text, clarified_text)
  VALUES ('delete', old.id, old.content, old.derived_text, old.clarified_text);
  INSERT INTO nodes_fts(rowid, content, derived_text, clarified_text)
  VALUES (new.id, new.content, new.derived_text, new.clarified_text);
END;
INSERT INTO nodes_fts(nodes_fts) VALUES ('rebuild');
"""

# Where an imported unit sits (migration 0017): its note's title, aliases and properties and the
# headings above it, written by the person but outside the unit's own words (see
# importers/context.py). A fourth column, so "how do I embed a file" finds the section under the
# note "Embed files" that never repeats those words.
CONTEXT_REBUILD = """
DROP TRIGGER nodes_fts_ai;
DROP TRIGGER nodes_fts_ad;
DROP TRIGGER nodes_fts_au;
DROP TABLE nodes_fts;
CREATE VIRTUAL TABLE nodes_fts USING fts5(
  content, derived_text, clarified_text, context_text, content='nodes', content_rowid='id',
  tokenize='porter unicode61'
);
CREATE TRIGGER nodes_fts_ai AFTER INSERT ON nodes BEGIN
  INSERT INTO nodes_fts(rowid, content, derived_text, clarified_text, context_text)
  VALUES (new.id, new.content, new.derived_text, new.clarified_text, new.context_text);
END;
CREATE TRIGGER nodes_fts_ad AFTER DELETE ON nodes BEGIN
  INSERT INTO nodes_fts(nodes_fts, rowid, content, derived_text, clarified_text, context_text)
  VALUES ('delete', old.id, old.content, old.derived_text, old.clarified_text, old.context_text);
END;
CREATE TRIGGER nodes_fts_au AFTER UPDATE OF content, derived_text, clarified_text, context_text ON nodes BEGIN
  INSERT INTO nodes_fts(nodes_fts, rowid, content, derived_text, clarified_text, context_text)
  VALUES ('delete', old.id, old.content, old.derived_text, old.clarified_text, old.context_text);
  INSERT INTO nodes_fts(rowid, content, derived_text, clarified_text, context_text)
  VALUES (new.id, new.content, new.derived_text, new.clarified_text, new.context_text);
END;
INSERT INTO nodes_fts(nodes_fts) VALUES ('rebuild');
"""

# Every scope's memories share one index, so a search of one scope of a store of ten matched, joined
# and scored the other nine scopes' rows before the predicate dropped them (at 100k memories, the
# join cost more than the match). Migration 0029 indexes each memory's scope as one token of its
# own (nodes.scope_key: "s" + the scope's hex + "0", which no tokenizer rule changes and no word
# is), so a search names its scopes in MATCH and FTS5 intersects them first. The predicate still
# decides what is visible; the token only narrows what is scored.
SCOPE_REBUILD = """
DROP TRIGGER nodes_fts_ai;
DROP TRIGGER nodes_fts_ad;
DROP TRIGGER nodes_fts_au;
DROP TABLE nodes_fts;
CREATE VIRTUAL TABLE nodes_fts USING fts5(
  content, derived_text, clarified_text, context_text, scope_key, content='nodes', content_rowid='id',
  tokenize='porter unicode61'
);
CREATE TRIGGER nodes_fts_ai AFTER INSERT ON nodes BEGIN
  INSERT INTO nodes_fts(rowid, content, derived_text, clarified_text, context_text, scope_key)
  VALUES (new.id, new.content, new.derived_text, new.clarified_text, new.context_text, new.scope_key);
END;
CREATE TRIGGER nodes_fts_ad AFTER DELETE ON nodes BEGIN
  INSERT INTO nodes_fts(nodes_fts, rowid, content, derived_text, clarified_text, context_text, scope_key)
  VALUES ('delete', old.id, old.content, old.derived_text, old.clarified_text, old.context_text, old.scope_key);
END;
CREATE TRIGGER nodes_fts_au AFTER UPDATE OF content, derived_text, clarified_text, context_text, scope ON nodes BEGIN
  INSERT INTO nodes_fts(nodes_fts, rowid, content, derived_text, clarified_text, context_text, scope_key)
  VALUES ('delete', old.id, old.content, old.derived_text, old.clarified_text, old.context_text, old.scope_key);
  INSERT INTO nodes_fts(rowid, content, derived_text, clarified_text, context_text, scope_key)
  VALUES (new.id, new.content, new.derived_text, new.clarified_text, new.context_text, new.scope_key);
END;
INSERT INTO nodes_fts(nodes_fts) VALUES ('rebuild');
"""


def scope_token(scope: str) -> str:
    """The token nodes.scope_key indexes for a scope (the same expression in Python)."""
    return "s" + scope.encode("utf-8").hex() + "0"


# the scope tokens narrow a search only where the scopes read are a small part of the store: over
# most of it, FTS5 walks the tokens' row lists (every row) and scores them for nothing (a store of
# one scope: 0.2 -> 2.6 ms a one-word search at 100k, found by review)
TOKEN_BELOW_SHARE = 0.3


def in_scopes(conn: apsw.Connection, expression: str, scopes: Sequence[str] | None) -> str:
    """`expression` over the text columns only (a scope token is no word), confined to these
    scopes' memories when they are a small share of the store (None: every scope)."""
    texts = f"{{{' '.join(COLUMNS)}}} : ({expression})"
    if not scopes:
        return texts
    documents, _ = scope_sizes(conn, scopes)
    if documents > TOKEN_BELOW_SHARE * _all_documents(conn):
        return texts
    return f"{texts} AND scope_key : (" + " OR ".join(f'"{scope_token(s)}"' for s in dict.fromkeys(scopes)) + ")"


def _all_documents(conn: apsw.Connection) -> int:
    kept = _frequency_cache(conn)
    if "all documents" not in kept:
        kept["all documents"] = counted_documents(conn)
    return kept["all documents"]


# authored text counts double the derived text (a model's title should not outrank what was said);
# a person's clarification sits between them; an imported unit's context (shared by every section
# of its note, so it tells the sections apart less than their own words do) weighs like derived text
COLUMNS = ("content", "derived_text", "clarified_text", "context_text")
WEIGHTS = (1.0, 0.5, 0.75, 0.5)
# the columns each backend's full-text index keeps for itself (FTS5's scope token, PostgreSQL's
# tsvector): kept by triggers on every write, never copied from one store to another
INDEX_COLUMNS = frozenset({("nodes", "scope_key"), ("nodes", "search_vector")})
_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text or "")]


def match_expression(terms: Sequence[str], operator: str = "OR") -> str | None:
    """Quoted terms joined by OR (or AND): FTS5 syntax characters in user text become plain tokens."""
    if operator not in ("OR", "AND"):
        raise ValueError(operator)
    unique = list(dict.fromkeys(t for t in terms if t))
    if not unique:
        return None
    return f" {operator} ".join('"' + t.replace('"', '""') + '"' for t in unique)


_TOKENIZERS: "weakref.WeakKeyDictionary[apsw.Connection, object]" = weakref.WeakKeyDictionary()


# the same texts are tokenized again and again (recall rescores the turns that come back query
# after query; 1.5 ms of a 10 ms recall on conversations-dev): their terms are kept, for texts
# of a few kilobytes, up to a bound (the tokenizer is the same porter-over-unicode61 everywhere)
_STEMMED = TextMemo(texts=20_000)


def stems(conn: apsw.Connection, text: str) -> list[str]:
    """The exact terms FTS5 indexes for `text` (porter over unicode61). On every backend: the
    frequencies recall weighs words by are counted in these terms, whoever finds the candidates."""
    return list(_STEMMED.get(text, _tokenize, conn, text))


def _tokenize(conn: apsw.Connection, text: str) -> tuple[str, ...]:
    owner = conn if dialect(conn) == "sqlite" else _tokenizing_connection()
    tok = _TOKENIZERS.get(owner)
    if tok is None:
        tok = _TOKENIZERS[owner] = owner.fts5_tokenizer("porter", ["unicode61"])
    # the terms alone, as plain strings (no offsets: nothing here reads them)
    return tuple(tok(text.encode("utf-8"), apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=False,
                     include_colocated=False))


@functools.lru_cache(maxsize=1)
def _tokenizing_connection() -> apsw.Connection:
    """An empty in-memory SQLite, for its FTS5 tokenizer (a store on another backend has none)."""
    return apsw.Connection(":memory:")


_COUNTED = TextMemo(texts=20_000)


def stem_counts(conn: apsw.Connection, text: str) -> tuple[dict[str, int], int]:
    """({term: how often FTS5 indexes it for `text`}, the number of terms): what BM25 and the
    coverage of a candidate read, kept like `stems` for the texts recall meets again and again
    (shared: callers only read it)."""
    return _COUNTED.get(text, _count_stems, conn, text)


def _count_stems(conn: apsw.Connection, text: str) -> tuple[dict[str, int], int]:
    found = stems(conn, text)
    return Counter(found), len(found)       # (Counter counts in C: a candidate's text, once)


DOCUMENTS, TOKENS = 0, -1     # special rows of fts_terms: the scope's document count and its token total


def _term_id(stem: str) -> int:
    value = int.from_bytes(hashlib.blake2b(stem.encode("utf-8"), digest_size=8).digest(), "little", signed=True)
    return value if value not in (DOCUMENTS, TOKENS) else 1


def count_document(conn: apsw.Connection, scope: str, text: str, sign: int) -> None:
    """Add (+1) or remove (-1) one document's terms from its scope's frequency table, and its
    length from the scope's token total (BM25's average document length, per scope)."""
    _counts_changed(conn)
    terms = stems(conn, text)
    ids = {_term_id(s) for s in terms}
    changes = [(scope, i, max(sign, 0), sign) for i in ids | {DOCUMENTS}]
    changes.append((scope, TOKENS, max(sign, 0) * len(terms), sign * len(terms)))
    conn.executemany("INSERT INTO fts_terms(scope, term_id, df) VALUES(?, ?, ?) ON CONFLICT(scope, term_id)"
                     " DO UPDATE SET df = fts_terms.df + ?", changes)
    if sign < 0:
        conn.executemany("DELETE FROM fts_terms WHERE scope = ? AND term_id = ? AND df <= 0",
                         [(scope, i) for i in ids | {DOCUMENTS, TOKENS}])


def count_tokens(conn: apsw.Connection) -> None:
    """Migration: the token totals for stores written before they were kept."""
    _counts_changed(conn)
    conn.execute("DELETE FROM fts_terms WHERE term_id = ?", (TOKENS,))
    totals: dict[str, int] = {}
    for scope, content in conn.execute("SELECT scope, content FROM nodes WHERE status != 'forgotten'"):
        totals[scope] = totals.get(scope, 0) + len(stems(conn, content))
    conn.executemany("INSERT INTO fts_terms(scope, term_id, df) VALUES(?, ?, ?)",
                     [(scope, TOKENS, n) for scope, n in totals.items() if n > 0])


def scope_sizes(conn: apsw.Connection, scopes: Sequence[str]) -> tuple[int, int]:
    """(documents, tokens) summed over `scopes`."""
    kept = _frequency_cache(conn)
    key = (tuple(sorted(scopes)), "sizes")
    if key not in kept:
        marks = ",".join("?" * len(scopes))
        found = dict(conn.execute(f"SELECT term_id, sum(df) FROM fts_terms WHERE term_id IN (?, ?)"
                                  f" AND scope IN ({marks}) GROUP BY term_id", [DOCUMENTS, TOKENS, *scopes]))
        kept[key] = (found.get(DOCUMENTS, 0), found.get(TOKENS, 0))
    return kept[key]


def document_frequencies(conn: apsw.Connection, words: Sequence[str],
                         scopes: Sequence[str] | None = None) -> tuple[dict[str, int], int]:
    """({word: df of its stem}, number of documents), summed over `scopes` (all when None)."""
    by_word = {w: st[0] if (st := stems(conn, w)) else None for w in words}
    df, n_docs = stem_frequencies(conn, [s for s in by_word.values() if s is not None], scopes)
    return {w: df.get(s, 0) if s is not None else 0 for w, s in by_word.items()}, n_docs


# A recall reads its words' frequencies three times (to prune the search, to score, to weigh the
# evidence), and the same words come back query after query: read once, they are kept for the
# connection until the counts change (this connection writing them, `count_document`, or another
# connection committing anything, connection.data_version; a recall's own record of itself changes
# nothing here). Never inside a transaction: what it wrote may yet be rolled back. Bounded.
_FREQUENCIES: "weakref.WeakKeyDictionary[apsw.Connection, tuple[tuple[int, int], dict]]" = weakref.WeakKeyDictionary()
_WRITES: "weakref.WeakKeyDictionary[apsw.Connection, int]" = weakref.WeakKeyDictionary()
FREQUENCIES_KEPT = 50_000


def _frequency_cache(conn: apsw.Connection) -> dict[tuple, int]:
    if conn.in_transaction:
        return {}
    stamp = (_WRITES.get(conn, 0), data_version(conn))
    cached = _FREQUENCIES.get(conn)
    if cached is None or cached[0] != stamp or len(cached[1]) > FREQUENCIES_KEPT:
        cached = _FREQUENCIES[conn] = (stamp, {})
    return cached[1]


def _counts_changed(conn: apsw.Connection) -> None:
    _WRITES[conn] = _WRITES.get(conn, 0) + 1


def counts_replaced(conn: apsw.Connection) -> None:
    """The database under this connection was replaced through it (a restore's backup step: no
    count_document, and data_version only moves for other connections' writes)."""
    _counts_changed(conn)


def stem_frequencies(conn: apsw.Connection, stemmed: Sequence[str],
                     scopes: Sequence[str] | None = None) -> tuple[dict[str, int], int]:
    """({stem: documents holding it}, number of documents), summed over `scopes` (all when None)."""
    by_id = {_term_id(s): s for s in stemmed}
    ids = [*by_id, DOCUMENTS]
    where = tuple(sorted(scopes)) if scopes else None
    kept = _frequency_cache(conn)
    missing = [i for i in ids if (where, i) not in kept]
    if missing:
        marks = ",".join("?" * len(missing))
        if scopes:
            in_scopes = f" AND scope IN ({','.join('?' * len(scopes))})"
            args = [*missing, *scopes]
        else:
            in_scopes, args = "", missing
        found = dict(conn.execute(f"SELECT term_id, sum(df) FROM fts_terms WHERE term_id IN ({marks}){in_scopes}"
                                  f" GROUP BY term_id", args))
        for i in missing:
            kept[(where, i)] = found.get(i, 0)
    return {s: kept[(where, i)] for i, s in by_id.items()}, kept[(where, DOCUMENTS)]


def counted_documents(conn: apsw.Connection) -> int:
    """Documents counted over every scope: one probe of the (scope, term_id) key per scope, the
    scopes found by skipping through that key. `WHERE term_id = 0` alone scanned every row of
    fts_terms (every term of every scope), and recall asks again after each commit of another
    connection: 2.3 ms of a recall at 20,000 memories, one of the proxy's after each store."""
    for (n,) in conn.execute(
            "WITH RECURSIVE seen(scope) AS (SELECT min(scope) FROM fts_terms UNION ALL"
            " SELECT (SELECT min(t.scope) FROM fts_terms t WHERE t.scope > seen.scope) FROM seen"
            " WHERE seen.scope IS NOT NULL)"
            f" SELECT coalesce(sum(t.df), 0) FROM seen JOIN fts_terms t ON t.scope = seen.scope AND t.term_id = {DOCUMENTS}"):
        return n
    return 0


def search(conn: apsw.Connection, expression: str, where: str, params: Sequence, limit: int,
           min_rowid: int | None = None, scopes: Sequence[str] | None = None) -> list[tuple[int, float]]:
    """(node_id, bm25) best first; `where` (the visibility predicate and filters on alias n) is applied
    before LIMIT. `min_rowid` confines the match to newer rows (FTS5 seeks to it); `scopes`, the
    scopes `where` reads, to their memories before any row is scored or joined (`in_scopes`)."""
    if dialect(conn) == "postgresql":
        return _pg_search(conn, expression, where, params, limit, min_rowid, scopes)
    window = " AND nodes_fts.rowid >= ?" if min_rowid is not None else ""
    # CROSS JOIN keeps FTS5 the outer loop. Given a range on an indexed column of `nodes` (a dated
    # question's stretch of valid time), the planner otherwise walked that index and ran the whole
    # MATCH again for every row in the stretch: 30-100 ms a search on conversations-dev, 0.2 ms so
    sql = (f"SELECT n.id, bm25(nodes_fts, {', '.join(map(str, WEIGHTS))}, 0.0) AS s FROM nodes_fts"
           f" CROSS JOIN nodes n ON n.id = nodes_fts.rowid WHERE nodes_fts MATCH ?{window} AND {where} ORDER BY s LIMIT ?")
    args = [in_scopes(conn, expression, scopes), *([min_rowid] if min_rowid is not None else []), *params, limit]
    return [(i, s) for i, s in conn.execute(sql, args)]



def bare_search(conn: apsw.Connection, expression: str, limit: int,
                min_rowid: int | None = None) -> list[tuple[int, float]]:
    """The physical floor: the FTS5 query alone, no join, no predicate (bench only)."""
    if dialect(conn) == "postgresql":
        return _pg_search(conn, expression, "TRUE", [], limit, min_rowid, None)
    return list(conn.execute("SELECT rowid, bm25(nodes_fts) AS s FROM nodes_fts WHERE nodes_fts MATCH ?"
                             " AND rowid >= ? ORDER BY s LIMIT ?", (expression, min_rowid or 0, limit)))


def purge_deleted(conn: apsw.Connection) -> None:
    """Merge all segments so deleted entries (forgotten text) leave the index's pages. (PostgreSQL
    keeps a tsvector in the row itself: forget's UPDATE replaces it, and VACUUM is the server's.)"""
    if dialect(conn) != "sqlite":
        return
    conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('optimize')")


def integrity_problems(conn: apsw.Connection) -> list[str]:
    if dialect(conn) != "sqlite":
        return []           # (the tsvector is a column of the row: nothing to drift)
    try:
        conn.execute("INSERT INTO nodes_fts(nodes_fts, rank) VALUES ('integrity-check', 1)")
    except apsw.Error as exc:
        return [f"fts: {exc}"]
    return []


def rebuild(conn: apsw.Connection) -> None:
    if dialect(conn) != "sqlite":
        conn.execute("UPDATE nodes SET content = content")       # (the trigger makes each row's tsvector again)
        return
    conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('rebuild')")


# -- PostgreSQL: the same search over each row's tsvector (PG_DDL) -----------------------------------
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
# ts_rank's weights for the labels D, C, B, A (PG_DDL): context, derived, clarified, authored
_PG_WEIGHTS = "{%s}" % ", ".join(map(str, (WEIGHTS[3], WEIGHTS[1], WEIGHTS[2], WEIGHTS[0])))


def _pg_terms(expression: str) -> tuple[list[str], str]:
    """The terms and operator of a `match_expression`: each term as a tsquery phrase of its words."""
    terms = [t.replace('""', '"') for t in _QUOTED.findall(expression)]
    operator = " & " if "AND" in _QUOTED.sub("", expression).split() else " | "
    phrases = [" <-> ".join(words) for t in terms if (words := tokens(t))]
    return phrases, operator


def _pg_search(conn, expression: str, where: str, params: Sequence, limit: int, min_rowid: int | None,
               scopes: Sequence[str] | None) -> list[tuple[int, float]]:
    """PostgreSQL finds the rows; each term's rank is weighed by its BM25 IDF in the scopes read
    (fts_terms, the frequencies the rescoring uses), so a common word does not outrank a rare one
    as ts_rank alone, which knows no document frequencies, would let it."""
    phrases, operator = _pg_terms(expression)
    if not phrases:
        return []
    import math

    first = {p: (stems(conn, p.split(" <-> ")[0]) or [""])[0] for p in phrases}
    df, n_docs = stem_frequencies(conn, [s for s in first.values() if s], scopes)
    idf = {p: math.log((n_docs - df.get(first[p], 0) + 0.5) / (df.get(first[p], 0) + 0.5) + 1.0) for p in phrases}
    ranked = " + ".join(f"? * ts_rank('{_PG_WEIGHTS}', n.search_vector, to_tsquery('english', ?), 1)" for _ in phrases)
    window = " AND n.id >= ?" if min_rowid is not None else ""
    sql = (f"SELECT n.id, -({ranked}) AS s FROM nodes n WHERE n.search_vector @@ to_tsquery('english', ?){window}"
           f" AND {where} ORDER BY s, n.id LIMIT ?")
    args = [x for p in phrases for x in (idf[p], p)]
    args += [operator.join(f"({p})" for p in phrases), *([min_rowid] if min_rowid is not None else []), *params, limit]
    return [(i, s) for i, s in conn.execute(sql, args)]
