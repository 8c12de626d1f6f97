"""A whole check: every revision on a fresh connection, then the negotiation corner cases.

For each revision asked for (newest first):

1. connect; for a handshake revision, write ``tools/list`` before anything else (the
   lifecycle gate), then ``initialize`` offering the revision; for 2026-07-28, probe
   ``server/discover`` and a request with an unsupported version (-32022);
2. a server that answers with another revision does not speak this one: the revision is
   marked not accepted and the run goes on with the next (that is negotiation working);
   a server that fails negotiation (an error, an invalid result) stops the revision,
   unless ``lenient``;
3. the raw probes (``ping``, unknown method, invalid params, malformed JSON), the surface
   (lists with every page, reads, prompts, schemas, tool calls with ``call_tools``) and a
   cancellation; on HTTP, the transport's own probes;
4. every check that saw traffic and found nothing gets a ``passed`` finding.

Then, on a server that speaks a handshake revision, two more connections offer a version
no revision has and one older than all: the answer must be a version the server speaks.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import mcpspec
import mcpspec.check.probes as probes  # not ``from . import``: __init__ imports this lazily
from mcpspec.runtime import ClientSession, Limits
from mcpspec.runtime.errors import clip, show
from mcpspec.runtime.session.version_negotiation import is_stateless

from .conversation import CLIENT_CAPABILITIES, CLIENT_INFO, Conversation, Reply
from .errors import Unreachable
from .findings import Finding, Outcome, Report, RevisionReport
from .link import Target
from .record import Recorder
from .secrets import Secrets

__all__ = ["Listener", "Options", "check_server"]

#: Called with a status line (what the run is doing) and the finding just made, if any.
Listener = Callable[[str, Finding | None], None]

#: A version no revision has, and a real one older than every revision (a pre-release
#: some servers still speak: echoing it is allowed, the checker cannot speak it though).
UNKNOWN_VERSION: Final = "1999-01-01"
OLD_VERSION: Final = "2024-10-07"
#: The checker takes large messages (a big resource is no defect).
LIMITS: Final = Limits(max_message_bytes=64 * 1024 * 1024)


@dataclass(frozen=True)
class Options:
    """How to check: which revisions (default all, newest first), whether tools may be
    called (they may have side effects), whether to go on past a failed negotiation,
    how long to wait for one answer, who hears about progress, and where to record the
    traffic."""

    revisions: tuple[str, ...] = field(default_factory=lambda: tuple(reversed(mcpspec.REVISIONS)))
    call_tools: bool = False
    lenient: bool = False
    timeout: float = 10.0
    listener: Listener | None = None
    #: A directory to record every connection's traffic in (see :mod:`.record`).
    record: str | os.PathLike[str] | None = None


async def check_server(
    target: Target | None = None,
    options: Options | None = None,
    *,
    command: Sequence[str] | None = None,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Report:
    """Check a server in every revision ``options`` names; the report of all findings.

    Name the server by one of ``target`` (a :class:`~.link.Target`), ``command`` (a stdio
    server's command line, with its ``env`` and ``cwd``) or ``url`` (an HTTP endpoint,
    with ``headers`` for every request)::

        report = await check_server(command=["python", "server.py"])
        assert report.exit_status() == 0, render(report)

    Raises :class:`~.errors.Unreachable` when the server could not be reached at all,
    :class:`~.errors.CheckError` when it cannot be started."""
    options = options or Options()
    target = _target(target, command, url, headers, env, cwd, options.timeout)
    # Credentials given for the run (an HTTP target's) are masked in all it shows.
    secrets: Secrets = getattr(target, "secrets", None) or Secrets()
    if options.record is not None:
        if not hasattr(target, "recorder"):
            raise ValueError(f"{type(target).__name__} cannot record its traffic")
        target.recorder = Recorder(options.record, target.description, secrets)
    try:
        report = await _run(target, options)
    except Unreachable as exc:
        raise Unreachable(secrets.text(str(exc))) from None
    secrets.report(report)
    return report


async def _run(target: Target, options: Options) -> Report:
    """The run of :func:`check_server` on ``target``."""
    unknown = [r for r in options.revisions if r not in mcpspec.REVISIONS]
    if unknown:
        raise ValueError(f"unknown revisions {unknown}; known: {list(mcpspec.REVISIONS)}")
    report = Report(target.description)
    start = time.perf_counter()
    contacts: list[_Contact] = []
    for revision in options.revisions:
        section = RevisionReport(revision)
        report.revisions.append(section)
        _status(options, f"{revision}: connecting")
        began = time.perf_counter()
        if is_stateless(revision):
            contact = await _stateless(target, section, options)
        else:
            contact = await _handshake(target, section, options)
        section.seconds = time.perf_counter() - began
        if contact.refused:
            raise Unreachable(contact.refused)
        contacts.append(contact)
    _reached(target, contacts)
    spoken = [r.revision for r in report.revisions if r.accepted and not is_stateless(r.revision)]
    if spoken:
        section = RevisionReport("negotiation")
        report.revisions.append(section)
        began = time.perf_counter()
        await _offers(target, section, options, spoken)
        section.seconds = time.perf_counter() - began
    report.stderr = target.stderr
    report.seconds = time.perf_counter() - start
    return report


def _target(
    target: Target | None,
    command: Sequence[str] | None,
    url: str | None,
    headers: Mapping[str, str] | None,
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str] | None,
    timeout: float,
) -> Target:
    """The target named by exactly one of ``target``, ``command`` and ``url``."""
    named = [what for what in (target, command, url) if what is not None]
    if len(named) != 1:
        raise ValueError("name the server by exactly one of target, command and url")
    if (env is not None or cwd is not None) and command is None:
        raise ValueError("env and cwd are for a command")
    if headers is not None and url is None:
        raise ValueError("headers are for a url")
    if command is not None:
        if isinstance(command, str) or not command:
            raise ValueError("command is a non-empty list: the program, then its arguments")
        from .stdio import StdioTarget

        return StdioTarget(command[0], command[1:], env=env, cwd=cwd)
    if url is not None:
        from .http import HttpTarget

        return HttpTarget(url, headers, timeout=timeout)
    assert target is not None
    return target


@dataclass(frozen=True)
class _Contact:
    """What one revision's connection got from the server: messages, whether the
    connection ended (and why), and a refusal that keeps the checker out (401)."""

    seen: int
    ended: str | None
    refused: str | None = None


def _contact(conv: Conversation) -> _Contact:
    link = conv.link
    reason = getattr(link, "closed_reason", "") or "the connection ended"
    return _Contact(
        conv.seen, reason if conv.closed else None, getattr(link, "access_refused", None)
    )


def _reached(target: Target, contacts: list[_Contact]) -> None:
    """Raise :class:`Unreachable` when no connection got a single message and every one
    ended: nothing listens, or the command exits at once. That is no protocol verdict."""
    if not contacts or any(c.seen or c.ended is None for c in contacts):
        return
    why = f"could not reach the server {target.description}: {contacts[0].ended}"
    # The same command ran once per revision: its words once.
    lines = list(dict.fromkeys(line for line in target.stderr.splitlines() if line.strip()))
    if lines:
        why += "; its stderr ends with:\n" + "\n".join(f"  {line}" for line in lines[-5:])
    raise Unreachable(why)


def _status(options: Options, text: str, finding: Finding | None = None) -> None:
    if options.listener is not None:
        options.listener(text, finding)


def _session(revision: str) -> ClientSession:
    return ClientSession(
        mode=revision, info=CLIENT_INFO, capabilities=CLIENT_CAPABILITIES, limits=LIMITS
    )


def _conversation(link: Any, section: RevisionReport, options: Options) -> Conversation:
    def heard(finding: Finding) -> None:
        _status(options, f"{section.revision}: {finding.check}", finding)

    return Conversation(
        link, _session(section.revision), section, timeout=options.timeout, on_finding=heard
    )


Step = Callable[[Conversation], Awaitable[None]]


async def _steps(conv: Conversation, options: Options, steps: list[tuple[str, Step]]) -> None:
    for name, step in steps:
        if conv.closed:
            conv.problem(
                "wire.message", name, "the server closed the connection (its output ended)"
            )
            conv.report.stopped = f"the connection ended before {name}"
            return
        _status(options, f"{conv.report.revision}: {name}")
        conv.probe = name
        began = time.perf_counter()
        await step(conv)
        conv.report.probe_seconds[name] = time.perf_counter() - began
    conv.probe = ""


def _common(options: Options) -> list[tuple[str, Step]]:
    async def surface(conv: Conversation) -> None:
        await probes.surface(conv, call_tools=options.call_tools)

    return [
        ("unknown method", probes.unknown_method),
        ("invalid params", probes.invalid_params),
        ("malformed JSON", probes.parse_error),
        ("surface", surface),
        ("cancellation", probes.cancellation),
    ]


async def _handshake(target: Target, section: RevisionReport, options: Options) -> _Contact:
    async with target.connect(section) as link, _conversation(link, section, options) as conv:
        # Over HTTP a request before initialize has no session: the transport's session
        # rules (http.session) judge that instead.
        stdio = link.transport == "stdio"
        early = await conv.raw_later(probes.raw(conv, "early", "tools/list")) if stdio else None
        reply = await conv.start()
        if getattr(link, "access_refused", None) is not None:
            return _contact(conv)
        if not _negotiated(conv, reply):
            if options.lenient and not conv.closed:
                # Go on with what needs no session: the raw probes.
                await conv.raw_send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
                await _steps(conv, options, _RAW_STEPS)
            return _contact(conv)
        await conv.sync()
        if early is not None:
            _lifecycle(conv, early.reply)
            conv.forget(early)
        await _steps(conv, options, [("ping", probes.ping), *_common(options)])
        _clean_bills(conv)
    await _http(target, section, options)
    return _contact(conv)


#: The probes that need no session, for ``lenient`` past a failed negotiation.
_RAW_STEPS: Final[list[tuple[str, Step]]] = [
    ("ping", probes.ping),
    ("unknown method", probes.unknown_method),
    ("malformed JSON", probes.parse_error),
]


def _negotiated(conv: Conversation, reply: Reply) -> bool:
    """Judge the answer to ``initialize``; whether to go on with this revision."""
    section = conv.report
    offered = section.revision
    where = reply.where or "initialize"
    if conv.ready is not None:
        section.accepted = True
        conv.passed("protocol.negotiation", where, f"initialize {offered} answered {offered}")
        return True
    failed = conv.failed
    answered = failed.answered[0] if failed is not None and failed.answered else None
    if reply.kind == "failed" and answered in mcpspec.REVISIONS:
        # Another revision the server speaks: this one it does not. Negotiation worked.
        section.accepted = False
        section.stopped = f"the server answers {answered}: it does not speak {offered}"
        return False
    if reply.kind == "refused":
        section.accepted = False
        section.stopped = "the initialize result is invalid"
    else:
        section.accepted = False
        section.stopped = f"initialize failed: {_outcome(reply)}"
        conv.problem(
            "protocol.negotiation",
            where,
            f"initialize offering {offered} must be answered with {offered} or another "
            f"version the server speaks; got {_outcome(reply)}",
        )
    return False


def _outcome(reply: Reply) -> str:
    """How ``reply`` went, in words; values from the server bounded in size."""
    if reply.kind == "failed":
        return clip(str(reply.value.reason))
    if reply.kind == "error":
        error = reply.value
        return f"error {show(error.code)} {show(error.message)}"
    return {"timeout": "no answer in time", "closed": "the connection ended"}.get(
        reply.kind, reply.kind
    )


#: The rule a request before ``initialize`` breaks: the client's, not the server's.
CLIENT_BEFORE_INITIALIZE: Final = (
    '"The client SHOULD NOT send requests other than pings before the server has '
    'responded to the initialize request" (lifecycle, Initialization)'
)


def _lifecycle(conv: Conversation, early: Reply | None) -> None:
    """The probe of a request before ``initialize``: the rule binds the client, and
    nothing tells a server to refuse; only an answer that never comes is the server's
    fault (every request is answered)."""
    conv.probe = "a request before initialize"
    where = "tools/list before initialize"
    if early is None:
        conv.problem(
            "protocol.lifecycle",
            where,
            "the probe's tools/list before initialize was never answered: every request "
            "gets a response (a result, or an error refusing it)",
        )
    elif early.kind == "error":
        conv.passed("protocol.lifecycle", early.where, "refused before initialize")
    else:
        conv.note(
            "protocol.lifecycle",
            early.where,
            "probe: a request before initialize; the server answered it, which the "
            f"specification allows: the rule binds the client, {CLIENT_BEFORE_INITIALIZE}",
        )
    conv.probe = ""


async def _stateless(target: Target, section: RevisionReport, options: Options) -> _Contact:
    async with target.connect(section) as link, _conversation(link, section, options) as conv:
        reply = await conv.start()
        if getattr(link, "access_refused", None) is not None:
            return _contact(conv)
        result = reply.value if reply.kind == "result" else None
        versions = getattr(result, "supported_versions", None) or ()
        if section.revision not in versions:
            section.accepted = False
            section.stopped = f"server/discover: {_outcome(reply)}" + (
                f" (supports {list(versions)})" if versions else ""
            )
            return _contact(conv)
        section.accepted = True
        conv.passed(
            "protocol.negotiation", reply.where, f"server/discover lists {section.revision}"
        )
        await _unsupported_version(conv)
        await _steps(conv, options, _common(options))
        _clean_bills(conv)
    await _http(target, section, options)
    return _contact(conv)


async def _unsupported_version(conv: Conversation) -> None:
    """A 2026-07-28 request with an unknown version gets -32022 naming the supported."""
    message = probes.raw(conv, "version", "server/discover")
    message["params"]["_meta"] = conv.stateless_meta(UNKNOWN_VERSION)
    reply = await conv.raw_request(message)
    error = reply.value if reply.kind == "error" and isinstance(reply.value, dict) else {}
    data = error.get("data")
    supported = data.get("supported") if isinstance(data, dict) else None
    where = reply.where or "server/discover"
    revision = conv.report.revision
    if error.get("code") == -32022 and isinstance(supported, list) and revision in supported:
        conv.passed("protocol.negotiation", where, "unsupported version: -32022 with supported")
    else:
        conv.problem(
            "protocol.negotiation",
            where,
            f"a request with protocol version {UNKNOWN_VERSION} must get -32022 whose "
            f"data.supported lists {revision}; got {probes.said(reply)}",
        )


async def _offers(
    target: Target, section: RevisionReport, options: Options, spoken: list[str]
) -> None:
    """``initialize`` offering an unknown and an old version: the answer must be a
    version the server speaks (one it accepted when offered, or a revision this run did
    not try)."""
    tried = set(options.revisions)
    for version in (UNKNOWN_VERSION, OLD_VERSION):
        _status(options, f"negotiation: offering {version}")
        async with target.connect(section) as link:
            conv = Conversation(link, _session(spoken[0]), section, timeout=options.timeout)
            async with conv:
                message = probes.raw(conv, "offer", "initialize")
                message["params"] = {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": CLIENT_INFO,
                }
                reply = await conv.raw_request(message)
        answered = reply.value.get("protocolVersion") if reply.kind == "result" else None
        where = reply.where or "initialize"
        known = (
            answered in spoken
            or answered == OLD_VERSION
            or (answered in mcpspec.REVISIONS and answered not in tried)
        )
        if isinstance(reply.value, dict) and known:
            conv.passed("protocol.negotiation", where, f"offered {version}, answered {answered}")
        else:
            conv.problem(
                "protocol.negotiation",
                where,
                f"initialize offering {version} must be answered with a version the server "
                f"speaks ({', '.join(spoken)}); got "
                + (
                    f"protocolVersion {show(answered)}"  # bounded: it comes from the server
                    if reply.kind == "result"
                    else probes.said(reply)
                ),
            )


async def _http(target: Target, section: RevisionReport, options: Options) -> None:
    """The transport's own probes (HTTP statuses and headers), for a revision the server
    speaks."""
    if section.accepted:
        _status(options, f"{section.revision}: transport")
        await target.probe_transport(section, options)


#: Checks that every message exercises: clean when nothing was filed under them.
_EVERY_MESSAGE: Final = (
    "wire.message",
    "schema.message",
    "protocol.responses",
    "protocol.capabilities",
    "protocol.progress",
)


def _clean_bills(conv: Conversation) -> None:
    section = conv.report
    filed = {f.check for f in section.findings if f.outcome is not Outcome.PASSED}
    for check in _EVERY_MESSAGE:
        if check in filed:
            continue
        why = f"{conv.seen} messages"
        if check == "protocol.progress":
            why = f"{conv.progress} progress notifications"
        section.add(Finding(check, Outcome.PASSED, "", why, section.revision))
    if is_stateless(section.revision) and "protocol.result-type" not in filed:
        section.add(Finding("protocol.result-type", Outcome.PASSED, "", "", section.revision))
