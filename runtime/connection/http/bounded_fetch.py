"""Fetching JSON from an authorization server without trusting it: :func:`fetch_json`.

An issuer's metadata, its keys, an introspection or token endpoint are reached over the
network, and any of them may hang, trickle bytes, redirect for ever or send far too
much. Each fetch here has a deadline for the whole exchange (not per read, which a
trickle defeats), a bound on the body (the declared length is refused before reading,
the bytes counted while reading), no redirects unless asked (and then a few), and
HTTPS unless the host is loopback. Every failure is a :class:`FetchError`.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Mapping
from typing import Any, Final

import anyio
import httpx
import msgspec

__all__ = ["FetchError", "fetch_json", "fetch_json_with_headers", "is_loopback", "require_secure"]

#: The most redirects followed when a fetch follows them.
MAX_REDIRECTS: Final = 3


class FetchError(Exception):
    """A fetch from an authorization server failed: unreachable, too slow, too large,
    not JSON, not HTTPS, or an error status (``status``, when one came)."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        body: Any = None,
        headers: httpx.Headers | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        #: The JSON body of an error answer, when it was one (an OAuth error object).
        self.body = body
        #: The headers of the error answer, when one came (a DPoP nonce is one).
        self.headers = headers if headers is not None else httpx.Headers()


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine (``localhost`` or a loopback address)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_secure(url: str, what: str = "URL") -> str:
    """``url`` when it is HTTPS (or HTTP to a loopback host), else :class:`FetchError`."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return url
    raise FetchError(f"the {what} must be HTTPS (or loopback): {_shown(url)}")


async def fetch_json(
    client: httpx.AsyncClient,
    url: str,
    *,
    method: str = "GET",
    data: Mapping[str, str] | None = None,
    json: Any = None,
    headers: Mapping[str, str] | None = None,
    auth: httpx.Auth | None = None,
    timeout: float,
    max_bytes: int,
    follow_redirects: bool = False,
    accept_errors: bool = False,
    ok: tuple[int, ...] = (200,),
) -> Any:
    """The JSON body of ``method url`` (a form ``data`` or a ``json`` body for a POST),
    within ``timeout`` seconds in all and ``max_bytes`` of body. A status not in ``ok``
    is a :class:`FetchError` (with the body when ``accept_errors`` and it was JSON)."""
    value, _ = await fetch_json_with_headers(
        client,
        url,
        method=method,
        data=data,
        json=json,
        headers=headers,
        auth=auth,
        timeout=timeout,
        max_bytes=max_bytes,
        follow_redirects=follow_redirects,
        accept_errors=accept_errors,
        ok=ok,
    )
    return value


async def fetch_json_with_headers(
    client: httpx.AsyncClient,
    url: str,
    *,
    method: str = "GET",
    data: Mapping[str, str] | None = None,
    json: Any = None,
    headers: Mapping[str, str] | None = None,
    auth: httpx.Auth | None = None,
    timeout: float,
    max_bytes: int,
    follow_redirects: bool = False,
    accept_errors: bool = False,
    ok: tuple[int, ...] = (200,),
) -> tuple[Any, httpx.Headers]:
    """:func:`fetch_json`, and the answer's headers (an error's are on the
    :class:`FetchError`)."""
    require_secure(url)
    try:
        with anyio.fail_after(timeout):
            for _ in range(MAX_REDIRECTS + 1):
                status, body, answered = await _exchange(
                    client, method, url, data, json, headers, auth, max_bytes
                )
                location = answered.get("location")
                if status in (301, 302, 303, 307, 308) and follow_redirects and location:
                    url = require_secure(urllib.parse.urljoin(url, location))
                    continue
                break
            else:
                raise FetchError(f"too many redirects from {_shown(url)}")
    except TimeoutError:
        raise FetchError(f"{_shown(url)} did not answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise FetchError(f"{_shown(url)} could not be reached: {type(exc).__name__}") from None
    try:
        value = msgspec.json.decode(body) if body else None
    except msgspec.DecodeError:
        value = None
        if status in ok:
            raise FetchError(f"{_shown(url)} answered with a body that is not JSON") from None
    if status not in ok:
        raise FetchError(
            f"{_shown(url)} answered {status}",
            status,
            value if accept_errors else None,
            answered,
        )
    return value, answered


async def _exchange(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    data: Mapping[str, str] | None,
    json: Any,
    headers: Mapping[str, str] | None,
    auth: httpx.Auth | None,
    max_bytes: int,
) -> tuple[int, bytes, httpx.Headers]:
    request_headers = {"accept": "application/json", **(headers or {})}
    async with client.stream(
        method,
        url,
        data=dict(data) if data is not None else None,
        json=json,
        headers=request_headers,
        auth=auth if auth is not None else httpx.USE_CLIENT_DEFAULT,
        follow_redirects=False,
    ) as response:
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_bytes:
            raise FetchError(f"{_shown(url)} sends {declared} bytes, more than {max_bytes}")
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise FetchError(f"{_shown(url)} sends more than {max_bytes} bytes")
            chunks.append(chunk)
        return response.status_code, b"".join(chunks), response.headers


def _shown(url: str) -> str:
    """``url`` for a message: without its query (which could carry a secret), clipped."""
    parts = urllib.parse.urlsplit(url)
    text = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return text if len(text) <= 200 else text[:200] + "..."
