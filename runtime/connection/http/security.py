"""The checks every HTTP request passes before the protocol sees it.

Each check returns ``None`` when the request passes, else the :class:`Refusal` to send:
``Host`` against DNS rebinding (421), ``Origin`` (403), the bearer token (401 with
``WWW-Authenticate``), ``Content-Type`` (415) and ``Accept`` (406). They are pure
functions of the headers and the settings, but for the token, which the settings'
verifier judges.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from mcpspec.runtime.errors import show

from ..principal import Principal
from .settings import LOOPBACK_HOSTS, HttpSettings

__all__ = [
    "Refusal",
    "check_accept",
    "check_content_type",
    "check_host",
    "check_origin",
    "check_token",
    "host_name",
]

_LOOPBACK_ORIGIN_SCHEMES: Final = ("http://", "https://")


@dataclass(frozen=True)
class Refusal:
    """An HTTP refusal: status, a short reason (sent as the body, in a JSON-RPC error
    without id), and headers to add."""

    status: int
    reason: str
    headers: Mapping[str, str] = field(default_factory=dict)


def host_name(value: str) -> str:
    """The host of a ``Host`` value or an origin's authority, without the port,
    lower-cased (``[::1]:8000`` → ``[::1]``)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end != -1 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def check_host(headers: Mapping[str, str], settings: HttpSettings) -> Refusal | None:
    """``Host`` must name a host this server answers to: a page on another site that
    made its name resolve to this machine (DNS rebinding) sends its own name."""
    allowed = settings.allowed_hosts if settings.allowed_hosts is not None else LOOPBACK_HOSTS
    if "*" in allowed:
        return None
    host = headers.get("host")
    if host is None:
        return Refusal(421, "Invalid Host header: none was sent")
    if host_name(host) not in allowed:
        # Say how to accept it: a server behind a proxy or on a LAN address meets this
        # first.
        return Refusal(
            421,
            f"Invalid Host header: {show(host_name(host))} is not an allowed host "
            "(the server accepts it with allowed_hosts=[...] in http_app or run_http)",
        )
    return None


def check_origin(headers: Mapping[str, str], settings: HttpSettings) -> Refusal | None:
    """``Origin``, when present, must be allowed: a browser names the page's origin,
    and a page of another site must not drive this server."""
    origin = headers.get("origin")
    if origin is None:
        return None
    allowed = settings.allowed_origins
    if allowed is None:
        # Loopback origins only, any port.
        lowered = origin.strip().lower()
        for scheme in _LOOPBACK_ORIGIN_SCHEMES:
            if lowered.startswith(scheme) and host_name(lowered[len(scheme) :]) in LOOPBACK_HOSTS:
                return None
        return Refusal(403, "Invalid Origin header")
    if "*" in allowed or origin.strip() in allowed:
        return None
    return Refusal(403, "Invalid Origin header")


async def check_token(
    headers: Mapping[str, str], settings: HttpSettings
) -> Refusal | Principal | None:
    """With a verifier, ``Authorization: Bearer <token>`` must carry a token it
    accepts; else 401 with a ``WWW-Authenticate`` challenge (RFC 6750). A token it
    accepts is the :class:`Principal` it returned, or one standing for the token (its
    sessions are its own); ``None`` without a verifier."""
    verify = settings.verify_token
    if verify is None:
        return None
    challenge = "Bearer"
    if settings.resource_metadata is not None:
        challenge += f' resource_metadata="{settings.resource_metadata}"'
    value = headers.get("authorization", "")
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return Refusal(401, "Missing bearer token", {"www-authenticate": challenge})
    granted: Any = verify(token)
    if inspect.isawaitable(granted):
        granted = await granted
    if not granted:
        return Refusal(
            401,
            "Invalid bearer token",
            {"www-authenticate": f'{challenge}, error="invalid_token"'},
        )
    return granted if isinstance(granted, Principal) else Principal.of_token(token)


def _media_ranges(value: str) -> dict[str, float]:
    """The media ranges of an ``Accept`` value and their weights (``q``, 1 when absent;
    a range whose weight is no number is left out)."""
    ranges: dict[str, float] = {}
    for part in value.split(","):
        media_range, *parameters = part.split(";")
        weight = 1.0
        for parameter in parameters:
            name, _, number = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(number.strip())
                except ValueError:
                    weight = math.nan
        if not math.isnan(weight):
            ranges[media_range.strip().lower()] = weight
    return ranges


def _weight(ranges: Mapping[str, float], media_type: str) -> float:
    """The weight ``ranges`` give ``media_type``: that of the most specific range that
    covers it (RFC 9110, 12.5.1), 0 when none does."""
    major = media_type.split("/", 1)[0]
    for media_range in (media_type, f"{major}/*", "*/*"):
        weight = ranges.get(media_range)
        if weight is not None:
            return weight
    return 0.0


def check_content_type(headers: Mapping[str, str]) -> Refusal | None:
    """A POST body must be ``application/json``."""
    value = headers.get("content-type", "")
    if value.split(";", 1)[0].strip().lower() != "application/json":
        return Refusal(415, "Content-Type must be application/json")
    return None


def check_accept(headers: Mapping[str, str], *types: str) -> Refusal | None:
    """``Accept`` must accept every one of ``types``: list it, or a wildcard covering
    it, with a weight above 0 (``q=0`` is "not acceptable", RFC 9110)."""
    ranges = _media_ranges(headers.get("accept", ""))
    for media_type in types:
        if _weight(ranges, media_type) <= 0:
            return Refusal(406, f"Accept must list {' and '.join(types)}")
    return None
