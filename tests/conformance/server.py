"""Serve the conformance fixture: ``python tests/conformance/server.py [--port N]``
serves Streamable HTTP at ``/mcp`` on 127.0.0.1 (``--stdio``: stdin and stdout instead;
``--redis URL``: as one worker of a cluster sharing its sessions and tasks in that
Redis).

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

#: The ``requestState`` sealing key of the fixture's workers in a cluster (tests only).
CLUSTER_STATE_KEY = b"conformance-cluster-state-key-32"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="the HTTP port (0: a free one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--stdio", action="store_true", help="serve stdin/stdout instead")
    parser.add_argument("--redis", default="", help="share sessions in this Redis")
    args = parser.parse_args(argv)
    # The workers of a cluster share the key sealing ``requestState`` (configuration,
    # as in a deployment): a retry carrying it may land on any of them.
    tasks = None
    if args.redis:
        from mcpspec.runtime.connection.http.redis_tasks import redis_task_store
        from mcpspec.runtime.connection.tasks import TaskSettings

        tasks = TaskSettings(store=redis_task_store(args.redis))
    server = build_server(CLUSTER_STATE_KEY if args.redis else None, tasks)
    if args.stdio:
        server.run()
        return
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.host, args.port))
    listener.listen(128)
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    cluster = None
    if args.redis:
        from mcpspec.runtime.connection.http.redis_store import redis_cluster

        cluster = redis_cluster(args.redis)
    config = uvicorn.Config(http_app(server, cluster=cluster), log_level="warning")
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
