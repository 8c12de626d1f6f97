"""Assertions for the JWT-bearer grant (RFC 7523): where ``OAuth(grant="jwt_bearer")``
gets the JWT it presents to the authorization server.

Two sources are common. Workload identity federation (MCP SEP-1933): the workload
already holds a JWT its platform issued (a Kubernetes service account token, a cloud's
identity token) for the authorization server: give it as a string, or as an
:data:`AssertionSource` that reads the current one. Enterprise-managed authorization
(MCP SEP-990): the user signed in with the enterprise's identity provider, and
:class:`TokenExchange` trades that ID token at the provider (RFC 8693 token exchange)
for an Identity Assertion JWT Authorization Grant (ID-JAG) naming the MCP server's
authorization server and resource.

The identity provider is not trusted more than an authorization server: the exchange is
a bounded fetch (:mod:`.bounded_fetch`) and an answer that is not an ID-JAG is a
:class:`TokenExchangeError`.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx

from .bounded_fetch import FetchError, fetch_json
from .oauth_discovery import OAuthError

__all__ = [
    "ID_JAG",
    "ID_TOKEN",
    "JWT_BEARER",
    "TOKEN_EXCHANGE",
    "AssertionRequest",
    "AssertionSource",
    "TokenExchange",
    "TokenExchangeError",
    "issued_assertion",
]

JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN: Final = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG: Final = "urn:ietf:params:oauth:token-type:id-jag"
#: The most bytes of an exchange answer read, and of a token in it.
MAX_EXCHANGE_BYTES: Final = 256 * 1024
MAX_TOKEN_CHARS: Final = 64 * 1024


class TokenExchangeError(OAuthError):
    """The identity provider refused the exchange (``error``, its OAuth error code when
    one came) or answered something that is not the token asked for."""

    def __init__(self, message: str, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True)
class AssertionRequest:
    """What an assertion is for: the authorization server's ``issuer`` and
    ``token_endpoint``, the MCP server's ``resource``, the ``scope`` asked (or
    ``None``); ``http`` and ``timeout`` to reach others with."""

    issuer: str
    token_endpoint: str
    resource: str
    scope: str | None
    http: httpx.AsyncClient
    timeout: float


#: Makes the assertion of a JWT-bearer grant for one authorization.
AssertionSource = Callable[[AssertionRequest], Awaitable[str]]


@dataclass(frozen=True)
class TokenExchange:
    """An :data:`AssertionSource` for enterprise-managed authorization (SEP-990): trade
    the user's ``id_token`` (or what ``id_token`` returns, for one that is renewed) at
    the identity provider's ``token_endpoint`` for an ID-JAG whose audience is the
    authorization server and whose resource is the MCP server. ``client_id`` and
    ``client_secret``: this client at the identity provider (the secret is sent with
    HTTP Basic)."""

    token_endpoint: str
    id_token: str | Callable[[], Awaitable[str]]
    client_id: str | None = None
    client_secret: str | None = None

    async def __call__(self, request: AssertionRequest) -> str:
        subject = self.id_token if isinstance(self.id_token, str) else await self.id_token()
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "subject_token": subject,
            "subject_token_type": ID_TOKEN,
            "audience": request.issuer,
            "resource": request.resource,
        }
        if request.scope:
            form["scope"] = request.scope
        auth: httpx.Auth | None = None
        if self.client_id is not None and self.client_secret is not None:
            auth = httpx.BasicAuth(
                urllib.parse.quote(self.client_id, safe=""),
                urllib.parse.quote(self.client_secret, safe=""),
            )
        elif self.client_id is not None:
            form["client_id"] = self.client_id
        try:
            answer = await fetch_json(
                request.http,
                self.token_endpoint,
                method="POST",
                data=form,
                auth=auth,
                timeout=request.timeout,
                max_bytes=MAX_EXCHANGE_BYTES,
                accept_errors=True,
            )
        except FetchError as exc:
            code = _error_code(exc.body)
            raise TokenExchangeError(
                f"the token exchange failed: {exc}" + (f" ({code})" if code else ""), code
            ) from None
        return issued_assertion(answer)


def issued_assertion(answer: Any) -> str:
    """The ID-JAG of a token exchange answer (RFC 8693 §2.2.1), or
    :class:`TokenExchangeError`: a JSON object whose ``issued_token_type`` is the ID-JAG
    type and whose ``access_token`` is a JWT of type ``oauth-id-jag+jwt``."""
    import jwt

    if not isinstance(answer, dict):
        raise TokenExchangeError("the token exchange answer is not a JSON object")
    if answer.get("issued_token_type") != ID_JAG:
        raise TokenExchangeError("the token exchange issued another type of token")
    if not isinstance(answer.get("token_type"), str):
        raise TokenExchangeError("the token exchange answer has no token_type")
    token = answer.get("access_token")
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise TokenExchangeError("the token exchange answer has no usable access_token")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise TokenExchangeError("the issued ID-JAG is not a JWT") from None
    if header.get("typ") != "oauth-id-jag+jwt":
        raise TokenExchangeError("the issued token is not an ID-JAG (typ oauth-id-jag+jwt)")
    return token


def _error_code(body: Any) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    return error[:64] if isinstance(error, str) else None
