"""The connection layer is an extra: importing the sans-IO runtime or a revision module
never imports anyio, and the connection package imports on its own."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _loaded_after(statement: str) -> list[str]:
    code = f"import json, sys; {statement}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    loaded: list[str] = json.loads(out)
    return loaded


def _anyio(loaded: list[str]) -> list[str]:
    return [
        m for m in loaded if m == "anyio" or m.startswith(("anyio.", "mcpspec.runtime.connection"))
    ]


@pytest.mark.parametrize(
    "statement",
    [
        "import mcpspec.v2025_11_25",
        "import mcpspec.runtime",
        "from mcpspec.runtime import ServerSession, ClientSession, Rule",
    ],
)
def test_the_sans_io_layer_imports_no_anyio(statement: str) -> None:
    assert _anyio(_loaded_after(statement)) == []


def test_the_connection_layer_imports_anyio() -> None:
    loaded = _loaded_after("import mcpspec.runtime.connection")
    assert {"anyio", "mcpspec.runtime.connection.peer", "mcpspec.runtime.session.server"} <= set(
        loaded
    )


def test_every_exported_name_resolves() -> None:
    import mcpspec.runtime.connection as connection

    for name in connection.__all__:
        assert getattr(connection, name) is not None, name


def test_the_task_api_is_exported() -> None:
    import mcpspec.runtime.connection as connection
    from mcpspec.runtime.connection import client_tasks, task_store, tasks

    for name, module in (
        ("TaskHandle", client_tasks),
        ("TaskSettings", tasks),
        ("TaskContext", tasks),
        ("TaskStore", task_store),
        ("MemoryTaskStore", task_store),
        ("TaskRecord", task_store),
        ("TaskStatus", task_store),
        ("TaskStoreFull", task_store),
    ):
        assert name in connection.__all__
        assert getattr(connection, name) is getattr(module, name), name
