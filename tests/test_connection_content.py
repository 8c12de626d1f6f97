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
