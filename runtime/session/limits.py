"""The limits a session keeps on what a peer can make it hold or do.

Every byte from a peer is hostile: a session refuses input beyond these limits with a
:class:`~mcpspec.runtime.session.events.ProtocolViolation` whose rule is
:attr:`~mcpspec.runtime.session.rules.Rule.LIMIT_EXCEEDED` and whose reason names the limit and
its value, and keeps nothing of what it refused. The defaults are safe for a server
facing an unknown client and roomy for real traffic; raise them where a deployment needs
more (large resources, many concurrent calls).

Nesting depth is not among them: msgspec decodes nested JSON recursively under the
interpreter's recursion limit, and the codec turns running out of it into a -32700
error, the same wherever the caller's stack stands (see ``Codec.decode``).
"""

from __future__ import annotations

import msgspec

from ..codec import MAX_BATCH_MEMBERS

__all__ = ["DEFAULT_LIMITS", "Limits"]

#: The least value of a limit, where it is not 1.
_LEAST = {"max_message_bytes": 512}


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """Per-session limits (``ServerSession(limits=...)``, ``ClientSession(limits=...)``).

    Each must be at least 1, and ``max_message_bytes`` at least 512: the receive path
    skips the size test for messages smaller than that.
    """

    #: The largest message ``receive`` takes, in bytes (the framed JSON text): a larger
    #: one is refused unread, answered with an error whose id is null.
    max_message_bytes: int = 4 * 1024 * 1024
    #: The most members of a 2025-03-26 JSON-RPC batch: a larger batch is refused whole.
    max_batch_members: int = MAX_BATCH_MEMBERS
    #: The most requests of the peer this side holds unanswered (including refused
    #: requests whose error response is owed). Beyond it a request gets an error
    #: response at once and nothing of it is kept.
    max_requests_in_flight: int = 1024
    #: The most bytes (their wire size) of the peer's requests this side holds
    #: unanswered. A request decodes to up to about 30 times its size in Python objects
    #: (``[{},{}]``: a dict of 64 bytes for three bytes of JSON), and its handler holds
    #: it until it is answered: this bounds what the requests in flight hold, in bytes
    #: the peer sent. Beyond it a request gets an error response at once and nothing of
    #: it is kept. Taken as ``max_message_bytes`` where that is larger.
    max_request_bytes_in_flight: int = 8 * 1024 * 1024
    #: The most progress tokens of the peer's requests this side holds, including those
    #: kept for tasks that have not finished (2025-11-25), which are the only task
    #: records a session keeps. Beyond it a request that asks for progress is refused;
    #: sending a request beyond it locally raises ``LimitError``.
    max_progress_tokens: int = 1024
    #: The most resources a client subscribes to (``resources/subscribe``) on one
    #: connection of the connection layer's ``Server``; their URIs together are held to
    #: ``max_message_bytes`` characters as well. Beyond either, a subscription is refused
    #: (-32600) and not kept.
    max_subscriptions: int = 1024

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            least = _LEAST.get(name, 1)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(
                    f"Limits.{name} must be an integer of at least {least}, not {value!r}"
                )

    @property
    def request_bytes_in_flight(self) -> int:
        """``max_request_bytes_in_flight``, or ``max_message_bytes`` where that is
        larger: a message the size limit takes is taken when nothing else is in flight."""
        return max(self.max_request_bytes_in_flight, self.max_message_bytes)


#: The limits a session keeps when given none.
DEFAULT_LIMITS = Limits()
