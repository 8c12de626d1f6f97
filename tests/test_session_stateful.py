"""A ClientSession and a ServerSession against each other, driven by Hypothesis.

Two FIFO queues stand for the two directions of one ordered transport. Rules send
requests, notifications, cancellations, progress and responses from either side in any
order and deliver queued messages one at a time. The model checks, on every delivery:

- no ``ProtocolViolation`` (both sides only send what the rules allow);
- every request gets at most one response, and none after its cancellation;
- no event is lost: every delivered message produces an event, except the ones the
  specification says to drop (a response or progress that crossed a cancellation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from mcpspec.runtime import (
    ClientSession,
    ErrorObject,
    ErrorReceived,
    ErrorResponse,
    Event,
    NotificationReceived,
    ProgressReceived,
    ProtocolViolation,
    RequestCancelled,
    RequestReceived,
    ResponseReceived,
    ResultResponse,
    ServerSession,
)

from .session_kit import REVISIONS, connect, tools_call, tools_call_result

STATELESS = "2026-07-28"


@dataclass
class Sent:
    """What the sending side knows about one of its requests."""

    token: Any = None
    cancelled: bool = False
    answered: bool = False


@dataclass
class Side:
    """The model of one side's outgoing requests."""

    sent: dict[Any, Sent] = field(default_factory=dict)
    next_id: int = 1000

    def new_id(self, prefix: str) -> str:
        self.next_id += 1
        return f"{prefix}{self.next_id}"


class SessionPair(RuleBasedStateMachine):
    """The client and server of one connection, and the wire between them."""

    def __init__(self) -> None:
        super().__init__()
        self.to_server: list[tuple[bytes, str, Any]] = []
        self.to_client: list[tuple[bytes, str, Any]] = []
        self.client_model = Side()
        self.server_model = Side()
        self.progress: dict[Any, float] = {}
        #: Requests the server answered (at send time), and tokens of those it serves.
        self.server_answered: set[Any] = set()
        self.server_tokens: dict[Any, Any] = {}
        self.delivered = 0

    @initialize(revision=st.sampled_from(REVISIONS))
    def connect(self, revision: str) -> None:
        self.revision = revision
        self.client: ClientSession
        self.server: ServerSession
        self.client, self.server = connect(revision)

    # -- the client acts --------------------------------------------------------------------------

    @rule(with_token=st.booleans(), text=st.text(max_size=5))
    def client_request(self, with_token: bool, text: str) -> None:
        request_id = self.client_model.new_id("c")
        token = f"t{request_id}" if with_token else None
        meta = {"io.modelcontextprotocol/logLevel": "debug"} if self.revision == STATELESS else None
        request = (
            tools_call(self.client, request_id, arguments={"text": text}, meta=meta)
            if meta
            else tools_call(self.client, request_id, arguments={"text": text})
        )
        data = self.client.send(request, progress_token=token)
        self.client_model.sent[request_id] = Sent(token=token)
        self.to_server.append((data, "request", request_id))

    @precondition(lambda self: self.revision != STATELESS)
    @rule()
    def client_notification(self) -> None:
        t = self.client.types
        self.to_server.append((self.client.send(t.RootsListChangedNotification()), "note", None))

    @rule(data=st.data())
    def client_cancels(self, data: st.DataObject) -> None:
        open_ids = sorted(
            i for i, s in self.client_model.sent.items() if not (s.cancelled or s.answered)
        )
        if not open_ids:
            return
        request_id = data.draw(st.sampled_from(open_ids))
        self.to_server.append(
            (self.client.cancel(request_id, "changed my mind"), "cancel", request_id)
        )
        self.client_model.sent[request_id].cancelled = True

    @rule(data=st.data())
    def client_answers(self, data: st.DataObject) -> None:
        waiting = sorted(self.client.unanswered, key=str)
        if not waiting:
            return
        request_id = data.draw(st.sampled_from(waiting))
        roots = self.client.types.ListRootsResult(roots=[])
        out = self.client.send(ResultResponse(id=request_id, result=roots))
        assert out, "the server never cancels, so every answer is written"
        self.to_server.append((out, "response", request_id))

    # -- the server acts --------------------------------------------------------------------------

    @rule(data=st.data(), fail=st.booleans())
    def server_answers(self, data: st.DataObject, fail: bool) -> None:
        waiting = sorted(self.server.unanswered, key=str)
        if not waiting:
            return
        request_id = data.draw(st.sampled_from(waiting))
        if fail:
            error = ErrorObject(code=-32603, message="handler failed")
            out = self.server.send(ErrorResponse(id=request_id, error=error))
        else:
            out = self.server.send(
                ResultResponse(id=request_id, result=tools_call_result(self.server))
            )
        assert out  # unanswered never lists a cancelled request
        self.server_answered.add(request_id)
        self.server_tokens.pop(request_id, None)
        self.to_client.append((out, "response", request_id))

    @rule(data=st.data())
    def server_progress(self, data: st.DataObject) -> None:
        tokens = sorted(self.server_tokens.values())
        if not tokens:
            return
        token = data.draw(st.sampled_from(tokens))
        value = self.progress.get(token, 0) + data.draw(st.sampled_from([0.5, 1, 10]))
        self.progress[token] = value
        t = self.server.types
        note = t.ProgressNotification(
            params=t.ProgressNotificationParams(progress_token=token, progress=value)
        )
        out = self.server.send(note)
        assert out
        self.to_client.append((out, "progress", token))

    @rule()
    def server_log(self) -> None:
        t = self.server.types
        if self.revision == STATELESS and not self.server.unanswered:
            return  # logging goes only to a request that asked for it
        note = t.LoggingMessageNotification(
            params=t.LoggingMessageNotificationParams(level="info", data="x")
        )
        self.to_client.append((self.server.send(note), "note", None))

    @precondition(lambda self: self.revision != STATELESS)
    @rule()
    def server_request(self) -> None:
        request_id = self.server_model.new_id("s")
        t = self.server.types
        self.to_client.append(
            (self.server.send(t.ListRootsRequest(id=request_id)), "request", request_id)
        )
        self.server_model.sent[request_id] = Sent()

    # -- delivery ---------------------------------------------------------------------------------

    @precondition(lambda self: bool(self.to_server))
    @rule()
    def deliver_to_server(self) -> None:
        data, kind, ref = self.to_server.pop(0)
        events = self.server.receive(data)
        self._check(events, kind, ref, self.server_model, receiver="server")

    @precondition(lambda self: bool(self.to_client))
    @rule()
    def deliver_to_client(self) -> None:
        data, kind, ref = self.to_client.pop(0)
        events = self.client.receive(data)
        self._check(events, kind, ref, self.client_model, receiver="client")

    def _check(self, events: list[Event], kind: str, ref: Any, model: Side, receiver: str) -> None:
        self.delivered += 1
        assert not [e for e in events if isinstance(e, ProtocolViolation)], events
        if kind == "request":
            (event,) = events
            assert isinstance(event, RequestReceived) and event.request_id == ref
            if receiver == "server" and event.progress_token is not None:
                self.server_tokens[ref] = event.progress_token
        elif kind == "note":
            assert [type(e) for e in events] == [NotificationReceived]
        elif kind == "cancel":
            (event,) = events
            assert isinstance(event, RequestCancelled) and event.request_id == ref
            # Active exactly when the server had not answered it yet.
            assert event.active == (ref not in self.server_answered)
            self.server_tokens.pop(ref, None)
        elif kind == "response":
            sent = model.sent[ref]
            if sent.cancelled:
                assert events == [], "a response after cancellation is ignored"
            else:
                (event,) = events
                assert (
                    isinstance(event, (ResponseReceived, ErrorReceived)) and event.request_id == ref
                )
                assert not sent.answered, "at most one response per request"
                sent.answered = True
        elif kind == "progress":
            owner = next(s for s in model.sent.values() if s.token == ref)
            if owner.cancelled:
                assert events == []
            else:
                (event,) = events
                assert isinstance(event, ProgressReceived) and event.progress_token == ref
                assert not owner.answered, "no progress after completion"

    @invariant()
    def tables_agree(self) -> None:
        if not hasattr(self, "client"):
            return
        waiting = {i for i, s in self.client_model.sent.items() if not (s.cancelled or s.answered)}
        assert self.client.outstanding == waiting
        assert self.client.phase is self.server.phase

    def teardown(self) -> None:
        if not hasattr(self, "client"):
            return
        # Drain the wire: the same checks hold to the end, and nothing is left over.
        while self.to_server or self.to_client:
            if self.to_server:
                self.deliver_to_server()
            if self.to_client:
                self.deliver_to_client()
        pending_server = {i for i, s in self.server_model.sent.items() if not s.answered}
        assert self.server.outstanding == pending_server
        assert self.server.unanswered == (
            {i for i, s in self.client_model.sent.items() if not s.cancelled} - self.server_answered
        )


# Four times the loaded profile's examples (conftest: "ci" 25, "deep" 500), 40 steps each.
SessionPair.TestCase.settings = settings(
    max_examples=4 * settings().max_examples, stateful_step_count=40, deadline=None
)
TestSessionPair = SessionPair.TestCase
