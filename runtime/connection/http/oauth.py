"""An OAuth 2.1 client for protected MCP servers: :class:`OAuth`, an ``httpx.Auth``.

``Client.http(url, auth=OAuth(...))`` reaches a server that answers 401: the client
discovers how to authorize (``WWW-Authenticate`` → Protected Resource Metadata →
authorization server metadata, :mod:`.oauth_discovery`), obtains a client identity
(pre-registered, a Client ID Metadata Document, or Dynamic Client Registration as the
fallback), gets a token (authorization code with PKCE S256 through a
:class:`~.oauth_redirect.RedirectHandler`, ``client_credentials`` for a machine
client, authenticated by secret or ``private_key_jwt``, or the JWT-bearer grant with an
assertion from :mod:`.oauth_exchange`: a workload's identity token, or an enterprise
identity provider's ID-JAG), always naming the server as the token's ``resource`` (RFC
8707), and sends the request again. It refreshes tokens before they end, and on a 403
``insufficient_scope`` asks once more with the union of the scopes held and asked (once
per request).

When the authorization server offers DPoP (RFC 9449: it lists
``dpop_signing_alg_values_supported``) and the resource server takes it (a ``DPoP``
challenge, or DPoP in its metadata), tokens are bound to a key this client makes once
(:mod:`.oauth_dpop`), and every token and resource request carries a fresh proof; a
server's ``use_dpop_nonce`` answer is retried once with the nonce it sent.

What an authorization server sends is not trusted: every fetch is bounded in time,
size and redirects and must be HTTPS (but to loopback), metadata of another issuer is
refused, the redirect's ``state`` and ``iss`` (RFC 9207) are checked, and a token
response that is not one is a :class:`TokenResponseError`. Tokens are kept in a
:class:`~.oauth_store.TokenStore` and never appear in an error message.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import urllib.parse
import uuid
from collections.abc import AsyncGenerator, Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

import anyio
import httpx

from .bounded_fetch import FetchError, fetch_json, fetch_json_with_headers, is_loopback
from .oauth_discovery import (
    AuthorizationServer,
    Challenge,
    DiscoveryError,
    OAuthError,
    ProtectedResource,
    canonical_resource,
    discover_authorization_server,
    discover_resource,
    parse_challenge,
)
from .oauth_dpop import DPoPKey, DPoPNonces, choose_algorithm
from .oauth_exchange import JWT_BEARER, AssertionRequest, AssertionSource
from .oauth_redirect import RedirectHandler
from .oauth_store import MemoryTokenStore, TokenStore

__all__ = [
    "AuthorizationFailed",
    "DiscoveryError",
    "OAuth",
    "OAuthError",
    "PrivateKeyJwt",
    "TokenResponseError",
]

#: The most bytes of a token or registration answer read.
MAX_ANSWER_BYTES: Final = 256 * 1024
#: A token this close to its end is refreshed before it is sent.
EXPIRY_MARGIN: Final = 30.0
#: The most tokens whose binding (DPoP or Bearer) is remembered.
MAX_BINDINGS_KEPT: Final = 256
_ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


class AuthorizationFailed(OAuthError):
    """The authorization step failed: the user or server refused (``error``), or the
    redirect's ``state`` or ``iss`` was not the one expected."""


class TokenResponseError(OAuthError):
    """The token (or registration) endpoint answered an error or something that is not
    a token response; ``error`` is the OAuth error code when one came."""

    def __init__(self, message: str, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True)
class PrivateKeyJwt:
    """A machine client's key for ``private_key_jwt`` (RFC 7523): a private key (PEM or
    a ``cryptography`` key), its algorithm and key id."""

    key: Any
    algorithm: str = "RS256"
    kid: str | None = None


class OAuth(httpx.Auth):
    """OAuth 2.1 for ``Client.http`` (see the module).

    Client identity: ``client_id`` (and ``client_secret`` or ``private_key_jwt``) when
    pre-registered; else ``client_metadata_url``, the URL of a Client ID Metadata
    Document, when the server supports those; else Dynamic Client Registration, with
    ``client_name``. ``grant``: ``"authorization_code"`` (needs ``redirect``),
    ``"client_credentials"``, or ``"jwt_bearer"`` (RFC 7523; needs ``assertion``: the
    JWT to present, or an :data:`~.oauth_exchange.AssertionSource` such as
    :class:`~.oauth_exchange.TokenExchange`). ``scopes``: those to ask for (default:
    what the server's challenge, else its metadata, names). ``dpop``: ``True`` binds
    tokens with DPoP when both the authorization and the resource server offer it,
    ``False`` never, a :class:`~.oauth_dpop.DPoPKey` with that key whenever the
    authorization server offers it. ``store`` keeps tokens and
    registrations (in memory by default). ``http``: the client to reach authorization
    servers with; ``timeout`` bounds each exchange with them.
    """

    def __init__(
        self,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        private_key_jwt: PrivateKeyJwt | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "mcpspec client",
        redirect: RedirectHandler | None = None,
        grant: Literal["authorization_code", "client_credentials", "jwt_bearer"] = (
            "authorization_code"
        ),
        assertion: str | AssertionSource | None = None,
        scopes: Iterable[str] | None = None,
        dpop: DPoPKey | bool = True,
        store: TokenStore | None = None,
        http: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
    ) -> None:
        if grant == "authorization_code" and redirect is None:
            raise ValueError("the authorization_code grant needs a redirect handler")
        if grant not in ("authorization_code", "client_credentials", "jwt_bearer"):
            raise ValueError(f"unknown grant {grant!r}")
        if grant == "jwt_bearer" and assertion is None:
            raise ValueError("the jwt_bearer grant needs an assertion")
        self.client_id = client_id
        self.client_secret = client_secret
        self.private_key_jwt = private_key_jwt
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.redirect = redirect
        self.grant = grant
        self.assertion = assertion
        self.dpop = dpop
        self.scopes = tuple(scopes) if scopes is not None else None
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self._http = http
        self.timeout = timeout
        self._lock = anyio.Lock()
        #: The DPoP keys made (one per algorithm, kept for this client's life) and the
        #: nonces servers asked for.
        self._dpop_keys: dict[str, DPoPKey] = {}
        self._nonces = DPoPNonces()
        #: Access token -> the algorithm of the key it is bound to (None: Bearer).
        self._bindings: dict[str, str | None] = {}

    # -- the flow of each request --------------------------------------------------------------

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        key = canonical_resource(str(request.url))
        async with self._lock:
            sent = await self._usable_token(key)
        if sent is not None:
            await self._present(request, key, sent)
        response = yield request
        if sent is not None and self._nonce_asked(request, response):
            # RFC 9449 §9: the resource server wants its nonce in the proof; once.
            await self._present(request, key, sent)
            response = yield request
        if response.status_code == 401:
            challenge = parse_challenge(response.headers.get("www-authenticate"))
            async with self._lock:
                token = await self._token_after_refusal(key, request, challenge, sent, None)
            await self._present(request, key, token)
            sent = token
            response = yield request
            if self._nonce_asked(request, response):
                await self._present(request, key, token)
                response = yield request
        if response.status_code == 403:
            challenge = parse_challenge(response.headers.get("www-authenticate"))
            if challenge.error == "insufficient_scope":
                # Step up once: the scopes held and those asked for.
                async with self._lock:
                    held = await self._held_scopes(key)
                    wanted = held | set((challenge.scope or "").split())
                    token = await self._token_after_refusal(key, request, challenge, sent, wanted)
                await self._present(request, key, token)
                response = yield request
                if self._nonce_asked(request, response):
                    await self._present(request, key, token)
                    yield request

    async def _present(self, request: httpx.Request, key: str, access: str) -> None:
        """Put ``access`` on ``request``: as a DPoP token with a fresh proof when it is
        bound to a key of ours, else as a Bearer token."""
        algorithm = await self._binding(key, access)
        if algorithm is not None:
            url = str(request.url)
            proof = self._dpop_key(algorithm).proof(
                request.method, url, access_token=access, nonce=self._nonces.get(url)
            )
            request.headers["authorization"] = f"DPoP {access}"
            request.headers["dpop"] = proof
        else:
            request.headers["authorization"] = f"Bearer {access}"
            request.headers.pop("dpop", None)

    async def _binding(self, key: str, access: str) -> str | None:
        """The algorithm of the DPoP key ``access`` is bound to (``None``: a Bearer
        token), as the store says, remembered for the next requests."""
        if access in self._bindings:
            return self._bindings[access]
        kept = await self.store.load(key) or {}
        tokens = kept.get("tokens")
        algorithm = kept.get("dpop_alg")
        bound = (
            isinstance(tokens, dict)
            and tokens.get("token_type") == "DPoP"
            and tokens.get("access_token") == access
            and isinstance(algorithm, str)
        )
        if len(self._bindings) >= MAX_BINDINGS_KEPT:
            self._bindings.clear()
        self._bindings[access] = algorithm if bound else None
        return self._bindings[access]

    def _nonce_asked(self, request: httpx.Request, response: httpx.Response) -> bool:
        """Keep a nonce the server sent; whether it refused ``request`` for want of it
        (a 401 ``use_dpop_nonce`` to a request that carried a proof)."""
        values = response.headers.get_list("dpop-nonce")
        if not values or "dpop" not in request.headers:
            return False
        kept = self._nonces.note(str(request.url), values)
        challenge = parse_challenge(response.headers.get("www-authenticate"))
        return kept and response.status_code == 401 and challenge.error == "use_dpop_nonce"

    def _dpop_key(self, algorithm: str) -> DPoPKey:
        """This client's key for ``algorithm`` (the one given, else one made once)."""
        if isinstance(self.dpop, DPoPKey) and self.dpop.algorithm == algorithm:
            return self.dpop
        key = self._dpop_keys.get(algorithm)
        if key is None:
            key = self._dpop_keys[algorithm] = DPoPKey(algorithm)
        return key

    def _dpop_for(self, server: AuthorizationServer, resource_takes_it: bool) -> DPoPKey | None:
        """The key to bind tokens of ``server`` to (``None``: Bearer tokens): ours when
        both the authorization server and the resource server offer DPoP, the one given
        whenever the authorization server does."""
        if self.dpop is False:
            return None
        listed = server.document.get("dpop_signing_alg_values_supported")
        if isinstance(self.dpop, DPoPKey):
            offered = isinstance(listed, list) and self.dpop.algorithm in listed
            return self.dpop if offered else None
        algorithm = choose_algorithm(listed)
        if algorithm is None or not resource_takes_it:
            return None
        return self._dpop_key(algorithm)

    async def _usable_token(self, key: str) -> str | None:
        """The access token kept for ``key``, refreshed first when it is about to end."""
        kept = await self.store.load(key) or {}
        tokens = kept.get("tokens")
        if not isinstance(tokens, dict) or not isinstance(tokens.get("access_token"), str):
            return None
        expires = tokens.get("expires_at")
        if isinstance(expires, (int, float)) and expires - EXPIRY_MARGIN < time.time():
            return await self._refresh(key, kept)
        access: str = tokens["access_token"]
        return access

    async def _held_scopes(self, key: str) -> set[str]:
        kept = await self.store.load(key) or {}
        tokens = kept.get("tokens")
        scope = tokens.get("scope") if isinstance(tokens, dict) else None
        return set(scope.split()) if isinstance(scope, str) else set()

    async def _token_after_refusal(
        self,
        key: str,
        request: httpx.Request,
        challenge: Challenge,
        sent: str | None,
        scopes: set[str] | None,
    ) -> str:
        """A token to send again after a 401 (``scopes`` ``None``) or 403: another
        request's new token when there is one, else a refreshed one (on a 401), else a
        new authorization."""
        kept = await self.store.load(key) or {}
        tokens = kept.get("tokens")
        current = tokens.get("access_token") if isinstance(tokens, dict) else None
        if isinstance(current, str) and current != sent and scopes is None:
            return current  # authorized meanwhile by a request beside this one
        if scopes is None and current is not None and challenge.error != "invalid_token":
            refreshed = await self._refresh(key, kept)
            if refreshed is not None and refreshed != sent:
                return refreshed
        return await self._authorize(key, str(request.url), challenge, scopes)

    # -- authorization -----------------------------------------------------------------------

    async def _authorize(
        self, key: str, server_url: str, challenge: Challenge, scopes: set[str] | None
    ) -> str:
        client = self._http or httpx.AsyncClient()
        try:
            resource_meta = await discover_resource(
                client, server_url, challenge, timeout=self.timeout
            )
            issuer = resource_meta.authorization_servers[0]
            server = await discover_authorization_server(
                client, issuer, timeout=self.timeout, legacy=resource_meta.resource is None
            )
            resource = resource_meta.resource or canonical_resource(server_url)
            if scopes:
                scope: str | None = " ".join(sorted(scopes))
            elif self.scopes is not None:
                scope = " ".join(self.scopes) or None
            else:
                scope = challenge.scope or " ".join(resource_meta.scopes_supported) or None
            kept = await self.store.load(key) or {}
            identity = await self._identity(client, server, kept)
            dpop = self._dpop_for(server, _takes_dpop(challenge, resource_meta, kept))
            if self.grant == "client_credentials":
                form = {"grant_type": "client_credentials", "resource": resource}
                if scope:
                    form["scope"] = scope
            elif self.grant == "jwt_bearer":
                form = {
                    "grant_type": JWT_BEARER,
                    "assertion": await self._assertion_for(client, server, resource, scope),
                    "resource": resource,
                }
                if scope:
                    form["scope"] = scope
            else:
                form = await self._authorization_code(server, identity, scope, resource)
            tokens = await self._token_request(client, server, identity, form, dpop)
        finally:
            if self._http is None:
                await client.aclose()
        if scope and "scope" not in tokens:
            tokens["scope"] = scope
        await self.store.save(
            key,
            {
                "tokens": tokens,
                "client": identity,
                "issuer": server.issuer,
                "token_endpoint": server.token_endpoint,
                "resource": resource,
                "auth_methods": server.document.get("token_endpoint_auth_methods_supported"),
                "dpop_alg": dpop.algorithm if dpop is not None else None,
            },
        )
        access: str = tokens["access_token"]
        return access

    async def _assertion_for(
        self,
        client: httpx.AsyncClient,
        server: AuthorizationServer,
        resource: str,
        scope: str | None,
    ) -> str:
        """The JWT the JWT-bearer grant presents: the one given, or its source's."""
        if isinstance(self.assertion, str):
            return self.assertion
        assert self.assertion is not None
        request = AssertionRequest(
            issuer=server.issuer,
            token_endpoint=server.token_endpoint,
            resource=resource,
            scope=scope,
            http=client,
            timeout=self.timeout,
        )
        assertion = await self.assertion(request)
        if not isinstance(assertion, str) or not assertion:
            raise AuthorizationFailed("the assertion source gave no assertion")
        return assertion

    async def _identity(
        self, client: httpx.AsyncClient, server: AuthorizationServer, kept: dict[str, Any]
    ) -> dict[str, Any]:
        """Who this client is to ``server``: pre-registered, a metadata document's URL,
        one registered earlier with it, or one registered now (RFC 7591)."""
        if self.client_id is not None:
            identity: dict[str, Any] = {"client_id": self.client_id}
            if self.client_secret is not None:
                identity["client_secret"] = self.client_secret
            return identity
        if (
            self.client_metadata_url is not None
            and server.document.get("client_id_metadata_document_supported") is True
        ):
            return {"client_id": self.client_metadata_url}
        registered = kept.get("client")
        if (
            isinstance(registered, dict)
            and kept.get("issuer") == server.issuer
            and isinstance(registered.get("client_id"), str)
        ):
            return registered
        if server.registration_endpoint is None:
            raise DiscoveryError(
                "the authorization server takes no registration, and no client_id "
                "(or client metadata document it supports) was given"
            )
        return await self._register(client, server)

    async def _register(
        self, client: httpx.AsyncClient, server: AuthorizationServer
    ) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "client_name": self.client_name,
            "token_endpoint_auth_method": "none",
            "application_type": "web",
        }
        if self.grant in ("client_credentials", "jwt_bearer"):
            metadata.update(
                grant_types=[JWT_BEARER if self.grant == "jwt_bearer" else "client_credentials"],
                token_endpoint_auth_method="client_secret_basic",
            )
        else:
            assert self.redirect is not None
            redirect_uri = self.redirect.redirect_uri
            metadata.update(
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                redirect_uris=[redirect_uri],
                # OpenID registration: a loopback redirect is a native application's.
                application_type="native"
                if is_loopback(urllib.parse.urlsplit(redirect_uri).hostname or "")
                else "web",
            )
        assert server.registration_endpoint is not None
        try:
            answer = await fetch_json(
                client,
                server.registration_endpoint,
                method="POST",
                json=metadata,
                timeout=self.timeout,
                max_bytes=MAX_ANSWER_BYTES,
                ok=(200, 201),
                accept_errors=True,
            )
        except FetchError as exc:
            raise TokenResponseError(
                f"client registration failed: {exc}", _error_code(exc.body)
            ) from None
        if not isinstance(answer, dict) or not isinstance(answer.get("client_id"), str):
            raise TokenResponseError("the registration answer has no client_id")
        identity = {"client_id": answer["client_id"]}
        if isinstance(answer.get("client_secret"), str):
            identity["client_secret"] = answer["client_secret"]
        return identity

    async def _authorization_code(
        self,
        server: AuthorizationServer,
        identity: dict[str, Any],
        scope: str | None,
        resource: str,
    ) -> dict[str, str]:
        """The user authorizes (through the redirect handler); the token request's form."""
        assert self.redirect is not None
        if server.authorization_endpoint is None:
            raise DiscoveryError("the authorization server names no authorization_endpoint")
        if not server.supports("code_challenge_methods_supported", "S256"):
            # MCP: without PKCE S256 advertised, a client must not go on.
            raise DiscoveryError("the authorization server does not advertise PKCE S256")
        verifier = secrets.token_urlsafe(64)
        challenge = (
            base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            .decode()
            .rstrip("=")
        )
        state = secrets.token_urlsafe(32)
        redirect_uri = self.redirect.redirect_uri
        params = {
            "response_type": "code",
            "client_id": identity["client_id"],
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": resource,
        }
        if scope:
            params["scope"] = scope
        endpoint = server.authorization_endpoint
        url = endpoint + ("&" if "?" in endpoint else "?") + urllib.parse.urlencode(params)
        answer = await self.redirect(url)
        if answer.get("state") != state:
            raise AuthorizationFailed("the redirect's state is not the one sent")
        issuer = answer.get("iss")
        if issuer is not None and issuer != server.issuer:
            raise AuthorizationFailed("the redirect's iss names another authorization server")
        if issuer is None and server.document.get("authorization_response_iss_parameter_supported"):
            raise AuthorizationFailed("the redirect lacks the iss its server promises")
        if "error" in answer:
            raise AuthorizationFailed(f"authorization refused: {str(answer['error'])[:100]}")
        code = answer.get("code")
        if not isinstance(code, str) or not code:
            raise AuthorizationFailed("the redirect carries no code")
        return {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "resource": resource,
        }

    async def _refresh(self, key: str, kept: dict[str, Any]) -> str | None:
        """A new access token from the kept refresh token (``None``: none, or refused)."""
        tokens = kept.get("tokens")
        refresh = tokens.get("refresh_token") if isinstance(tokens, dict) else None
        endpoint = kept.get("token_endpoint")
        identity = kept.get("client")
        if not (
            isinstance(refresh, str) and isinstance(endpoint, str) and isinstance(identity, dict)
        ):
            return None
        server = AuthorizationServer(
            issuer=str(kept.get("issuer")),
            authorization_endpoint=None,
            token_endpoint=endpoint,
            document={"token_endpoint_auth_methods_supported": kept.get("auth_methods")},
        )
        form = {"grant_type": "refresh_token", "refresh_token": refresh}
        if isinstance(kept.get("resource"), str):
            form["resource"] = kept["resource"]
        algorithm = kept.get("dpop_alg")
        dpop = self._dpop_key(algorithm) if isinstance(algorithm, str) else None
        client = self._http or httpx.AsyncClient()
        try:
            fresh = await self._token_request(client, server, identity, form, dpop)
        except OAuthError:
            return None
        finally:
            if self._http is None:
                await client.aclose()
        fresh.setdefault("refresh_token", refresh)
        if "scope" not in fresh and isinstance(tokens, dict) and "scope" in tokens:
            fresh["scope"] = tokens["scope"]
        await self.store.save(key, {**kept, "tokens": fresh})
        access: str = fresh["access_token"]
        return access

    async def _token_request(
        self,
        client: httpx.AsyncClient,
        server: AuthorizationServer,
        identity: dict[str, Any],
        form: dict[str, str],
        dpop: DPoPKey | None = None,
    ) -> dict[str, Any]:
        """POST ``form`` to the token endpoint, the client authenticated as the server
        takes it, with a DPoP proof of ``dpop`` (again once with the nonce the server
        asks for); the tokens, checked."""
        form = dict(form)
        auth: httpx.Auth | None = None
        client_id = identity["client_id"]
        secret = identity.get("client_secret")
        listed = server.document.get("token_endpoint_auth_methods_supported")
        methods: list[Any] = listed if isinstance(listed, list) else []
        if self.private_key_jwt is not None:
            form["client_id"] = client_id
            form["client_assertion_type"] = _ASSERTION_TYPE
            form["client_assertion"] = self._assertion(client_id, server)
        elif isinstance(secret, str):
            # client_secret_basic is the default (RFC 8414) unless only _post is listed.
            if "client_secret_post" in methods and "client_secret_basic" not in methods:
                form["client_id"] = client_id
                form["client_secret"] = secret
            else:
                auth = httpx.BasicAuth(
                    urllib.parse.quote(client_id, safe=""), urllib.parse.quote(secret, safe="")
                )
        else:
            form["client_id"] = client_id
        endpoint = server.token_endpoint
        for attempt in (1, 2):
            headers = None
            if dpop is not None:
                proof = dpop.proof("POST", endpoint, nonce=self._nonces.get(endpoint))
                headers = {"dpop": proof}
            try:
                answer, answered = await fetch_json_with_headers(
                    client,
                    endpoint,
                    method="POST",
                    data=form,
                    headers=headers,
                    auth=auth,
                    timeout=self.timeout,
                    max_bytes=MAX_ANSWER_BYTES,
                    accept_errors=True,
                )
            except FetchError as exc:
                code = _error_code(exc.body)
                nonce = exc.headers.get_list("dpop-nonce")
                if (
                    dpop is not None
                    and attempt == 1
                    and code == "use_dpop_nonce"
                    and self._nonces.note(endpoint, nonce)
                ):
                    continue  # RFC 9449 §8: again, with the server's nonce
                raise TokenResponseError(
                    f"the token request failed: {exc}" + (f" ({code})" if code else ""), code
                ) from None
            if dpop is not None and "dpop-nonce" in answered:
                self._nonces.note(endpoint, answered.get_list("dpop-nonce"))
            return _tokens_of(answer, dpop=dpop is not None)
        raise AssertionError("unreachable")  # pragma: no cover

    def _assertion(self, client_id: str, server: AuthorizationServer) -> str:
        import jwt

        assert self.private_key_jwt is not None
        now = int(time.time())
        claims = {
            "iss": client_id,
            "sub": client_id,
            "aud": server.issuer,
            "iat": now,
            "exp": now + 300,
            "jti": str(uuid.uuid4()),
        }
        headers = {"kid": self.private_key_jwt.kid} if self.private_key_jwt.kid else None
        return jwt.encode(
            claims,
            self.private_key_jwt.key,
            algorithm=self.private_key_jwt.algorithm,
            headers=headers,
        )


def _takes_dpop(challenge: Challenge, resource: ProtectedResource, kept: dict[str, Any]) -> bool:
    """Whether the resource server takes DPoP-bound tokens: its challenge names the DPoP
    scheme (RFC 9449 §7.1), its metadata asks for them or lists DPoP algorithms (RFC
    9728 §2), or the token held for it is one."""
    document = resource.document
    return (
        challenge.dpop
        or document.get("dpop_bound_access_tokens_required") is True
        or isinstance(document.get("dpop_signing_alg_values_supported"), list)
        or isinstance(kept.get("dpop_alg"), str)
    )


def _error_code(body: Any) -> str | None:
    """The OAuth ``error`` of an error answer (clipped), when it has one."""
    error = body.get("error") if isinstance(body, dict) else None
    return error[:64] if isinstance(error, str) else None


def _tokens_of(answer: Any, *, dpop: bool = False) -> dict[str, Any]:
    """The tokens of a token response (RFC 6749 §5.1), or :class:`TokenResponseError`;
    a ``DPoP`` token only when a proof was sent (``dpop``)."""
    if not isinstance(answer, dict):
        raise TokenResponseError("the token response is not a JSON object")
    access = answer.get("access_token")
    if not isinstance(access, str) or not access or len(access) > 64 * 1024:
        raise TokenResponseError("the token response has no usable access_token")
    token_type = answer.get("token_type")
    kind = token_type.lower() if isinstance(token_type, str) else None
    if kind != "bearer" and not (dpop and kind == "dpop"):
        raise TokenResponseError(
            "the token response's token_type is not Bearer" + (" or DPoP" if dpop else "")
        )
    tokens: dict[str, Any] = {
        "access_token": access,
        "token_type": "DPoP" if kind == "dpop" else "Bearer",
    }
    expires_in = answer.get("expires_in")
    if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
        if expires_in <= 0:
            raise TokenResponseError("the token response's expires_in is not positive")
        tokens["expires_at"] = time.time() + float(expires_in)
    elif expires_in is not None:
        raise TokenResponseError("the token response's expires_in is not a number")
    refresh = answer.get("refresh_token")
    if isinstance(refresh, str) and refresh:
        tokens["refresh_token"] = refresh
    scope = answer.get("scope")
    if isinstance(scope, str):
        tokens["scope"] = scope
    return tokens
