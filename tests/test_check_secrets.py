"""The credentials given to ``mcpspec check`` never appear in what it shows or keeps: the
text report, the JSON, JUnit and SARIF files, the ``--record`` transcripts and the error
that ends a run, even against a server that echoes them everywhere it can
(``tests/check_servers/echoing.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import anyio
import pytest

from mcpspec.check.secrets import MASK, Secrets
from mcpspec.cli import main

from .http_kit import free_port, wait_listening

SERVER: Final = str(Path(__file__).resolve().parent / "check_servers" / "echoing.py")
TOKEN: Final = "tok-3f9a-SECRET"


@pytest.fixture
def echoing_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER, TOKEN, "--http", str(port)],
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        anyio.run(wait_listening, port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _everything_written(folder: Path) -> str:
    return "\n".join(path.read_text() for path in sorted(folder.rglob("*")) if path.is_file())


def test_a_token_the_server_echoes_is_in_no_report_or_recording(
    echoing_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = tmp_path / "files"
    files.mkdir()
    status = main(
        [
            "check",
            "--call-tools",
            "--revision",
            "2025-11-25",
            "--revision",
            "2026-07-28",
            "--header",
            f"Authorization: Bearer {TOKEN}",
            "--json",
            str(files / "report.json"),
            "--junit",
            str(files / "report.xml"),
            "--sarif",
            str(files / "report.sarif"),
            "--record",
            str(files / "record"),
            echoing_url,
        ]
    )
    out, err = capsys.readouterr()
    assert status in (0, 1)  # a verdict: the server was reached with the token
    written = _everything_written(files)
    assert len(list((files / "record").iterdir())) >= 2
    for shown in (out, err, written):
        assert TOKEN not in shown
    # The server did echo it: where it did, the mask stands.
    assert MASK in written and MASK in out


def test_a_token_in_a_refusal_is_not_shown(
    echoing_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The server's 401 challenge quotes the Authorization header it refused.
    wrong = "tok-WRONG-7c1d"
    status = main(["check", "--header", f"Authorization: Bearer {wrong}", echoing_url])
    out, err = capsys.readouterr()
    assert status == 2
    assert "401 Unauthorized" in err and f'error_description="{MASK}"' in err
    assert wrong not in out + err


def test_the_credentials_of_a_target() -> None:
    secrets = Secrets.of_http(
        "https://user:p%40ss@example.com/mcp?api_key=k3y&page=2",
        {"Authorization": "Bearer abc.def", "X-Api-Key": "zz-9", "Accept-Language": "en"},
    )
    text = "user:p%40ss p@ss api_key=k3y Bearer abc.def abc.def zz-9 page=2 en"
    assert secrets.text(text) == (
        f"user:{MASK} {MASK} api_key={MASK} {MASK} {MASK} {MASK} page=2 en"
    )
    assert secrets.data(b'{"why": "abc.def"}') == f'{{"why": "{MASK}"}}'.encode()
    # Headers that carry no credential are shown as they are.
    assert not Secrets.of_http("http://127.0.0.1/mcp", {"Accept-Language": "en"})
