"""`tidemind install-hooks` against each host's own configuration files (tests/fixtures/hosts, written
from each host's documentation), through the real CLI in a subprocess, then the hooks it wrote run
as the host would run them. The real home directory is never touched: HOME points into tmp_path and
every install gets `--base` there too."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemind.memory import Memory

from .conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "hosts"

# What each host documents, stated here independently of tidemind/install.py: its MCP file, the key
# that holds servers and how the file is read; its hooks file, the events and the hook each runs;
# where it reads skills.
HOSTS = {
    "claude-code": {"mcp": (".claude.json", "json", "mcpServers"),
                    "hooks": (".claude/settings.json", "json", "grouped",
                              {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt", "Stop": "stop"}),
                    "skill": ".claude/skills/tidemind/SKILL.md"},
    "claude-desktop": {"mcp": (".config/Claude/claude_desktop_config.json", "json", "mcpServers")},
    "cursor": {"mcp": (".cursor/mcp.json", "json", "mcpServers"), "skill": ".cursor/skills/tidemind/SKILL.md"},
    "codex": {"mcp": (".codex/config.toml", "toml", "mcp_servers"),
              "hooks": (".codex/hooks.json", "json", "grouped",
                        {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt", "Stop": "stop"}),
              "skill": ".agents/skills/tidemind/SKILL.md"},
    "gemini": {"mcp": (".gemini/settings.json", "jsonc", "mcpServers"),
               "hooks": (".gemini/settings.json", "jsonc", "grouped",
                         {"SessionStart": "session-start", "BeforeAgent": "user-prompt", "SessionEnd": "stop"}),
               "skill": ".gemini/skills/tidemind/SKILL.md"},
    "vscode": {"mcp": (".config/Code/User/mcp.json", "jsonc", "servers"),
               "hooks": (".copilot/hooks/tidemind.json", "json", "flat", {"SessionStart": "session-start", "Stop": "stop"}),
               "skill": ".copilot/skills/tidemind/SKILL.md"},
    "windsurf": {"mcp": (".codeium/windsurf/mcp_config.json", "json", "mcpServers"),
                 "skill": ".codeium/windsurf/skills/tidemind/SKILL.md"},
}

# The event each host sends on stdin (field names from its hooks reference) and the event name its
# documented output for context carries; None: the host's output for that event reaches no model.
EVENTS = {
    "claude-code": {"SessionStart": {"hook_event_name": "SessionStart", "source": "startup"},
                    "UserPromptSubmit": {"hook_event_name": "UserPromptSubmit"}},
    "codex": {"SessionStart": {"hook_event_name": "SessionStart", "source": "startup", "model": "gpt-5-codex"},
              "UserPromptSubmit": {"hook_event_name": "UserPromptSubmit", "turn_id": "t1", "model": "gpt-5-codex"}},
    "gemini": {"SessionStart": {"hook_event_name": "SessionStart", "source": "startup",
                                "timestamp": "2026-11-30T10:00:00Z"},
               "BeforeAgent": {"hook_event_name": "BeforeAgent", "timestamp": "2026-11-30T10:00:00Z"}},
    "vscode": {"SessionStart": {"hookEventName": "SessionStart", "source": "new", "timestamp": "2026-11-30T10:00:00Z"}},
}


def strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas, as VS Code and Gemini CLI read it, to plain JSON."""
    token = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/|,(\s*[}\]])', re.S)
    return token.sub(lambda m: m.group(1) or m.group(2) or "", text)


def read_config(path: Path, fmt: str):
    text = path.read_text(encoding="utf-8")
    if fmt == "toml":
        return tomllib.loads(text)
    return json.loads(strip_jsonc(text) if fmt == "jsonc" else text)


def snapshot(base: Path) -> dict[str, bytes]:
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def env_for(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("APPDATA", "XDG_CONFIG_HOME", "CODEX_HOME")}
    env["HOME"] = str(tmp_path / "not-home")       # a host path computed from the real ~ would land here
    return env


def cli(tmp_path, home, base, *args, check=True):
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "--json", "install-hooks",
                           "--base", str(base), *args], capture_output=True, text=True, cwd=ROOT,
                          env=env_for(tmp_path), timeout=60)
    if check:
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)
    return proc


def fixture_home(tmp_path, host) -> Path:
    base = tmp_path / "base"
    shutil.copytree(FIXTURES / host, base)
    return base


def our_hooks(config: dict, style: str) -> dict[str, list[str]]:
    """event -> the commands of TideMind hooks registered for it."""
    found = {}
    for event, entries in (config.get("hooks") or {}).items():
        if not isinstance(entries, list):
            continue
        hooks = [h for e in entries for h in (e.get("hooks", []) if style == "grouped" else [e])]
        commands = [h["command"] for h in hooks if "tidemind" in h.get("command", "") and " hook " in h["command"]]
        if commands:
            found[event] = commands
    return found


def without_ours(config: dict, servers_key: str, style: str | None) -> dict:
    """The config with TideMind's server and hooks taken out: what must equal the fixture's."""
    config = json.loads(json.dumps(config))
    config.get(servers_key, {}).pop("tidemind", None)
    if style and isinstance(config.get("hooks"), dict):
        for event in list(config["hooks"]):
            kept = []
            for e in config["hooks"][event]:
                if style == "grouped":
                    inner = [h for h in e.get("hooks", []) if " hook " not in h.get("command", "")
                             or "tidemind" not in h["command"]]
                    if inner:
                        kept.append({**e, "hooks": inner})
                elif "tidemind" not in e.get("command", ""):
                    kept.append(e)
            if kept:
                config["hooks"][event] = kept
            else:                          # an event list the install added
                del config["hooks"][event]
    return config


@pytest.mark.parametrize("host", list(HOSTS))
def test_install_wires_each_host_in_its_own_files_and_uninstall_gives_them_back(host, tmp_path):
    base = fixture_home(tmp_path, host)
    home = tmp_path / "tm"
    original = snapshot(base)
    spec = HOSTS[host]
    documented = {spec["mcp"][0]} | ({spec["hooks"][0]} if "hooks" in spec else set()) | \
                 ({spec["skill"]} if "skill" in spec else set())

    preview = cli(tmp_path, home, base, "--host", host, "--dry-run")
    assert snapshot(base) == original and not home.exists()                 # a dry run writes nothing
    diffs = {c["path"]: c["diff"] for c in preview["hosts"][0]["changes"]}
    assert {str(Path(p).relative_to(base)) for p in diffs} == documented
    assert all("+" in d and "tidemind" in d for d in diffs.values())

    first = cli(tmp_path, home, base, "--host", host)
    after = snapshot(base)
    changed = {p for p in set(after) | set(original) if after.get(p) != original.get(p)}
    assert changed == documented                                  # nothing outside the documented files
    for path in documented & set(original):                       # each changed file's original is kept
        backup = next(c["backup"] for c in first["hosts"][0]["changes"] if c["path"] == str(base / path))
        assert Path(backup).read_bytes() == original[path] and not Path(backup).is_relative_to(base)

    mcp_path, fmt, key = spec["mcp"]
    config = read_config(base / mcp_path, fmt)
    server = config[key]["tidemind"]
    assert server["args"][-1] == "serve" and Path(server["command"]).name.startswith(("tidemind", "python"))
    if mcp_path in original:
        style = spec["hooks"][2] if "hooks" in spec and spec["hooks"][0] == mcp_path else None
        assert without_ours(config, key, style) == read_config(FIXTURES / host / mcp_path, fmt)
    if "skill" in spec:
        assert (base / spec["skill"]).read_bytes() == \
            resources.files("tidemind").joinpath("skills/tidemind/SKILL.md").read_bytes()
    if "hooks" in spec:
        hooks_path, hfmt, style, events = spec["hooks"]
        hooks_config = read_config(base / hooks_path, hfmt)
        registered = our_hooks(hooks_config, style)
        assert set(registered) == set(events)
        for event, name in events.items():
            assert len(registered[event]) == 1 and f" hook {name} --host {host}" in registered[event][0]
        if hooks_path in original:
            assert without_ours(hooks_config, key, style) == read_config(FIXTURES / host / hooks_path, hfmt)

    again = cli(tmp_path, home, base, "--host", host)
    assert again["hosts"][0]["changes"] == [] and snapshot(base) == after    # idempotent

    removed = cli(tmp_path, home, base, "--host", host, "--uninstall")
    assert removed["hosts"][0]["changes"]
    assert snapshot(base) == original                              # byte for byte, nothing left behind
    assert sorted(p.relative_to(base) for p in base.rglob("*")) == \
        sorted(p.relative_to(FIXTURES / host) for p in (FIXTURES / host).rglob("*"))


@pytest.mark.parametrize("host", [h for h in HOSTS if "hooks" in HOSTS[h]])
def test_the_hooks_as_written_answer_in_the_hosts_documented_shape(host, tmp_path):
    base = fixture_home(tmp_path, host)
    home = tmp_path / "tm"
    work = tmp_path / "work"
    work.mkdir()
    with Memory.open(home) as m:
        m.digest("The staging database listens on port 5433.", scope="personal")
        m.embed_pending()
    cli(tmp_path, home, base, "--host", host)
    hooks_path, hfmt, style, events = HOSTS[host]["hooks"]
    registered = our_hooks(read_config(base / hooks_path, hfmt), style)
    for event, fields in EVENTS[host].items():
        payload = {"session_id": "s1", "transcript_path": str(tmp_path / "none.jsonl"), "cwd": str(work), **fields}
        if events[event] == "user-prompt":
            payload["prompt"] = "what port does the staging database use?"
        proc = subprocess.run(shlex.split(registered[event][0]), input=json.dumps(payload), capture_output=True,
                              text=True, env=env_for(tmp_path), timeout=60, cwd=work)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)["hookSpecificOutput"]
        assert out["hookEventName"] == event and "5433" in out["additionalContext"]
    stop_event = next(e for e, n in events.items() if n == "stop")
    proc = subprocess.run(shlex.split(registered[stop_event][0]), input=json.dumps({"cwd": str(work)}),
                          capture_output=True, text=True, env=env_for(tmp_path), timeout=60, cwd=work)
    assert proc.returncode == 0 and proc.stdout == ""             # no transcript, nothing to say


def test_claude_code_gets_the_pre_compact_reminder_where_the_model_reads_it(home, tmp_path):
    """Claude Code documents no model-facing output for PreCompact; SessionStart runs again with
    source "compact" and its additionalContext reaches the model."""
    Memory.open(home).close()
    run = lambda name, event: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "tidemind.cli", "--home", str(home), "hook", name, "--host", "claude-code"],
        input=json.dumps(event), capture_output=True, text=True, cwd=ROOT, timeout=60)
    pre = run("pre-compact", {"hook_event_name": "PreCompact", "trigger": "auto", "cwd": str(tmp_path)})
    assert pre.returncode == 0 and pre.stdout == ""
    after = run("session-start", {"hook_event_name": "SessionStart", "source": "compact", "cwd": str(tmp_path)})
    context = json.loads(after.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart" and "brain_digest" in context["additionalContext"]
    fresh = run("session-start", {"hook_event_name": "SessionStart", "source": "startup", "cwd": str(tmp_path)})
    assert "just compacted" not in json.loads(fresh.stdout)["hookSpecificOutput"]["additionalContext"]


def test_an_older_install_is_replaced_not_doubled(tmp_path):
    """Settings written by the first install-hooks (PreCompact reminder, no --host) are taken out."""
    base = fixture_home(tmp_path, "claude-code")
    settings = base / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["hooks"]["PreCompact"] = [{"matcher": "", "hooks": [{"type": "command", "timeout": 5,
                                                               "command": "/old/bin/tidemind hook pre-compact"}]}]
    data["hooks"]["Stop"].append({"matcher": "", "hooks": [{"type": "command", "command": "/old/bin/tidemind hook stop"}]})
    settings.write_text(json.dumps(data, indent=2))
    cli(tmp_path, tmp_path / "tm", base, "--host", "claude-code")
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks["PreCompact"] == []
    assert [h["command"] for g in hooks["Stop"] for h in g["hooks"]][0] == "notify-send 'Claude Code' 'Done'"
    assert len(our_hooks({"hooks": hooks}, "grouped")["Stop"]) == 1


@pytest.mark.parametrize("host,path,text", [
    ("claude-desktop", ".config/Claude/claude_desktop_config.json", '{"mcpServers": {"filesystem": {"command": "npx",}}}'),
    ("claude-code", ".claude.json", '{\n  // Claude Code reads plain JSON\n  "numStartups": 1\n}\n'),
    ("codex", ".codex/config.toml", 'model = "gpt-5"\n[mcp_servers.context7\ncommand = "npx"\n'),
    ("codex", ".codex/config.toml", 'mcp_servers = { tidemind = { command = "old" } }\n'),
    ("vscode", ".config/Code/User/mcp.json", '{"servers": ["not", "an", "object"]}'),
    ("gemini", ".gemini/settings.json", '{"hooks": {"SessionStart": {"not": "a list"}}}'),
    ("cursor", ".cursor/mcp.json", b'{"mcpServers": {"x": {"command": "caf\xe9"}}}'),
])
def test_a_malformed_config_is_refused_in_one_line_and_left_byte_identical(tmp_path, host, path, text):
    base = fixture_home(tmp_path, host)
    target = base / path
    target.write_bytes(text if isinstance(text, bytes) else text.encode())
    before = snapshot(base)
    proc = cli(tmp_path, tmp_path / "tm", base, "--host", host, check=False)
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1 and str(target) in proc.stderr
    assert "nothing was changed" in proc.stderr
    assert snapshot(base) == before and not (tmp_path / "tm" / "hosts").exists()


def test_all_wires_the_hosts_it_finds_and_one_bad_file_stops_every_host(tmp_path):
    base = tmp_path / "base"
    for host in ("codex", "gemini", "windsurf"):
        shutil.copytree(FIXTURES / host, base, dirs_exist_ok=True)
    (base / ".gemini" / "settings.json").write_text('{"ui": {"theme": "GitHub"}')      # unterminated
    before = snapshot(base)
    proc = cli(tmp_path, tmp_path / "tm", base, "--host", "all", check=False)
    assert proc.returncode == 1 and ".gemini/settings.json" in proc.stderr and snapshot(base) == before
    shutil.copy(FIXTURES / "gemini" / ".gemini" / "settings.json", base / ".gemini" / "settings.json")
    report = cli(tmp_path, tmp_path / "tm", base, "--host", "all")
    assert report["found"] == ["codex", "gemini", "windsurf"]
    assert set(report["not_found"]) == {"claude-code", "claude-desktop", "cursor", "vscode"}
    assert [h["host"] for h in report["hosts"]] == report["found"]
    assert not (base / ".claude.json").exists() and not (base / ".cursor").exists()
    text = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(tmp_path / "tm"), "install-hooks",
                           "--base", str(base), "--host", "all", "--uninstall"], capture_output=True, text=True,
                          cwd=ROOT, env=env_for(tmp_path), timeout=60)
    assert text.returncode == 0 and "found: codex, gemini, windsurf" in text.stdout
    assert snapshot(base) == {**before, ".gemini/settings.json": (FIXTURES / "gemini/.gemini/settings.json").read_bytes()}


def test_uninstall_after_the_host_changed_the_file_keeps_the_change(tmp_path):
    """Claude Code rewrites ~/.claude.json as it runs; an uninstall then takes out only our entry."""
    base = fixture_home(tmp_path, "claude-code")
    home = tmp_path / "tm"
    cli(tmp_path, home, base, "--host", "claude-code")
    state = base / ".claude.json"
    data = json.loads(state.read_text())
    data["numStartups"] = 43
    data["mcpServers"]["sentry"] = {"type": "http", "url": "https://mcp.sentry.dev/mcp"}
    state.write_text(json.dumps(data, indent=2))
    cli(tmp_path, home, base, "--host", "claude-code", "--uninstall")
    left = json.loads(state.read_text())
    assert "tidemind" not in left["mcpServers"] and left["numStartups"] == 43 and "sentry" in left["mcpServers"]
    expected = json.loads((FIXTURES / "claude-code" / ".claude.json").read_text())
    expected["numStartups"] = 43
    expected["mcpServers"]["sentry"] = data["mcpServers"]["sentry"]
    assert left == expected
    assert (base / ".claude" / "settings.json").read_bytes() == \
        (FIXTURES / "claude-code" / ".claude" / "settings.json").read_bytes()       # untouched since: exact


@pytest.mark.parametrize("platform,desktop,vscode", [
    ("darwin", "Library/Application Support/Claude/claude_desktop_config.json",
     "Library/Application Support/Code/User/mcp.json"),
    ("win32", "AppData/Roaming/Claude/claude_desktop_config.json", "AppData/Roaming/Code/User/mcp.json"),
    ("linux", ".config/Claude/claude_desktop_config.json", ".config/Code/User/mcp.json"),
])
def test_per_os_locations(tmp_path, platform, desktop, vscode):
    from tidemind.install import detect, run

    base = tmp_path / "base"
    for rel, source in ((desktop, "claude-desktop/.config/Claude/claude_desktop_config.json"),
                        (vscode, "vscode/.config/Code/User/mcp.json")):
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / source, base / rel)
    assert detect(base, platform) == ["claude-desktop", "vscode"]
    report = run(["claude-desktop", "vscode"], str(base), str(tmp_path / "tm"), None, False, False, platform)
    paths = {c["path"] for h in report["hosts"] for c in h["changes"]}
    assert {str(base / desktop), str(base / vscode)} <= paths
    assert "tidemind" in read_config(base / desktop, "json")["mcpServers"]
    assert "tidemind" in read_config(base / vscode, "jsonc")["servers"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=5), st.sampled_from([None, 2, 4, "\t"]),
       st.booleans(), st.dictionaries(st.text(max_size=6), json_values, max_size=3))
def test_adding_then_removing_our_entry_gives_back_the_same_bytes(data, indent, has_servers, servers):
    """Whatever the person's file holds and however it is indented, install edits only what it adds
    and the removal takes exactly that away again."""
    from tidemind.jsonedit import Document

    if has_servers:
        data = {**data, "mcpServers": {k: v for k, v in servers.items() if k != "tidemind"}}
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    doc = Document(text)
    doc.set(["mcpServers", "tidemind"], {"command": "tidemind", "args": ["serve"]})
    assert json.loads(doc.text) == {**data, "mcpServers": {**data.get("mcpServers", {}),
                                                            "tidemind": {"command": "tidemind", "args": ["serve"]}}}
    doc.remove(["mcpServers", "tidemind"])
    if has_servers:
        assert doc.text == text
    else:
        assert json.loads(doc.text) == {**data, "mcpServers": {}}


def test_windows_line_endings_stay_and_come_back(tmp_path):
    """A config written on Windows keeps CRLF in what install adds, and uninstall restores it."""
    base = tmp_path / "base"
    for host in ("claude-desktop", "codex"):
        shutil.copytree(FIXTURES / host, base, dirs_exist_ok=True)
    for rel in (".config/Claude/claude_desktop_config.json", ".codex/config.toml", ".codex/hooks.json"):
        (base / rel).write_bytes((base / rel).read_bytes().replace(b"\n", b"\r\n"))
    before = snapshot(base)
    cli(tmp_path, tmp_path / "tm", base, "--host", "claude-desktop", "--host", "codex")
    for rel in (".config/Claude/claude_desktop_config.json", ".codex/config.toml"):
        raw = (base / rel).read_bytes()
        assert b"tidemind" in raw and raw.count(b"\n") == raw.count(b"\r\n"), rel
    assert "tidemind" in read_config(base / ".codex/config.toml", "toml")["mcp_servers"]
    cli(tmp_path, tmp_path / "tm", base, "--host", "claude-desktop", "--host", "codex", "--uninstall")
    assert snapshot(base) == before


def test_a_linked_config_is_written_through_its_link(tmp_path):
    """Settings kept in a dotfiles checkout and linked into place stay linked."""
    base = fixture_home(tmp_path, "cursor")
    dotfiles = tmp_path / "dotfiles" / "mcp.json"
    dotfiles.parent.mkdir()
    shutil.move(base / ".cursor" / "mcp.json", dotfiles)
    (base / ".cursor" / "mcp.json").symlink_to(dotfiles)
    cli(tmp_path, tmp_path / "tm", base, "--host", "cursor")
    assert (base / ".cursor" / "mcp.json").is_symlink()
    assert "tidemind" in json.loads(dotfiles.read_text())["mcpServers"]
    cli(tmp_path, tmp_path / "tm", base, "--host", "cursor", "--uninstall")
    assert (base / ".cursor" / "mcp.json").is_symlink()
    assert dotfiles.read_bytes() == (FIXTURES / "cursor" / ".cursor" / "mcp.json").read_bytes()


# -- a remote server (install-hooks --url): the shape each host's own fixture shows for one -------------
REMOTE_URL = "https://memory.example.org/mcp"
REMOTE_ENTRIES = {
    # as the fixture's "github" server: "type": "http", url, headers with ${VAR}
    "claude-code": {"type": "http", "url": REMOTE_URL, "headers": {"Authorization": "Bearer ${TEAM_TOKEN}"}},
    # as the fixture's [mcp_servers.figma]: url and bearer_token_env_var
    "codex": {"url": REMOTE_URL, "bearer_token_env_var": "TEAM_TOKEN"},
    # as the fixture's "remote-server": url, headers with ${env:VAR}
    "cursor": {"url": REMOTE_URL, "headers": {"Authorization": "Bearer ${env:TEAM_TOKEN}"}},
    # Gemini CLI: httpUrl is its streamable HTTP field (url is SSE), and it reads $VAR in settings
    "gemini": {"httpUrl": REMOTE_URL, "headers": {"Authorization": "Bearer $TEAM_TOKEN"}},
    # as the fixture's "github" server: "type": "http" and url; headers with ${env:VAR}
    "vscode": {"type": "http", "url": REMOTE_URL, "headers": {"Authorization": "Bearer ${env:TEAM_TOKEN}"}},
    # as the fixture's "figma" server: serverUrl; headers with ${env:VAR}
    "windsurf": {"serverUrl": REMOTE_URL, "headers": {"Authorization": "Bearer ${env:TEAM_TOKEN}"}},
}


@pytest.mark.parametrize("host", list(REMOTE_ENTRIES))
def test_url_points_a_host_at_a_remote_server_without_writing_the_token(host, tmp_path):
    base = fixture_home(tmp_path, host)
    home = tmp_path / "tm"
    original = snapshot(base)
    spec = HOSTS[host]
    local = cli(tmp_path, home, base, "--host", host)            # wired to a local server first
    assert local["hosts"][0]["changes"]
    secret = "tidemind_" + "s3cr3t" * 7
    env = {**env_for(tmp_path), "TEAM_TOKEN": secret}
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "--json", "install-hooks",
                           "--base", str(base), "--host", host, "--url", REMOTE_URL, "--token-env", "TEAM_TOKEN"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    mcp_path, fmt, key = spec["mcp"]
    config = read_config(base / mcp_path, fmt)
    assert config[key]["tidemind"] == REMOTE_ENTRIES[host]
    hooks_style = spec["hooks"][2] if spec.get("hooks", (None,))[0] == mcp_path else None   # (one file: Gemini)
    assert without_ours(config, key, hooks_style) == read_config(FIXTURES / host / mcp_path, fmt)   # the rest as it was
    if "hooks" in spec:
        hooks_path, hfmt, style, events = spec["hooks"]
        hooks_config = read_config(base / hooks_path, hfmt)
        # the local stop hook's event list, made by the local install, goes with it (not left as [])
        assert [] not in (hooks_config.get("hooks") or {}).values(), hooks_config["hooks"]
        registered = our_hooks(hooks_config, style)
        wanted = {e: n for e, n in events.items() if n in ("session-start", "user-prompt")}
        assert set(registered) == set(wanted)                    # the local stop hook is taken out
        for event, name in wanted.items():
            assert registered[event][0].endswith(f" hook {name} --host {host} --url {REMOTE_URL} --token-env TEAM_TOKEN")
    assert all(secret.encode() not in data for data in snapshot(base).values())
    assert all(secret.encode() not in p.read_bytes() for p in home.rglob("*") if p.is_file())
    again = cli(tmp_path, home, base, "--host", host, "--url", REMOTE_URL, "--token-env", "TEAM_TOKEN")
    assert again["hosts"][0]["changes"] == []                    # idempotent
    cli(tmp_path, home, base, "--host", host, "--uninstall")
    assert snapshot(base) == original


@pytest.mark.parametrize("args,said", [
    (["--host", "claude-desktop", "--url", REMOTE_URL], "claude-desktop not wired to a remote server"),
    (["--host", "claude-code", "--host", "claude-desktop", "--url", REMOTE_URL], "claude-desktop not wired"),
    (["--host", "claude-code", "--url", "http://memory.example.org/mcp"], "in clear"),
    (["--host", "claude-code", "--url", "https://alice:pw@memory.example.org/mcp"], "must not carry credentials"),
    (["--host", "claude-code", "--url", "ftp://memory.example.org"], "http(s) URL"),
    (["--host", "claude-code", "--url", REMOTE_URL, "--token-env", "$X"], "must name an environment variable"),
    (["--host", "claude-code", "--url", REMOTE_URL, "--scope", "alpha"], "decides the scopes"),
    (["--host", "claude-code", "--token-env", "X"], "goes with --url"),
])
def test_a_remote_install_it_cannot_do_right_is_refused_and_nothing_changes(tmp_path, args, said):
    base = tmp_path / "base"
    for host in ("claude-code", "claude-desktop", "gemini", "vscode"):
        shutil.copytree(FIXTURES / host, base, dirs_exist_ok=True)
    before = snapshot(base)
    proc = cli(tmp_path, tmp_path / "tm", base, *args, check=False)
    assert proc.returncode == 1 and said in proc.stderr, proc.stderr
    assert snapshot(base) == before


def test_all_with_url_wires_the_hosts_that_take_a_remote_server_and_names_the_rest(tmp_path):
    base = tmp_path / "base"
    for host in ("codex", "claude-desktop", "cursor"):
        shutil.copytree(FIXTURES / host, base, dirs_exist_ok=True)
    report = cli(tmp_path, tmp_path / "tm", base, "--host", "all", "--url", REMOTE_URL)
    assert [h["host"] for h in report["hosts"]] == ["cursor", "codex"] and report["not_remote"] == ["claude-desktop"]
    assert read_config(base / ".cursor/mcp.json", "json")["mcpServers"]["tidemind"]["headers"] == \
        {"Authorization": "Bearer ${env:TIDEMIND_TOKEN}"}
    assert "tidemind" not in read_config(base / ".config/Claude/claude_desktop_config.json", "json")["mcpServers"]


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_uninstall_leaves_no_folder_the_install_made(host, tmp_path):
    """Issue 28: `install-hooks --uninstall` left an empty ~/.copilot/: a folder two of its files
    shared still held the second when the first was removed. Installed into an empty home, then
    uninstalled, every host leaves the home as empty as it was."""
    base = tmp_path / "base"
    base.mkdir()
    cli(tmp_path, tmp_path / "tm", base, "--host", host)
    assert any(p.is_file() for p in base.rglob("*"))
    cli(tmp_path, tmp_path / "tm", base, "--host", host, "--uninstall")
    assert not list(base.rglob("*")), sorted(str(p.relative_to(base)) for p in base.rglob("*"))
