"""`tidemind bench`: latency of the write and read paths on a synthetic store (deterministic seed).

The store is bulk-loaded through the store modules (one transaction per batch, the stream file
written per batch), then embedded by the configured embedder. Measured on that data, in the
same run:

- digest_ms: the full `Memory.digest` path (validation, masking, transaction, fsync'd stream);
- recall_ms: the full hybrid `Memory.recall` in one scope (how an MCP server reads);
- recall_fts_only_ms / recall_vector_only_ms: the same path with one arm switched off;
- recall_all_scopes_ms: the same over every scope;
- prepare_ms: `Memory.prepare` with the question as hint (session-start context);
- fts_floor_ms: the bare FTS5 MATCH + bm25 ORDER BY LIMIT, no join or predicate;
- vec_floor_ms: the bare sqlite-vec KNN on the bit index (same k, same scope), query vector given;
- fts_all_terms_ms: the bare FTS5 query with every content word kept (what pruning common
  words saves).

With `--full` (or each on its own flag): MCP server start (process spawn to `initialize` answered,
through the official Python client, MCP_STARTS times), MCP round trips and hook latency, metabolism
throughput per task, import throughput of a generated vault (8 units a note; `--nodes 0
--import-notes N` times the import alone). `--hostile-notes N` (not in `--full`) times the
import of notes built to be slow: N sections under one heading, N sections linking to each
other, a Logseq page of N blocks synced again after one is added on top, a YAML alias bomb.

Medians and p95 over the query set; the machine is shared, so compare ratios, not single runs.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import random
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from . import text
from .memory import Memory
from .search.recall import COMMON_WINDOW, FTS_CANDIDATES, VEC_CANDIDATES, query_terms
from .store import captures, fts, immediate, links, nodes, stream, vectors
from .errors import InvalidInput
from .timeutil import from_iso, to_iso

SYLLABLES = ["ka", "lo", "mi", "ra", "te", "su", "no", "vi", "pe", "da", "go", "ri", "shu", "ban", "tor", "el",
             "qua", "zen", "fi", "mor", "lin", "dex", "pol", "ar"]
TEMPLATES = [
    "The {n1} {v} the {a} {n2} in {scope} because the {n3} {v2} {n4}.",
    "Decision: use {n1} for {n2}; the {a} {n3} was too {a2} when we {v} {n4}.",
    "Remember that {n1} {v} {n2} every {n3}, and the {a} {n4} must {v2} first.",
    "Bug: {n1} {v} when {n2} is {a}; fixed by {v2} the {n3} before {n4}.",
    "{n1} prefers {a} {n2} over {a2} {n3}, especially for {n4} and {n5}.",
]


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Corpus:
    def __init__(self, seed: int, vocab_size: int = 8000):
        self.rng = random.Random(seed)
        self.words = _vocabulary(self.rng, vocab_size)
        weights = [1.0 / (rank + 1) ** 1.05 for rank in range(vocab_size)]
        self._cum = list(_accumulate(weights))

    def word(self) -> str:
        return self.rng.choices(self.words, cum_weights=self._cum)[0]

    def memory(self, scope: str) -> str:
        tpl = self.rng.choice(TEMPLATES)
        fields = {k: self.word() for k in ("n1", "n2", "n3", "n4", "n5", "v", "v2", "a", "a2")}
        first = tpl.format(scope=scope, **fields)
        extra = " ".join(self.word() for _ in range(self.rng.randint(8, 24)))
        return f"{first} Notes: {extra}."


def _accumulate(values):
    total = 0.0
    for v in values:
        total += v
        yield total


def scopes_for(n_scopes: int) -> list[str]:
    return ["personal"] + [f"project:p{i}" for i in range(1, n_scopes)]


def bulk_load(m: Memory, corpus: Corpus, n: int, scopes: list[str], batch: int = 2000, spread_days: int = 0) -> None:
    """`spread_days`: the memories' facts hold over that many past days, oldest first (daily and
    weekly digests are keyed on valid time; with 0 every memory is about today)."""
    made = 0
    start = from_iso(m.now())
    while made < n:
        size = min(batch, n - made)
        now = m.now()
        entries = []
        with immediate(m.conn):
            for i in range(size):
                scope = scopes[(made + i) % len(scopes)]
                body = corpus.memory(scope)
                session = f"bench-{(made + i) // 20}"
                key = stream.new_key()
                cid = captures.insert(m.conn, content=body, content_hash=text.sha256(body), scope=scope,
                                      source_tool="bench", session=session, recorded_at=now,
                                      stream_file=stream.file_for(now), stream_key=key)
                nid = nodes.insert(m.conn, capture_id=cid, unit_index=0, content=body,
                                   content_hash=text.sha256(body), norm_hash=text.norm_hash(body), scope=scope,
                                   source_tool="bench", session=session, recorded_at=now,
                                   valid_from=to_iso(start - dt.timedelta(days=spread_days - (made + i) * spread_days // n))
                                   if spread_days else now, actor="bench")
                vectors.enqueue(m.conn, nid, now)
                entries.append((cid, key, body))
            path = m.settings.stream_dir
            path.mkdir(parents=True, exist_ok=True)
            with open(path / stream.file_for(now), "ab") as fh:   # one fsync per batch: bulk load only
                for cid, key, body in entries:
                    fh.write(stream.encode_entry(cid, key, f"{now} bench", body.encode()))
                fh.flush()
                os.fsync(fh.fileno())
        made += size


def _pct(samples: list[float]) -> dict:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"p50": round(statistics.median(ordered), 3), "p95": round(p95, 3), "n": len(ordered)}


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


MCP_STARTS = 7

def _store_env(store: str) -> dict:
    """The environment of a process the bench starts: this run's store, whatever the bench's own."""
    return {**os.environ, "TIDEMIND_STORE": store}


def _mcp_and_hooks(home: str, store: str, probe: list[tuple[str, str]], corpus: Corpus, rounds: int) -> dict:
    """The same calls through a real stdio MCP client and in-process, and the hooks' wall time."""
    import json
    import subprocess
    import sys

    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import get_default_environment, stdio_client

    scope = "personal"
    questions = [q for q, s in probe if s == scope][:rounds] or [q for q, _ in probe][:rounds]
    bodies = [corpus.memory(scope) for _ in range(rounds)]
    timings: dict[str, list[float]] = {"mcp_recall_ms": [], "mcp_digest_ms": [], "inproc_recall_ms": [],
                                       "inproc_digest_ms": [], "mcp_start_ms": []}
    params = StdioServerParameters(command=sys.executable, args=["-m", "tidemind.cli", "--home", home, "serve",
                                                                 "--scope", scope],
                                   env={**get_default_environment(), "TIDEMIND_STORE": store})

    async def start_once() -> None:
        """A host starting the server: process spawn to `initialize` answered, official client."""
        start = time.perf_counter()
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                timings["mcp_start_ms"].append((time.perf_counter() - start) * 1000)

    for _ in range(MCP_STARTS):
        anyio.run(start_once)

    async def over_stdio():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for q in questions:
                    start = time.perf_counter()
                    await session.call_tool("brain_recall", {"query": q})
                    timings["mcp_recall_ms"].append((time.perf_counter() - start) * 1000)
                for body in bodies:
                    start = time.perf_counter()
                    await session.call_tool("brain_digest", {"content": body})
                    timings["mcp_digest_ms"].append((time.perf_counter() - start) * 1000)

    anyio.run(over_stdio)
    with Memory.open(home, store=store, readable_scopes=[scope], writable_scopes=[scope]) as m:
        for q in questions:
            timings["inproc_recall_ms"].append(_timed(lambda: m.recall(q)))
        for body in bodies:
            timings["inproc_digest_ms"].append(_timed(lambda: m.digest(body)))
    hooks: dict[str, list[float]] = {"hook_session_start_ms": [], "hook_user_prompt_ms": []}
    outside_git = tempfile.mkdtemp(prefix="tidemind-bench-cwd-")
    for q in questions[:20]:
        for name, event in (("session-start", {"cwd": outside_git}), ("user-prompt", {"cwd": outside_git, "prompt": q})):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "tidemind.cli", "--home", home, "hook", name],
                           input=json.dumps(event).encode(), capture_output=True, check=True, env=_store_env(store))
            hooks[f"hook_{name.replace('-', '_')}_ms"].append((time.perf_counter() - start) * 1000)
    shutil.rmtree(outside_git, ignore_errors=True)
    out = {k: _pct(v) for k, v in {**timings, **hooks}.items() if v}
    for arm in ("recall", "digest"):
        inner = out.get(f"inproc_{arm}_ms", {}).get("p50")
        if inner:
            out[f"mcp_{arm}_overhead_ratio"] = round(out[f"mcp_{arm}_ms"]["p50"] / inner, 2)
    return out


PROXY_CLIENTS = 20
PROXY_QUESTIONS = 100         # asked one at a time through the proxy and directly, for the added latency
ALL_TERMS_PROBES = 30


def _proxy_bench(home: str, store: str, probe: list[tuple[str, str]], seconds: int) -> dict:
    """`tidemind proxy` in front of a stand-in upstream that answers at once (proxy/stub.py):
    how long a request takes to reach the upstream through the proxy (recall and injection)
    against directly, how much later the first streamed event reaches the client once the upstream
    sent it, and PROXY_CLIENTS clients at once for `seconds`: every exchange stored, none lost."""
    import subprocess
    import sys
    import threading

    import httpx

    from .proxy.stub import StubUpstream

    stub = StubUpstream()
    proc = subprocess.Popen([sys.executable, "-m", "tidemind.cli", "--home", home, "proxy", "--listen", "127.0.0.1:0",
                             "--anthropic-upstream", stub.url, "--openai-upstream", stub.url, "--scope", "personal"],
                            stderr=subprocess.PIPE, text=True, env=_store_env(store))
    try:
        line = ""
        while "listening on" not in line:
            line = proc.stderr.readline()
            if not line:
                raise RuntimeError("the proxy did not start")
        url = line.split("listening on ", 1)[1].split()[0]
        threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
        questions = [q for q, _ in probe] or ["what about the harbour"]
        headers = {"x-api-key": "bench", "anthropic-version": "2023-06-01", "content-type": "application/json"}
        timings: dict[str, list[float]] = {"proxy_to_upstream_ms": [], "direct_to_upstream_ms": [],
                                           "proxy_first_event_after_upstream_ms": [],
                                           "direct_first_event_after_upstream_ms": []}
        with httpx.Client(timeout=60) as client:
            for warm in ("warm-up", "warm-up (streamed)"):      # (the proxy's first recall loads its embedder)
                client.post(url + "/v1/messages", headers=headers, content=json.dumps(
                    {"model": "stub", "max_tokens": 5, "stream": "streamed" in warm,
                     "messages": [{"role": "user", "content": warm}]}))
            for n, q in enumerate(questions):
                body = json.dumps({"model": "stub", "max_tokens": 50, "messages": [{"role": "user", "content": q}]})
                for where, base in (("proxy", url), ("direct", stub.url)):
                    marker = f"{where}-{n}"
                    start = time.perf_counter()
                    client.post(base + "/v1/messages", content=body, headers={**headers, "x-bench-marker": marker})
                    timings[f"{where}_to_upstream_ms"].append((stub.first_byte_at[marker] - start) * 1000)
                streamed = json.dumps({"model": "stub", "max_tokens": 50, "stream": True,
                                       "messages": [{"role": "user", "content": q + " (streamed)"}]})
                for where, base in (("proxy", url), ("direct", stub.url)):
                    marker = f"{where}-s{n}"
                    with client.stream("POST", base + "/v1/messages", content=streamed,
                                       headers={**headers, "x-bench-marker": marker}) as response:
                        first = True
                        for _ in response.iter_raw():
                            if first:
                                timings[f"{where}_first_event_after_upstream_ms"].append(
                                    (time.perf_counter() - stub.first_byte_at[marker]) * 1000)
                                first = False
        sent, failed, lock = [0], [0], threading.Lock()
        deadline = time.monotonic() + seconds

        def client_loop(k: int) -> None:
            with httpx.Client(timeout=120) as client:
                i = 0
                while time.monotonic() < deadline:
                    body = json.dumps({"model": "stub", "max_tokens": 50, "messages": [
                        {"role": "user", "content": f"load client {k} question {i}: {questions[i % len(questions)]}"}]})
                    try:
                        ok = client.post(url + "/v1/messages", content=body, headers=headers).status_code == 200
                    except httpx.HTTPError:
                        ok = False
                    with lock:
                        (sent if ok else failed)[0] += 1
                    i += 1

        threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(PROXY_CLIENTS)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
        # every answered exchange must reach the store: two memories each, waited for (the queue drains)
        with Memory.open(home, store=store) as m:
            wait_until = time.monotonic() + 600
            while True:
                stored = m.conn.execute("SELECT count(*) FROM nodes WHERE source_tool LIKE 'proxy%'"
                                        " AND content LIKE 'load client %'").fetchone()[0]
                if stored >= sent[0] or time.monotonic() > wait_until:
                    break
                time.sleep(0.2)
        out = {k: _pct(v) for k, v in timings.items()}
        out["proxy_added_ms_p50"] = round(out["proxy_to_upstream_ms"]["p50"] - out["direct_to_upstream_ms"]["p50"], 2)
        out["proxy_first_event_added_ms_p50"] = round(out["proxy_first_event_after_upstream_ms"]["p50"]
                                                      - out["direct_first_event_after_upstream_ms"]["p50"], 2)
        out["proxy_load"] = {"clients": PROXY_CLIENTS, "seconds": round(elapsed, 1), "answered": sent[0],
                             "failed": failed[0], "per_s": round(sent[0] / elapsed, 1), "stored": stored,
                             "lost": max(0, sent[0] - stored)}
        return out
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        stub.stop()


def make_vault(folder: Path, notes: int, corpus: Corpus, sections: int = 8) -> None:
    """A generated Obsidian vault shaped like a large documentation vault: ~4 KB notes in 20
    folders, each with frontmatter tags and an alias, an opening paragraph and `sections - 1`
    heading sections (so `sections` units a note), inline tags and links to other notes'
    headings and aliases."""
    rng = random.Random(11)
    for i in range(notes):
        sub = folder / f"area-{i % 20:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        parts = [f"---\ntags: [{corpus.word()}, {corpus.word()}]\naliases: [alias-{i}]\n"
                 f"created: 2026-0{1 + i % 9}-1{i % 9}\n---\n{corpus.memory('vault')} #{corpus.word()}\n"]
        for s in range(1, sections):
            target = rng.randrange(notes)
            links = (f"[[note-{target:05d}#Section {rng.randrange(1, max(2, sections))}]]"
                     f" and [[alias-{rng.randrange(notes)}]]")
            parts.append(f"\n## Section {s}\n{corpus.memory('vault')} #{corpus.word()} See {links}.\n")
        (sub / f"note-{i:05d}.md").write_text("".join(parts), encoding="utf-8")


def _import_bench(home: str, notes: int, corpus: Corpus) -> dict:
    """Cold import of a generated vault, a re-sync with nothing changed, and a re-sync after one
    note changed (the whole folder read, one note parsed), through `importers.engine.sync`."""
    from .importers.engine import sync

    folder = Path(tempfile.mkdtemp(prefix="tidemind-vault-"))
    try:
        make_vault(folder, notes, corpus)
        with Memory.open(home) as m:
            t0 = time.perf_counter()
            cold = sync(m, "obsidian", folder, "vault:bench")
            cold_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            again = sync(m, "obsidian", folder, "vault:bench")
            resync_s = time.perf_counter() - t0
            edited = next(folder.glob("area-00/*.md"))
            edited.write_text(edited.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
            t0 = time.perf_counter()
            one = sync(m, "obsidian", folder, "vault:bench")
            one_s = time.perf_counter() - t0
        return {"import_notes": notes, "import_units": cold["created"], "import_cold_s": round(cold_s, 2),
                "import_resync_s": round(resync_s, 2), "import_resync_changed": again["created"] + again["updated"],
                "import_resync_batch": again["batch"], "import_one_edit_s": round(one_s, 2),
                "import_one_edit_changed": one["created"] + one["updated"],
                "import_longest_write_s": cold["longest_write_s"], "import_writes": cold["writes"]}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def hostile_notes(folder: Path, units: int) -> dict[str, tuple[str, str]]:
    """Notes built to be slow (issue 29 item 11): name -> (importer, folder). A note of `units`
    sections under one heading ('Todo', 'Todo (2)'...), one of `units` sections each linking to
    another's heading, a Logseq page of `units` blocks (synced again after one block is added
    above them: `logseq-page` is that re-sync), and a YAML alias bomb (9 levels of nine aliases)."""
    made = {}
    for name, source, rel, body in (
            ("same-heading", "obsidian", "same-heading.md", "".join(f"## Todo\nitem {i}\n" for i in range(units))),
            ("linked-headings", "obsidian", "linked-headings.md",
             "".join(f"# Part {i}\nsee [[#Part {units - 1 - i}]]\n" for i in range(units))),
            ("logseq-page", "logseq", "pages/page.md", "".join(f"- item {i}\n" for i in range(units))),
            ("alias-bomb", "obsidian", "bomb.md",
             "---\na: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n" for p, c in
                                                          zip("abcdefgh", "bcdefghi"))
             + "---\nThe body of the alias bomb.\n")):
        root = folder / name
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body, encoding="utf-8")
        made[name] = (source, str(root))
    return made


def _hostile_bench(home: str, units: int) -> dict:
    """Import each hostile note into its own folder: seconds, units made, and what was skipped."""
    from .importers.engine import sync

    folder = Path(tempfile.mkdtemp(prefix="tidemind-hostile-"))
    out: dict = {"hostile_units": units}
    try:
        with Memory.open(home) as m:
            for name, (source, root) in hostile_notes(folder, units).items():
                t0 = time.perf_counter()
                r = sync(m, source, root, f"bench:{name}")
                if name == "logseq-page":            # the re-sync after a block was added at the top
                    page = Path(root) / "pages" / "page.md"
                    page.write_text("- a new first block\n" + page.read_text(encoding="utf-8"), encoding="utf-8")
                    t0 = time.perf_counter()
                    r = sync(m, source, root, f"bench:{name}")
                out[f"hostile_{name.replace('-', '_')}"] = {
                    "s": round(time.perf_counter() - t0, 2), "created": r["created"],
                    "unchanged": r["unchanged"], "skipped": [s["reason"] for s in r["skipped"]]}
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _seed_syntheses(m: Memory, scopes: list[str], clustered: float = 0.5, corrected: float = 0.01) -> dict:
    """Work for the synthesis tasks, as a linked and corrected store would give them: `clustered`
    of each scope's memories in chains of four joined by confirmed links (what link-evaluate leaves
    on related memories; the synthetic corpus is too random for the linker to find any), and
    `corrected` of all memories corrected once."""
    started = time.perf_counter()
    clusters = 0
    for scope in scopes:
        by_day = nodes.ids_by_valid_day(m.conn, scope)
        ids = [i for day in sorted(by_day) for i in by_day[day]]
        chained = ids[: int(len(ids) * clustered) // 4 * 4]
        with immediate(m.conn):
            for start in range(0, len(chained), 4):
                group = chained[start:start + 4]
                for a, b in zip(group, group[1:]):
                    links.add(m.conn, a, b, status="confirmed", proposed_by="bench", at=m.now())
                clusters += 1
    every = max(1, int(1 / corrected)) if corrected else 0
    fixed = 0
    if every:
        for (node_id,) in m.conn.execute("SELECT id FROM nodes WHERE status = 'live' ORDER BY id").fetchall()[::every]:
            m.correct(node_id, nodes.get_any(m.conn, node_id)["content"] + " Corrected: the second step comes first.")
            fixed += 1
    return {"clusters": clusters, "corrections": fixed, "seconds": round(time.perf_counter() - started, 2)}


def _metabolism(m: Memory, cap: int) -> dict:
    """The offline metabolism on the loaded store (already embedded): each task runs batch after
    batch until it reports no more work or has handled `cap` nodes; throughput is nodes per
    second of that task's wall time. The store stays full size, so every neighbour query a task
    makes runs at scale."""
    from .metabolism.scheduler import ordered_tasks, owner_id, run_task

    out: dict[str, dict] = {}
    total_start = time.perf_counter()
    work_keys = {"embed": "embedded", "annotate": "annotated", "link-propose": "nodes", "dedup": "nodes",
                 "contradict": "nodes", "crystallize": "crystals", "temporal": "digests", "lessons": "lessons"}
    for task in ordered_tasks():
        if task.needs_llm or task.name == "embed":
            continue
        start = time.perf_counter()
        done, reports = 0, 0
        while True:
            r = run_task(m, task, owner_id(), batch=min(1000, cap))
            reports += 1
            step = r.get(work_keys.get(task.name, ""), 0) if task.name in work_keys else 0
            done += step
            if r["status"] != "ok" or not step or done >= cap or reports > 200:
                break
        seconds = time.perf_counter() - start
        out[task.name] = {"seconds": round(seconds, 2), "nodes": done,
                          "nodes_per_s": round(done / seconds, 1) if done and seconds else None,
                          **({"error": r.get("error") or r.get("why") or r["status"]} if r["status"] != "ok" else {})}
        if task.name in ("crystallize", "temporal", "lessons"):      # these count syntheses, not nodes
            out[task.name]["made"] = out[task.name].pop("nodes")
            out[task.name]["per_s"] = out[task.name].pop("nodes_per_s")
    return {"metabolism": out, "metabolism_cap": cap, "metabolism_total_s": round(time.perf_counter() - total_start, 1),
            "metabolism_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


FILLS = ("copy", "load")


def run_side_by_side(store: str, fill: str = "copy", **options) -> dict:
    """The bench on a server store and, in the same run, on SQLite with the same corpus:
    `tidemind --store postgresql://… bench`. The server store must be empty. `fill`: "copy" loads
    the corpus into SQLite once and copies that store to the server (`tidemind migrate`: the same
    memories under the same ids, and at a million memories hours faster than loading the server
    row by row); "load" loads each store on its own from the same seed (times the server's own
    write path)."""
    from .store.backend import locate

    if fill not in FILLS:
        raise InvalidInput(f"unknown fill {fill!r}: one of {', '.join(FILLS)}")
    home = options.pop("home", None)
    temp = tempfile.mkdtemp(prefix="tidemind-bench-")
    try:
        with Memory.open(Path(temp) / "check", store=store) as m:
            if m.stats()["nodes"]["live"] or m.stats()["captures"]:
                raise InvalidInput(f"the bench fills its store: {locate(store, Path(temp))} is not empty")
        runs = {}
        server = locate(store, Path(temp)).scheme
        homes = {"sqlite": str(Path(home or temp) / "sqlite"), server: str(Path(home or temp) / server)}
        # every Memory of the bench names its store: the bench's own setting must not leak into one
        outer = os.environ.pop("TIDEMIND_STORE", None)
        try:
            filled = {}
            if fill == "copy" and options.get("n_nodes", 10_000):
                filled = _fill_and_copy(homes["sqlite"], store, options)
            for name, where in (("sqlite", None), (server, store)):
                extra = {} if name == "sqlite" else {"import_notes": 0, "hostile_units": 0}   # (file imports: once)
                runs[name] = run_bench(home=homes[name], store=where,
                                       filled=filled.get("sqlite" if name == "sqlite" else "server"),
                                       **{**options, **extra})
        finally:
            if outer is not None:
                os.environ["TIDEMIND_STORE"] = outer
        return {"nodes": options.get("n_nodes", 10_000), "fill": fill, "side_by_side": runs}
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _fill_and_copy(home: str, store: str, options: dict) -> dict:
    """Load and embed the corpus into the SQLite store of `home`, then copy that store whole to the
    (empty) server `store`; what each took, as run_bench's `filled`."""
    corpus = Corpus(options.get("seed", 7))
    n = options.get("n_nodes", 10_000)
    with Memory.open(home) as m:
        t0 = time.perf_counter()
        bulk_load(m, corpus, n, scopes_for(options.get("n_scopes", 10)), spread_days=60 if options.get("metabolism") else 0)
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        embedded = m.embed_pending(batch=1000)["embedded"]
        embed_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        m.migrate_to(store)
        copy_s = time.perf_counter() - t0
    return {"sqlite": {"load_s": load_s, "embed_s": embed_s, "embedded": embedded},
            "server": {"load_s": copy_s, "embed_s": 0.0, "embedded": embedded, "copied": True}}


def _settle(conn) -> None:
    """The store as a person's would be after a quiet while: statistics gathered, the log folded in."""
    from .store.connection import checkpoint, dialect

    if dialect(conn) == "sqlite":
        conn.execute("PRAGMA optimize")
        checkpoint(conn)
    else:
        conn.execute("ANALYZE")


def run_bench(n_nodes: int = 10_000, queries: int = 200, digests: int = 200, home: str | None = None,
              seed: int = 7, n_scopes: int = 10, mcp: bool = True, metabolism: int = 0,
              import_notes: int = 0, hostile_units: int = 0, store: str | None = None,
              filled: dict | None = None, proxy_seconds: int = 0) -> dict:
    """`metabolism`: time the offline tasks over up to this many nodes each (0: skip);
    `import_notes`: time importing a generated vault of this many notes (0: skip);
    `hostile_units`: time importing notes built to be slow, of this many sections (0: skip);
    `store`: a server store to fill (None: the home's own SQLite file); `filled`: the store holds
    the corpus already (run_side_by_side's copy), with what loading and embedding it took."""
    temp = None
    if home is None:
        temp = tempfile.mkdtemp(prefix="tidemind-bench-")
        home = temp
    store = store or str(Path(home) / "tidemind.db")
    try:
        corpus = Corpus(seed)
        if n_nodes == 0:                   # `--nodes 0 --import-notes N`: the import alone
            return {"nodes": 0, **(_import_bench(str(Path(home) / "import-bench"), import_notes, corpus)
                                   if import_notes else {}),
                    **(_hostile_bench(str(Path(home) / "hostile-bench"), hostile_units) if hostile_units else {})}
        scopes = scopes_for(n_scopes)
        m = Memory.open(home, store=store)
        if filled:
            load_s, embed_s, embedded = filled["load_s"], filled["embed_s"], filled["embedded"]
        else:
            t0 = time.perf_counter()
            # the metabolism's digests need days to digest: spread the facts over the last 60 days then
            bulk_load(m, corpus, n_nodes, scopes, spread_days=60 if metabolism else 0)
            load_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            embedded = m.embed_pending(batch=1000)["embedded"]
            embed_s = time.perf_counter() - t0
        meta = {}
        if metabolism:
            meta["synthesis_seed"] = _seed_syntheses(m, scopes)
            meta.update(_metabolism(m, metabolism))
        _settle(m.conn)

        rng = random.Random(seed + 1)
        # the same memories asked about on every store the corpus was loaded into (ids are given in
        # order from 1 on each, and a copy keeps them): a seeded sample, not the database's random()
        top = nodes.newest_id(m.conn)
        sample_ids = sorted(rng.sample(range(1, top + 1), min(queries, top)))
        probe: list[tuple[str, str]] = []
        for nid in sample_ids:
            row = nodes.get_any(m.conn, nid)
            if row is None:
                continue
            words = text.content_words(row["content"])
            picked = rng.sample(words, k=min(len(words), rng.randint(2, 4)))
            probe.append((" ".join(["what", "about"] + picked), row["scope"]))
        # the proxy recalls in one scope: its questions are about that scope's memories (the sample
        # above holds about a tenth of them, too few for a median)
        proxy_probe: list[tuple[str, str]] = []
        if proxy_seconds:
            personal = nodes.visible_ids(m.conn, ["personal"])
            for nid in sorted(rng.sample(personal, min(PROXY_QUESTIONS, len(personal)))):
                words = text.content_words((nodes.get_any(m.conn, nid) or {}).get("content", ""))
                picked = rng.sample(words, k=min(len(words), rng.randint(2, 4)))
                proxy_probe.append((" ".join(["what", "about"] + picked), "personal"))

        recall_ms, recall_all_ms, fts_ms, fts_all_terms_ms, vec_ms = [], [], [], [], []
        fts_only_ms, vector_only_ms, prepare_ms = [], [], []
        emb = m.embedder
        for q, scope in probe:
            recall_ms.append(_timed(lambda: m.recall(q, scopes=[scope])))
            fts_only_ms.append(_timed(lambda: m.recall(q, scopes=[scope], use_vectors=False, record=False)))
            vector_only_ms.append(_timed(lambda: m.recall(q, scopes=[scope], use_lexical=False, record=False)))
        for q, scope in probe[: max(1, len(probe) // 4)]:
            prepare_ms.append(_timed(lambda: m.prepare(hint=q, scopes=[scope])))
        for q, scope in probe[: max(1, len(probe) // 4)]:
            recall_all_ms.append(_timed(lambda: m.recall(q, all_scopes=True)))
        for n, (q, scope) in enumerate(probe):
            # the same FTS5 query the arm runs first (see search.recall.fts_arm), minus join and predicate
            terms, all_common = query_terms(m.conn, q, [scope])
            expression = fts.match_expression(terms, "AND" if all_common and len(terms) > 1 else "OR")
            window = nodes.window_start(m.conn, [scope], COMMON_WINDOW) if all_common else None
            if expression:
                fts_ms.append(_timed(lambda: fts.bare_search(m.conn, expression, FTS_CANDIDATES, window)))
            if n < ALL_TERMS_PROBES:
                # (every word of the question over every scope: on PostgreSQL at a million memories
                # each one ranks a few hundred thousand rows, seconds apiece, so a sample)
                unpruned = fts.match_expression([w for w in fts.tokens(q) if w not in text.STOPWORDS])
                fts_all_terms_ms.append(_timed(lambda: fts.bare_search(m.conn, unpruned, FTS_CANDIDATES)))
            qv = emb.embed([q])[0]
            vec_ms.append(_timed(lambda: vectors.knn_candidates(m.conn, qv, [scope], emb.name, VEC_CANDIDATES)))
        digest_ms = []
        for i in range(digests):
            body = corpus.memory(scopes[i % len(scopes)])
            digest_ms.append(_timed(lambda: m.digest(body, scope=scopes[i % len(scopes)], session=f"d{i // 10}",
                                                     source_tool="bench")))
        m.embed_pending()    # steady state for what follows: an MCP server started with a backlog embeds it first
        db_bytes = m.stats()["db_bytes"]
        result = {
            "nodes": n_nodes,
            "scopes": len(scopes),
            "embedder": emb.name,
            "digest_ms": _pct(digest_ms),
            "recall_ms": _pct(recall_ms),
            "recall_all_scopes_ms": _pct(recall_all_ms),
            "recall_fts_only_ms": _pct(fts_only_ms),
            "recall_vector_only_ms": _pct(vector_only_ms),
            "prepare_ms": _pct(prepare_ms),
            "fts_floor_ms": _pct(fts_ms),
            "vec_floor_ms": _pct(vec_ms),
            "fts_all_terms_ms": _pct(fts_all_terms_ms),
            "load_s": round(load_s, 2),
            **({"filled_by_copy": True} if filled and filled.get("copied") else {}),
            "embed_s": round(embed_s, 2),
            "embedded": embedded,
            "db_bytes_per_1000_nodes": int(db_bytes / max(1, n_nodes) * 1000),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            **meta,
        }
        floor = result["fts_floor_ms"]["p50"] + result["vec_floor_ms"]["p50"]
        result["recall_over_floors"] = round(result["recall_ms"]["p50"] / floor, 2) if floor else None
        m.close()
        if mcp:
            result.update(_mcp_and_hooks(str(home), store, probe, corpus, rounds=min(queries, 50)))
        if proxy_seconds:
            result.update(_proxy_bench(str(home), store, proxy_probe, proxy_seconds))
        if import_notes:
            result.update(_import_bench(str(Path(home) / "import-bench"), import_notes, corpus))
        if hostile_units:
            result.update(_hostile_bench(str(Path(home) / "hostile-bench"), hostile_units))
        return result
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)


def _format_import(r: dict) -> str:
    return (f"  import of a generated vault of {r['import_notes']:,} notes ({r['import_units']:,} units):"
            f" cold {r['import_cold_s']} s ({r['import_units'] / max(r['import_cold_s'], 0.001):,.0f} units/s),"
            f" no-change re-sync {r['import_resync_s']} s, re-sync after one edit {r['import_one_edit_s']} s;"
            f" {r['import_writes']:,} write transactions, the longest {r['import_longest_write_s']} s")


def _format_hostile(r: dict) -> str:
    lines = [f"  notes built to be slow ({r['hostile_units']:,} sections or blocks; issue 29 item 11):"]
    for name, what in (("same_heading", "one heading repeated"), ("linked_headings", "headings linking to each other"),
                       ("logseq_page", "Logseq page, re-sync after a block added on top"),
                       ("alias_bomb", "YAML alias bomb, 9 levels")):
        v = r[f"hostile_{name}"]
        skipped = f"; skipped: {v['skipped'][0]}" if v["skipped"] else ""
        lines.append(f"  {what:<50}{v['s']:>8} s  {v['created']:,} created, {v['unchanged']:,} unchanged{skipped}")
    return "\n".join(lines)


SIDE_BY_SIDE = ("digest_ms", "recall_ms", "recall_fts_only_ms", "recall_vector_only_ms", "recall_all_scopes_ms",
                "fts_floor_ms", "vec_floor_ms", "prepare_ms", "mcp_start_ms", "mcp_recall_ms", "mcp_digest_ms",
                "hook_session_start_ms", "hook_user_prompt_ms")


def format_side_by_side(r: dict) -> str:
    runs = r["side_by_side"]
    names = list(runs)
    first = runs[names[0]]
    lines = [f"TideMind bench, {r['nodes']:,} nodes in {first['scopes']} scopes, the same corpus on each store",
             "  " + " · ".join(f"{n}: {'copied from sqlite in' if v.get('filled_by_copy') else 'load'} {v['load_s']} s,"
                               f" embed {v['embed_s']} s, {v['db_bytes_per_1000_nodes']:,} bytes/1000 nodes"
                               for n, v in runs.items()), "",
             f"  {'measure (ms)':<24}" + "".join(f"{n + ' p50':>16}{n + ' p95':>16}" for n in names)]
    for key in SIDE_BY_SIDE:
        if all(key in v for v in runs.values()):
            lines.append(f"  {key:<24}" + "".join(f"{runs[n][key]['p50']:>16}{runs[n][key]['p95']:>16}" for n in names))
    lines.append("\n  recall p50 / floors: " + ", ".join(f"{n} {v['recall_over_floors']}" for n, v in runs.items()))
    return "\n".join(lines)


def format_table(r: dict) -> str:
    if "side_by_side" in r:
        return format_side_by_side(r)
    if not r["nodes"]:
        parts = ([_format_import(r)] if "import_cold_s" in r else []) + (
            [_format_hostile(r)] if "hostile_units" in r else [])
        return "\n\n".join(parts) or "nothing measured (--nodes 0 and no --import-notes or --hostile-notes)"
    lines = [f"TideMind bench: {r['nodes']:,} nodes in {r['scopes']} scopes, embedder {r['embedder']}",
             f"  load {r['load_s']} s, embed {r['embed_s']} s, {r['db_bytes_per_1000_nodes']:,} bytes/1000 nodes,"
             f" peak RSS {r['peak_rss_mb']} MB", "",
             f"  {'measure':<24}{'p50 ms':>10}{'p95 ms':>10}{'n':>8}"]
    for key in ("digest_ms", "recall_ms", "recall_fts_only_ms", "recall_vector_only_ms", "recall_all_scopes_ms",
                "fts_floor_ms", "vec_floor_ms", "fts_all_terms_ms", "prepare_ms",
                "mcp_start_ms", "mcp_recall_ms", "inproc_recall_ms", "mcp_digest_ms", "inproc_digest_ms",
                "hook_session_start_ms",
                "hook_user_prompt_ms", "proxy_to_upstream_ms", "direct_to_upstream_ms",
                "proxy_first_event_after_upstream_ms", "direct_first_event_after_upstream_ms"):
        if key in r:
            v = r[key]
            lines.append(f"  {key:<24}{v['p50']:>10}{v['p95']:>10}{v['n']:>8}")
    lines.append(f"\n  recall p50 / (fts floor p50 + vec floor p50) = {r['recall_over_floors']}")
    if "mcp_recall_overhead_ratio" in r:
        lines.append(f"  MCP round trip / in-process (p50): recall {r['mcp_recall_overhead_ratio']},"
                     f" digest {r['mcp_digest_overhead_ratio']}")
    if "proxy_load" in r:
        load = r["proxy_load"]
        lines.append(f"  proxy: adds {r['proxy_added_ms_p50']} ms (p50) before the upstream is asked, and"
                     f" {r['proxy_first_event_added_ms_p50']} ms to a streamed event; {load['clients']} clients for"
                     f" {load['seconds']} s: {load['answered']:,} answered ({load['per_s']}/s), {load['failed']} failed,"
                     f" {load['stored']:,} stored, {load['lost']} lost")
    if "import_cold_s" in r:
        lines.append("\n" + _format_import(r))
    if "hostile_units" in r:
        lines.append("\n" + _format_hostile(r))
    if "metabolism" in r:
        lines.append(f"\n  offline metabolism on the {r['nodes']:,}-node store (up to {r['metabolism_cap']:,} nodes a task):"
                     f" {r['metabolism_total_s']} s in all")
        for name, v in r["metabolism"].items():
            if "made" in v:
                rate = f"{v['made']} made ({v['per_s']}/s)" if v["made"] else ""
            else:
                rate = f"{v['nodes_per_s']} nodes/s" if v["nodes_per_s"] else ""
            lines.append(f"  {name:<16}{v['seconds']:>8} s  {rate}" + (f"  ({v['error']})" if v.get("error") else ""))
        lines.append(f"  peak RSS after the metabolism {r['metabolism_peak_rss_mb']} MB (the seed for the syntheses:"
                     f" {r['synthesis_seed']['clusters']:,} linked chains of four,"
                     f" {r['synthesis_seed']['corrections']:,} corrections)")
    return "\n".join(lines)
