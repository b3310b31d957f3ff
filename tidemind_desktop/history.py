"""Where a person has been in the window, for back and forward: the memories they opened, the
graphs they drew and the searches they ran, in order (a browser's history, not the store's)."""
from __future__ import annotations

import copy

LIMIT = 200          # places kept; the oldest go first


class History:
    def __init__(self, limit: int = LIMIT):
        self.places: list[dict] = []
        self.at = -1
        self.limit = limit

    @property
    def current(self) -> dict | None:
        return self.places[self.at] if 0 <= self.at < len(self.places) else None

    def visit(self, place: dict) -> None:
        """A place reached by a person's own action: after the current one, dropping what was
        ahead of it (as a browser does once you follow a link after going back). The same place
        twice in a row is one entry (a graph redrawn, a search run again)."""
        if place == self.current:
            return
        del self.places[self.at + 1:]
        self.places.append(copy.deepcopy(place))
        if len(self.places) > self.limit:
            del self.places[0]
        self.at = len(self.places) - 1

    @property
    def can_go_back(self) -> bool:
        return self.at > 0

    @property
    def can_go_forward(self) -> bool:
        return self.at + 1 < len(self.places)

    def back(self) -> dict | None:
        if not self.can_go_back:
            return None
        self.at -= 1
        return copy.deepcopy(self.places[self.at])

    def forward(self) -> dict | None:
        if not self.can_go_forward:
            return None
        self.at += 1
        return copy.deepcopy(self.places[self.at])

    def forget_node(self, node_id: int) -> None:
        """A memory forgotten or archived from the window is no place to go back to."""
        kept = [p for p in self.places if p.get("node") != node_id]
        if len(kept) == len(self.places):
            return
        current = self.current
        self.places = [p for n, p in enumerate(kept) if n == 0 or p != kept[n - 1]]
        self.at = self.places.index(current) if current in self.places else len(self.places) - 1
