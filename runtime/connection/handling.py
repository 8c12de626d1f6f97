"""How the handler of one of the peer's requests runs: :class:`Handling`.

Theory of operation. A handler runs in an anyio cancel scope, so that the peer's
``notifications/cancelled``, the connection ending or an HTTP client going away can
cancel it. On asyncio, entering and leaving a scope costs more than a handler that
answers at once: in a fresh task (an HTTP server's request) anyio makes the task's state
then, several µs in all. Yet a handler cannot be cancelled before it first waits: nothing
else runs until then. So on asyncio the handler's first step runs with its scope made but
not entered, and what happens next depends on how that step ends:

- it returns: the scope is never entered (most handlers of small requests);
- it waits, having left no cancel scope of its own open: the scope is entered there, and
  the rest runs in it exactly as if it had been entered first (a cancellation made during
  the first step is delivered at that wait, as anyio delivers it at a first checkpoint);
- it waits inside a cancel scope or task group of its own (a ``fail_after`` around its
  first ``await``): ours can no longer enclose it, so cancelling the request cancels the
  handler's task natively, as ``asyncio.timeout`` does (``Task.cancel``, taken back with
  ``Task.uncancel`` when the handler ends). Shields of anyio inside the handler do not
  hold against that, and ``ctx.cancel_scope.cancel()`` called from another task takes
  effect when the handler next wakes.

Which scope is current is anyio's private state (its task states); where it cannot be
read (another anyio, Python before 3.11, trio), the scope is entered before the first
step, as always.
"""

from __future__ import annotations

import asyncio
import sys
import types
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, Final

import anyio

from .pipes import current_task_of

__all__ = ["CANCELLED", "WAITING", "Handling", "eager", "new_cancel_scope"]


class _Cancelled:
    """What :meth:`Handling.run` returns for a handler that was cancelled."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "CANCELLED"


#: A handler's outcome when its request was cancelled (there is no answer to send).
CANCELLED: Final = _Cancelled()


class _Waiting:
    """What :meth:`Handling.start` returns for a handler that did not end in its first
    step."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "WAITING"


#: :meth:`Handling.start`'s outcome for a handler that waits: :meth:`Handling.finish`
#: runs the rest.
WAITING: Final = _Waiting()


def _scope_reader() -> Callable[[asyncio.Task[Any]], object] | None:
    """A function telling the anyio cancel scope current in a task (``None`` if none),
    or ``None`` when this anyio's state cannot be read."""
    if sys.version_info < (3, 11):  # no Task.uncancel: no native cancellation
        return None
    try:
        from anyio._backends._asyncio import _task_states
    except ImportError:  # pragma: no cover - another anyio
        return None
    # What WeakKeyDictionary.get does (its dict by weak reference), without its frame.
    states = getattr(_task_states, "data", None)
    if not isinstance(_task_states, weakref.WeakKeyDictionary) or not isinstance(states, dict):
        states = None
    ref = weakref.ref

    def current_scope(task: asyncio.Task[Any]) -> object:
        state = states.get(ref(task)) if states is not None else _task_states.get(task)
        return None if state is None else state.cancel_scope

    return current_scope


_current_scope: Final = _scope_reader()


#: The class of anyio's cancel scopes on the asyncio loop last asked about (weakly).
_scope_class: tuple[weakref.ref[asyncio.AbstractEventLoop], type[anyio.CancelScope]] | None = None


def new_cancel_scope(loop: asyncio.AbstractEventLoop | None) -> anyio.CancelScope:
    """``anyio.CancelScope()``; on the asyncio loop ``loop`` (the one running, from
    ``running_asyncio_loop``), made by its class directly: ``anyio.CancelScope()``
    asks which library runs on every call, which costs more than entering the scope."""
    global _scope_class
    if loop is None:
        return anyio.CancelScope()
    known = _scope_class
    if known is not None and known[0]() is loop:
        return known[1]()
    scope = anyio.CancelScope()
    _scope_class = (weakref.ref(loop), type(scope))
    return scope


def eager() -> bool:
    """Whether handlers run their first step before their cancel scope is entered."""
    return _current_scope is not None


class Handling:
    """One handler running: its cancel scope (``ctx.cancel_scope``, made when first
    asked for), and how it is cancelled (:meth:`cancel`: whatever cancels the request
    calls it). :meth:`run` runs the handler; :meth:`start` and :meth:`finish` are its
    two halves, for a caller that needs no coroutine of its own for a handler that
    answers in its first step."""

    __slots__ = (
        "_base",
        "_before",
        "_cancelled",
        "_coro",
        "_delivered",
        "_loop",
        "_scope",
        "_step",
        "_task",
        "_woke",
        "on_wait",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        #: The asyncio loop running (``None``: another event loop).
        self._loop = loop
        self._scope: anyio.CancelScope | None = None
        self._cancelled = False
        #: The handler's task while it runs natively cancellable (else ``None``).
        self._task: asyncio.Task[Any] | None = None
        #: ``Task.cancelling()`` when it began so.
        self._base = 0
        #: A cancellation was delivered natively (thrown in, or the task cancelled).
        self._delivered = False
        #: The task was cancelled (``Task.cancel``) for it: taken back at the end.
        self._woke = False
        #: Called when the handler first waits (before it starts, where that cannot
        #: be seen: see :func:`eager`), for what only a waiting handler needs.
        self.on_wait: Callable[[], object] | None = None
        #: Between :meth:`start` and :meth:`finish`: the handler, the wait of its first
        #: step, and the task's anyio cancel scope when that step began (where first
        #: waits cannot be seen, the handler alone: it has not started).
        self._coro: Coroutine[Any, Any, Any] | None = None
        self._step: Any = None
        self._before: object = None

    @property
    def scope(self) -> anyio.CancelScope:
        """The anyio cancel scope of the handler (cancelled when the request is)."""
        scope = self._scope
        if scope is None:
            scope = self._scope = new_cancel_scope(self._loop)
            if self._cancelled:
                scope.cancel()
        return scope

    @property
    def cancel_called(self) -> bool:
        """Whether the request was cancelled."""
        scope = self._scope
        return self._cancelled or (scope is not None and scope.cancel_called)

    def cancel(self) -> None:
        """Cancel the handler (at its next wait; never while it runs)."""
        self._cancelled = True
        if self._scope is not None:
            self._scope.cancel()
        task = self._task
        if task is not None and not self._delivered and task is not asyncio.current_task():
            # The task waits (it is not the one running): it wakes with the error at
            # the wait, inside the handler.
            self._delivered = self._woke = True
            task.cancel()

    async def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run the handler ``coro`` as the module's docstring says; its result, or
        :data:`CANCELLED` when this request's cancellation ended it."""
        outcome = self.start(coro)
        if outcome is WAITING:
            return await self.finish()
        return outcome

    def start(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run the first step of the handler ``coro``, outside its scope (see the
        module's docstring): its result when it ended there (what it raised is raised),
        else :data:`WAITING`, and :meth:`finish` must then be awaited. Where the first
        wait cannot be seen, nothing runs: it is taken to wait from the start."""
        loop = self._loop
        if loop is None or _current_scope is None:
            self._coro = coro
            return WAITING
        task = current_task_of(loop)
        assert task is not None
        before = _current_scope(task)
        try:
            step = coro.send(None)
        except StopIteration as done:
            return done.value
        self._coro, self._step, self._before = coro, step, before
        return WAITING

    def finish(self) -> Awaitable[Any]:
        """The rest of the handler :meth:`start` left waiting, to await in the task
        that started it: its result, or :data:`CANCELLED`."""
        coro, step, before = self._coro, self._step, self._before
        assert coro is not None
        # Held only by what is returned from here: the handler's frame may refer to
        # this handling (its context does).
        self._coro = self._step = self._before = None
        self._waiting()
        loop = self._loop
        if loop is None or _current_scope is None:
            return self._scoped(coro)  # not started (see start)
        task = current_task_of(loop)
        assert task is not None
        if _current_scope(task) is before:
            return _in_scope(coro, step, self.scope)
        self._task = task
        self._base = _cancelling(task)
        return _natively(coro, step, self)

    async def _scoped(self, coro: Coroutine[Any, Any, Any]) -> Any:
        with self.scope:
            return await coro
        return CANCELLED

    def _waiting(self) -> None:
        """The handler waits (or may, unseen): call :attr:`on_wait`, once."""
        on_wait = self.on_wait
        if on_wait is not None:
            self.on_wait = None
            on_wait()


@types.coroutine
def _rest(
    coro: Coroutine[Any, Any, Any], step: Any, handling: Handling | None
) -> Generator[Any, Any, Any]:
    """Drive ``coro`` from its wait on ``step`` to its end, in the task awaiting this;
    with ``handling``, deliver its cancellation natively when nothing woke the task for
    it (the handler cancelled itself, or was cancelled before it waited)."""
    try:
        while True:
            if handling is not None and handling.cancel_called and not handling._delivered:
                # Delivered at the wait the handler is resuming from.
                handling._delivered = True
                step = coro.throw(asyncio.CancelledError())
                continue
            try:
                sent = yield step
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                step = coro.throw(exc)
            else:
                step = coro.send(sent)
    except StopIteration as done:
        return done.value


@types.coroutine
def _in_scope(
    coro: Coroutine[Any, Any, Any], step: Any, scope: anyio.CancelScope
) -> Generator[Any, Any, Any]:
    """The rest of ``coro`` (waiting on ``step``) in ``scope``, entered now."""
    scope.__enter__()
    try:
        result = yield from _rest(coro, step, None)
    except GeneratorExit:
        raise  # the task was destroyed while waiting: no scope to leave in it
    except BaseException as exc:
        if scope.__exit__(type(exc), exc, exc.__traceback__):
            return CANCELLED
        raise
    scope.__exit__(None, None, None)
    return result


@types.coroutine
def _natively(
    coro: Coroutine[Any, Any, Any], step: Any, handling: Handling
) -> Generator[Any, Any, Any]:
    """The rest of ``coro`` (waiting on ``step``), cancelled natively (see the module's
    docstring)."""
    task = handling._task
    assert task is not None
    try:
        return (yield from _rest(coro, step, handling))
    except asyncio.CancelledError:
        # Ours, unless the task was cancelled by someone else as well.
        if handling._delivered and _taken_back(handling, task) <= handling._base:
            return CANCELLED
        raise
    finally:
        if handling._task is not None:
            _taken_back(handling, task)


if sys.version_info >= (3, 11):

    def _cancelling(task: asyncio.Task[Any]) -> int:
        return task.cancelling()

    def _uncancel(task: asyncio.Task[Any]) -> int:
        return task.uncancel()

else:  # pragma: no cover - handlers are never cancelled natively before 3.11

    def _cancelling(task: asyncio.Task[Any]) -> int:
        return 0

    def _uncancel(task: asyncio.Task[Any]) -> int:
        return 0


def _taken_back(handling: Handling, task: asyncio.Task[Any]) -> int:
    """Take back the task's cancellation made for ``handling`` (once); the task's
    cancellations left."""
    handling._task = None
    if handling._woke:
        handling._woke = False
        return _uncancel(task)
    return _cancelling(task)
