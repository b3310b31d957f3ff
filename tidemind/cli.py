"""The `tidemind` command: a thin shell over `tidemind.memory.Memory`.

User mistakes end with a non-zero exit and one clear line on stderr (or `{"error": ...}` with
--json); only bugs print a traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable

from .errors import InvalidInput, TideMindError, parse_id


def _read_text(value: str):
    """'-' reads stdin as bytes so invalid UTF-8 is reported, not silently replaced."""
    if value == "-":
        return sys.stdin.buffer.read()
    return value


def _emit(args, payload: dict, human: Callable[[dict], str]) -> None:
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, indent=None))
    else:
        print(human(payload))


def _memory(args):
    from .memory import Memory

    return Memory.open(args.home)


def _fmt_digest(r: dict) -> str:
    stored, _, held = r["done"].partition("; ")
    lines = [f"{stored} in scope {r.get('scope', '?')}: node(s) {', '.join(map(str, r['node_ids']))}"
             f" (capture {r['capture_id']})" + (f"\n{held}" if held else "")]
    lines += [f"warning: {w}" for w in r["warnings"]]
    for q in r.get("questions", []):
        lines.append(f"question {q['question_id']} (node {q['node_id']}): {q['question']}")
        lines.append(f"  answer: tidemind clarify answer {q['question_id']} \"...\"   or skip: tidemind clarify skip"
                     f" {q['question_id']}")
    return "\n".join(lines)


def _fmt_item(item: dict, width: int = 100) -> str:
    content = item["content"]
    head = (f"[{item['id']}] score={item['score']} scope={item['scope']} recorded={item['recorded_at'][:19]}"
            f" by={item.get('written_by', 'system')}")
    if item["flags"]:
        head += " flags=" + ",".join(item["flags"])
    tags = ", ".join(f"{t['name']}({t['status']})" for t in item["tags"])
    links = ", ".join(f"{l['relation']}->{l['target']}({l['status']})" for l in item["links"])
    body = "\n".join("    " + line for line in content.splitlines()[:12])
    extra = (f"\n    tags: {tags}" if tags else "") + (f"\n    links: {links}" if links else "")
    return f"{head}\n{body}{extra}"


def _fmt_recall(r: dict) -> str:
    searched = f"(searched scope{'s' if len(r['scopes']) > 1 else ''}: {', '.join(r['scopes'])};" \
               " --scope S or --all-scopes to widen)"
    degraded = f"(degraded: {r['degraded']})\n" if r.get("degraded") else ""
    period = r.get("period")
    digests = ""
    if period and period["digests"]:          # the question named a week or day that has digests
        digests = f"\n\ndigests of {period['period']} (derived):\n" + _fmt_digests(period)
    if r["abstained"]:
        return f"{degraded}(abstained) {r['message']}\n{searched}{digests}"
    lines = ([degraded.strip()] if degraded else []) + [_fmt_item(i) for i in r["items"]]
    if r.get("clarify"):
        c = r["clarify"]
        lines.append(f"\n{c['question']}")
        lines += [f"  {g['choice']}: node(s) {', '.join(map(str, g['ids']))}   (--choose \"{g['choice']}\")"
                  for g in c["groups"]]
    elif r.get("chosen"):
        lines.append(f"\n(answered for {r['chosen']})")
    return "\n".join(lines) + digests


def _fmt_show(r: dict) -> str:
    src = r["source"]
    origin = ", ".join(f"{k} {v}" for k, v in (("tool", src["tool"]), ("session", src["session"]),
                                                 ("capture", src["capture"])) if v)
    lines = [f"node {r['id']} · {r['status']} · scope {r['scope']}" + (f" · {origin}" if origin else ""),
             f"valid from {r['valid_from']} to {r['valid_to'] or 'now'} · recorded {r['recorded_at']}"]
    if r.get("note"):
        n = r["note"]
        lines.append(f"from the note \"{n['note']}\" ({n['file']} in {n['folder']})"
                     + (f", under {' › '.join(n['headings'])}" if n["headings"] else ""))
    lines += ["", r["content"], ""]
    for c in r.get("clarified", []):
        lines.append(f"clarified ({c['by']}, {c['at'][:10]}): {c['term']}: {c['answer']}")
    for name, d in r["derived"].items():
        lines.append(f"derived {name} ({d['generator']}): {d['value']}")
    if r["tags"]:
        lines.append("tags: " + ", ".join(f"{t['name']} ({t['status']})" for t in r["tags"]))
    outgoing = [l for l in r["links"] if l.get("direction", "out") == "out"]
    incoming = [l for l in r["links"] if l.get("direction") == "in"]
    if outgoing:
        lines.append("links: " + ", ".join(f"{l['relation']} -> {l['target']} ({l['status']})" for l in outgoing))
    if incoming:
        lines.append("linked from: " + ", ".join(f"{l['target']} {l['relation']} this ({l['status']})"
                                                 for l in incoming))
    if len(r["versions"]) > 1:
        lines.append("versions:")
        for v in r["versions"]:
            text = (v["content"] or "(text not shown)").splitlines()[0][:80] if v["content"] else "(text not shown)"
            lines.append(f"  v{v['version']} node {v['id']} {v['status']} ({v['reason']}): {text}")
    if r["flags"]:
        lines.append("flags: " + ", ".join(r["flags"]))
    return "\n".join(lines)


def _fmt_kv(r: dict) -> str:
    return json.dumps(r, indent=2, ensure_ascii=False)


def cmd_init(args):
    with _memory(args) as m:
        if m.read_only:               # readable, but not "ready": nothing could be written there
            from .errors import StorageError

            raise StorageError(m.read_only)
        _emit(args, {"home": str(m.settings.home), "db": str(m.settings.store_location)},
              lambda r: f"TideMind home ready at {r['home']}")


def cmd_digest(args):
    with _memory(args) as m:
        r = m.digest(_read_text(args.text), scope=args.scope, valid_at=args.valid_at,
                     source_tool=args.source_tool, session=args.session)
        _emit(args, r, _fmt_digest)


def cmd_recall(args):
    with _memory(args) as m:
        r = m.recall(args.query, scopes=args.scope, all_scopes=args.all_scopes, tags_filter=args.tag or (),
                     source=args.source, limit=args.limit, as_of=args.as_of, clock=args.clock, choose=args.choose)
        _emit(args, r, _fmt_recall)


def _fmt_questions(r: dict) -> str:
    if not r["questions"]:
        return "no open questions" if r["state"] == "open" else "no questions"
    lines = []
    for q in r["questions"]:
        state = ("waiting, out of search until " + q["hold_until"][:16].replace("T", " ") + " UTC") if q["held"] \
            else q["state"] if q["state"] != "open" else "open (its time limit passed: searchable)"
        unit = " ".join(q["content"].split())
        lines += [f"question {q['id']} · node {q['node_id']} · {q['scope']} · {state}",
                  f"  \"{unit[:160]}{'…' if len(unit) > 160 else ''}\"", f"  {q['question']}"]
        if q["options"] and q["state"] == "open":
            lines.append("  e.g. " + " | ".join(q["options"]))
        if q.get("answer"):
            lines.append(f"  answered: {q['answer']}")
    return "\n".join(lines)


def cmd_clarify(args):
    with _memory(args) as m:
        m.actor = "person:cli"
        if args.action == "list":
            state = None if args.all else "open"
            r = {"state": state, "questions": m.clarify_questions(scopes=args.scope, state=state)}
            _emit(args, r, _fmt_questions)
            return
        if args.id is None:
            raise InvalidInput(f"clarify {args.action} needs the question's id (see `tidemind clarify`)")
        if args.action == "skip":
            r = m.clarify_skip(args.id, by_node=args.node)
        else:
            if not args.answer:
                raise InvalidInput('clarify answer needs the answer text: tidemind clarify answer ID "..."')
            r = m.clarify_answer(args.id, _read_text(" ".join(args.answer)), by_node=args.node)
            for w in r["warnings"]:
                print(f"warning: {w}", file=sys.stderr)
        _emit(args, r, lambda r: r["done"])


def _id_arg(text: str) -> int:
    """The CLI reads ids as text; the core takes whole numbers only (never text or booleans)."""
    return parse_id(text)


def _id_type(text: str) -> int:
    """argparse's type for every id argument: `type=int` took "1_0" as 10 and "３" as 3. Its
    InvalidInput is not a ValueError, so argparse lets it through to main(), which says it in one
    line with exit 1 like every other refusal."""
    return parse_id(text)


def cmd_show(args):
    with _memory(args) as m:
        _emit(args, m.show(_id_arg(args.id), scopes=args.scope, as_of=args.as_of, clock=args.clock), _fmt_show)


def cmd_correct(args):
    with _memory(args) as m:
        r = m.correct(args.id, _read_text(args.text), valid_at=args.valid_at)
        _emit(args, r, lambda r: "\n".join([r["done"], *[f"warning: {w}" for w in r["warnings"]]]))


def _simple(verb):
    def run(args):
        with _memory(args) as m:
            m.actor = "person:cli"              # a person's act, like the other decisions (and undone as one)
            _emit(args, getattr(m, verb)(args.id),
                  lambda r: "\n".join([r["done"], *[f"warning: {w}" for w in r.get("warnings", [])]]))
    return run


def cmd_stats(args):
    with _memory(args) as m:
        _emit(args, m.stats(args.scope), _fmt_kv)


def _fmt_provider(what: str, s: dict) -> str:
    reach = {True: "reachable", False: f"unreachable ({s.get('error')})", None: "-"}[s["reachable"]]
    if s.get("unusable"):
        reach = f"cannot be used ({s['unusable']})"
    line = f"{what}: {s['configured']} · {reach} · {s['state']}"
    if s.get("state") == "unreachable":
        line += f" since {s['last_failure_at']} ({s['failures']} failed attempt(s); next try {s['retry_at']})"
    elif s.get("last_error"):
        line += f" (last error {s['last_failure_at']}: {s['last_error']})"
    return line


def cmd_doctor(args):
    from .config import load_settings

    location = load_settings(args.home).store_location
    if location.path is not None and not location.path.exists():
        # (doctor looks; it never makes a store where there was none)
        raise InvalidInput(f"no store at {location.path} yet: `tidemind init` makes one, or the first digest does")
    with _memory(args) as m:
        if args.prune_orphans:
            _emit(args, m.prune_stream(), lambda r: r["done"])
            return
        r = m.doctor()
        _emit(args, r, lambda r: "\n".join([f"{k}: {v}" for k, v in r["checks"].items()]
                                            + [_fmt_provider(k, v) for k, v in r["providers"].items()] + r["notes"]
                                            + [f"problem: {p}" for p in r["problems"]]
                                            + [("healthy" if r["ok"] else "PROBLEMS FOUND")]))
        if not r["ok"]:
            sys.exit(1)


def _fmt_digests(r: dict) -> str:
    if not r["digests"]:
        what = r.get("week") or r.get("day") or "any period"
        return f"no digest of {what} in {', '.join(r['scopes'])} (a period gets one once it is over)"
    lines = []
    for d in r["digests"]:
        lines.append(f"{d['period']} · {d['scope']} · {d['kind']} ({d['status']}; {d['generator']})")
        if d["title"]:
            lines.append(f"  {d['title']}")
        lines += [f"  {line}" for line in d["text"].splitlines()]
    return "\n".join(lines)


def cmd_digests(args):
    with _memory(args) as m:
        _emit(args, m.digests(scopes=args.scope, week=args.week, day=args.day, limit=args.limit), _fmt_digests)


def cmd_restore(args):
    # not through Memory.open: a damaged store, or one a newer TideMind wrote, must be restorable
    from .config import load_settings
    from .memory import Memory
    from .restore import restore
    from .timeutil import system_clock, to_iso

    r = restore(load_settings(args.home), args.path, to_iso(system_clock()))
    with Memory.open(args.home) as m:
        r["doctor"] = m.doctor()
    _emit(args, r, lambda r: f"restored {r['restored']} ({r['stream_entries']} stream entries rebuilt"
                             + (f", migrated {len(r['migrated'])}" if r["migrated"] else "") + ");"
                             f" the previous store is kept in {r['kept_previous']};"
                             f" doctor: {'ok' if r['doctor']['ok'] else 'PROBLEMS: ' + '; '.join(r['doctor']['problems'])}")


def cmd_migrate(args):
    with _memory(args) as m:
        r = m.migrate_to(args.to)
    _emit(args, r, _fmt_migrate)
    if not r["recall"]["ok"]:
        raise SystemExit(1)      # copied and checked row by row, but recall does not agree: said above


def _fmt_migrate(r: dict) -> str:
    rows = sum(r["rows"].values())
    recall = r["recall"]
    lines = [f"copied {r['from']} to {r['to']}: {rows:,} rows in {len(r['rows'])} tables,"
             f" {sum(r['indexed'].values()):,} vectors indexed, {r['stream_entries']:,} stream entries written",
             f"authored text: nodes sha256 {r['authored_sha256']['nodes'][:16]}…, captures sha256"
             f" {r['authored_sha256']['captures'][:16]}… (the same in both)",
             f"recall: {recall['same_order']} of {recall['queries']} sampled queries answer in the same order;"
             f" {'ok' if recall['ok'] else 'NOT the same'} by the rule for this copy: {recall['rule']}"]
    if recall["found_by_source_not_target"]:
        lines.append(f"  memories the source finds and the copy does not: {recall['found_by_source_not_target']}")
    for d in recall["differ"][:5]:
        lines.append(f"  differs: {d['query']!r} in {d['scope']}: {d['source'][:5]} here, {d['target'][:5]} there")
    return "\n".join(lines)


def cmd_backup(args):
    with _memory(args) as m:
        _emit(args, m.backup(args.path), lambda r: f"backup written to {r['backup']} ({r['bytes']:,} bytes)")


def cmd_embed(args):
    with _memory(args) as m:
        r = m.reembed_all() if args.all else m.embed_pending(batch=args.batch)
        _emit(args, r, lambda r: f"embedded {r['embedded']} node(s) with {r['embedder']}; {r['queue']} still queued")


def cmd_demo(args):
    from .demo import run_demo

    run_demo(args.home, as_json=args.json)


def cmd_serve(args):
    from .mcp_server import serve   # imported here: the other commands never pay for the MCP SDK

    if args.require_token and not args.http:
        raise InvalidInput("--require-token is for --http (the stdio server is only ever the caller's own)")
    serve(args.home, args.scope, http=args.http, require_token=args.require_token)


def cmd_proxy(args):
    from .proxy import serve   # imported here: the other commands never pay for the HTTP stack

    if not 0 < args.upstream_timeout <= 3600:
        raise InvalidInput("--upstream-timeout is a number of seconds from 0 to 3600")
    serve(args.home, args.listen, args.scope, args.anthropic_upstream, args.openai_upstream, memory=not args.no_memory,
          timeout=args.upstream_timeout)


def cmd_tokens(args):
    with _memory(args) as m:
        if args.action == "add":
            if not args.name:
                raise InvalidInput("tokens add needs a NAME (who the token is for) and at least one --scope")
            _emit(args, m.token_add(args.name, args.scope or []), _fmt_token_added)
        elif args.action == "revoke":
            if not args.name:
                raise InvalidInput("tokens revoke needs the NAME of the token (tidemind tokens list shows them)")
            _emit(args, m.token_revoke(args.name), lambda r: f"revoked the token of {r['name']} at {r['revoked_at']};"
                                                              " servers refuse it from their next request")
        else:
            _emit(args, {"tokens": m.tokens()}, _fmt_tokens)


def _fmt_token_added(r: dict) -> str:
    return (f"token for {r['name']} (scopes {', '.join(r['scopes'])}; writes go to {r['scopes'][0]}):\n"
            f"{r['token']}\n"
            "It is shown this once and not kept anywhere (the store holds its SHA-256): give it to its holder now.")


def _fmt_tokens(r: dict) -> str:
    if not r["tokens"]:
        return "no tokens (tidemind tokens add NAME --scope S makes one)"
    return "\n".join(f"{t['name']}  scopes {', '.join(t['scopes'])}  created {t['created_at'][:19]}"
                     f"  last used {(t['last_used_at'] or 'never')[:19]}"
                     + (f"  REVOKED {t['revoked_at'][:19]}" if t["revoked_at"] else "") for t in r["tokens"])


def cmd_hook(args):
    from .hooks import run

    sys.exit(run(args.event, args.home, args.host, url=args.url, token_env=args.token_env))


def cmd_install_hooks(args):
    from .install import describe, run

    r = run(args.host or ["claude-code"], args.base, args.home, args.scope, args.uninstall, args.dry_run,
            url=args.url, token_env=args.token_env)
    _emit(args, r, describe)


def cmd_metabolize(args):
    from .metabolism.scheduler import run_due

    from .llm import choose_or_offline

    with _memory(args) as m:
        m.actor = "daemon"
        llm, why = choose_or_offline(m.settings)
        if why:
            print(f"tidemind: running offline: {why}", file=sys.stderr)
        reports = run_due(m, only=args.task or (), force=True, batch=args.batch, llm=llm)
        _emit(args, {"tasks": reports}, lambda r: "\n".join(
            f"{t['task']:<14} {t['status']:<8} " + ", ".join(f"{k}={v}" for k, v in t.items()
                                                            if k not in ("task", "status"))
            for t in r["tasks"]))


def cmd_rederive(args):
    from .llm import choose_or_offline
    from .metabolism.rederive import rederive

    with _memory(args) as m:
        m.actor = "person:cli"
        llm, why = choose_or_offline(m.settings)
        if why:
            print(f"tidemind: running offline: {why}", file=sys.stderr)
        r = rederive(m, args.task or (), args.since, llm=llm)
    _emit(args, r, lambda r: "\n".join(
        [f"with {r['llm'] or 'no model (offline)'}" + (f", since {r['since']}" if r["since"] else "") + ":"]
        + [f"  {task:<12} " + ", ".join(f"{k}={v}" for k, v in t.items()) for task, t in r["tasks"].items()]))


def cmd_daemon(args):
    if args.action == "install-service":
        from tidemind_daemon.service import install

        r = install(args.home, args.dir)
        _emit(args, r, lambda r: "\n".join([f"wrote {k}: {v}" for k, v in r["written"].items()]
                                            + [f"note: {n}" for n in r["notes"]]
                                            + [f"enable with: {c}" for c in r["enable_with"]]))
        return
    if args.action == "uninstall-service":
        from tidemind_daemon.service import uninstall

        r = uninstall(args.dir)
        _emit(args, r, lambda r: "\n".join([f"removed {p}" for p in r["removed"]] or ["no service file to remove"])
              + "".join(f"\nthen: {c}" for c in r["then"]))
        return
    from tidemind_daemon.runner import run

    sys.exit(run(args.home, once=args.once, tick_s=args.tick))


def _fmt_review(items: list[dict]) -> str:
    if not items:
        return "the review queue is empty"
    lines = []
    for r in items:
        what = r["payload"].get("said") or r["payload"].get("summary") or ""
        nodes_named = ", ".join(str(i) for i in (r["node_id"], r["other_node_id"]) if i)
        lines.append(f"#{r['id']:<5} {r['kind']:<22} {r['status']:<9} nodes {nodes_named or '-'}"
                     + (f"  {' '.join(what.split())[:80]}" if what else ""))
    return "\n".join(lines)


TASTE_ACTIONS = {   # action: (positional names, what it does)
    "codebook": ([], "list the scope's workstreams and their aliases"),
    "mint": (["slug"], "add a workstream slug (permanent: it seeds a vector); --undo takes it out again"),
    "alias": (["name", "slug"], "another name for a slug (a rename; an unknown folded in); --undo splits it again"),
    "note": (["slug", "note"], "mark that a project note exists for a slug"),
    "recompose": ([], "recompute every day of the scope now"),
    "decode": (["day"], "un-mix a day from its fingerprint alone, beside what was recorded"),
    "where": (["slug"], "every day that touched a workstream, exactly (aliases included)"),
    "first": (["slug"], "when a workstream started, under whatever name it had then"),
    "window": (["start", "end"], "the workstreams of a period, with days and weight"),
    "diff": (["a_start", "a_end", "b_start", "b_end"], "active in one period and not the other"),
    "gaps": ([], "work recorded with no project note (names nobody minted are marked)"),
    "similar": (["day"], "the days whose fingerprints are closest"),
    "unknowns": ([], "workstreams nobody has named: ripe ones to decide, maturing ones, decided ones"),
    "tasteslike": (["name"], "who a workstream (an unknown) keeps company with, rarity-weighted"),
    "dismiss": (["name"], "not now (it revives if it keeps growing); --undo takes it back"),
    "watch": (["name"], "keep an eye on an unknown, out of the decide list; --undo takes it back"),
    "backtest": (["slug"], "would the detector have flagged this workstream before it was minted?"),
    "drift": (["slug"], "week by week: its days, weight, company, and how far the work around it moved"),
    "autofile": ([], "mint the unknowns that already have an imported project note"),
}


def _fmt_taste(action: str, r: dict) -> str:
    if action == "codebook":
        lines = [f"codebook of {r['scope']} ({len(r['slugs'])} workstreams, {r['dim']} dimensions, seed {r['seed']})"]
        lines += [f"  {s['slug']:<28}{' note' if s['has_note'] else '':<6}"
                  + (f" aliases: {', '.join(s['aliases'])}" if s["aliases"] else "") for s in r["slugs"]]
        return "\n".join(lines)
    if action == "decode":
        lines = [f"{r['day']} in {r['scope']}: {r['assigned']} of {r['nodes']} memories belong to a workstream;"
                 " recovered from the vector alone (recorded):"]
        lines += [f"  {d['slug']:<28} est={d['estimated']:.3f}  recorded={d['recorded'] if d['recorded'] is not None else '-'}"
                  for d in r["decoded"]]
        if r["recorded_only"]:
            lines.append(f"  recorded but not in the codebook: {', '.join(r['recorded_only'])}")
        lines.append(f"  unexplained: {r['unexplained_weight']:.0%} of the day ({r['unplaced']:.0%} of its memories no"
                     f" workstream places; ~{r['unnamed_weight']:.2f} under names outside the codebook)")
        return "\n".join(lines)
    if action == "where":
        lines = [f"{r['slug']} ({', '.join(r['names'])}) in {r['scope']}: {len(r['days'])} day(s)"]
        lines += [f"  {d['day']}  {d['weight']:.3f}  as {', '.join(d['as'])} ({'+'.join(d['source'])})"
                  for d in r["days"]]
        return "\n".join(lines)
    if action == "first":
        return (f"{r['slug']} first appears on {r['first']} as {r['as']} ({r['days_total']} day(s) in all)"
                if r["first"] else f"{r['slug']} has no recorded day in {r['scope']}")
    if action == "window":
        lines = [f"{r['from']} .. {r['to']} in {r['scope']}:"]
        lines += [f"  {w['slug']:<28}{w['days']:>4} day(s)  mass={w['mass']:.3f}" for w in r["workstreams"]]
        return "\n".join(lines)
    if action == "diff":
        return "\n".join([f"only in {r['a'][0]}..{r['a'][1]}: {', '.join(r['only_in_a']) or '-'}",
                          f"only in {r['b'][0]}..{r['b'][1]}: {', '.join(r['only_in_b']) or '-'}",
                          f"in both: {', '.join(r['in_both']) or '-'}"])
    if action == "gaps":
        lines = [f"work with no project note in {r['scope']}:"]
        lines += [f"  {g['slug']:<28}{g['days']:>4} day(s)  mass={g['mass']:.3f}  first={g['first']}"
                  + ("" if g["in_codebook"] else "  [NOT IN THE CODEBOOK]") for g in r["gaps"]]
        return "\n".join(lines)
    if action == "unknowns":
        lines = [f"unknown workstreams in {r['scope']}: decide {len(r['decide'])}, maturing {len(r['maturing'])},"
                 f" watching {len(r['watching'])}, dismissed {len(r['dismissed'])}"]
        for group in ("decide", "maturing", "watching", "dismissed"):
            lines += [f"  [{group}] {u['name']:<26}{u['days']:>3} day(s)  mass={u['mass']:.3f}  first={u['first']}"
                      f"  -> {u['recommendation']}" for u in r[group]]
        return "\n".join(lines)
    if action == "tasteslike":
        head = f"{r['name']}" + ("  [UNKNOWN: not in the codebook]" if r["unknown"] else "")
        return "\n".join([head, "keeps company with (rarity-weighted):"]
                         + [f"  {c['slug']:<28}{c['share']:.3f}" for c in r["company"]])
    if action == "backtest":
        if not r["flagged"]:
            return f"{r['slug']}: the detector would not have flagged it before {r['minted']}"
        return (f"{r['slug']}: first seen {r['first']}, flagged {r['flagged']}, minted {r['minted']}"
                f" ({r['days_early']} day(s) early)")
    if action == "drift":
        lines = [f"{r['slug']} in {r['scope']}, week by week (shift: 1 - cosine to the week before):"]
        lines += [f"  {w['week']}  {w['days']} day(s)  mass={w['mass']:.3f}  shift="
                  f"{'-' if w['shift'] is None else format(w['shift'], '.3f')}  with {', '.join(w['company']) or '-'}"
                  for w in r["weeks"]]
        return "\n".join(lines)
    if action == "similar":
        return "\n".join([f"days like {r['day']}:"] + [f"  {s['day']}  {s['cosine']:.3f}" for s in r["similar"]])
    return json.dumps(r, ensure_ascii=False)


def cmd_taste(args):
    from .workstreams import Workstreams

    names, _ = TASTE_ACTIONS[args.action]
    values = list(args.args)
    if len(values) != len(names):
        raise InvalidInput(f"taste {args.action} needs {' '.join(n.upper() for n in names) or 'no arguments'}")
    with _memory(args) as m:
        m.actor = "person:cli"
        ws = Workstreams(m)
        kw = {"scope": args.scope}
        if args.action == "codebook":
            r = ws.codebook(**kw)
        elif args.action == "mint":
            r = ws.mint(values[0], aliases=tuple(args.alias or ()), undo=args.undo, **kw)
        elif args.action == "alias":
            r = ws.alias(values[0], values[1], undo=args.undo, **kw)
        elif args.action == "note":
            r = ws.mark_note(values[0], values[1], **kw)
        elif args.action == "recompose":
            r = ws.recompose(**kw)
        elif args.action in ("dismiss", "watch"):
            r = ws.decide(values[0], {"dismiss": "dismissed", "watch": "watching"}[args.action], undo=args.undo,
                          note=args.note, **kw)
        elif args.action in ("unknowns", "autofile"):
            r = getattr(ws, args.action)(**kw)
        else:
            r = getattr(ws, args.action)(*values, **kw)
    _emit(args, r, lambda r: _fmt_taste(args.action, r))


def cmd_review(args):
    with _memory(args) as m:
        m.actor = "person:cli"
        if args.action == "list":
            items = m.review_list(None if args.all else "open")
            _emit(args, {"items": items}, lambda r: _fmt_review(r["items"]))
            return
        if args.id is None:
            raise SystemExit(f"tidemind review {args.action} needs an item id")
        if args.action == "show":
            _emit(args, m.review_show(args.id), _fmt_kv)
            return
        if args.action == "forget":
            _emit(args, m.review_forget(args.id), lambda r: r["done"])
            return
        decision = {"approve": "approved", "reject": "rejected", "reopen": "open"}[args.action]
        _emit(args, m.review_decide(args.id, decision, stands=args.stands), lambda r: r["done"])


def cmd_tags(args):
    with _memory(args) as m:
        m.actor = "person:cli"
        words = args.args
        if args.action == "list":
            if words:
                raise InvalidInput("tidemind tags list takes no names (use --status, --scope)")
            _emit(args, m.tag_listing(args.status, args.scope), _fmt_tag_listing)
            return
        if args.action in ("reject-everywhere", "unreject-everywhere", "accept-everywhere"):
            if len(words) != 1 or not args.scope or len(args.scope) != 1:
                raise InvalidInput(f"tidemind tags {args.action} NAME --scope S")
            verb = {"reject-everywhere": m.tag_reject_everywhere, "unreject-everywhere": m.tag_unreject_everywhere,
                    "accept-everywhere": m.tag_accept_everywhere}[args.action]
            _emit(args, verb(words[0], args.scope[0]), lambda r: r["done"])
            return
        if len(words) != 2:
            raise InvalidInput(f"tidemind tags {args.action} NODE NAME")
        node_id = _id_arg(words[0])
        if args.action == "confirm":
            _emit(args, m.tag_add(node_id, words[1]), lambda r: r["done"])
        else:
            _emit(args, m.tag_decide(node_id, words[1], reject=args.action == "reject"), lambda r: r["done"])


def _fmt_tag_listing(r: dict) -> str:
    lines = [f"{t['count']:>5}  {t['name']}  ({t['status']}; e.g. node {t['example']})" for t in r["tags"]]
    lines += [f"never in {t['scope']}: {t['name']} (since {t['created_at'][:10]})" for t in r["rejected_everywhere"]]
    return "\n".join(lines) or "(no tags)"


def cmd_links(args):
    with _memory(args) as m:
        m.actor = "person:cli"
        status = {"confirm": "confirmed", "reject": "rejected_by_user", "reopen": "pending"}[args.action]
        if (args.id is None) == (args.at is None):
            raise InvalidInput(f"tidemind links {args.action} LINK, or --at NODE for every pending link of a memory")
        if args.at is not None:
            if args.action == "reopen":
                raise InvalidInput("--at decides pending links: confirm or reject")
            _emit(args, m.link_decide_at(args.at, status), lambda r: r["done"])
            return
        _emit(args, m.link_decide(args.id, status), lambda r: r["done"])


def cmd_undo(args):
    with _memory(args) as m:
        m.actor = args.actor
        if args.show:
            last = m.last_decision()
            _emit(args, {"last": last}, lambda r: f"next undo: {r['last']['label']}" if r["last"]
                  else f"nothing of {args.actor} to undo")
            return
        _emit(args, m.undo_last(), lambda r: r["done"] + "".join(f"\n  left as it is: {k}" for k in r["kept"]))


def _fmt_import(r: dict) -> str:
    if r["batch"] is None:
        lines = [f"nothing changed in {r['scope']} ({r['read']:,} notes read, {r['unchanged']:,} units unchanged);"
                 " no batch recorded"]
    else:
        lines = [f"batch {r['batch']} into {r['scope']}: {r['created']} created, {r['updated']} updated,"
                 f" {r['unchanged']} unchanged, {r['archived']} archived, {r['moved']} moved, {r['restored']}"
                 f" restored, {r['refreshed']} refreshed"]
    if r.get("scope_note"):
        lines.append(f"scope: {r['scope_note']}")
    lines += [f"skipped {s['path']}: {s['reason']}" for s in r["skipped"]]
    lines += [f"warning: {w}" for w in r["warnings"]]
    if "embedded" in r:
        lines.append(f"embedded {r['embedded']:,} unit(s): findable by meaning now, not only by their words")
    elif "embedding" in r:
        lines.append(f"embedding: {r['embedding']}")
    return "\n".join(lines)


def _stored_by_sync(r: dict) -> int:
    return r["created"] + r["updated"] + r["restored"]


def _embed_after_import(m, r: dict, no_embed: bool, bar, stored: int) -> None:
    """What an import stored (`stored` units) is found by its words at once, by its meaning once
    embedded: embed it now (with the bar), unless the daemon is running (it embeds them) or
    --no-embed."""
    if not stored:
        return
    if no_embed:
        r["embedding"] = "not now (--no-embed); `tidemind embed` or the daemon will"
        return
    from tidemind_daemon.runner import running

    pid = running(m.settings.home)
    if pid:
        r["embedding"] = f"left to the running daemon (pid {pid}), which embeds them in the background"
        return
    done = 0
    while True:           # small batches: each is its own short transaction, and Ctrl-C keeps what is done
        step = m.embed_pending(batch=256, limit=256)
        done += step["embedded"]
        if bar is not None:
            bar(done, done + step["queue"], "embedding")
        if not step["embedded"] or not step["queue"]:
            break
    r["embedded"] = done


def cmd_export(args):
    with _memory(args) as m:
        r = m.export(args.format, args.folder, scopes=args.scope)
        _emit(args, r, lambda r: f"exported {r['memories']:,} memories and {r['links']:,} links of"
                                 f" {', '.join(r['scopes'])} as {r['format']} to {r['folder']} ({r['files']:,} file(s))")


def cmd_import(args):
    from .importers.engine import rollback, sync

    with _memory(args) as m:
        m.actor = f"importer:{args.source}"
        if args.source == "jsonl":
            from .portable import summary_lines

            r = m.import_export(args.target, scope=args.scope)
            _embed_after_import(m, r, args.no_embed, None, r["stored"])
            _emit(args, r, lambda r: "\n".join([*summary_lines(r), *([r["embedding"]] if r.get("embedding") else [])]))
            return
        if args.source == "rollback":
            batch = parse_id(args.target, "batch")
            _emit(args, rollback(m, batch), lambda r: r["done"])
            return
        if args.scope is not None:          # the importer takes its scope as given: checked here, like every --scope
            from .scopes import check_scope

            args.scope = check_scope(args.scope)
        options = {"exclude": args.exclude or []}
        bar = None
        if sys.stderr.isatty() and not args.json:
            def bar(done, total, what="importing", width=30):
                filled = int(width * done / max(total, 1))
                print(f"\r  {what:<9} [{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,} units",
                      end="" if done < total else "\n", file=sys.stderr, flush=True)
        r = sync(m, args.source, args.target, args.scope, options, progress=bar)
        _embed_after_import(m, r, args.no_embed, bar, _stored_by_sync(r))
        _emit(args, r, _fmt_import)
        if args.watch:
            from pathlib import Path

            from .importers.watch import watch

            def once(paths):
                found = sync(m, args.source, args.target, r["scope"], options, only=paths)
                _embed_after_import(m, found, args.no_embed, None, _stored_by_sync(found))
                return found

            sys.stdout.flush()
            sys.exit(watch(once, Path(args.target)))


def cmd_desktop(args):
    try:
        import PySide6  # noqa: F401
    except ImportError:
        raise SystemExit("tidemind desktop needs PySide6: pip install 'tidemind[desktop]'") from None
    if (not args.screenshot and sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM")
            and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")):
        # (Qt aborts here with its xcb message and SIGABRT)
        raise SystemExit("tidemind desktop: no display to open a window on (neither DISPLAY nor WAYLAND_DISPLAY is"
                         " set); run it in a desktop session, or render the window to a file with --screenshot PNG")
    from tidemind_desktop.app import run

    parts = args.size.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise SystemExit(f"tidemind desktop: --size {args.size!r} is not WIDTHxHEIGHT (e.g. 1180x760)")
    sys.exit(run(args.home, args.screenshot, args.view, args.node, args.query, (int(parts[0]), int(parts[1]))))


def cmd_eval(args):
    if args.what == "graph":
        from .eval_graph import evaluate_graph, format_graph_report

        if not args.topics:
            raise InvalidInput("eval graph needs --topics DIR (one <conversation>.jsonl of turn labels each)")
        convs = [c for c in (args.convs or "").split(",") if c]
        _emit(args, evaluate_graph(args.memories, args.topics, convs, home=args.keep), format_graph_report)
        return
    from .evaluate import evaluate, format_report

    _emit(args, evaluate(args.memories, args.queries, split=args.split, scopes=args.scope, via=args.via,
                         links=args.links, variant=args.variant), format_report)


def cmd_prepare(args):
    with _memory(args) as m:
        r = m.prepare(args.hint, args.budget, scopes=args.scope)
        _emit(args, r, lambda r: r["text"])


def cmd_bench(args):
    from .bench import run_bench, run_side_by_side

    options = dict(n_nodes=args.nodes, queries=args.queries, digests=args.digests, home=args.bench_home,
                   seed=args.seed, n_scopes=args.scopes, mcp=not args.no_mcp,
                   metabolism=args.metabolism if args.metabolism is not None else (5000 if args.full else 0),
                   import_notes=args.import_notes if args.import_notes is not None else (2000 if args.full else 0),
                   hostile_units=args.hostile_notes or 0, proxy_seconds=args.proxy or 0)
    server = os.environ.get("TIDEMIND_STORE", "")
    # `tidemind --store postgresql://… bench`: that store and SQLite, side by side in one run
    r = run_side_by_side(server, fill=args.fill, **options) \
        if "://" in server and not server.startswith(("sqlite:", "file:")) else run_bench(**options)
    from .bench import format_table

    _emit(args, r, format_table)


def cmd_completion(args):
    from .completion import script

    sys.stdout.write(script(args.shell, build_parser()))


def cmd_config(args):
    from .config import effective, load_settings, older_file

    settings = load_settings(args.home)
    rows = effective(settings)
    if args.store is not None:            # (main passes --store on through TIDEMIND_STORE)
        next(row for row in rows if row["key"] == "store")["from"] = "argument --store"
    note = older_file(settings)
    _emit(args, {"settings": rows, **({"note": note} if note else {})},
          lambda r: "\n".join([f"{row['key']} = {json.dumps(row['value'], ensure_ascii=False, default=str)}"
                               f"  ({row['from']})" for row in r["settings"]] + ([f"note: {note}"] if note else [])))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tidemind", description="A local-first memory for agents.")
    p.add_argument("--home", default=None, help="data directory (default: $TIDEMIND_HOME or ~/.tidemind)")
    p.add_argument("--store", default=None,
                   help="the store: a SQLite file or a database URL (default: $TIDEMIND_STORE, the config's"
                        " `store`, or tidemind.db in the home)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    from . import __version__

    p.add_argument("--version", action="version", version=f"tidemind {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name, fn, help_):
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
        sp.add_argument("--home", default=argparse.SUPPRESS, help="data directory")
        sp.set_defaults(func=fn)
        return sp

    s = add("completion", cmd_completion, "print shell completion for bash, zsh or fish"
            " (eval \"$(tidemind completion bash)\" in ~/.bashrc)")
    s.add_argument("shell", choices=("bash", "zsh", "fish"))
    s = add("config", cmd_config, "the effective settings and where each came from (docs/CONFIG.md lists them)")
    s.add_argument("action", choices=("show",))
    add("init", cmd_init, "create the data directory and database")
    add("demo", cmd_demo, "build a store from a bundled sample and show digest -> recall -> show")
    s = add("digest", cmd_digest, "store a memory verbatim (TEXT, or - for stdin)")
    s.add_argument("text")
    s.add_argument("--scope")
    s.add_argument("--valid-at", help="when the fact started to hold (ISO-8601); default now")
    s.add_argument("--source-tool")
    s.add_argument("--session")
    s = add("recall", cmd_recall, "hybrid search over memories in scope")
    s.add_argument("query")
    s.add_argument("--scope", action="append", help="scope to read (repeatable); default the configured scope")
    s.add_argument("--all-scopes", action="store_true", help="read every scope in the store")
    s.add_argument("--tag", action="append", help="only memories carrying this tag (repeatable)")
    s.add_argument("--source", help="only memories from this source tool")
    s.add_argument("--limit", type=int, default=8)
    s.add_argument("--as-of", help="answer as of this time (ISO-8601)")
    s.add_argument("--clock", choices=["both", "valid", "recorded"], default="both",
                   help="which clock --as-of applies to (default both)")
    s.add_argument("--choose", help="when the answer asked which of several things you mean: your choice")
    s = add("clarify", cmd_clarify, "questions memories wait on: list them, answer one, or skip it")
    s.add_argument("action", nargs="?", default="list", choices=["list", "answer", "skip"])
    s.add_argument("id", nargs="?", type=_id_type)
    s.add_argument("answer", nargs="*", help="answer: the text (or - for stdin)")
    s.add_argument("--scope", action="append")
    s.add_argument("--all", action="store_true", help="list answered, skipped and closed questions too")
    s.add_argument("--node", action="store_true", help="answer/skip: ID is the memory's node id, not the question's")
    s = add("show", cmd_show, "one node with its versions, tags, links and derived fields")
    s.add_argument("id")
    s.add_argument("--scope", action="append")
    s.add_argument("--as-of")
    s.add_argument("--clock", choices=["both", "valid", "recorded"], default="both")
    s = add("correct", cmd_correct, "replace a node's text by a new version (the old one is kept)")
    s.add_argument("id", type=_id_type)
    s.add_argument("text")
    s.add_argument("--valid-at")
    for verb, help_ in (("archive", "hide a node from every read (reversible)"),
                        ("unarchive", "restore an archived node"),
                        ("forget", "erase a node's text everywhere, keeping a hash tombstone")):
        s = add(verb, _simple(verb), help_)
        s.add_argument("id", type=_id_type)
    s = add("stats", cmd_stats, "counts by status")
    s.add_argument("--scope", action="append")
    s = add("doctor", cmd_doctor, "check SQLite, FTS, vectors, authored hashes and the stream files")
    s.add_argument("--prune-orphans", action="store_true",
                   help="remove stream entries of digests that never committed (older than 10 minutes)")
    s = add("digests", cmd_digests, "daily and weekly digests (by the day a memory is about): of --week W,"
                                    " of --day D, or the newest")
    s.add_argument("--scope", action="append", help="scope to read (repeatable; default: every scope)")
    s.add_argument("--week", help="an ISO week (2026-W10), 'week 10', 'this' or 'last'")
    s.add_argument("--day", help="a day (2026-03-03)")
    s.add_argument("--limit", type=int, default=50)
    s = add("backup", cmd_backup, "online backup of the database to PATH")
    s.add_argument("path")
    s = add("restore", cmd_restore, "replace the store by a backup (the current one is kept under backups/)")
    s.add_argument("path")
    s = add("migrate", cmd_migrate, "copy the store whole into another, empty one (a PostgreSQL database or a"
                                    " SQLite file), and check the copy")
    s.add_argument("--to", required=True, metavar="STORE", help="postgresql://user@host/db, or a SQLite file path")
    s = add("embed", cmd_embed, "drain the embedding queue")
    s.add_argument("--batch", type=int, default=256)
    s.add_argument("--all", action="store_true", help="re-embed every live node made by another embedder")
    s = add("serve", cmd_serve, "run the MCP server (brain_prepare, brain_recall, brain_digest) over stdio, or over"
                                " HTTP with --http")
    s.add_argument("--scope", action="append", help="scope this server may touch (repeatable; the first gets writes);"
                   " over HTTP, a request with a token gets the token's scopes instead")
    s.add_argument("--http", metavar="HOST:PORT", help="serve the MCP streamable HTTP transport at"
                   " http://HOST:PORT/mcp; an address other than loopback needs tokens (tidemind tokens add)")
    s.add_argument("--require-token", action="store_true", help="with --http: ask every request for a token even on"
                   " loopback (behind a reverse proxy on this machine), and refuse to start while none is defined")
    s = add("proxy", cmd_proxy, "an HTTP proxy for the Anthropic and OpenAI chat APIs: recall injected before each"
                                " request, the exchange stored after it (clients change only their base URL)")
    s.add_argument("--listen", default="127.0.0.1:8788", metavar="HOST:PORT",
                   help="where to listen (default 127.0.0.1:8788); another address than loopback needs tokens")
    s.add_argument("--scope", action="append", help="scope the proxy reads and writes (repeatable; the first gets"
                   " writes; default: [memory] scopes, else the default scope)")
    s.add_argument("--anthropic-upstream", metavar="URL", help="where Anthropic requests go (default"
                   " https://api.anthropic.com, or [proxy] anthropic_upstream)")
    s.add_argument("--openai-upstream", metavar="URL", help="where OpenAI requests go (default https://api.openai.com;"
                   " a local Ollama: http://127.0.0.1:11434)")
    s.add_argument("--no-memory", action="store_true", help="forward everything untouched (no recall, nothing stored)")
    s.add_argument("--upstream-timeout", type=float, default=600.0, metavar="SECONDS",
                   help="how long an upstream may take to answer (default 600); past it the client gets a 504")
    s = add("tokens", cmd_tokens, "bearer tokens of the HTTP server: add NAME --scope S [--scope S2], list,"
                                  " revoke NAME")
    s.add_argument("action", choices=["add", "list", "revoke"])
    s.add_argument("name", nargs="?", help="who the token is for (add, revoke)")
    s.add_argument("--scope", action="append", help="add: a scope the token may touch (repeatable; the first gets"
                   " writes)")
    s = add("hook", cmd_hook, "run a lifecycle hook for an agent host (reads the event JSON on stdin)")
    s.add_argument("event", choices=["session-start", "user-prompt", "pre-compact", "stop"])
    s.add_argument("--host", default=None, help="the host running it, for its output format (default claude-code)")
    s.add_argument("--url", help="ask this TideMind server over HTTP (tidemind serve --http) instead of the local store")
    s.add_argument("--token-env", default="TIDEMIND_TOKEN", help="with --url: the environment variable holding the"
                   " bearer token (default TIDEMIND_TOKEN)")
    s = add("install-hooks", cmd_install_hooks, "register the MCP server and hooks with an agent host")
    from .install import HOST_NAMES

    s.add_argument("--host", action="append", choices=[*HOST_NAMES, "all"],
                   help="the host to wire (repeatable; default claude-code), or all: every host found under the"
                   " home directory")
    s.add_argument("--uninstall", action="store_true", help="take TideMind out again (files nobody changed since"
                   " come back byte for byte)")
    s.add_argument("--dry-run", action="store_true", help="print the change as a diff and write nothing")
    s.add_argument("--base", default=None, help="the home directory the hosts' files are under (default: ~)")
    s.add_argument("--scope", action="append", help="fix the server's scopes (default: derived per project)")
    s.add_argument("--url", help="point the host at a TideMind server over HTTP (tidemind serve --http), e.g."
                   " https://memory.example.org/mcp, instead of starting one (claude-code, codex, cursor)")
    s.add_argument("--token-env", help="with --url: the environment variable the host reads the bearer token from"
                   " (default TIDEMIND_TOKEN); the token itself is never written into a file")
    s = add("metabolize", cmd_metabolize, "run metabolism tasks now (all, or --task NAME ...)")
    s.add_argument("--task", action="append", help="one of embed, annotate, link-propose, link-evaluate, dedup,"
                   " contradict, crystallize, temporal, lessons, reconsolidate, fingerprint, decay (repeatable)")
    s.add_argument("--batch", type=int, default=None, help="override each task's batch size")
    s = add("rederive", cmd_rederive, "redo derived fields and syntheses an offline stand-in made, with the model"
                                      " now that it is back (annotate, crystallize, temporal, lessons)")
    s.add_argument("--task", action="append", choices=["annotate", "crystallize", "temporal", "lessons"],
                   help="only this task (repeatable; default all four)")
    s.add_argument("--since", help="only what was made at or after this time (ISO-8601)")
    s = add("daemon", cmd_daemon, "run due metabolism tasks until stopped (or install a service that does)")
    s.add_argument("action", nargs="?", default="run", choices=["run", "install-service", "uninstall-service"])
    s.add_argument("--once", action="store_true", help="run everything due, then exit")
    s.add_argument("--tick", type=float, default=30.0, help="seconds between checks for due tasks")
    s.add_argument("--dir", help="install-service / uninstall-service: both service files in this folder instead")
    s = add("taste", cmd_taste, "workstream fingerprints: " + "; ".join(
        f"{a} {' '.join(n.upper() for n in names)}".strip() for a, (names, _) in TASTE_ACTIONS.items()))
    s.add_argument("action", choices=list(TASTE_ACTIONS))
    s.add_argument("args", nargs="*")
    s.add_argument("--scope", help="the scope (default: the configured default scope)")
    s.add_argument("--alias", action="append", help="mint: also add this alias (repeatable)")
    s.add_argument("--undo", action="store_true", help="mint/alias/dismiss/watch: take it back")
    s.add_argument("--note", help="dismiss/watch: why")
    s = add("review", cmd_review, "the review queue: list, show, approve, reject, reopen or forget an item")
    s.add_argument("action", choices=["list", "show", "approve", "reject", "reopen", "forget"])
    s.add_argument("id", nargs="?", type=_id_type)
    s.add_argument("--all", action="store_true", help="list decided items too")
    s.add_argument("--stands", type=_id_type, help="approve a contradiction: the id of the memory that is right")
    s = add("tags", cmd_tags, "tags: confirm|reject|unreject NODE NAME, accept-everywhere|reject-everywhere|"
                              "unreject-everywhere NAME --scope S, list [--status S]")
    s.add_argument("action", choices=["confirm", "reject", "unreject", "accept-everywhere", "reject-everywhere",
                                      "unreject-everywhere", "list"])
    s.add_argument("args", nargs="*", help="NODE NAME, or NAME for the -everywhere actions")
    s.add_argument("--scope", action="append")
    s.add_argument("--status", choices=["proposed", "confirmed", "rejected_by_user"])
    s = add("links", cmd_links, "confirm, reject or reopen a link (or every pending link of a memory: --at NODE)")
    s.add_argument("action", choices=["confirm", "reject", "reopen"])
    s.add_argument("id", nargs="?", type=_id_type)
    s.add_argument("--at", type=_id_type, help="every pending link of this memory, in one step")
    s = add("undo", cmd_undo, "put back a person's latest decision (review, link, tag, archive), read from the"
                              " audit log; again to go one further back")
    s.add_argument("--show", action="store_true", help="say what the next undo would put back, change nothing")
    s.add_argument("--actor", default="person:cli", help="whose decisions (person:desktop for the window's;"
                                                         " default person:cli)")
    s = add("export", cmd_export, "write every live memory with its tags and links to a folder: jsonl (to"
                                  " import back) or markdown (a file per memory, front matter Obsidian reads)")
    s.add_argument("folder")
    s.add_argument("--format", choices=["jsonl", "markdown"], default="jsonl")
    s.add_argument("--scope", action="append", help="only this scope (repeatable; default: every scope)")
    s = add("import", cmd_import, "import a notes folder (obsidian DIR, logseq DIR), an export (jsonl FILE|DIR),"
                                  " or undo a notes import (rollback BATCH)")
    s.add_argument("source", choices=["obsidian", "logseq", "jsonl", "rollback"])
    s.add_argument("target", help="the vault folder, the export (its folder or file), or the batch number to roll back")
    s.add_argument("--scope", help="scope for the notes (default: the folder's earlier scope, else vault:<folder"
                                   " name>, with a hash of its path when another folder has that name)")
    s.add_argument("--exclude", action="append", help="a folder to skip (e.g. templates); repeatable")
    s.add_argument("--watch", action="store_true", help="keep the store in sync as files change (Ctrl-C stops)")
    s.add_argument("--no-embed", action="store_true",
                   help="do not embed the new units now (the daemon or `tidemind embed` does it later)")
    s = add("desktop", cmd_desktop, "open the desktop app (or render it to a PNG with --screenshot)")
    s.add_argument("--screenshot", help="render offscreen to this PNG and exit")
    s.add_argument("--view", choices=["search", "node", "graph", "local-graph", "review", "contradiction", "questions",
                                      "tags", "browse", "digests", "import", "switcher", "dark"], default="search")
    s.add_argument("--size", default="1180x760", help="window size for --screenshot, WIDTHxHEIGHT")
    s.add_argument("--node", type=_id_type, help="open this memory")
    s.add_argument("--query", help="run this search first")
    s = add("eval", cmd_eval, "retrieval evaluation on JSONL memories and queries (DESIGN.md section 4); tagging"
                              " precision and recall when memories name their expected tags; graph: the links,"
                              " tags, review items and crystals the metabolism files, judged against topic labels")
    s.add_argument("what", choices=["retrieval", "graph"])
    s.add_argument("--topics", help="graph: the folder of <conversation>.jsonl topic labels")
    s.add_argument("--convs", help="graph: only these conversations (comma-separated, e.g. conv-26,conv-30)")
    s.add_argument("--keep", help="graph: build the store in this (new) folder and keep it, with turn-map.json")
    s.add_argument("--memories", required=True)
    s.add_argument("--queries", help="questions with their evidence (without: only what the memories file measures,"
                                     " e.g. tagging)")
    s.add_argument("--split", help="only queries of this split (e.g. tune or test)")
    s.add_argument("--variant", choices=["chat", "dates", "names", "listener"],
                   help="retrieval: score a variant made from the set (chat: a message per sentence; dates:"
                        " other date forms in questions; names: speakers' names respelled in questions; listener: a"
                        " question names the person a speaker said it to)")
    s.add_argument("--scope", action="append", help="only the memories and queries of this scope (repeatable)")
    s.add_argument("--links", action="store_true",
                   help="run the offline linking passes first (recall then walks confirmed links) and report their quality")
    s.add_argument("--via", choices=["process", "mcp"], default="process",
                   help="mcp: digest and ask through the real MCP server over stdio, as an agent host does")
    s = add("prepare", cmd_prepare, "print the session-start context brain_prepare gives an agent")
    s.add_argument("--scope", action="append")
    s.add_argument("--hint")
    s.add_argument("--budget", type=int, default=9000)
    s = add("bench", cmd_bench, "measure digest and recall latency on a synthetic store")
    s.add_argument("--nodes", type=int, default=10_000)
    s.add_argument("--queries", type=int, default=200)
    s.add_argument("--digests", type=int, default=200)
    s.add_argument("--seed", type=int, default=7)
    s.add_argument("--scopes", type=int, default=10, help="spread the nodes over this many scopes (default 10)")
    s.add_argument("--no-mcp", action="store_true", help="skip the MCP round trips and hook timings")
    s.add_argument("--metabolism", type=int, nargs="?", const=5000, default=None, metavar="N",
                   help="also time the offline metabolism tasks over up to N nodes each (default 5000)")
    s.add_argument("--import-notes", type=int, default=None, metavar="N",
                   help="also time importing a generated vault of N notes, 8 units each (with --nodes 0: only that)")
    s.add_argument("--hostile-notes", type=int, default=None, metavar="N",
                   help="also time importing notes built to be slow: N sections under one heading, N linking to"
                        " each other, a Logseq page of N blocks synced again, a YAML alias bomb")
    s.add_argument("--proxy", type=int, nargs="?", const=60, default=None, metavar="SECONDS",
                   help="also time `tidemind proxy` before a stand-in upstream, and 20 clients at once for SECONDS"
                        " (default 60): every exchange stored, none lost")
    s.add_argument("--full", action="store_true",
                   help="everything: MCP and hooks, metabolism (5000 nodes a task), import (2000 notes)")
    s.add_argument("--bench-home", default=None, help="where to build the bench store (default: a temp dir)")
    s.add_argument("--fill", choices=("copy", "load"), default="copy",
                   help="with --store: fill the server store by copying the SQLite one (the same memories under"
                        " the same ids; default) or by loading it on its own")
    return p


def _environment(exc: Exception, args) -> str | None:
    """One line for what the environment did (a full or read-only disk, a file that would not
    open), or None for a bug, which keeps its traceback."""
    from .errors import describe_os_error

    if isinstance(exc, OverflowError):
        return f"{type(exc).__name__}: {exc}"
    if isinstance(exc, OSError):
        return describe_os_error(exc, "a file", "use")
    from .store.connection import DISK_ERRORS, storage_error

    if isinstance(exc, DISK_ERRORS):
        from .config import load_settings, resolve_home

        try:
            db = load_settings(getattr(args, "home", None)).db_path
        except TideMindError:
            db = resolve_home(getattr(args, "home", None)) / "tidemind.db"
        found = storage_error(exc, db)
        return str(found) if found is not None else f"cannot use {db}: {exc} (SQLite {type(exc).__name__})"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except TideMindError as exc:
        if "--json" in (sys.argv[1:] if argv is None else argv):
            print(json.dumps({"error": str(exc)}, ensure_ascii=False))
        print(f"tidemind: {exc}", file=sys.stderr)
        return 1
    if args.store is not None:
        if args.command == "install-hooks" or (args.command == "daemon" and getattr(args, "action", "") == "install-service"):
            print("tidemind: --store is not written into what a host or a service starts later; set `store` in the"
                  " home's config.toml so every process opens the same store", file=sys.stderr)
            return 1
        # through the environment, so that every way in (hooks, the MCP server, a daemon started
        # from here) opens the same store the command was pointed at; a path as the shell sees it
        plain = "://" not in args.store
        os.environ["TIDEMIND_STORE"] = os.path.abspath(os.path.expanduser(args.store)) if plain and args.store else args.store
    try:
        args.func(args)
    except TideMindError as exc:
        if getattr(args, "json", False):
            print(json.dumps({"error": str(exc)}, ensure_ascii=False))
        print(f"tidemind: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        message = _environment(exc, args)
        if message is None or os.environ.get("TIDEMIND_DEBUG"):
            raise
        if getattr(args, "json", False):
            print(json.dumps({"error": message}, ensure_ascii=False))
        print(f"tidemind: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
