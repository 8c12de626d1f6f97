"""The mcpspec Client driving real MCP servers over stdio, each a real subprocess: the
official Python SDK's server (tests/peers/sdk_server.py) and the reference TypeScript
``@modelcontextprotocol/server-everything``, in ``auto``, ``legacy`` and every revision
each server speaks.

``nox -s interop`` installs the peers and runs these (``pytest -m interop``). They skip,
saying why, only when a peer is absent: the SDK (``mcp``) not importable, or
MCPSPEC_NODE / MCPSPEC_SERVER_EVERYTHING not set.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

import mcpspec
from mcpspec.runtime import CapabilityError, Rule
from mcpspec.runtime.connection import NegotiationRefused, RequestError
from mcpspec.runtime.connection.client import Client, prompt_ref
from tests.interop_kit import (
    EVERYTHING,
    GUARD,
    NODE,
    Seen,
    cancel_then_go_on,
    needs_everything,
    needs_sdk,
)

pytestmark = [pytest.mark.interop, pytest.mark.anyio]

REVISIONS = mcpspec.REVISIONS
HANDSHAKE = tuple(r for r in REVISIONS if r < "2026-07-28")
SDK_SERVER = Path(__file__).resolve().parent / "peers" / "sdk_server.py"


ANYIO_BACKENDS = ("asyncio",)


# -- the official Python SDK's server --------------------------------------------------------------


@needs_sdk
@pytest.mark.parametrize("mode", ["auto", "legacy", *REVISIONS])
async def test_sdk_server(mode: str) -> None:
    seen = Seen()
    expected = {"auto": "2026-07-28", "legacy": "2025-11-25"}.get(mode, mode)
    with anyio.fail_after(GUARD):
        async with Client.stdio(
            sys.executable, [str(SDK_SERVER)], **seen.options(mode, stderr="capture")
        ) as client:
            # negotiation
            assert client.revision == expected
            assert client.server_info.name == "sdk-peer"
            assert client.instructions == "An SDK server for interop tests."
            # list
            tools = {tool.name for tool in await client.list_tools()}
            assert {"echo", "add", "slow", "wait", "touch", "note", "fail", "ask"} <= tools
            assert [r.uri for r in await client.list_resources()] == ["test://greeting"]
            templates = await client.list_resource_templates()
            assert [t.uri_template for t in templates] == ["test://items/{item}"]
            assert [p.name for p in await client.list_prompts()] == ["greet"]
            # call
            assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.text == "5" and not added.is_error
            if expected >= "2025-06-18":
                assert added.structured == {"result": 5}
            failed = await client.call_tool("fail")
            assert failed.is_error and failed.text == "Error executing tool fail"
            # progress
            steps: list[tuple[float, float | None]] = []
            slow = await client.call_tool(
                "slow", {"steps": 3}, progress=lambda p: steps.append((p.progress, p.total))
            )
            assert slow.text == "done after 3 steps" and steps == [(1, 3), (2, 3), (3, 3)]
            # read / get / complete
            read = await client.read_resource("test://greeting")
            assert read.contents[0].text == "hello from the SDK"
            templated = await client.read_resource("test://items/7")
            assert templated.contents[0].text == "item 7"
            prompt = await client.get_prompt("greet", {"name": "Ada"})
            assert prompt.messages[0].content.text == "Please greet Ada."
            completed = await client.complete(prompt_ref("greet"), "name", "al")
            assert completed.values == ["alice", "albert"]
            # ping
            if client.model == "handshake":
                await client.ping()
            # logging: a tool logs (the SDK declares no logging capability, so the level
            # is set only in 2026-07-28, where it travels in each request's _meta)
            if client.model == "stateless":
                await client.set_logging_level("warning")
            assert (await client.call_tool("note")).text == "noted"
            logged = [(m.level, m.data) for m in seen.logs]
            if client.model == "stateless":
                assert logged == [("warning", "a warning")]
            else:
                assert logged == [("debug", "a detail"), ("warning", "a warning")]
            # cancellation
            await cancel_then_go_on(client, "wait", {})
            assert (await client.call_tool("echo", {"text": "after"})).text == "after"
            # elicitation answered by the client's handler (the form mode needs 2025-06-18)
            if expected >= "2025-06-18":
                assert (await client.call_tool("ask")).text == "hello Ada"
                assert seen.asked == [("elicitation/create", expected)]
            else:
                with pytest.raises(RequestError) as refused:
                    await client.call_tool("ask")
                assert refused.value.code == -32021  # the SDK: no form elicitation
            # change notifications: subscriptions/listen, or resources/subscribe
            if client.model == "stateless":
                async with client.listen(tools=True, resource_uris=["test://greeting"]) as feed:
                    assert (await client.call_tool("touch")).text == "touched"
                    methods = []
                    async for change in feed:
                        methods.append(change.method)
                        if change.method == "notifications/resources/updated":
                            break
                assert methods == [
                    "notifications/tools/list_changed",
                    "notifications/resources/updated",
                ]
            else:
                # The SDK declares no resources.subscribe before 2026-07-28: refused here,
                # before anything is sent.
                assert client.capabilities.resources.subscribe is False
                with pytest.raises(CapabilityError):
                    await client.subscribe("test://greeting")
    assert seen.violations == []
    assert client.transport.returncode == 0  # closing its stdin was enough


# -- @modelcontextprotocol/server-everything -------------------------------------------------------


@needs_everything
@pytest.mark.parametrize("mode", ["auto", "legacy", *HANDSHAKE])
async def test_server_everything(mode: str) -> None:
    assert NODE is not None and EVERYTHING is not None
    seen = Seen()
    expected = {"auto": "2025-11-25", "legacy": "2025-11-25"}.get(mode, mode)
    entry = str(Path(EVERYTHING) / "dist" / "index.js")
    with anyio.fail_after(GUARD):
        async with Client.stdio(
            NODE, [entry, "stdio"], **seen.options(mode, stderr="capture")
        ) as client:
            # negotiation (auto: the probe is refused, initialize follows)
            assert client.revision == expected and client.model == "handshake"
            assert client.server_info.name == "mcp-servers/everything"
            assert client.instructions
            # list
            tools = {tool.name for tool in await client.list_tools()}
            assert {"echo", "get-sum", "trigger-long-running-operation"} <= tools
            assert {"trigger-sampling-request", "get-roots-list"} <= tools
            assert ("trigger-elicitation-request" in tools) == (expected >= "2025-06-18")
            resources = await client.list_resources()
            assert resources and await client.list_resource_templates()
            prompts = {p.name for p in await client.list_prompts()}
            assert {"simple-prompt", "args-prompt", "completable-prompt"} <= prompts
            # call
            assert (await client.call_tool("echo", {"message": "hi"})).text == "Echo: hi"
            summed = await client.call_tool("get-sum", {"a": 2, "b": 3})
            assert summed.text == "The sum of 2 and 3 is 5."
            # progress
            steps: list[tuple[float, float | None]] = []
            done = await client.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.1, "steps": 3},
                progress=lambda p: steps.append((p.progress, p.total)),
            )
            assert done.text.startswith("Long running operation completed")
            assert steps == [(1, 3), (2, 3), (3, 3)]
            # read / get / complete / ping
            read = await client.read_resource(resources[0].uri)
            assert read.contents and read.contents[0].uri == resources[0].uri
            prompt = await client.get_prompt("simple-prompt")
            assert prompt.messages[0].content.text == "This is a simple prompt without arguments."
            args = await client.get_prompt("args-prompt", {"city": "Paris"})
            assert "Paris" in args.messages[0].content.text
            completed = await client.complete(prompt_ref("completable-prompt"), "department", "E")
            assert completed.values == ["Engineering"]
            await client.ping()
            await client.subscribe(resources[0].uri)
            await client.unsubscribe(resources[0].uri)
            # sampling and roots answered by the client's handlers
            sampled = await client.call_tool(
                "trigger-sampling-request", {"prompt": "hello", "maxTokens": 10}
            )
            assert "sampled!" in sampled.text and "stub-model" in sampled.text
            rooted = await client.call_tool("get-roots-list")
            assert "file:///interop" in rooted.text
            assert any("Roots updated" in str(m.data) for m in seen.logs)
            # elicitation: 2025-11-25 form with enums; 2025-06-18 cannot carry its schema
            if expected >= "2025-11-25":
                asked = await client.call_tool("trigger-elicitation-request", {})
                assert "Ada" in asked.text and not asked.is_error
            elif expected == "2025-06-18":
                refused = await client.call_tool("trigger-elicitation-request", {})
                assert refused.is_error or "-32602" in refused.text
                assert any(v.rule is Rule.INVALID_PARAMS for v in seen.violations)
            # cancellation
            await cancel_then_go_on(
                client, "trigger-long-running-operation", {"duration": 30, "steps": 2}
            )
            assert (await client.call_tool("echo", {"message": "on"})).text == "Echo: on"
    methods = seen.methods
    assert {"sampling/createMessage", "roots/list"} <= methods
    if expected < "2025-06-18":
        assert seen.violations == []


@needs_everything
async def test_server_everything_refuses_a_client_pinned_to_2026() -> None:
    assert NODE is not None and EVERYTHING is not None
    entry = str(Path(EVERYTHING) / "dist" / "index.js")
    with anyio.fail_after(GUARD):
        with pytest.raises(NegotiationRefused) as refused:
            async with Client.stdio(NODE, [entry, "stdio"], mode="2026-07-28", stderr="discard"):
                pass
    assert refused.value.event.error.code == -32601
