"""Streamable HTTP of 2026-07-28 (stateless), as the client speaks it:
:class:`StatelessHttpTransport`."""

from __future__ import annotations

import functools
from typing import Final

from msgspec import UNSET

from mcpspec.runtime.session.mirrored_headers import MirrorError, request_headers

from ..errors import ConnectionClosed
from .client_link import (
    ClientLink,
    HttpClientTransport,
    OutgoingEnvelope,
    Post,
    stateless_version,
)
from .client_tools import ToolHeaderMemory

__all__ = ["StatelessHttpTransport"]


class StatelessHttpTransport(HttpClientTransport):
    """Streamable HTTP of 2026-07-28 (stateless), over an
    :class:`~.client_link.ClientLink`: no session, no handshake; every request is a POST
    that stands alone, with the headers mirrored from its body (``MCP-Protocol-Version``
    from its ``_meta``, ``Mcp-Method``, ``Mcp-Name``, and the ``Mcp-Param-*`` of the
    tool's ``x-mcp-header`` parameters, :class:`~.client_tools.ToolHeaderMemory`), read
    by :mod:`mcpspec.runtime.session.mirrored_headers`. Its answer is a JSON body or an SSE
    stream, which is not resumed; ``subscriptions/listen`` is a long-lived response stream like any
    other. Cancelling a request closes its response stream (``notifications/cancelled``
    is not posted).

    It owns the protocol version of the last request it posted (what the session
    negotiated, when no ``initialize`` came before)."""

    #: Every message is handed to a task of the link, which posts it whole even when
    #: the sender is cancelled: a connection needs no shield around it.
    _completes_sends: Final = True

    def __init__(self, link: ClientLink, tools: ToolHeaderMemory) -> None:
        self._link = link
        self._tools = tools
        #: The protocol version of the last request posted; ``None`` before.
        self.protocol_version: str | None = None

    async def aclose(self) -> None:
        """Stop every request and stream in flight (there is no session to end)."""
        await self._link.stop()

    async def send_message(self, data: bytes, message: OutgoingEnvelope) -> None:
        """Post ``data`` (read as ``message``) from a task of the link; a request's task
        reads its answer too. A cancellation closes the response stream of the request
        it names, and is not posted."""
        method = message.method if isinstance(message.method, str) else None
        if method is not None and message.id is not UNSET:
            version = stateless_version(message)
            if version is not None:
                self.protocol_version = version
            post = Post(message.id, method, True)
            self._link.start_request(post, self._post_request, data, message, post)
            return
        if method == "notifications/cancelled":
            self._link.cancel_request(message)
            return
        await self._link.send_notice(
            method or "a response", functools.partial(self._post_notice, data, message)
        )

    def _headers(self, data: bytes, message: OutgoingEnvelope) -> dict[str, str]:
        """The headers of a POST: the version and the mirrored headers of a request;
        raises ``MirrorError`` when the body cannot be mirrored."""
        headers = self._link.post_headers()
        version = stateless_version(message)
        if version is not None:
            headers["MCP-Protocol-Version"] = version
            headers.update(request_headers(data, self._tools.params_of))
        return headers

    async def _post_request(self, data: bytes, message: OutgoingEnvelope, post: Post) -> None:
        """Post a request and deliver its answer."""
        link = self._link
        try:
            headers = self._headers(data, message)
        except MirrorError as exc:
            post.note = f"the request cannot be mirrored into headers: {exc}"
            return
        async with link.open_exchange(
            "POST", link.url, content=data, headers=headers, timeout=link.stream_timeout
        ) as response:
            if response.status_code >= 400:
                quoted = await link.deliver_error_body(response, post)
                if quoted is not None:
                    await link.refuse(post, response, quoted)
                return
            # A response stream that ends unanswered is not resumed: the request ends.
            await link.deliver_answer(response, post)

    async def _post_notice(self, data: bytes, message: OutgoingEnvelope) -> None:
        try:
            headers = self._headers(data, message)
        except MirrorError as exc:
            raise ConnectionClosed(f"the message cannot be mirrored into headers: {exc}") from exc
        await self._link.post_notice(data, headers, self._link.url)
