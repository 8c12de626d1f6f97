"""A deliberately faulty stdio MCP server (plain Python, no MCP library), for the fault
tests of the mcpspec client: ``python client_faulty_server.py [behaviour ...]``.

It answers ``initialize`` (2025-11-25) and ``tools/call`` by tool name: ``echo`` answers
the ``text`` argument; ``exit`` ends the process with status 3 without answering;
``garbage`` writes a line that is not JSON-RPC to stdout, then answers; ``huge`` writes
a 2 MB log message, then answers; ``wait`` never answers. It writes ``faulty server up``
to stderr on start.

Behaviours: ``stay`` keeps running after stdin closes (so only SIGTERM ends it);
``stay-hard`` also ignores SIGTERM (so only SIGKILL ends it).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any


def write(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(request_id: Any, value: dict[str, Any]) -> None:
    write({"jsonrpc": "2.0", "id": request_id, "result": value})


def main(behaviours: list[str]) -> None:
    if "stay-hard" in behaviours:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stderr.write("faulty server up\n")
    sys.stderr.flush()
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        request_id = message.get("id")
        if method == "initialize":
            result(
                request_id,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "faulty", "version": "1"},
                },
            )
        elif method == "tools/call":
            name = message["params"]["name"]
            if name == "exit":
                os._exit(3)
            if name == "garbage":
                sys.stdout.write("this line is not JSON-RPC\n")
                sys.stdout.flush()
            if name == "huge":
                huge = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}
                huge["params"] = {"level": "info", "data": "x" * 2_000_000}
                write(huge)
            if name == "wait":
                continue
            text = message["params"].get("arguments", {}).get("text", name)
            result(request_id, {"content": [{"type": "text", "text": text}]})
        elif request_id is not None:
            write(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )
    if "stay" in behaviours or "stay-hard" in behaviours:
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main(sys.argv[1:])
