"""What a newcomer meets first: where ``run_http`` listens, the hint of a refused
``Host``, the names importable from ``mcpspec.runtime.connection``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mcpspec.runtime.connection import Server
from mcpspec.runtime.connection.http import http_app, run_http


def test_run_http_says_where_it_listens(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    ran: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: ran.append(options))
    run_http(Server(), port=8123)
    run_http(Server(), host="::1", port=9000, path="/rpc")
    out, err = capsys.readouterr()
    assert out == ""  # stdout stays free
    assert err.splitlines() == [
        "MCP server at http://127.0.0.1:8123/mcp (press CTRL+C to quit)",
        "MCP server at http://[::1]:9000/rpc (press CTRL+C to quit)",
    ]
    assert [options["port"] for options in ran] == [8123, 9000]


@pytest.mark.anyio
async def test_a_foreign_host_is_told_about_allowed_hosts() -> None:
    transport = httpx.ASGITransport(app=http_app(Server()))
    async with httpx.AsyncClient(transport=transport, base_url="http://192.168.1.9:8000") as http:
        response = await http.post("/mcp", json={})
    assert response.status_code == 421
    reason = response.json()["error"]["message"]
    assert "Invalid Host header" in reason and "'192.168.1.9'" in reason
    assert "allowed_hosts=" in reason


def test_references_are_importable_from_the_package() -> None:
    from mcpspec.runtime.connection import prompt_ref, resource_ref

    assert prompt_ref("greet") == {"type": "ref/prompt", "name": "greet"}
    assert resource_ref("file:///{path}") == {"type": "ref/resource", "uri": "file:///{path}"}
