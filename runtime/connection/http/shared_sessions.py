"""Handshake-era sessions shared by several workers: any worker serves any request.

With a :class:`Cluster` in its settings, an app keeps the record of each session it
mints in the cluster's :class:`~.session_store.SessionStore`, and a request naming a
session this worker has not seen makes a *copy* of it here from that record: a
connection of the server taken through ``initialize`` as the client took the original
one, then given what the client set since (log level, subscriptions). Every request
reads the record (its time to live starts over); a record gone is a session ended,
here too (404). What the client sets on one worker is written back before the request
is answered, and told to the other workers' copies.

What a worker cannot serve alone travels on the cluster's
:class:`~.session_bus.MessageBus`:

* a message about no request, for the session's ``GET`` stream, goes to the worker
  holding that stream (channel ``<prefix>get:<session id>``); while none holds it, the
  bus holds it (bounded) for the next ``GET``, as one worker queues it;
* a client's answer to a request of the server, or its ``notifications/cancelled``,
  that no copy here waits for, goes to every worker (channel ``<prefix>cluster``), and
  the copy of *that session* waiting for it takes it and says so (channel
  ``<prefix>ack:<worker>``): an answer naming another session's request is taken by
  none, and refused as on one worker (400, ``unknown-response-id``);
* ``DELETE`` ends the copies of every worker; a change announced (``notify_*``) is
  delivered by every worker to its own clients (a ``GET`` stream's copy delivers to
  it; the other copies of the session do not, so it arrives once); while no worker
  holds the session's ``GET`` stream, the bus holds it once for the next.

The copies of one session number their requests to the client from random places, so
two workers never ask the client with one id, and name their SSE streams after their
worker, so a ``Last-Event-ID`` never resumes another worker's stream.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import secrets
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc
import msgspec

from mcpspec.runtime.envelope import RequestId, ResultResponse
from mcpspec.runtime.errors import ErrorCode
from mcpspec.runtime.session.state import Phase

from ..errors import RequestError
from ..peer import HandedBack
from .event_store import EventStore
from .routing import is_request
from .session_bus import MessageBus
from .session_store import SessionRecord, SessionStore, StoreUnavailable
from .sessions import HandshakeSession
from .wire import error_body

if TYPE_CHECKING:
    from ..server import ServerConnection
    from .app import HttpApp
    from .handshake import HandshakeEndpoint
    from .wire import BodyPeek

__all__ = ["Cluster", "SharedSession", "SharedSessions"]

logger = logging.getLogger("mcpspec.http")

#: The notifications a change announced sends (delivered by each worker to its own).
_CHANGES: Final = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    }
)


@dataclasses.dataclass(frozen=True)
class Cluster:
    """What the workers of one server share: the sessions' ``store``, the ``bus`` they
    tell each other things on, the ``prefix`` of their channel names (workers of
    different servers sharing one Redis use different ones), and the ``event_store``
    of their SSE events, so that a stream resumes on any worker (``None``: each
    worker's own, in memory: a stream resumes only on the worker that sent it). Every worker must be
    given the same server (its tools, its ``state_key``: the ``requestState`` of a
    2026-07-28 request sealed by one worker is opened by another)."""

    store: SessionStore
    bus: MessageBus
    prefix: str = "mcpspec:"
    event_store: EventStore | None = None


class _Note(msgspec.Struct, omit_defaults=True):
    """One message between workers on the cluster channel (``nonce``: the sender
    waits for the worker that takes it to say so, on the sender's channel)."""

    kind: str
    worker: str
    nonce: str = ""
    session: str = ""
    data: str = ""
    method: str = ""
    uri: str | None = None
    record: SessionRecord | None = None


class _Method(msgspec.Struct):
    method: str | None = None


class _CancelParams(msgspec.Struct, rename="camel"):
    request_id: RequestId | None = None


class _Cancel(msgspec.Struct):
    params: _CancelParams | None = None


class _Initialize(msgspec.Struct):
    id: Any = None
    params: dict[str, Any] = {}


class _InitializeResult(msgspec.Struct, rename="camel"):
    protocol_version: str


class _Initialized(msgspec.Struct):
    result: _InitializeResult


_INITIALIZED: Final = msgspec.json.Decoder(_Initialized)
_NOTE_ENCODER: Final = msgspec.json.Encoder()
_NOTE_DECODER: Final = msgspec.json.Decoder(_Note)
_METHOD: Final = msgspec.json.Decoder(_Method)
_CANCEL: Final = msgspec.json.Decoder(_Cancel)
_INITIALIZE: Final = msgspec.json.Decoder(_Initialize)


def _method_of(data: bytes) -> str | None:
    try:
        return _METHOD.decode(data).method
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _first_request_id() -> int:
    """Where a copy of a session starts numbering its requests: a random place among
    2**31, each a range of 2**21 ids (JSON numbers stay exact below 2**53)."""
    return (secrets.randbits(31) << 21) + 1


#: How long a worker waits for another to take a client's answer (seconds); none did:
#: the POST is answered as on one worker (an answer to no request is refused).
ACK_SECONDS: Final = 1.0


class SharedSession(HandshakeSession):
    """A session (or a copy of one) of a worker in a cluster: its messages for the
    ``GET`` stream go to the worker holding that stream."""

    def __init__(self, shared: SharedSessions, session_id: str, owner: str | None) -> None:
        settings = shared.app.settings
        super().__init__(
            session_id,
            queue_limit=settings.max_queued_messages,
            event_store=shared.app.event_store,
            owner=owner,
        )
        self.shared = shared
        self.standalone_id = f"{shared.worker}-0"
        #: The record as this copy last wrote or read it.
        self.record: SessionRecord | None = None

    def next_stream_id(self) -> str:
        return f"{self.shared.worker}-{super().next_stream_id()}"

    def is_standalone(self, stream_id: str) -> bool:
        # Any worker's: a GET stream resumed here goes on live here.
        return stream_id.endswith("-0")

    async def to_standalone(self, data: bytes) -> None:
        if self.listening:
            await super().to_standalone(data)
            return
        channel = self.shared.get_channel(self.id)
        if _method_of(data) in _CHANGES:
            # The copy holding the GET stream delivers changes itself (every worker
            # delivers what is announced anywhere): sent from here too, it would
            # arrive twice. With no GET stream open anywhere, it waits for the next
            # one, held once however many workers' copies hold it.
            try:
                if not await self.shared.bus.receivers(channel):
                    await self.shared.bus.hold(channel, data, unique=True)
            except StoreUnavailable:
                logger.warning("session %s: a change for the GET stream is lost", self.id[:8])
            return
        try:
            if not await self.shared.bus.publish(channel, data):
                # No worker holds the GET stream: the next one opened takes it.
                await self.shared.bus.hold(channel, data)
        except StoreUnavailable:
            if is_request(data):
                raise RequestError.of(
                    ErrorCode.INTERNAL_ERROR,
                    "the session store did not answer: no GET stream can carry a request "
                    "of the server",
                ) from None
            logger.warning("session %s: a notification for the GET stream is lost", self.id[:8])

    async def take_standalone(self, data: bytes) -> None:
        """A message another worker sent for this worker's ``GET`` stream."""
        await HandshakeSession.to_standalone(self, data)


class SharedSessions:
    """The sessions of one app in a cluster (see the module)."""

    def __init__(self, app: HttpApp, cluster: Cluster) -> None:
        self.app = app
        self.store = cluster.store
        self.bus = cluster.bus
        self.prefix = cluster.prefix
        #: This worker's name among the cluster's (random, per process).
        self.worker = secrets.token_hex(4)
        self._channel = f"{cluster.prefix}cluster"
        #: Copies being made, by session id: a second request waits for the first.
        self._copying: dict[str, anyio.Event] = {}
        #: The client's answers sent to other workers, waiting to be taken.
        self._acks: dict[str, anyio.Event] = {}
        self._ack_channel = f"{cluster.prefix}ack:{self.worker}"
        self._tasks: anyio.abc.TaskGroup | None = None

    def get_channel(self, session_id: str) -> str:
        """The channel of the messages for the ``GET`` stream of ``session_id``."""
        return f"{self.prefix}get:{session_id}"

    # -- lifetime -----------------------------------------------------------------------------
    async def start(self, task_group: anyio.abc.TaskGroup) -> None:
        """Join the cluster: read the bus, and relay the changes announced here."""
        self._tasks = task_group
        await task_group.start(self.bus.run)
        await self.bus.subscribe(self._channel, self._on_note)
        await self.bus.subscribe(self._ack_channel, self._on_ack)
        self.app.server.change_relay = self._relay_change

    async def stop(self) -> None:
        """Leave the cluster."""
        if self.app.server.change_relay == self._relay_change:
            self.app.server.change_relay = None
        self._tasks = None
        with contextlib.suppress(StoreUnavailable):
            await self.bus.unsubscribe(self._channel, self._on_note)
            await self.bus.unsubscribe(self._ack_channel, self._on_ack)

    # -- sessions -----------------------------------------------------------------------------
    def new_session(self, session_id: str, owner: str | None) -> SharedSession:
        """A session minted here (on ``initialize``) for the principal ``owner`` (its
        key; ``None`` without authentication)."""
        return SharedSession(self, session_id, owner)

    async def admit(
        self, session: HandshakeSession, body: bytes, answer: HandedBack
    ) -> HandedBack | None:
        """Keep the record of a session minted here (its ``initialize`` request
        ``body`` answered with ``answer``); ``None`` when kept, else the error to answer
        instead: the store did not answer, or the record is too large."""
        assert isinstance(session, SharedSession)
        connection = session.connection
        try:
            initialize = _INITIALIZE.decode(body)
            revision = _INITIALIZED.decode(answer.data).result.protocol_version
        except (msgspec.DecodeError, msgspec.ValidationError):
            return answer
        if connection is None:
            return answer
        connection.session.number_requests_from(_first_request_id())
        record = SessionRecord(revision=revision, client=initialize.params, principal=session.owner)
        try:
            ended = await self.store.create(session.id, record)
            for other in ended:
                # Ended to make room: on every worker, its events with it.
                await self._tell(_Note("end", self.worker, session=other))
                if self.app.event_store is not None:
                    await self.app.event_store.forget(other)
        except ValueError as exc:
            return _error(initialize.id, int(ErrorCode.INVALID_REQUEST), str(exc))
        except StoreUnavailable:
            return _error(
                initialize.id,
                int(ErrorCode.INTERNAL_ERROR),
                "Service unavailable: the session store did not answer",
            )
        session.record = record
        return None

    async def find(
        self, endpoint: HandshakeEndpoint, session_id: str, owner: str | None
    ) -> HandshakeSession | None:
        """The session of that id of the principal ``owner``, a copy made here when this
        worker has none; ``None`` when it ended (the copy here ends too) or is another
        principal's (unknown to this one, as on one worker). Raises
        :class:`StoreUnavailable`."""
        while (copying := self._copying.get(session_id)) is not None:
            await copying.wait()
        local = self.app.sessions.get(session_id, owner)
        stale = self.app.sessions.expired(session_id) if local is None else None
        record = await self.store.load(session_id)
        if record is None:
            if local is not None or stale is not None:
                await self._end_here(session_id)
            return None
        if record.principal != owner:
            return None
        if stale is not None and not stale.ended.is_set():
            # Idle here, in use elsewhere: this worker's copy serves again.
            local = self._keep_again(stale)
        if local is not None:
            assert isinstance(local, SharedSession)
            self._apply(local, record)
            return local
        self._copying[session_id] = done = anyio.Event()
        try:
            return await self._copy(endpoint, session_id, record)
        finally:
            del self._copying[session_id]
            done.set()

    async def _copy(
        self, endpoint: HandshakeEndpoint, session_id: str, record: SessionRecord
    ) -> HandshakeSession:
        """A copy of the session ``session_id`` made from ``record``, kept here."""
        session = SharedSession(self, session_id, record.principal)
        task_group = await self.app.tasks()
        prime = functools.partial(_prime, record)
        await task_group.start(functools.partial(endpoint._run_session, prime=prime), session)
        session.record = record
        self._apply(session, record)
        for evicted in self.app.sessions.add(session):
            # Only this worker's copy ends: the session lives on in the store.
            task_group.start_soon(evicted.end)
        return session

    def _keep_again(self, session: HandshakeSession) -> HandshakeSession:
        """Keep again this worker's copy ``session``, found idle here (its session is
        alive in the store: used on other workers)."""
        self.app.sessions.remove(session.id, only=session)
        session.last_active = time.monotonic()
        evicted = self.app.sessions.add(session)
        if evicted and self._tasks is not None:
            for other in evicted:
                self._tasks.start_soon(other.end)
        return session

    def _apply(self, session: SharedSession, record: SessionRecord) -> None:
        """Give the copy ``session`` what its client set, as ``record`` says."""
        session.record = record
        connection: ServerConnection | None = session.connection
        if connection is None:
            return
        connection.log_threshold = record.log_level
        feed = connection.feed
        if feed is not None:
            wanted = set(record.subscriptions)
            for uri in feed.subscribed - wanted:
                feed.unsubscribe(uri)
            for uri in wanted - feed.subscribed:
                with contextlib.suppress(RequestError):
                    feed.subscribe(uri)

    async def keep(self, session: HandshakeSession) -> None:
        """Write back what the client set on this worker (before the request that set
        it is answered), and tell the other workers' copies."""
        assert isinstance(session, SharedSession)
        record, connection = session.record, session.connection
        if record is None or connection is None:
            return
        feed = connection.feed
        subscriptions = tuple(sorted(feed.subscribed)) if feed is not None else ()
        if connection.log_threshold == record.log_level and subscriptions == record.subscriptions:
            return
        record = msgspec.structs.replace(
            record, log_level=connection.log_threshold, subscriptions=subscriptions
        )
        session.record = record
        await self.store.save(session.id, record)
        await self._tell(_Note("sync", self.worker, session=session.id, record=record))

    async def end(self, session_id: str) -> None:
        """End a session on every worker (``DELETE``)."""
        await self.store.delete(session_id)
        await self._tell(_Note("end", self.worker, session=session_id))
        await self.bus.take_held(self.get_channel(session_id))
        if self.app.event_store is not None:
            await self.app.event_store.forget(session_id)

    async def _end_here(self, session_id: str) -> None:
        session = self.app.sessions.remove(session_id)
        if session is not None:
            await session.end()

    # -- routing ------------------------------------------------------------------------------
    async def forward(self, session: HandshakeSession, body: bytes, peek: BodyPeek) -> bool:
        """Send the client's answer or cancellation ``body`` to the worker that waits
        for it, when no copy here does; whether one took it (then the POST is
        accepted: 202; else it is fed here, and refused as on one worker)."""
        if peek.batch or session.peer is None:
            return False
        core = session.peer.session
        if peek.method == "notifications/initialized":
            # A copy is made initialized: the client's own, landing on it, goes to the
            # session's first worker, which waits for it to send its own requests.
            if core.phase is not Phase.READY:
                return False
        elif peek.method is None:
            if peek.id is None or peek.id in core.outstanding:
                return False
        elif peek.method == "notifications/cancelled":
            try:
                params = _CANCEL.decode(body).params
            except (msgspec.DecodeError, msgspec.ValidationError):
                return False
            if params is None or params.request_id in core.unanswered:
                return False
        else:
            return False
        data = body.decode("utf-8", "replace")
        if peek.method is not None:
            # A notification: on one worker, one that nothing waits for is taken as
            # said (202) too.
            await self._tell(_Note("feed", self.worker, session=session.id, data=data))
            return True
        # The worker that waits for it says so: else nothing does (an answer to no
        # request of this session: fed here, it is refused as on one worker).
        nonce = secrets.token_hex(8)
        self._acks[nonce] = taken = anyio.Event()
        try:
            note = _Note("feed", self.worker, session=session.id, data=data, nonce=nonce)
            await self._tell(note)
            with anyio.move_on_after(ACK_SECONDS):
                await taken.wait()
        finally:
            del self._acks[nonce]
        return taken.is_set()

    @contextlib.asynccontextmanager
    async def relaying(self, session: HandshakeSession) -> AsyncIterator[None]:
        """While a ``GET`` stream of ``session`` is open here, take the messages other
        workers send it."""
        if not isinstance(session, SharedSession):
            yield
            return
        channel = self.get_channel(session.id)
        receiver = session.take_standalone
        try:
            await self.bus.subscribe(channel, receiver)
            # What was sent while no worker held the stream (subscribed first: what is
            # sent from now on comes live).
            for data in await self.bus.take_held(channel):
                await receiver(data)
        except StoreUnavailable:
            # Kept as wanted: the bus subscribes again once it is back.
            logger.warning("session %s: the GET stream waits for the bus", session.id[:8])
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(StoreUnavailable):
                await self.bus.unsubscribe(channel, receiver)

    async def _tell(self, note: _Note) -> None:
        await self.bus.publish(self._channel, _NOTE_ENCODER.encode(note))

    async def _relay_change(self, method: str, uri: str | None) -> None:
        try:
            await self._tell(_Note("change", self.worker, method=method, uri=uri))
        except StoreUnavailable:
            logger.warning("a change could not be told to the other workers: %s", method)

    async def _on_note(self, data: bytes) -> None:
        """A message of another worker (or this one's own, ignored where it matters)."""
        try:
            note = _NOTE_DECODER.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            logger.warning("a message on the cluster channel is not one of ours")
            return
        task_group = self._tasks
        if task_group is None:
            return
        if note.kind == "change":
            if note.worker != self.worker:
                task_group.start_soon(self.app.server.deliver_here, note.method, note.uri)
            return
        session = self.app.sessions.get(note.session)
        if not isinstance(session, SharedSession):
            return
        if note.kind == "end":
            task_group.start_soon(self._end_here, note.session)
        elif note.kind == "sync" and note.record is not None and note.worker != self.worker:
            self._apply(session, note.record)
        elif note.kind == "feed" and note.worker != self.worker and session.peer is not None:
            message = note.data.encode()
            if _waits_for(session, message):
                task_group.start_soon(session.peer.feed, message)
                if note.nonce:
                    channel = f"{self.prefix}ack:{note.worker}"
                    task_group.start_soon(self._acknowledge, channel, note.nonce)

    async def _acknowledge(self, channel: str, nonce: str) -> None:
        try:
            await self.bus.publish(channel, nonce.encode())
        except StoreUnavailable:
            logger.warning("an answer taken could not be acknowledged")

    async def _on_ack(self, data: bytes) -> None:
        taken = self._acks.get(data.decode("ascii", "replace"))
        if taken is not None:
            taken.set()


def _waits_for(session: HandshakeSession, message: bytes) -> bool:
    """Whether the copy ``session`` waits for the client's answer or cancellation
    ``message`` (a request of its own, or a request it is handling)."""
    assert session.peer is not None
    core = session.peer.session
    method = _method_of(message)
    if method == "notifications/initialized":
        return core.phase is Phase.INITIALIZED
    if method == "notifications/cancelled":
        try:
            cancel = _CANCEL.decode(message).params
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False
        return cancel is not None and cancel.request_id in core.unanswered
    try:
        answer_id = msgspec.json.decode(message, type=dict[str, Any]).get("id")
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return isinstance(answer_id, (int, str)) and answer_id in core.outstanding


def _error(request_id: Any, code: int, message: str) -> HandedBack:
    """An error answer to the request ``request_id``."""
    return HandedBack(error_body(code, message, request_id), code)


def _prime(record: SessionRecord, connection: ServerConnection) -> None:
    """Take the new connection of a copy through ``initialize`` as its client took
    the original (``record``), and number its requests from a place of its own."""
    session = connection.session
    params = dict(record.client)
    params["protocolVersion"] = record.revision
    session.receive(
        msgspec.json.encode(
            {"jsonrpc": "2.0", "id": "mcpspec-copy", "method": "initialize", "params": params}
        )
    )
    session.send(ResultResponse(id="mcpspec-copy", result=session.initialize_result()))
    session.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    session.number_requests_from(_first_request_id())
