"""How an MCP HTTP endpoint behaves: :class:`HttpSettings`.

One frozen value holds every choice of the ASGI app (:mod:`.app`): where it listens,
which eras it serves, how it answers, and its security. The defaults are safe for a
server on one machine (loopback hosts and origins only, bodies bounded); serving other
hosts is a choice made here, by name. :meth:`HttpSettings.contract` is the
fail-closed single-revision profile (2025-11-25 only, JSON only, bearer required).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from .event_store import EventStore

if TYPE_CHECKING:
    from .auth import AuthSettings
    from .shared_sessions import Cluster

__all__ = ["LOOPBACK_HOSTS", "HttpSettings", "TokenVerifier"]

#: Verifies a bearer token: returns what the token grants (any truthy value: a principal,
#: claims, ``True``), or a falsy value when the token is not valid. It may be a plain
#: function or a coroutine function.
TokenVerifier = Callable[[str], Awaitable[Any] | Any]

#: The host names a server on loopback answers to (without port), by default.
LOOPBACK_HOSTS: frozenset[str] = frozenset({"localhost", "127.0.0.1", "[::1]"})


@dataclasses.dataclass(frozen=True)
class HttpSettings:
    """The behaviour of an MCP HTTP endpoint.

    Where and what:
      ``path``: the Streamable HTTP endpoint (POST, GET, DELETE).
      ``revisions``: the revisions served over HTTP (``None``: all the server accepts;
      a request of another is refused as the era's rules say).
      ``legacy_sse``: also serve the 2024-11-05 HTTP+SSE transport: ``GET sse_path``
      opens the event stream, whose ``endpoint`` event names ``messages_path``.

    How requests are answered (handshake revisions, 2025-03-26 to 2025-11-25):
      ``sessions``: mint an ``Mcp-Session-Id`` on each ``initialize`` (then required
      on every request: 400 without, 404 when unknown or ended). Without sessions each
      POST stands alone: the server knows the client's revision from its
      ``MCP-Protocol-Version`` header only, and cannot send it requests.
      ``json_response``: answer every request with ``application/json``; messages of
      the server about a request then go to the standalone stream. Otherwise a request
      is answered with JSON when nothing precedes its response, else with an SSE stream.
      ``standalone_stream``: serve ``GET`` (an SSE stream of the server's own requests
      and notifications); else 405. ``allow_delete``: ``DELETE`` ends a session; else
      405. ``resumable``: SSE events carry ids, kept in ``event_store`` (in memory by
      default), so a client replays a broken stream with ``Last-Event-ID``;
      ``retry_ms`` is the reconnection delay announced (2025-11-25).
      ``require_protocol_version``: refuse a request after ``initialize`` without the
      ``MCP-Protocol-Version`` header (400) instead of assuming 2025-03-26.
      ``strict_initialize``: answer ``initialize`` asking for a version not served with
      -32602, instead of offering the newest one served.
      ``batches``: take JSON arrays where the revision allows them (2025-03-26).
      ``max_sessions``: the most sessions kept; the least recently active one is ended
      for a new one. ``session_idle_seconds``: a session idle that long is ended.
      ``max_sessions`` bounds the open 2026-07-28 ``subscriptions/listen`` streams and
      the HTTP+SSE connections too: past it, the oldest listener's stream ends for a
      new one, and a new HTTP+SSE connection is refused (503).

    Security (on by default):
      ``allowed_hosts``: the values of ``Host`` accepted (without port; ``"*"`` for
      any), against DNS rebinding: 421 otherwise. Default: loopback names only.
      ``allowed_origins``: the ``Origin`` values accepted when the header is present
      (scheme://host[:port], ``"*"`` for any): 403 otherwise. Default: loopback origins.
      ``verify_token``: when given, every request needs ``Authorization: Bearer
      <token>`` that it accepts (401 with ``WWW-Authenticate`` otherwise);
      ``resource_metadata`` is the URL of the protected resource metadata named there.
      ``auth``: the endpoint as an OAuth 2.1 resource server (:class:`~.auth.AuthSettings`:
      its metadata served, tokens verified into a principal, sessions bound to it,
      ``max_sessions`` then counted per principal); it replaces ``verify_token``.
      ``max_body_bytes``: a larger body is refused with 413 before it is read whole
      (``None``: the server's ``limits.max_message_bytes``). ``max_bytes_in_flight``:
      the most bytes of POST bodies the app holds at once, over all clients (a request
      decodes to many times its size, and its handler holds it until it is answered):
      a POST beyond it is refused with 503 and ``Retry-After`` (one at least is always
      taken). Each session bounds its own requests as well
      (``Limits.max_request_bytes_in_flight``).

    Several workers: ``cluster`` (a :class:`~.shared_sessions.Cluster`, e.g.
    :func:`~.redis_store.redis_cluster`) shares the handshake-era sessions, their
    messages and the change notifications among the workers given the same one: any
    worker serves any request (see :mod:`.shared_sessions`). ``None``: this process
    alone.

    Streams: ``keepalive_seconds`` between comment lines on quiet long-lived streams
    (``subscriptions/listen``, ``GET``); ``max_queued_messages`` bounds the messages
    held for a client that is not reading (beyond it, the oldest are dropped from a
    standalone stream, and a ``subscriptions/listen`` or HTTP+SSE client is dropped:
    its stream ends). ``json_response`` leaves ``subscriptions/listen`` alone: its
    answer is an SSE stream by definition. ``stall_seconds``: a client that takes
    longer than this to take one event of a stream (it stopped reading, the connection
    still open) is treated as gone: nothing more is written to it, its 2026-07-28
    request is cancelled, and a session's stream left to it is ended.
    """

    path: str = "/mcp"
    revisions: tuple[str, ...] | None = None
    legacy_sse: bool = False
    sse_path: str = "/sse"
    messages_path: str = "/messages"
    sessions: bool = True
    json_response: bool = False
    standalone_stream: bool = True
    allow_delete: bool = True
    resumable: bool = True
    event_store: EventStore | None = None
    retry_ms: int | None = 1000
    require_protocol_version: bool = False
    strict_initialize: bool = False
    batches: bool = True
    max_sessions: int = 1024
    session_idle_seconds: float = 3600.0
    allowed_hosts: frozenset[str] | None = None
    allowed_origins: frozenset[str] | None = None
    verify_token: TokenVerifier | None = None
    resource_metadata: str | None = None
    max_body_bytes: int | None = None
    keepalive_seconds: float = 15.0
    max_queued_messages: int = 1024
    stall_seconds: float = 30.0
    max_bytes_in_flight: int = 64 * 1024 * 1024
    auth: AuthSettings | None = None
    cluster: Cluster | None = None

    def __post_init__(self) -> None:
        for name in ("path", "sse_path", "messages_path"):
            if not getattr(self, name).startswith("/"):
                raise ValueError(f"{name} must start with '/'")
        if self.max_sessions < 1 or self.max_queued_messages < 1:
            raise ValueError("max_sessions and max_queued_messages must be positive")
        if self.max_body_bytes is not None and self.max_body_bytes < 512:
            raise ValueError("max_body_bytes must be at least 512")
        if self.max_bytes_in_flight < 1:
            raise ValueError("max_bytes_in_flight must be positive")
        if min(self.keepalive_seconds, self.session_idle_seconds, self.stall_seconds) <= 0:
            raise ValueError(
                "keepalive_seconds, session_idle_seconds and stall_seconds must be positive"
            )
        if self.auth is not None and (
            self.verify_token is not None or self.resource_metadata is not None
        ):
            raise ValueError("auth replaces verify_token and resource_metadata: give one")
        for name in ("allowed_hosts", "allowed_origins"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, frozenset):
                # Accept any iterable of strings; keep the value hashable and fixed.
                object.__setattr__(self, name, frozenset(strings(value, name)))

    @classmethod
    def contract(
        cls,
        verify_token: TokenVerifier,
        *,
        sessions: bool = False,
        allowed_origins: Iterable[str] = (),
        allowed_hosts: Iterable[str] | None = None,
        max_body_bytes: int | None = None,
        path: str = "/mcp",
        resource_metadata: str | None = None,
    ) -> HttpSettings:
        """The fail-closed single-revision profile: 2025-11-25 only, ``POST`` only
        (``GET`` and ``DELETE`` 405), JSON responses only, no batches, a bearer token
        on every request (``initialize`` included), ``MCP-Protocol-Version`` required
        after ``initialize``, ``initialize`` asking for another version refused with
        -32602, no event ids. ``allowed_origins`` is empty by default: a request with
        an ``Origin`` header is refused (403) unless its origin is listed."""
        return cls(
            path=path,
            revisions=("2025-11-25",),
            sessions=sessions,
            json_response=True,
            standalone_stream=False,
            allow_delete=False,
            resumable=False,
            retry_ms=None,
            require_protocol_version=True,
            strict_initialize=True,
            batches=False,
            allowed_hosts=frozenset(allowed_hosts) if allowed_hosts is not None else None,
            allowed_origins=frozenset(allowed_origins),
            verify_token=verify_token,
            resource_metadata=resource_metadata,
            max_body_bytes=max_body_bytes,
        )


def strings(values: Any, name: str) -> list[str]:
    """The strings of ``values``, a collection of them given as the setting ``name``
    (one string alone is refused: it would read as its characters)."""
    if isinstance(values, str):
        raise TypeError(f"{name} must be a collection of strings, not one string")
    out = list(values)
    if not all(isinstance(value, str) for value in out):
        raise TypeError(f"{name} must hold strings")
    return out
