"""How the handler of one of the peer's requests runs: :class:`Handling`.

Theory of operation. A handler runs inside an anyio cancel scope of its own: in a task
of its connection's task group, or, for an HTTP POST answered in its own task, in that
task (an ASGI server's task per request is as structured as a task group's). Whatever
ends a request early cancels that scope and nothing else: the peer's
``notifications/cancelled``, a 2026-07-28 client closing its stream, a timeout, the
connection ending. anyio delivers the cancellation at the handler's next wait, and at
every wait after that until the handler leaves the scope, the same on asyncio and trio:
a handler that catches it and waits again is cancelled again. The scope exists before
the handler starts, so a request cancelled before its handler ran is cancelled at the
handler's first wait.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Final

import anyio

__all__ = ["CANCELLED", "Handling"]


class _Cancelled:
    """What :meth:`Handling.run` returns for a handler that was cancelled."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "CANCELLED"


#: A handler's outcome when its request was cancelled (there is no answer to send).
CANCELLED: Final = _Cancelled()


class Handling:
    """One handler of a request: its cancel scope (``ctx.cancel_scope``), how it is
    cancelled (:meth:`cancel`, called by whatever ends the request early) and how it
    runs (:meth:`run`, once)."""

    __slots__ = ("scope",)

    def __init__(self) -> None:
        #: The scope the handler runs in (cancelled when the request is).
        self.scope = anyio.CancelScope()

    @property
    def cancel_called(self) -> bool:
        """Whether the request was cancelled."""
        return self.scope.cancel_called

    def cancel(self) -> None:
        """Cancel the handler (at its next wait)."""
        self.scope.cancel()

    async def run(self, handler: Awaitable[Any]) -> Any:
        """Await ``handler`` in the scope: its result (what it raises is raised), or
        :data:`CANCELLED` when this request's cancellation ended it."""
        with self.scope:
            return await handler
        return CANCELLED
