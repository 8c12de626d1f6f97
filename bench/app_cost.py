"""Where an HTTP request's time goes inside the app: the ASGI apps of the HTTP benchmark
driven in this process, with no server and no sockets.

Run from a checkout::

    python bench/app_cost.py              # both revisions (about a minute)
    python bench/app_cost.py --smoke      # tiny batches; asserts the harness works

``http_bench.py`` measures whole round trips through uvicorn; this script takes uvicorn
away, to tell the app's own cost from the server's. Each app is called as an ASGI server
calls it (a ``scope``, a ``receive`` that hands over the whole body at once and, as
uvicorn does, ``http.disconnect`` once the response is complete, a ``send`` that keeps
the messages) with the echo ``tools/call`` of ``http_bench.py``: in
2025-11-25 within a session initialized once, in 2026-07-28 standing alone with its
mirrored headers. ``bare`` is the floor app of ``http_bench.py`` (``orjson`` in, ``orjson``
out). The rows alternate within each round; a cell is the median over rounds of a batch's
µs per request, and ``÷ bare`` the median of the ratios within a round.

The parts are what the mcpspec app does for such a request, each timed alone on the same
request: the sans-IO server session reading it and writing the result, the check of the
mirrored headers against the routing fields the body peek read (2026-07-28), the header
map and the body peek. What the app costs beyond their sum is the connection layer
around them: the endpoint, the peer and its cancel scope, the channel, the server's
dispatch and the handler's context.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from mcpspec.runtime.connection.http import http_app

HERE: Final = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

# The HTTP benchmark's messages, so that both measure the same requests.
from http_bench import CLIENT_INFO, MODERN, REVISIONS, initialize_body, stateless_meta  # noqa: E402

BASE_HEADERS: Final = [
    (b"host", b"127.0.0.1:8000"),
    (b"content-type", b"application/json"),
    (b"accept", b"application/json, text/event-stream"),
    (b"user-agent", b"mcpspec-app-cost"),
]

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def _scope(headers: list[tuple[bytes, bytes]], body: bytes) -> dict[str, Any]:
    length = (b"content-length", str(len(body)).encode())
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "headers": [*headers, length],
        "state": {},
    }


async def post(app: App, headers: list[tuple[bytes, bytes]], body: bytes) -> list[Any]:
    """Call ``app`` with one POST of ``body``, as an ASGI server would; what it sent."""
    sent: list[Any] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    complete = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        # As uvicorn does: once the response is complete, a pending receive is answered
        # with http.disconnect (the client itself never goes away).
        await complete.wait()
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            complete.set()

    await app(_scope(headers, body), receive, send)
    return sent


#: The apps' lifespan tasks, kept while they run (the loop holds only weak references).
_LIFESPANS: Final[set[asyncio.Future[None]]] = set()


async def _start(app: App) -> None:
    """Run the app's lifespan startup (the mcpspec app starts its task group there)."""
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await inbox.put({"type": "lifespan.startup"})
    lifespan = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    _LIFESPANS.add(asyncio.ensure_future(app(lifespan, inbox.get, outbox.put)))
    message = await outbox.get()
    if message["type"] != "lifespan.startup.complete":
        raise RuntimeError(f"the app's startup answered {message}")


class Caller:
    """One app and the headers and bodies of its echo calls in one revision; its
    batches are timed by ``clock`` (wall time)."""

    clock: Callable[[], float] = staticmethod(time.perf_counter)

    def __init__(self, app: App, revision: str) -> None:
        self.app = app
        self.revision = revision
        self.headers = list(BASE_HEADERS)
        meta = ""
        if revision >= MODERN:
            self.headers += [
                (b"mcp-protocol-version", revision.encode()),
                (b"mcp-method", b"tools/call"),
                (b"mcp-name", b"echo"),
            ]
            meta = '"_meta":' + json.dumps(stateless_meta(revision), separators=(",", ":")) + ","
        self._call = '{"jsonrpc":"2.0","method":"tools/call","params":{' + meta
        self._next = 1

    async def open(self) -> None:
        """Initialize a session (before 2026-07-28), when the app answers with one."""
        if self.revision >= MODERN:
            return
        sent = await post(self.app, self.headers, initialize_body(self.revision))
        answered = dict(sent[0]["headers"])
        self.headers.append((b"mcp-protocol-version", self.revision.encode()))
        if b"mcp-session-id" in answered:
            self.headers.append((b"mcp-session-id", answered[b"mcp-session-id"]))
        note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        sent = await post(self.app, self.headers, note)
        if sent[0]["status"] != 202:
            raise AssertionError(f"notifications/initialized answered {sent[0]}")

    def body(self) -> bytes:
        """The next call's body (its own id and message)."""
        n = self._next
        self._next += 1
        arguments = f'"name":"echo","arguments":{{"message":"hello {n}"}}}},"id":{n}}}'
        return (self._call + arguments).encode()

    async def batch(self, calls: int) -> float:
        """µs per request of ``calls`` echo calls (each answer checked)."""
        bodies = [self.body() for _ in range(calls)]
        headers, app = self.headers, self.app
        started = self.clock()
        for body in bodies:
            sent = await post(app, headers, body)
            # A server's loop turns between requests: what an app left for it to run
            # (a callback it scheduled and then cancelled) is dropped there.
            await asyncio.sleep(0)
        elapsed = self.clock() - started
        answer = json.loads(sent[-1]["body"])
        if sent[0]["status"] != 200 or "hello" not in answer["result"]["content"][0]["text"]:
            raise AssertionError(f"the echo answered {sent}")
        return elapsed / calls * 1e6


def _per_call(function: Callable[[], Any], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - started) / calls * 1e6


def parts(revision: str, calls: int) -> dict[str, float]:
    """µs per call of what the mcpspec app does for an echo request, each part alone."""
    from peers.echo_mcpspec import build

    from mcpspec.runtime.connection.http.asgi import header_map
    from mcpspec.runtime.connection.http.wire import BodyPeek
    from mcpspec.runtime.envelope import ResultResponse
    from mcpspec.runtime.session import mirrored_headers
    from mcpspec.runtime.session.server import ServerSession

    caller = Caller(http_app(build()), revision)
    bodies = [caller.body() for _ in range(calls)]
    scope = _scope(caller.headers, bodies[0])
    headers = header_map(scope)
    session = ServerSession([revision], capabilities={"tools": {}}, info=CLIENT_INFO)
    if revision < MODERN:
        opened = session.receive(initialize_body(revision))
        session.send(ResultResponse(id=0, result=session.initialize_result()))
        session.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        assert opened, "initialize was not read"
    types = session.types
    result = types.CallToolResult(content=[types.TextContent(text="hello")])
    pending = iter(bodies)

    def exchange() -> None:
        events = session.receive(next(pending))
        session.send(ResultResponse(id=events[-1].request_id, result=result))

    out = {"session: receive + send": _per_call(exchange, calls)}
    if revision >= MODERN:
        # The app's check: the quick test on the routing fields the body peek read,
        # which passes these plain headers (a body it cannot tell goes to
        # header_mismatch, the full check).
        probe = BodyPeek(bodies[0]).probe
        assert probe is not None and mirrored_headers.plainly_mirrored(headers, probe), "not plain"
        out["mirrored headers check"] = _per_call(
            lambda: mirrored_headers.plainly_mirrored(headers, probe, lambda name: ()), calls
        )
    out["header map"] = _per_call(lambda: header_map(scope), calls)
    out["body peek"] = _per_call(lambda: BodyPeek(bodies[0]), calls)
    return out


async def measure(revisions: list[str], rounds: int, calls: int) -> dict[str, Any]:
    """Per revision: the apps' µs per request (median over rounds), the ratio to bare,
    and the mcpspec app's parts."""
    from peers.http_bare import build as build_bare
    from peers.http_mcpspec import build as build_mcpspec

    report: dict[str, Any] = {"rounds": rounds, "calls": calls, "revisions": {}}
    for revision in revisions:
        mcpspec_app = build_mcpspec()
        await _start(mcpspec_app)
        callers = {"mcpspec": Caller(mcpspec_app, revision), "bare": Caller(build_bare(), revision)}
        for caller in callers.values():
            await caller.open()
            await caller.batch(calls)  # warm-up
        samples: dict[str, list[float]] = {key: [] for key in callers}
        ratios: list[float] = []
        order = list(callers)
        for round_number in range(rounds):
            taken = {}
            for key in order[round_number % 2 :] + order[: round_number % 2]:
                taken[key] = await callers[key].batch(calls)
                samples[key].append(taken[key])
            ratios.append(taken["mcpspec"] / taken["bare"])
        part_samples: dict[str, list[float]] = {}
        for _ in range(rounds):
            for name, value in parts(revision, calls).items():
                part_samples.setdefault(name, []).append(value)
        report["revisions"][revision] = {
            "us_per_request": {key: statistics.median(v) for key, v in samples.items()},
            "mcpspec_over_bare": statistics.median(ratios),
            "parts_us": {name: statistics.median(v) for name, v in part_samples.items()},
        }
    return report


def markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table per revision."""
    lines = [
        f"The apps alone (`bench/app_cost.py`): called in process as an ASGI server calls "
        f"them, no server and no sockets; median of {report['rounds']} rounds of "
        f"{report['calls']:,} echo requests. The parts are timed alone on the same request; "
        "the rest is the connection layer around them (endpoint, peer and cancel scope, "
        "channel, dispatch, the handler's context).",
        "",
        "| revision | bare µs/req | mcpspec µs/req | mcpspec ÷ bare | parts of mcpspec (µs) "
        "| rest: the connection layer (µs) |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for revision, data in report["revisions"].items():
        apps = data["us_per_request"]
        named = "; ".join(f"{name} {value:.1f}" for name, value in data["parts_us"].items())
        rest = apps["mcpspec"] - sum(data["parts_us"].values())
        lines.append(
            f"| {revision} | {apps['bare']:.1f} | {apps['mcpspec']:.1f} "
            f"| {data['mcpspec_over_bare']:.1f}\N{MULTIPLICATION SIGN} | {named} | {rest:.1f} |"
        )
    return "\n".join(lines) + "\n"


def smoke_check(report: dict[str, Any], revisions: list[str]) -> None:
    """What ``--smoke`` asserts: every revision measured both apps and every part."""
    assert set(report["revisions"]) == set(revisions), report["revisions"]
    for revision, data in report["revisions"].items():
        assert set(data["us_per_request"]) == {"mcpspec", "bare"}, data
        assert all(0 < value < 1e6 for value in data["us_per_request"].values()), data
        expected = 4 if revision >= MODERN else 3
        assert len(data["parts_us"]) == expected, data["parts_us"]
        assert all(value > 0 for value in data["parts_us"].values()), data["parts_us"]


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny batches; check it works")
    parser.add_argument("-r", "--revision", action="append", choices=REVISIONS)
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 9)")
    parser.add_argument("--json", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    revisions = args.revision or list(REVISIONS)
    rounds = args.rounds or (2 if args.smoke else 9)
    calls = 50 if args.smoke else 10_000
    try:
        import uvloop  # the event loop of the uvicorn rows, when installed
    except ImportError:
        report = asyncio.run(measure(revisions, rounds, calls))
    else:
        report = uvloop.run(measure(revisions, rounds, calls))
    print(markdown(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.smoke:
        smoke_check(report, revisions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
