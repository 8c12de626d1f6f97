"""One connection to the server under check, seen through a client session.

The checker speaks as a client of one revision. Its requests go out through a
:class:`~mcpspec.runtime.ClientSession`, so the session knows every pending id, token
and capability, and every message the server writes is fed to that session's
``receive``: a rule the server breaks comes back as a
:class:`~mcpspec.runtime.ProtocolViolation`, which :data:`~.rules.CHECK_OF_RULE` files
under a check. What the session cannot see is judged here: bytes that are not JSON (the
wire check), and the answers to *raw* probes, messages the checker writes past the
session on purpose (a request before ``initialize``, malformed JSON, an unknown method),
whose answers it reads as plain JSON before the session would call them unknown.

The conversation answers what the server asks (``ping``, ``roots/list``, sampling,
elicitation) as a plain client would, so that a server is never stuck waiting on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

import anyio
import anyio.abc
import msgspec

from mcpspec.runtime import (
    ClientSession,
    ErrorObject,
    ErrorReceived,
    ErrorResponse,
    Event,
    NegotiationFailed,
    NotificationReceived,
    Outgoing,
    ProgressReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    ResultResponse,
    SessionReady,
)
from mcpspec.runtime.envelope import is_id
from mcpspec.runtime.errors import clip, show
from mcpspec.runtime.extensions import TASKS

from .errors import LinkClosed
from .findings import Finding, Outcome, RevisionReport, broken
from .json_path import NOWHERE, named_path, value_at
from .link import Link, Received
from .rules import CHECK_OF_RULE

__all__ = ["Conversation", "Reply", "value_at"]

#: How the checker introduces itself.
CLIENT_INFO = {"name": "mcpspec-check", "version": "1"}
#: A request reporting progress is waited for at most this many timeouts in all.
MAX_WAIT_TIMEOUTS: Final = 10
#: What the checker declares: everything a server may use, so that it uses it.
CLIENT_CAPABILITIES: dict[str, Any] = {
    "roots": {"listChanged": True},
    "sampling": {},
    "elicitation": {},
}

ReplyKind = Literal["result", "error", "refused", "failed", "timeout", "closed"]


@dataclass
class Reply:
    """What became of one request: a ``result`` (typed, for requests sent through the
    session; the JSON object, for raw ones), an ``error`` (an ``ErrorObject``, or the
    JSON object), ``refused`` (the answer broke a rule: the finding is already filed),
    ``failed`` (negotiation failed: ``value`` is the ``NegotiationFailed`` event),
    ``timeout`` or ``closed`` (the connection ended first)."""

    kind: ReplyKind
    value: Any = None
    #: Where the answer was found.
    where: str = ""
    #: Whether the answer carried id null instead of the request's id.
    id_null: bool = False


@dataclass
class _Waiter:
    done: anyio.Event = field(default_factory=anyio.Event)
    reply: Reply | None = None
    #: Progress notifications seen for the request: each one extends the wait.
    progress: int = 0

    def settle(self, reply: Reply) -> None:
        if self.reply is None:
            self.reply = reply
            self.done.set()


class _Envelope(msgspec.Struct):
    """The members of a message the conversation routes on."""

    id: Any = msgspec.UNSET
    method: Any = msgspec.UNSET
    result: Any = msgspec.UNSET
    error: Any = msgspec.UNSET


_ENVELOPE = msgspec.json.Decoder(_Envelope)


class Conversation:
    """A client session of one revision over one :class:`~.link.Link`.

    Use as an async context manager: it reads the server's messages in the background
    while open. ``report`` gets every finding; ``timeout`` bounds each wait for an answer.
    """

    def __init__(
        self,
        link: Link,
        session: ClientSession,
        report: RevisionReport,
        *,
        timeout: float,
        on_finding: Callable[[Finding], None] | None = None,
    ) -> None:
        self.link = link
        self.session = session
        self.report = report
        self.timeout = timeout
        self._on_finding = on_finding
        self._waiters: dict[Any, _Waiter] = {}
        self._raw: dict[Any, _Waiter] = {}
        #: Raw probes whose answer carries id null (malformed JSON), oldest first.
        self._null_probes: list[_Waiter] = []
        self._raw_ids = 0
        #: Messages the server wrote, and how many of them decoded.
        self.seen = 0
        #: Progress notifications the server sent for the checker's requests.
        self.progress = 0
        #: Requests the checker cancelled -> (where, error code) of an error answering one.
        self.cancelled: dict[Any, tuple[str, Any] | None] = {}
        self.ready: SessionReady | None = None
        self.failed: NegotiationFailed | None = None
        self.closed = False
        #: The probe running now, named in the findings it causes.
        self.probe = ""
        #: Whether the message being taken is the body of an HTTP refusal.
        self._refusal = False
        #: What a request of the checker is about (``tool "add"``), by id: named in the
        #: findings its answer causes.
        self.subjects: dict[Any, str] = {}
        #: Raw requests in flight that declare the tasks extension (2026-07-28): only
        #: they may be answered with a task.
        self.declaring_tasks: set[Any] = set()
        self._task_group: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> Conversation:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._pump)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task_group is not None
        self._task_group.cancel_scope.cancel()
        await self._task_group.__aexit__(None, None, None)

    # -- findings -----------------------------------------------------------------------

    def file(self, finding: Finding) -> None:
        if self.report.add(finding) and self._on_finding is not None:
            self._on_finding(finding)

    def problem(self, check: str, where: str, why: str, *, subject: str = "") -> None:
        """File a broken rule (a failure or a warning, as the check's level says)."""
        finding = broken(check, where, why, self.report.revision)
        self.file(replace(finding, probe=self.probe, subject=subject))

    def passed(self, check: str, where: str, why: str) -> None:
        self.file(Finding(check, Outcome.PASSED, where, why, self.report.revision))

    def skipped(self, check: str, why: str, where: str = "") -> None:
        self.file(Finding(check, Outcome.SKIPPED, where, why, self.report.revision))

    def note(self, check: str, where: str, why: str) -> None:
        """File what a probe provoked on purpose, which the specification allows."""
        self.file(Finding(check, Outcome.NOTE, where, why, self.report.revision, probe=self.probe))

    # -- sending ------------------------------------------------------------------------

    async def _write(self, data: bytes) -> bool:
        if not data:
            return True
        try:
            await self.link.send(data)
        except LinkClosed:
            self._close()
            return False
        return True

    async def request(self, message: Any, *, progress_token: int | str | None = None) -> Reply:
        """Send a typed request through the session and wait for what becomes of it."""
        data = self.session.send(message, progress_token=progress_token)
        return await self._await(self._waiters, message.id, data)

    async def start(self) -> Reply:
        """Send the session's first message (``initialize`` or ``server/discover``)."""
        data = self.session.start()
        request_id = msgspec.json.decode(data, type=_Envelope).id
        return await self._await(self._waiters, request_id, data)

    async def notify(self, message: Any) -> None:
        """Send a typed notification through the session."""
        await self._write(self.session.send(message))

    def raw_id(self, name: str) -> str:
        """A fresh id for a raw probe, never one the session uses (those are integers)."""
        self._raw_ids += 1
        return f"mcpspec-check-{name}-{self._raw_ids}"

    async def raw_request(self, message: dict[str, Any]) -> Reply:
        """Send a JSON-RPC request past the session (its ``id`` made by :meth:`raw_id`)
        and wait for its answer, read as plain JSON."""
        return await self._await(self._raw, message["id"], msgspec.json.encode(message))

    async def raw_unreadable_later(self, data: bytes) -> _Waiter:
        """Send bytes the server cannot read (malformed JSON) and return at once; an
        answer with id null, if one comes, is in the waiter's ``reply`` (look after a
        :meth:`sync`)."""
        waiter = _Waiter()
        self._null_probes.append(waiter)
        await self._write(data)
        return waiter

    def forget(self, waiter: _Waiter) -> None:
        """Stop waiting for a raw probe's answer (its probe is judged and over)."""
        if waiter in self._null_probes:
            self._null_probes.remove(waiter)
        for request_id, raw in list(self._raw.items()):
            if raw is waiter:
                del self._raw[request_id]

    async def send_later(self, message: Any) -> None:
        """Send a typed request through the session without waiting for its answer."""
        await self._write(self.session.send(message))

    async def raw_later(self, message: dict[str, Any]) -> _Waiter:
        """Send a raw request and return at once; its answer, if one comes, is in the
        returned waiter's ``reply`` (look after a :meth:`sync`)."""
        waiter = self._raw[message["id"]] = _Waiter()
        await self._write(msgspec.json.encode(message))
        return waiter

    async def raw_send(self, data: bytes) -> None:
        """Write bytes past the session, expecting no answer (a raw notification)."""
        await self._write(data)

    async def _await(self, table: dict[Any, _Waiter], request_id: Any, data: bytes) -> Reply:
        waiter = table[request_id] = _Waiter()
        try:
            if not await self._write(data):
                waiter.settle(Reply("closed"))
            return await self._wait(waiter)
        finally:
            table.pop(request_id, None)

    async def _wait(self, waiter: _Waiter) -> Reply:
        """Wait for the answer; progress on the request restarts the clock (a long task
        that reports progress is working, not stuck), but only up to
        :data:`MAX_WAIT_TIMEOUTS` timeouts in all (progress forever must not hang us)."""
        deadline = anyio.current_time() + self.timeout * MAX_WAIT_TIMEOUTS
        while True:
            progress = waiter.progress
            left = deadline - anyio.current_time()
            with anyio.move_on_after(min(self.timeout, left)):
                await waiter.done.wait()
            if waiter.done.is_set() or waiter.progress == progress:
                break
            if anyio.current_time() >= deadline:
                break
        if waiter.reply is None:
            waiter.settle(Reply("closed" if self.closed else "timeout"))
        assert waiter.reply is not None
        return waiter.reply

    # -- receiving ----------------------------------------------------------------------

    async def _pump(self) -> None:
        try:
            while True:
                try:
                    received = await self.link.receive()
                except LinkClosed:
                    received = None
                if received is None:
                    break
                await self._take(received)
        finally:
            self._close()

    def _close(self) -> None:
        self.closed = True
        for waiter in (*self._waiters.values(), *self._raw.values(), *self._null_probes):
            waiter.settle(Reply("closed"))

    async def _take(self, received: Received) -> None:
        self.seen += 1
        data, where, refusal = received
        try:
            envelope = _ENVELOPE.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError):
            envelope = None
        if envelope is None:
            # Not a JSON object: the session says exactly what is wrong (not JSON, a
            # batch where none is allowed, ...); a line that is not JSON at all is named.
            if not _is_json(data):
                self.problem("wire.message", where, f"not a JSON-RPC message: {show(_text(data))}")
                return
        elif _is_response(envelope):
            if self.session.model == "stateless":
                self.unsolicited_task(envelope, where)
            if self._take_raw(envelope, where):
                return
            if (
                is_id(envelope.id)
                and envelope.id in self.cancelled
                and isinstance(envelope.error, dict)
            ):
                self.cancelled[envelope.id] = (where, envelope.error.get("code"))
            if self.session.model == "stateless":
                self._result_type(envelope, where)
        # The session takes an error without an id as the answer to its opening probe
        # (it gives it the probe's id): the id was dropped all the same.
        id_null = (
            envelope is not None and _is_response(envelope) and envelope.id in (None, msgspec.UNSET)
        )
        # An HTTP refusal's error without id is the transport refusing the HTTP request,
        # its JSON-RPC request unread (2025-11-25 says so of the 403 for a foreign
        # Origin): it settles the request, and no id was dropped.
        self._refusal = refusal
        try:
            await self._events(self.session.receive(data), where, data, id_null=id_null)
        finally:
            self._refusal = False

    def _result_type(self, envelope: _Envelope, where: str) -> None:
        result = envelope.result
        if isinstance(result, dict) and not isinstance(result.get("resultType"), str):
            self.problem(
                "protocol.result-type",
                f"{where}: $.result",
                "a 2026-07-28 result carries resultType (servers of this revision MUST include it)",
            )

    def unsolicited_task(self, envelope: _Envelope, where: str) -> None:
        """A result tagged ``"task"`` answers only a request declaring the extension."""
        result = envelope.result
        if not isinstance(result, dict) or result.get("resultType") != "task":
            return
        if is_id(envelope.id) and envelope.id in self.declaring_tasks:
            return
        declared = (self.session.peer_capabilities or {}).get("extensions")
        either = not (isinstance(declared, dict) and TASKS in declared)
        by = "by a server that does not declare it either " if either else ""
        self.problem(
            "protocol.tasks",
            f"{where}: $.result.resultType",
            f"request id {show(envelope.id)}, which did not declare {TASKS}, was answered "
            f'{by}with a task (resultType "task"): \'A server MUST NOT return CreateTaskResult '
            "to a client that did not include the extension capability on its request, "
            "regardless of prior declarations' (SEP-2663 tasks extension, Capability "
            "Negotiation)",
            subject=self.subjects.get(envelope.id, "") if is_id(envelope.id) else "",
        )

    def _take_raw(self, envelope: _Envelope, where: str) -> bool:
        """Settle a raw probe this response answers; whether it did."""
        request_id = envelope.id
        waiter = self._raw.get(request_id) if isinstance(request_id, str) else None
        if waiter is None and request_id is None and self._null_probes:
            waiter = self._null_probes.pop(0)
        if waiter is None:
            return False
        if envelope.error is not msgspec.UNSET:
            waiter.settle(Reply("error", envelope.error, where))
        else:
            waiter.settle(Reply("result", envelope.result, where))
        return True

    async def _events(
        self, events: list[Event], where: str, data: bytes, *, id_null: bool = False
    ) -> None:
        # Negotiation's outcome first: a waiter woken by the response sees it.
        for event in events:
            if isinstance(event, SessionReady):
                self.ready = event
            elif isinstance(event, NegotiationFailed):
                self.failed = event
        for event in events:
            if isinstance(event, ResponseReceived):
                self._settle(event.request_id, Reply("result", event.result, where))
            elif isinstance(event, ErrorReceived):
                self._error(event, where, id_null=id_null)
            elif isinstance(event, ProtocolViolation):
                await self._violation(event, where, data)
            elif isinstance(event, RequestReceived):
                await self._answer(event)
            elif isinstance(event, NotificationReceived | ProgressReceived):
                self._declared(event.notification, where)
                if isinstance(event, ProgressReceived):
                    self.progress += 1
                    waiter = self._waiters.get(event.request_id)
                    if waiter is not None:
                        waiter.progress += 1
            elif isinstance(event, Outgoing):
                await self._write(event.data)
            elif isinstance(event, NegotiationFailed):
                for waiter in list(self._waiters.values()):
                    waiter.settle(Reply("failed", event, where))

    def _settle(self, request_id: Any, reply: Reply) -> None:
        waiter = self._waiters.get(request_id)
        if waiter is not None:
            waiter.settle(reply)

    def _error(self, event: ErrorReceived, where: str, *, id_null: bool = False) -> None:
        if event.request_id is not None:
            if id_null:
                self._dropped_id(event.request_id, event.error, where)
            self._settle(event.request_id, Reply("error", event.error, where, id_null=id_null))
            return
        # An error with id null answers a message the server could not read. If one
        # request alone is outstanding, it is that request's answer with the id dropped:
        # a JSON-RPC response carries the id of the request it answers whenever it could
        # be read. With several outstanding (raw probes included) it answers one of
        # them, which one cannot be told: the rule is broken all the same.
        outstanding = [
            (request_id, waiter)
            for request_id, waiter in (*self._waiters.items(), *self._raw.items())
            if waiter.reply is None
        ]
        if len(outstanding) == 1:
            request_id, waiter = outstanding[0]
            self._dropped_id(request_id, event.error, where)
            # A raw probe reads its answer as plain JSON, a typed request as the session's.
            raw = request_id not in self._waiters
            error = msgspec.to_builtins(event.error) if raw else event.error
            waiter.settle(Reply("error", error, where, id_null=True))
        elif self._refusal:
            return
        elif outstanding:
            self.problem(
                "protocol.responses",
                where,
                f"an error with id null ({event.error.code} {show(event.error.message)}) "
                f"while {len(outstanding)} readable requests were outstanding: JSON-RPC "
                "2.0 keeps id null for requests whose id could not be read",
            )
        else:
            self.problem(
                "protocol.responses",
                where,
                f"an error with id null ({event.error.code} {show(event.error.message)}) "
                "answers nothing: the checker sent no message the server could not read, "
                "and notifications are never answered",
            )

    def _dropped_id(self, request_id: Any, error: ErrorObject, where: str) -> None:
        if self._refusal:
            return
        self.problem(
            "protocol.responses",
            where,
            f"request id {request_id!r} was answered with id null "
            f"({error.code} {show(error.message)}): JSON-RPC 2.0 keeps id "
            "null for requests whose id could not be read",
        )

    async def _violation(self, event: ProtocolViolation, where: str, data: bytes) -> None:
        check = CHECK_OF_RULE[event.rule]
        why = event.reason or event.error.message
        path = named_path(data, event.path, why)
        place = f"{where}: {path}" if path not in ("", "$") else where
        if check == "schema.message":
            found = value_at(data, path)
            if found is not NOWHERE:
                why = f"{why}; the value there: {show(found)}"
        if event.method:
            why = f"{event.method}: {why}"
        mine = event.request_id is not None and event.ends_request
        subject = self.subjects.get(event.request_id, "") if mine else ""
        self.problem(check, place, f"{why} [rule {event.rule.value}]", subject=subject)
        if event.request_id is not None:
            self._settle(event.request_id, Reply("refused", event, where))
        if event.response is not None:
            await self._write(self.session.send(event.response))

    def _declared(self, notification: Any, where: str) -> None:
        """A server notification needs the capability that announces it."""
        method = getattr(type(notification), "method", None)
        needed = NOTIFICATION_CAPABILITIES.get(method) if isinstance(method, str) else None
        if needed is None or self.session.model == "stateless":
            return
        capability, flag = needed
        declared = (self.session.peer_capabilities or {}).get(capability)
        if isinstance(declared, dict) and (flag is None or declared.get(flag) is True):
            return
        wanted = capability if flag is None else f"{capability}.{flag}"
        self.problem(
            "protocol.capabilities",
            f"{where}: $.method",
            f"{method} without the {wanted} capability declared",
        )

    async def _answer(self, event: RequestReceived) -> None:
        """Answer a request of the server as a plain client would."""
        result: dict[str, Any] | None = _ANSWERS.get(event.method)
        if result is None:
            error = ErrorObject(code=-32601, message="not offered by the checker")
            await self._write(self.session.send(ErrorResponse(id=event.request_id, error=error)))
            return
        typed = self.session.codec.decode_result(event.method, msgspec.json.encode(result))
        await self._write(self.session.send(ResultResponse(id=event.request_id, result=typed)))

    # -- helpers for probes -------------------------------------------------------------

    async def sync(self) -> bool:
        """A round trip the server must answer (``ping``, or in 2026-07-28 an unknown
        method): everything it wrote before the answer has been taken in. Whether the
        answer came."""
        probe: dict[str, Any] = {"jsonrpc": "2.0", "id": self.raw_id("sync"), "method": "ping"}
        if self.session.model == "stateless":
            probe["params"] = {"_meta": self.stateless_meta()}
        reply = await self.raw_request(probe)
        return reply.kind in ("result", "error")

    def raw_cancel(self, request_id: Any, reason: str) -> bytes:
        """``notifications/cancelled`` of a raw request (2026-07-28 over HTTP: the link
        closes the request's response stream instead of posting it)."""
        params: dict[str, Any] = {"requestId": request_id, "reason": reason}
        if self.session.model == "stateless":
            params["_meta"] = self.stateless_meta()
        message = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
        return msgspec.json.encode(message)

    def stateless_meta(self, version: str | None = None) -> dict[str, Any]:
        """The ``_meta`` a 2026-07-28 request carries."""
        return {
            "io.modelcontextprotocol/protocolVersion": version or self.report.revision,
            "io.modelcontextprotocol/clientCapabilities": CLIENT_CAPABILITIES,
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        }


#: Server notifications of the handshake revisions and the capability (and flag) that must
#: be declared for each (2026-07-28 has its own rules: subscriptions and log levels).
NOTIFICATION_CAPABILITIES: dict[str, tuple[str, str | None]] = {
    "notifications/tools/list_changed": ("tools", "listChanged"),
    "notifications/prompts/list_changed": ("prompts", "listChanged"),
    "notifications/resources/list_changed": ("resources", "listChanged"),
    "notifications/resources/updated": ("resources", "subscribe"),
    "notifications/message": ("logging", None),
}

#: What the checker answers to the server's requests.
_ANSWERS: dict[str, dict[str, Any]] = {
    "ping": {},
    "roots/list": {"roots": []},
    "sampling/createMessage": {
        "role": "assistant",
        "content": {"type": "text", "text": "mcpspec check"},
        "model": "mcpspec-check",
    },
    "elicitation/create": {"action": "decline"},
}


def _is_response(envelope: _Envelope) -> bool:
    return envelope.method is msgspec.UNSET and (
        envelope.result is not msgspec.UNSET or envelope.error is not msgspec.UNSET
    )


def _is_json(data: bytes) -> bool:
    try:
        msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return False
    return True


def _text(data: bytes) -> str:
    return clip(data.decode("utf-8", "replace"), 200)
