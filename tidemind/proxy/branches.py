"""Which conversation, and which branch of it, a request continues (issue 26), from its messages
alone: no client header is needed.

Every message is hashed with the hash of the one before it (a chain), so the same conversation
sent again gives the same chain, and a conversation edited or forked at some message gives a new
chain from there on. An exchange (a question and its answer) is named by the chain up to its
answer; the next request of that conversation carries the answer among its messages, and the
chain up to it names its parent. A client that sends only its last few messages breaks the chain;
its last question and answer, hashed alone (`pair`), still find the exchange it continues.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .wire import Turn


def _h(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:40]


def _norm(text: str) -> str:
    return text.strip()


def chain(turns: list[Turn], scope: str = "") -> list[str]:
    """The chain hash after each turn, begun from the scope written to (the same conversation held
    in two scopes is two conversations)."""
    out, last = [], _h("scope", scope)
    for turn in turns:
        last = _h(last, turn.role, _norm(turn.text))
        out.append(last)
    return out


def pair(question: str, answer: str, scope: str = "") -> str:
    return _h("pair", scope, _norm(question), _norm(answer))


@dataclass(frozen=True)
class Position:
    """Where a request sits: the exchange it continues, as two ways of finding it."""
    parent_chain: str | None     # the chain up to the request's last answer (None: it has none)
    parent_pair: str | None      # that answer with the question before it


def position(turns: list[Turn], scope: str = "") -> Position:
    last_answer = max((i for i, t in enumerate(turns) if t.role == "assistant"), default=None)
    if last_answer is None:
        return Position(None, None)
    hashes = chain(turns, scope)
    question = next((turns[i].text for i in range(last_answer - 1, -1, -1) if turns[i].role == "user"), "")
    return Position(hashes[last_answer], pair(question, turns[last_answer].text, scope))


def earlier_pairs(turns: list[Turn], scope: str = "") -> list[str]:
    """The pair hash of each question and answer the request carries before its last answer,
    newest first: what the ancestors of the exchange it continues must hold."""
    out, question = [], None
    answers = [i for i, t in enumerate(turns) if t.role == "assistant"]
    for i in answers[:-1]:
        question = next((turns[j].text for j in range(i - 1, -1, -1) if turns[j].role == "user"), "")
        out.append(pair(question, turns[i].text, scope))
    return list(reversed(out))


def exchange_id(turns: list[Turn], answer: str, scope: str = "") -> str:
    """The id of the exchange a request and its answer make: the chain through the answer."""
    return chain([*turns, Turn("assistant", answer)], scope)[-1]
