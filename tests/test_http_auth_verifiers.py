"""The shipped token verifiers against a hostile or mistaken issuer: JWTs of the wrong
audience or issuer, expired, unsigned, signed with a key not in the JWKS or with the
public key as an HMAC secret; a JWKS endpoint that hangs or sends 50 MB; metadata of
another issuer; RFC 7662 introspection and its cache."""

from __future__ import annotations

import base64
import collections
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from mcpspec.runtime.connection import Server
from mcpspec.runtime.connection.http import (
    AuthSettings,
    HttpSettings,
    VerifierUnavailable,
    http_app,
)
from mcpspec.runtime.connection.http.bounded_fetch import FetchError, fetch_json
from mcpspec.runtime.connection.http.verifiers import (
    IntrospectionVerifier,
    JwtVerifier,
    authorization_server_metadata_urls,
)
from tests.http_kit import ACCEPT_BOTH, GUARD, JSON, initialize, serving

pytestmark = pytest.mark.anyio

ISSUER = "https://auth.example.com"
RESOURCE = "https://mcp.example.com/mcp"
JWKS_URI = "https://auth.example.com/jwks"
#: Produced by the 50 MB endpoint, chunk by chunk.
MEGABYTE = 1024 * 1024


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


KEY = rsa_key()
OTHER_KEY = rsa_key()


def public_jwk(key: Any, kid: str, alg: str = "RS256") -> dict[str, Any]:
    if isinstance(key, rsa.RSAPrivateKey):
        jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    else:
        jwk = json.loads(ECAlgorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "alg": alg, "use": "sig"}


class Issuer:
    """An authorization server in memory: metadata, JWKS and introspection, each of
    which a test can make misbehave."""

    def __init__(self) -> None:
        self.keys: list[dict[str, Any]] = [public_jwk(KEY, "k1")]
        self.jwks_mode = "ok"
        self.metadata_issuer = ISSUER
        self.rfc8414 = True
        self.hits: collections.Counter[str] = collections.Counter()
        self.produced = 0
        self.introspection: dict[str, dict[str, Any]] = {}
        self.introspection_up = True

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    async def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.hits[path] += 1
        if path == "/.well-known/oauth-authorization-server" and self.rfc8414:
            return httpx.Response(200, json={"issuer": self.metadata_issuer, "jwks_uri": JWKS_URI})
        if path == "/.well-known/openid-configuration":
            return httpx.Response(200, json={"issuer": self.metadata_issuer, "jwks_uri": JWKS_URI})
        if path == "/jwks":
            if self.jwks_mode == "hang":
                return httpx.Response(200, content=self._hang())
            if self.jwks_mode == "huge":
                return httpx.Response(200, content=self._huge())
            return httpx.Response(200, json={"keys": self.keys})
        if path == "/introspect":
            if not self.introspection_up:
                return httpx.Response(503)
            token = dict(httpx.QueryParams(request.content.decode()))["token"]
            return httpx.Response(200, json=self.introspection.get(token, {"active": False}))
        return httpx.Response(404)

    async def _hang(self) -> AsyncIterator[bytes]:
        yield b'{"keys": ['
        await anyio.sleep_forever()

    async def _huge(self) -> AsyncIterator[bytes]:
        yield b'{"keys": ["'
        for _ in range(50):
            self.produced += MEGABYTE
            yield b"x" * MEGABYTE
        yield b'"]}'


def token(key: Any = KEY, kid: str | None = "k1", alg: str = "RS256", **overrides: Any) -> str:
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "alice",
        "client_id": "app",
        "scope": "mcp read",
        "iat": now,
        "exp": now + 300,
        **overrides,
    }
    claims = {name: value for name, value in claims.items() if value is not None}
    headers = {"kid": kid} if kid is not None else None
    return jwt.encode(claims, key, algorithm=alg, headers=headers)


def verifier(issuer: Issuer, **options: Any) -> JwtVerifier:
    client = httpx.AsyncClient(transport=issuer.transport())
    return JwtVerifier(ISSUER, RESOURCE, http=client, **options)


def b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


# -- JWT ------------------------------------------------------------------------------------


async def test_a_valid_token_is_its_principal() -> None:
    issuer = Issuer()
    principal = await verifier(issuer)(token())
    assert principal is not None
    assert (principal.subject, principal.client_id, principal.issuer) == ("alice", "app", ISSUER)
    assert principal.scopes == {"mcp", "read"}
    # Discovered through RFC 8414 metadata, then cached: a second token fetches nothing.
    assert issuer.hits["/.well-known/oauth-authorization-server"] == 1
    assert await verifier(issuer)(token(aud=[RESOURCE, "other"])) is not None


@pytest.mark.parametrize(
    "claims",
    [
        pytest.param({"aud": "https://other.example.com/mcp"}, id="wrong audience"),
        pytest.param({"aud": None}, id="no audience"),
        pytest.param({"iss": "https://evil.example.com"}, id="wrong issuer"),
        pytest.param({"exp": -120}, id="expired"),
        pytest.param({"exp": None}, id="no expiry"),
        pytest.param({"nbf": +120}, id="not yet valid"),
    ],
)
async def test_a_token_failing_a_claim_check_is_refused(claims: dict[str, Any]) -> None:
    # Times are given as seconds from now, read when the test runs (not when collected).
    now = int(time.time())
    claims = {
        name: now + value if name in ("exp", "nbf") and isinstance(value, int) else value
        for name, value in claims.items()
    }
    assert await verifier(Issuer())(token(**claims)) is None


async def test_expiry_allows_a_small_leeway() -> None:
    check = verifier(Issuer(), leeway=30)
    assert await check(token(exp=int(time.time()) - 10)) is not None
    assert await check(token(exp=int(time.time()) - 40)) is None


async def test_alg_none_and_algorithm_confusion_are_refused() -> None:
    check = verifier(Issuer())
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": RESOURCE, "sub": "mallory", "exp": now + 300}
    for header in ({"alg": "none", "kid": "k1"}, {"alg": "None", "kid": "k1"}):
        assert await check(f"{b64(header)}.{b64(claims)}.") is None
    # The public key as an HMAC secret (the classic confusion): never taken.
    public_pem = KEY.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    forged_header = b64({"alg": "HS256", "kid": "k1", "typ": "JWT"})
    signing_input = f"{forged_header}.{b64(claims)}".encode()
    signature = base64.urlsafe_b64encode(
        hmac.new(public_pem, signing_input, hashlib.sha256).digest()
    ).rstrip(b"=")
    assert await check(signing_input.decode() + "." + signature.decode()) is None
    for refused in (("none",), ("HS256",), ()):
        with pytest.raises(ValueError, match="algorithms"):
            JwtVerifier(ISSUER, RESOURCE, algorithms=refused)


async def test_an_ec_key_cannot_verify_an_rsa_algorithm_token() -> None:
    issuer = Issuer()
    ec_key = ec.generate_private_key(ec.SECP256R1())
    issuer.keys = [{**public_jwk(ec_key, "k1", "ES256")}]
    check = verifier(issuer)
    assert await check(token(key=ec_key, alg="ES256")) is not None
    assert await check(token()) is None  # RS256 naming the EC key


async def test_a_key_not_in_the_jwks_is_refused_and_refetches_at_most_once() -> None:
    issuer = Issuer()
    check = verifier(issuer, refresh_seconds=60)
    assert await check(token()) is not None
    assert issuer.hits["/jwks"] == 1
    # Signed by a key the issuer never published, under a kid it does not know.
    for attempt in range(5):
        assert await check(token(key=OTHER_KEY, kid=f"unknown-{attempt}")) is None
    assert issuer.hits["/jwks"] == 1  # fetched recently: unknown kids cause no storm
    # Signed by another key under a known kid: the signature fails.
    assert await check(token(key=OTHER_KEY, kid="k1")) is None


async def test_a_rotated_key_is_fetched_on_its_first_token() -> None:
    issuer = Issuer()
    check = verifier(issuer, refresh_seconds=0)
    assert await check(token()) is not None
    issuer.keys = [public_jwk(KEY, "k1"), public_jwk(OTHER_KEY, "k2")]
    assert await check(token(key=OTHER_KEY, kid="k2")) is not None
    assert issuer.hits["/jwks"] == 2


async def test_a_jwks_endpoint_that_hangs_is_unavailable_within_the_timeout() -> None:
    issuer = Issuer()
    issuer.jwks_mode = "hang"
    check = verifier(issuer, timeout=0.5)
    with anyio.fail_after(GUARD), pytest.raises(VerifierUnavailable, match="did not answer"):
        await check(token())


async def test_a_jwks_endpoint_sending_50_mb_is_cut_off_early() -> None:
    issuer = Issuer()
    issuer.jwks_mode = "huge"
    check = verifier(issuer, max_bytes=256 * 1024)
    with pytest.raises(VerifierUnavailable, match="more than"):
        await check(token())
    assert issuer.produced <= 2 * MEGABYTE  # read up to the bound, not 50 MB


async def test_metadata_of_another_issuer_is_refused() -> None:
    issuer = Issuer()
    issuer.metadata_issuer = "https://evil.example.com"
    with pytest.raises(VerifierUnavailable, match="not of issuer"):
        await verifier(issuer)(token())


async def test_discovery_falls_back_to_openid_configuration() -> None:
    issuer = Issuer()
    issuer.rfc8414 = False
    assert await verifier(issuer)(token()) is not None
    assert issuer.hits["/.well-known/openid-configuration"] == 1


def test_metadata_urls_follow_the_specifications_order() -> None:
    assert authorization_server_metadata_urls("https://a.example.com/tenant1") == [
        "https://a.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://a.example.com/.well-known/openid-configuration/tenant1",
        "https://a.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls("https://a.example.com") == [
        "https://a.example.com/.well-known/oauth-authorization-server",
        "https://a.example.com/.well-known/openid-configuration",
    ]


async def test_plain_http_is_refused_but_for_loopback() -> None:
    with pytest.raises(FetchError, match="HTTPS"):
        JwtVerifier(ISSUER, RESOURCE, jwks_uri="http://auth.example.com/jwks")
    JwtVerifier(ISSUER, RESOURCE, jwks_uri="http://127.0.0.1:9000/jwks")
    async with httpx.AsyncClient() as client:
        with pytest.raises(FetchError, match="HTTPS"):
            await fetch_json(client, "http://example.com/x", timeout=1, max_bytes=10)


async def test_garbage_tokens_are_refused_without_error() -> None:
    check = verifier(Issuer())
    for garbage in ("", "a.b.c", "x" * 20000, "eyJ.eyJ.", token()[:-5], "\udcff.a.b", "é.a.b"):
        assert await check(garbage) is None


# -- introspection --------------------------------------------------------------------------


def introspector(issuer: Issuer, **options: Any) -> IntrospectionVerifier:
    client = httpx.AsyncClient(transport=issuer.transport())
    return IntrospectionVerifier(
        "https://auth.example.com/introspect",
        RESOURCE,
        client_id="rs",
        client_secret="secret",
        issuer=ISSUER,
        http=client,
        **options,
    )


async def test_introspection_takes_active_tokens_for_this_resource_and_caches() -> None:
    issuer = Issuer()
    now = int(time.time())
    good = {"active": True, "sub": "bob", "scope": "mcp", "aud": RESOURCE, "iss": ISSUER}
    issuer.introspection = {
        "good": {**good, "exp": now + 300},
        "other-aud": {**good, "aud": "https://other.example.com"},
        "other-iss": {**good, "iss": "https://evil.example.com"},
        "expired": {**good, "exp": now - 300},
        "inactive": {"active": False},
    }
    check = introspector(issuer)
    principal = await check("good")
    assert principal is not None and principal.subject == "bob" and principal.scopes == {"mcp"}
    assert await check("good") == principal
    assert check.asked == 1  # the second answer came from the cache
    for name in ("other-aud", "other-iss", "expired", "inactive", "unknown"):
        assert await check(name) is None, name


async def test_introspection_cache_is_bounded_and_an_outage_is_unavailable() -> None:
    issuer = Issuer()
    check = introspector(issuer, max_cached=3)
    for index in range(10):
        assert await check(f"t{index}") is None
    assert len(check._cache) == 3
    issuer.introspection_up = False
    with pytest.raises(VerifierUnavailable):
        await check("fresh")


# -- on the app -----------------------------------------------------------------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_app_with_a_jwt_verifier_takes_only_tokens_for_itself() -> None:
    issuer = Issuer()
    server = Server("jwt-app", "1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    auth = AuthSettings(RESOURCE, (ISSUER,), verifier(issuer), required_scopes=("mcp",))
    app = http_app(server, HttpSettings(auth=auth))
    headers = {"content-type": JSON, "accept": ACCEPT_BOTH}
    async with serving(app) as base, httpx.AsyncClient(base_url=base, timeout=GUARD) as client:
        for bearer, status in (
            (token(), 200),
            (token(aud="https://other.example.com/mcp"), 401),
            (token(scope="read"), 403),
            (token(key=OTHER_KEY, kid="k9"), 401),
        ):
            response = await client.post(
                "/mcp", json=initialize(), headers={**headers, "authorization": f"Bearer {bearer}"}
            )
            assert response.status_code == status, response.text
