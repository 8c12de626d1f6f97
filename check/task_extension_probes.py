"""The rules of the tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) of
2026-07-28, filed under ``protocol.tasks``, with ``--call-tools``.

In 2026-07-28 tasks left the core: a server declares the extension under
``capabilities.extensions`` (in its ``server/discover`` answer), a client per request in
``_meta["io.modelcontextprotocol/clientCapabilities"].extensions``, and the server alone
decides which call becomes a task (tools carry no ``taskSupport``). So, on a server that
declares the extension, the checker calls the tools it called plainly once more,
declaring the extension, until :data:`MAX_TASK_TOOLS` of them answered a task, and
checks:

* a ``CreateTaskResult`` is tagged ``resultType: "task"``, has a ``taskId`` and a status,
  and carries no ``requestState`` nor ``inputRequests`` (those are multi round-trip
  fields);
* ``tasks/get`` answers a ``DetailedTask`` tagged ``"complete"``, whose status never
  leaves a terminal one, with the ``result`` of a ``completed`` task, the ``error`` of a
  ``failed`` one, the questions (``inputRequests``, not empty) of an ``input_required``
  one; an ended task answers what the plain call did (a result, or one with ``isError``:
  ``completed`` with the same kind of result);
* ``tasks/cancel`` of a task still running answers an empty acknowledgement;
* ``tasks/get`` from a request that did not declare the extension is refused with -32021
  (whose ``data`` names the extension: a SHOULD, so a warning when it does not).

Its requests are raw (written past the session, which does not speak the extension): the
answers are judged here as plain JSON. That a ``CreateTaskResult`` never answers a request
that did not declare the extension is judged on every answer
(:meth:`~.conversation.Conversation.unsolicited_task`).
"""

from __future__ import annotations

import itertools
from typing import Any, Final

import anyio

from mcpspec.runtime.errors import show
from mcpspec.runtime.extensions import TASKS

from .conversation import Conversation, Reply
from .findings import Finding, Outcome
from .json_schema import GaveUp, example_of

__all__ = ["MAX_TASK_TOOLS", "MAX_TRIED", "declares_extension", "task_extension_rules"]

#: How many tools answering a task are followed (each may take a while).
MAX_TASK_TOOLS: Final = 3
#: How many tools are called declaring the extension at most, tasks or not.
MAX_TRIED: Final = 10
#: The longest poll interval followed (a server may ask for minutes).
_MAX_POLL: Final = 1.0
_CHECK: Final = "protocol.tasks"
_TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
_STATUSES: Final = _TERMINAL | {"working", "input_required"}
#: The members of a task: none of them belongs in an acknowledgement.
_TASK_FIELDS: Final = frozenset(
    {
        "taskId",
        "status",
        "statusMessage",
        "createdAt",
        "lastUpdatedAt",
        "ttlMs",
        "pollIntervalMs",
        "result",
        "error",
        "inputRequests",
    }
)
#: The multi round-trip fields a ``CreateTaskResult`` does not carry.
_MRTR_FIELDS: Final = ("requestState", "inputRequests")

_SEP: Final = "SEP-2663 tasks extension"
_TAGGED_TASK: Final = (
    '\'Servers MUST set resultType to "task" when returning a CreateTaskResult so that '
    "clients can distinguish it from a standard result. Servers MUST NOT set resultType "
    f'to "task" on result types other than CreateTaskResult\' ({_SEP}, Polymorphic Results)'
)
_CREATED: Final = (
    "'type CreateTaskResult = Result & Task': a taskId and a status, and none of the "
    "multi round-trip fields, whose phase 'ends when the server returns any "
    f'non-"input_required" resultType\' ({_SEP}, Task Creation; Composition with Multi '
    "Round-Trip Requests)"
)
_GET_TAGGED: Final = (
    '\'The resultType field MUST be set to "complete" on this object as it is the '
    f"standard result shape for the tasks/get request' ({_SEP}, Task Polling)"
)
_LIFECYCLE: Final = (
    "the Task Status State Diagram has no way out of a terminal status ('terminal --> "
    "[*]'; terminal states: completed, failed, cancelled), and clients poll 'until the "
    f"task reaches a terminal status' ({_SEP}, Task Status; Task Polling)"
)
_DETAILED: Final = {
    "completed": (
        "result",
        "'If the status is completed, the server MUST return a Task object with status "
        f"completed and a result field containing the final result of the task' ({_SEP}, "
        "Task Polling)",
    ),
    "failed": (
        "error",
        "'If the status is failed, the server MUST return a Task object with status "
        f"failed and the error that occurred during execution' ({_SEP}, Task Polling)",
    ),
    "input_required": (
        "inputRequests",
        "'If the status is input_required, the server MUST return a Task object with "
        "status input_required and an inputRequests field ... The inputRequests field "
        "MUST contain all outstanding requests from the server to the client that need to "
        f"be fulfilled before the task can proceed' ({_SEP}, Task Polling)",
    ),
}
_SAME_ANSWER: Final = (
    "'The tasks/get endpoint returns exactly what the underlying request would have "
    "returned: ... If the request completed with a result (even if isError: true for tool "
    "results), the task uses completed status and the result field MUST contain that "
    f"result' ({_SEP}, Task Execution Errors)"
)
_ACKNOWLEDGED: Final = (
    "'The server MUST acknowledge the request with an empty result' ... 'The resultType "
    f'field MUST be set to "complete" on CancelTaskResult\' ({_SEP}, Task Cancellation)'
)
_MISSING_CAPABILITY: Final = (
    "'Servers MUST return this error for non-declaring clients issuing tasks/get, "
    f"tasks/update, and tasks/cancel requests' ({_SEP}, Error Handling: -32021, Missing "
    "Required Client Capability)"
)
_NAMED_IN_DATA: Final = (
    "the error indicates 'the required extension in the error response' "
    f'(data.requiredCapabilities.extensions["{TASKS}"]; {_SEP}, Capability Negotiation)'
)


def declares_extension(capabilities: Any) -> bool:
    """Whether ``capabilities`` (JSON) declare the tasks extension."""
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and TASKS in extensions


async def task_extension_rules(
    conv: Conversation, tools: list[dict[str, Any]], plain: dict[str, str]
) -> None:
    """Check the extension's rules on ``tools`` (listed, and called plainly already) of a
    2026-07-28 server that declares the extension (``plain``: what each tool's plain
    call got, by name: ``result``, ``tool-error`` or ``error``)."""
    if conv.session.model != "stateless":
        return  # the extension is defined for 2026-07-28 alone
    if not declares_extension(conv.session.peer_capabilities):
        return
    conv.passed(_CHECK, "server/discover", f"capabilities.extensions declares {TASKS}")
    followed: list[str] = []
    for tool in tools[:MAX_TRIED]:
        task_id = await _as_task(conv, tool, plain.get(str(tool.get("name"))))
        if task_id is not None:
            followed.append(task_id)
            if len(followed) == MAX_TASK_TOOLS:
                break
    if followed:
        await _undeclared_get(conv, followed[0])


def _meta(conv: Conversation, *, declaring: bool) -> dict[str, Any]:
    """A request's ``_meta``, declaring the extension or not."""
    meta = conv.stateless_meta()
    if declaring:
        capabilities = dict(meta["io.modelcontextprotocol/clientCapabilities"])
        capabilities["extensions"] = {**capabilities.get("extensions", {}), TASKS: {}}
        meta["io.modelcontextprotocol/clientCapabilities"] = capabilities
    return meta


async def _request(
    conv: Conversation, method: str, params: dict[str, Any], *, declaring: bool = True
) -> Reply:
    """A raw request, declaring the extension (``declaring``), and its answer."""
    request_id = conv.raw_id("task")
    body = {**params, "_meta": _meta(conv, declaring=declaring)}
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}
    if declaring:
        conv.declaring_tasks.add(request_id)
    try:
        reply = await conv.raw_request(message)
    finally:
        conv.declaring_tasks.discard(request_id)
    if reply.kind == "timeout":
        # Stop it (2026-07-28 over HTTP: the link closes its response stream).
        await conv.raw_send(conv.raw_cancel(request_id, "mcpspec check: timeout"))
    return reply


async def _as_task(conv: Conversation, tool: dict[str, Any], plain: str | None) -> str | None:
    """Call ``tool`` declaring the extension; follow the task it answers, if one. The
    task's id, if it answered one."""
    name = tool.get("name")
    subject = f"tool {show(name)}"
    try:
        arguments = example_of(tool.get("inputSchema") or {"type": "object"})
    except GaveUp:
        return None
    created = await _request(conv, "tools/call", {"name": name, "arguments": arguments})
    where = created.where or f"tools/call {name} (declaring {TASKS})"
    result = created.value
    if created.kind != "result" or not isinstance(result, dict):
        return None
    tagged = result.get("resultType")
    if tagged != "task" and "taskId" not in result:
        return None  # answered at once: the server's choice
    if tagged != "task":
        _problem(
            conv,
            f"{where}: $.result.resultType",
            f"{subject}: a CreateTaskResult (taskId {show(result.get('taskId'))}) tagged "
            f"resultType {show(tagged)}: {_TAGGED_TASK}",
            subject,
        )
    task_id, status = result.get("taskId"), result.get("status")
    wrong = [f"{key} {show(result[key])}" for key in _MRTR_FIELDS if key in result]
    if not isinstance(task_id, str) or not task_id:
        wrong.insert(0, f"taskId {show(task_id)}")
    if status not in _STATUSES:
        wrong.insert(0, f"status {show(status)}")
    if wrong:
        _problem(
            conv,
            f"{where}: $.result",
            f"{subject}: its CreateTaskResult has {', '.join(wrong)}: {_CREATED}",
            subject,
        )
    if not isinstance(task_id, str) or not task_id:
        return None
    conv.passed(_CHECK, where, f"{subject}: declaring the extension, a task")
    await _follow(conv, subject, task_id, str(status), _poll(result), plain)
    return task_id


async def _follow(
    conv: Conversation,
    subject: str,
    task_id: str,
    status: str,
    poll_ms: int | None,
    plain: str | None,
) -> None:
    """Poll ``tasks/get`` until the task ends or asks for input; cancel it if it did not
    end; an ended task answers as the plain call did (``plain``)."""
    seen = [status]
    interval = min(max((poll_ms or 100) / 1000, 0.01), _MAX_POLL)
    last: dict[str, Any] | None = None
    with anyio.move_on_after(conv.timeout):
        while status not in _TERMINAL and status != "input_required":
            await anyio.sleep(interval)
            last = await _get(conv, subject, task_id)
            if last is None:
                return
            status = str(last.get("status"))
            seen.append(status)
            interval = min(max((_poll(last) or poll_ms or 100) / 1000, 0.01), _MAX_POLL)
    if status in _TERMINAL:
        # Once more: an ended task stays as it ended.
        again = await _get(conv, subject, task_id)
        if again is not None:
            seen.append(str(again.get("status")))
            last = again
    back = [(a, b) for a, b in itertools.pairwise(seen) if a in _TERMINAL and b != a]
    if back:
        a, b = back[0]
        _problem(
            conv,
            f"tasks/get {task_id}",
            f"{subject}: its task went from {a!r} to {b!r}: {_LIFECYCLE}",
            subject,
        )
        return
    if status not in _TERMINAL:
        # Still working, or asking (the checker does not answer): stop it.
        await _cancel(conv, subject, task_id)
        return
    if last is not None and not _same_answer(conv, subject, task_id, last, plain):
        return
    conv.passed(_CHECK, f"tasks/get {task_id}", f"{subject}: its task {' -> '.join(seen)}")


def _same_answer(
    conv: Conversation, subject: str, task_id: str, task: dict[str, Any], plain: str | None
) -> bool:
    """A task whose plain call was served (a result, or one with ``isError``) completes
    with the same kind of result. (A plain call answered with an error is not compared:
    it may be -32021, the call served only as a task.) Whether it did."""
    result, status = task.get("result"), task.get("status")
    if plain not in ("result", "tool-error") or status not in ("completed", "failed"):
        return True  # a cancelled task has no answer to compare
    if status == "failed":
        kind = "error"
    elif isinstance(result, dict):
        kind = "tool-error" if result.get("isError") is True else "result"
    else:
        return True  # no result: filed by its own rule
    if kind == plain:
        return True
    _problem(
        conv,
        f"tasks/get {task_id}",
        f"{subject}: called plainly it answered a {plain}, as a task a {kind}: {_SAME_ANSWER}",
        subject,
    )
    return False


async def _get(conv: Conversation, subject: str, task_id: str) -> dict[str, Any] | None:
    """``tasks/get`` of ``task_id``, its answer judged: the task, or ``None`` if none."""
    reply = await _request(conv, "tasks/get", {"taskId": task_id})
    where = reply.where or f"tasks/get {task_id}"
    task = reply.value
    if reply.kind != "result" or not isinstance(task, dict):
        if reply.kind == "error":
            conv.note(_CHECK, where, f"{subject}: tasks/get of its task: {_said(reply)}")
        return None
    if task.get("resultType") != "complete":
        _problem(
            conv,
            f"{where}: $.result.resultType",
            f"{subject}: tasks/get answered resultType {show(task.get('resultType'))}: "
            f"{_GET_TAGGED}",
            subject,
        )
    status = task.get("status")
    if status not in _STATUSES:
        _problem(
            conv,
            f"{where}: $.result.status",
            f"{subject}: tasks/get answered status {show(status)}, no task status: "
            f"{_DETAILED['completed'][1]}",
            subject,
        )
        return None
    needed = _DETAILED.get(status)
    if needed is not None:
        key, rule = needed
        value = task.get(key)
        if not isinstance(value, dict) or (key == "inputRequests" and not value):
            told = (
                f"no {key}"
                if key not in task
                else f"an empty {key}"
                if value == {}
                else f"{key} {show(value)}"
            )
            _problem(
                conv,
                f"{where}: $.result",
                f"{subject}: its task is {status} with {told}: {rule}",
                subject,
            )
    return task


async def _cancel(conv: Conversation, subject: str, task_id: str) -> None:
    """``tasks/cancel`` of a task still running: an empty acknowledgement."""
    reply = await _request(conv, "tasks/cancel", {"taskId": task_id})
    where = reply.where or f"tasks/cancel {task_id}"
    ack = reply.value
    if reply.kind == "error":
        conv.note(_CHECK, where, f"{subject}: tasks/cancel of its task: {_said(reply)}")
        return
    if reply.kind != "result" or not isinstance(ack, dict):
        return
    wrong = [f"{key} {show(ack[key])}" for key in sorted(_TASK_FIELDS & ack.keys())]
    tagged = ack.get("resultType")
    if tagged != "complete":
        wrong.insert(0, "no resultType" if tagged is None else f"resultType {show(tagged)}")
    if wrong:
        _problem(
            conv,
            f"{where}: $.result",
            f"{subject}: tasks/cancel was answered with {', '.join(wrong)}: {_ACKNOWLEDGED}",
            subject,
        )
        return
    conv.passed(_CHECK, where, f"{subject}: tasks/cancel acknowledged")


async def _undeclared_get(conv: Conversation, task_id: str) -> None:
    """``tasks/get`` from a request that did not declare the extension: -32021."""
    reply = await _request(conv, "tasks/get", {"taskId": task_id}, declaring=False)
    where = reply.where or f"tasks/get {task_id} (not declaring {TASKS})"
    error = reply.value if reply.kind == "error" and isinstance(reply.value, dict) else None
    if error is None or error.get("code") != -32021:
        said = f"error {show(error.get('code'))}" if error is not None else reply.kind
        _problem(
            conv,
            where,
            f"tasks/get from a request not declaring {TASKS} was answered with {said}, not "
            f"-32021: {_MISSING_CAPABILITY}",
        )
        return
    data = error.get("data")
    required = data.get("requiredCapabilities") if isinstance(data, dict) else None
    if not declares_extension(required):
        conv.file(
            Finding(
                _CHECK,
                Outcome.WARNING,
                f"{where}: $.error.data",
                f"-32021 whose data does not name the extension ({show(data)}): {_NAMED_IN_DATA}",
                conv.report.revision,
                probe=conv.probe,
            )
        )
        return
    conv.passed(_CHECK, where, f"tasks/get not declaring {TASKS}: -32021")


def _problem(conv: Conversation, where: str, why: str, subject: str = "") -> None:
    conv.problem(_CHECK, where, why, subject=subject)


def _poll(task: dict[str, Any]) -> int | None:
    value = task.get("pollIntervalMs")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _said(reply: Reply) -> str:
    error = reply.value
    code = error.get("code") if isinstance(error, dict) else getattr(error, "code", None)
    return f"error {code}"
