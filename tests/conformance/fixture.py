"""The fixture server of the official MCP conformance suite, on our :class:`Server`.

The suite's server scenarios call tools, resources and prompts by name
(``test_simple_text``, ``test://static-text``, ``test_simple_prompt``, ...) and check
what comes back; each scenario's description in the suite says what it expects. This
module declares all of them through the library's public API only (``@server.tool()``,
``@server.resource(...)``, ``@server.prompt()``, ``@server.completion(...)``,
:class:`RequestContext`), so that what the suite finds is what
users of the library get.
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any, Final

import anyio
import msgspec
from msgspec import UNSET, Meta

from mcpspec.runtime.connection import (
    Question,
    RequestContext,
    RequestError,
    Server,
    TaskSettings,
    Tool,
    ToolError,
)
from mcpspec.runtime.errors import ErrorCode

__all__ = ["AUDIO_BASE64", "IMAGE_BASE64", "build_server"]

#: A 1x1 PNG and a minimal WAV, as the suite's reference fixture serves them.
IMAGE_BASE64: Final = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAF"
    "BQIAX8jx0gAAAABJRU5ErkJggg=="
)
AUDIO_BASE64: Final = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

#: The input schema the ``json-schema-2020-12`` scenario expects ``tools/list`` to carry
#: unchanged ($schema, $defs, composition and conditional keywords, ...).
SCHEMA_2020_12: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


# A Struct, not annotated parameters of the tool function: there, Tool.from_function
# drops the Meta of an ``Annotated[...]`` parameter; a Struct's fields keep it.
class RegionArguments(msgspec.Struct, kw_only=True):
    """Arguments each mirrored in an Mcp-Param header."""

    region: Annotated[str, Meta(extra_json_schema={"x-mcp-header": "Region"})]
    priority: Annotated[int, Meta(extra_json_schema={"x-mcp-header": "Priority"})] = 0


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user(content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": content}


def _form(message: str, **properties: str) -> dict[str, Any]:
    """Form-mode elicitation params asking for string (or boolean) fields."""
    return {
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {name: {"type": kind} for name, kind in properties.items()},
            "required": list(properties),
        },
    }


def _sampling(text: str, max_tokens: int) -> dict[str, Any]:
    return {"messages": [_user(_text(text))], "maxTokens": max_tokens}


def _field(answer: Any, name: str) -> str:
    """Field ``name`` of an accepted elicitation's content, as text."""
    content = getattr(answer, "content", None)
    value = content.get(name) if isinstance(content, dict) else None
    return value if isinstance(value, str) else "unknown"


def _sampled_text(answer: Any) -> str:
    """The text a ``CreateMessageResult`` carries (its one block, or the first)."""
    content = getattr(answer, "content", None)
    if isinstance(content, list):
        content = content[0] if content else None
    text = getattr(content, "text", None)
    return text if isinstance(text, str) else "no response"


def build_server(state_key: bytes | None = None, tasks: TaskSettings | None = None) -> Server:
    """The conformance fixture: every tool, resource, prompt and completion the suite's
    server scenarios call, for every revision the library speaks. ``state_key`` seals
    ``requestState`` (workers of one cluster share it; else a random one); ``tasks``
    says where tasks are kept (workers of one cluster share a store)."""
    server = Server(
        "mcpspec-conformance-fixture",
        "1.0.0",
        logging=True,
        list_changed=True,
        subscribe=True,
        state_key=state_key,
        tasks=tasks,
    )
    _declare_content_tools(server)
    _declare_session_tools(server)
    _declare_input_tools(server)
    _declare_task_tools(server)
    _declare_resources(server)
    _declare_prompts(server)
    return server


def _declare_content_tools(server: Server) -> None:
    """Tools returning each kind of content, and a failing one."""

    @server.tool(description="Tests simple text content response")
    async def test_simple_text() -> str:
        return "This is a simple text response for testing."

    @server.tool(description="Tests image content response")
    async def test_image_content() -> dict[str, Any]:
        return {"content": [{"type": "image", "data": IMAGE_BASE64, "mimeType": "image/png"}]}

    @server.tool(description="Tests audio content response")
    async def test_audio_content() -> dict[str, Any]:
        return {"content": [{"type": "audio", "data": AUDIO_BASE64, "mimeType": "audio/wav"}]}

    @server.tool(description="Tests embedded resource content response")
    async def test_embedded_resource() -> dict[str, Any]:
        resource = {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content.",
        }
        return {"content": [{"type": "resource", "resource": resource}]}

    @server.tool(description="Tests response with multiple content types (text, image, resource)")
    async def test_multiple_content_types() -> dict[str, Any]:
        resource = {
            "uri": "test://mixed-content-resource",
            "mimeType": "application/json",
            "text": json.dumps({"test": "data", "value": 123}),
        }
        return {
            "content": [
                _text("Multiple content types test:"),
                {"type": "image", "data": IMAGE_BASE64, "mimeType": "image/png"},
                {"type": "resource", "resource": resource},
            ]
        }

    @server.tool(description="Tests error response handling")
    async def test_error_handling() -> str:
        raise ToolError("This tool intentionally returns an error for testing")

    async def json_schema_2020_12_tool(name: str | None = None, address: Any = None) -> str:
        """Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)"""
        return f"JSON Schema 2020-12 tool called with: {json.dumps({'name': name})}"

    @server.tool(description="A tool whose region travels in an Mcp-Param-Region header")
    async def test_region_header(arguments: RegionArguments) -> str:
        # The 2026-07-28 HTTP app checks Mcp-Param-* against these arguments (SEP-2243).
        return f"region={arguments.region} priority={arguments.priority}"

    tool = Tool.from_function(json_schema_2020_12_tool)
    # The scenario checks that the schema goes out as written, not as derived.
    tool.input_schema = SCHEMA_2020_12
    server.add_tool(tool)


def _declare_session_tools(server: Server) -> None:
    """Tools that log, report progress, and ask the client (sampling, elicitation):
    the same code answers over a connection (requests to the client) and, in
    2026-07-28, through ``InputRequiredResult`` rounds."""

    @server.tool(description="Tests tool that emits log messages during execution")
    async def test_tool_with_logging(ctx: RequestContext) -> str:
        for step in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            await ctx.log("info", step)
        return "Tool with logging executed successfully"

    @server.tool(description="Tests tool that reports progress notifications")
    async def test_tool_with_progress(ctx: RequestContext) -> str:
        for done in (0, 50, 100):
            await ctx.report_progress(done, 100, f"Completed step {done} of 100")
        return str(ctx.event.progress_token)

    @server.tool(description="Tests SSE stream disconnection and client reconnection")
    async def test_reconnection() -> str:
        return "Reconnection test completed successfully."

    @server.tool(description="Tests server-initiated sampling (LLM completion request)")
    async def test_sampling(prompt: str, ctx: RequestContext) -> str:
        answer = await ctx.sample(_sampling(prompt, 100))
        return f"LLM response: {_sampled_text(answer)}"

    @server.tool(description="Tests server-initiated elicitation (user input request)")
    async def test_elicitation(message: str, ctx: RequestContext) -> str:
        schema = {
            "type": "object",
            "properties": {"response": {"type": "string", "description": "User's response"}},
            "required": ["response"],
        }
        answer = await ctx.elicit(message=message, requested_schema=schema)
        return f"User response: action={answer.action}, content={_content_json(answer)}"

    @server.tool(description="Tests elicitation with default values per SEP-1034")
    async def test_elicitation_sep1034_defaults(ctx: RequestContext) -> str:
        answer = await ctx.elicit(
            message="Please review and update the form fields with defaults",
            requested_schema={
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {
                        "type": "string",
                        "description": "User status",
                        "enum": ["active", "inactive", "pending"],
                        "default": "active",
                    },
                    "verified": {
                        "type": "boolean",
                        "description": "Verification status",
                        "default": True,
                    },
                },
                "required": [],
            },
        )
        return f"Elicitation completed: action={answer.action}, content={_content_json(answer)}"

    @server.tool(description="Tests elicitation with enum schema improvements per SEP-1330")
    async def test_elicitation_sep1330_enums(ctx: RequestContext) -> str:
        options = ["option1", "option2", "option3"]
        titled = [
            {"const": "value1", "title": "First Option"},
            {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"},
        ]
        answer = await ctx.elicit(
            message="Please select options from the enum fields",
            requested_schema={
                "type": "object",
                "properties": {
                    "untitledSingle": {
                        "type": "string",
                        "description": "Select one option",
                        "enum": options,
                    },
                    "titledSingle": {
                        "type": "string",
                        "description": "Select one option with titles",
                        "oneOf": titled,
                    },
                    "legacyEnum": {
                        "type": "string",
                        "description": "Select one option (legacy)",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"],
                    },
                    "untitledMulti": {
                        "type": "array",
                        "description": "Select multiple options",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": {"type": "string", "enum": options},
                    },
                    "titledMulti": {
                        "type": "array",
                        "description": "Select multiple options with titles",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": {"anyOf": titled},
                    },
                },
                "required": [],
            },
        )
        return f"Elicitation completed: action={answer.action}, content={_content_json(answer)}"


def _declare_task_tools(server: Server) -> None:
    """The tools the tasks scenarios (the io.modelcontextprotocol/tasks extension,
    SEP-2663) call: task tools run as tasks for a request declaring the extension."""

    @server.tool(description="Greets by name, at once (never a task)")
    async def greet(name: str = "World") -> str:
        return f"Hello, {name}!"

    @server.tool(description="Sleeps `seconds` then answers (a task)", task="optional")
    async def slow_compute(seconds: float = 0, label: str = "") -> str:
        await anyio.sleep(max(0.0, min(seconds, 300.0)))
        return f"computed {label or 'result'} after {seconds}s"

    @server.tool(description="Fails as a tool after about a second (a task only)", task="required")
    async def failing_job() -> str:
        await anyio.sleep(1)
        raise ToolError("the job failed")

    @server.tool(description="Breaks with a protocol error (a task)", task="optional")
    async def protocol_error_job() -> str:
        raise RequestError.of(ErrorCode.INTERNAL_ERROR, "the job broke")

    @server.tool(description="Asks for a confirmation, then deletes (a task)", task="optional")
    async def confirm_delete(ctx: RequestContext, path: str = "/tmp/example") -> str:
        answer = await ctx.elicit(_form(f"Delete {path}?", confirm="boolean"))
        confirmed = isinstance(answer.content, dict) and answer.content.get("confirm") is True
        return f"deleted {path}" if confirmed else f"kept {path}"

    @server.tool(description="Asks two questions at once (a task)", task="optional")
    async def multi_input(ctx: RequestContext) -> str:
        first, second = await ctx.ask_all(
            Question.elicit(_form("First value?", value="string")),
            Question.elicit(_form("Second value?", value="string")),
        )
        return f"first: {_field(first, 'value')}; second: {_field(second, 'value')}"

    @server.tool(
        description="Asks the user's name, then runs as a task",
        task="required",
        ask_before_task=True,
    )
    async def test_tool_with_task(ctx: RequestContext) -> str:
        answer = await ctx.elicit(_form("What is your name?", name="string"), key="user_name")
        ctx.start_task()  # asked in the request's rounds; the task runs from here
        return f"Hello, {_field(answer, 'name')}!"


def _content_json(answer: Any) -> str:
    content = getattr(answer, "content", None)
    return json.dumps(content if isinstance(content, dict) else {})


def _declare_input_tools(server: Server) -> None:
    """The 2026-07-28 ``InputRequiredResult`` tools (SEP-2322), written with
    ``ctx.elicit`` / ``ctx.sample`` / ``ctx.list_roots``: the library runs the rounds."""

    @server.tool(description="MRTR: asks for the user's name (elicitation)")
    async def test_input_required_result_elicitation(ctx: RequestContext) -> str:
        answer = await ctx.elicit(_form("What is your name?", name="string"), key="user_name")
        return f"Hello, {_field(answer, 'name')}!"

    @server.tool(description="MRTR: asks the client's model (sampling)")
    async def test_input_required_result_sampling(ctx: RequestContext) -> str:
        answer = await ctx.sample(_sampling("What is the capital of France?", 100))
        return f"Sampling result: {_sampled_text(answer)}"

    @server.tool(description="MRTR: asks for the client's roots")
    async def test_input_required_result_list_roots(ctx: RequestContext) -> str:
        answer = await ctx.list_roots()
        return f"Found {len(answer.roots)} root(s)"

    @server.tool(description="MRTR: asks for a confirmation, keeping state between rounds")
    async def test_input_required_result_request_state(ctx: RequestContext) -> str:
        answer = await ctx.elicit(_form("Please confirm", ok="boolean"))
        content = getattr(answer, "content", None)
        confirmed = isinstance(content, dict) and content.get("ok") is True
        return "state-ok: requestState validated" if confirmed else "state-refused"

    @server.tool(description="MRTR: asks three questions (elicitation, sampling, roots)")
    async def test_input_required_result_multiple_inputs(ctx: RequestContext) -> str:
        # Asked together: one InputRequiredResult carries the three.
        name, greeting, roots = await ctx.ask_all(
            Question.elicit(_form("What is your name?", name="string")),
            Question.sample(_sampling("Generate a greeting", 50)),
            Question.roots(),
        )
        return (
            f"Name: {_field(name, 'name')}; Greeting: {_sampled_text(greeting)}; "
            f"Roots: {len(roots.roots)}"
        )

    @server.tool(description="MRTR: two rounds of elicitation")
    async def test_input_required_result_multi_round(ctx: RequestContext) -> str:
        name = await ctx.elicit(_form("Step 1: What is your name?", name="string"))
        color = await ctx.elicit(_form("Step 2: What is your favorite color?", color="string"))
        return f"Multi-round complete for {_field(name, 'name')} who likes {_field(color, 'color')}"

    @server.tool(description="MRTR: a requestState the server checks")
    async def test_input_required_result_tampered_state(ctx: RequestContext) -> str:
        await ctx.elicit(_form("Please confirm", ok="boolean"))
        return "integrity-ok: state verified"

    @server.tool(description="MRTR: asks only what the client's capabilities allow")
    async def test_input_required_result_capabilities(ctx: RequestContext) -> str:
        caps = ctx.client_capabilities
        received = []
        if getattr(caps, "elicitation", None) not in (None, UNSET):
            await ctx.elicit(_form("Elicitation input", value="string"))
            received.append("elicit_input")
        if getattr(caps, "sampling", None) not in (None, UNSET):
            await ctx.sample(_sampling("Sample request", 50))
            received.append("sample_input")
        if not received:
            return "No supported capabilities declared"
        return f"capabilities-ok: received {','.join(received)}"

    @server.tool(description="Reports progress, then asks the user (elicitation)")
    async def test_streaming_elicitation(ctx: RequestContext) -> str:
        await ctx.report_progress(50, 100, "half way")
        answer = await ctx.elicit(_form("Continue?", ok="boolean"))
        return f"Streaming complete: {answer.action}"

    @server.tool(description="Logs one message, at info")
    async def test_logging_tool(ctx: RequestContext) -> str:
        # Sent only when the client asked for messages of this level.
        await ctx.log("info", "Diagnostic trace logging activated")
        return "Logging evaluated"

    @server.tool(description="Tells the subscribed clients that the tool list changed")
    async def test_trigger_tool_change() -> str:
        await server.notify_tools_changed()
        return "Mutation triggered"

    @server.tool(description="Tells the subscribed clients that the prompt list changed")
    async def test_trigger_prompt_change() -> str:
        await server.notify_prompts_changed()
        return "Mutation triggered"

    @server.tool(description="Test tool requiring sampling")
    async def test_missing_capability(ctx: RequestContext) -> str:
        # Asking without the capability answers -32021 (2026-07-28).
        await ctx.sample(_sampling("Say hello", 10))
        return "Success"


def _declare_resources(server: Server) -> None:
    @server.resource(
        "test://static-text",
        name="static-text",
        title="Static Text Resource",
        description="A static text resource for testing",
        mime_type="text/plain",
    )
    async def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource(
        "test://static-binary",
        name="static-binary",
        title="Static Binary Resource",
        description="A static binary resource (image) for testing",
        mime_type="image/png",
    )
    async def static_binary() -> bytes:
        return base64.b64decode(IMAGE_BASE64)

    @server.resource(
        "test://watched-resource",
        name="watched-resource",
        title="Watched Resource",
        description="A resource clients can subscribe to",
        mime_type="text/plain",
    )
    async def watched() -> str:
        return "Watched resource content"

    @server.resource(
        "test://template/{id}/data",
        name="template",
        title="Resource Template",
        description="A resource template with parameter substitution",
        mime_type="application/json",
    )
    async def template(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


def _declare_prompts(server: Server) -> None:
    @server.prompt(description="A simple prompt without arguments")
    async def test_simple_prompt() -> str:
        return "This is a simple prompt for testing."

    @server.prompt(description="A prompt with required arguments")
    async def test_prompt_with_arguments(
        arg1: Annotated[str, Meta(description="First test argument")],
        arg2: Annotated[str, Meta(description="Second test argument")],
    ) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @server.completion(prompt="test_prompt_with_arguments", argument="arg1")
    async def complete_arg1(value: str) -> list[str]:
        return [value] if value else []

    @server.prompt(description="A prompt that includes an embedded resource")
    async def test_prompt_with_embedded_resource(
        resourceUri: Annotated[str, Meta(description="URI of the resource to embed")],
    ) -> list[Any]:
        resource = {
            "uri": resourceUri,
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing.",
        }
        return [
            {"type": "resource", "resource": resource},
            "Please process the embedded resource above.",
        ]

    @server.prompt(description="A prompt that includes image content")
    async def test_prompt_with_image() -> list[Any]:
        image = {"type": "image", "data": IMAGE_BASE64, "mimeType": "image/png"}
        return [image, "Please analyze the image above."]

    @server.prompt(description="A prompt that asks the user for context first (2026-07-28)")
    async def test_input_required_result_prompt(ctx: RequestContext) -> str:
        answer = await ctx.elicit(_form("What context should the prompt use?", context="string"))
        return f"Use this context: {_field(answer, 'context')}"
