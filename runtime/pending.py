"""The pending table: requests in flight in both directions, and what was cancelled.

``outgoing`` holds the requests this side sent and not yet seen answered, by id: a
response is typed by the method stored here, an id not here is a violation (unless this
side cancelled it: a response after cancellation is ignored). ``incoming`` holds the
requests the peer sent and this side has not answered: a second request with an
outstanding id is a violation, and answering an id not here is local misuse (unless the
peer cancelled it: the late answer is dropped). Ids of 2025-03-26 batches are grouped
so the answers go out together.
"""

from __future__ import annotations

from typing import Any, Final, Generic, TypeVar

import msgspec

from .envelope import ErrorResponse, RequestId

__all__ = [
    "Batch",
    "IncomingRequest",
    "Memory",
    "OutgoingRequest",
    "PendingTable",
    "UnrecordedErrorResponse",
]

K = TypeVar("K")

#: How many cancelled ids each side remembers (to tell a late response from a bogus one).
MEMORY: Final = 4096


class Memory(Generic[K]):
    """A set that forgets its oldest members beyond ``capacity``."""

    __slots__ = ("_capacity", "items")

    def __init__(self, capacity: int = MEMORY) -> None:
        #: The members, oldest first (read it directly on hot paths).
        self.items: dict[K, None] = {}
        self._capacity = capacity

    def add(self, item: K) -> None:
        items = self.items
        items.pop(item, None)
        items[item] = None
        if len(items) > self._capacity:
            del items[next(iter(items))]

    def discard(self, item: K) -> bool:
        """Forget ``item``; whether it was there."""
        return self.items.pop(item, 0) is None

    def __contains__(self, item: object) -> bool:
        return item in self.items

    def __len__(self) -> int:
        return len(self.items)


class OutgoingRequest(msgspec.Struct, gc=False):
    """A request this side sent."""

    id: RequestId
    method: str
    request: Any
    task: bool = False
    progress_token: RequestId | None = None
    #: 2026-07-28: the rank of the request's logLevel (see stateless.LEVELS).
    log_level: int | None = None
    #: 2026-07-28: the client capabilities sent with the request (JSON).
    capabilities: dict[str, Any] | None = None
    #: True when the response needs nothing but typing (no token, task, hook).
    plain: bool = True


class UnrecordedErrorResponse(ErrorResponse, kw_only=True):
    """An error response a session owes without keeping a record of the request: the
    answer to a request refused beyond ``Limits.max_requests_in_flight``. ``send`` writes
    it like any other; the wire form is that of :class:`ErrorResponse`."""


class Batch:
    """The requests of one received 2025-03-26 batch still owed an answer."""

    __slots__ = ("null_owed", "responses", "waiting")

    def __init__(self) -> None:
        self.waiting: set[RequestId] = set()
        self.null_owed = 0
        self.responses: list[Any] = []

    @property
    def complete(self) -> bool:
        return not self.waiting and not self.null_owed


class IncomingRequest(msgspec.Struct, gc=False):
    """A request the peer sent and this side has not answered."""

    id: RequestId
    method: str
    progress_token: RequestId | None = None
    #: True for a task-augmented request (answered by ``CreateTaskResult``).
    task: bool = False
    #: The 2025-03-26 batch the request came in.
    batch: Batch | None = None
    #: 2026-07-28: the rank of the request's logLevel (see stateless.LEVELS).
    log_level: int | None = None
    #: 2026-07-28: the client capabilities the request declared (JSON).
    capabilities: dict[str, Any] | None = None
    #: True when the request broke a rule: only an error response may answer it.
    rejected: bool = False


class PendingTable:
    """Both directions' requests in flight, and the cancelled ids each side remembers."""

    __slots__ = ("cancelled_in", "cancelled_out", "incoming", "null_owed", "outgoing")

    def __init__(self) -> None:
        self.outgoing: dict[RequestId, OutgoingRequest] = {}
        self.incoming: dict[RequestId, IncomingRequest] = {}
        #: Requests this side cancelled: their late responses are ignored.
        self.cancelled_out: Memory[RequestId] = Memory()
        #: Requests the peer cancelled: this side's late answers are dropped.
        self.cancelled_in: Memory[RequestId] = Memory()
        #: Error responses with id null owed for unreadable requests (outside batches).
        self.null_owed = 0
