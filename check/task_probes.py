"""The task rules of 2025-11-25 (``protocol.tasks``), with ``--call-tools``: a server
whose tools declare ``execution.taskSupport`` declares ``tasks.requests.tools.call``;
such a tool called as a task answers ``CreateTaskResult``; the task's status moves only
forward (nothing leaves ``completed``, ``failed`` or ``cancelled``); ``tasks/result``
answers what the plain call answers (a ``CallToolResult``, or the same kind of answer as
the plain call got).
"""

from __future__ import annotations

import itertools
from typing import Any, Final

import anyio
import msgspec

from mcpspec.runtime.errors import show

from .conversation import Conversation, Reply
from .json_schema import GaveUp, example_of

__all__ = ["TASK_SUPPORT", "task_rules"]

#: The ``taskSupport`` values that let a client call a tool as a task.
TASK_SUPPORT: Final = frozenset({"optional", "required"})
#: How many task tools are called as tasks (each may take a while).
MAX_TASK_TOOLS: Final = 3
#: Where the tasks' statuses come from in the specification.
_LIFECYCLE: Final = (
    "'Tasks MUST begin in the working status' ... 'Tasks in terminal status (completed, "
    "failed, or cancelled) MUST NOT transition to any other status' (2025-11-25 tasks, "
    "Task Status Lifecycle)"
)
_TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
#: The longest poll interval followed (a server may ask for minutes).
_MAX_POLL: Final = 1.0


def _support(tool: dict[str, Any]) -> Any:
    execution = tool.get("execution")
    return execution.get("taskSupport") if isinstance(execution, dict) else None


async def task_rules(
    conv: Conversation, tools: list[dict[str, Any]], plain: dict[str, str]
) -> None:
    """Check the task rules on ``tools`` (listed; ``plain``: what each tool's plain call
    got, by name: ``result``, ``tool-error`` or ``error``)."""
    if "tasks/get" not in conv.session.types.CLIENT_REQUESTS:
        return  # a revision without tasks
    task_tools = [tool for tool in tools if _support(tool) in TASK_SUPPORT]
    if not task_tools:
        return
    declared = conv.session.peer_capabilities or {}
    tasks = declared.get("tasks")
    call = None
    if isinstance(tasks, dict):
        requests = tasks.get("requests")
        tool_requests = requests.get("tools") if isinstance(requests, dict) else None
        call = tool_requests.get("call") if isinstance(tool_requests, dict) else None
    if call is None:
        names = ", ".join(show(tool.get("name")) for tool in task_tools[:5])
        conv.problem(
            "protocol.tasks",
            "initialize",
            f"tools declare execution.taskSupport ({names}) but the server does not "
            "declare the tasks.requests.tools.call capability: 'If a server's capabilities "
            "do not include tasks.requests.tools.call, then clients MUST NOT attempt to use "
            "task augmentation on that server's tools, regardless of the execution."
            "taskSupport value' (2025-11-25 tasks, Tool-Level Negotiation)",
        )
        return
    conv.passed("protocol.tasks", "initialize", "tasks.requests.tools.call declared")
    for tool in task_tools[:MAX_TASK_TOOLS]:
        await _as_task(conv, tool, plain.get(str(tool.get("name"))))


async def _request(conv: Conversation, method: str, params: dict[str, Any]) -> Reply:
    """Send a typed request of the conversation's revision and wait for its answer."""
    session = conv.session
    cls = session.types.CLIENT_REQUESTS[method]
    body = {"jsonrpc": "2.0", "id": session.next_id(), "method": method, "params": params}
    return await conv.request(msgspec.json.decode(msgspec.json.encode(body), type=cls))


async def _as_task(conv: Conversation, tool: dict[str, Any], plain: str | None) -> None:
    """Call ``tool`` as a task and follow the task to its end."""
    name = tool.get("name")
    subject = f"tool {show(name)}"
    where = f"tools/call {name} (as a task)"
    try:
        arguments = example_of(tool.get("inputSchema") or {"type": "object"})
    except GaveUp:
        return
    created = await _request(
        conv, "tools/call", {"name": name, "arguments": arguments, "task": {"ttl": 60000}}
    )
    if created.kind != "result":
        if created.kind == "error":
            conv.note("protocol.tasks", where, f"{subject}: called as a task: {_said(created)}")
        return
    task = getattr(created.value, "task", None)
    if task is None:
        conv.problem(
            "protocol.tasks",
            where,
            f"{subject}: a task-augmented tools/call was answered without a task: 'Receivers "
            "that accept a task-augmented request MUST return a CreateTaskResult as the "
            "response' (2025-11-25 tasks, Result Retrieval)",
            subject=subject,
        )
        return
    task_id, status = task.task_id, task.status
    if status != "working":
        conv.problem("protocol.tasks", where, f"{subject}: created {status!r}: {_LIFECYCLE}")
    seen = [status]
    interval = min(max((_poll(task) or 100) / 1000, 0.01), _MAX_POLL)
    with anyio.move_on_after(conv.timeout):
        while status not in _TERMINAL and status != "input_required":
            await anyio.sleep(interval)
            got = await _request(conv, "tasks/get", {"taskId": task_id})
            if got.kind != "result":
                return
            status = got.value.status
            seen.append(status)
    if status in _TERMINAL:
        # Once more: an ended task stays as it ended.
        again = await _request(conv, "tasks/get", {"taskId": task_id})
        if again.kind == "result":
            seen.append(again.value.status)
    moves = list(itertools.pairwise(seen))
    back = [(a, b) for a, b in moves if a in _TERMINAL and b != a]
    if back:
        a, b = back[0]
        conv.problem(
            "protocol.tasks",
            f"tasks/get {task_id}",
            f"{subject}: its task went from {a!r} to {b!r}: {_LIFECYCLE}",
            subject=subject,
        )
        return
    if status not in _TERMINAL:
        # Still working (or asking the user, which the checker does not answer): stop it.
        await _request(conv, "tasks/cancel", {"taskId": task_id})
        return
    await _result_matches(conv, subject, task_id, status, plain)


async def _result_matches(
    conv: Conversation, subject: str, task_id: str, status: str, plain: str | None
) -> None:
    """``tasks/result`` of an ended task answers what the plain call would have."""
    where = f"tasks/result {task_id}"
    got = await _request(conv, "tasks/result", {"taskId": task_id})
    if got.kind not in ("result", "error") or status == "cancelled":
        return
    rule = (
        "'Receivers MUST return from tasks/result exactly what the underlying request would "
        "have returned, whether that is a successful result or a JSON-RPC error' (2025-11-25 "
        "tasks, Result Retrieval)"
    )
    kind = "error"
    if got.kind == "result":
        try:
            result = conv.session.codec.decode_result("tools/call", msgspec.json.encode(got.value))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            conv.problem(
                "protocol.tasks",
                where,
                f"{subject}: the task's result is no CallToolResult ({exc}): {rule}",
                subject=subject,
            )
            return
        kind = "tool-error" if getattr(result, "is_error", False) is True else "result"
    if plain is not None and plain != kind:
        conv.problem(
            "protocol.tasks",
            where,
            f"{subject}: called plainly it answered a {plain}, as a task a {kind}: {rule}",
            subject=subject,
        )
        return
    conv.passed("protocol.tasks", where, f"{subject}: as a task, {status}, then a {kind}")


def _poll(task: Any) -> int | None:
    value = getattr(task, "poll_interval", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _said(reply: Reply) -> str:
    error = reply.value
    code = error.get("code") if isinstance(error, dict) else getattr(error, "code", None)
    return f"error {code}"
