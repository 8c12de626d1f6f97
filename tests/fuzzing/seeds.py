"""The seed corpus: valid wire messages of every revision, and the issue's fixed inputs.

Seeds come from three places, so that every revision and both directions are covered:
the recorded transcripts of real implementations (tests/fixtures/transcripts), the
benchmark corpus (bench/corpus.py: large realistic messages) and messages built from
the generated types through a connected session pair (cancellation, progress, batches).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

import mcpspec
from mcpspec.runtime import ResultResponse

from ..session_kit import connect, meta_for, tools_call, tools_call_result, tools_list

__all__ = [
    "ROOT",
    "Row",
    "Seed",
    "Sender",
    "corpus",
    "issue_rows",
    "nested",
]

ROOT = Path(__file__).resolve().parent.parent.parent
TRANSCRIPTS = ROOT / "tests" / "fixtures" / "transcripts"
BENCH_CORPUS = ROOT / "bench" / "corpus.py"

Sender = Literal["client", "server"]
#: Seeds above this size are large (mutated rarely: each costs milliseconds).
LARGE = 64 * 1024


@dataclass(frozen=True)
class Seed:
    """One valid message: its revision, who sends it, its bytes and where it came from."""

    revision: str
    sender: Sender
    data: bytes
    origin: str

    @property
    def large(self) -> bool:
        """Whether the message is too big to mutate often."""
        return len(self.data) > LARGE


@dataclass(frozen=True)
class Row:
    """A fixed input from the issue's table: what it is and the bytes."""

    name: str
    revision: str
    data: bytes


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _transcript_seeds() -> list[Seed]:
    seeds: list[Seed] = []
    for path in sorted(TRANSCRIPTS.glob("*/*.jsonl")):
        revision = path.parent.name
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "message" in record:
                origin = f"transcript {revision}/{path.name}"
                seeds.append(Seed(revision, record["from"], _dumps(record["message"]), origin))
    return seeds


def _bench_seeds() -> list[Seed]:
    spec = importlib.util.spec_from_file_location("mcpspec_bench_corpus", BENCH_CORPUS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return [
        Seed(revision, message.sender, message.data, f"bench {message.name}")
        for revision in mcpspec.REVISIONS
        for message in module.build(revision)
    ]


def _typed_seeds(revision: str) -> list[Seed]:
    """Messages built from the generated types, through a negotiated pair."""
    client, server = connect(revision)
    t, st = client.types, server.types
    out: list[Seed] = []

    def add(sender: Sender, data: bytes, what: str) -> None:
        out.append(Seed(revision, sender, data, f"typed {what}"))

    call = tools_call(client, client.next_id(), arguments={"a": [1, 2.5, "x", None, {}]})
    data = client.send(call, progress_token="tok-1")
    add("client", data, "tools/call with progress token")
    server.receive(data)
    progress = st.ProgressNotification(
        params=st.ProgressNotificationParams(progress_token="tok-1", progress=1, total=2)
    )
    add("server", server.send(progress), "progress notification")
    answer = ResultResponse(id=call.id, result=tools_call_result(server, "done"))
    add("server", server.send(answer), "tools/call result")
    listing = tools_list(client, client.next_id())
    data = client.send(listing)
    add("client", data, "tools/list request")
    server.receive(data)
    add("server", server.internal_error(listing.id), "error response")
    slow = tools_call(client, client.next_id())
    server.receive(client.send(slow))
    add("client", client.cancel(slow.id, "fuzz"), "cancellation")
    if revision == "2026-07-28":
        meta = meta_for(client)
        meta["io.modelcontextprotocol/logLevel"] = "debug"
        request_json = {
            "jsonrpc": "2.0",
            "id": 40,
            "method": "tools/call",
            "params": {"name": "echo", "_meta": meta},
        }
        add("client", _dumps(request_json), "tools/call with logLevel")
    else:
        add("client", _dumps({"jsonrpc": "2.0", "id": 41, "method": "ping"}), "ping")
    roots = t.ListRootsResult(roots=[t.Root(uri="file:///tmp")]) if revision < "2026" else None
    if roots is not None:
        add("client", _dumps({"jsonrpc": "2.0", "id": 1, "result": _plain(roots)}), "roots")
    return out


def _batch_seeds() -> list[Seed]:
    """2025-03-26 batches of valid members (requests, notifications, responses)."""
    members = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo"}},
    ]
    responses: list[dict[str, Any]] = [{"jsonrpc": "2.0", "id": i, "result": {}} for i in (1, 2, 3)]
    return [
        Seed("2025-03-26", "client", _dumps(members), "typed batch of requests"),
        Seed("2025-03-26", "server", _dumps(responses), "typed batch of responses"),
    ]


@functools.cache
def corpus() -> tuple[Seed, ...]:
    """Every seed, deduplicated, in a fixed order."""
    seeds = _transcript_seeds() + _bench_seeds() + _batch_seeds()
    for revision in mcpspec.REVISIONS:
        seeds += _typed_seeds(revision)
    seen: set[tuple[str, str, bytes]] = set()
    unique: list[Seed] = []
    for seed in seeds:
        key = (seed.revision, seed.sender, seed.data)
        if key not in seen:
            seen.add(key)
            unique.append(seed)
    return tuple(unique)


def nested(depth: int, inner: bytes = b"", *, kind: str = "array") -> bytes:
    """``inner`` inside ``depth`` arrays (or objects ``{"a":...}``)."""
    if kind == "array":
        return b"[" * depth + inner + b"]" * depth
    return b'{"a":' * depth + (inner or b"1") + b"}" * depth


_LOG = "io.modelcontextprotocol/logLevel"


def _stateless_call(params: dict[str, Any], meta_extra: dict[str, Any]) -> bytes:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        **meta_extra,
    }
    return _dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, "_meta": meta}}
    )


def issue_rows(*, batch_members: int = 10_000, method_bytes: int = 1_000_000) -> list[Row]:
    """The inputs of the issue's table, sized for the run (batch members, method size)."""
    bad_name = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\xff"}}'
    surrogate = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\xed\xa0\x80"}}'
    deep_arguments = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":'
        b'{"x":' + nested(1000) + b"}}}"
    )
    ones = b"[" + b"1," * (batch_members - 1) + b"1]"
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    rows = [
        Row("invalid UTF-8 string", "2025-11-25", b'"\xff"'),
        Row("invalid UTF-8 in params.name", "2025-11-25", bad_name),
        Row("surrogate bytes in params.name", "2025-11-25", surrogate),
        Row("array nested 1000 deep", "2025-11-25", nested(1000)),
        Row("object nested 1000 deep", "2025-11-25", nested(1000, kind="object")),
        Row("arguments nested 1000 deep", "2025-11-25", deep_arguments),
        Row("logLevel []", "2026-07-28", _stateless_call({"name": "echo"}, {_LOG: []})),
        Row("logLevel {}", "2026-07-28", _stateless_call({"name": "echo"}, {_LOG: {}})),
        Row("logLevel 5", "2026-07-28", _stateless_call({"name": "echo"}, {_LOG: 5})),
        Row(f"batch of {batch_members} ones", "2025-03-26", ones),
        Row("batch: ping, then invalid UTF-8", "2025-03-26", b"[" + ping + b"," + bad_name + b"]"),
        Row(
            "batch: ping, then deep nesting", "2025-03-26", b"[" + ping + b"," + nested(1000) + b"]"
        ),
        *(
            # Just under the limit, where the batch decodes and a later pass over it (from a
            # few frames deeper) may not: the pending-id row of the issue.
            Row(f"batch: ping, then {d} deep", "2025-03-26", b"[" + ping + b"," + nested(d) + b"]")
            for d in range(990, 995)
        ),
        Row(
            "unknown method, long",
            "2025-11-25",
            _dumps({"jsonrpc": "2.0", "id": 1, "method": "x" * method_bytes}),
        ),
        Row(
            "unknown method of quotes",
            "2025-11-25",
            _dumps({"jsonrpc": "2.0", "id": 1, "method": "'" * method_bytes}),
        ),
    ]
    return rows


def _plain(value: Any) -> Any:
    """A generated Struct as plain JSON data (wire names, unset fields left out)."""
    return msgspec.to_builtins(value)
