"""Errors the shells turn into one clear line (CLI) or a tool error (MCP).

Every error a user can cause is a `TideMindError`; anything else is a bug and keeps its traceback.
"""
import re
from numbers import Integral

MAX_ID = 2**63 - 1


class TideMindError(Exception):
    """Base for errors caused by input or state, not by a bug."""


class InvalidInput(TideMindError):
    """Empty, over-size, badly encoded or malformed input."""


class NotFound(TideMindError):
    """An id that names nothing visible to the caller."""


class ScopeDenied(TideMindError):
    """A scope the caller may not read or write."""


class StoreBusy(TideMindError):
    """The database stayed locked by another writer past the busy timeout."""


class StorageError(TideMindError):
    """The disk under the store refused: it is full, read-only, or not ours to write. The
    message names the path and the errno; the transaction that met it was rolled back."""


def describe_os_error(exc: OSError, path=None, doing: str = "write") -> str:
    """'cannot write /p: No space left on device (errno 28, ENOSPC)': the path and the errno."""
    import errno as _errno

    where = exc.filename if getattr(exc, "filename", None) else path
    number = exc.errno
    name = _errno.errorcode.get(number, "?") if number else "?"
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"cannot {doing} {where}: {reason} (errno {number}, {name})" if number else f"cannot {doing} {where}: {reason}"


class ProviderUnavailable(TideMindError):
    """A model service (Ollama, Anthropic) is away or failing: callers that can do without it
    degrade (recall answers from full-text search and says so) instead of failing, and the
    metabolism waits for it (the scheduler retries with backoff). `provider` names the service
    (e.g. "anthropic/claude-haiku-4-5") and `kind` says which seam it sits behind ("llm" or
    "embedder"), so the scheduler knows whose state to record."""

    def __init__(self, message: str, provider: str | None = None, kind: str | None = None):
        super().__init__(message)
        self.provider = provider
        self.kind = kind


class Conflict(TideMindError):
    """The requested change does not fit the node's current state (e.g. correcting an archived node)."""


def check_id(value, what: str = "node") -> int:
    """A row id is a whole number, given as one. A boolean is refused (JSON `true` is not node 1:
    coercing it once made `forget` erase node 1), and so is text ("12"): a shell that reads ids as
    text (the CLI) converts them itself, where it can say what was wrong."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise InvalidInput(f"{what} id must be a whole number, got {type(value).__name__} {str(value)[:40]!r}")
    if not 0 < int(value) <= MAX_ID:
        raise InvalidInput(f"{what} id out of range: {value}")
    return int(value)


_ASCII_DIGITS = re.compile(r"[0-9]+")


def parse_id(text: str, what: str = "node") -> int:
    """The one reading of an id written as text, for every shell that reads ids as text (the CLI's
    arguments, the desktop's fields): ASCII digits only. Python's int() also reads "1_0" as 10,
    " 1" as 1 and "３" or "٤" as digits; taking those once made `forget 1_0` erase node 10."""
    if not isinstance(text, str) or not _ASCII_DIGITS.fullmatch(text):
        raise InvalidInput(f"{what} id must be written as ASCII digits only (no spaces, signs or"
                           f" separators), got {str(text)[:40]!r}")
    if len(text.lstrip("0")) > len(str(MAX_ID)):      # (int() of 4,300+ digits raises; nothing that long is an id)
        raise InvalidInput(f"{what} id out of range: {text[:40]}…")
    return check_id(int(text), what)
