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

import msgspec

from .envelope import RequestId
from .pending import Memory
from .rules import Rule

__all__ = ["IGNORE", "TERMINAL_TASK_STATUSES", "ProgressTracker", "Tokens", "Track"]

ProgressToken = int | str

#: Task statuses after which no progress may follow.
TERMINAL_TASK_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})

#: What :meth:`Tokens.step` returns for progress to drop silently.
IGNORE: Final = "ignore"


class Track(msgspec.Struct, gc=False):
    """One active token: the request it belongs to and the last progress value."""

    request_id: RequestId
    last: float | None = None
    task_id: str | None = None


class Tokens:
    """The tokens of the requests of one direction: active, done and cancelled."""

    __slots__ = ("active", "cancelled", "done", "tasks")

    def __init__(self) -> None:
        #: Tokens of requests in flight (or of tasks still running), by token.
        self.active: dict[ProgressToken, Track] = {}
        self.done: Memory[ProgressToken] = Memory()
        self.cancelled: Memory[ProgressToken] = Memory()
        #: Tokens kept for a task, by task id.
        self.tasks: dict[str, ProgressToken] = {}

    def begin(self, token: ProgressToken, request_id: RequestId) -> bool:
        """Register the token of a request; False if an active request has it."""
        active = self.active
        if token in active:
            return False
        active[token] = Track(request_id)
        self.done.items.pop(token, None)
        self.cancelled.items.pop(token, None)
        return True

    def step(self, token: ProgressToken, progress: float) -> Track | Rule | str:
        """Check and record one progress value: the token's :class:`Track` when it is
        fine, :data:`IGNORE` for a cancelled request, else the rule it breaks."""
        track = self.active.get(token)
        if track is None:
            if token in self.cancelled.items:
                return IGNORE
            if token in self.done.items:
                return Rule.PROGRESS_AFTER_COMPLETION
            return Rule.PROGRESS_UNKNOWN_TOKEN
        last = track.last
        if last is not None and not progress > last:
            return Rule.PROGRESS_NOT_INCREASING
        track.last = progress
        return track

    def finish(
        self, token: ProgressToken, *, task_id: str | None = None, cancelled: bool = False
    ) -> None:
        """The request completed (its token kept for ``task_id``), or was cancelled."""
        track = self.active.get(token)
        if track is None:
            return
        if task_id is not None and not cancelled:
            track.task_id = task_id
            self.tasks[task_id] = token
            return
        del self.active[token]
        if track.task_id is not None:
            self.tasks.pop(track.task_id, None)
        (self.cancelled if cancelled else self.done).add(token)

    def task_finished(self, task_id: str) -> None:
        """The task reached a terminal status: its token is done."""
        token = self.tasks.pop(task_id, None)
        if token is not None and token in self.active:
            del self.active[token]
            self.done.add(token)


class ProgressTracker:
    """Tokens this side is owed progress for (``expected``) and owes progress for
    (``reporting``)."""

    __slots__ = ("expected", "reporting")

    def __init__(self) -> None:
        #: Tokens of requests this side sent: the peer reports progress on them.
        self.expected = Tokens()
        #: Tokens of requests this side received: this side reports progress on them.
        self.reporting = Tokens()

    def task_finished(self, task_id: str) -> None:
        """A task reached a terminal status: its token, in either direction, is done."""
        self.expected.task_finished(task_id)
        self.reporting.task_finished(task_id)
