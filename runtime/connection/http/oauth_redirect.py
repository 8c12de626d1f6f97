"""How the authorization code comes back to an OAuth client: :class:`RedirectHandler`,
and :class:`LoopbackRedirect` for command-line applications.

The client builds the authorization URL; a redirect handler gets the user there (a
browser) and returns the query parameters of the redirect back to ``redirect_uri``
(``code``, ``state``, ``iss``, or ``error``). The client checks them.
"""

from __future__ import annotations

import urllib.parse
import webbrowser
from collections.abc import Mapping
from typing import Final, Protocol

import anyio
import anyio.abc

__all__ = ["LoopbackRedirect", "RedirectHandler"]

#: The longest request head the loopback listener reads.
_MAX_HEAD: Final = 16 * 1024

_PAGE: Final = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\nconnection: close\r\n\r\n"
    b"<!doctype html><title>Signed in</title><p>You can close this window.</p>"
)


class RedirectHandler(Protocol):
    """Takes the user to the authorization URL; returns the redirect's parameters."""

    @property
    def redirect_uri(self) -> str:
        """Where the authorization server sends the user back."""
        ...

    async def __call__(self, authorization_url: str) -> Mapping[str, str]:
        """The query parameters of the redirect to :attr:`redirect_uri`."""
        ...


class LoopbackRedirect:
    """A redirect handler for a command-line application: it listens on 127.0.0.1
    (``port``, any free one by default), opens the authorization URL in the browser
    (or calls ``show`` with it), and takes the first request to ``path`` as the
    redirect (within ``timeout`` seconds). Use it as ``async with LoopbackRedirect() as
    redirect:`` so that its port, hence :attr:`redirect_uri`, is known before the client
    registers."""

    def __init__(
        self,
        *,
        port: int = 0,
        path: str = "/callback",
        timeout: float = 300.0,
        show: object = None,
    ) -> None:
        self.port = port
        self.path = path
        self.timeout = timeout
        self._show = show
        self._listener: anyio.abc.Listener[anyio.abc.SocketStream] | None = None

    async def __aenter__(self) -> LoopbackRedirect:
        self._listener = await anyio.create_tcp_listener(
            local_host="127.0.0.1", local_port=self.port
        )
        self.port = int(self._listener.extra(anyio.abc.SocketAttribute.local_port))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._listener is not None:
            await self._listener.aclose()
            self._listener = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    async def __call__(self, authorization_url: str) -> Mapping[str, str]:
        if self._listener is None:
            raise RuntimeError("enter the LoopbackRedirect (async with) before using it")
        if callable(self._show):
            self._show(authorization_url)
        else:
            await anyio.to_thread.run_sync(webbrowser.open, authorization_url)
        listener = self._listener
        found: list[Mapping[str, str]] = []
        with anyio.fail_after(self.timeout):
            async with anyio.create_task_group() as task_group:

                async def take(stream: anyio.abc.SocketStream) -> None:
                    params = await self._one_request(stream)
                    if params is not None and not found:
                        found.append(params)
                        task_group.cancel_scope.cancel()

                task_group.start_soon(listener.serve, take)
        return found[0]

    async def _one_request(self, stream: anyio.abc.SocketStream) -> Mapping[str, str] | None:
        """The parameters of a request to :attr:`path` (``None``: another request)."""
        async with stream:
            head = b""
            with anyio.move_on_after(10):
                while b"\r\n" not in head and len(head) < _MAX_HEAD:
                    try:
                        head += await stream.receive(4096)
                    except anyio.EndOfStream:
                        break
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            method, _, rest = line.partition(" ")
            target = rest.rpartition(" ")[0] or rest
            parts = urllib.parse.urlsplit(target)
            if method != "GET" or parts.path != self.path:
                await stream.send(b"HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n")
                return None
            await stream.send(_PAGE)
            return dict(urllib.parse.parse_qsl(parts.query))
