"""Serve one ASGI app of the HTTP benchmark (``bench/http_bench.py``) with uvicorn.

Run: ``python http_serve.py MODULE:FACTORY [--http auto] [--loop auto] [--profile FILE]``.
The factory (in ``bench/peers``, imported as ``peers.<module>``) is called once for the
app. One uvicorn worker, in this process, on a loopback socket this script binds to a port
the system picks: its first line on stdout is JSON with the ``port`` and what uvicorn runs
(``http`` protocol class, event ``loop``); after it, stdout goes to stderr.
Idle keep-alive connections stay open an hour. Serves until
SIGINT or SIGTERM. With ``--profile``, the server runs under cProfile and the profile is
written to FILE when it stops.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import socket
import sys
from pathlib import Path

# ``peers.<module>`` is importable from the benchmark's directory.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import uvicorn


def main() -> None:
    """Bind, announce the port, serve."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("app", help="MODULE:FACTORY of a module in bench/peers")
    parser.add_argument("--http", default="auto", help="uvicorn's HTTP implementation")
    parser.add_argument("--loop", default="auto", help="uvicorn's event loop")
    parser.add_argument("--profile", type=Path, help="cProfile the server, to this file")
    args = parser.parse_args()

    # The protocol named: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
    # and without it every response waits for a delayed ACK (40 ms).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)  # connections wait in the backlog until uvicorn serves
    config = uvicorn.Config(
        f"peers.{args.app}",
        factory=True,
        http=args.http,
        loop=args.loop,
        lifespan="on",
        workers=1,
        access_log=False,
        # The benchmark's clients wait their turn on open connections, idle for longer
        # than uvicorn's default of 5 s.
        timeout_keep_alive=3600,
        log_level="warning",
    )
    config.load()
    loop_factory = config.get_loop_factory()
    loop_name = "default" if loop_factory is None else loop_factory.__module__.split(".")[0]
    announce = {
        "port": sock.getsockname()[1],
        "pid": os.getpid(),
        "http": config.http_protocol_class.__name__,
        "loop": loop_name,
    }
    sys.stdout.write(json.dumps(announce) + "\n")
    sys.stdout.flush()
    os.dup2(2, 1)  # nothing more on the pipe the benchmark reads
    server = uvicorn.Server(config)
    if args.profile is None:
        server.run(sockets=[sock])
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        server.run(sockets=[sock])
    finally:
        profiler.disable()
        profiler.dump_stats(args.profile)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn raises its SIGINT again
        main()
