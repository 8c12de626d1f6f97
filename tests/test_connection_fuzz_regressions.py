"""Each distinct failure the connection fuzzing found, kept with its smallest input.

Each test runs one input through its target's oracle (``tests/fuzzing/``) and asserts
that nothing fails; each failed before its fault was fixed. A fault found and not yet
fixed would be marked ``xfail(strict=True)`` here and listed in
``tests/fuzzing/known_faults.py``.
"""

from __future__ import annotations

from tests.fuzzing.asgi_target import Exchange, HttpRequest
from tests.fuzzing.asgi_target import check as check_asgi
from tests.fuzzing.client_target import Hostile
from tests.fuzzing.client_target import check as check_client
from tests.fuzzing.conversation import LIMIT, line, message, request
from tests.fuzzing.stdio_target import ACCEPT, Answer, Close, Script, Settle, Write
from tests.fuzzing.stdio_target import check as check_stdio

INITIALIZE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{"elicitation":{}},"clientInfo":{"name":"fuzz","version":"1"}}}\n'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
HEADERS = (
    ("host", "127.0.0.1:8000"),
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
)


def _call(request_id: int, name: str, **params: object) -> bytes:
    body = {"name": name, "arguments": {}, **params}
    return line(request(request_id, "tools/call", body, "2025-11-25"))


def test_ping_then_a_stateless_request_leaves_the_server_running() -> None:
    """A ping before negotiation and a 2026-07-28 request in one write: the ping's
    answer asked the 2026-07-28 codec for the result of ping (KeyError), and serve
    raised."""
    both = line(request(1, "ping", None, "2025-11-25")) + line(
        request(2, "tools/list", {}, "2026-07-28")
    )
    assert check_stdio(Script((Write(both), Settle(), Close()))) == []


def test_a_question_pending_when_stdin_closes_is_answered() -> None:
    """A tool waiting on ``ctx.elicit`` when stdin closes: never answered, though
    -32603 is promised after ``linger``."""
    steps = (Write(INITIALIZE), Settle(), Write(INITIALIZED), Write(_call(1, "ask")), Settle())
    assert check_stdio(Script((*steps, Close()))) == []


def test_an_invalid_request_reusing_a_pending_id_leaves_the_servers_question_alone() -> None:
    """The client's call 1 waits on the server's question 1; the client sends an
    invalid request with id 1 (its own pending id), then answers question 1 well: the
    question ended in ResponseViolation and the answer was dropped."""
    intruder = b'{"jsonrpc":"2.0","id":%ID%,"method":7}\n'
    steps = (Write(INITIALIZE), Settle(), Write(INITIALIZED), Write(_call(1, "ask")))
    answer = Answer("elicitation/create", intruder + ACCEPT)
    assert check_stdio(Script((*steps, answer, Settle(), Close()))) == []


def test_a_long_lived_request_holds_a_small_multiple_of_its_size() -> None:
    """A 2026-07-28 ``subscriptions/listen`` with 64 KiB of ``{}`` in its ``_meta``,
    held open: about 25x its size in memory while it lasts."""
    params = {"notifications": {"toolsListChanged": True}, "_meta": {"x": [{}] * 21_000}}
    listen = line(request(1, "subscriptions/listen", params, "2026-07-28"))
    assert check_stdio(Script((Write(listen), Settle(), Close()), measure=True)) == []


def test_running_handlers_hold_what_the_bytes_in_flight_decode_to_at_most() -> None:
    """Sixteen ``tools/call`` with 20 KiB of ``{}`` in their ``_meta`` whose handlers
    block: each decoded request, held while its handler runs, is about 25x its size,
    and every one was taken (about 8 MiB held for 330 KiB sent). The server now takes
    requests up to ``max_request_bytes_in_flight`` and refuses the rest at once."""
    params = {"name": "block", "arguments": {}, "_meta": {"x": [{}] * 7_000}}
    calls = [Write(line(request(n, "tools/call", params, "2025-11-25"))) for n in range(1, 17)]
    steps = (Write(INITIALIZE), Settle(), Write(INITIALIZED), *calls)
    assert check_stdio(Script((*steps, Settle(), Close()), measure=True)) == []


def test_an_http_session_holds_a_small_multiple_of_its_initialize() -> None:
    """An ``initialize`` with 64 KiB of ``{}`` in ``capabilities.experimental``: the
    HTTP session it opens held about 25x its size for as long as it lived."""
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"experimental": {"x": {"y": [{}] * 21_000}}},
        "clientInfo": {"name": "fuzz", "version": "1"},
    }
    init = message(request(0, "initialize", params, "2025-11-25"))
    exchange = Exchange((HttpRequest("POST", HEADERS, (init,)),), measure=True)
    assert check_asgi(exchange) == []


def test_progress_before_initialized_does_not_fail_the_handler() -> None:
    """Found by the fuzzing: a request after ``initialize`` but before
    ``notifications/initialized`` whose handler reports progress: ``report_progress``
    raised StateError, the handler failed (-32603, ERROR with a traceback)."""
    steps = (Write(INITIALIZE), Settle(), Write(_call(1, "steps", _meta={"progressToken": "p"})))
    assert check_stdio(Script((*steps, Settle(), Close()))) == []


def test_an_oversized_line_is_answered_with_every_request_slot_taken() -> None:
    """Found by the fuzzing: 64 (``max_requests_in_flight``) 2026-07-28 requests
    running, then a line over the size limit: its -32600 answer with id null was
    refused by the session (logged at ERROR) and never written."""
    calls = b"".join(
        line(request(n, "tools/call", {"name": "block", "arguments": {}}, "2026-07-28"))
        for n in range(64)
    )
    oversized = b'{"jsonrpc":"2.0","id":77,"method":"ping","x":"' + b"x" * LIMIT + b'"}\n'
    steps = (Write(calls), Settle(), Write(oversized), Settle(), Close())
    assert check_stdio(Script(steps)) == []


def test_subscribe_on_an_app_without_sessions_is_no_assertion() -> None:
    """``resources/subscribe`` on an app with ``sessions=False``: -32603 from
    ``assert feed is not None`` and a logged traceback."""
    init = message(
        request(
            0,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "f", "version": "1"},
            },
            "2025-06-18",
        )
    )
    subscribe = message(request(1, "resources/subscribe", {"uri": "fuzz://a"}, "2025-06-18"))
    versioned = (*HEADERS, ("mcp-protocol-version", "2025-06-18"))
    exchange = Exchange(
        (HttpRequest("POST", HEADERS, (init,)), HttpRequest("POST", versioned, (subscribe,))),
        sessions=False,
    )
    assert check_asgi(exchange) == []


def test_send_raising_oserror_is_not_an_error_of_the_app() -> None:
    """The client is gone as the response's body is written (``send`` raises
    ``OSError``): logged at ERROR as 'the HTTP app failed' with a traceback, one record
    per request."""
    exchange = Exchange((HttpRequest("OPTIONS", HEADERS, (), fail_send_at=1),))
    assert check_asgi(exchange) == []


def test_send_raising_oserror_on_another_path_does_not_escape() -> None:
    """The same on a path the app does not serve (404): the ``OSError`` escapes the
    ASGI call, which the ASGI server logs at ERROR."""
    exchange = Exchange((HttpRequest("POST", HEADERS, (b"{}",), path="/x", fail_send_at=0),))
    assert check_asgi(exchange) == []


def test_list_tools_timeout_bounds_the_whole_call() -> None:
    """A server answering each page within the timeout with a fresh cursor: the
    call runs on for up to 1,000 pages."""
    hostile = Hostile("2025-11-25", ("list_tools",), ("ok", "slow endless cursor"))
    assert check_client(hostile) == []


def test_open_timeout_ends_in_a_typed_error() -> None:
    """Found by the fuzzing: a server that never answers ``initialize``: entering the
    client raised a bare ``TimeoutError`` after ``open_timeout``; now ``OpenTimeout``, an
    error of ``mcpspec.runtime.connection.errors``."""
    assert check_client(Hostile("2025-11-25", ("ping",), ("never",))) == []


def test_a_valid_conversation_passes_every_oracle() -> None:
    """The oracles find nothing wrong with a well-behaved peer (in each target)."""
    steps = (Write(INITIALIZE), Settle(), Write(INITIALIZED), Write(_call(1, "ask")))
    answer = Answer("elicitation/create", ACCEPT)
    assert check_stdio(Script((*steps, answer, Settle(), Close()))) == []
    body = message(request(1, "tools/list", {}, "2026-07-28"))
    headers = (*HEADERS, ("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/list"))
    assert check_asgi(Exchange((HttpRequest("POST", headers, (body,)),))) == []
    assert check_client(Hostile("2025-11-25", ("list_tools", "call_tool", "ping"), ("ok",))) == []
