"""A repository's own scope (`project:<name>@<id>`, what `serve` and the hooks use when nobody
names a scope) is unforgeable and stable.

The id was the first 6 hex digits of the repository's root commit: a repository whose root was
brute-forced to that prefix (about 5 s) read and wrote another repository's memories; merging an
unrelated history whose root sorts lower changed the scope, and earlier memories vanished from
recall; a folder name in NFC and in NFD gave two scopes. The id is now a random one recorded in
the repository's local git config on first use (`tidemind.scope-id`); a repository whose
memories sit under its old 6-hex scope keeps that scope, bound in the store to its full root
commit so a forged prefix cannot take it.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

from tidemind.config import load_settings
from tidemind.mcp_server import build_server
from tidemind.memory import Memory
from tidemind.scopes import derive_scopes

GIT = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
       "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                         env={**os.environ, **GIT})
    return out.stdout.strip()


def new_repo(path: Path, message: str = "root") -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "commit", "-q", "--allow-empty", "-m", message)
    return path


def root_of(repo: Path) -> str:
    return git(repo, "rev-list", "--max-parents=0", "HEAD").split()[0]


def forge_root(path: Path, prefix: str) -> Path:
    """A repository whose root commit's hash starts with `prefix` (found by varying its message)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    tree = git(path, "write-tree")
    for n in range(10_000_000):
        body = f"tree {tree}\nauthor t <t@t> 1767225600 +0000\ncommitter t <t@t> 1767225600 +0000\n\nforged {n}\n"
        import hashlib

        data = body.encode()
        if hashlib.sha1(b"commit %d\x00" % len(data) + data).hexdigest().startswith(prefix):
            made = subprocess.run(["git", "-C", str(path), "hash-object", "-t", "commit", "-w", "--stdin"],
                                  input=data, capture_output=True, check=True).stdout.decode().strip()
            git(path, "update-ref", "refs/heads/main", made)
            return path
    raise AssertionError("no forged root found")


def scope_of(home: Path, repo: Path) -> tuple[list[str], list[str]]:
    """(readable, writable) of a server started in `repo`, as `tidemind serve` starts it there."""
    server = build_server(str(home), None, cwd=repo)
    try:
        return list(server.memory.readable), list(server.memory.writable)
    finally:
        server.memory.close()


def test_the_id_is_random_recorded_in_git_config_and_survives_a_merge(tmp_path):
    home = tmp_path / "home"
    repo = new_repo(tmp_path / "api")
    readable, writable = scope_of(home, repo)
    assert len(writable) == 1 and writable[0].startswith("project:api@")
    ident = writable[0].rsplit("@", 1)[1]
    assert len(ident) == 32 and ident != root_of(repo)[:32]                    # random, not the root commit
    assert git(repo, "config", "--local", "--get", "tidemind.scope-id") == ident
    with Memory.open(home, readable_scopes=writable, writable_scopes=writable) as m:
        m.digest("the api rate limit is 600 requests a minute")
    other = new_repo(tmp_path / "other", "an unrelated history whose root may sort lower")
    for n in range(40):                         # make sure one of its roots sorts below this repository's
        if root_of(other) < root_of(repo):
            break
        git(other, "commit", "-q", "--amend", "--allow-empty", "-m", f"another root {n}")
    assert root_of(other) < root_of(repo)
    git(repo, "pull", "-q", "--no-rebase", "--no-edit", "--allow-unrelated-histories", str(other), "main")
    assert len(git(repo, "rev-list", "--max-parents=0", "HEAD").split()) == 2
    assert scope_of(home, repo)[1] == writable                                 # the same scope after the merge
    server = build_server(str(home), None, cwd=repo)
    assert server.memory.recall("api rate limit")["items"]
    server.memory.close()
    clone = tmp_path / "clone" / "api"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    assert scope_of(home, clone)[1] != writable                                # a clone is another checkout


def test_a_forged_root_prefix_never_reaches_another_repositorys_memories(tmp_path, monkeypatch):
    """The old id held 6 hex digits of the root commit (~5 s to forge); here 3, so that forging
    takes a moment: the rule is the same."""
    from tidemind import scopes

    monkeypatch.setattr(scopes, "LEGACY_ID_CHARS", 3)
    home = tmp_path / "home"
    victim = new_repo(tmp_path / "a" / "api")
    legacy = f"project:api@{root_of(victim)[:3]}"
    with Memory.open(home) as m:                # written by an older TideMind under the short id
        m.digest("the production database password rotates on mondays", scope=legacy)
    assert scope_of(home, victim)[1] == [legacy]                               # kept: nothing vanishes
    assert git(victim, "config", "--local", "--get", "tidemind.scope-id") == root_of(victim)[:3]
    forged = forge_root(tmp_path / "b" / "api", root_of(victim)[:3])
    assert root_of(forged)[:3] == root_of(victim)[:3] and root_of(forged) != root_of(victim)
    readable, writable = scope_of(home, forged)
    assert legacy not in readable and legacy not in writable and len(writable[0].rsplit("@", 1)[1]) == 32
    server = build_server(str(home), None, cwd=forged)
    assert not [i for i in server.memory.recall("production database password")["items"] if i["scope"] == legacy]
    server.memory.close()
    with Memory.open(home) as m:
        assert m.conn.execute("SELECT claimant FROM scope_claims WHERE scope=?", (legacy,)).fetchall() \
            == [(f"root:{root_of(victim)}",)]
    clone = tmp_path / "c" / "api"            # a clone shares the full root: it keeps the old scope, as it did
    git(tmp_path, "clone", "-q", str(victim), str(clone))
    assert scope_of(home, clone)[1] == [legacy]


def test_a_repository_keeps_its_old_scope_and_every_old_scope_of_a_merged_history(tmp_path):
    """Memories written by an older TideMind under the 6-hex id of each root the repository has
    had (a merge changed the id then) stay readable, and new ones go where the last ones went."""
    home = tmp_path / "home"
    repo = new_repo(tmp_path / "api")
    other = new_repo(tmp_path / "other", "other root")
    for n in range(40):
        if root_of(other) < root_of(repo):
            break
        git(other, "commit", "-q", "--amend", "--allow-empty", "-m", f"other root {n}")
    before_merge = f"project:api@{root_of(repo)[:6]}"
    after_merge = f"project:api@{root_of(other)[:6]}"
    git(repo, "pull", "-q", "--no-rebase", "--no-edit", "--allow-unrelated-histories", str(other), "main")
    with Memory.open(home) as m:
        m.digest("the deploy key lives in the vault", scope=before_merge)
        m.digest("staging moved to the new cluster", scope=after_merge)
    readable, writable = scope_of(home, repo)
    assert writable == [after_merge] and before_merge in readable             # the old code's last id writes
    server = build_server(str(home), None, cwd=repo)
    assert server.memory.recall("deploy key vault")["items"]
    server.memory.close()
    assert git(repo, "config", "--local", "--get", "tidemind.scope-id") == root_of(other)[:6]


def test_a_folder_name_in_nfc_or_nfd_is_one_scope(tmp_path):
    settings = load_settings(tmp_path / "home")
    nfc, nfd = unicodedata.normalize("NFC", "Café"), unicodedata.normalize("NFD", "Café")
    assert nfc != nfd
    made = []
    for parent, name in (("a", nfc), ("b", nfd)):
        repo = tmp_path / parent / name
        repo.mkdir(parents=True)
        (repo / ".git").mkdir()                                # not a git repository: no config, no commit
        made.append(derive_scopes(None, settings, repo)[0].split("@")[0])
    assert made[0] == made[1] == "project:xn--Caf-dma"


def test_where_git_config_cannot_be_written_the_full_root_commit_is_the_id(tmp_path):
    """And once it can be written, the repository keeps that scope (recording it)."""
    from .test_environment import read_only, tmpfs

    home = tmp_path / "home"
    area = tmp_path / "area"
    with (tmpfs(area, "8m") if os.geteuid() == 0 else contextlib.nullcontext(area)):
        repo = new_repo(area / "api")
        root = root_of(repo)
        with read_only(repo / ".git", area):
            writable = scope_of(home, repo)[1]
            assert writable == [f"project:api@{root}"]
            with Memory.open(home, readable_scopes=writable, writable_scopes=writable) as m:
                m.digest("written while the repository could not be written")
            assert scope_of(home, repo)[1] == writable
        assert scope_of(home, repo)[1] == writable                            # taken over once it can be
        assert git(repo, "config", "--local", "--get", "tidemind.scope-id") == root


def test_a_scope_id_in_the_config_that_is_not_one_is_refused_in_one_line(tmp_path):
    from ..conftest import ROOT

    home = tmp_path / "home"
    Memory.open(home).close()
    repo = new_repo(tmp_path / "api")
    git(repo, "config", "--local", "tidemind.scope-id", "../../personal")
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", str(home), "serve"], cwd=repo,
                          capture_output=True, timeout=60, stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    err = proc.stderr.decode()
    assert proc.returncode == 1 and len(err.strip().splitlines()) == 1 and "tidemind.scope-id" in err, err
