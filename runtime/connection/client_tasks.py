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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import anyio
import msgspec

from .results import ToolResult

if TYPE_CHECKING:
    from .client import Client

__all__ = ["TaskHandle", "TaskWatch"]

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


class TaskHandle:
    """A task the server runs for one of this client's requests (see the module)."""

    def __init__(self, client: Client, task: Any, method: str = "tools/call") -> None:
        self._client = client
        #: The request the task runs (its result type).
        self.method = method
        #: The task's id.
        self.task_id: str = task.task_id
        #: The task as last heard (a ``Task``, ``GetTaskResult`` or status params).
        self.task: Any = task

    def __repr__(self) -> str:
        return f"TaskHandle({self.task_id!r}, status={self.task.status!r})"

    @property
    def done(self) -> bool:
        """Whether the task had ended when last heard of."""
        return self.task.status in TERMINAL

    @property
    def poll_interval(self) -> float:
        """How often to ask (seconds): the server's ``pollInterval``, else one second."""
        interval = getattr(self.task, "poll_interval", msgspec.UNSET)
        if not isinstance(interval, int) or isinstance(interval, bool):
            return DEFAULT_POLL
        return max(interval / 1000, MIN_POLL)

    async def status(self, *, timeout: float | None = None) -> Any:
        """Ask the server (``tasks/get``): the ``GetTaskResult``."""
        client = self._client
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
                heard = await watch.wait(self.task_id, self.poll_interval)
                if heard is not None and heard.status in TERMINAL:
                    self.task = heard
                    break
                await self.status()
        return self.task

    async def result(self, *, timeout: float | None = None) -> ToolResult:
        """The outcome (``tasks/result``, which waits for the task to end): the
        :class:`ToolResult` of a ``tools/call``; the error the plain call would have
        had is raised as :class:`~mcpspec.runtime.connection.RequestError`."""
        client = self._client
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
        -32602 (:class:`~mcpspec.runtime.connection.RequestError`)."""
        client = self._client
        types = client.types
        request = types.CancelTaskRequest(
            id=client.next_id(), params=types.CancelTaskRequestParams(task_id=self.task_id)
        )
        self.task = await client.request(request, timeout=timeout)
        return self.task
