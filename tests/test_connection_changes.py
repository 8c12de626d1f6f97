"""Change notifications of a Server: list changes and resource updates on the
connection up to 2025-11-25 (after ``resources/subscribe``), and on
``subscriptions/listen`` streams with the filter the server agreed to in 2026-07-28."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpspec.runtime import CapabilityError, Limits, NotificationReceived
from mcpspec.runtime.connection import Client, Peer, RequestContext, RequestError, Server

from .connection_kit import connected, list_tools

pytestmark = pytest.mark.anyio

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def make_server(**options: Any) -> Server:
    server = Server("changes", "1.0", **options)

    @server.handler("tools/list")
    async def tools(request: Any, ctx: RequestContext) -> Any:
        return {"tools": []}

    @server.handler("resources/read")
    async def read(request: Any, ctx: RequestContext) -> Any:
        return {"contents": []}

    return server


class Inbox:
    """The client's notifications, and a way to know it has read all sent so far."""

    def __init__(self) -> None:
        self.received: list[NotificationReceived] = []
        self.acknowledged = anyio.Event()

    def __call__(self, event: NotificationReceived) -> None:
        self.received.append(event)
        if event.method == "notifications/subscriptions/acknowledged":
            self.acknowledged.set()

    @property
    def methods(self) -> list[str]:
        return [e.method for e in self.received]

    async def synced(self, client: Peer[Any]) -> None:
        """A round trip: notifications sent before it have been read."""
        await client.request(list_tools(client))


async def test_changes_on_the_connection_in_a_handshake_revision() -> None:
    server = make_server(list_changed=True, subscribe=True)
    inbox = Inbox()
    async with connected(server, "2025-11-25", notification_handler=inbox) as client:
        caps = client.session.peer_capabilities or {}
        assert caps["tools"] == {"listChanged": True}
        assert caps["resources"] == {"listChanged": True, "subscribe": True}
        t = client.session.types
        await client.request(
            t.SubscribeRequest(id=client.next_id(), params=t.SubscribeRequestParams(uri="test://a"))
        )
        await server.notify_tools_changed()
        await server.notify_prompts_changed()  # no prompts: nobody takes it
        await server.notify_resource_updated("test://a")
        await server.notify_resource_updated("test://b")  # not subscribed
        await inbox.synced(client)
        assert inbox.methods == [
            "notifications/tools/list_changed",
            "notifications/resources/updated",
        ]
        assert inbox.received[1].notification.params.uri == "test://a"
        await client.request(
            t.UnsubscribeRequest(
                id=client.next_id(), params=t.UnsubscribeRequestParams(uri="test://a")
            )
        )
        await server.notify_resource_updated("test://a")
        await inbox.synced(client)
        assert len(inbox.received) == 2


async def test_subscriptions_are_bounded_by_the_limits() -> None:
    limits = Limits(max_subscriptions=2, max_message_bytes=2048)
    server = make_server(subscribe=True, limits=limits)
    inbox = Inbox()
    async with connected(server, "2025-11-25", notification_handler=inbox) as client:
        t = client.session.types

        async def subscribe(uri: str, *, undo: bool = False) -> None:
            if undo:
                params = t.UnsubscribeRequestParams(uri=uri)
                await client.request(t.UnsubscribeRequest(id=client.next_id(), params=params))
                return
            params = t.SubscribeRequestParams(uri=uri)
            await client.request(t.SubscribeRequest(id=client.next_id(), params=params))

        await subscribe("test://a")
        await subscribe("test://b")
        await subscribe("test://a")  # kept already: no second place
        with pytest.raises(RequestError) as refused:
            await subscribe("test://c")
        assert refused.value.code == -32600
        assert refused.value.error.data["rule"] == "limit-exceeded"
        assert "max_subscriptions=2" in refused.value.error.data["reason"]
        await subscribe("test://a", undo=True)
        await subscribe("test://c")
        await subscribe("test://b", undo=True)
        await subscribe("test://c", undo=True)
        # The URIs together are held to max_message_bytes characters.
        await subscribe("test://" + "x" * 1500)
        with pytest.raises(RequestError) as refused:
            await subscribe("test://" + "y" * 600)
        assert "max_message_bytes=2048" in refused.value.error.data["reason"]
        await subscribe("test://c")
        # The connection goes on; what was refused is not kept.
        await server.notify_resource_updated("test://" + "y" * 600)
        await server.notify_resource_updated("test://c")
        await inbox.synced(client)
        assert [e.notification.params.uri for e in inbox.received] == ["test://c"]


async def test_without_list_changed_nothing_is_sent() -> None:
    server = make_server()
    inbox = Inbox()
    async with connected(server, "2025-06-18", notification_handler=inbox) as client:
        assert client.session.peer_capabilities["tools"] == {}  # type: ignore[index]
        await server.notify_tools_changed()
        await inbox.synced(client)
        assert inbox.received == []


async def test_changes_on_a_listen_stream_in_2026_07_28() -> None:
    server = make_server(list_changed=True, subscribe=True)
    inbox = Inbox()
    async with connected(server, "2026-07-28", notification_handler=inbox) as client:
        t = client.session.types
        listen = t.SubscriptionsListenRequest(
            id=client.next_id(),
            params=t.SubscriptionsListenRequestParams(
                notifications=t.SubscriptionFilter(
                    tools_list_changed=True,
                    prompts_list_changed=True,  # the server has no prompts
                    resource_subscriptions=["test://a"],
                )
            ),
        )
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(client.request, listen)
            await inbox.acknowledged.wait()
            [ack] = inbox.received
            agreed = ack.notification.params.notifications
            assert agreed.tools_list_changed is True
            assert agreed.resource_subscriptions == ["test://a"]
            assert agreed.prompts_list_changed is not True
            await server.notify_tools_changed()
            await server.notify_prompts_changed()
            await server.notify_resources_changed()  # not asked for
            await server.notify_resource_updated("test://a")
            await server.notify_resource_updated("test://b")
            await inbox.synced(client)
            assert inbox.methods[1:] == [
                "notifications/tools/list_changed",
                "notifications/resources/updated",
            ]
            ids = {e.notification.params.meta[SUBSCRIPTION_ID] for e in inbox.received}
            assert ids == {listen.id}
            task_group.cancel_scope.cancel()  # the client ends the subscription
        await inbox.synced(client)  # the cancellation has been read
        await server.notify_tools_changed()
        await inbox.synced(client)
        assert len(inbox.received) == 3


def declared_server() -> Server:
    """Declared resources, one of them subscribable; no ``Server(subscribe=True)``."""
    server = Server("declared", "1.0")

    @server.resource("config://app")
    async def config() -> str:
        return "debug=false"

    @server.resource("rows://{id}", subscribe=True)
    async def row(id: int) -> str:
        return f"row {id}"

    return server


async def test_a_resource_declared_subscribable_declares_the_capability() -> None:
    assert Server().capabilities.get("resources") is None
    server = declared_server()
    assert server.capabilities["resources"] == {"subscribe": True}
    updates: list[Any] = []
    arrived = anyio.Event()

    def on_notification(notification: Any) -> None:
        updates.append(notification)
        arrived.set()

    async with Client.in_memory(
        server, mode="2025-11-25", on_notification=on_notification
    ) as client:
        assert client.capabilities.resources.subscribe is True
        await client.subscribe("rows://7")
        await server.notify_resource_updated("rows://8")  # not subscribed
        await server.notify_resource_updated("rows://7")
        with anyio.fail_after(5):
            await arrived.wait()
        assert [(n.method, n.params.uri) for n in updates] == [
            ("notifications/resources/updated", "rows://7")
        ]
        assert (await client.read_resource("rows://7")).contents[0].text == "row 7"


async def test_a_declared_resource_is_listened_to_in_2026_07_28() -> None:
    server = declared_server()
    async with Client.in_memory(server, mode="2026-07-28") as client:
        async with client.listen(resource_uris=["rows://7"]) as feed:
            await server.notify_resource_updated("rows://8")
            await server.notify_resource_updated("rows://7")
            with anyio.fail_after(5):
                note = await feed.__anext__()
        assert (note.method, note.params.uri) == ("notifications/resources/updated", "rows://7")


async def test_without_a_subscribable_resource_subscribing_is_refused() -> None:
    server = Server("plain", "1.0")

    @server.resource("config://app")
    async def config() -> str:
        return "debug=false"

    assert server.capabilities["resources"] == {}
    async with Client.in_memory(server, mode="2025-11-25") as client:
        # The client's session knows the server did not declare it, and sends nothing.
        with pytest.raises(CapabilityError, match=r"resources\.subscribe capability"):
            await client.subscribe("config://app")
