"""``mcpspec.runtime`` imports its session modules lazily: a revision module (which
imports the codec, hence the package) stays cheap, and every exported name resolves.
The codec layer imports nothing of the layers above it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mcpspec.runtime

RUNTIME = Path(mcpspec.runtime.__file__).parent

#: The layer under the sessions: what a generated revision module imports. Nothing in it
#: imports the sans-IO sessions (``mcpspec.runtime.session``) or the connections.
CODEC_LAYER = [
    "codec",
    "declared",
    "envelope",
    "errors",
    "extensions",
    "msgspec_errors",
    "unions",
    "unparsed_response",
]
LAYERS_ABOVE = ("mcpspec.runtime.session", "mcpspec.runtime.connection")


def _loaded_after(statement: str) -> list[str]:
    code = (
        f"import json, sys; {statement}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('mcpspec'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    loaded: list[str] = json.loads(out)
    return loaded


def test_revision_module_does_not_import_the_sessions() -> None:
    loaded = _loaded_after("import mcpspec.v2025_11_25")
    assert "mcpspec.runtime.codec" in loaded  # the package itself is imported ...
    # ... but none of the session machinery.
    assert [m for m in loaded if m.startswith(LAYERS_ABOVE)] == []


def test_the_codec_layer_imports_no_layer_above_it() -> None:
    modules = sorted(p.stem for p in RUNTIME.glob("*.py") if p.stem != "__init__")
    assert modules == sorted(CODEC_LAYER)  # runtime/ holds the codec layer only
    for name in CODEC_LAYER:
        loaded = _loaded_after(f"import mcpspec.runtime.{name}")
        assert [m for m in loaded if m.startswith(LAYERS_ABOVE)] == [], name


def test_an_extension_module_is_imported_only_when_used() -> None:
    """The tasks extension is opt-in: a session that does not speak it, and one of a
    revision it is not for, never import its module."""
    assert "mcpspec.ext_tasks" not in _loaded_after(
        "from mcpspec.runtime import ServerSession; ServerSession(['2026-07-28'])"
    )
    assert "mcpspec.ext_tasks" not in _loaded_after(
        "from mcpspec.runtime import ServerSession; "
        "ServerSession(['2025-11-25'], extensions=['io.modelcontextprotocol/tasks'])"
    )
    assert "mcpspec.ext_tasks" in _loaded_after(
        "from mcpspec.runtime import ServerSession; "
        "ServerSession(['2026-07-28'], extensions=['io.modelcontextprotocol/tasks'])"
    )


def test_session_names_resolve_on_first_use() -> None:
    loaded = _loaded_after("from mcpspec.runtime import ServerSession")
    assert {"mcpspec.runtime.session.server", "mcpspec.runtime.session.core"} <= set(loaded)
    assert "mcpspec.runtime.session.client" not in loaded


def test_every_exported_name_resolves() -> None:
    for name in mcpspec.runtime.__all__:
        value = getattr(mcpspec.runtime, name)
        assert value is not None, name
    assert sorted(dir(mcpspec.runtime)) == sorted(mcpspec.runtime.__all__)
    assert mcpspec.runtime.ServerSession.__name__ == "ServerSession"
    assert mcpspec.runtime.ClientSession.__name__ == "ClientSession"
