"""Prompts declared with ``@server.prompt()``: arguments from the signature, every
kind of return value, -32602 naming what is wrong, paging, and fields a revision
lacks."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import pytest

from mcpspec.runtime.connection import RequestContext, RequestError, Server

from .surface_kit import REVISIONS, client_of

pytestmark = pytest.mark.anyio


def make_server(**options: Any) -> Server:
    server = Server("prompts", "1.0", **options)

    @server.prompt(title="Greeting")
    async def greet(
        name: Annotated[str, msgspec.Meta(description="Who to greet")], tone: str = "warm"
    ) -> str:
        """Greet someone."""
        return f"Greet {name} in a {tone} tone"

    @server.prompt(name="review")
    async def code_review(code: str, ctx: RequestContext) -> list[Any]:
        return [
            f"Review this ({ctx.revision}):",
            {"role": "assistant", "content": {"type": "text", "text": "Send the code."}},
            {"type": "text", "text": code},
            ctx.types.PromptMessage(role="user", content=ctx.types.TextContent(text="thanks")),
        ]

    @server.prompt()
    async def counted(times: int) -> Any:
        return {"messages": [{"role": "user", "content": {"type": "text", "text": "x" * times}}]}

    @server.prompt(description="Nothing to fill in.")
    async def plain() -> Any:
        return {"role": "user", "content": {"type": "text", "text": "plain"}}

    return server


@pytest.mark.parametrize("revision", REVISIONS)
async def test_listed_and_got_in_every_revision(revision: str) -> None:
    async with client_of(make_server(), revision) as client:
        assert client.capabilities.prompts is not msgspec.UNSET
        prompts = {p.name: p for p in await client.list_prompts()}
        assert list(prompts) == ["greet", "review", "counted", "plain"]
        greet = prompts["greet"]
        assert greet.description == "Greet someone."
        arguments = [msgspec.to_builtins(a) for a in greet.arguments]
        assert arguments == [
            {"name": "name", "description": "Who to greet", "required": True},
            {"name": "tone"},
        ]
        assert (
            (greet.title == "Greeting") if revision >= "2025-06-18" else not hasattr(greet, "title")
        )
        assert prompts["plain"].arguments is msgspec.UNSET

        got = await client.get_prompt("greet", {"name": "Ada"})
        assert got.description == "Greet someone."
        assert [(m.role, m.content.text) for m in got.messages] == [
            ("user", "Greet Ada in a warm tone")
        ]
        got = await client.get_prompt("greet", {"name": "Ada", "tone": "dry"})
        assert got.messages[0].content.text == "Greet Ada in a dry tone"
        review = await client.get_prompt("review", {"code": "x = 1"})
        assert [(m.role, m.content.text) for m in review.messages] == [
            ("user", f"Review this ({revision}):"),
            ("assistant", "Send the code."),
            ("user", "x = 1"),
            ("user", "thanks"),
        ]
        counted = await client.get_prompt("counted", {"times": "3"})
        assert counted.messages[0].content.text == "xxx"
        plain = await client.get_prompt("plain")
        assert plain.messages[0].content.text == "plain" and plain.description == (
            "Nothing to fill in."
        )


@pytest.mark.parametrize("revision", ["2024-11-05", "2026-07-28"])
@pytest.mark.parametrize(
    ("name", "arguments", "reason"),
    [
        ("greet", {}, "prompt 'greet': missing required argument 'name'"),
        ("greet", {"name": "A", "mood": "x"}, "prompt 'greet': no argument 'mood'"),
        ("counted", {"times": "many"}, "prompt 'counted': invalid argument: Expected `int`"),
        ("absent", {}, "unknown prompt 'absent'"),
    ],
)
async def test_wrong_arguments_are_invalid_params_naming_them(
    revision: str, name: str, arguments: dict[str, str], reason: str
) -> None:
    async with client_of(make_server(), revision) as client:
        with pytest.raises(RequestError) as caught:
            await client.get_prompt(name, arguments)
        assert caught.value.code == -32602
        assert caught.value.data["reason"].startswith(reason)
        if name == "counted":
            assert "$.times" in caught.value.data["reason"]
        assert (await client.get_prompt("plain")).messages[0].content.text == "plain"


async def test_prompts_are_paged() -> None:
    server = Server(page_size=3)
    for index in range(7):

        async def prompt() -> str:
            return "x"

        server.prompt(name=f"p{index}")(prompt)
    async with client_of(server, "2025-11-25") as client:
        assert [p.name for p in await client.list_prompts()] == [f"p{i}" for i in range(7)]
        assert [len(page.prompts) async for page in client.prompt_pages()] == [3, 3, 1]
        with pytest.raises(RequestError) as caught:
            await anext(client.prompt_pages("not-a-cursor"))
        assert caught.value.code == -32602


async def test_a_prompt_returning_something_else_is_an_internal_error() -> None:
    server = Server()

    @server.prompt()
    async def odd() -> Any:
        return 3

    async with client_of(server, "2025-06-18") as client:
        with pytest.raises(RequestError) as caught:
            await client.get_prompt("odd")
        assert caught.value.code == -32603


def test_registration_refusals() -> None:
    with pytest.raises(TypeError, match=r"\*args"):
        Server().prompt()(_star)
    server = Server()

    @server.handler("prompts/get")
    async def get(request: Any, ctx: RequestContext) -> Any:
        return {}

    with pytest.raises(ValueError, match="handler of its own"):
        server.prompt()(_plain)
    declared = make_server()
    with pytest.raises(ValueError, match="for the prompts"):
        declared.add_handler("prompts/list", get)


async def _plain() -> str:
    return "x"


async def _star(*parts: str) -> str:
    return "x"
