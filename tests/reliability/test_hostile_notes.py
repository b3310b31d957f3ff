"""Notes built to be slow (issue 29 item 11): a 344-byte YAML alias bomb in the frontmatter
took 13 s to import (8 levels; 9 levels over 40 s); a note of 30,000 headings took 33 s.

Nothing here measures time (the machine running the suite is shared and loaded). The alias
bomb is checked by what the parser produces (the frontmatter refused with a reason, nothing
expanded, the body imported) and by the work the refusal costs (the same for 8 levels as for
9). Scaling is checked by counting the Python lines run (`lines_run`): parsing, matching and
link resolution of a note of 4N sections must run about 4 times the lines of one of N, where
the quadratic versions ran 16 times. (Time spent inside C, in a regular expression or SQLite,
is not counted; what is counted is where the quadratic loops were.) `tidemind bench
--hostile-notes N` times the same notes end to end.
"""
from __future__ import annotations

import sys

import pytest

from tidemind.importers import Ref, identity
from tidemind.importers.engine import sync, unit_hash
from tidemind.importers.logseq import LogseqParser
from tidemind.importers.obsidian import ObsidianParser, sections
from tidemind.importers.resolve import Index, heading_hash
from tidemind.memory import Memory

LINEAR = 4.5      # lines(4N) / lines(N): 4.0 here for linear work (the counts do not depend on load); ~16 quadratic


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


def _ratio(make, run) -> float:
    small, _ = lines_run(lambda: run(make(1_000)))
    large, _ = lines_run(lambda: run(make(4_000)))
    return large / small


@pytest.mark.parametrize("shape", ["same heading", "distinct headings", "nested, linking to each other"])
def test_parsing_a_note_of_many_headings_is_linear(shape):
    def make(n):
        if shape == "same heading":         # 'Todo', 'Todo (2)'...: the free name was searched from 1 each time
            return "".join(f"## Todo\nitem {i}\n" for i in range(n))
        if shape == "distinct headings":
            return "".join(f"# Heading {i}\nSome words under heading {i}.\n" for i in range(n))
        return "".join(f"{'#' * (1 + i % 6)} Part {i % 50}\nsee [[#Part {(i * 7) % 50}]]\n" for i in range(n))

    ratio = _ratio(make, lambda text: ObsidianParser().parse_note("h.md", text, {}))
    assert ratio < LINEAR, ratio


def test_duplicate_headings_keep_the_names_they_always_had():
    """(the names are the units' identities: a faster search must find the same ones)"""
    body = "intro\n" + "".join(f"# {h}\ntext\n" for h in ["A", "A (2)", "A", "B", "A", "A (4)", "A", "B"])
    assert [a for a, _, _ in sections(body)] == ["", "A", "A (2)", "A (3)", "B", "A (4)", "A (4) (2)", "A (5)",
                                                 "B (2)"]
    assert [a for a, _, _ in sections("".join("## Todo\nx\n" for _ in range(4)))] == [
        "Todo", "Todo (2)", "Todo (3)", "Todo (4)"]


def test_matching_a_page_again_after_a_block_was_added_above_is_linear():
    """A Logseq page's nameless blocks are matched by text, then by place: one block added at the
    top of a page of 20,000 took 35 s (each block scanned the page's stored blocks)."""
    parser = LogseqParser()

    def stored_then_edited(n):
        lines = [f"- item {i}\n" for i in range(n)]
        before = parser.parse_note("pages/p.md", "".join(lines), {}).units
        steps, _, _ = identity.match(before, [unit_hash(u) for u in before], {}, {})
        known = {s.unit.key: {"unit_key": s.unit.key, "content_hash": s.hash, "position": s.position,
                              "status": "live", "node_id": i} for i, s in enumerate(steps)}
        # one block added above, and every tenth block edited (paired by place)
        edited = ["- a new first block\n"] + [f"- item {i} edited\n" if i % 10 == 0 else line
                                              for i, line in enumerate(lines)]
        after = parser.parse_note("pages/p.md", "".join(edited), {}).units
        return after, known

    def run(case):
        after, known = case
        steps, vanished, _ = identity.match(after, [unit_hash(u) for u in after], known, {})
        assert not vanished and sum(s.row is None for s in steps) == 1      # only the new block is new
        return steps

    ratio = _ratio(stored_then_edited, run)
    assert ratio < LINEAR, ratio


def test_resolving_links_between_the_sections_of_a_note_is_linear():
    """Each link to a heading or block scanned every unit of its note: 20,000 sections each
    linking to another took 30 s."""
    def index_and_refs(n):
        return n, [Ref(target="", headings=(f"Part {n - 1 - i}",)) for i in range(n)] + [
            Ref(target="", block=f"b{n - 1 - i}") for i in range(n)] + [
            Ref(target="", headings=("Top", f"Part {i}")) for i in range(n)]

    def run(case):
        n, refs = case
        index = Index("path")
        index.add_note("h.md")
        for i in range(n):
            index.add_unit("h.md", f"h.md#Part {i}", [heading_hash("Top"), heading_hash(f"Part {i}")], [f"b{i}"])
        found = [index.resolve(ref, "h.md").key for ref in refs]
        assert found[0] == f"h.md#Part {n - 1}" and found[n] == f"h.md#Part {n - 1}" and None not in found
        return found

    ratio = _ratio(index_and_refs, run)
    assert ratio < LINEAR, ratio
