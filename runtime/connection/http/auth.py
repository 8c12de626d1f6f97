"""The HTTP app as an OAuth 2.1 resource server: :class:`AuthSettings`.

With ``HttpSettings(auth=AuthSettings(...))`` the app:

* serves its Protected Resource Metadata (RFC 9728) at
  ``/.well-known/oauth-protected-resource`` and at the form suffixed with the resource's
  path (``/.well-known/oauth-protected-resource/mcp`` for ``https://host/mcp``), which
  its 401 answers name;
* answers a request without a valid bearer token 401 with ``WWW-Authenticate: Bearer
  resource_metadata="...", scope="..."``, and one whose token lacks a scope the request
  needs 403 with ``error="insufficient_scope"`` and the scopes needed;
* refuses an access token in the URL's query (400): tokens travel in the
  ``Authorization`` header only;
* serves each request as the :class:`~mcpspec.runtime.connection.principal.Principal`
  its token stands for (``ctx.principal`` in a handler), binds each session to the
  principal that made it, and seals 2026-07-28 ``requestState`` with it.

The token itself never appears in a log line, an error or an answer.
"""

from __future__ import annotations

import inspect
import re
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from ..principal import Principal
from .security import Refusal
from .settings import strings

__all__ = [
    "PRM_PATH",
    "AuthSettings",
    "PrincipalVerifier",
    "VerifierUnavailable",
    "authenticate",
    "metadata_paths",
    "metadata_url",
    "targets",
]

#: Verifies a bearer token: the :class:`Principal` it stands for, or ``None`` when it is
#: not valid (expired, another audience, unknown). A plain or a coroutine function.
PrincipalVerifier = Callable[[str], Awaitable[Principal | None] | Principal | None]

#: Where RFC 9728 puts a resource's metadata (suffixed with the resource's path).
PRM_PATH: Final = "/.well-known/oauth-protected-resource"

# RFC 6750 scope tokens: printable ASCII but space, double quote and backslash.
_SCOPE_TOKEN: Final = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")


class VerifierUnavailable(Exception):
    """A verifier cannot judge tokens now (its issuer's keys or introspection endpoint
    cannot be reached): the app answers 503, not 401, so that clients do not start
    over. Its message never holds the token."""


@dataclass(frozen=True)
class AuthSettings:
    """How the app protects its endpoint (see the module).

    ``resource``: the canonical URI of this MCP server (``https://mcp.example.com/mcp``),
    the audience tokens must be issued for (RFC 8707). ``authorization_servers``: the
    issuers that grant tokens for it (listed in the metadata). ``verifier``: judges each
    bearer token (a :class:`~.verifiers.JwtVerifier`, an
    :class:`~.verifiers.IntrospectionVerifier`, or a function of your own returning a
    :class:`Principal` or ``None``). ``scopes_supported``: listed in the metadata.
    ``required_scopes``: every request needs them (403 otherwise); the 401 challenge
    asks for them (for ``scopes_supported`` when none are required).
    ``resource_name``, ``resource_documentation``: shown to people in the metadata.
    ``max_total_sessions``: the most sessions of all principals together
    (``HttpSettings.max_sessions`` counts per principal): past it, a new session is
    refused (503) unless an idle one can end, so no principal ends another's session.
    """

    resource: str
    authorization_servers: tuple[str, ...]
    verifier: PrincipalVerifier
    scopes_supported: tuple[str, ...] = ()
    required_scopes: tuple[str, ...] = ()
    resource_name: str | None = None
    resource_documentation: str | None = None
    max_total_sessions: int = 16384
    extra_metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.resource)
        if parts.scheme not in ("https", "http") or not parts.netloc or parts.fragment:
            raise ValueError("resource must be an absolute http(s) URI without fragment")
        if isinstance(self.authorization_servers, str):
            raise TypeError("authorization_servers is a collection of issuer URLs")
        object.__setattr__(self, "authorization_servers", tuple(self.authorization_servers))
        for name in ("scopes_supported", "required_scopes"):
            scopes = tuple(strings(getattr(self, name), name))
            for scope in scopes:
                if not _SCOPE_TOKEN.match(scope):
                    raise ValueError(f"{name}: {scope!r} is not a valid scope")
            object.__setattr__(self, name, scopes)
        if self.max_total_sessions < 1:
            raise ValueError("max_total_sessions must be positive")

    def metadata(self) -> dict[str, Any]:
        """The Protected Resource Metadata document (RFC 9728 §2)."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        scopes = self.scopes_supported or self.required_scopes
        if scopes:
            document["scopes_supported"] = list(scopes)
        if self.resource_name is not None:
            document["resource_name"] = self.resource_name
        if self.resource_documentation is not None:
            document["resource_documentation"] = self.resource_documentation
        document.update(self.extra_metadata)
        return document

    def metadata_body(self) -> bytes:
        """:meth:`metadata` as JSON."""
        return msgspec.json.encode(self.metadata())

    def challenge(self, error: str | None = None, scopes: Iterable[str] | None = None) -> str:
        """A ``WWW-Authenticate`` value naming the metadata and the scopes to ask for
        (``scopes``, else the required or supported ones)."""
        asked = list(scopes) if scopes is not None else []
        if scopes is None:
            asked = list(self.required_scopes or self.scopes_supported)
        parts = []
        if error is not None:
            parts.append(f'error="{error}"')
        parts.append(f'resource_metadata="{metadata_url(self.resource)}"')
        if asked:
            parts.append(f'scope="{" ".join(sorted(asked))}"')
        return "Bearer " + ", ".join(parts)

    def insufficient(self, needed: Iterable[str]) -> Refusal:
        """403 for a principal lacking scopes: the challenge names every scope needed."""
        wanted = set(needed) | set(self.required_scopes)
        return Refusal(
            403,
            "Forbidden: insufficient scope",
            {"www-authenticate": self.challenge("insufficient_scope", wanted)},
        )


def metadata_url(resource: str) -> str:
    """Where the metadata of ``resource`` is (RFC 9728 §3.1: the well-known path goes
    between the host and the resource's path)."""
    parts = urllib.parse.urlsplit(resource)
    path = parts.path.rstrip("/")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, PRM_PATH + path, "", ""))


def metadata_paths(resource: str) -> frozenset[str]:
    """The paths the app serves the metadata at: the well-known path alone and suffixed
    with the resource's path."""
    path = urllib.parse.urlsplit(resource).path.rstrip("/")
    return frozenset({PRM_PATH, PRM_PATH + path})


async def authenticate(
    headers: Mapping[str, str], query: bytes, auth: AuthSettings
) -> Principal | Refusal:
    """The principal of a request's bearer token, or the refusal to send (400 for a
    token in the URL, 401 without a valid token, 403 lacking the required scopes).
    :class:`VerifierUnavailable` comes out of a verifier that cannot judge now."""
    if _token_in_query(query):
        return Refusal(
            400,
            "Bad Request: access tokens are taken in the Authorization header only",
            {"www-authenticate": auth.challenge("invalid_request")},
        )
    value = headers.get("authorization", "")
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return Refusal(401, "Unauthorized: a bearer token is required", _www(auth.challenge()))
    granted: Any = auth.verifier(token)
    if inspect.isawaitable(granted):
        granted = await granted
    if granted is True:
        granted = Principal.of_token(token)
    if not isinstance(granted, Principal):
        return Refusal(
            401, "Unauthorized: invalid bearer token", _www(auth.challenge("invalid_token"))
        )
    lacking = set(auth.required_scopes) - granted.scopes
    if lacking:
        return auth.insufficient(lacking)
    return granted


class _Target(msgspec.Struct):
    method: Any = None
    params: Any = None


_TARGET = msgspec.json.Decoder(_Target)
_TARGETS = msgspec.json.Decoder(list[_Target])


#: The methods about one item, and the param that names it.
_ITEM_PARAM: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "resources/subscribe": "uri",
}


def targets(body: bytes, peek: Any) -> list[tuple[str, Any]]:
    """The (method, item name or URI) of each request of a POST body that names an
    item (``tools/call``, ``prompts/get``, ``resources/read``, ``resources/subscribe``):
    what per-item scopes
    are checked against. A body that does not decode names none (the session refuses
    it)."""
    if not peek.batch and peek.method not in _ITEM_PARAM:
        return []
    try:
        found = _TARGETS.decode(body) if peek.batch else [_TARGET.decode(body)]
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeError):
        return []
    out: list[tuple[str, Any]] = []
    for target in found:
        param = _ITEM_PARAM.get(target.method) if isinstance(target.method, str) else None
        if param is not None and isinstance(target.params, dict):
            out.append((target.method, target.params.get(param)))
    return out


def _www(challenge: str) -> dict[str, str]:
    return {"www-authenticate": challenge}


def _token_in_query(query: bytes) -> bool:
    """Whether the query names an ``access_token`` (RFC 6750 §2.3, which MCP forbids)."""
    if b"access_token" not in query.lower():
        return False
    text = query.decode("latin-1")
    return any(
        name.lower() == "access_token"
        for name, _ in urllib.parse.parse_qsl(text, keep_blank_values=True)
    )
