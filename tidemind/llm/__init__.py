"""LLM providers: a small Protocol, a registry (anthropic | ollama | none), and `ask_json`.

Model output is never trusted: `ask_json` extracts one JSON object, validates it against a
small schema (types, required keys, enums, lengths) and the caller's own check (citations,
grounding), and returns None for anything else. Every call — valid, invalid or failed — is a
row in `llm_calls` (tokens, time, status). A circuit breaker per task stops calling a provider
whose answers keep failing validation. A provider that cannot be reached raises
`ProviderUnavailable` out of `ask_json`: the task stops, and the scheduler waits for the model
and retries with backoff (`Watched`) instead of letting an offline stand-in pass for its answers.
Prompts live in `strategies/*.md`; their version is recorded with every derived row made from them.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Callable, Protocol

import apsw

from ..errors import InvalidInput, ProviderUnavailable, TideMindError
from ..store import llm_calls


@dataclass
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0


class LLM(Protocol):
    name: str

    def complete(self, system: str, prompt: str, max_tokens: int = 800) -> Completion: ...


_REGISTRY: dict[str, Callable[[object], LLM | None]] = {}


def register(name: str, factory: Callable[[object], LLM | None]) -> None:
    _REGISTRY[name] = factory


def choose(settings) -> LLM | None:
    """TIDEMIND_LLM / config `llm` wins; else Anthropic when ANTHROPIC_API_KEY is set; else none."""
    choice = os.environ.get("TIDEMIND_LLM") or settings.extra.get("llm")
    if not choice:
        choice = "anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "none"
    from . import providers  # noqa: F401  (registers the built-in providers)

    if choice not in _REGISTRY:
        raise InvalidInput(f"unknown LLM provider {choice!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[choice](settings)


def choose_or_offline(settings) -> tuple[LLM | None, str | None]:
    """(the configured model, None), or (None, why) when it cannot be used at all (no API key, its
    extra not installed): the passes then run offline, as with no model, and the caller says why
    (a daemon that died on it restarted every 30 s and ran no pass at all). An unknown provider is a
    mistake in the configuration and still raises."""
    from ..errors import ProviderUnavailable

    try:
        return choose(settings), None
    except ProviderUnavailable as exc:
        return None, str(exc)


# -- strategies ---------------------------------------------------------------------------------
# shipped inside the package (read through importlib.resources, so a wheel install has them)
SHIPPED_STRATEGIES = resources.files("tidemind").joinpath("strategies")


@dataclass
class Strategy:
    name: str
    version: str
    system: str
    prompt: str

    def render(self, **values) -> str:
        out = self.prompt
        for key, value in values.items():
            out = out.replace("{{" + key + "}}", str(value))
        return out


def load_strategy(name: str, home: Path | None = None) -> Strategy:
    """`<home>/strategies/<name>.md` (a person's edit) wins over the shipped one."""
    for folder in ([home / "strategies"] if home else []) + [SHIPPED_STRATEGIES]:
        path = folder / f"{name}.md"
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            version = re.search(r"(?m)^version:\s*(\S+)", text)
            system, _, prompt = text.partition("\n---prompt---\n")
            system = re.sub(r"(?m)^version:.*\n", "", system).strip()
            return Strategy(name, version.group(1) if version else "0", system, prompt.strip())
    raise TideMindError(f"strategy {name!r} not found (shipped ones: {SHIPPED_STRATEGIES})")


# -- validated JSON -----------------------------------------------------------------------------
Schema = dict   # {"key": {"type": "str"|"int"|"float"|"list"|"bool", "required": bool, "max": n, "enum": [...],
                #          "items": {"type": ..., "max": n}, "min": x, "max_value": y}}


def validate(data, schema: Schema) -> str | None:
    """None when `data` fits, else the first reason it does not."""
    if not isinstance(data, dict):
        return "not a JSON object"
    types = {"str": str, "int": int, "float": (int, float), "list": list, "bool": bool}
    for key, rule in schema.items():
        if key not in data:
            if rule.get("required"):
                return f"missing {key}"
            continue
        value = data[key]
        if not isinstance(value, types[rule["type"]]) or (rule["type"] in ("int", "float") and isinstance(value, bool)):
            return f"{key} is not {rule['type']}"
        if "enum" in rule and value not in rule["enum"]:
            return f"{key} is not one of {rule['enum']}"
        if rule["type"] in ("str", "list") and "max" in rule and len(value) > rule["max"]:
            return f"{key} is too long"
        if rule["type"] in ("int", "float") and not rule.get("min", float("-inf")) <= value <= rule.get("max_value", float("inf")):
            return f"{key} is out of range"
        if rule["type"] == "list" and "items" in rule:
            for item in value:
                reason = validate({"_": item}, {"_": rule["items"]})
                if reason:
                    return f"{key}: {reason}"
    return None


def _extract_json(text: str):
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[start:])
            return obj
        except ValueError:
            start = text.find("{", start + 1)
    return None


class CircuitBreaker:
    """Opens after `threshold` consecutive failures of a task and stays open for `cooldown_s`."""

    def __init__(self, threshold: int = 3, cooldown_s: float = 600.0):
        self.threshold, self.cooldown_s = threshold, cooldown_s
        self.failures: dict[str, int] = {}
        self.opened: dict[str, float] = {}

    def allows(self, task: str) -> bool:
        opened = self.opened.get(task)
        if opened is None:
            return True
        if time.monotonic() - opened >= self.cooldown_s:
            del self.opened[task]
            self.failures[task] = 0
            return True
        return False

    def record(self, task: str, ok: bool) -> None:
        if ok:
            self.failures[task] = 0
            return
        self.failures[task] = self.failures.get(task, 0) + 1
        if self.failures[task] >= self.threshold:
            self.opened[task] = time.monotonic()


BREAKER = CircuitBreaker()


class Waiting(ProviderUnavailable):
    """Raised instead of calling a model the scheduler is waiting for: no call was made."""


class Watched:
    """The configured model as the scheduler hands it to one task run: it notes whether the model
    answered or could not be reached, and while the scheduler waits out a backoff (`retry_at`) it
    raises `Waiting` instead of calling, so a task stops at its first model call."""

    def __init__(self, llm: LLM, retry_at: str | None = None, last_error: str | None = None):
        self.inner, self.name = llm, llm.name
        self.retry_at, self.last_error = retry_at, last_error
        self.answered = 0
        self.outage: ProviderUnavailable | None = None

    def complete(self, system: str, prompt: str, max_tokens: int = 800) -> Completion:
        if self.retry_at:
            raise Waiting(f"{self.name} is unreachable; waiting until {self.retry_at} before trying again"
                          + (f" (last error: {self.last_error})" if self.last_error else ""), self.name, "llm")
        try:
            completion = self.inner.complete(system, prompt, max_tokens)
        except ProviderUnavailable as exc:
            exc.provider, exc.kind = exc.provider or self.name, exc.kind or "llm"
            self.outage = exc
            raise
        self.answered += 1
        return completion


def ask_json(conn: apsw.Connection, llm: LLM, task: str, strategy: Strategy, schema: Schema, at: str,
             max_tokens: int = 600, check: Callable[[dict], str | None] | None = None, **values) -> dict | None:
    """Call the model with a strategy, return a validated object or None (never raises for bad
    output). `check` is the caller's own validation after the schema's (None when the answer
    fits, else why not). Raises `ProviderUnavailable` when the model cannot be reached."""
    # one breaker per model and task: a model swapped in is not held to the last one's failures
    breaker_key = f"{getattr(llm, 'name', '?')} {task}"
    if not BREAKER.allows(breaker_key):
        return None
    started = time.perf_counter()
    status, reason, result, completion = "ok", None, None, Completion("")
    outage = None
    try:
        completion = llm.complete(strategy.system, strategy.render(**values), max_tokens)
        data = _extract_json(completion.text)
        reason = "no JSON object in the answer" if data is None else validate(data, schema)
        if not reason and check is not None:
            reason = check(data)
        if reason:
            status = "invalid"
        else:
            result = data
    except Waiting:
        raise                       # nothing was asked, nothing to record
    except ProviderUnavailable as exc:
        status, reason, outage = "unreachable", str(exc)[:300], exc
    except Exception as exc:        # a request the service refused on its merits: recorded, the pass goes on
        status, reason = "error", f"{type(exc).__name__}: {exc}"[:300]
    if outage is None:              # an outage says nothing about the answers: the scheduler handles it
        BREAKER.record(breaker_key, status == "ok")
    llm_calls.record(conn, at=at, task=task, provider=llm.name, strategy=f"{strategy.name}@{strategy.version}",
                     status=status, reason=reason, input_tokens=completion.input_tokens,
                     output_tokens=completion.output_tokens, ms=int((time.perf_counter() - started) * 1000))
    if outage is not None:
        raise outage
    return result
