"""Request headers mirrored from the body on Streamable HTTP (2026-07-28), sans-IO.

From 2026-07-28 a client copies a few fields of each POSTed JSON-RPC message into HTTP
headers, so that load balancers, gateways and logs can route and look at requests without
parsing bodies, and a server that reads the body rejects a request whose headers and body
disagree (HTTP 400, JSON-RPC error -32020 ``HeaderMismatch``): otherwise a proxy routing
on the header and the server acting on the body would be acting on different requests.

The mirrored headers (the specification's Streamable HTTP page, "Request Metadata"):

* ``MCP-Protocol-Version``: on every POST; for a request it equals
  ``params._meta["io.modelcontextprotocol/protocolVersion"]``.
* ``Mcp-Method``: the JSON-RPC ``method``, on every request (and, from a client, on
  notifications too).
* ``Mcp-Name``: ``params.name`` of ``tools/call`` and ``prompts/get``, ``params.uri`` of
  ``resources/read``.
* ``Mcp-Param-{Name}``: for ``tools/call``, one per tool parameter its ``inputSchema``
  annotates with ``"x-mcp-header": "{Name}"`` (the tools page, "x-mcp-header"), carrying
  the argument's value; left out when the arguments hold no value (or ``null``) there.

Header names compare case-insensitively, values case-sensitively. ``Mcp-Name`` and
``Mcp-Param-*`` values that are not plain visible ASCII travel Base64-encoded inside the
``=?base64?...?=`` sentinel (:func:`encode_value`, :func:`decode_value`);
``MCP-Protocol-Version`` and ``Mcp-Method`` are never encoded.

A client builds the headers of each message with :func:`request_headers`, having read
each tool's annotations with :func:`param_headers` when it listed the tools (a tool whose
annotations break a rule is left out of the list). A server checks them with
:func:`header_mismatch` (or :func:`check_headers`, which leaves a body it cannot read
to the server's own validation) and answers a mismatch with :func:`mismatch_error`; a
server that has read the routing fields of the body already (a
:class:`~.version_negotiation.Probe`) may ask :func:`plainly_mirrored` first, which passes the
usual request without a second read.

The body is read with a small msgspec decoder that keeps every member it does not need
as unparsed JSON; nothing here raises anything but :class:`MirrorError` on any input, and
the work is linear in the size of the body and the headers.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, NamedTuple, TypeAlias, TypeVar

import msgspec

from ..codec import _on_whole_stack
from ..envelope import ErrorObject
from ..errors import ErrorCode, InvalidMessage, clip, show
from .version_negotiation import META_PROTOCOL_VERSION, Probe

__all__ = [
    "MAX_VALUE_LENGTH",
    "MCP_METHOD",
    "MCP_NAME",
    "MCP_PROTOCOL_VERSION",
    "METHOD_HEADER",
    "NAMED_METHODS",
    "NAME_HEADER",
    "PARAM_HEADER_PREFIX",
    "PARAM_PREFIX",
    "PROTOCOL_VERSION_HEADER",
    "SENTINEL_PREFIX",
    "SENTINEL_SUFFIX",
    "X_MCP_HEADER",
    "MirrorError",
    "ParamHeader",
    "check_headers",
    "decode_value",
    "encode_value",
    "header_mismatch",
    "mismatch_error",
    "param_headers",
    "plainly_mirrored",
    "request_headers",
]

# -- names ------------------------------------------------------------------------------

#: Header names in lower case, as a server looks them up (ASGI gives them so).
MCP_PROTOCOL_VERSION: Final = "mcp-protocol-version"
MCP_METHOD: Final = "mcp-method"
MCP_NAME: Final = "mcp-name"
PARAM_PREFIX: Final = "mcp-param-"

#: The same names as the specification writes them, which a client sends.
PROTOCOL_VERSION_HEADER: Final = "MCP-Protocol-Version"
METHOD_HEADER: Final = "Mcp-Method"
NAME_HEADER: Final = "Mcp-Name"
PARAM_HEADER_PREFIX: Final = "Mcp-Param-"

#: The schema keyword that marks a tool parameter for mirroring.
X_MCP_HEADER: Final = "x-mcp-header"

#: The methods whose requests carry ``Mcp-Name``, and the ``params`` member it mirrors.
NAMED_METHODS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "tools/call": "name",
        "prompts/get": "name",
        "resources/read": "uri",
        # The tasks extension (SEP-2663, "Streamable HTTP: Routing Headers").
        "tasks/get": "taskId",
        "tasks/update": "taskId",
        "tasks/cancel": "taskId",
    }
)

#: The markers around a Base64-encoded value (lower case, exactly so).
SENTINEL_PREFIX: Final = "=?base64?"
SENTINEL_SUFFIX: Final = "?="

#: The longest header value :func:`decode_value` reads, in characters. The specification
#: sets no limit and leaves one to each deployment; HTTP servers refuse far smaller
#: header sections (8 to 64 KiB) before this is reached, so this only bounds what is
#: decoded when nothing in front does.
MAX_VALUE_LENGTH: Final = 65536


class MirrorError(ValueError):
    """A mirrored header value, a tool's ``x-mcp-header`` annotations or a body that
    breaks a rule; ``reason`` says which, in at most about
    :data:`~mcpspec.runtime.errors.MAX_ECHO` characters."""

    def __init__(self, reason: str) -> None:
        reason = clip(reason)
        super().__init__(reason)
        self.reason = reason


class ParamHeader(NamedTuple):
    """One ``x-mcp-header`` annotation of a tool's ``inputSchema``."""

    #: The name as annotated (``"Region"``); the header is ``Mcp-Param-Region``.
    header: str
    #: The ``properties`` keys from the arguments object down to the value
    #: (``("region",)``; ``("location", "region")`` for a nested property).
    path: tuple[str, ...]
    #: The parameter's JSON Schema type: ``"string"``, ``"integer"`` or ``"boolean"``.
    kind: str


# -- values -----------------------------------------------------------------------------


def _looks_encoded(text: str) -> bool:
    """Whether ``text`` starts like the sentinel and ends like it (the two may overlap:
    the encoder errs on the side of encoding)."""
    return text.startswith(SENTINEL_PREFIX) and text.endswith(SENTINEL_SUFFIX)


def _is_plain(text: str) -> bool:
    """Whether ``text`` can travel as a header value as it is: visible ASCII and inner
    spaces only (``isprintable`` is exactly 0x20-0x7E on ASCII), no space at either end
    (HTTP trims it), and not mistakable for an encoded value."""
    return (
        text.isascii()
        and text.isprintable()
        and not text.startswith(" ")
        and not text.endswith(" ")
        and not _looks_encoded(text)
    )


def encode_value(text: str) -> str:
    """The ``Mcp-Name`` or ``Mcp-Param-*`` header value that carries ``text``.

    The value is ``text`` itself when that is plain visible ASCII (inner spaces allowed)
    with no whitespace at either end and does not look like the sentinel; anything else
    (non-ASCII, control characters, tabs, leading or trailing spaces, a literal that
    starts with ``=?base64?`` and ends with ``?=``) is sent as
    ``=?base64?<Base64 of its UTF-8>?=``. :class:`MirrorError` for text holding a lone
    surrogate, which has no UTF-8 form.
    """
    if _is_plain(text):
        return text
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise MirrorError(
            f"{show(text)} holds a lone surrogate, which UTF-8 cannot carry"
        ) from None
    return f"{SENTINEL_PREFIX}{base64.b64encode(data).decode('ascii')}{SENTINEL_SUFFIX}"


def _field_value(raw: str) -> str:
    """``raw`` without the whitespace HTTP puts around a field value, checked to be one:
    visible ASCII, spaces and tabs only (RFC 9110), at most :data:`MAX_VALUE_LENGTH`."""
    if len(raw) > MAX_VALUE_LENGTH:
        raise MirrorError(f"the value is {len(raw)} characters long, over {MAX_VALUE_LENGTH}")
    value = raw.strip(" \t")
    if not (value.isascii() and (value.isprintable() or value.replace("\t", " ").isprintable())):
        raise MirrorError(
            f"the value {show(value)} holds characters a header value may not "
            "(only visible ASCII, spaces and tabs)"
        )
    return value


def decode_value(raw: str) -> str:
    """The text an ``Mcp-Name`` or ``Mcp-Param-*`` header value carries.

    Whitespace around the value is not part of it. A value that starts with exactly
    ``=?base64?`` and ends with ``?=`` (lower case, at least 11 characters) is Base64 of
    UTF-8 and is decoded; anything else is the text itself. :class:`MirrorError` when the
    value holds characters a header value may not (control characters, non-ASCII), is
    longer than :data:`MAX_VALUE_LENGTH`, or is a malformed sentinel: characters outside
    the Base64 alphabet, wrong padding, a non-canonical encoding (which the encoder never
    writes) or bytes that are not UTF-8.
    """
    value = _field_value(raw)
    if len(value) < len(SENTINEL_PREFIX) + len(SENTINEL_SUFFIX) or not _looks_encoded(value):
        return value
    payload = value[len(SENTINEL_PREFIX) : -len(SENTINEL_SUFFIX)]
    try:
        data = base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise MirrorError(f"{show(value)} is not valid Base64 ({exc})") from None
    if base64.b64encode(data).decode("ascii") != payload:
        raise MirrorError(f"{show(value)} is not canonical Base64")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise MirrorError(f"{show(value)} does not decode to UTF-8 text") from None


def _plain_value(text: Any, what: str) -> str:
    """``text`` as an ``MCP-Protocol-Version`` or ``Mcp-Method`` value, which are never
    encoded; :class:`MirrorError` when it cannot travel as it is."""
    if not isinstance(text, str):
        raise MirrorError(f"{what} is {show(text)}, not a string")
    if not (text.isascii() and text.isprintable() and text == text.strip(" ")):
        raise MirrorError(f"{what} {show(text)} cannot be a header value (and may not be encoded)")
    return text


def _render(value: Any, kind: str) -> str | None:
    """The text a client mirrors for an argument: a string as it is, an integer in
    decimal, a boolean as ``true``/``false``; an integral number of an ``integer``
    parameter as an integer (``42.0`` -> ``42``), another number as its shortest JSON
    form. ``None`` for ``null`` and for what has no text (objects, arrays)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and kind == "integer" and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        # The decoder's integers are far below str()'s 4,300-digit limit; this keeps it so.
        return str(value) if value.bit_length() <= 4000 else None
    if isinstance(value, float):
        return msgspec.json.encode(value).decode("ascii")
    return None


#: A decimal number as a header may write an integer argument: ``42``, ``-7``, ``42.0``.
_DECIMAL: Final = re.compile(r"-?([0-9]{1,4000})(?:\.([0-9]{1,4000}))?")


def _same_value(text: str, value: Any, rendered: str) -> bool:
    """Whether a decoded ``Mcp-Param-*`` value mirrors the argument ``value`` (whose
    rendering is ``rendered``): the same text, or, for an integral number, the same
    number written in decimal (the specification asks servers to compare integers
    numerically, so ``42.0`` matches ``42``)."""
    if text == rendered:
        return True
    integral = (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer()
    )
    match = _DECIMAL.fullmatch(text) if integral else None
    if match is None or (match[2] is not None and match[2].strip("0")):
        return False
    return int(text.partition(".")[0]) == int(value)


# -- x-mcp-header annotations -------------------------------------------------------------

#: RFC 9110 ``tchar``: what a header name (a ``token``) is made of.
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PRIMITIVE_KINDS: Final = frozenset({"string", "integer", "boolean"})
# The JSON Schema keywords whose values are schemas (2020-12, and draft-07's forms that
# 2020-12 renamed), by the shape of their value. ``properties`` is walked on its own: it
# is the one keyword that keeps a parameter statically reachable. Keywords holding
# instance data (``const``, ``enum``, ``default``, ``examples``) are not schemas, and
# ``$ref`` is never followed.
_ONE_SCHEMA: Final = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "contains",
        "contentSchema",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_SCHEMA_LIST: Final = frozenset({"allOf", "anyOf", "items", "oneOf", "prefixItems"})
_SCHEMA_MAP: Final = frozenset(
    {"$defs", "definitions", "dependencies", "dependentSchemas", "patternProperties"}
)

#: Where a schema sits: its parent's place and the key leading to it (a linked list, so
#: that walking a deep schema stays linear; written out only where needed).
_Place: TypeAlias = "tuple[_Place | None, str]"


def _keys(place: _Place | None) -> list[str]:
    """The keys from the schema root down to ``place``."""
    keys: list[str] = []
    while place is not None:
        place, key = place
        keys.append(key)
    keys.reverse()
    return keys


def _where(place: _Place | None) -> str:
    """A schema position written as a JSON Pointer (``/properties/region``)."""
    keys = [key.replace("~", "~0").replace("/", "~1") for key in _keys(place)]
    return clip("/" + "/".join(keys), 200) if keys else "the schema root"


def _children(
    schema: Mapping[Any, Any], reachable: bool, place: _Place | None
) -> Iterator[tuple[Any, bool, _Place]]:
    """The sub-schemas of ``schema`` in document order, each with whether it is still on
    a pure ``properties`` chain from the root, and its place."""
    for keyword, value in schema.items():
        if not isinstance(keyword, str):
            continue
        here: _Place = (place, keyword)
        if keyword == "properties" and isinstance(value, Mapping):
            for name, sub in value.items():
                if isinstance(name, str):
                    yield sub, reachable, (here, name)
        elif keyword in _ONE_SCHEMA and isinstance(value, Mapping):
            yield value, False, here
        elif keyword in _SCHEMA_LIST and isinstance(value, (list, tuple)):
            for index, sub in enumerate(value):
                yield sub, False, (here, str(index))
        elif keyword in _SCHEMA_MAP and isinstance(value, Mapping):
            for name, sub in value.items():
                yield sub, False, (here, str(name))


def _annotation(schema: Mapping[Any, Any], reachable: bool, place: _Place | None) -> ParamHeader:
    """The annotation ``schema`` carries, checked against every rule but uniqueness."""
    header = schema[X_MCP_HEADER]
    if not isinstance(header, str):
        raise MirrorError(f"{X_MCP_HEADER} at {_where(place)} is {show(header)}, not a string")
    if not header:
        raise MirrorError(f"{X_MCP_HEADER} at {_where(place)} is empty")
    if _TOKEN.fullmatch(header) is None:
        raise MirrorError(
            f"{X_MCP_HEADER} {show(header)} at {_where(place)} is not an HTTP token "
            "(letters, digits and !#$%&'*+-.^_`|~ only)"
        )
    if not reachable:
        raise MirrorError(
            f"{X_MCP_HEADER} {show(header)} at {_where(place)} is not reachable from the "
            "schema root through properties alone (not through items, allOf/anyOf/oneOf/not, "
            "if/then/else, $defs or $ref)"
        )
    if place is None:
        raise MirrorError(f"{X_MCP_HEADER} {show(header)} is on the schema root, not a property")
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in _PRIMITIVE_KINDS:
        # A list of types, a missing type or any other value is not one primitive type.
        why = " (number is not permitted)" if kind == "number" else ""
        raise MirrorError(
            f"{X_MCP_HEADER} {show(header)} at {_where(place)} is on a parameter of type "
            f"{show(kind)}{why}; only string, integer and boolean parameters may be mirrored"
        )
    # On a pure properties chain the keys alternate: "properties", name, "properties", ...
    return ParamHeader(header, tuple(_keys(place)[1::2]), kind)


def param_headers(input_schema: Mapping[str, Any]) -> tuple[ParamHeader, ...]:
    """The ``x-mcp-header`` annotations of a tool's ``inputSchema``, in document order.

    The rules (the tools page, "x-mcp-header"): an annotation's value is a non-empty HTTP
    token (RFC 9110 ``1*tchar``, so no spaces, colons, control characters or non-ASCII);
    no two of a schema's annotations are equal ignoring case; each sits on a parameter
    whose ``type`` is ``"string"``, ``"integer"`` or ``"boolean"`` (not ``"number"``); and
    each parameter is reachable from the root through ``properties`` keys alone
    (``properties`` of ``properties`` is fine; ``items``, ``allOf``/``anyOf``/``oneOf``,
    ``not``, ``if``/``then``/``else``, ``$defs`` and ``$ref`` are not). Every schema
    position is looked at, so an annotation anywhere else breaks the rules too.

    :class:`MirrorError` names the first rule broken; a client using Streamable HTTP
    leaves such a tool out of what ``tools/list`` gives its user (and should log why).
    The walk uses no recursion and is linear in the size of the schema (plus the depth
    of each annotation); a schema built in Python that contains itself is refused.
    """
    found: list[ParamHeader] = []
    seen: dict[str, ParamHeader] = {}
    # Depth-first, in document order: each entry is a schema to visit, or the marker that
    # its subtree is done (so ``on_chain`` holds exactly the schemas above the current one).
    stack: list[tuple[Any, bool, _Place | None] | int] = [(input_schema, True, None)]
    on_chain: set[int] = set()
    while stack:
        entry = stack.pop()
        if isinstance(entry, int):
            on_chain.discard(entry)
            continue
        schema, reachable, place = entry
        if not isinstance(schema, Mapping):
            continue
        if id(schema) in on_chain:
            raise MirrorError(f"the schema contains itself at {_where(place)}")
        if X_MCP_HEADER in schema:
            param = _annotation(schema, reachable, place)
            other = seen.get(param.header.lower())
            if other is not None:
                raise MirrorError(
                    f"{X_MCP_HEADER} {show(param.header)} at {_where(place)} repeats "
                    f"{show(other.header)} of the parameter {show('.'.join(other.path))} "
                    "(header names are compared ignoring case)"
                )
            seen[param.header.lower()] = param
            found.append(param)
        on_chain.add(id(schema))
        stack.append(id(schema))
        stack.extend(reversed(list(_children(schema, reachable, place))))
    return tuple(found)


# -- reading the body ---------------------------------------------------------------------


def _raw() -> msgspec.Raw:
    return msgspec.Raw()


class _Meta(msgspec.Struct):
    version: msgspec.Raw = msgspec.field(default_factory=_raw, name=META_PROTOCOL_VERSION)


class _Params(msgspec.Struct):
    """The members of ``params`` a mirrored header may come from, unparsed (a member's
    type matters only for the methods that mirror it; ``_meta`` is an object in every
    message of the revision)."""

    name: msgspec.Raw = msgspec.field(default_factory=_raw)
    uri: msgspec.Raw = msgspec.field(default_factory=_raw)
    task_id: msgspec.Raw = msgspec.field(default_factory=_raw, name="taskId")
    arguments: msgspec.Raw = msgspec.field(default_factory=_raw)
    meta: _Meta | None = msgspec.field(default=None, name="_meta")


class _Body(msgspec.Struct):
    """A JSON-RPC message as far as the mirrored headers need it; every other member is
    skipped unparsed."""

    method: str | None = None
    id: msgspec.Raw = msgspec.field(default_factory=_raw)
    params: _Params | None = None


_BODY: Final = msgspec.json.Decoder(_Body)
#: Any JSON value, an object's or array's members left unparsed.
_VALUE: Final = msgspec.json.Decoder(
    dict[str, msgspec.Raw] | list[msgspec.Raw] | str | int | float | bool | None
)
_STRING: Final = msgspec.json.Decoder(str)
_ANY: Final = msgspec.json.Decoder()

T = TypeVar("T")


def _decode(decoder: msgspec.json.Decoder[T], data: bytes | msgspec.Raw, where: str) -> T:
    """``decoder.decode(data)``; what msgspec refuses becomes :class:`MirrorError` naming
    ``where``. Nesting deeper than the caller's stack is tried again on the whole stack,
    as the codec does, so a body the codec reads is read here too."""
    try:
        try:
            return decoder.decode(data)
        except RecursionError:
            return _on_whole_stack(decoder.decode, data, path=where)
    except msgspec.ValidationError as exc:
        raise MirrorError(f"{where}: {exc}") from None
    except (msgspec.DecodeError, UnicodeError) as exc:
        raise MirrorError(f"{where} is not JSON: {exc}") from None
    except InvalidMessage as exc:
        raise MirrorError(f"{where}: {exc.reason}") from None


_ABSENT: Final = object()


def _value(raw: msgspec.Raw, where: str) -> Any:
    """The JSON value ``raw`` (a value the body decoder already read): a string, number,
    boolean, ``None``, or a dict or list of unparsed members."""
    data = bytes(raw)
    if data[:1] == b'"' and data.isascii() and _BACKSLASH not in data:
        # A string without escapes (the usual name or version): its ASCII is its text.
        return data[1:-1].decode("ascii")
    return _decode(_VALUE, raw, where)


_BACKSLASH: Final = ord("\\")
_VERSION_WHERE: Final = f"params._meta[{META_PROTOCOL_VERSION!r}]"


class _Message:
    """A POSTed message, read lazily: each member is parsed when first asked for."""

    def __init__(self, body: bytes) -> None:
        parsed = _decode(_BODY, body, "the body")
        if parsed.method is None:
            raise MirrorError("the body is not a request or notification (it has no method)")
        self.method: str = parsed.method
        self.is_request = bool(parsed.id)
        self.params = parsed.params if parsed.params is not None else _Params()
        #: ``params.name`` once read (``None``: not yet).
        self._name: Any = None

    def version(self) -> Any:
        """``params._meta["io.modelcontextprotocol/protocolVersion"]``: a JSON scalar,
        a dict or list (which no header equals), or ``_ABSENT``."""
        meta = self.params.meta
        if meta is None or not meta.version:
            return _ABSENT
        return _value(meta.version, _VERSION_WHERE)

    def name(self, member: str) -> Any:
        """``params.<member>``: a JSON value, or ``_ABSENT`` when absent or ``null``."""
        if member == "name":
            if self._name is None:
                raw = self.params.name
                value = _value(raw, "params.name") if raw else None
                self._name = _ABSENT if value is None else value
            return self._name
        raw = self.params.task_id if member == "taskId" else self.params.uri
        value = _value(raw, f"params.{member}") if raw else None
        return _ABSENT if value is None else value

    def arguments(self, params: Sequence[ParamHeader]) -> list[Any]:
        """The value at each parameter's path in ``params.arguments``: a JSON scalar,
        ``_ABSENT`` when there is none (a missing key, a step that is not an object, or
        ``null``), or the object (a dict) or array (a list) found there.

        Top-level parameters, the usual case, need the arguments object with its members
        unparsed; a nested one has the arguments parsed once, whole (as the codec parses
        them anyway), so the work stays linear however deep the paths go."""
        raw = self.params.arguments
        if not params or not raw:
            return [_ABSENT] * len(params)
        if all(len(param.path) == 1 for param in params):
            members = _value(raw, "params.arguments")
            if not isinstance(members, dict):
                return [_ABSENT] * len(params)
            found = [members.get(param.path[0]) for param in params]
            values = [None if raw is None else _value(raw, "an argument") for raw in found]
            return [_ABSENT if value is None else value for value in values]
        tree = _decode(_ANY, raw, "params.arguments")
        return [_value_at(tree, param.path) for param in params]


def _value_at(tree: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in the parsed arguments ``tree``, or ``_ABSENT``."""
    node = tree
    for key in path:
        if not isinstance(node, dict):
            return _ABSENT
        node = node.get(key)
    return _ABSENT if node is None or not path else node


def _params_text(path: tuple[str, ...]) -> str:
    return clip("arguments." + ".".join(path), 200)


# -- client -------------------------------------------------------------------------------


def request_headers(
    body: bytes,
    params_of: Callable[[str], Sequence[ParamHeader]] | None = None,
    *,
    protocol_version: str | None = None,
) -> dict[str, str]:
    """The mirrored headers to send with the 2026-07-28 message ``body`` (its JSON bytes,
    as they go on the wire), names written as the specification writes them.

    * ``MCP-Protocol-Version``: the request's
      ``params._meta["io.modelcontextprotocol/protocolVersion"]``, which a request must
      carry. A notification carries none in its body (this revision defines no header
      rules for notification POSTs, and none a client sends over HTTP): it gets
      ``protocol_version`` when given.
    * ``Mcp-Method``: ``method``, for requests and notifications alike.
    * ``Mcp-Name``: for ``tools/call`` and ``prompts/get`` requests ``params.name``, for
      ``resources/read`` ``params.uri``, encoded by :func:`encode_value`.
    * ``Mcp-Param-{header}``: for ``tools/call``, one per annotation of
      ``params_of(params.name)`` (the annotations :func:`param_headers` read from the
      tool's latest ``inputSchema``; none for a tool the client has not listed), whose
      argument has a value: strings as they are, integers in decimal, booleans as
      ``true``/``false``, each encoded by :func:`encode_value`. No header when the value
      is absent or ``null`` (nor for an object or array, which have no header form).

    :class:`MirrorError` when the body is not one JSON-RPC request or notification, a
    request carries no protocol version, or the version or method cannot be a header
    value as it is (these two are never encoded).
    """
    message = _Message(body)
    headers: dict[str, str] = {}
    version = message.version()
    if version is _ABSENT:
        if message.is_request:
            raise MirrorError(
                f"the request carries no params._meta[{META_PROTOCOL_VERSION!r}] to mirror"
            )
        version = protocol_version
    if version is not None:
        headers[PROTOCOL_VERSION_HEADER] = _plain_value(version, "the protocol version")
    headers[METHOD_HEADER] = _plain_value(message.method, "the method")
    member = NAMED_METHODS.get(message.method) if message.is_request else None
    if member is None:
        return headers
    name = message.name(member)
    if not isinstance(name, str):
        shown = "nothing" if name is _ABSENT else show(name)
        raise MirrorError(f"params.{member} of {message.method} is {shown}, not a string")
    headers[NAME_HEADER] = encode_value(name)
    if message.method == "tools/call" and params_of is not None:
        params = params_of(name)
        for param, value in zip(params, message.arguments(params), strict=True):
            rendered = None if value is _ABSENT else _render(value, param.kind)
            if rendered is not None:
                headers[PARAM_HEADER_PREFIX + param.header] = encode_value(rendered)
    return headers


# -- server -------------------------------------------------------------------------------


def _differs(header: str, raw: str, expected: str) -> str | None:
    """Why the ``MCP-Protocol-Version`` or ``Mcp-Method`` value ``raw`` is not
    ``expected`` (compared exactly: values are case-sensitive and never encoded)."""
    try:
        value = _field_value(raw)
    except MirrorError as exc:
        return f"{header} header is malformed: {exc.reason}"
    if value != expected:
        return f"{header} header value {show(value)} does not match body value {show(expected)}"
    return None


def _version_mismatch(raw: str | None, message: _Message) -> str | None:
    """The ``MCP-Protocol-Version`` check: required on a request and equal to the
    version its body names; on a notification (whose body names none) only checked when
    both have one."""
    body = message.version()
    if raw is None:
        return f"{PROTOCOL_VERSION_HEADER} header is missing" if message.is_request else None
    if body is _ABSENT:
        return None  # a request without it is invalid, which its validation reports
    if not isinstance(body, str):
        return f"{PROTOCOL_VERSION_HEADER} header cannot match body value {show(body)}"
    return _differs(PROTOCOL_VERSION_HEADER, raw, body)


def _name_mismatch(raw: str | None, message: _Message) -> str | None:
    """The ``Mcp-Name`` check: required on the requests of :data:`NAMED_METHODS` and
    equal, once decoded, to the named member. On any other message the specification
    gives it no source, so it is not a mirrored header there and is ignored (some
    clients send one for extension methods, such as a task's id)."""
    member = NAMED_METHODS.get(message.method) if message.is_request else None
    if member is None:
        return None
    if raw is None:
        return f"{NAME_HEADER} header is missing (required for {message.method})"
    body = message.name(member)
    if body is _ABSENT:
        return None  # a request without it is invalid, which its validation reports
    if not isinstance(body, str):
        return f"{NAME_HEADER} header cannot match body value {show(body)}"
    try:
        value = decode_value(raw)
    except MirrorError as exc:
        return f"{NAME_HEADER} header is malformed: {exc.reason}"
    if value != body:
        return f"{NAME_HEADER} header value {show(value)} does not match body value {show(body)}"
    return None


def _param_mismatch(
    headers: Mapping[str, str], message: _Message, params: Sequence[ParamHeader]
) -> str | None:
    """The ``Mcp-Param-*`` checks of a ``tools/call``: a header for each annotated
    argument with a value, equal to it once decoded; none for an argument without one."""
    for param, value in zip(params, message.arguments(params), strict=True):
        header = PARAM_HEADER_PREFIX + param.header
        raw = headers.get(PARAM_PREFIX + param.header.lower())
        rendered = None if value is _ABSENT else _render(value, param.kind)
        if rendered is None:
            if raw is None:
                continue
            what = "no value" if value is _ABSENT else "an object or array"
            return (
                f"{header} header is present, but the body has {what} at {_params_text(param.path)}"
            )
        if raw is None:
            return (
                f"{header} header is missing, but the body has {show(value)} "
                f"at {_params_text(param.path)}"
            )
        try:
            text = decode_value(raw)
        except MirrorError as exc:
            return f"{header} header is malformed: {exc.reason}"
        if not _same_value(text, value, rendered):
            return (
                f"{header} header value {show(text)} does not match body value {show(value)} "
                f"at {_params_text(param.path)}"
            )
    return None


def header_mismatch(
    headers: Mapping[str, str],
    body: bytes,
    params_of: Callable[[str], Sequence[ParamHeader]] | None = None,
) -> str | None:
    """Why the mirrored headers of a 2026-07-28 POST do not match its ``body``, or
    ``None`` when they do. ``headers`` maps lower-case names to values (join a repeated
    header's values with ``", "``, as RFC 9110 does: a repeated mirrored header then
    matches nothing).

    The rules (the Streamable HTTP page, "Server Validation"): a request must carry
    ``MCP-Protocol-Version``, ``Mcp-Method`` and, for ``tools/call``, ``prompts/get``,
    ``resources/read`` and the tasks extension's ``tasks/get``, ``tasks/update`` and
    ``tasks/cancel`` (``params.taskId``), ``Mcp-Name``; each must equal its body value
    (method and version exactly, ``Mcp-Name`` and ``Mcp-Param-*`` once decoded from the
    sentinel); a value
    holding characters a header value may not, or a malformed sentinel, is a mismatch.
    ``Mcp-Name`` on any other method has no source in the body and is ignored.
    For ``tools/call`` each annotation of ``params_of(params.name)`` is checked: the
    header must be there exactly when the argument has a value (not absent, not
    ``null``), and equal it; integers compare as numbers (``42.0`` matches ``42``).
    ``Mcp-Param-*`` headers no annotation names are ignored, as the specification
    requires of headers a server does not recognise. A notification, for which this
    revision defines no header rules, is only checked for headers it does carry.

    A request whose body lacks the value a present header mirrors (no protocol version
    in ``_meta``, no ``params.name``) is not reported: the body is invalid, and the
    server's validation of it answers that (-32602). A body that cannot be read as one
    JSON-RPC request or notification is reported; a server should refuse such a body
    with its own error before asking about headers. The reason names the header and what
    was expected, in bounded length.
    """
    try:
        message = _Message(body)
    except MirrorError as exc:
        return clip(f"the body cannot be checked against its headers: {exc.reason}")
    return _checked(headers, message, params_of)


def check_headers(
    headers: Mapping[str, str],
    body: bytes,
    params_of: Callable[[str], Sequence[ParamHeader]] | None = None,
) -> str | None:
    """:func:`header_mismatch`, for a server that refuses an invalid body with its own
    error: a body that cannot be read as one JSON-RPC request or notification (not an
    object, ``params`` or ``params._meta`` not an object, ``method`` not a string)
    raises :class:`MirrorError` instead of being reported as a mismatch."""
    return _checked(headers, _Message(body), params_of)


def _checked(
    headers: Mapping[str, str],
    message: _Message,
    params_of: Callable[[str], Sequence[ParamHeader]] | None,
) -> str | None:
    """:func:`header_mismatch` of a body that could be read, in bounded length."""
    try:
        reason = _mismatch(headers, message, params_of)
    except MirrorError as exc:
        reason = f"the body cannot be checked against its headers: {exc.reason}"
    return None if reason is None else clip(reason)


def plainly_mirrored(
    headers: Mapping[str, str],
    probe: Probe,
    params_of: Callable[[str], Sequence[ParamHeader]] | None = None,
) -> bool:
    """Whether :func:`header_mismatch` would find nothing in the request ``probe`` was
    read from, told from that probe alone (a server read one already, to route the
    POST), without reading the body again.

    ``True`` when each mirrored header copies its body value character for character
    and that value is plain (visible ASCII, no space at either end, no backslash,
    nothing like the sentinel), and the tool a ``tools/call`` names has no
    ``x-mcp-header`` annotations in ``params_of``: what a client sends for plain values.
    ``False`` says only that this test cannot tell: ask :func:`header_mismatch`.
    """
    method = headers.get(MCP_METHOD)
    version = headers.get(MCP_PROTOCOL_VERSION)
    if method is None or version is None or method != probe.method:
        return False
    if (
        version != probe.meta_version
        or len(method) + len(version) > _QUICK_LENGTH
        or not _plain_pair(method, version)
    ):
        return False
    member = NAMED_METHODS.get(method)
    if member is None:
        return True
    params = probe.params
    name = headers.get(MCP_NAME)
    if params is None or name is None:
        return False
    # The header is the body's value exactly when the JSON string there is the header
    # in quotes (a plain value holds no backslash, so the string has no escapes).
    raw = params.name if member == "name" else params.uri
    quoted = _quoted(name)
    if quoted is None or bytes(raw) != quoted:
        return False
    return method != "tools/call" or params_of is None or not params_of(name)


#: The longest value :func:`plainly_mirrored` looks at (longer ones are left to
#: :func:`header_mismatch`), so that what it remembers stays small.
_QUICK_LENGTH: Final = 256


def _quoted(value: str) -> bytes | None:
    """``value`` as a JSON string without escapes when it is a short plain header value,
    one that :func:`_field_value` and :func:`decode_value` give back unchanged and that
    needs no escape in JSON; else ``None``."""
    return _quoted_short(value) if len(value) <= _QUICK_LENGTH else None


@functools.lru_cache(maxsize=64)
def _plain_pair(method: str, version: str) -> bool:
    """Whether :func:`_quoted` takes both values: the pair a client sends with every
    request, told in one lookup (their lengths, together, are checked first)."""
    return _quoted_short(method) is not None and _quoted_short(version) is not None


@functools.lru_cache(maxsize=256)
def _quoted_short(value: str) -> bytes | None:
    # Kept for the few values a client sends again and again.
    if not _is_plain(value) or "\\" in value or '"' in value:
        return None
    return f'"{value}"'.encode("ascii")


def _mismatch(
    headers: Mapping[str, str],
    message: _Message,
    params_of: Callable[[str], Sequence[ParamHeader]] | None,
) -> str | None:
    """:func:`header_mismatch` of a body that could be read."""
    reason = _version_mismatch(headers.get(MCP_PROTOCOL_VERSION), message)
    if reason is not None:
        return reason
    raw = headers.get(MCP_METHOD)
    if raw is not None:
        reason = _differs(METHOD_HEADER, raw, message.method)
    elif message.is_request:
        reason = f"{METHOD_HEADER} header is missing (body method is {show(message.method)})"
    if reason is not None:
        return reason
    reason = _name_mismatch(headers.get(MCP_NAME), message)
    if reason is not None or params_of is None:
        return reason
    if message.method != "tools/call" or not message.is_request:
        return None
    name = message.name("name")
    if not isinstance(name, str):
        return None
    params = params_of(name)
    return _param_mismatch(headers, message, params) if params else None


def mismatch_error(reason: str) -> ErrorObject:
    """The JSON-RPC error answering a mismatch (with HTTP 400): code -32020
    (``HeaderMismatch``) and the message ``"Header mismatch: <reason>"``, as in the
    specification's example. The specification defines no ``data`` for it."""
    return ErrorObject(
        code=int(ErrorCode.HEADER_MISMATCH), message=clip(f"Header mismatch: {reason}")
    )
