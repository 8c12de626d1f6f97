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

from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

import msgspec

from ..envelope import ErrorResponse, RequestId

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
    #: The revision the request was received in, when the session has switched to
    #: another since (negotiation picked one): it is answered in its own terms.
    revision: str | None = None
    #: Its share of the bytes of the message it came in (counted in
    #: ``PendingTable.incoming_bytes`` while it is unanswered).
    size: int = 0


class PendingTable:
    """Both directions' requests in flight, the cancelled ids each side remembers, and
    the answers owed to received 2025-03-26 batches."""

    __slots__ = (
        "arriving_size",
        "batch",
        "cancelled_in",
        "cancelled_log_rank",
        "cancelled_out",
        "counter",
        "incoming",
        "incoming_bytes",
        "null_batches",
        "null_owed",
        "open_batches",
        "outgoing",
    )

    def __init__(self) -> None:
        self.outgoing: dict[RequestId, OutgoingRequest] = {}
        self.incoming: dict[RequestId, IncomingRequest] = {}
        #: The sum of the ``size`` of the records in ``incoming``.
        self.incoming_bytes = 0
        #: What each request of the message being received is charged: its size, or a
        #: batch's size shared among its members.
        self.arriving_size = 0
        #: Requests this side cancelled: their late responses are ignored.
        self.cancelled_out: Memory[RequestId] = Memory()
        #: Requests the peer cancelled: this side's late answers are dropped.
        self.cancelled_in: Memory[RequestId] = Memory()
        #: 2026-07-28: the most verbose log level (its rank) of a request this side
        #: cancelled; a log message may have crossed that cancellation.
        self.cancelled_log_rank: int | None = None
        #: Error responses with id null owed for unreadable requests (outside batches).
        self.null_owed = 0
        #: Received batches some of whose answers are still owed, oldest first, and
        #: those of them owed error responses with id null.
        self.open_batches: dict[Batch, None] = {}
        self.null_batches: dict[Batch, None] = {}
        #: The batch being received, while its members are taken in.
        self.batch: Batch | None = None
        #: The last id :meth:`next_id` gave.
        self.counter = 0

    def next_id(self) -> int:
        """A request id not outstanding (a counter from 1)."""
        while True:
            self.counter += 1
            if self.counter not in self.outgoing:
                return self.counter

    def has_room(self, max_requests: int, max_bytes: int) -> bool:
        """Whether a request of the message being received fits within the limits of
        the peer's requests in flight, in number and in bytes."""
        return (
            len(self.incoming) < max_requests
            and self.incoming_bytes + self.arriving_size <= max_bytes
        )

    def take_in(self, record: IncomingRequest) -> None:
        """Record a request of the peer that awaits this side's answer."""
        self.incoming[record.id] = record
        self.incoming_bytes += record.size

    def release(self, request_id: RequestId) -> IncomingRequest:
        """Forget the peer's request ``request_id`` (answered, or cancelled): its record."""
        record = self.incoming.pop(request_id)
        self.incoming_bytes -= record.size
        return record

    def owed(self) -> int:
        """How many answers this side owes the peer, counting each open batch once."""
        return len(self.incoming) + self.null_owed + len(self.open_batches)

    def batch_received(self, batch: Batch) -> None:
        """All members of ``batch`` were taken in: it stays open while answers are owed."""
        if not batch.complete:
            self.open_batches[batch] = None
            if batch.null_owed:
                self.null_batches[batch] = None

    def answered(
        self, record: IncomingRequest, response: Any, data: bytes, encode: Callable[[Any], bytes]
    ) -> bytes:
        r"""What to write for the answer ``data`` (``response``, encoded) to ``record``:
        itself, or the batch it completes (``encode``\ d), or nothing yet."""
        batch = record.batch
        if batch is None:
            return data
        batch.waiting.discard(record.id)
        batch.responses.append(response)
        return self.flush(batch, encode)

    def null_answered(self, response: Any, encode: Callable[[Any], bytes]) -> bytes | None:
        """What to write for an error response with id null: the oldest open batch owed
        one takes it; ``None`` when no batch is owed one."""
        batch = next(iter(self.null_batches), None)
        if batch is None:
            return None
        batch.null_owed -= 1
        if not batch.null_owed:
            del self.null_batches[batch]
        batch.responses.append(response)
        return self.flush(batch, encode)

    def flush(self, batch: Batch, encode: Callable[[Any], bytes]) -> bytes:
        """The answer of ``batch`` once it is complete (``b""`` before, or when none of
        its members is answered)."""
        if not batch.complete:
            return b""
        self.open_batches.pop(batch, None)
        self.null_batches.pop(batch, None)
        if not batch.responses:
            return b""
        return encode(batch.responses)
