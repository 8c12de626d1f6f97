"""One rule path: a rule written once is enforced by both sessions in both directions.

A :class:`~mcpspec.runtime.checks.MessageRule` registered in the rule table is checked
on ``send`` (the local misuse raises, nothing is sent) and on ``receive`` (the peer's
message becomes a violation; a request is answered with the rule's error), by the same
check, in the protocol models and for the senders it names.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mcpspec.runtime import (
    ClientSession,
    LocalProtocolError,
    ProtocolViolation,
    RequestReceived,
    Rule,
)
from mcpspec.runtime.checks import (
    MESSAGE_RULES,
    MessageRule,
    Problem,
    SenderView,
    register,
    unregister,
)
from mcpspec.runtime.contract import ProtocolModel
from mcpspec.runtime.state import Role

from .session_kit import connect


def _no_forbidden_tool(message: Any, sender: SenderView) -> Problem | None:
    """The toy rule: no tool may be called "forbidden"."""
    if message.params.name == "forbidden":
        return Problem(Rule.INVALID_PARAMS, "$.params.name", 'the tool "forbidden" is off limits')
    return None


TOY = MessageRule(Rule.INVALID_PARAMS, frozenset({"tools/call"}), _no_forbidden_tool)


@pytest.fixture
def toy_rule() -> Iterator[MessageRule]:
    register(TOY)
    try:
        yield TOY
    finally:
        unregister(TOY)
    assert "tools/call" not in MESSAGE_RULES


def _call(session: ClientSession, name: str) -> Any:
    t = session.types
    return t.CallToolRequest(
        id=session.next_id(), params=t.CallToolRequestParams(name=name, arguments={})
    )


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_a_registered_rule_is_enforced_on_send_and_on_receive(
    toy_rule: MessageRule, revision: str
) -> None:
    client, server = connect(revision)
    # send: the local side's misuse raises, nothing is recorded
    with pytest.raises(LocalProtocolError) as raised:
        client.send(_call(client, "forbidden"))
    assert raised.value.rule is Rule.INVALID_PARAMS
    assert client.outstanding == frozenset()
    # receive: the same check, as a violation answered with the rule's error
    wire = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"forbidden"'
    meta = (
        b',"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{}}'
        if revision == "2026-07-28"
        else b""
    )
    [violation] = server.receive(wire + meta + b"}}")
    assert isinstance(violation, ProtocolViolation)
    assert (violation.rule, violation.path) == (Rule.INVALID_PARAMS, "$.params.name")
    assert violation.response is not None and violation.response.id == 7
    assert violation.response.error.code == -32602
    # a message that keeps the rule goes through both ways
    data = client.send(_call(client, "allowed"))
    events = server.receive(data)
    assert [type(e) for e in events] == [RequestReceived]


def test_a_rule_holds_only_for_the_senders_and_models_it_names() -> None:
    only_clients_in_handshake = MessageRule(
        Rule.INVALID_PARAMS,
        frozenset({"tools/call"}),
        _no_forbidden_tool,
        senders=frozenset({Role.SERVER}),
        models=frozenset({ProtocolModel.HANDSHAKE}),
    )
    register(only_clients_in_handshake)
    try:
        client, server = connect("2025-11-25")
        data = client.send(_call(client, "forbidden"))  # a client's message: not judged
        assert [type(e) for e in server.receive(data)] == [RequestReceived]
    finally:
        unregister(only_clients_in_handshake)
    # nor in the other model, where the rule does not hold at all
    register(only_clients_in_handshake)
    try:
        client, server = connect("2026-07-28")
        data = client.send(_call(client, "forbidden"))  # the stateless model: not judged
        assert [type(e) for e in server.receive(data)] == [RequestReceived]
        assert only_clients_in_handshake in MESSAGE_RULES["tools/call"]
    finally:
        unregister(only_clients_in_handshake)
