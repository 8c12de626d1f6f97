"""Change notifications of a server: list changes and resource updates, delivered to
each connection the way its revision wants them.

Up to 2025-11-25 a server sends ``notifications/tools/list_changed`` (prompts,
resources) on the connection when it declared ``listChanged``, and
``notifications/resources/updated`` for a resource the client subscribed to with
``resources/subscribe``. In 2026-07-28 the client opens a ``subscriptions/listen``
request with a filter; the server acknowledges the part of it that it honours, then
sends only the notifications the filter asks for, each naming the subscription in its
``_meta`` (``io.modelcontextprotocol/subscriptionId``).

:class:`ChangeFeed` is that, for one connection: what it subscribed to, and how to send
it a change. A feed made with a ``buffer`` never waits on its client:
:meth:`~ChangeFeed.deliver` only queues (a notification already waiting is not queued
again), the task that owns the connection's stream sends (:meth:`~ChangeFeed.pump`),
and a client that lets more than ``buffer`` notifications pile up is dropped.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import anyio
import msgspec

from mcpspec.runtime.envelope import RequestId
from mcpspec.runtime.errors import ErrorCode
from mcpspec.runtime.session.misuse import LocalProtocolError
from mcpspec.runtime.session.rules import Rule

from .errors import ConnectionClosed, RequestError

if TYPE_CHECKING:
    from mcpspec.runtime.session.server import ServerSession

    from .peer import Peer

__all__ = ["CHANGES", "ChangeFeed"]

logger = logging.getLogger("mcpspec.connection")

SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
#: The change notifications, by method: the capability that declares them and the
#: 2026-07-28 filter field that opts in to them.
CHANGES: Final[Mapping[str, tuple[str, str]]] = {
    "notifications/tools/list_changed": ("tools", "toolsListChanged"),
    "notifications/prompts/list_changed": ("prompts", "promptsListChanged"),
    "notifications/resources/list_changed": ("resources", "resourcesListChanged"),
    "notifications/resources/updated": ("resources", "resourceSubscriptions"),
}
#: The generated class of each notification.
_CLASSES: Final[Mapping[str, str]] = {
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
}


#: How long the stream of a client dropped for not reading gets to end (seconds).
DROP_GRACE: Final = 5.0

#: What tells two change notifications apart: method, resource, subscription.
_Key = tuple[str, str | None, RequestId | None]


def agreed_filter(requested: Mapping[str, Any], capabilities: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a ``subscriptions/listen`` filter (wire form) a server with
    ``capabilities`` (wire form) honours: list changes it declared ``listChanged``
    for, resource updates if it declared ``resources.subscribe``."""
    agreed: dict[str, Any] = {}
    for capability, field in CHANGES.values():
        value = requested.get(field)
        declared = capabilities.get(capability)
        if not isinstance(declared, dict) or value in (None, False, []):
            continue
        if field == "resourceSubscriptions":
            if declared.get("subscribe") is True and isinstance(value, list):
                agreed[field] = list(value)
        elif declared.get("listChanged") is True and value is True:
            agreed[field] = True
    return agreed


class ChangeFeed:
    """The change notifications one connection takes: its ``resources/subscribe``
    subscriptions (handshake) and its open ``subscriptions/listen`` requests with their
    agreed filters (2026-07-28)."""

    def __init__(self, peer: Peer[ServerSession], *, buffer: int | None = None) -> None:
        """``buffer``: queue at most that many notifications for :meth:`pump` to send
        (``None``: :meth:`deliver` sends them itself, waiting on the client)."""
        self._peer = peer
        #: Resources the client subscribed to with ``resources/subscribe``.
        self.subscribed: set[str] = set()
        #: The characters of the URIs in ``subscribed``.
        self._subscribed_size = 0
        #: Open ``subscriptions/listen`` requests: their agreed filters, by id.
        self.listeners: dict[RequestId, dict[str, Any]] = {}
        self._buffer = buffer
        self._outbox: collections.deque[tuple[_Key, dict[str, Any] | None]] | None = (
            collections.deque() if buffer is not None else None
        )
        #: The keys of the notifications in ``_outbox``: one queued already is not
        #: queued again (it tells nothing more), so a burst of changes takes one place.
        self._pending: set[_Key] = set()
        #: Set when something is queued while :meth:`pump` waits.
        self._queued: anyio.Event | None = None
        #: The client fell more than ``buffer`` notifications behind: it takes no more.
        self.dropped = False
        #: Called (once, in the announcer's task: it must not block) when the feed is
        #: dropped; it should end the client's stream.
        self.on_overflow: Callable[[], object] | None = None

    def subscribe(self, uri: str) -> None:
        """Keep the client's subscription to ``uri``. Raises :class:`RequestError`
        (-32600, rule ``limit-exceeded``) beyond the session's ``max_subscriptions``, or
        when the URIs kept would pass ``max_message_bytes`` characters together."""
        if uri in self.subscribed:
            return
        limits = self._peer.session.limits
        if len(self.subscribed) >= limits.max_subscriptions:
            raise _over_limit(
                f"{len(self.subscribed)} resources are subscribed to: over the limit "
                f"max_subscriptions={limits.max_subscriptions}"
            )
        if self._subscribed_size + len(uri) > limits.max_message_bytes:
            raise _over_limit(
                f"the subscribed URIs would hold {self._subscribed_size + len(uri)} "
                f"characters: over the limit max_message_bytes={limits.max_message_bytes}"
            )
        self.subscribed.add(uri)
        self._subscribed_size += len(uri)

    def unsubscribe(self, uri: str) -> None:
        """Forget the client's subscription to ``uri`` (none: nothing to do)."""
        if uri in self.subscribed:
            self.subscribed.remove(uri)
            self._subscribed_size -= len(uri)

    async def acknowledge(self, request_id: RequestId, agreed: dict[str, Any]) -> None:
        """Acknowledge the listen request ``request_id`` with the filter ``agreed``
        and start delivering to it."""
        params = {"notifications": agreed, "_meta": {SUBSCRIPTION_ID: request_id}}
        await self._send("notifications/subscriptions/acknowledged", params, request_id)
        self.listeners[request_id] = agreed

    async def deliver(self, method: str, uri: str | None = None) -> None:
        """Send the change ``method`` (about ``uri`` for ``notifications/resources/
        updated``) if this connection takes it; a closed connection takes nothing.

        A change is about no request of the client's (up to 2025-11-25; over HTTP it
        travels on the session's standalone stream, even when a handler of this very
        session announced it) or about the ``subscriptions/listen`` request it is
        delivered to (2026-07-28)."""
        session = self._peer.session
        if self._peer.closed or session.model is None or self.dropped:
            return
        capability, field = CHANGES[method]
        base: dict[str, Any] = {} if uri is None else {"uri": uri}
        if session.model == "handshake":
            declared = session.capabilities.get(capability)
            if uri is not None:
                if uri in self.subscribed:
                    await self._emit((method, uri, None), base)
            elif isinstance(declared, dict) and declared.get("listChanged") is True:
                await self._emit((method, uri, None), base or None)
            return
        open_requests = session.unanswered
        for request_id, agreed in list(self.listeners.items()):
            if request_id not in open_requests:
                continue  # cancelled by the client; its handler has not ended yet
            value = agreed.get(field)
            if value is True or (uri is not None and isinstance(value, list) and uri in value):
                params = {**base, "_meta": {SUBSCRIPTION_ID: request_id}}
                await self._emit((method, uri, request_id), params)

    async def pump(self) -> None:
        """Send what :meth:`deliver` queued, in order, until cancelled (a feed with a
        ``buffer``; run it in the task that owns the connection's stream, so that only
        that task waits on a client that does not read)."""
        outbox = self._outbox
        if outbox is None:
            raise RuntimeError("a feed without a buffer sends as it delivers")
        while True:
            while outbox:
                key, params = outbox.popleft()
                self._pending.discard(key)
                await self._send(key[0], params, key[2])
            self._queued = anyio.Event()
            await self._queued.wait()

    async def _emit(self, key: _Key, params: dict[str, Any] | None) -> None:
        """Send one change (``key``: its method, resource and subscription), or queue
        it for :meth:`pump` (a buffered feed: never waits)."""
        outbox = self._outbox
        if outbox is None:
            await self._send(key[0], params, key[2])
            return
        if key in self._pending:
            return
        if self._buffer is not None and len(outbox) >= self._buffer:
            # The client is not reading: waiting on it would stall the announcer (and
            # every client after this one), and queueing more would grow without bound.
            self.dropped = True
            outbox.clear()
            self._pending.clear()
            self.listeners.clear()
            logger.warning("a client fell %d change notifications behind: dropped", self._buffer)
            if self.on_overflow is not None:
                self.on_overflow()
            return
        outbox.append((key, params))
        self._pending.add(key)
        if self._queued is not None:
            self._queued.set()

    async def _send(
        self, method: str, params: dict[str, Any] | None, related: RequestId | None
    ) -> None:
        """Send one notification, about the request ``related`` (a listen request) if
        any."""
        session = self._peer.session
        cls = getattr(session.types, _CLASSES.get(method, "SubscriptionsAcknowledgedNotification"))
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        notification = session.codec.decode_as(cls, msgspec.json.encode(message))
        try:
            await self._peer.notify(notification, related_request_id=related)
        except ConnectionClosed:
            pass
        except LocalProtocolError as exc:  # the session refused it: report, go on
            logger.warning("a change notification was not sent: %s", exc)


def _over_limit(reason: str) -> RequestError:
    """The error of a subscription beyond a limit, shaped as the session's own."""
    return RequestError.of(
        ErrorCode.INVALID_REQUEST,
        data={"rule": Rule.LIMIT_EXCEEDED.value, "path": "$.params.uri", "reason": reason},
    )
