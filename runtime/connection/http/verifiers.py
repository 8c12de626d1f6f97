"""Token verifiers shipped for :class:`~.auth.AuthSettings` (``pip install mcpspec[auth]``).

:class:`JwtVerifier` checks JWT access tokens (RFC 9068) locally against the issuer's
keys: the JWKS named by the issuer's RFC 8414 metadata (or OpenID discovery), cached,
fetched again when a token names a key not in it (at most every ``refresh_seconds``),
every fetch bounded in time and size. A token passes only when its signature verifies
with an allowed asymmetric algorithm (never ``none``, never an HMAC algorithm whose
"key" would be public), its ``iss`` is the issuer, its ``aud`` names this resource
(RFC 8707), and it is within ``exp`` and ``nbf`` up to a small leeway.

:class:`IntrospectionVerifier` asks the issuer (RFC 7662) about opaque tokens, caching
each answer (by the token's hash, never the token) until the token expires or
``cache_seconds`` pass, whichever is first; it checks ``active``, ``aud``, ``iss``,
``exp`` and ``nbf`` the same way.

The signature and claim checks are PyJWT's: the JOSE library the official MCP Python SDK
already depends on, typed, requiring the caller to name the algorithms it accepts on
every decode (so ``alg: none`` and algorithm confusion are refused by construction), with
``cryptography`` for the keys. Nothing cryptographic is written here. A verifier that
cannot reach its issuer raises :class:`~.auth.VerifierUnavailable` (the app answers 503);
a token that fails any check is ``None`` (401). No message holds a token.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any, Final

import anyio
import httpx
import jwt

from ..principal import Principal
from .auth import VerifierUnavailable
from .bounded_fetch import FetchError, fetch_json, require_secure
from .oauth_discovery import authorization_server_metadata_urls

__all__ = ["IntrospectionVerifier", "JwtVerifier", "authorization_server_metadata_urls"]

logger = logging.getLogger("mcpspec.auth")

#: The algorithms accepted by default: asymmetric only.
DEFAULT_ALGORITHMS: Final = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "EdDSA",
)
#: Never accepted, whatever is asked: no signature, or a shared secret.
_REFUSED_ALGORITHMS: Final = frozenset({"none", "HS256", "HS384", "HS512"})
#: The longest token looked at (a JWT access token is a few kilobytes at most).
MAX_TOKEN_CHARS: Final = 16 * 1024


def principal_of(claims: Mapping[str, Any], issuer: str | None) -> Principal:
    """The principal a token's claims (or an introspection answer) describe."""
    scopes: set[str] = set()
    scope = claims.get("scope")
    if isinstance(scope, str):
        scopes.update(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, str):
        scopes.update(scp.split())
    elif isinstance(scp, list):
        scopes.update(item for item in scp if isinstance(item, str))
    subject = claims.get("sub")
    client_id = claims.get("client_id", claims.get("azp"))
    expires = claims.get("exp")
    return Principal(
        subject=subject if isinstance(subject, str) else None,
        client_id=client_id if isinstance(client_id, str) else None,
        scopes=frozenset(scopes),
        claims=dict(claims),
        issuer=issuer,
        expires_at=float(expires) if isinstance(expires, (int, float)) else None,
    )


class JwtVerifier:
    """Verifies JWT access tokens issued by ``issuer`` for ``resource`` (see the module).

    ``jwks_uri``: the issuer's key set, when known (else discovered from its metadata).
    ``algorithms``: those accepted (asymmetric ones only). ``leeway``: seconds of clock
    skew allowed on ``exp``, ``nbf`` and ``iat``. ``audiences``: other audiences taken
    besides ``resource``. ``http``: the client to fetch with (a new one by default).
    ``timeout`` and ``max_bytes`` bound each fetch; ``max_keys`` the keys kept;
    ``cache_seconds`` how long a key set is used before it is fetched again;
    ``refresh_seconds`` the least time between two fetches for an unknown key id.
    """

    def __init__(
        self,
        issuer: str,
        resource: str,
        *,
        jwks_uri: str | None = None,
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        audiences: Iterable[str] = (),
        http: httpx.AsyncClient | None = None,
        timeout: float = 5.0,
        max_bytes: int = 256 * 1024,
        max_keys: int = 32,
        cache_seconds: float = 600.0,
        refresh_seconds: float = 30.0,
    ) -> None:
        self.issuer = issuer
        self.resource = resource
        self.algorithms = tuple(algorithms)
        refused = _REFUSED_ALGORITHMS.intersection(self.algorithms)
        if refused or not self.algorithms:
            raise ValueError(f"algorithms must be asymmetric ones; refused: {sorted(refused)}")
        self.audiences = [resource, *audiences]
        self.leeway = leeway
        self.jwks_uri = require_secure(jwks_uri, "jwks_uri") if jwks_uri is not None else None
        self._http = http
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_keys = max_keys
        self.cache_seconds = cache_seconds
        self.refresh_seconds = refresh_seconds
        #: The keys by kid: the key, its type (``kty``) and its ``alg`` when it names one.
        self._keys: dict[str | None, tuple[jwt.PyJWK, str, str | None]] = {}
        self._fetched_at: float | None = None
        self._lock = anyio.Lock()

    async def __call__(self, token: str) -> Principal | None:
        if len(token) > MAX_TOKEN_CHARS or not token.isascii():
            return None
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None
        alg = header.get("alg")
        if alg not in self.algorithms:
            return None
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            return None
        key = await self._key(kid, alg)
        if key is None:
            return None
        try:
            claims = jwt.decode(
                token,
                key=key.key,
                algorithms=[alg],
                audience=self.audiences,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            logger.debug("a JWT access token was refused: %s", type(exc).__name__)
            return None
        return principal_of(claims, self.issuer)

    async def _key(self, kid: str | None, alg: str) -> jwt.PyJWK | None:
        """The key that may have signed a token naming ``kid`` with ``alg``: from the
        cached key set, fetched again when it is stale or lacks ``kid``."""
        now = time.monotonic()
        stale = self._fetched_at is None or now - self._fetched_at > self.cache_seconds
        key = None if stale else self._pick(kid, alg)
        if key is not None:
            return key
        async with self._lock:
            now = time.monotonic()
            fetched = self._fetched_at
            if fetched is not None and now - fetched < self.refresh_seconds:
                # Fetched just now (by this request's neighbour, or for another unknown
                # key): a token naming a key that is not there does not cause another.
                return self._pick(kid, alg)
            try:
                await self._fetch()
            except FetchError as exc:
                if self._keys and not stale:
                    logger.warning("the issuer's keys could not be fetched again: %s", exc)
                    return self._pick(kid, alg)
                raise VerifierUnavailable(f"the issuer's keys cannot be fetched: {exc}") from None
        return self._pick(kid, alg)

    def _pick(self, kid: str | None, alg: str) -> jwt.PyJWK | None:
        if kid is not None:
            entry = self._keys.get(kid)
        elif len(self._keys) == 1:
            # A token without kid is taken only when the set holds one key.
            entry = next(iter(self._keys.values()))
        else:
            entry = None
        if entry is None:
            return None
        key, key_type, key_alg = entry
        # The key must be of the algorithm's type, and of that algorithm when it says.
        if key_alg is not None and key_alg != alg:
            return None
        return key if _KEY_TYPES.get(alg) == key_type else None

    async def _fetch(self) -> None:
        client = self._http or httpx.AsyncClient()
        try:
            uri = self.jwks_uri or await self._discover(client)
            document = await fetch_json(client, uri, timeout=self.timeout, max_bytes=self.max_bytes)
        finally:
            if self._http is None:
                await client.aclose()
        keys = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(keys, list):
            raise FetchError("the issuer's JWKS has no keys array")
        taken: dict[str | None, tuple[jwt.PyJWK, str, str | None]] = {}
        for entry in keys[: self.max_keys * 4]:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError):
                continue  # a key of a type or curve not supported: not ours to use
            kid, alg = entry.get("kid"), entry.get("alg")
            taken[kid if isinstance(kid, str) else None] = (
                key,
                str(entry.get("kty")),
                alg if isinstance(alg, str) else None,
            )
            if len(taken) >= self.max_keys:
                break
        self._keys = taken
        self._fetched_at = time.monotonic()

    async def _discover(self, client: httpx.AsyncClient) -> str:
        """The ``jwks_uri`` of the issuer's metadata, whose ``issuer`` must be ours."""
        failures: list[str] = []
        for url in authorization_server_metadata_urls(self.issuer):
            try:
                metadata = await fetch_json(
                    client, url, timeout=self.timeout, max_bytes=self.max_bytes
                )
            except FetchError as exc:
                failures.append(str(exc))
                continue
            if not isinstance(metadata, dict) or metadata.get("issuer") != self.issuer:
                raise FetchError(f"the metadata at {url} is not of issuer {self.issuer}")
            uri = metadata.get("jwks_uri")
            if not isinstance(uri, str):
                raise FetchError(f"the metadata at {url} names no jwks_uri")
            self.jwks_uri = require_secure(uri, "jwks_uri")
            return self.jwks_uri
        raise FetchError("no metadata of the issuer was found: " + "; ".join(failures))


#: The key type (``kty``) each accepted algorithm needs.
_KEY_TYPES: Final = {
    **dict.fromkeys(("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"), "RSA"),
    **dict.fromkeys(("ES256", "ES384", "ES512", "ES256K"), "EC"),
    "EdDSA": "OKP",
}


class IntrospectionVerifier:
    """Verifies tokens by asking the issuer's RFC 7662 ``endpoint`` (see the module).

    ``client_id`` and ``client_secret`` authenticate this resource server to it (HTTP
    Basic). ``issuer``: when given, an answer naming another ``iss`` is refused.
    ``require_audience``: the answer must name ``resource`` in ``aud`` (RFC 8707).
    """

    def __init__(
        self,
        endpoint: str,
        resource: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        issuer: str | None = None,
        require_audience: bool = True,
        leeway: float = 30.0,
        http: httpx.AsyncClient | None = None,
        timeout: float = 5.0,
        max_bytes: int = 64 * 1024,
        cache_seconds: float = 60.0,
        max_cached: int = 10_000,
    ) -> None:
        self.endpoint = require_secure(endpoint, "introspection endpoint")
        self.resource = resource
        self._auth = (
            httpx.BasicAuth(client_id, client_secret or "") if client_id is not None else None
        )
        self.issuer = issuer
        self.require_audience = require_audience
        self.leeway = leeway
        self._http = http
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.cache_seconds = cache_seconds
        self.max_cached = max_cached
        #: Answers by the token's SHA-256: (principal or None, until when).
        self._cache: collections.OrderedDict[bytes, tuple[Principal | None, float]] = (
            collections.OrderedDict()
        )
        #: How many times the endpoint was asked (for tests and metrics).
        self.asked = 0

    async def __call__(self, token: str) -> Principal | None:
        if len(token) > MAX_TOKEN_CHARS or not token.isascii():
            return None
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        now = time.time()
        cached = self._cache.get(digest)
        if cached is not None:
            principal, until = cached
            if now < until:
                self._cache.move_to_end(digest)
                return principal
            del self._cache[digest]
        principal = self._judge(await self._ask(token), now)
        until = now + self.cache_seconds
        if principal is not None and principal.expires_at is not None:
            until = min(until, principal.expires_at)
        self._cache[digest] = (principal, until)
        while len(self._cache) > self.max_cached:
            self._cache.popitem(last=False)
        return principal

    async def _ask(self, token: str) -> Any:
        client = self._http or httpx.AsyncClient()
        self.asked += 1
        try:
            return await fetch_json(
                client,
                self.endpoint,
                method="POST",
                data={"token": token, "token_type_hint": "access_token"},
                auth=self._auth,
                timeout=self.timeout,
                max_bytes=self.max_bytes,
            )
        except FetchError as exc:
            raise VerifierUnavailable(f"the introspection endpoint failed: {exc}") from None
        finally:
            if self._http is None:
                await client.aclose()

    def _judge(self, answer: Any, now: float) -> Principal | None:
        if not isinstance(answer, dict) or answer.get("active") is not True:
            return None
        if self.issuer is not None and answer.get("iss", self.issuer) != self.issuer:
            return None
        audience = answer.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if self.require_audience and (
            not isinstance(audiences, list) or self.resource not in audiences
        ):
            return None
        expires = answer.get("exp")
        if isinstance(expires, (int, float)) and expires + self.leeway < now:
            return None
        not_before = answer.get("nbf")
        if isinstance(not_before, (int, float)) and not_before - self.leeway > now:
            return None
        issuer = answer.get("iss")
        return principal_of(answer, issuer if isinstance(issuer, str) else self.issuer)
