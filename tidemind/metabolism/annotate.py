"""`annotate`: a title, proposed tags and dimensions for nodes that have none from this generator.

Offline: the title is the first sentence (at most 80 characters) and the tags come from the
scope's vocabulary (`vocabulary`): names and noun phrases that recur in the scope, reused across
its memories, with a confidence; names a person confirmed in the scope come first. A node's
tags are redone when its scope has doubled since they were chosen (the first memories of a new
scope have no vocabulary to draw from yet); each redo replaces only the offline tagger's own
earlier proposals. With an LLM: the `strategies/annotate.md` prompt, its JSON validated (title,
1-4 tags, specificity, actuality, kind); invalid output is skipped and the offline annotation
stands in. Tags always arrive `proposed` with the generator that made them. A tag a person
rejected on a node, or rejected for the whole scope, is never proposed again (`tags.assign`
refuses it; the offline vocabulary never offers it; the prompt is told the rejections).
"""
from __future__ import annotations

import re
from collections import Counter

from .. import substance
from ..search import names
from ..store import audit, derived, fts, immediate, nodes, tags
from . import TaskContext, register, vocabulary

GENERATOR = "annotate/offline-v2"
# the offline taggers' labels, past and present: a fresh offline pass replaces their proposals
# (v1 proposed YAKE keyphrases, which are not carried over as the node's vocabulary tags)
OFFLINE_TAG_SOURCES = ("annotate/offline-v1", GENERATOR, "reconsolidate", "reconsolidate/offline-v2")
VOCABULARY_FIELD = derived.VOCABULARY_SIZE
FALLBACK = "+offline-fallback"          # appended to the model's generator on what the offline code wrote for it
REGROW = 2                              # retag once the scope is this many times larger
REJECTED_IN_SCOPE = 2                   # a name a person rejected on this many memories is not offered there
SCHEMA = {
    "title": {"type": "str", "required": True, "max": 120},
    "tags": {"type": "list", "required": True, "max": 4, "items": {"type": "str", "max": 40}},
    "specificity": {"type": "float", "min": 0.0, "max_value": 1.0},
    "actuality": {"type": "float", "min": 0.0, "max_value": 1.0},
    "kind": {"type": "str", "enum": ["fact", "decision", "preference", "lesson", "event", "note"]},
}
MAX_TAGS = vocabulary.MAX_TAGS


def title_for(text: str) -> str:
    """The first sentence, at most 80 characters (a title, not a cut at "Dr.")."""
    from .extract import sentences

    first = next(iter(sentences(text)), "").strip(" -*#>\t")
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


class ScopeTagging:
    """One scope's offline tagging for one run: its vocabulary, and what people decided there."""

    def __init__(self, conn, scope: str):
        self.conn, self.scope = conn, scope
        self.stats = vocabulary.for_scope(conn, scope)
        self._lifts: dict[str, float] = {}
        # the store-wide figures are summed over the scopes by name: fts_terms is keyed (scope, term),
        # and asking for a term in every scope at once scans the table (6 ms a memory at 10k, not 0.1)
        self._everywhere = nodes.scopes_in_use(conn)
        inside, _ = fts.scope_sizes(conn, [scope])
        everywhere, _ = fts.scope_sizes(conn, self._everywhere)
        self._background = (inside, everywhere) if everywhere - inside >= vocabulary.BACKGROUND_FROM else None
        self.names: dict[str, str] = {}          # key -> the name the scope already uses for it
        self.confirmed: set[str] = set()
        self.exclude: set[str] = set()
        rejected: Counter[str] = Counter()
        # confirmed names first, then the most used proposal: a key keeps one spelling in a scope
        order = {"confirmed": 0, "proposed": 1, "rejected_by_user": 2}
        for r in sorted(tags.scope_names(conn, scope), key=lambda r: (order[r["status"]], -r["count"], r["name"])):
            key = vocabulary.key_of(r["name"])
            if r["status"] == "confirmed":
                self.confirmed.add(key)
            elif r["status"] == "rejected_by_user":
                rejected[key] += r["count"]
                continue
            self.names.setdefault(key, r["name"])
        self.exclude = {k for k, n in rejected.items() if n >= REJECTED_IN_SCOPE and k not in self.confirmed}
        self.exclude |= {vocabulary.key_of(t["name"]) for t in tags.tombstones(conn, [scope])}
        self.speakers = names.speaker_words(conn, [scope])

    def lift(self, words: list[str]) -> dict[str, float]:
        """A word's share of the scope's memories over its share of the store's (FTS5's per-scope
        document frequencies of its stem; remembered for the run)."""
        todo = [w for w in words if w not in self._lifts]
        if todo and self._background:
            inside, everywhere = self._background
            here, _ = fts.document_frequencies(self.conn, todo, [self.scope])
            overall, _ = fts.document_frequencies(self.conn, todo, self._everywhere)
            for w in todo:
                self._lifts[w] = (here[w] / inside) / (overall[w] / everywhere) if here[w] and overall[w] else 0.0
        return {w: self._lifts.get(w, vocabulary.MIN_LIFT) for w in words}

    def propose(self, content: str, node_tags: list[dict]) -> list[tuple[str, float]]:
        """(name, confidence) for one memory: never a name it already has confirmed, a person
        rejected on it, or one rejected for the scope."""
        if not substance.carries_content(content, self.speakers, kept=True):
            return []                 # a greeting, an empty page, an image: nothing to file under a topic
        own = {vocabulary.key_of(t["name"]) for t in node_tags if t["status"] in ("confirmed", "rejected_by_user")}
        out = []
        for key, surface, confidence in self.stats.propose(vocabulary.extract(substance.spoken(content)),
                                                           exclude=self.exclude | own,
                                                           confirmed=self.confirmed,
                                                           lift=self.lift if self._background else None):
            name = self.names.get(key) or tag_slug(surface)
            if name and (key in self.confirmed or substance.says_a_topic(name)):
                self.names.setdefault(key, name)
                out.append((name, confidence))
        return out


def put_offline_tags(conn, node_id: int, slugs: list[tuple[str, float]], source: str, at: str) -> tuple[int, list[str]]:
    """Inside the caller's transaction: the offline tagger's earlier proposals that are not in
    `slugs` are withdrawn, then `slugs` proposed (a rejected or tombstoned name is refused by
    `tags.assign`). Returns how many were written and the names withdrawn."""
    withdrawn = tags.withdraw_proposals(conn, node_id, OFFLINE_TAG_SOURCES, [s for s, _ in slugs])
    written = sum(bool(tags.assign(conn, node_id, slug, status="proposed", source=source, at=at, confidence=conf))
                  for slug, conf in slugs)
    return written, withdrawn


class AnnotateTask:
    name = "annotate"
    interval_s = 300
    batch_size = 200
    needs_llm = False

    def _scope(self, ctx: TaskContext, cache: dict, scope: str) -> ScopeTagging:
        if scope not in cache:
            cache[scope] = ScopeTagging(ctx.conn, scope)
        return cache[scope]

    def _with_llm(self, ctx: TaskContext, node: dict, strategy) -> tuple[str, list[tuple[str, float]], dict] | None:
        from ..llm import ask_json

        # the scope's "never this tag here" names first: assign would refuse them anyway, and a
        # model told about them spends its few tags on something else
        everywhere = [t["name"] for t in tags.tombstones(ctx.conn, [node["scope"]])]
        rejected = list(dict.fromkeys(everywhere + tags.recent_rejections(ctx.conn, node["id"], 20)))[:40]
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
        budget = ctx.batch or self.batch_size
        # a title refreshed by reconsolidation counts as current: the two passes must not take turns
        # and so does the offline stand-in written while this model did not answer (`tidemind rederive` redoes it)
        todo = derived.nodes_missing(ctx.conn, "title", (generator, generator + FALLBACK, "reconsolidate/offline-v1"),
                                     budget)
        existing = tags.for_nodes(ctx.conn, [n["id"] for n in todo])
        scopes: dict[str, ScopeTagging] = {}
        proposed = done = fallbacks = retagged = 0
        for node in todo:
            if ctx.stopping():
                break
            done += 1
            made = self._with_llm(ctx, node, strategy) if strategy is not None else None
            source = generator
            offline = made is None
            if offline:
                fallbacks += strategy is not None
                source = GENERATOR if strategy is None else generator + FALLBACK
                made = (title_for(node["content"]),
                        self._scope(ctx, scopes, node["scope"]).propose(node["content"], existing[node["id"]]),
                        offline_dimensions(node["content"]))
            title, slugs, dims = made
            now = ctx.now()
            with immediate(ctx.conn):
                if ctx.conn.execute("SELECT status FROM nodes WHERE id=?", (node["id"],)).fetchone()[0] != "live":
                    continue
                # labelled with what really wrote it: the model, or the offline stand-in for it
                derived.put(ctx.conn, node["id"], "title", title, source, now)
                for key, value in dims.items():
                    derived.put(ctx.conn, node["id"], key, str(value), source, now)
                withdrawn: list[str] = []
                if offline:
                    written, withdrawn = put_offline_tags(ctx.conn, node["id"], slugs, source, now)
                    proposed += written
                    if strategy is None:
                        derived.put(ctx.conn, node["id"], VOCABULARY_FIELD,
                                    str(scopes[node["scope"]].stats.docs), GENERATOR, now)
                else:
                    proposed += sum(bool(tags.assign(ctx.conn, node["id"], slug, status="proposed", source=source,
                                                     at=now, confidence=confidence)) for slug, confidence in slugs)
                audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="annotate", node_id=node["id"],
                             tags=[s for s, _ in slugs], generator=source,
                             **({"withdrawn": withdrawn} if withdrawn else {}))
        if strategy is None and done < budget and not ctx.stopping():
            retagged, more = self._retag(ctx, scopes, budget - done)
            proposed += more
        return {"annotated": done, "tags_proposed": proposed, "llm_fallbacks": fallbacks, "retagged": retagged,
                "backlog": len(todo) >= budget and done == len(todo)}

    def _retag(self, ctx: TaskContext, scopes: dict, limit: int) -> tuple[int, int]:
        """Nodes tagged when their scope was half its size or less get their tags chosen again
        from today's vocabulary (each node once per doubling of its scope)."""
        todo = derived.outgrown(ctx.conn, VOCABULARY_FIELD, GENERATOR, REGROW, limit)
        existing = tags.for_nodes(ctx.conn, [n["id"] for n in todo])
        done = proposed = 0
        for node in todo:
            if ctx.stopping():
                break
            scope = self._scope(ctx, scopes, node["scope"])
            slugs = scope.propose(node["content"], existing[node["id"]])
            now = ctx.now()
            with immediate(ctx.conn):
                if ctx.conn.execute("SELECT status FROM nodes WHERE id=?", (node["id"],)).fetchone()[0] != "live":
                    continue
                written, withdrawn = put_offline_tags(ctx.conn, node["id"], slugs, GENERATOR, now)
                derived.put(ctx.conn, node["id"], VOCABULARY_FIELD, str(scope.stats.docs), GENERATOR, now)
                audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action="retag", node_id=node["id"],
                             tags=[s for s, _ in slugs], generator=GENERATOR, vocabulary=scope.stats.docs,
                             **({"withdrawn": withdrawn} if withdrawn else {}))
            done += 1
            proposed += written
        return done, proposed


register(AnnotateTask())
