"""Which scopes a server or hook works in, when nobody said: kept light (hooks import it)."""
from __future__ import annotations

import re
from pathlib import Path

_SCOPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+\-]{0,99}$")


def check_scope(scope: str) -> str:
    from .errors import InvalidInput

    if not isinstance(scope, str) or not _SCOPE.match(scope):
        raise InvalidInput(f"invalid scope {scope!r}: use letters, digits and _.:/@+- (e.g. personal, project:tidemind)")
    return scope


def derive_scopes(cli_scopes: list[str] | None, settings, cwd: Path | None = None) -> list[str]:
    """--scope values, else config `scopes`, else project:<git repo name>, else personal."""
    if cli_scopes:
        return [check_scope(s) for s in cli_scopes]
    configured = settings.extra.get("scopes")
    if configured:
        if isinstance(configured, str):
            configured = [configured]
        return [check_scope(s) for s in configured]
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            name = re.sub(r"[^A-Za-z0-9_.\-]+", "-", folder.name).strip("-") or "repo"
            return [f"project:{name}"]
    return ["personal"]
