"""The HTTP client on ``httpx2`` (``Client.http(..., http_client=httpx2.AsyncClient())``):
the library of a client is told apart, timeouts of either library are converted, and the
client resumes a broken stream, falls back to HTTP+SSE and turns ``httpx2``'s transport
failures into the failures the ``httpx`` client gives. (Every era against this
project's app on ``httpx2`` is in ``test_http_client.py``.)"""

from __future__ import annotations

import socket

import httpx
import httpx2
import pytest

from mcpspec.runtime.connection import Client, NegotiationRefused
from mcpspec.runtime.connection.http.library import library_of, timeout_of
from tests.http_client_kit import GUARD, LegacyServer, breaking_stream, serving

pytestmark = pytest.mark.anyio
#: uvicorn serves on asyncio.
ANYIO_BACKENDS = ("asyncio",)


async def test_the_library_of_a_client() -> None:
    assert library_of(None).name == "httpx"
    async with httpx.AsyncClient() as plain, httpx2.AsyncClient() as successor:
        assert library_of(plain).error is httpx.HTTPError
        library = library_of(successor)
        assert (library.name, library.error, library.timeout) == (
            "httpx2",
            httpx2.HTTPError,
            httpx2.Timeout,
        )
        assert library.client_default is httpx2.USE_CLIENT_DEFAULT

    class Subclassed(httpx2.AsyncClient):
        pass

    async with Subclassed() as subclassed:
        assert library_of(subclassed).name == "httpx2"
    with pytest.raises(TypeError, match=r"httpx2\.AsyncClient, not builtins\.object"):
        library_of(object())


def test_a_timeout_of_either_library_is_converted() -> None:
    library = library_of(httpx2.AsyncClient())
    converted = timeout_of(library, httpx.Timeout(3.0, connect=1.0))
    assert isinstance(converted, httpx2.Timeout)
    assert converted.as_dict() == {"connect": 1.0, "read": 3.0, "write": 3.0, "pool": 3.0}
    same = httpx2.Timeout(2.0)
    assert timeout_of(library, same) is same
    assert timeout_of(library, 4.0).as_dict()["read"] == 4.0
    assert timeout_of(library, None).as_dict()["connect"] is None


async def test_a_transport_failure_is_caught() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there
    async with httpx2.AsyncClient() as http:
        with pytest.raises(NegotiationRefused) as raised:
            async with Client.http(f"http://127.0.0.1:{port}/mcp", mode="legacy", http_client=http):
                pass
    assert "HTTP request failed: ConnectError" in str(raised.value)


async def test_a_broken_response_stream_resumes() -> None:
    scripted = breaking_stream()
    async with (
        serving(scripted.app()) as base,
        httpx2.AsyncClient() as http,
        Client.http(f"{base}/mcp", mode="2025-11-25", http_client=http) as client,
    ):
        assert (await client.call_tool("echo", {"text": "x"})).text == "resumed"


async def test_the_fallback_to_http_sse() -> None:
    legacy = LegacyServer()
    async with (
        serving(legacy.app()) as base,
        httpx2.AsyncClient() as http,
        Client.http(f"{base}/mcp", open_timeout=GUARD, http_client=http) as client,
    ):
        assert (client.revision, client.transport.transport) == ("2024-11-05", "sse")
        assert (await client.call_tool("echo", {"text": "x"})).text == "legacy x"
