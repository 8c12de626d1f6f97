"""Authorization with real parts: ``oidc-provider`` (npm, OpenID certified) under Node 22
issues JWT access tokens for the mcpspec app, protected by a ``JwtVerifier`` that finds
the provider's keys through its metadata; the mcpspec client (authorization code with
dynamic registration, PKCE, ``resource`` and ``iss``; and ``client_credentials``) and
the official Python SDK's OAuth client (``mcp==2.3.0``) complete the flow and call a
tool as the principal the token names; and the mcpspec client completes it against the
SDK's resource server too.

``nox -s interop`` installs the provider and Node (``MCPSPEC_OIDC_PROVIDER``,
``MCPSPEC_NODE``); without them these tests skip, saying why.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from mcpspec.runtime.connection import Client, Server
from mcpspec.runtime.connection.http import AuthSettings, HttpSettings, http_app
from mcpspec.runtime.connection.http.oauth import OAuth
from mcpspec.runtime.connection.http.verifiers import JwtVerifier
from tests.auth_kit import protected_server
from tests.http_kit import free_port, wait_listening
from tests.interop_kit import GUARD, NODE, PEERS, STOP_GRACE, needs_sdk

pytestmark = [pytest.mark.interop, pytest.mark.anyio]
#: uvicorn and the SDK's client run on asyncio.
ANYIO_BACKENDS = ("asyncio",)

OIDC_PROVIDER = os.environ.get("MCPSPEC_OIDC_PROVIDER")
needs_provider = pytest.mark.skipif(
    not (NODE and OIDC_PROVIDER),
    reason="MCPSPEC_NODE and MCPSPEC_OIDC_PROVIDER are not set: run `nox -s interop`",
)
REDIRECT = "http://127.0.0.1:5555/callback"


def build_server() -> Server:
    return protected_server("oidc-protected")


@asynccontextmanager
async def oidc_provider(resources: list[str]) -> AsyncIterator[str]:
    """oidc-provider on loopback, issuing tokens for ``resources``; yields its issuer."""
    assert NODE is not None and OIDC_PROVIDER is not None
    port = free_port()
    async with running(
        [NODE, str(PEERS / "oidc_provider.mjs"), OIDC_PROVIDER, str(port), *resources], port
    ):
        yield f"http://127.0.0.1:{port}"


@asynccontextmanager
async def running(command: list[str], port: int) -> AsyncIterator[None]:
    """``command`` in a subprocess until the block ends, once it listens on ``port``."""
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        await wait_listening(port, process)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@asynccontextmanager
async def deployment() -> AsyncIterator[tuple[str, str]]:
    """oidc-provider and the protected mcpspec app, both on loopback; yields the app's
    URL and the issuer."""
    import uvicorn

    app_port = free_port()
    url = f"http://127.0.0.1:{app_port}/mcp"
    async with oidc_provider([url]) as issuer:
        auth = AuthSettings(
            url,
            (issuer,),
            JwtVerifier(issuer, url),
            scopes_supported=("mcp", "admin"),
            required_scopes=("mcp",),
        )
        app = http_app(build_server(), HttpSettings(auth=auth))
        config = uvicorn.Config(
            app, host="127.0.0.1", port=app_port, log_level="warning", timeout_graceful_shutdown=1
        )
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(server.serve)
            await wait_listening(app_port)
            try:
                yield url, issuer
            finally:
                server.should_exit = True


class FollowingRedirect:
    """The user's browser: follows the provider's redirects (its interactions sign in
    as alice and consent at once) until one leads to the redirect URI."""

    redirect_uri = REDIRECT

    async def __call__(self, authorization_url: str) -> dict[str, str]:
        return await follow_to_redirect(authorization_url)


async def follow_to_redirect(url: str) -> dict[str, str]:
    async with httpx.AsyncClient(timeout=GUARD) as browser:
        for _ in range(10):
            response = await browser.get(url, follow_redirects=False)
            location = response.headers.get("location")
            assert location is not None, f"{response.status_code}: {response.text[:300]}"
            url = urllib.parse.urljoin(url, location)
            if url.startswith(REDIRECT):
                return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    raise AssertionError("the provider never redirected back")


async def whoami(url: str, oauth: OAuth) -> str:
    async with Client.http(url, auth=oauth) as client:
        result = await client.call_tool("whoami", {})
        return str(result.text)


@needs_provider
async def test_the_mcpspec_client_authorizes_with_a_code_at_oidc_provider() -> None:
    with anyio.fail_after(GUARD):
        async with deployment() as (url, _):
            oauth = OAuth(redirect=FollowingRedirect(), client_name="mcpspec interop")
            assert await whoami(url, oauth) == "alice mcp"
            # The token kept serves a second connection.
            assert await whoami(url, oauth) == "alice mcp"


@needs_provider
async def test_the_mcpspec_client_uses_client_credentials_at_oidc_provider() -> None:
    with anyio.fail_after(GUARD):
        async with deployment() as (url, _):
            oauth = OAuth(
                grant="client_credentials",
                client_id="machine",
                client_secret="machine-secret",
                scopes=["mcp"],
            )
            assert await whoami(url, oauth) == "machine mcp"


@needs_provider
async def test_a_token_of_oidc_provider_for_another_resource_is_refused() -> None:
    with anyio.fail_after(GUARD):
        async with deployment() as (url, issuer), httpx.AsyncClient() as http:
            token = await http.post(
                f"{issuer}/token",
                auth=("machine", "machine-secret"),
                data={"grant_type": "client_credentials", "scope": "mcp", "resource": url},
            )
            assert token.status_code == 200, token.text
            access = token.json()["access_token"]
            headers = {
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
            }
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
            good = await http.post(
                url, json=body, headers={**headers, "authorization": f"Bearer {access}"}
            )
            assert good.status_code == 200
            forged = access[:-4] + ("AAAA" if not access.endswith("AAAA") else "BBBB")
            bad = await http.post(
                url, json=body, headers={**headers, "authorization": f"Bearer {forged}"}
            )
            assert bad.status_code == 401


@needs_provider
@needs_sdk
async def test_the_sdk_client_authorizes_at_oidc_provider_for_the_mcpspec_app() -> None:
    import httpx2
    from mcp import ClientSession
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import (
        AuthorizationCodeResult,
        OAuthClientInformationFull,
        OAuthClientMetadata,
        OAuthToken,
    )

    class Storage:
        def __init__(self) -> None:
            self.tokens: OAuthToken | None = None
            self.client: OAuthClientInformationFull | None = None

        async def get_tokens(self) -> OAuthToken | None:
            return self.tokens

        async def set_tokens(self, tokens: OAuthToken) -> None:
            self.tokens = tokens

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return self.client

        async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
            self.client = client_info

    callback: dict[str, Any] = {}

    async def redirect_handler(authorization_url: str) -> None:
        callback.update(await follow_to_redirect(authorization_url))

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=callback["code"], state=callback.get("state"), iss=callback.get("iss")
        )

    with anyio.fail_after(GUARD):
        async with deployment() as (url, _):
            provider = OAuthClientProvider(
                server_url=url,
                client_metadata=OAuthClientMetadata(
                    client_name="sdk interop",
                    redirect_uris=[REDIRECT],  # type: ignore[list-item]
                    grant_types=["authorization_code", "refresh_token"],
                    response_types=["code"],
                    token_endpoint_auth_method="none",
                    application_type="native",
                ),
                storage=Storage(),
                redirect_handler=redirect_handler,
                callback_handler=callback_handler,
            )
            async with (
                httpx2.AsyncClient(auth=provider, timeout=GUARD) as http,
                streamable_http_client(url, http_client=http) as (read, write, *_),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool("whoami", {})
                assert result.content[0].text == "alice mcp"  # type: ignore[union-attr]


@needs_provider
@needs_sdk
async def test_the_mcpspec_client_authorizes_for_the_sdks_resource_server() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = [sys.executable, str(PEERS / "sdk_protected_server.py")]
    with anyio.fail_after(GUARD):
        async with oidc_provider([url]) as issuer, running([*server, issuer, str(port)], port):
            oauth = OAuth(redirect=FollowingRedirect(), client_name="mcpspec interop")
            assert await whoami(url, oauth) == "alice mcp"
