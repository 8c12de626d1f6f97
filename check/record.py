"""``mcpspec check --record DIR``: the traffic of every connection of a run, one JSON
Lines file per connection, in the transcript format ``mcpspec validate`` reads.

A file starts with a header, ``{"header": {"offered": <revision>, "transport": ...,
"target": ..., "connection": ...}}`` (no ``revision``: validate takes the one the
exchange settled), then holds one line per message in wire order::

    {"from": "client", "time": 0.0021, "where": "stdin line 1", "message": {...}}
    {"from": "server", "time": 0.0154, "where": "stdout line 1", "message": {...}}

``time`` is seconds since the connection opened; ``where`` is the place findings cite
(``stdout line 7``, ``POST 3 response``, ``GET stream event 2``; the checker's own
messages: ``stdin line N``, ``POST N``). Bytes that are no JSON (a banner on stdout, the
malformed-JSON probe) are kept as text in ``raw`` instead of ``message``. The file names
say the order, the revision and what the connection was for:
``01-2025-11-25-check.jsonl``, ``02-2025-11-25-http-probes.jsonl``.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import IO, Any, Final, Literal

import msgspec

from .secrets import Secrets

__all__ = ["Recorder", "Recording"]

Side = Literal["client", "server"]
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")


class Recording:
    """One connection's file: :meth:`write` appends a message; :meth:`close` ends it."""

    def __init__(self, path: Path, header: dict[str, Any], secrets: Secrets | None = None) -> None:
        self.path = path
        #: The credentials masked in every line (the checker's were given to the server,
        #: which may echo them).
        self._secrets = secrets if secrets is not None else Secrets()
        self._file: IO[bytes] | None = path.open("wb")
        self._started = time.perf_counter()
        self._lines = {"client": 0}
        self._line(msgspec.json.encode({"header": header}))

    def _line(self, data: bytes) -> None:
        if self._file is not None:
            self._file.write(self._secrets.data(data) + b"\n")
            self._file.flush()

    def client_line(self) -> str:
        """Where the next line the checker writes on stdin is: ``stdin line N``."""
        self._lines["client"] += 1
        return f"stdin line {self._lines['client']}"

    def write(self, side: Side, data: bytes, where: str) -> None:
        """Append the message ``data`` (any bytes) that ``side`` sent, found at ``where``."""
        seconds = round(time.perf_counter() - self._started, 6)
        head: dict[str, Any] = {"from": side, "time": seconds, "where": where}
        prefix = msgspec.json.encode(head)[:-1]
        try:
            msgspec.json.decode(data)
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
            text = json.dumps(data.decode("utf-8", "replace"))
            self._line(prefix + b',"raw":' + text.encode() + b"}")
            return
        self._line(prefix + b',"message":' + data.strip() + b"}")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class Recorder:
    """Makes one :class:`Recording` per connection in ``directory`` (created if needed),
    masking ``secrets`` (the credentials given for the run) in every file."""

    def __init__(
        self, directory: str | os.PathLike[str], target: str, secrets: Secrets | None = None
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.target = target
        self.secrets = secrets if secrets is not None else Secrets()
        self._count = 0
        #: The files written, in order.
        self.paths: list[Path] = []

    def open(self, revision: str, purpose: str, transport: str) -> Recording:
        """A new file for a connection of ``revision`` (``negotiation`` for the offers)
        made for ``purpose`` (``check``, ``http-probes``, ``offer``)."""
        self._count += 1
        name = _UNSAFE.sub("-", f"{self._count:02d}-{revision}-{purpose}") + ".jsonl"
        # No "revision": the file's revision is what the exchange settles (the server
        # may answer another than the one offered), as validate reads it.
        header: dict[str, Any] = {
            "offered": revision,
            "transport": transport,
            "target": self.target,
            "connection": f"{self._count}: {purpose}",
        }
        path = self.directory / name
        self.paths.append(path)
        return Recording(path, header, self.secrets)
