"""The MCP server as an ASGI application: Streamable HTTP in every era.

:class:`HttpApp` serves one :class:`~mcpspec.runtime.connection.server.Server` at one
endpoint (``/mcp`` by default), and picks the era of each request from what it carries:

* ``MCP-Protocol-Version: 2026-07-28`` (or a body whose ``_meta`` names a protocol
  version): the stateless era (:mod:`.stateless`). Each POST stands alone: its mirrored
  headers are checked against its body, its handler runs in the request's task, and its
  answer is JSON, or an SSE stream when progress or log messages come first. The client
  closing that stream cancels the handler. ``GET``/``DELETE`` are 405;
  ``Mcp-Session-Id`` and ``Last-Event-ID`` are ignored.
* Anything else: the handshake eras, 2025-03-26 to 2025-11-25 (:mod:`.handshake`).
  ``initialize`` makes a session (:mod:`.sessions`), every later POST names it; the
  messages of the server go where :mod:`.routing` sends them; ``GET`` opens the
  standalone stream, or resumes a broken one from ``Last-Event-ID``; ``DELETE`` ends
  the session.
* With ``legacy_sse``, the 2024-11-05 HTTP+SSE endpoints as well (:mod:`.legacy`).

Before any of that, every request passes the checks of :mod:`.security` (``Host``,
``Origin``, bearer token) and, for a POST, of its media types and body size. JSON-RPC
errors about a request travel inside a 200 (handshake eras) or with the status the
2026-07-28 rules give their codes; a 500 is sent only when nothing was sent yet.

The sessions' connections run in a task group the app keeps for its lifetime: opened
by the ASGI lifespan (uvicorn sends it), by ``async with app.running():`` (for a host
framework whose lifespan does not reach a mounted app), or, on asyncio, by the first
request that needs it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc

from mcpspec.runtime.session.version_negotiation import is_stateless

from ..pipes import running_asyncio_loop
from ..principal import Principal, current_principal, principal_scope
from .asgi import BodyRefused, ClientGone, Receive, Scope, Send, header_map, read_body, respond
from .auth import VerifierUnavailable, authenticate, metadata_paths, targets
from .event_store import MemoryEventStore
from .handshake import HandshakeEndpoint
from .security import (
    Refusal,
    check_accept,
    check_content_type,
    check_host,
    check_origin,
    check_token,
)
from .sessions import SessionTable
from .settings import HttpSettings
from .shared_sessions import SharedSessions
from .stateless import StatelessEndpoint
from .wire import (
    EVENT_STREAM,
    JSON,
    VERSION_HEADER,
    BodyPeek,
    internal_error,
    refuse,
    route_path,
    until_disconnect,
)

if TYPE_CHECKING:
    from ..server import Server

__all__ = ["HttpApp", "http_app", "run_http"]

logger = logging.getLogger("mcpspec.http")


class HttpApp:
    """An ASGI application serving ``server`` over Streamable HTTP (see the module).

    Build it with :func:`http_app`. ``settings`` (:class:`HttpSettings`) says how it
    behaves.
    """

    def __init__(self, server: Server, settings: HttpSettings | None = None) -> None:
        self.server = server
        self.settings = settings = settings if settings is not None else HttpSettings()
        accepted = server.session().accepted
        served = tuple(r for r in accepted if settings.revisions is None or r in settings.revisions)
        if not served:
            raise ValueError("the settings leave no revision the server accepts")
        self.stateless_revisions = tuple(r for r in served if is_stateless(r))
        self.handshake_revisions = tuple(r for r in served if not is_stateless(r))
        self.max_body = (
            settings.max_body_bytes
            if settings.max_body_bytes is not None
            else server.limits.max_message_bytes
        )
        shared_events = settings.cluster.event_store if settings.cluster else None
        self.event_store = (
            (settings.event_store or shared_events or MemoryEventStore())
            if settings.resumable
            else None
        )
        self.sessions = SessionTable(
            settings.max_sessions,
            settings.session_idle_seconds,
            settings.auth.max_total_sessions if settings.auth is not None else None,
        )
        #: The sessions shared with the other workers of a cluster (``None``: alone).
        self.shared = SharedSessions(self, settings.cluster) if settings.cluster else None
        self.stateless = StatelessEndpoint(self)
        self.handshake = HandshakeEndpoint(self)
        self._task_group: anyio.abc.TaskGroup | None = None
        self._starting: anyio.Event | None = None
        #: The task keeping the task group when no lifespan opened it (asyncio).
        self._background: Any = None
        self._endpoint = settings.path.rstrip("/")
        auth = settings.auth
        self._verifies = auth is not None or settings.verify_token is not None
        self._metadata_paths = (
            metadata_paths(auth.resource) if auth is not None else frozenset[str]()
        )
        #: The (Host, Origin) and (Content-Type, Accept) pairs that passed their checks
        #: already: a client sends the same ones on every request (bounded).
        self._passed_hosts: set[tuple[str | None, str | None]] = set()
        self._passed_media: set[tuple[str | None, str | None]] = set()
        #: The bytes of the POST bodies being handled (see ``max_bytes_in_flight``).
        self._bytes_in_flight = 0
        self._legacy: Any = None
        if settings.legacy_sse:
            if not self.handshake_revisions:
                # HTTP+SSE carries the handshake eras only.
                raise ValueError("legacy_sse needs a handshake revision (up to 2025-11-25)")
            from .legacy import LegacySse

            self._legacy = LegacySse(self)

    # -- lifetime -----------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[HttpApp]:
        """Keep the task group the sessions run in, for the block's duration; leaving
        it ends every session."""
        async with self.server.running(), anyio.create_task_group() as task_group:
            self._task_group = task_group
            if self.shared is not None:
                await self.shared.start(task_group)
            try:
                yield self
            finally:
                # Only this worker's copies end: a shared session lives on elsewhere.
                for session in self.sessions.all():
                    await session.end()
                if self.shared is not None:
                    await self.shared.stop()
                self._task_group = None
                task_group.cancel_scope.cancel()

    async def tasks(self) -> anyio.abc.TaskGroup:
        """The sessions' task group; on asyncio, started in the background when no
        lifespan started it."""
        if self._task_group is not None:
            return self._task_group
        if self._starting is None:
            self._starting = anyio.Event()
            loop = running_asyncio_loop()
            if loop is None:
                raise RuntimeError(
                    "the app's sessions need its lifespan (or `async with app.running()`)"
                )
            started = self._starting

            async def keep() -> None:
                async with self.running():
                    started.set()
                    await anyio.sleep_forever()

            self._background = loop.create_task(keep())
        await self._starting.wait()
        assert self._task_group is not None
        return self._task_group

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        phase = "startup"
        try:
            async with self.running():
                await send({"type": "lifespan.startup.complete"})
                phase = "shutdown"
                while True:
                    message = await receive()
                    if message["type"] == "lifespan.shutdown":
                        break
        except Exception as exc:
            # The server's lifespan failed (what it entered is closed by now): the
            # ASGI server is told, and stops (or never starts).
            logger.exception("the server's lifespan failed at %s", phase)
            await send({"type": f"lifespan.{phase}.failed", "message": str(exc) or repr(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})

    # -- ASGI ---------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        try:
            await self._http(scope, receive, send)
        except (ClientGone, OSError) as exc:
            _client_went(exc)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one HTTP request. ``ClientGone`` or ``OSError`` (from ``send``) come
        out: the client went away."""
        path = route_path(scope)
        if path.rstrip("/") != self._endpoint or not path:
            if path in self._metadata_paths:
                await self._metadata(scope, send)
                return
            if self._legacy is None:
                await respond(send, 404)
                return
            try:
                if not await self._legacy.handle(path, scope, receive, send):
                    await respond(send, 404)
            except (ClientGone, OSError):
                raise
            except VerifierUnavailable as exc:
                await refuse(send, _unavailable(exc))
            except Exception:
                # The token verifier failed, or a bug: as on the endpoint itself.
                logger.exception("the HTTP app failed on %s %s", scope["method"], path)
                await internal_error(send)
            return
        headers = header_map(scope)
        principal: Principal | None = None
        try:
            # Without a token to verify, the checks need no coroutine.
            if self._verifies:
                checked = await self._check(headers, scope)
                if isinstance(checked, Principal):
                    principal = checked
                    refusal = None
                else:
                    refusal = checked
            else:
                refusal = self._check_hosts(headers)
        except VerifierUnavailable as exc:
            await refuse(send, _unavailable(exc))
            return
        except Exception:
            # The application's token verifier failed: nothing is known of the request.
            logger.exception("the HTTP app's checks failed on %s", path)
            await internal_error(send)
            return
        if refusal is not None:
            await refuse(send, refusal)
            return
        if principal is None:
            await self._serve(scope["method"], path, headers, receive, send)
            return
        # The request's work (and the tasks it starts: a new session's) is the
        # principal's: handlers see it, sessions are bound to it.
        with principal_scope(principal):
            await self._serve(scope["method"], path, headers, receive, send)

    async def _serve(
        self, method: str, path: str, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        try:
            if method == "POST":
                await self._post(headers, receive, send)
            elif method == "GET":
                await until_disconnect(receive, self.handshake.get(headers, send))
            elif method == "DELETE":
                await self.handshake.delete(headers, send)
            else:
                await respond(send, 405, headers={"allow": self.allowed()})
        except (ClientGone, OSError):
            raise
        except Exception:
            # A bug: 500 while nothing was sent; after that, the response is cut short.
            logger.exception("the HTTP app failed on %s %s", method, path)
            await internal_error(send)

    async def _metadata(self, scope: Scope, send: Send) -> None:
        """The Protected Resource Metadata (RFC 9728): public, for any origin."""
        auth = self.settings.auth
        assert auth is not None
        refusal = check_host(header_map(scope), self.settings)
        if refusal is not None:
            await refuse(send, refusal)
            return
        cors = {"access-control-allow-origin": "*"}
        if scope["method"] == "OPTIONS":
            await respond(
                send, 204, headers={**cors, "access-control-allow-methods": "GET, OPTIONS"}
            )
            return
        if scope["method"] not in ("GET", "HEAD"):
            await respond(send, 405, headers={"allow": "GET, HEAD, OPTIONS"})
            return
        await respond(send, 200, auth.metadata_body(), content_type=JSON, headers=cors)

    async def _check(self, headers: dict[str, str], scope: Scope) -> Refusal | Principal | None:
        """The checks every request passes first: ``Host``, ``Origin``, the bearer token
        (the principal it stands for when it is accepted)."""
        refusal = self._check_hosts(headers)
        if refusal is not None:
            return refusal
        auth = self.settings.auth
        if auth is not None:
            query = scope.get("query_string", b"")
            return await authenticate(headers, query if isinstance(query, bytes) else b"", auth)
        if self.settings.verify_token is None:
            return None
        return await check_token(headers, self.settings)

    def _check_hosts(self, headers: dict[str, str]) -> Refusal | None:
        """The ``Host`` and ``Origin`` checks (a pair that passed is remembered)."""
        hosts = (headers.get("host"), headers.get("origin"))
        if hosts in self._passed_hosts:
            return None
        settings = self.settings
        refusal = check_host(headers, settings) or check_origin(headers, settings)
        if refusal is None:
            _remember(self._passed_hosts, hosts)
        return refusal

    def _check_media(self, headers: dict[str, str]) -> Refusal | None:
        """The ``Content-Type`` and ``Accept`` checks of a POST."""
        media = (headers.get("content-type"), headers.get("accept"))
        if media in self._passed_media:
            return None
        refusal = check_content_type(headers) or check_accept(headers, JSON, EVENT_STREAM)
        if refusal is None:
            _remember(self._passed_media, media)
        return refusal

    def allowed(self) -> str:
        """The methods the endpoint takes (the ``Allow`` of a 405)."""
        methods = ["POST"]
        if self.settings.standalone_stream and self.handshake_revisions:
            methods.append("GET")
        if self.settings.allow_delete and self.handshake_revisions:
            methods.append("DELETE")
        return ", ".join(methods)

    async def _post(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        refusal = self._check_media(headers)
        if refusal is not None:
            await refuse(send, refusal)
            return
        try:
            body = await read_body(receive, headers, self.max_body, self.settings.stall_seconds)
        except BodyRefused as exc:
            await refuse(send, Refusal(exc.status, str(exc), {"connection": "close"}))
            return
        size = len(body)
        held = self._bytes_in_flight
        if held and held + size > self.settings.max_bytes_in_flight:
            reason = (
                f"Service Unavailable: {held} bytes of requests are being handled, "
                f"over the limit max_bytes_in_flight={self.settings.max_bytes_in_flight}"
            )
            await refuse(send, Refusal(503, reason, {"retry-after": "1"}))
            return
        self._bytes_in_flight = held + size
        try:
            await self._post_body(headers, body, receive, send)
        finally:
            self._bytes_in_flight -= size

    async def _post_body(
        self, headers: dict[str, str], body: bytes, receive: Receive, send: Send
    ) -> None:
        """Answer a POST whose body was read: in the stateless era or a handshake era."""
        peek = BodyPeek(body)
        if self.settings.auth is not None and self.server.scoped:
            refusal = self._check_scopes(body, peek)
            if refusal is not None:
                await refuse(send, refusal)
                return
        version = headers.get(VERSION_HEADER)
        # The body's _meta decides when it names a version (a version this server does
        # not know is then answered -32022, as the stateless era says).
        stateless = (version is not None and is_stateless(version)) or (
            peek.meta_version is not None and peek.method != "initialize"
        )
        # A server without 2026-07-28 answers a modern request as the handshake eras
        # do (400, "Missing session ID"): the client then falls back to initialize.
        if (stateless and self.stateless_revisions) or not self.handshake_revisions:
            await self.stateless.post(headers, body, peek, receive, send)
            return
        await self.handshake.post(headers, body, peek, send)

    def _check_scopes(self, body: bytes, peek: BodyPeek) -> Refusal | None:
        """403 ``insufficient_scope`` for a request about an item whose scopes the
        principal lacks (before any session sees it)."""
        principal = current_principal.get()
        auth = self.settings.auth
        if principal is None or auth is None:
            return None
        needed: set[str] = set()
        for method, name in targets(body, peek):
            needed |= self.server.scopes_of(method, name)
        if needed - principal.scopes:
            return auth.insufficient(needed)
        return None


def _unavailable(exc: VerifierUnavailable) -> Refusal:
    """503 for a verifier that cannot judge now (the reason is logged, not sent)."""
    logger.warning("the token verifier cannot judge tokens now: %s", exc)
    return Refusal(503, "Service Unavailable: tokens cannot be verified now", {"retry-after": "5"})


def _client_went(exc: Exception) -> None:
    """The client went away: before its body was read (:class:`ClientGone`), or while
    its response was written (the ASGI server's ``send`` raises ``OSError`` then, as
    the ASGI specification allows). Routine: a client may hang up at any time."""
    logger.debug("the client went away: %r", exc)


def http_app(server: Server, settings: HttpSettings | None = None, **options: Any) -> HttpApp:
    """``server`` as an ASGI application speaking Streamable HTTP (every era it accepts)
    at one endpoint, ``/mcp`` by default: run it under any ASGI server (``uvicorn``), or
    mount it in a framework. ``settings`` (an :class:`HttpSettings`), or its fields as
    keyword ``options``, say how it behaves; the defaults answer loopback hosts and
    origins only."""
    if settings is None:
        settings = HttpSettings(**options)
    elif options:
        settings = dataclasses.replace(settings, **options)
    return HttpApp(server, settings)


def run_http(
    server: Server,
    host: str = "127.0.0.1",
    port: int = 8000,
    settings: HttpSettings | None = None,
    *,
    shutdown_grace: int = 2,
    **options: Any,
) -> None:
    """Serve :func:`http_app` of ``server`` with uvicorn (``pip install mcpspec[http]``)
    on ``host`` (loopback by default) and ``port`` until interrupted. On shutdown,
    requests get ``shutdown_grace`` seconds to end: long-lived streams (``GET``,
    ``subscriptions/listen``) never end by themselves. Says where it listens on
    stderr when it starts (stdout may be someone's pipe)."""
    import uvicorn

    app = http_app(server, settings, **options)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"MCP server at http://{shown}:{port}{app.settings.path} (press CTRL+C to quit)",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=shutdown_grace,
    )


#: How many passing header pairs an app remembers (of each kind).
_REMEMBERED: Final = 64
#: Pairs longer than this (characters, both values) are checked every time, not kept.
_REMEMBERED_CHARS: Final = 512


def _remember(
    passed: set[tuple[str | None, str | None]], pair: tuple[str | None, str | None]
) -> None:
    if sum(len(value or "") for value in pair) > _REMEMBERED_CHARS:
        return
    if len(passed) >= _REMEMBERED:
        passed.clear()
    passed.add(pair)
