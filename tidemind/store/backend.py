"""Which database holds the store: the seam a second backend plugs into.

A store is named by the `store` setting (config key `store`, environment TIDEMIND_STORE, or the
CLI's `--store`): a path to a SQLite file, `sqlite:///absolute/path.db`, or a URL whose scheme
names another backend (`postgresql://...`). Unset, it is `tidemind.db` in the home, as always.

`Memory` opens its connection here and nowhere else; a backend is an object with `open`,
`open_read_only`, `open_reader` and `backup`, registered under its URL schemes: SQLite (the
embedded default) and PostgreSQL (store/postgresql.py). Above this module nothing knows which
backend it talks to; the table modules of `store/` hold the SQL, in both dialects where they
differ (`connection.dialect`), and each owner of tables registers its migrations per dialect
(docs/DESIGN.md §5).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit

from ..errors import InvalidInput

DEFAULT_FILE = "tidemind.db"


@dataclass(frozen=True)
class Location:
    """Where a store is: its backend's scheme, and a file path (SQLite) or the URL it was given."""
    scheme: str
    target: str

    @property
    def path(self) -> Path | None:
        return Path(self.target) if self.scheme == "sqlite" else None

    def __str__(self) -> str:
        """How the store is named in messages: a URL by its scheme and host alone (a password may
        sit anywhere in the rest, unescaped: 'postgresql://u:pa/ss#x@host/db')."""
        if self.scheme == "sqlite":
            return self.target
        return f"{self.scheme}://{_host(self.target)}"


def _host(url: str) -> str:
    """The host of a URL, or '…' when it cannot be told apart from what may be a password."""
    rest = url.partition("://")[2]
    authority = rest.split("/", 1)[0] if rest.count("@") == 0 else rest.rsplit("@", 1)[1].split("/", 1)[0]
    host = authority.split(":", 1)[0] if not authority.startswith("[") else authority.split("]", 1)[0] + "]"
    return host if host and all(c.isalnum() or c in ".-[]:" for c in host) else "…"


@runtime_checkable
class Backend(Protocol):
    schemes: tuple[str, ...]

    def open(self, location: Location, busy_timeout_ms: int): ...

    def open_read_only(self, location: Location, busy_timeout_ms: int, why: str): ...

    def open_reader(self, location: Location, busy_timeout_ms: int, read_only: bool): ...

    def size(self, conn, location: Location) -> int: ...

    def backup(self, conn, target: Path) -> None: ...


_BACKENDS: dict[str, Backend] = {}


def register(backend: Backend) -> None:
    for scheme in backend.schemes:
        _BACKENDS[scheme] = backend


def schemes() -> list[str]:
    return sorted(_BACKENDS)


def locate(store: str | None, home: Path) -> Location:
    """The store a setting names. Empty: the home's own SQLite file; a relative path is read
    against the home (a config file's path means the same wherever TideMind is run from)."""
    text = (store or "").strip()
    if not text:
        return Location("sqlite", str(home / DEFAULT_FILE))
    scheme, sep, rest = text.partition("://")
    if not sep or (len(scheme) == 1 and scheme.isalpha()):       # a plain path (or a Windows drive)
        return Location("sqlite", str((home / Path(text).expanduser()).resolve()))
    scheme = scheme.lower()
    if scheme in ("sqlite", "file"):
        try:
            path = unquote(urlsplit(text).path)
        except ValueError:
            raise InvalidInput("the store setting is not a URL that can be read; write sqlite:///absolute/path.db"
                               ) from None
        if path.startswith("/~") or re.match(r"/[A-Za-z]:[/\\]", path):
            path = path[1:]                   # sqlite:///~/x.db, sqlite:///C:/data/x.db
        if not path:
            raise InvalidInput("the store setting names no file: write sqlite:///absolute/path.db")
        return Location("sqlite", str((home / Path(path).expanduser()).resolve()))
    if scheme == "postgres":
        scheme = "postgresql"
    return Location(scheme, text)


def backend_for(location: Location) -> Backend:
    found = _BACKENDS.get(location.scheme)
    if found is None:
        raise InvalidInput(f"store {location}: no backend for {location.scheme}:// (this version has:"
                           f" {', '.join(schemes())})")
    return found


class SQLiteBackend:
    """The embedded default: one file, FTS5 and sqlite-vec, opened in WAL mode."""
    schemes = ("sqlite",)

    def open(self, location: Location, busy_timeout_ms: int):
        from . import open_store
        return open_store(location.path, busy_timeout_ms)

    def open_read_only(self, location: Location, busy_timeout_ms: int, why: str):
        from . import open_store_read_only
        return open_store_read_only(location.path, busy_timeout_ms, why)

    def size(self, conn, location: Location) -> int:
        """Bytes the store takes."""
        return location.path.stat().st_size

    def open_reader(self, location: Location, busy_timeout_ms: int, read_only: bool):
        """A second connection for reads beside the first (recall's vector arm)."""
        from .connection import connect
        return connect(location.path, busy_timeout_ms, readonly=read_only)

    def backup(self, conn, target: Path) -> None:
        from . import backup_to
        backup_to(conn, target)


register(SQLiteBackend())


def _register_postgresql() -> None:
    from .postgresql import PostgreSQLBackend
    register(PostgreSQLBackend())


_register_postgresql()
