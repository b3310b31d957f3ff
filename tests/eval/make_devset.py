"""Generate the development evaluation set reproducibly (deterministic seed).

    python tests/eval/make_devset.py OUT_DIR     # writes memories.jsonl, queries.jsonl

A six-month store of agent and personal memories in four scopes, written the way agents write:

- coding sessions in three project scopes, digested turn by turn (user, then assistant) with
  their session id, several services per session, interleaved with chatter ("running the
  tests now", "thanks"); the assistant's answer often does not repeat the service's name, so
  the question turn and the answer turn are neighbours and only one of them names the subject;
- personal chat sessions (family, health, preferences, appointments);
- a few handbook notes per scope that say what the tools are ("Redis is the in-memory cache
  ..."), as a real store has;
- facts that are corrected in a later session (the old statement stays: it is history).

Every (subject, attribute) pair is stated once (plus at most one later correction), so every
query's evidence is unambiguous. Query categories:

  fact          the words of the question appear in the memory
  conversation  the answer is the assistant's turn after a question; it may not name the subject
  paraphrase    other words for the same thing ("who handles outages" / "carries the pager")
  temporal      "when" questions about dated events
  corrected     the evidence is the correction, not the superseded statement
  never-stored  nothing answers it (recall should abstain), though its words may occur
  clarified     the evidence was held with a clarifying question at capture and answered
  divergent     the evidence is about two different things (two Alexes, two staging databases):
                recall should ask which (`diverges: true`); every other query should not ask

A small team scope adds the cases clarification is about, labelled on the memories:
`ambiguous` (the kind of question it deserves) and `answer` (what the person answers: text,
or the index of a suggested option); `near_miss` marks look-alikes that must not be asked
about ("Alex Chen ...", "next Friday" written on a Saturday). Every other memory is plain.

Each query is in the `tune` or the `test` half (field `split`; drawn at random within each
category, so both halves have the same mix): tune on one half, report the other.
"""
from __future__ import annotations

import json
import random
import sys
from datetime import date, timedelta
from pathlib import Path

SCOPES = ["project:shop", "project:infra", "project:mobile"]
SERVICES = ["billing", "checkout", "catalog", "pricing", "reviews", "loyalty", "wishlist", "coupons",
            "gateway", "scheduler", "metrics", "backups", "secrets", "dns", "webhooks", "exports",
            "push", "onboarding", "sync", "offline", "deeplinks", "crashlog", "media", "payments",
            "invoices", "refunds", "search", "inventory", "shipping", "tracking", "ledger", "audit",
            "quotas", "tenants", "avatars", "chat"]
STORES = {
    "PostgreSQL": "PostgreSQL is our main relational database; most services keep their data in it.",
    "Redis": "Redis is the in-memory cache and key-value store; a few small services keep their data there.",
    "Kafka": "Kafka is the event log between services; consumers replay it to rebuild their data.",
    "ClickHouse": "ClickHouse is the column store for analytics data and large reporting queries.",
    "DynamoDB": "DynamoDB is the managed key-value database on AWS, used where we want no servers to run.",
    "SQLite": "SQLite is the embedded database on the phones and in small command line tools.",
}
PEOPLE = ["Ana", "Rui", "Marta", "Jonas", "Inês", "Pedro", "Sofia", "Tiago", "Lena", "Omar", "Yuki", "Bruno"]
REGIONS = ["eu-west", "us-east", "ap-south"]
HANDBOOK = [
    "The on-call engineer carries the pager for a service and handles its outages and incidents.",
    "Each service reads its listening port from the PORT variable in its .env file.",
    "Rollouts go region by region: eu-west first, then us-east, then ap-south; a deploy is a release.",
    "Feature flags live in the flags service; a flag that is off hides the feature in production.",
    "A postmortem is written for every incident that pages someone at night.",
]
BUGS = [  # (user report, assistant fix, question)
    ("the nightly {s} export keeps timing out", "Found it: the export did a full table scan. I added an index on "
     "created_at and it now finishes in about {n} seconds.", "how did we fix the {s} export timeout"),
    ("{s} workers slowly eat all the memory until they get killed", "The leak was the response cache: it never "
     "evicted. Capped it at {n} entries with LRU eviction and memory is flat now.",
     "what caused the memory leak in {s}"),
    ("the login test for {s} fails randomly in CI", "It raced the token refresh. I froze the clock in the fixture; "
     "{n} runs in a row passed.", "why was the {s} login test flaky"),
    ("the {s} dashboard takes forever to load", "The dashboard ran one query per row. Batched them into a single "
     "query; page load went from {n} seconds to under one.", "how did we speed up the {s} dashboard"),
    ("{s} sends every email twice", "The retry fired even after a success because the timeout was shorter than the "
     "mail server's reply. Raised it to {n} seconds and made the send idempotent.",
     "why were {s} emails duplicated"),
]
CHATTER = ["thanks, that helps", "ok let me check", "running the tests now", "looks good to me", "brb, coffee",
           "nice, works now", "hmm, interesting", "can you also update the changelog?", "pushed",
           "let me look at the logs first", "good catch", "merging"]
PERSONAL = [  # (memory, question, category); {p} a person, {d} a date
    ("My sister {p} moved to Lisbon last month for her new job.", "where does my sister live", "paraphrase"),
    ("I switched to decaf after 2pm, it helps me sleep.", "do I drink caffeinated coffee in the afternoon",
     "paraphrase"),
    ("Dentist appointment booked for {d} at 9:30.", "when is my dentist appointment", "temporal"),
    ("I'm allergic to penicillin, always tell the doctor.", "which antibiotic am I allergic to", "fact"),
    ("Started running three times a week, aiming for a 10k in the spring.", "what exercise am I doing", "paraphrase"),
    ("My landlord {p} wants the rent on the first working day of the month.", "when is the rent due", "temporal"),
    ("Please keep answers short; I read them on my phone.", "how long should replies be", "paraphrase"),
    ("I use tabs, never spaces, in my own projects.", "tabs or spaces for indentation", "fact"),
    ("The car's MOT inspection is due on {d}.", "when is the car inspection due", "temporal"),
    ("Our daughter's swimming lessons are on Saturday mornings at the municipal pool.",
     "when does our daughter swim", "temporal"),
    ("{p} from book club recommended 'The Dispossessed' by Le Guin.", "which novel was recommended at book club",
     "paraphrase"),
    ("I'm learning Japanese with a tutor on Tuesday evenings.", "which language am I studying", "fact"),
    ("My partner {p} is vegetarian, so no meat when we host dinner.", "what can't I cook for my partner",
     "paraphrase"),
    ("The boiler service visit is on {d}; someone has to be home.", "when is the heating engineer coming",
     "paraphrase"),
    ("I keep my passwords in Bitwarden, not in the browser.", "which password manager do I use", "fact"),
    ("My doctor said to cut down on salt because of my blood pressure.", "what did the doctor advise about my diet",
     "paraphrase"),
    ("Flight to Berlin for the conference leaves on {d} at 7:10 from gate B.", "when do I fly to Berlin",
     "temporal"),
    ("I prefer dark mode in every editor.", "which colour theme do I like", "paraphrase"),
    ("Mum's birthday dinner is at the Italian place on {d}.", "when is mum's birthday dinner", "temporal"),
    ("I pay the electricity bill by direct debit from the joint account.", "how is the power bill paid",
     "paraphrase"),
    ("{p} is my accountant; the tax return deadline is {d}.", "who does my taxes", "paraphrase"),
    ("Our cat Miso needs her vaccine booster on {d}.", "when does the cat need the vet", "temporal"),
    ("I want to read one book a month this year.", "what is my reading goal", "fact"),
    ("My running shoes are Brooks Ghost, size 43.", "what shoe size am I", "fact"),
]
PERSONAL_CORRECTIONS = {
    "Dentist appointment booked for {d} at 9:30.": ("The dentist moved my appointment to {d} at 11:00.",
                                                    "when is the dentist appointment now"),
    "The car's MOT inspection is due on {d}.": ("Correction: the MOT is actually due on {d}, I misread the letter.",
                                                "when is the car inspection really due"),
    "Flight to Berlin for the conference leaves on {d} at 7:10 from gate B.": (
        "The airline rebooked the Berlin flight to {d}, same time.", "what is the new date of my Berlin flight"),
}
NEVER = ["what is the office wifi password", "which dentist does Rui go to", "what colour is the new logo",
         "how many stars does the repo have", "what did we order for the team dinner", "who won the hackathon",
         "what is the name of Sofia's cat", "which laptop model does Pedro use", "what is my parking spot number",
         "when is the company offsite in Porto", "what is my passport number", "which gym do I go to",
         "what is my blood type", "who is my insurance provider", "what did I get my mother for her birthday"]
NEVER_SERVICE = ["what is the error budget for {s}", "which CDN serves {s} assets", "who designed the {s} logo",
                 "how many customers use {s}", "what license is {s} released under",
                 "which team wrote the {s} API docs", "what is the monthly cloud bill for {s}",
                 "which language is {s} written in", "when is the {s} security audit", "who reviews {s} pull requests"]


TEAM = "team:studio"
LATER_CATEGORIES = {"clarified", "divergent"}
TEAM_FACTS = [
    "Alex Chen leads the platform team from the Lisbon office.",
    "Alex Rivera is the product designer for the onboarding flow.",
    "Sam Okafor handles hiring for the platform team.",
    "Sam Patel runs the Thursday demo sessions for the whole studio.",
    "Every CR (change request) needs two approvals from the ops rota.",
    "A CR (code review) should get a first answer within one working day.",
    "Alex Chen's desk phone extension is 4411.",
    "Alex Rivera's desk phone extension is 4730.",
    "The billing staging database runs on pg-stage-7 in eu-west.",
    "The search staging database runs on es-stage-2 in us-east.",
]
# (day, text, kind, answer, question): start (day 0) is a Monday, so day % 7 is the weekday
TEAM_AMBIGUOUS = [
    (9, "Alex asked to move the roadmap review to next Friday.", "date", 1, "when is the roadmap review"),
    (11, "Alex said the onboarding copy is final and can ship.", "referent", "Alex Rivera",
     "what did Alex Rivera say about the onboarding copy"),
    (15, "Sam wants the demo slides in the shared folder by the morning.", "referent", "Sam Patel",
     "what does Sam Patel want for the demo"),
    (16, "The CR for the billing cutover is still waiting on ops.", "acronym", "change request",
     "which change request is waiting on ops"),
    (21, "Next weekend the studio moves to the new floor.", "date", 0, "when does the studio move floors"),
]
TEAM_NEAR_MISSES = [
    (12, "Next Friday we freeze the platform release."),              # a Saturday: the coming Friday
    (17, "Alex Chen approved the platform hiring budget."),
    (18, "Sam Okafor booked the interviews for tomorrow morning."),
    (22, "The CR (change request) template moved to the ops wiki."),
    (23, "The studio lunch is this Friday at the ramen place."),
    (24, "Alex Rivera and Alex Chen paired on the signup screen."),
]
# (query, indexes into TEAM_FACTS, diverges)
TEAM_QUERIES = [
    ("what is Alex's desk phone extension", [6, 7], True),
    ("where does the staging database run", [8, 9], True),
    ("what does Sam handle", [2, 3], True),
    ("what does a CR need", [4, 5], True),
    ("what is Alex Chen's desk phone extension", [6], False),
    ("where does the billing staging database run", [8], False),
]


def team_slice(b: "Builder") -> None:
    """The clarification cases, in their own scope (so the rest of the set is unchanged)."""
    facts = [b.add(text, TEAM, 2, None, "claude-desktop") for text in TEAM_FACTS]
    for day, text, kind, answer, question in TEAM_AMBIGUOUS:
        mid = b.add(text, TEAM, day, f"team-{day}", "claude-desktop")
        b.memories[-1].update(ambiguous=kind, answer=answer)
        b.ask(question, TEAM, [mid], "clarified")
    for day, text in TEAM_NEAR_MISSES:
        b.add(text, TEAM, day, f"team-{day}", "claude-desktop")
        b.memories[-1]["near_miss"] = True
    for query, evidence, diverges in TEAM_QUERIES:
        b.ask(query, TEAM, [facts[i] for i in evidence], "divergent")
        b.queries[-1]["diverges"] = diverges


class Builder:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.start = date(2026, 1, 5)
        self.memories: list[dict] = []
        self.queries: list[dict] = []

    def add(self, text: str, scope: str, day: int, session: str | None, tool: str) -> str:
        mid = f"m{len(self.memories) + 1}"
        self.memories.append({"id": mid, "text": text, "valid_at": (self.start + timedelta(days=day)).isoformat(),
                              "scope": scope, "source": {"tool": tool}, "session": session})
        return mid

    def ask(self, query: str, scope: str, evidence: list[str], category: str) -> None:
        self.queries.append({"id": f"q{len(self.queries) + 1}", "query": query, "scope": scope,
                             "evidence": evidence, "category": category})

    def day_str(self, day: int) -> str:
        return (self.start + timedelta(days=day)).strftime("%d %B %Y").lstrip("0")


def episodes_for(b: Builder, svc: str, scope: str) -> list:
    """Closures that each write one exchange about `svc` into a session (turns) and ask about it."""
    rng = b.rng
    store = rng.choice(list(STORES))
    port = rng.randint(3000, 9899)
    person = rng.choice(PEOPLE)
    out = []

    def datastore(day, session):
        b.add(rng.choice([f"Where does {svc} keep its data?", f"what is {svc} using for storage these days?",
                          f"remind me what {svc} persists to"]), scope, day, session, "claude-code")
        ans = b.add(rng.choice([f"It writes everything to {store}; the schema lives in migrations/.",
                                f"{store}. One primary and two replicas.",
                                f"Everything goes to {store} since we dropped the flat files last year."]),
                    scope, day, session, "claude-code")
        b.ask(rng.choice([f"which database backs the {svc} service", f"what storage does {svc} use",
                          f"{svc} datastore"]), scope, [ans], "conversation")

    def port_fact(day, session):
        m = b.add(f"Set {svc} to listen on port {port} so it stops clashing with the other dev servers.", scope,
                  day, session, "claude-code")
        b.ask(f"what port does {svc} listen on", scope, [m], "fact")
        if rng.random() < 0.35:
            new = port + rng.randint(1, 90)
            later = day + rng.randint(10, 60)
            c = b.add(f"Moved {svc} from port {port} to {new}; update your .env files.", scope, later,
                      f"fix-{svc}-{later}", "claude-code")
            b.ask(f"which port is {svc} on now", scope, [c], "corrected")

    def oncall(day, session):
        m = b.add(rng.choice([f"{person} carries the pager for {svc} until the end of the quarter.",
                              f"{person} is the go-to person when {svc} breaks; the pager is theirs this quarter."]),
                  scope, day, session, "claude-code")
        b.ask(rng.choice([f"who handles {svc} outages", f"who is on call for {svc}",
                          f"who should I page about a {svc} incident"]), scope, [m], "paraphrase")

    def decision(day, session):
        target = rng.choice([s for s in ("PostgreSQL", "Kafka", "ClickHouse", "DynamoDB") if s != store])
        b.add(f"{svc} keeps falling over under peak load, what should we do?", scope, day, session, "claude-code")
        ans = b.add(f"Move it to {target}: the current setup cannot keep up with writes, and {target} can shard.",
                    scope, day, session, "claude-code")
        b.ask(rng.choice([f"why are we migrating {svc} to {target}", f"what was the plan for {svc} scaling problems"]),
              scope, [ans], "conversation")

    def deploy(day, session):
        version = f"v{rng.randint(2, 5)}.{rng.randint(0, 9)}"
        region = rng.choice(REGIONS)
        m = b.add(rng.choice([f"Deployed {svc} {version} to {region} today, no errors so far.",
                              f"{svc} {version} is live in {region}."]), scope, day, session, "claude-code")
        b.ask(rng.choice([f"when did {svc} {version} go out to {region}", f"when was the {svc} {version} release"]),
              scope, [m], "temporal")

    def bug(day, session, which):
        report, fix, question = BUGS[which]
        b.add(report.format(s=svc), scope, day, session, "claude-code")
        if rng.random() < 0.5:
            b.add(rng.choice(CHATTER), scope, day, session, "claude-code")
        ans = b.add(fix.format(s=svc, n=rng.randint(2, 90)), scope, day, session, "claude-code")
        b.ask(question.format(s=svc), scope, [ans], "conversation")

    out += [datastore, port_fact, oncall, deploy]
    if rng.random() < 0.6:
        out.append(decision)
    for which in rng.sample(range(len(BUGS)), 3):
        out.append(lambda day, session, w=which: bug(day, session, w))
    return out


def build(seed: int = 20261130) -> tuple[list[dict], list[dict]]:
    b = Builder(seed)
    rng = b.rng
    for scope in SCOPES:
        for note in list(STORES.values()) + HANDBOOK:
            b.add(note, scope, 0, None, "obsidian")
    pending: dict[str, list] = {}
    services = list(SERVICES)
    rng.shuffle(services)
    home = {svc: SCOPES[n % len(SCOPES)] for n, svc in enumerate(services)}
    for svc in services:
        pending.setdefault(home[svc], []).extend(episodes_for(b, svc, home[svc]))
    for scope in SCOPES:
        rng.shuffle(pending[scope])
    day, session_no = 1, 0
    personal = list(PERSONAL)
    rng.shuffle(personal)
    while any(pending.values()) or personal:
        day += rng.randint(1, 3)
        for scope in SCOPES:
            if not pending[scope]:
                continue
            session_no += 1
            session = f"code-{session_no}"
            for _ in range(min(len(pending[scope]), rng.randint(2, 4))):
                for _ in range(rng.randint(0, 2)):
                    b.add(rng.choice(CHATTER), scope, day, session, "claude-code")
                pending[scope].pop()(day, session)
        if personal and rng.random() < 0.5:
            session_no += 1
            session = f"chat-{session_no}"
            text, question, category = personal.pop()
            b.add(rng.choice(["good morning!", "quick one before work", "hey"]), "personal", day, session,
                  "claude-desktop")
            d = b.day_str(day + rng.randint(10, 40))
            m = b.add(text.format(p=rng.choice(PEOPLE), d=d), "personal", day, session, "claude-desktop")
            b.add(rng.choice(["noted!", "got it, I'll remember that.", "Noted."]), "personal", day, session,
                  "claude-desktop")
            b.ask(question, "personal", [m], category)
            if text in PERSONAL_CORRECTIONS:
                fix, fix_question = PERSONAL_CORRECTIONS[text]
                later = day + rng.randint(3, 8)
                c = b.add(fix.format(d=b.day_str(later + rng.randint(5, 20))), "personal", later, f"chat-fix-{day}",
                          "claude-desktop")
                b.ask(fix_question, "personal", [c], "corrected")
    for q in NEVER:
        b.ask(q, "personal", [], "never-stored")
    for n, svc in enumerate(services):
        b.ask(NEVER_SERVICE[n % len(NEVER_SERVICE)].format(s=svc), home[svc], [], "never-stored")
        b.ask(NEVER[(n * 7) % len(NEVER)].replace("my ", "our "), home[svc], [], "never-stored")
    team_slice(b)
    b.memories.sort(key=lambda m: m["valid_at"])   # file order is time order (stable within a day)
    split_rng = random.Random(seed + 1)             # halves: shuffled within each category, then alternated
    later = random.Random(seed + 2)                 # categories added later draw apart: the rest stay put
    for category in sorted({q["category"] for q in b.queries} - LATER_CATEGORIES) + sorted(LATER_CATEGORIES):
        members = [q for q in b.queries if q["category"] == category]
        (later if category in LATER_CATEGORIES else split_rng).shuffle(members)
        for n, q in enumerate(members):
            q["split"] = "tune" if n % 2 == 0 else "test"
    return b.memories, b.queries


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    memories, queries = build()
    (out / "memories.jsonl").write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in memories))
    (out / "queries.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries))
    cats: dict[str, int] = {}
    for q in queries:
        cats[q["category"]] = cats.get(q["category"], 0) + 1
    print(f"{len(memories)} memories, {len(queries)} queries -> {out}  {cats}")
