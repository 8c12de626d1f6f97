"""mcpspec.runtime.connection.http: MCP over HTTP.

The server side is a plain ASGI application (:class:`HttpApp`, made by
:func:`http_app` from a :class:`~mcpspec.runtime.connection.server.Server`; served
with uvicorn by :func:`run_http`) serving
Streamable HTTP in every era (and, on request, the 2024-11-05 HTTP+SSE endpoints), with
its behaviour in one :class:`HttpSettings` value. It needs nothing but anyio; running it
needs an ASGI server (uvicorn: ``pip install mcpspec[http]``).
"""

from __future__ import annotations

from ..principal import Principal
from .app import HttpApp, http_app, run_http
from .auth import AuthSettings, PrincipalVerifier, VerifierUnavailable
from .event_store import EventStore, MemoryEventStore, StoredEvent
from .settings import LOOPBACK_HOSTS, HttpSettings, TokenVerifier

__all__ = [
    "LOOPBACK_HOSTS",
    "AuthSettings",
    "EventStore",
    "HttpApp",
    "HttpSettings",
    "MemoryEventStore",
    "Principal",
    "PrincipalVerifier",
    "StoredEvent",
    "TokenVerifier",
    "VerifierUnavailable",
    "http_app",
    "run_http",
]
