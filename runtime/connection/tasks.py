"""Tasks (2025-11-25): requests a server answers at once with a task, runs on its own,
and whose outcome the client fetches later, on this connection or another.

A client asks for a task by setting ``params.task`` on a ``tools/call`` to a tool that
allows it (``Server.tool(task="optional" | "required")``). The server answers
``CreateTaskResult`` at once and runs the tool in a task group of its own, entered with
the server (``Server.running()``: ``run_stdio``, the HTTP app's lifespan and
``Client.in_memory`` enter it), not in the request's connection: a task outlives the
HTTP request that created it, and is fetched on any later one. The client then asks:

* ``tasks/get``: the task's status (``working``, ``input_required``, ``completed``,
  ``failed``, ``cancelled``), with the ``pollInterval`` it should ask at;
* ``tasks/result``: waits until the task has ended, then answers exactly what the plain
  call would have answered (the result, or its JSON-RPC error), with the task named in
  its ``_meta`` (``io.modelcontextprotocol/related-task``);
* ``tasks/list``: its own tasks (a principal's, over HTTP with authorization, else its
  session's), in pages with sealed cursors;
* ``tasks/cancel``: stops a task that has not ended (-32602 for one that has).

Each change of status is sent as ``notifications/tasks/status`` on the connection that
created the task while it is open. A task whose handler asks the client (``ctx.elicit``,
``ctx.sample``) is ``input_required`` until the answer comes; its questions carry the
task in their ``_meta``, and go on the response stream of a ``tasks/result`` waiting for
the task when there is one.

The :class:`TaskManager` keeps tasks in a :class:`~.task_store.TaskStore`
(:class:`~.task_store.MemoryTaskStore` unless given): the store is the truth, so that a
store shared by workers lets any of them answer for a task. What reaches a running task
from its client goes through the store too, whichever worker the request lands on: a
cancellation is the task's record ended (the worker running it looks at the record
every poll interval, and stops the work), and the answers of the extension's
``tasks/update`` are kept beside the record until the worker running the task takes
them. A handshake-era session served by several workers owns its tasks by its session
id (:meth:`TaskManager.own`), so every copy of the session sees them.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import logging
import secrets
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc
import msgspec
from msgspec import UNSET

from mcpspec.runtime.envelope import ErrorObject, RequestId
from mcpspec.runtime.errors import ErrorCode
from mcpspec.runtime.extensions import KNOWN, TASKS

from .context import InputNeeded, Question, RequestContext, TaskStarting
from .errors import ConnectionClosed, RequestError
from .handling import CANCELLED, Handling
from .pagination import Pager
from .principal import Principal, current_principal, principal_scope
from .task_store import MemoryTaskStore, TaskRecord, TaskStatus, TaskStore, TaskStoreFull

if TYPE_CHECKING:
    from mcpspec.runtime.session.server import ServerSession

    from .peer import Peer

__all__ = ["RELATED_TASK", "TaskContext", "TaskManager", "TaskRunner", "TaskSettings"]

logger = logging.getLogger("mcpspec.connection")

#: The ``_meta`` key naming the task a message is about.
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
#: The revisions whose core has tasks (2026-07-28 moves them to an extension).
TASK_REVISIONS: Final = frozenset({"2025-11-25"})
#: What the JSON of a result may add around it in a ``tasks/result`` answer.
_ENVELOPE: Final = 1024
#: The shortest wait between two looks at the store of a running task (seconds).
_MIN_LOOK: Final = 0.01


def failed_outcome(exc: Exception) -> tuple[str, bytes]:
    """The status message and the kept outcome (JSON) of a task whose work raised
    ``exc``: -32603 naming the exception's type, nothing more of it."""
    error = ErrorObject(
        code=int(ErrorCode.INTERNAL_ERROR),
        message="Internal error",
        data={"exception": type(exc).__name__},
    )
    return f"internal error: {type(exc).__name__}", msgspec.json.encode({"error": error})


@dataclass(frozen=True)
class TaskSettings:
    """How a server keeps tasks: ``store`` (a :class:`MemoryTaskStore` unless given);
    ``default_ttl_ms``, the ``ttl`` of a task whose client asked for none, and
    ``max_ttl_ms``, the longest kept whatever it asked (``None``: no limit); the
    ``poll_interval_ms`` told to clients; ``max_result_bytes``, the largest result
    kept (default: what fits in one message of the server's limits): a larger one
    fails the task."""

    store: TaskStore = field(default_factory=MemoryTaskStore)
    default_ttl_ms: int | None = 60 * 60 * 1000
    max_ttl_ms: int | None = 24 * 60 * 60 * 1000
    poll_interval_ms: int = 1000
    max_result_bytes: int | None = None

    def ttl(self, asked: Any) -> int | None:
        """The ``ttl`` a task gets when its client asked for ``asked`` (``UNSET``:
        nothing), bounded by :attr:`max_ttl_ms`."""
        ttl = self.default_ttl_ms if asked is UNSET or asked is None else max(int(asked), 0)
        limit = self.max_ttl_ms
        if limit is None:
            return ttl
        return limit if ttl is None else min(ttl, limit)


class TaskRunner:
    """Where tasks run that outlive the request that started them: a task group held
    for the duration of :meth:`running` (shared when entered already); leaving
    cancels the tasks still running."""

    def __init__(self, absent: str) -> None:
        self._group: anyio.abc.TaskGroup | None = None
        #: Why a task cannot start while no group is held (the answer's message).
        self._absent = absent

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run tasks for the block's duration."""
        if self._group is not None:
            yield
            return
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    def group(self) -> anyio.abc.TaskGroup:
        """The task group tasks start in; -32603 when none is held."""
        if self._group is None:
            raise RequestError.of(ErrorCode.INTERNAL_ERROR, self._absent)
        return self._group


class _Running:
    """A task running in this process: how to stop it, and where it came from."""

    __slots__ = ("handling", "peer")

    def __init__(self, peer: Peer[ServerSession]) -> None:
        self.handling = Handling()
        self.peer = peer


class TaskManager:
    """A server's tasks: creates them, runs them in its own task group, answers the
    ``tasks/*`` requests (:meth:`get`, :meth:`result`, :meth:`list`, :meth:`cancel`)."""

    def __init__(self, settings: TaskSettings, pager: Pager, max_message_bytes: int) -> None:
        self.settings = settings
        self.store: TaskStore = settings.store
        self._pager = pager
        self._max_result = (
            settings.max_result_bytes
            if settings.max_result_bytes is not None
            else max(max_message_bytes - _ENVELOPE, 0)
        )
        self._runner = TaskRunner(
            "the server runs no tasks: serve it inside `async with server.running():`"
        )
        self._running: dict[str, _Running] = {}
        #: An owner key per connection without a principal (random: never guessed).
        self._owners: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        #: The ``tasks/result`` requests waiting for a task, by task: their connection
        #: and id (where the task's questions go).
        self._waiting: dict[str, list[tuple[Any, RequestId]]] = {}
        #: The extension's open questions of each task running here (key -> input
        #: request): the record holds them all, whichever call of the work asked.
        self._asking: dict[str, dict[str, Any]] = {}
        #: How long a running task waits between two looks at its record.
        self._look = max(settings.poll_interval_ms / 1000, _MIN_LOOK)

    # -- running ---------------------------------------------------------------------------

    def running(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Run tasks for the block's duration (shared when entered already); leaving
        cancels the tasks still running."""
        return self._runner.running()

    def owner(self, peer: Any, bearer: bool = False) -> str:
        """Whose the tasks created now are: the principal's (over HTTP with
        authorization), else the connection's; with ``bearer`` (the extension, whose
        requests each may come on a connection of their own) else anyone's who knows
        the task's unguessable id."""
        principal = current_principal.get()
        if principal is not None:
            return "principal:" + principal.key
        if bearer:
            return "bearer"
        key = self._owners.get(peer)
        if key is None:
            key = self._owners[peer] = "session:" + secrets.token_hex(16)
        return key

    def own(self, peer: Any, session_id: str) -> None:
        """Make the tasks that ``peer`` creates without a principal the session
        ``session_id``'s: over HTTP, a session that several workers serve (a copy on
        each) is one owner on all of them, where a connection is one per worker."""
        digest = hashlib.sha256(session_id.encode()).hexdigest()[:32]
        self._owners[peer] = "session:" + digest

    async def start(
        self,
        ctx: RequestContext,
        work: Callable[[RequestContext], Awaitable[Any]],
        ttl: Any,
    ) -> Any:
        """Create a task for the request of ``ctx`` (its ``ttl`` asked), start ``work``
        on it in the server's task group (with a :class:`TaskContext`; it returns the
        result the plain request would have answered), and give the
        ``CreateTaskResult``."""
        group = self._runner.group()
        now = time.time()
        record = TaskRecord(
            task_id=secrets.token_urlsafe(16),
            owner=self.owner(ctx.peer, ctx.revision not in TASK_REVISIONS),
            method=ctx.method,
            created=now,
            updated=now,
            ttl_ms=self.settings.ttl(ttl),
            poll_interval_ms=self.settings.poll_interval_ms,
        )
        try:
            await self.store.create(record)
        except TaskStoreFull as exc:
            raise RequestError.of(
                ErrorCode.INTERNAL_ERROR, str(exc), data={"reason": "task store full"}
            ) from None
        running = self._running[record.task_id] = _Running(ctx.peer)
        task_ctx = TaskContext.of(ctx, self, record.task_id, running.handling)
        group.start_soon(self._run, record.task_id, task_ctx, work, current_principal.get())
        if ctx.revision not in TASK_REVISIONS:
            # The extension's CreateTaskResult: the task's fields flat in the result.
            return msgspec.convert(extension_task(record), _ext().CreateTaskResult)
        types = ctx.types
        return types.CreateTaskResult(task=msgspec.convert(task_wire(record), types.Task))

    async def start_after_input(
        self,
        ctx: RequestContext,
        work: Callable[[RequestContext], Awaitable[Any]],
        ttl: Any,
    ) -> Any:
        """As :meth:`start`, for a tool that asks before its task (2026-07-28): run
        ``work`` in the request until it calls ``ctx.start_task()`` (its questions
        before are the request's ``InputRequiredResult`` rounds, raised through), then
        start the task, ``work`` again from the start with the request's answers. A
        ``work`` that ends without calling it is a task ended with its result."""
        ctx._task_starts_here = True
        try:
            result = await work(ctx)
        except TaskStarting:
            return await self.start(ctx, work, ttl)
        finally:
            ctx._task_starts_here = False

        async def ended(_: RequestContext) -> Any:
            return result

        return await self.start(ctx, ended, ttl)

    async def _run(
        self,
        task_id: str,
        ctx: TaskContext,
        work: Callable[[RequestContext], Awaitable[Any]],
        principal: Principal | None,
    ) -> None:
        handling = self._running[task_id].handling
        ended: tuple[TaskStatus, str | None, bytes | None] | None = (
            "failed",
            "the server stopped before the task ended",
            None,
        )
        try:
            async with anyio.create_task_group() as watching:
                watching.start_soon(self._watch, task_id, handling)
                try:
                    with principal_scope(principal):
                        ended = await self._work(task_id, ctx, work, handling)
                finally:
                    watching.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                if ended is not None:  # else tasks/cancel set the status already
                    try:
                        await self.set_status(task_id, *ended)
                    except Exception:
                        logger.exception("the end of task %s could not be kept", task_id)
                self._running.pop(task_id, None)

    async def _work(
        self,
        task_id: str,
        ctx: TaskContext,
        work: Callable[[RequestContext], Awaitable[Any]],
        handling: Handling,
    ) -> tuple[TaskStatus, str | None, bytes | None] | None:
        """Run the task's ``work``: the status, message and outcome it ends with
        (``None``: it was cancelled)."""
        try:
            result = await handling.run(work(ctx))
        except RequestError as exc:
            message = f"{exc.error.code}: {exc.error.message}"
            return "failed", message, msgspec.json.encode({"error": exc.error})
        except Exception as exc:
            logger.exception("the task %s failed", task_id)
            return ("failed", *failed_outcome(exc))
        if result is CANCELLED:
            return None
        return self._ended(result, ctx.revision not in TASK_REVISIONS)

    async def _watch(self, task_id: str, handling: Handling) -> None:
        """Stop the task's work here once its record has ended elsewhere (a
        ``tasks/cancel`` another worker took) or is gone (expired)."""
        while True:
            await anyio.sleep(self._look)
            try:
                record = await self.store.get(task_id)
            except Exception:  # the store out of reach a while: look again later
                logger.warning("task %s: its record could not be read", task_id[:8])
                continue
            if record is None or record.terminal:
                handling.cancel()
                return

    def _ended(self, result: Any, extension: bool = False) -> tuple[TaskStatus, str | None, bytes]:
        """The status, message and outcome of a task whose work returned ``result``: a
        tool's ``isError`` result fails it (2025-11-25; the extension completes it, as
        ``failed`` is for JSON-RPC errors there), a result over the bound fails it with
        an error (its result could not be sent)."""
        data = msgspec.json.encode({"result": result})
        if len(data) > self._max_result:
            reason = (
                f"the result of {len(data)} bytes is over the limit of {self._max_result} "
                "bytes a task result may have"
            )
            error = ErrorObject(
                code=int(ErrorCode.INTERNAL_ERROR),
                message="Internal error",
                data={"reason": reason, "size": len(data), "limit": self._max_result},
            )
            return "failed", reason, msgspec.json.encode({"error": error})
        if getattr(result, "is_error", False) is True and not extension:
            return "failed", "the tool reported an error", data
        return "completed", None, data

    async def set_status(
        self,
        task_id: str,
        status: TaskStatus,
        message: str | None = None,
        outcome: bytes | None = None,
        questions: bytes | None = None,
    ) -> bool:
        """Move the task ``task_id`` to ``status`` (with its open ``questions``, the
        extension's, while ``input_required``) and tell its client; ``False`` when it
        cannot (gone, or ended: then its work, if it runs here, is stopped)."""
        record = await self.store.get(task_id)
        running = self._running.get(task_id)
        if record is None or record.terminal:
            if running is not None:
                running.handling.cancel()
            return False
        unchanged = (status, message, None, questions)
        if (record.status, record.status_message, outcome, record.questions) == unchanged:
            return True
        changed = msgspec.structs.replace(
            record,
            status=status,
            status_message=message,
            outcome=outcome,
            questions=questions,
            updated=time.time(),
        )
        if not await self.store.update(changed):
            if running is not None:
                running.handling.cancel()
            return False
        if running is not None:
            await self._notify(running.peer, changed)
        return True

    async def _notify(self, peer: Peer[ServerSession], record: TaskRecord) -> None:
        """Send ``notifications/tasks/status`` for ``record`` on ``peer``, if open."""
        if peer.closed:
            return
        types = peer.session.types
        cls = getattr(types, "TaskStatusNotification", None)
        if cls is None:
            return
        params = msgspec.convert(task_wire(record), types.TaskStatusNotificationParams)
        try:
            await peer.notify(cls(params=params))
        except ConnectionClosed:
            pass
        except Exception:
            logger.exception("the status of task %s could not be sent", record.task_id)

    # -- the tasks/* requests --------------------------------------------------------------

    async def _owned(self, owner: str, task_id: str) -> TaskRecord:
        """The task ``task_id`` of ``owner``; -32602 when there is none (another
        owner's is none either)."""
        record = await self.store.get(task_id)
        if record is None or record.owner != owner:
            raise RequestError.of(
                ErrorCode.INVALID_PARAMS,
                f"no task {task_id!r} (unknown, expired, or not yours)",
                data={"taskId": task_id},
            )
        return record

    async def get(self, ctx: RequestContext, task_id: str) -> Any:
        """The ``GetTaskResult`` of ``tasks/get``."""
        record = await self._owned(self.owner(ctx.peer), task_id)
        return msgspec.convert(task_wire(record), ctx.types.GetTaskResult)

    async def result(self, ctx: RequestContext, task_id: str) -> Any:
        """The answer of ``tasks/result``: once the task has ended, its result (with
        the task in its ``_meta``), or the error its request would have had."""
        owner = self.owner(ctx.peer)
        waiter = (ctx.peer, ctx.request_id)
        record = await self._owned(owner, task_id)
        if not record.terminal:
            waiting = self._waiting.setdefault(task_id, [])
            waiting.append(waiter)
            try:
                while not record.terminal:
                    await self.store.wait(task_id, record.poll_interval_ms / 1000)
                    record = await self._owned(owner, task_id)
            finally:
                waiting.remove(waiter)
                if not waiting:
                    del self._waiting[task_id]
        return ended_answer(record)

    async def list(self, ctx: RequestContext, cursor: Any) -> Any:
        """The ``ListTasksResult`` of ``tasks/list`` (a page of the client's tasks)."""
        records = await self.store.list(self.owner(ctx.peer))
        page, following = self._pager.page("tasks/list", records, cursor)
        result: dict[str, Any] = {"tasks": [task_wire(record) for record in page]}
        if following is not None:
            result["nextCursor"] = following
        return msgspec.convert(result, ctx.types.ListTasksResult)

    async def cancel(self, ctx: RequestContext, task_id: str) -> Any:
        """The ``CancelTaskResult`` of ``tasks/cancel``: the task stopped and
        ``cancelled``; -32602 for a task that has ended already."""
        record = await self._owned(self.owner(ctx.peer), task_id)
        if record.terminal or not await self.set_status(
            task_id, "cancelled", "cancelled by the client"
        ):
            record = await self._owned(self.owner(ctx.peer), task_id)
            raise RequestError.of(
                ErrorCode.INVALID_PARAMS,
                f"task {task_id!r} is {record.status} already: it cannot be cancelled",
                data={"taskId": task_id, "status": record.status},
            )
        running = self._running.get(task_id)
        if running is not None:
            running.handling.cancel()
        record = await self._owned(self.owner(ctx.peer), task_id)
        return msgspec.convert(task_wire(record), ctx.types.CancelTaskResult)

    # -- the extension's requests (2026-07-28) ---------------------------------------------

    async def detailed(self, ctx: RequestContext, task_id: str) -> Any:
        """The extension's ``GetTaskResult`` of ``tasks/get``: the task, with its result,
        its error or the questions it waits on inlined."""
        record = await self._owned(self.owner(ctx.peer, bearer=True), task_id)
        wire = extension_task(record)
        wire["resultType"] = "complete"
        if record.outcome is not None:
            wire.update(msgspec.json.decode(record.outcome))
        elif record.status == "input_required" and record.questions is not None:
            answered = await self.store.answers(task_id)
            asked: dict[str, Any] = msgspec.json.decode(record.questions)
            pending = {key: request for key, request in asked.items() if key not in answered}
            if pending:
                wire["inputRequests"] = pending
            else:  # all answered: the task has what it waited for
                wire["status"] = "working"
                wire.pop("statusMessage", None)
        return msgspec.convert(wire, _ext().GetTaskResult)

    async def update(self, ctx: RequestContext, task_id: str, responses: Any) -> Any:
        """The extension's ``tasks/update``: the answers to the task's outstanding
        questions (keys not outstanding are ignored) kept for the worker running it,
        then an empty acknowledgement."""
        record = await self._owned(self.owner(ctx.peer, bearer=True), task_id)
        asked = msgspec.json.decode(record.questions) if record.questions is not None else {}
        answers = {
            key: msgspec.json.encode(response)
            for key, response in dict(responses).items()
            if key in asked
        }
        if answers:
            await self.store.answer(task_id, answers)
        return _ext().UpdateTaskResult()

    async def acknowledge_cancel(self, ctx: RequestContext, task_id: str) -> Any:
        """The extension's ``tasks/cancel``: the task stopped and ``cancelled`` unless it
        ended already; an empty acknowledgement either way (-32602 for no such task)."""
        record = await self._owned(self.owner(ctx.peer, bearer=True), task_id)
        if not record.terminal and await self.set_status(
            task_id, "cancelled", "cancelled by the client"
        ):
            running = self._running.get(task_id)
            if running is not None:
                running.handling.cancel()
        return _ext().CancelTaskResult()

    async def ask_in_task(self, task_id: str, questions: dict[str, Any]) -> dict[str, bytes]:
        """Park the task ``task_id`` on ``questions`` (key -> input request, wire form)
        until ``tasks/update`` (on any worker) answers each: ``input_required``
        meanwhile, its ``tasks/get`` listing the questions still open. The JSON of the
        answers by key."""
        asking = self._asking.setdefault(task_id, {})
        asking.update(questions)
        waiting = "waiting for the client"
        try:
            await self.set_status(
                task_id, "input_required", waiting, None, msgspec.json.encode(asking)
            )
            while True:
                kept = await self.store.answers(task_id)
                if all(key in kept for key in questions):
                    return {key: kept[key] for key in questions}
                await self.store.wait(task_id, self._look)
        finally:
            for key in questions:
                asking.pop(key, None)
            with anyio.CancelScope(shield=True):
                if asking:  # another call of the work still waits on its questions
                    await self.set_status(
                        task_id, "input_required", waiting, None, msgspec.json.encode(asking)
                    )
                else:
                    del self._asking[task_id]
                    await self.set_status(task_id, "working")
                    await self.store.forget_answers(task_id)

    def relay(self, task_id: str, peer: Any) -> RequestId | None:
        """The id of a ``tasks/result`` waiting for ``task_id`` on ``peer``, if any:
        the task's questions go with its answer."""
        for waiting_peer, request_id in self._waiting.get(task_id, ()):
            if waiting_peer is peer:
                return request_id
        return None


class TaskContext(RequestContext):
    """The context of a request run as a task: as the request's, but cancelled by
    ``tasks/cancel``, about no request once the task was created (its messages go on
    the response of a ``tasks/result`` waiting for it, if any), and ``input_required``
    while it waits for the client's answers."""

    _manager: TaskManager
    task_id: str

    @classmethod
    def of(
        cls, ctx: RequestContext, manager: TaskManager, task_id: str, handling: Handling
    ) -> TaskContext:
        """The context of the task ``task_id`` made for the request of ``ctx``."""
        task_ctx = cls(
            ctx._event,
            ctx._peer,
            handling,
            ctx._client,
            ctx._log_threshold,
            ctx._answers,
            ctx._lifespan,
        )
        task_ctx._manager = manager
        task_ctx.task_id = task_id
        return task_ctx

    @property
    def related_request_id(self) -> RequestId | None:
        return self._manager.relay(self.task_id, self._peer)

    async def ask_all(self, *questions: Question) -> list[Any]:
        """As :meth:`RequestContext.ask_all`, the task ``input_required`` meanwhile, the
        questions naming the task in their ``_meta`` (2025-11-25); in the extension the
        open questions are the task's ``inputRequests`` until ``tasks/update`` answers
        them (those answered before the task was created, in the request's rounds,
        are answered already)."""
        if self.revision not in TASK_REVISIONS:
            return await self._ask_in_task(questions)
        tagged = [Question(q.method, self._tagged(q.params), q.key) for q in questions]
        manager = self._manager
        await manager.set_status(self.task_id, "input_required", "waiting for the client")
        try:
            return await super().ask_all(*tagged)
        finally:
            with anyio.CancelScope(shield=True):
                await manager.set_status(self.task_id, "working")

    async def _ask_in_task(self, questions: tuple[Question, ...]) -> list[Any]:
        asked, keys = self._asked, None if self._keys is None else set(self._keys)
        try:
            return await RequestContext.ask_all(self, *questions)
        except InputNeeded as need:
            waiting = need.questions
        wire = {key: msgspec.to_builtins(request) for key, (_, request) in waiting.items()}
        answers = await self._manager.ask_in_task(self.task_id, wire)
        codec = self._peer.session.codec
        typed = dict(self._answers or {})
        for key, (method, _) in waiting.items():
            try:
                typed[key] = codec.decode_result(method, answers[key])
            except Exception as exc:
                raise RequestError.invalid_params(
                    f"the answer to {key!r} is no {method} result: {exc}"
                ) from None
        self._answers = typed
        self._asked, self._keys = asked, keys  # the same questions, asked again
        return await RequestContext.ask_all(self, *questions)

    def _tagged(self, params: Any) -> dict[str, Any]:
        wire: dict[str, Any] = {}
        if params is not None:
            wire = dict(
                msgspec.to_builtins(params) if isinstance(params, msgspec.Struct) else params
            )
        meta = dict(wire.get("_meta") or {})
        meta[RELATED_TASK] = {"taskId": self.task_id}
        wire["_meta"] = meta
        return wire


def ended_answer(record: TaskRecord) -> dict[str, Any]:
    """The answer of ``tasks/result`` for the ended task ``record``: the result its
    request would have had, with the task named in its ``_meta``; raises the error its
    request would have had, or -32602 for a cancelled task (it has no result)."""
    task_id = record.task_id
    if record.outcome is None:
        raise RequestError.of(
            ErrorCode.INVALID_PARAMS,
            f"task {task_id!r} was cancelled: it has no result",
            data={"taskId": task_id, "status": record.status},
        )
    outcome = msgspec.json.decode(record.outcome)
    if "error" in outcome:
        raise RequestError(msgspec.convert(outcome["error"], ErrorObject))
    result: dict[str, Any] = outcome["result"]
    meta = dict(result.get("_meta") or {})
    meta[RELATED_TASK] = {"taskId": task_id}
    result["_meta"] = meta
    return result


def task_wire(record: TaskRecord) -> dict[str, Any]:
    """``record`` as a ``Task`` in wire form."""
    wire: dict[str, Any] = {
        "taskId": record.task_id,
        "status": record.status,
        "createdAt": _iso(record.created),
        "lastUpdatedAt": _iso(record.updated),
        "ttl": record.ttl_ms,
        "pollInterval": record.poll_interval_ms,
    }
    if record.status_message is not None:
        wire["statusMessage"] = record.status_message
    return wire


def extension_task(record: TaskRecord) -> dict[str, Any]:
    """``record`` as the extension's ``Task`` (``ttlMs``, ``pollIntervalMs``), the
    ``resultType`` of a ``CreateTaskResult``."""
    wire = task_wire(record)
    wire["ttlMs"] = wire.pop("ttl")
    wire["pollIntervalMs"] = wire.pop("pollInterval")
    return {"resultType": "task", **wire}


def _ext() -> Any:
    """The tasks extension's generated module (imported when a task of it is used)."""
    return KNOWN[TASKS].module


def _iso(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
