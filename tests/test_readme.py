"""The README's Python examples run as written."""

from __future__ import annotations

import re

from .conftest import ROOT

BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_readme_examples_run() -> None:
    assert len(BLOCKS) >= 2
    namespace: dict[str, object] = {}
    for block in BLOCKS:
        exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["wire"] == (
        b'{"method":"tools/call","id":1,"jsonrpc":"2.0",'
        b'"params":{"arguments":{"x":5},"name":"echo"}}'
    )
