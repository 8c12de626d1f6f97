"""What an OAuth client learns before it asks for a token: the challenge of a 401 or
403 (RFC 6750 ``WWW-Authenticate``), the resource's Protected Resource Metadata (RFC
9728) and its authorization server's metadata (RFC 8414 or OpenID discovery), each
found where the MCP authorization specification says, in its order, and checked: the
metadata's ``resource`` must name the server asked, its ``issuer`` the server whose
metadata was asked for.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Final

import httpx

from .auth import PRM_PATH
from .bounded_fetch import FetchError, fetch_json, require_secure

__all__ = [
    "AuthorizationServer",
    "Challenge",
    "DiscoveryError",
    "OAuthError",
    "ProtectedResource",
    "authorization_server_metadata_urls",
    "canonical_resource",
    "discover_authorization_server",
    "discover_resource",
    "parse_challenge",
    "resource_metadata_urls",
]

#: The most bytes of a metadata document read.
MAX_METADATA_BYTES: Final = 256 * 1024

#: The start of a Bearer or DPoP challenge: its scheme, first or after a comma.
_SCHEME = re.compile(r"(?:^|,)\s*(?:bearer|dpop)(?=\s|,|$)", re.IGNORECASE)
_DPOP_SCHEME = re.compile(r"(?:^|,)\s*dpop(?=\s|,|$)", re.IGNORECASE)
_PARAM = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


class OAuthError(Exception):
    """Authorizing with an OAuth server failed (its message never holds a token)."""


class DiscoveryError(OAuthError):
    """The metadata needed to authorize could not be found, or was refused."""


@dataclass(frozen=True)
class Challenge:
    """The ``Bearer`` challenge of a 401 or 403: ``error`` (``invalid_token``,
    ``insufficient_scope``), the ``scope`` asked for, the ``resource_metadata`` URL;
    ``dpop``: a ``DPoP`` challenge came too (the server takes DPoP-bound tokens)."""

    error: str | None = None
    scope: str | None = None
    resource_metadata: str | None = None
    dpop: bool = False


def parse_challenge(value: str | None) -> Challenge:
    """The ``Bearer`` (or ``DPoP``, RFC 9449 §7.1) challenge in a ``WWW-Authenticate``
    value (an empty one when there is none: the parameters of other schemes are not
    taken)."""
    if not value:
        return Challenge()
    scheme = _SCHEME.search(value)
    if scheme is None:
        return Challenge()
    params: dict[str, str] = {}
    for match in _PARAM.finditer(value[scheme.end() :]):
        name = match.group(1).lower()
        quoted, bare = match.group(2), match.group(3)
        text = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        params.setdefault(name, text)
    return Challenge(
        error=params.get("error"),
        scope=params.get("scope"),
        resource_metadata=params.get("resource_metadata"),
        dpop=_DPOP_SCHEME.search(value) is not None,
    )


@dataclass(frozen=True)
class ProtectedResource:
    """A resource's metadata: its ``resource`` identifier, its authorization servers,
    the scopes it supports (``None`` when it found none: the 2025-03-26 fallback)."""

    resource: str | None
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] = ()
    document: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AuthorizationServer:
    """An authorization server's metadata (RFC 8414), its endpoints read out."""

    issuer: str
    authorization_endpoint: str | None
    token_endpoint: str
    registration_endpoint: str | None = None
    document: dict[str, Any] = field(default_factory=dict)

    def supports(self, name: str, value: str) -> bool:
        """Whether the list ``name`` of the metadata holds ``value``."""
        listed = self.document.get(name)
        return isinstance(listed, list) and value in listed


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order the MCP specification gives: RFC
    8414 with the issuer's path after the well-known part, OpenID Connect discovery
    likewise, then OpenID Connect discovery after the issuer's path (for an issuer
    without a path: the two well-known documents at the root)."""
    parts = urllib.parse.urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(suffix: str) -> str:
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, suffix, "", ""))

    if not path:
        return [
            at("/.well-known/oauth-authorization-server"),
            at("/.well-known/openid-configuration"),
        ]
    return [
        at("/.well-known/oauth-authorization-server" + path),
        at("/.well-known/openid-configuration" + path),
        at(path + "/.well-known/openid-configuration"),
    ]


def resource_metadata_urls(server_url: str, challenge: Challenge) -> list[str]:
    """Where the metadata of the MCP server at ``server_url`` is, in the specification's
    order: the challenge's ``resource_metadata``, then the well-known URI with the
    server's path, then at the root."""
    urls: list[str] = []
    if challenge.resource_metadata:
        urls.append(urllib.parse.urljoin(server_url, challenge.resource_metadata))
    parts = urllib.parse.urlsplit(server_url)
    path = parts.path.rstrip("/")
    for suffix in ((PRM_PATH + path) if path else None, PRM_PATH):
        if suffix is not None:
            url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, suffix, "", ""))
            if url not in urls:
                urls.append(url)
    return urls


def canonical_resource(url: str) -> str:
    """The resource identifier of an MCP server's URL (RFC 8707): scheme and host lower
    case, no fragment, no query, no trailing slash."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(
        (parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), "", "")
    )


def resource_covers(resource: str, server_url: str) -> bool:
    """Whether the metadata's ``resource`` names the server at ``server_url``: the same
    origin, and a path that is the server's or a parent of it."""
    named = urllib.parse.urlsplit(canonical_resource(resource))
    asked = urllib.parse.urlsplit(canonical_resource(server_url))
    if (named.scheme, named.netloc) != (asked.scheme, asked.netloc):
        return False
    prefix = named.path.rstrip("/")
    return asked.path == prefix or asked.path.startswith(prefix + "/") or not prefix


async def discover_resource(
    client: httpx.AsyncClient, server_url: str, challenge: Challenge, *, timeout: float
) -> ProtectedResource:
    """The Protected Resource Metadata of the server at ``server_url``; without any (a
    server of 2025-03-26), its origin stands as its authorization server."""
    for url in resource_metadata_urls(server_url, challenge):
        try:
            document = await fetch_json(
                client, url, timeout=timeout, max_bytes=MAX_METADATA_BYTES, follow_redirects=True
            )
        except FetchError as exc:
            if exc.status is None and "HTTPS" in str(exc):
                raise DiscoveryError(str(exc)) from None
            continue
        if not isinstance(document, dict):
            continue
        resource = document.get("resource")
        if not isinstance(resource, str) or not resource_covers(resource, server_url):
            raise DiscoveryError(
                f"the resource metadata at {url} names another resource: {resource!r}"
            )
        servers = document.get("authorization_servers")
        if not isinstance(servers, list) or not all(isinstance(s, str) for s in servers):
            raise DiscoveryError(f"the resource metadata at {url} names no authorization server")
        if not servers:
            raise DiscoveryError(f"the resource metadata at {url} names no authorization server")
        scopes = document.get("scopes_supported")
        return ProtectedResource(
            resource,
            tuple(servers),
            tuple(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else (),
            document,
        )
    parts = urllib.parse.urlsplit(server_url)
    origin = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    return ProtectedResource(None, (origin,))


async def discover_authorization_server(
    client: httpx.AsyncClient, issuer: str, *, timeout: float, legacy: bool
) -> AuthorizationServer:
    """The metadata of ``issuer`` (RFC 8414, then OpenID discovery, path-aware), whose
    ``issuer`` must be ``issuer``. ``legacy`` (no resource metadata: a 2025-03-26
    server): without metadata, the default endpoints at the issuer's origin."""
    try:
        return await _authorization_server(client, issuer, timeout=timeout, legacy=legacy)
    except FetchError as exc:
        raise DiscoveryError(str(exc)) from None


async def _authorization_server(
    client: httpx.AsyncClient, issuer: str, *, timeout: float, legacy: bool
) -> AuthorizationServer:
    require_secure(issuer, "authorization server")
    for url in authorization_server_metadata_urls(issuer):
        try:
            document = await fetch_json(
                client, url, timeout=timeout, max_bytes=MAX_METADATA_BYTES, follow_redirects=True
            )
        except FetchError:
            continue
        if not isinstance(document, dict):
            continue
        # Without resource metadata (2025-03-26) no issuer was named: the MCP server's
        # origin serves the metadata, which names its issuer itself.
        if (
            not legacy
            and document.get("issuer") != issuer
            and not (
                isinstance(document.get("issuer"), str)
                and document["issuer"].rstrip("/") == issuer.rstrip("/")
            )
        ):
            raise DiscoveryError(
                f"the metadata at {url} is of issuer {document.get('issuer')!r}, not {issuer!r}"
            )
        token = document.get("token_endpoint")
        if not isinstance(token, str):
            raise DiscoveryError(f"the metadata at {url} names no token_endpoint")
        authorize = document.get("authorization_endpoint")
        register = document.get("registration_endpoint")
        named = document.get("issuer")
        return AuthorizationServer(
            issuer=named if isinstance(named, str) else issuer,
            authorization_endpoint=require_secure(authorize, "authorization endpoint")
            if isinstance(authorize, str)
            else None,
            token_endpoint=require_secure(token, "token endpoint"),
            registration_endpoint=require_secure(register, "registration endpoint")
            if isinstance(register, str)
            else None,
            document=document,
        )
    if not legacy:
        raise DiscoveryError(f"no metadata of the authorization server {issuer} was found")
    base = issuer.rstrip("/")
    return AuthorizationServer(
        issuer=issuer,
        authorization_endpoint=base + "/authorize",
        token_endpoint=base + "/token",
        registration_endpoint=base + "/register",
        document={"code_challenge_methods_supported": ["S256"]},
    )
