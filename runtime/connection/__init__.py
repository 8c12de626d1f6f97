"""mcpspec.runtime.connection: MCP connections over real transports, on anyio.

The layering, bottom up:

* the generated types and the codec (``mcpspec.vYYYY_MM_DD``, ``mcpspec.runtime.Codec``)
  turn bytes into typed messages and back;
* the sans-IO sessions (``mcpspec.runtime.ServerSession``, ``ClientSession``) keep every
  rule of one connection and do no I/O;
* this package does the I/O: a :class:`MessageStream` frames messages (stdio's one per
  line, in memory for tests), a :class:`Peer` runs one session over one stream (a reader
  task, a waiter per request, handlers per incoming request, cancellation and
  progress), and :class:`Server` and :class:`Client` are what applications use;
* :mod:`.http` carries them over HTTP: ``http.http_app(server)`` (an ASGI app) and
  ``Client.http(url)`` (``pip install mcpspec[http]``).

It needs anyio (``pip install mcpspec[connect]``); asyncio and trio both work. Importing
``mcpspec.runtime`` or a revision module never imports this package.
"""

from __future__ import annotations

from .client import Client
from .context import LogLevel, Question, RequestContext
from .errors import (
    ConnectionClosed,
    MessageTooLarge,
    NegotiationRefused,
    OpenTimeout,
    RequestError,
    RequestTimeout,
    ResponseViolation,
)
from .peer import NotificationHandler, Peer, ProgressCallback, RequestHandler, ViolationHandler
from .resources import ResourceNotFound
from .results import Completions, ToolResult
from .server import NotificationHandlerFn, RequestHandlerFn, Server, ServerConnection
from .stdio import ProcessStream, StderrMode, launch_server, stdio_server_stream
from .tools import Tool, ToolError
from .transport import (
    DEFAULT_MAX_MESSAGE_SIZE,
    MemoryMessageStream,
    MessageStream,
    NewlineFramedStream,
    memory_byte_pipe,
    memory_pair,
)

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "Client",
    "Completions",
    "ConnectionClosed",
    "LogLevel",
    "MemoryMessageStream",
    "MessageStream",
    "MessageTooLarge",
    "NegotiationRefused",
    "NewlineFramedStream",
    "NotificationHandler",
    "NotificationHandlerFn",
    "OpenTimeout",
    "Peer",
    "ProcessStream",
    "ProgressCallback",
    "Question",
    "RequestContext",
    "RequestError",
    "RequestHandler",
    "RequestHandlerFn",
    "RequestTimeout",
    "ResourceNotFound",
    "ResponseViolation",
    "Server",
    "ServerConnection",
    "StderrMode",
    "Tool",
    "ToolError",
    "ToolResult",
    "ViolationHandler",
    "launch_server",
    "memory_byte_pipe",
    "memory_pair",
    "stdio_server_stream",
]
