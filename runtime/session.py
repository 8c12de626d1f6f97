"""Sans-IO MCP sessions: :class:`ServerSession` and :class:`ClientSession`.

A session turns the bytes of one framed wire message into typed events (``receive``)
and generated message values into bytes (``send``). It does no I/O: the caller reads
frames from a transport, feeds them in, and writes out what ``send`` returns (and the
``data`` of any :class:`~mcpspec.runtime.events.Outgoing` event).

Wire input never raises: a message that breaks a rule becomes a
:class:`~mcpspec.runtime.events.ProtocolViolation`. Local misuse raises a
:class:`~mcpspec.runtime.misuse.LocalProtocolError` subclass, and nothing is sent.

Where things are:

- :mod:`.core`: the state of one connection, the revision in use, violations;
- :mod:`.inbound`: ``receive``, dispatch by message class; requests, notifications and
  responses of the peer;
- :mod:`.outbound`: ``send``, and the checks before anything is recorded;
- :mod:`.server`, :mod:`.client`: what only one side does (negotiation in both protocol
  models, the per-request rules of 2026-07-28);
- the rules, as tables and pure functions: the lifecycle (:mod:`.state`), requests in
  flight (:mod:`.pending`), progress tokens (:mod:`.progress`), capabilities
  (:mod:`.capabilities`), version negotiation (:mod:`.negotiation`), the stateless
  revision (:mod:`.stateless`).
"""

from __future__ import annotations

from .client import ClientSession
from .server import ServerSession

__all__ = ["ClientSession", "ServerSession"]
