"""``mcpspec validate``: judge recorded MCP traffic offline.

Two input formats are read, told apart by their first JSON line:

* a **transcript** (JSON Lines): an optional first line
  ``{"header": {"revision": "2025-06-18", "transport": "stdio", ...}}`` (every key
  optional; ``revision`` must be a revision this package knows), then one line per
  message, ``{"from": "client" | "server", "message": <the JSON-RPC message>}``, in wire
  order;
* a **plain log**: one JSON-RPC message per line, as a stdio session writes them, with no
  direction. The direction is inferred: the first message is the client's (its
  ``initialize`` or ``server/discover``); a request or notification whose method only the
  server sends in the revision is the server's, and one only the client sends is the
  client's; progress comes from the side that received the request holding the token, a
  cancellation from the side that sent the request it names; a response goes the other
  way of the open request it answers. ``ping`` and unknown methods count as the
  client's: where that is wrong, write a transcript instead.

The negotiated revision is the header's (an initialize exchange that settled another is
an error of the file), else the one the ``initialize`` exchange settled (its result's
``protocolVersion``), else the ``_meta`` protocol version of the first 2026-07-28
request.

Every message is replayed through the session of the side that sent it (so that each
side's session knows what it sent and can type the answers) and its recorded bytes are
fed to the session of the side that receives it, which judges it: a
:class:`~mcpspec.runtime.ServerSession` judges the client's messages, a
:class:`~mcpspec.runtime.ClientSession` the server's. Each rule broken becomes a finding
of the check :data:`~.rules.CHECK_OF_RULE` files it under, at ``line N: <JSON path>``,
saying which side broke which rule. Besides:

* a request for a method the negotiated revision lacks, refused by the recorded receiver
  as well, is the sender's ``schema.message`` failure when the method belongs to another
  revision (``ping`` in 2026-07-28, ``elicitation/create`` to a 2024-11-05 client: the
  sender mixes revisions), except the client's opening ``server/discover`` probe of a
  server of an older revision, which is how a 2026-07-28 client negotiates (noted in the
  negotiation finding); a method no revision has is no deviation (JSON-RPC lets a peer
  ask, and -32601 is the answer); a recorded receiver that refused either with another
  code than -32601 fails ``protocol.unknown-method``;
* a failed negotiation stops the replay (the recorded peers would have hung up);
* a request still unanswered (and not cancelled) at the end of the file is a
  ``protocol.responses`` **warning** against the side that should have answered: a
  recording may stop early, and over Streamable HTTP a 2026-07-28 client cancels by
  closing the response stream, which a transcript cannot show.

Every check the replay judges and found clean gets one passed finding saying how many
messages it saw. A file that cannot be read (missing, not JSON Lines, a transcript line
without ``from``/``message``, a line longer than :data:`MAX_LINE_BYTES`) raises
:class:`TranscriptError` with the line at fault.
"""

from __future__ import annotations

import functools
import re
import time
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

import mcpspec
from mcpspec.runtime import (
    ClientSession,
    ErrorObject,
    ErrorResponse,
    Event,
    InvalidMessage,
    LocalProtocolError,
    NegotiationFailed,
    Outgoing,
    ProtocolViolation,
    RequestCancelled,
    RequestReceived,
    ResultResponse,
    Rule,
    ServerSession,
    SessionReady,
)
from mcpspec.runtime.errors import show
from mcpspec.runtime.session.version_negotiation import HANDSHAKE_REVISIONS, is_stateless

from .findings import Finding, Outcome, Report, RevisionReport, broken
from .json_path import named_path
from .rules import CHECK_OF_RULE

__all__ = [
    "JUDGED",
    "MAX_LINE_BYTES",
    "Entry",
    "Recording",
    "TranscriptError",
    "read_recording",
    "validate_file",
    "validate_files",
    "validate_recording",
]

Side = Literal["client", "server"]

#: The longest line read (bytes, newline excluded); a longer one is an error of the file.
MAX_LINE_BYTES: Final = 64 * 1024 * 1024
#: Every check a replay judges (the others need a live server).
JUDGED: Final = tuple(dict.fromkeys([*CHECK_OF_RULE.values(), "protocol.negotiation"]))

#: The start of a transcript line as writers lay it out, for messages no decoder can
#: take whole (the message runs from there to the line's closing brace).
_PLAIN_LINE: Final = re.compile(
    rb'\A\s*\{\s*"from"\s*:\s*"(client|server)"\s*,'
    rb'(?:\s*"(?:time|where)"\s*:\s*(?:[-+.0-9eE]+|"(?:[^"\\]|\\.)*")\s*,)*'
    rb'\s*"message"\s*:'
)
_OTHER: Final[dict[Side, Side]] = {"client": "server", "server": "client"}
_METHOD_NOT_FOUND: Final = -32601
#: What the sender's session may refuse to send: the receiver judges it anyway.
_UNSENDABLE = (LocalProtocolError, InvalidMessage, msgspec.MsgspecError, ValueError, TypeError)


class TranscriptError(Exception):
    """A file that is not a transcript or log this module reads; the message names the
    file and, where one is at fault, the line."""


@dataclass(frozen=True)
class Entry:
    """One recorded message: its line in the file, who sent it and its exact bytes."""

    line: int
    side: Side
    data: bytes


@dataclass
class Recording:
    """A file read: its header (empty for a plain log), its messages in wire order, and
    what could not be a message at all (plain logs: lines that are not JSON)."""

    path: str
    header: dict[str, Any]
    entries: list[Entry]
    revision: str
    kind: Literal["transcript", "log"]
    unreadable: list[Finding] = field(default_factory=list)


class _TranscriptLine(msgspec.Struct, forbid_unknown_fields=True):
    sender: Side = msgspec.field(name="from")
    message: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(b""))
    #: What ``mcpspec check --record`` adds: when and where the message was seen, and
    #: bytes that were no JSON, as text.
    time: float | None = None
    where: str | None = None
    raw: str | None = None


def _peek(data: bytes) -> Any:
    """``data`` as plain JSON values, or ``None`` when it is not JSON."""
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None


def _key(request_id: Any) -> bytes:
    """A hashable key for a JSON-RPC id (``1`` and ``"1"`` differ)."""
    try:
        return msgspec.json.encode(request_id)
    except (TypeError, msgspec.EncodeError, RecursionError):
        return b"?"


def _error_code(response: dict[str, Any]) -> int | None:
    """The code of an error response; ``None`` for a result, or a code not an integer."""
    error = response.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) else None


def _lines(path: Path) -> list[tuple[int, bytes]]:
    """The non-blank lines of ``path`` with their numbers; each at most MAX_LINE_BYTES."""
    out: list[tuple[int, bytes]] = []
    try:
        with path.open("rb") as stream:
            number = 0
            while True:
                line = stream.readline(MAX_LINE_BYTES + 2)
                if not line:
                    break
                number += 1
                if len(line.rstrip(b"\r\n")) > MAX_LINE_BYTES:
                    raise TranscriptError(
                        f"{path}: line {number} is longer than {MAX_LINE_BYTES} bytes"
                    )
                if line.strip():
                    out.append((number, line.rstrip(b"\r\n")))
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return out


def read_recording(path: str | Path) -> Recording:
    """Read a transcript or plain log (see the module docstring); :class:`TranscriptError`
    when it is neither."""
    path = Path(path)
    lines = _lines(path)
    if not lines:
        raise TranscriptError(f"{path}: empty file, no messages to validate")
    first = next((v for _, d in lines if isinstance(v := _peek(d), dict)), None)
    if first is None:
        raise TranscriptError(
            f"{path}: no line is a JSON object: neither a transcript nor a log of JSON-RPC messages"
        )
    if "header" in first or "from" in first:
        header, entries, unreadable = _read_transcript(path, lines)
        recording = Recording(str(path), header, entries, "", "transcript", unreadable)
    else:
        recording = Recording(str(path), {}, [], "", "log")
    revision = recording.header.get("revision")
    if recording.kind == "log":
        bodies = [(n, d, _peek(d)) for n, d in lines]
        revision = _revision_of(path, [b for _, _, b in bodies if b is not None])
        recording.entries = _infer_directions(bodies, revision, recording.unreadable)
    else:
        bodies_of = [_peek(e.data) for e in recording.entries]
        if revision is None:
            revision = _revision_of(path, bodies_of)
        else:
            try:
                settled, how = _settled(path, bodies_of)
            except TranscriptError:
                settled, how = revision, "header"
            if how == "answer" and settled != revision:
                raise TranscriptError(
                    f"{path}: the header names revision {revision}, but the initialize "
                    f"exchange settled {settled}"
                )
    recording.revision = revision
    if not recording.entries:
        raise TranscriptError(f"{path}: no messages to validate")
    return recording


def _read_transcript(
    path: Path, lines: list[tuple[int, bytes]]
) -> tuple[dict[str, Any], list[Entry], list[Finding]]:
    header: dict[str, Any] = {}
    entries: list[Entry] = []
    unreadable: list[Finding] = []
    decoder = msgspec.json.Decoder(_TranscriptLine)
    for index, (number, data) in enumerate(lines):
        if index == 0:
            obj = _peek(data)
            if isinstance(obj, dict) and "header" in obj:
                header = obj["header"]
                if not isinstance(header, dict):
                    raise TranscriptError(f"{path}: line {number}: the header is not an object")
                revision = header.get("revision")
                if revision is not None and revision not in mcpspec.REVISIONS:
                    raise TranscriptError(
                        f"{path}: line {number}: unknown revision {revision!r} in the header "
                        f"(known: {', '.join(mcpspec.REVISIONS)})"
                    )
                continue
        try:
            line = decoder.decode(data)
        except (msgspec.DecodeError, RecursionError) as exc:
            # A message nested beyond what a decoder takes is the peer's fault, not the
            # file's: cut it out of the line as written, for the session to judge.
            match = _PLAIN_LINE.match(data)
            message = data[match.end() :].rstrip() if match is not None else b""
            if match is None or not message.endswith(b"}"):
                raise TranscriptError(
                    f'{path}: line {number}: not a transcript line {{"from": "client"|"server", '
                    f'"message": ...}}: {exc}'
                ) from None
            side: Side = "client" if match.group(1) == b"client" else "server"
            entries.append(Entry(number, side, message[:-1].strip()))
            continue
        if line.raw is not None and not bytes(line.message):
            # Bytes that were no JSON: the server's are a wire failure; the client's
            # (a checker's malformed-JSON probe) are not what is judged here.
            if line.sender == "server":
                where = f"line {number}" + (f" ({line.where})" if line.where else "")
                why = f"not a JSON-RPC message: {show(line.raw[:200])}"
                unreadable.append(broken("wire.message", where, why))
            continue
        if not bytes(line.message):
            raise TranscriptError(f'{path}: line {number}: no "message"')
        entries.append(Entry(number, line.sender, bytes(line.message)))
    return header, entries, unreadable


def _revision_of(path: Path, bodies: Iterable[Any]) -> str:
    """The revision an initialize exchange settled, else the first ``_meta`` version."""
    revision, _how = _settled(path, bodies)
    return revision


def _settled(path: Path, bodies: Iterable[Any]) -> tuple[str, str]:
    """The revision of the recording and how it is known: ``"answer"`` (the initialize
    result), ``"offer"`` (an initialize left unanswered) or ``"meta"`` (2026-07-28)."""
    initialize: Any = None
    offered: str | None = None
    meta_version: str | None = None
    for body in bodies:
        if not isinstance(body, dict):
            continue
        params = body.get("params")
        if body.get("method") == "initialize" and initialize is None and "id" in body:
            initialize = body["id"]
            if isinstance(params, dict) and isinstance(params.get("protocolVersion"), str):
                offered = params["protocolVersion"]
        elif initialize is not None and "method" not in body and body.get("id") == initialize:
            result = body.get("result")
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            if version in mcpspec.REVISIONS:
                return str(version), "answer"
        elif meta_version is None and isinstance(params, dict):
            meta = params.get("_meta")
            version = (
                meta.get("io.modelcontextprotocol/protocolVersion")
                if isinstance(meta, dict)
                else None
            )
            if version in mcpspec.REVISIONS:
                meta_version = str(version)
    if offered in mcpspec.REVISIONS:
        return str(offered), "offer"
    if meta_version is not None and initialize is None:
        return meta_version, "meta"
    raise TranscriptError(
        f"{path}: cannot tell the negotiated revision (no initialize answered with a known "
        'protocolVersion, no request _meta naming one): add a {"header": {"revision": ...}} '
        "line"
    )


def _infer_directions(
    bodies: Sequence[tuple[int, bytes, Any]], revision: str, unreadable: list[Finding]
) -> list[Entry]:
    """The sender of each message of a plain log (see the module docstring)."""
    only_server, only_client = _directions()
    guess = _Guess(only_server, only_client)
    entries: list[Entry] = []
    for number, data, body in bodies:
        if body is None:
            unreadable.append(
                broken(
                    "wire.message",
                    f"line {number}",
                    f"not JSON (sender unknown in a plain log): {data[:80]!r}",
                    revision,
                )
            )
            continue
        members = body if isinstance(body, list) else [body]
        first = next((m for m in members if isinstance(m, dict)), None)
        side: Side = "client" if not entries or first is None else guess.sender(first)
        for member in members:
            if isinstance(member, dict):
                guess.record(side, member)
        entries.append(Entry(number, side, data))
    return entries


@functools.cache
def _directions() -> tuple[frozenset[str], frozenset[str]]:
    """Methods only servers send, and methods only clients send, in any revision."""
    server: set[str] = set()
    client: set[str] = set()
    for name in mcpspec.REVISIONS:
        codec = mcpspec.codec(name)
        server.update(codec.server_requests, codec.server_notifications)
        client.update(codec.client_requests, codec.client_notifications)
    return frozenset(server - client), frozenset(client - server)


class _Guess:
    """What a plain log showed so far, to tell who sent the next message."""

    def __init__(self, only_server: frozenset[str], only_client: frozenset[str]) -> None:
        self.only_server = only_server
        self.only_client = only_client
        #: Open requests: id key -> the sides that sent one with it, newest last.
        self.open_ids: dict[bytes, list[Side]] = {}
        #: Progress token key -> the side that asked for progress with it.
        self.tokens: dict[bytes, Side] = {}
        #: The side that received the newest task-augmented request.
        self.task_holder: Side = "server"

    def record(self, side: Side, body: dict[str, Any]) -> None:
        if "method" in body and "id" in body:
            self.open_ids.setdefault(_key(body["id"]), []).append(side)
            params = body.get("params")
            if isinstance(params, dict):
                meta = params.get("_meta")
                if isinstance(meta, dict) and "progressToken" in meta:
                    self.tokens[_key(meta["progressToken"])] = side
                if "task" in params:
                    self.task_holder = _OTHER[side]
        elif "method" not in body:
            sides = self.open_ids.get(_key(body.get("id")))
            if sides and _OTHER[side] in sides:
                sides.remove(_OTHER[side])

    def sender(self, body: dict[str, Any]) -> Side:
        method = body.get("method")
        params = body.get("params")
        params = params if isinstance(params, dict) else {}
        if "method" not in body:  # a response: the other way of the open request it answers
            sides = self.open_ids.get(_key(body.get("id")))
            return _OTHER[sides[-1]] if sides else "server"
        if not isinstance(method, str):
            return "client"
        if method in self.only_server:
            return "server"
        if method in self.only_client:
            return "client"
        if method == "notifications/progress":
            asked = self.tokens.get(_key(params.get("progressToken")))
            return _OTHER[asked] if asked else "server"
        if method == "notifications/cancelled":
            sides = self.open_ids.get(_key(params.get("requestId")))
            return sides[-1] if sides else "client"
        if method == "notifications/tasks/status":
            return self.task_holder
        return "client"


# -- replay -------------------------------------------------------------------------------


class _Replay:
    """Both sessions of one recording, and what each side sent and received."""

    def __init__(self, recording: Recording, report: RevisionReport) -> None:
        self.recording = recording
        self.report = report
        revision = recording.revision
        self.revision = revision
        stateless = is_stateless(revision)
        # The client accepts whatever handshake answer the recorded server gave; the
        # server speaks exactly the recorded revision, as the recorded server did.
        self.client = ClientSession(mode=revision) if stateless else ClientSession(mode="legacy")
        self.server = ServerSession([revision])
        self.sessions: dict[Side, Any] = {"client": self.client, "server": self.server}
        #: Messages a session produced itself (Outgoing), not yet seen recorded.
        self.produced: dict[Side, deque[Any]] = {"client": deque(), "server": deque()}
        #: Requests each side received and accepted: id key -> typed request.
        self.received: dict[Side, dict[bytes, Any]] = {"client": {}, "server": {}}
        #: Ids of requests each side sent that its session could not send.
        self.unsendable: dict[Side, set[bytes]] = {"client": set(), "server": set()}
        #: Requests each side's session refused: id key -> the violation.
        self.refused: dict[Side, dict[bytes, ProtocolViolation]] = {"client": {}, "server": {}}
        #: Line of the newest request each side sent with an id, and its method.
        self.requests: dict[Side, dict[bytes, tuple[int, str]]] = {"client": {}, "server": {}}
        #: Where the responses of each side are: (side, id key) -> entry indexes.
        self.answers: dict[tuple[Side, bytes], list[int]] = {}
        #: The error code of each response: (entry index, id key) -> the code (``None``
        #: for a result, or a code that is no integer).
        self.error_codes: dict[tuple[int, bytes], int | None] = {}
        self.ready: str | None = None
        #: The line where negotiation failed (nothing after it is judged).
        self.failed_negotiation = 0
        self.initialize_line: int | None = None
        self.probe_note = ""
        self.probe_line = 0
        self.seen = 0
        #: Requests for methods no revision has, refused by both sides.
        self.unknown_refused = 0
        for index, entry in enumerate(recording.entries):
            body = _peek(entry.data)
            for member in body if isinstance(body, list) else [body]:
                if isinstance(member, dict) and "method" not in member:
                    key = _key(member.get("id"))
                    self.answers.setdefault((entry.side, key), []).append(index)
                    self.error_codes.setdefault((index, key), _error_code(member))

    def finding(self, check: str, line: int, path: str, why: str) -> None:
        self.report.add(broken(check, f"line {line}: {path}", why, self.revision))

    def run(self) -> None:
        for index, entry in enumerate(self.recording.entries):
            self.step(index, entry)
            if self.failed_negotiation:
                break
        self.finish()

    def step(self, index: int, entry: Entry) -> None:
        side, other = entry.side, _OTHER[entry.side]
        body = _peek(entry.data)
        self.seen += 1
        if isinstance(body, dict) and body.get("method") == "initialize":
            self.initialize_line = self.initialize_line or entry.line
        members = body if isinstance(body, list) else [body]
        for member in members:
            produced = self.produced[side]
            if produced and _same(produced[0], member):
                produced.popleft()  # the session already sent it on its own
            elif isinstance(member, dict):
                self.send(side, member, entry.line)
        if (
            isinstance(body, dict)
            and "method" not in body
            and _key(body.get("id")) in self.unsendable[other]
        ):
            return  # the answer to a request the other side's session never sent
        events = self.sessions[other].receive(entry.data)
        self.judge(index, entry, body, events)

    def send(self, side: Side, body: dict[str, Any], line: int) -> None:
        session = self.sessions[side]
        data = msgspec.json.encode(body)
        if "method" in body:
            key = _key(body.get("id"))
            if "id" in body:
                self.requests[side][key] = (line, str(body["method"]))
            try:
                message = self._decode_request(session, body, data)
                if isinstance(message, list):
                    raise TypeError("a batch inside a batch")
                session.send(message)
            except _UNSENDABLE:
                if "id" in body:
                    self.unsendable[side].add(key)
            return
        key = _key(body.get("id"))
        refused = self.refused[side].pop(key, None)
        try:
            if refused is not None:
                # This side's session refused the request: its own answer replaces the
                # recorded one, which keeps its table of open requests in step.
                assert refused.response is not None
                session.send(refused.response)
            elif "error" in body:
                session.send(msgspec.convert(body, ErrorResponse))
            else:
                request = self.received[side].get(key)
                if request is None:
                    return  # it never received that request: the receiver judges
                self._send_result(session, request, body.get("result"))
        except _UNSENDABLE:
            pass  # what this side could not send, the other side's session judges

    def _send_result(self, session: Any, request: Any, result: Any) -> None:
        """Send the recorded result of ``request``; one its session cannot send (the
        receiver judges it) is replaced by a stand-in, so that the session's state goes
        on as the recorded peer's did."""
        params = getattr(request, "params", None)
        task = getattr(params, "task", msgspec.UNSET) is not msgspec.UNSET
        try:
            typed = session.codec.decode_result(
                request.method,
                msgspec.json.encode(result),
                task=task and request.method in session.codec.task_results,
            )
            session.send(ResultResponse(id=request.id, result=typed))
            return
        except _UNSENDABLE:
            pass
        stand_in: ResultResponse | ErrorResponse
        if request.method == "initialize":
            stand_in = ResultResponse(id=request.id, result=session.initialize_result())
        elif request.method == "server/discover":
            stand_in = ResultResponse(id=request.id, result=session.discover_result())
        else:
            error = ErrorObject(code=-32603, message="the recorded result is not valid")
            stand_in = ErrorResponse(id=request.id, error=error)
        session.send(stand_in)

    def _decode_request(self, session: Any, body: dict[str, Any], data: bytes) -> Any:
        if body.get("method") != "initialize" or is_stateless(self.revision):
            return session.codec.decode(data)
        # An initialize is a value of the revision it offers; an offer this package does
        # not know is taken as the negotiated revision's (the server answered with it).
        params = body.get("params")
        offered = params.get("protocolVersion") if isinstance(params, dict) else None
        if offered in HANDSHAKE_REVISIONS:
            return mcpspec.codec(offered).decode(data)
        message: Any = mcpspec.codec(self.revision).decode(data)
        return msgspec.structs.replace(
            message,
            params=msgspec.structs.replace(message.params, protocol_version=self.revision),
        )

    def judge(self, index: int, entry: Entry, body: Any, events: list[Event]) -> None:
        side, receiver = entry.side, _OTHER[entry.side]
        for event in events:
            if isinstance(event, ProtocolViolation):
                self.violation(index, entry, body, event)
                if event.response is not None and event.request_id is not None:
                    self.refused[receiver][_key(event.request_id)] = event
            elif isinstance(event, RequestReceived):
                self.received[receiver][_key(event.request_id)] = event.request
            elif isinstance(event, Outgoing):
                self.produced[receiver].append(_peek(event.data))
            elif isinstance(event, SessionReady) and receiver == "client":
                self.ready = event.revision
            elif isinstance(event, NegotiationFailed):
                self.failed_negotiation = entry.line
                if not any(isinstance(e, ProtocolViolation) for e in events):
                    self.finding(
                        "protocol.negotiation",
                        entry.line,
                        "$.result",
                        f"{side} broke {event.rule.value}: {event.reason}",
                    )
            elif isinstance(event, RequestCancelled) and event.active:
                self.requests[_OTHER[side]].pop(_key(event.request_id), None)

    def violation(self, index: int, entry: Entry, body: Any, event: ProtocolViolation) -> None:
        side, receiver = entry.side, _OTHER[entry.side]
        if event.rule is Rule.METHOD_NOT_FOUND and event.response is not None:
            code = self.recorded_error(index, receiver, event.request_id)
            if code is not None and code != _METHOD_NOT_FOUND:
                self.finding(
                    "protocol.unknown-method",
                    self.answer_line(index, receiver, event.request_id),
                    "$.error.code",
                    f"{receiver} answered {event.method} (a method {self.revision} does not "
                    f"have) with {code}, not -32601",
                )
            if (
                side == "client"
                and event.method == "server/discover"
                and self.initialize_line is None
                and self.ready is None
                and code is not None
            ):
                self.probe_note = (
                    f"; the client's server/discover probe was refused with {code} and the "
                    "client fell back to initialize"
                )
                self.probe_line = entry.line
                return
            if event.method not in _known_methods() and code is not None:
                # JSON-RPC lets a peer ask for any method: answering -32601 is the rule.
                self.unknown_refused += 1
                return
        check = CHECK_OF_RULE.get(event.rule, "protocol.responses")
        reason = f": {event.reason}" if event.reason else ""
        path = named_path(entry.data, event.path, event.reason)
        self.finding(check, entry.line, path, f"{side} broke {event.rule.value}{reason}")

    def recorded_error(self, index: int, side: Side, request_id: Any) -> int | None:
        """The error code ``side`` answered ``request_id`` with after entry ``index``
        (``None``: a result, or no answer)."""
        at = self._answer_index(index, side, request_id)
        return None if at is None else self.error_codes.get((at, _key(request_id)))

    def answer_line(self, index: int, side: Side, request_id: Any) -> int:
        at = self._answer_index(index, side, request_id)
        return self.recording.entries[index if at is None else at].line

    def _answer_index(self, index: int, side: Side, request_id: Any) -> int | None:
        found = self.answers.get((side, _key(request_id)), [])
        at = bisect_right(found, index)
        return found[at] if at < len(found) else None

    def finish(self) -> None:
        negotiated = self.ready == self.revision or is_stateless(self.revision)
        self.report.accepted = negotiated and not self.failed_negotiation
        if self.failed_negotiation:
            # The recorded peers would have hung up: what follows is not judged.
            self.report.stopped = (
                f"negotiation failed at line {self.failed_negotiation}; nothing after it is judged"
            )
            return
        if not negotiated:
            self.report.stopped = (
                f"the recording never completes the {self.revision} initialize exchange"
            )
        self.unanswered()
        problems = {f.check for f in self.report.findings if f.problem}
        judged = [*JUDGED, "protocol.unknown-method"] if self.unknown_refused else JUDGED
        for check in judged:
            if check in problems or (check == "protocol.negotiation" and not negotiated):
                continue
            where, why = "", f"{self.seen} messages"
            if check == "protocol.negotiation":
                how = (
                    f"initialize at line {self.initialize_line}"
                    if self.initialize_line
                    else "per request _meta"
                )
                why = f"negotiated {self.revision} ({how}){self.probe_note}"
                where = f"line {self.probe_line}" if self.probe_line else ""
            elif check == "protocol.unknown-method":
                why = f"requests for unknown methods answered -32601: {self.unknown_refused}"
            self.report.add(Finding(check, Outcome.PASSED, where, why, self.revision))

    def unanswered(self) -> None:
        """A warning for each request still open at the end of the recording."""
        for requester in ("client", "server"):
            session = self.sessions[requester]
            answerer = _OTHER[requester]
            # Ids of one batch may be an int and a str, which do not compare: integers
            # first, then strings (the set of outstanding ids has no order of its own).
            open_requests = sorted(
                (
                    (*self.requests[requester].get(_key(request_id), (0, "?")), request_id)
                    for request_id in session.outstanding
                ),
                key=lambda entry: (entry[0], entry[1], *_id_order(entry[2])),
            )
            for line, method, request_id in open_requests:
                self.report.add(
                    Finding(
                        "protocol.responses",
                        Outcome.WARNING,
                        f"line {line}: $.id",
                        f"{answerer} never answered {method} (id {request_id!r}), and "
                        f"{requester} did not cancel it, up to the end of the recording",
                        self.revision,
                    )
                )


@functools.cache
def _known_methods() -> frozenset[str]:
    """Every method of every revision this package knows."""
    methods: set[str] = set()
    for revision in mcpspec.REVISIONS:
        codec = mcpspec.codec(revision)
        methods.update(codec.requests, codec.notifications)
    return frozenset(methods)


def _same(produced: Any, recorded: Any) -> bool:
    return (
        isinstance(produced, dict)
        and isinstance(recorded, dict)
        and produced.get("method") == recorded.get("method")
        and ("id" not in recorded or produced.get("id") == recorded.get("id"))
    )


def validate_recording(recording: Recording) -> RevisionReport:
    """Replay ``recording`` through both sessions: every finding of its revision."""
    report = RevisionReport(recording.revision, source=recording.path)
    for finding in recording.unreadable:
        report.add(finding)
    if not is_stateless(recording.revision) and not any(
        b"initialize" in e.data and _is_initialize(e.data) for e in recording.entries
    ):
        report.accepted = False
        report.stopped = (
            f"no initialize in the recording: a {recording.revision} session cannot be "
            "judged without its opening"
        )
        return report
    _Replay(recording, report).run()
    return report


def _is_initialize(data: bytes) -> bool:
    body = _peek(data)
    return isinstance(body, dict) and body.get("method") == "initialize"


def validate_file(path: str | Path) -> RevisionReport:
    """Read and judge one transcript or plain log; :class:`TranscriptError` when the
    file cannot be read as one."""
    return validate_recording(read_recording(path))


def validate_files(paths: Iterable[str | Path]) -> Report:
    """Judge every file: one :class:`RevisionReport` each, in order."""
    paths = list(paths)
    report = Report(", ".join(str(p) for p in paths), command="validate")
    started = time.perf_counter()
    for path in paths:
        began = time.perf_counter()
        section = validate_file(path)
        section.seconds = time.perf_counter() - began
        report.revisions.append(section)
    report.seconds = time.perf_counter() - started
    return report


def _id_order(request_id: Any) -> tuple[bool, int, str]:
    """A sort key for request ids of either type: integers first, then strings."""
    if isinstance(request_id, int):
        return False, request_id, ""
    return True, 0, str(request_id)
