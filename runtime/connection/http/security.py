"""The checks every HTTP request passes before the protocol sees it.

Each check returns ``None`` when the request passes, else the :class:`Refusal` to send:
``Host`` against DNS rebinding (421), ``Origin`` (403), the bearer token (401 with
``WWW-Authenticate``), ``Content-Type`` (415) and ``Accept`` (406). They are pure
functions of the headers and the settings, but for the token, which the settings'
verifier judges.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

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
    if host is None or host_name(host) not in allowed:
        return Refusal(421, "Invalid Host header")
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


def _media_types(value: str) -> set[str]:
    return {part.split(";", 1)[0].strip().lower() for part in value.split(",")}


def check_content_type(headers: Mapping[str, str]) -> Refusal | None:
    """A POST body must be ``application/json``."""
    value = headers.get("content-type", "")
    if value.split(";", 1)[0].strip().lower() != "application/json":
        return Refusal(415, "Content-Type must be application/json")
    return None


def check_accept(headers: Mapping[str, str], *types: str) -> Refusal | None:
    """``Accept`` must list every one of ``types`` (or a wildcard covering it)."""
    listed = _media_types(headers.get("accept", ""))
    if "*/*" in listed:
        return None
    for media_type in types:
        major = media_type.split("/", 1)[0]
        if media_type not in listed and f"{major}/*" not in listed:
            return Refusal(406, f"Accept must list {' and '.join(types)}")
    return None
