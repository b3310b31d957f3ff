"""Errors the shells turn into one clear line (CLI) or a tool error (MCP).

Every error a user can cause is a `TideMindError`; anything else is a bug and keeps its traceback.
"""


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


class Conflict(TideMindError):
    """The requested change does not fit the node's current state (e.g. correcting an archived node)."""
