"""The transport side of a check: a :class:`Target` opens fresh :class:`Link` values,
each one connection to the server under check.

A link moves whole messages: :meth:`Link.send` writes one JSON-RPC message (or, to probe
error handling, any bytes), :meth:`Link.receive` gives the next message the server
wrote, as bytes, with where it was found (``stdout line 7``, ``POST 3 response``,
``GET stream event 2``). The link judges only its transport: framing on stdio, statuses
and headers on HTTP; those findings go to the :class:`~.findings.RevisionReport` it was
opened with. Everything inside a message is judged by the conversation above it.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, NamedTuple, Protocol

from .findings import RevisionReport

__all__ = ["Link", "Received", "Target"]

Transport = Literal["stdio", "http", "sse"]


class Received(NamedTuple):
    """One message the server wrote (its bytes, undecoded) and where it was found;
    ``refusal``: it is the body of an HTTP refusal (a status of 300 or more), written
    by a transport that refused the HTTP request before reading the JSON-RPC one."""

    data: bytes
    where: str
    refusal: bool = False


class Link(Protocol):
    """One fresh connection to the server under check."""

    #: Which transport this link speaks.
    transport: Transport

    async def send(self, data: bytes, *, related_request_id: int | str | None = None) -> None:
        """Write ``data`` as one message (a JSON-RPC message, or any bytes to probe the
        server's error handling). Raises :class:`~.errors.LinkClosed` when the
        connection is gone."""
        ...

    async def receive(self) -> Received | None:
        """The next message from the server; ``None`` once the server closed the
        connection (its stdout ended; on HTTP, the link was closed)."""
        ...


class Target(Protocol):
    """A server to check: how to reach it, and how to open a connection."""

    #: What is checked, for the report (the command line, or the URL).
    description: str

    def connect(self, report: RevisionReport) -> AbstractAsyncContextManager[Link]:
        """A fresh connection whose transport findings go to ``report``."""
        ...

    @property
    def stderr(self) -> str:
        """What the server wrote on stderr so far (stdio; newest part kept), else ``""``."""
        ...

    async def probe_transport(self, report: RevisionReport, options: Any) -> None:
        """The transport's own probes for ``report.revision``, a revision the server
        speaks, each on connections of its own (``options``: the run's
        :class:`~.run.Options`)."""
        ...
