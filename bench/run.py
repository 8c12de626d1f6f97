"""mcpspec benchmarks: the JSON-parse floor, the official SDK, and the targets of issue 4.

Run from a checkout (with ``orjson``, ``mcp-types==2.3.0`` and, for the session echo
exchange, ``mcp==2.3.0`` installed next to mcpspec)::

    python bench/run.py                        # every revision, full run (a few minutes)
    python bench/run.py --revision 2025-11-25  # one revision
    python bench/run.py --smoke                # a handful of runs; asserts the harness works
    python bench/run.py --json out.json --markdown bench/RESULTS.md
    python bench/run.py --profile              # cProfile the mcpspec decode paths as well
    python bench/run.py --baseline HEAD~3      # and the checkout against that revision

Method. Every operation on a message is timed in batches (enough calls for a batch to last
``--batch-ms``, with the garbage collector off, as ``timeit`` does), and the operations of
one message run side by side: each round times every operation once, in a rotating order.
A time is the median over rounds of the per-call mean of a batch; a ratio is the median
over rounds of the ratio within the round, so the load of the shared machine cancels out.

Operations, per corpus message (``bench/corpus.py``):

* ``orjson.loads``: the floor, a JSON parse into dicts and lists;
* ``msgspec untyped``: ``msgspec.json.decode`` into dicts and lists;
* ``codec.decode``: ``mcpspec.codec(revision).decode``, plus ``decode_result(method,
  result)`` for a response, so the result is typed too (where the codec has the
  single-pass ``decode_response(data, method)``, that instead);
* ``session.receive``: the sans-IO session of the receiving side (``ServerSession`` for
  what a client sends, ``ClientSession`` for what a server sends), when mcpspec has them;
* ``direct msgspec``: reference, not a target: one ``msgspec.json.Decoder`` of the
  message's exact type (``<Method>ResultResponse`` or the request Struct), what a
  single-pass decode with the method known costs (for a 2026-07-28 result union tagged
  by ``resultType`` msgspec needs a second pass when the tag follows the body);
* ``SDK typed``: the official SDK (``mcp-types`` 2.3.0) decode path,
  ``jsonrpc_message_adapter.validate_json`` and then the typed model of the method
  (``MONOLITH_REQUESTS`` / ``MONOLITH_NOTIFICATIONS`` row ``model_validate``, or a
  ``TypeAdapter`` of the ``MONOLITH_RESULTS`` row for a result), without the SDK's extra
  per-version surface validation, so the SDK's real cost is higher still;
* ``forward zero-copy``: a proxy's path: decode only the envelope (method, id; params,
  result and error kept as ``msgspec.Raw``), route on method or id, and forward the
  original bytes; ``forward full``: ``codec.decode`` (+ ``decode_result``) and
  ``codec.encode`` of the typed value;
* encode: ``codec.encode`` of the typed message, ``orjson.dumps`` of the equivalent dict
  (the floor), and the SDK's ``model_dump_json(by_alias=True, exclude_none=True)`` of its
  typed model (the body only: the SDK's send path adds an envelope pass on top).

Also: import time of every revision module and of ``mcpspec.runtime`` in fresh processes
(in this environment and in a new one holding mcpspec and msgspec alone),
the memory a decoded 200-tool list keeps (``tracemalloc``) against the SDK's, and the
throughput of an echo ``tools/call`` exchange between two sessions, against the SDK's
client and low-level server joined by a JSON-serialising in-memory transport. And the
stdio round trips of ``bench/stdio.py`` (echo calls through a real server subprocess,
mcpspec and the SDK on either side; its docstring gives the method), and the HTTP round
trips of ``bench/http_bench.py`` (echo POSTs to ASGI apps under one uvicorn worker),
and the checker's own time of ``bench/check_bench.py`` (``mcpspec check`` on
server-everything), and what a ``tools/call`` through the tool decorator costs the server
over a handler of its own (``bench/tool_path.py``). With ``--baseline REV``, the
before-and-after section of ``bench/before_after.py`` too: the HTTP app, stdio round
trips and ``session.receive`` of the checkout against those of git revision ``REV``, side
by side in the same rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import msgspec
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import before_after  # and, when asked, the checkout against a git revision
import check_bench  # and the checker's own time
import corpus  # the corpus module sits next to this script
import http_bench  # and the HTTP round-trip benchmark
import stdio  # so does the stdio round-trip benchmark
import tool_path  # and the tool decorator's cost over a handler of its own

import mcpspec
from mcpspec.runtime import (
    ClientSession,
    Outgoing,
    ProgressReceived,
    RequestReceived,
    ResponseReceived,
    ResultResponse,
    ServerSession,
)

# -- operation names (the JSON keys and the table columns) -----------------------------------------

#: The multiplication sign, for ratios.
X: Final = "\N{MULTIPLICATION SIGN}"

FLOOR: Final = "orjson.loads"
UNTYPED: Final = "msgspec untyped"
CODEC: Final = "codec.decode"
SESSION: Final = "session.receive"
DIRECT: Final = "direct msgspec"
SDK: Final = "SDK typed"
FWD_RAW: Final = "forward zero-copy"
FWD_FULL: Final = "forward full"
#: The environments import times are measured in (see ``runtime_only_python``).
BENCH_ENV: Final = "benchmark environment"
RUNTIME_ONLY_ENV: Final = "msgspec only"
ENC_FLOOR: Final = "orjson.dumps"
ENC_CODEC: Final = "codec.encode"
ENC_SDK: Final = "SDK model_dump_json"

DECODE_OPS: Final = (FLOOR, UNTYPED, CODEC, SESSION, DIRECT, SDK, FWD_RAW, FWD_FULL)
ENCODE_OPS: Final = (ENC_FLOOR, ENC_CODEC, ENC_SDK)

#: Messages at or above this size are exempt from the per-message SDK-speedup target.
LARGE: Final = 500_000


# -- timing ----------------------------------------------------------------------------------------


@dataclass
class Timing:
    """Per-round timings (seconds per call) of the operations of one message."""

    rounds: dict[str, list[float]] = field(default_factory=dict)

    def median_us(self, op: str) -> float:
        """Median time per call of ``op``, in microseconds."""
        return statistics.median(self.rounds[op]) * 1e6

    def ratio(self, op: str, base: str) -> float:
        """Median over rounds of ``op / base``, timed side by side in each round."""
        return statistics.median(
            a / b for a, b in zip(self.rounds[op], self.rounds[base], strict=True)
        )


def _calibrate(fn: Callable[[], object], batch_s: float, max_loops: int) -> int:
    """How many calls of ``fn`` (at most ``max_loops``) make a batch of about ``batch_s``
    seconds."""
    fn()
    loops = 1
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= batch_s / 4 or loops >= max_loops:
            break
        loops = min(loops * 4, max_loops)
    per_call = elapsed / loops
    return max(1, min(max_loops, round(batch_s / per_call) if per_call > 0 else max_loops))


def time_side_by_side(
    ops: dict[str, Callable[[], object]],
    *,
    rounds: int,
    batch_s: float,
    max_loops: int,
    caps: dict[str, int] | None = None,
) -> Timing:
    """Time every operation of ``ops`` once per round, in rotating order; ``caps`` limits
    the calls per batch of some operations."""
    caps = caps or {}
    loops = {
        name: _calibrate(fn, batch_s, min(max_loops, caps.get(name, max_loops)))
        for name, fn in ops.items()
    }
    timing = Timing({name: [] for name in ops})
    names = list(ops)
    gc_was_enabled = gc.isenabled()
    try:
        for r in range(rounds):
            gc.collect()
            gc.disable()
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                fn, n = ops[name], loops[name]
                start = time.perf_counter()
                for _ in range(n):
                    fn()
                timing.rounds[name].append((time.perf_counter() - start) / n)
            if gc_was_enabled:
                gc.enable()
    finally:
        if gc_was_enabled:
            gc.enable()
    return timing


# -- the official SDK ------------------------------------------------------------------------------


class Sdk:
    """The official SDK's typed decode and encode (``mcp-types``)."""

    def __init__(self) -> None:
        from mcp_types import jsonrpc_message_adapter
        from mcp_types.methods import MONOLITH_NOTIFICATIONS, MONOLITH_REQUESTS, MONOLITH_RESULTS
        from pydantic import TypeAdapter

        self.adapter: Any = jsonrpc_message_adapter
        self.requests: Mapping[str, Any] = MONOLITH_REQUESTS
        self.notifications: Mapping[str, Any] = MONOLITH_NOTIFICATIONS
        rows: dict[str, Any] = dict(MONOLITH_RESULTS)
        self.results: dict[str, Any] = {m: TypeAdapter(t) for m, t in rows.items()}

    def decoder(self, message: corpus.Message) -> Callable[[], Any]:
        """The SDK's decode of ``message``: envelope, then the method's typed model."""
        validate_json = self.adapter.validate_json
        data = message.data
        if message.kind == "response":
            result_adapter = self.results[message.method]

            def decode_response() -> Any:
                envelope = validate_json(data, by_name=False)
                return result_adapter.validate_python(envelope.result, by_name=False)

            return decode_response
        table = self.requests if message.kind == "request" else self.notifications
        model = table[message.method]

        def decode_message() -> Any:
            envelope = validate_json(data, by_name=False)
            body = {"method": envelope.method, "params": envelope.params}
            return model.model_validate(body, by_name=False)

        return decode_message


# -- mcpspec ---------------------------------------------------------------------------------------


def codec_decoder(codec: Any, message: corpus.Message) -> Callable[[], Any]:
    """``codec.decode``, plus ``decode_result`` for a response.

    When the codec has the single-pass ``decode_response(data, method)`` of issue 4, a
    response is decoded with it instead (typed result, one pass).
    """
    decode, data = codec.decode, message.data
    if message.kind == "response":
        method = message.method
        single_pass = getattr(codec, "decode_response", None)
        if single_pass is not None:
            return lambda: single_pass(data=data, method=method).result
        decode_result = codec.decode_result

        def decode_response() -> Any:
            return decode_result(method, decode(data).result)

        return decode_response
    return lambda: decode(data)


def direct_decoder(codec: Any, message: corpus.Message) -> Callable[[], Any]:
    """Reference: one msgspec pass into the message's exact type (method known)."""
    if message.kind == "response":
        result_type = codec.result_type(message.method)
        envelope = msgspec.defstruct(
            "DirectResponse",
            [("jsonrpc", Literal["2.0"]), ("id", int | str), ("result", result_type)],
            kw_only=True,
        )
        target: Any = envelope
    else:
        table = codec.requests if message.kind == "request" else codec.notifications
        target = table[message.method]
    decode, data = msgspec.json.Decoder(target).decode, message.data
    return lambda: decode(data)


def typed_value(codec: Any, message: corpus.Message) -> Any:
    """The typed mcpspec value of ``message`` (what a sender passes to ``encode``)."""
    decoded = codec.decode(message.data)
    if message.kind == "response":
        return ResultResponse(
            id=decoded.id, result=codec.decode_result(message.method, decoded.result)
        )
    return decoded


class _Envelope(msgspec.Struct):
    """The JSON-RPC envelope a proxy reads: routing keys, everything else left raw."""

    jsonrpc: str
    method: str | None = None
    id: int | str | None = None
    params: msgspec.Raw = msgspec.Raw()
    result: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()


_ENVELOPE_DECODER: Final = msgspec.json.Decoder(_Envelope)


def zero_copy_forwarder(message: corpus.Message) -> Callable[[], Any]:
    """Envelope-only decode, route on method (or id for a response), forward the bytes."""
    decode, data = _ENVELOPE_DECODER.decode, message.data
    upstream: collections.deque[bytes] = collections.deque(maxlen=1)
    routes = {message.method: upstream.append}
    pending: dict[Any, Callable[[bytes], None]] = {message.id: upstream.append}

    def forward() -> Any:
        envelope = decode(data)
        if envelope.method is not None:
            routes[envelope.method](data)
        else:
            pending[envelope.id](data)
        return envelope

    return forward


def full_forwarder(codec: Any, message: corpus.Message) -> Callable[[], Any]:
    """Full typed decode, route, and re-encode before forwarding."""

    decode, encode, data = codec.decode, codec.encode, message.data
    upstream: collections.deque[bytes] = collections.deque(maxlen=1)
    if message.kind == "response":
        decode_result, method = codec.decode_result, message.method

        def forward_response() -> Any:
            response = decode(data)
            typed = decode_result(method, response.result)
            upstream.append(encode(ResultResponse(id=response.id, result=typed)))
            return typed

        return forward_response

    def forward_message() -> Any:
        value = decode(data)
        upstream.append(encode(value))
        return value

    return forward_message


# -- sessions (mcpspec.runtime) --------------------------------------------------------------------

_SERVER_CAPS: Final = {
    "logging": {},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "tools": {"listChanged": True},
    "completions": {},
}
_INFO: Final = {"name": "mcpspec-bench", "version": "1.0.0"}

#: Calls per batch for operations that need a fresh session per call (the handshake).
POOL_LOOPS: Final = 32


def _client_caps(revision: str) -> dict[str, Any]:
    """The client capabilities the benchmark sessions declare in ``revision``."""
    caps: dict[str, Any] = {"roots": {"listChanged": True}, "sampling": {}}
    if revision >= "2025-06-18":
        caps["elicitation"] = {}
    return caps


def session_pair(revision: str) -> tuple[Any, Any]:
    """A client and a server session of ``revision``, negotiated and ready."""
    server = _fresh_server(revision)
    client = ClientSession(
        [revision], mode=revision, info=_INFO, capabilities=_client_caps(revision)
    )
    if revision < "2026-07-28":
        request = server.receive(client.start())[-1]
        answer = ResultResponse(id=request.request_id, result=server.initialize_result())
        for event in client.receive(server.send(answer)):
            if isinstance(event, Outgoing):
                server.receive(event.data)
    assert server.revision == client.revision == revision, (server.revision, client.revision)
    return client, server


def _pool(make: Callable[[], Any], size: int) -> list[Any]:
    """``size`` fresh values of ``make()``, built before timing starts."""
    return [make() for _ in range(size)]


def session_receiver(
    revision: str, codec: Any, message: corpus.Message, settings: Settings
) -> tuple[Callable[[], Any], int]:
    """The receiving session's ``receive(bytes)`` of ``message`` and the batch cap.

    The server session receives what a client sends, the client session what a server
    sends, both negotiated and ready, so every call takes the full path: decode, the
    pending table, progress, the lifecycle and capability checks, the typed event.
    What one call changes is put back between calls, which costs a dict operation:
    a request's pending entry and progress token are dropped, a response's pending
    entry is put back, the progress bookkeeping is reset. The handshake messages
    (``initialize`` request and result) change the lifecycle, so each of those calls
    gets a fresh session from a pool built beforehand, in batches of ``POOL_LOOPS``.
    """
    data = message.data
    if message.method == "initialize":
        size = POOL_LOOPS * (settings.rounds + 2)
        if message.kind == "request":
            servers = _pool(lambda: _fresh_server(revision), size)
            return (lambda: servers.pop().receive(data)), POOL_LOOPS
        clients = _pool(lambda: _started_client(revision), size)
        return (lambda: clients.pop().receive(data)), POOL_LOOPS
    client, server = session_pair(revision)
    if message.kind == "request":
        receive = server.receive
        incoming = server._pending.incoming
        reporting = server._progress.reporting.active
        request_id = message.id

        def receive_request() -> Any:
            events = receive(data)
            incoming.pop(request_id, None)
            reporting.clear()
            return events

        return receive_request, settings.max_loops
    if message.kind == "response":
        receive = client.receive
        outgoing = client._pending.outgoing
        record = _outgoing_record(client, codec, message)

        def receive_response() -> Any:
            outgoing[message.id] = record
            return receive(data)

        return receive_response, settings.max_loops
    # A progress notification for a request the client sent with that token.
    token = message.value["params"]["progressToken"]
    request = _request_for(client, codec, "tools/call", 9001)
    client.send(request, progress_token=token)
    last = client._progress.expected.last
    receive = client.receive

    def receive_progress() -> Any:
        last.clear()
        return receive(data)

    return receive_progress, settings.max_loops


def _fresh_server(revision: str) -> Any:
    """A new server session of ``revision``, before the handshake."""
    return ServerSession([revision], info=_INFO, capabilities=_SERVER_CAPS)


def _started_client(revision: str) -> Any:
    """A new client session of ``revision`` that has sent its first request."""
    client = ClientSession(
        [revision], mode=revision, info=_INFO, capabilities=_client_caps(revision)
    )
    client.start()
    return client


def _request_for(client: Any, codec: Any, method: str, request_id: int) -> Any:
    """A valid request of ``method`` from the client (the corpus' tools/call, or a
    minimal one), with ``request_id``."""
    module = client.types
    if method == "tools/call":
        params: dict[str, Any] = {"name": "search_issues", "arguments": {"q": "x"}}
    elif method == "resources/read":
        params = {"uri": "file:///var/log/acme/api-2025-07-01.log"}
    else:
        params = {}
    if codec.revision >= "2026-07-28":
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": codec.revision,
            "io.modelcontextprotocol/clientInfo": _INFO,
            "io.modelcontextprotocol/clientCapabilities": _client_caps(codec.revision),
        }
    wire = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    value = codec.decode(orjson.dumps(wire))
    assert type(value).__module__ == module.__name__
    return value


def _outgoing_record(client: Any, codec: Any, message: corpus.Message) -> Any:
    """The pending-table record of a request the response ``message`` answers."""
    assert isinstance(message.id, int)
    client.send(_request_for(client, codec, message.method, message.id))
    return client._pending.outgoing[message.id]


# -- per-message measurement -----------------------------------------------------------------------


@dataclass
class MessageResult:
    """Everything measured for one corpus message."""

    name: str
    kind: str
    size: int
    decode: Timing
    encode: Timing

    def row(self) -> dict[str, Any]:
        """The JSON form: per operation, median µs and ratios."""
        ops: dict[str, Any] = {}
        for timing, floor, sdk in ((self.decode, FLOOR, SDK), (self.encode, ENC_FLOOR, ENC_SDK)):
            for op in timing.rounds:
                entry = {
                    "median_us": timing.median_us(op),
                    "min_us": min(timing.rounds[op]) * 1e6,
                    "ratio_to_floor": timing.ratio(op, floor),
                }
                if sdk in timing.rounds:
                    entry["sdk_ratio"] = timing.ratio(sdk, op)
                ops[op] = entry
        return {"name": self.name, "kind": self.kind, "bytes": self.size, "ops": ops}


@dataclass
class Settings:
    """How long to measure."""

    rounds: int
    batch_s: float
    max_loops: int
    import_runs: int
    echo_calls: int


def measure_message(
    revision: str, codec: Any, sdk: Sdk, message: corpus.Message, settings: Settings
) -> MessageResult:
    """Decode and encode operations of one message, side by side."""
    decode_ops: dict[str, Callable[[], object]] = {
        FLOOR: lambda: orjson.loads(message.data),
        UNTYPED: lambda: msgspec.json.decode(message.data),
        CODEC: codec_decoder(codec, message),
    }
    caps: dict[str, int] = {}
    decode_ops[SESSION], caps[SESSION] = session_receiver(revision, codec, message, settings)
    decode_ops[DIRECT] = direct_decoder(codec, message)
    decode_ops[SDK] = sdk.decoder(message)
    decode_ops[FWD_RAW] = zero_copy_forwarder(message)
    decode_ops[FWD_FULL] = full_forwarder(codec, message)

    value = typed_value(codec, message)
    sdk_value: Any = decode_ops[SDK]()
    plain = message.value
    encode_ops: dict[str, Callable[[], object]] = {
        ENC_FLOOR: lambda: orjson.dumps(plain),
        ENC_CODEC: lambda: codec.encode(value),
        ENC_SDK: lambda: sdk_value.model_dump_json(by_alias=True, exclude_none=True),
    }
    _check_outputs(codec, message, decode_ops, value)
    _check_session(revision, codec, message, settings)
    decode = time_side_by_side(
        decode_ops,
        rounds=settings.rounds,
        batch_s=settings.batch_s,
        max_loops=settings.max_loops,
        caps=caps,
    )
    encode = time_side_by_side(
        encode_ops, rounds=settings.rounds, batch_s=settings.batch_s, max_loops=settings.max_loops
    )
    return MessageResult(message.name, message.kind, len(message.data), decode, encode)


def _check_session(revision: str, codec: Any, message: corpus.Message, settings: Settings) -> None:
    """Assert that the session path accepts ``message``, twice in a row, with the event
    a receiver expects (not a ``ProtocolViolation``)."""

    expected: type = {
        "request": RequestReceived,
        "response": ResponseReceived,
        "notification": ProgressReceived,
    }[message.kind]
    receiver = session_receiver(revision, codec, message, settings)
    for _ in range(2):
        events = receiver[0]()
        assert any(isinstance(e, expected) for e in events), (revision, message.name, events)
        typed = next(e for e in events if isinstance(e, expected))
        value = getattr(typed, "result", None) or getattr(typed, "request", None)
        value = value or getattr(typed, "notification", None)
        assert type(value).__module__ == codec_module(codec), (message.name, type(value))


def codec_module(codec: Any) -> str:
    """The generated module name of ``codec``'s revision."""
    return mcpspec.module_name(str(codec.revision))


def _check_outputs(
    codec: Any, message: corpus.Message, ops: dict[str, Callable[[], object]], value: Any
) -> None:
    """Assert that every operation does the work it is timed for."""
    assert orjson.loads(codec.encode(value)) is not None
    typed = ops[CODEC]()
    assert isinstance(typed, msgspec.Struct), (message.name, typed)
    assert type(typed).__module__ == mcpspec.module_name(codec.revision), type(typed)
    assert isinstance(ops[DIRECT](), msgspec.Struct)
    sdk_typed = ops[SDK]()
    assert type(sdk_typed).__module__.startswith("mcp_types"), type(sdk_typed)
    envelope = ops[FWD_RAW]()
    assert isinstance(envelope, _Envelope)
    body = envelope.result if message.kind == "response" else envelope.params
    assert orjson.loads(bytes(body)) == message.value.get("result", message.value.get("params"))
    ops[FWD_FULL]()


# -- member order ----------------------------------------------------------------------------------

#: Messages whose member order is varied (the TypeScript SDK writes ``jsonrpc`` and ``id``
#: after ``method``/``params`` or ``result``).
KEY_ORDER_MESSAGES: Final = ("tools/call request", "tools/call result", "progress notification")


def typescript_order(message: corpus.Message) -> bytes:
    """``message`` with its members in the order the official TypeScript SDK writes them."""
    order = ("method", "params", "result", "error", "jsonrpc", "id")
    value = {key: message.value[key] for key in order if key in message.value}
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def floor_of(data: bytes) -> Callable[[], object]:
    """``orjson.loads`` of ``data``, ready to repeat."""
    return lambda: orjson.loads(data)


def key_order(codec: Any, messages: list[corpus.Message], settings: Settings) -> list[Any]:
    """``codec.decode`` (+ ``decode_result``) ÷ the floor, for the corpus' member order and
    the TypeScript SDK's, side by side (not a target: it shows order-dependent paths)."""
    rows = []
    for message in messages:
        if message.name not in KEY_ORDER_MESSAGES:
            continue
        other = corpus.Message(
            message.name,
            message.kind,
            message.method,
            message.sender,
            message.id,
            message.value,
            typescript_order(message),
        )
        ops: dict[str, Callable[[], object]] = {
            "floor": floor_of(message.data),
            "codec": codec_decoder(codec, message),
            "floor ts": floor_of(other.data),
            "codec ts": codec_decoder(codec, other),
        }
        timing = time_side_by_side(
            ops, rounds=settings.rounds, batch_s=settings.batch_s, max_loops=settings.max_loops
        )
        rows.append(
            {
                "name": message.name,
                "standard": timing.ratio("codec", "floor"),
                "typescript": timing.ratio("codec ts", "floor ts"),
            }
        )
    return rows


# -- import time, memory ---------------------------------------------------------------------------

_IMPORT_SNIPPET: Final = (
    "import time, sys; t = time.perf_counter(); import {module}; "
    "sys.stdout.write(repr(time.perf_counter() - t))"
)


def import_times_ms(
    modules: list[str], runs: int, pythons: Mapping[str, str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Wall time of ``import module`` in fresh interpreters, median of ``runs`` (after a
    warm-up run that writes the ``.pyc`` files), and, for mcpspec modules, the same with
    ``msgspec`` imported beforehand (``own_ms``: the part that is mcpspec's own), for
    each environment of ``pythons`` (label -> interpreter). The runs go round-robin over
    environments and modules, so that every one sees the same load."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPROFILEIMPORTTIME"}
    snippets: dict[tuple[str, str, str], tuple[str, str]] = {}
    for label, python in pythons.items():
        for module in modules:
            snippet = _IMPORT_SNIPPET.format(module=module)
            snippets[(label, module, "median_ms")] = (python, snippet)
            if module.startswith("mcpspec"):
                snippets[(label, module, "own_ms")] = (python, "import msgspec; " + snippet)
    samples: dict[tuple[str, str, str], list[float]] = {key: [] for key in snippets}
    for round_ in range(runs + 1):
        for key, (python, snippet) in snippets.items():
            out = subprocess.run(
                [python, "-c", snippet], check=True, capture_output=True, text=True, env=env
            )
            if round_:  # the first round is the warm-up
                samples[key].append(float(out.stdout) * 1e3)
    report: dict[str, dict[str, dict[str, Any]]] = {label: {} for label in pythons}
    for (label, module, kind), values in samples.items():
        entry = report[label].setdefault(module, {})
        entry[kind] = statistics.median(values)
        if kind == "median_ms":
            entry["samples_ms"] = values
    return report


def runtime_only_python(directory: Path) -> str | None:
    """The interpreter of a new virtual environment in ``directory`` that holds mcpspec
    and msgspec alone, as ``pip install mcpspec`` leaves a fresh environment (links to
    the installed packages, so nothing is downloaded); ``None`` for an editable install,
    whose packages are not folders to link.

    The benchmark's own environment also holds the SDK's dependencies; one of them,
    ``typing_extensions``, is imported by msgspec when present and costs its import about
    15 ms more."""
    if editable_install():
        return None
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True)
    python = str(directory / "bin" / "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    for package in (msgspec, mcpspec):
        folder = Path(package.__file__ or "").parent
        (Path(site) / folder.name).symlink_to(folder, target_is_directory=True)
    return python


def editable_install() -> bool:
    """Whether mcpspec is imported from a source checkout (an editable install): its
    import then also loads setuptools' editable finder, tens of milliseconds a regular
    install does not pay. (The package's folders are mapped: ``generated/`` is
    ``mcpspec``, so a regular install is the one whose folder is named ``mcpspec``.)"""
    return Path(mcpspec.__file__ or "").parent.name != "mcpspec"


def import_breakdown(module: str, top: int = 8) -> list[tuple[str, float, float]]:
    """``-X importtime`` of ``module``: the ``top`` modules by self time (name, self ms,
    cumulative ms), from one fresh process."""
    command = [sys.executable, "-X", "importtime", "-c", f"import {module}"]
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    rows = []
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:") :].split("|")
        rows.append((name.strip(), int(self_us) / 1e3, int(cumulative_us) / 1e3))
    return sorted(rows, key=lambda row: -row[1])[:top]


def _retained_bytes(make: Callable[[], Any]) -> tuple[int, Any]:
    """Bytes still allocated after ``make()`` returns, while its value is kept."""
    make()  # warm caches (decoders, key caches, validators) outside the trace
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        value = make()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return after - before, value


def retained_memory(codec: Any, sdk: Sdk, message: corpus.Message) -> dict[str, Any]:
    """Memory a decoded 200-tool list keeps: mcpspec, the SDK, and plain dicts."""
    data = message.data
    codec_decode = codec_decoder(codec, message)
    sdk_decode = sdk.decoder(message)
    mcpspec_bytes, kept = _retained_bytes(codec_decode)
    assert len(kept.tools) == 200
    sdk_bytes, kept = _retained_bytes(sdk_decode)
    assert len(kept.tools) == 200
    dict_bytes, kept = _retained_bytes(lambda: orjson.loads(data)["result"])
    del kept
    return {
        "mcpspec_kib": mcpspec_bytes / 1024,
        "sdk_kib": sdk_bytes / 1024,
        "orjson_dict_kib": dict_bytes / 1024,
        "ratio_to_sdk": mcpspec_bytes / sdk_bytes,
    }


# -- echo exchange (sessions) ----------------------------------------------------------------------


def mcpspec_echo(revision: str, calls: int) -> dict[str, Any]:
    """Echo ``tools/call`` round trips between mcpspec's two sans-IO sessions.

    Per call: ``ClientSession.send`` of a ``CallToolRequest`` (bytes),
    ``ServerSession.receive``, ``ServerSession.send`` of the ``CallToolResult``,
    ``ClientSession.receive``; ``sync`` feeds the bytes straight across, ``asyncio`` runs
    each side as a task joined by two ``asyncio.Queue`` of bytes (closer to what the SDK's
    anyio streams cost).
    """
    sync = _mcpspec_echo_sync(revision, calls)
    async_ = asyncio.run(_mcpspec_echo_async(revision, calls))
    return {"calls": calls, **sync, "asyncio_calls_per_s": async_}


def _echo_parts(client: Any) -> tuple[Callable[[int], Any], Callable[[Any], Any]]:
    """Builders of the echo request (by index) and of the echo result (from a request)."""
    module = client.types

    def request(i: int) -> Any:
        params = module.CallToolRequestParams(name="echo", arguments={"message": f"hello {i}"})
        return module.CallToolRequest(id=client.next_id(), params=params)

    def result(call: Any) -> Any:
        text = str(call.params.arguments["message"])
        return module.CallToolResult(content=[module.TextContent(text=text)])

    return request, result


def _mcpspec_echo_sync(revision: str, calls: int) -> dict[str, Any]:

    client, server = session_pair(revision)
    request, result = _echo_parts(client)

    def one(i: int) -> Any:
        event = server.receive(client.send(request(i)))[-1]
        assert isinstance(event, RequestReceived), event
        answer = server.send(ResultResponse(id=event.request_id, result=result(event.request)))
        response = client.receive(answer)[-1]
        assert isinstance(response, ResponseReceived), response
        return response

    for i in range(5):
        one(i)
    start = time.perf_counter()
    for i in range(calls):
        last = one(i)
    elapsed = time.perf_counter() - start
    assert last.result.content[0].text == f"hello {calls - 1}"
    return {"seconds": elapsed, "calls_per_s": calls / elapsed}


async def _mcpspec_echo_async(revision: str, calls: int) -> float:

    client, server = session_pair(revision)
    request, result = _echo_parts(client)
    to_server: asyncio.Queue[bytes] = asyncio.Queue(1)
    to_client: asyncio.Queue[bytes] = asyncio.Queue(1)

    async def serve() -> None:
        while True:
            data = await to_server.get()
            for event in server.receive(data):
                if isinstance(event, RequestReceived):
                    answer = ResultResponse(id=event.request_id, result=result(event.request))
                    await to_client.put(server.send(answer))

    async def call(i: int) -> Any:
        await to_server.put(client.send(request(i)))
        response = client.receive(await to_client.get())[-1]
        assert isinstance(response, ResponseReceived), response
        return response

    task = asyncio.create_task(serve())
    for i in range(5):
        await call(i)
    start = time.perf_counter()
    for i in range(calls):
        await call(i)
    elapsed = time.perf_counter() - start
    task.cancel()
    return calls / elapsed


def sdk_echo(revision: str, calls: int) -> dict[str, Any]:
    """Echo ``tools/call`` round trips through the official SDK's session layer.

    The SDK ``Client`` (``mode="legacy"`` before 2026-07-28, the revision otherwise) talks
    to a low-level ``Server`` with one ``echo`` tool over an in-memory transport that
    serialises every message to JSON bytes and parses it back, as stdio does.
    """
    return asyncio.run(_sdk_echo(revision, calls))


async def _sdk_echo(revision: str, calls: int) -> dict[str, Any]:
    import mcp_types as types
    from mcp.client.client import Client
    from mcp.server.lowlevel.server import Server

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = str((params.arguments or {}).get("message", ""))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    echo_tool = types.Tool(
        name="echo",
        description="Echo a message back unchanged.",
        input_schema={
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[echo_tool])

    server: Any = Server("echo", version="1.0.0", on_call_tool=call_tool, on_list_tools=list_tools)
    transport = _JsonBridge(server)
    mode: Any = revision if revision >= "2026-07-28" else "legacy"
    async with Client(transport, mode=mode) as client:
        for _ in range(5):
            await client.call_tool("echo", {"message": "warm-up"})
        start = time.perf_counter()
        for i in range(calls):
            result = await client.call_tool("echo", {"message": f"hello {i}"})
        elapsed = time.perf_counter() - start
    assert result.content[0].text == f"hello {calls - 1}"  # type: ignore[union-attr]
    return {"calls": calls, "seconds": elapsed, "calls_per_s": calls / elapsed}


class _JsonBridge:
    """An SDK ``Transport``: client and server streams joined by JSON bytes, like stdio."""

    def __init__(self, server: Any) -> None:
        self._server = server
        self._stack: Any = None

    async def __aenter__(self) -> Any:
        import contextlib

        import anyio
        from mcp.shared._context_streams import create_context_streams
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter

        stack = contextlib.AsyncExitStack()
        await stack.__aenter__()
        self._stack = stack

        def pipe() -> tuple[Any, Any]:
            return create_context_streams[Any](1)

        client_out, bridge_from_client = pipe()
        bridge_to_server, server_in = pipe()
        server_out, bridge_from_server = pipe()
        bridge_to_client, client_in = pipe()
        for stream in (client_out, bridge_from_client, bridge_to_server, server_in):
            await stack.enter_async_context(stream)
        for stream in (server_out, bridge_from_server, bridge_to_client, client_in):
            await stack.enter_async_context(stream)

        async def relay(source: Any, sink: Any) -> None:
            async with sink:
                async for item in source:
                    wire = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    parsed = jsonrpc_message_adapter.validate_json(wire, by_name=False)
                    await sink.send(SessionMessage(parsed))

        group = anyio.create_task_group()
        await stack.enter_async_context(group)
        stack.callback(group.cancel_scope.cancel)
        group.start_soon(relay, bridge_from_client, bridge_to_server)
        group.start_soon(relay, bridge_from_server, bridge_to_client)
        server = self._server
        group.start_soon(
            lambda: server.run(server_in, server_out, server.create_initialization_options())
        )
        return client_in, client_out

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.__aexit__(None, None, None)


# -- reporting -------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """CPU model, cores, Python and library versions (no paths)."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor() or "unknown"
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    versions = {}
    for dist in ("msgspec", "orjson", "pydantic", "pydantic-core", "mcp-types", "mcp", "mcpspec"):
        try:
            from importlib.metadata import version

            versions[dist] = version(dist)
        except Exception:
            versions[dist] = "not installed"
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": f"{platform.system()} {platform.machine()}",
        "editable_install": editable_install(),
        "versions": versions,
    }


def _fmt_us(us: float) -> str:
    if us >= 1000:
        return f"{us:,.0f}"
    if us >= 10:
        return f"{us:.1f}"
    return f"{us:.2f}"


def _fmt_size(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.2f} MB"
    if n >= 1000:
        return f"{n / 1e3:.1f} KB"
    return f"{n} B"


def markdown_tables(report: dict[str, Any]) -> str:
    """The results as markdown: per revision a decode table and an encode/forward table."""
    lines: list[str] = []
    for revision, data in report["revisions"].items():
        lines += [f"### {revision}", ""]
        ops_present = [op for op in DECODE_OPS if any(op in m["ops"] for m in data["messages"])]
        decode_cols = [op for op in ops_present if op not in (FWD_RAW, FWD_FULL)]
        header = ["message", "size", *[f"{op} µs ({X}floor)" for op in decode_cols], "SDK ÷ codec"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for m in data["messages"]:
            ops = m["ops"]
            cells = [m["name"], _fmt_size(m["bytes"])]
            for op in decode_cols:
                if op not in ops:
                    cells.append("n/a")
                elif op == FLOOR:
                    cells.append(_fmt_us(ops[op]["median_us"]))
                else:
                    cells.append(
                        f"{_fmt_us(ops[op]['median_us'])} ({ops[op]['ratio_to_floor']:.2f})"
                    )
            cells.append(f"{ops[CODEC]['sdk_ratio']:.1f}{X}")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        header = [
            "message",
            f"{ENC_FLOOR} µs",
            f"{ENC_CODEC} µs ({X}floor)",
            f"{ENC_SDK} µs ({X}floor)",
            "SDK ÷ codec",
            f"{FWD_RAW} µs",
            f"{FWD_FULL} µs",
            "full ÷ zero-copy",
        ]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for m in data["messages"]:
            ops = m["ops"]
            cells = [
                m["name"],
                _fmt_us(ops[ENC_FLOOR]["median_us"]),
                f"{_fmt_us(ops[ENC_CODEC]['median_us'])} ({ops[ENC_CODEC]['ratio_to_floor']:.2f})",
                f"{_fmt_us(ops[ENC_SDK]['median_us'])} ({ops[ENC_SDK]['ratio_to_floor']:.2f})",
                f"{ops[ENC_CODEC]['sdk_ratio']:.1f}{X}",
                _fmt_us(ops[FWD_RAW]["median_us"]),
                _fmt_us(ops[FWD_FULL]["median_us"]),
                f"{m['forward_speedup']:.1f}{X}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
        mem = data["memory"]
        lines += [
            "",
            f"Retained memory of the decoded 200-tool list: mcpspec {mem['mcpspec_kib']:,.0f} KiB, "
            f"SDK {mem['sdk_kib']:,.0f} KiB ({mem['ratio_to_sdk']:.3f}{X} SDK), "
            f"plain dicts {mem['orjson_dict_kib']:,.0f} KiB.",
        ]
        order = data.get("key_order", [])
        if order:
            order_cells = ", ".join(
                f"{row['name']} {row['standard']:.2f}{X} vs {row['typescript']:.2f}{X}"
                for row in order
            )
            lines.append(
                "codec.decode ÷ floor with the corpus' member order (`jsonrpc` first) vs the "
                f"TypeScript SDK's (`jsonrpc`, `id` last): {order_cells}."
            )
        echo = data.get("echo", {})
        if echo:
            parts = []
            mine, theirs = echo.get("mcpspec"), echo.get("sdk")
            parts.append(
                f"mcpspec {mine['calls_per_s']:,.0f} calls/s sans-IO, "
                f"{mine['asyncio_calls_per_s']:,.0f} calls/s over asyncio queues"
            )
            if theirs:
                parts.append(f"official SDK {theirs['calls_per_s']:,.0f} calls/s")
            else:
                parts.append("official SDK not measured")
            lines.append(f"Echo tools/call exchange through two sessions: {', '.join(parts)}.")
        lines.append("")
    lines += ["### Import time (fresh process, median)", ""]
    if report["machine"].get("editable_install"):
        lines += [
            "mcpspec is an editable install here: every mcpspec import also pays for "
            "setuptools' editable finder. `nox -s bench` (a regular install) gives the "
            "numbers users see.",
            "",
        ]
    runtime_only = report.get("imports_runtime_only", {})
    lines += [
        "Two environments: the benchmark's own (the SDK and its dependencies installed "
        "too), and a fresh one holding mcpspec and msgspec alone, as `pip install mcpspec` "
        "leaves it.",
        "",
        "| module | ms | ms with msgspec already imported "
        "| ms, msgspec only | ms with msgspec already imported, msgspec only |",
        "|---|---|---|---|---|",
    ]

    def cell(entry: Mapping[str, Any], key: str) -> str:
        return f"{entry[key]:.1f}" if key in entry else "-"

    for module, entry in report["imports"].items():
        alone = runtime_only.get(module, {})
        lines.append(
            f"| `{module}` | {cell(entry, 'median_ms')} | {cell(entry, 'own_ms')} "
            f"| {cell(alone, 'median_ms')} | {cell(alone, 'own_ms')} |"
        )
    lines.append("")
    return "\n".join(lines)


def markdown_targets(report: dict[str, Any]) -> str:
    """The targets as a markdown table."""
    lines = ["| target | limit | measured | worst case | result |", "|---|---|---|---|---|"]
    for t in report["targets"]:
        lines.append(
            f"| {t['target']} | {t['limit']} | {t['measured']} | {t['worst']} | "
            f"{'PASS' if t['pass'] else ('n/a' if t['pass'] is None else 'MISS')} |"
        )
    return "\n".join(lines)


def markdown_document(report: dict[str, Any]) -> str:
    """The whole RESULTS.md."""
    m = report["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    s = report["settings"]
    return "\n".join(
        [
            "# mcpspec benchmark results",
            "",
            "Written by `python bench/run.py --markdown bench/RESULTS.md`; method and operations "
            "are described in the docstring of `bench/run.py`.",
            "",
            "## Machine",
            "",
            f"- CPU: {m['cpu']}",
            f"- cores: {m['cores']} ({m['usable_cores']} usable)",
            f"- Python: {m['implementation']} {m['python']} on {m['system']}",
            f"- libraries: {versions}",
            f"- run: {s['rounds']} rounds of ~{s['batch_ms']:.0f} ms batches per operation"
            f"{' (SMOKE: numbers are not meaningful)' if s['smoke'] else ''}",
            "",
            "## Targets",
            "",
            markdown_targets(report),
            "",
            "## Results",
            "",
            "Cells: median µs per call, and in parentheses the ratio to the floor "
            "(`orjson.loads` for decoding, `orjson.dumps` of the dict for encoding), "
            "measured side by side. `SDK ÷ codec`: how many times faster than the official "
            "SDK. `direct msgspec` is a reference (one msgspec pass into the exact type), "
            "not an mcpspec API.",
            "",
            markdown_tables(report),
            *(
                ["## Stdio round trips", "", stdio.markdown(report["stdio"])]
                if "stdio" in report
                else []
            ),
            *(
                ["## HTTP round trips", "", http_bench.markdown(report["http"])]
                if "http" in report
                else []
            ),
            *(
                ["## mcpspec check", "", check_bench.markdown(report["check"])]
                if "check" in report
                else []
            ),
            *(
                ["## Tool decorator", "", tool_path.markdown(report["tool_path"])]
                if "tool_path" in report
                else []
            ),
            *(
                [before_after.markdown(report["before_after"], level=2)]
                if "before_after" in report
                else []
            ),
        ]
    )


def print_table(report: dict[str, Any]) -> None:
    """The results and the targets on stdout."""
    print(markdown_tables(report))
    print("Targets:")
    for t in report["targets"]:
        verdict = "PASS" if t["pass"] else ("n/a " if t["pass"] is None else "MISS")
        print(f"  {verdict}  {t['target']}: {t['measured']} (limit {t['limit']}; {t['worst']})")


# -- targets ---------------------------------------------------------------------------------------


def evaluate_targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """PASS/MISS of every target of issue 4, over all measured revisions."""
    targets: list[dict[str, Any]] = []

    def per_message(op: str, key: str, base: str) -> list[tuple[str, str, int, float]]:
        out = []
        for revision, data in report["revisions"].items():
            for m in data["messages"]:
                if op in m["ops"]:
                    out.append((revision, m["name"], m["bytes"], m["ops"][op][key]))
        del base
        return out

    def corpus_medians(op: str, key: str) -> dict[str, float]:
        medians = {}
        for revision, data in report["revisions"].items():
            values = [m["ops"][op][key] for m in data["messages"] if op in m["ops"]]
            if values:
                medians[revision] = statistics.median(values)
        return medians

    def add(
        target: str, limit: str, measured: str, worst: str, ok: bool | None, **detail: Any
    ) -> None:
        targets.append(
            {"target": target, "limit": limit, "measured": measured, "worst": worst, "pass": ok}
        )
        targets[-1].update(detail)

    def add_corpus_median(
        target: str, op: str, key: str, limit: float, at_most: bool, digits: int
    ) -> bool:
        """A target on the corpus median of each revision; False when not measured."""
        meds = corpus_medians(op, key)
        if not meds:
            return False
        worst_rev = (max if at_most else min)(meds, key=lambda r: meds[r])
        add(
            target,
            f"{'≤' if at_most else '≥'} {limit:.{1 if limit < 10 else 0}f}{X}",
            ", ".join(f"{r}: {v:.{digits}f}{X}" for r, v in meds.items()),
            f"{worst_rev}: {meds[worst_rev]:.{digits}f}{X}",
            all((v <= limit) if at_most else (v >= limit) for v in meds.values()),
            per_revision=meds,
        )
        return True

    # 1. codec.decode vs orjson.loads
    add_corpus_median(
        "codec.decode (+decode_result) ÷ orjson.loads, corpus median",
        CODEC, "ratio_to_floor", 1.0, at_most=True, digits=2,
    )  # fmt: skip
    rows = per_message(CODEC, "ratio_to_floor", FLOOR)
    worst = max(rows, key=lambda row: row[3])
    over = [row for row in rows if row[3] > 1.3]
    add(
        "codec.decode (+decode_result) ÷ orjson.loads, every message",
        f"≤ 1.3{X}",
        f"{len(over)} of {len(rows)} messages over",
        f"{worst[0]} {worst[1]}: {worst[3]:.2f}{X}",
        not over,
        over=[list(row) for row in over],
    )
    # 2. session receive
    if not add_corpus_median(
        "session.receive ÷ orjson.loads, corpus median",
        SESSION, "ratio_to_floor", 1.5, at_most=True, digits=2,
    ):  # fmt: skip
        add(
            "session.receive ÷ orjson.loads, corpus median",
            f"≤ 1.5{X}",
            "not measured: mcpspec.runtime has no sessions yet (hook in bench/run.py)",
            "-",
            None,
        )
    # 3. SDK speedup
    add_corpus_median(
        "SDK typed ÷ codec.decode, corpus median",
        CODEC, "sdk_ratio", 10.0, at_most=False, digits=1,
    )  # fmt: skip
    rows = [row for row in per_message(CODEC, "sdk_ratio", SDK) if row[2] < LARGE]
    worst = min(rows, key=lambda row: row[3])
    under = [row for row in rows if row[3] < 7]
    add(
        "SDK typed ÷ codec.decode, every message < 500 KB",
        f"≥ 7{X}",
        f"{len(under)} of {len(rows)} messages under",
        f"{worst[0]} {worst[1]}: {worst[3]:.1f}{X}",
        not under,
        under=[list(row) for row in under],
    )
    # 4. encode
    rows = per_message(ENC_CODEC, "ratio_to_floor", ENC_FLOOR)
    worst = max(rows, key=lambda row: row[3])
    over = [row for row in rows if row[3] > 2.0]
    med = statistics.median(row[3] for row in rows)
    add(
        "codec.encode ÷ orjson.dumps(dict), every message",
        f"≤ 2.0{X}",
        f"median {med:.2f}{X}; {len(over)} of {len(rows)} messages over",
        f"{worst[0]} {worst[1]}: {worst[3]:.2f}{X}",
        not over,
        over=[list(row) for row in over],
    )
    # 5. imports
    # Judged where mcpspec is installed with its dependency alone, when that was measured.
    imports = report.get("imports_runtime_only") or report["imports"]
    where = "msgspec only" if report.get("imports_runtime_only") else "benchmark environment"
    for module, limit in (("mcpspec.v2025_11_25", 50.0), ("mcpspec.runtime", 80.0)):
        entry = imports.get(module)
        if entry is None:
            continue
        msgspec_ms = imports.get("msgspec", {}).get("median_ms", float("nan"))
        editable = " (editable install)" if report["machine"].get("editable_install") else ""
        bench_ms = report["imports"].get(module, {}).get("median_ms", float("nan"))
        add(
            f"import {module} (fresh process)",
            f"≤ {limit:.0f} ms",
            f"{entry['median_ms']:.1f} ms ({where}){editable}",
            f"mcpspec's own part {entry.get('own_ms', float('nan')):.1f} ms; "
            f"msgspec alone {msgspec_ms:.1f} ms; with the SDK's dependencies "
            f"installed too {bench_ms:.1f} ms",
            entry["median_ms"] <= limit,
        )
    # 6. memory
    ratios = {r: d["memory"]["ratio_to_sdk"] for r, d in report["revisions"].items()}
    worst_rev = max(ratios, key=lambda r: ratios[r])
    add(
        "retained memory of a decoded 200-tool list ÷ SDK",
        f"≤ 0.65{X}",
        ", ".join(f"{r}: {v:.3f}{X}" for r, v in ratios.items()),
        f"{worst_rev}: {ratios[worst_rev]:.3f}{X}",
        all(v <= 0.65 for v in ratios.values()),
    )
    return targets


# -- profiling -------------------------------------------------------------------------------------


def profile_calls(fn: Callable[[], object], calls: int, top: int = 14) -> str:
    """cProfile of ``calls`` calls of ``fn``: the ``top`` functions by own time."""
    fn()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


# -- main ------------------------------------------------------------------------------------------


def _revision_report(
    revision: str, sdk: Sdk, settings: Settings, *, profile: bool
) -> Iterator[tuple[str, Any]]:
    codec = mcpspec.codec(revision)
    messages = corpus.build(revision)
    rows = []
    for message in messages:
        result = measure_message(revision, codec, sdk, message, settings)
        row = result.row()
        row["forward_speedup"] = result.decode.ratio(FWD_FULL, FWD_RAW)
        rows.append(row)
        codec_row = row["ops"][CODEC]
        print(
            f"  {revision} {message.name:<24} codec {codec_row['ratio_to_floor']:.2f}{X} floor,"
            f" SDK {codec_row['sdk_ratio']:.1f}{X} slower",
            file=sys.stderr,
        )
        if profile:
            calls = max(1, min(2000, int(0.3 / max(row["ops"][CODEC]["median_us"] * 1e-6, 1e-7))))
            print(f"--- profile codec {revision} {message.name} ({calls} calls)", file=sys.stderr)
            print(profile_calls(codec_decoder(codec, message), calls), file=sys.stderr)
            receiver = session_receiver(revision, codec, message, settings)
            if message.method != "initialize":
                print(f"--- profile session {revision} {message.name}", file=sys.stderr)
                print(profile_calls(receiver[0], calls), file=sys.stderr)
    yield "messages", rows
    yield "key_order", key_order(codec, messages, settings)
    tools = next(m for m in messages if m.method == "tools/list")
    yield "memory", retained_memory(codec, sdk, tools)
    echo: dict[str, Any] = {"mcpspec": mcpspec_echo(revision, settings.echo_calls)}
    try:
        echo["sdk"] = sdk_echo(revision, settings.echo_calls)
    except ImportError as exc:  # the SDK session layer (mcp) is optional
        echo["sdk"] = None
        echo["sdk_error"] = f"mcp not installed: {exc}"
    yield "echo", echo


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="a few runs only; check it works")
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    parser.add_argument("--markdown", type=Path, help="write RESULTS.md (machine, targets, table)")
    parser.add_argument(
        "--revision", action="append", choices=corpus.REVISIONS, help="repeatable; default all"
    )
    parser.add_argument("--rounds", type=int, default=None, help="timing rounds (default 25)")
    parser.add_argument("--batch-ms", type=float, default=None, help="batch length (default 8)")
    parser.add_argument("--profile", action="store_true", help="cProfile codec.decode paths too")
    parser.add_argument(
        "--baseline", metavar="REV", help="the checkout against git revision REV too (before/after)"
    )
    args = parser.parse_args(argv)

    if args.smoke:
        settings = Settings(rounds=3, batch_s=0.0005, max_loops=3, import_runs=1, echo_calls=20)
    else:
        settings = Settings(
            rounds=25, batch_s=0.008, max_loops=1_000_000, import_runs=21, echo_calls=2000
        )
    if args.rounds is not None:
        settings.rounds = args.rounds
    if args.batch_ms is not None:
        settings.batch_s = args.batch_ms / 1e3
    revisions = args.revision or list(corpus.REVISIONS)

    started = time.perf_counter()
    sdk = Sdk()
    report: dict[str, Any] = {
        "machine": machine(),
        "settings": {
            "smoke": args.smoke,
            "rounds": settings.rounds,
            "batch_ms": settings.batch_s * 1e3,
            "import_runs": settings.import_runs,
            "echo_calls": settings.echo_calls,
        },
        "revisions": {},
        "imports": {},
    }
    for revision in revisions:
        report["revisions"][revision] = dict(
            _revision_report(revision, sdk, settings, profile=args.profile)
        )
    report["stdio"] = stdio.measure(
        revisions, stdio.Settings.for_run(smoke=args.smoke, rounds=args.rounds), smoke=args.smoke
    )
    report["http"] = http_bench.measure(
        revisions,
        http_bench.Settings.for_run(smoke=args.smoke, rounds=args.rounds),
        smoke=args.smoke,
    )
    report["check"] = check_bench.measure(
        check_bench.Settings.for_run(smoke=args.smoke, rounds=args.rounds), smoke=args.smoke
    )
    report["tool_path"] = asyncio.run(
        tool_path.measure(rounds=2 if args.smoke else 9, calls=50 if args.smoke else 5_000)
    )
    eras = tuple(r for r in revisions if r in http_bench.REVISIONS)
    if args.baseline and eras:
        report["before_after"] = before_after.measure(
            args.baseline, smoke=args.smoke, rounds=args.rounds, revisions=eras
        )
    modules = [mcpspec.module_name(r) for r in revisions]
    with tempfile.TemporaryDirectory() as directory:
        pythons = {BENCH_ENV: sys.executable}
        runtime_only = runtime_only_python(Path(directory))
        if runtime_only is not None:
            pythons[RUNTIME_ONLY_ENV] = runtime_only
        imports = import_times_ms(
            [*modules, "mcpspec.runtime", "mcpspec", "msgspec"], settings.import_runs, pythons
        )
    # The SDK only in the benchmark's environment, where it is installed.
    imports[BENCH_ENV].update(
        import_times_ms(["mcp_types"], settings.import_runs, {BENCH_ENV: sys.executable})[BENCH_ENV]
    )
    report["imports"] = imports[BENCH_ENV]
    report["imports_runtime_only"] = imports.get(RUNTIME_ONLY_ENV, {})
    if args.profile:
        for module in ("mcpspec.v2025_11_25", "mcpspec.runtime"):
            report["imports"][module]["breakdown"] = import_breakdown(module)
    report["targets"] = (
        evaluate_targets(report)
        + stdio.targets(report["stdio"])
        + http_bench.targets(report["http"])
        + check_bench.targets(report["check"])
        + tool_path.targets(report["tool_path"])
    )
    report["elapsed_s"] = time.perf_counter() - started

    print(stdio.markdown(report["stdio"]))
    print(http_bench.markdown(report["http"]))
    print(check_bench.markdown(report["check"]))
    print(tool_path.markdown(report["tool_path"]))
    if "before_after" in report:
        print(before_after.markdown(report["before_after"]))
    print_table(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    if args.markdown:
        args.markdown.write_text(markdown_document(report))
    if args.smoke:
        _smoke_checks(report)
        print(f"smoke: harness OK in {report['elapsed_s']:.1f} s", file=sys.stderr)
    return 0


def _smoke_checks(report: dict[str, Any]) -> None:
    """What ``--smoke`` asserts: every measurement ran and produced sane numbers."""
    for revision, data in report["revisions"].items():
        names = [m["name"] for m in data["messages"]]
        assert len(names) == (8 if revision >= "2026-07-28" else 7), (revision, names)
        for m in data["messages"]:
            for op in (FLOOR, UNTYPED, CODEC, DIRECT, SDK, FWD_RAW, FWD_FULL, *ENCODE_OPS):
                entry = m["ops"][op]
                assert entry["median_us"] > 0 and entry["ratio_to_floor"] > 0, (revision, op)
        assert data["memory"]["mcpspec_kib"] > 0 and data["memory"]["sdk_kib"] > 0
        assert all(SESSION in m["ops"] for m in data["messages"]), revision
        assert data["echo"]["mcpspec"]["calls_per_s"] > 0, revision
    for module, entry in [*report["imports"].items(), *report["imports_runtime_only"].items()]:
        assert entry["median_ms"] > 0, module
    stdio.smoke_check(report["stdio"])
    http_bench.smoke_check(report["http"])
    check_bench.smoke_check(report["check"])
    tool_path.smoke_check(report["tool_path"])
    if "before_after" in report:
        before_after.smoke_check(report["before_after"])
    assert {t["target"] for t in report["targets"]} and all(
        t["pass"] in (True, False, None) for t in report["targets"]
    )
    markdown_document(report)


if __name__ == "__main__":
    sys.exit(main())
