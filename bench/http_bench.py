"""HTTP round trips: echo ``tools/call`` POSTs to ASGI apps under one uvicorn worker.

Run from a checkout (``uvicorn``, ``orjson``, ``httpx`` and, for the SDK rows,
``mcp==2.3.0`` installed next to mcpspec)::

    python bench/http_bench.py                 # both revisions, full run (a few minutes)
    python bench/http_bench.py --smoke         # tiny batches; asserts the harness works
    python bench/http_bench.py --json out.json
    python bench/http_bench.py --profile mcpspec -r 2026-07-28   # where the server's time goes
    python bench/http_bench.py --http httptools --loop uvloop     # another uvicorn stack

(``bench/run.py`` runs it too, as its HTTP section.) The module is not called ``http``:
next to the scripts of ``bench/`` on ``sys.path`` it would hide the standard library's.

Servers. Each app runs in a subprocess of its own (``bench/peers/http_serve.py``): one
uvicorn worker, loopback, a port the system picks, uvicorn's defaults otherwise (the
report says which HTTP implementation and event loop that gave), access log off:

* ``mcpspec``: ``http_app(server)`` of the connection layer's ``Server`` with the echo
  tool of the stdio benchmark (``bench/peers/http_mcpspec.py``), default endpoint ``/mcp``;
* ``SDK``: the official SDK's ``streamable_http_app(json_response=True)`` around the same
  tool on its low-level ``Server`` (``bench/peers/http_sdk.py``); ``SDK (SSE)``: the same
  with the SDK's default, an SSE stream per response (in 2026-07-28 the SDK still answers
  JSON when the handler answers at once, from a task of its own); ``SDK (stateless)``:
  ``SDK`` in the SDK's stateless mode (2025-11-25: no sessions, a fresh transport per
  POST; a 2026-07-28 request takes the SDK's single-exchange path in every mode);
* ``bare``: an ASGI app that parses the body with orjson and dumps a JSON-RPC result
  (``bench/peers/http_bare.py``): the floor of this stack, no MCP;
* ``mcpspec sans-IO`` (floor curve only): the echo tool on mcpspec's sans-IO
  ``ServerSession`` in a hand-written ASGI app (``bench/peers/http_sansio.py``): the HTTP
  checks, the session of ``Mcp-Session-Id`` or the mirrored headers, and the session's
  typed ``receive`` and ``send``, without the connection layer around them.

Load. The load client is raw HTTP/1.1 over asyncio streams (``RawConnection``: one
``write`` per request, the response parsed by hand, ``Content-Length`` or chunked), one
keep-alive connection per simulated client, each sending its next request when the last
is answered; every answer is parsed (orjson) and checked. In 2025-11-25 a client
initializes once (``initialize``, then ``notifications/initialized``) and sends its
``Mcp-Session-Id`` and ``MCP-Protocol-Version`` on every call; in 2026-07-28 every POST
stands alone, with ``_meta`` (protocol version, client info and capabilities) in the body
and the mirrored headers ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name``. The
row ``bare, httpx client`` drives the bare app with one ``httpx.AsyncClient`` per client
instead: how much leaner the raw client is. Client and servers share the machine's cores:
each row reports the CPU time per request of both processes (the client's from
``time.process_time()``, the server's from ``/proc/<pid>/stat``, 10 ms ticks), so it
shows which side a rate is bound by.

Method. The clients run in a fresh worker process (this script, ``--worker``), which
starts every server, opens 16 connections to each (initialized, in 2025-11-25), warms
each row up, then runs rounds: in each round every row, in an order rotating from round
to round, runs a batch with 1 client, then with 16 clients, each batch lasting
``batch_s`` (the requests in flight at its end complete and count). A rate is the median
over rounds of the batch's requests per second; p50 and p99 are the median over rounds of
each batch's latency percentiles; a ratio is the median over rounds of the ratio of the
rates within the round, so the load of the shared machine cancels out.

Memory per open session (2025-11-25): in a fresh server process per app, after a few
warm-up sessions, ``memory_sessions`` more sessions are initialized (each makes one call
and then stays open and idle); the growth of the server's resident set, divided by
their number.

The floor curve: the bare app again, in servers of its own that spend 10, 20, 40 and 80
µs of CPU on each request before answering (``http_bare.busy``), side by side with the
mcpspec app and the ``mcpspec sans-IO`` app in each revision. It tells how much work per
request the target of 0.6 times the bare rate leaves an app on this stack, how much the
mcpspec app's rate is worth in such work, and how much of that the sessions themselves
take. (``bench/app_cost.py`` times the apps alone, in process, without uvicorn.)

Profile (``--profile APP``): one server, 16 raw clients (``--in-flight``) for 5 s, the
server sampled by py-spy when it is installed (shares of the samples by part of the
stack, and the mcpspec functions by inclusive share), else run under cProfile.

MCP clients: the mcpspec ``Client.http(url)`` (on ``httpx``, and on ``httpx2`` when it
is installed) and the SDK's ``mcp.Client(url)`` (Streamable HTTP, on ``httpx2``), each
one client with 1 or 16 calls in flight, against one server
(the mcpspec app when it exists, else the SDK's JSON app), side by side in rounds as
above; the raw load client with 1 or 16 connections is the reference.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import io
import itertools
import json
import os
import pstats
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from peers.http_bare import BUSY_VARIABLE

# The stdio benchmark beside this script: its worker plumbing and ratios serve here too.
from stdio import median_ratio, sdk_available, start_worker, worker_answer

HERE: Final = Path(__file__).resolve().parent
SERVE: Final = HERE / "peers" / "http_serve.py"

#: The multiplication sign, for ratios.
X: Final = "\N{MULTIPLICATION SIGN}"

MCPSPEC: Final = "mcpspec"
SDK: Final = "SDK"
SDK_SSE: Final = "SDK (SSE)"
SDK_STATELESS: Final = "SDK (stateless)"
BARE: Final = "bare"
#: The sans-IO sessions in a hand-written ASGI app (the floor curve's).
SANS_IO: Final = "mcpspec sans-IO"
#: The row of the bare app driven by httpx instead of the raw client.
BARE_HTTPX: Final = "bare, httpx client"
#: The row of the raw load client in the MCP client comparison.
RAW: Final = "raw HTTP/1.1"
#: The row of the mcpspec client on an ``httpx2`` client (the SDK client's library).
MCPSPEC_HTTPX2: Final = "mcpspec, httpx2"

REVISIONS: Final = ("2025-11-25", "2026-07-28")
MODERN: Final = "2026-07-28"
IN_FLIGHT: Final = (1, 16)
ENDPOINT: Final = "/mcp"
#: What one batch records: requests per second, latency percentiles (seconds), CPU
#: seconds per request of each side.
MEASURES: Final = ("rate", "p50", "p99", "client_cpu", "server_cpu")
CLIENT_INFO: Final = {"name": "mcpspec-http-bench", "version": "1.0.0"}


@dataclass(frozen=True)
class App:
    """An ASGI app the benchmark serves: its factory in ``bench/peers`` and the revisions
    it is measured in."""

    key: str
    factory: str
    revisions: tuple[str, ...]
    #: Environment variables of its server process.
    env: tuple[tuple[str, str], ...] = ()


APPS: Final = {
    MCPSPEC: App(MCPSPEC, "http_mcpspec:build", REVISIONS),
    SDK: App(SDK, "http_sdk:json_app", REVISIONS),
    SDK_SSE: App(SDK_SSE, "http_sdk:sse_app", REVISIONS),
    SDK_STATELESS: App(SDK_STATELESS, "http_sdk:stateless_app", ("2025-11-25",)),
    BARE: App(BARE, "http_bare:build", REVISIONS),
    SANS_IO: App(SANS_IO, "http_sansio:build", REVISIONS),
}


#: The work per request of the floor's busy apps, in microseconds.
BUSY_US: Final = (10, 20, 40, 80)


def busy_app(microseconds: int) -> App:
    """The bare app spending ``microseconds`` of CPU on each request."""
    return App(
        f"{BARE} + {microseconds} µs",
        "http_bare:busy",
        REVISIONS,
        env=((BUSY_VARIABLE, str(microseconds)),),
    )


@dataclass(frozen=True)
class Row:
    """A row of the load table: an app, driven by the raw client or by httpx."""

    key: str
    app: str
    client: str  # "raw" or "httpx"


ROWS: Final = (
    Row(MCPSPEC, MCPSPEC, "raw"),
    Row(SDK, SDK, "raw"),
    Row(SDK_SSE, SDK_SSE, "raw"),
    Row(SDK_STATELESS, SDK_STATELESS, "raw"),
    Row(BARE, BARE, "raw"),
    Row(BARE_HTTPX, BARE, "httpx"),
)


@dataclass
class Settings:
    """How much to measure."""

    rounds: int
    batch_s: float
    warmup_s: float
    memory_sessions: int
    http: str = "auto"
    loop: str = "auto"

    @classmethod
    def for_run(cls, *, smoke: bool, rounds: int | None = None) -> Settings:
        """The settings of a full run (or of ``--smoke``), with ``rounds`` when given."""
        if smoke:
            settings = cls(rounds=2, batch_s=0.1, warmup_s=0.05, memory_sessions=8)
        else:
            settings = cls(rounds=7, batch_s=1.0, warmup_s=0.3, memory_sessions=400)
        if rounds is not None:
            settings.rounds = rounds
        return settings


def mcpspec_app_available() -> bool:
    """Whether the connection layer's ``Server`` has its ASGI app (``http_app``)."""
    try:
        from mcpspec.runtime.connection import Server
    except ImportError:
        return False
    return hasattr(Server, "http_app")


def mcpspec_client_available() -> bool:
    """Whether the connection layer's ``Client`` speaks HTTP (``Client.http``)."""
    try:
        from mcpspec.runtime.connection.client import Client
    except ImportError:
        return False
    return hasattr(Client, "http")


def httpx2_available() -> bool:
    """Whether ``httpx2`` is installed (the SDK brings it)."""
    return importlib.util.find_spec("httpx2") is not None


def available_apps() -> list[str]:
    """The apps this environment can serve."""
    apps = [BARE]
    if mcpspec_app_available():
        apps.insert(0, MCPSPEC)
    if sdk_available():
        apps[1:1] = [SDK, SDK_SSE, SDK_STATELESS]
    return apps


# -- servers ----------------------------------------------------------------------------------


@dataclass
class RunningServer:
    """An app served by uvicorn in a subprocess."""

    app: App
    process: asyncio.subprocess.Process
    port: int
    pid: int
    http: str
    loop: str

    @property
    def url(self) -> str:
        """The MCP endpoint's URL."""
        return f"http://127.0.0.1:{self.port}{ENDPOINT}"


async def start_server(
    app: App, settings: Settings, profile_to: Path | None = None
) -> RunningServer:
    """Start ``app`` (under cProfile, to ``profile_to``) and learn its port."""
    command = [str(SERVE), app.factory, "--http", settings.http, "--loop", settings.loop]
    if profile_to is not None:
        command += ["--profile", str(profile_to)]
    env = {**os.environ, **dict(app.env)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, *command, stdout=asyncio.subprocess.PIPE, env=env
    )
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    if not line:
        raise RuntimeError(f"the {app.key} server exited (status {await process.wait()})")
    announce = json.loads(line)
    return RunningServer(
        app, process, announce["port"], announce["pid"], announce["http"], announce["loop"]
    )


async def stop_server(server: RunningServer) -> None:
    """Stop ``server`` as uvicorn stops on Ctrl-C (gracefully), killing it if it lingers."""
    if server.process.returncode is None:
        server.process.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(server.process.wait(), 15)
        except TimeoutError:
            server.process.kill()
            await server.process.wait()


@asynccontextmanager
async def running_servers(
    apps: Sequence[App], settings: Settings
) -> AsyncIterator[dict[str, RunningServer]]:
    """Every app of ``apps`` served at once, by key."""
    started = await asyncio.gather(
        *(start_server(app, settings) for app in apps), return_exceptions=True
    )
    servers = [s for s in started if isinstance(s, RunningServer)]
    try:
        for outcome in started:
            if isinstance(outcome, BaseException):
                raise outcome
        yield {server.app.key: server for server in servers}
    finally:
        await asyncio.gather(*(stop_server(server) for server in servers))


_CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds (user and system) process ``pid`` has used (Linux; 0 elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def process_rss_bytes(pid: int) -> int | None:
    """The resident set size of process ``pid`` (Linux), else ``None``."""
    try:
        resident = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident * os.sysconf("SC_PAGE_SIZE")


# -- the load client --------------------------------------------------------------------------


@dataclass
class Response:
    """An HTTP response: status, headers (names in lower case), body."""

    status: int
    headers: dict[bytes, bytes]
    body: bytes


class RawConnection:
    """One keep-alive HTTP/1.1 connection over asyncio streams: a request is one write,
    its response is read and parsed by hand (``Content-Length`` or chunked)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    @classmethod
    async def open(cls, port: int) -> RawConnection:
        """A connection to ``127.0.0.1:port`` (asyncio sets ``TCP_NODELAY``)."""
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def post(self, head: bytes, body: bytes) -> Response:
        """POST ``body``; ``head`` is the request line and the headers but the length."""
        self._writer.write(b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body))
        reader = self._reader
        lines = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        status = int(lines[0][9:12])
        headers = {}
        for line in lines[1:-2]:
            name, _, value = line.partition(b":")
            headers[name.lower()] = value.strip()
        length = headers.get(b"content-length")
        if length is not None:
            data = await reader.readexactly(int(length))
        elif headers.get(b"transfer-encoding") == b"chunked":
            chunks = []
            while size := int((await reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16):
                chunks.append((await reader.readexactly(size + 2))[:-2])
            await reader.readuntil(b"\r\n")  # the blank line after the last chunk
            data = b"".join(chunks)
        else:
            data = b""
        return Response(status, headers, data)

    async def close(self) -> None:
        """Close the connection."""
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()


class HttpxConnection:
    """The same, through one ``httpx.AsyncClient`` (its own connection pool)."""

    def __init__(self, port: int) -> None:
        import httpx

        self._client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}")

    async def post(self, head: bytes, body: bytes) -> Response:
        """POST ``body`` with the headers of ``head`` (its request line is ignored)."""
        headers: list[tuple[bytes, bytes]] = []
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b": ")
            if value and name != b"Host":
                headers.append((name, value))
        response = await self._client.post(ENDPOINT, content=body, headers=headers)
        raw = {k.lower(): v for k, v in response.headers.raw}
        return Response(response.status_code, raw, response.content)

    async def close(self) -> None:
        """Close the client."""
        await self._client.aclose()


Connection = RawConnection | HttpxConnection


def answer_of(response: Response) -> Any:
    """The JSON-RPC response in ``response``: its JSON body, or the last JSON-RPC response
    of its SSE events."""
    import orjson

    if not response.headers.get(b"content-type", b"").startswith(b"text/event-stream"):
        return orjson.loads(response.body)
    found = None
    for event in response.body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"\n".join(
            line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")
        )
        if data:
            message = orjson.loads(data)
            if isinstance(message, dict) and "id" in message and "method" not in message:
                found = message
    if found is None:
        raise AssertionError(f"no JSON-RPC response in the SSE body {response.body[:200]!r}")
    return found


def initialize_body(revision: str) -> bytes:
    """The ``initialize`` request (id 0) of the benchmark's clients in ``revision``."""
    params = {"protocolVersion": revision, "capabilities": {}, "clientInfo": CLIENT_INFO}
    request = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    return json.dumps(request).encode()


def stateless_meta(revision: str) -> dict[str, Any]:
    """The ``_meta`` of the benchmark's requests in a stateless ``revision``."""
    return {
        "io.modelcontextprotocol/protocolVersion": revision,
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        "io.modelcontextprotocol/clientCapabilities": {},
    }


class McpLoad:
    """An MCP client made of one connection and pre-built bytes: what a lean client sends."""

    def __init__(self, connection: Connection, port: int, revision: str) -> None:
        self.connection = connection
        self.revision = revision
        self._next_id = 1
        self._head = (
            b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n" % (ENDPOINT.encode(), port)
        )
        meta = b""
        if revision >= MODERN:
            self._head += b"MCP-Protocol-Version: %s\r\n" % revision.encode()
            self._head += b"Mcp-Method: tools/call\r\nMcp-Name: echo\r\n"
            fields = json.dumps(stateless_meta(revision), separators=(",", ":"))
            meta = b'"_meta":%s,' % fields.encode()
        # Everything of a call but its message and id, which ``echo`` writes in.
        self._call = b'{"jsonrpc":"2.0","method":"tools/call","params":{%s' % meta
        self._call += b'"name":"echo","arguments":{"message":"'

    async def start(self) -> None:
        """Initialize a session (before 2026-07-28): learn ``Mcp-Session-Id``, if any."""
        if self.revision >= MODERN:
            return
        response = await self.connection.post(self._head, initialize_body(self.revision))
        if response.status != 200 or "result" not in answer_of(response):
            raise AssertionError(f"initialize answered {response.status}: {response.body[:200]!r}")
        self._head += b"MCP-Protocol-Version: %s\r\n" % self.revision.encode()
        session = response.headers.get(b"mcp-session-id")
        if session is not None:
            self._head += b"Mcp-Session-Id: %s\r\n" % session
        note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        response = await self.connection.post(self._head, note)
        if response.status != 202:
            raise AssertionError(f"notifications/initialized answered {response.status}")

    async def echo(self, message: str) -> None:
        """Call ``echo`` with ``message`` (plain ASCII: no escaping) and check the answer."""
        request_id = self._next_id
        self._next_id += 1
        body = b'%s%s"}},"id":%d}' % (self._call, message.encode(), request_id)
        response = await self.connection.post(self._head, body)
        answer = answer_of(response)
        if response.status != 200 or answer.get("id") != request_id:
            raise AssertionError(f"echo answered {response.status}: {response.body[:200]!r}")
        text = answer["result"]["content"][0]["text"]
        if text != message:
            raise AssertionError(f"echo answered {text!r} to {message!r}")


async def open_load(row: Row, server: RunningServer, revision: str) -> McpLoad:
    """A started load client of ``row`` on ``server``."""
    connection: Connection
    if row.client == "httpx":
        connection = HttpxConnection(server.port)
    else:
        connection = await RawConnection.open(server.port)
    load = McpLoad(connection, server.port, revision)
    await load.start()
    return load


# -- batches ----------------------------------------------------------------------------------

#: Sends one call with a message and checks its answer.
Echo = Callable[[str], Awaitable[None]]
#: Per row, per clients (``"1"``, ``"16"``), per measure: one value per round.
Rounds = dict[str, dict[str, dict[str, list[float]]]]


def _percentile(ordered: Sequence[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def timed_batch(echoes: Sequence[Echo], seconds: float, server_pid: int) -> dict[str, float]:
    """Every caller of ``echoes`` calling in a loop for ``seconds`` (the calls under way
    then complete): rate, latency percentiles, CPU seconds per call of each side."""
    latencies: list[float] = []
    record = latencies.append
    clock = time.perf_counter

    async def loop(worker: int, echo: Echo, deadline: float) -> None:
        i = 0
        while (start := clock()) < deadline:
            await echo(f"hello {worker} {i}")
            record(clock() - start)
            i += 1

    server_before = process_cpu_seconds(server_pid)
    client_before = time.process_time()
    started = clock()
    await asyncio.gather(*(loop(w, echo, started + seconds) for w, echo in enumerate(echoes)))
    elapsed = clock() - started
    client_cpu = time.process_time() - client_before
    server_cpu = process_cpu_seconds(server_pid) - server_before
    calls = len(latencies)
    latencies.sort()
    return {
        "rate": calls / elapsed,
        "p50": _percentile(latencies, 0.5),
        "p99": _percentile(latencies, 0.99),
        "client_cpu": client_cpu / calls,
        "server_cpu": server_cpu / calls,
    }


@dataclass
class Lane:
    """Something measured side by side: a row's callers for each number of clients."""

    key: str
    echoes: dict[int, list[Echo]]
    server_pid: int


async def run_rounds(lanes: Sequence[Lane], settings: Settings, label: str) -> Rounds:
    """Warm every lane up, then the rounds (see the module's docstring)."""
    rounds: Rounds = {
        lane.key: {str(n): {m: [] for m in MEASURES} for n in IN_FLIGHT} for lane in lanes
    }
    for lane in lanes:
        for n in IN_FLIGHT:
            await timed_batch(lane.echoes[n], settings.warmup_s, lane.server_pid)
    for round_ in range(settings.rounds):
        shift = round_ % len(lanes)
        for lane in [*lanes[shift:], *lanes[:shift]]:
            for n in IN_FLIGHT:
                batch = await timed_batch(lane.echoes[n], settings.batch_s, lane.server_pid)
                for measure, value in batch.items():
                    rounds[lane.key][str(n)][measure].append(value)
        rates = ", ".join(
            f"{key} {runs['1']['rate'][-1]:,.0f}/{runs['16']['rate'][-1]:,.0f}"
            for key, runs in rounds.items()
        )
        print(
            f"  http {label} round {round_ + 1}/{settings.rounds} (req/s, 1/16 clients): {rates}",
            file=sys.stderr,
        )
    return rounds


# -- the workers ------------------------------------------------------------------------------


async def open_lane(
    stack: AsyncExitStack, key: str, row: Row, server: RunningServer, revision: str
) -> Lane:
    """A lane ``key`` of ``row``'s started load clients on ``server`` (as many as the most
    clients a batch has), closed with ``stack``."""
    loads = [await open_load(row, server, revision) for _ in range(max(IN_FLIGHT))]
    for load in loads:
        stack.push_async_callback(load.connection.close)
    echoes: list[Echo] = [load.echo for load in loads]
    return Lane(key, {n: echoes[:n] for n in IN_FLIGHT}, server.pid)


async def load_worker(revisions: Sequence[str], settings: Settings) -> dict[str, Any]:
    """Every row of the load table, in each of ``revisions``."""
    apps = available_apps()
    rows = [row for row in ROWS if row.app in apps]
    result: dict[str, Any] = {"rounds": {}, "servers": {}}
    async with (
        running_servers([APPS[a] for a in apps], settings) as servers,
        AsyncExitStack() as stack,
    ):
        result["servers"] = {k: {"http": s.http, "loop": s.loop} for k, s in servers.items()}
        for revision in revisions:
            lanes = []
            for row in rows:
                server = servers[row.app]
                if revision not in server.app.revisions:
                    continue
                lanes.append(await open_lane(stack, row.key, row, server, revision))
            result["rounds"][revision] = await run_rounds(lanes, settings, revision)
    return result


async def floor_worker(settings: Settings) -> dict[str, Any]:
    """The floor curve: the bare app with more and more work per request, side by side
    with the mcpspec app and the sans-IO one in each revision (see :func:`floor_lines`)."""
    apps = [APPS[BARE], *(busy_app(n) for n in BUSY_US)]
    if MCPSPEC in available_apps():
        apps += [APPS[MCPSPEC], APPS[SANS_IO]]
    async with (
        running_servers(apps, settings) as servers,
        AsyncExitStack() as stack,
    ):
        lanes = []
        for key, server in servers.items():
            mcp = key in (MCPSPEC, SANS_IO)
            for revision in REVISIONS if mcp else REVISIONS[:1]:
                label = f"{key} {revision}" if mcp else key
                row = Row(key, key, "raw")
                lanes.append(await open_lane(stack, label, row, server, revision))
        return await run_rounds(lanes, settings, "floor")


async def _open_sessions(connection: RawConnection, port: int, revision: str, count: int) -> None:
    """Initialize ``count`` sessions over ``connection``, each making one call."""
    for i in range(count):
        load = McpLoad(connection, port, revision)
        await load.start()
        await load.echo(f"session {i}")


async def session_memory(server: RunningServer, sessions: int) -> dict[str, Any]:
    """The growth of ``server``'s resident set per idle initialized session (2025-11-25)."""
    revision = REVISIONS[0]
    connection = await RawConnection.open(server.port)
    try:
        await _open_sessions(connection, server.port, revision, 8)  # warm-up
        await asyncio.sleep(0.2)  # the server's own clean-ups of the warm-up, if any
        before = process_rss_bytes(server.pid)
        await _open_sessions(connection, server.port, revision, sessions)
        await asyncio.sleep(0.2)
        after = process_rss_bytes(server.pid)
    finally:
        await connection.close()
    per_session = None
    if before is not None and after is not None:
        per_session = (after - before) / sessions / 1024
    return {
        "sessions": sessions,
        "revision": revision,
        "rss_before_mib": None if before is None else before / 2**20,
        "rss_kib_per_session": per_session,
    }


async def memory_worker(settings: Settings) -> dict[str, Any]:
    """Server memory per open session, mcpspec and the SDK (fresh servers)."""
    apps = [APPS[a] for a in (MCPSPEC, SDK) if a in available_apps()]
    async with running_servers(apps, settings) as servers:
        return {
            key: await session_memory(server, settings.memory_sessions)
            for key, server in servers.items()
        }


@asynccontextmanager
async def mcpspec_client(
    url: str, revision: str, http_client: Any = None
) -> AsyncIterator[Callable[[str], Awaitable[str]]]:
    """The mcpspec ``Client.http(url)``, pinned to ``revision``: a caller of ``echo``."""
    from mcpspec.runtime.connection.client import Client

    async with Client.http(url, mode=revision, http_client=http_client) as client:
        if client.revision != revision:
            raise RuntimeError(f"the mcpspec client negotiated {client.revision}")

        async def call(message: str) -> str:
            result = await client.call_tool("echo", {"message": message})
            text: str = result.content[0].text
            return text

        yield call


@asynccontextmanager
async def mcpspec_httpx2_client(
    url: str, revision: str
) -> AsyncIterator[Callable[[str], Awaitable[str]]]:
    """:func:`mcpspec_client` on an ``httpx2.AsyncClient``."""
    import httpx2

    async with httpx2.AsyncClient() as http, mcpspec_client(url, revision, http) as call:
        yield call


@asynccontextmanager
async def sdk_client(url: str, revision: str) -> AsyncIterator[Callable[[str], Awaitable[str]]]:
    """The SDK's ``mcp.Client(url)`` (Streamable HTTP), pinned as an SDK user pins it."""
    from mcp import Client

    mode: Any = revision if revision >= MODERN else "legacy"
    async with Client(url, mode=mode) as client:
        if client.protocol_version != revision:
            raise RuntimeError(f"the SDK client negotiated {client.protocol_version}")

        async def call(message: str) -> str:
            result = await client.call_tool("echo", {"message": message})
            text: str = result.content[0].text  # type: ignore[union-attr]
            return text

        yield call


def checked(call: Callable[[str], Awaitable[str]]) -> Echo:
    """An :data:`Echo` of a client's caller: the answer must be the message."""

    async def echo(message: str) -> None:
        text = await call(message)
        if text != message:
            raise AssertionError(f"echo answered {text!r} to {message!r}")

    return echo


def client_server() -> str:
    """The server of the MCP client comparison: the mcpspec app when there is one, else
    the SDK's."""
    return MCPSPEC if mcpspec_app_available() else SDK


async def clients_worker(revisions: Sequence[str], settings: Settings) -> dict[str, Any]:
    """The MCP clients (and the raw one), each against the same server."""
    server_key = client_server()
    if server_key not in available_apps():
        return {"server": None, "rounds": {}}
    makers: dict[str, Any] = {}
    if mcpspec_client_available():
        makers[MCPSPEC] = mcpspec_client
        if httpx2_available():
            makers[MCPSPEC_HTTPX2] = mcpspec_httpx2_client
    if sdk_available():
        makers[SDK] = sdk_client
    result: dict[str, Any] = {"server": server_key, "rounds": {}}
    async with (
        running_servers([APPS[server_key]], settings) as servers,
        AsyncExitStack() as stack,
    ):
        server = servers[server_key]
        for revision in revisions:
            lanes = []
            for key, make in makers.items():
                echo = checked(await stack.enter_async_context(make(server.url, revision)))
                lanes.append(Lane(key, {n: [echo] * n for n in IN_FLIGHT}, server.pid))
            raw = Row(RAW, server_key, "raw")
            loads = [await open_load(raw, server, revision) for _ in range(max(IN_FLIGHT))]
            for load in loads:
                stack.push_async_callback(load.connection.close)
            lanes.append(
                Lane(RAW, {n: [ld.echo for ld in loads[:n]] for n in IN_FLIGHT}, server.pid)
            )
            result["rounds"][revision] = await run_rounds(lanes, settings, f"clients {revision}")
    return result


#: Where the server's time goes, by the file a sample's innermost frame is in.
_PARTS: Final = (
    ("runtime/connection/http/", "mcpspec HTTP app"),
    ("runtime/connection/", "mcpspec connection layer (Peer, Server)"),
    ("runtime/", "mcpspec sans-IO runtime"),
    ("anyio/", "anyio"),
    ("sniffio/", "anyio"),
    ("h11/", "uvicorn and its HTTP parser"),
    ("httptools", "uvicorn and its HTTP parser"),
    ("uvicorn/", "uvicorn and its HTTP parser"),
    ("asyncio/", "asyncio (loop, transports, tasks)"),
    ("uvloop", "asyncio (loop, transports, tasks)"),
    ("selectors", "asyncio (loop, transports, tasks)"),
    ("mcp/", "SDK"),
    ("mcp_types/", "SDK"),
    ("pydantic", "SDK"),
    ("starlette/", "SDK"),
    ("peers/", "the app's echo tool"),
)


def summarize_samples(collapsed: str, top: int) -> str:
    """A report of py-spy's collapsed stacks (``frame;frame;... count`` lines): the share
    of the samples by part of the stack (innermost frame), then the mcpspec functions
    by inclusive share."""
    parts: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        leaf = frames[-1]
        part = next((name for key, name in _PARTS if key in leaf), "other")
        parts[part] = parts.get(part, 0) + count
        # By function: a frame without its line number.
        for function in {frame.rpartition(":")[0] for frame in frames if "runtime/" in frame}:
            inclusive[function] = inclusive.get(function, 0) + count
    if not total:
        return "no samples\n"
    lines = [f"{total} samples; by part (innermost frame):"]
    for name, count in sorted(parts.items(), key=lambda item: -item[1]):
        lines.append(f"  {100 * count / total:5.1f}%  {name}")
    lines.append("mcpspec functions, by share of the samples they are on (inclusive):")
    for function, count in sorted(inclusive.items(), key=lambda item: -item[1])[:top]:
        lines.append(f"  {100 * count / total:5.1f}%  {function})")
    return "\n".join(lines) + "\n"


def py_spy() -> str | None:
    """The ``py-spy`` command, next to this Python or on ``PATH``."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


async def profile_app(
    app_key: str, revision: str, in_flight: int, seconds: float, top: int, settings: Settings
) -> str:
    """Where ``app_key``'s server spends ``seconds`` of echo calls from ``in_flight`` raw
    clients: sampled by py-spy when it is installed (little overhead; shares of the
    samples), else under cProfile (the ``top`` functions by own, then cumulative time)."""
    out = io.StringIO()
    sampler = py_spy()
    with tempfile.TemporaryDirectory() as directory:
        profile = Path(directory) / ("server.txt" if sampler else "server.prof")
        server = await start_server(APPS[app_key], settings, None if sampler else profile)
        try:
            row = Row(app_key, app_key, "raw")
            loads = [await open_load(row, server, revision) for _ in range(in_flight)]
            echoes = [load.echo for load in loads]
            await timed_batch(echoes, 0.5, server.pid)
            recorder = None
            if sampler is not None:
                command = [sampler, "record", "--pid", str(server.pid), "--nonblocking"]
                command += ["-d", str(max(1, round(seconds))), "-r", "500", "-f", "raw"]
                recorder = await asyncio.create_subprocess_exec(
                    *command, "-o", str(profile), stdout=asyncio.subprocess.DEVNULL
                )
            batch = await timed_batch(echoes, seconds + (0.5 if recorder else 0), server.pid)
            if recorder is not None and await recorder.wait() != 0:
                raise RuntimeError("py-spy failed (it needs ptrace rights over the server)")
            for load in loads:
                await load.connection.close()
        finally:
            await stop_server(server)
        how = "sampled by py-spy" if sampler else "under cProfile"
        print(
            f"--- {app_key} {revision}, {in_flight} clients, {server.http} on {server.loop}: "
            f"{batch['rate']:,.0f} req/s {how}; server CPU {batch['server_cpu'] * 1e6:,.0f} "
            "µs/request",
            file=out,
        )
        if sampler:
            out.write(summarize_samples(profile.read_text(), top))
        else:
            print("(start-up and warm-up included)", file=out)
            stats = pstats.Stats(str(profile), stream=out)
            stats.sort_stats("tottime").print_stats(top)
            stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def _worker(args: argparse.Namespace) -> None:
    """The worker's entry: one measurement, as JSON on stdout."""
    settings = Settings(**json.loads(args.settings))
    result: Any
    if args.worker == "load":
        result = asyncio.run(load_worker(args.revision, settings))
    elif args.worker == "memory":
        result = asyncio.run(memory_worker(settings))
    elif args.worker == "floor":
        result = asyncio.run(floor_worker(settings))
    else:
        result = asyncio.run(clients_worker(args.revision, settings))
    json.dump(result, sys.stdout)


# -- measuring and reporting (in the calling process) ----------------------------------------


def _start_worker(settings: Settings, *args: str) -> subprocess.Popen[bytes]:
    return start_worker(__file__, settings, *args)


def measure(revisions: Sequence[str], settings: Settings, *, smoke: bool = False) -> dict[str, Any]:
    """The HTTP section of the report. The workers run one after the other (with
    ``smoke``, side by side: the figures mean nothing then)."""
    wanted = [r for r in revisions if r in REVISIONS]
    section: dict[str, Any] = {
        "settings": asdict(settings),
        "revisions": {},
        "memory": {},
        "clients": {},
        "floor": {},
        "notes": [],
    }
    missing = [
        m for m in ("uvicorn", "orjson", "httpx", "anyio") if not importlib.util.find_spec(m)
    ]
    if missing:
        section["skipped"] = f"not measured: {', '.join(missing)} not installed"
        return section
    if not mcpspec_app_available():
        section["notes"].append("the mcpspec ASGI app (`Server.http_app`) is not there yet")
    if not mcpspec_client_available():
        section["notes"].append("the mcpspec HTTP client (`Client.http`) is not there yet")
    if not sdk_available():
        section["notes"].append("mcp not installed: the SDK rows were not measured")
    if not wanted:
        return section
    flags = [f"-r{r}" for r in wanted]
    workers: dict[str, list[str]] = {
        "load": ["--worker", "load", *flags],
        "memory": ["--worker", "memory"],
        "clients": ["--worker", "clients", *flags],
        "floor": ["--worker", "floor"],
    }
    answers: dict[str, Any] = {}
    if smoke:
        started = {name: _start_worker(settings, *args) for name, args in workers.items()}
        answers = {name: worker_answer(worker) for name, worker in started.items()}
    else:
        answers = {
            name: worker_answer(_start_worker(settings, *args)) for name, args in workers.items()
        }
    load = answers["load"]
    section["servers"] = load["servers"]
    for revision in wanted:
        section["revisions"][revision] = summarize(load["rounds"][revision])
    section["memory"] = answers["memory"]
    clients = answers["clients"]
    section["clients"] = {
        "server": clients["server"],
        "revisions": {r: summarize(rounds, base=SDK) for r, rounds in clients["rounds"].items()},
    }
    section["floor"] = summarize(answers["floor"], base=BARE)
    if mcpspec_app_available():
        section["app_cost"] = measure_app_cost(smoke=smoke)
    return section


def measure_app_cost(*, smoke: bool) -> dict[str, Any]:
    """The report of ``bench/app_cost.py`` (the apps alone, in process), run in a fresh
    process of its own."""
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "app_cost.json"
        command = [sys.executable, str(HERE / "app_cost.py"), "--json", str(out)]
        subprocess.run(
            [*command, *(["--smoke"] if smoke else [])], check=True, stdout=subprocess.DEVNULL
        )
        report: dict[str, Any] = json.loads(out.read_text())
    return report


def summarize(rounds: Rounds, base: str = SDK) -> dict[str, Any]:
    """Medians and ratios (each row's rate over ``base``'s and over the bare app's)."""
    rows: dict[str, Any] = {}
    for key, runs in rounds.items():
        entry: dict[str, Any] = {
            "rate": {n: statistics.median(r["rate"]) for n, r in runs.items()},
            "p50_ms": {n: statistics.median(r["p50"]) * 1e3 for n, r in runs.items()},
            "p99_ms": {n: statistics.median(r["p99"]) * 1e3 for n, r in runs.items()},
            "client_cpu_us": {n: statistics.median(r["client_cpu"]) * 1e6 for n, r in runs.items()},
            "server_cpu_us": {n: statistics.median(r["server_cpu"]) * 1e6 for n, r in runs.items()},
            "rounds": runs,
        }
        for name, other in (("base", base), ("bare", BARE)):
            if other in rounds:
                theirs = rounds[other]
                entry[f"over_{name}"] = {
                    n: median_ratio(r["rate"], theirs[n]["rate"]) for n, r in runs.items()
                }
                # Their server CPU per request over this row's: the same ratio as the
                # rates' when the server is the bound, but hardly moved by other load.
                entry[f"cpu_over_{name}"] = {
                    n: median_ratio(theirs[n]["server_cpu"], r["server_cpu"])
                    for n, r in runs.items()
                }
        rows[key] = entry
    return {"base": base, "rows": rows}


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The HTTP targets, as ``bench/run.py``'s ``evaluate_targets`` reports them."""
    out: list[dict[str, Any]] = []
    for name, ratio, limit in (
        ("HTTP echo req/s (one uvicorn worker), mcpspec app ÷ SDK app", "over_base", 5.0),
        ("HTTP echo req/s (one uvicorn worker), mcpspec app ÷ bare ASGI app", "over_bare", 0.6),
    ):
        found = [
            (revision, n, value)
            for revision, data in section["revisions"].items()
            for n, value in data["rows"].get(MCPSPEC, {}).get(ratio, {}).items()
        ]
        if not found:
            measured = "; ".join(section.get("notes", [])) or "not measured"
            out.append(
                {"target": name, "limit": f"≥ {limit:g}{X}", "measured": measured,
                 "worst": "-", "pass": None}
            )  # fmt: skip
            continue
        worst = min(found, key=lambda row: row[2])
        out.append(
            {
                "target": name,
                "limit": f"≥ {limit:g}{X}",
                "measured": "; ".join(
                    f"{revision}: "
                    + ", ".join(f"{v:.2f}{X} ({n} clients)" for r, n, v in found if r == revision)
                    + " (server CPU per request: "
                    + _pair(section["revisions"][revision]["rows"][MCPSPEC][f"cpu_{ratio}"], ".2f")
                    + f"{X})"
                    for revision in section["revisions"]
                ),
                "worst": f"{worst[0]}, {worst[1]} clients: {worst[2]:.2f}{X}",
                "pass": all(value >= limit for _, _, value in found),
            }
        )
    return out


def _pair(values: dict[str, float], fmt: str) -> str:
    return " / ".join(format(values[str(n)], fmt) for n in IN_FLIGHT)


def _table(data: dict[str, Any], revision: str, *, bare: bool) -> list[str]:
    """The rows of ``data``: rates, latencies, ratios (to the bare app too, with
    ``bare``), CPU per request."""
    lines = []
    for key, entry in data["rows"].items():
        over_base, over_bare = entry.get("over_base"), entry.get("over_bare")
        cells = [
            revision,
            key,
            f"{entry['rate']['1']:,.0f}",
            f"{entry['rate']['16']:,.0f}",
            _pair(entry["p50_ms"], ".2f"),
            _pair(entry["p99_ms"], ".2f"),
            _pair(over_base, ".2f") if over_base else "-",
            *([_pair(over_bare, ".2f") if over_bare else "-"] if bare else []),
            _pair(entry["client_cpu_us"], ",.0f"),
            _pair(entry["server_cpu_us"], ",.0f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _header(first: str, one: str, many: str, *, bare: bool) -> list[str]:
    header = [
        "revision",
        first,
        f"req/s, 1 {one}",
        f"req/s, 16 {many}",
        "p50 ms, 1 / 16",
        "p99 ms, 1 / 16",
        f"÷ {SDK}, 1 / 16",
        *(["÷ bare, 1 / 16"] if bare else []),
        "client CPU µs/req, 1 / 16",
        "server CPU µs/req, 1 / 16",
    ]
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]


def _client_share(section: dict[str, Any]) -> str:
    """How the load client's CPU per request compares with the servers'."""
    parts = []
    for revision, data in section["revisions"].items():
        for key in (MCPSPEC, BARE):
            entry = data["rows"].get(key)
            if entry is not None:
                client, server = entry["client_cpu_us"], entry["server_cpu_us"]
                share = " / ".join(
                    f"{client[str(n)] / server[str(n)]:.2f}" if server[str(n)] else "n/a"
                    for n in IN_FLIGHT
                )
                parts.append(f"{revision} {key} {share}")
    return "; ".join(parts)


def markdown(section: dict[str, Any]) -> str:
    """The HTTP section as markdown: the load table, memory per session, the clients."""
    settings = section["settings"]
    servers = section.get("servers", {})
    stack = ", ".join(sorted({f"{s['http']} on {s['loop']}" for s in servers.values()}))
    lines = [
        f"Echo `tools/call` POSTs to ASGI apps under one uvicorn worker ({stack or 'uvicorn'}; "
        "loopback), from 1 and 16 keep-alive clients of a raw HTTP/1.1 load client "
        f"(asyncio streams): median over {settings['rounds']} rounds of "
        f"{settings['batch_s']:g} s batches, rows measured side by side. 2025-11-25: one "
        "session per client (initialized once, `Mcp-Session-Id`); 2026-07-28: every POST "
        "stands alone, with the mirrored headers. `SDK`: the SDK's app with JSON "
        "responses; `SDK (SSE)`: its default, an SSE stream per response (2026-07-28: "
        "JSON from a task of its own); `SDK (stateless)`: `SDK` without sessions, a fresh "
        "transport per POST; `bare`: an ASGI "
        "app that parses the body (orjson) and dumps a result, no MCP; `bare, httpx "
        "client`: the same driven by `httpx.AsyncClient`. `÷ SDK`, `÷ bare`: the row's rate "
        "over that row's, within each round. CPU µs/req: of the load client and of the "
        "server process (the two share the machine's cores).",
        "",
    ]
    if "skipped" in section:
        lines += [section["skipped"], ""]
    lines += [f"Note: {note}." for note in section.get("notes", [])]
    lines += _header("server", "client", "clients", bare=True)
    for revision, data in section["revisions"].items():
        lines += _table(data, revision, bare=True)
    if section["revisions"]:
        lines += [
            "",
            "Load client CPU ÷ server CPU per request (1 / 16 clients): "
            + _client_share(section)
            + ". Below 1, the server is the side that bounds a rate.",
        ]
    if section.get("floor", {}).get("rows"):
        lines += floor_lines(section["floor"])
    if section.get("app_cost"):
        import app_cost

        lines += ["", app_cost.markdown(section["app_cost"]).rstrip("\n")]
    memory = section.get("memory") or {}
    if memory:
        parts = []
        for key, entry in memory.items():
            per = entry["rss_kib_per_session"]
            parts.append(f"{key} {'n/a' if per is None else f'{per:,.1f} KiB'}")
        first = next(iter(memory.values()))
        lines += [
            "",
            f"Server memory per open session ({first['revision']}; resident set growth over "
            f"{first['sessions']} more idle initialized sessions, each having made one "
            "call): " + "; ".join(parts) + ".",
        ]
    clients = section.get("clients") or {}
    if clients.get("revisions"):
        lines += [
            "",
            f"MCP clients over Streamable HTTP against the {clients['server']} app: one client "
            "with 1 and 16 calls in flight, side by side; "
            f"`{MCPSPEC_HTTPX2}`: the mcpspec client given an `httpx2.AsyncClient` "
            "(`http_client=`), the library the SDK client runs on; "
            f"`{RAW}`: the load client above with 1 and 16 connections, for reference. "
            "`÷ SDK`: the rate over the SDK client's within each round.",
            "",
            *_header("client", "in flight", "in flight", bare=False),
        ]
        for revision, data in clients["revisions"].items():
            lines += _table(data, revision, bare=False)
    lines.append("")
    return "\n".join(lines)


def work_at(ratio: float, curve: Sequence[tuple[float, float]]) -> float | None:
    """The work per request (µs) at which the bare app's rate falls to ``ratio`` of its
    own, read off ``curve`` (``(work, ratio)`` points, work rising) by linear
    interpolation; ``None`` when ``ratio`` is outside the curve."""
    for (low_work, low), (high_work, high) in itertools.pairwise(curve):
        if high <= ratio <= low and low != high:
            return low_work + (low - ratio) / (low - high) * (high_work - low_work)
    return None


def floor_lines(floor: dict[str, Any]) -> list[str]:
    """The floor curve's table and what it says of the targets (16 clients)."""
    rows = floor["rows"]
    lines = [
        "",
        f"Work per request and the floor: `{BARE} + N µs` is the bare app spending N µs of "
        "CPU on each request before answering, side by side with the mcpspec app and "
        f"`{SANS_IO}`, the sans-IO sessions alone in a hand-written ASGI app (the HTTP "
        "checks, the session or the mirrored headers, the session's `receive` and `send`; "
        "no connection layer). `÷ bare`: the rate over the bare app's within each round.",
        "",
        "| app | req/s, 1 client | req/s, 16 clients | ÷ bare, 1 / 16 | "
        "server CPU µs/req, 1 / 16 |",
        "|---|---|---|---|---|",
    ]
    for key, entry in rows.items():
        lines.append(
            f"| {key} | {entry['rate']['1']:,.0f} | {entry['rate']['16']:,.0f} | "
            f"{_pair(entry['over_base'], '.2f')} | {_pair(entry['server_cpu_us'], ',.0f')} |"
        )
    curve = [(0.0, 1.0)] + [
        (float(n), rows[f"{BARE} + {n} µs"]["over_base"]["16"])
        for n in BUSY_US
        if f"{BARE} + {n} µs" in rows
    ]
    found = work_at(0.6, curve)
    said = [
        f"At 16 clients, the bare app falls to 0.6{X} its rate with "
        + (f"about {found:.0f} µs" if found is not None else f"more than {curve[-1][0]:.0f} µs")
        + " of work per request"
    ]
    works: dict[str, float | None] = {}
    for key, entry in rows.items():
        if key.startswith(MCPSPEC):
            ratio = f"{key} ({entry['over_base']['16']:.2f}{X})"
            work = works[key] = work_at(entry["over_base"]["16"], curve)
            if work is None:
                said.append(f"{ratio} lies outside the curve")
            else:
                said.append(f"{ratio} runs as it would with about {work:.0f} µs")
    layer = []
    for revision in REVISIONS:
        whole, sessions = works.get(f"{MCPSPEC} {revision}"), works.get(f"{SANS_IO} {revision}")
        if whole is not None and sessions is not None:
            layer.append(f"about {whole - sessions:.0f} µs ({revision})")
    lines += ["", "; ".join(said) + "."]
    if layer:
        lines += [
            "",
            "So the connection layer around the sessions is worth "
            + " and ".join(layer)
            + " of work per request on this stack.",
        ]
    return lines


def smoke_check(section: dict[str, Any]) -> None:
    """What ``--smoke`` asserts of the section: every row ran and the numbers are sane."""
    assert section["revisions"], section.get("skipped", "no HTTP revision measured")
    apps = available_apps()
    for revision, data in section["revisions"].items():
        expected = {
            row.key for row in ROWS if row.app in apps and revision in APPS[row.app].revisions
        }
        assert set(data["rows"]) == expected, (revision, sorted(data["rows"]))
        for key, entry in data["rows"].items():
            for n in IN_FLIGHT:
                rate = entry["rate"][str(n)]
                assert 0 < rate < 10_000_000, (revision, key, n, rate)
                assert 0 < entry["p50_ms"][str(n)] <= entry["p99_ms"][str(n)], (revision, key)
    assert set(section["memory"]) == {a for a in (MCPSPEC, SDK) if a in apps}, section["memory"]
    for key, entry in section["memory"].items():
        assert entry["sessions"] > 0 and entry["rss_before_mib"] != 0, (key, entry)
    clients = {RAW}
    clients |= {MCPSPEC} if mcpspec_client_available() else set()
    clients |= {MCPSPEC_HTTPX2} if mcpspec_client_available() and httpx2_available() else set()
    clients |= {SDK} if sdk_available() else set()
    if client_server() in apps:
        assert set(section["clients"]["revisions"]) == set(section["revisions"])
    for revision, data in section["clients"]["revisions"].items():
        assert set(data["rows"]) == clients, (revision, sorted(data["rows"]))
        for key, entry in data["rows"].items():
            assert all(entry["rate"][str(n)] > 0 for n in IN_FLIGHT), (revision, key)
    floor = section["floor"]["rows"]
    expected_floor = {BARE, *(f"{BARE} + {n} µs" for n in BUSY_US)}
    if MCPSPEC in apps:
        expected_floor |= {f"{key} {r}" for key in (MCPSPEC, SANS_IO) for r in REVISIONS}
    assert set(floor) == expected_floor, sorted(floor)
    assert all(entry["rate"]["16"] > 0 for entry in floor.values()), floor
    if MCPSPEC in apps:
        import app_cost

        app_cost.smoke_check(section["app_cost"], list(REVISIONS))
    for target in targets(section):
        assert target["pass"] in (True, False, None), target
    markdown(section)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (and the worker's)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny batches; check it works")
    parser.add_argument("-r", "--revision", action="append", choices=REVISIONS)
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 7)")
    parser.add_argument("--json", type=Path, help="write the section as JSON here")
    parser.add_argument("--http", default="auto", help="uvicorn's HTTP implementation")
    parser.add_argument("--loop", default="auto", help="uvicorn's event loop")
    parser.add_argument("--profile", metavar="APP", choices=list(APPS), help="cProfile a server")
    parser.add_argument("--in-flight", type=int, default=16, help="with --profile (default 16)")
    parser.add_argument(
        "--worker", choices=("load", "memory", "clients", "floor"), help=argparse.SUPPRESS
    )
    parser.add_argument("--settings", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args)
        return 0
    revisions = args.revision or list(REVISIONS)
    settings = Settings.for_run(smoke=args.smoke, rounds=args.rounds)
    settings.http, settings.loop = args.http, args.loop
    if args.profile:
        seconds = 1.0 if args.smoke else 5.0
        print(
            asyncio.run(
                profile_app(args.profile, revisions[0], args.in_flight, seconds, 40, settings)
            )
        )
        return 0
    section = measure(revisions, settings, smoke=args.smoke)
    section["targets"] = targets(section)
    print(markdown(section))
    for target in section["targets"]:
        verdict = {True: "PASS", False: "MISS", None: "n/a "}[target["pass"]]
        print(f"  {verdict}  {target['target']}: {target['measured']} (limit {target['limit']})")
    if args.json:
        args.json.write_text(json.dumps(section, indent=2, ensure_ascii=False) + "\n")
    if args.smoke:
        smoke_check(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
