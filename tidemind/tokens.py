"""Bearer tokens for `tidemind serve --http`: how one is made, named and recognised (no SQL here:
`store/access_tokens.py` keeps them).

A token is `tidemind_` and 32 random bytes (URL-safe base64): unguessable, and recognisable by
its prefix, so `secrets.py` masks one pasted into a memory and a secret scanner can find one
committed by mistake. The store keeps only its SHA-256: a fast hash is enough for a random
256-bit secret (there is no dictionary to try), and it lets a server find the token in one
indexed lookup per request.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets

PREFIX = "tidemind_"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+\-]{0,63}")


def new_token() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def matches(stored_digest: str, token: str) -> bool:
    """Compared in constant time, so how long a refusal takes says nothing about how close a
    guess came (the lookup by digest already found the row; this is the check that counts)."""
    return hmac.compare_digest(stored_digest.encode("ascii"), digest(token).encode("ascii"))


def check_name(name) -> str:
    from .errors import InvalidInput

    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInput(f"invalid token name {str(name)[:60]!r}: use 1-64 letters, digits and _.@+-, beginning"
                           " with a letter or digit (e.g. alice, ci-runner)")
    return name
