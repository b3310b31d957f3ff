"""Where the data lives and the few settings the core needs.

One file, `config.toml` in the home; every key, its default and its environment variable are in
docs/CONFIG.md, and `tidemind config show` prints the effective settings and where each came from.
Precedence: explicit argument > environment (TideMind's own TIDEMIND_* before a generic one such
as OLLAMA_HOST) > `config.toml` > `config.json` (an older file, still read; doctor and `config
show` say to move it) > defaults.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InvalidInput

DEFAULT_HOME = Path.home() / ".tidemind"


def resolve_home(home: str | os.PathLike | None = None) -> Path:
    chosen = home or os.environ.get("TIDEMIND_HOME") or DEFAULT_HOME
    return Path(chosen).expanduser().resolve()


@dataclass
class Settings:
    home: Path
    max_content_chars: int = 100_000      # one digest; larger inputs belong in an importer
    max_note_bytes: int = 2_000_000       # one file an importer reads (a larger one is skipped, with the reason)
    embedder: str = "default"
    ollama_host: str = "http://127.0.0.1:11434"
    ollama_model: str = "nomic-embed-text"
    busy_timeout_ms: int = 10_000
    default_scope: str = "personal"
    store: str = ""                       # where the store is: empty is tidemind.db in the home (store/backend.py)
    extra: dict = field(default_factory=dict)
    # key -> where its value came from ("config.toml", "environment TIDEMIND_STORE", ...; absent: default)
    sources: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def store_location(self):
        from .store.backend import locate

        return locate(self.store, self.home)

    @property
    def db_path(self) -> Path:
        """The SQLite file of the store (a store in another backend has none: said in one line)."""
        from .store.backend import backend_for

        location = self.store_location
        backend_for(location)
        if location.path is None:
            raise InvalidInput(f"store {location} is no SQLite file")
        return location.path

    @property
    def stream_dir(self) -> Path:
        """The stream of everything said lives beside the store: a store named elsewhere keeps its
        own ("<name>-stream" beside the file), so two homes on one store write one stream."""
        path = self.store_location.path if self.store else None
        return path.with_name(f"{path.stem}-stream") if path is not None else self.home / "stream"


# The schema every value is checked against when the settings are read, naming the key: a wrong
# type is refused, never coerced (`busy_timeout_ms: true` became 1 ms, `max_content_chars: "1_0"`
# became 10, `default_scope: 5` and `embedder: 7` ended in tracebacks far from the config).
WHOLE_NUMBERS = {"max_content_chars": (1, 10_000_000), "max_note_bytes": (1, 1_000_000_000),
                 "busy_timeout_ms": (1, 3_600_000)}
TEXTS = ("embedder", "ollama_host", "ollama_model", "llm", "anthropic_model", "ollama_chat_model", "store", "date_order")
# the only keys that hold a table, with the type of each member they read (their modules check the values)
TABLES = {"clarify": {"ask": "text", "hold_hours": "number", "kinds": "texts", "timezone": "text"},
          "workstreams": {k: "number" for k in ("ripe_days", "ripe_mass", "ripe_age_days", "alias_share",
                                                "alias_together")},
          # tidemind proxy (proxy/driver.py MemoryConfig, proxy/__init__.py)
          "memory": {"short_term": "flag", "window": "number", "long_term": "flag", "limit": "number",
                     "budget": "number", "scopes": "texts"},
          "proxy": {"anthropic_upstream": "text", "openai_upstream": "text"},
          # the desktop (tidemind_desktop/main_window.py graph_opening)
          "desktop": {"graph_open": "text"}}
MAX_TEXT_CHARS = 2_000


def _read_config(path: Path, parse) -> dict:
    if not path.exists():
        return {}
    if not path.is_file():                 # a FIFO would block the read for ever; a folder is no config
        raise InvalidInput(f"cannot read {path}: not a regular file")
    try:
        loaded = parse(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise InvalidInput(f"cannot read {path}: it is nested too deeply") from None
    except (ValueError, OSError) as exc:   # (TOMLDecodeError, JSONDecodeError, UnicodeDecodeError are ValueErrors)
        raise InvalidInput(f"cannot read {path}: {' '.join(str(exc).split())}") from None
    if not isinstance(loaded, dict):
        raise InvalidInput(f"{path} must hold a {'JSON object' if path.suffix == '.json' else 'table'} of settings")
    return loaded


def load_settings(home: str | os.PathLike | None = None, **overrides) -> Settings:
    import tomllib

    root = resolve_home(home)
    values: dict = {}
    sources: dict = {}
    for name, parse in (("config.json", json.loads), ("config.toml", tomllib.loads)):     # the TOML wins
        found = _read_config(root / name, parse)
        values.update(found)
        sources.update(dict.fromkeys(found, name))
    for var, key in ENVIRONMENT.items():
        if os.environ.get(var) and key not in overrides and not sources.get(key, "").startswith("environment"):
            raw = os.environ[var]
            if key in WHOLE_NUMBERS:       # the environment holds text: ASCII digits only ("1_0" is not 10)
                if not (raw.isascii() and raw.isdigit()):
                    raise InvalidInput(f"environment {var} must be a whole number written in ASCII digits, got"
                                       f" {raw[:40]!r}")
                raw = int(raw)
            values[key] = raw
            sources[key] = f"environment {var}"
    given = {k: v for k, v in overrides.items() if v is not None}
    values.update(given)
    sources.update(dict.fromkeys(given, "argument"))
    _check_values(values)
    known = {f for f in Settings.__dataclass_fields__ if f not in {"home", "extra", "sources"}}
    settings = Settings(home=root, **{k: v for k, v in values.items() if k in known})
    settings.extra = {k: v for k, v in values.items() if k not in known}
    settings.sources = sources
    _check_scopes(settings)
    return settings


# the environment variables each setting reads, TideMind's own first: a generic one (OLLAMA_HOST,
# which other tools read too) is used only when TideMind's is not set
ENVIRONMENT = {
    "TIDEMIND_EMBEDDER": "embedder",
    "TIDEMIND_OLLAMA_HOST": "ollama_host",
    "OLLAMA_HOST": "ollama_host",
    "TIDEMIND_OLLAMA_MODEL": "ollama_model",
    "TIDEMIND_MAX_CONTENT_CHARS": "max_content_chars",
    "TIDEMIND_MAX_NOTE_BYTES": "max_note_bytes",
    "TIDEMIND_STORE": "store",
    "TIDEMIND_LLM": "llm",
    "TIDEMIND_ANTHROPIC_MODEL": "anthropic_model",
    "TIDEMIND_OLLAMA_CHAT_MODEL": "ollama_chat_model",
}


# settings kept in `extra` that have a default, as `config show` says it (the modules reading them hold the values)
EXTRA_DEFAULTS = {
    "llm": "anthropic when ANTHROPIC_API_KEY is set, else none",
    "anthropic_model": "claude-haiku-4-5",
    "ollama_chat_model": "llama3.2",
    "date_order": "what the store's own dates show (month first until one decides)",
    "scopes": "every scope (serve, hooks)",
}


def effective(settings: Settings) -> list[dict]:
    """Every setting with its value and where it came from (`tidemind config show`)."""
    out = []
    for name in Settings.__dataclass_fields__:
        if name in ("extra", "sources"):
            continue
        value = getattr(settings, name)
        out.append({"key": name, "value": str(value) if isinstance(value, Path) else value,
                    "from": "--home / TIDEMIND_HOME / default" if name == "home" else settings.sources.get(name, "default")})
    for name in sorted(set(settings.extra) | set(EXTRA_DEFAULTS)):
        if name in settings.extra:
            out.append({"key": name, "value": settings.extra[name], "from": settings.sources.get(name, "default")})
        else:
            out.append({"key": name, "value": None, "from": f"default: {EXTRA_DEFAULTS[name]}"})
    return out


def older_file(settings: Settings) -> str | None:
    """A sentence when the home still has a config.json (read, but config.toml is the one file)."""
    if (settings.home / "config.json").is_file():
        return (f"{settings.home / 'config.json'} is still read, but config.toml is the one configuration file now:"
                " move its settings there (the TOML wins where both set a key)")
    return None


def _scalar(value) -> bool:
    return isinstance(value, (str, int, float, bool, dt.date, dt.time))     # (TOML has dates and times)


def _typed(kind: str, value) -> bool:
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind == "text":
        return isinstance(value, str)
    if kind == "flag":
        return isinstance(value, bool)
    return isinstance(value, list) and all(isinstance(v, str) for v in value)        # "texts"


def _shown(value) -> str:
    return f"{type(value).__name__} {json.dumps(value, default=str)[:40]}"


def _check_values(values: dict) -> None:
    for key, value in values.items():
        if key in WHOLE_NUMBERS:
            low, high = WHOLE_NUMBERS[key]
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidInput(f"setting {key} must be a whole number, got {_shown(value)}")
            if not low <= value <= high:
                raise InvalidInput(f"setting {key} must be between {low:,} and {high:,}, got {value:,}"[:200])
        elif key in TEXTS:
            if not isinstance(value, str) or not value.strip():
                raise InvalidInput(f"setting {key} must be text, got {_shown(value)}")
            if len(value) > MAX_TEXT_CHARS or not value.isprintable():
                raise InvalidInput(f"setting {key} must be at most {MAX_TEXT_CHARS:,} printable characters"
                                   " (no control characters or line breaks)")
        elif key in TABLES:
            if not isinstance(value, dict):
                raise InvalidInput(f"setting {key} must be a table, got {type(value).__name__}")
            for inner, member in value.items():
                kind = TABLES[key].get(inner)
                if kind is not None and not _typed(kind, member):
                    wanted = {"number": "a number", "text": "text", "texts": "a list of texts", "flag": "true or false"}[kind]
                    raise InvalidInput(f"setting {key}.{inner} must be {wanted}, got {_shown(member)}")
                if not (_scalar(member) or isinstance(member, list) and all(_scalar(v) for v in member)):
                    raise InvalidInput(f"setting {key}.{inner} holds tables or nested lists; it takes a value or a"
                                       " list of values")
        elif key in ("default_scope", "scopes"):
            continue                       # _check_scopes
        elif not (_scalar(value) or isinstance(value, list) and all(_scalar(v) for v in value)):
            raise InvalidInput(f"setting {key} holds a table or nested lists; only {' and '.join(TABLES)} are"
                               " tables")


def _check_scopes(settings: Settings) -> None:
    """`default_scope` and `scopes` pass the one scope check (NFC, no control or format
    character, no surrounding whitespace): `default_scope = "personal\\n"` made every digest
    go to a scope shown as "personal" that no read named."""
    from .scopes import check_scope

    try:
        settings.default_scope = check_scope(settings.default_scope)
    except InvalidInput as exc:
        raise InvalidInput(f"setting default_scope: {exc}") from None
    configured = settings.extra.get("scopes")
    if configured is None:
        return
    listed = [configured] if isinstance(configured, str) else configured
    if not isinstance(listed, list):
        raise InvalidInput(f"setting scopes must be a scope or a list of scopes, got {configured!r:.60}")
    try:
        settings.extra["scopes"] = [check_scope(s) for s in listed]
    except InvalidInput as exc:
        raise InvalidInput(f"setting scopes: {exc}") from None
