"""No input crashes an import: property-based tests over generated Obsidian vaults and Logseq
graphs whose links point at missing, alias-only, empty and whitespace-only notes, headings
(nested, missing), block ids, embeds and attachments. Every run ends in a report (bad files
listed with a reason) that loses and invents nothing (import_checks.py); a second run over
the same folder changes nothing.

Examples per property: 40 in CI, 400 with TIDEMIND_SOAK=1.
"""
from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemind.errors import TideMindError
from tidemind.importers.engine import sync
from tidemind.memory import Memory

from .import_checks import check_folder

EXAMPLES = 400 if os.environ.get("TIDEMIND_SOAK") else 40
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
_runs = itertools.count()

# -- Obsidian -------------------------------------------------------------------------------------
NOTE_NAMES = ["A", "B", "Alpha note", "Deep/Nested", "Other/A", "Projects/Deep/B", "Ünïcode"]
ALIASES = ["Alpha", "Webshop", "A", "ünï"]
TARGETS = NOTE_NAMES + ALIASES + ["Nowhere", "Deep", "A.md", "Other/A.md", "", " ", "#", "pic.png", "doc.pdf"]
HEADINGS = ["Intro", "Setup", "Setup (2)", "Open hidden sidebars", "C# tips", "Nested", ""]
BLOCKS = ["blk1", "blk-2", "missing"]


@st.composite
def obsidian_link(draw) -> str:
    target = draw(st.sampled_from(TARGETS))
    anchor = draw(st.sampled_from(["", *(f"#{h}" for h in HEADINGS), "#Setup#Nested", "#Intro#Setup#Nested",
                                   *(f"#^{b}" for b in BLOCKS), "#^"]))
    alias = draw(st.sampled_from(["", "|shown", "\\|in a table", "|", "|a|b"]))
    bang = draw(st.sampled_from(["", "!"]))
    return f"{bang}[[{target}{anchor}{alias}]]"


@st.composite
def obsidian_line(draw) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.sampled_from(["#", "##", "###", "######"])) + " " + draw(st.sampled_from(HEADINGS[:-1]))
    if kind == 1:
        return f"Text with a block id ^{draw(st.sampled_from(BLOCKS[:2]))}"
    if kind == 2:
        return f"| cell | {draw(obsidian_link())} |"
    if kind == 3:
        return "```\n# not a heading [[A]] #not-a-tag\n```"
    if kind == 4:
        return draw(st.sampled_from(["", "   ", "\t", "- a list item #tag/sub", "> a quote #quoted", "---"]))
    return "Words about lighthouses " + " ".join(draw(st.lists(obsidian_link(), max_size=3))) + " #tide"


@st.composite
def obsidian_note(draw) -> str | None:
    kind = draw(st.sampled_from(["missing", "empty", "blank", "alias_only", "front_only", "text", "text", "text"]))
    if kind == "missing":
        return None
    if kind == "empty":
        return ""
    if kind == "blank":
        return draw(st.sampled_from([" ", "\n\n", " \t\n  \n", "\r\n"]))
    alias = draw(st.sampled_from(ALIASES))
    if kind == "alias_only":
        return draw(st.sampled_from([f"---\naliases: [{alias}]\n---", f"---\naliases: [{alias}]\n---\n",
                                     f"---\nalias: {alias}\n---\n\n  \n"]))
    front = ""
    if kind == "front_only" or draw(st.booleans()):
        front = f"---\naliases: [{alias}]\ntitle: Title {alias}\ndescription: About {alias}\ntags: [t1]\n---\n"
    if kind == "front_only":
        return front
    return front + "\n".join(draw(st.lists(obsidian_line(), min_size=1, max_size=8))) + "\n"


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _import_twice(m: Memory, source: str, root: Path, scope: str) -> dict:
    """The first run must end in a report (the generated folders hold nothing a refusal is for)
    that loses and invents nothing; the second run over the same files must change nothing."""
    r = sync(m, source, root, scope)
    assert all({"path", "reason"} <= set(s) and s["reason"] for s in r["skipped"]), r["skipped"]
    check_folder(m, source, root, r)
    again = sync(m, source, root, scope)
    assert again["created"] == again["updated"] == again["archived"] == 0, again
    return r


def test_generated_obsidian_vaults_never_crash_an_import(tmp_path):
    m = Memory.open(tmp_path / "home")

    @PROPERTY
    @given(st.lists(obsidian_note(), min_size=len(NOTE_NAMES), max_size=len(NOTE_NAMES)),
           st.sampled_from(["pic.png", "assets/pic.png", None]), st.integers(0, len(NOTE_NAMES) - 1))
    def check(notes, attachment, victim):
        run = next(_runs)
        root = Path(tempfile.mkdtemp(dir=tmp_path, prefix="vault"))
        try:
            for name, text in zip(NOTE_NAMES, notes):
                if text is not None:
                    _write(root, f"{name}.md", text)
            if attachment:
                (root / attachment).parent.mkdir(parents=True, exist_ok=True)
                (root / attachment).write_bytes(b"\x89PNG\r\n\x1a\n\x00")
            scope = f"vault:gen{run}"
            _import_twice(m, "obsidian", root, scope)
            victim_file = root / f"{NOTE_NAMES[victim]}.md"            # a note emptied or deleted, then a re-sync
            if victim_file.exists():
                victim_file.write_text("") if run % 2 else victim_file.unlink()
            _import_twice(m, "obsidian", root, scope)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    check()
    assert m.doctor()["ok"]
    m.close()


# -- Logseq ---------------------------------------------------------------------------------------
PAGES = ["pages/Desktop.md", "pages/Shop.md", "pages/infra___deploys.md", "pages/Org page.org",
         "journals/2024_01_05.md", "pages/Empty.md"]
PAGE_NAMES = ["Desktop", "Shop", "infra/deploys", "Org page", "Jan 5th, 2024", "Empty", "Desk", "Nowhere", "shop"]
UUIDS = ["6750a1b2-0000-4000-8000-000000000001", "6750a1b2-0000-4000-8000-000000000002",
         "6750a1b2-0000-4000-8000-00000000dead"]


@st.composite
def logseq_ref(draw) -> str:
    page, uuid = draw(st.sampled_from(PAGE_NAMES)), draw(st.sampled_from(UUIDS))
    return draw(st.sampled_from([f"[[{page}]]", f"(({uuid}))", f"{{{{embed (({uuid}))}}}}",
                                 f"{{{{embed [[{page}]]}}}}", f"#[[{page}]]", "#tag", "[[]]", "(())"]))


@st.composite
def logseq_block(draw) -> str:
    indent = draw(st.sampled_from(["\t", "  ", "    "]))
    first = draw(st.sampled_from(["", "TODO ", "DONE ", "## ", "[#A] ", "TODO [#B] "]))
    text = f"- {first}Block about harbours " + " ".join(draw(st.lists(logseq_ref(), max_size=3)))
    lines = [text]
    if draw(st.booleans()):
        lines.append(f"{indent}id:: {draw(st.sampled_from(UUIDS[:2]))}")
    for _ in range(draw(st.integers(0, 2))):
        lines.append(f"{indent}- a child " + " ".join(draw(st.lists(logseq_ref(), max_size=1))))
        if draw(st.booleans()):
            lines.append(f"{indent}{indent}id:: {draw(st.sampled_from(UUIDS[:2]))}")
    return "\n".join(lines)


@st.composite
def logseq_page(draw) -> str | None:
    kind = draw(st.sampled_from(["missing", "empty", "blank", "props_only", "bullets", "bullets", "plain"]))
    if kind == "missing":
        return None
    if kind == "empty":
        return ""
    if kind == "blank":
        return draw(st.sampled_from([" ", "\n\n", "\t\n", "-", "- \n-"]))
    props = draw(st.sampled_from(["", "alias:: Desk\n", "title:: Shop\nalias:: Webshop, [[Desk]]\n",
                                  "description:: A page about things\ntags:: a, [[b c]]\n", "alias::\n"]))
    if kind == "props_only":
        return props or "alias:: Desk\n"
    if kind == "plain":
        return props + "\n## A heading\nSome plain text " + " ".join(draw(st.lists(logseq_ref(), max_size=2))) \
            + "\n\t- a tab-indented child\n"
    return props + "\n".join(draw(st.lists(logseq_block(), min_size=1, max_size=4))) + "\n"


def _org(page: str) -> str:
    """The same page in Logseq's org-mode syntax (headlines for bullets, drawers for properties)."""
    out = []
    for line in page.splitlines():
        stripped = line.lstrip("\t ")
        depth = 1 + (len(line) - len(stripped)) // 2
        if stripped.startswith("- "):
            out.append("*" * depth + " " + stripped[2:])
        elif "::" in stripped:
            key, _, value = stripped.partition("::")
            out.append(f":PROPERTIES:\n:{key.strip()}: {value.strip()}\n:END:" if line != stripped
                       else f"#+{key.strip()}: {value.strip()}")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def test_generated_logseq_graphs_never_crash_an_import(tmp_path):
    m = Memory.open(tmp_path / "home")

    @PROPERTY
    @given(st.lists(logseq_page(), min_size=len(PAGES), max_size=len(PAGES)), st.integers(0, len(PAGES) - 1))
    def check(pages, victim):
        run = next(_runs)
        root = Path(tempfile.mkdtemp(dir=tmp_path, prefix="graph"))
        try:
            (root / "logseq").mkdir()
            (root / "logseq" / "config.edn").write_text('{:journal/page-title-format "MMM do, yyyy"}\n')
            for rel, text in zip(PAGES, pages):
                if text is not None:
                    _write(root, rel, _org(text) if rel.endswith(".org") else text)
            scope = f"vault:graph{run}"
            _import_twice(m, "logseq", root, scope)
            victim_file = root / PAGES[victim]
            if victim_file.exists():
                victim_file.write_text("- \n") if run % 2 else victim_file.unlink()
            _import_twice(m, "logseq", root, scope)
        except TideMindError as exc:           # nothing in these folders is a reason to refuse
            raise AssertionError(f"refused: {exc}") from None
        finally:
            shutil.rmtree(root, ignore_errors=True)

    check()
    assert m.doctor()["ok"]
    m.close()
