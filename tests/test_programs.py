"""The four programs a newcomer writes first, as the README shows them (``tests/programs/``):
a stdio server with a tool, a static resource, a resource template and a prompt; its
client; the same server over HTTP; a client by URL. Each runs for real (a subprocess over
stdio, a uvicorn server on a free port) and is no longer than the official SDK's
equivalent program (``MCPServer`` and its ``Client``).

Lines are counted as the issue that set the bar counted them: every line of the whole
program but blank ones (imports and the ``__main__`` guard included).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from .conftest import ROOT
from .http_kit import free_port, wait_listening
from .surface_kit import PROGRAMS, PROGRAMS_OUTPUT

#: The SDK's equivalent of each program, in lines.
SDK_LINES = {"server.py": 17, "client.py": 15, "http_server.py": 17, "http_client.py": 15}
#: A hang guard, never a timed assertion.
GUARD = 60
#: The subprocesses are the subject; one event loop to wait on them is enough.
ANYIO_BACKENDS = ("asyncio",)
README_BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def _lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


@pytest.mark.parametrize("name", sorted(SDK_LINES))
def test_each_program_is_no_longer_than_the_sdks(name: str) -> None:
    assert _lines((PROGRAMS / name).read_text()) <= SDK_LINES[name]


@pytest.mark.parametrize("name", sorted(SDK_LINES))
def test_the_readme_shows_each_program_as_it_is(name: str) -> None:
    # The README names each file in a comment on its first line.
    assert f"# {name}\n{(PROGRAMS / name).read_text()}" in README_BLOCKS


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def test_the_stdio_client_runs_the_stdio_server() -> None:
    done = subprocess.run(
        [sys.executable, "client.py"],
        cwd=PROGRAMS,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == PROGRAMS_OUTPUT


@pytest.mark.anyio
async def test_the_url_client_reaches_the_http_server(tmp_path: Path) -> None:
    # The programs as written, on a free port instead of 8000.
    port = free_port()
    for name in ("http_server.py", "http_client.py"):
        text = (PROGRAMS / name).read_text().replace("8000", str(port))
        (tmp_path / name).write_text(text)
    server = subprocess.Popen(
        [sys.executable, "http_server.py"],
        cwd=tmp_path,
        env=_environment(),
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        await wait_listening(port, server)
        done = await anyio.run_process(
            [sys.executable, "http_client.py"], cwd=tmp_path, env=_environment(), check=False
        )
    finally:
        server.terminate()
        _, err = server.communicate(timeout=GUARD)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == PROGRAMS_OUTPUT
    assert f"MCP server at http://127.0.0.1:{port}/mcp" in err.decode()
