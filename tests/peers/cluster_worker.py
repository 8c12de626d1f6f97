"""One worker of a cluster for the tests behind nginx: the cluster test server
(``tests/cluster_kit.py``) joined to the Redis at ``--redis``, under uvicorn at
``http://127.0.0.1:PORT/mcp``.

Run: ``python cluster_worker.py --port PORT --redis URL`` (without ``--redis``: a worker
alone, sessions in its memory, to compare with). Besides the cluster test
server's tools: ``cancelled`` answers how many ``hold`` calls of this worker were
cancelled, ``worker`` answers this worker's port.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcpspec.runtime.connection.http import http_app
from mcpspec.runtime.connection.http.redis_store import redis_cluster
from tests.cluster_kit import cluster_server


async def serve(port: int, redis_url: str) -> None:
    import uvicorn

    seen: dict[str, Any] = {"release": anyio.Event(), "cancelled": anyio.Event(), "name": port}
    server = cluster_server(seen)

    @server.tool()
    async def cancelled() -> str:
        """How many ``hold`` calls of this worker were cancelled."""
        return str(seen.get("cancels", 0))

    @server.tool()
    async def worker() -> str:
        """This worker's port."""
        return str(port)

    cluster = redis_cluster(redis_url, timeout=2.0) if redis_url else None
    app = http_app(server, cluster=cluster)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1
    )
    await uvicorn.Server(config).serve()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--redis", default="", help="none: a worker alone, in memory")
    args = parser.parse_args()
    anyio.run(serve, args.port, args.redis)


if __name__ == "__main__":
    main()
