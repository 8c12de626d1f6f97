"""A server for ``mcpspec check`` to find fault with: the baseline server
(:mod:`tests.check_servers.baseline`) with at most one defect.

Run: ``python tests/check_servers/broken.py [--defect NAME] [--http PORT]``. Over stdio
(the default) the defect is one of :data:`~tests.check_servers.stdio_defects.STDIO_DEFECTS`,
a filter on the messages read and written; with ``--http`` the server is the ASGI app
under uvicorn at ``http://127.0.0.1:PORT/mcp`` and the defect one of
:data:`~tests.check_servers.http_defects.HTTP_DEFECTS`, a middleware around the app.
Without ``--defect`` it is the baseline, which must pass every check.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

if __package__ in (None, ""):
    # Run as a script: make ``tests.check_servers`` importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcpspec.runtime.connection import stdio_server_stream
from mcpspec.runtime.connection.http import http_app
from tests.check_servers.baseline import build_server
from tests.check_servers.http_defects import HTTP_DEFECTS, Middleware
from tests.check_servers.stdio_defects import STDIO_DEFECTS, Defect, FilteredStream

__all__ = ["DEFECT_NAMES", "main"]

#: Every defect, by name.
DEFECT_NAMES = frozenset(STDIO_DEFECTS) | frozenset(HTTP_DEFECTS)


async def serve_stdio(defect: Defect) -> None:
    """Serve stdin and stdout through the defect's filter until stdin closes."""
    server = build_server()
    async with stdio_server_stream() as stream:
        filtered = FilteredStream(stream, defect)
        await filtered.open()
        await server.serve(filtered, linger=1.0)


def serve_http(port: int, middleware: type[Middleware]) -> None:
    """Serve the app, wrapped in ``middleware``, with uvicorn on 127.0.0.1:``port``."""
    import uvicorn

    app = middleware(http_app(build_server()))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--defect", default=None, choices=sorted(DEFECT_NAMES))
    parser.add_argument("--http", type=int, default=None, metavar="PORT")
    args = parser.parse_args(argv)
    if args.http is not None:
        if args.defect is not None and args.defect not in HTTP_DEFECTS:
            parser.error(f"{args.defect} is a defect of stdio servers")
        serve_http(args.http, HTTP_DEFECTS[args.defect] if args.defect else Middleware)
        return
    if args.defect is not None and args.defect not in STDIO_DEFECTS:
        parser.error(f"{args.defect} is a defect of HTTP servers: give --http PORT")
    anyio.run(serve_stdio, STDIO_DEFECTS[args.defect]() if args.defect else Defect())


if __name__ == "__main__":
    main()
