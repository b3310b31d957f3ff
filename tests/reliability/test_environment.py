"""The environment refusing: a read-only home, a full disk, special files where a host's config
should be. Each ends in one line naming the path and the errno (a tool error on MCP), never a
traceback; reads answer where they can; nothing acknowledged is lost.

A full disk is a real one where this process may mount a small tmpfs (root in a container),
and a database held at its page count (`PRAGMA max_page_count`, the same SQLITE_FULL) always.
A read-only home is a tmpfs remounted read-only, or a folder without write permission when the
tests do not run as root (root writes through permissions).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from tidemind.mcp_server import build_server
from tidemind.memory import Memory

from ..conftest import ROOT, run_cli
from .test_bad_input import fingerprint


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@contextlib.contextmanager
def tmpfs(folder: Path, size: str):
    """A small tmpfs at `folder`, or a skip where this process may not mount one."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or not _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)):
        pytest.skip("mounting a tmpfs needs root (and CAP_SYS_ADMIN)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@contextlib.contextmanager
def read_only(folder: Path, mount_point: Path):
    """Nothing in `folder` can be written while the block runs: the tmpfs at `mount_point` (made
    by `tmpfs`) remounted read-only as root, the folder's write permissions taken away otherwise."""
    if os.geteuid() == 0:
        assert _mount("-o", "remount,ro", str(mount_point)), "the tmpfs could not be remounted read-only"
        try:
            yield
        finally:
            assert _mount("-o", "remount,rw", str(mount_point))
    else:
        paths = [folder, *(p for p in folder.rglob("*"))]
        modes = {p: p.stat().st_mode for p in paths}
        for p in sorted(paths, key=lambda p: -len(p.parts)):
            p.chmod(modes[p] & 0o555)
        try:
            yield
        finally:
            for p in sorted(paths, key=lambda p: len(p.parts)):
                p.chmod(modes[p])


def tool_refusal(server, tool: str, arguments: dict) -> str:
    try:
        result = asyncio.run(server.call_tool(tool, arguments))
    except ToolError as exc:
        return str(exc)
    assert result.is_error, (tool, result.content)
    return result.content[0].text


def one_line(proc) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err[-600:]
    return err


def test_a_read_only_home_answers_reads_and_refuses_writes_in_one_line(tmp_path):
    """Every command, reads included, ended in `apsw.CantOpenError` when the home could not be
    written. The store now opens for reading only: recall, show, stats, prepare and the hooks
    answer; a write names the path and the errno; nothing changes."""
    area = tmp_path / "area"
    ctx = tmpfs(area, "32m") if os.geteuid() == 0 else contextlib.nullcontext(area)
    with ctx:
        area.mkdir(exist_ok=True)
        home = area / "home"
        with Memory.open(home) as m:
            kept = m.digest("the harbour lanterns are lit at dusk")["node_ids"][0]
            m.embed_pending()
            before = fingerprint(m, home)
        with read_only(home, area):
            for argv in (["recall", "harbour lanterns"], ["show", str(kept)], ["stats"], ["prepare"], ["digests"],
                         ["clarify"], ["review", "list"]):
                proc = run_cli(home, *argv)
                assert proc.returncode == 0 and not proc.stderr, (argv, proc.stderr.decode()[-600:])
            assert b"harbour lanterns" in run_cli(home, "recall", "harbour lanterns").stdout
            for argv in (["digest", "a new fact"], ["forget", str(kept)], ["archive", str(kept)], ["init"]):
                err = one_line(run_cli(home, *argv))
                assert str(home) in err and "errno" in err, err
            event = json.dumps({"cwd": str(tmp_path), "prompt": "when are the harbour lanterns lit"}).encode()
            env = dict(os.environ, TIDEMIND_HOME=str(home))
            hook = subprocess.run([sys.executable, "-m", "tidemind.cli", "hook", "session-start"], input=event,
                                  capture_output=True, env=env, cwd=ROOT, timeout=60)
            assert hook.returncode == 0 and "harbour lanterns" in hook.stdout.decode()
            server = build_server(str(home), ["personal"])
            result = asyncio.run(server.call_tool("brain_recall", {"query": "harbour lanterns"}))
            assert not result.is_error and "harbour lanterns" in result.content[0].text
            message = tool_refusal(server, "brain_digest", {"content": "a fact told over MCP"})
            assert str(home) in message and "errno" in message and "\n" not in message
            server.memory.close()
        with Memory.open(home) as m:
            assert fingerprint(m, home) == before
            assert m.digest("written again once the home is writable")["node_ids"]


def test_a_read_only_store_whose_write_ahead_log_holds_changes_is_not_read_without_them(tmp_path):
    """Read-only without its shared-memory file, a store is opened immutable, which reads the main
    file alone: if its write-ahead log holds committed changes, those would be missing from every
    answer. That store is refused in one line instead of answering without them."""
    import shutil

    area = tmp_path / "area"
    ctx = tmpfs(area, "32m") if os.geteuid() == 0 else contextlib.nullcontext(area)
    with ctx:
        area.mkdir(exist_ok=True)
        source, home = tmp_path / "source", area / "home"
        with Memory.open(source) as m:
            m.conn.execute("PRAGMA wal_autocheckpoint=0")
            m.digest("the harbour lanterns are lit at dusk")
            home.mkdir()
            for name in ("tidemind.db", "tidemind.db-wal"):            # (no -shm: it is rebuilt from the log)
                shutil.copy(source / name, home / name)
        assert (home / "tidemind.db-wal").stat().st_size > 0
        with read_only(home, area):
            err = one_line(run_cli(home, "recall", "harbour lanterns"))
            assert "tidemind.db-wal" in err, err
        proc = run_cli(home, "recall", "harbour lanterns")             # writable again: the log is read
        assert proc.returncode == 0 and b"harbour lanterns" in proc.stdout


def _page_limited_cli(home: Path, *args: str):
    """The real CLI, with every connection held at its database's current page count: SQLite's
    SQLITE_FULL, as a full disk gives it."""
    code = ("import sys, tidemind.store as s, tidemind.store.connection as c\n"
            "real = c.connect\n"
            "def full(*a, **k):\n"
            "    conn = real(*a, **k)\n"
            "    pages = conn.execute('PRAGMA page_count').fetchall()[0][0]\n"
            "    conn.execute(f'PRAGMA max_page_count={pages}')\n"
            "    return conn\n"
            "c.connect = s.connect = full\n"
            "from tidemind.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    return subprocess.run([sys.executable, "-c", code, "--home", str(home), *args], capture_output=True, cwd=ROOT,
                          timeout=120)


def test_a_full_database_is_one_line_on_the_cli_and_a_clear_tool_error_on_mcp(tmp_path):
    """A full disk: CLI recall ended in a traceback and MCP said "Error executing tool" with no
    reason. A write now says which file could not be written and why (errno 28), a read still
    answers (its bookkeeping is best-effort), and nothing acknowledged is lost."""
    home = tmp_path / "home"
    with Memory.open(home) as m:
        kept = m.digest("the harbour lanterns are lit at dusk")["node_ids"][0]
    big = "ships and harbours and the lanterns of the quay " * 400
    err = one_line(_page_limited_cli(home, "digest", big))
    assert str(home / "tidemind.db") in err and "errno 28" in err, err
    proc = _page_limited_cli(home, "recall", "harbour lanterns")
    assert proc.returncode == 0 and b"harbour lanterns" in proc.stdout, proc.stderr.decode()[-600:]
    server = build_server(str(home), ["personal"])
    pages = server.memory.conn.execute("PRAGMA page_count").fetchall()[0][0]
    server.memory.conn.execute(f"PRAGMA max_page_count={pages}")
    before = fingerprint(server.memory, home)
    message = tool_refusal(server, "brain_digest", {"content": big})
    assert "Error executing tool brain_digest: cannot write" in message and "errno 28" in message, message
    result = asyncio.run(server.call_tool("brain_recall", {"query": "harbour lanterns"}))
    assert not result.is_error and "harbour lanterns" in result.content[0].text
    assert fingerprint(server.memory, home)[0] == before[0]            # the database: nothing half-written
    server.memory.close()
    with Memory.open(home) as m:
        assert m.show(kept)["content"] == "the harbour lanterns are lit at dusk" and m.doctor()["ok"]


def test_a_full_disk_is_one_line_naming_the_path_and_errno(tmp_path):
    """The same on a real full disk (a small tmpfs filled to the last byte): even opening the
    store needs room (its shared-memory file), so every command says so in one line."""
    with tmpfs(tmp_path / "disk", "8m") as disk:
        home = disk / "home"
        with Memory.open(home) as m:
            kept = m.digest("the harbour lanterns are lit at dusk")["node_ids"][0]
        server = build_server(str(home), ["personal"])           # a server already running when the disk fills
        # unbuffered, down to the last byte: a buffered file raised ENOSPC again at close when a
        # write had fitted only in part (which depends on how big the store happens to be)
        with open(disk / "filler", "wb", buffering=0) as filler:
            for size in (65536, 4096, 1):
                with contextlib.suppress(OSError):
                    while filler.write(b"\0" * size):
                        pass
        err = one_line(run_cli(home, "digest", "ships and harbours " * 300))
        assert str(home) in err and "errno 28" in err, err
        proc = run_cli(home, "recall", "harbour lanterns")      # the server's shared memory is there to read with
        assert proc.returncode == 0 and b"harbour lanterns" in proc.stdout, proc.stderr.decode()[-600:]
        message = tool_refusal(server, "brain_digest", {"content": "ships and harbours " * 300})
        assert str(home) in message and "errno 28" in message, message
        result = asyncio.run(server.call_tool("brain_recall", {"query": "harbour lanterns"}))
        assert not result.is_error and "harbour lanterns" in result.content[0].text
        server.memory.close()
        for argv in (["digest", "a fact"], ["recall", "harbour lanterns"], ["stats"]):
            proc = run_cli(home, *argv)         # alone on a full disk: it answers, or cannot even open, in one line
            if proc.returncode != 0 or argv[0] == "digest":
                err = one_line(proc)
                assert str(home) in err and "errno 28" in err, err
        (disk / "filler").unlink()
        with Memory.open(home) as m:
            assert m.show(kept)["content"] == "the harbour lanterns are lit at dusk"
            assert m.stats()["nodes"]["live"] == 1


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.is_symlink(), p.is_file() and not p.is_symlink() and p.read_bytes())
            for p in sorted(folder.rglob("*"))} if folder.exists() else {}


def test_install_hooks_refuses_special_files_and_dangling_links_at_a_hosts_config_path(tmp_path):
    """A FIFO at ~/.claude.json made install-hooks wait for ever (it read the pipe); a symbolic
    link to nothing made it create folders outside the home. Both, and a device, are refused in
    one line before any file of any host is written."""
    outside = tmp_path / "outside"
    outside.mkdir()
    cases = {"fifo": lambda base: os.mkfifo(base / ".claude.json"),
             "device": lambda base: (base / ".claude.json").symlink_to("/dev/null"),
             "dangling file": lambda base: (base / ".claude.json").symlink_to(outside / "new" / "claude.json"),
             "dangling folder": lambda base: (base / ".claude").symlink_to(outside / "elsewhere" / ".claude"),
             "folder": lambda base: (base / ".claude.json").mkdir()}
    for name, make in cases.items():
        base = tmp_path / name.replace(" ", "-")
        (base / ".cursor").mkdir(parents=True)            # a second host, wired by `--host all`
        if name != "dangling folder":
            (base / ".claude").mkdir()
        make(base)
        before = _tree(base)
        wired = [["--host", "claude-code"], ["--host", "claude-code", "--dry-run"]]
        if name != "dangling folder":                   # (`all` finds no Claude Code when its folder is a broken link)
            wired.append(["--host", "all"])
        for hosts in wired:
            proc = run_cli(tmp_path / "tm", "install-hooks", "--base", str(base), *hosts)
            err = one_line(proc)
            assert ".claude" in err and "nothing was changed" in err, (name, err)
        assert _tree(base) == before, name
        assert _tree(outside) == {}, name
    assert not (tmp_path / "tm" / "hosts").exists()
    base = tmp_path / "linked"                           # a link to a real file (a dotfiles checkout) still works
    (base / ".claude").mkdir(parents=True)
    (outside / "claude.json").write_text('{"theme": "dark"}\n')
    (base / ".claude.json").symlink_to(outside / "claude.json")
    assert run_cli(tmp_path / "tm", "install-hooks", "--base", str(base)).returncode == 0
    assert (base / ".claude.json").is_symlink() and "tidemind" in (outside / "claude.json").read_text()
