"""Where a server keeps its tasks: the :class:`TaskStore` interface and
:class:`MemoryTaskStore`, bounded in count and bytes.

A task is a :class:`TaskRecord`: who it belongs to, its status, its timestamps, how long
it is kept (``ttl``) and, once it ended, its outcome (the JSON of the result or of the
error its request would have been answered with). Records are plain data (msgspec
Structs that encode to JSON), so a store shared by several workers (Redis, say) keeps
them as bytes: any worker answers ``tasks/get`` for a task another one runs.

The store enforces two rules whatever the server does: a task's status only moves
forward (``working`` and ``input_required`` alternate until one of the terminal
statuses ``completed``, ``failed`` and ``cancelled``, after which nothing changes), and a
task is gone once its ``ttl`` has passed since its creation.

A task that waits on its client (the extension's ``input_required``) has its open
questions in its record, and the answers ``tasks/update`` brings are kept beside it
(:meth:`TaskStore.answer`), the first answer to each question winning: whichever
worker takes the ``tasks/get`` or the ``tasks/update``, the worker running the task
reads them from the store.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Final, Literal, Protocol

import anyio
import msgspec

__all__ = [
    "TERMINAL",
    "Answers",
    "MemoryTaskStore",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
    "TaskStoreFull",
    "may_follow",
]

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
#: The statuses a task ends in: nothing changes after them.
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})


def may_follow(before: str, after: str) -> bool:
    """Whether a task's status may move from ``before`` to ``after`` (forward only:
    nothing leaves a terminal status)."""
    return before not in TERMINAL and after in (
        "working",
        "input_required",
        "completed",
        "failed",
        "cancelled",
    )


#: The JSON of a task's answers, by question key.
Answers = dict[str, bytes]


class TaskRecord(msgspec.Struct, kw_only=True):
    """One task as a store keeps it.

    ``owner`` is who may see it (a principal's key, or a session's); ``method`` the
    request it runs (``tools/call``); ``created`` and ``updated`` are seconds since the
    epoch; ``ttl_ms`` how long it is kept from its creation (``None``: no limit);
    ``poll_interval_ms`` how often a client should ask; ``outcome`` the JSON of
    ``{"result": ...}`` or ``{"error": ...}`` once it ended (``None`` before, and for a
    cancelled task); ``questions`` the JSON of the open questions (key -> input
    request) while it waits on its client in the extension's ``input_required``."""

    task_id: str
    owner: str
    method: str
    status: TaskStatus = "working"
    status_message: str | None = None
    created: float
    updated: float
    ttl_ms: int | None
    poll_interval_ms: int
    outcome: bytes | None = None
    questions: bytes | None = None

    @property
    def terminal(self) -> bool:
        """Whether the task has ended."""
        return self.status in TERMINAL

    @property
    def expires_at(self) -> float | None:
        """When the task is gone (seconds since the epoch), or ``None``: never."""
        return None if self.ttl_ms is None else self.created + self.ttl_ms / 1000

    def expired(self, now: float) -> bool:
        """Whether the task's ``ttl`` has passed at ``now``."""
        expires = self.expires_at
        return expires is not None and now >= expires

    @property
    def size(self) -> int:
        """About how many bytes the record holds (what the store's byte bound counts)."""
        extra = len(self.outcome or b"") + len(self.questions or b"")
        return 256 + len(self.task_id) + len(self.owner) + extra


class TaskStoreFull(Exception):
    """A task cannot be created: the store holds as many as it may (for the owner, or
    in all)."""


class TaskStore(Protocol):
    """What a server needs of a task store. Every method may be called from any worker;
    a store shared between workers makes a task created on one visible on all."""

    async def create(self, record: TaskRecord) -> None:
        """Keep the new task ``record``; :class:`TaskStoreFull` when over a bound."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The task ``task_id``, or ``None`` when there is none (never was, or expired)."""
        ...

    async def update(self, record: TaskRecord) -> bool:
        """Replace the task of ``record.task_id`` with ``record``, if its stored status
        may move to ``record.status`` (:func:`may_follow`; the same non-terminal status
        again is allowed). ``False``, nothing changed: the task is gone or has ended
        (cancelled elsewhere, say), and its worker should stop."""
        ...

    async def list(self, owner: str) -> list[TaskRecord]:
        """The tasks of ``owner`` not expired, oldest first."""
        ...

    async def wait(self, task_id: str, timeout: float) -> None:
        """Return when the task ``task_id`` changes (its record, or the answers kept for
        it), or after ``timeout`` seconds (whichever comes first; a store without
        change events may just sleep)."""
        ...

    async def answer(self, task_id: str, answers: Answers) -> None:
        """Keep ``answers`` (question key -> the JSON of the client's answer) for the
        task ``task_id`` until :meth:`forget_answers`; a key answered already keeps its
        first answer. Nothing is kept for a task that is gone."""
        ...

    async def answers(self, task_id: str) -> Answers:
        """The answers kept for the task ``task_id``, by question key."""
        ...

    async def forget_answers(self, task_id: str) -> None:
        """Drop the answers kept for the task ``task_id`` (its questions are over)."""
        ...


class MemoryTaskStore:
    """A :class:`TaskStore` in this process's memory, bounded: at most ``max_tasks``
    tasks and ``max_bytes`` bytes of them in all, ``max_per_owner`` tasks of one owner.
    Expired tasks are dropped as they are met and before a new task is refused."""

    def __init__(
        self,
        *,
        max_tasks: int = 10_000,
        max_per_owner: int = 1_000,
        max_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        if min(max_tasks, max_per_owner, max_bytes) < 1:
            raise ValueError("the bounds of a task store are positive")
        self.max_tasks = max_tasks
        self.max_per_owner = max_per_owner
        self.max_bytes = max_bytes
        self._records: OrderedDict[str, TaskRecord] = OrderedDict()
        self._per_owner: dict[str, int] = {}
        self._bytes = 0
        self._changed: dict[str, anyio.Event] = {}
        #: The answers kept per task (the server keeps only those to open questions;
        #: they count in the bytes, and go with their task).
        self._answers: dict[str, Answers] = {}

    def __len__(self) -> int:
        return len(self._records)

    @property
    def bytes(self) -> int:
        """About how many bytes the tasks kept hold."""
        return self._bytes

    async def create(self, record: TaskRecord) -> None:
        now = time.time()
        if record.task_id in self._records:
            raise ValueError(f"task {record.task_id!r} exists")
        if not self._fits(record, 0):
            self._purge(now)
        if not self._fits(record, 0):
            raise TaskStoreFull(
                f"the task store holds {len(self._records)} tasks "
                f"({self._per_owner.get(record.owner, 0)} of this client, "
                f"{self._bytes} bytes): no more may be created until some expire"
            )
        self._records[record.task_id] = record
        self._per_owner[record.owner] = self._per_owner.get(record.owner, 0) + 1
        self._bytes += record.size

    def _fits(self, record: TaskRecord, replacing: int) -> bool:
        if self._bytes - replacing + record.size > self.max_bytes:
            return False
        if replacing:
            return True
        return (
            len(self._records) < self.max_tasks
            and self._per_owner.get(record.owner, 0) < self.max_per_owner
        )

    async def get(self, task_id: str) -> TaskRecord | None:
        record = self._records.get(task_id)
        if record is not None and record.expired(time.time()):
            self._drop(task_id)
            return None
        return record

    async def update(self, record: TaskRecord) -> bool:
        stored = await self.get(record.task_id)
        if stored is None:
            return False
        moves = stored.status != record.status or stored.terminal
        if moves and not may_follow(stored.status, record.status):
            return False
        if not self._fits(record, stored.size):
            return False
        self._bytes += record.size - stored.size
        self._records[record.task_id] = record
        self._signal(record.task_id)
        return True

    async def list(self, owner: str) -> list[TaskRecord]:
        now = time.time()
        self._purge(now)
        return [record for record in self._records.values() if record.owner == owner]

    async def wait(self, task_id: str, timeout: float) -> None:
        event = self._changed.get(task_id)
        if event is None:
            event = self._changed[task_id] = anyio.Event()
        with anyio.move_on_after(timeout):
            await event.wait()

    async def answer(self, task_id: str, answers: Answers) -> None:
        if await self.get(task_id) is None:
            return
        kept = self._answers.setdefault(task_id, {})
        for key, answer in answers.items():
            if key not in kept:
                kept[key] = answer
                self._bytes += len(key) + len(answer)
        self._signal(task_id)

    async def answers(self, task_id: str) -> Answers:
        if await self.get(task_id) is None:  # expired: its answers go with it
            return {}
        return dict(self._answers.get(task_id, {}))

    async def forget_answers(self, task_id: str) -> None:
        self._forget(task_id)

    def _forget(self, task_id: str) -> None:
        kept = self._answers.pop(task_id, None)
        if kept:
            self._bytes -= sum(len(key) + len(answer) for key, answer in kept.items())

    def _signal(self, task_id: str) -> None:
        event = self._changed.pop(task_id, None)
        if event is not None:
            event.set()

    def _drop(self, task_id: str) -> None:
        record = self._records.pop(task_id, None)
        if record is None:
            return
        self._forget(task_id)
        left = self._per_owner[record.owner] - 1
        if left:
            self._per_owner[record.owner] = left
        else:
            del self._per_owner[record.owner]
        self._bytes -= record.size
        self._signal(task_id)

    def _purge(self, now: float) -> None:
        for task_id in [t for t, r in self._records.items() if r.expired(now)]:
            self._drop(task_id)
