"""Version negotiation in both protocol models, as pure functions.

The handshake revisions (2024-11-05 ... 2025-11-25) negotiate once, in ``initialize``:
the server answers the requested version when it accepts it, else its newest accepted
one; a client that does not accept the answer gives up. The stateless revision
(2026-07-28) negotiates per request: every request names its version in
``_meta["io.modelcontextprotocol/protocolVersion"]``, and a server that does not accept
it answers -32022 with the versions it does accept.

A client picks a :data:`ClientMode`: one pinned revision, ``"legacy"`` (``initialize``
only) or ``"auto"`` (probe ``server/discover``; fall back to ``initialize`` on -32601;
on -32022 retry once with the newest mutually accepted revision). Both sides may
restrict the revisions they accept.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

from mcpspec import REVISIONS
from mcpspec._revisions import PROTOCOL_MODELS

from ..declared import ProtocolModel

__all__ = [
    "HANDSHAKE_REVISIONS",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "NEGOTIATING",
    "NEVER_BATCHED",
    "STATELESS_REVISIONS",
    "TYPED_BY_ITS_ANSWER",
    "ClientMode",
    "accepted_revisions",
    "client_plan",
    "is_stateless",
    "negotiate_handshake",
    "newest_mutual",
    "protocol_model",
]


def protocol_model(revision: str) -> ProtocolModel:
    """The protocol model of ``revision`` (``"2025-11-25"`` -> ``HANDSHAKE``), without
    importing its module; ``ValueError`` names the supported revisions."""
    try:
        return PROTOCOL_MODELS[revision]
    except KeyError:
        raise ValueError(
            f"unsupported MCP revision {revision!r}; supported: {', '.join(PROTOCOL_MODELS)}"
        ) from None


#: Revisions negotiated once, by ``initialize``.
HANDSHAKE_REVISIONS: Final = tuple(
    r for r in REVISIONS if protocol_model(r) is ProtocolModel.HANDSHAKE
)
#: Revisions negotiated per request (no ``initialize``).
STATELESS_REVISIONS: Final = tuple(
    r for r in REVISIONS if protocol_model(r) is ProtocolModel.STATELESS
)

#: Requests that negotiate: the negotiation part sees them sent and answered.
NEGOTIATING: Final = frozenset({"initialize", "server/discover"})
#: Requests never part of a JSON-RPC batch.
NEVER_BATCHED: Final = frozenset({"initialize"})
#: Requests whose result is typed by the revision it names, not the one in use.
TYPED_BY_ITS_ANSWER: Final = frozenset({"initialize"})

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

#: ``"auto"``, ``"legacy"``, or one revision (``"2025-06-18"``) to pin.
ClientMode = str


def is_stateless(revision: str) -> bool:
    """Whether ``revision`` negotiates per request (no ``initialize``)."""
    return revision in STATELESS_REVISIONS


def accepted_revisions(revisions: Iterable[str] | None) -> tuple[str, ...]:
    """The revisions a session accepts, oldest first; all of them for ``None``.

    ``ValueError`` for an empty set or a revision this package does not know.
    """
    if revisions is None:
        return REVISIONS
    if isinstance(revisions, str):
        revisions = (revisions,)
    wanted = set(revisions)
    unknown = sorted(wanted.difference(REVISIONS))
    if unknown:
        raise ValueError(
            f"unsupported MCP revision(s) {', '.join(unknown)}; supported: {', '.join(REVISIONS)}"
        )
    if not wanted:
        raise ValueError("a session accepts at least one revision")
    return tuple(r for r in REVISIONS if r in wanted)


def negotiate_handshake(requested: str, accepted: tuple[str, ...]) -> str | None:
    """The version a server answers ``initialize`` with: ``requested`` when accepted,
    else the newest accepted handshake revision (``None`` when it accepts none)."""
    handshake = [r for r in accepted if not is_stateless(r)]
    if requested in handshake:
        return requested
    return handshake[-1] if handshake else None


def newest_mutual(theirs: Iterable[Any], ours: tuple[str, ...]) -> str | None:
    """The newest revision in both ``theirs`` (from the wire: anything) and ``ours``."""
    common = {v for v in theirs if isinstance(v, str)}.intersection(ours)
    return max(common) if common else None


def client_plan(mode: ClientMode, accepted: tuple[str, ...]) -> tuple[str, str]:
    """How a client in ``mode`` starts: ``("probe" | "initialize" | "stateless",
    version)``. ``ValueError`` when the mode and the accepted revisions disagree."""
    stateless = [r for r in accepted if is_stateless(r)]
    handshake = [r for r in accepted if not is_stateless(r)]
    if mode == "auto":
        if stateless:
            return "probe", stateless[-1]
        return "initialize", handshake[-1]
    if mode == "legacy":
        if not handshake:
            raise ValueError("mode 'legacy' needs a handshake revision (2024-11-05 ... 2025-11-25)")
        return "initialize", handshake[-1]
    if mode not in REVISIONS:
        raise ValueError(
            f"client mode is 'auto', 'legacy' or a revision ({', '.join(REVISIONS)}); got {mode!r}"
        )
    if mode not in accepted:
        raise ValueError(f"pinned revision {mode} is not among the accepted revisions")
    return ("stateless" if is_stateless(mode) else "initialize"), mode


# -- peeking at a message before the revision is known ------------------------------------


class _ProbeMeta(msgspec.Struct):
    version: Any = msgspec.field(default=None, name=META_PROTOCOL_VERSION)


class _ProbeParams(msgspec.Struct):
    protocol_version: Any = msgspec.field(default=None, name="protocolVersion")
    meta: _ProbeMeta | None = msgspec.field(default=None, name="_meta")
    #: What a 2026-07-28 ``Mcp-Name`` header mirrors (:mod:`.mirrored_headers`), unparsed.
    name: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    uri: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


class Probe(msgspec.Struct):
    """The few fields a server reads before it knows the revision of a message (and
    before it knows which session is to read it: the HTTP app routes by them)."""

    id: Any = None
    method: Any = None
    params: _ProbeParams | None = None

    @property
    def meta_version(self) -> Any:
        """``params._meta["io.modelcontextprotocol/protocolVersion"]``, or ``None``."""
        params = self.params
        if params is None or params.meta is None:
            return None
        return params.meta.version

    @property
    def protocol_version(self) -> Any:
        """``params.protocolVersion`` (of ``initialize``), or ``None``."""
        return None if self.params is None else self.params.protocol_version


class ResultVersion(msgspec.Struct):
    """``protocolVersion`` of an initialize result, read before typing it."""

    protocol_version: Any = msgspec.field(default=None, name="protocolVersion")


PROBE_DECODER: Final = msgspec.json.Decoder(Probe)
RESULT_VERSION_DECODER: Final = msgspec.json.Decoder(ResultVersion)
