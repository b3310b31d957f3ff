"""Notes built to be slow (issue 29 item 11): a 344-byte YAML alias bomb in the frontmatter
took 13 s to import (8 levels; 9 levels over 40 s).

Nothing here measures time (the machine running the suite is shared and loaded). The alias
bomb is checked by what the parser produces (the frontmatter refused with a reason, nothing
expanded, the body imported) and by the work the refusal costs, counted in Python lines run
(`lines_run`): the same for 8 levels as for 9.
"""
from __future__ import annotations

import sys

import pytest

from tidemind.importers.engine import sync, unit_hash
from tidemind.importers.obsidian import ObsidianParser
from tidemind.memory import Memory


def lines_run(fn) -> tuple[int, object]:
    """(Python lines executed while fn() ran, in every frame, its result)."""
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return local

    previous = sys.gettrace()
    sys.settrace(lambda frame, event, arg: local)
    try:
        result = fn()
    finally:
        sys.settrace(previous)
    return count, result


def alias_bomb(levels: int) -> str:
    """The reviewer's shape: each level a list of nine aliases of the level before (9**levels values)."""
    names = "abcdefghijklmnop"
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"{names[i]}: &{names[i]} [" + ",".join([f"*{names[i - 1]}"] * 9) + "]" for i in range(1, levels)]
    return "---\n" + "\n".join(lines) + "\n---\nThe body about lighthouses and tides.\n\n## Later\nMore words.\n"


@pytest.mark.parametrize("levels", [8, 9])
def test_a_yaml_alias_bomb_is_refused_unexpanded_and_the_body_imports(levels):
    text = alias_bomb(levels)
    note = ObsidianParser().parse_note("bomb.md", text, {})
    assert [s["path"] for s in note.skipped] == ["bomb.md"]
    reason = note.skipped[0]["reason"]
    assert reason.startswith("malformed frontmatter (its YAML aliases expand it past") and reason.endswith(
        "; body imported")
    assert [u.anchor for u in note.units] == ["", "Later"]
    assert "lighthouses and tides" in note.units[0].text and "More words" in note.units[1].text
    # nothing expanded: everything the note became is about the size of what was written
    produced = sum(len(u.text) + len(unit_hash(u)) + len(str(u.properties)) + len(str(u.tags)) for u in note.units)
    assert produced < 2 * len(text) and note.meta["properties"] == {} and all(u.properties == {} for u in note.units)


def test_refusing_an_alias_bomb_costs_what_was_written_not_what_it_would_expand_to():
    eight, _ = lines_run(lambda: ObsidianParser().parse_note("bomb.md", alias_bomb(8), {}))
    nine, _ = lines_run(lambda: ObsidianParser().parse_note("bomb.md", alias_bomb(9), {}))
    assert nine < 1.5 * eight, (eight, nine)             # expanded, one more level is 9 times the work


def test_an_alias_bomb_through_a_real_import(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "bomb.md").write_text(alias_bomb(9))
    (vault / "plain.md").write_text("---\ntags: [harbour]\n---\nA plain note.\n")
    m = Memory.open(tmp_path / "home")
    try:
        r = sync(m, "obsidian", vault, "vault:bomb")
        assert r["created"] == 3
        assert [s["path"] for s in r["skipped"]] == ["bomb.md"] and "YAML aliases" in r["skipped"][0]["reason"]
        live = "\n".join(c for (c,) in m.conn.execute("SELECT content FROM nodes WHERE status='live'"))
        assert "lighthouses and tides" in live and "A plain note" in live
    finally:
        m.close()


def test_small_aliases_still_work_and_an_alias_inside_its_own_anchor_is_refused():
    note = ObsidianParser().parse_note("ok.md", "---\nbase: &t [harbour, tides]\ntags: *t\n---\nBody.\n", {})
    assert note.skipped == [] and note.units[0].tags == ["harbour", "tides"]
    note = ObsidianParser().parse_note("loop.md", "---\na: &a [*a, *a]\n---\nThe body stays.\n", {})
    assert "its own anchor" in note.skipped[0]["reason"] and note.skipped[0]["reason"].endswith("body imported")
    assert "The body stays" in note.units[0].text and note.units[0].properties == {}
