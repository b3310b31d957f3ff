"""Masking: no secret is kept, whichever way its text enters the store.

Each test puts credentials in through a real entry point (the stop hook on a transcript, the
CLI, the Memory API) and then searches what TideMind serves (prepare, the review queue) and the
bytes of every file under the store's home.
"""
from __future__ import annotations

import json

from tidemind.memory import Memory
from tidemind.store import connect

from ..conftest import cli_json
from ..test_hooks import hook

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJlX2hlcmVfMTIz"
URL_PASSWORD = "Hunter2Secret"
ANTHROPIC = "sk-ant-api03-" + "Q7" * 20
GITHUB = "ghp_" + "a1B2" * 9


def _transcript(path, turns, failures=()):
    with open(path, "w") as fh:
        for role, text in turns:
            fh.write(json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n")
        for text in failures:
            fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "is_error": True, "content": text}]}}) + "\n")
    return path


def _on_disk(home, needle: str) -> list[str]:
    """Files under the store's home holding these bytes (after the WAL is folded in)."""
    c = connect(home / "tidemind.db")
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    return [str(p) for p in home.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_stop_hook_lessons_are_masked_before_anything_serves_them(home, tmp_path):
    """Found by the adversarial review: a correction quoting a URL with a password and two keys,
    and a failed tool call echoing a bearer JWT, were filed unmasked; the lessons pass turned the
    failure into an 'Avoid:' lesson that prepare served to every new session."""
    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    with Memory.open(home) as m:          # the CLI's review list reads the scopes that have memories
        m.digest("The shop database runs PostgreSQL 16.", scope="project:shop")
    transcript = _transcript(tmp_path / "t.jsonl", [
        ("user", "connect to the database"),
        ("assistant", "Connected with the default URL."),
        ("user", f"no, use https://admin:{URL_PASSWORD}@db.internal/ with {ANTHROPIC} and {GITHUB}"),
        ("assistant", "Reconnected."),
    ], failures=[f"curl: (22) 401 for Authorization: Bearer {JWT}"] * 2)
    proc, _ = hook(home, "stop", {"cwd": str(repo), "transcript_path": str(transcript), "session_id": "s1"})
    assert "2 proposed lesson" in proc.stdout.decode(), proc.stdout
    cli_json(home, "metabolize", "--task", "lessons")
    items = cli_json(home, "review", "list", "--all")["items"]
    correction = next(i for i in items if i["payload"].get("finding") == "correction")
    cli_json(home, "review", "approve", str(correction["id"]))
    served = cli_json(home, "prepare", "--scope", "project:shop")["text"]
    started, _ = hook(home, "session-start", {"cwd": str(repo)})
    queue = json.dumps(cli_json(home, "review", "list", "--all"))
    # the lessons are there, masked: this checks the text that is served, not an empty queue
    assert "lesson (approved): no, use https://admin:[REDACTED:password_in_url]@db.internal/" in served
    assert "Avoid: curl: (22) 401 for Authorization: Bearer [REDACTED:" in served
    for secret in (URL_PASSWORD, ANTHROPIC, GITHUB, JWT):
        for where, text in (("prepare", served), ("session-start", started.stdout.decode()), ("review", queue)):
            assert secret not in text, (secret, where)
        assert _on_disk(home, secret) == [], secret


def test_payloads_stored_unmasked_by_an_older_version_are_masked_on_open(home):
    """A store that already holds leaked proposals is cleaned when it opens, and the failure
    lesson made from one is still recognised (not made a second time from the masked text)."""
    with Memory.open(home) as m:
        m.digest("a memory, so the store has data and the migration path is the real one")
    c = connect(home / "tidemind.db")
    with c:
        # what the stop hook and the lessons pass wrote before their stores masked
        for _ in range(2):
            c.execute("INSERT INTO review_items(kind, scope, digest, payload, created_at) VALUES('proposed_lesson',"
                      " 'personal', ?, ?, '2026-03-01T09:00:00Z')",
                      (f"d{_}", json.dumps({"finding": "repeated_failure", "said": f"401 Bearer {JWT}", "times": 2})))
        from tidemind.store import syntheses
        c.execute("INSERT INTO syntheses(kind, scope, members, text, generator, created_at, digest) VALUES('lesson',"
                  " 'personal', '[]', ?, 'synthesize/offline-v1', '2026-03-01T09:00:00Z', ?)",
                  (f"Avoid: 401 Bearer {JWT}  (seen 4 times)", syntheses.failure_lesson_digest("personal",
                                                                                              f"401 Bearer {JWT}")))
        c.execute("DELETE FROM migrations WHERE name = '0018_mask_quoted_secrets'")
    c.close()
    with Memory.open(home) as m:
        texts = [s for (s,) in m.conn.execute("SELECT text FROM syntheses")]
        payloads = [p for (p,) in m.conn.execute("SELECT payload FROM review_items")]
        assert len(texts) == 1 and texts[0].startswith("Avoid: 401 Bearer [REDACTED:") and JWT not in texts[0]
        assert len(payloads) == 2 and all("401 Bearer [REDACTED:" in p and JWT not in p for p in payloads)
    cli_json(home, "metabolize", "--task", "lessons")
    with Memory.open(home) as m:
        assert m.conn.execute("SELECT count(*) FROM syntheses").fetchone()[0] == 1   # recognised, not re-made
    for backup in (home / "backups").glob("*.db"):
        backup.unlink()                  # the pre-migration backup holds the old bytes by design
    assert _on_disk(home, JWT) == []
