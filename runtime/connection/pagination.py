"""Pages of a server's lists (tools, resources, resource templates, prompts), with
opaque cursors a client cannot forge.

A cursor names the list it belongs to and where the next page starts, sealed with an
HMAC-SHA256 under the server's key (the one of ``requestState``): a client can hand back
only a cursor the server gave it, for the list it gave it for. One that is altered,
forged or from another list is refused with -32602; one whose list has shrunk since
gives an empty last page, never a read out of range.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence
from typing import Any, Final, TypeVar

import msgspec

from .errors import RequestError

__all__ = ["Pager"]

T = TypeVar("T")

#: The longest cursor taken back (one of ours is a few dozen characters).
_MAX_CURSOR: Final = 256
#: How much of the HMAC a cursor carries (128 bits: forging stays out of reach).
_SEAL_BYTES: Final = 16


class Pager:
    """Cuts lists into pages of ``page_size`` items (all in one page when ``None``)."""

    def __init__(self, key: bytes, page_size: int | None = None) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        self._key = key
        self.page_size = page_size

    def page(self, kind: str, items: Sequence[T], cursor: Any) -> tuple[Sequence[T], str | None]:
        """The page of ``items`` (the list ``kind``: its method) that ``cursor`` (a
        request's, ``None`` or ``UNSET`` for the first page) names, and the cursor of
        the next page (``None`` after the last). :class:`RequestError` (-32602) for a
        cursor this server did not issue for ``kind``."""
        start = 0 if cursor is None or cursor is msgspec.UNSET else self._start(kind, cursor)
        size = self.page_size
        if size is None:
            return items[start:], None
        end = start + size
        following = self._cursor(kind, end) if end < len(items) else None
        return items[start:end], following

    def _cursor(self, kind: str, start: int) -> str:
        data = msgspec.json.encode([kind, start])
        seal = hmac.new(self._key, data, hashlib.sha256).digest()[:_SEAL_BYTES]
        return f"{_b64(data)}.{_b64(seal)}"

    def _start(self, kind: str, cursor: Any) -> int:
        refused = RequestError.invalid_params(
            f"invalid cursor: not one this server issued for {kind} "
            "(altered, forged, or from another list)"
        )
        if not isinstance(cursor, str) or len(cursor) > _MAX_CURSOR:
            raise refused
        body, dot, seal = cursor.partition(".")
        if not dot:
            raise refused
        try:
            data = _unb64(body)
            expected = hmac.new(self._key, data, hashlib.sha256).digest()[:_SEAL_BYTES]
            if not hmac.compare_digest(_unb64(seal), expected):
                raise refused
            named, start = msgspec.json.decode(data, type=tuple[str, int])
        except (ValueError, msgspec.DecodeError, msgspec.ValidationError):
            raise refused from None
        if named != kind or start < 0:
            raise refused
        return start


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    padded = text + "=" * (-len(text) % 4)
    return base64.b64decode(padded.encode("ascii"), altchars=b"-_", validate=True)
