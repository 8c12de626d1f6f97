"""The client's side of tasks (2025-11-25): :class:`TaskHandle`, what
``Client.call_tool(name, arguments, task=True)`` returns.

The server answered the call with a task at once; the handle asks about it:
:meth:`~TaskHandle.status` (``tasks/get``), :meth:`~TaskHandle.wait` (until the task
ends: polling at the interval the server asked for, and woken early by its
``notifications/tasks/status``), :meth:`~TaskHandle.result` (``tasks/result``: what the
plain call would have answered, as a :class:`~.results.ToolResult`) and
:meth:`~TaskHandle.cancel` (``tasks/cancel``). A handle holds only the task's id and
last status: a task outlives the connection, and :meth:`Client.task` makes a handle
for a task id kept from an earlier one.

The other way round, :class:`ClientTasks` runs the server's task-augmented
``sampling/createMessage`` and ``elicitation/create`` (``Client(tasks=True)``).
"""

from __future__ import annotations

import contextlib
import datetime
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc
import msgspec

from mcpspec.runtime.envelope import ErrorObject, RequestId
from mcpspec.runtime.errors import ErrorCode
from mcpspec.runtime.extensions import KNOWN, TASKS
from mcpspec.runtime.session.version_negotiation import META_CLIENT_CAPABILITIES

from .errors import RequestError
from .handling import CANCELLED, Handling
from .results import ToolResult
from .task_store import MemoryTaskStore, TaskRecord, TaskStatus, TaskStoreFull
from .tasks import TaskRunner, ended_answer, failed_outcome, task_wire

if TYPE_CHECKING:
    from .client import Client
    from .peer import Peer, ProgressCallback

__all__ = ["ClientTasks", "TaskHandle", "TaskWatch", "declaring_meta", "server_speaks_tasks"]

#: The statuses a task ends in.
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
#: How often to ask when the server names no interval (seconds).
DEFAULT_POLL: Final = 1.0
#: The shortest interval asked at, whatever the server says (seconds).
MIN_POLL: Final = 0.01


class TaskWatch:
    """The tasks a client waits for, woken by ``notifications/tasks/status``."""

    def __init__(self) -> None:
        self._events: dict[str, anyio.Event] = {}
        #: The last status heard of each task waited for.
        self.latest: dict[str, Any] = {}

    def heard(self, params: Any) -> None:
        """A ``notifications/tasks/status`` with ``params`` arrived."""
        task_id = getattr(params, "task_id", None)
        event = self._events.pop(task_id, None) if isinstance(task_id, str) else None
        if event is not None:
            self.latest[task_id] = params  # type: ignore[index]
            event.set()

    async def wait(self, task_id: str, timeout: float) -> Any:
        """The status heard of ``task_id`` within ``timeout`` seconds, or ``None``."""
        event = self._events.get(task_id)
        if event is None:
            event = self._events[task_id] = anyio.Event()
        with anyio.move_on_after(timeout):
            await event.wait()
        self._events.pop(task_id, None)
        return self.latest.pop(task_id, None)


def server_speaks_tasks(client: Client) -> bool:
    """Whether the server declared the tasks extension (2026-07-28)."""
    capabilities = client.capabilities
    extensions = getattr(capabilities, "extensions", msgspec.UNSET)
    return isinstance(extensions, dict) and TASKS in extensions


def declaring_meta(client: Client) -> dict[str, Any]:
    """A request's ``_meta`` declaring the client's capabilities with the tasks
    extension added: the extension is declared on the requests that use it alone."""
    capabilities = dict(client.session.capabilities)
    capabilities["extensions"] = {**capabilities.get("extensions", {}), TASKS: {}}
    return {META_CLIENT_CAPABILITIES: capabilities}


class TaskHandle:
    """A task the server runs for one of this client's requests (see the module).

    In 2026-07-28 (the tasks extension) the same calls work: :meth:`status` is the
    extension's ``tasks/get``, :meth:`wait` also answers the questions the task asks
    (its ``inputRequests``, with the client's handlers, by ``tasks/update``),
    :meth:`result` reads the result ``tasks/get`` inlines, :meth:`cancel` is
    acknowledged (the task is ``cancelled`` once the server stopped it)."""

    @classmethod
    def of_extension(cls, client: Client, answer: Any) -> TaskHandle:
        """The handle of what a ``tools/call`` declaring the extension answered: a
        ``CreateTaskResult``, or a result at once (a task completed already)."""
        if getattr(answer, "result_type", None) == "task":
            return cls(client, answer, extension=True)
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        done = KNOWN[TASKS].module.GetTaskResult(
            result_type="complete",
            task_id="",
            status="completed",
            created_at=now,
            last_updated_at=now,
            ttl_ms=None,
            result=msgspec.to_builtins(answer),
        )
        return cls(client, done, extension=True)

    def __init__(
        self, client: Client, task: Any, method: str = "tools/call", *, extension: bool = False
    ) -> None:
        self._client = client
        #: Whether the task is the extension's (2026-07-28).
        self.extension = extension
        #: The keys of the questions answered already (the extension's).
        self._answered: set[str] = set()
        #: The request the task runs (its result type).
        self.method = method
        #: The task's id.
        self.task_id: str = task.task_id
        #: The connection following the task's progress, and the request's id there.
        self._progress: tuple[Peer[Any], RequestId] | None = None
        self._task: Any = task

    @property
    def task(self) -> Any:
        """The task as last heard (a ``Task``, ``GetTaskResult`` or status params)."""
        return self._task

    @task.setter
    def task(self, task: Any) -> None:
        self._task = task
        if self._progress is not None and self.done:
            peer, request_id = self._progress
            peer.unfollow_progress(request_id)
            self._progress = None

    def follow_progress(
        self, peer: Peer[Any], request_id: RequestId, progress: ProgressCallback
    ) -> None:
        """Give ``progress`` the progress the task's handler reports after the request
        ``request_id`` on ``peer`` was answered with the task, until it is heard to
        have ended."""
        self._progress = (peer, request_id)
        peer.follow_progress(request_id, progress)

    def __repr__(self) -> str:
        return f"TaskHandle({self.task_id!r}, status={self.task.status!r})"

    @property
    def done(self) -> bool:
        """Whether the task had ended when last heard of."""
        return self.task.status in TERMINAL

    @property
    def poll_interval(self) -> float:
        """How often to ask (seconds): the server's ``pollInterval`` (``pollIntervalMs``
        in the extension), else one second."""
        interval = getattr(self.task, "poll_interval", msgspec.UNSET)
        if interval is msgspec.UNSET:
            interval = getattr(self.task, "poll_interval_ms", msgspec.UNSET)
        if not isinstance(interval, int) or isinstance(interval, bool):
            return DEFAULT_POLL
        return max(interval / 1000, MIN_POLL)

    async def status(self, *, timeout: float | None = None) -> Any:
        """Ask the server (``tasks/get``): the ``GetTaskResult``."""
        client = self._client
        if self.extension:
            ext = KNOWN[TASKS].module
            params = ext.GetTaskRequestParams(task_id=self.task_id, meta=declaring_meta(client))
            request = ext.GetTaskRequest(id=client.next_id(), params=params)
            self.task = await client.request(request, timeout=timeout)
            return self.task
        types = client.types
        request = types.GetTaskRequest(
            id=client.next_id(), params=types.GetTaskRequestParams(task_id=self.task_id)
        )
        self.task = await client.request(request, timeout=timeout)
        return self.task

    async def wait(self, *, timeout: float | None = None) -> Any:
        """Wait until the task ends (``completed``, ``failed`` or ``cancelled``): its
        last status. Asks at the server's ``pollInterval``, sooner when a
        ``notifications/tasks/status`` says it changed. ``TimeoutError`` after
        ``timeout`` seconds."""
        watch = self._client._task_watch
        with anyio.fail_after(timeout):
            while not self.done:
                if self.extension and self.task.status == "input_required":
                    await self._answer_questions()
                heard = await watch.wait(self.task_id, self.poll_interval)
                if heard is not None and heard.status in TERMINAL:
                    self.task = heard
                    break
                await self.status()
        return self.task

    async def _answer_questions(self) -> None:
        """Answer the task's open questions not answered yet (``tasks/update``)."""
        client = self._client
        asked = self.task.input_requests
        if asked is msgspec.UNSET:
            return
        session = client.session
        fresh = {
            key: msgspec.convert(msgspec.to_builtins(ask), session.codec.input_requests[ask.method])
            for key, ask in asked.items()
            if key not in self._answered and ask.method in session.codec.input_requests
        }
        if not fresh:
            return
        answers = await client._answer_inputs(_Asked(fresh))
        ext = KNOWN[TASKS].module
        params = ext.UpdateTaskRequestParams(
            task_id=self.task_id,
            input_responses=msgspec.to_builtins(answers),
            meta=declaring_meta(client),
        )
        await client.request(ext.UpdateTaskRequest(id=client.next_id(), params=params))
        self._answered.update(fresh)

    async def result(self, *, timeout: float | None = None) -> ToolResult:
        """The outcome (``tasks/result``, which waits for the task to end): the
        :class:`ToolResult` of a ``tools/call``; the error the plain call would have
        had is raised as :class:`~mcpspec.runtime.connection.RequestError`."""
        client = self._client
        if self.extension:
            task = await self.wait(timeout=timeout)
            if task.status == "failed":
                raise RequestError(msgspec.convert(msgspec.to_builtins(task.error), ErrorObject))
            if task.status != "completed":
                raise RequestError.of(
                    ErrorCode.INVALID_PARAMS,
                    f"task {self.task_id!r} was {task.status}: it has no result",
                    data={"taskId": self.task_id, "status": task.status},
                )
            raw = msgspec.json.encode(task.result)
            return ToolResult(client.session.codec.decode_result(self.method, raw))
        types = client.types
        request = types.GetTaskPayloadRequest(
            id=client.next_id(), params=types.GetTaskPayloadRequestParams(task_id=self.task_id)
        )
        payload = await client.request(request, timeout=timeout)
        typed = client.session.codec.decode_result(self.method, msgspec.json.encode(payload))
        return ToolResult(typed)

    async def cancel(self, *, timeout: float | None = None) -> Any:
        """Cancel the task (``tasks/cancel``): its ``CancelTaskResult`` (status
        ``cancelled``). A task that ended already is refused by the server with
        -32602 (:class:`~mcpspec.runtime.connection.RequestError`). The extension's
        answer is an acknowledgement (the task ``cancelled`` once the server stopped it;
        a task that ended already keeps its status)."""
        client = self._client
        if self.extension:
            ext = KNOWN[TASKS].module
            params = ext.CancelTaskRequestParams(task_id=self.task_id, meta=declaring_meta(client))
            return await client.request(
                ext.CancelTaskRequest(id=client.next_id(), params=params), timeout=timeout
            )
        types = client.types
        request = types.CancelTaskRequest(
            id=client.next_id(), params=types.CancelTaskRequestParams(task_id=self.task_id)
        )
        self.task = await client.request(request, timeout=timeout)
        return self.task


class _Asked(msgspec.Struct):
    """Questions as :meth:`Client._answer_inputs` takes them."""

    input_requests: dict[str, Any]


#: The requests of a server a client may run as tasks, by the capability path part.
TASK_REQUESTS: Final = {
    "sampling/createMessage": ("sampling", "createMessage"),
    "elicitation/create": ("elicitation", "create"),
}
#: The task methods a server sends to a client that runs its requests as tasks.
TASK_METHODS: Final = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})


class ClientTasks:
    """The tasks a client runs for its server (2025-11-25): a ``sampling/createMessage``
    or ``elicitation/create`` with ``params.task`` is answered ``CreateTaskResult`` at
    once, its handler run in the client's task group; the server's ``tasks/get``,
    ``tasks/result``, ``tasks/list`` and ``tasks/cancel`` answer for it. Kept in a
    bounded :class:`~.task_store.MemoryTaskStore`; ``ttl`` bounded by ``max_ttl_ms``."""

    def __init__(
        self,
        *,
        store: MemoryTaskStore | None = None,
        poll_interval_ms: int = 500,
        default_ttl_ms: int = 10 * 60 * 1000,
        max_ttl_ms: int = 60 * 60 * 1000,
    ) -> None:
        self.store = store if store is not None else MemoryTaskStore(max_per_owner=256)
        self.poll_interval_ms = poll_interval_ms
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        self._runner = TaskRunner("the client runs no tasks now")
        self._running: dict[str, Handling] = {}

    @staticmethod
    def capability(methods: Iterable[str]) -> dict[str, Any]:
        """The ``tasks`` capability of a client answering ``methods``."""
        requests: dict[str, Any] = {}
        for method in methods:
            path = TASK_REQUESTS.get(method)
            if path is not None:
                requests.setdefault(path[0], {})[path[1]] = {}
        return {"list": {}, "cancel": {}, "requests": requests}

    def running(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Run tasks for the block's duration; leaving cancels those still running."""
        return self._runner.running()

    async def start(
        self, types: ModuleType, method: str, ttl: Any, work: Callable[[], Awaitable[Any]]
    ) -> Any:
        """Create a task running ``work`` (the handler of a request of ``method``);
        its ``CreateTaskResult``."""
        group = self._runner.group()
        now = time.time()
        asked = self.default_ttl_ms if ttl is msgspec.UNSET or ttl is None else max(int(ttl), 0)
        record = TaskRecord(
            task_id=secrets.token_urlsafe(16),
            owner="server",
            method=method,
            created=now,
            updated=now,
            ttl_ms=min(asked, self.max_ttl_ms),
            poll_interval_ms=self.poll_interval_ms,
        )
        try:
            await self.store.create(record)
        except TaskStoreFull as exc:
            raise RequestError.of(ErrorCode.INTERNAL_ERROR, str(exc)) from None
        handling = self._running[record.task_id] = Handling()
        group.start_soon(self._run, record.task_id, handling, work)
        return types.CreateTaskResult(task=msgspec.convert(task_wire(record), types.Task))

    async def _run(
        self, task_id: str, handling: Handling, work: Callable[[], Awaitable[Any]]
    ) -> None:
        status: TaskStatus = "failed"
        message: str | None = "the client closed before the task ended"
        outcome: bytes | None = None
        try:
            try:
                result = await handling.run(work())
            except RequestError as exc:
                message = f"{exc.error.code}: {exc.error.message}"
                outcome = msgspec.json.encode({"error": exc.error})
            except Exception as exc:
                message, outcome = failed_outcome(exc)
            else:
                if result is CANCELLED:
                    return
                status, message = "completed", None
                outcome = msgspec.json.encode({"result": result})
        finally:
            self._running.pop(task_id, None)
            with anyio.CancelScope(shield=True):
                record = await self.store.get(task_id)
                if record is not None and not record.terminal:
                    await self.store.update(
                        msgspec.structs.replace(
                            record,
                            status=status,
                            status_message=message,
                            outcome=outcome,
                            updated=time.time(),
                        )
                    )

    async def _record(self, task_id: str) -> TaskRecord:
        record = await self.store.get(task_id)
        if record is None:
            raise RequestError.of(
                ErrorCode.INVALID_PARAMS, f"no task {task_id!r}", data={"taskId": task_id}
            )
        return record

    async def answer(self, types: ModuleType, method: str, params: Any) -> Any:
        """The answer to the server's ``tasks/*`` request of ``method``."""
        if method == "tasks/list":
            records = await self.store.list("server")
            tasks = {"tasks": [task_wire(record) for record in records]}
            return msgspec.convert(tasks, types.ListTasksResult)
        task_id = params.task_id
        record = await self._record(task_id)
        if method == "tasks/get":
            return msgspec.convert(task_wire(record), types.GetTaskResult)
        if method == "tasks/cancel":
            if record.terminal:
                raise RequestError.of(
                    ErrorCode.INVALID_PARAMS,
                    f"task {task_id!r} is {record.status} already: it cannot be cancelled",
                )
            cancelled = msgspec.structs.replace(
                record, status="cancelled", status_message="cancelled", updated=time.time()
            )
            await self.store.update(cancelled)
            handling = self._running.get(task_id)
            if handling is not None:
                handling.cancel()
            return msgspec.convert(task_wire(cancelled), types.CancelTaskResult)
        while not record.terminal:  # tasks/result
            await self.store.wait(task_id, record.poll_interval_ms / 1000)
            record = await self._record(task_id)
        return ended_answer(record)
