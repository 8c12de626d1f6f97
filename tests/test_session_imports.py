"""``mcpspec.runtime`` imports its session modules lazily: a revision module (which
imports the codec, hence the package) stays cheap, and every exported name resolves."""

from __future__ import annotations

import json
import subprocess
import sys

import mcpspec.runtime

#: The modules behind the sessions; none is needed to decode and encode messages.
SESSION_MODULES = [
    "capabilities",
    "checks",
    "client",
    "core",
    "events",
    "inbound",
    "misuse",
    "protocol_models",
    "negotiation_part",
    "version_negotiation",
    "outbound",
    "pending",
    "progress",
    "rules",
    "server",
    "session",
    "state",
    "stateless",
    "negotiated_terms",
    "violations",
]


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
    assert [m for m in loaded if m.rpartition(".")[2] in SESSION_MODULES] == []


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
