"""Progress tokens (``params._meta.progressToken``) in both directions.

A request that carries a token asks its receiver for ``notifications/progress``. The
tracker enforces the rules of the specification: tokens are unique among active
requests; ``progress`` increases with each notification; none comes after the request
completed. Progress for a request this side cancelled is ignored (the notification may
have crossed the cancellation). A task-augmented request (2025-11-25) keeps its token
after its ``CreateTaskResult`` until the task reaches a terminal status.
"""

from __future__ import annotations

from typing import Final

import msgspec

from .envelope import RequestId
from .pending import Memory
from .rules import Rule

__all__ = ["IGNORE", "TERMINAL_TASK_STATUSES", "ProgressTracker", "Track"]

ProgressToken = int | str

#: Task statuses after which no progress may follow.
TERMINAL_TASK_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})

#: Returned by :meth:`ProgressTracker.received` for progress to drop silently.
IGNORE: Final = "ignore"


class Track(msgspec.Struct):
    """One active token: the request it belongs to and the last progress value."""

    request_id: RequestId
    last: float | None = None
    task_id: str | None = None


class _Side:
    __slots__ = ("active", "cancelled", "done", "tasks")

    def __init__(self) -> None:
        self.active: dict[ProgressToken, Track] = {}
        self.done: Memory[ProgressToken] = Memory()
        self.cancelled: Memory[ProgressToken] = Memory()
        self.tasks: dict[str, ProgressToken] = {}

    def begin(self, token: ProgressToken, request_id: RequestId) -> bool:
        active = self.active
        if token in active:
            return False
        active[token] = Track(request_id)
        if token in self.done.items:
            del self.done.items[token]
        if token in self.cancelled.items:
            del self.cancelled.items[token]
        return True

    def finish(self, token: ProgressToken, task_id: str | None, cancelled: bool) -> None:
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
        self.expected = _Side()
        #: Tokens of requests this side received: this side reports progress on them.
        self.reporting = _Side()

    # -- requests this side sent --------------------------------------------------------

    def expect(self, token: ProgressToken, request_id: RequestId) -> bool:
        """Register the token of an outgoing request; False if it is in use."""
        return self.expected.begin(token, request_id)

    def received(
        self, token: ProgressToken, progress: float
    ) -> tuple[Rule | str | None, RequestId | None]:
        """Check incoming progress: ``(None, request_id)`` when fine, ``(IGNORE, None)``
        for a cancelled request, else ``(rule broken, request_id or None)``."""
        track = self.expected.active.get(token)
        if track is None:
            if token in self.expected.cancelled.items:
                return IGNORE, None
            if token in self.expected.done.items:
                return Rule.PROGRESS_AFTER_COMPLETION, None
            return Rule.PROGRESS_UNKNOWN_TOKEN, None
        last = track.last
        if last is not None and not progress > last:
            return Rule.PROGRESS_NOT_INCREASING, track.request_id
        track.last = progress
        return None, track.request_id

    def expected_done(
        self, token: ProgressToken, *, task_id: str | None = None, cancelled: bool = False
    ) -> None:
        """The outgoing request completed (kept for ``task_id``), or was cancelled."""
        self.expected.finish(token, task_id, cancelled)

    # -- requests this side received -------------------------------------------------------

    def begin_report(self, token: ProgressToken, request_id: RequestId) -> bool:
        """Register the token of an incoming request; False if it is in use."""
        return self.reporting.begin(token, request_id)

    def report(self, token: ProgressToken, progress: float) -> Rule | str | None:
        """Check outgoing progress: ``None`` when fine, ``IGNORE`` for a request the
        peer cancelled, else the rule it would break."""
        track = self.reporting.active.get(token)
        if track is None:
            if token in self.reporting.cancelled:
                return IGNORE
            if token in self.reporting.done:
                return Rule.PROGRESS_AFTER_COMPLETION
            return Rule.PROGRESS_UNKNOWN_TOKEN
        if track.last is not None and not progress > track.last:
            return Rule.PROGRESS_NOT_INCREASING
        track.last = progress
        return None

    def report_done(
        self, token: ProgressToken, *, task_id: str | None = None, cancelled: bool = False
    ) -> None:
        """This side answered the request (kept for ``task_id``), or the peer cancelled."""
        self.reporting.finish(token, task_id, cancelled)

    def task_finished(self, task_id: str) -> None:
        """A task reached a terminal status: its token, in either direction, is done."""
        self.expected.task_finished(task_id)
        self.reporting.task_finished(task_id)
