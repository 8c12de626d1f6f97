"""Replays of real traffic (``tests/fixtures/transcripts``) through both sessions.

Each transcript is one connection between real MCP implementations. Every recorded
message is sent through the session of the side that sent it (typed with that side's
codec) and the recorded bytes are fed to the other side's session. No violation may be
reported, with one principled exception: a request the receiving session refuses is
accepted when the real receiver refused it too, with the same JSON-RPC error code (the
SDK client sends ``ping`` in 2026-07-28, which that revision removed; the SDK server
sends ``elicitation/create`` to a 2024-11-05 client; an ``auto`` client probes
``server/discover`` on a server without it). Such a request cannot be sent through the
typed API of the sender's revision at all, so the sender's session never records it.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import msgspec
import pytest

import mcpspec
from mcpspec.runtime import (
    ClientSession,
    ErrorReceived,
    ErrorResponse,
    Event,
    InvalidMessage,
    Outgoing,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    ResultResponse,
    ServerSession,
    SessionReady,
)

TRANSCRIPTS = Path(__file__).parent / "fixtures" / "transcripts"
FILES = sorted(TRANSCRIPTS.glob("*/*.jsonl"))
HANDSHAKE = [r for r in mcpspec.REVISIONS if r < "2026-07-28"]


class Line(msgspec.Struct):
    sender: str = msgspec.field(name="from")
    message: msgspec.Raw


class Header(msgspec.Struct):
    header: dict[str, Any]


def _load(path: Path) -> tuple[dict[str, Any], list[Line]]:
    raw = path.read_bytes().splitlines()
    header = msgspec.json.decode(raw[0], type=Header).header
    return header, [msgspec.json.decode(line, type=Line) for line in raw[1:] if line.strip()]


def _peek(data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.json.decode(data)
    return out


class Replay:
    """Both sessions of one transcript, and what the test knows about each side."""

    def __init__(
        self,
        header: dict[str, Any],
        scenario: str,
        lines: list[Line],
        known: set[tuple[int, str, str, str]],
    ) -> None:
        revision = header["revision"]
        self.lines = lines
        self.known = known
        if scenario.endswith("-auto"):
            # The session builds its own initialize: give it the recorded client's identity.
            init = next(
                _peek(bytes(line.message))["params"]
                for line in lines
                if _peek(bytes(line.message)).get("method") == "initialize"
            )
            self.client = ClientSession(
                mode="auto", capabilities=init["capabilities"], info=init["clientInfo"]
            )
            self.server = ServerSession(HANDSHAKE)  # the reference server has no 2026-07-28
        else:
            self.client = ClientSession(mode=revision)
            self.server = ServerSession()
        self.sessions = {"client": self.client, "server": self.server}
        #: Messages a session produced itself (start(), Outgoing), not yet seen recorded.
        self.produced: dict[str, deque[dict[str, Any]]] = {"client": deque(), "server": deque()}
        #: Requests each side received: id -> request (to type the answers).
        self.received: dict[str, dict[Any, Any]] = {"client": {}, "server": {}}
        #: Ids of requests each side could not send (not in its revision).
        self.unsendable: dict[str, set[Any]] = {"client": set(), "server": set()}
        #: Requests each side refused: id -> the violation (its answer replaces the recorded).
        self.refused: dict[str, dict[Any, ProtocolViolation]] = {"client": {}, "server": {}}
        #: Violations seen, as (line number, receiving side, rule).
        self.violations: list[tuple[int, str, str, str]] = []
        self.events: dict[str, list[Event]] = {"client": [], "server": []}
        if scenario.endswith("-auto"):
            self.produced["client"].append(_peek(self.client.start()))

    def run(self) -> None:
        for index, line in enumerate(self.lines):
            self.step(index, line.sender, bytes(line.message))

    def step(self, index: int, side: str, data: bytes) -> None:
        other = "server" if side == "client" else "client"
        sender, receiver = self.sessions[side], self.sessions[other]
        body = _peek(data)
        produced = self.produced[side]
        if produced and _same(produced[0], body):
            produced.popleft()  # the session already sent it on its own
        else:
            self.send(side, sender, data, body)
        if "method" not in body and body.get("id") in self.unsendable[other]:
            return  # an answer to a request the other side never sent
        events = receiver.receive(data)
        self.events[other].extend(events)
        self.check(index, other, body, events)

    def send(self, side: str, session: Any, data: bytes, body: dict[str, Any]) -> None:
        if "method" in body:
            try:
                message = session.codec.decode(data)
            except InvalidMessage:
                # Not a message of this revision: the typed API cannot send it.
                assert "id" in body, f"{side} sent an unknown notification: {body}"
                self.unsendable[side].add(body["id"])
                return
            session.send(message)  # a progress token is in params._meta, as recorded
            return
        request_id = body["id"]
        refused = self.refused[side].pop(request_id, None)
        if refused is not None:
            # This side refused the request: its own answer replaces the recorded one.
            assert refused.response is not None
            session.send(refused.response)
            return
        if "error" in body:
            session.send(msgspec.convert(body, ErrorResponse))
            return
        request = self.received[side].get(request_id)
        assert request is not None, f"{side} answers {request_id!r}, which it never received"
        task = getattr(getattr(request, "params", None), "task", msgspec.UNSET) is not msgspec.UNSET
        try:
            result = session.codec.decode_result(
                request.method,
                msgspec.json.encode(body["result"]),
                task=task and request.method in session.codec.task_results,
            )
        except InvalidMessage:
            return  # not a result of this revision: the typed API cannot send it
        out = session.send(ResultResponse(id=request_id, result=result))
        assert out, f"{side}'s answer to {request_id!r} was dropped"

    def check(self, index: int, side: str, body: dict[str, Any], events: list[Event]) -> None:
        where = f"line {index + 2} to the {side}: {str(body)[:300]}"
        for event in events:
            if isinstance(event, ProtocolViolation):
                self.violations.append((index + 2, side, event.rule.value, event.path))
                answer = self.recorded_answer(index, side, body.get("id"))
                known = (index + 2, side, event.rule.value, event.path) in self.known
                assert known or (answer is not None and answer == event.error.code), (
                    f"violation {event.rule.value} ({event.reason}) at {where}; the real "
                    f"{side} answered {answer}"
                )
                if event.response is not None:
                    self.refused[side][body["id"]] = event
            elif isinstance(event, RequestReceived):
                self.received[side][event.request_id] = event.request
            elif isinstance(event, Outgoing):
                self.produced[side].append(_peek(event.data))
        if not events:
            # Only what crossed a cancellation may vanish.
            assert "method" not in body or body["method"] in (
                "notifications/progress",
                "notifications/message",
            ), f"no event for {where}"

    def recorded_answer(self, index: int, side: str, request_id: Any) -> int | None:
        """The error code the real ``side`` answered request ``request_id`` with."""
        if request_id is None:
            return None
        for line in self.lines[index + 1 :]:
            if line.sender != side:
                continue
            body = _peek(bytes(line.message))
            if "method" not in body and body.get("id") == request_id:
                error = body.get("error")
                return error.get("code") if isinstance(error, dict) else None
        return None


def _same(produced: dict[str, Any], recorded: dict[str, Any]) -> bool:
    return produced.get("method") == recorded.get("method") and (
        "id" not in recorded or produced.get("id") == recorded.get("id")
    )


#: Messages of real peers that are not messages of the negotiated revision, by
#: transcript: (line number, receiving side, rule, JSON path). Each is a defect of the
#: recorded peer (content of a newer revision sent to an older client) that the session
#: rightly reports; the test checks each one happens exactly there.
KNOWN_DEVIATIONS: dict[str, set[tuple[int, str, str, str]]] = {
    # server-everything answers tools/call with a resource_link block (2025-06-18+).
    "2024-11-05/everything": {(32, "client", "invalid-result", "$.result.content[1].type")},
    "2025-03-26/everything": {(32, "client", "invalid-result", "$.result.content[1].type")},
    # server-everything elicits with multi-select enums, then in URL mode (2025-11-25+).
    "2025-06-18/everything": {
        (47, "client", "invalid-params", "$.params.requestedSchema.properties[...].type"),
        (51, "client", "invalid-params", "$.params"),
    },
}


def test_transcripts_exist() -> None:
    revisions = {path.parent.name for path in FILES}
    assert revisions == set(mcpspec.REVISIONS), f"transcripts cover {sorted(revisions)}"


def _unanswered(lines: list[Line]) -> set[Any]:
    """Ids of the client's requests the transcript never answers nor cancels."""
    sent: set[Any] = set()
    for line in lines:
        body = _peek(bytes(line.message))
        if line.sender == "client" and "method" in body and "id" in body:
            sent.add(body["id"])
        elif line.sender == "server" and "method" not in body:
            sent.discard(body.get("id"))
        elif body.get("method") == "notifications/cancelled":
            sent.discard(body["params"]["requestId"])
    return sent


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_transcript_replays_without_violation(path: Path) -> None:
    header, lines = _load(path)
    known = KNOWN_DEVIATIONS.get(f"{path.parent.name}/{path.stem}", set())
    replay = Replay(header, path.stem, lines, known)
    replay.run()
    client_ready = [e for e in replay.events["client"] if isinstance(e, SessionReady)]
    assert [e.revision for e in client_ready] == [header["revision"]]
    assert replay.client.revision == replay.server.revision == header["revision"]
    # Every listed deviation of the real peers happened, exactly where listed; every other
    # refusal is a method the revision does not have, refused by the real peer as well.
    assert known <= set(replay.violations)
    assert {v[2] for v in set(replay.violations) - known} <= {"method-not-found"}
    # What the client still waits for is what the transcript never answered: the
    # requests the real peers dropped, and those whose HTTP stream the client closed.
    unsent = replay.unsendable["client"]
    assert replay.client.outstanding == _unanswered(lines) - unsent - set(
        e.request_id
        for e in replay.events["client"]
        if isinstance(e, (ResponseReceived, ErrorReceived))
    )
