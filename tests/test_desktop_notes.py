"""An imported note reads as a note (issue 25): Markdown rendered, titled by its note and
headings, its [[links]] and #tags clickable; the bytes as written one click away; a conversation
turn shows its text as written first."""
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import QUrl  # noqa: E402
from PySide6.QtWidgets import QPlainTextEdit, QTextBrowser, QToolButton  # noqa: E402

from tidemind_desktop.markdown import to_markdown  # noqa: E402
from tidemind_desktop.node_view import page_title  # noqa: E402

from .desktop_helpers import opened, settle, window  # noqa: F401,E402

VAULT = Path(__file__).parent / "fixtures" / "vault"


def _unit(mem, key: str) -> int:
    return mem.conn.execute("SELECT node_id FROM import_units WHERE unit_key = ?", (key,)).fetchone()[0]


def test_a_note_is_rendered_and_its_links_and_tags_open_what_they_name(window, mem, qtbot):
    window.import_folder("obsidian", str(VAULT))
    settle(window, qtbot)
    rollback, shop = _unit(mem, "Runbook.md#Rollback"), _unit(mem, "Projects/Shop.md#")
    opened(window, qtbot, rollback)
    view = window.node_view
    title = view.inner.findChildren(type(window.message))[0].text()
    assert "Runbook › Rollback" in title and "Runbook › Runbook" not in title
    rendered = view.findChild(QTextBrowser, "rendered")
    qtbot.waitUntil(rendered.isVisible, timeout=60000)   # (a widget added to a shown page shows at the next turn)
    shown = rendered.toPlainText()
    assert "[[" not in shown and "Webshop" in shown and "##" not in shown       # rendered, not raw
    assert "Webshop" in rendered.toHtml() and "wikilink:Webshop" in rendered.toHtml()

    rendered.anchorClicked.emit(QUrl("wikilink:Webshop"))       # an alias of Projects/Shop.md
    settle(window, qtbot)
    assert view.node_id == shop
    window.go_back()
    settle(window, qtbot)
    assert view.node_id == rollback
    rendered = view.findChild(QTextBrowser, "rendered")
    rendered.anchorClicked.emit(QUrl("wikilink:Nowhere"))
    settle(window, qtbot)
    assert view.node_id == rollback and "Nowhere" in window.message.text()

    opened(window, qtbot, shop)
    rendered = view.findChild(QTextBrowser, "rendered")
    assert "tag:backend" in rendered.toHtml()
    rendered.anchorClicked.emit(QUrl("tag:backend"))
    settle(window, qtbot)
    assert "backend" in window.message.text() and window.results.count() >= 1

    exact = view.findChild(QToolButton, "as-written")
    exact.click()
    authored = view.findChild(QPlainTextEdit, "authored")
    qtbot.waitUntil(authored.isVisible, timeout=60000)
    assert view.findChild(QTextBrowser, "rendered").isHidden()
    assert authored.toPlainText() == mem.show(shop)["content"]            # the bytes, as written


def test_a_conversation_turn_shows_its_text_as_written_first(window, mem, qtbot):
    turn = mem.digest("Caroline: I *think* the [[group]] meets at #7 on Tuesdays.")["node_ids"][0]
    opened(window, qtbot, turn)
    view = window.node_view
    assert view.findChild(QToolButton, "as-written").isChecked()
    qtbot.waitUntil(view.findChild(QPlainTextEdit, "authored").isVisible, timeout=60000)
    assert view.findChild(QTextBrowser, "rendered").isHidden()


def test_the_notes_syntax_becomes_links_and_code_stays_as_written():
    md = to_markdown("See [[Core plugins|core plugin]], [[Graph view#Local graph]] and [[Shop#^pay]].\n"
                     "#photo #[[trip planning]] not http://x.org/a#frag, C# or `#code [[x]]`\n"
                     "```\n[[in a fence]] #nope\n```\n![[diagram.png]] ((64a1b2c3-1111-2222-3333-444455556666))"
                     " {{youtube https://youtu.be/abc}} {{query (todo now)}}\ntype:: book")
    assert "[core plugin](wikilink:Core%20plugins)" in md
    assert "[Graph view › Local graph](wikilink:Graph%20view%23Local%20graph)" in md
    assert "[Shop](wikilink:Shop%23%5Epay)" in md
    assert "[#photo](tag:photo)" in md and "[#trip planning](tag:trip%20planning)" in md
    assert "a#frag" in md and "C#" in md and "`#code [[x]]`" in md
    assert "```\n[[in a fence]] #nope\n```" in md
    assert "🖼 *diagram.png*" in md and "block:64a1b2c3" in md
    assert "[▶ youtube: https://youtu.be/abc](https://youtu.be/abc)" in md and "`{{query (todo now)}}`" in md
    assert "*type:* book" in md


def test_page_titles_follow_the_note_and_its_headings():
    assert page_title({"note": {"note": "Runbook", "headings": ["Runbook", "Rollback"]}, "content": "x",
                       "derived": {}}) == "Runbook › Rollback"
    assert page_title({"content": "Caroline: hello there", "derived": {}}) == "Caroline: hello there"


def test_an_imported_memory_shows_its_whole_note_as_one_page(window, mem, qtbot):
    """Each section stays its own memory for recall and links; a person reads the note as one
    page, the section on screen marked, the others a click away."""
    window.import_folder("obsidian", str(VAULT))
    settle(window, qtbot)
    intro, rollback, missing = (_unit(mem, k) for k in ("Runbook.md#Runbook", "Runbook.md#Rollback", "Runbook.md#Missing"))
    opened(window, qtbot, rollback)
    rendered = window.node_view.findChild(QTextBrowser, "rendered")
    text = rendered.toPlainText()
    assert text.index("Steps for the on-call person") < text.index("Revert the tag") < text.index("stays dangling")
    assert f"this memory · #{rollback}" in text
    page_html = rendered.toHtml()
    assert f"node:{intro}" in page_html and f"node:{missing}" in page_html and f"node:{rollback}" not in page_html
    rendered.anchorClicked.emit(QUrl(f"node:{missing}"))
    settle(window, qtbot)
    assert window.node_view.node_id == missing
    mem.archive(intro)                                  # an archived section leaves the page
    opened(window, qtbot, rollback)
    assert "Steps for the on-call person" not in window.node_view.findChild(QTextBrowser, "rendered").toPlainText()


def test_a_conversation_turn_shows_the_turns_around_it_and_a_note_its_unlinked_mentions(window, mem, qtbot, tmp_path):
    """Issue 25: a turn read alone loses its conversation; a note's page listed no unlinked mentions."""
    from PySide6.QtWidgets import QLabel

    said = ["Caroline: I went to the adoption meeting today.", "Melanie: How did it go?",
            "Caroline: They said the home study is next month."]
    ids = [mem.digest(t, session="chat-1")["node_ids"][0] for t in said]
    opened(window, qtbot, ids[1])
    view = window.node_view
    talk = view.findChild(QLabel, "conversation")
    assert talk is not None and "3 turns of its session" in talk.text()
    assert f"node:{ids[0]}" in talk.text() and f"node:{ids[2]}" in talk.text() and f"node:{ids[1]}" not in talk.text()
    assert "<b>Melanie: How did it go?</b>" in talk.text()                 # the turn read, marked
    talk.linkActivated.emit(f"node:{ids[2]}")
    settle(window, qtbot)
    assert view.node_id == ids[2]

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Core plugins.md").write_text("# Core plugins\nThe core plugins ship with the app.\n")
    (vault / "Mentions.md").write_text("The core plugins can be switched off one by one.\n")
    window.import_folder("obsidian", str(vault))
    settle(window, qtbot)
    opened(window, qtbot, _unit(mem, "Core plugins.md#Core plugins"))
    mentions = view.findChild(QLabel, "mentions")
    assert mentions is not None and "Unlinked mentions</b> (1)" in mentions.text()
    mentions.linkActivated.emit(f"node:{_unit(mem, 'Mentions.md#')}")
    settle(window, qtbot)
    assert view.node_id == _unit(mem, "Mentions.md#")
    assert view.findChild(QLabel, "conversation") is None                 # a note has no conversation


def test_a_notes_images_come_from_its_vault_and_nothing_outside_it_is_read(window, mem, qtbot, tmp_path):
    """Issue 25: an embedded image was a line naming the file. It is shown, read from the vault
    (by the note's folder, the vault's root or its name anywhere in the vault); a name that
    climbs out of the vault, a link pointing outside, a missing file or a web address shows
    the name only."""
    from PySide6.QtGui import QColor, QImage

    vault = tmp_path / "v"
    (vault / "assets").mkdir(parents=True)
    picture = QImage(1200, 300, QImage.Format_RGB32)
    picture.fill(QColor("#c03030"))
    assert picture.save(str(vault / "assets" / "Harbour map.png"))
    secret = tmp_path / "secret.png"
    assert picture.save(str(secret))
    (vault / "assets" / "outside.png").symlink_to(secret)
    (vault / "Harbour.md").write_text("# Harbour\nThe map: ![[Harbour map.png|300]]\n\n"
                                      "Also ![a map](assets/Harbour%20map.png) and ![[outside.png]],"
                                      " ![up](../secret.png), ![[Missing.png]], ![web](https://example.org/x.png).\n")
    window.import_folder("obsidian", str(vault))
    settle(window, qtbot)
    note = _unit(mem, "Harbour.md#Harbour")
    opened(window, qtbot, note)
    rendered = window.node_view.findChild(QTextBrowser, "rendered")
    assert sorted(rendered.images) == ["Harbour map.png", "assets/Harbour map.png"]      # nothing else read
    assert all(i.width() == 720 for i in rendered.images.values())                       # scaled on the worker
    html_ = rendered.toHtml()
    assert html_.count("<img") == 2 and "vault-image:" in html_
    text = rendered.toPlainText()
    assert "outside.png" in text and "Missing.png" in text and "https://example.org/x.png" in text
    assert mem.note_image(note, "../secret.png") is None and mem.note_image(note, "outside.png") is None
