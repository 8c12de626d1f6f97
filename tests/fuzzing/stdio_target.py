"""Target: a :class:`Server` on a newline-framed in-memory byte stream, fed mutated
client conversations.

An input is a :class:`Script`: bytes to write, points where the test lets the server
run until every task waits (:class:`Settle`), answers to the server's own requests
written once it has sent them (:class:`Answer`, :class:`Retry`: the id or
``requestState`` is only known then), and the end of stdin. Seeds are valid
conversations of every revision; mutations break the framing (split and joined lines,
CR, NUL, overlong lines, invalid UTF-8), reuse ids (duplicates, an id already
answered, the id of the server's own pending request), mix the two models, flood,
cancel unknown ids and cut the stream anywhere.

The oracle (:func:`check`): ``serve`` returns (nothing escapes) within a bound; every
line the server writes is JSON; every request with a readable id is answered once per
time it was sent (unless it was cancelled); a question the client answered well is not
ended by anything else; nothing is logged at ERROR; and, for the inputs that carry a
large payload, what the server still holds before stdin closes stays within a small
multiple of the bytes it was sent.
"""

from __future__ import annotations

import contextlib
import random
import tracemalloc
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
import msgspec

from mcpspec.runtime.connection import NewlineFramedStream, memory_byte_pipe

from .conversation import (
    DECODED_PER_BYTE,
    HANDSHAKE_REVISIONS,
    IN_FLIGHT,
    LIMIT,
    REVISIONS,
    STATELESS,
    Failure,
    ServerRecord,
    drop_one_at_a_time,
    errors_logged,
    fuzz_server,
    held_bytes,
    initialize,
    line,
    logged_failures,
    request,
    where,
)

__all__ = ["Answer", "Close", "Retry", "Script", "Settle", "Write", "check", "generate", "run"]

#: Seconds the server gets to finish once stdin closed (its ``linger``).
LINGER = 0.05
#: Bound on one input: only a hang reaches it.
HANG = 10.0
#: What the server may still hold, before stdin closes, per byte it was sent (and
#: wrote), plus what its running handlers may hold (the requests in flight it takes,
#: decoded), plus a fixed allowance.
MEMORY_FACTOR = 8
MEMORY_ALLOWANCE = (1 << 20) + DECODED_PER_BYTE * IN_FLIGHT


@dataclass(frozen=True)
class Write:
    """Bytes written to the server's stdin."""

    data: bytes


@dataclass(frozen=True)
class Settle:
    """Let the server run until every task waits."""


@dataclass(frozen=True)
class Answer:
    """Once the server has sent a request of ``method``, write ``template`` with
    ``%ID%`` replaced by its id (JSON). ``valid`` says the template ends with a valid
    answer to it."""

    method: str
    template: bytes
    valid: bool = True


@dataclass(frozen=True)
class Retry:
    """Once the 2026-07-28 request ``request_id`` is answered with an
    ``InputRequiredResult``, write ``template`` with ``%RESPONSES%`` (an accepting
    answer per input request) and ``%STATE%`` (its ``requestState``) filled in."""

    request_id: int
    template: bytes


@dataclass(frozen=True)
class Close:
    """Close the server's stdin (the rest of the script is not run)."""


Step = Write | Settle | Answer | Retry | Close


@dataclass(frozen=True)
class Script:
    """One input: the steps, the backend, and whether to measure memory."""

    steps: tuple[Step, ...]
    backend: str = "trio"
    measure: bool = False
    mutations: tuple[str, ...] = ()

    def describe(self) -> str:
        """The input as Python (a regression test can paste it)."""
        return f"Script(steps={self.steps!r}, backend={self.backend!r}, measure={self.measure!r})"


@dataclass
class Transcript:
    """What happened: bytes written each way, what escaped, the server's record."""

    sent: bytearray = field(default_factory=bytearray)
    output: bytearray = field(default_factory=bytearray)
    valid_answers: int = 0
    escaped: BaseException | None = None
    hung: bool = False
    held: int | None = None
    record: ServerRecord = field(default_factory=ServerRecord)


# -- the seeds -----------------------------------------------------------------------------------

ACCEPT = b'{"jsonrpc":"2.0","id":%ID%,"result":{"action":"accept","content":{}}}\n'
RETRY = (
    b'{"jsonrpc":"2.0","id":%NEW%,"method":"tools/call","params":{"name":"ask","arguments":{},'
    b'"inputResponses":%RESPONSES%,"requestState":%STATE%,"_meta":%META%}}\n'
)


def _call(request_id: Any, name: str, revision: str, **extra: Any) -> bytes:
    params: dict[str, Any] = {"name": name, "arguments": extra.pop("arguments", {})}
    params.update(extra)
    return line(request(request_id, "tools/call", params, revision))


def _note(method: str, params: dict[str, Any] | None = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        body["params"] = params
    return line(body)


def seed(revision: str, rng: random.Random) -> list[Step]:
    """A valid conversation in ``revision``: its requests in a random order, each
    tool once at most; the ask answered, or left waiting when stdin closes."""
    steps: list[Step] = []
    stateless = revision == STATELESS
    if stateless:
        steps += [Write(line(request(0, "server/discover", {}, revision))), Settle()]
    else:
        steps += [Write(line(initialize(0, revision))), Settle()]
        steps += [Write(_note("notifications/initialized"))]
    ids = iter(range(1, 1000))
    ask_id = rng.choice((1, 2, next(ids) + 10))
    meta = {"progressToken": "p"}
    pieces: list[list[Step]] = [
        [Write(line(request(next(ids) + 20, "tools/list", {}, revision)))],
        [Write(_call(next(ids) + 20, "echo", revision, arguments={"text": "hi"}))],
        [Write(_call(next(ids) + 20, "steps", revision, arguments={"n": 3}, _meta=meta))],
        [Write(line(request(next(ids) + 20, "resources/read", {"uri": "fuzz://a"}, revision)))],
        [Write(line(request(next(ids) + 20, "resources/list", {}, revision)))],
        [Write(_call(next(ids) + 20, "announce", revision))],
    ]
    block_id = next(ids) + 20
    cancel = _note("notifications/cancelled", {"requestId": block_id, "reason": "fuzz"})
    pieces.append([Write(_call(block_id, "block", revision)), Settle(), Write(cancel)])
    answer_asks = rng.random() < 0.8
    if stateless:
        retry = RETRY.replace(b"%NEW%", str(next(ids) + 20).encode())
        asking: list[Step] = [Write(_call(ask_id, "ask", revision))]
        if answer_asks:
            asking += [Settle(), Retry(ask_id, retry)]
        pieces.append(asking)
        listen = {"notifications": {"toolsListChanged": True}}
        pieces.append(
            [Write(line(request(next(ids) + 20, "subscriptions/listen", listen, revision)))]
        )
    else:
        asking = [Write(_call(ask_id, "ask", revision))]
        if answer_asks:
            asking += [Answer("elicitation/create", ACCEPT)]
        pieces.append(asking)
        pieces.append([Write(line(request(next(ids) + 20, "ping", None, revision)))])
        uri = {"uri": "fuzz://a"}
        pieces.append([Write(line(request(next(ids) + 20, "resources/subscribe", uri, revision)))])
        level = {"level": "debug"}
        pieces.append([Write(line(request(next(ids) + 20, "logging/setLevel", level, revision)))])
    rng.shuffle(pieces)
    for piece in pieces[: rng.randint(1, len(pieces))]:
        steps += piece
        if rng.random() < 0.5:
            steps.append(Settle())
    steps += [Settle(), Close()]
    return steps


# -- the mutations -------------------------------------------------------------------------------


def _writes(steps: list[Step]) -> list[int]:
    return [i for i, s in enumerate(steps) if isinstance(s, Write) and s.data]


def _pick_write(steps: list[Step], rng: random.Random) -> int | None:
    found = _writes(steps)
    return rng.choice(found) if found else None


def _at(steps: list[Step], rng: random.Random) -> int:
    """A place to insert at: before the final settle and close."""
    return rng.randint(0, max(0, len(steps) - 2))


def _edit(steps: list[Step], rng: random.Random, how: Any) -> None:
    index = _pick_write(steps, rng)
    if index is not None:
        data = steps[index].data  # type: ignore[union-attr]
        steps[index] = Write(how(data, rng.randint(0, len(data))))


def m_split(steps: list[Step], rng: random.Random) -> None:
    index = _pick_write(steps, rng)
    if index is not None:
        data = steps[index].data  # type: ignore[union-attr]
        cut = rng.randint(1, max(1, len(data) - 1))
        middle: list[Step] = [Settle()] if rng.random() < 0.5 else []
        steps[index : index + 1] = [Write(data[:cut]), *middle, Write(data[cut:])]


def m_join(steps: list[Step], rng: random.Random) -> None:
    """Two messages on one line (or two writes in one)."""
    index = _pick_write(steps, rng)
    if index is None:
        return
    data = steps[index].data  # type: ignore[union-attr]
    follow = index + 1
    if follow < len(steps) and isinstance(steps[follow], Write):
        data += steps[follow].data  # type: ignore[union-attr]
        del steps[follow]
    if rng.random() < 0.7:
        data = data.replace(b"\n", b"", 1) if data.count(b"\n") > 1 else data
    steps[index] = Write(data)


def m_carriage(steps: list[Step], rng: random.Random) -> None:
    if rng.random() < 0.5:
        index = _pick_write(steps, rng)
        if index is not None:
            steps[index] = Write(steps[index].data.replace(b"\n", b"\r\n"))  # type: ignore[union-attr]
    else:
        _edit(steps, rng, lambda d, at: d[:at] + b"\r" + d[at:])


def m_nul(steps: list[Step], rng: random.Random) -> None:
    _edit(steps, rng, lambda d, at: d[:at] + b"\x00" + d[at:])


def m_bad_utf8(steps: list[Step], rng: random.Random) -> None:
    junk = rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf"))
    _edit(steps, rng, lambda d, at: d[:at] + junk + d[at:])


def m_flip(steps: list[Step], rng: random.Random) -> None:
    def flip(data: bytes, at: int) -> bytes:
        if not data:
            return data
        at = min(at, len(data) - 1)
        return data[:at] + bytes([data[at] ^ (1 << rng.randint(0, 7))]) + data[at + 1 :]

    _edit(steps, rng, flip)


def m_overlong(steps: list[Step], rng: random.Random) -> None:
    size = LIMIT + rng.choice((1, 2, 100, LIMIT))
    head = (
        b'{"jsonrpc":"2.0","id":77,"method":"tools/call",'
        b'"params":{"name":"echo","arguments":{"text":"'
    )
    body = head + b"x" * size + b'"}}}'
    if rng.random() < 0.5:
        body += b"\r"
    steps.insert(_at(steps, rng), Write(body + b"\n"))


def m_duplicate(steps: list[Step], rng: random.Random) -> None:
    index = _pick_write(steps, rng)
    if index is not None:
        place = rng.randint(index + 1, max(index + 1, len(steps) - 2))
        steps.insert(place, steps[index])


def m_reuse_id(steps: list[Step], rng: random.Random) -> None:
    """A request's id replaced by another one of the script (maybe still pending)."""
    import re

    index = _pick_write(steps, rng)
    if index is None:
        return
    data = steps[index].data  # type: ignore[union-attr]
    new = rng.choice((b"0", b"1", b"2", b"21", b"22", b'"1"', b"-1", b"9007199254740993"))
    steps[index] = Write(re.sub(rb'"id":(-?\d+|"[^"]*")', b'"id":' + new, data, count=1))


def m_server_id(steps: list[Step], rng: random.Random) -> None:
    """The answer to the server's request preceded (or replaced) by a request from
    the client that reuses its id: invalid, valid, or a notification-looking one."""
    answers = [i for i, s in enumerate(steps) if isinstance(s, Answer)]
    if not answers:
        return
    index = rng.choice(answers)
    old = steps[index]
    assert isinstance(old, Answer)
    intruder = rng.choice(
        (
            b'{"jsonrpc":"2.0","id":%ID%,"method":"tools/call","params":{"name":5}}\n',
            b'{"jsonrpc":"2.0","id":%ID%,"method":"tools/call","params":{"name":"echo"}}\n',
            b'{"jsonrpc":"2.0","id":%ID%,"method":"ping"}\n',
            b'{"jsonrpc":"2.0","id":%ID%,"method":"nope/nope"}\n',
            b'{"jsonrpc":"2.0","id":%ID%,"method":7}\n',
        )
    )
    keep = rng.random() < 0.8
    steps[index] = Answer(
        old.method, intruder + (old.template if keep else b""), keep and old.valid
    )


def m_bad_answer(steps: list[Step], rng: random.Random) -> None:
    """The answer to the server's request broken."""
    answers = [i for i, s in enumerate(steps) if isinstance(s, Answer | Retry)]
    if not answers:
        return
    index = rng.choice(answers)
    bad = rng.choice(
        (
            b'{"jsonrpc":"2.0","id":%ID%,"result":{"action":7}}\n',
            b'{"jsonrpc":"2.0","id":%ID%,"error":{"code":-1,"message":"no"}}\n',
            b'{"jsonrpc":"2.0","id":%ID%}\n',
            b'{"jsonrpc":"2.0","id":999,"result":{}}\n',
            b'{"jsonrpc":"2.0","id":%ID%,"result":{"action":"accept"},"error":{}}\n',
            b"%ID%\n",
            b'{"jsonrpc":"2.0","id":%ID%,"result":{"action":"accept","content":{}}}\n' * 2,
        )
    )
    old = steps[index]
    if isinstance(old, Answer):
        steps[index] = Answer(old.method, bad, valid=bad.startswith(ACCEPT))
    else:
        assert isinstance(old, Retry)
        fields = (b"%RESPONSES%", b"%STATE%")
        template = old.template.replace(
            rng.choice(fields), rng.choice((b"7", b'"x"', b"{}", b"null"))
        )
        steps[index] = Retry(old.request_id, template)


def m_mix(steps: list[Step], rng: random.Random) -> None:
    """A message of the other model, or a ping before negotiation."""
    revision = rng.choice(REVISIONS)
    choices = [
        line(request(90, "ping", None, revision)),
        line(request(91, "tools/list", {}, STATELESS)),
        _call(92, "echo", STATELESS, arguments={"text": "x"}),
        line(request(93, "server/discover", {}, STATELESS)),
        line(initialize(94, rng.choice(HANDSHAKE_REVISIONS))),
        _note("notifications/initialized"),
    ]
    first = rng.choice(choices)
    place = rng.choice((0, 0, _at(steps, rng)))
    if rng.random() < 0.5:
        first += rng.choice(choices)
    steps.insert(place, Write(first))


def m_flood(steps: list[Step], rng: random.Random) -> None:
    count = rng.choice((50, 100, 300))
    kind = rng.randrange(5)
    if kind == 0:
        data = b"".join(line(request(1000 + n, "ping", None, "2025-11-25")) for n in range(count))
    elif kind == 1:
        data = b"".join(_call(2000 + n, "echo", "2025-11-25") for n in range(count))
    elif kind == 2:
        data = b"".join(_call(3000 + n, "block", STATELESS) for n in range(count))
    elif kind == 3:
        note = _note("notifications/progress", {"progressToken": "p", "progress": 1})
        data = note * count
    else:
        data = _note("notifications/roots/list_changed") * count
    steps.insert(_at(steps, rng), Write(data))


def m_cancel(steps: list[Step], rng: random.Random) -> None:
    target = rng.choice((0, 1, 21, 22, 999, "x", None, 2.5))
    params: dict[str, Any] = {"requestId": target} if target is not None else {}
    steps.insert(_at(steps, rng), Write(_note("notifications/cancelled", params)))


def m_disconnect(steps: list[Step], rng: random.Random) -> None:
    """Stdin closes at any point, maybe within a line."""
    place = rng.randint(0, len(steps) - 1)
    tail: list[Step] = []
    step = steps[place]
    if isinstance(step, Write) and step.data and rng.random() < 0.5:
        tail = [Write(step.data[: rng.randint(0, len(step.data))])]
    del steps[place:]
    steps += [*tail, Close()]


def m_big(steps: list[Step], rng: random.Random) -> None:
    """A message with a large payload under the limit, kept open or long-lived."""
    room = LIMIT - 1024
    filler: Any = [{}] * (room // 3)
    kind = rng.randrange(4)
    if kind == 0:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"experimental": {"x": filler}},
            "clientInfo": {"name": "fuzz", "version": "1"},
        }
        data = line({"jsonrpc": "2.0", "id": 95, "method": "initialize", "params": params})
        steps.insert(0, Write(data))
        return
    if kind == 1:
        listen = {"notifications": {"toolsListChanged": True}, "_meta": {"x": filler}}
        data = line(request(96, "subscriptions/listen", listen, STATELESS))
    elif kind == 2:
        data = _call(97, "block", STATELESS, _meta={"x": filler})
    else:
        data = _call(98, "block", "2025-11-25", arguments={}, _meta={"x": filler})
    steps.insert(_at(steps, rng), Write(data))


MUTATIONS = {
    "split": m_split,
    "join": m_join,
    "carriage return": m_carriage,
    "NUL": m_nul,
    "invalid UTF-8": m_bad_utf8,
    "bit flip": m_flip,
    "overlong line": m_overlong,
    "duplicate": m_duplicate,
    "reused id": m_reuse_id,
    "server's id reused": m_server_id,
    "broken answer": m_bad_answer,
    "model mixture": m_mix,
    "flood": m_flood,
    "cancellation": m_cancel,
    "disconnect": m_disconnect,
    "large payload": m_big,
}


def generate(seed_value: int, index: int) -> Script:
    """Input ``index`` of the run with ``seed_value``: the same whatever else runs."""
    rng = random.Random(f"stdio/{seed_value}/{index}")
    revision = rng.choice(REVISIONS)
    steps = seed(revision, rng)
    names = rng.sample(sorted(MUTATIONS), rng.choice((0, 1, 1, 2, 2, 3)))
    for name in names:
        MUTATIONS[name](steps, rng)
    if not steps or not isinstance(steps[-1], Close):
        steps.append(Close())
    backend = "trio" if rng.random() < 0.75 else "asyncio"
    return Script(tuple(steps), backend, "large payload" in names, (revision, *names))


# -- running one input ---------------------------------------------------------------------------


def _messages(data: bytes, *, lenient: bool = False) -> list[Any]:
    """The JSON values of the lines of ``data`` as the framing splits them (a line
    over the limit, or not JSON, is left out; ``lenient``: a line with invalid UTF-8
    read as if it were replaced, since the server may still read its id)."""
    found = []
    for raw in data.split(b"\n"):
        raw = raw.removesuffix(b"\r")
        if not raw.strip() or len(raw) > LIMIT:
            continue
        try:
            found.append(msgspec.json.decode(raw))
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError, ValueError):
            if not lenient:
                continue
            try:
                found.append(msgspec.json.decode(raw.decode("utf-8", "replace")))
            except (msgspec.DecodeError, RecursionError, ValueError):
                continue
    return found


def _flat(values: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for value in values:
        if isinstance(value, dict):
            out.append(value)
        elif isinstance(value, list):
            out += [v for v in value if isinstance(v, dict)]
    return out


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _key(value: Any) -> str:
    return msgspec.json.encode(value).decode()


async def _settle(backend: str) -> None:
    if backend == "trio":
        await anyio.wait_all_tasks_blocked()
    else:  # asyncio's wait_all_tasks_blocked polls every 0.1 s: a fixed number of turns
        for _ in range(30):
            await anyio.sleep(0)


async def run(script: Script) -> Transcript:
    """Run ``script`` against a fresh server."""
    done = Transcript()
    server = fuzz_server(done.record)
    to_server, server_in = memory_byte_pipe()
    server_out, from_server = memory_byte_pipe()
    stream = NewlineFramedStream(server_in, server_out, max_message_size=LIMIT)
    arrived = anyio.Event()
    handled: set[str] = set()

    async def write(data: bytes) -> None:
        done.sent += data
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await to_server.send(data)  # the server may be gone already

    async def read() -> None:
        nonlocal arrived
        while True:
            try:
                chunk = await from_server.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return
            done.output += chunk
            arrived.set()
            arrived = anyio.Event()

    def find(predicate: Any) -> Any:
        for value in _flat(_messages(bytes(done.output))):
            if predicate(value):
                return value
        return None

    async def wait_for(predicate: Any) -> Any:
        for _ in range(3):
            found = find(predicate)
            if found is not None:
                return found
            await _settle(script.backend)
        return find(predicate)

    async def feed() -> None:
        for step in script.steps:
            if isinstance(step, Close):
                break
            if isinstance(step, Write):
                await write(step.data)
            elif isinstance(step, Settle):
                await _settle(script.backend)
            elif isinstance(step, Answer):
                asked = await wait_for(
                    lambda m, step=step: (
                        m.get("method") == step.method
                        and _is_id(m.get("id"))
                        and _key(m["id"]) not in handled
                    )
                )
                if asked is not None:
                    handled.add(_key(asked["id"]))
                    await write(step.template.replace(b"%ID%", _key(asked["id"]).encode()))
                    done.valid_answers += step.valid
            elif isinstance(step, Retry):
                answer = await wait_for(
                    lambda m, step=step: (
                        m.get("id") == step.request_id
                        and isinstance(m.get("result"), dict)
                        and m["result"].get("resultType") == "input_required"
                    )
                )
                if answer is not None:
                    result = answer["result"]
                    asked = result.get("inputRequests") or {}
                    responses = {key: {"action": "accept", "content": {}} for key in asked}
                    template = step.template.replace(b"%META%", _key(_meta()).encode())
                    template = template.replace(b"%RESPONSES%", _key(responses).encode())
                    template = template.replace(
                        b"%STATE%", _key(result.get("requestState")).encode()
                    )
                    await write(template)
        if script.measure:
            await _settle(script.backend)
            done.held = held_bytes()
        await to_server.aclose()

    try:
        with anyio.fail_after(HANG):
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(read)
                task_group.start_soon(feed)
                try:
                    await server.serve(stream, linger=LINGER)
                except Exception as exc:
                    done.escaped = exc
                await server_out.aclose()
                task_group.cancel_scope.deadline = anyio.current_time() + 1
    except TimeoutError:
        done.hung = True
    return done


def _meta() -> dict[str, Any]:
    from .conversation import META

    return META


def check(script: Script) -> list[Failure]:
    """Run ``script`` and judge what happened."""
    if script.measure:
        # Once untraced first: lazy imports and caches are not what a connection holds.
        with errors_logged():
            anyio.run(run, replace(script, measure=False), backend=script.backend)
        tracemalloc.start()
    try:
        with errors_logged() as records:
            baseline = held_bytes() if script.measure else 0
            done = anyio.run(run, script, backend=script.backend)
    finally:
        if script.measure:
            tracemalloc.stop()
    failures = logged_failures(records)
    if done.escaped is not None:
        failures.append(Failure("serve raised", where(done.escaped), repr(done.escaped)[:300]))
    if done.hung:
        failures.append(Failure("hang", "", f"serve did not return within {HANG} s"))
    failures += _judge_output(done)
    if done.valid_answers and "ResponseViolation" in done.record.asked:
        failures.append(
            Failure(
                "a question answered well ended in ResponseViolation",
                "",
                f"asked: {done.record.asked}",
            )
        )
    if done.held is not None:
        held = done.held - baseline
        bound = MEMORY_FACTOR * (len(done.sent) + len(done.output)) + MEMORY_ALLOWANCE
        if held > bound:
            failures.append(
                Failure(
                    "memory out of proportion to input",
                    "",
                    f"{held:,} bytes held for {len(done.sent):,} sent (bound {bound:,})",
                )
            )
    return failures


def _judge_output(done: Transcript) -> list[Failure]:
    failures = []
    for raw in bytes(done.output).split(b"\n"):
        if raw:
            try:
                msgspec.json.decode(raw)
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError, ValueError):
                failures.append(
                    Failure("the server wrote a line that is not JSON", "", repr(raw[:200]))
                )
                break
    # Whatever carries an id may be answered with it (the server reads the id of a
    # line with invalid UTF-8 too); a request that is valid JSON must be answered.
    requests: Counter[str] = Counter()
    for member in _flat(_messages(bytes(done.sent), lenient=True)):
        if _is_id(member.get("id")):
            requests[_key(member["id"])] += 1
    methods: dict[str, str] = {}
    must: set[str] = set()
    cancelled: set[str] = set()
    for value in _flat(_messages(bytes(done.sent), lenient=True)):
        params = value.get("params")
        cancelling = value.get("method") == "notifications/cancelled"
        if cancelling and isinstance(params, dict) and _is_id(params.get("requestId")):
            cancelled.add(_key(params["requestId"]))
    for value in _messages(bytes(done.sent)):
        if not isinstance(value, dict):
            continue
        method, params = value.get("method"), value.get("params")
        if isinstance(method, str) and _is_id(value.get("id")):
            key = _key(value["id"])
            name = params.get("name") if isinstance(params, dict) else None
            methods.setdefault(key, f"{method} {name}" if isinstance(name, str) else method)
            must.add(key)
    answers: Counter[str] = Counter()
    for value in _flat(_messages(bytes(done.output))):
        if "method" not in value and _is_id(value.get("id")):
            answers[_key(value["id"])] += 1
    if done.escaped is None and not done.hung:
        for key in sorted(must - cancelled):
            if answers[key] == 0:
                failures.append(Failure("a request was never answered", methods[key], f"id {key}"))
                break
    for key, count in answers.items():
        if count > requests[key]:
            failures.append(
                Failure("more answers than requests", methods.get(key, "?"), f"id {key}: {count}")
            )
            break
    return failures


def shrink(script: Script, failure: Failure) -> Script:
    """A smaller script that still fails the same way (steps dropped one at a time)."""

    def still_fails(steps: tuple[Step, ...]) -> bool:
        return any(f.key == failure.key for f in check(replace(script, steps=steps)))

    return replace(script, steps=drop_one_at_a_time(script.steps, still_fails))
