"""Content helpers: images, audio, embedded resources and resource links from bytes or
files, in the wire form of the negotiated revision, refused where a revision lacks
the type."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpspec.runtime.connection import (
    Audio,
    Client,
    Content,
    ContentUnsupported,
    Image,
    RequestError,
    ResourceLink,
    Server,
    audio,
    embedded_resource,
    image,
    resource_link,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
ALL = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")


def test_blocks_from_bytes_and_files(tmp_path: Path) -> None:
    picture = tmp_path / "chart.png"
    picture.write_bytes(PNG)
    sound = tmp_path / "beep.wav"
    sound.write_bytes(b"RIFF")
    notes = tmp_path / "notes.unknownext"
    notes.write_bytes(b"\x00\x01")
    encoded = base64.b64encode(PNG).decode()

    assert image(picture).wire("2024-11-05") == {
        "type": "image",
        "data": encoded,
        "mimeType": "image/png",
    }
    assert image(PNG, "image/png", annotations={"priority": 1}).wire("2026-07-28") == {
        "type": "image",
        "data": encoded,
        "mimeType": "image/png",
        "annotations": {"priority": 1},
    }
    assert image(str(picture), "image/x-custom").mime_type == "image/x-custom"
    assert audio(sound).wire("2025-03-26")["mimeType"] in ("audio/wav", "audio/x-wav")
    with pytest.raises(TypeError, match="mime_type"):
        image(PNG)

    assert embedded_resource("note://1", "hello", "text/plain").wire("2024-11-05") == {
        "type": "resource",
        "resource": {"uri": "note://1", "mimeType": "text/plain", "text": "hello"},
    }
    assert embedded_resource("bin://1", b"\x00").wire("2024-11-05") == {
        "type": "resource",
        "resource": {"uri": "bin://1", "blob": "AA=="},
    }
    from_file = embedded_resource("file://notes", notes).wire("2024-11-05")
    assert from_file["resource"] == {
        "uri": "file://notes",
        "mimeType": "application/octet-stream",
        "blob": base64.b64encode(b"\x00\x01").decode(),
    }

    link = resource_link(picture, title="Chart").wire("2025-06-18")
    assert link == {
        "type": "resource_link",
        "uri": picture.resolve().as_uri(),
        "name": "chart.png",
        "title": "Chart",
        "mimeType": "image/png",
        "size": len(PNG),
    }
    assert resource_link("db://t/1", "row").wire("2026-07-28") == {
        "type": "resource_link",
        "uri": "db://t/1",
        "name": "row",
    }
    with pytest.raises(TypeError, match="needs a name"):
        resource_link("db://t/1")


def test_revisions_without_the_type_refuse_it() -> None:
    with pytest.raises(
        ContentUnsupported,
        match=r"audio content needs revision 2025-03-26 or later "
        r"\(this connection speaks 2024-11-05\)",
    ):
        audio(b"x", "audio/wav").wire("2024-11-05")
    with pytest.raises(ContentUnsupported, match="resource_link content needs revision 2025-06-18"):
        resource_link("a://b", "b").wire("2025-03-26")
    assert isinstance(audio(b"x", "audio/wav"), (Audio, Content))


def content_server() -> Server:
    server = Server("content", "1.0")

    @server.tool()
    async def picture() -> Image:
        return image(PNG, "image/png")

    @server.tool()
    async def mixed() -> list[Any]:
        return ["caption", image(PNG, "image/png"), embedded_resource("note://1", "hi")]

    @server.tool()
    async def sound() -> Audio:
        return audio(b"RIFF", "audio/wav")

    @server.tool()
    async def link() -> Any:
        return [resource_link("db://t/1", "row")]

    return server


@pytest.mark.anyio
@pytest.mark.parametrize("revision", ALL)
async def test_tools_return_content(revision: str) -> None:
    async with Client.in_memory(content_server(), mode=revision) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        # A content annotation is no structured output.
        assert getattr(tools["picture"], "output_schema", msgspec.UNSET) is msgspec.UNSET
        picture = await client.call_tool("picture")
        assert [block.type for block in picture.content] == ["image"]
        assert picture.content[0].data == base64.b64encode(PNG).decode()
        mixed = await client.call_tool("mixed")
        assert [block.type for block in mixed.content] == ["text", "image", "resource"]
        assert mixed.text == "caption"
        sound = await client.call_tool("sound")
        if revision < "2025-03-26":
            assert sound.is_error and "needs revision 2025-03-26" in sound.text
        else:
            assert not sound.is_error and sound.content[0].type == "audio"
        link = await client.call_tool("link")
        if revision < "2025-06-18":
            assert link.is_error and "needs revision 2025-06-18" in link.text
        else:
            assert not link.is_error and link.content[0].uri == "db://t/1"


def declared_content_server(revisions: list[str] | None = None) -> Server:
    """Resources and prompts answering with the content helpers."""
    server = Server("content", "1.0", revisions=revisions)

    @server.resource("pictures://chart", mime_type="text/plain")
    async def chart() -> Image:
        return image(PNG, "image/png")

    @server.resource("sounds://beep")
    async def beep() -> Audio:
        return audio(b"RIFF", "audio/wav")

    @server.resource("notes://{number}")
    async def note(number: int) -> Any:
        return [embedded_resource(f"notes://{number}/text", f"note {number}"), "plain"]

    @server.prompt()
    async def describe() -> Any:
        return ["Describe this:", image(PNG, "image/png"), embedded_resource("notes://1", "x")]

    @server.prompt()
    async def listen() -> Any:
        return {"role": "assistant", "content": audio(b"RIFF", "audio/wav")}

    @server.prompt()
    async def linked() -> Any:
        return resource_link("notes://1", "note")

    return server


@pytest.mark.anyio
@pytest.mark.parametrize("revision", ALL)
async def test_resources_return_content_helpers(revision: str) -> None:
    async with Client.in_memory(declared_content_server(), mode=revision) as client:
        [chart] = (await client.read_resource("pictures://chart")).contents
        # The image's own MIME type wins over the resource's declared one.
        assert (chart.uri, chart.mime_type) == ("pictures://chart", "image/png")
        assert chart.blob == base64.b64encode(PNG).decode()
        # Audio is a blob in a resource's contents: every revision has those.
        [beep] = (await client.read_resource("sounds://beep")).contents
        assert (beep.mime_type, beep.blob) == ("audio/wav", base64.b64encode(b"RIFF").decode())
        embedded, plain = (await client.read_resource("notes://7")).contents
        assert (embedded.uri, embedded.text) == ("notes://7/text", "note 7")
        assert (plain.uri, plain.text) == ("notes://7", "plain")


@pytest.mark.anyio
@pytest.mark.parametrize("revision", ALL)
async def test_prompts_return_content_helpers(revision: str) -> None:
    async with Client.in_memory(declared_content_server(), mode=revision) as client:
        described = await client.get_prompt("describe")
        assert [m.content.type for m in described.messages] == ["text", "image", "resource"]
        assert described.messages[1].content.data == base64.b64encode(PNG).decode()
        assert described.messages[2].content.resource.text == "x"
        for name, needs in (("listen", "2025-03-26"), ("linked", "2025-06-18")):
            if revision < needs:
                with pytest.raises(RequestError) as refused:
                    await client.get_prompt(name)
                error = refused.value
                assert error.code == -32603 and f"needs revision {needs}" in error.message
                assert error.data == {
                    "type": "audio" if name == "listen" else "resource_link",
                    "revision": revision,
                    "needs": needs,
                }
            else:
                [message] = (await client.get_prompt(name)).messages
                assert message.content.type == ("audio" if name == "listen" else "resource_link")
        # The connection goes on.
        assert (await client.get_prompt("describe")).messages


def test_what_can_never_be_sent_is_refused_when_declared() -> None:
    old = Server("old", "1.0", revisions=["2024-11-05"])
    with pytest.raises(
        TypeError,
        match=r"tool 'sound' returns audio content, which needs "
        r"revision 2025-03-26 or later; the server speaks 2024-11-05",
    ):

        @old.tool()
        async def sound() -> Audio:
            return audio(b"RIFF", "audio/wav")

    with pytest.raises(
        TypeError,
        match="prompt 'link' returns resource_link content, which needs revision 2025-06-18",
    ):

        @old.prompt()
        async def link() -> list[str | ResourceLink]:
            return [resource_link("notes://1", "note")]

    with pytest.raises(
        TypeError,
        match="resource 'links://1' returns a resource link, which is no resource contents",
    ):

        @Server().resource("links://1")
        async def link_resource() -> ResourceLink | None:
            return None

    # Where a revision the server speaks has the type, it is declared.
    newer = Server("newer", "1.0", revisions=["2024-11-05", "2025-03-26"])

    @newer.prompt()
    async def listen() -> Audio:
        return audio(b"RIFF", "audio/wav")

    @newer.resource("sounds://beep")
    async def beep() -> Audio:
        return audio(b"RIFF", "audio/wav")


@pytest.mark.anyio
async def test_a_resource_returning_a_link_is_a_clear_error() -> None:
    server = Server()

    @server.resource("links://1")
    async def link() -> Any:  # not annotated: found out when read
        return resource_link("notes://1", "note")

    async with Client.in_memory(server) as client:
        with pytest.raises(RequestError) as refused:
            await client.read_resource("links://1")
    assert refused.value.code == -32603
