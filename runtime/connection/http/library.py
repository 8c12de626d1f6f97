"""The HTTP library a client runs on: ``httpx``, or ``httpx2``.

``httpx2`` is the maintained successor of ``httpx`` (the official Python SDK's HTTP
client runs on it), with the same API under another package name. Its connection pool
costs much less per request when many requests are in flight, so a caller who wants
that passes an ``httpx2.AsyncClient`` as ``http_client``. Everything the client code
names of the library (its error class, its ``Timeout``, its client class, the
"client default" marker) comes from the :class:`HttpLibrary` of the client in use, so
the two are never mixed: an ``httpx`` timeout given with an ``httpx2`` client is
converted, and an ``httpx2`` transport failure is caught like an ``httpx`` one.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["HttpLibrary", "library_of", "timeout_of"]

#: The packages a client may come from, the default first.
_PACKAGES: Final = ("httpx", "httpx2")


@dataclass(frozen=True, slots=True)
class HttpLibrary:
    """What the client code uses of one HTTP library."""

    name: str
    #: The base class of its transport and protocol failures.
    error: type[Exception]
    #: Its failure to decode a body (one of :attr:`error`).
    decoding_error: type[Exception]
    #: Its ``Timeout`` class.
    timeout: type[Any]
    #: Its ``AsyncClient`` class.
    client: type[Any]
    #: Its marker for "the client's own setting" (of ``auth``, say).
    client_default: Any


@functools.cache
def _library(name: str) -> HttpLibrary | None:
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    return HttpLibrary(
        name=name,
        error=module.HTTPError,
        decoding_error=module.DecodingError,
        timeout=module.Timeout,
        client=module.AsyncClient,
        client_default=module.USE_CLIENT_DEFAULT,
    )


def library_of(http_client: object | None) -> HttpLibrary:
    """The library of ``http_client`` (an ``httpx.AsyncClient`` or an
    ``httpx2.AsyncClient``, or a subclass of one); ``httpx`` when it is ``None``.
    ``TypeError`` for anything else, ``ImportError`` when ``httpx`` is needed and absent."""
    if http_client is None:
        library = _library(_PACKAGES[0])
        if library is None:
            raise ImportError("the HTTP client needs httpx: pip install 'mcpspec[http]'")
        return library
    for name in _PACKAGES:
        library = _library(name)
        if library is not None and isinstance(http_client, library.client):
            return library
    raise TypeError(
        f"http_client must be an httpx.AsyncClient or an httpx2.AsyncClient, "
        f"not {type(http_client).__module__}.{type(http_client).__qualname__}"
    )


def timeout_of(library: HttpLibrary, timeout: Any) -> Any:
    """``timeout`` (seconds, ``None``, or a ``Timeout`` of either library) as a
    ``Timeout`` of ``library``."""
    if isinstance(timeout, library.timeout):
        return timeout
    as_dict = getattr(timeout, "as_dict", None)
    if callable(as_dict):  # the other library's Timeout
        return library.timeout(**as_dict())
    return library.timeout(timeout)
