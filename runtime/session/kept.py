"""Values a session keeps for its lifetime, held to a small multiple of their wire size.

A session keeps the peer's capabilities and identity for as long as it lives. Decoded,
JSON takes many times its size in Python objects (an empty object is a dict of some 64
bytes, written in two), so a peer could make every session hold a hundred megabytes with
a message under the size limit. :class:`Kept` holds a value whose JSON is larger than
:data:`KEPT_DECODED_BYTES` as that JSON, compact, and decodes it again each time it is
read; a smaller value is held as it is.
"""

from __future__ import annotations

from typing import Any, Final, Generic, TypeVar

import msgspec

__all__ = ["KEPT_DECODED_BYTES", "Kept"]

T = TypeVar("T")

#: The largest JSON (in bytes) of a value kept decoded; a larger one is kept as JSON.
KEPT_DECODED_BYTES: Final = 4096


class Kept(Generic[T]):
    """A value (a generated Struct, or a JSON object) held within a small multiple of
    its JSON's size: :meth:`get` reads it."""

    __slots__ = ("_json", "_type", "_value")

    def __init__(self, value: T) -> None:
        data = msgspec.json.encode(value)
        self._type: Any = type(value)
        self._value: T | None
        self._json: bytes | None
        if len(data) <= KEPT_DECODED_BYTES:
            self._value, self._json = value, None
        else:
            self._value, self._json = None, data

    def get(self) -> T:
        """The value (decoded anew each time when it is held as JSON)."""
        if self._json is None:
            return self._value  # type: ignore[return-value]
        decoded: T = msgspec.json.decode(self._json, type=self._type)
        return decoded

    @property
    def size(self) -> int:
        """The size of the value's JSON when it is held as JSON, else 0."""
        return 0 if self._json is None else len(self._json)
