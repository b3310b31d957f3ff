"""Obsidian import through the real CLI and engine, on a fixture vault with every construct."""
import json
import os
import shutil
from pathlib import Path

import pytest

from tidemind.importers.engine import rollback, sync
from tidemind.memory import Memory
from tidemind.store import immediate, links

from .conftest import run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "vault"
SCOPE = "vault:test"


@pytest.fixture
def vault(tmp_path):
    target = tmp_path / "vault"
    shutil.copytree(FIXTURE, target)
    outside = tmp_path / "outside-secret.md"
    outside.write_text("Zeppelinfrost outside the vault must never be read")
    os.symlink(outside, target / "Linked outside.md")
    (tmp_path / "outside-dir").mkdir()
    (tmp_path / "outside-dir" / "note.md").write_text("Quagmirewhistle in a linked folder")
    os.symlink(tmp_path / "outside-dir", target / "linked-dir")
    (target / "Huge.md").write_text("x" * 2_100_000)
    return target


def dump(m: Memory) -> dict:
    """Live nodes, their confirmed links and tags: what a rollback must restore exactly."""
    live = {i: c for i, c in m.conn.execute("SELECT id, content FROM nodes WHERE status='live'")}
    links = sorted(tuple(r) for r in m.conn.execute(
        "SELECT l.source_id, l.target_id, l.relation, l.status FROM links l JOIN nodes a ON a.id=l.source_id"
        " JOIN nodes b ON b.id=l.target_id WHERE a.status='live' AND b.status='live'"))
    tags = sorted(tuple(r) for r in m.conn.execute(
        "SELECT nt.node_id, t.name, nt.status FROM node_tags nt JOIN tags t ON t.id=nt.tag_id JOIN nodes n"
        " ON n.id=nt.node_id WHERE n.status='live'"))
    return {"nodes": live, "links": links, "tags": tags}


def test_first_import_reads_every_construct(mem, vault):
    r = sync(mem, "obsidian", vault, SCOPE, {"exclude": ["templates"]})
    skipped = {s["path"]: s["reason"] for s in r["skipped"]}
    assert "not UTF-8" in skipped["Latin1.md"] and "binary" in skipped["Binary.md"]
    assert "malformed frontmatter" in skipped["Broken front.md"]
    assert "larger than" in skipped["Huge.md"]
    assert "symbolic link" in skipped["Linked outside.md"] and "symbolic link" in skipped["linked-dir/"]
    contents = [c for (c,) in mem.conn.execute("SELECT content FROM nodes")]
    blob = "\n".join(contents)
    assert "still imports" in blob                                       # malformed frontmatter: body kept
    assert "Zeppelinfrost" not in blob and "Quagmirewhistle" not in blob  # nothing outside the vault
    assert "internal obsidian state" not in blob and "Meeting {{date}}" not in blob
    units = {k: n for k, n in mem.conn.execute("SELECT unit_key, node_id FROM import_units")}
    assert {"Projects/Shop.md#", "Projects/Shop.md#Deploys", "Projects/Shop.md#Payments", "Runbook.md#Rollback",
            "Daily/2026-03-02.md#"} <= set(units)
    tags_of = {}
    for node_id, name, status, source in mem.conn.execute(
            "SELECT nt.node_id, t.name, nt.status, nt.source FROM node_tags nt JOIN tags t ON t.id=nt.tag_id"):
        tags_of.setdefault(node_id, {})[name] = (status, source)
    payments = tags_of[units["Projects/Shop.md#Payments"]]
    assert payments["payments/stripe"] == ("confirmed", "person:obsidian")
    assert {"project", "shop"} <= set(payments)                          # frontmatter tags on every section
    everything = {n for t in tags_of.values() for n in t}
    assert not {"not-a-tag", "also-not-a-tag", "anchor", "frag", "not"} & everything
    link_rows = {(a, b): (rel, st, by) for a, b, rel, st, by in mem.conn.execute(
        "SELECT source_id, target_id, relation, status, proposed_by FROM links")}
    deploys, rollback_unit = units["Projects/Shop.md#Deploys"], units["Runbook.md#Rollback"]
    assert link_rows[(deploys, rollback_unit)] == ("links-to", "confirmed", "person:obsidian")   # #heading target
    assert (deploys, units["Daily/2026-03-02.md#"]) in link_rows
    assert (rollback_unit, units["Projects/Shop.md#Payments"]) in link_rows                        # ^block target
    assert (rollback_unit, units["Projects/Shop.md#"]) in link_rows                                # alias Webshop
    dangling = {t for (t,) in mem.conn.execute("SELECT target FROM import_dangling")}
    assert {"Nowhere", "diagram.png"} <= dangling
    valid = mem.conn.execute("SELECT valid_from FROM nodes WHERE id=?", (units["Projects/Shop.md#"],)).fetchone()[0]
    assert valid.startswith("2026-02-01")
    hood = mem.neighbourhood(deploys, scopes=[SCOPE])
    assert rollback_unit in [n["id"] for n in hood["neighbours"]]


def test_reimport_is_idempotent(mem, vault):
    seen = []
    first = sync(mem, "obsidian", vault, SCOPE, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1][0] == seen[-1][1]
    before = dump(mem)
    again = sync(mem, "obsidian", vault, SCOPE)
    assert again["created"] == again["updated"] == again["archived"] == 0
    assert again["unchanged"] == first["created"]
    assert dump(mem) == before


def test_edit_supersedes_delete_archives_rename_keeps_identity(mem, vault):
    sync(mem, "obsidian", vault, SCOPE)
    units = lambda: {k: (n, s) for k, n, s in mem.conn.execute("SELECT unit_key, node_id, status FROM import_units")}
    start = units()
    shop = vault / "Projects" / "Shop.md"
    shop.write_text(shop.read_text().replace("Stripe handles payments", "Adyen handles payments"))
    (vault / "Daily" / "2026-03-02.md").unlink()
    (vault / "Runbook.md").rename(vault / "Projects" / "Runbook.md")
    r = sync(mem, "obsidian", vault, SCOPE)
    assert r["updated"] == 1 and r["archived"] == 1 and r["moved"] == 3
    now = units()
    old_pay, new_pay = start["Projects/Shop.md#Payments"][0], now["Projects/Shop.md#Payments"][0]
    assert old_pay != new_pay
    served = mem.recall("who handles payments", scopes=[SCOPE])["items"]
    assert any("Adyen" in i["content"] for i in served) and not any("Stripe handles" in i["content"] for i in served)
    versions = mem.show(new_pay, scopes=[SCOPE])["versions"]
    assert [v["status"] for v in versions] == ["superseded", "live"] and "Stripe" in versions[0]["content"]
    assert now["Daily/2026-03-02.md#"][1] == "archived"
    assert now["Projects/Runbook.md#Rollback"][0] == start["Runbook.md#Rollback"][0]    # same node: same identity
    assert "Runbook.md#Rollback" not in now


def test_rollback_restores_the_exact_prior_state(mem, vault):
    sync(mem, "obsidian", vault, SCOPE)
    before = dump(mem)
    (vault / "Projects" / "Shop.md").write_text("# Rewritten\nEverything changed. #newtag [[Runbook]]\n")
    (vault / "New note.md").write_text("A brand new note linking [[Shop]]. #fresh")
    (vault / "Runbook.md").unlink()
    r = sync(mem, "obsidian", vault, SCOPE)
    assert r["created"] and r["archived"]
    assert dump(mem) != before
    rollback(mem, r["batch"])
    assert dump(mem) == before
    assert mem.doctor()["ok"]


def test_cli_import_json_shape_and_rollback(home, vault):
    proc = run_cli(home, "--json", "import", "obsidian", str(vault))
    assert proc.returncode == 0, proc.stderr.decode()
    r = json.loads(proc.stdout)
    assert {"batch", "created", "updated", "unchanged", "archived", "skipped"} <= set(r)
    assert r["scope"] == "vault:vault" and all({"path", "reason"} <= set(s) for s in r["skipped"])
    proc = run_cli(home, "--json", "import", "rollback", str(r["batch"]))
    assert proc.returncode == 0 and json.loads(proc.stdout)["undone"] > 0
    proc = run_cli(home, "import", "rollback", str(r["batch"]))
    assert proc.returncode == 1 and "already rolled back" in proc.stderr.decode()
    proc = run_cli(home, "import", "obsidian", str(vault / "missing"))
    assert proc.returncode == 1 and "not a folder" in proc.stderr.decode()


def test_a_folder_stays_in_its_scope(mem, vault):
    sync(mem, "obsidian", vault, "private")
    from tidemind.errors import InvalidInput
    with pytest.raises(InvalidInput, match="imported into scope private"):
        sync(mem, "obsidian", vault, "public")


def test_a_persons_correction_survives_delete_and_return_and_blocks_rollback(mem, vault):
    sync(mem, "obsidian", vault, SCOPE)
    node = mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key='Runbook.md#Rollback'").fetchone()[0]
    fixed = mem.correct(node, "Rollback: revert the tag and page the on-call person.")["node_ids"][0]
    text = (vault / "Runbook.md").read_text()
    (vault / "Runbook.md").unlink()
    gone = sync(mem, "obsidian", vault, SCOPE)
    (vault / "Runbook.md").write_text(text)
    back = sync(mem, "obsidian", vault, SCOPE)
    assert mem.show(fixed, scopes=[SCOPE])["status"] == "live"
    assert mem.conn.execute("SELECT status FROM nodes WHERE id=?", (node,)).fetchone()[0] == "superseded"
    from tidemind.errors import Conflict
    mem.archive(fixed)
    first = sync(mem, "obsidian", vault, SCOPE)         # nothing changed: an empty batch
    assert not first["created"] and not first["updated"]
    with pytest.raises(Conflict):
        rollback(mem, gone["batch"])                    # later changing batch exists
    assert back["batch"] > gone["batch"]


def test_oversize_section_is_skipped_and_duplicate_headings_all_import(mem, vault):
    (vault / "Long.md").write_text("# Fine\nA short section.\n\n# Huge\n" + "word " * 30000)
    (vault / "Dupes.md").write_text("# Notes\none\n\n# Notes\ntwo\n\n# Notes (2)\nthree\n")
    r = sync(mem, "obsidian", vault, SCOPE)
    assert any(s["path"] == "Long.md" and "Huge" in s["reason"] for s in r["skipped"])
    keys = {k for (k,) in mem.conn.execute("SELECT unit_key FROM import_units")}
    assert "Long.md#Fine" in keys and "Long.md#Huge" not in keys
    dupes = {k for k in keys if k.startswith("Dupes.md#")}
    assert len(dupes) == 3


def test_empty_resyncs_do_not_block_rollback(mem, vault):
    sync(mem, "obsidian", vault, SCOPE)
    before = dump(mem)
    (vault / "New.md").write_text("A new note.")
    changed = sync(mem, "obsidian", vault, SCOPE)
    for _ in range(3):
        sync(mem, "obsidian", vault, SCOPE)             # watch-mode rescans with no change
    rollback(mem, changed["batch"])
    assert dump(mem) == before


def test_links_follow_the_text_dangling_resolve_later_removed_ones_go(mem, vault):
    sync(mem, "obsidian", vault, SCOPE)
    runbook = mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key='Runbook.md#Missing'").fetchone()[0]
    (vault / "Nowhere.md").write_text("Now the page exists.")
    sync(mem, "obsidian", vault, SCOPE)
    target = mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key='Nowhere.md#'").fetchone()[0]
    assert mem.conn.execute("SELECT status FROM links WHERE source_id=? AND target_id=?",
                            (runbook, target)).fetchone()[0] == "confirmed"           # the dangling link resolved
    shop = vault / "Projects" / "Shop.md"
    shop.write_text(shop.read_text().replace(" and [[Daily/2026-03-02]]", ""))
    sync(mem, "obsidian", vault, SCOPE)
    deploys = mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key='Projects/Shop.md#Deploys'").fetchone()[0]
    daily = mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key='Daily/2026-03-02.md#'").fetchone()[0]
    targets = {t for (t,) in mem.conn.execute("SELECT target_id FROM links WHERE source_id=?", (deploys,))}
    assert daily not in targets and targets                                           # removed link gone, others kept


def test_forgetting_an_imported_section_leaves_no_heading_and_it_stays_forgotten(tmp_path):
    from tidemind.importers.engine import sync
    from tidemind.memory import Memory

    vault = tmp_path / "vault"
    vault.mkdir()
    note = vault / "note.md"
    note.write_text("# Zanzibarian plans\n\nThe quokkafeather plan lives here [[Other]].\n\n## Other\n\nSomething else.\n")
    home = tmp_path / "home"
    m = Memory.open(home)
    sync(m, "obsidian", vault, "vault:v")
    forgotten = next(n for n, k in m.conn.execute("SELECT node_id, unit_key FROM import_units") if "Zanzibarian" in k)
    m.forget(forgotten)
    again = sync(m, "obsidian", vault, "vault:v")                 # unchanged note: still forgotten
    assert again["created"] == again["updated"] == 0
    m.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for needle in (b"Zanzibarian", b"zanzibarian", b"quokkafeather"):
        assert [str(p) for p in home.rglob("*") if p.is_file() and needle in p.read_bytes()] == [], needle
    renamed = vault / "renamed.md"                                # a renamed note keeps the section forgotten
    note.rename(renamed)
    moved = sync(m, "obsidian", vault, "vault:v")
    assert moved["created"] == 0, moved
    renamed.rename(note)
    sync(m, "obsidian", vault, "vault:v")
    m.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert [str(p) for p in home.rglob("*") if p.is_file() and b"Zanzibarian" in p.read_bytes()] == []
    note.write_text("# Zanzibarian plans\n\nA new plan, written after the forget.\n\n## Other\n\nSomething else.\n")
    edited = sync(m, "obsidian", vault, "vault:v")                # the person's new words are imported
    assert edited["created"] == 1
    assert any("written after the forget" in c for (c,) in m.conn.execute("SELECT content FROM nodes WHERE status='live'"))
    assert not m.conn.execute("SELECT count(*) FROM import_units WHERE unit_key LIKE 'forgotten:%'").fetchone()[0]
    m.forget(next(n for n, k in m.conn.execute("SELECT node_id, unit_key FROM import_units") if "Zanzibarian" in k))
    note.unlink()
    sync(m, "obsidian", vault, "vault:v")                         # the note is gone: so is its hashed row
    assert not m.conn.execute("SELECT count(*) FROM import_units WHERE unit_key LIKE 'forgotten:%'").fetchone()[0]
    assert m.doctor()["ok"]
    m.close()


def test_rollback_after_forgetting_a_linked_unit_does_not_crash(tmp_path):
    from tidemind.importers.engine import rollback, sync
    from tidemind.memory import Memory

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("Alpha note that points to [[b]].\n")
    m = Memory.open(tmp_path / "home")
    sync(m, "obsidian", vault, "vault:v")
    (vault / "b.md").write_text("Bravo note, the target.\n")
    second = sync(m, "obsidian", vault, "vault:v")          # the dangling link resolves in this batch
    a = next(n for n, k in m.conn.execute("SELECT node_id, unit_key FROM import_units") if k.startswith("a.md"))
    m.forget(a)
    try:
        rollback(m, second["batch"])
    except Exception as exc:                                   # a clear refusal is fine; a crash is not
        from tidemind.errors import TideMindError
        assert isinstance(exc, TideMindError), exc
    assert m.doctor()["ok"]
    m.close()


def test_a_link_to_a_note_without_units_stays_dangling_and_the_rest_imports(mem, tmp_path):
    """A name or alias that resolves to a note which produced no unit (alias-only, empty,
    whitespace-only) crashed the whole import with a KeyError and stored nothing."""
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "A.md").write_text("---\naliases: [Alpha]\n---\n")
    (vault / "Empty.md").write_text("")
    (vault / "Blank.md").write_text("  \n\t\n")
    (vault / "B.md").write_text("see [[Alpha]], [[Empty]], [[Blank#Part]] and ![[A#^blk]]\n")
    r = sync(mem, "obsidian", vault, SCOPE)
    assert r["created"] == 1
    b = mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key LIKE 'B.md#%'").fetchone()[0]
    assert mem.show(b, scopes=[SCOPE])["content"].startswith("see [[Alpha]]")
    dangling = {t for (t,) in mem.conn.execute("SELECT target FROM import_dangling")}
    assert {"Alpha", "Empty", "Blank#Part", "A#^blk"} <= dangling
    assert not mem.conn.execute("SELECT count(*) FROM links").fetchone()[0]


def _links_from(mem, key):
    node = mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key=?", (key,)).fetchone()[0]
    keys = dict(mem.conn.execute("SELECT node_id, unit_key FROM import_units"))
    return {(keys[t], rel) for t, rel in mem.conn.execute(
        "SELECT target_id, relation FROM links WHERE source_id=? AND status='confirmed'", (node,))}


def test_links_as_obsidian_documents_them(mem, vault):
    """Written from Obsidian's help on internal links and embeds: same-note heading links,
    aliases in tables (`\\|`), nested headings, block ids, embeds of notes, blocks and files."""
    sync(mem, "obsidian", vault, SCOPE)
    embed, links = "Help/Embed files.md#", "Help/Internal links.md#"
    table = _links_from(mem, links + "Internal links")
    assert (embed + "Embed files", "links-to") in table                       # [[Embed files\|embeds]]
    assert (embed + "Embed an image in a note", "links-to") in table          # [[Note#Heading\|text]]
    assert (embed + "Embed an image with a size", "links-to") in table        # [[Note#A#B]]: B under A
    assert (links + "Link to a block in a note", "links-to") in table         # [[#Heading]] in the same note
    assert (embed + "Embed an image in a note", "links-to") in _links_from(mem, embed + "Embed files")
    embeds = _links_from(mem, embed + "Embed a note in another note")
    assert embeds == {(links + "Internal links", "embeds"), (links + "Link to a block in a note", "embeds")}
    assert (embed + "Embed files", "links-to") in _links_from(mem, links + "Link to a block in a note")   # alias
    dangling = {(k, t): reason for k, t, reason in mem.conn.execute(
        "SELECT unit_key, target, reason FROM import_dangling")}
    assert dangling[(links + "Internal links", "Embed files#Embed a video")] == "missing heading"
    assert dangling[(links + "Link to a block in a note", "Internal links#^no-such-block")] == "missing block"
    assert dangling[(embed + "Embed an image in a note", "Engelbart.jpg")] == "attachment"
    assert dangling[(embed + "Embed an image with a size", "Engelbart.jpg")] == "attachment"
    assert dangling[(embed + "Embed an image with a size", "Missing diagram.png")] == "missing attachment"
    assert dangling[(embed + "Embed a PDF in a note", "Document.pdf#page=3")] == "attachment"
    assert dangling[("Runbook.md#Missing", "Nowhere")] == "missing note"
    assert dangling[("Daily/2026-03-02.md#", "diagram.png")] == "missing attachment"
    # a link to a heading names no tag: 'Embed', 'Link' are the person's headings, not their tags
    names = {n for (n,) in mem.conn.execute("SELECT name FROM tags")}
    assert not {"Embed", "Link", "Open"} & names and "help" in names


def test_a_name_resolves_to_the_nearest_note_of_that_name(mem, vault):
    sync(mem, "obsidian", vault, SCOPE)
    for lang in ("en", "fr"):                 # (the way back is the same pair: one link row holds it)
        assert _links_from(mem, f"{lang}/Guide.md#") == {(f"{lang}/Start here.md#", "links-to")}
    assert not mem.conn.execute("SELECT count(*) FROM import_dangling WHERE target IN ('Guide', 'Start here')"
                                ).fetchone()[0]


def test_a_unit_knows_its_note_and_headings_and_show_names_them(mem, vault, home):
    """Context: the note's title, aliases, description and the headings above a section are a
    searchable field beside its text, so "how do I embed a file" finds the section of the note
    "Embed files" that never says so; `show` names the note, the file and the heading path."""
    sync(mem, "obsidian", vault, SCOPE)
    mem.embed_pending()
    size = mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key='Help/Embed files.md#Size and position'"
                            ).fetchone()[0]
    assert "embed" not in mem.show(size, scopes=[SCOPE])["content"].lower()
    assert size in [i["id"] for i in mem.recall("how do I embed a file", scopes=[SCOPE])["items"]]
    lexical = mem.recall("transclusion", scopes=[SCOPE], use_vectors=False)["items"]
    by_alias = [i for i in lexical if "transclusion" not in i["content"].lower()          # a frontmatter alias
                and not any(f.startswith("via:") for f in i["flags"])]                   # (not a linked neighbour)
    assert by_alias and {mem.show(i["id"])["note"]["file"] for i in by_alias} == {"Help/Embed files.md"}
    described = mem.recall("headings and blocks", scopes=[SCOPE])      # the description of "Internal links"
    assert any(mem.show(i["id"])["note"]["file"] == "Help/Internal links.md" for i in described["items"])
    shown = mem.show(size, scopes=[SCOPE])
    assert shown["content"].startswith("## Size and position")                 # the text itself is untouched
    assert shown["note"] == {"source": "obsidian", "folder": str(vault.resolve()), "file": "Help/Embed files.md",
                             "note": "Embedding files", "headings": ["Embed files", "Size and position"]}
    proc = run_cli(home, "show", str(size))
    assert proc.returncode == 0, proc.stderr.decode()
    assert 'from the note "Embedding files" (Help/Embed files.md in ' in proc.stdout.decode()
    assert "under Embed files › Size and position" in proc.stdout.decode()


def test_show_tells_a_link_to_from_a_link_from(mem, vault, home):
    """`embeds -> 785` was printed on the note that 785 embeds."""
    sync(mem, "obsidian", vault, SCOPE)
    key = lambda k: mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key=?", (k,)).fetchone()[0]
    embedding, embedded = key("Help/Embed files.md#Embed a note in another note"), key("Help/Internal links.md#Internal links")
    assert {"target": embedded, "relation": "embeds", "status": "confirmed", "direction": "out"} in \
        mem.show(embedding, scopes=[SCOPE])["links"]
    assert {"target": embedding, "relation": "embeds", "status": "confirmed", "direction": "in"} in \
        mem.show(embedded, scopes=[SCOPE])["links"]
    text = run_cli(home, "show", str(embedded)).stdout.decode()
    assert f"{embedding} embeds this (confirmed)" in text and f"embeds -> {embedding}" not in text


def test_a_renamed_title_refreshes_the_context_in_place_and_rolls_back(mem, vault):
    sync(mem, "obsidian", vault, SCOPE)
    before = dump(mem)
    note = vault / "Help" / "Embed files.md"
    note.write_text(note.read_text().replace("title: Embedding files", "title: Putting files inside notes\n"
                                             "api_key: sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"))
    r = sync(mem, "obsidian", vault, SCOPE)
    assert (r["created"], r["updated"], r["refreshed"]) == (0, 0, 6)             # six sections, same words
    hits = mem.recall("putting files inside notes", scopes=[SCOPE])["items"]
    assert hits and all(mem.show(i["id"])["note"]["note"] == "Putting files inside notes" for i in hits[:3])
    stored = " ".join(c for (c,) in mem.conn.execute("SELECT context_text FROM nodes"))
    assert "sk-ant-api03" not in stored and "[REDACTED" in stored              # a property's secret is masked
    assert "sk-ant-api03" not in " ".join(c for (c,) in mem.conn.execute("SELECT context FROM import_units"))
    rollback(mem, r["batch"])
    assert dump(mem) == before
    assert not mem.conn.execute("SELECT count(*) FROM nodes WHERE context_text LIKE '%Putting%'").fetchone()[0]
    assert {mem.show(i["id"])["note"]["note"] for i in hits[:3]} == {"Embedding files"}


def test_links_to_a_deleted_note_become_dangling_and_resolve_when_it_returns(mem, vault):
    """Found by the every-link-accounted-for check: a link from an unchanged note kept pointing
    at the archived section of a deleted note, neither a live link nor listed as dangling."""
    sync(mem, "obsidian", vault, SCOPE)
    text = (vault / "Runbook.md").read_text()
    (vault / "Runbook.md").unlink()
    sync(mem, "obsidian", vault, SCOPE)
    dangling = {(k, t): r for k, t, r in mem.conn.execute("SELECT unit_key, target, reason FROM import_dangling")}
    assert dangling[("Projects/Shop.md#Deploys", "Runbook#Rollback")] == "missing note"
    (vault / "Runbook.md").write_text(text)
    sync(mem, "obsidian", vault, SCOPE)
    assert ("Projects/Shop.md#Deploys", "Runbook#Rollback") not in {
        (k, t) for k, t in mem.conn.execute("SELECT unit_key, target FROM import_dangling")}
    assert ("Runbook.md#Rollback", "links-to") in _links_from(mem, "Projects/Shop.md#Deploys")


def test_a_sync_that_changes_nothing_parses_nothing_and_leaves_no_batch(mem, vault):
    """Every no-change sync (and every rescan of --watch) added a batch row and re-parsed every
    note; a watch's sync after one file event reads that file only."""
    first = sync(mem, "obsidian", vault, SCOPE)
    batches = mem.conn.execute("SELECT count(*) FROM import_batches").fetchone()[0]
    again = sync(mem, "obsidian", vault, SCOPE)
    assert again["batch"] is None and again["parsed"] == 0 and again["read"] == first["read"] > 0
    assert again["unchanged"] == first["created"]
    assert mem.conn.execute("SELECT count(*) FROM import_batches").fetchone()[0] == batches
    runbook = vault / "Runbook.md"
    runbook.write_text(runbook.read_text().replace("Steps for the on-call person.", "Steps for whoever is on call."))
    one = sync(mem, "obsidian", vault, SCOPE, only={"Runbook.md"})
    assert (one["read"], one["parsed"], one["updated"], one["created"]) == (1, 1, 1, 0)
    runbook.unlink()
    gone = sync(mem, "obsidian", vault, SCOPE, only={"Runbook.md"})
    assert (gone["read"], gone["archived"]) == (0, 3)
    assert ("Projects/Shop.md#Deploys", "Runbook#Rollback") in {        # the links to it are dangling now
        (k, t) for k, t in mem.conn.execute("SELECT unit_key, target FROM import_dangling")}


def test_the_cli_embeds_what_it_imported_or_says_the_daemon_will(home, vault, tmp_path):
    """After an import nothing was embedded until the person ran `tidemind embed` themselves."""
    import subprocess
    import sys
    import time

    from .conftest import ROOT, cli_json

    r = cli_json(home, "import", "obsidian", str(vault))
    assert r["embedded"] >= r["created"] > 0 and cli_json(home, "stats")["embed_queue"] == 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("A note about tide tables and harbour pilots.")
    r = cli_json(home, "import", "obsidian", str(other), "--no-embed")
    assert "embedded" not in r and "tidemind embed" in r["embedding"]
    assert cli_json(home, "stats")["embed_queue"] == r["created"]
    text = run_cli(home, "import", "obsidian", str(vault), "--no-embed").stdout.decode()
    assert "nothing changed" in text and "no batch" in text
    daemon = subprocess.Popen([sys.executable, "-m", "tidemind.cli", "--home", str(home), "daemon", "--tick", "60"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True)
    try:
        deadline = time.time() + 30
        while time.time() < deadline and '"event": "started"' not in daemon.stderr.readline():
            pass
        (other / "b.md").write_text("A second note about pilots.")
        proc = run_cli(home, "import", "obsidian", str(other))
        assert proc.returncode == 0 and f"left to the running daemon (pid {daemon.pid})" in proc.stdout.decode()
    finally:
        daemon.terminate()
        daemon.communicate(timeout=30)


def test_two_folders_of_the_same_name_get_two_scopes_and_the_report_says_which(mem, tmp_path, home):
    """Two different folders called 'notes' shared one scope (and each other's memories)."""
    first, second = tmp_path / "work" / "notes", tmp_path / "home" / "notes"
    for folder, text in ((first, "The build server listens on port 8080."), (second, "Buy oat milk on Friday.")):
        folder.mkdir(parents=True)
        (folder / "a.md").write_text(text)
    a = sync(mem, "obsidian", first)
    b = sync(mem, "obsidian", second)
    assert a["scope"] == "vault:notes" and "scope_note" not in a
    assert b["scope"].startswith("vault:notes-") and b["scope"] != a["scope"]
    assert str(first.resolve()) in b["scope_note"] and b["scope"] in b["scope_note"]
    (second / "b.md").write_text("Call the plumber.")
    assert sync(mem, "obsidian", second)["scope"] == b["scope"]             # the folder keeps its scope
    hits = mem.recall("build server port", scopes=[b["scope"]])["items"]
    assert not any("8080" in i["content"] for i in hits)
    odd = [tmp_path / "My Vault (été)", tmp_path / "日記", tmp_path / "dir" / "日記"]
    scopes = []
    for folder in odd:
        folder.mkdir(parents=True)
        (folder / "n.md").write_text("A line.")
        scopes.append(sync(mem, "obsidian", folder)["scope"])
    assert scopes[0] == "vault:My-Vault-ete" and scopes[1].startswith("vault:notes-") and len(set(scopes)) == 3
    third = tmp_path / "elsewhere" / "notes"
    third.mkdir(parents=True)
    (third / "c.md").write_text("A third folder called notes.")
    text = run_cli(home, "import", "obsidian", str(third), "--no-embed").stdout.decode()
    assert "scope: vault:notes is the scope of another folder of that name" in text


def test_an_import_never_unarchives_what_a_person_archived(mem, vault):
    """Issue 16: re-importing an edited note un-archived a section the person had archived; so
    did the note coming back after a delete."""
    sync(mem, "obsidian", vault, SCOPE)
    node = lambda key: mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key=?", (key,)).fetchone()[0]
    status = lambda n: mem.conn.execute("SELECT status FROM nodes WHERE id=?", (n,)).fetchone()[0]
    payments = node("Projects/Shop.md#Payments")
    mem.archive(payments)
    before = dump(mem)
    shop = vault / "Projects" / "Shop.md"
    shop.write_text(shop.read_text().replace("Stripe handles payments", "Adyen handles payments"))
    r = sync(mem, "obsidian", vault, SCOPE)
    assert r["updated"] == 1
    edited = node("Projects/Shop.md#Payments")
    assert edited != payments and status(edited) == "archived"               # the new words: kept, still hidden
    assert not any("Adyen" in i["content"] for i in mem.recall("who handles payments", scopes=[SCOPE])["items"])
    rollback(mem, r["batch"])
    assert dump(mem) == before and status(payments) == "archived"

    runbook = node("Runbook.md#Rollback")
    mem.archive(runbook)
    text = (vault / "Runbook.md").read_text()
    (vault / "Runbook.md").unlink()
    sync(mem, "obsidian", vault, SCOPE)
    (vault / "Runbook.md").write_text(text)                                 # back as it was
    sync(mem, "obsidian", vault, SCOPE)
    assert status(runbook) == "archived"
    (vault / "Runbook.md").unlink()
    sync(mem, "obsidian", vault, SCOPE)
    (vault / "Runbook.md").write_text(text.replace("Revert the tag", "Revert the release tag"))   # back, edited
    sync(mem, "obsidian", vault, SCOPE)
    assert status(node("Runbook.md#Rollback")) == "archived" and status(runbook) != "live"
    steps = node("Runbook.md#Runbook")                      # a section the importer itself archived comes back
    assert status(steps) == "live"


def test_an_import_commits_in_chunks_and_its_rollback_is_exact(mem, vault):
    """Issue 16: an 8,000-note import was one 25 s transaction. With a zero budget every unit is
    its own transaction; the batch is still one, and its rollback (in chunks too) exact."""
    sync(mem, "obsidian", vault, SCOPE)
    before = dump(mem)
    for i in range(12):
        (vault / f"Extra {i}.md").write_text(f"# Extra {i}\nA note about harbour {i}. #extra\n\n## More\n[[Runbook]]\n")
    (vault / "Runbook.md").unlink()
    r = sync(mem, "obsidian", vault, SCOPE, budget_s=0)
    assert r["created"] == 24 and r["archived"] == 3 and r["writes"] > 24 and r["longest_write_s"] < 1
    assert mem.conn.execute("SELECT status FROM import_batches WHERE id=?", (r["batch"],)).fetchone()[0] == "done"
    assert rollback(mem, r["batch"], budget_s=0)["undone"] > 24
    assert dump(mem) == before


def test_an_interrupted_import_keeps_whole_chunks_and_is_completed_or_rolled_back(mem, vault, tmp_path):
    """Ctrl-C (or a kill) between chunks: every chunk is whole, the batch is 'running' until the
    folder's next sync or rollback closes it; rolling it back restores the state before, and a
    sync instead completes the folder."""
    for i in range(600):
        (vault / f"Many {i}.md").write_text(f"Note {i} about lanterns.\n")

    def stop_midway(done, total):             # (called every 250 units)
        if done >= 250:
            raise KeyboardInterrupt

    before = dump(mem)
    with pytest.raises(KeyboardInterrupt):
        sync(mem, "obsidian", vault, SCOPE, progress=stop_midway, budget_s=0)
    [(batch, status)] = mem.conn.execute("SELECT id, status FROM import_batches").fetchall()
    stored = mem.conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
    assert status == "running" and 0 < stored < 600           # whole chunks before the stop, none after
    assert mem.doctor()["ok"]
    rollback(mem, batch)
    assert dump(mem) == before and mem.conn.execute("SELECT status FROM import_batches").fetchone()[0] == "rolled_back"

    with pytest.raises(KeyboardInterrupt):
        sync(mem, "obsidian", vault, SCOPE, progress=stop_midway, budget_s=0)
    done = sync(mem, "obsidian", vault, SCOPE)
    assert done["recovered"][0]["now"] == "interrupted"
    statuses = dict(mem.conn.execute("SELECT id, status FROM import_batches"))
    assert "running" not in statuses.values() and statuses[done["batch"]] == "done"
    clean = Memory.open(tmp_path / "clean")
    sync(clean, "obsidian", vault, SCOPE)
    contents = lambda m: sorted(c for (c,) in m.conn.execute("SELECT content FROM nodes WHERE status='live'"))
    assert contents(mem) == contents(clean)                  # the same as an import that was never stopped
    clean.close()


def test_a_cancelled_import_stops_between_chunks_and_its_batch_can_be_undone(mem, vault):
    """The desktop's Cancel: `cancelled()` is asked before each chunk; the report says so, the
    batch is closed as interrupted at once (nothing waits for a next sync) and rolls back exactly."""
    for i in range(40):
        (vault / f"Many {i}.md").write_text(f"Note {i} about lanterns.\n")
    asked = []

    def cancelled():
        asked.append(1)
        return len(asked) > 6                    # after six chunks of one unit each

    before = dump(mem)
    r = sync(mem, "obsidian", vault, SCOPE, budget_s=0, cancelled=cancelled)
    assert r["cancelled"] and r["created"] == 6 and r["writes"] == 7    # six chunks, then the batch closed
    status = mem.conn.execute("SELECT status FROM import_batches WHERE id=?", (r["batch"],)).fetchone()[0]
    assert status == "interrupted" and mem.doctor()["ok"]
    rollback(mem, r["batch"])
    assert dump(mem) == before
    at_once = sync(mem, "obsidian", vault, SCOPE, cancelled=lambda: True)
    assert at_once["cancelled"] and at_once["batch"] is None and dump(mem) == before       # nothing written
    done = sync(mem, "obsidian", vault, SCOPE)
    assert not done.get("cancelled") and done["created"] > 40


def test_one_import_of_a_folder_at_a_time(home, vault):
    from tidemind.errors import StoreBusy
    from tidemind.importers.engine import _folder_lock

    m = Memory.open(home, busy_timeout_ms=300)
    try:
        with _folder_lock(m, "obsidian", str(vault.resolve())):
            with pytest.raises(StoreBusy, match=f"another import of {vault.resolve()} is running"):
                sync(m, "obsidian", vault, SCOPE)
        assert sync(m, "obsidian", vault, SCOPE)["created"] > 0
    finally:
        m.close()


def test_a_sync_stopped_while_linking_links_on_the_next_one(mem, vault, tmp_path, monkeypatch):
    """A note's hash is recorded after its units' links: stopped in between, the next sync reads
    the note again and writes the links the stopped one did not."""
    from tidemind.importers import engine

    real, calls = engine._Sync._link, []

    def stop_at_the_third_link(self, *args):
        calls.append(args)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, *args)

    monkeypatch.setattr(engine._Sync, "_link", stop_at_the_third_link)
    with pytest.raises(KeyboardInterrupt):
        sync(mem, "obsidian", vault, SCOPE, budget_s=0)
    monkeypatch.setattr(engine._Sync, "_link", real)
    sync(mem, "obsidian", vault, SCOPE)
    clean = Memory.open(tmp_path / "clean")
    sync(clean, "obsidian", vault, SCOPE)
    pairs = lambda m: sorted((a, b, rel) for a, b, rel in m.conn.execute(
        "SELECT ua.unit_key, ub.unit_key, l.relation FROM links l JOIN import_units ua ON ua.node_id = l.source_id"
        " JOIN import_units ub ON ub.node_id = l.target_id WHERE l.status = 'confirmed'"))
    assert len(calls) == 3 and pairs(mem) == pairs(clean) and pairs(clean)
    dangling = lambda m: sorted(m.conn.execute("SELECT unit_key, target, reason FROM import_dangling"))
    assert dangling(mem) == dangling(clean)
    clean.close()


def test_code_fenced_inside_a_callout_or_quote_holds_no_tag_and_no_heading(mem, tmp_path):
    """Seen on the Obsidian help vault: a CSS block inside a callout (`> ```css`) gave the tag
    'ff0000'; a fence is a fence in a quote too."""
    vault = tmp_path / "callouts"
    vault.mkdir()
    (vault / "CSS snippets.md").write_text(
        "# CSS snippets\n\nStyle notes with #css-snippets.\n\n"
        "> [!example] CSS classes\n> Give a note a class.\n>\n> ```css\n> .red-border img {\n"
        ">    border-color: #ff0000;\n> }\n> # not a heading\n> ```\n\nAfter the callout, #styling.\n")
    # a fence left open in a quote ends with the quote (CommonMark): what follows is read again
    (vault / "Quote.md").write_text("> ```\n> echo #inside\n\nThe quote is over: #outside\n")
    # (review) a quoted fence inside a fence at the margin is that fence's content, not its end
    (vault / "Nested.md").write_text("```markdown\n> [!tip]\n> ```js\n> x #quoted\n> ```\n```\n\n"
                                     "After: #keepme\n\n## Later\n\nText #tag2\n")
    sync(mem, "obsidian", vault, "vault:css")
    names = {n for (n,) in mem.conn.execute("SELECT name FROM tags")}
    assert {"css-snippets", "styling", "outside", "keepme", "tag2"} <= names and not {"ff0000", "inside", "quoted"} & names
    assert not [c for (c,) in mem.conn.execute("SELECT content FROM nodes") if c.startswith("> # not a heading")]


def _whole_store(m: Memory) -> dict:
    """Every table a rolled-back import must leave as it was (the history tables, audit_log,
    import_batches and import_changes, task_runs, keep their rows by design), and the stream."""
    tables = {"nodes": "id, status, content, derived_text, context_text, superseded_by", "captures": "id, content",
              "node_versions": "node_id, lineage_id, version", "node_tags": "node_id, tag_id, status",
              "tags": "id, name", "links": "source_id, target_id, status", "review_items": "id, status",
              "derived": "node_id, field", "node_vectors": "node_id", "embed_queue": "node_id",
              "fts_terms": "scope, term_id, df", "import_units": "unit_key, node_id, status",
              "import_kept_out": "node_id, reason", "questions": "node_id, term", "referents": "node_id, word",
              "ws_assignments": "node_id"}
    out = {t: sorted(tuple(r) for r in m.conn.execute(f"SELECT {cols} FROM {t}")) for t, cols in tables.items()}
    out["stream"] = {p.name: p.read_bytes() for p in sorted(m.settings.stream_dir.glob("*.md"))}
    return out


def test_undoing_an_import_removes_what_it_added_and_the_same_notes_import_again(mem, vault):
    """Issue 25: undoing an import archived what it had added (the memories stayed, hidden, and
    their words were kept out of the next sync). Now the store is as it was: no row, no index
    entry, no stream entry, whatever the metabolism and a person did with the memories since."""
    from tidemind.metabolism.scheduler import run_due

    own = mem.digest("The lighthouse keeper's logbook is kept in the harbour office.", scope=SCOPE)["node_ids"][0]
    sync(mem, "obsidian", vault, SCOPE, {"exclude": ["templates"]})
    run_due(mem, force=True, clock=mem.clock)
    before = _whole_store(mem)
    (vault / "Lighthouse.md").write_text("# Lighthouse\nThe lighthouse keeper rewound the clockwork lamp on Tuesday."
                                         " #lighthouse\n\n## Logbook\nThe logbook of the lighthouse keeper: [[Shop]].\n")
    shop = vault / "Projects" / "Shop.md"
    shop.write_text(shop.read_text() + "\nThe lighthouse keeper buys oil from the shop.\n")
    r = sync(mem, "obsidian", vault, SCOPE, {"exclude": ["templates"]})
    assert r["created"] >= 2 and r["updated"] >= 1
    added = [n for (n,) in mem.conn.execute("SELECT new_node_id FROM import_changes WHERE batch_id=? AND action IN"
                                            " ('created', 'updated')", (r["batch"],))]
    run_due(mem, force=True, clock=mem.clock)                 # tags, links, review items made from them
    assert mem.recall("who rewound the clockwork lamp", scopes=[SCOPE])["items"]      # (recorded as hits)
    with immediate(mem.conn):                                 # a person links their own memory to one
        made = next(i for i in (links.add(mem.conn, own, n, status="pending", proposed_by="t", at=mem.now())
                                for n in added) if i is not None)
    mem.link_decide(made, "confirmed")
    assert _whole_store(mem) != before
    rollback(mem, r["batch"])
    assert _whole_store(mem) == before                        # every table and the stream as they were
    assert not mem.conn.execute(f"SELECT 1 FROM recall_hits WHERE node_id IN ({','.join('?' * len(added))})",
                                added).fetchall()
    from tidemind.store import syntheses
    made_from = syntheses.citing(mem.conn, added)
    assert made_from                                          # (the crystallize pass made one from them)
    assert all(syntheses.get(mem.conn, s)["status"] == "withdrawn" and "clockwork" not in syntheses.get(mem.conn, s)
               ["text"] for s in made_from)
    assert not mem.conn.execute(f"SELECT 1 FROM nodes WHERE id IN ({','.join('?' * len(added))})", added).fetchall()
    assert mem.recall("who rewound the clockwork lamp", scopes=[SCOPE])["abstained"]
    assert mem.doctor()["ok"]
    again = sync(mem, "obsidian", vault, SCOPE, {"exclude": ["templates"]})    # nothing keeps the words out
    assert again["created"] == r["created"] and again["updated"] == r["updated"]
    assert mem.recall("who rewound the clockwork lamp", scopes=[SCOPE])["items"]


def test_a_rollback_that_fails_midway_leaves_every_stream_entry_and_a_merge_blocks_it(mem, vault, monkeypatch):
    """Review of issue 25's removal: the stream entries were taken out inside the transaction
    (a failure after them lost the entries of captures that stayed), and a memory merged into an
    imported one made the rollback fail on a foreign key."""
    from tidemind.errors import Conflict
    from tidemind.importers import engine
    from tidemind.store import review

    sync(mem, "obsidian", vault, SCOPE, {"exclude": ["templates"]})
    for i in range(3):
        (vault / f"Extra {i}.md").write_text(f"A note about lanterns {i}.\n")
    r = sync(mem, "obsidian", vault, SCOPE, {"exclude": ["templates"]})
    stream_before = {p.name: p.read_bytes() for p in mem.settings.stream_dir.glob("*.md")}
    real, calls = engine._undo_one, []

    def failing(memory, b, c, now):
        calls.append(c["action"])
        if len(calls) == 2:
            raise RuntimeError("the disk went away")
        return real(memory, b, c, now)
    monkeypatch.setattr(engine, "_undo_one", failing)
    with pytest.raises(RuntimeError):
        rollback(mem, r["batch"])
    monkeypatch.setattr(engine, "_undo_one", real)
    assert {p.name: p.read_bytes() for p in mem.settings.stream_dir.glob("*.md")} == stream_before
    assert mem.doctor()["ok"]

    added = [n for (n,) in mem.conn.execute("SELECT new_node_id FROM import_changes WHERE batch_id=? AND"
                                            " action='created'", (r["batch"],))]
    own = mem.digest("A note about lanterns 0, said again by hand.", scope=SCOPE)["node_ids"][0]
    with immediate(mem.conn):
        item = review.file(mem.conn, "merge", node_id=added[0], other_node_id=own, at=mem.now(), scope=SCOPE)
    mem.review_decide(item, "approved")                       # the person's memory merged into an imported one
    with pytest.raises(Conflict, match="merged into"):
        rollback(mem, r["batch"])
    mem.review_decide(item, "open")                           # the merge taken back: the rollback goes through
    rollback(mem, r["batch"])
    assert mem.show(own)["id"] == own and mem.doctor()["ok"]
