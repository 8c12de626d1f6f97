"""The README's Python examples run as written.

Blocks that start with a file name comment (``# server.py``) are files of a small
project: they are written to a folder, and the client among them runs there, launching
the server as a real subprocess. Every other block stands alone (it runs in a fresh
namespace) unless its first line says ``# continues the examples above``: then it runs
in the namespace of the blocks before it, as a reader who ran them has it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import ROOT
from .surface_kit import PROGRAMS_OUTPUT

BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
#: ``# name.py`` on a block's first line makes it a file.
FILE_NAME = re.compile(r"# (\w+\.py)\n")
#: The first line of a block that builds on the ones before it.
CONTINUES = "# continues the examples above\n"


def _files() -> dict[str, str]:
    named = [(FILE_NAME.match(block), block) for block in BLOCKS]
    return {match.group(1): block for match, block in named if match is not None}


def test_readme_examples_run() -> None:
    inline = [block for block in BLOCKS if FILE_NAME.match(block) is None]
    assert len(inline) >= 9, "codec examples and both protocol models"
    namespaces: list[dict[str, object]] = []
    for number, block in enumerate(inline, 1):
        if not block.startswith(CONTINUES) or not namespaces:
            namespaces.append({})  # a block that does not say it continues stands alone
        exec(compile(block, f"README.md example {number}", "exec"), namespaces[-1])
    [wire] = [n["wire"] for n in namespaces if "wire" in n]
    assert wire == (
        b'{"method":"tools/call","id":1,"jsonrpc":"2.0",'
        b'"params":{"arguments":{"x":5},"name":"echo"}}'
    )
    # The session examples end with a connection negotiated over in-memory streams.
    [sessions] = [n for n in namespaces if "client" in n and "server" in n]
    client, server = sessions["client"], sessions["server"]
    assert getattr(client, "revision", None) == getattr(server, "revision", None) == "2025-06-18"


def test_readme_server_and_client_run_over_stdio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _files()
    assert set(files) == {"server.py", "client.py", "http_server.py", "http_client.py"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    exec(compile(files["client.py"], "README.md client.py", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out == PROGRAMS_OUTPUT
