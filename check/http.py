"""The HTTP side of ``mcpspec check``: :class:`HttpTarget` opens :class:`HttpLink`
connections to a server at a URL.

A link speaks the transport of the revision under check, as a client of that era would:

* Streamable HTTP (2025-03-26 and later): every message is a POST with the headers the
  era requires (``Accept``, ``Content-Type``, ``MCP-Protocol-Version`` once negotiated,
  ``Mcp-Session-Id`` once the server minted one; in 2026-07-28 the headers mirrored
  from the body, computed by :mod:`mcpspec.runtime.session.mirrored_headers`). An
  ``application/json`` answer is one message, a ``text/event-stream`` answer one message
  per event; answers are read in the background, so :meth:`HttpLink.receive` gives
  messages in the order they arrive. Once ``notifications/initialized`` is accepted, a
  ``GET`` stream carries the server's own messages (when the server offers one).
* HTTP+SSE (2024-11-05): when the POST of ``initialize`` is refused with 400, 404 or 405
  and no modern JSON-RPC error, the link ``GET``\\ s the URL (then its ``sse`` sibling)
  for the ``endpoint`` event, as the specification's backwards-compatibility section
  says, and from then on posts there and reads every message from that stream. Clients
  of every handshake revision fall back so (that section is theirs from 2025-03-26 on),
  and a server may speak any of them over HTTP+SSE.

The link judges the transport only (statuses and headers; the checks ``http.status``,
``http.headers`` and ``http.session``), filing findings into the revision's report
with the rule broken; what is inside a message is the conversation's to judge. Every
body and event is bounded (:data:`MAX_MESSAGE`), every wait has a time limit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any, Final
from urllib.parse import urlsplit

import anyio
import anyio.abc
import httpx
import msgspec
from msgspec import UNSET

from mcpspec.runtime.connection.errors import MessageTooLarge
from mcpspec.runtime.connection.http.client import (
    LIBRARY_HEADERS,
    InitializeAnswer,
    OutgoingEnvelope,
    media_type,
    stateless_version,
)
from mcpspec.runtime.connection.http.client_legacy import sse_urls
from mcpspec.runtime.connection.http.client_sse import LegacySseChannel, NoSseEndpoint
from mcpspec.runtime.connection.http.decoding import ACCEPT_ENCODING, decoded_chunks
from mcpspec.runtime.connection.http.sse_decoder import SseDecoder
from mcpspec.runtime.connection.scopes import Scopes
from mcpspec.runtime.envelope import is_id
from mcpspec.runtime.session.mirrored_headers import (
    MirrorError,
    ParamHeader,
    param_headers,
    request_headers,
)
from mcpspec.runtime.session.version_negotiation import is_stateless

from .errors import LinkClosed
from .findings import RevisionReport
from .http_wire import (
    ACCEPT_BOTH,
    DECODE_FAILURES,
    MAX_MESSAGE,
    VERSION_HEADER_SINCE,
    BodyTooLarge,
    file_once,
    incoming,
    minted_why,
    read_body,
    transport_page,
    visible_ascii,
)
from .link import Received, Transport
from .record import Recorder, Recording
from .secrets import Secrets

__all__ = ["HttpLink", "HttpTarget"]

#: Messages received and not yet read; a full queue holds the readers back.
QUEUE_SIZE: Final = 256
#: The longest session id kept (a longer one is still judged, then dropped).
MAX_SESSION_ID: Final = 1024
#: Tools whose ``x-mcp-header`` annotations are remembered, at most.
MAX_TOOLS: Final = 10_000
#: ``tools/list`` requests awaiting their answer that are remembered, at most.
MAX_PENDING_LISTS: Final = 1024
#: 2026-07-28: the HTTP status each of these JSON-RPC error codes must travel with.
STATUS_OF_CODE: Final[Mapping[int, int]] = {-32020: 400, -32021: 400, -32022: 400, -32601: 404}
#: Codes of errors that refuse a body rather than answer a request: 200 or 400.
BODY_REFUSALS: Final = frozenset({-32700, -32600})
#: Errors by which a modern (2026-07-28) server refuses a request: no fallback to HTTP+SSE.
MODERN_CODES: Final = frozenset(STATUS_OF_CODE)


# -- reading messages ---------------------------------------------------------------------------


class _Tool(msgspec.Struct, rename={"input_schema": "inputSchema"}):
    name: Any = None
    input_schema: Any = None


class _Tools(msgspec.Struct):
    tools: list[_Tool] | None = None


class _ToolsAnswer(msgspec.Struct):
    result: _Tools | None = None


_OUTGOING = msgspec.json.Decoder(OutgoingEnvelope)
_INITIALIZE_ANSWER = msgspec.json.Decoder(InitializeAnswer)
_TOOLS_ANSWER = msgspec.json.Decoder(_ToolsAnswer)


def _outgoing(data: bytes) -> OutgoingEnvelope | None:
    """The message sent, or ``None`` when it is not one JSON object."""
    try:
        return _OUTGOING.decode(data)
    except DECODE_FAILURES:
        return None


def _kind(message: OutgoingEnvelope | None) -> str:
    """``"request"``, ``"notification"``, ``"response"`` or ``"other"`` (not JSON-RPC)."""
    if message is None or message.jsonrpc != "2.0":
        return "other"
    if isinstance(message.method, str):
        if message.id is UNSET:
            return "notification"
        return "request" if is_id(message.id) else "other"
    return "response" if message.id is not UNSET else "other"


def _plain_header(value: str) -> bool:
    return value.isascii() and value.isprintable() and value == value.strip()


# -- the target ---------------------------------------------------------------------------------


class HttpTarget:
    """An MCP server at ``url`` (its Streamable HTTP endpoint, or the SSE URL of an
    HTTP+SSE server). ``headers`` go with every HTTP request (``--header``, for
    authentication), but for the ones the link writes itself. ``timeout`` bounds
    connecting, sending, and each wait that is not for an answer to a request."""

    def __init__(
        self, url: str, headers: Mapping[str, str] | None = None, *, timeout: float = 10.0
    ) -> None:
        #: The credentials in ``headers`` and ``url``: never shown or recorded.
        self.secrets = Secrets.of_http(url, headers or {})
        shown = self.secrets.text(url)
        try:
            parts = urlsplit(url)
            # Read now: a bad port (``:99999``, ``:abc``) raises only when read, and
            # later that would be a traceback from the first request, not a usage error.
            parts.port  # noqa: B018
            httpx.URL(url)
        except (ValueError, httpx.InvalidURL) as exc:
            reason = self.secrets.text(str(exc))
            raise ValueError(f"not a usable URL: {shown!r} ({reason})") from None
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not an http(s) URL: {shown!r}")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.url = url
        self.description = shown
        self.timeout = timeout
        self.headers = {
            name: value
            for name, value in (headers or {}).items()
            if name.lower() not in LIBRARY_HEADERS and not name.lower().startswith("mcp-param-")
        }
        #: The endpoint's path, as findings name it (``POST /mcp``).
        self.path = parts.path or "/"
        #: Where each connection's traffic is recorded (``--record``), if anywhere.
        self.recorder: Recorder | None = None

    @property
    def stderr(self) -> str:
        """Always ``""``: an HTTP server's log is not ours to read."""
        return ""

    def client(self) -> httpx.AsyncClient:
        """A new HTTP client for this target (one per connection)."""
        # Only the codings read in bounded steps are asked for (:mod:`...decoding`).
        return httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout),
            follow_redirects=False,
            trust_env=False,
            headers={"Accept-Encoding": ACCEPT_ENCODING},
        )

    def connect(self, report: RevisionReport) -> AbstractAsyncContextManager[HttpLink]:
        """A fresh connection (one HTTP client) whose transport findings go to ``report``."""
        return _open_link(self, report)

    async def probe_transport(self, report: RevisionReport, options: Any) -> None:
        """The HTTP probes of :mod:`.http_probes` for ``report.revision``."""
        from .http_probes import check_http

        await check_http(self, report.revision, report, options)


@asynccontextmanager
async def _open_link(target: HttpTarget, report: RevisionReport) -> AsyncIterator[HttpLink]:
    recording = None
    if target.recorder is not None:
        purpose = "offer" if report.revision == "negotiation" else "check"
        recording = target.recorder.open(report.revision, purpose, "http")
    try:
        async with target.client() as client, anyio.create_task_group() as task_group:
            link = HttpLink(target, report, client, task_group, recording)
            try:
                yield link
            finally:
                with anyio.CancelScope(shield=True):
                    await link.aclose()
                task_group.cancel_scope.cancel()
    finally:
        if recording is not None:
            recording.close()


# -- the link ------------------------------------------------------------------------------------


class HttpLink:
    """One connection to an HTTP server under check (see the module's docstring)."""

    def __init__(
        self,
        target: HttpTarget,
        report: RevisionReport,
        client: httpx.AsyncClient,
        task_group: anyio.abc.TaskGroup,
        recording: Recording | None = None,
    ) -> None:
        self._recording = recording
        #: ``"http"`` (Streamable HTTP), or ``"sse"`` once on HTTP+SSE.
        self.transport: Transport = "http"
        self._target = target
        self._report = report
        self._client = client
        self._tasks = task_group
        self._timeout = target.timeout
        self._stream_timeout = httpx.Timeout(
            connect=target.timeout, read=None, write=target.timeout, pool=target.timeout
        )
        self._in, self._out = anyio.create_memory_object_stream[Received](QUEUE_SIZE)
        self._posts = 0
        self._closed = False
        #: Why the link closed (or will give no more messages), when it did.
        self.closed_reason = ""
        #: The session id the server minted, if any (handshake revisions).
        self.session_id: str | None = None
        #: The protocol version ``initialize`` negotiated, once seen.
        self.protocol_version: str | None = None
        self._initialize_id: Any = UNSET
        self._tools_list_ids: set[Any] = set()
        self._tool_params: dict[str, tuple[ParamHeader, ...]] = {}
        #: The response streams of requests in flight, by id (2026-07-28: closing one
        #: cancels its request).
        self._streams: dict[Any, anyio.CancelScope] = {}
        self._stateless_ids: set[Any] = set()
        self._scopes = Scopes()
        self._listening = False
        self._legacy: LegacySseChannel | None = None
        self._switching = anyio.Lock()
        self._sse_events = 0
        #: Whether a request was answered with a 2xx yet.
        self._opened = False
        #: Why the server refused the checker access (401: it wants a token), if it did.
        self.access_refused: str | None = None

    # -- the Link protocol -------------------------------------------------------------------------

    async def send(self, data: bytes, *, related_request_id: int | str | None = None) -> None:
        """Post one message (or any bytes). A request's answer is read in the
        background: ``send`` returns once its body is sent."""
        if self._closed:
            raise LinkClosed(self.closed_reason or "the link is closed")
        message = _outgoing(data)
        kind = _kind(message)
        self._posts += 1
        number = self._posts
        if self._recording is not None:
            self._recording.write("client", data, f"POST {number}")
        if self._legacy is not None:
            await self._post_legacy(number, data, message, kind)
            return
        cancel = message is not None and message.method == "notifications/cancelled"
        if cancel and message is not None and await self._cancel_stream(message):
            return
        if kind in ("notification", "response"):
            assert message is not None
            await self._post_inline(number, data, message, kind)
            return
        sent = anyio.Event()
        self._spawn(self._run_post, number, data, message, kind, sent)
        with anyio.move_on_after(self._timeout):
            await sent.wait()

    async def receive(self) -> Received | None:
        """The next message from the server; ``None`` once the link is closed (or, on
        HTTP+SSE, the server ended the stream)."""
        try:
            return await self._out.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return None

    async def aclose(self) -> None:
        """Stop reading, end the session (``DELETE``, unjudged) and end :meth:`receive`."""
        if self._closed:
            return
        self._closed = True
        if not self.closed_reason:
            self.closed_reason = "the link is closed"
        self._scopes.cancel()
        self._in.close()
        if self.session_id is not None and self._legacy is None:
            headers = {**self._target.headers, "Mcp-Session-Id": self.session_id}
            with anyio.move_on_after(self._timeout), suppress(httpx.HTTPError):
                # Streamed, its body unread: the answer is not judged.
                async with self._client.stream("DELETE", self._target.url, headers=headers):
                    pass

    # -- plumbing ----------------------------------------------------------------------------------

    @property
    def _revision(self) -> str:
        return self._report.revision

    def _where(self, method: str = "POST") -> str:
        return f"{method} {self._target.path}"

    def _file(self, check: str, why: str, *, method: str = "POST") -> None:
        file_once(self._report, check, self._where(method), why)

    def _spawn(self, function: Any, *args: Any) -> None:
        self._tasks.start_soon(self._scopes.run, function, args)

    def _end(self, reason: str) -> None:
        """No more messages will come: :meth:`receive` gives ``None`` once the queue is
        read."""
        if not self._closed:
            self.closed_reason = reason
        self._in.close()

    async def _deliver(self, data: bytes, where: str, *, refusal: bool = False) -> None:
        if self._recording is not None:
            self._recording.write("server", data, where)
        self._learn(data)
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._in.send(Received(data, where, refusal))

    def _too_large(self, where: str, size: int | None = None) -> None:
        seen = f" of {size} bytes" if size is not None else ""
        file_once(
            self._report,
            "wire.message",
            where,
            f"a message{seen} over the checker's limit of {MAX_MESSAGE} bytes was dropped",
        )

    def _learn(self, data: bytes) -> None:
        """Learn the negotiated version and tools' header annotations from answers."""
        message = incoming(data)
        if message is None or message.method is not None or not message.result:
            return
        if message.id == self._initialize_id and message.id is not UNSET:
            with suppress(*DECODE_FAILURES):
                result = _INITIALIZE_ANSWER.decode(data).result
                if result is not None and isinstance(result.protocol_version, str):
                    version = result.protocol_version[:64]
                    if _plain_header(version):
                        self.protocol_version = version
        if is_id(message.id) and message.id in self._tools_list_ids:
            self._tools_list_ids.discard(message.id)
            with suppress(*DECODE_FAILURES):
                tools = _TOOLS_ANSWER.decode(data).result
                for tool in (tools.tools or []) if tools is not None else []:
                    if len(self._tool_params) >= MAX_TOOLS:
                        break
                    if isinstance(tool.name, str) and isinstance(tool.input_schema, dict):
                        try:
                            self._tool_params[tool.name] = param_headers(tool.input_schema)
                        except MirrorError:
                            self._tool_params[tool.name] = ()

    def _params_of(self, name: str) -> Sequence[ParamHeader]:
        return self._tool_params.get(name, ())

    # -- headers -----------------------------------------------------------------------------------

    def _stateless(self, message: OutgoingEnvelope | None) -> bool:
        return stateless_version(message) is not None or is_stateless(self._revision)

    def _headers(self, data: bytes, message: OutgoingEnvelope | None) -> dict[str, str]:
        headers = {
            **self._target.headers,
            "Accept": ACCEPT_BOTH,
            "Content-Type": "application/json",
        }
        version = stateless_version(message)
        if version is not None or (message is not None and is_stateless(self._revision)):
            try:
                headers.update(
                    request_headers(data, self._params_of, protocol_version=self._revision)
                )
            except MirrorError:
                # A probe of a malformed message: send what can be sent, so that the
                # server judges the body, not missing headers.
                if version is not None and _plain_header(version):
                    headers["MCP-Protocol-Version"] = version
                method = None if message is None else message.method
                if isinstance(method, str) and _plain_header(method):
                    headers["Mcp-Method"] = method
            return headers
        if is_stateless(self._revision):
            headers["MCP-Protocol-Version"] = self._revision
            return headers
        negotiated = self.protocol_version
        if negotiated is not None and negotiated >= VERSION_HEADER_SINCE:
            headers["MCP-Protocol-Version"] = negotiated
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    # -- posting -----------------------------------------------------------------------------------

    async def _cancel_stream(self, message: OutgoingEnvelope) -> bool:
        """2026-07-28: cancelling is closing the request's response stream (nothing is
        posted: ``True``). Earlier revisions post the notification and keep reading."""
        request_id = None if message.params is None else message.params.request_id
        stateless = is_stateless(self._revision) or (
            is_id(request_id) and request_id in self._stateless_ids
        )
        if not stateless:
            return False
        if is_id(request_id):
            scope = self._streams.get(request_id)
            if scope is not None:
                scope.cancel()
        return True

    async def _post_inline(
        self, number: int, data: bytes, message: OutgoingEnvelope, kind: str
    ) -> None:
        """Post a notification or response; judge the acknowledgement."""
        status, body, unfinished = await self._post_acknowledged(
            self._target.url, data, self._headers(data, message)
        )
        what = message.method if kind == "notification" else "a response"
        if 200 <= status < 300 and (status != 202 or body.strip() or unfinished):
            shown = "a body" if body.strip() else "no body"
            if unfinished:
                shown = f"a body that did not end in {self._timeout:g} s"
            self._file(
                "http.status",
                f"{what} was answered {status} with {shown}; a notification or response "
                "the server accepts is answered 202 Accepted with no body "
                f"({transport_page(self._revision)}, Sending Messages)",
            )
        if (
            message.method == "notifications/initialized"
            and status < 300
            and not self._listening
            and not is_stateless(self._revision)
        ):
            self._listening = True
            self._spawn(self._listen)

    async def _post_acknowledged(
        self, url: str, data: bytes, headers: dict[str, str]
    ) -> tuple[int, bytes, bool]:
        """POST a message answered by an acknowledgement: its status, the start of its
        body, and whether the body was still coming at the timeout (the whole exchange
        is bounded: httpx's timeout is per read, and a body trickling in never ends).
        Raises :class:`LinkClosed` when the POST fails or gets no answer in time."""
        status: int | None = None
        body = b""
        try:
            with anyio.move_on_after(self._timeout) as bounded:
                async with self._client.stream(
                    "POST", url, content=data, headers=headers, timeout=self._timeout
                ) as response:
                    status = response.status_code
                    try:
                        body = await read_body(response, 65536)
                    except BodyTooLarge:
                        body = b"(long)"
        except httpx.HTTPError as exc:
            raise LinkClosed(f"POST {url} failed: {exc!r}") from exc
        if status is None:
            raise LinkClosed(f"POST {url}: no answer in {self._timeout:g} s")
        return status, body, bounded.cancelled_caught

    async def _run_post(
        self,
        number: int,
        data: bytes,
        message: OutgoingEnvelope | None,
        kind: str,
        sent: anyio.Event,
    ) -> None:
        """Post a request (or bytes that are not JSON-RPC) and deliver what answers it."""

        async def trace(name: str, info: Mapping[str, Any]) -> None:
            if name.endswith("send_request_body.complete"):
                sent.set()

        request_id = message.id if message is not None and kind == "request" else None
        method = message.method if message is not None and kind == "request" else None
        if method == "initialize":
            self._initialize_id = request_id
            self.protocol_version = None
        elif method == "tools/list":
            if len(self._tools_list_ids) >= MAX_PENDING_LISTS:
                self._tools_list_ids.clear()  # never answered: forget them
            self._tools_list_ids.add(request_id)
        stateless = self._stateless(message)
        scope = anyio.CancelScope()
        if request_id is not None:
            self._streams[request_id] = scope
            if stateless:
                self._stateless_ids.add(request_id)
        headers = self._headers(data, message)
        try:
            with scope:
                async with self._client.stream(
                    "POST",
                    self._target.url,
                    content=data,
                    headers=headers,
                    timeout=self._stream_timeout,
                    extensions={"trace": trace},
                ) as response:
                    sent.set()
                    await self._answer(number, data, message, kind, response, stateless)
        except httpx.HTTPError as exc:
            if method == "initialize" or (stateless and not self._opened):
                self._end(f"POST of {method or 'the first request'} failed: {_failure(exc)}")
        except BodyTooLarge:
            self._too_large(f"POST {number} response")
        except LinkClosed as exc:  # the HTTP+SSE fallback's POST failed
            self._end(str(exc))
        finally:
            sent.set()
            if request_id is not None and self._streams.get(request_id) is scope:
                del self._streams[request_id]
                self._stateless_ids.discard(request_id)

    async def _answer(
        self,
        number: int,
        data: bytes,
        message: OutgoingEnvelope | None,
        kind: str,
        response: httpx.Response,
        stateless: bool,
    ) -> None:
        status = response.status_code
        media = media_type(response)
        method = message.method if message is not None and kind == "request" else None
        if method == "initialize" and status < 300:
            self._learn_session(response)
        opening = method == "initialize" or (stateless and not self._opened)
        if opening and status == 401:
            self.access_refused = self._refusal(method, response)
            self._end(self.access_refused)
            return
        if (
            method == "initialize"
            and status in (400, 404, 405)
            and not is_stateless(self._revision)
        ):
            body = await read_body(response)
            if not _modern_error(body) and await self._switch_to_legacy():
                assert message is not None
                await self._post_legacy(number, data, message, kind)
                return
            if _json_rpc(body):
                await self._deliver(body, f"POST {number} response", refusal=True)
            else:
                self._end(
                    f"initialize was refused with HTTP {status} and the URL serves no "
                    "HTTP+SSE endpoint either"
                )
            return
        if kind == "request":
            assert message is not None
            if status < 300 and status != 200:
                self._file(
                    "http.status",
                    f"{method} was answered {status}; a request is answered 200 with "
                    "application/json or text/event-stream "
                    f"({transport_page(self._revision)}, Sending Messages)",
                )
            if status < 300 and media not in ("application/json", "text/event-stream"):
                self._file(
                    "http.headers",
                    f"{method} was answered with Content-Type {media or '(none)'}; a request "
                    "is answered with application/json or text/event-stream "
                    f"({transport_page(self._revision)}, Sending Messages)",
                )
            if stateless and status < 300 and "mcp-session-id" in response.headers:
                file_once(self._report, "http.session", self._where(), minted_why(method))
        if media == "text/event-stream" and status < 300:
            self._opened = True
            await self._read_stream(number, message, kind, response, status, stateless)
            return
        if status < 300:
            self._opened = True
        body = await read_body(response)
        if media == "application/json" or _json_rpc(body):
            if kind == "request" and body.strip():
                assert message is not None
                self._judge_answer(body, message, status, stateless)
                await self._deliver(body, f"POST {number} response", refusal=status >= 300)
                return
            if body.strip():
                await self._deliver(body, f"POST {number} response", refusal=status >= 300)
                return
        if status >= 300 and opening:
            # Nothing will answer: the server does not speak this revision here.
            self._end(f"{method} was refused with HTTP {status} and no JSON-RPC body")

    async def _read_stream(
        self,
        number: int,
        message: OutgoingEnvelope | None,
        kind: str,
        response: httpx.Response,
        status: int,
        stateless: bool,
    ) -> None:
        first = kind == "request"
        async for data, where in self._events(response, f"POST {number}"):
            if first:
                assert message is not None
                self._judge_answer(data, message, status, stateless)
                first = False
            await self._deliver(data, where)

    async def _events(
        self, response: httpx.Response, label: str
    ) -> AsyncIterator[tuple[bytes, str]]:
        """The data of each ``message`` event of an SSE ``response``, with where it was
        (``label event N``); an event over the limit is filed and skipped."""
        decoder = SseDecoder(MAX_MESSAGE)
        events = 0
        async for chunk in decoded_chunks(response, error=httpx.DecodingError):
            for event in decoder.feed(chunk):
                if event.event != "message":
                    continue
                events += 1
                where = f"{label} event {events}"
                if event.data is None:
                    self._too_large(where, event.size)
                else:
                    yield event.data, where
        if decoder.dropping:
            self._too_large(f"{label} event {events + 1}")

    def _judge_answer(
        self, data: bytes, message: OutgoingEnvelope, status: int, stateless: bool
    ) -> None:
        """The status an error answering ``message`` came with: 200 in the handshake
        eras; in 2026-07-28 the one its code maps to, else 200."""
        answer = incoming(data)
        if answer is None or answer.method is not None or answer.id != message.id:
            return
        page = transport_page(self._revision)
        method = message.method
        if answer.error is None:
            if answer.result and status != 200:
                self._file(
                    "http.status",
                    f"the result of {method} came with HTTP {status}; a request is answered "
                    f"200 ({page}, Sending Messages)",
                )
            return
        code = answer.error.code
        if not isinstance(code, int) or isinstance(code, bool):
            return
        if stateless:
            expected = STATUS_OF_CODE.get(code)
            if expected is not None:
                if status != expected:
                    self._file(
                        "http.status",
                        f"the {code} error answering {method} came with HTTP {status}; "
                        f"2026-07-28 sends it with {expected} ({page}, Protocol Version "
                        "Header and Server Validation; basic, error codes)",
                    )
                return
            allowed = (200, 400) if code in BODY_REFUSALS or code == -32602 else (200,)
        else:
            allowed = (200, 400) if code in BODY_REFUSALS else (200,)
        if status not in allowed:
            self._file(
                "http.status",
                f"the {code} error answering {method} came with HTTP {status}; JSON-RPC "
                "errors answering a request travel inside a 200"
                + (" unless 2026-07-28 maps their code to a status" if stateless else "")
                + f" ({page}; the Streamable HTTP contract)",
            )

    def _refusal(self, method: Any, response: httpx.Response) -> str:
        """Why a 401 keeps the checker out, and what to do about it."""
        challenge = response.headers.get("www-authenticate", "")
        plain = bool(challenge) and _plain_header(challenge)
        shown = f" (WWW-Authenticate: {challenge[:200]})" if plain else ""
        if any(name.lower() == "authorization" for name in self._target.headers):
            return (
                f"{method} was answered HTTP 401 Unauthorized{shown}: the server refused "
                "the Authorization header given with --header"
            )
        return (
            f"{method} was answered HTTP 401 Unauthorized{shown}: this server wants a "
            "token; pass it with --header 'Authorization: Bearer TOKEN'"
        )

    def _learn_session(self, response: httpx.Response) -> None:
        session_id = response.headers.get("mcp-session-id")
        if session_id is None:
            return
        if not visible_ascii(session_id):
            self._file(
                "http.headers",
                f"the Mcp-Session-Id {session_id[:80]!r} holds characters other than "
                "visible ASCII (0x21 to 0x7E) "
                f"({transport_page(self._revision)}, Session Management)",
            )
            return
        if len(session_id) <= MAX_SESSION_ID and not is_stateless(self._revision):
            self.session_id = session_id

    # -- the standalone GET stream -----------------------------------------------------------------

    async def _listen(self) -> None:
        """The server's own messages on the standalone ``GET`` stream, when offered."""
        headers = {**self._target.headers, "Accept": "text/event-stream"}
        if self.protocol_version is not None and self.protocol_version >= VERSION_HEADER_SINCE:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        try:
            async with self._client.stream(
                "GET", self._target.url, headers=headers, timeout=self._stream_timeout
            ) as response:
                if response.status_code != 200:
                    return  # 405, or refused: the GET probe judges it
                if media_type(response) != "text/event-stream":
                    self._file(
                        "http.headers",
                        f"GET was answered 200 with Content-Type {media_type(response) or '(none)'}"
                        "; a GET is answered with text/event-stream or 405 "
                        f"({transport_page(self._revision)}, Listening for Messages)",
                        method="GET",
                    )
                    return
                async for data, where in self._events(response, "GET stream"):
                    await self._deliver(data, where)
        except httpx.HTTPError:
            return

    # -- HTTP+SSE (2024-11-05) ---------------------------------------------------------------------

    async def _switch_to_legacy(self) -> bool:
        async with self._switching:
            if self._legacy is not None:
                return True
            channel = LegacySseChannel(
                self._client,
                headers=self._target.headers,
                auth=httpx.USE_CLIENT_DEFAULT,
                timeout=self._stream_timeout,
                max_message_size=MAX_MESSAGE,
                deliver=self._deliver_legacy,
                ended=self._end,
            )
            for url in sse_urls(self._target.url):
                try:
                    await channel.open(self._tasks, url, wait=self._timeout)
                except NoSseEndpoint:
                    continue
                self._legacy = channel
                self.transport = "sse"
                return True
            return False

    async def _deliver_legacy(self, item: bytes | MessageTooLarge) -> None:
        self._sse_events += 1
        where = f"SSE stream event {self._sse_events}"
        if isinstance(item, MessageTooLarge):
            self._too_large(where)
            return
        if self._closed:
            return
        await self._deliver(item, where)

    async def _post_legacy(
        self, number: int, data: bytes, message: OutgoingEnvelope | None, kind: str
    ) -> None:
        """Post a message to the HTTP+SSE endpoint; what it causes comes on the stream."""
        channel = self._legacy
        assert channel is not None and channel.endpoint is not None
        if kind == "request" and message is not None and message.method == "initialize":
            self._initialize_id = message.id
        headers = {**self._target.headers, "Content-Type": "application/json"}
        status, _, _ = await self._post_acknowledged(channel.endpoint, data, headers)
        if kind != "other" and 200 <= status < 300 and status not in (200, 202, 204):
            path = urlsplit(channel.endpoint).path or "/"
            file_once(
                self._report,
                "http.status",
                f"POST {path}",
                f"a message posted to the HTTP+SSE endpoint was answered {status}; it is "
                "accepted with 202 (or 200), the answer travelling on the SSE stream "
                "(2024-11-05 transports, HTTP with SSE)",
            )


def _failure(exc: httpx.HTTPError) -> str:
    """What went wrong with an HTTP request, in words."""
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect ({exc or 'connection refused'})"
    if isinstance(exc, httpx.TimeoutException):
        return "no answer in time"
    return f"{type(exc).__name__}: {exc}"


def _json_rpc(body: bytes) -> bool:
    """Whether ``body`` reads as one JSON-RPC message (or a batch of them)."""
    head = body.lstrip()[:1]
    if head == b"[":
        try:
            items = msgspec.json.decode(body)
        except DECODE_FAILURES:
            return False
        return isinstance(items, list) and bool(items)
    message = incoming(body) if head == b"{" else None
    return message is not None


def _modern_error(body: bytes) -> bool:
    """Whether ``body`` is a JSON-RPC error only a 2026-07-28 server sends."""
    message = incoming(body)
    return (
        message is not None
        and message.error is not None
        and isinstance(message.error.code, int)
        and message.error.code in MODERN_CODES
    )
