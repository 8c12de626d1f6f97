"""What a server's request handler gets besides the request: :class:`RequestContext`.

The context reports progress and log messages about the request, tells the client's
capabilities and the revision, exposes the cancel scope the client's
``notifications/cancelled`` triggers, and asks the client for input (elicitation,
sampling, roots) the same way in every revision:

* up to 2025-11-25 the question is a request on the connection, and :meth:`ask`
  returns its answer;
* in 2026-07-28 a server sends no requests: the first :meth:`ask` without an answer
  ends the handler, and the server answers ``InputRequiredResult`` with the question
  and a ``requestState`` holding the answers so far. The client retries the request
  with the answer; the handler runs again from the start, and this time :meth:`ask`
  returns the answer. So a handler must do the same up to each question on every run
  (ask first, act after), which is the model the revision asks of servers.

:meth:`~RequestContext.ask_all` asks several :class:`Question` at once: concurrent
requests up to 2025-11-25, one ``InputRequiredResult`` round for all in 2026-07-28.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, Protocol

import anyio
import msgspec
from msgspec import UNSET

from mcpspec.runtime.envelope import RequestId
from mcpspec.runtime.session.events import RequestReceived
from mcpspec.runtime.session.stateless import LEVELS

from .errors import RequestError
from .principal import Principal, current_principal

if TYPE_CHECKING:
    from mcpspec.runtime.session.server import ServerSession

    from .handling import Handling
    from .lifespan import Lifespan
    from .peer import Peer

__all__ = [
    "ClientDeclarations",
    "InputState",
    "LogLevel",
    "Question",
    "RequestContext",
    "RequestDeclarations",
    "SessionDeclarations",
]

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
#: The client capability each question needs, and the class of its request.
_ASKS: Final[Mapping[str, tuple[str, str]]] = {
    "elicitation/create": ("elicitation", "ElicitRequest"),
    "sampling/createMessage": ("sampling", "CreateMessageRequest"),
    "roots/list": ("roots", "ListRootsRequest"),
}
#: At most this many questions per request (each round trip carries all answers).
MAX_QUESTIONS: Final = 32


class InputNeeded(BaseException):
    """Raised by :meth:`RequestContext.ask` and :meth:`~RequestContext.ask_all` in
    2026-07-28 for questions not answered yet: the server answers
    ``InputRequiredResult`` with them. A ``BaseException``, so that a handler's
    ``except Exception`` does not swallow it."""

    def __init__(self, questions: dict[str, tuple[str, Any]]) -> None:
        asked = ", ".join(f"{key} ({method})" for key, (method, _) in questions.items())
        super().__init__(f"input required: {asked}")
        #: The questions by key: each one's method and its input request.
        self.questions = questions


class TaskStarting(BaseException):
    """Raised by :meth:`RequestContext.start_task` in the request of a tool that asks
    before its task: the server creates the task there. A ``BaseException``, as
    :class:`InputNeeded`."""


class _Answer(msgspec.Struct, array_like=True):
    method: str
    result: msgspec.Raw


class InputState(msgspec.Struct, kw_only=True):
    """What a 2026-07-28 ``requestState`` of this server holds: the answers given so
    far (method and result JSON, by key) and the questions of the last round (method,
    by key). Opaque to the client, and sealed: base64 of its JSON, a dot, and an
    HMAC-SHA256 of that JSON under the server's key, so that a client can neither forge
    answers nor alter them (the state is all the server keeps between rounds)."""

    answers: dict[str, _Answer] = {}
    asked: dict[str, str] = {}

    def encode(self, key: bytes) -> str:
        """The sealed text of this state under ``key``."""
        data = msgspec.json.encode(self)
        seal = hmac.new(key, data, hashlib.sha256).digest()
        return f"{_b64(data)}.{_b64(seal)}"

    @classmethod
    def decode(cls, text: str, key: bytes) -> InputState:
        """The state sealed in ``text`` under ``key``; :class:`RequestError` (-32602)
        when it is not one this server issued (malformed, altered or forged)."""
        refused = RequestError.invalid_params("requestState is not one this server issued")
        body, dot, seal = text.partition(".")
        if not dot or len(text) > _MAX_STATE:
            raise refused
        try:
            data = _unb64(body)
            valid = hmac.compare_digest(_unb64(seal), hmac.new(key, data, hashlib.sha256).digest())
            if not valid:
                raise refused
            return msgspec.json.decode(data, type=cls)
        except (ValueError, msgspec.DecodeError, msgspec.ValidationError):
            raise refused from None


#: The longest ``requestState`` taken back (the answers of many rounds fit well).
_MAX_STATE: Final = 4 * 1024 * 1024


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    """Strict URL-safe base64 without padding: any other character is refused."""
    padded = text + "=" * (-len(text) % 4)
    return base64.b64decode(padded.encode("ascii"), altchars=b"-_", validate=True)


class ClientDeclarations(Protocol):
    """What the client declared, as a handler's context reads it."""

    @property
    def capabilities(self) -> Any:
        """The client's ``ClientCapabilities``, or ``None`` when unknown."""
        ...

    @property
    def info(self) -> Any:
        """The client's ``Implementation``, or ``None`` when it sent none."""
        ...


class RequestDeclarations(NamedTuple):
    """What a 2026-07-28 request declared of its client, in its ``_meta``."""

    capabilities: Any
    info: Any


class SessionDeclarations:
    """What the client declared once for its session (handshake eras), read from the
    session when a handler asks: the session keeps them within a small multiple of their
    size, decoding them anew when they are large, so a request that never asks costs
    nothing for them."""

    __slots__ = ("_session",)

    def __init__(self, session: ServerSession) -> None:
        self._session = session

    @property
    def capabilities(self) -> Any:
        """The client's ``ClientCapabilities``, once known."""
        return self._session.declared_peer_capabilities

    @property
    def info(self) -> Any:
        """The client's ``Implementation``, once known."""
        return self._session.peer_info


class RequestContext:
    """One request being handled: its identity, the client, and what the handler can
    send about it."""

    def __init__(
        self,
        event: RequestReceived,
        peer: Peer[ServerSession],
        handling: Handling | None,
        client: ClientDeclarations,
        log_threshold: int | None,
        answers: dict[str, Any] | None = None,
        lifespan: Lifespan | None = None,
    ) -> None:
        self._event = event
        self._lifespan = lifespan
        self._peer = peer
        self._handling = handling
        self._client = client
        self._log_threshold = log_threshold
        self._answers = answers
        self._asked = 0
        #: The keys of the questions asked so far (2026-07-28; made by the first).
        self._keys: set[str] | None = None
        self._progress_last: float | None = None
        #: Whether :meth:`start_task` creates the task (set by the server).
        self._task_starts_here = False

    # -- about the request -----------------------------------------------------------------------

    @property
    def request_id(self) -> RequestId:
        """The request's JSON-RPC id."""
        return self._event.request_id

    @property
    def method(self) -> str:
        """The request's method."""
        return self._event.method

    @property
    def event(self) -> RequestReceived:
        """The session's event for the request (``progress_token``, ``log_level``, ...)."""
        return self._event

    @property
    def revision(self) -> str:
        """The revision the connection speaks."""
        return self._peer.session.revision or self._peer.session.codec.revision

    @property
    def lifespan(self) -> Any:
        """The value of the server's lifespan (``Server(lifespan=...)``; ``None``
        without one); :class:`~mcpspec.runtime.connection.lifespan.LifespanNotRunning`
        when nothing entered it."""
        return self._lifespan.value if self._lifespan is not None else None

    @property
    def stateless(self) -> bool:
        """Whether the revision is the stateless one (2026-07-28)."""
        return self._peer.session.model == "stateless"

    @property
    def types(self) -> ModuleType:
        """The generated module of the revision (``ctx.types.CallToolResult``)."""
        return self._peer.session.types

    @property
    def client_capabilities(self) -> Any:
        """The client's ``ClientCapabilities`` (for this request, in 2026-07-28), or
        ``None`` when unknown."""
        return self._client.capabilities

    @property
    def client_info(self) -> Any:
        """The client's ``Implementation``, when it sent one."""
        return self._client.info

    @property
    def principal(self) -> Principal | None:
        """Who the request comes from: the principal of its verified access token (over
        HTTP with authorization), else ``None``."""
        return current_principal.get()

    @property
    def cancel_scope(self) -> anyio.CancelScope | None:
        """The scope the handler runs in; the client's ``notifications/cancelled``
        cancels it (and no answer is sent)."""
        return None if self._handling is None else self._handling.scope

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled the request."""
        return self._handling is not None and self._handling.cancel_called

    @property
    def peer(self) -> Peer[ServerSession]:
        """The connection the request came on; it outlives the request
        (``await ctx.peer.notify(...)`` later, for a subscription, say)."""
        return self._peer

    @property
    def related_request_id(self) -> RequestId | None:
        """What the messages sent through this context are about: the request, while
        its handler runs; ``None`` once it was answered (a task the handler left behind
        then sends about no request: over HTTP, on the session's standalone stream,
        never on the response of a request that took its place)."""
        handling = self._handling
        request_id = self._event.request_id
        if handling is not None and self._peer.handling_of(request_id) is handling:
            return request_id
        return None

    async def notify(self, notification: Any) -> None:
        """Send a notification (a generated notification of :attr:`types`:
        ``ctx.types.ToolListChangedNotification()``, ...) on the connection, about
        this request (:attr:`related_request_id`)."""
        await self._peer.notify(notification, related_request_id=self.related_request_id)

    def start_task(self) -> None:
        """Where the handler of a tool declared with ``ask_before_task=True`` becomes a
        task. In 2026-07-28, called as a task of the extension, the questions it asks
        before this point go in the request's ``InputRequiredResult`` rounds, and here
        the client gets ``CreateTaskResult``: the handler runs again from the start as
        the task, each question answered already (as in every round, it asks first
        and acts after). Everywhere else (a plain call, 2025-11-25, whose task starts
        at once, or the task itself) it does nothing."""
        if self._task_starts_here:
            raise TaskStarting

    # -- progress and logging --------------------------------------------------------------------

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` for this request, if the client asked for
        progress (else nothing). ``progress`` must increase from one call to the next."""
        token = self._event.progress_token
        if token is None:
            return
        fields: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            fields["total"] = total
        if message is not None:
            fields["message"] = message
        types = self.types
        params = msgspec.convert(fields, types.ProgressNotificationParams)
        await self._peer.notify(
            types.ProgressNotification(params=params), related_request_id=self.related_request_id
        )

    async def log(self, level: LogLevel, data: Any, *, logger: str | None = None) -> None:
        """Send ``notifications/message`` to the client, if it asked for messages of
        this level (``logging/setLevel``; in 2026-07-28, the request's
        ``io.modelcontextprotocol/logLevel``); else nothing."""
        rank = LEVELS[level]
        if self.stateless:
            asked = self._event.log_level
            if asked is None or rank < LEVELS[asked]:
                return
        elif self._log_threshold is not None and rank < self._log_threshold:
            return
        fields: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            fields["logger"] = logger
        types = self.types
        params = msgspec.convert(fields, types.LoggingMessageNotificationParams)
        await self._peer.notify(
            types.LoggingMessageNotification(params=params),
            related_request_id=self.related_request_id,
        )

    # -- asking the client -----------------------------------------------------------------------

    async def ask(self, method: str, params: Any = None, *, key: str | None = None) -> Any:
        """Ask the client: ``method`` is ``"elicitation/create"``,
        ``"sampling/createMessage"`` or ``"roots/list"``, ``params`` the request's
        params (a generated Struct of any revision, or a mapping in wire form). Returns
        the typed result (``ElicitResult``, ``CreateMessageResult``, ``ListRootsResult``).
        ``key`` names the question among the ``inputRequests`` of 2026-07-28 (default
        ``q1``, ``q2``, ... in the order asked); each question of a request needs its
        own.

        Raises :class:`RequestError` when the client answers with an error or (2026-07-28)
        did not declare the capability (-32021, which also answers the request if not
        caught).
        """
        [answer] = await self.ask_all(Question(method, params, key))
        return answer

    async def ask_all(self, *questions: Question) -> list[Any]:
        """Ask the client several questions at once; their answers, in order.

        Up to 2025-11-25 the requests go out together and are answered concurrently;
        the first error cancels the others and is raised. In 2026-07-28 the questions
        not answered yet travel in one ``InputRequiredResult`` (one round for all of
        them, where :meth:`ask` after :meth:`ask` takes a round each). Errors as in
        :meth:`ask`; a question the client lacks the capability for fails the call
        before anything is asked.
        """
        asked = [self._question(question) for question in questions]
        if not self.stateless:
            if len(asked) == 1:
                request = asked[0].request(self._peer.next_id())
                return [
                    await self._peer.request(request, related_request_id=self.related_request_id)
                ]
            return await self._request_all(asked)
        answers = self._answers or {}
        keys = [self._key(question.key) for question in questions]
        waiting: dict[str, tuple[str, Any]] = {}
        for key, question in zip(keys, asked, strict=True):
            if key in answers:
                continue
            caps = self._client.capabilities
            if caps is None or getattr(caps, question.capability, UNSET) in (UNSET, None):
                session = self._peer.session
                missing = session.missing_capability(self.request_id, {question.capability: {}})
                raise RequestError(missing.error)
            waiting[key] = (question.method, question.request(None))
        if waiting:
            raise InputNeeded(waiting)
        return [answers[key] for key in keys]

    def _question(self, question: Question) -> _Asking:
        """``question`` checked against the revision, ready to be sent."""
        entry = _ASKS.get(question.method)
        if entry is None:
            raise ValueError(
                f"a server asks the client with {', '.join(_ASKS)}; not {question.method!r}"
            )
        capability, class_name = entry
        session = self._peer.session
        cls = getattr(session.types, class_name, None)
        if cls is None:
            raise RequestError.of(
                -32601, f"{question.method} does not exist in revision {self.revision}"
            )
        return _Asking(question.method, capability, session.codec, cls, _wire(question.params))

    def _key(self, key: str | None) -> str:
        """The key of the next question of a 2026-07-28 request (``q1``, ``q2``, ...
        unless given), checked: non-empty, not used before, not too many."""
        self._asked += 1
        if self._asked > MAX_QUESTIONS:
            raise RuntimeError(f"more than {MAX_QUESTIONS} questions in one request")
        if key is None:
            key = f"q{self._asked}"
        elif not isinstance(key, str) or not key:
            raise ValueError("a question's key is a non-empty string")
        keys = self._keys
        if keys is None:
            keys = self._keys = set()
        if key in keys:
            raise ValueError(f"the question key {key!r} is used twice in one request")
        keys.add(key)
        return key

    async def _request_all(self, asked: list[_Asking]) -> list[Any]:
        """Send the requests of ``asked`` together (handshake revisions); their results
        in order, or the first failure (the others are cancelled)."""
        results: list[Any] = [None] * len(asked)
        failures: list[BaseException] = []
        peer = self._peer
        related = self.related_request_id

        async def one(index: int, request: Any) -> None:
            try:
                results[index] = await peer.request(request, related_request_id=related)
            except Exception as exc:
                failures.append(exc)
                task_group.cancel_scope.cancel()

        async with anyio.create_task_group() as task_group:
            for index, question in enumerate(asked):
                task_group.start_soon(one, index, question.request(peer.next_id()))
        if failures:
            raise failures[0]
        return results

    async def elicit(
        self,
        params: Any = None,
        *,
        message: str | None = None,
        requested_schema: Mapping[str, Any] | None = None,
        key: str | None = None,
    ) -> Any:
        """Ask the user through the client (``elicitation/create``): give the params
        (form or URL mode), or a ``message`` and the ``requested_schema`` of a form
        (``{"type": "object", "properties": {...}}``). Returns the ``ElicitResult``
        (``.action`` is ``"accept"``, ``"decline"`` or ``"cancel"``; ``.content``);
        ``key`` as in :meth:`ask`."""
        question = Question.elicit(
            params, message=message, requested_schema=requested_schema, key=key
        )
        [answer] = await self.ask_all(question)
        return answer

    async def sample(self, params: Any, *, key: str | None = None) -> Any:
        """Ask the client's model (``sampling/createMessage``); the
        ``CreateMessageResult``. ``key`` as in :meth:`ask`."""
        return await self.ask("sampling/createMessage", params, key=key)

    async def list_roots(self, *, key: str | None = None) -> Any:
        """Ask the client for its roots (``roots/list``); the ``ListRootsResult``.
        ``key`` as in :meth:`ask`."""
        return await self.ask("roots/list", None, key=key)


class Question(NamedTuple):
    """One question for :meth:`RequestContext.ask_all`: the method
    (``"elicitation/create"``, ``"sampling/createMessage"`` or ``"roots/list"``), its
    params (a generated Struct of any revision, or a mapping in wire form) and its key
    among the ``inputRequests`` of 2026-07-28 (``None``: ``q1``, ``q2``, ... in the
    order asked)."""

    method: str
    params: Any = None
    key: str | None = None

    @classmethod
    def elicit(
        cls,
        params: Any = None,
        *,
        message: str | None = None,
        requested_schema: Mapping[str, Any] | None = None,
        key: str | None = None,
    ) -> Question:
        """An ``elicitation/create`` question: the params, or a ``message`` and the
        ``requested_schema`` of a form (as :meth:`RequestContext.elicit` takes them)."""
        if params is None:
            if message is None:
                raise TypeError("elicit() takes params, or message and requested_schema")
            schema = dict(requested_schema or {"type": "object", "properties": {}})
            schema.setdefault("type", "object")
            params = {"message": message, "requestedSchema": schema}
        return cls("elicitation/create", params, key)

    @classmethod
    def sample(cls, params: Any, *, key: str | None = None) -> Question:
        """A ``sampling/createMessage`` question."""
        return cls("sampling/createMessage", params, key)

    @classmethod
    def roots(cls, *, key: str | None = None) -> Question:
        """A ``roots/list`` question."""
        return cls("roots/list", None, key)


class _Asking(NamedTuple):
    """A question checked against the revision: what its request needs."""

    method: str
    capability: str
    codec: Any
    cls: type
    params: Any

    def request(self, request_id: RequestId | None) -> Any:
        """The question's request (with ``request_id``; ``None``: an input request of
        2026-07-28, which has none)."""
        return _typed(self.codec, self.cls, self.method, self.params, request_id)


def _wire(params: Any) -> Any:
    """``params`` in wire form (JSON-compatible builtins), or ``None``."""
    if params is None:
        return None
    if isinstance(params, msgspec.Struct):
        return msgspec.to_builtins(params)
    return dict(params)


def _typed(codec: Any, cls: type, method: str, params: Any, request_id: RequestId | None) -> Any:
    """A request of ``cls`` (a generated request type), built through the codec so that
    params of another revision or in wire form are typed alike."""
    message: dict[str, Any] = {"method": method}
    if params is not None:
        message["params"] = params
    if request_id is not None:
        message["jsonrpc"] = "2.0"
        message["id"] = request_id
    return codec.decode_as(cls, msgspec.json.encode(message))
