"""The negotiated terms of one session: the revision in use and what it defines for
this side, and what the two sides declared of themselves.

:class:`NegotiatedTerms` changes in two ways only: :meth:`~NegotiatedTerms.use` switches
the revision (while negotiation picks one), and :meth:`~NegotiatedTerms.declare` replaces
this side's capabilities (when its ``initialize`` or discover answer states them). The
session rebuilds its receive and send tables after either. Everything else here is read.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.metadata
from types import ModuleType
from typing import Any, NamedTuple, get_args, get_origin

import msgspec

from mcpspec import module_name

from ..codec import MAX_BATCH_MEMBERS, Codec
from ..declared import RESULT_INPUT_REQUIRED
from ..extensions import KNOWN, extended_codec
from .capabilities import (
    CAPABILITY_PATHS,
    CLIENT_PROVIDED,
    SERVER_PROVIDED,
    CapabilityGate,
    Path,
    as_json,
    defined_capabilities,
    has_capability,
)
from .checks import request_rules, rule_table
from .kept import Kept
from .limits import Limits
from .protocol_models import MODELS, Model
from .state import Role
from .stateless import MetaReader
from .version_negotiation import STATELESS_REVISIONS

__all__ = ["NegotiatedTerms", "result_classes"]


@functools.cache
def _default_info() -> dict[str, str]:
    """The identity a session uses when given none: this package and its version."""
    try:
        version = importlib.metadata.version("mcpspec")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source tree
        version = "0"
    return {"name": "mcpspec", "version": version}


def result_classes(result_type: Any) -> tuple[type, ...]:
    """The classes a value of ``result_type`` (a Struct, a Union, ``dict[str, Any]``) is
    an instance of."""
    origin = get_origin(result_type)
    if origin is None:
        return (result_type,) if isinstance(result_type, type) else (object,)
    if origin is dict:
        return (dict,)
    return tuple(c for arg in get_args(result_type) for c in result_classes(arg))


class _Revision(NamedTuple):
    """What a session needs to know about one revision, computed once."""

    module: ModuleType
    codec: Codec
    model: Model
    client_defined: frozenset[str]
    server_defined: frozenset[str]
    #: Methods whose result may be an ``InputRequiredResult``.
    input_methods: frozenset[str]


@functools.cache
def _revision(revision: str, extensions: frozenset[str] = frozenset()) -> _Revision:
    module = importlib.import_module(module_name(revision))
    codec: Codec = extended_codec(module.codec, extensions)
    input_methods = frozenset(
        method
        for method, result_type in codec.results.items()
        if any(
            getattr(c, "result_type", None) == RESULT_INPUT_REQUIRED
            for c in result_classes(result_type)
        )
    )
    return _Revision(
        module,
        codec,
        MODELS[codec.protocol_model],
        defined_capabilities(module.ClientCapabilities),
        defined_capabilities(module.ServerCapabilities),
        input_methods,
    )


class NegotiatedTerms:
    """The revision in use and what both sides declared (see the module docstring).

    The attributes are read directly; ``own_*`` are this side's, ``peer_*`` the peer's.
    """

    def __init__(
        self,
        role: Role,
        accepted: tuple[str, ...],
        info: Any,
        capabilities: Any,
        revision: str,
        limits: Limits,
        extensions: frozenset[str] = frozenset(),
    ) -> None:
        self.role = role
        #: The extensions this side speaks (their methods join the revision's), and the
        #: modules of their messages (sent as the revision's own).
        self.extensions = extensions
        self.extension_modules = frozenset(KNOWN[name].module_name for name in extensions)
        self.peer_role = Role.CLIENT if role is Role.SERVER else Role.SERVER
        #: The revisions this side accepts, oldest first.
        self.accepted = accepted
        self._max_batch = limits.max_batch_members
        #: This side's identity and capabilities (JSON objects).
        self.info_json: dict[str, Any] = (
            as_json(info) if info is not None else dict(_default_info())
        )
        self.own_caps: dict[str, Any] = as_json(capabilities)
        # The peer's capabilities (JSON) and identity, once known: kept within a small
        # multiple of their wire size (see peer_caps and peer_info).
        self._peer_caps: Kept[Any] | None = None
        #: Whether the peer declared each capability path asked about so far.
        self._peer_answers: dict[Path, bool] = {}
        self._peer_info: Kept[Any] | None = None
        #: The revision and model agreed, once negotiation is over.
        self.negotiated: str | None = None
        self.agreed_model: Model | None = None
        #: Whether :class:`~mcpspec.runtime.session.events.SessionReady` was reported for the
        #: stateless model (which a server learns from the first valid request).
        self.ready_emitted = False
        stateless = tuple(r for r in accepted if r in STATELESS_REVISIONS)
        #: The reader of requests' ``_meta``, for a side that reads it in a revision it
        #: accepts (typed by the newest such revision).
        self.meta_reader: MetaReader | None = None
        if stateless and _revision(stateless[-1]).model.reads_request_meta(role):
            newest = _revision(stateless[-1]).module
            self.meta_reader = MetaReader(
                stateless, newest.ClientCapabilities, newest.Implementation
            )
        self.use(revision)

    def use(self, revision: str) -> None:
        """Switch to ``revision``: its module, codec, protocol model and tables."""
        facts = _revision(revision, self.extensions)
        codec = self.codec = facts.codec
        self.module = facts.module
        self.model: Model = facts.model
        self.decode = (
            functools.partial(codec.decode, max_batch_members=self._max_batch)
            if codec.batches and self._max_batch != MAX_BATCH_MEMBERS
            else codec.decode
        )
        self.input_methods = facts.input_methods
        #: The client capabilities the revision defines (what an input request needs).
        self.client_defined = facts.client_defined
        self._result_classes: dict[tuple[str, bool], tuple[type, ...]] = {}
        if self.role is Role.SERVER:
            self.own_requests, self.peer_requests = codec.server_requests, codec.client_requests
            self.own_notifications = codec.server_notifications
            self.peer_notifications = codec.client_notifications
            self.own_table, self.peer_table = SERVER_PROVIDED, CLIENT_PROVIDED
            self.own_defined, self.peer_defined = facts.server_defined, facts.client_defined
        else:
            self.own_requests, self.peer_requests = codec.client_requests, codec.server_requests
            self.own_notifications = codec.client_notifications
            self.peer_notifications = codec.server_notifications
            self.own_table, self.peer_table = CLIENT_PROVIDED, SERVER_PROVIDED
            self.own_defined, self.peer_defined = facts.client_defined, facts.server_defined
        #: The message rules of this side's messages and of the peer's, by method.
        self.own_rules = rule_table(self.role, self.model.kind)
        self.peer_rules = rule_table(self.peer_role, self.model.kind)
        #: The rules of every request of this side and of the peer, in order.
        self.own_request_rules = request_rules(self.role, self.model.kind)
        self.peer_request_rules = request_rules(self.peer_role, self.model.kind)
        self.declare(self.own_caps)

    def declare(self, capabilities: dict[str, Any]) -> None:
        """This side's capabilities are now ``capabilities`` (JSON)."""
        self.own_caps = capabilities
        self.own_gate = CapabilityGate(self.own_table, self.own_defined, capabilities)

    def agree(self) -> None:
        """Negotiation is over: the revision in use is the one agreed, in its model."""
        self.agreed_model = self.model
        self.negotiated = self.codec.revision

    @property
    def peer_caps(self) -> dict[str, Any] | None:
        """The peer's capabilities (JSON object), once known."""
        kept = self._peer_caps
        return None if kept is None else as_json(kept.get())

    @peer_caps.setter
    def peer_caps(self, capabilities: Any) -> None:
        """The peer declared ``capabilities`` (its ``ClientCapabilities`` or
        ``ServerCapabilities``), or ``None``: not known."""
        self._peer_answers = {}
        if capabilities is None:
            self._peer_caps = None
            return
        kept = self._peer_caps = Kept(capabilities)
        if kept.size:  # kept as JSON: what the checks ask of them is answered now
            declared = as_json(capabilities)
            for path in CAPABILITY_PATHS:
                self._peer_answers[path] = has_capability(declared, path)

    @property
    def peer_capabilities(self) -> Any:
        """The peer's capabilities as it declared them (typed), once known."""
        kept = self._peer_caps
        return None if kept is None else kept.get()

    def peer_lacks(self, path: Path) -> bool:
        """Whether the peer declared its capabilities without ``path`` (one of
        :data:`~.capabilities.CAPABILITY_PATHS` when they are large)."""
        kept = self._peer_caps
        if kept is None:
            return False
        answer = self._peer_answers.get(path)
        if answer is None:
            answer = self._peer_answers[path] = has_capability(as_json(kept.get()), path)
        return not answer

    @property
    def peer_info(self) -> Any:
        """The peer's identity (an ``Implementation``), once known."""
        kept = self._peer_info
        return None if kept is None else kept.get()

    @peer_info.setter
    def peer_info(self, info: Any) -> None:
        self._peer_info = None if info is None else Kept(info)

    def answer_terms(
        self, revision: str, method: str, task: bool, result: Any
    ) -> tuple[Codec, Model, tuple[type, ...], Any]:
        """What answers a request of ``method`` read in ``revision``, not the revision
        in use (it came before negotiation picked this one): that revision's codec,
        model and result classes, and ``result`` in its types (a result built with the
        types in use now is read again in them, when it can be)."""
        facts = _revision(revision, self.extensions)
        codec = facts.codec
        result_type = codec.result_type(method, task=task)
        classes = result_classes(result_type)
        if not isinstance(result, classes) and type(result).__module__ == self.module.__name__:
            # Not a result of the method there: left as it is, to be refused.
            with contextlib.suppress(msgspec.ValidationError):
                result = msgspec.convert(msgspec.to_builtins(result), result_type)
        return codec, facts.model, classes, result

    def sends_in(self, revision: str, method: str) -> bool:
        """Whether this side sends requests of ``method`` in ``revision``."""
        codec = _revision(revision, self.extensions).codec
        own = codec.server_requests if self.role is Role.SERVER else codec.client_requests
        return method in own

    def refused_capability(self, method: str) -> Path | None:
        """The capability this side did not declare that a request of ``method`` needs
        whatever its params (``None``: it may pass)."""
        return self.own_gate.static(method)

    def result_classes_of(self, method: str, task: bool) -> tuple[type, ...]:
        """The classes a result of ``method`` is an instance of."""
        key = (method, task)
        classes = self._result_classes.get(key)
        if classes is None:
            classes = self._result_classes[key] = result_classes(
                self.codec.result_type(method, task=task)
            )
        return classes
