"""A server's lifespan: what it opens once per process (a database, a client pool)
before it serves, and closes when it stops.

``Server(lifespan=fn)`` takes a function of the server returning an async context
manager; its value is what handlers reach as ``ctx.lifespan``::

    @contextlib.asynccontextmanager
    async def open_db(server):
        db = await connect()
        try:
            yield db
        finally:
            await db.close()

    server = Server("demo", lifespan=open_db)

It is entered by whatever runs the server for the process (``Server.run_stdio``, the
ASGI lifespan of ``http_app``, ``Client.in_memory``), each through
:meth:`Lifespan.running`, and closed when that ends: on shutdown, and also when
start-up fails half way (the ``async with`` unwinds what was entered).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

__all__ = ["Lifespan", "LifespanFn", "LifespanNotRunning"]

#: What ``Server(lifespan=...)`` takes: the server in, an async context manager out.
LifespanFn = Callable[[Any], AbstractAsyncContextManager[Any]]


class LifespanNotRunning(RuntimeError):
    """A handler asked for the lifespan's value while nothing had entered it."""


class Lifespan:
    """The lifespan of one server: the function given, and its value while entered."""

    __slots__ = ("_entered", "_fn", "_owner", "_running", "_value")

    def __init__(self, fn: LifespanFn | None, owner: Any) -> None:
        self._fn = fn
        self._owner = owner
        #: Someone entered it (it may still be starting).
        self._entered = False
        #: It started: its value is there.
        self._running = False
        self._value: Any = None

    @property
    def value(self) -> Any:
        """The value the lifespan's context manager gave (``None`` without a
        lifespan); :class:`LifespanNotRunning` when it is not entered."""
        if self._fn is not None and not self._running:
            raise LifespanNotRunning(
                "the server's lifespan is not running: serve with Server.run_stdio, "
                "http_app (under an ASGI server) or Client.in_memory, or enter "
                "`async with server.running():`"
            )
        return self._value

    @property
    def running(self) -> bool:
        """Whether the lifespan is entered."""
        return self._running

    @contextlib.asynccontextmanager
    async def entered(self) -> AsyncIterator[Any]:
        """Enter the lifespan for the block's duration and give its value; when it is
        entered already (a test's in-memory client inside a running server), share that
        one: only the block that entered it closes it."""
        if self._fn is None or self._entered:
            yield self._value
            return
        self._entered = True
        try:
            async with self._fn(self._owner) as value:
                self._value, self._running = value, True
                try:
                    yield value
                finally:
                    self._value, self._running = None, False
        finally:
            self._entered = False
