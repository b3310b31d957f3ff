"""Where the data lives and the few settings the core needs.

Precedence: explicit argument > environment (TIDEMIND_*) > `config.json` > `config.toml` in the
home > defaults. Keys: embedder, ollama_host, ollama_model, max_content_chars, busy_timeout_ms,
default_scope, scopes (for `serve` and hooks), llm (anthropic | ollama | none), anthropic_model,
ollama_chat_model.
"""
from __future__ import annotations

import json
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
    embedder: str = "default"
    ollama_host: str = "http://127.0.0.1:11434"
    ollama_model: str = "nomic-embed-text"
    busy_timeout_ms: int = 10_000
    default_scope: str = "personal"
    extra: dict = field(default_factory=dict)

    @property
    def db_path(self) -> Path:
        return self.home / "tidemind.db"

    @property
    def stream_dir(self) -> Path:
        return self.home / "stream"


def load_settings(home: str | os.PathLike | None = None, **overrides) -> Settings:
    root = resolve_home(home)
    values: dict = {}
    toml_cfg = root / "config.toml"
    if toml_cfg.exists():
        import tomllib

        try:
            values.update(tomllib.loads(toml_cfg.read_text(encoding="utf-8")))
        except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read {toml_cfg}: {exc}") from None
    cfg = root / "config.json"
    if cfg.exists():
        try:
            loaded = json.loads(cfg.read_text(encoding="utf-8"))
        except (ValueError, OSError) as exc:
            raise InvalidInput(f"cannot read {cfg}: {exc}") from None
        if not isinstance(loaded, dict):
            raise InvalidInput(f"{cfg} must hold a JSON object of settings")
        values.update(loaded)
    env_map = {
        "TIDEMIND_EMBEDDER": "embedder",
        "TIDEMIND_OLLAMA_HOST": "ollama_host",
        "OLLAMA_HOST": "ollama_host",
        "TIDEMIND_OLLAMA_MODEL": "ollama_model",
        "TIDEMIND_MAX_CONTENT_CHARS": "max_content_chars",
    }
    for var, key in env_map.items():
        if os.environ.get(var) and key not in overrides:
            values[key] = os.environ[var]
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f for f in Settings.__dataclass_fields__ if f not in {"home", "extra"}}
    settings = Settings(home=root, **{k: v for k, v in values.items() if k in known})
    for key in ("max_content_chars", "busy_timeout_ms"):
        try:
            setattr(settings, key, int(getattr(settings, key)))
        except (TypeError, ValueError):
            raise InvalidInput(f"setting {key} must be a whole number, got {getattr(settings, key)!r}") from None
        if getattr(settings, key) <= 0:
            raise InvalidInput(f"setting {key} must be positive")
    settings.extra = {k: v for k, v in values.items() if k not in known}
    _check_scopes(settings)
    return settings


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
