"""`tidemind demo`: a store built from the bundled sample, then digest -> recall -> show end to end.

Runs on the embedded defaults (no API key, no model download). Without --home it works in a
temporary directory and removes it afterwards.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from .memory import Memory
from .store import immediate
from .views import title_of

PROJECT = "project:tidemind"


def _sample() -> list[dict]:
    text = resources.files("tidemind").joinpath("samples/demo.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _say(out: list, as_json: bool, text: str = "") -> None:
    if not as_json:
        print(text, flush=True)


def _show_recall(out, as_json, label: str, result: dict) -> None:
    out.append({"step": label, "result": result})
    _say(out, as_json, f"\n$ tidemind recall {label}")
    if result["abstained"]:
        _say(out, as_json, f"  abstained: {result['message']} (best evidence {result['best_evidence']})")
        return
    for item in result["items"][:4]:
        flags = f"  [{', '.join(item['flags'])}]" if item["flags"] else ""
        _say(out, as_json, f"  #{item['id']:<3} {item['score']:.4f}  {title_of(item)[:90]}{flags}")


LAB = "project:lab"


def _workstreams(m: Memory, out: list, as_json: bool) -> None:
    """The bundled fortnight (samples/fortnight.jsonl): memories with a person's tags, a rename
    (fishtank → aquarium-controller), and four memories a model placed under a slug nobody has
    minted (sourdough-lab); those answers ship with the sample, labelled `sample/compose`, as
    the fingerprint task would have kept them from a configured LLM."""
    from .metabolism.scheduler import run_due
    from .workstreams import Workstreams
    from .workstreams import store as ws_store

    rows = [json.loads(line) for line in
            resources.files("tidemind").joinpath("samples/fortnight.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in rows:
        node = m.digest(row["text"], scope=LAB, valid_at=row["day"], source_tool="claude-code",
                        session=f"lab-{row['day']}")["node_ids"][0]
        for tag in row["tags"]:
            m.tag_add(node, tag)
        if row.get("model"):
            with immediate(m.conn):
                ws_store.put_assignment(m.conn, node, row["model"], "sample/compose", m.now())
    ws = Workstreams(m)
    for slug, note in (("aquarium-controller", "person"), ("recipe-site", "person"), ("garden-sensors", None),
                       ("home-lab", None)):
        ws.mint(slug, scope=LAB, note=note)
    ws.alias("fishtank", "aquarium-controller", scope=LAB)
    run_due(m, only=["fingerprint"], force=True)
    from .cli import _fmt_taste

    _say(out, as_json, f"\n# workstreams: a fortnight of {len(rows)} memories in {LAB}; 4 minted slugs, one rename")
    for action, args in (("decode", ["2026-01-12"]), ("where", ["aquarium-controller"]), ("first", ["aquarium-controller"]),
                         ("diff", ["2026-01-05", "2026-01-07", "2026-01-15", "2026-01-18"]), ("gaps", []),
                         ("unknowns", []), ("tasteslike", ["sourdough-lab"]), ("backtest", ["garden-sensors"]),
                         ("similar", ["2026-01-12"]), ("window", ["2026-01-05", "2026-01-11"]),
                         ("drift", ["recipe-site"])):
        r = getattr(ws, action)(*args, scope=LAB)
        out.append({"step": f"taste-{action}", "result": r})
        _say(out, as_json, f"\n$ tidemind taste {' '.join([action, *args])} --scope {LAB}")
        _say(out, as_json, "  " + _fmt_taste(action, r).replace("\n", "\n  "))


TEAM = "team:demo"


def _clarification(m: Memory, out: list, as_json: bool) -> None:
    """Ambiguity handled, not guessed: a capture that names "Alex" when two are known waits with
    one question; the answer is kept beside the memory (never in it) and search reads it; a
    skipped one is searchable as written; recall asks which Alex when its answers diverge."""
    for text in ("Alex Chen leads the platform team.", "Alex Rivera designs the onboarding screens.",
                 "Alex Chen's desk extension is 4411.", "Alex Rivera's desk extension is 4730."):
        m.digest(text, scope=TEAM, source_tool="claude-desktop")
    _say(out, as_json, f"\n# clarification: two people called Alex in {TEAM}")
    held = m.digest("Alex says the signup copy is final and can ship.", scope=TEAM, source_tool="claude-desktop")
    out.append({"step": "digest-ambiguous", "result": held})
    [q] = held["questions"]
    _say(out, as_json, f'\n$ tidemind digest "Alex says the signup copy is final and can ship." --scope {TEAM}\n'
                       f"  {held['done']}\n  question {q['question_id']}: {q['question']}")
    _show_recall(out, as_json, f'"signup copy final" --scope {TEAM} (while it waits: out of search)',
                 m.recall("signup copy final", scopes=[TEAM]))
    answer = m.clarify_answer(q["question_id"], "Alex Rivera")
    out.append({"step": "clarify-answer", "result": answer})
    _say(out, as_json, f'\n$ tidemind clarify answer {q["question_id"]} "Alex Rivera"\n  {answer["done"]}')
    m.embed_pending()
    _show_recall(out, as_json, f'"what did Rivera say about the signup copy" --scope {TEAM}',
                 m.recall("what did Rivera say about the signup copy", scopes=[TEAM]))
    shown = m.show(held["node_ids"][0])
    _say(out, as_json, f"  authored, unchanged: {shown['content']!r}; clarified: "
                       + "; ".join(f"{c['term']}: {c['answer']}" for c in shown["clarified"]))
    dated = m.digest("Move the roadmap review to next Friday.", scope=TEAM, valid_at="2026-12-02",
                     source_tool="claude-desktop")
    out.append({"step": "digest-next-friday", "result": dated})
    [dq] = dated["questions"]
    _say(out, as_json, f'\n$ tidemind digest "Move the roadmap review to next Friday." --valid-at 2026-12-02'
                       f" (a Wednesday)\n  question {dq['question_id']}: {dq['question']}")
    skipped = m.clarify_skip(dq["question_id"])
    out.append({"step": "clarify-skip", "result": skipped})
    _say(out, as_json, f"$ tidemind clarify skip {dq['question_id']}\n  {skipped['done']}")
    m.embed_pending()
    query = "what is Alex's desk extension"
    asked = m.recall(query, scopes=[TEAM])
    out.append({"step": "recall-diverging", "result": asked})
    _say(out, as_json, f'\n$ tidemind recall "{query}" --scope {TEAM}\n  {asked["clarify"]["question"]}')
    for g in asked["clarify"]["groups"]:
        _say(out, as_json, f"    {g['choice']}: node(s) {g['ids']}")
    _show_recall(out, as_json, f'"{query}" --scope {TEAM} --choose "Alex Rivera"',
                 m.recall(query, scopes=[TEAM], choose="Alex Rivera"))


def run_demo(home: str | None = None, as_json: bool = False) -> dict:
    temp = None if home else tempfile.mkdtemp(prefix="tidemind-demo-")
    out: list = []
    try:
        with Memory.open(home or temp) as m:
            _say(out, as_json, f"TideMind demo · store at {m.settings.home}\n")
            for row in _sample():
                r = m.digest(row["text"], scope=row["scope"], valid_at=row["valid_at"],
                             source_tool=row["source_tool"], session=row["session"])
                out.append({"step": "digest", "result": r})
                _say(out, as_json, f"digest → node(s) {r['node_ids']} scope={row['scope']}: {row['text'][:60]!r}")
            r = m.digest("The deploy token is ghp_abcdefghijklmnopqrstuvwxyz0123456789 for the bot.", scope=PROJECT,
                         source_tool="claude-code", session="code-3")
            out.append({"step": "digest-secret", "result": r})
            _say(out, as_json, f"digest → node(s) {r['node_ids']} warnings: {r['warnings']}")
            e = m.embed_pending()
            out.append({"step": "embed", "result": e})
            _say(out, as_json, f"\nembed → {e['embedded']} vectors by {e['embedder']} (off the digest path)")

            _show_recall(out, as_json, f'"which port is the staging database on?" --scope {PROJECT}',
                         m.recall("which port is the staging database on?", scopes=[PROJECT]))
            hit = m.recall("which port is the staging database on?", scopes=[PROJECT])["items"][0]["id"]
            _say(out, as_json, "\n(the same question from the personal scope sees nothing of the project)")
            _show_recall(out, as_json, '"which port is the staging database on?" --scope personal',
                         m.recall("which port is the staging database on?", scopes=["personal"]))

            c = m.correct(hit, "The staging database runs PostgreSQL 16 and listens on port 6432 behind PgBouncer.")
            out.append({"step": "correct", "result": c})
            _say(out, as_json, f"\n$ tidemind correct {hit} ...\n  {c['done']}")
            again = m.digest("The staging database runs PostgreSQL 16 and listens on port 5433, not the default 5432.",
                             scope=PROJECT, source_tool="claude-code")
            out.append({"step": "re-digest-old-claim", "result": again})
            _say(out, as_json, "\n$ tidemind digest <the old, corrected claim again>")
            for w in again["warnings"]:
                _say(out, as_json, f"  warning: {w}")
            m.embed_pending()
            _show_recall(out, as_json, f'"staging postgres port" --scope {PROJECT}',
                         m.recall("staging postgres port", scopes=[PROJECT]))

            shown = m.show(c["node_ids"][0])
            out.append({"step": "show", "result": shown})
            _say(out, as_json, f"\n$ tidemind show {shown['id']}")
            for v in shown["versions"]:
                _say(out, as_json, f"  v{v['version']} node {v['id']} {v['status']:<10} {v['content'][:70]!r}")

            _show_recall(out, as_json, '"what day is Inês swimming"',
                         m.recall("what day is Inês swimming"))
            _show_recall(out, as_json, '"what is the wifi password at the office"',
                         m.recall("what is the wifi password at the office", all_scopes=True))
            before = shown["versions"][0]["recorded_at"]
            _show_recall(out, as_json, f'"staging database port" --as-of {before} --clock recorded'
                         ' (what the store held before the correction)',
                         m.recall("staging database port", scopes=[PROJECT], as_of=before, clock="recorded"))
            from .importers.engine import sync

            vault = Path(str(resources.files("tidemind").joinpath("samples/vault")))
            imported = sync(m, "obsidian", vault, "vault:sample")
            out.append({"step": "import", "result": imported})
            _say(out, as_json, f"\n$ tidemind import obsidian <sample vault> --scope vault:sample\n"
                               f"  batch {imported['batch']}: {imported['created']} units created; wikilinks and"
                               f" #tags arrive confirmed (the person wrote them)")
            m.embed_pending()
            hits = m.recall("when does the irrigation run", scopes=["vault:sample"])
            _show_recall(out, as_json, '"when does the irrigation run" --scope vault:sample', hits)
            if hits["items"]:
                hood = m.neighbourhood(hits["items"][0]["id"], scopes=["vault:sample"])
                for n in hood["neighbours"]:
                    _say(out, as_json, f"  linked (confirmed) → #{n['id']} {title_of(n)[:80]}")
            _clarification(m, out, as_json)
            _workstreams(m, out, as_json)
            stats = m.stats()
            out.append({"step": "stats", "result": stats})
            _say(out, as_json, f"\n$ tidemind stats\n  nodes {stats['nodes']}  review {stats['review']}")
            doc = m.doctor()
            out.append({"step": "doctor", "result": doc})
            _say(out, as_json, f"\n$ tidemind doctor\n  {'healthy' if doc['ok'] else doc['problems']}")
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    if as_json:
        print(json.dumps(out, ensure_ascii=False))
    return {"steps": out}
