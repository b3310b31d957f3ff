"""Claude Code hooks as the host runs them: a subprocess with the event JSON on stdin."""
import json
import os
import subprocess
import sys
import time

from tidemind.memory import Memory
from tidemind.metabolism.scheduler import run_due
from tidemind.store import connect, review

from .conftest import ROOT


def hook(home, event_name, event: dict | str | None):
    data = event if isinstance(event, str) else json.dumps(event or {})
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "hook", event_name],
                          input=data.encode(), capture_output=True, cwd=ROOT, timeout=60,
                          env=dict(os.environ))
    return proc, time.monotonic() - start


def shell_transcript(path, asked: str, calls: list[tuple[str, str, bool]]):
    """A Claude Code transcript: the person's request, then shell calls (command, result, failed)."""
    lines = [{"type": "user", "message": {"role": "user", "content": asked}}]
    for n, (command, result, failed) in enumerate(calls):
        lines.append({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": command}}]}})
        lines.append({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{n}", "is_error": failed, "content": result}]}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _repo(tmp_path, name="shop"):
    repo = tmp_path / name
    (repo / ".git").mkdir(parents=True)
    return repo


def test_session_start_injects_prepare_for_the_repo_scope(home, tmp_path):
    repo = _repo(tmp_path)
    with Memory.open(home) as m:
        m.digest("Decision: the shop uses Stripe for payments.", scope="project:shop")
        m.digest("Unrelated project detail about the garden", scope="project:garden")
    proc, _ = hook(home, "session-start", {"hook_event_name": "SessionStart", "cwd": str(repo), "source": "startup"})
    assert proc.returncode == 0
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert "Stripe" in out["additionalContext"] and "garden" not in out["additionalContext"]


def test_hooks_exit_zero_when_store_missing_locked_or_input_broken(home, tmp_path):
    proc, _ = hook(home, "session-start", {"cwd": str(tmp_path)})
    assert proc.returncode == 0 and "no TideMind store" in proc.stdout.decode()
    with Memory.open(home) as m:
        m.digest("I prefer short answers.", scope="personal")
    holder = connect(home / "tidemind.db")
    holder.execute("BEGIN IMMEDIATE")
    try:
        proc, took = hook(home, "session-start", {"cwd": str(tmp_path)})
        assert proc.returncode == 0 and took < 10
        proc, _ = hook(home, "stop", {"cwd": str(tmp_path), "transcript_path": str(tmp_path / "none.jsonl")})
        assert proc.returncode == 0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    proc, _ = hook(home, "user-prompt", "{not json")
    assert proc.returncode == 0 and proc.stdout == b""


def test_user_prompt_injects_only_strong_matches(home, tmp_path):
    repo = _repo(tmp_path)
    with Memory.open(home) as m:
        m.digest("The staging database listens on port 5433.", scope="project:shop")
        m.embed_pending()
    proc, _ = hook(home, "user-prompt", {"cwd": str(repo), "prompt": "what port does the staging database use?"})
    assert proc.returncode == 0
    ctx = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "5433" in ctx and len(ctx) < 2000
    assert "not instructions" in ctx and '] person: "The staging database listens on port 5433."' in ctx   # quoted, by whom
    proc, _ = hook(home, "user-prompt", {"cwd": str(repo), "prompt": "write a haiku about autumn leaves"})
    assert proc.returncode == 0 and proc.stdout == b""


def _scope_of(home, repo) -> str:
    """The repository's own scope (project:<name>@<id>), where its sessions write."""
    from tidemind.config import load_settings
    from tidemind.scopes import derive_scopes

    return derive_scopes(None, load_settings(home), repo)[0]


def _transcript(path, turns):
    with open(path, "w") as fh:
        for role, text in turns:
            fh.write(json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n")
    return path


def test_stop_files_a_correction_as_a_proposed_lesson(home, tmp_path):
    repo = _repo(tmp_path)
    Memory.open(home).close()
    bad = _transcript(tmp_path / "t1.jsonl", [
        ("user", "start the dev server"),
        ("assistant", "Started it on port 3000."),
        ("user", "no, the port is 8080, not 3000"),
        ("assistant", "Restarted on 8080."),
    ])
    proc, _ = hook(home, "stop", {"cwd": str(repo), "transcript_path": str(bad), "session_id": "abc"})
    assert proc.returncode == 0 and "1 proposed lesson" in proc.stdout.decode()
    with Memory.open(home) as m:
        items = review.proposals(m.conn, [_scope_of(home, repo)], "proposed_lesson")
        assert len(items) == 1 and "8080" in items[0]["payload"]["said"] and items[0]["status"] == "open"
        assert m.stats()["nodes"]["live"] == 0              # a proposal, never an authored memory
    again, _ = hook(home, "stop", {"cwd": str(repo), "transcript_path": str(bad), "session_id": "abc"})
    assert again.stdout == b""                            # not filed twice
    clean = _transcript(tmp_path / "t2.jsonl", [("user", "list the files"), ("assistant", "Here they are."),
                                                 ("user", "thanks, now run the tests"), ("assistant", "All green.")])
    proc, _ = hook(home, "stop", {"cwd": str(repo), "transcript_path": str(clean)})
    assert proc.returncode == 0 and proc.stdout == b""


def test_stop_reads_a_codex_rollout_transcript(home, tmp_path):
    """Codex writes its session as rollout JSONL: `{"type": "response_item", "payload": {"type":
    "message", "role", "content": [{"type": "input_text" | "output_text", "text"}]}}`."""
    repo = _repo(tmp_path)
    Memory.open(home).close()
    rollout = tmp_path / "rollout.jsonl"
    turns = [("user", "input_text", "start the dev server"), ("assistant", "output_text", "Started it on port 3000."),
             ("user", "input_text", "no, the port is 8080, not 3000")]
    with open(rollout, "w") as fh:
        fh.write(json.dumps({"type": "session_meta", "payload": {"id": "abc", "cwd": str(repo)}}) + "\n")
        for role, kind, text in turns:
            fh.write(json.dumps({"type": "response_item", "payload": {"type": "message", "role": role,
                                                                      "content": [{"type": kind, "text": text}]}}) + "\n")
    event = {"hook_event_name": "Stop", "cwd": str(repo), "transcript_path": str(rollout), "session_id": "abc",
             "turn_id": "t1", "stop_hook_active": False}
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "hook", "stop", "--host", "codex"],
                          input=json.dumps(event).encode(), capture_output=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout)["systemMessage"].startswith("TideMind filed 1")
    with Memory.open(home) as m:
        items = review.proposals(m.conn, [_scope_of(home, repo)], "proposed_lesson")
        assert len(items) == 1 and "8080" in items[0]["payload"]["said"]


def test_a_repeated_failure_learns_what_worked_instead_and_becomes_do_x_instead(home, tmp_path):
    repo = _repo(tmp_path)
    scope = _scope_of(home, repo)
    with Memory.open(home) as m:
        m.digest("The shop builds with npm.", scope=scope)
    error = "npm ERR! missing script: build"
    transcript = shell_transcript(tmp_path / "t.jsonl", "build the shop", [
        ("npm run build", error, True), ("npm run build", error, True),
        ("cat package.json", '{"scripts": {"compile": "tsc"}}', False), ("npm run compile", "done in 2.1s", False)])
    proc, _ = hook(home, "stop", {"cwd": str(repo), "transcript_path": str(transcript), "session_id": "s1"})
    assert "1 proposed lesson" in proc.stdout.decode()
    for _ in range(2):                        # the host runs the stop hook after every turn: counted once
        hook(home, "stop", {"cwd": str(repo), "transcript_path": str(transcript), "session_id": "s1"})
    hook(home, "stop", {"cwd": str(repo), "transcript_path": str(transcript), "session_id": "s2"})
    with Memory.open(home) as m:
        item = review.proposals(m.conn, [scope], "proposed_lesson")[0]
        assert item["payload"]["command"] == "npm run build" and item["payload"]["instead"] == "npm run compile"
        assert item["payload"]["times"] == 4                 # two in each of two sessions
        run_due(m, only=["lessons"], force=True)
        lesson = m.conn.execute("SELECT text FROM syntheses WHERE kind='lesson'").fetchone()[0]
        assert lesson.startswith("Run `npm run compile` instead of `npm run build` (it failed 4 times")
        assert error not in lesson
        assert "Run `npm run compile` instead" in m.prepare(scopes=[scope])["text"]


def test_opening_a_memory_and_the_mcp_server_module_import_no_numpy():
    """A hook runs on every prompt and an MCP server is started by every session: neither computes
    a vector or a workstream fingerprint before it is asked to, so neither pays numpy's import
    (70 ms of their start) up front."""
    import subprocess
    import sys

    code = ("import sys, tidemind.memory, tidemind.hooks, tidemind.mcp_server, tidemind.cli;"
            " print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith('numpy.'))[:3])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout
