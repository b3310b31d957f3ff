"""Mask obvious secrets before anything is stored.

A memory store is the wrong place for credentials: they would be copied into the stream file,
the FTS index and every backup. Each pattern is specific enough to rarely hit prose; what
matches is replaced by `[REDACTED:<kind>]` and the digest's warnings say what was masked.
Where a pattern has a group named `secret`, only that group is replaced (the key name stays).
"""
from __future__ import annotations

import re
from typing import Any, Callable

# names that say "this value is a credential": DB_PASSWORD, MY_API_KEY, aws_secret_access_key...
_NAME = (r"(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_-])*(?:api[_-]?key|secret(?:[_-]?(?:access[_-]?)?key)?|client[_-]?secret"
         r"|access[_-]?token|auth[_-]?token|refresh[_-]?token|password|passwd|pwd)")
_VALUE = r"[\"']?(?P<secret>(?![\[<{$(])[^\s\"'`,;]{6,})"


def _credential_like(value: str) -> bool:
    """After 'password:' prose often follows ("Password: required"); a credential has digits or
    symbols, or mixed case at length, and is not a path or a URL."""
    if value.startswith(("/", "~", ".", "http")):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    mixed = any(c.islower() for c in value) and any(c.isupper() for c in value) and len(value) >= 12
    return len(value) >= 8 and (has_digit or has_symbol or mixed)


PATTERNS: list[tuple[str, re.Pattern, Callable[[str], bool] | None]] = [
    ("private_key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
                               re.DOTALL), None),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), None),
    ("openai_key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}"), None),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"), None),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), None),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), None),
    ("stripe_key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"), None),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), None),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), None),
    ("bearer_token", re.compile(r"(?i)\bbearer (?P<secret>[A-Za-z0-9_\-\.=]{20,})"), None),
    ("password_in_url", re.compile(r"://[^/\s:@]+:(?P<secret>[^/\s@]{3,})@"), None),
    # NAME = value (assignment syntax): any value that is not a placeholder
    ("assigned_secret", re.compile(rf"(?i){_NAME}[\"']?\s{{0,3}}=\s{{0,3}}{_VALUE}"), None),
    # NAME: value (prose or YAML): only values that look like credentials
    ("assigned_secret", re.compile(rf"(?i){_NAME}[\"']?\s{{0,3}}:\s{{0,3}}{_VALUE}"), _credential_like),
]


def mask(text: str) -> tuple[str, list[str]]:
    """Return the text with secrets masked and the kinds that were found (in order, unique)."""
    found: list[str] = []
    for kind, pattern, check in PATTERNS:
        marker = f"[REDACTED:{kind}]"
        hit = False

        def replace(m: re.Match) -> str:
            nonlocal hit
            if "secret" not in pattern.groupindex:
                hit = True
                return marker
            if check is not None and not check(m.group("secret")):
                return m.group(0)
            hit = True
            start, end = m.span("secret")
            return m.group(0)[: start - m.start()] + marker + m.group(0)[end - m.start():]

        text = pattern.sub(replace, text)
        if hit and kind not in found:
            found.append(kind)
    return text, found


def mask_tree(value: Any) -> tuple[Any, list[str]]:
    """Mask every string inside a JSON-like value (dict values, list items, nested); keys and
    non-strings are kept. For stores that keep structured text (review payloads, audit details)."""
    found: list[str] = []

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            masked, kinds = mask(v)
            found.extend(k for k in kinds if k not in found)
            return masked
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return v

    return walk(value), found
