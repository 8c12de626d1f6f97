"""Where a :class:`PostStream` sends each message: a response to the POST of the
request it answers, any other message to the POST of the request it relates to, the
rest through the standalone stream (or nowhere, where there is none)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpspec.runtime.connection import ConnectionClosed
from mcpspec.runtime.connection.http.routing import (
    Channel,
    ChannelTerms,
    PostStream,
    request_keys,
)

pytestmark = pytest.mark.anyio

TERMS = ChannelTerms(sse=True)


class Post:
    """The ASGI ``send`` of one POST, keeping what was sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent)


PROGRESS = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{}}'


def test_the_keys_of_a_body_are_its_request_ids_and_the_null_id() -> None:
    assert request_keys(b'{"jsonrpc":"2.0","id":7,"method":"ping"}') == [7, None]
    assert request_keys(b'{"jsonrpc":"2.0","id":7,"result":{}}') == [None]  # a response
    batch = b'[{"id":1,"method":"a"}, 2, {"id":"x","method":"b"}, {"id":true,"method":"c"}]'
    assert request_keys(batch) == [1, "x", None]
    assert request_keys(b"{not json") == [None]


async def test_messages_go_by_what_they_are_about() -> None:
    standalone: list[bytes] = []

    async def to_standalone(data: bytes) -> None:
        standalone.append(data)

    stream = PostStream(to_standalone)
    first, second = Post(), Post()
    one, two = Channel(first, TERMS), Channel(second, TERMS)
    stream.open_route(one, [1, None])
    routes = stream.open_route(two, [2, None])
    await stream.send(PROGRESS, related_request_id=2)
    await stream.send(PROGRESS, related_request_id=1)
    await stream.send(PROGRESS)  # about no request
    await stream.send(PROGRESS, related_request_id=3)  # about a request with no POST
    assert standalone == [PROGRESS, PROGRESS]
    await stream.send(b'{"jsonrpc":"2.0","id":2,"result":{}}')
    await two.expect([2])
    assert b'"id":2' in second.body and b"notifications/progress" in second.body
    assert b'"id":2' not in first.body
    stream.close_route(two, routes)
    # Its POST ended: a response to it has nowhere to go, and is never diverted.
    await stream.send(b'{"jsonrpc":"2.0","id":2,"result":{}}')
    await stream.send(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}')
    assert standalone == [PROGRESS, PROGRESS]
    assert b'"id":null' in first.body  # the null id is the first POST's again


async def test_without_a_standalone_stream_a_message_about_no_request_cannot_be_sent() -> None:
    stream = PostStream(None)
    post = Post()
    stream.open_route(Channel(post, TERMS), [1, None])
    await stream.send(PROGRESS, related_request_id=1)
    with pytest.raises(ConnectionClosed):
        await stream.send(PROGRESS)
