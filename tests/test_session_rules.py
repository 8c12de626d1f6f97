"""One rule path: a rule written once is enforced by both sessions in both directions.

A :class:`~mcpspec.runtime.session.checks.MessageRule` registered in the rule table is checked
on ``send`` (the local misuse raises, nothing is sent) and on ``receive`` (the peer's
message becomes a violation; a request is answered with the rule's error), by the same
check, in the protocol models and for the senders it names.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

import mcpspec.runtime
from mcpspec.runtime import (
    ClientSession,
    LocalProtocolError,
    ProtocolViolation,
    RequestReceived,
    Rule,
)
from mcpspec.runtime.declared import ProtocolModel
from mcpspec.runtime.session.checks import (
    MESSAGE_RULES,
    NEW_ID,
    REQUEST_RULES,
    MessageRule,
    Problem,
    SenderView,
    register,
    unregister,
)
from mcpspec.runtime.session.server import ServerNegotiation
from mcpspec.runtime.session.state import Role

from .session_kit import connect, meta_for, wire


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


# -- rules of every request ----------------------------------------------------------------------


def _no_forbidden_id(message: Any, sender: SenderView) -> Problem | None:
    """The toy rule of every request: no request id may be the string "forbidden"."""
    if message.id == "forbidden":
        return Problem(Rule.INVALID_REQUEST, "$.id", 'the id "forbidden" is off limits')
    return None


EVERY = MessageRule(Rule.INVALID_REQUEST, None, _no_forbidden_id)


@pytest.fixture
def every_request_rule() -> Iterator[MessageRule]:
    register(EVERY)
    try:
        yield EVERY
    finally:
        unregister(EVERY)
    assert EVERY not in REQUEST_RULES


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-11-25", "2026-07-28"])
def test_a_rule_of_every_request_is_enforced_on_send_and_on_receive(
    revision: str, every_request_rule: MessageRule
) -> None:
    client, server = connect(revision)
    t = client.types
    # send: the local misuse raises, nothing is recorded
    with pytest.raises(LocalProtocolError) as raised:
        client.send(t.ListToolsRequest(id="forbidden"))
    assert raised.value.rule is Rule.INVALID_REQUEST
    assert client.outstanding == frozenset()
    # receive: the peer's request is refused with the rule's error, whatever its method
    for method in ("tools/list", "prompts/list"):
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": "forbidden", "method": method}
        if revision == "2026-07-28":
            message["params"] = {"_meta": meta_for(client)}
        [violation] = server.receive(wire(message))
        assert isinstance(violation, ProtocolViolation)
        assert violation.rule is Rule.INVALID_REQUEST and violation.path == "$.id"
        assert violation.response is not None and violation.response.id == "forbidden"
        server.send(violation.response)
    # and the other way round: a server's request, a client's receive (a 2026-07-28
    # server sends no request of its own)
    if revision != "2026-07-28":
        with pytest.raises(LocalProtocolError):
            server.send(server.types.PingRequest(id="forbidden"))
        events = client.receive(wire({"jsonrpc": "2.0", "id": "forbidden", "method": "ping"}))
        assert [type(e) for e in events] == [ProtocolViolation]
    # any other id passes
    assert server.receive(client.send(t.ListToolsRequest(id=2)))[-1].__class__ is RequestReceived


# -- the duplicate request id is judged in one place ---------------------------------------------

_RUNTIME = Path(mcpspec.runtime.__file__).parent
_SESSION = _RUNTIME / "session"


def _references(name: str) -> dict[str, set[str]]:
    """Where the session core and the codec layer under it (the runtime package but the
    connection layer) name ``name`` (an attribute or a variable): by module, the
    enclosing functions (``"<module>"`` at module level)."""
    found: dict[str, set[str]] = {}
    for path in sorted([*_RUNTIME.glob("*.py"), *_SESSION.glob("*.py")]):
        tree = ast.parse(path.read_text())
        for scope in [tree, *ast.walk(tree)]:
            if not isinstance(scope, (ast.Module, ast.FunctionDef)):
                continue
            label = "<module>" if isinstance(scope, ast.Module) else scope.name
            stack: list[ast.AST] = list(scope.body)
            while stack:
                node = stack.pop()
                if isinstance(node, ast.FunctionDef) and scope is tree:
                    continue  # judged in its own scope
                if isinstance(node, ast.ClassDef) and scope is tree:
                    stack.extend(n for n in node.body if not isinstance(n, ast.FunctionDef))
                    continue
                if (isinstance(node, ast.Attribute) and node.attr == name) or (
                    isinstance(node, ast.Name) and node.id == name
                ):
                    found.setdefault(path.stem, set()).add(label)
                if not isinstance(node, ast.FunctionDef) or scope is not tree:
                    stack.extend(ast.iter_child_nodes(node))
    return found


def test_a_duplicate_request_id_is_judged_in_one_place() -> None:
    # The rule is named where it is declared (rules) and where it is judged: one check
    # of the table, and its entry.
    assert _references("DUPLICATE_REQUEST_ID") == {
        "rules": {"<module>"},
        "checks": {"_new_id", "<module>"},
    }
    # The check is reached through the table alone: its entry, NEW_ID, is registered
    # among the rules of every request, and the paths read those (request_rules).
    assert _references("_new_id") == {"checks": {"<module>"}}
    assert _references("NEW_ID") == {"checks": {"<module>"}}
    assert NEW_ID in REQUEST_RULES
    for module in ("inbound", "outbound", "server", "client", "core"):
        source = (_SESSION / f"{module}.py").read_text()
        assert "DUPLICATE_REQUEST_ID" not in source and ".duplicate(" not in source


def test_without_its_entry_no_path_judges_a_duplicate_request_id() -> None:
    """The table is the only judge: taken out of it, a duplicate passes both ways."""
    client, server = connect("2025-11-25")
    t = client.types
    server.receive(client.send(t.ListToolsRequest(id=1)))
    with pytest.raises(LocalProtocolError) as raised:
        client.send(t.ListToolsRequest(id=1))
    assert raised.value.rule is Rule.DUPLICATE_REQUEST_ID
    [refused] = server.receive(wire({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
    assert isinstance(refused, ProtocolViolation)
    assert refused.rule is Rule.DUPLICATE_REQUEST_ID and refused.response is None
    unregister(NEW_ID)
    try:
        client, server = connect("2025-11-25")
        server.receive(client.send(t.ListToolsRequest(id=1)))
        client.send(t.ListToolsRequest(id=1))  # no longer refused
        [taken] = server.receive(wire({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        assert isinstance(taken, RequestReceived)
    finally:
        REQUEST_RULES.insert(0, NEW_ID)
        register(EVERY)  # clears the tables' caches
        unregister(EVERY)
    assert REQUEST_RULES[0] is NEW_ID


# -- the lifecycle's moves are rules of the table -----------------------------------------------


def test_a_second_initialize_is_refused_by_the_lifecycle_table() -> None:
    """``initialize`` and ``notifications/initialized`` come once, in order: the rule of
    the table that judges them asks the lifecycle's transitions, both ways."""
    [moves] = MESSAGE_RULES["initialize"]
    assert MESSAGE_RULES["notifications/initialized"] == (moves,)
    client, server = connect("2025-11-25")  # both ready: no gate stands in the way
    again = client.types.InitializeRequest(
        id=99,
        params=client.types.InitializeRequestParams(
            protocol_version="2025-11-25",
            capabilities=client.types.ClientCapabilities(),
            client_info=client.types.Implementation(name="c", version="1"),
        ),
    )
    [violation] = server.receive(wire(msgspec.to_builtins(again)))
    assert isinstance(violation, ProtocolViolation)
    assert violation.rule is Rule.ALREADY_INITIALIZED and violation.response is not None
    initialized = wire({"jsonrpc": "2.0", "method": "notifications/initialized"})
    [late] = server.receive(initialized)
    assert isinstance(late, ProtocolViolation) and late.rule is Rule.ALREADY_INITIALIZED
    with pytest.raises(LocalProtocolError) as raised:
        client.send(again)
    assert raised.value.rule is Rule.ALREADY_INITIALIZED
    with pytest.raises(LocalProtocolError) as raised:
        client.send(client.types.InitializedNotification())
    assert raised.value.rule is Rule.ALREADY_INITIALIZED
    # The server's negotiation part takes initialize in and judges nothing of its phase.
    taking_in = inspect.getsource(ServerNegotiation.handlers)
    assert "phase" not in taking_in and "incoming" not in taking_in
