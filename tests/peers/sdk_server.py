"""A stdio MCP server on the official Python SDK (``mcp``), for the interop tests of the
mcpspec client: ``python sdk_server.py``.

Tools: ``echo`` (text), ``add`` (text and structured output), ``slow`` (reports
``steps`` progress notifications, then answers), ``wait`` (blocks until cancelled),
``touch`` (announces that the tool list and a resource changed), ``note`` (logs a
debug and a warning message), ``fail`` (a tool error), ``ask`` (an elicitation,
answered by the client, in every revision); a resource ``test://greeting``, a resource
template ``test://items/{item}``, a prompt ``greet`` with a completable argument
``name``. ``--declare-logging`` makes it declare the logging capability.
"""

from __future__ import annotations

import sys
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SetLevelRequestParams,
)
from pydantic import BaseModel

server = MCPServer("sdk-peer", instructions="An SDK server for interop tests.", version="1.0")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Return the sum."""
    return a + b


@server.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Report ``steps`` progress notifications, then answer."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"done after {steps} steps"


@server.tool()
async def wait() -> str:
    """Never answer on its own: only a cancellation ends it."""
    await anyio.sleep_forever()
    return "unreachable"


@server.tool()
async def touch(ctx: Context) -> str:
    """Announce that the tool list and ``test://greeting`` changed."""
    await ctx.notify_tools_changed()
    await ctx.notify_resource_updated("test://greeting")
    return "touched"


@server.tool()
async def note(ctx: Context) -> str:
    """Log a debug and a warning message to the client."""
    await ctx.debug("a detail")
    await ctx.warning("a warning")
    return "noted"


@server.tool()
def fail() -> str:
    """Fail: the client sees a tool error (``isError``)."""
    raise ValueError("this tool always fails")


class Person(BaseModel):
    """What ``ask`` elicits."""

    name: str


def ask_name() -> Elicit[Person]:
    """Ask the client for a name."""
    return Elicit("What is your name?", Person)


@server.tool()
def ask(answer: Annotated[ElicitationResult[Person], Resolve(ask_name)]) -> str:
    """Elicit a name from the client, and greet it (or say what the user did)."""
    if answer.action == "accept":
        return f"hello {answer.data.name}"
    return answer.action


@server.resource("test://greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed text resource."""
    return "hello from the SDK"


@server.resource("test://items/{item}", mime_type="text/plain")
def item(item: str) -> str:
    """A templated text resource."""
    return f"item {item}"


@server.prompt()
def greet(name: str) -> str:
    """A prompt asking to greet ``name``."""
    return f"Please greet {name}."


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion | None:
    """Complete ``greet``'s ``name`` from a fixed list."""
    names = ["alice", "albert", "bob"]
    return Completion(values=[n for n in names if n.startswith(argument.value)])


async def set_level(ctx: object, params: SetLevelRequestParams) -> EmptyResult:
    """Accept any level (the peer's tools log at debug and warning regardless)."""
    return EmptyResult()


def declare_logging() -> None:
    """Make the server declare the logging capability its tools use (``note`` logs).

    The SDK's ``MCPServer`` declares ``logging`` only when a ``logging/setLevel``
    handler is registered, and offers no public way to register one, yet its tools log
    without it: a server that logs must declare the capability (``mcpspec check``
    reports that, see tests/test_check_interop.py)."""
    server._lowlevel_server.add_request_handler(
        "logging/setLevel", SetLevelRequestParams, set_level
    )


if __name__ == "__main__":
    if "--declare-logging" in sys.argv[1:]:
        declare_logging()
    server.run("stdio")
