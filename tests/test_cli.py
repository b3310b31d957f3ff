"""The CLI as a user runs it: JSON shapes, errors, backup, doctor, demo, bench."""
import json
import shutil

import pytest

import apsw

from .conftest import run_cli


def test_json_shapes(cli):
    d = cli("digest", "The kettle descaler is in the left cupboard", "--session", "s1", "--source-tool", "cli")
    assert set(d) >= {"node_ids", "capture_id", "warnings"}
    cli("embed")
    r = cli("recall", "where is the kettle descaler")
    assert set(r) >= {"items", "abstained", "message"} and r["abstained"] is False
    item = r["items"][0]
    assert set(item) >= {"id", "content", "scope", "score", "tags", "links", "valid_from", "recorded_at", "flags"}
    s = cli("show", str(d["node_ids"][0]))
    assert set(s) >= {"id", "content", "status", "scope", "valid_from", "valid_to", "recorded_at", "versions",
                      "tags", "links", "derived"}
    st = cli("stats")
    assert st["nodes"] == {"live": 1, "archived": 0, "superseded": 0, "forgotten": 0, "awaiting_clarification": 0}
    assert {"links", "tags", "review"} <= set(st)


def test_errors_are_one_line_without_traceback(home):
    run_cli(home, "init")
    for args in (["show", "999"], ["show", "abc"], ["digest", "   "], ["archive", "5"],
                 ["recall", "x", "--as-of", "yesterday"], ["recall", "x", "--scope", "bad scope!"]):
        proc = run_cli(home, *args)
        err = proc.stderr.decode()
        assert proc.returncode == 1, args
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, (args, err)
    proc = run_cli(home, "--json", "show", "999")
    assert proc.returncode == 1 and "error" in json.loads(proc.stdout)


def test_abstains_on_an_empty_store(cli):
    cli("init")
    r = cli("recall", "anything at all")
    assert r["abstained"] is True and r["items"] == [] and r["message"]


def test_backup_and_doctor(home, cli, tmp_path):
    for i in range(5):
        cli("digest", f"backup test memory number {i}")
    out = tmp_path / "copy.db"
    b = cli("backup", str(out))
    assert b["bytes"] > 0
    conn = apsw.Connection(str(out))
    assert conn.execute("SELECT count(*) FROM nodes").fetchone()[0] == 5
    doc = cli("doctor")
    assert doc["ok"] and doc["checks"]["fts"] == "ok"


def test_doctor_detects_tampered_authored_text(home, cli):
    nid = cli("digest", "original authored words")["node_ids"][0]
    conn = apsw.Connection(str(home / "tidemind.db"))
    conn.execute("UPDATE nodes SET content='rewritten by someone' WHERE id=?", (nid,))
    conn.close()
    proc = run_cli(home, "--json", "doctor")
    assert proc.returncode == 1
    assert not json.loads(proc.stdout)["ok"]


def test_demo_runs_end_to_end(home):
    proc = run_cli(home, "--json", "demo")
    assert proc.returncode == 0, proc.stderr.decode()
    steps = json.loads(proc.stdout)
    kinds = [s["step"] for s in steps]
    assert "digest" in kinds and "correct" in kinds and "show" in kinds
    assert any(s["step"] == "doctor" and s["result"]["ok"] for s in steps)
    # the bundled fortnight makes every workstream question show something real
    taste = {s["step"]: s["result"] for s in steps if s["step"].startswith("taste-")}
    assert taste["taste-first"]["first"] == "2026-01-05" and taste["taste-first"]["as"] == "fishtank"
    assert len(taste["taste-where"]["days"]) == 7 and taste["taste-decode"]["unexplained_weight"] > 0.2
    assert taste["taste-diff"]["only_in_a"] == ["home-lab"] and "garden-sensors" in taste["taste-diff"]["only_in_b"]
    assert [u["name"] for u in taste["taste-unknowns"]["decide"]] == ["sourdough-lab"]
    assert taste["taste-unknowns"]["decide"][0]["recommendation"] == "alias->recipe-site"
    assert taste["taste-tasteslike"]["company"][0]["slug"] == "recipe-site"
    assert taste["taste-backtest"]["flagged"] and taste["taste-similar"]["similar"] and taste["taste-gaps"]["gaps"]
    assert taste["taste-window"]["workstreams"]
    weeks = taste["taste-drift"]["weeks"]
    assert len(weeks) == 2 and weeks[0]["shift"] is None and all(0 <= w["shift"] <= 2 for w in weeks[1:])
    # clarification: asked, held out of search, answered beside the text, then found by the answer
    step = {s["step"]: s["result"] for s in steps if not s["step"].startswith("taste-")}
    held = step["digest-ambiguous"]
    assert held["questions"][0]["options"] == ["Alex Chen", "Alex Rivera"]
    waiting = next(s["result"] for s in steps if s["step"].startswith('"signup copy final"'))
    assert held["node_ids"][0] not in [i["id"] for i in waiting["items"]]
    found = next(s["result"] for s in steps if s["step"].startswith('"what did Rivera say'))
    assert found["items"][0]["id"] == held["node_ids"][0]
    assert found["items"][0]["content"] == "Alex says the signup copy is final and can ship."
    assert step["digest-next-friday"]["questions"][0]["kind"] == "date" and step["clarify-skip"]["state"] == "skipped"
    assert {g["choice"] for g in step["recall-diverging"]["clarify"]["groups"]} == {"Alex Chen", "Alex Rivera"}
    chosen = next(s["result"] for s in steps if s["step"].endswith('--choose "Alex Rivera"'))
    assert chosen["chosen"] == "Alex Rivera" and "4730" in chosen["items"][0]["content"]


def test_bench_reports_floors(home, tmp_path):
    proc = run_cli(home, "--json", "bench", "--nodes", "400", "--queries", "10", "--digests", "5", "--full",
                   "--metabolism", "150", "--import-notes", "12", "--bench-home", str(tmp_path / "bench"))
    assert proc.returncode == 0, proc.stderr.decode()
    r = json.loads(proc.stdout)
    for key in ("digest_ms", "recall_ms", "recall_fts_only_ms", "recall_vector_only_ms", "prepare_ms", "fts_floor_ms",
                "vec_floor_ms", "mcp_recall_ms", "inproc_recall_ms", "mcp_digest_ms", "hook_session_start_ms",
                "hook_user_prompt_ms"):
        assert r[key]["p50"] > 0 and r[key]["p95"] >= r[key]["p50"], key
    assert r["nodes"] == 400 and r["mcp_recall_overhead_ratio"] > 0
    assert r["db_bytes_per_1000_nodes"] > 0 and r["peak_rss_mb"] > 0
    assert r["metabolism_cap"] == 150 and 0 < r["metabolism"]["annotate"]["nodes"] <= 150 + 1000
    assert r["import_notes"] == 12 and r["import_units"] >= 12 and r["import_resync_changed"] == 0


def test_environment_mistakes_are_one_line(home, tmp_path):
    cases = []
    file_home = tmp_path / "a-file"
    file_home.write_text("not a directory")
    cases.append((file_home, ["stats"]))
    bad_cfg = tmp_path / "cfg"
    bad_cfg.mkdir()
    (bad_cfg / "config.json").write_text("[1]")
    cases.append((bad_cfg, ["stats"]))
    not_db = tmp_path / "notdb"
    not_db.mkdir()
    (not_db / "tidemind.db").write_bytes(b"this is not sqlite at all" * 100)
    cases.append((not_db, ["stats"]))
    cases.append((home, ["show", "99999999999999999999"]))
    cases.append((home, ["archive", "99999999999999999999"]))
    cases.append((home, ["backup", "/proc/nope/x.db"]))
    cases.append((home, ["recall", "x", "--as-of", "9999-12-31T23:00:00-05:00"]))
    for where, args in cases:
        proc = run_cli(where, *args)
        err = proc.stderr.decode()
        assert proc.returncode != 0, (where, args)
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, (args, err)


def test_doctor_notes_orphan_stream_entries(home, cli):
    from tidemind.store import stream
    cli("digest", "a committed memory")
    stream.append(home / "stream", "2026-01-01.md", 77, stream.new_key(), "never committed", "orphan text")
    doc = cli("doctor")
    assert doc["ok"] and any("never acknowledged" in n for n in doc["notes"])


def test_config_toml_is_read(home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('default_scope = "project:from-toml"\nllm = "none"\n')
    from tidemind.config import load_settings
    from tidemind.llm import choose
    s = load_settings(home)
    assert s.default_scope == "project:from-toml" and choose(s) is None
    (home / "config.toml").write_text("this is = = not toml")
    proc = run_cli(home, "stats")
    assert proc.returncode == 1 and "config.toml" in proc.stderr.decode()


def test_metabolize_help_names_every_task(home):
    """The help lists the tasks a person may pass to --task; a new task must not be missing from it."""
    from tidemind.metabolism.scheduler import ordered_tasks

    said = " ".join(run_cli(home, "metabolize", "--help").stdout.decode().split())
    missing = [t.name for t in ordered_tasks() if t.name not in said]
    assert not missing, missing


def _bash_complete(script: str, words: list[str]) -> list[str]:
    """What bash offers for the last of `words`, with the script `tidemind completion bash` wrote."""
    import shlex
    import subprocess

    line = " ".join(shlex.quote(w) for w in words)
    probe = (f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _tidemind; "
             'printf "%s\\n" "${COMPREPLY[@]}"')
    return subprocess.run(["bash", "--norc", "--noprofile", "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True).stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_shell_completion_is_written_from_the_parser_and_completes_in_bash(home):
    """`tidemind completion bash|zsh|fish`: commands, then a command's own options and words, a
    global option's value skipped (tidemind --home DIR re... completes `recall`)."""
    proc = run_cli(home, "completion", "bash", check_json=False)
    assert proc.returncode == 0
    script = proc.stdout.decode()
    assert set(_bash_complete(script, ["tidemind", "re"])) >= {"recall", "restore", "rederive", "review"}
    assert "--scope" in _bash_complete(script, ["tidemind", "--home", "/tmp/x", "recall", "--sc"])
    assert _bash_complete(script, ["tidemind", "tokens", "re"]) == ["revoke"]
    assert "--all-scopes" not in _bash_complete(script, ["tidemind", "digest", "--a"])
    for shell in ("zsh", "fish"):
        proc = run_cli(home, "completion", shell, check_json=False)
        assert proc.returncode == 0 and "recall" in proc.stdout.decode()
    assert run_cli(home, "completion", "tcsh", check_json=False).returncode == 2


def _doctor(home, **env_changes):
    import os
    import subprocess
    import sys

    from .conftest import ROOT

    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                                                            "TIDEMIND_LLM", "TIDEMIND_EMBEDDER")}
    env.update(TIDEMIND_HOME=str(home), **env_changes)
    return subprocess.run([sys.executable, "-m", "tidemind.cli", "doctor"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_doctor_tells_the_truth_and_never_makes_a_store(home, tmp_path):
    """Issue 28: doctor on a fresh home made the database; with llm = "anthropic" and no key it said
    "unreachable (api.anthropic.com:443)"; an unknown provider was "unreachable" and healthy."""
    proc = _doctor(home)
    assert proc.returncode == 1 and "no store at" in proc.stderr and "tidemind init" in proc.stderr
    assert not (home / "tidemind.db").exists()
    run_cli(home, "init", check_json=False)
    proc = _doctor(home, TIDEMIND_LLM="anthropic")
    assert proc.returncode == 0 and "ANTHROPIC_API_KEY" in proc.stdout and "cannot be used" in proc.stdout
    assert "unreachable" not in proc.stdout
    proc = _doctor(home, TIDEMIND_LLM="openai")
    assert proc.returncode == 1 and "unknown LLM provider 'openai'" in proc.stdout and "PROBLEMS FOUND" in proc.stdout


def test_doctor_gives_advice_that_works_while_the_embedder_is_away(home):
    """`tidemind embed` fails while Ollama is down: doctor no longer advises it then."""
    import socket

    with socket.socket() as s:                       # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    away = {"TIDEMIND_EMBEDDER": "ollama", "OLLAMA_HOST": f"http://127.0.0.1:{port}",
            "TIDEMIND_OLLAMA_HOST": f"http://127.0.0.1:{port}"}
    run_cli(home, "digest", "--scope", "personal", "The staging database listens on port 5433.", check_json=False)
    proc = _doctor(home, **away)
    assert "waiting for embeddings" in proc.stdout, proc.stdout + proc.stderr
    assert "tidemind embed" not in proc.stdout and "is away" in proc.stdout


def test_one_config_file_its_precedence_and_config_show_says_where_each_value_came_from(home, monkeypatch):
    """Issue 28: config.json won over config.toml, OLLAMA_HOST over TIDEMIND_OLLAMA_HOST, and the
    keys were listed only in a docstring."""
    from tidemind.config import effective, load_settings

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('embedder = "default"\ndefault_scope = "work"\n[memory]\nwindow = 4\n')
    (home / "config.json").write_text(json.dumps({"embedder": "ollama", "max_note_bytes": 5000}))
    monkeypatch.setenv("OLLAMA_HOST", "http://generic:1")
    monkeypatch.setenv("TIDEMIND_OLLAMA_HOST", "http://ours:2")
    settings = load_settings(home)
    assert settings.embedder == "default" and settings.max_note_bytes == 5000    # the TOML wins; JSON still read
    assert settings.ollama_host == "http://ours:2"                               # TideMind's own variable wins
    shown = {row["key"]: row for row in effective(settings)}
    assert shown["embedder"]["from"] == "config.toml" and shown["max_note_bytes"]["from"] == "config.json"
    assert shown["ollama_host"]["from"] == "environment TIDEMIND_OLLAMA_HOST"
    assert shown["busy_timeout_ms"]["from"] == "default" and shown["memory"]["value"] == {"window": 4}
    monkeypatch.delenv("TIDEMIND_OLLAMA_HOST")
    assert load_settings(home).ollama_host == "http://generic:1"
    out = run_cli(home, "config", "show", check_json=False)
    assert out.returncode == 0
    text = out.stdout.decode()
    assert 'default_scope = "work"  (config.toml)' in text and "config.json is still read" in text
    text = run_cli(home, "--store", str(home / "elsewhere.db"), "config", "show", check_json=False).stdout.decode()
    assert "(argument --store)" in text and "elsewhere.db" in text


def test_docs_config_lists_every_key_and_variable_the_settings_read():
    """docs/CONFIG.md is the reference: a key the settings accept and the page does not name fails here."""
    from pathlib import Path

    from tidemind.config import ENVIRONMENT, EXTRA_DEFAULTS, TABLES, Settings

    page = (Path(__file__).resolve().parents[1] / "docs" / "CONFIG.md").read_text()
    keys = [k for k in Settings.__dataclass_fields__ if k not in ("home", "extra", "sources")]
    keys += list(EXTRA_DEFAULTS) + list(TABLES) + [m for table in TABLES.values() for m in table]
    assert not [k for k in keys if f"`{k}`" not in page and f"`[{k}]`" not in page]
    assert not [v for v in ENVIRONMENT if f"`{v}`" not in page]


def test_links_at_a_memory_are_decided_in_one_command(home, cli):
    from tidemind.memory import Memory
    from tidemind.store import immediate, links

    ids = [cli("digest", f"the {w} memory of the links command")["node_ids"][0] for w in ("hub", "left", "right")]
    m = Memory.open(home)
    try:
        with immediate(m.conn):
            made = [links.add(m.conn, ids[0], o, status="pending", proposed_by="t", at=m.now()) for o in ids[1:]]
    finally:
        m.close()
    r = cli("links", "reject", "--at", str(ids[0]))
    assert sorted(x["link"] for x in r["links"]) == sorted(made) and r["status"] == "rejected_by_user"
    both = run_cli(home, "links", "confirm", "7", "--at", str(ids[0]))
    assert both.returncode != 0 and b"--at NODE" in both.stderr and b"Traceback" not in both.stderr


def test_undo_puts_back_the_last_decision_even_one_made_in_the_desktop(home, cli):
    node = cli("digest", "an old note about the lighthouse keeper")["node_ids"][0]
    cli("archive", str(node))
    assert cli("undo", "--show")["last"]["label"] == f"archive #{node}"
    assert "archive" in cli("undo")["undone"]
    assert cli("undo", "--show")["last"] is None
    nothing = run_cli(home, "undo")
    assert nothing.returncode != 0 and b"no decision of person:cli" in nothing.stderr
    assert cli("undo", "--show", "--actor", "person:desktop")["last"] is None
