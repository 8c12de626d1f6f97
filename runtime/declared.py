"""What a generated revision module declares for the runtime to read (the contract
between the generator and the runtime), as types both sides import.

Every generated module ``mcpspec.vYYYY_MM_DD`` declares, besides its message types and
dispatch tables:

* ``PROTOCOL_MODEL``: a :class:`ProtocolModel`, how the revision negotiates, as the
  generator detected it in the schema (a ``server/discover`` request means stateless);
* ``COMPLETE_RESULTS``: for every request answered by a union tagged on ``resultType``
  (2026-07-28: ``InputRequiredResult`` or the complete result), the complete member,
  which a result without the tag (from a peer of an older revision) decodes as;
* the unions its codec decodes itself (``owned_unions``), each with its
  :class:`UnionKind`.

``mcpspec._revisions.PROTOCOL_MODELS`` lists the protocol model of every revision
without importing the revision modules;
:func:`mcpspec.runtime.session.version_negotiation.protocol_model` reads it.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = [
    "RESULT_COMPLETE",
    "RESULT_INPUT_REQUIRED",
    "ProtocolModel",
    "UnionKind",
]


class ProtocolModel(enum.Enum):
    """How a revision negotiates its version and capabilities."""

    #: Once per connection, by ``initialize`` (2024-11-05 ... 2025-11-25).
    HANDSHAKE = "handshake"
    #: On every request, in its ``_meta``; ``server/discover`` instead of ``initialize``
    #: (2026-07-28).
    STATELESS = "stateless"


class UnionKind(enum.Enum):
    """How the codec decodes a union that msgspec cannot decode by itself (neither
    tagged nor told apart by JSON types), one the codec owns."""

    #: A result union (``ServerResult``, ``ClientResult``, ``InputResponse``): decoded by
    #: the method of the request it answers, ``codec.decode_result(method, data)``.
    KEYED = "keyed"
    #: Any JSON-RPC message (``JSONRPCMessage``): classified by its keys, as
    #: ``codec.decode`` does.
    MESSAGE = "message"
    #: A JSON-RPC response (``JSONRPCResponse``): classified as ``codec.decode`` does, and
    #: refused when it is not a response.
    RESPONSE = "response"


#: The ``resultType`` tag of a complete result (2026-07-28); an absent tag reads as it.
RESULT_COMPLETE: Final = "complete"
#: The ``resultType`` tag of an ``InputRequiredResult`` (2026-07-28).
RESULT_INPUT_REQUIRED: Final = "input_required"
