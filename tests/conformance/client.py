"""The client the conformance suite drives: ``python tests/conformance/client.py URL``.

``conformance client --command "<this>" --scenario NAME`` starts a mock server for the
scenario, appends its URL to the command, and says which scenario runs in
``MCP_CONFORMANCE_SCENARIO`` (scenario data in ``MCP_CONFORMANCE_CONTEXT``, JSON; the
revision to speak, when the run names one, in ``MCP_CONFORMANCE_PROTOCOL_VERSION``).
This script does what the scenario expects of a client, on our :class:`Client` over
Streamable HTTP, and exits non-zero when the library raised.

Scenarios: most need a client to use the server's features as an application would
(list and call tools, read resources, get prompts, answer the server's questions); the
few that need something particular have a function of their own below. The OAuth
scenarios (``auth/...``) run with :class:`~mcpspec.runtime.connection.http.oauth.OAuth`:
the authorization code grant, the user's consent standing in as a GET of the
authorization URL whose redirect is read (the suite's server approves at once), with a
Client ID Metadata Document URL to offer; ``client_credentials`` for the scenarios named
so, with the secret or private key the scenario's context gives; the JWT-bearer grant
when the context gives a workload's JWT (``valid_jwt``) or an identity provider's ID
token to exchange (``idp_id_token``). DPoP is the client's default when both servers
offer it.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import httpx
import msgspec
from msgspec import UNSET

from mcpspec.runtime.connection import Client, NegotiationRefused, RequestError
from mcpspec.runtime.connection.http.oauth import OAuth, PrivateKeyJwt
from mcpspec.runtime.connection.http.oauth_exchange import TokenExchange

#: The Client ID Metadata Document URL the suite expects a client to offer.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
#: The revisions that negotiate with ``initialize`` (the others are stateless).
_HANDSHAKE_REVISIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})


def _wire(value: Any) -> Any:
    """A typed value in wire form (JSON-compatible builtins)."""
    return msgspec.to_builtins(value) if value is not None else None


async def answer_elicitation(params: Any, context: Any) -> dict[str, Any]:
    """Accept every form, filling each field with its schema's default (SEP-1034), as
    a user who confirms what is proposed would."""
    schema = _wire(getattr(params, "requested_schema", None)) or {}
    properties = schema.get("properties") if isinstance(schema, dict) else None
    content = {}
    for name, field in (properties or {}).items():
        if isinstance(field, dict) and "default" in field:
            content[name] = field["default"]
    return {"action": "accept", "content": content}


async def answer_sampling(params: Any, context: Any) -> dict[str, Any]:
    """A fixed model reply."""
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "This is a test response from the client"},
        "model": "conformance-test-model",
        "stopReason": "endTurn",
    }


async def answer_roots(params: Any, context: Any) -> dict[str, Any]:
    """One root."""
    return {"roots": [{"uri": "file:///tmp/conformance", "name": "conformance"}]}


class ApprovingRedirect:
    """The user's consent, as the suite's server gives it: GET the authorization URL and
    read the parameters of the redirect it answers with."""

    redirect_uri = "http://127.0.0.1:3000/callback"

    async def __call__(self, authorization_url: str) -> dict[str, str]:
        async with httpx.AsyncClient(timeout=20.0) as http:
            response = await http.get(authorization_url, follow_redirects=False)
        location = response.headers.get("location")
        if location is None:
            raise RuntimeError(f"the authorization endpoint answered {response.status_code}")
        return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))


def oauth_for(scenario: str, context: Mapping[str, Any]) -> OAuth:
    """The OAuth client a scenario needs (see the module)."""
    client_id = context.get("client_id")
    secret = context.get("client_secret")
    pem = context.get("private_key_pem")
    key = (
        PrivateKeyJwt(pem, algorithm=str(context.get("signing_algorithm", "RS256")))
        if isinstance(pem, str)
        else None
    )
    if isinstance(context.get("idp_id_token"), str):
        # Enterprise-managed authorization: the user's ID token, traded at the
        # identity provider for an ID-JAG, presented with the JWT-bearer grant.
        exchange = TokenExchange(
            token_endpoint=str(context["idp_token_endpoint"]),
            id_token=context["idp_id_token"],
            client_id=context.get("idp_client_id"),
        )
        return OAuth(
            grant="jwt_bearer",
            assertion=exchange,
            client_id=client_id,
            client_secret=secret,
        )
    if isinstance(context.get("valid_jwt"), str):
        # Workload identity federation: the workload's own JWT is the assertion.
        return OAuth(grant="jwt_bearer", assertion=context["valid_jwt"], client_id=client_id)
    if scenario.startswith("auth/client-credentials"):
        return OAuth(
            grant="client_credentials",
            client_id=client_id,
            client_secret=secret,
            private_key_jwt=key,
        )
    return OAuth(
        client_id=client_id,
        client_secret=secret,
        private_key_jwt=key,
        client_metadata_url=CLIENT_METADATA_URL,
        redirect=ApprovingRedirect(),
    )


def build_client(
    url: str, revision: str | None, default_mode: str, auth: OAuth | None = None
) -> Client:
    """Our client of ``url``: speaking ``revision`` when the run names one (its
    lifecycle follows: ``initialize`` up to 2025-11-25, stateless after), else
    negotiating in ``default_mode`` (``auto``: probe, then fall back; ``legacy``)."""
    mode: Any
    if revision is None:
        mode = default_mode
    elif revision in _HANDSHAKE_REVISIONS:
        mode = "legacy"
    else:
        mode = revision
    return Client.http(
        url,
        mode=mode,
        revisions=None if revision is None else [revision],
        info={"name": "mcpspec-conformance-client", "version": "1.0.0"},
        capabilities={
            "sampling": {},
            "elicitation": {"form": {}},
            "roots": {"listChanged": True},
        },
        sampling=answer_sampling,
        elicitation=answer_elicitation,
        roots=answer_roots,
        open_timeout=20.0,
        auth=auth,
    )


async def explore(client: Client, context: Mapping[str, Any]) -> None:
    """Use everything the server declares: each tool called (with the arguments the
    scenario's context gives, else ones its schema requires), each resource read,
    each prompt got."""
    declared = client.capabilities
    if _declares(declared, "tools"):
        tools = await client.list_tools()
        calls = context.get("toolCalls")
        if isinstance(calls, list):
            for call in calls:
                await client.call_tool(call["name"], call.get("arguments") or {})
        else:
            for tool in tools:
                await client.call_tool(tool.name, _arguments_for(tool))
    if _declares(declared, "resources"):
        for resource in await client.list_resources():
            await client.read_resource(resource.uri)
    if _declares(declared, "prompts"):
        for prompt in await client.list_prompts():
            await client.get_prompt(prompt.name, {})


def _declares(capabilities: Any, name: str) -> bool:
    return getattr(capabilities, name, UNSET) not in (UNSET, None)


def _arguments_for(tool: Any) -> dict[str, Any]:
    """Arguments satisfying ``tool``'s required number and string parameters."""
    schema = _wire(tool.input_schema) or {}
    properties = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name in schema.get("required") or ():
        kind = (properties.get(name) or {}).get("type")
        out[name] = 1 if kind in ("number", "integer") else True if kind == "boolean" else "x"
    return out


async def add_numbers(client: Client, context: Mapping[str, Any]) -> None:
    """``tools_call``: call the mock's ``add_numbers`` with 2 and 3."""
    tools = await client.list_tools()
    name = next((t.name for t in tools if t.name == "add_numbers"), tools[0].name)
    await client.call_tool(name, {"a": 2, "b": 3})


async def list_only(client: Client, context: Mapping[str, Any]) -> None:
    """List tools and nothing else (``json-schema-ref-no-deref``: the mock serves no
    more, and the check is that nothing fetches the schema's network ``$ref``)."""
    await client.list_tools()


async def echo_schema(client: Client, context: Mapping[str, Any]) -> None:
    """``json-schema-2020-12-preservation``: send the focal tool's ``inputSchema``,
    as the library parsed it, back to the echo tool."""
    tools = {tool.name: tool for tool in await client.list_tools()}
    focal = tools["json_schema_2020_12_tool"]
    await client.call_tool("json_schema_echo", {"schema": _wire(focal.input_schema)})


async def elicitation_defaults(client: Client, context: Mapping[str, Any]) -> None:
    """``elicitation-sep1034-client-defaults``: call the tool that asks with defaults."""
    tools = await client.list_tools()
    name = next(t.name for t in tools if "elicitation" in t.name)
    await client.call_tool(name, {})


async def reconnect(client: Client, context: Mapping[str, Any]) -> None:
    """``sse-retry``: call the tool whose SSE stream the server closes early."""
    await client.list_tools()
    await client.call_tool("test_reconnection", {})


#: What each scenario needs of the client, when it is not :func:`explore`.
SCENARIOS: dict[str, Callable[[Client, Mapping[str, Any]], Awaitable[None]]] = {
    "tools_call": add_numbers,
    "json-schema-ref-no-deref": list_only,
    "json-schema-2020-12-preservation": echo_schema,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "elicitation-defaults": elicitation_defaults,
    "sse-retry": reconnect,
}


async def run(
    url: str, scenario: str, context: Mapping[str, Any], revision: str | None, mode: str
) -> None:
    if not scenario.startswith("auth/"):
        async with build_client(url, revision, mode) as client:
            await SCENARIOS.get(scenario, explore)(client, context)
        return
    try:
        async with build_client(url, revision, mode, oauth_for(scenario, context)) as client:
            await SCENARIOS.get(scenario, explore)(client, context)
    except (NegotiationRefused, RequestError) as exc:
        # Refusing is what several scenarios ask of a client (a wrong issuer, resource
        # or iss; a server that keeps asking for scopes): said, not raised. The suite
        # judges whether refusing was right.
        raise SystemExit(f"{scenario}: refused: {exc}") from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument(
        "--mode",
        choices=("auto", "legacy"),
        default="auto",
        help="how to negotiate when the run names no revision (default: auto)",
    )
    parser.add_argument("url", help="the mock server's URL (the suite appends it)")
    args = parser.parse_args(argv)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    revision = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or None
    anyio.run(run, args.url, scenario, context, revision, args.mode)


if __name__ == "__main__":
    main()
