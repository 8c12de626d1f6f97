"""Several workers sharing sessions, in tests: a demo server for each worker, apps
joined by one cluster (in memory, or a real ``redis-server`` started for the test),
served by uvicorn in this process, and an ``httpx`` transport that sends each request
to the next worker in turn (a balancer without affinity)."""

from __future__ import annotations

import itertools
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import httpx

from mcpspec.runtime.connection import RequestContext, Server
from mcpspec.runtime.connection.http import HttpApp, http_app
from mcpspec.runtime.connection.http.event_store import MemoryEventStore
from mcpspec.runtime.connection.http.session_bus import MemoryBus
from mcpspec.runtime.connection.http.session_store import MemorySessionStore
from mcpspec.runtime.connection.http.shared_sessions import Cluster
from mcpspec.runtime.connection.task_store import TaskStore
from mcpspec.runtime.connection.tasks import TaskSettings
from tests.http_kit import free_port, serve_app, wait_listening

#: The key every worker seals 2026-07-28 ``requestState`` with (shared configuration).
STATE_KEY = b"cluster-test-state-key-0123456789"


def cluster_server(seen: dict[str, Any], tasks: TaskStore | None = None) -> Server:
    """One worker's server (every worker runs the same code); ``seen`` is what the
    test watches, shared by the workers of this process; ``tasks``: where its tasks
    are kept (with a task tool, ``hold_task``, when given)."""
    server = Server(
        "cluster-test",
        "1.0",
        list_changed=True,
        subscribe=True,
        state_key=STATE_KEY,
        tasks=None if tasks is None else TaskSettings(store=tasks, poll_interval_ms=20),
    )

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text."""
        return text

    @server.tool()
    async def steps(count: int, ctx: RequestContext) -> str:
        """Report progress ``count`` times, then answer."""
        for step in range(count):
            await ctx.report_progress(step + 1, count)
        return f"{count} steps"

    @server.tool()
    async def ask(ctx: RequestContext) -> str:
        """Ask the client for a name (elicitation)."""
        answer = await ctx.elicit(
            message="Your name?",
            requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
        )
        return f"hello {answer.content['name']}"

    @server.tool()
    async def roots(ctx: RequestContext) -> str:
        """Ask the client for its roots."""
        listed = await ctx.list_roots()
        return "roots: " + ", ".join(root.name for root in listed.roots)

    @server.tool()
    async def hold(ctx: RequestContext) -> str:
        """Report progress once, then wait until released (or cancelled)."""
        await ctx.report_progress(1, 2)
        try:
            await seen["release"].wait()
        except anyio.get_cancelled_exc_class():
            seen["cancelled"].set()
            seen["cancels"] = seen.get("cancels", 0) + 1
            raise
        return "released"

    @server.tool()
    async def report_then_hold(count: int, ctx: RequestContext) -> str:
        """Report progress ``count`` times (each naming this worker), then wait until
        released (or cancelled)."""
        for step in range(count):
            await ctx.report_progress(step + 1, count + 1, message=str(seen.get("name")))
        await seen["release"].wait()
        return "released"

    if tasks is not None:

        @server.tool(task="optional")
        async def hold_task(ctx: RequestContext) -> str:
            """As ``hold``, as a task: wait until released (or cancelled)."""
            try:
                await seen["release"].wait()
            except anyio.get_cancelled_exc_class():
                seen["task_cancelled"].set()
                raise
            return "released"

    @server.tool()
    async def touch() -> str:
        """Announce that the tool list changed."""
        await server.notify_tools_changed()
        return "touched"

    @server.tool()
    async def announce(text: str, ctx: RequestContext) -> str:
        """Send a log message about no request (it goes to the session's GET stream)."""
        params = ctx.types.LoggingMessageNotificationParams(level="info", data=text)
        await ctx.peer.notify(ctx.types.LoggingMessageNotification(params=params))
        return "announced"

    @server.tool()
    async def update(uri: str) -> str:
        """Announce that the resource ``uri`` changed."""
        await server.notify_resource_updated(uri)
        return "updated"

    @server.tool()
    async def chat(ctx: RequestContext) -> str:
        """Log one info message, then answer."""
        await ctx.log("info", "chatting")
        return "chatted"

    return server


def memory_clusters(max_sessions: int = 4096) -> Callable[[], Cluster]:
    """Clusters of apps of this process: every call gives the same one."""
    store = MemorySessionStore(max_sessions=max_sessions)
    cluster = Cluster(store, MemoryBus(), event_store=MemoryEventStore())
    return lambda: cluster


#: The options of a test's redis-server that keep nothing on disk.
NOTHING_SAVED = ("--save", "", "--appendonly", "no")


class RedisProcess:
    """A ``redis-server`` of its own on a free loopback port (nothing saved to disk),
    which a test may pause (slow), stop and start again (down, then back, empty).
    Needs Debian's ``redis-server`` (``nox -s cluster`` installs it)."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self.binary = binary
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", *NOTHING_SAVED],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        await wait_listening(self.port, self.process)

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)


@asynccontextmanager
async def redis_process() -> AsyncIterator[RedisProcess]:
    """A :class:`RedisProcess`, started; stopped after."""
    redis = RedisProcess()
    await redis.start()
    try:
        yield redis
    finally:
        redis.stop()


@asynccontextmanager
async def redis_server() -> AsyncIterator[str]:
    """A ``redis-server`` of its own (see :class:`RedisProcess`); its URL."""
    async with redis_process() as redis:
        yield redis.url


class Workers(list[str]):
    """The base URLs of running workers; :meth:`stop` ends one (as if killed: its
    sessions' copies go with it, the sessions live on in the cluster)."""

    def __init__(self) -> None:
        super().__init__()
        self.stops: list[anyio.Event] = []
        self.stopped: list[anyio.Event] = []
        self.apps: list[HttpApp] = []

    async def stop(self, index: int) -> None:
        self.stops[index].set()
        await self.stopped[index].wait()


@asynccontextmanager
async def workers(
    count: int,
    clusters: Callable[[], Cluster],
    seen: dict[str, Any],
    tasks: Callable[[], TaskStore] | None = None,
    **settings: Any,
) -> AsyncIterator[Workers]:
    """``count`` workers (apps of one cluster, each its own server, its tasks in the
    store ``tasks`` gives when given) served by uvicorn, each in a task of its own (so
    that any one stops alone)."""
    running = Workers()

    async def worker(*, task_status: anyio.abc.TaskStatus[str]) -> None:
        stop, stopped = anyio.Event(), anyio.Event()
        running.stops.append(stop)
        running.stopped.append(stopped)
        try:
            server = cluster_server(seen, None if tasks is None else tasks())
            app = http_app(server, cluster=clusters(), **settings)
            running.apps.append(app)
            async with serve_app(app) as base:
                task_status.started(base)
                await stop.wait()
        finally:
            stopped.set()

    async with anyio.create_task_group() as task_group:
        for _ in range(count):
            running.append(await task_group.start(worker))
        try:
            yield running
        finally:
            for stop in running.stops:
                stop.set()


class RoundRobin(httpx.AsyncBaseTransport):
    """Sends each request to the next of ``bases`` in turn (no affinity); ``sent``
    says where each went."""

    def __init__(self, bases: list[str]) -> None:
        self.ports = [httpx.URL(base).port for base in bases]
        self._next = itertools.cycle(range(len(bases)))
        self._inner = httpx.AsyncHTTPTransport()
        self.sent: list[tuple[str, int]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        worker = next(self._next)
        request.url = request.url.copy_with(port=self.ports[worker])
        self.sent.append((request.method, worker))
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
