"""`annotate` (offline): a title and proposed tags for nodes that have none from this generator.

Title: the first sentence, at most 80 characters. Tags: the top keyphrases by YAKE (offline,
statistical), as lowercase hyphenated slugs, arriving `proposed`. A tag a person rejected on a
node is never proposed again for it (`tags.assign` refuses to override a rejection).
"""
from __future__ import annotations

import re

from ..store import audit, derived, immediate, tags
from . import TaskContext, register

GENERATOR = "annotate/offline-v1"
_SENTENCE = re.compile(r"(?<=[.!?])\s|\n")
MAX_TAGS = 3


def title_for(text: str) -> str:
    first = _SENTENCE.split(text.strip(), maxsplit=1)[0].strip(" -*#>\t")
    if len(first) <= 80:
        return first
    cut = first[:79].rsplit(" ", 1)[0]
    return cut + "…"


def tag_slug(phrase: str) -> str | None:
    slug = re.sub(r"[^\w]+", "-", phrase.casefold()).strip("-")
    if len(slug) < 3 or slug.replace("-", "").isdigit():
        return None
    return slug[:40]


class AnnotateTask:
    name = "annotate"
    interval_s = 300
    batch_size = 200
    needs_llm = False

    def __init__(self):
        self._extractor = None

    def _keyphrases(self, text: str) -> list[tuple[str, float]]:
        if self._extractor is None:
            import yake

            self._extractor = yake.KeywordExtractor(lan="en", n=2, dedupLim=0.7, top=8)
        try:
            return [(p, float(s)) for p, s in self._extractor.extract_keywords(text)]
        except Exception:     # yake raises on odd inputs (e.g. only punctuation): no tags then
            return []

    def run(self, ctx: TaskContext) -> dict:
        todo = derived.nodes_missing(ctx.conn, "title", GENERATOR, ctx.batch or self.batch_size)
        proposed = 0
        done = 0
        for node in todo:
            if ctx.stopping():
                break
            done += 1
            title = title_for(node["content"])
            slugs = []
            for phrase, score in self._keyphrases(node["content"]):
                slug = tag_slug(phrase)
                if slug and slug not in slugs:
                    slugs.append((slug, max(0.0, min(1.0, 1.0 - score))))
                if len(slugs) >= MAX_TAGS:
                    break
            now = ctx.now()
            with immediate(ctx.conn):
                if ctx.conn.execute("SELECT status FROM nodes WHERE id=?", (node["id"],)).fetchone()[0] != "live":
                    continue
                derived.put(ctx.conn, node["id"], "title", title, GENERATOR, now)
                for slug, confidence in slugs:
                    if tags.assign(ctx.conn, node["id"], slug, status="proposed", source=GENERATOR, at=now,
                                   confidence=confidence):
                        proposed += 1
                audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="annotate", node_id=node["id"],
                             tags=[s for s, _ in slugs], generator=GENERATOR)
        return {"annotated": done, "tags_proposed": proposed}


register(AnnotateTask())
