"""Colours taken from the system palette, so every view stays legible in light and dark mode.

Widgets style themselves with palette roles (`palette(alternate-base)` in a style sheet).
Rich text cannot name a role, so it gets colours computed here from the palette in use when it
is drawn: a mark is the palette's own selection colours, a muted note is halfway between text
and background, and the two diff colours are chosen for the background's lightness.
"""
from __future__ import annotations

import zlib

from PySide6.QtGui import QColor, QGuiApplication, QPalette

# categorical colours that read on a light and on a dark background alike (Tableau 10's, whose
# lightness sits in the middle); labels are drawn in the palette's text colour, never on them
CATEGORICAL = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
               "#9c755f", "#bab0ac")

# style sheets with palette roles only (resolved by Qt from the palette in use)
DERIVED_BOX = ("background: palette(alternate-base); color: palette(text); border-left: 3px solid palette(highlight);"
               " padding: 6px;")
CHIP = {
    "confirmed": "background: palette(highlight); color: palette(highlighted-text); border-radius: 9px; padding: 2px 8px;",
    "proposed": "background: palette(alternate-base); color: palette(text); border: 1px dashed palette(text);"
                " border-radius: 9px; padding: 2px 8px;",
    "rejected_by_user": "background: palette(base); color: palette(text); text-decoration: line-through;"
                        " border: 1px solid palette(mid); border-radius: 9px; padding: 2px 8px;",
}


def palette() -> QPalette:
    return QGuiApplication.palette()


def is_dark(pal: QPalette | None = None) -> bool:
    return (pal or palette()).color(QPalette.Window).lightness() < 128


def _mix(a: QColor, b: QColor, t: float) -> str:
    return QColor(round(a.red() * (1 - t) + b.red() * t), round(a.green() * (1 - t) + b.green() * t),
                  round(a.blue() * (1 - t) + b.blue() * t)).name()


def colour(role: str) -> str:
    """A colour for rich text, as #rrggbb, from the palette in use now."""
    pal = palette()
    dark = is_dark(pal)
    if role == "muted":
        return _mix(pal.color(QPalette.Text), pal.color(QPalette.Base), 0.4)
    if role == "removed":
        return "#ff8a80" if dark else "#b00020"
    if role == "added":
        return "#7ee787" if dark else "#116329"
    if role == "mark_bg":
        return pal.color(QPalette.Highlight).name()
    if role == "mark_fg":
        return pal.color(QPalette.HighlightedText).name()
    if role == "text":
        return pal.color(QPalette.Text).name()
    if role == "base":
        return pal.color(QPalette.Base).name()
    if role == "link":
        return pal.color(QPalette.Link).name()
    raise KeyError(role)


def mark(text_html: str) -> str:
    """Words set off with the palette's selection colours (matched words, differing values)."""
    return (f"<span style='background-color:{colour('mark_bg')}; color:{colour('mark_fg')}; font-weight:600'>"
            f"{text_html}</span>")       # (bold too: on a selected row the selection's colours hide the mark)


def muted(text_html: str) -> str:
    return f"<span style='color:{colour('muted')}'>{text_html}</span>"


def category(name: str) -> QColor:
    """A stable colour for a scope or a tag name."""
    return QColor(CATEGORICAL[zlib.crc32(name.encode()) % len(CATEGORICAL)])


def contrast(a: QColor, b: QColor) -> float:
    """WCAG contrast ratio of two colours (1 to 21): the legibility tests use it."""
    def lum(c: QColor) -> float:
        def ch(v: float) -> float:
            v /= 255
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * ch(c.red()) + 0.7152 * ch(c.green()) + 0.0722 * ch(c.blue())
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
