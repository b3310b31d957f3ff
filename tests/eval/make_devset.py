"""Generate the development evaluation set reproducibly (deterministic seed).

    python tests/eval/make_devset.py OUT_DIR     # writes memories.jsonl, queries.jsonl

A multi-session corpus of agent and personal memories over six months in three scopes: facts
about services, people's preferences, decisions with reasons, events with dates, chit-chat
noise, and corrections that replace earlier facts. Queries paraphrase the facts (other words
for the same thing), ask "when" questions, ask about corrected facts (the evidence is the
correction), and ask about things never stored (no evidence: recall should abstain). Query
ids alternate between the `tune` and `test` halves (field `split`).
"""
from __future__ import annotations

import json
import random
import sys
from datetime import date, timedelta
from pathlib import Path

SERVICES = ["billing", "search", "checkout", "auth", "reporting", "notifications", "inventory", "shipping"]
TOOLS = ["PostgreSQL", "Redis", "Kafka", "Elasticsearch", "RabbitMQ", "ClickHouse", "MongoDB", "SQLite"]
PEOPLE = ["Ana", "Rui", "Marta", "Jonas", "Inês", "Pedro", "Sofia", "Tiago"]
HOSTS = ["eu-west", "us-east", "ap-south"]
PREFS = [("short answers", "concise replies"), ("tabs", "tab indentation"), ("dark mode", "a dark theme"),
         ("small pull requests", "little PRs"), ("type hints", "static typing annotations"),
         ("morning meetings", "meetings before noon")]
NOISE = ["thanks, that helps", "ok let me check", "lunch was great today", "the coffee machine is broken again",
         "brb", "good morning", "nice, works now", "hmm interesting"]
NEVER = ["what is the office wifi password", "which dentist does Rui go to", "what colour is the new logo",
         "how many stars does the repo have", "what did we order for the team dinner", "who won the hackathon",
         "what is the name of Sofia's cat", "which laptop model does Pedro use", "what is the parking spot number",
         "when is the company offsite in Porto"]


def build(seed: int = 20261130):
    rng = random.Random(seed)
    memories, queries = [], []
    start = date(2026, 1, 5)
    mid = 0

    def add(text, scope, day, session, tool):
        nonlocal mid
        mid += 1
        memories.append({"id": f"m{mid}", "text": text, "valid_at": (start + timedelta(days=day)).isoformat(),
                         "scope": scope, "source": {"tool": tool}, "session": session})
        return f"m{mid}"

    def ask(query, scope, evidence, category):
        queries.append({"id": f"q{len(queries) + 1}", "query": query, "scope": scope, "evidence": evidence,
                        "category": category, "split": "tune" if len(queries) % 2 == 0 else "test"})

    day = 0
    for s in range(40):                       # agent coding sessions, project scopes
        scope = "project:shop" if s % 2 == 0 else "project:infra"
        session = f"code-{s}"
        day += rng.randint(1, 5)
        for _ in range(rng.randint(5, 12)):
            kind = rng.random()
            svc, tool, person = rng.choice(SERVICES), rng.choice(TOOLS), rng.choice(PEOPLE)
            if kind < 0.30:
                port = rng.randint(3000, 9999)
                m = add(f"The {svc} service stores its data in {tool} and listens on port {port}.", scope, day,
                        session, "claude-code")
                ask(f"which database backs {svc}?", scope, [m], "paraphrase")
                ask(f"what port is {svc} on", scope, [m], "fact")
                if rng.random() < 0.25:      # corrected later in another session
                    new_port = port + rng.randint(1, 50)
                    c = add(f"Correction: the {svc} service now listens on port {new_port}, not {port}.", scope,
                            day + rng.randint(3, 20), f"code-fix-{s}", "claude-code")
                    ask(f"what is the current port of the {svc} service", scope, [c], "corrected")
            elif kind < 0.50:
                m = add(f"Decision: {svc} will move to {tool} because the current store cannot keep up with load.",
                        scope, day, session, "claude-code")
                ask(f"why are we migrating {svc}?", scope, [m], "paraphrase")
            elif kind < 0.65:
                host = rng.choice(HOSTS)
                m = add(f"{person} deployed {svc} to the {host} cluster on {start + timedelta(days=day)}.", scope,
                        day, session, "claude-code")
                ask(f"when was {svc} deployed to {host}", scope, [m], "temporal")
            elif kind < 0.75:
                m = add(f"{person} owns the {svc} runbook and is on call for it this quarter.", scope, day, session,
                        "claude-code")
                ask(f"who is responsible for {svc} incidents", scope, [m], "paraphrase")
            else:
                add(rng.choice(NOISE), scope, day, session, "claude-code")
    for s in range(15):                       # personal chat sessions
        session = f"chat-{s}"
        day += rng.randint(2, 6)
        for _ in range(rng.randint(3, 7)):
            person = rng.choice(PEOPLE)
            if rng.random() < 0.5:
                pref, para = rng.choice(PREFS)
                m = add(f"{person} prefers {pref}.", "personal", day, session, "claude-desktop")
                ask(f"does {person} like {para}?", "personal", [m], "paraphrase")
            else:
                add(rng.choice(NOISE), "personal", day, session, "claude-desktop")
    for q in NEVER:
        ask(q, "personal", [], "never-stored")
        ask(q.replace("what", "tell me"), "project:shop", [], "never-stored")
    return memories, queries


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    memories, queries = build()
    (out / "memories.jsonl").write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in memories))
    (out / "queries.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries))
    print(f"{len(memories)} memories, {len(queries)} queries -> {out}")
