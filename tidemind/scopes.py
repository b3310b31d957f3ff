"""Which scopes a server or hook works in, when nobody said: kept light (hooks import it)."""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

MAX_SCOPE_CHARS = 100
_SCOPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+\-]{0,%d}" % (MAX_SCOPE_CHARS - 1))
_INVISIBLE = ("Cc", "Cf", "Cs", "Zl", "Zp")        # control, format (bidi, zero-width, tags), surrogates, separators


def check_scope(scope) -> str:
    """The one check of a scope name, wherever one enters (--scope, config `default_scope` and
    `scopes`, the MCP server's scopes and a tool's `scope`, import --scope, install-hooks --scope,
    a repository's derived scope): the name in NFC, refused when it has surrounding whitespace, a
    control or format character, or a character outside letters, digits and _.:/@+-. The
    pattern was matched with `$`, which also matches before a final newline: `--scope
    $'personal\\n'` made a scope shown as "personal" that no read ever named."""
    from .errors import InvalidInput

    if not isinstance(scope, str):
        raise InvalidInput(f"a scope is text, got {type(scope).__name__} {str(scope)[:40]!r}")
    scope = unicodedata.normalize("NFC", scope)
    bad = next((c for c in scope if unicodedata.category(c) in _INVISIBLE), None)
    if bad is not None:
        raise InvalidInput(f"invalid scope {scope[:60]!r}: it holds a control or format character (U+{ord(bad):04X});"
                           " use letters, digits and _.:/@+-")
    if scope != scope.strip():
        raise InvalidInput(f"invalid scope {scope[:60]!r}: it begins or ends with whitespace")
    if not _SCOPE.fullmatch(scope):
        raise InvalidInput(f"invalid scope {scope[:60]!r}: use 1-{MAX_SCOPE_CHARS} letters, digits and _.:/@+-,"
                           " beginning with a letter or digit (e.g. personal, project:tidemind)")
    return scope


def derive_scopes(cli_scopes: list[str] | None, settings, cwd: Path | None = None, conn=None) -> list[str]:
    """--scope values, else config `scopes`, else the git repository's own scope
    (project:<name>@<id>, see `repo_scope`; `conn`, the store's connection, lets a repository
    keep the scope an older TideMind gave it), else personal."""
    if cli_scopes:
        return [check_scope(s) for s in cli_scopes]
    configured = settings.extra.get("scopes")
    if configured:
        if isinstance(configured, str):
            configured = [configured]
        return [check_scope(s) for s in configured]
    repo = repository_of(cwd)
    return [repo_scope(repo, conn)] if repo else ["personal"]


def legacy_readable(memory, cli_scopes: list[str] | None, settings, cwd: Path | None = None) -> None:
    """Memories a repository's sessions wrote under its older names stay readable there, never
    writable (new memories go to the repository's own scope): project:<name> (shared then by
    every repository of that name), and project:<name>@<6 hex> of each root commit it has had
    whose old scope the store binds to that very root (a merge of another history changed the
    old id, so a repository may have memories under two of them)."""
    if cli_scopes or settings.extra.get("scopes") or memory.readable is None:
        return
    repo = repository_of(cwd)
    if repo is None:
        return
    from .store import nodes, scope_claims

    in_use = set(nodes.scopes_in_use(memory.conn))
    extra = [legacy_repo_scope(repo)] if legacy_repo_scope(repo) in in_use else []
    names = _names(repo)
    maybe = [s for s in in_use if s.startswith(tuple(f"project:{n}@" for n in names))
             and re.fullmatch(r"[0-9a-f]{%d}" % LEGACY_ID_CHARS, s.rsplit("@", 1)[1])]
    if maybe:                         # (only then ask git: this runs before every prompt)
        claimed = {who: scope for scope in maybe if (who := scope_claims.claimant(memory.conn, scope))}
        extra += [claimed[f"root:{r}"] for r in _roots(repo) if f"root:{r}" in claimed]
    for scope in extra:
        if scope not in memory.readable:
            memory.readable.append(scope)


def repository_of(cwd: Path | None = None) -> Path | None:
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


SCOPE_ID_KEY, SCOPE_NAME_KEY = "tidemind.scope-id", "tidemind.scope-name"
LEGACY_ID_CHARS = 6               # an older TideMind's id: this many hex digits of the root commit
_RECORDED_ID = re.compile(r"[0-9a-f]{6,64}")


def repo_scope(folder: Path, conn=None) -> str:
    """project:<name>@<id>, the scope a repository's sessions read and write.

    The id is random (a uuid4, 32 hex digits), made on the repository's first use and recorded
    in its local git config (`git config --local tidemind.scope-id`, with the name beside it as
    `tidemind.scope-name`), then read back: nobody can forge it from outside the repository, a
    merge of another history cannot change it, nor can renaming the folder. A clone is another
    checkout with its own id; `git config tidemind.scope-id <id>` in it shares one.

    The id was the first 6 hex digits of the root commit (the lowest of them, sorted), which a
    repository can forge in seconds and a merge changed. Memories an older TideMind wrote under
    that id must not vanish: when nothing is recorded yet and the store (`conn`) holds a scope
    `project:<name>@<6 hex of one of this repository's roots>`, the repository keeps it (the one
    the old code used last: of the lowest root) and records that id. Keeping it is bound in the
    store to the full root commit (store.scope_claims): the first repository to keep an old
    scope claims it, and another repository whose root only shares the 6 digits (a forged one)
    gets a new id of its own instead. What is left open: a forged repository opened before the
    one it imitates, after the upgrade, claims the old scope first (as it could read it before);
    clones and forks of one history share their root, and so share the old scope as they did.
    Where git config cannot be written (read-only, git missing), the id is the full root commit
    of the first-parent line (unforgeable, and unchanged by merging another history into it),
    else a 128-bit hash of the path; those are taken over too once the config can be written.

    A non-ASCII name is kept as punycode of its NFC form ("日記" -> xn--...; the same folder
    name written in NFD, as macOS does, is the same scope)."""
    recorded, named = _config_ids(folder)
    if recorded is not None:
        if not _RECORDED_ID.fullmatch(recorded):
            from .errors import InvalidInput

            raise InvalidInput(f"{SCOPE_ID_KEY} in the git config of {folder} is {recorded[:40]!r}, not a TideMind"
                               f" scope id (6 to 64 hex digits); fix it or remove it (git config --local --unset-all"
                               f" {SCOPE_ID_KEY})")
        return _scope(named if named and _usable_name(named) else _names(folder)[0], recorded)
    roots = _roots(folder)
    kept = _kept_scope(folder, roots, conn)
    if kept is not None:
        name, ident, claimed = kept
        if claimed:
            _record(folder, ident, name)
        return _scope(name, ident)
    import uuid

    name, ident = _names(folder)[0], uuid.uuid4().hex
    if _record(folder, ident, name):
        return _scope(*_recorded(folder, ident, name))
    first = _first_parent_root(folder)
    return _scope(name, first or _path_hash(folder)[:32])


def legacy_repo_scope(folder: Path) -> str:
    """What repositories were called before the id: memories written then stay readable there."""
    name = re.sub(r"[^A-Za-z0-9_.\-]+", "-", folder.name).strip("-") or "repo"
    return f"project:{name}"


def _scope(name: str, ident: str) -> str:
    return check_scope(f"project:{name[:MAX_SCOPE_CHARS - len('project:@') - len(ident)]}@{ident}")


def _usable_name(name: str) -> bool:
    return re.fullmatch(r"[A-Za-z0-9_.\-]{1,80}", name) is not None


def _ascii_name(name: str) -> str:
    if not name.isascii():
        try:
            name = "xn--" + name.encode("punycode").decode("ascii")
        except UnicodeError:
            name = ""
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", name).strip("-") or "repo"


def _names(folder: Path) -> list[str]:
    """The folder's name as a scope name (of its NFC form), then as an older TideMind wrote it."""
    names = [_ascii_name(unicodedata.normalize("NFC", folder.name))[:80], _ascii_name(folder.name)[:80]]
    return list(dict.fromkeys(names))


def _path_hash(folder: Path) -> str:
    import hashlib

    return hashlib.sha256(str(folder.resolve()).encode("utf-8", "surrogatepass")).hexdigest()


def _kept_scope(folder: Path, roots: list[str], conn) -> tuple[str, str, bool] | None:
    """(name, id, claimed) of a scope an older version (or this one, without git config) gave this
    repository that the store holds memories under; None when there is none it may keep."""
    if conn is None:
        return None
    from .store import immediate, nodes, scope_claims
    from .errors import StorageError, StoreBusy
    from .timeutil import system_clock, to_iso

    in_use = set(nodes.scopes_in_use(conn))
    names = _names(folder)
    first = _first_parent_root(folder)
    for ident in dict.fromkeys([first, *roots, _path_hash(folder)[:32]]):   # unforgeable ids: nothing to bind
        for name in names:
            if ident and _scope(name, ident) in in_use:
                return name, ident, True
    path_claim = f"path:{_path_hash(folder)}"
    legacy = [(r[:LEGACY_ID_CHARS], f"root:{r}") for r in sorted(roots)]
    legacy.append((_path_hash(folder)[:LEGACY_ID_CHARS], path_claim))     # (a repository with no commit then)
    found = [(name, ident, who) for ident, who in legacy for name in names if _scope(name, ident) in in_use]
    if not found:
        return None
    try:
        with immediate(conn):
            mine = [(name, ident) for name, ident, who in found
                    if scope_claims.claim(conn, _scope(name, ident), who, to_iso(system_clock())) == who]
        claimed = True
    except (StoreBusy, StorageError):      # (a read-only or busy store: keep it for this session, bind it later)
        mine = [(name, ident) for name, ident, who in found
                if scope_claims.claimant(conn, _scope(name, ident)) in (None, who)]
        claimed = False
    return (*mine[0], claimed) if mine else None


def _git(folder: Path, *args: str) -> str | None:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items()            # the folder's own repository, not the caller's
           if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_CONFIG")}
    try:
        found = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=3, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout if found.returncode == 0 else None


def _config_ids(folder: Path) -> tuple[str | None, str | None]:
    """(scope id, scope name) recorded in the repository's git config, in one call (this runs
    before every prompt). The first value of each: two first uses at once each add theirs, and
    the first added wins."""
    found = _git(folder, "config", "--local", "--get-regexp", r"^tidemind\.scope-(id|name)$")
    values: dict[str, str] = {}
    for line in (found or "").splitlines():
        key, _, value = line.partition(" ")
        values.setdefault(key, value.strip())
    return values.get(SCOPE_ID_KEY), values.get(SCOPE_NAME_KEY)


def _record(folder: Path, ident: str, name: str) -> bool:
    if _git(folder, "config", "--local", "--add", SCOPE_ID_KEY, ident) is None:
        return False
    if _config_ids(folder)[1] is None:
        _git(folder, "config", "--local", SCOPE_NAME_KEY, name)
    return True


def _recorded(folder: Path, ident: str, name: str) -> tuple[str, str]:
    """What the config holds after recording: another session's id, if it recorded one first."""
    first, named = _config_ids(folder)
    if first and _RECORDED_ID.fullmatch(first):
        return (named if named and _usable_name(named) else name), first
    return name, ident


def _roots(folder: Path) -> list[str]:
    found = _git(folder, "rev-list", "--max-parents=0", "HEAD")
    return sorted(r for r in (found or "").split() if re.fullmatch(r"[0-9a-f]{40,64}", r))


def _first_parent_root(folder: Path) -> str | None:
    found = _git(folder, "rev-list", "--first-parent", "--max-parents=0", "HEAD")
    roots = [r for r in (found or "").split() if re.fullmatch(r"[0-9a-f]{40,64}", r)]
    return roots[-1] if roots else None
