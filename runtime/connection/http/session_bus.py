"""How the workers sharing sessions tell each other things: :class:`MessageBus`.

A message published on a channel reaches every receiver subscribed to that channel, in
any worker, at most once (no receiver: it is lost, and ``publish`` says so by returning
0; the sender may then ``hold`` it, bounded, for the channel's next receiver). The
workers of a cluster use it for what cannot wait for the next request
(:mod:`.shared_sessions`): messages for a ``GET`` stream held by another worker, a
client's answer or cancellation that landed on a worker other than the one waiting for
it, a session ended, a change announced.

:class:`MemoryBus` joins the apps of one process (tests);
:class:`~.redis_store.RedisBus` joins workers over Redis pub/sub.
"""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable
from typing import Protocol

import anyio
import anyio.abc

__all__ = ["MemoryBus", "MessageBus", "Receiver"]

#: Takes one message of a channel subscribed to (it must not wait long: it is called in
#: the bus's reading task).
Receiver = Callable[[bytes], Awaitable[None]]


class MessageBus(Protocol):
    """Publish and subscribe, shared by workers. ``publish`` raises
    :class:`~.session_store.StoreUnavailable` when the bus cannot take a message in
    time."""

    async def publish(self, channel: str, data: bytes) -> int:
        """Send ``data`` to the receivers of ``channel``; how many workers took it."""
        ...

    async def subscribe(self, channel: str, receiver: Receiver) -> None:
        """Have ``receiver`` take the messages of ``channel`` from now on."""
        ...

    async def unsubscribe(self, channel: str, receiver: Receiver) -> None:
        """Stop ``receiver`` taking the messages of ``channel``."""
        ...

    async def run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Read the messages of the channels subscribed to and hand them to their
        receivers, until cancelled (started in the app's task group)."""
        ...

    async def hold(self, channel: str, data: bytes, *, unique: bool = False) -> None:
        """Keep ``data`` for the next receiver of ``channel`` (none took it), bounded:
        past ``held_messages`` or ``held_bytes`` the oldest go; all go after
        ``held_seconds`` without a new one. ``unique``: not when an equal message is
        held already (a change announced, which several workers may hold at once)."""
        ...

    async def receivers(self, channel: str) -> int:
        """How many workers take the messages of ``channel`` now."""
        ...

    async def take_held(self, channel: str) -> list[bytes]:
        """The messages held for ``channel``, oldest first (none are kept after)."""
        ...


class MemoryBus:
    """A :class:`MessageBus` in this process: each app joined to it is a worker. It
    holds at most ``held_messages`` messages and ``held_bytes`` bytes per channel (its
    messages live as long as the process: the apps of a test)."""

    def __init__(self, *, held_messages: int = 1024, held_bytes: int = 4 * 1024 * 1024) -> None:
        self._receivers: dict[str, list[Receiver]] = {}
        self.held_messages = held_messages
        self.held_bytes = held_bytes
        self._held: dict[str, collections.deque[bytes]] = {}

    async def publish(self, channel: str, data: bytes) -> int:
        receivers = list(self._receivers.get(channel, ()))
        for receiver in receivers:
            await receiver(data)
        return len(receivers)

    async def subscribe(self, channel: str, receiver: Receiver) -> None:
        self._receivers.setdefault(channel, []).append(receiver)

    async def unsubscribe(self, channel: str, receiver: Receiver) -> None:
        receivers = self._receivers.get(channel)
        if receivers is not None and receiver in receivers:
            receivers.remove(receiver)
            if not receivers:
                del self._receivers[channel]

    async def run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        task_status.started()
        await anyio.sleep_forever()

    async def hold(self, channel: str, data: bytes, *, unique: bool = False) -> None:
        held = self._held.setdefault(channel, collections.deque())
        if unique and data in held:
            return
        held.append(data)
        while len(held) > self.held_messages or sum(map(len, held)) > self.held_bytes:
            held.popleft()
        if not held:
            del self._held[channel]

    async def take_held(self, channel: str) -> list[bytes]:
        return list(self._held.pop(channel, ()))

    async def receivers(self, channel: str) -> int:
        return len(self._receivers.get(channel, ()))
