"""The write path: verbatim storage, units, secrets, validation, the stream file."""
import pytest

from tidemind.errors import InvalidInput
from tidemind.store import stream

from tidemind.store.connection import checkpoint

from .conftest import run_cli, stored_anywhere


TRICKY = [
    "emoji 🧠🌊👩🏽‍💻 and flags 🇵🇹",
    "RTL: שלום עולם and مرحبا بالعالم mixed with LTR",
    "combining marks: e\u0301 vs é, Z\u0351\u0352\u0353algo",
    "```python\ndef f(x):\n    return x  # code fence\n```\n",
    "control chars \x01\x02\x07\x1b[31m red \x1b[0m and tab\tand\x7f",
    "  leading and trailing whitespace kept  \n\n",
    "CRLF line\r\nsecond line\r\n",
    "zero width\u200bjoiner\u200dand BOM\ufeff inside",
    "quotes \"double\" 'single' `back` and \\backslashes\\ and %s {} $HOME",
]


@pytest.mark.parametrize("text", TRICKY)
def test_byte_exact_round_trip(mem, text):
    r = mem.digest(text)
    assert len(r["node_ids"]) == 1
    shown = mem.show(r["node_ids"][0])
    assert shown["content"].encode("utf-8") == text.encode("utf-8")
    capture = mem.conn.execute("SELECT content FROM captures WHERE id=?", (r["capture_id"],)).fetchone()[0]
    assert capture.encode() == text.encode()


def test_byte_exact_through_cli_stdin(home, cli):
    text = "".join(TRICKY)
    r = cli("digest", "-", stdin=text.encode("utf-8"))
    shown = [cli("show", str(i)) for i in r["node_ids"]]
    capture_text = text  # units are exact slices of the capture
    for s in shown:
        assert s["content"] in capture_text
    if len(shown) == 1:
        assert shown[0]["content"] == text


@pytest.mark.parametrize("bad, message", [
    ("", "empty"), ("   \n\t ", "empty"), ("a\x00b", "NUL"), ("\ud800 lone surrogate", "surrogate"),
])
def test_bad_content_is_refused_and_nothing_written(mem, bad, message):
    with pytest.raises(InvalidInput, match=message):
        mem.digest(bad)
    assert mem.stats()["captures"] == 0
    assert mem.conn.execute("SELECT count(*) FROM nodes").fetchone()[0] == 0
    assert not list(mem.settings.stream_dir.glob("*.md"))


def test_over_size_names_the_limit(mem):
    mem.settings.max_content_chars = 1000
    with pytest.raises(InvalidInput, match="1,000"):
        mem.digest("x" * 1001)
    assert mem.stats()["captures"] == 0


def test_invalid_utf8_on_stdin_is_one_clear_line(home):
    proc = run_cli(home, "digest", "-", stdin=b"caf\xe9 au lait")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "UTF-8" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_secrets_are_masked_everywhere(mem, home):
    key = "sk-ant-api03-" + "Q" * 40
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAzzz\n-----END RSA PRIVATE KEY-----"
    r = mem.digest(f"deploy uses {key}\nand the server key is\n{pem}\npassword = hunter2hunter2")
    assert any("anthropic key" in w for w in r["warnings"])
    assert any("private key" in w for w in r["warnings"])
    assert any("assigned secret" in w for w in r["warnings"])
    content = mem.show(r["node_ids"][0])["content"]
    assert "[REDACTED:anthropic_key]" in content and "password = [REDACTED:assigned_secret]" in content
    checkpoint(mem.conn)
    for needle in (key, "MIIEowIBAAKCAQEAzzz", "hunter2hunter2"):
        assert not stored_anywhere(mem.conn, needle), needle
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert key.encode() not in data, path
            assert b"MIIEowIBAAKCAQEAzzz" not in data, path
            assert b"hunter2hunter2" not in data, path


@pytest.mark.parametrize("text", [
    "The password policy: at least twelve characters. The token bucket refills each second.",
    "Password: required for login on the staging box.",
    "The secret: remembering names by repeating them.",
    "pwd: /home/user/projects/tidemind",
    "Set API_KEY=<your key here> in the environment.",
])
def test_prose_is_not_masked(mem, text):
    r = mem.digest(text)
    assert r["warnings"] == []
    assert mem.show(r["node_ids"][0])["content"] == text


@pytest.mark.parametrize("text, secret", [
    ("DB_PASSWORD=supersecret123", "supersecret123"),
    ("export MY_API_KEY=abcd1234efgh5678", "abcd1234efgh5678"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("password: Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("postgres://admin:s3cr3tpass@db.internal:5432/app", "s3cr3tpass"),
    ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "abcdefghijklmnopqrstuvwxyz012345"),
])
def test_common_secret_shapes_are_masked(mem, text, secret):
    r = mem.digest(text)
    content = mem.show(r["node_ids"][0])["content"]
    assert secret not in content and "[REDACTED:" in content and r["warnings"]


def test_several_facts_become_units_of_one_capture(mem):
    text = ("We chose Postgres for the billing service.\n\n"
            "The on-call rotation changes every Monday at 10:00.\n\n"
            "- Ana owns the deploy scripts\n- Rui reviews every schema change\n")
    r = mem.digest(text)
    assert len(r["node_ids"]) == 4
    capture = mem.conn.execute("SELECT content FROM captures WHERE id=?", (r["capture_id"],)).fetchone()[0]
    assert capture == text                          # the capture stays whole
    for node_id in r["node_ids"]:
        row = mem.show(node_id)
        assert row["content"] in text               # each unit is an exact slice
        assert row["source"]["capture"] == r["capture_id"]


def test_wrapped_numbered_line_and_tilde_fences_do_not_split(mem):
    assert len(mem.digest("I counted the crates this morning\n2. crates were missing from the dock")["node_ids"]) == 1
    fenced = "~~~\ncode here\n```\nstill code\n\nmore code in the same fence\n~~~\n\nand a paragraph after it"
    r = mem.digest(fenced)
    assert [mem.show(i)["content"] for i in r["node_ids"]] == [fenced[:fenced.index("\n\nand")], "and a paragraph after it"]


def test_code_fence_and_short_text_stay_whole(mem):
    fenced = "Run this:\n\n```sh\nmake build\n\nmake test\n```\n"
    assert len(mem.digest(fenced)["node_ids"]) == 1
    assert len(mem.digest("one fact.\n\nok")["node_ids"]) == 1


def test_every_digest_is_in_the_stream_file(mem):
    texts = ["first memory about kites", "second memory about boats\nwith two lines"]
    ids = [mem.digest(t)["capture_id"] for t in texts]
    files = list(mem.settings.stream_dir.glob("*.md"))
    assert len(files) == 1
    data = files[0].read_bytes()
    entries = {e.capture_id: data[e.body_start:e.body_start + e.body_length] for e in stream.entries(files[0])}
    for cid, t in zip(ids, texts):
        assert entries[cid] == t.encode()


def test_stream_entry_lengths_survive_lookalike_headers(mem):
    evil = "### x\n<!-- tidemind capture=999 key=0123456789abcdef bytes=3 -->\nabc\n<!-- /tidemind -->\n\n"
    cid = mem.digest(evil)["capture_id"]
    path = next(mem.settings.stream_dir.glob("*.md"))
    assert [e.capture_id for e in stream.entries(path)] == [cid]


def test_marker_in_session_or_tool_cannot_hide_an_entry_from_forget(mem, home):
    marker = "x <!-- tidemind capture=1 key=0123456789abcdef bytes=400 --> y"
    nid = mem.digest("Xylophonic secret phrase kept in the stream", session=marker, source_tool=marker)["node_ids"][0]
    mem.digest("a second, ordinary memory about sailing boats", session=marker)
    mem.forget(nid)
    data = b"".join(p.read_bytes() for p in (home / "stream").glob("*.md"))
    assert b"Xylophonic" not in data
    assert b"sailing boats" in data
    assert mem.doctor()["ok"]


def test_every_mutation_writes_an_audit_row(mem):
    nid = mem.digest("the build server is called hopper")["node_ids"][0]
    new = mem.correct(nid, "the build server is called lovelace")["node_ids"][0]
    mem.archive(new)
    mem.unarchive(new)
    mem.forget(new)
    actions = [a for (a,) in mem.conn.execute("SELECT action FROM audit_log ORDER BY id")]
    assert actions[:6] == ["digest", "correct", "superseded", "archive", "unarchive", "forget"]
    blob = " ".join(d for (d,) in mem.conn.execute("SELECT details FROM audit_log"))
    assert "hopper" not in blob and "lovelace" not in blob   # hashes, never text
