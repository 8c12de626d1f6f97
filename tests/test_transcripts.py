"""Real traffic: sessions recorded with real MCP implementations decode completely.

Each transcript (``tests/fixtures/transcripts/<revision>/<scenario>.jsonl``, recorded by
``tests/fixtures/record_transcripts.py``) is read with the codec of its negotiated
revision: every message decodes, every result is typed by the method of the request it
answers, and re-encoding a decoded value decodes to the same value.

Real peers also send what their revision does not define. Where the codec rejects a
request, the real peer must have rejected it with the same error code; every other
rejection is an off-revision message listed in :data:`OFF_REVISION` with its reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest

import mcpspec
from mcpspec.runtime import ErrorResponse, InvalidMessage, ResultResponse

from .conftest import TRANSCRIPTS_DIR
from .transcript_kit import OFF_REVISION, UNANSWERED

TRANSCRIPTS = sorted(TRANSCRIPTS_DIR.glob("*/*.jsonl"))


@dataclass
class Transcript:
    name: str
    revision: str
    header: dict[str, Any]
    #: (sender, exact message bytes), in wire order.
    messages: list[tuple[str, bytes]] = field(default_factory=list)


def read_transcript(path: Path) -> Transcript:
    lines = path.read_bytes().splitlines()
    header = json.loads(lines[0])["header"]
    transcript = Transcript(f"{path.parent.name}/{path.stem}", header["revision"], header)
    for line in lines[1:]:
        sender = json.loads(line)["from"]
        prefix = b'{"from":"' + sender.encode() + b'","message":'
        assert line.startswith(prefix) and line.endswith(b"}"), line[:80]
        transcript.messages.append((sender, line[len(prefix) : -1]))
    return transcript


def peer_answer(transcript: Transcript, index: int, request: dict[str, Any]) -> int | None:
    """The error code the other side answered ``request`` with (``None``: a result)."""
    sender = transcript.messages[index][0]
    for other, data in transcript.messages[index + 1 :]:
        reply = json.loads(data)
        if other != sender and reply.get("id") == request["id"] and "method" not in reply:
            code: int | None = reply.get("error", {}).get("code")
            return code
    raise AssertionError(f"no answer to {request}")


def test_transcripts_cover_every_revision() -> None:
    revisions = {read_transcript(p).revision for p in TRANSCRIPTS}
    assert revisions == set(mcpspec.REVISIONS)
    assert all(p.parent.name == read_transcript(p).revision for p in TRANSCRIPTS)


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_transcript_decodes_completely(path: Path) -> None:
    transcript = read_transcript(path)
    codec = mcpspec.codec(transcript.revision)
    pending: dict[tuple[str, Any], tuple[str, bool]] = {}  # (requester, id) -> method, task
    decoded_count = 0
    off_revision: set[tuple[str, str]] = set()
    rejected: set[tuple[str, Any]] = set()
    for index, (sender, data) in enumerate(transcript.messages):
        requester = "server" if sender == "client" else "client"
        try:
            message = codec.decode(data)
        except InvalidMessage as error:
            obj = json.loads(data)
            if "id" in obj and "method" in obj and error.code == -32601:
                assert peer_answer(transcript, index, obj) == -32601, error
                continue
            off_revision.add((transcript.name, error.path))
            if "id" in obj and "method" in obj:  # its answer cannot be typed either
                rejected.add((sender, obj["id"]))
            continue
        assert not isinstance(message, list)  # no recorded peer batches
        if isinstance(message, ResultResponse) and (requester, message.id) in rejected:
            continue
        if isinstance(message, ResultResponse):
            method, task = pending.pop((requester, message.id))
            try:
                result = codec.decode_result(method, message.result, task=task)
            except InvalidMessage as error:
                off_revision.add((transcript.name, error.path))
                continue
            assert codec.decode_result(method, codec.encode(result), task=task) == result
        elif isinstance(message, ErrorResponse):
            pending.pop((requester, message.id), None)
        else:
            assert codec.decode(codec.encode(message)) == message
            if hasattr(message, "id"):
                params = getattr(message, "params", msgspec.UNSET)
                task = getattr(params, "task", msgspec.UNSET) is not msgspec.UNSET
                pending[(sender, message.id)] = (message.method, task)
            elif message.method == "notifications/cancelled":
                # A cancelled request gets no response (a stdio listen stream is ended by
                # the server's own notification, which names the client's request).
                request_id = message.params.request_id
                pending.pop((sender, request_id), None) or pending.pop(
                    (requester, request_id), None
                )
        decoded_count += 1
    listed = {key for key in OFF_REVISION if key[0] == transcript.name}
    assert off_revision == listed
    assert decoded_count >= len(transcript.messages) - 4
    expected_unanswered = UNANSWERED.get(transcript.name, (set(), ""))[0]
    assert {method for method, _ in pending.values()} == expected_unanswered, pending
