"""The probes of one revision, each a coroutine over a :class:`~.conversation.Conversation`
that files what it finds.

Raw probes (past the session) test how the server treats what a correct client never
sends: a request before ``initialize``, an unknown method, invalid params, malformed
JSON. Typed probes (through the session) walk the server's surface: every page of every
list, every resource, every prompt that needs no arguments, every tool's JSON Schemas,
and with ``call_tools`` every tool.
"""

from __future__ import annotations

from typing import Any, Final

import anyio
import msgspec

from mcpspec.runtime.declared import RESULT_INPUT_REQUIRED
from mcpspec.runtime.errors import clip, show

from .catalog import CHECKS, Level
from .conversation import Conversation, Reply
from .json_schema import GaveUp, check_schema, example_of, validate
from .task_extension_probes import task_extension_rules
from .task_probes import task_rules

__all__ = [
    "cancellation",
    "invalid_params",
    "list_all",
    "parse_error",
    "ping",
    "said",
    "surface",
    "unknown_method",
]

#: Pages followed at most per list (a server paging forever is a loop too).
MAX_PAGES: Final = 1000
#: Resources read and prompts got at most.
MAX_READS: Final = 100
#: An unknown method (no revision defines it).
UNKNOWN_METHOD: Final = "mcpspec/no-such-method"
TEMPLATES: Final = "resources/templates/list"
#: Seconds an HTTP answer to malformed JSON may take after the sync's.
HTTP_GRACE: Final = 2.0
#: Bytes that are not JSON: a request cut short.
MALFORMED: Final = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", '


def typed(conv: Conversation, method: str, params: dict[str, Any] | None = None) -> Any:
    """A request of the conversation's revision, with a fresh id."""
    session = conv.session
    cls = session.types.CLIENT_REQUESTS[method]
    body = {"jsonrpc": "2.0", "id": session.next_id(), "method": method, "params": params or {}}
    return msgspec.json.decode(msgspec.json.encode(body), type=cls)


def raw(conv: Conversation, name: str, method: str, params: dict[str, Any] | None = None) -> Any:
    """A raw request (``_meta`` added in 2026-07-28, as a correct client would)."""
    params = dict(params or {})
    if conv.session.model == "stateless":
        params["_meta"] = conv.stateless_meta()
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": conv.raw_id(name), "method": method}
    if params:
        message["params"] = params
    return message


def _code(reply: Reply) -> Any:
    error = reply.value
    return error.get("code") if isinstance(error, dict) else getattr(error, "code", None)


def said(reply: Reply) -> str:
    """What an answer was, for a reason."""
    if reply.kind == "error":
        error = reply.value
        message = error.get("message") if isinstance(error, dict) else error.message
        return f"error {_code(reply)} {show(message)}"
    if reply.kind == "result":
        return f"result {show(reply.value)}"
    return {"timeout": "no answer in time", "closed": "the connection ended"}.get(
        reply.kind, reply.kind
    )


# -- raw probes ---------------------------------------------------------------------------------


async def ping(conv: Conversation) -> None:
    """``ping`` is answered with an empty result (``_meta`` aside)."""
    reply = await conv.raw_request(raw(conv, "ping", "ping"))
    where = reply.where or "ping"
    if reply.kind == "result" and isinstance(reply.value, dict) and set(reply.value) <= {"_meta"}:
        conv.passed("protocol.ping", where, "answered with an empty result")
    else:
        conv.problem("protocol.ping", where, f"ping must get an empty result; got {said(reply)}")


async def _expect_code(
    conv: Conversation, check: str, message: dict[str, Any], code: int, what: str
) -> None:
    """Send the raw request ``message`` (``what`` it is) and file whether it was
    answered with error ``code``."""
    reply = await conv.raw_request(message)
    where = reply.where or message["method"]
    if reply.kind == "error" and _code(reply) == code:
        conv.passed(check, where, f"{what}: {code}")
        return
    verb = "should" if CHECKS[check].level is Level.SHOULD else "must"
    conv.problem(check, where, f"{what} {verb} be answered with {code}; got {said(reply)}")


async def unknown_method(conv: Conversation) -> None:
    """An unknown method is answered with -32601."""
    message = raw(conv, "unknown", UNKNOWN_METHOD)
    await _expect_code(conv, "protocol.unknown-method", message, -32601, UNKNOWN_METHOD)


#: Requests with invalid params, by the server capability that serves them.
_INVALID: Final[dict[str, tuple[str, dict[str, Any], str]]] = {
    "tools": (
        "tools/call",
        {"name": "mcpspec-check", "arguments": "not an object"},
        "tools/call with arguments that are not an object",
    ),
    "prompts": ("prompts/get", {"name": 42}, "prompts/get with name 42"),
    "resources": ("resources/read", {"uri": 42}, "resources/read with uri 42"),
    "logging": ("logging/setLevel", {"level": "loud"}, 'logging/setLevel with level "loud"'),
}


async def invalid_params(conv: Conversation) -> None:
    """Invalid params of a method the server serves are answered with -32602."""
    declared = conv.session.peer_capabilities or {}
    for capability, (method, params, what) in _INVALID.items():
        if capability not in declared or method not in conv.session.types.CLIENT_REQUESTS:
            continue
        message = raw(conv, "invalid", method, params)
        await _expect_code(conv, "protocol.invalid-params", message, -32602, what)
        return
    conv.skipped("protocol.invalid-params", "the server declares no tools, prompts or resources")


async def parse_error(conv: Conversation) -> None:
    """Malformed JSON is answered with -32700 and id null, and the server goes on."""
    waiter = await conv.raw_unreadable_later(MALFORMED)
    alive = await conv.sync()
    if waiter.reply is None and conv.link.transport != "stdio":
        # Over HTTP the answer comes on a POST of its own, in no order with the sync.
        with anyio.move_on_after(min(conv.timeout, HTTP_GRACE)):
            await waiter.done.wait()
    conv.forget(waiter)
    reply = waiter.reply
    if not alive:
        conv.problem(
            "protocol.parse-error", "malformed JSON", "the server stopped answering after it"
        )
    elif reply is None and conv.link.transport != "stdio":
        # A refusal without a JSON-RPC body: the HTTP status speaks for it (400).
        conv.passed("protocol.parse-error", "malformed JSON", "refused without a JSON-RPC body")
    elif reply is None:
        conv.problem(
            "protocol.parse-error",
            "malformed JSON",
            "no answer: JSON-RPC 2.0 answers an unparsable message with -32700 and id null",
        )
    elif reply.kind == "error" and _code(reply) == -32700:
        conv.passed("protocol.parse-error", reply.where, "answered -32700, and went on")
    else:
        conv.problem(
            "protocol.parse-error",
            reply.where,
            f"malformed JSON must be answered with -32700; got {said(reply)}",
        )


# -- typed probes -------------------------------------------------------------------------------


async def cancellation(conv: Conversation) -> None:
    """A request cancelled at once; the server may answer it if the answer crossed the
    cancellation, but must go on serving."""
    methods = conv.session.types.CLIENT_REQUESTS
    method = "tools/list" if "tools" in (conv.session.peer_capabilities or {}) else None
    if method is None or method not in methods:
        conv.skipped("protocol.cancellation", "nothing to cancel: the server declares no tools")
        return
    request = typed(conv, method)
    conv.cancelled[request.id] = None
    sent = conv.session.send(request)
    cancel = conv.session.cancel(request.id, "mcpspec check")
    if conv.link.transport == "stdio":
        # One write: the server reads the cancellation before it can have answered.
        await conv.raw_send(sent + b"\n" + cancel)
    else:
        await conv.raw_send(sent)
        await conv.raw_send(cancel)
    alive = await conv.sync()
    answer = conv.cancelled.pop(request.id, None)
    if answer is not None:
        where, code = answer
        conv.problem(
            "protocol.cancellation",
            where,
            f"the cancelled {method} was answered with error {code}: a receiver of "
            "notifications/cancelled should not answer the request (an answer that "
            "crossed the cancellation is a result, not an error about it)",
        )
    elif alive:
        conv.passed("protocol.cancellation", method, "the server went on after a cancellation")
    if not alive:
        conv.problem(
            "protocol.cancellation", method, "the server stopped answering after a cancellation"
        )


async def list_all(conv: Conversation, method: str, key: str) -> list[dict[str, Any]] | None:
    """Every item of a paginated list, following each cursor; ``None`` when the list
    could not be had (filed)."""
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    cursor: str | None = None
    for page in range(MAX_PAGES):
        reply = await conv.request(typed(conv, method, {"cursor": cursor} if cursor else None))
        where = reply.where or method
        if reply.kind != "result":
            if reply.kind == "error" and _code(reply) == -32601 and method == TEMPLATES:
                pass  # a server without templates may leave the method out
            elif reply.kind == "error" and _code(reply) == -32601:
                conv.problem(
                    "protocol.capabilities",
                    where,
                    f"{method} answered -32601 although the server declares {method.split('/')[0]}",
                )
            elif reply.kind != "refused" and not reply.id_null:
                # (an answer with its id dropped is filed under protocol.responses)
                conv.problem("surface.list", where, f"{method}: {said(reply)}")
            return None
        result = reply.value
        items.extend(msgspec.to_builtins(getattr(result, key)))
        following = getattr(result, "next_cursor", None)
        if not isinstance(following, str):
            if page:
                conv.passed("protocol.pagination", method, f"{page + 1} pages, {len(items)} items")
            return items
        if following in seen:
            conv.problem(
                "protocol.pagination",
                f"{where}: $.result.nextCursor",
                f"{method}: cursor {show(following)} came back after {page + 1} pages (a loop)",
            )
            return items
        seen.add(following)
        cursor = following
    conv.problem(
        "protocol.pagination", method, f"{method}: still more pages after {MAX_PAGES} pages"
    )
    return items


#: The lists of a server's surface: capability, method, the result member listing items.
_LISTS: Final = (
    ("tools", "tools/list", "tools"),
    ("resources", "resources/list", "resources"),
    ("resources", "resources/templates/list", "resource_templates"),
    ("prompts", "prompts/list", "prompts"),
)


async def surface(conv: Conversation, *, call_tools: bool) -> None:
    """List, read, get, check the schemas and (with ``call_tools``) call."""
    declared = conv.session.peer_capabilities or {}
    found: dict[str, list[dict[str, Any]]] = {}
    for capability, method, key in _LISTS:
        if capability not in declared or method not in conv.session.types.CLIENT_REQUESTS:
            continue
        items = await list_all(conv, method, key)
        if items is not None:
            found[method] = items
            conv.passed("surface.list", method, f"{len(items)} items")
    if not found:
        conv.skipped("surface.list", "the server declares no tools, resources or prompts")
    await _read_resources(conv, found.get("resources/list"))
    await _get_prompts(conv, found.get("prompts/list"))
    tools = found.get("tools/list")
    sound = _tool_schemas(conv, tools)
    if call_tools:
        await _call_tools(conv, tools, sound)
    else:
        conv.skipped("surface.call", "tools are called only with --call-tools")


async def _read_resources(conv: Conversation, resources: list[dict[str, Any]] | None) -> None:
    if not resources:
        return
    for resource in resources[:MAX_READS]:
        uri = resource.get("uri")
        request = typed(conv, "resources/read", {"uri": uri})
        subject = conv.subjects[request.id] = f"resource {show(uri)}"
        reply = await conv.request(request)
        conv.subjects.pop(request.id, None)
        if reply.kind == "result":
            continue
        if reply.kind != "refused":
            where = reply.where or "resources/read"
            conv.problem("surface.read", where, f"{show(uri)}: {said(reply)}", subject=subject)
        return
    conv.passed("surface.read", "resources/read", f"{min(len(resources), MAX_READS)} read")


async def _get_prompts(conv: Conversation, prompts: list[dict[str, Any]] | None) -> None:
    if not prompts:
        return
    got = 0
    for prompt in prompts[:MAX_READS]:
        if any(argument.get("required") for argument in prompt.get("arguments") or ()):
            continue
        name = prompt.get("name")
        request = typed(conv, "prompts/get", {"name": name})
        subject = conv.subjects[request.id] = f"prompt {show(name)}"
        reply = await conv.request(request)
        conv.subjects.pop(request.id, None)
        if reply.kind != "result":
            if reply.kind != "refused":
                where = reply.where or "prompts/get"
                conv.problem("surface.read", where, f"{show(name)}: {said(reply)}", subject=subject)
            return
        got += 1
    if got:
        conv.passed("surface.read", "prompts/get", f"{got} prompts got")


#: A tool's schema: (the tool's index in the list, ``inputSchema`` or ``outputSchema``).
Schema = tuple[int, str]


def _tool_schemas(conv: Conversation, tools: list[dict[str, Any]] | None) -> set[Schema]:
    """Check every tool's schemas; the ones found sound (the others cannot be used)."""
    sound: set[Schema] = set()
    if not tools:
        return sound
    bad = unchecked = 0
    for index, tool in enumerate(tools):
        for member in ("inputSchema", "outputSchema"):
            if member not in tool:
                continue
            where = f"tools/list: $.tools[{index}].{member}"
            name = show(tool.get("name"))
            try:
                problem = check_schema(tool[member])
            except GaveUp as exc:
                unchecked += 1
                conv.skipped("surface.json-schema", f"tool {name}: not checked: {exc}", where)
                continue
            if problem is None:
                sound.add((index, member))
            else:
                bad += 1
                why = f"tool {name}: {problem}"
                conv.problem("surface.json-schema", where, why, subject=f"tool {name}")
    if not bad:
        more = f" ({unchecked} schemas not checked)" if unchecked else ""
        conv.passed("surface.json-schema", "tools/list", f"{len(tools)} tools{more}")
    return sound


#: What became of each tool called, in the order the summary says them.
_CALLED: Final = (
    ("result", "results"),
    ("tool-error", "tool errors (isError)"),
    ("error", "JSON-RPC errors"),
    ("input", "asking for input"),
    ("busy", "still busy after the timeout"),
    ("refused", "answers breaking a rule"),
    ("task", "task-required (called without a task)"),
    ("unbuilt", "not called: no arguments could be built"),
    ("unsound", "not called: inputSchema unusable"),
)


def _task_required(tool: dict[str, Any]) -> bool:
    execution = tool.get("execution")
    return isinstance(execution, dict) and execution.get("taskSupport") == "required"


async def _call_tools(
    conv: Conversation, tools: list[dict[str, Any]] | None, sound: set[Schema]
) -> None:
    """Call every tool with arguments made from its inputSchema. A JSON-RPC error, a tool
    error or a tool still busy after the timeout (cancelled then) is no defect: MCP has
    no rule on what a tool does. A result that breaks the tool's outputSchema is, and so
    is a task-required tool that serves a call made without a task (2025-11-25 tasks:
    the server MUST answer -32601)."""
    if not tools:
        conv.skipped("surface.call", "no tools")
        return
    counts = dict.fromkeys((key for key, _ in _CALLED), 0)
    #: What each tool's plain call got (for the task rules), and the tools called.
    plain: dict[str, str] = {}
    called: list[dict[str, Any]] = []
    for index, tool in enumerate(tools):
        name = tool.get("name")
        subject = f"tool {show(name)}"
        if (index, "inputSchema") not in sound:
            counts["unsound"] += 1
            continue  # filed by surface.json-schema; no arguments can be made for it
        try:
            arguments = example_of(tool["inputSchema"])
        except GaveUp as exc:
            counts["unbuilt"] += 1
            why = f"{subject}: not called, no arguments could be built: {exc}"
            conv.skipped("surface.call", why, f"tools/call {show(name)}")
            continue
        request = typed(conv, "tools/call", {"name": name, "arguments": arguments})
        called.append(tool)
        conv.subjects[request.id] = subject
        reply = await conv.request(request, progress_token=f"mcpspec-check-{name}")
        conv.subjects.pop(request.id, None)
        where = reply.where or f"tools/call {name}"
        if _task_required(tool):
            counts["task"] += 1
            _task_refusal(conv, subject, reply, where)
            if reply.kind == "timeout":
                await conv.raw_send(conv.session.cancel(request.id, "mcpspec check: timeout"))
            elif reply.kind == "closed":
                conv.problem("surface.call", where, f"{subject}: the connection ended")
                return
            continue
        if reply.kind == "timeout":
            counts["busy"] += 1
            await conv.raw_send(conv.session.cancel(request.id, "mcpspec check: timeout"))
        elif reply.kind == "error":
            counts["error"] += 1
            plain[str(name)] = "error"
        elif reply.kind == "refused":
            counts["refused"] += 1  # filed where the rule broke
        elif reply.kind == "result":
            if getattr(type(reply.value), "result_type", None) == RESULT_INPUT_REQUIRED:
                counts["input"] += 1  # asks for input: the retry is not followed
                continue
            if getattr(reply.value, "is_error", False) is True:
                counts["tool-error"] += 1
                plain[str(name)] = "tool-error"
                continue
            counts["result"] += 1
            plain[str(name)] = "result"
            if (index, "outputSchema") in sound:
                _check_structured(conv, tool, reply.value, where)
        elif reply.kind == "closed":
            conv.problem("surface.call", where, f"{subject}: the connection ended")
            return
    told = ", ".join(f"{counts[key]} {label}" for key, label in _CALLED if counts[key])
    conv.passed("surface.call", "tools/call", f"{len(tools)} tools: {told or 'none called'}")
    await task_rules(conv, tools, plain)
    await task_extension_rules(conv, called, plain)


def _task_refusal(conv: Conversation, subject: str, reply: Reply, where: str) -> None:
    """A task-required tool called without a task: -32601, nothing else."""
    if reply.kind == "error" and _code(reply) == -32601:
        conv.passed("protocol.tasks", where, f"{subject}: called without a task, -32601")
        return
    if reply.kind == "refused":
        return  # the answer broke a rule: filed where it broke
    if reply.kind == "result":
        failed = getattr(reply.value, "is_error", False) is True
        answer = "a result" + (" with isError: true" if failed else " (served)")
    else:
        answer = said(reply)
    conv.problem(
        "protocol.tasks",
        where,
        f'{subject} declares execution.taskSupport "required"; called without a task it '
        f'was answered {answer}: \'If execution.taskSupport is "required", ... Servers '
        "MUST return a -32601 (Method not found) error if a client does not attempt to do "
        "so' (2025-11-25 tasks, Tool-Level Negotiation)",
        subject=subject,
    )


def _check_structured(conv: Conversation, tool: dict[str, Any], result: Any, where: str) -> None:
    """Check a result against the tool's outputSchema (found sound by the caller)."""
    if getattr(result, "is_error", False) is True:
        return
    structured = getattr(result, "structured_content", msgspec.UNSET)
    name = show(tool.get("name"))
    if structured is msgspec.UNSET or structured is None:
        conv.problem(
            "surface.call",
            f"{where}: $.result",
            f"tool {name} declares an outputSchema but its result has no structuredContent",
            subject=f"tool {name}",
        )
        return
    try:
        problem = validate(msgspec.to_builtins(structured), tool["outputSchema"])
    except GaveUp as exc:
        why = f"tool {show(tool.get('name'))}: structuredContent not checked: {exc}"
        conv.skipped("surface.call", why, f"{where}: $.result.structuredContent")
        return
    if problem is not None:
        path, why = problem
        conv.problem(
            "surface.call",
            f"{where}: $.result.structuredContent{path}",
            clip(f"tool {name}: structuredContent does not match outputSchema: {why}"),
            subject=f"tool {name}",
        )
