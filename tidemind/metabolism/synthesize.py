"""Syntheses (derived text citing member ids, regenerable, served as `unreviewed` until a person
approves them):

- `crystallize`: a connected cluster of confirmed links (3-12 visible nodes in one scope) becomes
  a crystal: its most central sentences, each citing its memory, titled by the names its members
  share; and a `crystal` review item;
- `temporal`: a digest of each complete day and each complete ISO week of a scope, keyed on
  *valid* time (a backdated memory lands in its own day's digest), made the same way;
- `lessons`: a chain of corrections about one subject becomes one affirmative rule ("Use X"),
  citing the current version and naming the replaced ones by id (their words are served only to
  an as-of read, so the rule never quotes them); a tool failure the stop hook saw repeat becomes
  "Do X instead" when what worked after it is known. Each is a `lesson` review item;
  `brain_prepare` shows approved lessons, and unreviewed ones labelled as such.

Offline, the extractive summaries of `extract.py` write them. With a model, the strategies
`crystallize.md`, `temporal.md` and `lessons.md` do, and their answers are checked like
annotate's (a JSON schema) and more: every sentence cites members it was shown, and its numbers
and names are found in the memories it cites, so an answer can neither invent a fact nor quote a
memory it was not shown (only visible members are shown: live, in the scope, not held for a
question). An answer that fails is recorded as invalid and the offline synthesis stands in,
labelled with the offline generator that wrote it: `tidemind rederive` redoes it with the model.
When the model cannot be reached the task stops and the scheduler waits for it.

Each synthesis belongs to a subject (see store/syntheses.py) and is recomputed when its members
change; a member corrected, archived or forgotten withdraws it at once (Memory does that in the
same transaction).
"""
from __future__ import annotations

import difflib
import json
import re

from ..periods import week_of
from ..store import audit, fts, immediate, nodes, review, syntheses
from ..search import names
from .. import substance
from ..text import STOPWORDS, content_words
from . import TaskContext, clusters, extract, register, relate

OFFLINE = "offline-v2"
# generators whose texts are templates ("3 connected memories: [1] ..."; "Use: <text>"): a pass
# recomputes their subjects on sight, as it would a subject whose members changed
RETIRED = frozenset({"synthesize/offline-v1"})
MODEL_MEMBERS = 40          # memories shown to a model for one synthesis (the most central ones)
MODEL_CHARS = 600           # of each

_CITES = re.compile(r"\s*((?:\[\d+\]\s*[,;]?\s*)+)[.!?]?\s*$")
_CITE = re.compile(r"\[(\d+)\]")
_SPECIFIC = re.compile(r"\d|[a-z][A-Z]|_|^[A-Z]{2,}$")

SENTENCES_SCHEMA = {
    "title": {"type": "str", "required": True, "max": 80},
    "sentences": {"type": "list", "required": True, "max": 8, "items": {"type": "str", "max": 320}},
}
RULE_SCHEMA = {"rule": {"type": "str", "required": True, "max": 240}}
_NEGATIVE_START = re.compile(r"(?i)^\W*(?:don'?t|do not|never|avoid|stop|no)\b")


# -- checking a model's answer ------------------------------------------------------------------
def _specific(words: list[str]) -> set[str]:
    """Numbers, identifiers and names (a capital past the first word): the words an answer must
    not make up, and the ones a quote of a memory it was not shown would carry."""
    return {w.casefold() for i, w in enumerate(words) if _SPECIFIC.search(w) or (i > 0 and w[:1].isupper())}


def _raw_words(text: str) -> list[str]:
    return re.findall(r"[\w][\w.:/-]*\w|\w", text)


def grounded(sentence: str, sources: list[str]) -> str | None:
    """None when the sentence says only what its sources say: each number, identifier or name in
    it is in them, and most of its other words are. Else why not."""
    source_words = {w.casefold() for t in sources for w in _raw_words(t)}
    source_content = {w for t in sources for w in content_words(t)}
    missing = sorted(_specific(_raw_words(sentence)) - source_words)
    if missing:
        return f"names or numbers not in the memories it cites: {', '.join(missing[:5])}"
    words = content_words(sentence)
    if words and sum(w in source_content for w in words) / len(words) < 0.5:
        return "most of its words are not in the memories it cites"
    return None


def split_cites(sentence: str) -> tuple[str, list[int]]:
    """("the sentence", [cited ids]) for a sentence that ends with [12] or [12][15] citations."""
    m = _CITES.search(sentence)
    if not m:
        return sentence.strip(), []
    return sentence[: m.start()].strip(), [int(i) for i in _CITE.findall(m.group(1))]


def check_sentences(texts: dict[int, str]):
    """The check for a {title, sentences} answer about the memories `texts` (id -> text)."""
    def check(data: dict) -> str | None:
        if not data["sentences"]:
            return "no sentences"
        for raw in data["sentences"]:
            body, cites = split_cites(raw)
            if not cites:
                return f"a sentence cites no memory: {body[:60]!r}"
            strangers = [c for c in cites if c not in texts]
            if strangers:
                return f"cites memories it was not shown: {strangers[:5]}"
            reason = grounded(body, [texts[c] for c in cites])
            if reason:
                return reason
        return grounded(data["title"], list(texts.values()))
    return check


def _render(pairs: list[tuple[int, str]]) -> str:
    return "\n".join(f"- {sentence} [{nid}]" for nid, sentence in pairs)


def _model_sentences(data: dict) -> list[tuple[list[int], str]]:
    out = []
    for raw in data["sentences"]:
        body, cites = split_cites(raw)
        out.append((cites, extract.clip(" ".join(body.split()), 320)))
    return out


def _render_model(pairs: list[tuple[list[int], str]]) -> str:
    return "\n".join(f"- {body} {''.join(f'[{c}]' for c in cites)}" for cites, body in pairs)


# -- the shared writer --------------------------------------------------------------------------
class _Synthesis:
    """What the three tasks share: choosing the generator, asking the model, writing a subject."""

    name = ""
    strategy_name = ""

    def generator(self, ctx: TaskContext):
        """(strategy, generator) for this run: the model's when one is configured."""
        if ctx.llm is None:
            return None, f"{self.name}/{OFFLINE}"
        from ..llm import load_strategy

        strategy = load_strategy(self.strategy_name, ctx.memory.settings.home)
        return strategy, f"{self.name}/{ctx.llm.name}/{strategy.name}@{strategy.version}"

    def ask(self, ctx: TaskContext, strategy, schema: dict, check, **values) -> dict | None:
        """The model's checked answer, or None (recorded as invalid); raises when it is unreachable."""
        from ..llm import ask_json

        return ask_json(ctx.conn, ctx.llm, self.name, strategy, schema, ctx.now(), check=check, **values)

    def begin(self) -> None:
        """A pass reads each memory and each scope's word frequencies once (see extract.Reading)."""
        self.reading = extract.Reading()
        self.frequencies: dict[str, dict[str, int]] = {}

    def idf(self, ctx: TaskContext, scope: str, members: list[tuple[int, str]]) -> dict[str, float]:
        return extract.idf_lookup(lambda words: fts.document_frequencies(ctx.conn, words, [scope]), members,
                                  self.reading, self.frequencies.setdefault(scope, {}))

    def write(self, ctx: TaskContext, *, subject: str, kind: str, scope: str, members: list[int], title: str,
              text: str, generator: str, history: list[int] = (), period: str | None = None,
              review_kind: str | None = None, node_id: int | None = None, basis: str = "") -> int | None:
        """Make it the subject's current synthesis (one transaction; the members are checked again
        in it: an archive, a forget or a question that landed meanwhile wins). Returns its id when
        anything changed."""
        now = ctx.now()
        with immediate(ctx.conn):
            if members and len(nodes.get_visible(ctx.conn, members, [scope])) != len(set(members)):
                return None
            sid, replaced = syntheses.put(ctx.conn, subject=subject, kind=kind, scope=scope, members=members,
                                          history=history, title=title, text=text, generator=generator, at=now,
                                          period=period, basis=basis)
            if sid is None:
                return None
            if review_kind:
                self._review(ctx, review_kind, sid, replaced, scope, members, node_id, now)
            audit.record(ctx.conn, at=now, actor=f"daemon:{self.name}", action=f"{kind}_synthesised",
                         node_id=node_id, synthesis=sid, replaced=replaced, members=members, generator=generator,
                         **({"period": period} if period else {}))
        return sid

    @staticmethod
    def _review(ctx, kind, sid, replaced, scope, members, node_id, now) -> None:
        """One open item per subject: the item asking about the synthesis this one replaced now asks
        about this one; a revived synthesis keeps the decision it had and needs none."""
        if syntheses.get(ctx.conn, sid)["status"] != "unreviewed" or review.open_for_synthesis(ctx.conn, sid):
            return
        item = review.open_for_synthesis(ctx.conn, replaced) if replaced else None
        if item is not None:
            review.set_payload_key(ctx.conn, item, "synthesis", sid)
            review.set_payload_key(ctx.conn, item, "members", members)
            return
        review.file(ctx.conn, kind, node_id=node_id, other_node_id=None, at=now, scope=scope,
                    digest=syntheses.get(ctx.conn, sid)["digest"], synthesis=sid, members=members)

    @staticmethod
    def up_to_date(ctx: TaskContext, row: dict | None, members: list[int], history: list[int] = ()) -> bool:
        """The subject stands at these members (a person's rejection also stands: never re-proposed
        because a pass looked again), and rederive did not ask for it again."""
        if row is None:
            return False
        if row["status"] == "rejected":
            return True
        return row["members"] == sorted(members) and row["history"] == sorted(history) \
            and row["generator"] not in RETIRED and row["id"] not in ctx.redo

    def summarise(self, ctx, strategy, generator, scope, members, texts, k, in_time_order, fallback_title,
                  **prompt) -> tuple[str, str, str]:
        """(title, text, generator that really wrote it) for a group of visible memories."""
        pairs = [(i, texts[i]) for i in members]
        idf = self.idf(ctx, scope, pairs)
        chosen = extract.central(pairs, idf, k, in_time_order=in_time_order, reading=self.reading)
        title = extract.title(extract.shared_names(pairs, idf, reading=self.reading), fallback_title)
        if strategy is not None:
            shown = members
            if len(members) > MODEL_MEMBERS:     # the most central memory of each, up to the bound
                ranked = extract.central(pairs, idf, MODEL_MEMBERS, reading=self.reading)
                shown = sorted({i for i, _ in ranked})
            listing = "\n".join(f"[{i}] {extract.clip(' '.join(texts[i].split()), MODEL_CHARS)}" for i in shown)
            data = self.ask(ctx, strategy, SENTENCES_SCHEMA, check_sentences({i: texts[i] for i in shown}),
                            scope=scope, memories=listing, count=len(members), shown=len(shown), **prompt)
            if data is not None:
                return " ".join(data["title"].split()), _render_model(_model_sentences(data)), generator
        return title, _render(chosen), f"{self.name}/{OFFLINE}"


# -- crystals -----------------------------------------------------------------------------------
def _lineages_in(subject: str) -> set[int]:
    """The lineage ids a crystal's subject names ("crystal:<scope>:[1, 2, 3]")."""
    try:
        return set(json.loads(subject.rsplit(":", 1)[1]))
    except (ValueError, IndexError):
        return set()


class CrystallizeTask(_Synthesis):
    name = "crystallize"
    strategy_name = "crystallize"
    interval_s = 3600
    batch_size = 50
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        self.begin()
        edges: dict[str, list[tuple[int, int, float]]] = {}
        for a, b, strength, scope_a, scope_b in nodes.confirmed_edges_live(ctx.conn):
            if scope_a == scope_b:
                edges.setdefault(scope_a, []).append((a, b, strength))
        # one event or topic a crystal: a community of the links whose members share rare words
        # (`clusters`); a crystal speaks for memories that carry content, a greeting is left out
        found_groups = []
        for scope in sorted(edges):
            related = relate.Relatedness(ctx.conn, scope, ctx.memory.embedder)
            related.rows(sorted({n for a, b, _ in edges[scope] for n in (a, b)}))     # one read
            # (links weigh by their strength alone: on conversations-dev, weighing down links whose
            # ends share no rare word made crystals less pure, 0.73 -> 0.64: neighbouring turns are
            # one event more often than turns that share a word)
            for group in clusters.groups(edges[scope]):
                kept = clusters.tighten(_with_content(ctx.conn, group, scope), related.local_words)
                if kept:
                    found_groups.append((scope, kept))
        standing = {s["subject"]: s for s in syntheses.current_of_kind(ctx.conn, "crystal")}
        strategy, generator = self.generator(ctx)
        made = grown = 0
        for scope, members in found_groups:
            if ctx.stopping() or made >= (ctx.batch or self.batch_size):
                break
            lineages = nodes.lineages(ctx.conn, members)
            subject = f"crystal:{scope}:{lineages}"
            if self.up_to_date(ctx, standing.get(subject), members):
                continue
            found = nodes.get_visible(ctx.conn, members, [scope])
            if len(found) != len(members):
                continue
            texts = {i: found[i]["content"] for i in members}
            title, text, wrote = self.summarise(ctx, strategy, generator, scope, members, texts, k=5,
                                                in_time_order=False, fallback_title=f"{len(members)} linked memories")
            self.reading.forget()            # a memory is in one cluster: nothing read here is read again
            if not _CITE.search(text):
                continue                     # nothing said that a summary can quote: headings, markup, chatter
            sid = self.write(ctx, subject=subject, kind="crystal", scope=scope, members=members, title=title,
                             text=text, generator=wrote, review_kind="crystal", node_id=members[0])
            if sid is None:
                continue
            made += 1
            # a smaller cluster that grew into this one: its crystal says less, this one replaces it
            for other in standing.values():
                if other["subject"] != subject and other["scope"] == scope and other["status"] != "rejected" \
                        and _lineages_in(other["subject"]) < set(lineages):
                    with immediate(ctx.conn):
                        syntheses.withdraw(ctx.conn, other["id"], "its cluster grew", ctx.now(), replaced_by=sid)
                        item = review.open_for_synthesis(ctx.conn, other["id"])
                        if item is not None:
                            review.set_payload_key(ctx.conn, item, "superseded_by_synthesis", sid)
                    grown += 1
        backlog = made >= (ctx.batch or self.batch_size) or ctx.stopping()
        dissolved = 0 if backlog else self._withdraw_dissolved(ctx, standing, found_groups)
        return {"crystals": made, "grown": grown, "dissolved": dissolved, "backlog": backlog}

    @staticmethod
    def _withdraw_dissolved(ctx: TaskContext, standing: dict, found_groups: list) -> int:
        """An unreviewed crystal whose group is no longer one (its links or members changed) is
        withdrawn: it would speak for memories the graph no longer holds together (its review item
        waits out of the queue, as for any withdrawn synthesis). One a person approved or rejected
        stays as they left it."""
        current = {f"crystal:{scope}:{nodes.lineages(ctx.conn, members)}" for scope, members in found_groups}
        gone = 0
        for subject, row in standing.items():
            if subject in current or row["status"] != "unreviewed":
                continue
            with immediate(ctx.conn):        # (unreviewed still, in the statement: a person's decision since wins;
                                             # one a grown group replaced in this run is withdrawn already)
                gone += syntheses.withdraw_unreviewed(ctx.conn, row["id"], "its group came apart", ctx.now())
        return gone


# -- daily and weekly digests -------------------------------------------------------------------
class TemporalTask(_Synthesis):
    name = "temporal"
    strategy_name = "temporal"
    interval_s = 3600
    batch_size = 200
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        self.begin()
        now = ctx.now()
        today, this_week = now[:10], week_of(now[:10])
        strategy, generator = self.generator(ctx)
        made = withdrawn = 0
        limit = ctx.batch or self.batch_size
        for scope in nodes.scopes_in_use(ctx.conn):
            days = nodes.ids_by_valid_day(ctx.conn, scope)
            # a period with a unit awaiting clarification waits for the answer
            waiting = nodes.valid_days_with_held(ctx.conn, scope)
            waiting_weeks = {week_of(d) for d in waiting}
            standing = {s["subject"]: s for kind in ("daily", "weekly")
                        for s in syntheses.current_of_kind(ctx.conn, kind, scope)}
            weeks: dict[str, list[int]] = {}
            # a day is digested from its memories that carry content, and a day with none gets no digest
            with_content = set(_with_content(ctx.conn, [i for ids in days.values() for i in ids], scope))
            days = {day: kept for day, ids in days.items() if (kept := [i for i in ids if i in with_content])}
            for day, ids in days.items():
                weeks.setdefault(week_of(day), []).extend(ids)
            todo = []           # week by week, its days then itself: what is read for one is reused
            for week in sorted(weeks):
                todo += [("daily", day, days[day]) for day in sorted(d for d in days if week_of(d) == week)
                         if day < today and day not in waiting]
                if week < this_week and week not in waiting_weeks:
                    todo.append(("weekly", week, sorted(weeks[week])))
            wanted = {f"{kind}:{scope}:{period}" for kind, period, _ in todo}
            for kind, period, ids in todo:
                if ctx.stopping() or made >= limit:
                    break
                subject = f"{kind}:{scope}:{period}"
                if self.up_to_date(ctx, standing.get(subject), ids):
                    continue
                made += self._digest(ctx, strategy, generator, kind, scope, period, ids, subject)
                if kind == "weekly":
                    self.reading.forget()
            # a past period whose memories all went (archived, corrected into another day) keeps no digest
            for subject, row in standing.items():
                period = row["period"] or ""
                complete = period < (today if row["kind"] == "daily" else this_week)
                if subject not in wanted and complete and period not in waiting and period not in waiting_weeks:
                    with immediate(ctx.conn):
                        syntheses.withdraw(ctx.conn, row["id"], "no memories left in the period", ctx.now())
                    withdrawn += 1
        return {"digests": made, "withdrawn": withdrawn, "backlog": made >= limit}

    def _digest(self, ctx, strategy, generator, kind, scope, period, ids, subject) -> int:
        found = nodes.get_visible(ctx.conn, ids, [scope])
        ids = [i for i in ids if i in found]
        if not ids:
            return 0
        texts = {i: found[i]["content"] for i in ids}
        k = 5 if kind == "daily" else 7
        when = period if kind == "daily" else f"the week {period}"
        title, text, wrote = self.summarise(ctx, strategy, generator, scope, ids, texts, k=k, in_time_order=True,
                                            fallback_title=when, period=when)
        shown = len({int(c) for c in _CITE.findall(text)})
        if not shown:
            return 0                 # nothing said that a summary can quote: headings, markup, chatter
        if len(ids) > shown:
            text += f"\n({len(ids)} memories in all; {len(ids) - shown} more not quoted here)"
        return 1 if self.write(ctx, subject=subject, kind=kind, scope=scope, members=ids, title=title, text=text,
                               generator=wrote, period=period) else 0


# -- lessons ------------------------------------------------------------------------------------
_IMPERATIVE = frozenset("""use run deploy set keep call put prefer write add remove ship test merge release restart
start check pin build install upgrade pass open close commit push pull rebase review ask store send read""".split())


def affirmative_rule(first: str, latest: str) -> str:
    """"Use X": what the latest version says that the first one did not, then the latest
    version itself (the replaced words are never quoted)."""
    old = _raw_words(first)
    new_tokens = latest.split()
    new = [t.strip(".,;:!?\"'()") for t in new_tokens]
    matcher = difflib.SequenceMatcher(a=[w.casefold() for w in old], b=[w.casefold() for w in new], autojunk=False)
    spans = [(j1, j2) for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("replace", "insert")]
    head = " ".join(extract.sentences(latest)[:1]) or latest.strip()
    head = extract.clip(head, 180)
    if not spans:
        return f"Use this: {head}"
    j1, j2 = max(spans, key=lambda s: (sum(1 for w in new[s[0]:s[1]] if w and w.casefold() not in ("not",)),
                                        -s[0]))
    if j2 - j1 == 1 and any(c.isdigit() for c in new[j1]):
        # a bare number says little: take its unit ("300 seconds") or, at the end, its noun ("port 8080")
        if j2 < len(new) and new[j2] and new[j2].casefold() not in STOPWORDS:
            j2 += 1
        elif j1 > 0 and new[j1 - 1] and new[j1 - 1].casefold() not in STOPWORDS:
            j1 -= 1
    changed = " ".join(t for t in new_tokens[j1:j2]).strip(" ,;:")
    changed = changed.rstrip(".!?")
    if not changed:
        return f"Use this: {head}"
    first_word = changed.split()[0].casefold()
    rule = changed[0].upper() + changed[1:] if first_word in _IMPERATIVE else f"Use {changed}"
    return f"{extract.clip(rule, 60)} — {head}"


_SUGGESTION = re.compile(r"(?i)\b(?:did you mean|use|try|run|perhaps you meant|instead,? use)\s*:?\s*[`'\"]([^`'\"\n]{2,80})[`'\"]")


def failure_rule(said: str, times: int, command: str | None, instead: str | None) -> str:
    """"Do X instead" from what worked after the failure (the stop hook saw it), or from the
    error's own suggestion; without either, what to do before trying again. The error is
    evidence, not the lesson: it is named (clipped) only when nothing else says which failure
    this is (a proposal filed before the hook recorded commands)."""
    fix = instead or (m.group(1).strip() if (m := _SUGGESTION.search(said)) else None)
    seen = f"(it failed {times} times in sessions)"
    if fix and command:
        return f"Run `{extract.clip(fix, 100)}` instead of `{extract.clip(command, 80)}` {seen}"
    if fix:
        return f"Run `{extract.clip(fix, 100)}` instead {seen}"
    if command:
        return f"Find out why `{extract.clip(command, 80)}` fails before running it again {seen}"
    return f"Find the cause before retrying what fails with “{extract.clip(' '.join(said.split()), 80)}” {seen}"


def check_rule(current_texts: list[str], must_cite: list[int]):
    def check(data: dict) -> str | None:
        rule = data["rule"]
        if _NEGATIVE_START.search(rule):
            return "the rule is not affirmative"
        body, cites = split_cites(rule)
        if must_cite and not set(must_cite) <= set(cites):
            return f"the rule does not cite the current version(s) {must_cite}"
        return grounded(body, current_texts) if current_texts else None
    return check


def check_failure_rule(said: str):
    def check(data: dict) -> str | None:
        rule = data["rule"]
        if _NEGATIVE_START.search(rule):
            return "the rule is not affirmative"
        error = [w.casefold() for w in _raw_words(said)]
        words = [w.casefold() for w in _raw_words(rule)]
        grams = {tuple(error[i:i + 5]) for i in range(len(error) - 4)}
        if any(tuple(words[i:i + 5]) in grams for i in range(len(words) - 4)):
            return "the rule quotes the error"
        return None
    return check


def _with_content(conn, node_ids: list[int], scope: str) -> list[int]:
    """The ids, in order, of the visible memories among them that carry content (`substance`)."""
    rows = nodes.get_visible_many(conn, node_ids, [scope], columns=("id", "content"))
    speakers = names.speaker_words(conn, [scope])
    return [i for i in node_ids if i in rows and substance.carries_content(rows[i]["content"], speakers, kept=True)]


class LessonsTask(_Synthesis):
    """Corrections about one subject (the current versions share most words) are consolidated
    into one rule citing every current version, naming what each replaced."""

    name = "lessons"
    strategy_name = "lessons"
    interval_s = 3600
    batch_size = 200
    needs_llm = False

    def run(self, ctx: TaskContext) -> dict:
        from .pairs import word_overlap

        self.begin()
        strategy, generator = self.generator(ctx)
        made = 0
        chains: dict[tuple[str, int], set[int]] = {}         # (scope, lineage) -> every version
        for new_id, old_id, scope in nodes.corrections(ctx.conn, ctx.batch or self.batch_size):
            lineage = nodes.lineages(ctx.conn, [new_id])[0]
            chains.setdefault((scope, lineage), set()).update((new_id, old_id))
        heads = nodes.live_heads(ctx.conn, sorted({lin for _, lin in chains}))
        by_scope: dict[str, list[tuple[int, int, str, list[int]]]] = {}
        for (scope, lineage), versions in sorted(chains.items()):
            head = heads.get(lineage)
            row = nodes.get_visible(ctx.conn, [head], [scope]).get(head) if head else None
            if row is None:
                continue
            by_scope.setdefault(scope, []).append((lineage, head, row["content"], sorted(versions - {head})))
        standing = {s["subject"]: s for s in syntheses.current_of_kind(ctx.conn, "lesson")}
        for scope, items in by_scope.items():
            groups: list[list[tuple[int, int, str, list[int]]]] = []
            for item in items:
                home = next((g for g in groups if any(word_overlap(item[2], o[2]) >= 0.5 for o in g)), None)
                if home is None:
                    groups.append([item])
                else:
                    home.append(item)
            for group in groups:
                if ctx.stopping():
                    break
                members = sorted(head for _, head, _, _ in group)
                history = sorted({v for *_, versions in group for v in versions})
                subject = f"lesson:{scope}:{sorted(lin for lin, *_ in group)}"
                if self.up_to_date(ctx, standing.get(subject), members, history):
                    continue
                made += self._correction_lesson(ctx, strategy, generator, scope, subject, group, members, history)
        for failure in review.repeated_failures(ctx.conn):
            if ctx.stopping():
                break
            subject = syntheses.failure_subject(failure["scope"], failure["said"])
            row = standing.get(subject)
            # remade when more failures were filed or a fix became known, never after a person's no
            basis = json.dumps([failure["items"], failure["command"], failure["instead"]])
            made_already = {syntheses.identity(subject, [], [], g, basis) for g in (generator, f"{self.name}/{OFFLINE}")}
            if row is not None and (row["status"] == "rejected" or (row["digest"] in made_already
                                                                     and row["id"] not in ctx.redo)):
                continue
            made += self._failure_lesson(ctx, strategy, generator, subject, failure, basis)
        return {"lessons": made}

    def _correction_lesson(self, ctx, strategy, generator, scope, subject, group, members, history) -> int:
        latest = max(group, key=lambda g: g[1])          # the newest current version states the rule
        first_of = nodes.get_any(ctx.conn, min(latest[3])) if latest[3] else None
        rule, wrote = None, f"{self.name}/{OFFLINE}"
        if strategy is not None:
            versions = []
            for lineage, head, text, replaced in group:
                for old in replaced:
                    row = nodes.get_any(ctx.conn, old)
                    if row and row["status"] == "superseded":
                        versions.append(f"(replaced, node {old}) {extract.clip(' '.join(row['content'].split()), 300)}")
                versions.append(f"[{head}] (current) {extract.clip(' '.join(text.split()), MODEL_CHARS)}")
            data = self.ask(ctx, strategy, RULE_SCHEMA, check_rule([t for _, _, t, _ in group], members),
                            scope=scope, case="corrections", material="\n".join(versions))
            if data is not None:
                rule, wrote = " ".join(split_cites(data["rule"])[0].split()), generator
        if rule is None:
            rule = affirmative_rule(first_of["content"] if first_of else "", latest[2])
        replaced = ", ".join(str(v) for v in history)
        text = (f"{rule} [{'] ['.join(str(m) for m in members)}]\n(rule from {len(history)} correction"
                f"{'s' if len(history) != 1 else ''}; replaced: node {replaced})")
        title = extract.title(extract.shared_names([(m, t) for _, m, t, _ in group], {}), "")
        return 1 if self.write(ctx, subject=subject, kind="lesson", scope=scope, members=members, history=history,
                               title=title, text=text, generator=wrote, review_kind="lesson",
                               node_id=latest[1]) else 0

    def _failure_lesson(self, ctx, strategy, generator, subject, failure, basis) -> int:
        rule, wrote = None, f"{self.name}/{OFFLINE}"
        if strategy is not None:
            material = "\n".join(x for x in (
                f"error seen {failure['times']} times: {extract.clip(' '.join(failure['said'].split()), 300)}",
                f"what failed: {failure['command']}" if failure["command"] else "",
                f"what worked after it: {failure['instead']}" if failure["instead"] else "") if x)
            data = self.ask(ctx, strategy, RULE_SCHEMA, check_failure_rule(failure["said"]),
                            scope=failure["scope"], case="repeated failure", material=material)
            if data is not None:
                rule, wrote = " ".join(data["rule"].split()), generator
        if rule is None:
            rule = failure_rule(failure["said"], failure["times"], failure["command"], failure["instead"])
        text = f"{rule}\n(review items {', '.join(map(str, failure['items']))})"
        return 1 if self.write(ctx, subject=subject, kind="lesson", scope=failure["scope"], members=[], title="",
                               text=text, generator=wrote, review_kind="lesson", basis=basis) else 0


register(CrystallizeTask())
register(TemporalTask())
register(LessonsTask())
