"""Progress tokens (``params._meta.progressToken``) in both directions.

A request that carries a token asks its receiver for ``notifications/progress``. The
rules of the specification: tokens are unique among active requests; ``progress``
increases with each notification; none comes after the request completed. Progress for
a request that was cancelled is dropped (the notification may have crossed the
cancellation). A task-augmented request (2025-11-25) keeps its token after its
``CreateTaskResult`` until the task reaches a terminal status.

The two directions keep the same rules, so one :class:`Tokens` class serves both:
:attr:`ProgressTracker.expected` holds the tokens of requests this side sent (the peer
reports on them), :attr:`ProgressTracker.reporting` those of requests it received.
"""

from __future__ import annotations

from typing import Final

from ..envelope import RequestId
from .pending import Memory

__all__ = ["IGNORE", "TERMINAL_TASK_STATUSES", "ProgressTracker", "Tokens"]

ProgressToken = int | str

#: Task statuses after which no progress may follow.
TERMINAL_TASK_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})

#: What :meth:`Tokens.step` returns for progress to drop silently.
IGNORE: Final = "ignore"


class Tokens:
    """The tokens of the requests of one direction: active, done and cancelled.

    An active token maps to its request's id alone, and its last progress value sits
    in :attr:`last`: registering a token (once per request that asks for progress) then
    builds no object.
    """

    __slots__ = (
        "_cancelled",
        "_done",
        "active",
        "cancelled",
        "capacity",
        "done",
        "last",
        "task_of",
        "tasks",
    )

    def __init__(self, capacity: int) -> None:
        #: The most active tokens (``Limits.max_progress_tokens``).
        self.capacity = capacity
        #: The request of each token in flight (or of a task still running), by token.
        self.active: dict[ProgressToken, RequestId] = {}
        #: The last progress value of the active tokens that had progress, by token.
        self.last: dict[ProgressToken, float] = {}
        self.done: Memory[ProgressToken] = Memory()
        self.cancelled: Memory[ProgressToken] = Memory()
        # The memories' members (the same dicts), read when a token is registered.
        self._done = self.done.items
        self._cancelled = self.cancelled.items
        #: Tokens kept for a task, by task id.
        self.tasks: dict[str, ProgressToken] = {}
        #: The task id of each token kept for a task, by token.
        self.task_of: dict[ProgressToken, str] = {}

    def begin(self, token: ProgressToken, request_id: RequestId) -> None:
        """Register the token of a request (the rule table judged it free first:
        ``checks.token_problem``)."""
        self.active[token] = request_id
        # A token used again is no longer done or cancelled (both stay empty until a
        # request with a token is over, so the usual first use skips the lookups).
        if self._done:
            self._done.pop(token, None)
        if self._cancelled:
            self._cancelled.pop(token, None)

    def finish(
        self, token: ProgressToken, *, task_id: str | None = None, cancelled: bool = False
    ) -> None:
        """The request completed (its token kept for ``task_id``), or was cancelled."""
        if token not in self.active:
            return
        if task_id is not None and not cancelled:
            self.task_of[token] = task_id
            self.tasks[task_id] = token
            return
        self.drop(token)
        (self.cancelled if cancelled else self.done).add(token)

    def drop(self, token: ProgressToken) -> None:
        """Forget an active token (and the task it was kept for)."""
        self.active.pop(token, None)
        self.last.pop(token, None)
        task_id = self.task_of.pop(token, None)
        if task_id is not None:
            self.tasks.pop(task_id, None)

    def task_finished(self, task_id: str) -> None:
        """The task reached a terminal status: its token is done."""
        token = self.tasks.pop(task_id, None)
        if token is not None and token in self.active:
            self.drop(token)
            self.done.add(token)


class ProgressTracker:
    """Tokens this side is owed progress for (``expected``) and owes progress for
    (``reporting``)."""

    __slots__ = ("expected", "reporting")

    def __init__(self, capacity: int) -> None:
        #: Tokens of requests this side sent: the peer reports progress on them.
        self.expected = Tokens(capacity)
        #: Tokens of requests this side received: this side reports progress on them.
        self.reporting = Tokens(capacity)

    def task_finished(self, task_id: str) -> None:
        """A task reached a terminal status: its token, in either direction, is done."""
        self.expected.task_finished(task_id)
        self.reporting.task_finished(task_id)
