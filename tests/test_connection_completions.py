"""Completers declared with ``@server.completion(...)`` for prompt arguments and
template variables: ``completion/complete``, the ``completions`` capability, the
context of arguments already chosen, the limit of 100 values, and unknown
references."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from mcpspec.runtime.connection import RequestContext, RequestError, Server
from mcpspec.runtime.connection.client import prompt_ref, resource_ref

from .surface_kit import REVISIONS, client_of

pytestmark = pytest.mark.anyio

NAMES = ("Ada", "Alan", "Barbara")


def make_server() -> Server:
    server = Server("completions", "1.0")

    @server.prompt()
    async def greet(name: str, language: str = "en") -> str:
        return f"Greet {name}"

    @server.resource("db://{table}/{id}")
    async def row(table: str, id: str) -> str:
        return f"{table}/{id}"

    @server.resource("config://app")
    async def config() -> str:
        return "{}"

    @server.completion(prompt="greet", argument="name")
    async def names(value: str) -> list[str]:
        return [name for name in NAMES if name.lower().startswith(value.lower())]

    @server.completion(template="db://{table}/{id}", argument="id")
    async def ids(prefix: str, context: dict[str, str], ctx: RequestContext) -> list[str]:
        table = context.get("table", "?")
        return [f"{table}-{n}" for n in range(250) if str(n).startswith(prefix)]

    return server


@pytest.mark.parametrize("revision", REVISIONS)
async def test_completed_in_every_revision(revision: str) -> None:
    async with client_of(make_server(), revision) as client:
        if revision >= "2025-03-26":
            assert client.capabilities.completions is not msgspec.UNSET
        completed = await client.complete(prompt_ref("greet"), "name", "a")
        assert completed.values == ["Ada", "Alan"] and completed.total == 2
        assert not completed.has_more
        # an argument without a completer completes to nothing, and so does a resource
        assert (await client.complete(prompt_ref("greet"), "language", "e")).values == []
        assert (await client.complete(resource_ref("config://app"), "x", "")).values == []
        many = await client.complete(resource_ref("db://{table}/{id}"), "id", "")
        assert len(many.values) == 100 and many.total == 250 and many.has_more
        assert many.values[0] == "?-0"
        if revision >= "2025-06-18":  # the context of arguments came with 2025-06-18
            chosen = await client.complete(
                resource_ref("db://{table}/{id}"), "id", "24", context={"table": "users"}
            )
            assert chosen.values == [f"users-{n}" for n in (24, *range(240, 250))]


@pytest.mark.parametrize("revision", ["2024-11-05", "2026-07-28"])
@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        (prompt_ref("absent"), "no prompt 'absent'"),
        (resource_ref("db://{x}"), "no resource or resource template 'db://{x}'"),
    ],
)
async def test_an_unknown_reference_is_invalid_params(revision: str, ref: Any, reason: str) -> None:
    async with client_of(make_server(), revision) as client:
        with pytest.raises(RequestError) as caught:
            await client.complete(ref, "name", "")
        assert caught.value.code == -32602 and caught.value.data["reason"] == reason


def test_registration_refusals() -> None:
    server = Server()

    async def complete(value: str) -> list[str]:
        return []

    with pytest.raises(TypeError, match="one prompt or one template"):
        server.completion(argument="a")(complete)
    with pytest.raises(TypeError, match="one prompt or one template"):
        server.completion(argument="a", prompt="p", template="t://{a}")(complete)

    async def nothing() -> list[str]:
        return []

    with pytest.raises(TypeError, match="the value typed so far"):
        server.completion(argument="a", prompt="p")(nothing)

    async def extra(value: str, other: str) -> list[str]:
        return []

    with pytest.raises(TypeError, match="'other' is none of them"):
        server.completion(argument="a", prompt="p")(extra)
    with pytest.raises(TypeError, match="coroutine"):
        server.completion(argument="a", prompt="p")(lambda value: [])  # type: ignore[type-var]

    @server.handler("completion/complete")
    async def own(request: Any, ctx: RequestContext) -> Any:
        return {"completion": {"values": []}}

    with pytest.raises(ValueError, match="handler of its own"):
        server.completion(argument="a", prompt="p")(complete)
