"""Export and import back (issue 28): a store taken out as jsonl or Markdown, and the jsonl brought
into another store keeps every authored byte, tag and link status, and who each memory is."""
import json

import pytest
import yaml

from tidemind.errors import InvalidInput, ScopeDenied
from tidemind.memory import Memory
from tidemind.store import clarifications, immediate, links, nodes, tags

from .conftest import StepClock, run_cli

GONE = "the spare key hides under the third flowerpot"
HIDDEN = "an archived note about the old studio lease"


def _sqlite(folder) -> Memory:
    """Another store, always a SQLite file of its own (TIDEMIND_STORE names the test's store)."""
    return Memory.open(folder, store=str(folder / "tidemind.db"), clock=StepClock())


def _lived_in(m: Memory) -> dict:
    """Memories in three scopes with sessions, a two-unit digest, tags in each status, a scope-wide
    rejection, links in three statuses, a person's clarification, one archived and one forgotten."""
    ids = {}
    ids["group"] = m.digest("Caroline: I went to the LGBTQ support group yesterday. It was powerful.",
                            scope="talk", session="s1", source_tool="chat")["node_ids"][0]
    ids["paint"] = m.digest("Melanie: I painted a lake sunrise last week, my favourite so far.",
                            scope="talk", session="s1", source_tool="chat", valid_at="2023-05-08")["node_ids"][0]
    two = m.digest("# Deploys\nBilling deploys on Fridays only after the smoke tests pass.\n\n"
                   "# Rollback\nA failed deploy rolls back with `make rollback`; page the on-call.",
                   scope="work")["node_ids"]
    ids["deploy"], ids["rollback"] = two[0], two[-1]
    ids["odd"] = m.digest("Ünïcode  stays   as written:\ttabs, “quotes”, and trailing spaces   \n",
                          scope="personal")["node_ids"][0]
    ids["gone"] = m.digest(GONE, scope="personal")["node_ids"][0]
    ids["hidden"] = m.digest(HIDDEN, scope="work")["node_ids"][0]
    m.tag_add(ids["group"], "support group")
    m.tag_reject_everywhere("noise", "talk")
    now = m.now()
    with immediate(m.conn):
        tags.assign(m.conn, ids["paint"], "painting", status="proposed", source="model", at=now)
        tags.assign(m.conn, ids["deploy"], "deploys", status="confirmed", source="person", at=now)
        tags.reject(m.conn, ids["rollback"], "pager", now)
        ids["confirmed"] = links.add(m.conn, ids["deploy"], ids["rollback"], status="confirmed", strength=0.8,
                                     proposed_by="test", at=now)
        links.add(m.conn, ids["group"], ids["paint"], status="pending", strength=0.4, proposed_by="test", at=now)
        links.add(m.conn, ids["paint"], ids["odd"], status="rejected_by_user", proposed_by="test", at=now)
        links.add(m.conn, ids["deploy"], ids["hidden"], status="confirmed", proposed_by="test", at=now)
        clarifications.append(m.conn, node_id=ids["group"], question_id=None, term="the group",
                              answer="the Tuesday LGBTQ support group in Woodhaven", actor="person", at=now)
    m.archive(ids["hidden"])
    m.forget(ids["gone"])
    return ids


def _picture(m: Memory, scopes=("talk", "work", "personal")) -> dict:
    """What must survive, by text rather than id: each live memory's authored bytes and metadata,
    its tags with status, its links with status, its clarifications; the scope-wide rejections."""
    rows = nodes.get_visible_many(m.conn, nodes.visible_ids(m.conn, list(scopes)), list(scopes),
                                  columns=("id", "scope", "content", "kind", "session", "source_tool", "recorded_at",
                                           "valid_from"))
    text_of = {i: r["content"] for i, r in rows.items()}
    tagged = tags.for_nodes(m.conn, list(rows))
    linked = links.for_nodes(m.conn, list(rows), list(scopes))
    return {
        "memories": sorted((r["scope"], r["content"], r["kind"], r["session"], r["source_tool"], r["recorded_at"],
                            r["valid_from"]) for r in rows.values()),
        "tags": sorted((text_of[i], t["name"], t["status"]) for i, ts in tagged.items() for t in ts),
        "links": sorted({(text_of[i] if l["direction"] == "out" else text_of[l["target"]],
                          text_of[l["target"]] if l["direction"] == "out" else text_of[i], l["relation"], l["status"])
                         for i, ls in linked.items() for l in ls}),
        "clarified": sorted((text_of[i], c["term"], c["answer"]) for i in rows
                            for c in clarifications.for_node(m.conn, i)),
        "rejected": sorted((t["scope"], t["name"]) for t in tags.tombstones(m.conn, list(scopes))),
    }


def test_a_round_trip_through_jsonl_keeps_every_byte_tag_link_and_clarification(mem, tmp_path):
    _lived_in(mem)
    before = _picture(mem)
    report = mem.export("jsonl", str(tmp_path / "out"))
    assert report["memories"] == len(before["memories"]) == 5
    exported = (tmp_path / "out" / "tidemind-export.jsonl").read_text(encoding="utf-8")
    assert GONE not in exported and HIDDEN not in exported        # forgotten and archived stay behind

    with _sqlite(tmp_path / "other") as other:
        r = other.import_export(str(tmp_path / "out"))
        assert (r["stored"], r["already_here"]) == (5, 0)
        after = _picture(other)
        assert after == before
        assert {s for s, _ in after["rejected"]} == {"talk"}
        # it is memory there, not a copy of text: found by recall, grounded
        found = other.recall("what did the support group feel like", scopes=["talk"])
        assert not found["abstained"] and "support group" in found["items"][0]["content"]
        # and the scope-wide rejection holds there too: no pass proposes "noise" in talk
        target = next(i["id"] for i in found["items"] if "support group" in i["content"])
        with immediate(other.conn):
            assert not tags.assign(other.conn, target, "noise", status="proposed", source="model", at=other.now())


def test_importing_the_same_export_twice_stores_nothing_twice(mem, tmp_path):
    with _sqlite(tmp_path / "source") as source:
        _lived_in(source)
        source.export("jsonl", str(tmp_path / "out"))
    first = mem.import_export(str(tmp_path / "out" / "tidemind-export.jsonl"))
    picture = _picture(mem)
    again = mem.import_export(str(tmp_path / "out"))
    assert (first["stored"], again["stored"], again["already_here"]) == (5, 0, 5)
    assert again["links"] == 0 and _picture(mem) == picture


def test_a_bad_export_is_refused_whole_and_nothing_is_written(mem, tmp_path):
    with _sqlite(tmp_path / "source") as source:
        _lived_in(source)
        source.export("jsonl", str(tmp_path / "out"))
    lines = (tmp_path / "out" / "tidemind-export.jsonl").read_text(encoding="utf-8").splitlines()
    count = lambda: len(nodes.visible_ids(mem.conn, ["talk", "work", "personal"]))
    start = count()

    def refused(content: str, says: str):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(content, encoding="utf-8")
        with pytest.raises(InvalidInput, match=says):
            mem.import_export(str(bad))
        assert count() == start

    edited = [json.loads(line) for line in lines]
    last_memory = max(n for n, r in enumerate(edited) if r["type"] == "memory")
    edited[last_memory]["content"] += " (changed after export)"
    refused("\n".join(json.dumps(r) for r in edited), "checksum")
    refused("\n".join(lines[:-1] + [lines[-1][:20]]), "not a JSON object")
    refused("\n".join(lines[1:]), "not a TideMind export")
    refused("\n".join(lines + [json.dumps({"type": "link", "from": "n1", "to": "n99999", "status": "confirmed"})]),
            "not both memories")
    with pytest.raises(InvalidInput, match="no such file"):
        mem.import_export(str(tmp_path / "nowhere"))


def test_markdown_export_is_a_file_per_memory_obsidian_opens(mem, tmp_path):
    ids = _lived_in(mem)
    report = mem.export("markdown", str(tmp_path / "vault"))
    files = sorted((tmp_path / "vault").rglob("*.md"))
    assert report["files"] == len(files) == 5
    assert {f.parent.name for f in files} == {"talk", "work", "personal"}
    by_id = {}
    for f in files:
        raw = f.read_text(encoding="utf-8")
        assert raw.startswith("---\n")
        front, _, body = raw[4:].partition("\n---\n")
        props = yaml.safe_load(front)                       # (YAML, as Obsidian reads front matter)
        by_id[props["tidemind_id"]] = (f, props, body)
    for key, (f, props, body) in by_id.items():
        assert body == nodes.get_any(mem.conn, int(key[1:]))["content"]          # the text, byte for byte
    _, deploy, _ = by_id[f"n{ids['deploy']}"]
    rollback_file, _, _ = by_id[f"n{ids['rollback']}"]
    assert deploy["related"] == [f"[[{rollback_file.stem}]]"]         # the confirmed link, as a wikilink
    assert "deploys" in deploy["tags"]
    _, group, _ = by_id[f"n{ids['group']}"]
    assert group["tags"] == ["support-group"]                      # a tag Obsidian accepts (no space)
    assert [(t["name"], t["status"]) for t in group["tidemind_tags"]] == [("support group", "confirmed")]
    _, paint, _ = by_id[f"n{ids['paint']}"]
    assert paint["tags"] == [] and paint["tidemind_tags"][0]["status"] == "proposed"
    assert any(link["status"] == "pending" for link in paint["tidemind_links"])
    assert not any(GONE in f.read_text(encoding="utf-8") or HIDDEN in f.read_text(encoding="utf-8") for f in files)


def test_export_reads_only_the_scopes_it_may(home, store, tmp_path):
    with Memory.open(home, clock=StepClock()) as m:
        _lived_in(m)
        r = m.export("jsonl", str(tmp_path / "work-only"), scopes=["work"])
    assert r["scopes"] == ["work"] and r["memories"] == 2
    with Memory.open(home, readable_scopes=["talk"], writable_scopes=["talk"]) as limited:
        with pytest.raises(ScopeDenied):
            limited.export("jsonl", str(tmp_path / "x"), scopes=["work"])
        assert limited.export("jsonl", str(tmp_path / "talk"))["scopes"] == ["talk"]
    with pytest.raises(InvalidInput, match="format"):
        Memory.open(home).export("pdf", str(tmp_path / "y"))


@pytest.mark.backends("sqlite", why="the CLI round trip reads the same code on both; one backend is enough here")
def test_cli_export_and_import_back(home, store, tmp_path):
    with Memory.open(home, clock=StepClock()) as m:
        _lived_in(m)
        before = _picture(m)
    out = run_cli(home, "--json", "export", str(tmp_path / "out"))
    assert out.returncode == 0, out.stderr.decode()
    assert json.loads(out.stdout)["memories"] == 5
    other = tmp_path / "other"
    back = run_cli(other, "import", "jsonl", str(tmp_path / "out"), "--no-embed")
    assert back.returncode == 0, back.stderr.decode()
    assert "5 stored" in back.stdout.decode()
    with Memory.open(other) as m:
        assert _picture(m) == before
    bad = run_cli(other, "import", "jsonl", str(tmp_path / "missing"))
    assert bad.returncode != 0 and b"no such file" in bad.stderr and b"Traceback" not in bad.stderr


def test_an_export_does_not_bring_back_what_was_forgotten_or_archived_since(mem, tmp_path):
    ids = {
        "kept": mem.digest("The boiler service is due every October.", scope="home")["node_ids"][0],
        "secret": mem.digest("The alarm code for the back door is 4471.", scope="home")["node_ids"][0],
        "old": mem.digest("The wifi password card is in the kitchen drawer.", scope="home")["node_ids"][0],
    }
    mem.export("jsonl", str(tmp_path / "out"), scopes=["home"])
    mem.forget(ids["secret"])
    mem.archive(ids["old"])
    r = mem.import_export(str(tmp_path / "out"))
    assert (r["stored"], r["already_here"], r["left_as_here"]) == (0, 1, 2)
    assert nodes.get_any(mem.conn, ids["secret"])["status"] == "forgotten"
    assert nodes.visible_ids(mem.conn, ["home"]) == [ids["kept"]]
    assert mem.recall("alarm code for the back door", scopes=["home"])["abstained"]


def test_front_matter_values_read_back_as_written_whatever_their_characters():
    from tidemind.portable import _yaml

    for value in ["plain", "a: colon # and hash", "quote \" and \\ backslash", "tab\tand\nnewline",
                  "line\u2028separator\u2029paragraph", "next\x85line", "c1 \x9b control", "bom\ufeff", "emoji 🧠",
                  ["[[n12 A note]]", "#tag"], {"name": "x", "status": "confirmed"}]:
        assert yaml.safe_load(f"key: {_yaml(value)}\n") == {"key": value}


def test_an_import_never_reaches_a_scope_the_handle_may_not_write(home, store, tmp_path):
    with Memory.open(home, clock=StepClock()) as m:
        ids = _lived_in(m)
        m.export("jsonl", str(tmp_path / "out"))
        before = _picture(m)
    # an export whose talk memories are all in this store, with a link between two of them that
    # the store does not have (and no scope-wide rejection): matching them "already here" through a
    # handle that may write only `work` would have written that link into talk
    export = tmp_path / "out" / "tidemind-export.jsonl"
    records = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    records = [r for r in records if r["type"] != "tag_rejection"]
    records.append({"type": "link", "from": f"n{ids['group']}", "to": f"n{ids['odd']}", "relation": "related",
                    "status": "confirmed", "strength": 0.9})
    export.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    with Memory.open(home, readable_scopes=["work"], writable_scopes=["work"]) as limited:
        with pytest.raises(ScopeDenied):
            limited.import_export(str(export))
    with Memory.open(home) as m:
        assert _picture(m) == before
