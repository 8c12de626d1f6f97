"""A cluster as deployed, for the tests of ``nox -s cluster``: Debian's ``redis-server``,
worker processes (``tests/peers/cluster_worker.py``, uvicorn) on their own loopback
ports, and ``nginx`` in front of them balancing round-robin with no affinity."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.cluster_kit import RedisProcess
from tests.http_kit import free_port, wait_listening

WORKER = Path(__file__).parent / "peers" / "cluster_worker.py"

#: nginx in front of the workers: round-robin (its default), no affinity, SSE passed
#: through as it comes (no buffering), a refused connection tried on the next worker.
NGINX_CONF = """
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    upstream mcp_workers {{
{servers}
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        location /mcp {{
            proxy_pass http://mcp_workers;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_cache off;
            proxy_read_timeout 1h;
            proxy_next_upstream error timeout;
            client_max_body_size 8m;
        }}
    }}
}}
"""


def _binary(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
    if found is None:
        raise RuntimeError(f"{name} is not installed (apt-get install {name})")
    return found


class ClusterStack:
    """Redis, ``count`` workers and nginx; ``url`` is the endpoint behind nginx."""

    def __init__(
        self, count: int, directory: str, worker: Path = WORKER, *, shared: bool = True
    ) -> None:
        self.worker = worker
        #: Whether the workers share sessions in Redis (else each keeps its own).
        self.shared = shared
        self.redis = RedisProcess()
        self.ports = [free_port() for _ in range(count)]
        self.workers: list[subprocess.Popen[bytes] | None] = [None] * count
        self.directory = directory
        self.nginx_port = free_port()
        self.nginx: subprocess.Popen[bytes] | None = None
        self.url = f"http://127.0.0.1:{self.nginx_port}/mcp"

    def worker_url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.ports[index]}/mcp"

    async def start_worker(self, index: int) -> None:
        port = str(self.ports[index])
        process = subprocess.Popen(
            [
                sys.executable,
                str(self.worker),
                "--port",
                port,
                *(("--redis", self.redis.url) if self.shared else ()),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.workers[index] = process
        await wait_listening(self.ports[index], process)

    def worker_rss(self, index: int) -> int:
        """The resident memory of worker ``index`` in bytes (Linux: ``/proc``)."""
        process = self.workers[index]
        assert process is not None, f"worker {index} is not running"
        status = Path(f"/proc/{process.pid}/status").read_text()
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(f"no VmRSS for worker {index}")

    def worker_pids(self) -> list[int]:
        """The process ids of the workers running."""
        return [process.pid for process in self.workers if process is not None]

    def kill_worker(self, index: int) -> None:
        """Kill a worker at once (SIGKILL: nothing of it runs after)."""
        process = self.workers[index]
        if process is not None:
            process.kill()
            process.wait(timeout=10)
            self.workers[index] = None

    async def start(self) -> None:
        if self.shared:
            await self.redis.start()
        for index in range(len(self.ports)):
            await self.start_worker(index)
        servers = "\n".join(f"        server 127.0.0.1:{port} max_fails=0;" for port in self.ports)
        conf = Path(self.directory) / "nginx.conf"
        conf.write_text(
            NGINX_CONF.format(dir=self.directory, servers=servers, port=self.nginx_port)
        )
        self.nginx = subprocess.Popen(
            [_binary("nginx"), "-p", self.directory, "-c", str(conf), "-g", "daemon off;"],
            stdin=subprocess.DEVNULL,
        )
        await wait_listening(self.nginx_port, self.nginx)

    def stop(self) -> None:
        if self.nginx is not None:
            self.nginx.send_signal(signal.SIGQUIT)
            try:
                self.nginx.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.nginx.kill()
                self.nginx.wait()
        for index, process in enumerate(self.workers):
            if process is not None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                self.workers[index] = None
        self.redis.stop()


@asynccontextmanager
async def cluster_stack(
    count: int = 3, worker: Path = WORKER, *, shared: bool = True
) -> AsyncIterator[ClusterStack]:
    """A :class:`ClusterStack` of ``count`` workers, started; stopped after. ``worker``
    is the script each runs (``--port PORT [--redis URL]``); ``shared=False``: no Redis,
    each worker keeps its sessions (one worker, to compare with)."""
    with tempfile.TemporaryDirectory(prefix="mcpspec-cluster-") as directory:
        stack = ClusterStack(count, directory, worker, shared=shared)
        try:
            await stack.start()
            yield stack
        finally:
            stack.stop()
