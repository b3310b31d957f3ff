"""A sample store shaped like a person's after a few months: agent memories in three project
scopes and a personal one, an Obsidian vault of linked notes, and what the offline metabolism
makes of them (titles, proposed tags, pending links, merges and contradictions to review).

Built only through the public API (`Memory.digest`, the importer, the scheduler, a person's
decisions), so what the screenshots and the scale measurements show is what a person would
have. Deterministic for a given size and seed.

    python -m tidemind_desktop.sample HOME [--memories 2000]
"""
from __future__ import annotations

import argparse
import datetime as dt
import random
import tempfile
import time
from pathlib import Path

from tidemind.memory import Memory

SCOPES = ("project:shop", "project:infra", "project:mobile", "personal")
SERVICES = ("billing", "checkout", "search", "auth", "notifications", "inventory", "reporting", "payments",
            "shipping", "catalog", "recommendations", "analytics", "gateway", "scheduler", "media")
STORES = ("PostgreSQL 16", "Redis", "Kafka", "SQLite", "Elasticsearch", "S3", "ClickHouse", "RabbitMQ")
TOOLS = ("nginx", "PgBouncer", "Terraform", "Grafana", "Sentry", "GitHub Actions", "Docker", "Kubernetes",
         "Celery", "Prometheus", "Vault", "Playwright", "pytest", "Renovate")
PEOPLE = ("Alex", "Priya", "Sam", "Jordan", "Mei", "Tomás", "Aisha", "Lena", "Ravi", "Noor")
ENVS = ("staging", "production", "the preview environment", "the load-test cluster")
ADJ = ("flaky", "slow", "noisy", "expensive", "fragile", "reliable", "fast", "simple", "brittle", "stable")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")

AGENT = (
    "The {env} {svc} service talks to {store} through {tool}; connections are pooled at {n} per worker.",
    "Decision: {svc} moves from {store} to {store2} because the old setup was too {adj} under load.",
    "Bug: {svc} times out after {n} seconds when {tool} restarts; fixed by retrying with backoff.",
    "{person} owns the {svc} service and reviews every change to its {store} schema.",
    "Remember: deploys of {svc} to {env} go out on {day} mornings, never on Fridays after 15:00.",
    "The {svc} dashboard in {tool} alerts when the error rate passes {n} per minute.",
    "Lesson: {tool} in CI was {adj} for {svc}; pin its version and cache the dependencies.",
    "{person} prefers small pull requests for {svc}, each under {n} changed lines.",
    "The {svc} queue in {store} keeps messages for {n} days before they expire.",
    "Runbook: when {svc} is {adj}, check {tool} first, then the {store} slow-query log.",
)
PERSONAL = (
    "Dentist appointment with Dr. {person} on {day} at {h}:30.",
    "Book idea from {person}: a history of {svc} systems, told through their failures.",
    "Running plan: {n} km on {day}, rest the day after.",
    "{person}'s birthday is coming up; they like {adj} board games and strong coffee.",
    "Groceries for the weekend: lentils, lemons, {n} eggs and good olive oil.",
)
# the same facts told again with another value: the contradiction pass finds these
CONFLICTS = (
    ("The staging database listens on port 5433 behind PgBouncer.",
     "The staging database listens on port 6432 behind PgBouncer."),
    ("The billing webhook retries 3 times before it gives up.",
     "The billing webhook retries 5 times before it gives up."),
    ("The search index is rebuilt every 6 hours from the catalog export.",
     "The search index is rebuilt every 24 hours from the catalog export."),
    ("Checkout sessions expire after 30 minutes of inactivity.",
     "Checkout sessions expire after 45 minutes of inactivity."),
    ("The mobile app's minimum supported iOS version is 15.",
     "The mobile app's minimum supported iOS version is 16."),
)
NOTE_TOPICS = ("Architecture", "Onboarding", "Incident", "Runbook", "Meeting", "Reading", "Idea", "Retro")


def _fill(template: str, rng: random.Random) -> str:
    store, store2 = rng.sample(STORES, 2)
    return template.format(env=rng.choice(ENVS), svc=rng.choice(SERVICES), store=store, store2=store2,
                           tool=rng.choice(TOOLS), person=rng.choice(PEOPLE), adj=rng.choice(ADJ),
                           day=rng.choice(DAYS), n=rng.choice((3, 5, 8, 10, 12, 20, 30, 50, 100, 200)),
                           h=rng.randint(8, 17))


def make_vault(folder: Path, notes: int, rng: random.Random) -> None:
    """Linked Obsidian notes: each a few heading sections, wiki links to other notes and tags."""
    names = [f"{NOTE_TOPICS[i % len(NOTE_TOPICS)]} - {SERVICES[(i * 7) % len(SERVICES)]} {i:03d}"
             for i in range(notes)]
    for i, name in enumerate(names):
        sub = folder / NOTE_TOPICS[i % len(NOTE_TOPICS)].lower()
        sub.mkdir(parents=True, exist_ok=True)
        hub = names[(i // 12) * 12]            # notes cluster around hubs, as real vaults do
        others = rng.sample(names, 2)
        tags = " ".join(f"#{t}" for t in rng.sample(("architecture", "ops", "people", "reading", "ideas",
                                                     "incident", "mobile", "billing", "search"), 2))
        body = [f"---\ntags: [{NOTE_TOPICS[i % len(NOTE_TOPICS)].lower()}]\n---\n"
                f"{_fill(rng.choice(AGENT), rng)} See [[{hub}]]. {tags}\n"]
        for s in range(1, 3):
            heading = f"{('Context', 'Details', 'Follow-up', 'Open questions')[(i + s) % 4]} on {rng.choice(SERVICES)}"
            body.append(f"\n## {heading}\n{_fill(rng.choice(AGENT), rng)} Related: [[{others[s - 1]}]].\n")
        (sub / f"{name}.md").write_text("".join(body), encoding="utf-8")


def _metabolise(m: Memory, say) -> None:
    """The offline passes a daemon runs (the judge and the crystals too), each until it has nothing left to do."""
    from tidemind.metabolism.scheduler import run_due

    for task in ("embed", "annotate", "link-propose", "link-evaluate", "dedup", "contradict", "crystallize", "temporal"):
        for _ in range(1000):                       # each run is one bounded batch
            report = run_due(m, only=[task], force=True)[0]
            if not any(v for k, v in report.items() if isinstance(v, int)):
                break
        say(f"  {task} done")


def build(home: str | Path, memories: int = 2000, seed: int = 7, quiet: bool = False) -> dict:
    """Fill `home` with about `memories` memories (a fifth from the vault); returns counts."""
    rng = random.Random(seed)
    start = time.monotonic()
    say = (lambda *_: None) if quiet else (lambda *a: print(*a, flush=True))
    notes = max(1, memories // 5 // 3)            # three units a note
    digests = memories - notes * 3
    day0 = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.timezone.utc)
    with Memory.open(home, actor="person:sample") as m:
        for i in range(digests - 2 * len(CONFLICTS)):
            scope = SCOPES[i % len(SCOPES)] if i % 7 else "personal"
            when = day0 + dt.timedelta(hours=i * 90 * 24 / max(1, digests))
            if i % 97 == 5:                         # the same thing said twice: a merge to review
                text = "The weekly planning meeting is on Monday at 10:00 in the big room."
                text = text if i % 2 else text.replace("room.", "room!")
                scope = "project:shop"
            else:
                text = _fill(rng.choice(PERSONAL if scope == "personal" else AGENT), rng)
            m.digest(text, scope=scope, valid_at=when.isoformat(), source_tool="claude-code",
                     session=f"{scope}-{i // 25}")
            if i % 500 == 499:
                say(f"  {i + 1:,} digests")
        with tempfile.TemporaryDirectory(prefix="tidemind-sample-vault-") as tmp:
            make_vault(Path(tmp) / "Notes", notes, rng)
            from tidemind.importers.engine import sync

            imported = sync(m, "obsidian", Path(tmp) / "Notes", scope="vault:notes")
        say(f"  imported {imported['created']:,} units from {notes:,} notes")
        _metabolise(m, say)
        # the latest weeks: facts told again with another value, the newest items in the inbox
        for k, (first, second) in enumerate(CONFLICTS):
            when = day0 + dt.timedelta(days=80 + k)
            m.digest(first, scope="project:infra", valid_at=when.isoformat(), source_tool="claude-code")
            m.digest(second, scope="project:infra", valid_at=(when + dt.timedelta(days=3)).isoformat(),
                     source_tool="claude-code")
        _metabolise(m, say)
        # a person has been here before: some links confirmed, a few rejected
        for k, link in enumerate(m.pending_links(limit=max(200, memories // 2))):
            if k % 3 == 0:
                m.link_decide(link["id"], "confirmed")
            elif k % 11 == 0:
                m.link_decide(link["id"], "rejected_by_user")
        stats = m.stats()
    return {"nodes": stats["nodes"], "links": stats["links"], "tags": stats["tags"], "review": stats["review"],
            "seconds": round(time.monotonic() - start, 1)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home")
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    print(build(args.home, args.memories, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
