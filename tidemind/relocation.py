"""Moving a memory to another store: `tidemind migrate --to postgresql://…` (or to a SQLite file).

The store is copied whole (store/transfer.py: every table, the vectors, the indexes rebuilt) in
one transaction on the target, checked before it commits (row counts, the authored text's
digests); then the target's stream of everything said is written from its captures, and a sample
of memories is looked up in both stores to see that recall finds them the same way. The source
is only read. A target that holds anything (rows, or stream files of its own) is refused, and a
SQLite file the copy made is removed again when the copy fails.
"""
from __future__ import annotations

import contextlib
import dataclasses
import re
from pathlib import Path

from .errors import InvalidInput
from .store import captures, nodes, stream, transfer
from .store.backend import backend_for, locate
from .store.connection import immediate, snapshot

SAMPLE = 20          # memories looked up in both stores after the copy
RECALL_DEPTH = 10    # how many results of each lookup are compared
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")


def migrate(memory, target: str, sample: int = SAMPLE) -> dict:
    """Copy `memory`'s store into the empty store `target` names (a URL or a SQLite path).
    Returns what was copied and how the two stores compared."""
    if not isinstance(target, str) or not target.strip():
        raise InvalidInput("name the store to copy into: --to postgresql://… or a SQLite file path")
    settings = memory.settings
    source, destination = settings.store_location, locate(target, settings.home)
    if destination == source:
        raise InvalidInput("the target is the store itself")
    into = dataclasses.replace(settings, store=target)
    if into.stream_dir != settings.stream_dir and any(into.stream_dir.glob("*.md")):
        raise InvalidInput(f"the target's stream folder {into.stream_dir} already holds entries: a copy goes only"
                           " into an empty store")
    backend = backend_for(destination)
    if destination.path is not None and destination.path.exists():
        _refuse_foreign_file(destination.path)
    made = destination.path is not None and not destination.path.exists()
    if made:
        destination.path.parent.mkdir(parents=True, exist_ok=True)
    conn = reader = None
    try:
        try:
            conn = backend.open(destination, settings.busy_timeout_ms)
            reader = backend_for(source).open_reader(source, settings.busy_timeout_ms, read_only=True)
            with snapshot(reader), immediate(conn):
                report = transfer.copy(reader, conn)
            written = 0
            if into.stream_dir != settings.stream_dir:
                written = stream.rebuild(into.stream_dir, lambda: captures.for_stream(conn))
        finally:
            for c in (reader, conn):
                if c is not None:
                    with contextlib.suppress(Exception):
                        c.close()
    except BaseException:
        if made:                          # (closed first: the file and its log can go)
            _remove_sqlite(destination.path)
        raise
    report["recall"] = _compare_recall(memory, into, sample)
    return {"from": str(source), "to": str(destination), "stream_entries": written, **report}


def _refuse_foreign_file(path: Path) -> None:
    """A file that is not a TideMind store is left as it is: opening it would migrate it first."""
    import apsw

    from .store.connection import connect

    try:
        conn = connect(path, readonly=True)
        try:
            names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        finally:
            conn.close()
    except apsw.Error as exc:
        raise InvalidInput(f"{path} is not a SQLite store this can copy into ({exc}); name a new file") from None
    if names and "migrations" not in names:
        raise InvalidInput(f"{path} holds tables of something else ({', '.join(names[:5])}): name a new file")


def _remove_sqlite(path: Path) -> None:
    for leftover in [path] + [path.with_name(path.name + end) for end in ("-wal", "-shm", "-journal", "-waiting")]:
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()


def _queries(memory, sample: int) -> list[tuple[int, str, str]]:
    """(node id, scope, query) for up to `sample` memories spread over the store: each query is
    the first words of a memory, as a person half remembering it would type them."""
    picked = []
    for scope in nodes.scopes_in_use(memory.conn):
        picked += [(i, scope) for i in nodes.visible_ids(memory.conn, [scope])]
    picked.sort()
    if len(picked) > sample:
        step = len(picked) / sample
        picked = [picked[int(k * step)] for k in range(sample)]
    out = []
    for node_id, scope in picked:
        row = nodes.get_visible_many(memory.conn, [node_id], [scope], ("id", "content")).get(node_id)
        words = list(dict.fromkeys(_WORD.findall(row["content"] if row else "")))[:6]
        if len(words) >= 2:
            out.append((node_id, scope, " ".join(words)))
    return out


def _compare_recall(memory, into, sample: int) -> dict:
    """Each sampled query's first RECALL_DEPTH results in both stores. Between two stores of one
    backend they must be the same ids in the same order. Between backends the full-text engines
    pick their candidates differently (FTS5's bm25 against PostgreSQL's ranking; both are scored
    again by the same BM25, search/lexical.py), so the order may differ where scores are near;
    what must hold is that every sampled memory the source finds, the copy finds too."""
    from .memory import Memory

    queries = _queries(memory, sample)
    same, differ, lost = 0, [], []
    across = into.store_location.scheme != memory.settings.store_location.scheme
    with Memory(into, clock=memory.clock) as copy:
        for node_id, scope, query in queries:
            ours = [i["id"] for i in memory.recall(query, scopes=[scope], limit=RECALL_DEPTH, record=False)["items"]]
            theirs = [i["id"] for i in copy.recall(query, scopes=[scope], limit=RECALL_DEPTH, record=False)["items"]]
            if ours == theirs:
                same += 1
                continue
            differ.append({"query": query, "scope": scope, "node": node_id, "source": ours, "target": theirs})
            if node_id in ours and node_id not in theirs:
                lost.append(node_id)
    ok = not lost if across else same == len(queries)
    return {"queries": len(queries), "same_order": same, "found_by_source_not_target": lost,
            "differ": differ, "ok": ok,
            "rule": "the sampled memories found alike (another backend ranks near scores in its own order)"
                    if across else "the same results in the same order"}
