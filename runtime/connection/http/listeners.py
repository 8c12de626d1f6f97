"""The open 2026-07-28 ``subscriptions/listen`` streams of an app: :class:`ListenerTable`.

A listen stream lasts until its client goes away, and a client gone without closing it
may leave many open, so they are bounded as the handshake sessions are
(:class:`~.sessions.SessionTable`): each belongs to the principal whose request opened
it, ``max_sessions`` counts per principal, and a new stream ends the oldest of its own
principal only, never another's. Past ``max_total`` streams of all principals together
a new one is refused (503) rather than ending someone else's.
"""

from __future__ import annotations

import collections

import anyio

__all__ = ["ListenerTable"]


class ListenerTable:
    """The open listen streams (their cancel scopes), oldest first, with their
    owners (principal keys; ``None`` without authorization)."""

    def __init__(self, max_per_owner: int, max_total: int | None = None) -> None:
        self.max_per_owner = max_per_owner
        self.max_total = max_total if max_total is not None else max_per_owner
        self._owners: dict[anyio.CancelScope, str | None] = {}
        #: How many streams each owner has open.
        self._owned: collections.Counter[str | None] = collections.Counter()

    def __len__(self) -> int:
        return len(self._owners)

    def owned(self, owner: str | None) -> int:
        """How many streams ``owner`` has open."""
        return self._owned[owner]

    def has_room(self, owner: str | None) -> bool:
        """Whether a new stream of ``owner`` can be kept: below the total, or by
        ending one of its own."""
        return len(self._owners) < self.max_total or self._owned[owner] >= self.max_per_owner

    def add(self, scope: anyio.CancelScope, owner: str | None) -> None:
        """Keep the stream of ``scope``, ending (cancelling) the oldest of ``owner``'s
        own while it has ``max_per_owner`` of them."""
        while self._owned[owner] >= self.max_per_owner:
            oldest = next(s for s, o in self._owners.items() if o == owner)
            self.remove(oldest)
            oldest.cancel()
        self._owners[scope] = owner
        self._owned[owner] += 1

    def remove(self, scope: anyio.CancelScope) -> None:
        """Forget the stream of ``scope`` (it ended)."""
        if scope not in self._owners:
            return
        owner = self._owners.pop(scope)
        self._owned[owner] -= 1
        if not self._owned[owner]:
            del self._owned[owner]
