"""The fail-closed single-revision profile (``HttpSettings.contract``) against the real
app under uvicorn, with a raw HTTP client: one test per row of the status table of the
Streamable HTTP contract (2025-11-25 only, POST only, JSON only, bearer on every
request), with sessions off and on, and the happy path through it.

The helpers at the top (:class:`Watched`, :func:`serving`, the bodies) are shared with
``test_http_security`` and ``test_http_load``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest

from mcpspec.runtime.connection import RequestContext, RequestError, Server
from mcpspec.runtime.connection.http import HttpSettings, http_app
from tests.http_kit import (
    ACCEPT_BOTH,
    GUARD,
    JSON,
    REVISION,
    SETTLE,
    Watched,
    call_tool,
    initialize,
    rpc,
    serving,
)

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token"
ALLOWED_ORIGIN = "https://app.example.com"


#: uvicorn serves on asyncio.
ANYIO_BACKENDS = ("asyncio",)


# -- shared helpers ------------------------------------------------------------------------


def fixture_server() -> Server:
    """A server with an ``echo`` tool and a tool that fails with a JSON-RPC error
    (-32603: any other exception of a tool is an ``isError`` result)."""
    server = Server("http-test-fixture", "1.0")

    @server.tool()
    async def echo(message: str) -> str:
        return message

    @server.tool()
    async def broken() -> str:
        raise RequestError.of(-32603, "the tool fails on purpose")

    return server


def error_code(response: httpx.Response) -> Any:
    """The code of the JSON-RPC error in a response's body."""
    return response.json()["error"]["code"]


# -- the contract profile ------------------------------------------------------------------


def verify(token: str) -> bool:
    return token == TOKEN


@dataclass
class Endpoint:
    """A contract app being served, and a raw client for it."""

    client: httpx.AsyncClient
    sessions: bool
    watched: Watched

    def headers(self, **extra: str) -> dict[str, str]:
        """The headers of a well-formed POST before ``initialize`` completes."""
        return {
            "content-type": JSON,
            "accept": ACCEPT_BOTH,
            "authorization": f"Bearer {TOKEN}",
            **extra,
        }

    async def post(self, body: Any, headers: dict[str, str]) -> httpx.Response:
        return await self.client.post("/mcp", json=body, headers=headers)

    async def open(self) -> dict[str, str]:
        """Initialize (and send ``notifications/initialized``); the headers of every
        later POST."""
        response = await self.post(initialize(), self.headers())
        assert response.status_code == 200, response.text
        assert response.json()["result"]["protocolVersion"] == REVISION
        later = self.headers(**{"mcp-protocol-version": REVISION})
        if self.sessions:
            later["mcp-session-id"] = response.headers["mcp-session-id"]
        else:
            assert "mcp-session-id" not in response.headers
        # Its answer is the business of test_initialized_notification_is_202_empty.
        await self.post(rpc(None, "notifications/initialized"), later)
        return later


@asynccontextmanager
async def contract(
    sessions: bool, verify_token: Callable[[str], Any] = verify, **options: Any
) -> AsyncIterator[Endpoint]:
    settings = HttpSettings.contract(verify_token, sessions=sessions, **options)
    watched = Watched(http_app(fixture_server(), settings))
    async with serving(watched) as base, httpx.AsyncClient(base_url=base, timeout=GUARD) as client:
        yield Endpoint(client, sessions, watched)


SESSIONS = pytest.mark.parametrize("sessions", [False, True], ids=["sessionless", "sessions"])


# -- happy path ------------------------------------------------------------------------------


@SESSIONS
async def test_initialize_then_echo(sessions: bool) -> None:
    async with contract(sessions) as endpoint:
        later = await endpoint.open()
        response = await endpoint.post(call_tool(7, "echo", {"message": "hello"}), later)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith(JSON)
        assert response.json() == {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {"content": [{"type": "text", "text": "hello"}]},
        }
        for n in range(5):
            response = await endpoint.post(call_tool(f"r{n}", "echo", {"message": f"m{n}"}), later)
            assert response.status_code == 200
            assert response.json()["id"] == f"r{n}"
            assert response.json()["result"]["content"][0]["text"] == f"m{n}"
        ping = await endpoint.post(rpc(99, "ping"), later)
        assert ping.status_code == 200 and ping.json() == {"jsonrpc": "2.0", "id": 99, "result": {}}
        assert endpoint.watched.escaped == []


# -- the status table, row by row ------------------------------------------------------------
#
# Each row runs its cases against one served app and reports every case that is off,
# not only the first.


def status_off(response: httpx.Response, status: int) -> str | None:
    """What is wrong with a refusal of the transport (``None``: nothing): the status,
    and no JSON-RPC result inside."""
    if response.status_code != status:
        return f"{response.status_code} (expected {status}): {response.text[:200]}"
    if response.content and "result" in response.json():
        return f"a result in a {status}"
    return None


def assert_no_problems(problems: dict[str, str | None]) -> None:
    off = {case: problem for case, problem in problems.items() if problem is not None}
    assert not off, off


@SESSIONS
async def test_only_post(sessions: bool) -> None:
    async with contract(sessions) as endpoint:
        later = await endpoint.open()
        for method in ("GET", "DELETE", "PUT", "PATCH"):
            response = await endpoint.client.request(method, "/mcp", headers=later)
            assert response.status_code == 405, method
            assert response.headers["allow"] == "POST"


@SESSIONS
async def test_content_type_not_json_is_415(sessions: bool) -> None:
    async with contract(sessions) as endpoint:
        problems = {}
        for content_type in ("text/plain", "application/x-www-form-urlencoded", "", "json"):
            headers = endpoint.headers(**{"content-type": content_type})
            body = b'{"jsonrpc":"2.0","id":0,"method":"ping"}'
            response = await endpoint.client.post("/mcp", content=body, headers=headers)
            problems[content_type] = status_off(response, 415)
        assert_no_problems(problems)
        charset = endpoint.headers(**{"content-type": "application/json; charset=utf-8"})
        assert (await endpoint.post(initialize(), charset)).status_code == 200


@SESSIONS
async def test_accept_lacking_a_type_is_406(sessions: bool) -> None:
    async with contract(sessions) as endpoint:
        later = await endpoint.open()
        problems = {}
        for accept in (JSON, "text/event-stream", "text/html", ""):
            response = await endpoint.post(initialize(), endpoint.headers(accept=accept))
            problems[f"initialize, Accept {accept!r}"] = status_off(response, 406)
            response = await endpoint.post(rpc(1, "ping"), {**later, "accept": accept})
            problems[f"ping, Accept {accept!r}"] = status_off(response, 406)
        assert_no_problems(problems)


BEARER_CASES = {
    "absent": (None, None),
    "empty": ("", None),
    "no-token": ("Bearer", None),
    "basic": ("Basic dXNlcjpwYXNz", None),
    "wrong": ("Bearer wrong-token", "invalid_token"),
    "extended": (f"Bearer {TOKEN}x", "invalid_token"),
}


@SESSIONS
async def test_bearer_missing_or_invalid_is_401(sessions: bool) -> None:
    """On every request, ``initialize`` included, with a ``WWW-Authenticate``
    challenge."""
    async with contract(sessions) as endpoint:
        later = await endpoint.open()
        problems: dict[str, str | None] = {}
        for case, (authorization, error) in BEARER_CASES.items():
            for body, base in ((initialize(), endpoint.headers()), (rpc(3, "ping"), later)):
                headers = {k: v for k, v in base.items() if k != "authorization"}
                if authorization is not None:
                    headers["authorization"] = authorization
                response = await endpoint.post(body, headers)
                where = f"{case}, {body['method']}"
                problems[where] = status_off(response, 401)
                challenge = response.headers.get("www-authenticate", "")
                named = error is None or f'error="{error}"' in challenge
                if not (challenge.lower().startswith("bearer") and named):
                    problems[f"{where}: challenge"] = repr(challenge)
        assert_no_problems(problems)


@SESSIONS
async def test_401_names_the_resource_metadata(sessions: bool) -> None:
    metadata = "https://mcp.example.com/.well-known/oauth-protected-resource"
    async with contract(sessions, resource_metadata=metadata) as endpoint:
        headers = endpoint.headers(authorization="Bearer nope")
        response = await endpoint.post(initialize(), headers)
        assert response.status_code == 401
        assert f'resource_metadata="{metadata}"' in response.headers["www-authenticate"]


@SESSIONS
async def test_origin_not_allowlisted_is_403(sessions: bool) -> None:
    async with contract(sessions, allowed_origins=[ALLOWED_ORIGIN]) as endpoint:
        later = await endpoint.open()
        problems = {}
        for origin in (
            "https://evil.example",
            "http://localhost:3000",
            "null",
            f"{ALLOWED_ORIGIN}.evil.example",
            ALLOWED_ORIGIN.replace("https", "http"),
        ):
            response = await endpoint.post(initialize(), endpoint.headers(origin=origin))
            problems[f"initialize, {origin}"] = status_off(response, 403)
            response = await endpoint.post(rpc(2, "ping"), {**later, "origin": origin})
            problems[f"ping, {origin}"] = status_off(response, 403)
        assert_no_problems(problems)
        listed = await endpoint.post(initialize(), endpoint.headers(origin=ALLOWED_ORIGIN))
        assert listed.status_code == 200


@SESSIONS
async def test_no_origin_is_allowed_by_default_in_the_contract(sessions: bool) -> None:
    async with contract(sessions) as endpoint:
        for origin in ("http://127.0.0.1", "http://localhost:8000"):
            response = await endpoint.post(initialize(), endpoint.headers(origin=origin))
            assert status_off(response, 403) is None, origin
        # Without the header (not a browser), the request is served.
        assert (await endpoint.post(initialize(), endpoint.headers())).status_code == 200


@SESSIONS
async def test_body_over_the_maximum_is_413(sessions: bool) -> None:
    async with contract(sessions, max_body_bytes=2048) as endpoint:
        later = await endpoint.open()
        small = await endpoint.post(call_tool(1, "echo", {"message": "x" * 1000}), later)
        assert small.status_code == 200
        large = await endpoint.post(call_tool(2, "echo", {"message": "x" * 4096}), later)
        assert status_off(large, 413) is None
        # Over the maximum by the headers alone: refused without reading the body.
        read_before = endpoint.watched.body_bytes_read
        declared = await endpoint.client.post(
            "/mcp", content=b"{" + b" " * 5000 + b"}", headers=later
        )
        assert status_off(declared, 413) is None
        assert endpoint.watched.body_bytes_read == read_before


MALFORMED = {
    "invalid-json": b"{not json",
    "empty": b"",
    "string": b'"a string"',
    "number": b"42",
    "null": b"null",
    "batch": b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
    "empty-batch": b"[]",
    "jsonrpc-only": b'{"jsonrpc":"2.0"}',
    "no-method": b'{"jsonrpc":"2.0","id":1}',
    "no-jsonrpc": b'{"id":1,"method":"ping"}',
    "jsonrpc-1.0": b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
    "object-id": b'{"jsonrpc":"2.0","id":{"an":"object"},"method":"ping"}',
    "method-not-string": b'{"jsonrpc":"2.0","id":1,"method":7}',
    "result-and-error": b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}',
    "not-utf8": b"\xff\xfe{}",
}


@SESSIONS
async def test_malformed_body_is_400(sessions: bool) -> None:
    """Invalid JSON, not an object, a batch, an envelope missing (or with invalid)
    required members: 400, before and after ``initialize``."""
    async with contract(sessions) as endpoint:
        later = await endpoint.open()
        problems = {}
        for case, body in MALFORMED.items():
            response = await endpoint.client.post("/mcp", content=body, headers=later)
            problems[f"{case}, after initialize"] = status_off(response, 400)
            before = endpoint.headers()
            response = await endpoint.client.post("/mcp", content=body, headers=before)
            problems[f"{case}, before initialize"] = status_off(response, 400)
        assert_no_problems(problems)
        assert endpoint.watched.escaped == []


@SESSIONS
async def test_post_init_request_without_a_valid_protocol_version_is_400(sessions: bool) -> None:
    async with contract(sessions) as endpoint:
        later = await endpoint.open()
        problems = {}
        for version in (None, "", "2025-06-18", "2025-03-26", "2026-07-28", "bogus"):
            headers = {k: v for k, v in later.items() if k != "mcp-protocol-version"}
            if version is not None:
                headers["mcp-protocol-version"] = version
            response = await endpoint.post(call_tool(5, "echo", {"message": "m"}), headers)
            problems[repr(version)] = status_off(response, 400)
        assert_no_problems(problems)


async def test_missing_session_id_is_400() -> None:
    async with contract(True) as endpoint:
        later = await endpoint.open()
        headers = {k: v for k, v in later.items() if k != "mcp-session-id"}
        response = await endpoint.post(call_tool(5, "echo", {"message": "m"}), headers)
        assert status_off(response, 400) is None
        notification = await endpoint.post(rpc(None, "notifications/initialized"), headers)
        assert status_off(notification, 400) is None


async def test_unknown_session_id_is_404() -> None:
    async with contract(True) as endpoint:
        later = await endpoint.open()
        problems = {}
        for session_id in ("unknown", "A" * 43, "x" * 1000, later["mcp-session-id"][:-1]):
            headers = {**later, "mcp-session-id": session_id}
            response = await endpoint.post(call_tool(5, "echo", {"message": "m"}), headers)
            problems[session_id[:50]] = status_off(response, 404)
        assert_no_problems(problems)


@SESSIONS
async def test_accepted_notification_is_202_empty(sessions: bool) -> None:
    async with contract(sessions) as endpoint:
        later = await endpoint.open()
        for notification in (
            rpc(None, "notifications/cancelled", {"requestId": 12345, "reason": "gone"}),
            rpc(None, "notifications/roots/list_changed"),
        ):
            response = await endpoint.post(notification, later)
            assert response.status_code == 202, (notification, response.text)
            assert response.content == b""


@SESSIONS
async def test_initialized_notification_is_202_empty(sessions: bool) -> None:
    """The client's first notification, as every client sends it after ``initialize``
    (with the ``MCP-Protocol-Version`` of the session)."""
    async with contract(sessions) as endpoint:
        response = await endpoint.post(initialize(), endpoint.headers())
        headers = endpoint.headers(**{"mcp-protocol-version": REVISION})
        if sessions:
            headers["mcp-session-id"] = response.headers["mcp-session-id"]
        initialized = await endpoint.post(rpc(None, "notifications/initialized"), headers)
        assert initialized.status_code == 202, initialized.text
        assert initialized.content == b""


def asking_server() -> Server:
    """A server whose tool ``ask`` elicits a name from the client."""
    server = Server("http-test-asking", "1.0")

    @server.tool()
    async def ask(ctx: RequestContext) -> str:
        answer = await ctx.elicit(
            message="Your name?",
            requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
        )
        return f"{answer.action}: {(answer.content or {}).get('name')}"

    return server


async def test_accepted_response_is_202_empty() -> None:
    """The client's answer to a request of the server is taken with 202 and an empty
    body. (The contract profile has no stream to carry a server's request, so this
    runs with the default settings: the request arrives on the POST's SSE stream.)"""
    app = http_app(asking_server())
    async with serving(app) as base, httpx.AsyncClient(base_url=base, timeout=GUARD) as client:
        headers = {"content-type": JSON, "accept": ACCEPT_BOTH}
        opening = initialize()
        opening["params"]["capabilities"] = {"elicitation": {}}
        opened = await client.post("/mcp", json=opening, headers=headers)
        headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        headers["mcp-protocol-version"] = REVISION
        await client.post("/mcp", json=rpc(None, "notifications/initialized"), headers=headers)
        with anyio.fail_after(GUARD):
            async with client.stream(
                "POST", "/mcp", json=call_tool(1, "ask", {}), headers=headers
            ) as stream:
                lines = stream.aiter_lines()
                asked = None
                async for line in lines:
                    if line.startswith("data:") and "elicitation/create" in line:
                        asked = json.loads(line[5:])
                        break
                assert asked is not None
                answer = {
                    "jsonrpc": "2.0",
                    "id": asked["id"],
                    "result": {"action": "accept", "content": {"name": "Ada"}},
                }
                taken = await client.post("/mcp", json=answer, headers=headers)
                assert taken.status_code == 202, taken.text
                assert taken.content == b""
                result = None
                async for line in lines:
                    if line.startswith("data:") and '"result"' in line:
                        result = json.loads(line[5:])
                        break
        assert result is not None
        assert result["id"] == 1
        assert result["result"]["content"][0]["text"] == "accept: Ada"


@SESSIONS
async def test_server_request_without_a_stream_does_not_hang(sessions: bool) -> None:
    """The contract profile answers with JSON only and has no ``GET`` stream: a
    request of the server (here an elicitation) has no way to the client, and the
    call that made it must still be answered (an error inside a 200), not hang."""
    settings = HttpSettings.contract(verify, sessions=sessions)
    app = http_app(asking_server(), settings)
    async with serving(app) as base, httpx.AsyncClient(base_url=base, timeout=GUARD) as client:
        endpoint = Endpoint(client, sessions, Watched(app))
        opening = initialize()
        opening["params"]["capabilities"] = {"elicitation": {}}
        opened = await endpoint.post(opening, endpoint.headers())
        later = endpoint.headers(**{"mcp-protocol-version": REVISION})
        if sessions:
            later["mcp-session-id"] = opened.headers["mcp-session-id"]
        await endpoint.post(rpc(None, "notifications/initialized"), later)
        with anyio.move_on_after(SETTLE) as guard:
            response = await endpoint.post(call_tool(1, "ask", {}), later)
        assert not guard.cancelled_caught, "the call waits for ever for an answer no one can send"
        assert response.status_code == 200
        assert response.json()["id"] == 1


@SESSIONS
async def test_notification_is_never_answered_in_a_200(sessions: bool) -> None:
    """A notification has no response: taken, it is 202 with an empty body; refused,
    a 4xx. A JSON-RPC error inside a 200 answers a message that has no answer."""
    async with contract(sessions) as endpoint:
        later = await endpoint.open()
        problems: dict[str, str | None] = {}
        for notification in (
            rpc(None, "notifications/no/such/thing"),
            rpc(None, "notifications/progress", {"progressToken": "never-issued", "progress": 1}),
        ):
            response = await endpoint.post(notification, later)
            accepted = response.status_code == 202 and response.content == b""
            refused = 400 <= response.status_code < 500
            problems[notification["method"]] = (
                None if accepted or refused else f"{response.status_code}: {response.text[:200]}"
            )
        assert_no_problems(problems)


@SESSIONS
async def test_request_is_200_json(sessions: bool) -> None:
    async with contract(sessions) as endpoint:
        later = await endpoint.open()
        response = await endpoint.post(rpc("p", "ping"), later)
        assert response.status_code == 200
        assert response.headers["content-type"].split(";")[0] == JSON
        assert response.json() == {"jsonrpc": "2.0", "id": "p", "result": {}}


IN_A_200 = {
    "unknown-tool": (call_tool(11, "no-such-tool", {}), -32602),
    "tool-raises": (call_tool(11, "broken", {}), -32603),
    "unknown-method": (rpc(11, "no/such/method", {}), -32601),
    "params-missing-name": (rpc(11, "tools/call", {"arguments": {}}), -32602),
    "unhandled-method": (rpc(11, "resources/read", {"uri": "test://nothing"}), -32601),
}


@SESSIONS
async def test_jsonrpc_errors_travel_inside_a_200(sessions: bool) -> None:
    """A well-formed request is answered with a JSON-RPC response: its error travels
    inside a 200, with the request's id."""
    async with contract(sessions) as endpoint:
        later = await endpoint.open()
        problems: dict[str, str | None] = {}
        for case, (body, code) in IN_A_200.items():
            response = await endpoint.post(body, later)
            problem = status_off(response, 200)
            if problem is None:
                answer = response.json()
                if answer.get("id") != 11 or answer.get("error", {}).get("code") != code:
                    problem = f"expected error {code} for id 11: {response.text[:200]}"
            problems[case] = problem
        assert_no_problems(problems)


@SESSIONS
async def test_initialize_with_another_version_is_invalid_params(sessions: bool) -> None:
    async with contract(sessions) as endpoint:
        for version in ("2025-06-18", "2025-03-26", "2024-11-05", "2026-07-28", "9"):
            response = await endpoint.post(initialize(4, version), endpoint.headers())
            assert response.status_code == 200, (version, response.text)
            answer = response.json()
            assert answer["id"] == 4
            assert answer["error"]["code"] == -32602
            assert "mcp-session-id" not in response.headers


async def test_initialize_on_a_live_session_is_refused() -> None:
    async with contract(True) as endpoint:
        later = await endpoint.open()
        response = await endpoint.post(initialize(9), later)
        assert response.status_code == 400


# -- unexpected failures ---------------------------------------------------------------------


class VerifierDown(Exception):
    """The token verifier's backend failed."""


def failing_verifier(token: str) -> bool:
    if token == "trips-the-verifier":
        raise VerifierDown("the token service is unreachable")
    return token == TOKEN


@SESSIONS
async def test_unexpected_failure_before_a_response_is_500(sessions: bool) -> None:
    """A verifier that fails (its backend is down) is no reason to let the request in
    nor to call the token bad: the answer is 500."""
    async with contract(sessions, verify_token=failing_verifier) as endpoint:
        headers = endpoint.headers(authorization="Bearer trips-the-verifier")
        response = await endpoint.post(initialize(), headers)
        assert response.status_code == 500
        # The endpoint goes on serving.
        assert (await endpoint.post(initialize(), endpoint.headers())).status_code == 200


@SESSIONS
async def test_unexpected_failure_is_answered_by_the_app(sessions: bool) -> None:
    """The 500 comes from the app itself (a JSON-RPC error without id, like its other
    refusals), not from the ASGI server catching an exception that escaped it."""
    async with contract(sessions, verify_token=failing_verifier) as endpoint:
        headers = endpoint.headers(authorization="Bearer trips-the-verifier")
        response = await endpoint.post(initialize(), headers)
        assert response.status_code == 500
        assert endpoint.watched.statuses == [500]
        assert endpoint.watched.escaped == []
        assert response.json()["id"] is None


async def test_async_verifier_is_awaited() -> None:
    seen: list[str] = []

    async def verify_later(token: str) -> bool:
        await anyio.sleep(0)
        seen.append(token)
        return token == TOKEN

    async with contract(False, verify_token=verify_later) as endpoint:
        later = await endpoint.open()
        bad = await endpoint.post(rpc(1, "ping"), {**later, "authorization": "Bearer no"})
        assert bad.status_code == 401
        assert seen.count(TOKEN) == 2 and seen[-1] == "no"


def test_contract_settings_are_fail_closed() -> None:
    settings = HttpSettings.contract(verify)
    assert settings.revisions == (REVISION,)
    assert settings.json_response and not settings.standalone_stream
    assert not settings.allow_delete and not settings.batches
    assert settings.require_protocol_version and settings.strict_initialize
    assert settings.allowed_origins == frozenset()
    assert settings.verify_token is verify
