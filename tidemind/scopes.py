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


def derive_scopes(cli_scopes: list[str] | None, settings, cwd: Path | None = None) -> list[str]:
    """--scope values, else config `scopes`, else the git repository's own scope
    (project:<name>@<id>, see `repo_scope`), else personal."""
    if cli_scopes:
        return [check_scope(s) for s in cli_scopes]
    configured = settings.extra.get("scopes")
    if configured:
        if isinstance(configured, str):
            configured = [configured]
        return [check_scope(s) for s in configured]
    repo = repository_of(cwd)
    return [repo_scope(repo)] if repo else ["personal"]


def legacy_readable(memory, cli_scopes: list[str] | None, settings, cwd: Path | None = None) -> None:
    """Memories a repository's sessions wrote before scopes carried the repository's id (under
    project:<name>, shared then by every repository of that name) stay readable there, never
    writable: new memories go to the repository's own scope."""
    if cli_scopes or settings.extra.get("scopes") or memory.readable is None:
        return
    repo = repository_of(cwd)
    if repo is None:
        return
    from .store import nodes

    legacy = legacy_repo_scope(repo)
    if legacy not in memory.readable and legacy in nodes.scopes_in_use(memory.conn):
        memory.readable.append(legacy)


def repository_of(cwd: Path | None = None) -> Path | None:
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def repo_scope(folder: Path) -> str:
    """project:<name>@<id>. The name alone let two repositories called "api" (or every repository
    whose name has no ASCII letter: "日記" became "repo") share memories; the id is the first
    six hex digits of the repository's root commit (the same in every clone), or of a hash of
    its path when it has no commit or git is not installed. A non-ASCII name is kept as
    punycode ("日記" -> xn--...)."""
    return check_scope(f"project:{_ascii_name(folder.name)[:80]}@{_repo_id(folder)}")


def legacy_repo_scope(folder: Path) -> str:
    """What repositories were called before the id: memories written then stay readable there."""
    name = re.sub(r"[^A-Za-z0-9_.\-]+", "-", folder.name).strip("-") or "repo"
    return f"project:{name}"


def _ascii_name(name: str) -> str:
    if not name.isascii():
        try:
            name = "xn--" + name.encode("punycode").decode("ascii")
        except UnicodeError:
            name = ""
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", name).strip("-") or "repo"


def _repo_id(folder: Path) -> str:
    import hashlib
    import subprocess

    try:
        found = subprocess.run(["git", "-C", str(folder), "rev-list", "--max-parents=0", "HEAD"], capture_output=True,
                               text=True, timeout=3)
        roots = sorted(found.stdout.split()) if found.returncode == 0 else []
    except (OSError, subprocess.SubprocessError):
        roots = []
    if roots and re.fullmatch(r"[0-9a-f]{40,64}", roots[0]):
        return roots[0][:6]
    return hashlib.sha256(str(folder.resolve()).encode("utf-8", "surrogatepass")).hexdigest()[:6]
