"""What can be read of a message that does not parse: whether it answers a request, and
which.

A response whose result cannot be parsed (a string holding a lone surrogate escape, as
Python's ``json`` writes one; nesting deeper than the decoder takes) still answers a
request, and the peer will send no other answer. The codec reports it as -32700, and
this module reads what it can of it so that the error names the request
(:func:`response_id`): the members at the top of the object, from its start, for as
long as their values are scalars. Encoders write ``jsonrpc`` and ``id`` before
``result`` or ``error`` (the official SDKs, ``json.dumps`` of a dict in that order,
serde and Go structs), so the members that matter come before the value that broke.

The reading is bounded: it looks at the first :data:`WINDOW` bytes only, with one
linear regular expression per member, whatever the size of the message.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

from .envelope import RequestId, is_id

__all__ = ["WINDOW", "response_id"]

#: How many bytes of a message are looked at.
WINDOW: Final = 4096

_STRING: Final = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_SCALAR: Final = _STRING + rb"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null"
#: One member whose value is a scalar, and what follows it.
_SCALAR_MEMBER: Final = re.compile(
    rb"\s*(" + _STRING + rb")\s*:\s*(" + _SCALAR + rb")\s*([,}])", re.DOTALL
)
#: The name of a member whose value is not a scalar.
_MEMBER_NAME: Final = re.compile(rb"\s*(" + _STRING + rb")\s*:", re.DOTALL)
_OPENING: Final = re.compile(rb"\s*\{")


def response_id(data: bytes) -> RequestId | None:
    """The id of the response ``data``, which does not parse, when what can be read of
    it says it is one: an object whose leading members hold a string or integer
    ``id`` and no ``method``, and then ``result`` or ``error``. ``None`` otherwise
    (then nothing says which request it answers, or whether it answers one)."""
    window = data[:WINDOW]
    opening = _OPENING.match(window)
    if opening is None:
        return None
    members: dict[str, object] = {}
    position = opening.end()
    while (member := _SCALAR_MEMBER.match(window, position)) is not None:
        name = _read(member.group(1))
        if not isinstance(name, str):
            break
        members[name] = _read(member.group(2))
        position = member.end()
        if member.group(3) == b"}":
            break
    else:  # the first member whose value is not a scalar: only its name is read
        following = _MEMBER_NAME.match(window, position)
        name = None if following is None else _read(following.group(1))
        if isinstance(name, str):
            members.setdefault(name, ...)
    request_id = members.get("id")
    if "method" in members or not ("result" in members or "error" in members):
        return None
    return request_id if is_id(request_id) else None


def _read(value: bytes) -> object:
    """The JSON scalar ``value``; ``...`` when it does not decode (a lone surrogate)."""
    try:
        return msgspec.json.decode(value)
    except (msgspec.DecodeError, UnicodeError):
        return ...
