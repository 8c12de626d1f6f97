"""The OAuth 2.1 client (``Client.http(url, auth=OAuth(...))``) against the mcpspec app
protected by a JwtVerifier, with an authorization server in memory that checks what a
client must send (PKCE S256, ``resource``, client authentication) and that a test can
make hostile."""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import os
import secrets
import stat
import time
import urllib.parse
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from mcpspec.runtime.connection import Client, Server
from mcpspec.runtime.connection.http import AuthSettings, HttpSettings, http_app
from mcpspec.runtime.connection.http.oauth import (
    AuthorizationFailed,
    DiscoveryError,
    OAuth,
    PrivateKeyJwt,
    TokenResponseError,
)
from mcpspec.runtime.connection.http.oauth_discovery import parse_challenge
from mcpspec.runtime.connection.http.oauth_redirect import LoopbackRedirect
from mcpspec.runtime.connection.http.oauth_store import FileTokenStore, MemoryTokenStore
from mcpspec.runtime.connection.http.verifiers import JwtVerifier
from tests.auth_kit import protected_server
from tests.http_kit import ACCEPT_BOTH, GUARD, JSON, initialize, serving

pytestmark = pytest.mark.anyio
ANYIO_BACKENDS = ("asyncio",)

ISSUER = "https://auth.example.com"
SIGNING_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
CLIENT_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


class AuthorizationServer:
    """An OAuth 2.1 authorization server in memory (see the module)."""

    def __init__(self) -> None:
        self.hits: collections.Counter[str] = collections.Counter()
        self.codes: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, dict[str, Any]] = {}
        self.clients: dict[str, dict[str, Any]] = {
            "machine": {"secret": "machine-secret"},
            "signed": {"jwk": json.loads(RSAAlgorithm.to_jwk(CLIENT_KEY.public_key()))},
        }
        self.expires_in = 300
        self.metadata_issuer = ISSUER
        self.token_mode = "ok"
        self.redirect_mode = "ok"
        self.resources: list[str] = []
        self.subject = "alice"

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.metadata_issuer,
            "authorization_endpoint": f"{ISSUER}/authorize",
            "token_endpoint": f"{ISSUER}/token",
            "registration_endpoint": f"{ISSUER}/register",
            "jwks_uri": f"{ISSUER}/jwks",
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_basic",
                "private_key_jwt",
            ],
        }

    async def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.hits[path] += 1
        if path == "/.well-known/oauth-authorization-server":
            return httpx.Response(200, json=self.metadata())
        if path == "/jwks":
            jwk = json.loads(RSAAlgorithm.to_jwk(SIGNING_KEY.public_key()))
            return httpx.Response(200, json={"keys": [{**jwk, "kid": "as1", "alg": "RS256"}]})
        if path == "/register":
            body = json.loads(request.content)
            client_id = f"dyn-{len(self.clients)}"
            self.clients[client_id] = {"redirect_uris": body.get("redirect_uris", [])}
            return httpx.Response(201, json={"client_id": client_id, **body})
        if path == "/token":
            return self.token(request)
        return httpx.Response(404)

    def authorize(self, url: str) -> dict[str, str]:
        """What the user's browser would bring back from the authorization URL."""
        self.hits["/authorize"] += 1
        params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        assert params["response_type"] == "code"
        assert params["code_challenge_method"] == "S256"
        assert params["client_id"] in self.clients
        code = secrets.token_urlsafe(16)
        self.codes[code] = params
        answer = {"code": code, "state": params["state"], "iss": ISSUER}
        if self.redirect_mode == "bad-state":
            answer["state"] = "forged"
        if self.redirect_mode == "bad-iss":
            answer["iss"] = "https://evil.example.com"
        return answer

    def token(self, request: httpx.Request) -> httpx.Response:
        if self.token_mode == "garbage":
            return httpx.Response(200, json={"access_token": 42, "token_type": "mac"})
        if self.token_mode == "huge":
            return httpx.Response(200, content=b"{" + b" " * (50 * 1024 * 1024) + b"}")
        form = dict(urllib.parse.parse_qsl(request.content.decode()))
        client_id = self.authenticate(request, form)
        if client_id is None:
            return httpx.Response(401, json={"error": "invalid_client"})
        grant = form["grant_type"]
        if grant == "authorization_code":
            params = self.codes.pop(form["code"], None)
            if params is None:
                return httpx.Response(400, json={"error": "invalid_grant"})
            digest = hashlib.sha256(form["code_verifier"].encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).decode().rstrip("=")
            if (
                challenge != params["code_challenge"]
                or form["redirect_uri"] != params["redirect_uri"]
            ):
                return httpx.Response(400, json={"error": "invalid_grant"})
            if form.get("resource") != params.get("resource"):
                return httpx.Response(400, json={"error": "invalid_target"})
            scope = params.get("scope", "")
        elif grant == "refresh_token":
            granted = self.refresh.pop(form["refresh_token"], None)
            if granted is None:
                return httpx.Response(400, json={"error": "invalid_grant"})
            scope = granted["scope"]
        elif grant == "client_credentials":
            scope = form.get("scope", "")
        else:
            return httpx.Response(400, json={"error": "unsupported_grant_type"})
        resource = form.get("resource", "")
        self.resources.append(resource)
        now = int(time.time())
        subject = self.subject if grant != "client_credentials" else client_id
        access = jwt.encode(
            {
                "iss": ISSUER,
                "aud": resource,
                "sub": subject,
                "client_id": client_id,
                "scope": scope,
                "iat": now,
                "exp": now + self.expires_in,
            },
            SIGNING_KEY,
            algorithm="RS256",
            headers={"kid": "as1"},
        )
        refresh = secrets.token_urlsafe(16)
        self.refresh[refresh] = {"scope": scope}
        return httpx.Response(
            200,
            json={
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": self.expires_in,
                "refresh_token": refresh,
                "scope": scope,
            },
        )

    def authenticate(self, request: httpx.Request, form: dict[str, str]) -> str | None:
        header = request.headers.get("authorization")
        if header is not None:
            user, _, secret = base64.b64decode(header.split()[1]).decode().partition(":")
            user, secret = urllib.parse.unquote(user), urllib.parse.unquote(secret)
            known = self.clients.get(user)
            return user if known is not None and known.get("secret") == secret else None
        client_id = form.get("client_id")
        if client_id is None or client_id not in self.clients:
            return None
        if form.get("client_assertion_type"):
            key = jwt.PyJWK(self.clients[client_id]["jwk"], algorithm="RS256")
            try:
                claims = jwt.decode(
                    form["client_assertion"], key.key, algorithms=["RS256"], audience=ISSUER
                )
            except jwt.PyJWTError:
                return None
            return client_id if claims["iss"] == claims["sub"] == client_id else None
        return client_id if "secret" not in self.clients[client_id] else None


class Routed(httpx.AsyncBaseTransport):
    """The authorization server's host to the memory server; the rest to the network
    (the app, on loopback)."""

    def __init__(self, server: AuthorizationServer) -> None:
        self.memory = httpx.MockTransport(server.handle)
        self.network = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.host == "auth.example.com":
            return await self.memory.handle_async_request(request)
        return await self.network.handle_async_request(request)

    async def aclose(self) -> None:
        await self.network.aclose()


class BrowserStandIn:
    """A redirect handler that lets the authorization server approve at once."""

    redirect_uri = "http://127.0.0.1:5555/callback"

    def __init__(self, server: AuthorizationServer) -> None:
        self.server = server

    async def __call__(self, authorization_url: str) -> Mapping[str, str]:
        return self.server.authorize(authorization_url)


def build_server() -> Server:
    return protected_server("oauth-target")


@asynccontextmanager
async def protected(authority: AuthorizationServer) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    """The app protected by a JwtVerifier of the memory issuer; yields its URL and an
    HTTP client that reaches both."""
    http = httpx.AsyncClient(transport=Routed(authority), timeout=GUARD)
    async with http:
        # The resource is known once the port is: the app is built in two steps.
        holder: dict[str, Any] = {}

        async def app(scope: Any, receive: Any, send: Any) -> None:
            await holder["app"](scope, receive, send)

        async with serving(_Lifespan(holder, app)) as base:
            url = f"{base}/mcp"
            verifier = JwtVerifier(ISSUER, url, http=http)
            auth = AuthSettings(
                url,
                (ISSUER,),
                verifier,
                scopes_supported=("mcp", "admin"),
                required_scopes=("mcp",),
            )
            holder["app"] = http_app(build_server(), HttpSettings(auth=auth))
            await holder["started"].wait()
            yield url, http


class _Lifespan:
    """Passes the lifespan to the app once it is built (after the port is known)."""

    def __init__(self, holder: dict[str, Any], app: Any) -> None:
        self.holder = holder
        self.app = app
        holder["started"] = anyio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            message = await receive()
            assert message["type"] == "lifespan.startup"
            await send({"type": "lifespan.startup.complete"})
            while "app" not in self.holder:
                await anyio.sleep(0.01)
            app = self.holder["app"]
            async with app.running():
                self.holder["started"].set()
                message = await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        await self.app(scope, receive, send)


async def whoami(url: str, oauth: OAuth) -> str:
    async with Client.http(url, auth=oauth) as client:
        result = await client.call_tool("whoami", {})
        return str(result.content[0].text)


# -- the flows ------------------------------------------------------------------------------


async def test_authorization_code_with_pkce_registration_and_resource() -> None:
    authority = AuthorizationServer()
    async with protected(authority) as (url, http):
        oauth = OAuth(redirect=BrowserStandIn(authority), http=http)
        assert await whoami(url, oauth) == "alice mcp"
        assert authority.hits["/register"] == 1
        assert authority.hits["/authorize"] == 1
        assert authority.resources == [url]  # RFC 8707: the token is for this server
        # The kept token serves the next connection: no new authorization.
        assert await whoami(url, oauth) == "alice mcp"
        assert authority.hits["/authorize"] == 1


async def test_an_expiring_token_is_refreshed_not_reauthorized() -> None:
    authority = AuthorizationServer()
    authority.expires_in = 5  # within the client's margin: refreshed before each use
    async with protected(authority) as (url, http):
        oauth = OAuth(redirect=BrowserStandIn(authority), http=http)
        assert await whoami(url, oauth) == "alice mcp"
        before = authority.hits["/token"]
        assert await whoami(url, oauth) == "alice mcp"
        assert authority.hits["/authorize"] == 1
        assert authority.hits["/token"] > before


async def test_insufficient_scope_steps_up_once_with_the_union() -> None:
    authority = AuthorizationServer()
    async with protected(authority) as (url, http):
        oauth = OAuth(redirect=BrowserStandIn(authority), http=http)
        async with Client.http(url, auth=oauth) as client:
            result = await client.call_tool("shutdown", {})
            assert result.content[0].text == "shut down"
            mine = await client.call_tool("whoami", {})
            assert mine.content[0].text == "alice admin mcp"
        assert authority.hits["/authorize"] == 2
        assert json.loads(json.dumps(await oauth.store.load(url.lower())))["tokens"]["scope"] in (
            "admin mcp",
        )


async def test_client_credentials_with_a_secret_and_with_private_key_jwt() -> None:
    authority = AuthorizationServer()
    async with protected(authority) as (url, http):
        secret = OAuth(
            grant="client_credentials",
            client_id="machine",
            client_secret="machine-secret",
            scopes=["mcp"],
            http=http,
        )
        assert await whoami(url, secret) == "machine mcp"
        signed = OAuth(
            grant="client_credentials",
            client_id="signed",
            private_key_jwt=PrivateKeyJwt(CLIENT_KEY),
            scopes=["mcp"],
            http=http,
        )
        assert await whoami(url, signed) == "signed mcp"
        wrong = OAuth(
            grant="client_credentials",
            client_id="machine",
            client_secret="guess",
            http=http,
        )
        async with httpx.AsyncClient(transport=Routed(authority), auth=wrong) as raw:
            with pytest.raises(TokenResponseError) as caught:
                await raw.post(url, json=initialize(), headers=_headers())
            assert caught.value.error == "invalid_client"
            assert "guess" not in str(caught.value)


def _headers() -> dict[str, str]:
    return {"content-type": JSON, "accept": ACCEPT_BOTH}


# -- a hostile or mistaken authorization server ----------------------------------------------


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("bad-state", AuthorizationFailed),
        ("bad-iss", AuthorizationFailed),
        ("garbage", TokenResponseError),
        ("huge", TokenResponseError),
        ("other-issuer", DiscoveryError),
    ],
)
async def test_a_hostile_authorization_server_is_a_typed_error(
    mode: str, error: type[Exception]
) -> None:
    authority = AuthorizationServer()
    if mode.startswith("bad-"):
        authority.redirect_mode = mode
    elif mode == "other-issuer":
        authority.metadata_issuer = "https://evil.example.com"
    else:
        authority.token_mode = mode
    async with protected(authority) as (url, http):
        oauth = OAuth(redirect=BrowserStandIn(authority), http=http)
        async with httpx.AsyncClient(transport=Routed(authority), auth=oauth) as raw:
            with anyio.fail_after(GUARD), pytest.raises(error):
                await raw.post(url, json=initialize(), headers=_headers())


async def test_resource_metadata_for_another_resource_is_refused() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/.well-known/oauth-protected-resource"):
            return httpx.Response(
                200,
                json={
                    "resource": "https://other.example.com/mcp",
                    "authorization_servers": [ISSUER],
                },
            )
        return httpx.Response(401, headers={"www-authenticate": "Bearer"})

    metadata_client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    oauth = OAuth(
        grant="client_credentials", client_id="machine", client_secret="s", http=metadata_client
    )
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler), auth=oauth) as raw:
        with pytest.raises(DiscoveryError, match="another resource"):
            await raw.post("https://mcp.example.com/mcp", json={})


async def test_an_authorization_server_over_plain_http_is_refused() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/.well-known/oauth-protected-resource"):
            return httpx.Response(
                200,
                json={
                    "resource": "https://mcp.example.com/mcp",
                    "authorization_servers": ["http://auth.example.com"],
                },
            )
        return httpx.Response(401, headers={"www-authenticate": "Bearer"})

    metadata_client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    oauth = OAuth(
        grant="client_credentials", client_id="machine", client_secret="s", http=metadata_client
    )
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler), auth=oauth) as raw:
        with pytest.raises(DiscoveryError, match="HTTPS"):
            await raw.post("https://mcp.example.com/mcp", json={})


# -- parts ----------------------------------------------------------------------------------


def test_challenges_are_parsed() -> None:
    challenge = parse_challenge(
        'Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/y"'
    )
    assert (challenge.error, challenge.scope, challenge.resource_metadata) == (
        "insufficient_scope",
        "a b",
        "https://x/y",
    )
    assert parse_challenge('Basic realm="x", Bearer scope=mcp').scope == "mcp"
    assert parse_challenge("Basic realm=x").scope is None
    assert parse_challenge(None) == parse_challenge("")


async def test_the_file_store_is_private_and_keeps_what_it_was_given(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    await store.save("https://a/mcp", {"tokens": {"access_token": "t"}})
    await store.save("https://b/mcp", {"tokens": {"access_token": "u"}})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = FileTokenStore(path)
    assert await again.load("https://a/mcp") == {"tokens": {"access_token": "t"}}
    assert await again.load("https://c/mcp") is None
    path.write_text("not json")
    assert await again.load("https://a/mcp") is None
    memory = MemoryTokenStore()
    await memory.save("k", {"x": 1})
    assert await memory.load("k") == {"x": 1}


async def test_the_loopback_redirect_takes_the_callback() -> None:
    async with LoopbackRedirect(show=lambda url: None, timeout=GUARD) as redirect:
        assert redirect.redirect_uri.startswith("http://127.0.0.1:")

        async def browser() -> None:
            async with httpx.AsyncClient() as client:
                base = redirect.redirect_uri.rsplit("/", 1)[0]
                await client.get(f"{base}/favicon.ico")  # not the callback: ignored
                await client.get(f"{redirect.redirect_uri}?code=c1&state=s1&iss=https%3A%2F%2Fa")

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(browser)
            params = await redirect("https://auth.example.com/authorize?x=1")
        assert params == {"code": "c1", "state": "s1", "iss": "https://a"}


def test_the_authorization_code_grant_needs_a_redirect() -> None:
    with pytest.raises(ValueError, match="redirect"):
        OAuth()
