"""Sans-IO MCP sessions: :class:`ServerSession` and :class:`ClientSession`.

A session turns the bytes of one framed wire message into typed events (``receive``)
and generated message values into bytes (``send``). It does no I/O: the caller reads
frames from a transport, feeds them in, and writes out what ``send`` returns (and the
``data`` of any :class:`~mcpspec.runtime.session.events.Outgoing` event).

Wire input never raises: a message that breaks a rule becomes a
:class:`~mcpspec.runtime.session.events.ProtocolViolation`. Local misuse raises a
:class:`~mcpspec.runtime.session.misuse.LocalProtocolError` subclass, and nothing is sent.

This package is the sans-IO layer: above the codec (``mcpspec.runtime``), below the
connections (``mcpspec.runtime.connection``, which does the I/O). Where things are:

- :mod:`.core`: :class:`~.core.Session`, one connection assembled from parts (its
  docstring is the theory of operation);
- the parts, each with one job: the lifecycle (:mod:`.state`, phases and gates as
  tables), requests in flight and owed answers (:mod:`.pending`), progress tokens
  (:mod:`.progress`), subscriptions and the ``_meta`` of stateless requests
  (:mod:`.stateless`), the negotiation state (:mod:`.negotiated_terms`), violation events
  (:mod:`.violations`);
- the two paths: ``receive`` (:mod:`.inbound`, dispatch by message class) and ``send``
  (:mod:`.outbound`);
- the rules, each written once: single messages in the rule table (:mod:`.checks`),
  what differs between the protocol models (:mod:`.protocol_models`), capabilities
  (:mod:`.capabilities`), version negotiation (:mod:`.version_negotiation`);
- the one thing a server and a client do differently, negotiating
  (:mod:`.negotiation_part`; :mod:`.server`, :mod:`.client`, which also hold the public
  classes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import ClientSession
    from .server import ServerSession

__all__ = ["ClientSession", "ServerSession"]

#: Each class is imported on first use: a server needs nothing of the client's module,
#: and importing one module of this package (``mcpspec.runtime`` imports the rules and
#: events by name) should not import both sides.
_LAZY = {"ClientSession": "client", "ServerSession": "server"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
