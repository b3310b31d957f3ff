"""`annotate`: a title, proposed tags and dimensions for nodes that have none from this generator.

Offline: the title is the first sentence (at most 80 characters) and the tags are the top YAKE
keyphrases (statistical, no network) as lowercase hyphenated slugs. With an LLM: the
`strategies/annotate.md` prompt, its JSON validated (title, 1-4 tags, specificity, actuality,
kind); invalid output is skipped and the offline annotation stands in. Tags always arrive
`proposed`. A tag a person rejected on a node is never proposed again for it (`tags.assign`
refuses to override a rejection, and the prompt is told the recent rejections).
"""
from __future__ import annotations

import re

from ..store import audit, derived, immediate, tags
from . import TaskContext, register

GENERATOR = "annotate/offline-v1"
SCHEMA = {
    "title": {"type": "str", "required": True, "max": 120},
    "tags": {"type": "list", "required": True, "max": 4, "items": {"type": "str", "max": 40}},
    "specificity": {"type": "float", "min": 0.0, "max_value": 1.0},
    "actuality": {"type": "float", "min": 0.0, "max_value": 1.0},
    "kind": {"type": "str", "enum": ["fact", "decision", "preference", "lesson", "event", "note"]},
}
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


_KIND_RULES = [
    ("decision", re.compile(r"(?i)^\W*(?:decision|decided|we (?:chose|decided|agreed|will use))\b")),
    ("lesson", re.compile(r"(?i)^\W*(?:lesson|learned|takeaway|note to self|always|never)\b")),
    ("preference", re.compile(r"(?i)\b(?:i|we)\s+(?:prefer|like|love|hate|want|always|never)\b")),
    ("event", re.compile(r"(?i)\b(?:yesterday|today|tomorrow|meeting|happened|released|deployed|shipped)\b")),
]


def offline_dimensions(content: str) -> dict:
    """Cheap, explainable guesses: a kind from cue words and a specificity from concrete
    details (numbers, names, paths). Actuality needs judgement, so only an LLM sets it."""
    kind = next((k for k, rule in _KIND_RULES if rule.search(content)), "fact")
    details = len(re.findall(r"\d+|[A-Z][a-z]+[A-Z]\w*|/\w+|\w+\.\w{2,4}\b", content))
    words = max(1, len(content.split()))
    return {"kind": kind, "specificity": round(min(1.0, 0.2 + 0.8 * min(1.0, 4 * details / words)), 2)}


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

    def _offline(self, content: str) -> tuple[str, list[tuple[str, float]], dict]:
        return self._offline_title_tags(content) + (offline_dimensions(content),)

    def _offline_title_tags(self, content: str) -> tuple[str, list[tuple[str, float]]]:
        slugs: list[tuple[str, float]] = []
        for phrase, score in self._keyphrases(content):
            slug = tag_slug(phrase)
            if slug and slug not in [s for s, _ in slugs]:
                slugs.append((slug, max(0.0, min(1.0, 1.0 - score))))
            if len(slugs) >= MAX_TAGS:
                break
        return title_for(content), slugs

    def _with_llm(self, ctx: TaskContext, node: dict, strategy) -> tuple[str, list[tuple[str, float]], dict] | None:
        from ..llm import ask_json

        rejected = tags.recent_rejections(ctx.conn, node["id"], 20)
        data = ask_json(ctx.conn, ctx.llm, self.name, strategy, SCHEMA, ctx.now(), content=node["content"][:6000],
                        scope=node["scope"], rejected=", ".join(rejected) or "(none)")
        if data is None:
            return None
        slugs = [(s, 0.8) for s in dict.fromkeys(filter(None, (tag_slug(t) for t in data["tags"])))]
        dims = {k: data[k] for k in ("specificity", "actuality", "kind") if k in data}
        return " ".join(data["title"].split())[:120], slugs[:MAX_TAGS + 1], dims

    def run(self, ctx: TaskContext) -> dict:
        strategy = None
        generator = GENERATOR
        if ctx.llm is not None:
            from ..llm import load_strategy

            strategy = load_strategy("annotate", ctx.memory.settings.home)
            generator = f"annotate/{ctx.llm.name}/annotate@{strategy.version}"
        # a title refreshed by reconsolidation counts as current: the two passes must not take turns
        todo = derived.nodes_missing(ctx.conn, "title", (generator, "reconsolidate/offline-v1"),
                                     ctx.batch or self.batch_size)
        proposed = done = fallbacks = 0
        for node in todo:
            if ctx.stopping():
                break
            done += 1
            made = self._with_llm(ctx, node, strategy) if strategy is not None else None
            source = generator
            if made is None:
                made = self._offline(node["content"])
                fallbacks += strategy is not None
                source = GENERATOR if strategy is None else generator + "+offline-fallback"
            title, slugs, dims = made
            now = ctx.now()
            with immediate(ctx.conn):
                if ctx.conn.execute("SELECT status FROM nodes WHERE id=?", (node["id"],)).fetchone()[0] != "live":
                    continue
                # the row records the generator it was asked for, so the node is not picked again
                derived.put(ctx.conn, node["id"], "title", title, generator, now)
                for key, value in dims.items():
                    derived.put(ctx.conn, node["id"], key, str(value), source, now)
                for slug, confidence in slugs:
                    if tags.assign(ctx.conn, node["id"], slug, status="proposed", source=source, at=now,
                                   confidence=confidence):
                        proposed += 1
                audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="annotate", node_id=node["id"],
                             tags=[s for s, _ in slugs], generator=source)
        return {"annotated": done, "tags_proposed": proposed, "llm_fallbacks": fallbacks}


register(AnnotateTask())
