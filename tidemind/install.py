"""`tidemind install-hooks --host H|all [--uninstall] [--dry-run]`: wire TideMind into agent hosts.

Each host gets what it documents, in the file and format it documents (HOSTS below): the MCP
server in its MCP configuration, lifecycle hooks where it has hooks whose output reaches the model,
and the agent skill where it reads skills. Nothing else is touched.

How a change is made:
- every file of the host (every host, for `all`) is read and parsed before anything is written; a
  malformed one is refused in one line and no file is changed;
- JSON and TOML files are edited in place (tidemind.jsonedit, _toml_*), so the person's key order,
  indentation and comments stay as they were; our entries are found by name (`tidemind`) or by
  command (`tidemind … hook …`), replaced when they differ and left alone when they match, so a
  second install changes nothing;
- the bytes a file had before are kept under `<TideMind home>/backups/hosts/<host>/<time>/` and a
  manifest (`<home>/hosts/<host>.json`) records them with a hash of what was written;
- `--uninstall` gives a file back byte for byte when nobody changed it since (the hash matches),
  and otherwise removes only our entries, keeping whatever the person or the host added since.
"""
from __future__ import annotations

import copy
import difflib
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import sys
import time
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from .config import resolve_home
from .errors import InvalidInput
from .jsonedit import Document, JSONEditError

SERVER_NAME = "tidemind"
HOST_NAMES = ["claude-code", "claude-desktop", "cursor", "codex", "gemini", "vscode", "windsurf"]

# The hosts whose remote (HTTP) MCP server entry this version writes with `--url`, each in the shape
# its own documentation gives a streamable HTTP server (Claude Code's "type": "http" with headers,
# Codex's url + bearer_token_env_var, Cursor's url + headers with ${env:...}, Gemini CLI's httpUrl
# with $VAR read from the environment, VS Code's "type": "http" with ${env:...}, Windsurf's
# serverUrl with ${env:...}); the token is always named by an environment variable, never written
# into a file. Claude Desktop is not among them: its file takes local (stdio) servers only, and a
# remote one is added in its Settings as a connector.
REMOTE_HOSTS = ("claude-code", "codex", "cursor", "gemini", "vscode", "windsurf")
# the hooks a remote install registers: the stop hook files lessons in the review queue, which no
# tool of the remote server takes
REMOTE_HOOKS = ("session-start", "user-prompt")


@dataclass(frozen=True)
class Remote:
    """A TideMind server over HTTP (`tidemind serve --http`) and the variable its token is in."""
    url: str
    token_env: str


def check_remote(url: str, token_env: str) -> Remote:
    """Refused in one line: a URL that is not http(s), plain http to anything but this machine (the
    token would cross the network in clear), a variable name a shell could not export."""
    from urllib.parse import urlsplit

    parts = urlsplit(url or "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"--url must be the server's http(s) URL, e.g. https://memory.example.org/mcp; got"
                           f" {url[:80]!r}")
    if parts.username or parts.password:
        raise InvalidInput("--url must not carry credentials; the token goes in the variable --token-env names")
    if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "::1", "localhost"):
        raise InvalidInput(f"--url {url[:80]}: plain http would send the token across the network in clear; use"
                           " https:// (TLS at a reverse proxy, see docs/HOSTS.md) or a server on this machine")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", token_env or ""):
        raise InvalidInput(f"--token-env must name an environment variable (letters, digits, _); got {token_env!r}")
    return Remote(url, token_env)


# hook name -> (the host's event, timeout in seconds)
CLAUDE_HOOKS = {"session-start": ("SessionStart", 10), "user-prompt": ("UserPromptSubmit", 5), "stop": ("Stop", 15)}
CODEX_HOOKS = {"session-start": ("SessionStart", 10), "user-prompt": ("UserPromptSubmit", 5), "stop": ("Stop", 15)}
GEMINI_HOOKS = {"session-start": ("SessionStart", 10), "user-prompt": ("BeforeAgent", 5), "stop": ("SessionEnd", 15)}
VSCODE_HOOKS = {"session-start": ("SessionStart", 10), "stop": ("Stop", 15)}


@dataclass
class Target:
    """One file a host documents and what we keep in it."""
    path: Path
    kind: str                      # "mcp-json" | "mcp-toml" | "hooks-json" | "file"
    what: str                      # for the report: "MCP server", "hooks", "skill"
    servers_key: str = "mcpServers"
    entry: dict = field(default_factory=dict)     # mcp-*: the server entry
    hooks: dict = field(default_factory=dict)     # hooks-json: event -> hook entry (a dict)
    grouped: bool = True           # hooks-json: entries sit in {"hooks": [...]} groups (Claude, Codex, Gemini)
    comments: bool = False         # the host reads JSON with comments and trailing commas
    content: bytes = b""           # file: the whole file


@dataclass
class Change:
    target: Target
    before: bytes | None           # None: the file did not exist
    after: bytes | None            # None: delete the file
    created: list = field(default_factory=list)   # JSON containers this install created
    what: str = ""                 # what the file carries for us ("MCP server, hooks")


# -- where each host keeps its files ----------------------------------------------------------------
def _config_dir(base: Path, platform: str, overridden: bool) -> Path:
    """The per-user application folder: %APPDATA%, ~/Library/Application Support or $XDG_CONFIG_HOME."""
    if platform == "win32":
        return Path(os.environ["APPDATA"]) if not overridden and os.environ.get("APPDATA") else base / "AppData" / "Roaming"
    if platform == "darwin":
        return base / "Library" / "Application Support"
    if not overridden and os.environ.get("XDG_CONFIG_HOME"):
        return Path(os.environ["XDG_CONFIG_HOME"])
    return base / ".config"


def host_paths(host: str, base: Path, platform: str = sys.platform, overridden: bool = True) -> dict[str, Path]:
    """The files a host documents, and the folder whose presence says the host is installed."""
    appdir = _config_dir(base, platform, overridden)
    codex = Path(os.environ["CODEX_HOME"]) if not overridden and os.environ.get("CODEX_HOME") else base / ".codex"
    return {
        "claude-code": {"marker": base / ".claude", "mcp": base / ".claude.json",
                        "hooks": base / ".claude" / "settings.json",
                        "skill": base / ".claude" / "skills" / "tidemind" / "SKILL.md"},
        # Claude Desktop reads skills uploaded in the app, not files: the server's instructions carry the guidance
        "claude-desktop": {"marker": appdir / "Claude", "mcp": appdir / "Claude" / "claude_desktop_config.json"},
        # Cursor's prompt hook may only block or warn (continue / user_message): nothing reaches the model
        "cursor": {"marker": base / ".cursor", "mcp": base / ".cursor" / "mcp.json",
                   "skill": base / ".cursor" / "skills" / "tidemind" / "SKILL.md"},
        "codex": {"marker": codex, "mcp": codex / "config.toml", "hooks": codex / "hooks.json",
                  "skill": base / ".agents" / "skills" / "tidemind" / "SKILL.md"},
        "gemini": {"marker": base / ".gemini", "mcp": base / ".gemini" / "settings.json",
                   "hooks": base / ".gemini" / "settings.json",
                   "skill": base / ".gemini" / "skills" / "tidemind" / "SKILL.md"},
        "vscode": {"marker": appdir / "Code" / "User", "mcp": appdir / "Code" / "User" / "mcp.json",
                   "hooks": base / ".copilot" / "hooks" / "tidemind.json",
                   "skill": base / ".copilot" / "skills" / "tidemind" / "SKILL.md"},
        # Windsurf's hooks can block or observe an action, never add to the prompt
        "windsurf": {"marker": base / ".codeium" / "windsurf", "mcp": base / ".codeium" / "windsurf" / "mcp_config.json",
                     "skill": base / ".codeium" / "windsurf" / "skills" / "tidemind" / "SKILL.md"},
    }[host]


def _skill_bytes() -> bytes:
    return resources.files("tidemind").joinpath("skills/tidemind/SKILL.md").read_bytes()


def _base_command(home: str | None) -> list[str]:
    # the `tidemind` of the installation running now (a venv or pipx one need not be on PATH)
    sibling = Path(sys.executable).with_name("tidemind.exe" if os.name == "nt" else "tidemind")
    exe = str(sibling) if sibling.is_file() else shutil.which("tidemind")
    base = [exe] if exe else [sys.executable, "-m", "tidemind.cli"]
    return base + (["--home", str(Path(home).expanduser().resolve())] if home else [])


def _shell(parts: list[str]) -> str:
    return " ".join(shlex.quote(p) for p in parts)


def _remote_entry(host: str, remote: Remote) -> dict:
    """The host's own shape for a remote MCP server whose bearer token is in `remote.token_env`."""
    if host == "claude-code":
        return {"type": "http", "url": remote.url, "headers": {"Authorization": f"Bearer ${{{remote.token_env}}}"}}
    if host == "codex":
        return {"url": remote.url, "bearer_token_env_var": remote.token_env}
    if host == "gemini":
        return {"httpUrl": remote.url, "headers": {"Authorization": f"Bearer ${remote.token_env}"}}
    if host == "vscode":
        return {"type": "http", "url": remote.url, "headers": {"Authorization": f"Bearer ${{env:{remote.token_env}}}"}}
    if host == "windsurf":
        return {"serverUrl": remote.url, "headers": {"Authorization": f"Bearer ${{env:{remote.token_env}}}"}}
    return {"url": remote.url, "headers": {"Authorization": f"Bearer ${{env:{remote.token_env}}}"}}     # cursor


def targets(host: str, base: Path, home: str | None, scopes: list[str] | None, platform: str = sys.platform,
            overridden: bool = True, remote: Remote | None = None) -> list[Target]:
    paths = host_paths(host, base, platform, overridden)
    command = _base_command(home)
    serve = command[1:] + ["serve"] + [a for s in (scopes or []) for a in ("--scope", s)]
    # a remote install's hooks ask the same server the host does (hooks.py), with the same token
    to_server = ["--url", remote.url, "--token-env", remote.token_env] if remote else []
    hook = lambda name: _shell(command + ["hook", name, "--host", host] + to_server)   # noqa: E731
    plain = {"command": command[0], "args": serve} if remote is None else _remote_entry(host, remote)
    wired = (lambda hooks: {n: v for n, v in hooks.items() if n in REMOTE_HOOKS}) if remote else dict  # noqa: E731
    out: list[Target] = []
    if host == "claude-code":
        out.append(Target(paths["mcp"], "mcp-json", "MCP server",
                          entry={"type": "stdio", **plain} if remote is None else plain))
        out.append(Target(paths["hooks"], "hooks-json", "hooks", hooks={
            event: {"matcher": "", "hooks": [{"type": "command", "command": hook(name), "timeout": t}]}
            for name, (event, t) in wired(CLAUDE_HOOKS).items()}))
    elif host == "codex":
        out.append(Target(paths["mcp"], "mcp-toml", "MCP server", entry=plain))
        out.append(Target(paths["hooks"], "hooks-json", "hooks", hooks={
            event: {"hooks": [{"type": "command", "command": hook(name), "timeout": t}]}
            for name, (event, t) in wired(CODEX_HOOKS).items()}))
    elif host == "gemini":
        out.append(Target(paths["mcp"], "mcp-json", "MCP server", entry=plain, comments=True))
        out.append(Target(paths["hooks"], "hooks-json", "hooks", comments=True, hooks={
            event: {"hooks": [{"type": "command", "name": f"tidemind-{name}", "command": hook(name),
                               "timeout": t * 1000}]}             # Gemini CLI counts milliseconds
            for name, (event, t) in wired(GEMINI_HOOKS).items()}))
    elif host == "vscode":
        out.append(Target(paths["mcp"], "mcp-json", "MCP server", servers_key="servers",
                          entry={"type": "stdio", **plain} if remote is None else plain, comments=True))
        # a file of our own in the folder VS Code reads every *.json of
        hooks = {event: [{"type": "command", "command": hook(name), "timeout": t}]
                 for name, (event, t) in wired(VSCODE_HOOKS).items()}
        out.append(Target(paths["hooks"], "file", "hooks",
                          content=(json.dumps({"hooks": hooks}, indent=2) + "\n").encode()))
    else:                              # claude-desktop, cursor, windsurf: the MCP server is all they take
        out.append(Target(paths["mcp"], "mcp-json", "MCP server", entry=plain))
    if "skill" in paths:
        out.append(Target(paths["skill"], "file", "skill", content=_skill_bytes()))
    return out


# -- planning: every edit is computed before anything is written --------------------------------------
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def _not_a_file(mode: int) -> str | None:
    return next((what for test, what in _KINDS if test(mode)), None if stat.S_ISREG(mode) else "not a regular file")


def _check_path(path: Path, base: Path) -> None:
    """Refuse, before anything is written, a host's file that is not a regular file (reading a
    FIFO at ~/.claude.json blocked install-hooks for ever) or that sits behind a symbolic link to
    nothing (install followed it and made folders outside the home). A link to an existing file
    (a dotfiles checkout) is followed as before."""
    here = path
    while True:
        if here.is_symlink() and not here.exists():
            raise InvalidInput(f"{here} is a symbolic link to {os.readlink(here)}, which does not exist; install-hooks"
                               " does not create files through it (create its target or remove the link); nothing"
                               " was changed")
        if here == base or here.parent == here:
            break
        here = here.parent
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror} (errno {exc.errno}); nothing was changed") from None
    what = _not_a_file(mode)
    if what is not None:
        raise InvalidInput(f"{path} is {what}, not a settings file; move it away first, nothing was changed")


def _read(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))     # a FIFO swapped in: never wait on it
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        what = _not_a_file(os.fstat(fd).st_mode)
        if what is not None:
            raise InvalidInput(f"{path} is {what}, not a settings file; move it away first, nothing was changed")
        return handle.read()


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path} is not UTF-8 text (byte {exc.start}); fix it first, nothing was changed") from None


def _ours(hook_entry) -> bool:
    command = hook_entry.get("command", "") if isinstance(hook_entry, dict) else ""
    return isinstance(command, str) and "tidemind" in command and " hook " in command


def _json_doc(target: Target, text: str) -> Document:
    try:
        doc = Document(text, comments=target.comments)
    except JSONEditError as exc:
        kind = "JSON (comments allowed)" if target.comments else "JSON"
        raise InvalidInput(f"{target.path} is not valid {kind}: {exc}; fix it first, nothing was changed") from None
    if doc.root is not None and doc.root.kind != "object":
        raise InvalidInput(f"{target.path} does not hold a JSON object; fix it first, nothing was changed")
    return doc


def _edit_json(target: Target, text: str, install: bool, created: list) -> str:
    doc = _json_doc(target, text)
    try:
        if target.kind == "mcp-json":
            _check_object(target, doc, [target.servers_key])
            if install:
                if doc.find([target.servers_key]) is None:
                    created.append([target.servers_key])
                doc.set([target.servers_key, SERVER_NAME], target.entry)
            else:
                doc.remove([target.servers_key, SERVER_NAME])
        else:
            _check_object(target, doc, ["hooks"])
            if install and doc.find(["hooks"]) is None:
                created.append(["hooks"])
            for event, wanted in target.hooks.items():
                _sync_hooks(target, doc, event, wanted if install else None, created)
            present = doc.find(["hooks"])
            for event, value in (dict(present.value) if present is not None and present.kind == "object" else {}).items():
                # an event we no longer use (PreCompact, by older installs); other keys are not ours to judge
                if event not in target.hooks and isinstance(value, list):
                    _sync_hooks(target, doc, event, None, created)
                    if install and ["hooks", event] in created:
                        # (a list an earlier install made for it, now empty: a remote install drops
                        # the stop hook, and left "SessionEnd": [] behind in the host's file)
                        _drop_created(doc, [["hooks", event]])
            if not install:
                _drop_created(doc, created)
    except JSONEditError as exc:
        raise InvalidInput(f"{target.path}: {exc}; fix it first, nothing was changed") from None
    if not install and target.kind == "mcp-json":
        _drop_created(doc, created)
    return doc.text


def _check_object(target: Target, doc: Document, path: list[str]) -> None:
    node = doc.find(path)
    if node is not None and node.kind != "object":
        raise InvalidInput(f"{target.path}: '{'.'.join(path)}' is not an object; fix it first, nothing was changed")


def _sync_hooks(target: Target, doc: Document, event: str, wanted: dict | None, created: list) -> None:
    """Make our entries for `event` exactly [wanted] (or none), leaving every other entry as it is."""
    node = doc.find(["hooks", event])
    if node is not None and node.kind != "array":
        raise InvalidInput(f"{target.path}: 'hooks.{event}' is not a list; fix it first, nothing was changed")
    groups = node.value if node is not None else []
    mine = [i for i, g in enumerate(groups)
            if isinstance(g, dict) and isinstance(g.get("hooks"), list) and any(_ours(h) for h in g["hooks"])]
    if wanted is not None and len(mine) == 1 and groups[mine[0]] == wanted:
        return
    for i in reversed(mine):
        inner = groups[i]["hooks"]
        if all(_ours(h) for h in inner):
            doc.remove(["hooks", event, i])
        else:                          # a group someone shares with us: take out only our command
            for j in reversed(range(len(inner))):
                if _ours(inner[j]):
                    doc.remove(["hooks", event, i, "hooks", j])
    if wanted is not None:
        if doc.find(["hooks", event]) is None and ["hooks", event] not in created:
            created.append(["hooks", event])
        doc.append(["hooks", event], wanted)


def _drop_created(doc: Document, created: list) -> None:
    """On uninstall, remove the containers the install created once they are empty again."""
    for path in sorted(created, key=len, reverse=True):
        node = doc.find(path)
        if node is not None and node.kind in ("object", "array") and not node.members:
            doc.remove(path)


# TOML (Codex's config.toml): our server is one table, `[mcp_servers.tidemind]`, appended at the end.
# Python reads TOML but does not write it, so the block is cut or added as text and the result is
# read back: it must hold exactly what the file held, with our table set (or gone). A file that
# defines the server some other way (an inline table, dotted keys) is refused rather than guessed at.
_HEADER = re.compile(r"^[ \t]*\[(\[)?[ \t]*([^\[\]\r\n]+?)[ \t]*\]\]?[ \t]*(?:#[^\r\n]*)?\r?$", re.M)


def _toml_key(raw: str) -> tuple[str, ...]:
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_-]+)', raw)
    return tuple(a or b or c for a, b, c in parts)


def _toml_block(text: str) -> tuple[int, int] | None:
    """Start and end offsets of `[mcp_servers.tidemind]` and its sub-tables, or None."""
    headers = [(m.start(), bool(m.group(1)), _toml_key(m.group(2))) for m in _HEADER.finditer(text)]
    for i, (start, is_array, key) in enumerate(headers):
        if not is_array and key == ("mcp_servers", SERVER_NAME):
            end = len(text)
            for nstart, _, nkey in headers[i + 1:]:
                if nkey[:2] != ("mcp_servers", SERVER_NAME):
                    end = nstart
                    break
            return start, end
    return None


def _toml_entry(entry: dict) -> str:
    value = lambda v: json.dumps(v, ensure_ascii=False)          # noqa: E731  (JSON strings are TOML strings)
    lines = [f"[mcp_servers.{SERVER_NAME}]"]
    lines += [f"{k} = {value(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


def _edit_toml(target: Target, text: str, install: bool) -> str:
    newline = "\r\n" if "\r\n" in text else "\n"

    def parse(t: str, what: str) -> dict:
        try:
            return tomllib.loads(t)
        except tomllib.TOMLDecodeError as exc:
            raise InvalidInput(f"{target.path} is not valid TOML ({exc}){what}") from None

    data = parse(text, "; fix it first, nothing was changed")
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise InvalidInput(f"{target.path}: 'mcp_servers' is not a table; fix it first, nothing was changed")
    if install and servers.get(SERVER_NAME) == target.entry:
        return text
    expected = copy.deepcopy(data)
    expected.setdefault("mcp_servers", {}).pop(SERVER_NAME, None)
    new = text
    block = _toml_block(text)
    if block:
        start, end = block
        tail = new[end:]
        head = new[:start].rstrip("\r\n")
        new = head + (2 * newline if head.strip() and tail else newline if head.strip() else "") + tail
    elif SERVER_NAME in servers:
        raise InvalidInput(f"{target.path} defines mcp_servers.{SERVER_NAME} in a form install cannot edit safely"
                           " (inline or dotted keys); remove it by hand, nothing was changed")
    if install:
        if new and not new.endswith("\n"):
            new += newline
        new += (newline if new.strip() else "") + _toml_entry(target.entry).replace("\n", newline)
        expected["mcp_servers"][SERVER_NAME] = target.entry
    if _without_empty_servers(parse(new, " after the edit")) != _without_empty_servers(expected):
        raise InvalidInput(f"{target.path}: mcp_servers.{SERVER_NAME} could not be changed without touching other"
                           " settings; edit it by hand, nothing was changed")
    return new


def _without_empty_servers(data: dict) -> dict:
    """An `mcp_servers` table left empty by removing ours reads the same as none."""
    if data.get("mcp_servers") == {}:
        data = {k: v for k, v in data.items() if k != "mcp_servers"}
    return data


def plan(host: str, base: Path, home: str | None, scopes: list[str] | None, install: bool,
         manifest: dict | None = None, platform: str = sys.platform, overridden: bool = True,
         remote: Remote | None = None) -> list[Change]:
    """The changes wiring (or unwiring) `host` needs; raises InvalidInput before anything is written."""
    recorded = {f["path"]: f for f in (manifest or {}).get("files", [])}
    changes: dict[Path, Change] = {}
    for target in targets(host, base, home, scopes, platform, overridden, remote):
        _check_path(target.path, base)
        previous = changes.get(target.path)
        raw = previous.after if previous else _read(target.path)
        before = previous.before if previous else raw
        created = previous.created if previous else list(recorded.get(str(target.path), {}).get("created", []))
        if target.kind == "file":
            after = _file_after(target, raw, install, recorded.get(str(target.path)))
        elif raw is None and not install:
            after = None
        else:
            text = _decode(target.path, raw) if raw is not None else ""
            if target.kind == "mcp-toml":
                after = _edit_toml(target, text, install).encode()
            else:
                after = _edit_json(target, text, install, created).encode()
            if raw is None and not after.strip():
                after = None
        what = f"{previous.what}, {target.what}" if previous else target.what
        changes[target.path] = Change(target, before, after, created, what)
    if not install:
        for change in changes.values():
            _restore_exactly(change, recorded.get(str(change.target.path)))
    return [c for c in changes.values() if c.after != c.before]


def _file_after(target: Target, raw: bytes | None, install: bool, record: dict | None) -> bytes | None:
    if install:
        return target.content
    if raw is None or raw == target.content:
        return None
    return raw                         # changed by someone since: theirs now, left alone


def _restore_exactly(change: Change, record: dict | None) -> None:
    """A file nobody changed since we wrote it goes back to the exact bytes it had (or away)."""
    if not record or change.before is None:
        return
    if hashlib.sha256(change.before).hexdigest() != record.get("sha256_after"):
        return
    backup = record.get("backup")
    if record.get("existed") and backup and Path(backup).is_file():
        change.after = Path(backup).read_bytes()
    elif not record.get("existed"):
        change.after = None


# -- applying -----------------------------------------------------------------------------------------
def _manifest_path(home: Path, host: str) -> Path:
    return home / "hosts" / f"{host}.json"


def load_manifest(home: Path, host: str) -> dict | None:
    path = _manifest_path(home, host)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None                    # unreadable: uninstall falls back to removing our entries


def _write(path: Path, data: bytes | None, made_dirs: list[str]) -> None:
    if data is None:
        path.unlink(missing_ok=True)
        return
    if path.is_symlink():              # a dotfiles checkout links it: write the file, keep the link
        path = path.resolve()
    missing = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    path.parent.mkdir(parents=True, exist_ok=True)
    made_dirs.extend(str(p) for p in reversed(missing))
    tmp = path.with_name(f".{path.name}.tidemind-tmp")
    tmp.write_bytes(data)
    if path.exists():
        shutil.copymode(path, tmp)     # a settings file kept private stays private
    tmp.replace(path)


def apply(host: str, changes: list[Change], home: Path, install: bool) -> dict:
    """Write the planned changes: backups first, then each file atomically, then the manifest."""
    manifest = load_manifest(home, host) or {"host": host, "files": []}
    files = {f["path"]: f for f in manifest["files"]}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    report = []
    made_here: list[str] = []          # folders the install made, for an uninstall to take back
    for change in changes:
        path = change.target.path
        record = files.get(str(path))
        backup = None
        if change.before is not None:
            folder = home / "backups" / "hosts" / host / stamp
            folder.mkdir(parents=True, exist_ok=True)
            name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(path).strip("/")) or "file"
            backup, n = folder / name, 1
            while backup.exists():     # two installs in one second: the first one's backup is the original
                backup, n = folder / f"{name}.{n}", n + 1
            backup.write_bytes(change.before)
        made: list[str] = []
        _write(path, change.after, made)
        if install:
            if record is None:         # the first install keeps the original; later ones only move the hash
                record = {"path": str(path), "existed": change.before is not None,
                          "backup": str(backup) if backup else None, "dirs": made}
                files[str(path)] = record
            record["sha256_after"] = hashlib.sha256(change.after or b"").hexdigest()
            record["created"] = change.created
        elif change.after is None and record:
            made_here.extend(record.get("dirs", []))
        report.append({"path": str(path), "what": change.what,
                       "action": "created" if change.before is None else "removed" if change.after is None
                       else "updated", "backup": str(backup) if backup else None})
    # only folders the install made, and only once empty: deepest first, after every file is gone
    # (file by file, a folder two files shared was still holding the second when the first went,
    # and ~/.copilot/ was left behind)
    for d in sorted(set(made_here), key=lambda d: -len(Path(d).parts)):
        try:
            Path(d).rmdir()
        except OSError:
            pass
    manifest["files"] = list(files.values())
    mpath = _manifest_path(home, host)
    if install and changes:
        mpath.parent.mkdir(parents=True, exist_ok=True)
        mpath.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    elif not install:
        mpath.unlink(missing_ok=True)
    return {"host": host, "changes": report}


def diff(change: Change) -> str:
    def lines(b: bytes | None) -> list[str]:
        return b.decode("utf-8", "replace").splitlines(keepends=True) if b is not None else []

    path = str(change.target.path)
    out = "".join(difflib.unified_diff(lines(change.before), lines(change.after),
                                       fromfile=path if change.before is not None else "/dev/null",
                                       tofile=path if change.after is not None else "/dev/null"))
    return out if out.endswith("\n") or not out else out + "\n\\ No newline at end of file\n"


def detect(base: Path, platform: str = sys.platform, overridden: bool = True) -> list[str]:
    """The hosts whose own folder exists under `base`."""
    return [h for h in HOST_NAMES if host_paths(h, base, platform, overridden)["marker"].exists()
            or h == "claude-code" and host_paths(h, base, platform, overridden)["mcp"].exists()]


def run(hosts: list[str], base: str | None, home: str | None, scopes: list[str] | None, uninstall: bool,
        dry_run: bool, platform: str = sys.platform, url: str | None = None, token_env: str | None = None) -> dict:
    """Plan every host, then (unless dry_run) write: a refusal leaves every file as it was. With
    `url`, the host is pointed at that TideMind server over HTTP instead of starting its own."""
    if scopes:                         # written into each host's command line: checked like every --scope
        from .scopes import check_scope

        scopes = [check_scope(s) for s in scopes]
    remote = None
    if url is not None and not uninstall:
        if scopes:
            raise InvalidInput("--scope and --url do not go together: a remote server's token decides the scopes"
                               " (tidemind tokens add NAME --scope S on the server)")
        remote = check_remote(url, token_env or "TIDEMIND_TOKEN")
    elif token_env is not None and url is None:
        raise InvalidInput("--token-env goes with --url (the variable holding that server's token)")
    overridden = base is not None
    root = Path(base).expanduser().resolve() if base else Path.home()
    tm_home = resolve_home(home)
    found = None
    hosts = list(dict.fromkeys(hosts))
    if "all" in hosts:
        found = detect(root, platform, overridden)
        hosts = found if not uninstall else [h for h in HOST_NAMES if load_manifest(tm_home, h) or h in found]
    if remote is not None:
        unsupported = [h for h in hosts if h not in REMOTE_HOSTS]
        if unsupported and found is not None:          # `all`: wire the hosts that can, say which were left
            hosts = [h for h in hosts if h in REMOTE_HOSTS]
        elif unsupported:
            raise InvalidInput(f"--url: {', '.join(unsupported)} not wired to a remote server by this version (it"
                               f" writes the remote-server format of {', '.join(REMOTE_HOSTS)} only); nothing was"
                               " changed")
    plans = {h: plan(h, root, home, scopes, not uninstall, load_manifest(tm_home, h), platform, overridden, remote)
             for h in hosts}
    out = {"action": "uninstall" if uninstall else "install", "dry_run": dry_run, "hosts": []}
    if found is not None:
        out["found"] = found
        out["not_found"] = [h for h in HOST_NAMES if h not in found]
        if remote is not None:
            out["not_remote"] = [h for h in found if h not in REMOTE_HOSTS]
    for host, changes in plans.items():
        if dry_run:
            out["hosts"].append({"host": host, "changes": [
                {"path": str(c.target.path), "what": c.what, "diff": diff(c)} for c in changes]})
        else:
            out["hosts"].append(apply(host, changes, tm_home, not uninstall))
    return out


def describe(report: dict) -> str:
    """The text the CLI prints."""
    lines = []
    if "found" in report:
        lines.append("found: " + (", ".join(report["found"]) or "no host") +
                     ("; not found: " + ", ".join(report["not_found"]) if report["not_found"] else ""))
    if report.get("not_remote"):
        lines.append("left as they are (no remote-server format for them in this version): "
                     + ", ".join(report["not_remote"]))
    for h in report["hosts"]:
        if not h["changes"]:
            lines.append(f"{h['host']}: {'already up to date' if report['action'] == 'install' else 'nothing to remove'}")
            continue
        lines.append(f"{h['host']}:")
        for c in h["changes"]:
            if report["dry_run"]:
                lines.append(f"  would change {c['path']} ({c['what']}):")
                lines.extend("    " + line for line in c["diff"].splitlines())
            else:
                lines.append(f"  {c['what']}: {c['action']} {c['path']}" + (f" (backup {c['backup']})" if c["backup"] else ""))
    if report["dry_run"]:
        lines.append("(dry run: nothing was written)")
    return "\n".join(lines)
