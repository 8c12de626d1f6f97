"""Tasks that closing a connection cancels: :class:`Scopes`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

__all__ = ["Scopes"]


class Scopes:
    """The cancel scopes of the tasks a connection runs: :meth:`run` keeps each task's
    scope while it runs, :meth:`cancel` cancels them all and every task started after."""

    __slots__ = ("_cancelled", "_scopes")

    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        self._cancelled = False

    async def run(self, function: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
        """``await function(*args)`` in a scope :meth:`cancel` reaches."""
        with anyio.CancelScope() as scope:
            self._scopes.add(scope)
            if self._cancelled:
                scope.cancel()
            try:
                await function(*args)
            finally:
                self._scopes.discard(scope)

    def cancel(self) -> None:
        """Cancel every task running, and every task started from now on."""
        self._cancelled = True
        for scope in list(self._scopes):
            scope.cancel()
