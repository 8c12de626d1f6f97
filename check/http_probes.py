"""Probes of the rules only HTTP has: :func:`check_http`.

Each probe sends one deliberately unusual HTTP request on a session (or, in
2026-07-28, a request) of its own and judges the status (and, where the rule says,
the JSON-RPC error) that comes back:

* handshake revisions over Streamable HTTP: a request without the ``Mcp-Session-Id``
  the server minted (400, ``http.session``), with an unknown one (404,
  ``http.session``), with an unsupported ``MCP-Protocol-Version`` (400, from
  2025-06-18), ``GET`` (``text/event-stream`` or 405), ``GET`` not accepting an event
  stream (405/406, or a stream anyway, but nothing else), ``DELETE`` (2xx or 405; after
  a 2xx the session's id is answered 404), ``notifications/initialized`` (202, no body);
* 2026-07-28: ``GET`` and ``DELETE`` (405; never a 2xx), a mirrored header that does not
  match the body or is missing (400 with -32020), an unsupported version (400 with
  -32022 naming the ``supported`` versions), an unknown method (404 with -32601), a
  notification (202, no body), and no session ids.

Problems are filed with the rule they break (``where`` is ``"METHOD path"``); each
check with probes that all passed gets one PASSED finding saying what was seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio
import httpx
import msgspec

from mcpspec.runtime.connection.http.client import media_type
from mcpspec.runtime.connection.http.decoding import decoded_chunks
from mcpspec.runtime.connection.http.sse_decoder import SseDecoder
from mcpspec.runtime.errors import show
from mcpspec.runtime.session.version_negotiation import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    is_stateless,
)

from .findings import Finding, Outcome, RevisionReport, broken
from .http_wire import (
    ACCEPT_BOTH,
    MAX_MESSAGE,
    VERSION_HEADER_SINCE,
    BodyTooLarge,
    file_once,
    incoming,
    minted_why,
    read_body,
    transport_page,
    unknown_session_id,
    visible_ascii,
)

if TYPE_CHECKING:
    from .http import HttpTarget

__all__ = ["HTTP_CHECKS", "check_http"]

#: The checks the probes speak for.
HTTP_CHECKS: Final = ("http.status", "http.headers", "http.origin", "http.session")
_CLIENT_INFO: Final = {"name": "mcpspec-check", "version": "1"}
#: A protocol version no server speaks.
_UNSUPPORTED: Final = "1999-01-01"
#: An origin no server allows (``.invalid`` is never a real domain).
FOREIGN_ORIGIN: Final = "http://mcpspec-check.invalid"
#: The first revision naming the answer to an invalid Origin: 403 Forbidden.
ORIGIN_403_SINCE: Final = "2025-11-25"
#: Why an error with id null does not answer a request whose id could be read.
ID_NULL_WHY: Final = (
    "an HTTP probe's request, whose id could be read, was answered with an error with id "
    "null: JSON-RPC 2.0 keeps id null for requests whose id could not be read, and every "
    "MCP revision says error responses include the id of the request they answer"
)


class _Options(Protocol):
    """What the probes read of the run's options."""

    @property
    def timeout(self) -> float: ...


@dataclass
class _Exchange:
    """One HTTP exchange: its status, media type, headers and the JSON-RPC messages
    of its body (one for JSON; each event's data for an event stream)."""

    status: int
    media: str
    headers: httpx.Headers
    messages: list[bytes] = field(default_factory=list)

    def error(self) -> tuple[Any, Any]:
        """The code and data of the first message's error (``(None, None)`` if none)."""
        for data in self.messages:
            try:
                decoded = msgspec.json.decode(data)
            except (msgspec.DecodeError, RecursionError):
                continue
            error = decoded.get("error") if isinstance(decoded, dict) else None
            if isinstance(error, dict):
                return error.get("code"), error.get("data")
            return None, None
        return None, None

    def shown(self) -> str:
        """The answer, briefly, for a finding's ``why``."""
        code, _ = self.error()
        error = f" with JSON-RPC error {show(code)}" if code is not None else ""
        return f"{self.status}{error}"


class _Probes:
    def __init__(
        self,
        target: HttpTarget,
        revision: str,
        report: RevisionReport,
        client: httpx.AsyncClient,
        timeout: float,
    ) -> None:
        self.target = target
        self.revision = revision
        self.report = report
        self.client = client
        self.timeout = timeout
        self.page = transport_page(revision)
        recorder = target.recorder
        #: Where the probes' traffic is recorded (``--record``), if anywhere.
        self.recording = (
            recorder.open(revision, "http-probes", "http") if recorder is not None else None
        )
        self._exchanges = 0
        #: What passed, by check.
        self.passed: dict[str, list[str]] = {check: [] for check in HTTP_CHECKS}
        #: Why a check did not run, when it did not.
        self.skipped: dict[str, str] = {}
        self._ids = 0

    # -- recording ---------------------------------------------------------------------------------

    def problem(self, check: str, method: str, why: str) -> None:
        file_once(self.report, check, f"{method} {self.target.path}", why)

    def ok(self, check: str, what: str) -> None:
        self.passed[check].append(what)

    def finish(self) -> None:
        """One PASSED finding per check whose probes passed (and that has no problem
        in the report), or one SKIPPED when none of its probes could run."""
        findings = self.report.findings
        for check in HTTP_CHECKS:
            if any(f.check == check and f.outcome is not Outcome.SKIPPED for f in findings):
                continue  # a problem was filed, or the check passed already
            if self.passed[check]:
                why = "; ".join(self.passed[check])
                self.report.add(Finding(check, Outcome.PASSED, "", why, self.revision))
            elif check in self.skipped:
                self.report.add(
                    Finding(check, Outcome.SKIPPED, "", self.skipped[check], self.revision)
                )

    # -- HTTP --------------------------------------------------------------------------------------

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def headers(self, **extra: str) -> dict[str, str]:
        return {
            **self.target.headers,
            "Accept": ACCEPT_BOTH,
            "Content-Type": "application/json",
            **extra,
        }

    async def exchange(
        self,
        method: str,
        headers: dict[str, str],
        body: Any = None,
        *,
        answer_of: Any = None,
        read: bool = True,
    ) -> _Exchange | None:
        """Send one HTTP request; read its messages (up to the one answering
        ``answer_of``, within the time limit). ``None`` when the exchange failed. An
        error with id null answering an accepted request with an id is filed, as the
        conversation files it."""
        content = msgspec.json.encode(body) if body is not None else None
        self._exchanges += 1
        label = f"{method} {self._exchanges}"
        if self.recording is not None and content is not None:
            self.recording.write("client", content, label)
        try:
            with anyio.fail_after(self.timeout):
                async with self.client.stream(
                    method, self.target.url, content=content, headers=headers
                ) as response:
                    exchange = _Exchange(
                        response.status_code, media_type(response), response.headers
                    )
                    if read:
                        await self._read(response, exchange, answer_of)
        except (httpx.HTTPError, TimeoutError, BodyTooLarge):
            return None
        if self.recording is not None:
            for data in exchange.messages:
                self.recording.write("server", data, f"{label} response (HTTP {exchange.status})")
        # Only an accepted request's answer: a refusal (300 and up) is the transport's,
        # its JSON-RPC request unread, as the conversation judges it.
        accepted = 200 <= exchange.status < 300
        if accepted and isinstance(body, dict) and "id" in body:
            self._id_null(method, body, exchange)
        return exchange

    def _id_null(self, method: str, body: dict[str, Any], exchange: _Exchange) -> None:
        for data in exchange.messages:
            try:
                decoded = msgspec.json.decode(data)
            except (msgspec.DecodeError, RecursionError):
                continue
            if isinstance(decoded, dict) and "error" in decoded and decoded.get("id") is None:
                answered = f"{body.get('method')}, HTTP {exchange.status}"
                where = f"{method} {self.target.path} ({answered})"
                finding = broken("protocol.responses", where, ID_NULL_WHY, self.revision)
                self.report.add(replace(finding, probe="HTTP probes"))
                return

    async def _read(self, response: httpx.Response, exchange: _Exchange, answer_of: Any) -> None:
        if exchange.media == "text/event-stream":
            decoder = SseDecoder(MAX_MESSAGE)
            async for chunk in decoded_chunks(response, error=httpx.DecodingError):
                for event in decoder.feed(chunk):
                    if event.event == "message" and event.data is not None:
                        answer = incoming(event.data)
                        # The first message and the responses are what is judged; a
                        # stream of others is not kept.
                        if len(exchange.messages) < _KEPT_MESSAGES and (
                            not exchange.messages or answer is None or answer.method is None
                        ):
                            exchange.messages.append(event.data)
                        if answer is None or answer.method is not None:
                            continue
                        if answer_of is None or answer.id == answer_of:
                            return
            return
        body = await read_body(response)
        if body.strip():
            exchange.messages.append(body)

    # -- handshake revisions -----------------------------------------------------------------------

    async def handshake(self) -> None:
        request_id = self.next_id()
        opening = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "initialize",
            "params": {
                "protocolVersion": self.revision,
                "capabilities": {},
                "clientInfo": _CLIENT_INFO,
            },
        }
        answer = await self.exchange("POST", self.headers(), opening, answer_of=request_id)
        version = _initialize_version(answer, request_id) if answer is not None else None
        if answer is None or version is None:
            seen = "no answer" if answer is None else f"HTTP {answer.shown()}"
            reason = (
                f"initialize over Streamable HTTP was not answered with a result ({seen}): "
                "the HTTP probes did not run"
            )
            for check in HTTP_CHECKS:
                self.skipped[check] = reason
            return
        session_id = answer.headers.get("mcp-session-id")
        if session_id is not None:
            if visible_ascii(session_id):
                self.ok("http.headers", "Mcp-Session-Id is visible ASCII")
            else:
                self.problem(
                    "http.headers",
                    "POST",
                    f"the Mcp-Session-Id {session_id[:80]!r} holds characters other than "
                    f"visible ASCII (0x21 to 0x7E) ({self.page}, Session Management)",
                )
                session_id = None
        session: dict[str, str] = {}
        if version >= VERSION_HEADER_SINCE:
            session["MCP-Protocol-Version"] = version
        if session_id is not None:
            session["Mcp-Session-Id"] = session_id
        await self.notification_202(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}, session
        )
        if session_id is not None:
            await self.missing_session(session)
            await self.unknown_session(session)
        else:
            self.skipped["http.session"] = (
                "the server minted no Mcp-Session-Id (sessions are optional)"
            )
        if version >= VERSION_HEADER_SINCE:
            await self.unsupported_version_header(session)
        await self.get_stream(session)
        await self.get_without_event_stream(session)
        if session_id is not None:
            await self.delete(session)
        opening["id"] = self.next_id()
        await self.foreign_origin(opening, self.headers())

    async def foreign_origin(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        """The opening request from a foreign ``Origin`` (a page of another site, the
        DNS rebinding attack): refused, with 403 from 2025-11-25."""
        headers = {**headers, "Origin": FOREIGN_ORIGIN}
        # (2025-11-25: the 403's body "MAY comprise a JSON-RPC error response that has
        # no id": a refusal, which the exchange does not judge for ids.)
        answer = await self.exchange("POST", headers, body, answer_of=body["id"])
        if answer is None:
            return
        session_id = answer.headers.get("mcp-session-id")
        if session_id is not None and 200 <= answer.status < 300 and visible_ascii(session_id):
            # Accepted: end the session it opened (unjudged).
            await self.exchange("DELETE", {**self.target.headers, "Mcp-Session-Id": session_id})
        what = f"{body['method']} with Origin: {FOREIGN_ORIGIN}"
        section = "Security & Endpoint 1" if is_stateless(self.revision) else "Security Warning 1"
        if answer.status == 403:
            self.ok("http.origin", f"{what} got 403")
        elif self.revision >= ORIGIN_403_SINCE:
            self.problem(
                "http.origin",
                "POST",
                f"{what} was answered {answer.shown()}; 'If the Origin header is present and "
                "invalid, servers MUST respond with HTTP 403 Forbidden' "
                f"({self.page}, {section})",
            )
        elif 200 <= answer.status < 300:
            self.problem(
                "http.origin",
                "POST",
                f"{what} was accepted ({answer.status}); 'Servers MUST validate the Origin "
                "header on all incoming connections to prevent DNS rebinding attacks' "
                f"({self.page}, {section}; 2025-11-25 names the answer: 403 "
                "Forbidden)",
            )
        else:
            self.ok("http.origin", f"{what} refused with {answer.status}")

    def ping(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.next_id(), "method": "ping"}

    async def notification_202(self, body: dict[str, Any], extra: dict[str, str]) -> None:
        answer = await self.exchange("POST", self.headers(**extra), body)
        if answer is None:
            return
        method = body["method"]
        if 200 <= answer.status < 300:
            if answer.status != 202 or answer.messages:
                shown = "a body" if answer.messages else "no body"
                self.problem(
                    "http.status",
                    "POST",
                    f"{method} was answered {answer.status} with {shown}; a notification or "
                    "response the server accepts is answered 202 Accepted with no body "
                    f"({self.page}, Sending Messages)",
                )
            else:
                self.ok("http.status", f"{method} answered 202 with no body")
        else:
            self.ok("http.status", f"{method} refused with {answer.status}")

    async def missing_session(self, session: dict[str, str]) -> None:
        extra = {k: v for k, v in session.items() if k != "Mcp-Session-Id"}
        await self._session_ping(
            extra,
            400,
            "without Mcp-Session-Id",
            "without the Mcp-Session-Id the server minted",
            f"a server that requires a session answers 400 Bad Request "
            f"({self.page}, Session Management 2)",
        )

    async def unknown_session(self, session: dict[str, str]) -> None:
        extra = {**session, "Mcp-Session-Id": unknown_session_id()}
        await self._session_ping(
            extra,
            404,
            "with an unknown Mcp-Session-Id",
            "with an Mcp-Session-Id the server never minted",
            "no rule names the status for an id the server never minted, but a client "
            "starts a new session only on 404 (Session Management 4: 'When a client "
            "receives HTTP 404 in response to a request containing an Mcp-Session-Id, it "
            "MUST start a new session'), and a terminated session's id gets 404 (Session "
            f"Management 3): answer 404 Not Found so that the client recovers ({self.page})",
        )

    async def _session_ping(
        self, headers: dict[str, str], status: int, short: str, sent: str, rule: str
    ) -> None:
        """A ping with ``headers`` (the session headers, altered): ``http.session``
        passes when it is answered ``status``."""
        answer = await self.exchange("POST", self.headers(**headers), self.ping())
        if answer is None:
            return
        if answer.status == status:
            self.ok("http.session", f"a request {short} got {status}")
            return
        self.problem("http.session", "POST", f"a ping {sent} was answered {answer.shown()}; {rule}")

    async def unsupported_version_header(self, session: dict[str, str]) -> None:
        extra = {**session, "MCP-Protocol-Version": _UNSUPPORTED}
        answer = await self.exchange("POST", self.headers(**extra), self.ping())
        if answer is None:
            return
        if answer.status == 400:
            self.ok("http.status", "an unsupported MCP-Protocol-Version got 400")
            return
        self.problem(
            "http.status",
            "POST",
            f"a ping with MCP-Protocol-Version: {_UNSUPPORTED} was answered {answer.shown()}; "
            "an invalid or unsupported MCP-Protocol-Version is answered 400 Bad Request "
            f"({self.page}, Protocol Version Header)",
        )

    async def get_stream(self, session: dict[str, str]) -> None:
        headers = {**self.target.headers, "Accept": "text/event-stream", **session}
        answer = await self.exchange("GET", headers, read=False)
        if answer is None:
            return
        if answer.status == 405 or (answer.status == 200 and answer.media == "text/event-stream"):
            self.ok("http.status", f"GET got {answer.status}")
            return
        self.problem(
            "http.status",
            "GET",
            f"GET with Accept: text/event-stream was answered {answer.status} "
            f"{answer.media or '(no content)'}; the server returns text/event-stream or "
            f"405 Method Not Allowed ({self.page}, Listening for Messages 3)",
        )

    async def get_without_event_stream(self, session: dict[str, str]) -> None:
        headers = {**self.target.headers, "Accept": "application/json", **session}
        answer = await self.exchange("GET", headers, read=False)
        if answer is None:
            return
        if answer.status < 300 and answer.media != "text/event-stream":
            self.problem(
                "http.status",
                "GET",
                f"GET with Accept: application/json was answered {answer.status} "
                f"{answer.media or '(no content)'}; a GET is answered with text/event-stream "
                f"or 405 Method Not Allowed, and refused (405, 406) when the client does not "
                f"accept an event stream ({self.page}, Listening for Messages)",
            )
            return
        self.ok("http.status", f"GET not accepting text/event-stream got {answer.status}")

    async def delete(self, session: dict[str, str]) -> None:
        headers = {**self.target.headers, **session}
        answer = await self.exchange("DELETE", headers)
        if answer is None:
            return
        if answer.status == 405:
            self.ok("http.status", "DELETE got 405")
            return
        if not 200 <= answer.status < 300:
            self.problem(
                "http.status",
                "DELETE",
                f"DELETE of the session was answered {answer.shown()}; the server ends the "
                "session (2xx) or answers 405 Method Not Allowed "
                f"({self.page}, Session Management 5)",
            )
            return
        after = await self.exchange("POST", self.headers(**session), self.ping())
        if after is None:
            return
        if after.status == 404:
            self.ok("http.status", f"DELETE got {answer.status}, then the ended session 404")
            return
        self.problem(
            "http.status",
            "POST",
            f"a ping on the session DELETE ended ({answer.status}) was answered "
            f"{after.shown()}; a request naming a terminated session is answered 404 Not "
            f"Found ({self.page}, Session Management 3)",
        )

    # -- 2026-07-28 --------------------------------------------------------------------------------

    def meta(self, version: str | None = None) -> dict[str, Any]:
        return {
            META_PROTOCOL_VERSION: version or self.revision,
            META_CLIENT_INFO: _CLIENT_INFO,
            META_CLIENT_CAPABILITIES: {},
        }

    def modern(self, method: str, version: str | None = None) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "id": self.next_id(),
            "method": method,
            "params": {"_meta": self.meta(version)},
        }

    def mirrored(self, method: str, version: str | None = None) -> dict[str, str]:
        return self.headers(
            **{"MCP-Protocol-Version": version or self.revision, "Mcp-Method": method}
        )

    async def stateless(self) -> None:
        discover = self.modern("server/discover")
        answer = await self.exchange(
            "POST", self.mirrored("server/discover"), discover, answer_of=discover["id"]
        )
        if answer is None or _answer(answer, discover["id"]) is None:
            seen = "no answer" if answer is None else f"HTTP {answer.shown()}"
            reason = (
                f"server/discover of {self.revision} was not answered with a result ({seen}): "
                "the HTTP probes did not run"
            )
            for check in HTTP_CHECKS:
                self.skipped[check] = reason
            return
        if 200 <= answer.status < 300:
            if answer.media in ("application/json", "text/event-stream"):
                self.ok("http.headers", f"server/discover answered with {answer.media}")
            else:
                self.problem(
                    "http.headers",
                    "POST",
                    f"server/discover was answered with Content-Type "
                    f"{answer.media or '(none)'}; a request is answered with application/json "
                    f"or text/event-stream ({self.page}, Sending Messages 6)",
                )
            if "mcp-session-id" in answer.headers:
                self.problem("http.session", "POST", minted_why("server/discover"))
            else:
                self.ok("http.session", "no Mcp-Session-Id minted")
        await self.refused_method("GET")
        await self.refused_method("DELETE")
        await self.header_mismatch()
        await self.header_missing()
        await self.unsupported_version()
        await self.unknown_method()
        await self.notification_202(
            {"jsonrpc": "2.0", "method": "notifications/mcpspec-check"},
            {"MCP-Protocol-Version": self.revision, "Mcp-Method": "notifications/mcpspec-check"},
        )
        await self.foreign_origin(self.modern("server/discover"), self.mirrored("server/discover"))

    async def refused_method(self, method: str) -> None:
        headers = {
            **self.target.headers,
            "Accept": "text/event-stream",
            "MCP-Protocol-Version": self.revision,
        }
        answer = await self.exchange(method, headers, read=False)
        if answer is None:
            return
        if 200 <= answer.status < 300:
            self.problem(
                "http.status",
                method,
                f"{method} with MCP-Protocol-Version: {self.revision} was answered "
                f"{answer.status}; 2026-07-28 has no GET stream and no sessions to delete: "
                f"{method} is answered 405 Method Not Allowed "
                f"({self.page}, Backward Compatibility)",
            )
            return
        self.ok("http.status", f"{method} got {answer.status}")

    def _modern_error(
        self, answer: _Exchange, status: int, code: int, what: str, rule: str, method: str
    ) -> None:
        got_code, _ = answer.error()
        if answer.status == status and got_code == code:
            self.ok("http.status", f"{what} got {status} with {code}")
            return
        self.problem(
            "http.status",
            method,
            f"{what} was answered {answer.shown()}; it is answered {status} with JSON-RPC "
            f"error {code} ({self.page}, {rule})",
        )

    async def header_mismatch(self) -> None:
        body = self.modern("server/discover")
        headers = self.mirrored("server/discover")
        headers["Mcp-Method"] = "tools/list"
        answer = await self.exchange("POST", headers, body, answer_of=body["id"])
        if answer is not None:
            self._modern_error(
                answer,
                400,
                -32020,
                "server/discover with Mcp-Method: tools/list",
                "Server Validation",
                "POST",
            )

    async def header_missing(self) -> None:
        body = self.modern("server/discover")
        headers = self.mirrored("server/discover")
        del headers["Mcp-Method"]
        answer = await self.exchange("POST", headers, body, answer_of=body["id"])
        if answer is not None:
            self._modern_error(
                answer,
                400,
                -32020,
                "server/discover without Mcp-Method",
                "Server Validation",
                "POST",
            )

    async def unsupported_version(self) -> None:
        body = self.modern("server/discover", _UNSUPPORTED)
        headers = self.mirrored("server/discover", _UNSUPPORTED)
        answer = await self.exchange("POST", headers, body, answer_of=body["id"])
        if answer is None:
            return
        code, data = answer.error()
        supported = data.get("supported") if isinstance(data, dict) else None
        listed = (
            isinstance(supported, list)
            and bool(supported)
            and all(isinstance(v, str) for v in supported)
        )
        if answer.status == 400 and code == -32022 and listed:
            self.ok("http.status", "an unsupported version got 400 with -32022 and supported")
            return
        detail = "" if listed or code != -32022 else " without a list of supported versions"
        self.problem(
            "http.status",
            "POST",
            f"server/discover of version {_UNSUPPORTED} was answered {answer.shown()}{detail}; "
            "it is answered 400 Bad Request with an UnsupportedProtocolVersionError (-32022) "
            f"listing the supported versions ({self.page}, Protocol Version Header)",
        )

    async def unknown_method(self) -> None:
        body = self.modern("mcpspec/no-such-method")
        answer = await self.exchange(
            "POST", self.mirrored("mcpspec/no-such-method"), body, answer_of=body["id"]
        )
        if answer is not None:
            self._modern_error(
                answer,
                404,
                -32601,
                "an unknown method",
                "Protocol Version Header",
                "POST",
            )


#: Messages of one probe's answer kept at most (the first, then responses).
_KEPT_MESSAGES: Final = 8


def _answer(answer: _Exchange, request_id: int) -> dict[str, Any] | None:
    """The result answering ``request_id`` in a 2xx ``answer``, if one came."""
    if not 200 <= answer.status < 300:
        return None
    for data in answer.messages:
        try:
            decoded = msgspec.json.decode(data)
        except (msgspec.DecodeError, RecursionError):
            continue
        if isinstance(decoded, dict) and decoded.get("id") == request_id:
            result = decoded.get("result")
            return result if isinstance(result, dict) else None
    return None


def _initialize_version(answer: _Exchange, request_id: int) -> str | None:
    """The protocol version of the initialize result in ``answer``, if one came."""
    result = _answer(answer, request_id) if answer.status == 200 else None
    version = result.get("protocolVersion") if result is not None else None
    if isinstance(version, str) and version.isascii() and version.isprintable():
        return version[:64]
    return None


async def check_http(
    target: HttpTarget, revision: str, report: RevisionReport, options: _Options
) -> None:
    """Run the HTTP probes of ``revision`` against ``target``, filing findings into
    ``report``: problems as they are found, then one PASSED finding per check whose
    probes all passed (or SKIPPED, with why, when none could run). A revision the
    server did not accept (``report.accepted is False``) is not probed."""
    probes: _Probes | None = None
    if report.accepted is False:
        for check in HTTP_CHECKS:
            if not any(f.check == check for f in report.findings):
                report.add(
                    Finding(
                        check,
                        Outcome.SKIPPED,
                        "",
                        f"the server did not accept {revision}",
                        revision,
                    )
                )
        return
    async with target.client() as client:
        probes = _Probes(target, revision, report, client, options.timeout)
        try:
            if is_stateless(revision):
                await probes.stateless()
            else:
                await probes.handshake()
        finally:
            if probes.recording is not None:
                probes.recording.close()
    probes.finish()
