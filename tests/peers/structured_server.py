"""An mcpspec server whose tools return structured output, for the interop tests.

Run: ``python structured_server.py [--revisions R1,R2,...] [--http PORT]``: over stdio,
or with ``--http`` under uvicorn at ``http://127.0.0.1:PORT/mcp``.

Tools: ``weather`` (a msgspec Struct), ``place`` (a dataclass), ``score`` (a
``TypedDict``), ``count`` (an ``int``, under ``"result"``), ``hot`` (a Struct outside
its own constraints: an ``isError`` result), ``picture`` (an image).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Annotated, TypedDict

import msgspec

from mcpspec.runtime.connection import Image, Server, image
from mcpspec.runtime.connection.http import run_http

PNG = b"\x89PNG\r\n\x1a\n"


class Weather(msgspec.Struct):
    city: str
    celsius: Annotated[float, msgspec.Meta(ge=-90, le=60)]


@dataclasses.dataclass
class Place:
    name: str
    population: int


class Score(TypedDict):
    player: str
    points: int


def build(revisions: list[str] | None) -> Server:
    server = Server("structured-fixture", "1.0", revisions=revisions)

    @server.tool()
    async def weather(city: str) -> Weather:
        """The weather in a city."""
        return Weather(city, 21.5)

    @server.tool()
    async def place(name: str) -> Place:
        return Place(name, 1000)

    @server.tool()
    async def score(player: str) -> Score:
        return {"player": player, "points": 3}

    @server.tool()
    async def count(word: str) -> int:
        return len(word)

    @server.tool()
    async def hot(city: str) -> Weather:
        return Weather(city, 99.0)

    @server.tool()
    async def picture() -> Image:
        return image(PNG, "image/png")

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--revisions", default=None)
    parser.add_argument("--backend", default="asyncio")
    parser.add_argument("--http", type=int, default=None, metavar="PORT")
    options = parser.parse_args()
    revisions = options.revisions.split(",") if options.revisions else None
    if options.http is not None:
        run_http(build(revisions), port=options.http)
        return
    build(revisions).run(backend=options.backend)


if __name__ == "__main__":
    main()
