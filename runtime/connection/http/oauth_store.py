"""Where an OAuth client keeps what it was given: :class:`TokenStore`.

For each protected resource the store keeps one JSON object: the tokens
(``access_token``, ``refresh_token``, when it ends, the scopes granted) and the client
registration obtained from the authorization server (``client_id``, its secret). The
default :class:`MemoryTokenStore` forgets them with the process; :class:`FileTokenStore`
keeps them in one JSON file readable by its owner only (mode 0600), written whole to a
new file and renamed over the old one, so that it is never seen half written.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol

import anyio
import msgspec

__all__ = ["FileTokenStore", "MemoryTokenStore", "TokenStore"]


class TokenStore(Protocol):
    """Keeps one JSON object per resource (see the module)."""

    async def load(self, key: str) -> dict[str, Any] | None:
        """What is kept for ``key``, or ``None``."""
        ...

    async def save(self, key: str, value: dict[str, Any]) -> None:
        """Keep ``value`` for ``key`` (replacing what was kept)."""
        ...


class MemoryTokenStore:
    """A :class:`TokenStore` in memory (the default)."""

    def __init__(self) -> None:
        self._values: dict[str, dict[str, Any]] = {}

    async def load(self, key: str) -> dict[str, Any] | None:
        value = self._values.get(key)
        return dict(value) if value is not None else None

    async def save(self, key: str, value: dict[str, Any]) -> None:
        self._values[key] = dict(value)


class FileTokenStore:
    """A :class:`TokenStore` in the JSON file at ``path``, mode 0600 (see the module)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = anyio.Lock()

    async def load(self, key: str) -> dict[str, Any] | None:
        async with self._lock:
            value = (await anyio.to_thread.run_sync(self._read)).get(key)
        return value if isinstance(value, dict) else None

    async def save(self, key: str, value: dict[str, Any]) -> None:
        async with self._lock:

            def write() -> None:
                values = self._read()
                values[key] = value
                self._write(values)

            await anyio.to_thread.run_sync(write)

    def _read(self) -> dict[str, Any]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            values = msgspec.json.decode(data)
        except msgspec.DecodeError:
            return {}  # a damaged file is started over, not trusted
        return values if isinstance(values, dict) else {}

    def _write(self, values: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".tokens-", dir=self.path.parent)
        try:
            # mkstemp makes the file 0600 already; said again for the rename's sake.
            os.fchmod(handle, 0o600)
            with os.fdopen(handle, "wb") as file:
                file.write(msgspec.json.encode(values))
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
