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

It needs anyio (the ``connect`` extra: ``pip install ".[connect]"`` from a clone);
asyncio and trio both work. Importing ``mcpspec.runtime`` or a revision module never
imports this package.
"""

from __future__ import annotations

from .client import Client, prompt_ref, resource_ref
from .client_tasks import TaskHandle
from .content import (
    Audio,
    Content,
    ContentUnsupported,
    EmbeddedResource,
    Image,
    ResourceLink,
    audio,
    embedded_resource,
    image,
    resource_link,
)
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
from .lifespan import LifespanFn, LifespanNotRunning
from .peer import NotificationHandler, Peer, ProgressCallback, RequestHandler, ViolationHandler
from .resources import ResourceNotFound
from .results import Completions, ToolFailed, ToolResult
from .server import NotificationHandlerFn, RequestHandlerFn, Server, ServerConnection
from .stdio import ProcessStream, StderrMode, launch_server, stdio_server_stream
from .task_store import MemoryTaskStore, TaskRecord, TaskStatus, TaskStore, TaskStoreFull
from .tasks import TaskContext, TaskSettings
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
    "Audio",
    "Client",
    "Completions",
    "ConnectionClosed",
    "Content",
    "ContentUnsupported",
    "EmbeddedResource",
    "Image",
    "LifespanFn",
    "LifespanNotRunning",
    "LogLevel",
    "MemoryMessageStream",
    "MemoryTaskStore",
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
    "ResourceLink",
    "ResourceNotFound",
    "ResponseViolation",
    "Server",
    "ServerConnection",
    "StderrMode",
    "TaskContext",
    "TaskHandle",
    "TaskRecord",
    "TaskSettings",
    "TaskStatus",
    "TaskStore",
    "TaskStoreFull",
    "Tool",
    "ToolError",
    "ToolFailed",
    "ToolResult",
    "ViolationHandler",
    "audio",
    "embedded_resource",
    "image",
    "launch_server",
    "memory_byte_pipe",
    "memory_pair",
    "prompt_ref",
    "resource_link",
    "resource_ref",
    "stdio_server_stream",
]
