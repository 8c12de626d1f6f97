"""The README's Python examples run as written, in order, in one namespace."""

from __future__ import annotations

import re

from .conftest import ROOT

BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_readme_examples_run() -> None:
    assert len(BLOCKS) >= 9, "codec examples and both protocol models"
    namespace: dict[str, object] = {}
    for number, block in enumerate(BLOCKS, 1):
        exec(compile(block, f"README.md example {number}", "exec"), namespace)
    assert namespace["wire"] == (
        b'{"method":"tools/call","id":1,"jsonrpc":"2.0",'
        b'"params":{"arguments":{"x":5},"name":"echo"}}'
    )
    # The session examples end with a connection negotiated over in-memory streams.
    client, server = namespace["client"], namespace["server"]
    assert getattr(client, "revision", None) == getattr(server, "revision", None) == "2025-06-18"
