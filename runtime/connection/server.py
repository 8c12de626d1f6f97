"""The MCP server: typed handlers per method, served over any message stream.

A :class:`Server` holds handlers, one per request method (``tools/list``,
``tools/call``, ``resources/read``, ...). A handler is a coroutine function taking the
typed request (a generated Struct of the negotiated revision) and a
:class:`~mcpspec.runtime.connection.context.RequestContext`, and returning the result::

    server = Server("demo", "1.0")

    @server.handler("tools/call")
    async def call_tool(request, ctx):
        return ctx.types.CallToolResult(content=[ctx.types.TextContent(text="hi")])

    anyio.run(server.run_stdio)

The server answers ``initialize``, ``server/discover``, ``ping`` and (unless a handler
is registered for it) ``logging/setLevel`` itself; a method without a handler answers
-32601; a handler that raises answers -32603 (or the error of a
:class:`~mcpspec.runtime.connection.errors.RequestError` it raises), and the connection
goes on. The capabilities it declares follow from the handlers registered, unless
given. One ``Server`` serves any number of connections, each with its own session:
:meth:`Server.connect` puts it on a message stream (stdio, a test's memory pair, and
every HTTP era alike), :meth:`Server.serve` serves one stream until it ends. HTTP is
``mcpspec.runtime.connection.http.http_app(server)``.
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import typing
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, Final, TypeVar

import anyio
import msgspec
from msgspec import UNSET

import mcpspec
from mcpspec.runtime.envelope import RequestId
from mcpspec.runtime.errors import ErrorCode, show
from mcpspec.runtime.extensions import KNOWN, TASKS
from mcpspec.runtime.session.events import NotificationReceived, ProtocolViolation, RequestReceived
from mcpspec.runtime.session.limits import DEFAULT_LIMITS, Limits
from mcpspec.runtime.session.server import ServerSession
from mcpspec.runtime.session.stateless import LEVELS

from .changes import ChangeFeed, agreed_filter
from .completions import Completers
from .content import refuse_unsupported
from .context import (
    ClientDeclarations,
    InputNeeded,
    InputState,
    RequestContext,
    RequestDeclarations,
    SessionDeclarations,
    _Answer,
)
from .errors import RequestError
from .features import DeclaredFeatures
from .lifespan import Lifespan, LifespanFn
from .pagination import Pager
from .peer import AnswerLater, Peer
from .principal import current_principal, missing_scopes, sealing_key
from .prompts import Prompts
from .resources import Resources
from .stdio import stdio_server_stream
from .task_extension import declares_tasks, extension_era, missing_tasks_capability
from .tasks import TASK_REVISIONS, TaskManager, TaskSettings
from .tools import TaskSupport, Tool
from .transport import MessageStream

__all__ = ["NotificationHandlerFn", "RequestHandlerFn", "Server", "ServerConnection"]

#: A request handler: the typed request and its context in, the result out.
RequestHandlerFn = Callable[[Any, RequestContext], Awaitable[Any]]
#: A notification handler: the typed notification in.
NotificationHandlerFn = Callable[[Any], Awaitable[None]]
H = TypeVar("H", bound=RequestHandlerFn)
N = TypeVar("N", bound=NotificationHandlerFn)
T = TypeVar("T", bound=Callable[..., Awaitable[Any]])

#: Methods the server answers itself.
_OWN: Final = frozenset({"initialize", "server/discover", "ping"})
#: Methods served with the connection's change feed.
_NEEDS_FEED: Final = frozenset(
    {"resources/subscribe", "resources/unsubscribe", "subscriptions/listen"}
)
#: The capability (as a JSON object path and value) each handled method declares.
_DECLARES: Final[Mapping[str, tuple[str, dict[str, Any]]]] = {
    "tools/list": ("tools", {}),
    "tools/call": ("tools", {}),
    "prompts/list": ("prompts", {}),
    "prompts/get": ("prompts", {}),
    "resources/list": ("resources", {}),
    "resources/read": ("resources", {}),
    "resources/templates/list": ("resources", {}),
    "resources/subscribe": ("resources", {"subscribe": True}),
    "resources/unsubscribe": ("resources", {"subscribe": True}),
    "completion/complete": ("completions", {}),
    "logging/setLevel": ("logging", {}),
    "tasks/list": ("tasks", {"list": {}}),
    "tasks/cancel": ("tasks", {"cancel": {}}),
}
#: The task methods a server with task-augmented tools answers.
_TASK_METHODS: Final = ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update")


@functools.cache
def _client_methods() -> frozenset[str]:
    """Every request method a client sends, in any revision."""
    import importlib

    methods: set[str] = set()
    for revision in mcpspec.REVISIONS:
        module = importlib.import_module(mcpspec.module_name(revision))
        methods.update(module.codec.client_requests)
    return frozenset(methods)


class Server(DeclaredFeatures):
    """An MCP server: handlers by method, identity, capabilities.

    ``name`` and ``version`` are its identity (``info``, an ``Implementation`` or a
    mapping, replaces them when given); ``instructions`` go to the client at
    negotiation; ``revisions`` restricts the revisions it accepts (default: all);
    ``capabilities`` (a ``ServerCapabilities`` or mapping) replaces the ones derived from
    the handlers; ``logging`` declares the logging capability and answers
    ``logging/setLevel``, so that ``ctx.log`` reaches clients; ``list_changed`` declares
    ``listChanged`` for tools, prompts and resources (see :meth:`notify_tools_changed`);
    ``subscribe`` declares ``resources.subscribe`` and keeps the subscriptions (see
    :meth:`notify_resource_updated`); both serve ``subscriptions/listen`` in 2026-07-28;
    ``limits`` bound what a
    client can make one connection hold (:class:`~mcpspec.runtime.Limits`, the largest
    message among them). ``state_key`` seals the ``requestState`` of 2026-07-28 input
    rounds (random per process when not given; several workers need the same one).
    ``lifespan`` opens what the handlers share once per process (see
    :mod:`~mcpspec.runtime.connection.lifespan`): its value is ``ctx.lifespan``.
    ``page_size`` cuts the lists the server answers itself (declared tools, resources,
    templates, prompts) into pages of that many, with cursors sealed by ``state_key``.
    ``tasks`` says how tasks are kept (:class:`~mcpspec.runtime.connection.tasks.TaskSettings`:
    the store, ``ttl`` and poll interval bounds), for tools declared with ``task=``.
    """

    def __init__(
        self,
        name: str = "mcpspec-server",
        version: str = "0.0.0",
        *,
        info: Any = None,
        instructions: str | None = None,
        revisions: list[str] | tuple[str, ...] | None = None,
        capabilities: Any = None,
        logging: bool = True,
        list_changed: bool = False,
        subscribe: bool = False,
        limits: Limits | None = None,
        state_key: bytes | None = None,
        lifespan: LifespanFn | None = None,
        page_size: int | None = None,
        tasks: TaskSettings | None = None,
    ) -> None:
        if state_key is not None and len(state_key) < 16:
            raise ValueError("state_key must be at least 16 bytes")
        #: The key that seals the ``requestState`` of 2026-07-28 ``InputRequiredResult``
        #: answers (random per process unless given: give the same one to every worker
        #: that may take a retried request).
        self.state_key: bytes = state_key if state_key is not None else secrets.token_bytes(32)
        self.info: Any = info if info is not None else {"name": name, "version": version}
        self.instructions = instructions
        self.revisions = tuple(revisions) if revisions is not None else None
        self._capabilities = capabilities
        self.logging = logging
        self.list_changed = list_changed
        self.subscribe = subscribe
        self._connections: set[ServerConnection] = set()
        #: Where the changes announced here go besides this process's clients (the
        #: other workers of a cluster; set by the HTTP app that shares its sessions).
        self.change_relay: Callable[[str, str | None], Awaitable[None]] | None = None
        self.limits = limits if limits is not None else DEFAULT_LIMITS
        self._handlers: dict[str, RequestHandlerFn] = {}
        self._notification_handlers: dict[str, NotificationHandlerFn] = {}
        self._tools: dict[str, Tool] = {}
        self._lifespan = Lifespan(lifespan, self)
        self._pager = Pager(self.state_key, page_size)
        self._resources = Resources(self._pager)
        self._prompts = Prompts(self._pager)
        self._completers = Completers(self._knows)
        self._tasks = TaskManager(
            tasks if tasks is not None else TaskSettings(),
            self._pager,
            self.limits.max_message_bytes,
        )
        #: The methods answered for what was declared (resources, prompts, completers).
        self._declared: dict[str, str] = {}

    # -- registration -----------------------------------------------------------------------

    def handler(self, method: str) -> Callable[[H], H]:
        """Register the decorated coroutine function as the handler of ``method``."""

        def register(fn: H) -> H:
            self.add_handler(method, fn)
            return fn

        return register

    def add_handler(self, method: str, fn: RequestHandlerFn) -> None:
        """Register ``fn`` as the handler of requests of ``method`` (replacing any)."""
        if method in _OWN:
            raise ValueError(f"the server answers {method} itself")
        if method not in _client_methods():
            raise ValueError(f"{method!r} is not a client request in any revision")
        if self._tools and method in ("tools/list", "tools/call"):
            raise ValueError(f"the server answers {method} for the tools declared")
        if method in self._declared:
            raise ValueError(f"the server answers {method} for the {self._declared[method]}")
        self._handlers[method] = fn

    def notification_handler(self, method: str) -> Callable[[N], N]:
        """Register the decorated coroutine function for the client's notifications of
        ``method`` (``notifications/roots/list_changed``, ...); it gets the typed
        notification."""

        def register(fn: N) -> N:
            self._notification_handlers[method] = fn
            return fn

        return register

    def tool(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        title: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        scopes: Iterable[str] = (),
        task: TaskSupport | None = None,
        ask_before_task: bool = False,
    ) -> Callable[[T], T]:
        """Declare the decorated coroutine function as a tool (see
        :mod:`mcpspec.runtime.connection.tools`: the input schema comes from its
        annotations, the arguments are converted by msgspec). The server then answers
        ``tools/list`` and ``tools/call`` itself, which excludes handlers of its own for
        them. ``scopes``: the OAuth scopes a principal needs to see and call it (over
        HTTP with authorization: ``tools/list`` leaves it out for a principal without
        them, and a call is refused with 403 ``insufficient_scope``). ``task``
        (``"optional"`` or ``"required"``) lets clients of 2025-11-25 call it as a task
        (see :mod:`~mcpspec.runtime.connection.tasks`): its ``execution.taskSupport``;
        a ``"required"`` one called plainly is refused with -32601. With
        ``ask_before_task``, a task of the 2026-07-28 extension asks its questions in
        the request's rounds and becomes a task where the handler calls
        ``ctx.start_task()`` (:meth:`~.context.RequestContext.start_task`). A function
        annotated to return content that none of the server's revisions has (``Audio``
        for a server of 2024-11-05 alone) is refused here, naming the revision needed."""

        def register(fn: T) -> T:
            tool = Tool.from_function(
                fn,
                name=name,
                description=description,
                title=title,
                annotations=annotations,
                scopes=scopes,
                task=task,
                ask_before_task=ask_before_task,
            )
            refuse_unsupported(fn, self.revisions, f"tool {tool.name!r}")
            self.add_tool(tool)
            return fn

        return register

    def add_tool(self, tool: Tool) -> None:
        """Declare ``tool`` (replacing one of the same name)."""
        own = self._handlers.get("tools/call")
        if own is not None and own != self._call_tool:
            raise ValueError("tools/call has a handler of its own: declare tools or handle it")
        self._tools[tool.name] = tool
        self._handlers["tools/list"] = self._list_tools
        self._handlers["tools/call"] = self._call_tool
        if tool.task_support is not None:
            self._declared.update(dict.fromkeys(_TASK_METHODS, "tasks"))
            self._handlers["tasks/get"] = self._get_task
            self._handlers["tasks/result"] = self._task_result
            self._handlers["tasks/list"] = self._list_tasks
            self._handlers["tasks/cancel"] = self._cancel_task
            self._handlers["tasks/update"] = self._update_task

    @property
    def tools(self) -> Mapping[str, Tool]:
        """The tools declared, by name."""
        return self._tools

    def scopes_of(self, method: str, name: Any) -> frozenset[str]:
        """The scopes a request of ``method`` about ``name`` (a tool's or prompt's
        name, a resource's URI) needs: what the HTTP app checks before the request
        reaches a session."""
        if not isinstance(name, str):
            return frozenset()
        if method == "tools/call":
            tool = self._tools.get(name)
            if tool is not None:
                return tool.scopes
        elif method == "prompts/get":
            prompt = self._prompts.prompts.get(name)
            if prompt is not None:
                return prompt.scopes
        elif method in ("resources/read", "resources/subscribe"):
            # Updates of a resource tell what it holds: subscribing needs its scopes.
            return self._resources.scopes_of(name)
        return frozenset()

    @property
    def scoped(self) -> bool:
        """Whether any item needs scopes of its own."""
        return (
            any(tool.scopes for tool in self._tools.values())
            or self._prompts.scoped
            or self._resources.scoped
        )

    async def _list_tools(self, request: Any, ctx: RequestContext) -> Any:
        params = request.params
        cursor = None if params is None or params is UNSET else params.cursor
        principal = current_principal.get()
        visible = [t for t in self._tools.values() if not missing_scopes(principal, t.scopes)]
        page, following = self._pager.page("tools/list", visible, cursor)
        revision = ctx.revision
        result: dict[str, Any] = {"tools": [tool.definition(revision) for tool in page]}
        if following is not None:
            result["nextCursor"] = following
        return result

    async def _call_tool(self, request: Any, ctx: RequestContext) -> Any:
        params = request.params
        tool = self._tools.get(params.name)
        if tool is None or missing_scopes(current_principal.get(), tool.scopes):
            # A tool the principal may not call is one it cannot know of (the HTTP
            # app refused it with 403 already; this holds for batches too).
            raise RequestError.invalid_params(f"unknown tool {show(params.name)}")
        arguments = None if params.arguments is msgspec.UNSET else params.arguments
        task = getattr(params, "task", UNSET)
        if ctx.revision in TASK_REVISIONS:
            if task is not UNSET and tool.task_support is None:
                raise RequestError.of(
                    ErrorCode.METHOD_NOT_FOUND,
                    f"tool {show(params.name)} does not run as a task",
                    data={"taskSupport": "forbidden"},
                )
            if task is UNSET and tool.task_support == "required":
                raise RequestError.of(
                    ErrorCode.METHOD_NOT_FOUND,
                    f"tool {show(params.name)} runs only as a task (params.task)",
                    data={"taskSupport": "required"},
                )
        elif tool.task_support is not None and ctx.revision in KNOWN[TASKS].revisions:
            # The extension: a task when this request's client declared it, the tool's
            # registration deciding (a legacy ``params.task`` is ignored).
            if declares_tasks(ctx):
                task = None
            elif tool.task_support == "required":
                raise missing_tasks_capability(f"tool {show(params.name)} runs only as a task")
            else:
                task = UNSET
        if task is not UNSET:
            session = ctx.peer.session

            async def work(task_ctx: RequestContext) -> Any:
                result = await tool.call(arguments, task_ctx)
                return coerce_result(session, "tools/call", result)

            ttl = None if task is None else task.ttl
            if tool.ask_before_task and ctx.stateless:
                return await self._tasks.start_after_input(ctx, work, ttl)
            return await self._tasks.start(ctx, work, ttl)
        return await tool.call(arguments, ctx)

    async def _get_task(self, request: Any, ctx: RequestContext) -> Any:
        if extension_era(ctx):
            return await self._tasks.detailed(ctx, request.params.task_id)
        return await self._tasks.get(ctx, request.params.task_id)

    async def _update_task(self, request: Any, ctx: RequestContext) -> Any:
        extension_era(ctx)  # the extension's alone
        params = request.params
        return await self._tasks.update(ctx, params.task_id, params.input_responses)

    async def _task_result(self, request: Any, ctx: RequestContext) -> Any:
        return await self._tasks.result(ctx, request.params.task_id)

    async def _list_tasks(self, request: Any, ctx: RequestContext) -> Any:
        params = request.params
        return await self._tasks.list(ctx, None if params is UNSET else params.cursor)

    async def _cancel_task(self, request: Any, ctx: RequestContext) -> Any:
        if extension_era(ctx):
            return await self._tasks.acknowledge_cancel(ctx, request.params.task_id)
        return await self._tasks.cancel(ctx, request.params.task_id)

    @property
    def extensions(self) -> frozenset[str]:
        """The extensions the server speaks: the tasks extension once a tool runs as a
        task (in 2026-07-28, where tasks left the core)."""
        if any(tool.task_support is not None for tool in self._tools.values()):
            return frozenset({TASKS})
        return frozenset()

    @property
    def task_manager(self) -> TaskManager:
        """The server's tasks (their ``store``, their ``settings``)."""
        return self._tasks

    @property
    def handled(self) -> frozenset[str]:
        """The methods with a handler."""
        return frozenset(self._handlers)

    @property
    def capabilities(self) -> Any:
        """The capabilities declared: the ones given, else those the handlers imply."""
        if self._capabilities is not None:
            return self._capabilities
        derived: dict[str, dict[str, Any]] = {}
        methods = set(self._handlers)
        if self.logging:
            methods.add("logging/setLevel")
        if self.subscribe:
            methods.add("resources/subscribe")
        for method in sorted(methods):
            entry = _DECLARES.get(method)
            if entry is not None:
                name, value = entry
                derived.setdefault(name, {}).update(value)
        if self.list_changed:
            for name in ("tools", "prompts", "resources"):
                if name in derived:
                    derived[name]["listChanged"] = True
        if any(tool.task_support is not None for tool in self._tools.values()):
            derived.setdefault("tasks", {})["requests"] = {"tools": {"call": {}}}
            # 2026-07-28 has no ``tasks`` capability: the extension is declared instead.
            derived["extensions"] = {TASKS: {}}
        return derived

    # -- change notifications ---------------------------------------------------------------

    async def notify_tools_changed(self) -> None:
        """Tell every connected client that takes it that the tool list changed (needs
        ``list_changed``): on the connection up to 2025-11-25, on each
        ``subscriptions/listen`` that opted in, in 2026-07-28."""
        await self._deliver("notifications/tools/list_changed")

    async def notify_prompts_changed(self) -> None:
        """The prompt list changed (as :meth:`notify_tools_changed`)."""
        await self._deliver("notifications/prompts/list_changed")

    async def notify_resources_changed(self) -> None:
        """The resource list changed (as :meth:`notify_tools_changed`)."""
        await self._deliver("notifications/resources/list_changed")

    async def notify_resource_updated(self, uri: str) -> None:
        """The resource ``uri`` changed: tell the clients subscribed to it (needs
        ``subscribe``; ``resources/subscribe`` up to 2025-11-25, the
        ``resourceSubscriptions`` of a ``subscriptions/listen`` in 2026-07-28)."""
        await self._deliver("notifications/resources/updated", uri)

    async def _deliver(self, method: str, uri: str | None = None) -> None:
        await self.deliver_here(method, uri)
        if self.change_relay is not None:
            await self.change_relay(method, uri)

    async def deliver_here(self, method: str, uri: str | None = None) -> None:
        """Send the change ``method`` (about ``uri``) to the clients connected to this
        process (what another worker announced and relayed here)."""
        for connection in list(self._connections):
            if connection.feed is not None:
                await connection.feed.deliver(method, uri)

    def session(self, revisions: tuple[str, ...] | None = None) -> ServerSession:
        """A new sans-IO session for one connection of this server (accepting
        ``revisions``, when given, instead of the server's own)."""
        return ServerSession(
            revisions if revisions is not None else self.revisions,
            info=self.info,
            capabilities=self.capabilities,
            instructions=self.instructions,
            limits=self.limits,
            extensions=self.extensions,
        )

    # -- serving ------------------------------------------------------------------------------

    def running(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """Enter the server's lifespan for the block's duration (its value as the
        target; shared when entered already), and run tasks meanwhile. ``run_stdio``,
        ``http_app`` and ``Client.in_memory`` enter it themselves."""
        return self._running()

    @contextlib.asynccontextmanager
    async def _running(self) -> AsyncIterator[Any]:
        async with self._lifespan.entered() as value, self._tasks.running():
            yield value

    def connection(
        self,
        stream: MessageStream,
        *,
        linger: float = 5.0,
        revisions: tuple[str, ...] | None = None,
        changes: bool = True,
        change_buffer: int | None = None,
    ) -> ServerConnection:
        """A connection of this server over ``stream``, not running yet: for a caller
        that feeds it messages itself (an HTTP POST's body: ``connection.peer.feed``),
        or enters it (:meth:`connect` does). ``revisions`` restricts the revisions it
        accepts; ``changes``: it takes change notifications (``False`` for a connection
        that lasts one request), queued up to ``change_buffer`` of them when given (then
        someone must run ``connection.feed.pump``)."""
        return ServerConnection(
            self,
            stream,
            linger=linger,
            revisions=revisions,
            changes=changes,
            change_buffer=change_buffer,
        )

    @contextlib.asynccontextmanager
    async def connect(
        self,
        stream: MessageStream,
        *,
        linger: float = 5.0,
        revisions: tuple[str, ...] | None = None,
        change_buffer: int | None = None,
        on_overflow: Callable[[], object] | None = None,
    ) -> AsyncIterator[ServerConnection]:
        """Put this server on ``stream``: a running :class:`ServerConnection`, for the
        block's duration (``await connection.wait_closed()`` to serve until the stream
        ends). Leaving closes the stream and cancels what still runs. With
        ``change_buffer``, change notifications are queued (the announcer never waits on
        this client) and sent from a task of the connection; a client more than that
        many behind ends the connection (``on_overflow`` is told, without waiting)."""
        connection = self.connection(
            stream, linger=linger, revisions=revisions, change_buffer=change_buffer
        )
        peer, feed = connection.peer, connection.feed
        with self.announcing(connection):
            async with peer, anyio.create_task_group() as tasks:
                if change_buffer is not None and feed is not None:

                    def overflow() -> None:
                        # The client does not read: a change being written to it never
                        # ends.
                        peer.cancel_write()
                        tasks.cancel_scope.cancel()
                        if on_overflow is not None:
                            on_overflow()

                    feed.on_overflow = overflow
                    tasks.start_soon(feed.pump)
                yield connection
                tasks.cancel_scope.cancel()

    @contextlib.contextmanager
    def announcing(self, connection: ServerConnection) -> Iterator[None]:
        """Send the changes announced (:meth:`notify_tools_changed`, ...) to
        ``connection`` too, for the block's duration."""
        self._connections.add(connection)
        try:
            yield
        finally:
            self._connections.discard(connection)

    async def serve(self, stream: MessageStream, *, linger: float = 5.0) -> None:
        """Serve one connection over ``stream`` until it ends (then the requests in
        flight get ``linger`` seconds to finish). Closes the stream."""
        async with self.connect(stream, linger=linger) as connection:
            await connection.wait_closed()

    async def run_stdio(self, *, max_message_size: int | None = None, linger: float = 1.0) -> None:
        """Serve this process's stdin and stdout until stdin closes, then give the
        requests in flight ``linger`` seconds to finish (a client closing stdin is
        shutting the server down: it waits a grace period, then terminates it). Nothing
        but protocol goes to stdout (anything printed goes to stderr meanwhile). A line
        over ``max_message_size`` (default: ``limits.max_message_bytes``) is refused
        unread."""
        limit = max_message_size if max_message_size is not None else self.limits.max_message_bytes
        async with self.running(), stdio_server_stream(max_message_size=limit) as stream:
            await self.serve(stream, linger=linger)

    def run(self, *, backend: str = "asyncio", linger: float = 1.0) -> None:
        """Serve stdio until stdin closes (:meth:`run_stdio`), in a new event loop of
        ``backend`` (``"asyncio"`` or ``"trio"``)."""
        anyio.run(functools.partial(self.run_stdio, linger=linger), backend=backend)


class ServerConnection:
    """One connection of a :class:`Server` (made by :meth:`Server.connection`, run by
    :meth:`Server.connect`): its sans-IO ``session``, the :class:`Peer` speaking it over
    the stream, its change ``feed`` (``None``: it takes no change notifications), and
    what the client set (``logging/setLevel``)."""

    def __init__(
        self,
        server: Server,
        stream: MessageStream,
        *,
        linger: float = 5.0,
        revisions: tuple[str, ...] | None = None,
        changes: bool = True,
        change_buffer: int | None = None,
    ) -> None:
        self.server = server
        self.session: ServerSession = server.session(revisions)
        self.peer: Peer[ServerSession] = Peer(
            self.session,
            stream,
            request_handler=self.dispatch,
            notification_handler=self.on_notification,
            linger=linger,
        )
        self.feed: ChangeFeed | None = (
            ChangeFeed(self.peer, buffer=change_buffer) if changes else None
        )
        #: The rank of the level set by ``logging/setLevel`` (handshake revisions).
        self.log_threshold: int | None = None

    async def wait_closed(self) -> None:
        """Return when the stream has ended and the requests in flight are over."""
        await self.peer.wait_closed()

    async def on_notification(self, event: NotificationReceived) -> None:
        fn = self.server._notification_handlers.get(event.method)
        if fn is not None:
            await fn(event.notification)

    async def dispatch(self, event: RequestReceived) -> Any:
        """The result of one request of the client (raises ``RequestError``)."""
        session = self.session
        method = event.method
        if method == "initialize":
            return session.initialize_result()
        if method == "server/discover":
            return session.discover_result()
        fn = self.server._handlers.get(method)
        if fn is None:
            return await self._built_in(event)
        peer = self.peer
        assert peer is not None
        handling = peer.handling_of(event.request_id)
        answers: dict[str, Any] | None = None
        kept: dict[str, _Answer] | None = None
        client: ClientDeclarations
        if session.model == "stateless":
            client = RequestDeclarations(event.client_capabilities, event.client_info)
            request_state = getattr(event.request.params, "request_state", UNSET)
            if request_state is not UNSET:
                answers, kept = self._answers(event, request_state)
        else:
            client = SessionDeclarations(session)
        ctx = RequestContext(
            event, peer, handling, client, self.log_threshold, answers, self.server._lifespan
        )
        try:
            result = await fn(event.request, ctx)
        except InputNeeded as need:
            questions = need.questions
            asked = {key: method for key, (method, _) in questions.items()}
            state = InputState(answers=kept or {}, asked=asked)
            return session.types.InputRequiredResult(
                input_requests={key: request for key, (_, request) in questions.items()},
                request_state=state.encode(sealing_key(self.server.state_key)),
            )
        return self._coerce(method, result)

    async def _built_in(self, event: RequestReceived) -> Any:
        """The answer to a request the server serves itself, when no handler is
        registered for it (else -32601)."""
        server, session, feed = self.server, self.session, self.feed
        method = event.method
        if method == "logging/setLevel" and server.logging:
            self.log_threshold = LEVELS.get(event.request.params.level)
            return session.types.EmptyResult()
        if method in _NEEDS_FEED and (server.subscribe or server.list_changed) and feed is None:
            # A connection that lasts one request (HTTP without sessions) has nowhere
            # to deliver changes to.
            raise RequestError.of(
                ErrorCode.METHOD_NOT_FOUND,
                data={
                    "method": method,
                    "reason": "change notifications need a connection that stays open "
                    "(this server runs without sessions)",
                },
            )
        if method in ("resources/subscribe", "resources/unsubscribe") and server.subscribe:
            assert feed is not None
            uri = event.request.params.uri
            if method == "resources/subscribe":
                feed.subscribe(uri)
            else:
                feed.unsubscribe(uri)
            return session.types.EmptyResult()
        if method == "subscriptions/listen" and (server.list_changed or server.subscribe):
            assert feed is not None
            requested = msgspec.to_builtins(event.request.params.notifications)
            await feed.acknowledge(event.request_id, agreed_filter(requested, session.capabilities))
            # Open until the client cancels it or goes away, keeping only its id (not
            # the request, whose _meta may be large).
            return AnswerLater(self._listening(event.request_id))
        raise RequestError.method_not_found(method)

    async def _listening(self, request_id: RequestId) -> Any:
        """Keep the ``subscriptions/listen`` request ``request_id`` open until the
        client cancels it or goes away; then its result."""
        feed = self.feed
        assert feed is not None
        try:
            await self.peer.wait_receiving_ended()
        finally:
            feed.listeners.pop(request_id, None)
        return self.session.types.SubscriptionsListenResult()

    def _answers(
        self, event: RequestReceived, text: str
    ) -> tuple[dict[str, Any], dict[str, _Answer]]:
        """The answers a retried 2026-07-28 request carries (its ``requestState`` is
        ``text``), typed and as kept in a ``requestState``: those of earlier rounds (in
        its ``requestState``) and of the last round (its ``inputResponses``)."""
        params = event.request.params
        state = InputState.decode(text, sealing_key(self.server.state_key))
        codec = self.session.codec
        answers: dict[str, Any] = {}
        try:
            for key, answer in state.answers.items():
                answers[key] = codec.decode_result(answer.method, answer.result)
        except Exception:
            raise RequestError.invalid_params(
                "requestState is not one this server issued"
            ) from None
        fresh = self.session.input_responses(event, state.asked)
        if isinstance(fresh, ProtocolViolation):
            raise RequestError(fresh.error)
        kept = dict(state.answers)
        raw = params.input_responses
        for key, value in fresh.items():
            answers[key] = value
            kept[key] = _Answer(state.asked[key], raw[key])
        return answers, kept

    def _coerce(self, method: str, result: Any) -> Any:
        return coerce_result(self.session, method, result)


def coerce_result(session: ServerSession, method: str, result: Any) -> Any:
    """``result`` as a result of ``method`` in the session's revision: as it is when it
    is one, else (a value of another revision, a mapping) through its JSON. A 2026-07-28
    result that must say how long it may be cached and is given as a mapping without it
    gets ``ttlMs`` 0 and ``cacheScope`` ``"private"``."""
    module = session.types
    if isinstance(result, msgspec.Struct) and type(result).__module__ == module.__name__:
        return result
    wire = {} if result is None else msgspec.to_builtins(result)
    if isinstance(wire, dict) and _cached(session.codec, method):
        wire.setdefault("ttlMs", 0)
        wire.setdefault("cacheScope", "private")
    return session.codec.decode_result(method, msgspec.json.encode(wire))


@functools.cache
def _cached(codec: Any, method: str) -> bool:
    """Whether results of ``method`` say how long they may be cached (2026-07-28)."""
    result_type = codec.result_type(method)
    for cls in typing.get_args(result_type) or (result_type,):
        if isinstance(cls, type) and "ttl_ms" in getattr(cls, "__struct_fields__", ()):
            return True
    return False
