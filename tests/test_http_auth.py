"""The HTTP app as an OAuth 2.1 resource server (``HttpSettings(auth=...)``): its
Protected Resource Metadata, 401 and 403 challenges, the principal on the request
context, per-tool scopes, and sessions bound to the principal that made them."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from mcpspec.runtime.connection import Server
from mcpspec.runtime.connection.context import InputState
from mcpspec.runtime.connection.errors import RequestError
from mcpspec.runtime.connection.http import (
    AuthSettings,
    HttpSettings,
    Principal,
    VerifierUnavailable,
    http_app,
)
from mcpspec.runtime.connection.principal import principal_scope, sealing_key
from tests.auth_kit import protected_server
from tests.http_kit import (
    ACCEPT_BOTH,
    GUARD,
    JSON,
    REVISION,
    STATELESS,
    STATELESS_META,
    Watched,
    call_tool,
    initialize,
    rpc,
    serving,
)

pytestmark = pytest.mark.anyio
ANYIO_BACKENDS = ("asyncio",)

RESOURCE = "http://127.0.0.1/mcp"
ISSUER = "https://auth.example.com"
BASE = {"content-type": JSON, "accept": ACCEPT_BOTH}

#: The tokens the test verifier knows, and whom they stand for.
PRINCIPALS = {
    "token-alice": Principal("alice", "app", frozenset({"mcp", "admin"}), issuer=ISSUER),
    "token-alice-2": Principal("alice", "app", frozenset({"mcp"}), issuer=ISSUER),
    "token-bob": Principal("bob", "app", frozenset({"mcp"}), issuer=ISSUER),
    "token-carol-noscope": Principal("carol", "app", frozenset(), issuer=ISSUER),
}


def verify(token: str) -> Principal | None:
    return PRINCIPALS.get(token)


def build_server() -> Server:
    return protected_server("auth-test")


def settings(**options: Any) -> HttpSettings:
    auth = AuthSettings(
        resource=RESOURCE,
        authorization_servers=(ISSUER,),
        verifier=verify,
        scopes_supported=("mcp", "admin"),
        required_scopes=("mcp",),
        max_total_sessions=options.pop("max_total_sessions", 16384),
    )
    return HttpSettings(auth=auth, **options)


@asynccontextmanager
async def served(
    config: HttpSettings | None = None, server: Server | None = None
) -> AsyncIterator[tuple[httpx.AsyncClient, Watched]]:
    watched = Watched(http_app(server or build_server(), config or settings()))
    async with serving(watched) as base, httpx.AsyncClient(base_url=base, timeout=GUARD) as client:
        yield client, watched


def bearer(token: str) -> dict[str, str]:
    return {**BASE, "authorization": f"Bearer {token}"}


async def open_session(client: httpx.AsyncClient, token: str) -> dict[str, str]:
    response = await client.post("/mcp", json=initialize(), headers=bearer(token))
    assert response.status_code == 200, response.text
    headers = {
        **bearer(token),
        "mcp-session-id": response.headers["mcp-session-id"],
        "mcp-protocol-version": REVISION,
    }
    done = await client.post("/mcp", json=rpc(None, "notifications/initialized"), headers=headers)
    assert done.status_code == 202
    return headers


def result_of(response: httpx.Response) -> Any:
    """The JSON-RPC message of a response (JSON, or the last event of an SSE stream)."""
    if response.headers["content-type"].startswith("text/event-stream"):
        datas = [line[5:].strip() for line in response.text.splitlines() if line[:5] == "data:"]
        return json.loads([d for d in datas if d][-1])
    return response.json()


def challenge_params(value: str) -> dict[str, str]:
    scheme, _, rest = value.partition(" ")
    assert scheme == "Bearer"
    out = {}
    for part in rest.split(", "):
        name, _, quoted = part.partition("=")
        out[name] = quoted.strip('"')
    return out


# -- metadata and challenges -----------------------------------------------------------------


async def test_protected_resource_metadata_is_served_at_both_well_known_paths() -> None:
    async with served() as (client, _):
        for path in (
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
        ):
            response = await client.get(path)
            assert response.status_code == 200, path
            assert response.headers["access-control-allow-origin"] == "*"
            document = response.json()
            assert document["resource"] == RESOURCE
            assert document["authorization_servers"] == [ISSUER]
            assert document["scopes_supported"] == ["mcp", "admin"]
            assert document["bearer_methods_supported"] == ["header"]
        assert (await client.post("/.well-known/oauth-protected-resource")).status_code == 405
        assert (await client.get("/.well-known/oauth-protected-resource/other")).status_code == 404


async def test_no_token_is_401_naming_the_metadata_and_scopes() -> None:
    async with served() as (client, _):
        response = await client.post("/mcp", json=initialize(), headers=BASE)
        assert response.status_code == 401
        params = challenge_params(response.headers["www-authenticate"])
        assert params["resource_metadata"] == (
            "http://127.0.0.1/.well-known/oauth-protected-resource/mcp"
        )
        assert params["scope"] == "mcp"
        assert "error" not in params


async def test_an_unknown_token_is_401_invalid_token() -> None:
    async with served() as (client, _):
        response = await client.post("/mcp", json=initialize(), headers=bearer("forged"))
        assert response.status_code == 401
        assert challenge_params(response.headers["www-authenticate"])["error"] == "invalid_token"


async def test_a_token_without_the_required_scopes_is_403_insufficient_scope() -> None:
    async with served() as (client, _):
        response = await client.post(
            "/mcp", json=initialize(), headers=bearer("token-carol-noscope")
        )
        assert response.status_code == 403
        params = challenge_params(response.headers["www-authenticate"])
        assert params["error"] == "insufficient_scope"
        assert params["scope"] == "mcp"


async def test_a_token_in_the_url_query_is_refused_even_with_a_header() -> None:
    async with served() as (client, _):
        for url in ("/mcp?access_token=token-alice", "/mcp?x=1&ACCESS_TOKEN=token-alice"):
            response = await client.post(url, json=initialize(), headers=bearer("token-alice"))
            assert response.status_code == 400, url
            assert "token-alice" not in response.text


async def test_a_verifier_that_cannot_judge_now_is_503_not_401() -> None:
    def unavailable(token: str) -> Principal | None:
        raise VerifierUnavailable("the issuer's keys cannot be fetched")

    auth = AuthSettings(RESOURCE, (ISSUER,), unavailable)
    async with served(HttpSettings(auth=auth)) as (client, _):
        response = await client.post("/mcp", json=initialize(), headers=bearer("token-alice"))
        assert response.status_code == 503
        assert "retry-after" in response.headers


def test_auth_replaces_verify_token() -> None:
    auth = AuthSettings(RESOURCE, (ISSUER,), verify)
    with pytest.raises(ValueError, match="auth replaces"):
        HttpSettings(auth=auth, verify_token=lambda token: True)
    with pytest.raises(ValueError, match="scope"):
        AuthSettings(RESOURCE, (ISSUER,), verify, scopes_supported=('bad"scope',))
    with pytest.raises(ValueError, match="resource"):
        AuthSettings("mcp.example.com/mcp", (ISSUER,), verify)


# -- the principal and per-tool scopes -------------------------------------------------------


async def test_the_principal_reaches_the_handler_in_every_era() -> None:
    async with served() as (client, _):
        headers = await open_session(client, "token-alice")
        response = await client.post("/mcp", json=call_tool(1, "whoami", {}), headers=headers)
        assert result_of(response)["result"]["content"][0]["text"] == "alice admin mcp"
        stateless = {
            **bearer("token-bob"),
            "mcp-protocol-version": STATELESS,
            "mcp-method": "tools/call",
            "mcp-name": "whoami",
        }
        body = rpc(1, "tools/call", {"name": "whoami", "arguments": {}, "_meta": STATELESS_META})
        response = await client.post("/mcp", json=body, headers=stateless)
        assert response.status_code == 200, response.text
        assert result_of(response)["result"]["content"][0]["text"] == "bob mcp"


async def test_tools_needing_scopes_are_listed_and_callable_only_with_them() -> None:
    async with served() as (client, _):
        bob = await open_session(client, "token-bob")
        listed = result_of(await client.post("/mcp", json=rpc(1, "tools/list"), headers=bob))
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["whoami"]
        refused = await client.post("/mcp", json=call_tool(2, "shutdown", {}), headers=bob)
        assert refused.status_code == 403
        params = challenge_params(refused.headers["www-authenticate"])
        assert params["error"] == "insufficient_scope"
        assert set(params["scope"].split()) == {"admin", "mcp"}
        alice = await open_session(client, "token-alice")
        listed = result_of(await client.post("/mcp", json=rpc(1, "tools/list"), headers=alice))
        assert sorted(tool["name"] for tool in listed["result"]["tools"]) == ["shutdown", "whoami"]
        called = await client.post("/mcp", json=call_tool(2, "shutdown", {}), headers=alice)
        assert result_of(called)["result"]["content"][0]["text"] == "shut down"


def build_scoped_server() -> Server:
    """Resources, a template and prompts, some needing the ``admin`` scope."""
    server = Server("scoped", "1.0", subscribe=True)

    @server.resource("notes://public")
    async def public() -> str:
        return "public"

    @server.resource("notes://secret", scopes=["admin"])
    async def secret() -> str:
        return "secret"

    @server.resource("vault://{item}", scopes=["admin"])
    async def vault(item: str) -> str:
        return f"vault {item}"

    @server.prompt()
    async def hello() -> str:
        return "hello"

    @server.prompt(scopes=["admin"])
    async def audit(year: str) -> str:
        return f"audit {year}"

    @server.completion(prompt="audit", argument="year")
    async def years(value: str) -> list[str]:
        return ["2025", "2026"]

    return server


def read(id: int, uri: str) -> dict[str, Any]:
    return rpc(id, "resources/read", {"uri": uri})


def get_prompt(id: int, name: str, arguments: dict[str, str] | None = None) -> dict[str, Any]:
    return rpc(id, "prompts/get", {"name": name, "arguments": arguments or {}})


async def test_resources_and_prompts_needing_scopes_are_shown_and_served_only_with_them() -> None:
    async with served(server=build_scoped_server()) as (client, _):
        bob = await open_session(client, "token-bob")

        async def answer(body: Any, headers: dict[str, str]) -> Any:
            response = await client.post("/mcp", json=body, headers=headers)
            assert response.status_code == 200, response.text
            return result_of(response)["result"]

        listed = await answer(rpc(1, "resources/list"), bob)
        assert [r["uri"] for r in listed["resources"]] == ["notes://public"]
        assert (await answer(rpc(2, "resources/templates/list"), bob))["resourceTemplates"] == []
        assert [p["name"] for p in (await answer(rpc(3, "prompts/list"), bob))["prompts"]] == [
            "hello"
        ]
        assert (await answer(read(4, "notes://public"), bob))["contents"][0]["text"] == "public"
        for body in (
            read(5, "notes://secret"),
            read(6, "vault://gold"),
            get_prompt(7, "audit", {"year": "2026"}),
            [read(8, "notes://public"), get_prompt(9, "audit", {"year": "2026"})],
            rpc(11, "resources/subscribe", {"uri": "notes://secret"}),
        ):
            refused = await client.post("/mcp", json=body, headers=bob)
            assert refused.status_code == 403, body
            params = challenge_params(refused.headers["www-authenticate"])
            assert params["error"] == "insufficient_scope"
            assert set(params["scope"].split()) == {"admin", "mcp"}
        # Completing an argument of a prompt it cannot see is as for an unknown prompt.
        complete = rpc(
            10,
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "audit"},
                "argument": {"name": "year", "value": ""},
            },
        )
        response = await client.post("/mcp", json=complete, headers=bob)
        assert "error" in result_of(response)

        alice = await open_session(client, "token-alice")
        listed = await answer(rpc(1, "resources/list"), alice)
        assert [r["uri"] for r in listed["resources"]] == ["notes://public", "notes://secret"]
        templates = (await answer(rpc(2, "resources/templates/list"), alice))["resourceTemplates"]
        assert [t["uriTemplate"] for t in templates] == ["vault://{item}"]
        assert (await answer(read(3, "vault://gold"), alice))["contents"][0]["text"] == "vault gold"
        got = await answer(get_prompt(4, "audit", {"year": "2026"}), alice)
        assert got["messages"][0]["content"]["text"] == "audit 2026"
        completed = await answer(complete, alice)
        assert completed["completion"]["values"] == ["2025", "2026"]
        assert await answer(rpc(5, "resources/subscribe", {"uri": "notes://secret"}), alice) == {}


async def test_inside_a_session_an_item_without_its_scopes_is_unknown() -> None:
    # What the HTTP app refuses before a session sees it, the session refuses too, as
    # an unknown item (leaking nothing): here the whole in-memory server is served as
    # bob's.
    from mcpspec.runtime.connection import Client

    with principal_scope(PRINCIPALS["token-bob"]):
        async with Client.in_memory(build_scoped_server(), mode="2025-11-25") as client:
            assert [r.uri for r in await client.list_resources()] == ["notes://public"]
            assert await client.list_resource_templates() == []
            assert [p.name for p in await client.list_prompts()] == ["hello"]
            for uri in ("notes://secret", "vault://gold"):
                with pytest.raises(RequestError) as refused:
                    await client.read_resource(uri)
                assert (refused.value.code, refused.value.message) == (-32002, "Resource not found")
            with pytest.raises(RequestError) as refused:
                await client.get_prompt("audit", {"year": "2026"})
            assert refused.value.code == -32602
            assert "unknown prompt" in str(refused.value.data)
            assert (await client.read_resource("notes://public")).contents[0].text == "public"


async def test_a_batch_cannot_escalate_scopes() -> None:
    async with served() as (client, _):
        response = await client.post(
            "/mcp", json=initialize(version="2025-03-26"), headers=bearer("token-bob")
        )
        headers = {
            **bearer("token-bob"),
            "mcp-session-id": response.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-03-26",
        }
        await client.post("/mcp", json=rpc(None, "notifications/initialized"), headers=headers)
        batch = [call_tool(1, "whoami", {}), call_tool(2, "shutdown", {})]
        refused = await client.post("/mcp", json=batch, headers=headers)
        assert refused.status_code == 403


async def test_step_up_keeps_the_session_of_the_same_subject() -> None:
    async with served() as (client, _):
        headers = await open_session(client, "token-alice-2")
        refused = await client.post("/mcp", json=call_tool(1, "shutdown", {}), headers=headers)
        assert refused.status_code == 403
        # A new token of the same subject, with more scopes, on the same session.
        headers["authorization"] = "Bearer token-alice"
        called = await client.post("/mcp", json=call_tool(2, "shutdown", {}), headers=headers)
        assert called.status_code == 200
        assert result_of(called)["result"]["content"][0]["text"] == "shut down"


# -- sessions bound to their principal -------------------------------------------------------


async def test_another_principals_token_on_a_session_is_404_and_harms_nothing() -> None:
    async with served() as (client, _):
        alice = await open_session(client, "token-alice")
        mallory = {**alice, "authorization": "Bearer token-bob"}
        response = await client.post("/mcp", json=rpc(1, "ping"), headers=mallory)
        assert response.status_code == 404
        get = {**mallory, "accept": "text/event-stream"}
        assert (await client.get("/mcp", headers=get)).status_code == 404
        replay = {**get, "last-event-id": "0.1"}
        assert (await client.get("/mcp", headers=replay)).status_code == 404
        assert (await client.delete("/mcp", headers=mallory)).status_code == 404
        # Alice's session is untouched.
        response = await client.post("/mcp", json=call_tool(2, "whoami", {}), headers=alice)
        assert result_of(response)["result"]["content"][0]["text"] == "alice admin mcp"


async def test_max_sessions_counts_per_principal_and_evicts_only_ones_own() -> None:
    async with served(settings(max_sessions=2)) as (client, _):
        alice = [await open_session(client, "token-alice") for _ in range(2)]
        bob = [await open_session(client, "token-bob") for _ in range(3)]
        for headers in alice:
            response = await client.post("/mcp", json=rpc(1, "ping"), headers=headers)
            assert response.status_code == 200
        statuses = [
            (await client.post("/mcp", json=rpc(1, "ping"), headers=headers)).status_code
            for headers in bob
        ]
        assert statuses == [404, 200, 200]


async def test_a_full_table_refuses_a_new_principal_instead_of_evicting_another() -> None:
    async with served(settings(max_sessions=4, max_total_sessions=2)) as (client, _):
        alice = [await open_session(client, "token-alice") for _ in range(2)]
        response = await client.post("/mcp", json=initialize(), headers=bearer("token-bob"))
        assert response.status_code == 503
        for headers in alice:
            assert (
                await client.post("/mcp", json=rpc(1, "ping"), headers=headers)
            ).status_code == 200


async def test_a_verify_token_session_is_bound_to_its_token() -> None:
    config = HttpSettings(verify_token=lambda token: token in ("a", "b"))
    async with served(config) as (client, _):
        alice = await open_session(client, "a")
        other = {**alice, "authorization": "Bearer b"}
        assert (await client.post("/mcp", json=rpc(1, "ping"), headers=other)).status_code == 404
        assert (await client.post("/mcp", json=rpc(1, "ping"), headers=alice)).status_code == 200


def test_request_state_is_sealed_with_the_principal() -> None:
    key = b"k" * 32
    alice, bob = PRINCIPALS["token-alice"], PRINCIPALS["token-bob"]
    with principal_scope(alice):
        sealed = InputState(asked={"q1": "elicitation/create"}).encode(sealing_key(key))
        assert InputState.decode(sealed, sealing_key(key)).asked == {"q1": "elicitation/create"}
    with principal_scope(bob), pytest.raises(RequestError):
        InputState.decode(sealed, sealing_key(key))
    with pytest.raises(RequestError):
        InputState.decode(sealed, sealing_key(key))  # nor without a principal


async def test_tokens_never_reach_logs_or_answers(caplog: pytest.LogCaptureFixture) -> None:
    secret = "tok-" + "s3cr3t" * 8

    def failing(token: str) -> Principal | None:
        raise RuntimeError("verifier bug")

    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    for verifier in (verify, failing):
        auth = AuthSettings(RESOURCE, (ISSUER,), verifier, required_scopes=("mcp",))
        async with served(HttpSettings(auth=auth)) as (client, _):
            for url in ("/mcp", f"/mcp?access_token={secret}"):
                response = await client.post(url, json=initialize(), headers=bearer(secret))
                texts.append(response.text + str(response.headers))
    # The app's own log lines (the test's client logs the URLs it sends).
    ours = [record.getMessage() for record in caplog.records if record.name.startswith("mcpspec")]
    assert ours  # the failing verifier was logged
    assert not any(secret in line for line in ours)
    assert not any(secret in str(record.exc_info) for record in caplog.records)
    assert not any(secret in text for text in texts)
