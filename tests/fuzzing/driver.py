"""One input through one target, with the invariants checked.

Codec: ``codec.decode`` raises nothing but ``InvalidMessage``.

Session: ``receive`` raises nothing; every ``Outgoing`` event's data is bytes; every
violation's response (when there is one) serialises with ``session.send``; every request
id that is newly unanswered after the receive was named by a ``RequestReceived`` or by a
violation carrying a response; the requests received can be answered with ``send``, after
which no id of this receive is left unanswered; and a valid exchange afterwards still
works (:func:`states.probe`); a response to a request of the session's own that was
outstanding ends it, whatever else is wrong with it (so nothing waits for it forever).
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from mcpspec.runtime import (
    Codec,
    InvalidMessage,
    Outgoing,
    ProtocolViolation,
    RequestReceived,
)
from mcpspec.runtime.envelope import is_id

from .states import Session, answer_error, probe

__all__ = ["Problem", "at_depth", "check_decode", "check_receive", "signature"]

T = TypeVar("T")

#: Frames left free below the recursion limit when a call is made "from deep down": the
#: stack a caller may already have used (the issue's 900 frames of 1000).
HEADROOM = 100


@dataclass(frozen=True)
class Problem:
    """A broken invariant: which one, the exception type (if any), where, and what."""

    kind: str
    exception: str
    where: str
    detail: str

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two problems the same problem."""
        return (self.kind, self.exception, self.where)


def _where(exc: BaseException) -> str:
    """The innermost frame of the package in the traceback (else the innermost one)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "mcpspec" in f.filename or "/runtime/" in f.filename]
    if not frames:
        return "?"
    frame = (ours or frames)[-1]
    parts = frame.filename.replace("\\", "/").split("/")
    return f"{'/'.join(parts[-2:])}:{frame.lineno} in {frame.name}"


def _escape(kind: str, exc: BaseException) -> Problem:
    text = str(exc)
    if len(text) > 300:
        text = text[:300] + "..."
    return Problem(kind, type(exc).__name__, _where(exc), text)


def _depth() -> int:
    frame: Any = sys._getframe(1)
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


def at_depth(call: Callable[[], T], free: int = HEADROOM) -> T:
    """``call()`` made with only ``free`` frames left below the recursion limit."""
    missing = sys.getrecursionlimit() - free - _depth()

    def down(n: int) -> T:
        return call() if n <= 0 else down(n - 1)

    return down(missing)


def check_decode(codec: Codec, data: bytes, *, deep: bool = False) -> Problem | None:
    """``codec.decode(data)``: ``InvalidMessage`` or nothing."""
    try:
        if deep:
            at_depth(lambda: codec.decode(data))
        else:
            codec.decode(data)
    except InvalidMessage:
        return None
    except Exception as exc:
        return _escape("decode raised", exc)
    return None


def signature(session: Session) -> tuple[Any, ...]:
    """What must not change for a session to be reused for the next input."""
    return (
        session.phase,
        session.model,
        session.revision,
        session.codec.revision,
        session.outstanding,
        session.unanswered,
    )


def check_receive(
    session: Session, data: bytes, serial: int, *, deep: bool = False
) -> tuple[list[Problem], bool]:
    """Feed ``data`` to ``session`` and check every invariant. Returns the problems and
    whether the session is used up (a receive escaped, or the probe consumed it)."""
    before = session.unanswered
    answered = _answered_id(data, session.outstanding)
    try:
        events = at_depth(lambda: session.receive(data)) if deep else session.receive(data)
    except Exception as exc:
        escaped = [_escape("receive raised", exc)]
        left = session.unanswered - before
        if left:  # taken in before the escape, with no event to say so
            detail = f"ids {sorted(map(repr, left))[:5]} unanswered after {type(exc).__name__}"
            escaped.append(Problem("request id pending without an event", "", "", detail))
        return escaped, True
    problems: list[Problem] = []
    if answered is not None and answered in session.outstanding:
        detail = f"id {answered!r} still outstanding, events: {events!r}"[:600]
        problems.append(Problem("an answered request stays outstanding", "", "", detail))
    named: set[Any] = set()
    for event in events:
        if isinstance(event, Outgoing) and not isinstance(event.data, bytes):
            problems.append(Problem("Outgoing data is not bytes", "", "", repr(event)[:300]))
        elif isinstance(event, RequestReceived):
            named.add(event.request_id)
        elif isinstance(event, ProtocolViolation) and event.response is not None:
            named.add(event.response.id)
            named.add(event.request_id)
    left = session.unanswered - before - named
    if left:
        detail = f"ids {sorted(map(repr, left))[:5]} unanswered, events: {events!r}"[:600]
        problems.append(Problem("request id pending without an event", "", "", detail))
    for event in events:
        try:
            if isinstance(event, ProtocolViolation) and event.response is not None:
                out = session.send(event.response)
                if not isinstance(out, bytes):
                    problems.append(Problem("send of a violation", "", "", repr(out)[:200]))
            elif isinstance(event, RequestReceived) and event.request_id in session.unanswered:
                session.send(answer_error(event.request_id))
        except Exception as exc:
            what = "violation response" if isinstance(event, ProtocolViolation) else "answer"
            problems.append(_escape(f"send of a {what} raised", exc))
            return problems, True
    stuck = session.unanswered - before
    if stuck:
        detail = (
            f"ids {sorted(map(repr, stuck))[:5]} still unanswered after their answers were sent"
        )
        problems.append(Problem("answered request id stays pending", "", "", detail))
    try:
        failed, used = probe(session, serial)
    except Exception as exc:
        return [*problems, _escape("a valid exchange afterwards raised", exc)], True
    if failed is not None:
        problems.append(Problem("a valid exchange afterwards failed", "", "", failed))
    return problems, used or bool(problems)


def _answered_id(data: bytes, outstanding: frozenset[Any]) -> Any:
    """The id of the outstanding request ``data`` answers, when it parses as JSON into
    an object with no ``method`` (a response, or one with neither ``result`` nor
    ``error``) whose string or integer ``id`` is outstanding; else ``None``."""
    if not outstanding:
        return None
    try:
        obj = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeError, RecursionError):
        return None
    if not isinstance(obj, dict) or "method" in obj:
        return None
    request_id = obj.get("id")
    return request_id if is_id(request_id) and request_id in outstanding else None
