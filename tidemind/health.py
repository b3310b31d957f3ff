"""The state of the model services a store is configured with, for `tidemind doctor`.

For the LLM and the embedder: which one is configured, whether its address answers now (a TCP
connection, so a check spends no tokens and sends no text), and what the metabolism last saw of
it (recorded by the scheduler: unreachable since when, the last error, the next try). A service
that is away is a note, not a problem: the store keeps working without it.
"""
from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor

from .store import provider_state

PROBE_TIMEOUT_S = 2.0            # the probes run at once: doctor answers within about this


def _reachable(host: str, port: int) -> str | None:
    """None when something accepts a connection there, else why not."""
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S):
            return None
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"


def _entry(kind: str, name: str | None, address: tuple[str, int] | None, recorded: dict | None,
           problem: str | None = None, probed: dict | None = None, unusable: str | None = None) -> dict:
    """`unusable`: why the configured service cannot be used at all (an unknown provider, no API
    key, its extra not installed): said as that, never as "unreachable"."""
    entry: dict = {"kind": kind, "configured": name or "none"}
    if unusable:
        entry.update(reachable=None, unusable=unusable)
    elif problem:
        entry.update(reachable=False, error=problem)
    elif address is None:
        entry["reachable"] = None if name is None else True       # nothing to reach, or built in
    else:
        why = probed[address] if probed and address in probed else _reachable(*address)
        entry.update(address=f"{address[0]}:{address[1]}", reachable=why is None, **({"error": why} if why else {}))
    if recorded:
        entry.update(state=recorded["state"], failures=recorded["failures"], last_error=recorded["last_error"],
                     last_failure_at=recorded["last_failure_at"], last_ok_at=recorded["last_ok_at"],
                     retry_at=recorded["retry_at"])
    else:
        entry["state"] = "not used yet" if name else "not configured"
    return entry


def report(settings, conn) -> dict:
    """{"llm": {...}, "embedder": {...}} (see the module's docstring)."""
    from .llm.providers import probe_address

    from .errors import InvalidInput, ProviderUnavailable

    recorded = {r["provider"]: r for r in provider_state.everything(conn)}
    problem = unusable = None
    try:
        from .llm import choose

        llm = choose(settings)
    except (InvalidInput, ProviderUnavailable) as exc:    # unknown, no key, its extra not installed
        llm, unusable = None, str(exc)
    except Exception as exc:          # a key the client refuses
        llm, problem = None, f"{type(exc).__name__}: {exc}"
    llm_name = getattr(llm, "name", None)
    if problem or unusable:           # name what was asked for, though it could not be built
        import os

        llm_name = os.environ.get("TIDEMIND_LLM") or settings.extra.get("llm") or "anthropic"
    llm_address = probe_address(llm.base_url, 11434) if getattr(llm, "base_url", None) else None
    key = settings.embedder.split(":", 1)[0]
    embedder_address = probe_address(settings.ollama_host, 11434) if key == "ollama" else None
    addresses = [a for a in (llm_address, embedder_address) if a is not None]
    with ThreadPoolExecutor(max_workers=max(len(addresses), 1)) as pool:     # at once, not one after the other
        probed = dict(zip(addresses, pool.map(lambda a: _reachable(*a), addresses)))
    out = {"llm": _entry("llm", llm_name, llm_address, recorded.get(llm_name), problem, probed, unusable)}
    if key == "ollama":
        name = f"ollama/{settings.ollama_model}"
        out["embedder"] = _entry("embedder", name, embedder_address, recorded.get(name), probed=probed)
    else:
        name = next((p for p in recorded if recorded[p]["kind"] == "embedder" and p.startswith(f"{key}/")), None)
        out["embedder"] = _entry("embedder", name or settings.embedder, None, recorded.get(name) if name else None)
        if name is None:
            out["embedder"]["state"] = "built in"
    return out
