"""The two protocol models as objects: what a session does differently in each.

A revision's generated module declares its model (``codec.protocol_model``, detected
by the generator: a ``server/discover`` request in the schema means stateless); a
session takes the object of that model from :data:`MODELS` whenever its revision
changes, and asks it, never the revision string:

* :class:`HandshakeModel` (2024-11-05 ... 2025-11-25): version, capabilities and
  identities are agreed once, by ``initialize``; requests carry nothing of them.
* :class:`StatelessModel` (2026-07-28): every request names the protocol version, the
  client's capabilities and identity (and log level) in its ``_meta``, which a server
  checks before anything else; every result carries the server's identity; a result
  may ask for input first (``InputRequiredResult``).

Rules of single messages that hold in one model only are in the rule table
(:mod:`.checks`), each marked with its models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import msgspec
from msgspec import UNSET

from ..declared import RESULT_INPUT_REQUIRED, ProtocolModel
from .capabilities import as_json
from .misuse import CapabilityError, LocalProtocolError, NegotiationError
from .rules import Problem, Rule
from .state import Role
from .stateless import LEVELS, input_required_problem
from .version_negotiation import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
)

__all__ = ["MODELS", "HandshakeModel", "Model", "StatelessModel"]

#: A request as sent, the client capabilities it declares (JSON) and the rank of the
#: log level it asks for.
Stamped = tuple[Any, dict[str, Any] | None, int | None]


class HandshakeModel:
    """Negotiation once per connection, by ``initialize``."""

    kind: Final = ProtocolModel.HANDSHAKE
    name: Final[Literal["handshake"]] = "handshake"

    def reads_request_meta(self, receiver: Role) -> bool:
        """Whether ``receiver`` checks the negotiation in each request's ``_meta``."""
        return False

    def stamp_request(
        self, sender: Role, message: Any, revision: str, caps: dict[str, Any], info: Any
    ) -> Stamped:
        """The request ``sender`` sends, with what the model adds to it."""
        return message, None, None

    def stamp_result(self, sender: Role, result: Any, info: dict[str, Any]) -> Any:
        """The result ``sender`` answers with, with what the model adds to it."""
        return result

    def result_problem(
        self, result: Any, capabilities: Mapping[str, Any] | None, defined: frozenset[str]
    ) -> Problem | None:
        """What is wrong with a typed result beyond its type (``capabilities``: those
        its request declared; ``defined``: the client capabilities of the revision)."""
        return None


class StatelessModel:
    """Negotiation on every request, in its ``_meta`` (no ``initialize``)."""

    kind: Final = ProtocolModel.STATELESS
    name: Final[Literal["stateless"]] = "stateless"

    def reads_request_meta(self, receiver: Role) -> bool:
        return receiver is Role.SERVER

    def stamp_request(
        self, sender: Role, message: Any, revision: str, caps: dict[str, Any], info: Any
    ) -> Stamped:
        """A client's request carries the protocol version, its capabilities and its
        identity in ``_meta`` (those the caller left out are filled in); a version other
        than ``revision`` or an unknown log level is refused."""
        if sender is not Role.CLIENT:
            return message, None, None
        params = message.params
        meta: dict[str, Any] = params.meta
        version = meta.get(META_PROTOCOL_VERSION)
        if version is not None and version != revision:
            raise NegotiationError(
                Rule.UNSUPPORTED_PROTOCOL_VERSION,
                f"_meta protocolVersion {version!r} is not the session's {revision}",
            )
        level = meta.get(META_LOG_LEVEL)
        if level is not None and level not in LEVELS:
            raise LocalProtocolError(Rule.INVALID_REQUEST_META, f"not a logging level: {level!r}")
        if version is None or META_CLIENT_CAPABILITIES not in meta or META_CLIENT_INFO not in meta:
            meta = {
                META_PROTOCOL_VERSION: revision,
                META_CLIENT_CAPABILITIES: caps,
                META_CLIENT_INFO: info,
                **meta,
            }
            message = msgspec.structs.replace(
                message, params=msgspec.structs.replace(params, meta=meta)
            )
        declared = as_json(meta[META_CLIENT_CAPABILITIES])
        return message, declared, None if level is None else LEVELS[level]

    def stamp_result(self, sender: Role, result: Any, info: dict[str, Any]) -> Any:
        """A server's result carries its identity in ``_meta`` (unless it has one)."""
        if sender is not Role.SERVER:
            return result
        is_dict = isinstance(result, dict)
        meta = result.get("_meta") if is_dict else getattr(result, "meta", UNSET)
        if not isinstance(meta, dict):
            meta = {}
        elif META_SERVER_INFO in meta:
            return result
        meta = {**meta, META_SERVER_INFO: info}
        if is_dict:
            return {**result, "_meta": meta}
        return msgspec.structs.replace(result, meta=meta)

    def result_problem(
        self, result: Any, capabilities: Mapping[str, Any] | None, defined: frozenset[str]
    ) -> Problem | None:
        """An ``InputRequiredResult`` asks for something, and only for input the request
        declared the client capability of."""
        if getattr(type(result), "result_type", None) != RESULT_INPUT_REQUIRED:
            return None
        return input_required_problem(result, capabilities, defined)


Model = HandshakeModel | StatelessModel

#: The object of each protocol model.
MODELS: Final[Mapping[ProtocolModel, Model]] = {
    ProtocolModel.HANDSHAKE: HandshakeModel(),
    ProtocolModel.STATELESS: StatelessModel(),
}


def misuse_of_result(problem: Problem) -> LocalProtocolError:
    """What ``send`` raises for a result that breaks ``problem`` (a missing capability
    names the error response to answer with instead)."""
    if problem.rule is Rule.CAPABILITY_NOT_DECLARED:
        return CapabilityError(
            problem.rule, problem.reason + "; answer with session.missing_capability(...)"
        )
    return LocalProtocolError(problem.rule, problem.reason)
