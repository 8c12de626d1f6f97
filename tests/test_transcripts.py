"""Real traffic: sessions recorded with real MCP implementations decode completely.

Each transcript (``tests/fixtures/transcripts/<revision>/<scenario>.jsonl``, recorded by
``tests/fixtures/record_transcripts.py``) is read with the codec of its negotiated
revision: every message decodes, every result is typed by the method of the request it
answers, and re-encoding a decoded message decodes to the same value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcpspec
import msgspec
import pytest
from mcpspec.runtime import ErrorResponse, ResultResponse

from .conftest import TRANSCRIPTS_DIR

TRANSCRIPTS = sorted(TRANSCRIPTS_DIR.glob("*/*.jsonl"))


@dataclass
class Transcript:
    revision: str
    header: dict[str, Any]
    #: (sender, exact message bytes), in wire order.
    messages: list[tuple[str, bytes]] = field(default_factory=list)


def read_transcript(path: Path) -> Transcript:
    lines = path.read_bytes().splitlines()
    header = json.loads(lines[0])["header"]
    transcript = Transcript(header["revision"], header)
    for line in lines[1:]:
        sender = json.loads(line)["from"]
        prefix = b'{"from":"' + sender.encode() + b'","message":'
        assert line.startswith(prefix) and line.endswith(b"}"), line[:80]
        transcript.messages.append((sender, line[len(prefix) : -1]))
    return transcript


def test_transcripts_cover_every_revision() -> None:
    revisions = {read_transcript(p).revision for p in TRANSCRIPTS}
    assert revisions == set(mcpspec.REVISIONS)
    assert all(p.parent.name == read_transcript(p).revision for p in TRANSCRIPTS)


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_transcript_decodes_completely(path: Path) -> None:
    transcript = read_transcript(path)
    codec = mcpspec.codec(transcript.revision)
    pending: dict[tuple[str, Any], tuple[str, bool]] = {}  # (requester, id) -> method, task
    counts = {"requests": 0, "notifications": 0, "results": 0, "errors": 0}
    for sender, data in transcript.messages:
        decoded = codec.decode(data)
        messages = decoded if isinstance(decoded, list) else [decoded]
        for message in messages:
            assert not isinstance(message, Exception), message
            if isinstance(message, ResultResponse):
                requester = "server" if sender == "client" else "client"
                method, task = pending.pop((requester, message.id))
                result = codec.decode_result(method, message.result, task=task)
                again = codec.decode_result(method, codec.encode(result), task=task)
                assert again == result
                counts["results"] += 1
            elif isinstance(message, ErrorResponse):
                requester = "server" if sender == "client" else "client"
                pending.pop((requester, message.id), None)
                counts["errors"] += 1
            else:
                assert codec.decode(codec.encode(message)) == message
                if hasattr(message, "id"):
                    params = getattr(message, "params", msgspec.UNSET)
                    task = getattr(params, "task", msgspec.UNSET) is not msgspec.UNSET
                    pending[(sender, message.id)] = (message.method, task)
                    counts["requests"] += 1
                else:
                    counts["notifications"] += 1
    assert counts["requests"] > 0 and counts["results"] > 0
    assert sum(counts.values()) == sum(
        len(json.loads(d)) if d.startswith(b"[") else 1 for _, d in transcript.messages
    )
