"""Receiving: the bytes of one framed wire message in, typed events out.

:class:`Receiver` is the receiving part of a session. It does as little per message as
it can, and everything it can once per revision and capability set (:meth:`Receiver.
rebuild`, which the session calls when either changes):

1. While the lifecycle gates what may arrive (before the session is ready, or after it
   closed), a message takes :meth:`Receiver._receive_gated`, whose rules include the
   gate of the phase.
2. One ``codec.decode``; with exactly one request outstanding, for all but small
   messages, ``codec.decode_response``, which types the result of a response to it in
   the same pass.
3. The handler of the message's class from the dispatch table: a request or a
   notification is judged by the rules the rule table (:mod:`.checks`) holds for it,
   in the table's order, then taken in (the pending-table record and the event); a
   result or an error settles the request of this side it answers. The messages that
   negotiate are taken in by the negotiation part, after the same rules.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

import msgspec
from msgspec import UNSET, Raw

from ..codec import DECODE_FAILURES, envelope_decoder
from ..envelope import ErrorResponse, RequestId, ResultResponse, is_id
from ..errors import ErrorCode, InvalidMessage, clip, show
from ..unparsed_response import response_id
from .capabilities import MODE_DEPENDENT
from .checks import (
    DECLARED,
    IGNORED,
    PHASE,
    MessageRule,
    SenderView,
    first_problem,
    token_problem,
)
from .events import (
    ErrorReceived,
    Event,
    NotificationReceived,
    Outgoing,
    ProgressReceived,
    ProtocolViolation,
    RequestCancelled,
    RequestReceived,
    ResponseReceived,
)
from .parts import MessagePath
from .pending import Batch, IncomingRequest, OutgoingRequest
from .progress import TERMINAL_TASK_STATUSES, ProgressTracker
from .rules import Problem, Rule
from .state import Phase
from .stateless import LISTEN, RequestMeta, Subscriptions
from .version_negotiation import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    NEVER_BATCHED,
    TYPED_BY_ITS_ANSWER,
)

if TYPE_CHECKING:
    from .negotiation_part import Negotiation
    from .parts import SessionParts

__all__ = ["SETTLED_BY_ANSWER", "Handler", "Receiver", "finish_answered", "what_it_is"]

#: Handles one decoded message of a class.
Handler = Callable[[Any], list[Event]]


def what_it_is(data: bytes) -> tuple[bool, RequestId | None, str | None]:
    """Whether a message is answered (a request, or something unreadable), with the id
    to answer with and its method, as far as they can be read."""
    try:
        envelope = envelope_decoder().decode(data)
    except DECODE_FAILURES:
        return True, None, None
    method = envelope.method if isinstance(envelope.method, str) else None
    if envelope.method is UNSET:
        return envelope.result is UNSET and envelope.error is UNSET, None, None
    if envelope.id is UNSET:
        return False, None, method
    return True, envelope.id if is_id(envelope.id) else None, method


def _subscription_over(
    progress: ProgressTracker, subscriptions: Subscriptions, record: Any, result: Any
) -> None:
    """An answered ``subscriptions/listen``: its subscription is over."""
    subscriptions.closed(record.id)


def _task_status(
    progress: ProgressTracker, subscriptions: Subscriptions, record: Any, result: Any
) -> None:
    """An answer that reports a task's status: a terminal one finishes the task."""
    if getattr(result, "status", None) in TERMINAL_TASK_STATUSES:
        progress.task_finished(result.task_id)


def _task_result(
    progress: ProgressTracker, subscriptions: Subscriptions, record: Any, result: Any
) -> None:
    """The result of a task this side asked for (``tasks/result``): the task is over."""
    task_id = getattr(getattr(getattr(record, "request", None), "params", None), "task_id", None)
    if isinstance(task_id, str):
        progress.task_finished(task_id)


#: What an answer to a request of a method settles beyond its progress token, by method.
SETTLED_BY_ANSWER: Final[dict[str, Callable[[ProgressTracker, Subscriptions, Any, Any], None]]] = {
    LISTEN: _subscription_over,
    "tasks/get": _task_status,
    "tasks/cancel": _task_status,
    "tasks/result": _task_result,
}


def finish_answered(
    progress: ProgressTracker,
    subscriptions: Subscriptions,
    record: IncomingRequest | OutgoingRequest,
    result: Any,
) -> None:
    """A request was answered, either way (``result`` is ``None`` for an error): its
    progress token is done, or kept for its task; and what its method settles
    (:data:`SETTLED_BY_ANSWER`): its subscription is closed, a task it reported terminal (or
    whose result it brought) is finished."""
    token = record.progress_token
    if token is not None:
        tokens = progress.expected if record.__class__ is OutgoingRequest else progress.reporting
        task = getattr(result, "task", None) if record.task else None
        tokens.finish(token, task_id=getattr(task, "task_id", None))
    answered = SETTLED_BY_ANSWER.get(record.method)
    if answered is not None:
        answered(progress, subscriptions, record, result)


#: From this size on, a message that arrives while one request is outstanding is
#: decoded as its response first (``codec.decode_response``). Below it, a second pass
#: costs less than telling a response from the progress and log notifications that
#: come while a request is out.
_ONE_PASS_SIZE: Final = 256

#: The rule tuples of the dispatch tables, one object per distinct tuple: they are the
#: same for every session of a revision and role, and each session would else hold
#: copies of its own (bounded: the rules are the program's, not a peer's).
_RULE_TUPLES: dict[tuple[MessageRule, ...], tuple[MessageRule, ...]] = {}


def _shared(rules: tuple[MessageRule, ...]) -> tuple[MessageRule, ...]:
    """``rules``, as the one tuple of its rules every dispatch table uses."""
    return _RULE_TUPLES.setdefault(rules, rules)


@functools.cache
def _params_type(cls: type) -> Any:
    """The type of the params of requests of ``cls``, ``None`` when they may be left
    out."""
    for field in msgspec.structs.fields(cls):
        if field.name == "params":
            if field.default is msgspec.NODEFAULT and field.default_factory is msgspec.NODEFAULT:
                return field.type
            return None
    return None


def _struct_params(cls: type) -> bool:
    """Whether every request of ``cls`` has params, a Struct with ``meta``: then
    ``message.params.meta`` is always there to read."""
    params = _params_type(cls)
    return (
        isinstance(params, type)
        and issubclass(params, msgspec.Struct)
        and "meta" in params.__struct_fields__
    )


class Admit(Protocol):
    """Takes in a request that passed its rules, given its ``_meta`` as read in the
    stateless model."""

    def __call__(self, message: Any, checked: RequestMeta | None = None) -> list[Event]: ...


class Receiver(MessagePath):
    """The receiving part of a session: ``receive``, and the dispatch table behind it.

    It works on the session's parts as :class:`~.parts.MessagePath` binds them.
    """

    def __init__(self, parts: SessionParts) -> None:
        super().__init__(parts)
        self._v = parts.violations
        self._max_bytes = parts.limits.max_message_bytes
        self._max_in_flight = parts.limits.max_requests_in_flight
        self._max_bytes_in_flight = parts.limits.request_bytes_in_flight
        #: What the rules see of the sender of a received message: the peer.
        self._peer = SenderView(
            parts.terms.peer_role,
            parts.pending,
            parts.subscriptions,
            receiving=True,
            life=parts.life,
            progress=parts.progress,
            terms=parts.terms,
        )

    def attach(self, negotiation: Negotiation) -> None:
        """The negotiation part whose messages this part hands over; builds the table."""
        super().attach(negotiation)
        self.rebuild()

    # -- the dispatch table ---------------------------------------------------------------------

    def rebuild(self) -> None:
        """Build the dispatch table of the revision and capability set in use: for each
        message class, the rules of the table it is judged by (:mod:`.checks`) and what
        takes it in once it passed them."""
        terms = self._terms
        codec = self._codec = terms.codec
        self._decode = terms.decode
        peer_requests = terms.peer_requests
        self._reads_meta = reads_meta = terms.model.reads_request_meta(terms.role)
        #: Request classes that may be task-augmented (``params.task``).
        self._task_classes = frozenset(
            codec.requests[m] for m in codec.task_results if m in peer_requests
        )
        mode_classes = frozenset(codec.requests[m] for m in MODE_DEPENDENT if m in peer_requests)
        refused = {codec.requests[m] for m in peer_requests if terms.refused_capability(m)}
        #: Request classes whose capability is judged per message: refused whatever
        #: their params, or depending on them (the others' passes, judged here once).
        self._capability_classes = self._task_classes | mode_classes | refused
        #: Of those, the classes whose capability may depend on anything but ``task``.
        judged_each = mode_classes | refused
        every_request = terms.peer_request_rules
        method_rules = terms.peer_rules
        negotiating = self._negotiation.handlers(self)
        taker: dict[str, Handler] = {
            "notifications/cancelled": self._on_cancelled,
            "notifications/progress": self._on_progress,
            "notifications/tasks/status": self._on_task_status,
            **negotiating,
        }
        handlers: dict[type, Handler] = {
            ResultResponse: self._on_result,
            ErrorResponse: self._on_error,
        }
        #: While the lifecycle gates: the rules of each message class, the phase's gate
        #: among them, and what takes the message in once it passed them (let go once
        #: the lifecycle gates no more: a session keeps only the table it uses).
        gated: dict[type, tuple[tuple[MessageRule, ...], Handler]] = {
            cls: ((), handler) for cls, handler in handlers.items()
        }
        for method in terms.peer_notifications:
            cls = codec.notifications[method]
            rules = method_rules.get(method, ())
            take = taker.get(method, self._on_notification)
            handlers[cls] = self._judged(take, rules, request=False) if rules else take
            gated[cls] = (_shared((PHASE, *rules)), take)
        take_request = self.take_request
        for method in peer_requests:
            cls = codec.requests[method]
            own = method_rules.get(method, ())
            rules = _shared((*every_request, *own))
            take = taker.get(method, take_request)
            plain = cls not in judged_each and _struct_params(cls)
            if take != take_request:  # it negotiates
                handlers[cls] = self._judged(take, rules, request=True)
            elif reads_meta:
                accept = self._plain_request_handler(cls, ()) if plain else self._admit
                handlers[cls] = self._with_meta(rules, accept)
            elif plain:
                handlers[cls] = self._plain_request_handler(cls, rules)
            else:
                handlers[cls] = self._judged(take, rules, request=True)
            # A request of a model that negotiates in its _meta passes any gate.
            gate = () if reads_meta else (PHASE,)
            gated[cls] = (_shared((*every_request, *gate, *own)), take)
        self._handlers = handlers
        self._gated = gated if self._life.gated else None

    def _judged(self, take: Handler, rules: tuple[MessageRule, ...], *, request: bool) -> Handler:
        """``take`` behind ``rules``: a message that breaks one is not taken in."""
        peer = self._peer
        broken = self._broken

        def judged(message: Any) -> list[Event]:
            found = first_problem(rules, message, peer)
            if found is not None:
                return broken(message, *found, request)
            return take(message)

        return judged

    def _broken(
        self, message: Any, rule: MessageRule, problem: Problem, request: bool
    ) -> list[Event]:
        """The events of a message that broke ``rule``: a request is refused with the
        rule's error (unless the rule is never answered), anything else reported; one
        that crossed this side's cancellation is dropped."""
        if problem is IGNORED:
            return []
        if not request:
            return [self._v.reported(problem, method=message.method)]
        if not rule.answered:
            return [
                self._v.violation(
                    problem.rule,
                    problem.reason,
                    path=problem.path,
                    request_id=message.id,
                    method=message.method,
                )
            ]
        return [self._v.refuse_problem(message, problem)]

    # -- receiving ---------------------------------------------------------------------------------

    def receive(self, data: bytes) -> list[Event]:
        """The events of one framed wire message.

        Never raises, whatever the bytes: input that breaks a rule or a limit is a
        :class:`ProtocolViolation`, and should the session itself fail on a message, that
        is a violation too (rule ``internal-error``, -32603; a request is answered with
        it). A message is taken in whole or not at all: the checks come first, the
        pending table and progress tokens change only once a message passed them.
        """
        self._pending.arriving_size = len(data)
        try:
            if self._life.gated:
                return self._receive_gated(data)
            try:
                # Small messages, the most, skip the size test (Limits takes no
                # max_message_bytes below 512, so none of them is over it).
                if len(data) < _ONE_PASS_SIZE:
                    message = self._decode(data)
                elif len(data) > self._max_bytes:
                    return self._oversized(data)
                elif len(self._outgoing) == 1:
                    message = self._awaited(data)
                else:
                    message = self._decode(data)
            except InvalidMessage as exc:
                return self._invalid(exc, data)
            handler = self._handlers.get(message.__class__)
            if handler is not None:
                return handler(message)
            return self._unhandled(message, data, False)
        except Exception as exc:
            answer, request_id, method = what_it_is(data)
            return [self._v.internal_failure(exc, request_id, method, answer)]

    def _awaited(self, data: bytes) -> Any:
        """``codec.decode`` while one request is outstanding: its response, the likeliest
        message then, comes with its result typed in the same pass."""
        record = next(iter(self._outgoing.values()))
        if record.method in TYPED_BY_ITS_ANSWER:
            return self._decode(data)  # typed once the revision it names is known
        try:
            if record.task:
                return self._codec.decode_response(data, record.method, task=True)
            return self._codec.decode_response(data, record.method)
        except InvalidMessage:
            return self._decode(data)  # an invalid result is reported for its request

    def _receive_gated(self, data: bytes) -> list[Event]:
        """``receive`` while the lifecycle gates what may arrive."""
        phase = self._life.phase
        if phase is Phase.CLOSED:
            return [self._v.violation(Rule.SESSION_CLOSED, "the session is closed")]
        if phase is Phase.IDLE:
            # The revision of the first message may not be known yet.
            target = self._negotiation.first_revision(data)
            if target is not None and target != self._codec.revision:
                self._switch(target)
        if len(data) > self._max_bytes:
            return self._oversized(data)
        try:
            message = self._decode(data)
        except InvalidMessage as exc:
            return self._invalid(exc, data)
        events = self._deliver(message, data, True)
        if not self._life.gated:
            self._gated = None  # the gate opened for good: its table is not used again
        return events

    def _oversized(self, data: bytes) -> list[Event]:
        """A message over ``max_message_bytes``, refused unread (see
        :meth:`unread_response` for one that answers a request of this side)."""
        events = self.unread_response(
            data,
            f"a message of {len(data)} bytes is over the limit max_message_bytes={self._max_bytes}",
        )
        return events if events is not None else [self._v.oversized(len(data))]

    def unread_response(self, head: bytes, reason: str) -> list[Event] | None:
        """For a message too large to read (``head``: its first bytes; ``reason``: the
        limit it is over): when it reads as the response to a request of this side,
        the events that end that request with the violation (rule ``limit-exceeded``),
        as the peer will send no other answer; else ``None``."""
        request_id = response_id(head)
        if request_id is None or request_id not in self._outgoing:
            return None
        exc = InvalidMessage(
            ErrorCode.INVALID_REQUEST,
            "$",
            reason,
            id=request_id,
            answerable=False,
            response=True,
            limit="max_message_bytes",
        )
        return self._invalid(exc, head)

    def _invalid(self, exc: InvalidMessage, data: bytes, index: int | None = None) -> list[Event]:
        """What the codec refused (``index``: of a batch member). A response to an
        outstanding request of this side (no method, an id in the table) that cannot be
        read answers that request all the same: the peer will send no other. That holds
        too for one with neither ``result`` nor ``error``, which is then not answered.
        Its record is settled and the violation names it, so that whoever waits for the
        answer learns, and negotiation too, should the request be its own."""
        request_id = exc.id
        record = (
            self._outgoing.pop(request_id, None)
            if exc.response and request_id is not None
            else None
        )
        events: list[Event] = [self._v.invalid(exc, data, index, answers=record)]
        if record is not None:
            self._finish_answered(record, None)
            self._negotiation.result_refused(record, None, events)
        return events

    def _deliver(self, message: Any, data: bytes, gated: bool) -> list[Event]:
        """The events of a decoded message; while the lifecycle gates (``gated``), its
        rules include the gate of the phase."""
        if not gated:
            handler = self._handlers.get(message.__class__)
            if handler is None:
                return self._unhandled(message, data, gated)
            return handler(message)
        # Delivered gated only while the lifecycle gates, when the table is there.
        assert self._gated is not None
        found = self._gated.get(message.__class__)
        if found is None:
            return self._unhandled(message, data, gated)
        rules, take = found
        broken = first_problem(rules, message, self._peer)
        if broken is not None:
            return self._broken(message, *broken, hasattr(message, "id"))
        return take(message)

    def _unhandled(self, message: Any, data: bytes, gated: bool) -> list[Event]:
        """A batch, or a message of the wrong direction."""
        if message.__class__ is list:
            return self._receive_batch(message, data, gated)
        return [self._v.wrong_direction(message)]

    def _receive_batch(self, items: list[Any], data: bytes, gated: bool) -> list[Event]:
        """A 2025-03-26 batch: the events of every member; the answers go out together."""
        pending = self._pending
        batch = pending.batch = Batch()
        pending.arriving_size = -(-len(data) // max(len(items), 1))
        events: list[Event] = []
        try:
            for index, item in enumerate(items):
                # Each member is taken in on its own: a member the session fails on
                # becomes its own violation, and the members before it keep theirs.
                try:
                    events.extend(self._batch_member(item, data, index, gated))
                except Exception as exc:
                    request_id = getattr(item, "id", None)
                    method = getattr(item, "method", None)
                    answer = request_id is not None and method is not None
                    events.append(self._v.internal_failure(exc, request_id, method, answer))
        finally:
            pending.batch = None
        pending.batch_received(batch)
        if batch.complete and batch.responses:  # answers made at once (over the limit)
            events.append(
                Outgoing(data=self._codec.encode(batch.responses), message=list(batch.responses))
            )
        return events

    def _batch_member(self, item: Any, data: bytes, index: int, gated: bool) -> list[Event]:
        """The events of batch member ``index``: decoded, or what the codec refused."""
        if isinstance(item, InvalidMessage):
            return self._invalid(item, data, index)
        method = getattr(item, "method", None)
        if method in NEVER_BATCHED:
            return [
                self._v.violation(
                    Rule.INITIALIZE_IN_BATCH,
                    f"{method} is never part of a batch",
                    request_id=item.id,
                    method=method,
                    answer=True,
                )
            ]
        return self._deliver(item, data, gated)

    # -- requests --------------------------------------------------------------------------------

    def _meta_refused(
        self, message: Any, meta: dict[str, Any], problem: Problem
    ) -> ProtocolViolation:
        """The violation of a request whose ``_meta`` breaks ``problem.rule`` (-32022
        names the versions this side accepts, newest first)."""
        data = None
        if problem.rule is Rule.UNSUPPORTED_PROTOCOL_VERSION:
            requested = meta.get(META_PROTOCOL_VERSION)  # a string: checked already
            data = {
                "supported": list(reversed(self._terms.accepted)),
                "requested": clip(requested) if isinstance(requested, str) else None,
            }
        return self._v.refuse(message, problem.rule, problem.reason, problem.path, data)

    def _with_meta(self, rules: tuple[MessageRule, ...], accept: Admit) -> Handler:
        """The handler of a request in a model that negotiates in its ``_meta``: judged
        by ``rules``, its ``_meta`` read (the first valid one may make the session
        ready), then taken in by ``accept``. What does not change per message is bound
        once, here."""
        peer = self._peer
        broken = self._broken
        terms = self._terms
        reader = terms.meta_reader
        assert reader is not None
        read = reader.read
        ready_by_request = self._negotiation.ready_by_request
        meta_refused = self._meta_refused

        def on_request_with_meta(message: Any) -> list[Event]:
            found = first_problem(rules, message, peer)
            if found is not None:
                return broken(message, *found, True)
            meta = message.params.meta
            checked = read(meta)
            if not isinstance(checked, RequestMeta):
                return [meta_refused(message, meta, checked)]
            ready = None if terms.ready_emitted else ready_by_request(checked)
            events = accept(message, checked)
            if ready is not None:
                events.insert(0, ready)
            return events

        return on_request_with_meta

    def _plain_request_handler(self, cls: type, rules: tuple[MessageRule, ...]) -> Admit:
        """The handler of the usual request, of class ``cls``: its params a Struct with
        ``_meta``, its capability declared unless it is task-augmented (judged once, in
        :meth:`rebuild`). It is judged by ``rules`` and taken in as :meth:`_admit`
        does, with what does not change per message (the method, the session's tables)
        bound once, here. ``checked``: the request's ``_meta``, read already, in the
        stateless model."""
        method: str = cls.method  # type: ignore[attr-defined]
        peer = self._peer
        broken = self._broken
        begin = self._reporting.begin
        take_in = self._take_in
        violations = self._v
        max_in_flight = self._max_in_flight
        max_bytes_in_flight = self._max_bytes_in_flight
        has_room = self._pending.has_room
        reporting = self._reporting
        may_task = cls in self._task_classes
        admit = self._admit

        def on_plain_request(message: Any, checked: RequestMeta | None = None) -> list[Event]:
            found = first_problem(rules, message, peer)
            if found is not None:
                return broken(message, *found, True)
            params = message.params
            if may_task and params.task is not UNSET:
                return admit(message, checked)  # its capability depends on it
            if not has_room(max_in_flight, max_bytes_in_flight):
                return [violations.over_limit(message)]
            meta = params.meta
            token = meta.get("progressToken") if meta.__class__ is dict else None
            if token is not None:
                problem = token_problem(token, reporting)
                if problem is not None:
                    return [violations.refuse_problem(message, problem)]
                begin(token, message.id)
            return take_in(message, message.id, method, token, False, checked)

        return on_plain_request

    def take_request(self, message: Any) -> list[Event]:
        """Take in a request of the peer that passed the rules of its method (see
        :mod:`.checks`): in a model that negotiates in ``_meta``, that is read first
        (the first valid one may make the session ready); then the capability it needs
        (:data:`~.checks.DECLARED`), the limit of requests in flight and its progress
        token (:func:`~.checks.token_problem`) are judged, and the pending-table record and
        the event made."""
        if not self._reads_meta:
            return self._admit(message, None)
        terms = self._terms
        reader = terms.meta_reader
        assert reader is not None
        meta = message.params.meta
        checked = reader.read(meta)
        if not isinstance(checked, RequestMeta):
            return [self._meta_refused(message, meta, checked)]
        ready = None if terms.ready_emitted else self._negotiation.ready_by_request(checked)
        events = self._admit(message, checked)
        if ready is not None:
            events.insert(0, ready)
        return events

    def _admit(self, message: Any, checked: RequestMeta | None = None) -> list[Event]:
        """:meth:`take_request` once ``_meta`` is read (``checked``, in the stateless
        model)."""
        peer = self._peer
        cls = message.__class__
        if cls in self._capability_classes:
            problem = DECLARED.check(message, peer)
            if problem is not None:
                return [self._v.refuse_problem(message, problem)]
        if not self._pending.has_room(self._max_in_flight, self._max_bytes_in_flight):
            return [self._v.over_limit(message)]
        params = message.params
        task = cls in self._task_classes and params.task is not UNSET
        # params_meta(params), inline: a Struct's meta, else the open params' _meta.
        meta = getattr(params, "meta", None)
        if meta.__class__ is dict:
            token = meta.get("progressToken")
        elif meta is None and params.__class__ is dict:
            token = self._loose_token(message)
            if token.__class__ is ProtocolViolation:
                return [token]
        else:
            token = None
        if token is not None:
            problem = token_problem(token, self._reporting)
            if problem is not None:
                return [self._v.refuse_problem(message, problem)]
            self._reporting.begin(token, message.id)
        return self._take_in(message, message.id, message.method, token, task, checked)

    def _take_in(
        self,
        message: Any,
        request_id: RequestId,
        method: str,
        token: Any,
        task: bool,
        checked: RequestMeta | None,
    ) -> list[Event]:
        """A request that passed every check: its pending-table record and its event."""
        pending = self._pending
        batch = pending.batch
        size = pending.arriving_size
        if checked is None:
            pending.take_in(IncomingRequest(request_id, method, token, task, batch, size=size))
            event = RequestReceived(message, request_id, method, token)
        else:
            pending.take_in(
                IncomingRequest(
                    request_id,
                    method,
                    token,
                    task,
                    batch,
                    checked.log_rank,
                    # What the request declared, kept only where a result may ask for
                    # input (so a long-lived request, a subscription, keeps nothing of it).
                    message.params.meta.get(META_CLIENT_CAPABILITIES)  # a dict: checked
                    if method in self._terms.input_methods
                    else None,
                    size=size,
                )
            )
            event = RequestReceived(
                message,
                request_id,
                method,
                token,
                checked.version,
                checked.capabilities,
                checked.client_info,
                checked.log_level,
            )
            self._subscriptions.recorded(request_id, method, message.params)
        if batch is not None:
            batch.waiting.add(request_id)
        return [event]

    def _loose_token(self, message: Any) -> Any:
        """The progress token in the open params (a plain object) of ``ping``,
        ``roots/list``, ... up to 2025-06-18, or a violation when ``_meta`` is not an
        object."""
        meta = message.params.get("_meta")
        if meta is None or meta.__class__ is dict:
            return None if meta is None else meta.get("progressToken")
        return self._v.refuse(
            message, Rule.INVALID_PARAMS, f"not an object: {show(meta)}", "$.params._meta"
        )

    # -- notifications -----------------------------------------------------------------------------

    @staticmethod
    def _on_notification(message: Any) -> list[Event]:
        return [NotificationReceived(message, message.method)]

    def _on_cancelled(self, message: Any) -> list[Event]:
        """The peer cancelled a request of its own (never answered now), or, in
        2026-07-28, a server ended a subscription this side opened (the rule table
        decided it may)."""
        request_id = message.params.request_id
        record = self._incoming.get(request_id)
        if record is not None:
            self._pending.release(request_id)
            self._pending.cancelled_in.add(request_id)
            if record.progress_token is not None:
                self._reporting.finish(record.progress_token, cancelled=True)
            self._subscriptions.closed(request_id)
            events: list[Event] = [self._cancelled(message, True)]
            batch = record.batch
            if batch is not None:
                batch.waiting.discard(request_id)
                flushed = self._pending.flush(batch, self._codec.encode)
                if flushed:
                    events.append(Outgoing(data=flushed, message=list(batch.responses)))
            return events
        served = self._outgoing.get(request_id)
        if served is not None and self._subscriptions.closed(request_id):
            del self._outgoing[request_id]
            return [self._cancelled(message, True)]
        return [self._cancelled(message, False)]

    @staticmethod
    def _cancelled(message: Any, active: bool) -> RequestCancelled:
        params = message.params
        return RequestCancelled(
            notification=message,
            request_id=params.request_id,
            reason=None if params.reason is UNSET else params.reason,
            active=active,
        )

    def _on_progress(self, message: Any) -> list[Event]:
        """Progress the rule table let through (an active token, increasing): recorded,
        and its event."""
        params = message.params
        token = params.progress_token
        progress = params.progress
        expected = self._expected
        expected.last[token] = progress
        total = params.total
        text = getattr(params, "message", UNSET)  # not in 2024-11-05
        return [
            ProgressReceived(
                message,
                token,
                progress,
                None if total is UNSET else total,
                None if text is UNSET else text,
                expected.active[token],
            )
        ]

    def _on_task_status(self, message: Any) -> list[Event]:
        params = message.params
        if params.status in TERMINAL_TASK_STATUSES:
            self._progress.task_finished(params.task_id)
        return self._on_notification(message)

    # -- responses --------------------------------------------------------------------------------

    def _on_result(self, response: ResultResponse) -> list[Event]:
        record = self._outgoing.pop(response.id, None)
        if record is None:
            return self._stray(response.id)
        if record.method in TYPED_BY_ITS_ANSWER:
            return self._negotiation.initialize_answered(record, response)
        result = response.result
        if result.__class__ is Raw:  # else typed already (``_awaited``)
            try:
                result = self._codec.decode_result(record.method, result, task=record.task)
            except InvalidMessage as exc:
                self._finish_answered(record, None)
                events: list[Event] = [self._v.invalid_result(record, exc)]
                self._negotiation.result_refused(record, result, events)
                return events
        if record.plain:  # the usual answer: nothing to check or settle
            return [ResponseReceived(record.id, record.method, result, record.request)]
        return self._on_typed_result(record, result)

    def _on_typed_result(self, record: OutgoingRequest, result: Any) -> list[Event]:
        """The events of ``result``, typed, for ``record`` (taken out of the table)."""
        received = ResponseReceived(record.id, record.method, result, record.request)
        if record.plain:
            return [received]
        terms = self._terms
        problem = terms.model.result_problem(result, record.capabilities, terms.client_defined)
        self._finish_answered(record, result)
        if problem is not None:
            return [self._v.of_result(record, problem.rule, problem.reason, problem.path)]
        events: list[Event] = [received]
        self._negotiation.result_received(record, result, events)
        return events

    def _finish_answered(self, record: OutgoingRequest, result: Any) -> None:
        """A request of this side was answered (``result`` ``None`` for an error)."""
        finish_answered(self._progress, self._subscriptions, record, result)

    def _stray(self, request_id: RequestId) -> list[Event]:
        """A response to no outstanding request: ignored after a cancellation, else a
        violation."""
        if self._pending.cancelled_out.discard(request_id):
            return []  # a response after cancellation is ignored
        return [self._v.stray(request_id)]

    def _on_error(self, response: ErrorResponse) -> list[Event]:
        request_id = response.id
        if request_id is None or request_id is UNSET:
            # The peer could not read a message of this side (id null, or left out);
            # negotiation may know which (an older server that cannot read the probe).
            request_id = self._negotiation.unreadable_request()
            if request_id is None:
                return [
                    ErrorReceived(request_id=None, method=None, error=response.error, request=None)
                ]
        record = self._outgoing.pop(request_id, None)
        if record is None:
            return self._stray(request_id)
        self._finish_answered(record, None)
        events: list[Event] = [
            ErrorReceived(
                request_id=record.id,
                method=record.method,
                error=response.error,
                request=record.request,
            )
        ]
        self._negotiation.error_received(record, response.error, events)
        return events
