"""`tidemind install-hooks --host claude-code`: register the MCP server and the hooks with the host.

Merges into the host's JSON settings idempotently (our entries are found by their command and
replaced, nothing else is touched) and keeps a timestamped backup of any file it changes.
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from .errors import InvalidInput

CLAUDE_EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt", "PreCompact": "pre-compact",
                 "Stop": "stop"}
TIMEOUTS = {"SessionStart": 10, "UserPromptSubmit": 5, "PreCompact": 5, "Stop": 15}


def _command(home: str | None) -> list[str]:
    exe = shutil.which("tidemind")
    base = [exe] if exe else [sys.executable, "-m", "tidemind.cli"]
    return base + (["--home", str(Path(home).expanduser().resolve())] if home else [])


def _load(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except ValueError as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); fix it or pass another path") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object")
    return data


def _write(path: Path, data: dict, original: dict) -> str | None:
    if data == original and path.exists():
        return None
    backup = None
    if path.exists():
        backup = path.with_name(f"{path.name}.bak-{time.strftime('%Y%m%d-%H%M%S')}")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return str(backup) if backup else ""


def install_claude_code(home: str | None, settings_path: Path, mcp_path: Path, scopes: list[str] | None) -> dict:
    shell = " ".join(_quote(p) for p in _command(home))
    settings = _load(settings_path)
    before = json.loads(json.dumps(settings))
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput(f"{settings_path}: 'hooks' is not an object")
    for event, name in CLAUDE_EVENTS.items():
        groups = [g for g in hooks.get(event, []) if not _ours(g)]
        groups.append({"matcher": "", "hooks": [{"type": "command", "command": f"{shell} hook {name}",
                                                 "timeout": TIMEOUTS[event]}]})
        hooks[event] = groups
    settings_backup = _write(settings_path, settings, before)

    mcp = _load(mcp_path)
    before = json.loads(json.dumps(mcp))
    servers = mcp.setdefault("mcpServers", {})
    command = _command(home)
    args = command[1:] + ["serve"] + [a for s in (scopes or []) for a in ("--scope", s)]
    servers["tidemind"] = {"type": "stdio", "command": command[0], "args": args}
    mcp_backup = _write(mcp_path, mcp, before)
    return {"settings": str(settings_path), "settings_changed": settings_backup is not None,
            "settings_backup": settings_backup or None, "mcp_config": str(mcp_path),
            "mcp_changed": mcp_backup is not None, "mcp_backup": mcp_backup or None}


def _ours(group) -> bool:
    try:
        return any("tidemind" in h.get("command", "") and " hook " in h.get("command", "") for h in group["hooks"])
    except (TypeError, KeyError, AttributeError):
        return False


def _quote(part: str) -> str:
    import shlex

    return shlex.quote(part)
