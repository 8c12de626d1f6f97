"""Serve the conformance fixture: ``python tests/conformance/server.py [--port N]``
serves Streamable HTTP at ``/mcp`` on 127.0.0.1 (``--stdio``: stdin and stdout instead).

The socket is bound and listening before the first line of stdout, ``PORT <n>``, is
written: a parent that asked for port 0 reads the port there and connects at once.
"""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script: make ``tests.conformance`` importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcpspec.runtime.connection.http import http_app
from tests.conformance.fixture import build_server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="the HTTP port (0: a free one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--stdio", action="store_true", help="serve stdin/stdout instead")
    args = parser.parse_args(argv)
    server = build_server()
    if args.stdio:
        server.run()
        return
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.host, args.port))
    listener.listen(128)
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    config = uvicorn.Config(http_app(server), log_level="warning")
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
