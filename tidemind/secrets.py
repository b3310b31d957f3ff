"""Mask obvious secrets before anything is stored.

A memory store is the wrong place for credentials: they would be copied into the stream file,
the FTS index and every backup. Each pattern is specific enough to rarely hit prose; what
matches is replaced by `[REDACTED:<kind>]` and the digest's warnings say what was masked.
"""
from __future__ import annotations

import re

PATTERNS: list[tuple[str, re.Pattern]] = [
    ("private_key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
                               re.DOTALL)),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("stripe_key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("bearer_token", re.compile(r"(?i)\bbearer (?P<secret>[A-Za-z0-9_\-\.=]{20,})")),
    ("password_in_url", re.compile(r"://[^/\s:@]+:(?P<secret>[^/\s@]{3,})@")),
    # key = value assignments whose name says secret; only the value (group "secret") is masked
    ("assigned_secret", re.compile(
        r"(?i)\b(?:api[_-]?key|secret|secret[_-]?key|access[_-]?token|auth[_-]?token|password|passwd|pwd)"
        r"[\"']?\s{0,3}[:=]\s{0,3}[\"']?(?P<secret>(?![\[<{$])[^\s\"'`,;]{8,})")),
]


def mask(text: str) -> tuple[str, list[str]]:
    """Return the text with secrets masked and the kinds that were found (in order, unique)."""
    found: list[str] = []
    for kind, pattern in PATTERNS:
        marker = f"[REDACTED:{kind}]"

        def replace(m: re.Match, marker=marker) -> str:
            if "secret" in pattern.groupindex:
                start, end = m.span("secret")
                return m.group(0)[: start - m.start()] + marker + m.group(0)[end - m.start():]
            return marker

        text, n = pattern.subn(replace, text)
        if n and kind not in found:
            found.append(kind)
    return text, found
