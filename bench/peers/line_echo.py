"""The floor of the stdio benchmark: a process that writes back every line it reads.

Run: ``python line_echo.py``. No JSON and no event loop: blocking reads and writes of
its stdin and stdout, so a round trip through it costs the pipes, the two process
wake-ups and the client's own event loop, and nothing of MCP. The line ``cpu``, sent
alone, is answered ``cpu <seconds>``: the CPU seconds this process has used.
"""

from __future__ import annotations

import os
import time


def main() -> None:
    """Echo whole lines from stdin to stdout until stdin closes."""
    pending = b""
    while True:
        data = os.read(0, 65536)
        if not data:
            return
        pending += data
        end = pending.rfind(b"\n") + 1
        if end:
            lines = pending[:end]
            if lines == b"cpu\n":  # asked between batches, so it comes alone
                lines = f"cpu {time.process_time()!r}\n".encode()
            os.write(1, lines)
            pending = pending[end:]


if __name__ == "__main__":
    main()
