"""The OAuth client's authorization extensions: DPoP-bound tokens (RFC 9449), the
JWT-bearer grant (RFC 7523) with a workload's JWT, and the token exchange (RFC 8693)
for an enterprise identity provider's ID-JAG; against a resource server, an
authorization server and an identity provider in memory that check what a client must
send, and that a test can make hostile."""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import time
import urllib.parse
from typing import Any

import anyio
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from mcpspec.runtime.connection.http.oauth import AuthorizationFailed, OAuth, TokenResponseError
from mcpspec.runtime.connection.http.oauth_discovery import parse_challenge
from mcpspec.runtime.connection.http.oauth_dpop import (
    DPoPKey,
    DPoPNonces,
    choose_algorithm,
    dpop_htu,
)
from mcpspec.runtime.connection.http.oauth_exchange import (
    ID_JAG,
    ID_TOKEN,
    JWT_BEARER,
    TOKEN_EXCHANGE,
    AssertionRequest,
    TokenExchange,
    TokenExchangeError,
    issued_assertion,
)

pytestmark = pytest.mark.anyio
ANYIO_BACKENDS = ("asyncio",)

MCP = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"
TOKEN_ENDPOINT = f"{ISSUER}/token"
IDP_TOKEN = "https://idp.example.com/token"
PRM = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
AS_NONCE = "as-nonce-1"
RS_NONCE = "rs-nonce-1"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def verify_proof(proof: str, method: str, url: str) -> dict[str, Any]:
    """A proof checked as a server does (RFC 9449 §4.3), with its key's thumbprint."""
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt"
    assert "d" not in header["jwk"]
    key = jwt.PyJWK(header["jwk"], algorithm=header["alg"])
    claims = jwt.decode(proof, key.key, algorithms=[header["alg"]])
    assert claims["htm"] == method
    assert claims["htu"] == dpop_htu(url)
    assert abs(claims["iat"] - time.time()) < 60
    members = {"EC": ("crv", "kty", "x", "y"), "OKP": ("crv", "kty", "x")}[header["jwk"]["kty"]]
    canonical = json.dumps({m: header["jwk"][m] for m in members}, separators=(",", ":"))
    claims["jkt"] = _b64(hashlib.sha256(canonical.encode()).digest())
    return claims


class World:
    """A resource server, its authorization server and an identity provider in memory.

    ``dpop``: the authorization server offers DPoP and the resource server takes only
    DPoP-bound tokens (``rs_dpop``: how it says so: ``challenge``, the DPoP scheme in
    its 401; ``metadata``, its resource metadata; ``silent``, not at all);
    ``as_nonce``/``rs_nonce``: each asks for its nonce first."""

    def __init__(
        self, *, dpop: bool = False, as_nonce: bool = False, rs_nonce: bool = False
    ) -> None:
        self.dpop = dpop
        self.as_nonce = as_nonce
        self.rs_nonce = rs_nonce
        self.hits: collections.Counter[str] = collections.Counter()
        self.jtis: list[str] = []
        self.thumbprints: set[str] = set()
        self.token_forms: list[dict[str, str]] = []
        self.token_proofs: list[bool] = []  # whether each token request had a proof
        self.exchange_forms: list[dict[str, str]] = []
        self.issued: dict[str, str | None] = {}  # access token -> bound thumbprint
        self.token_answer: Any = None  # a fixed (hostile) token endpoint answer
        self.idp_answer: Any = None  # a fixed (hostile) identity provider answer
        self.idp_key = ec.generate_private_key(ec.SECP256R1())
        self.always_nonce = False
        self.rs_dpop = "challenge"
        self.rs_nonce_value = RS_NONCE
        self.step_up = False  # the resource wants scope "admin" (and a new nonce then)
        self.scopes: dict[str, str] = {}  # access token -> its scope

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handle))

    async def handle(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url.copy_with(query=None))
        self.hits[url] += 1
        if url == PRM:
            document: dict[str, Any] = {"resource": MCP, "authorization_servers": [ISSUER]}
            if self.dpop and self.rs_dpop == "metadata":
                document["dpop_bound_access_tokens_required"] = True
            return httpx.Response(200, json=document)
        if url == f"{ISSUER}/.well-known/oauth-authorization-server":
            return httpx.Response(200, json=self.metadata())
        if url == TOKEN_ENDPOINT:
            return self.token(request)
        if url == IDP_TOKEN:
            return self.exchange(request)
        if url == MCP:
            return self.resource(request)
        return httpx.Response(404)

    def metadata(self) -> dict[str, Any]:
        document = {
            "issuer": ISSUER,
            "token_endpoint": TOKEN_ENDPOINT,
            "grant_types_supported": [JWT_BEARER, "client_credentials"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
        }
        if self.dpop:
            document["dpop_signing_alg_values_supported"] = ["RS256", "ES256"]
        return document

    def token(self, request: httpx.Request) -> httpx.Response:
        form = dict(urllib.parse.parse_qsl(request.content.decode()))
        self.token_forms.append(form)
        self.token_proofs.append("dpop" in request.headers)
        if self.token_answer is not None:
            return httpx.Response(200, json=self.token_answer)
        bound: str | None = None
        proof = request.headers.get("dpop")
        if self.dpop and proof is not None:
            claims = verify_proof(proof, "POST", TOKEN_ENDPOINT)
            assert "ath" not in claims
            self.jtis.append(claims["jti"])
            if (self.as_nonce and claims.get("nonce") != AS_NONCE) or self.always_nonce:
                return httpx.Response(
                    400, json={"error": "use_dpop_nonce"}, headers={"dpop-nonce": AS_NONCE}
                )
            bound = claims["jkt"]
        grant = form.get("grant_type")
        if grant == JWT_BEARER:
            if not form.get("assertion", "").startswith("ey"):
                return httpx.Response(400, json={"error": "invalid_grant"})
        elif grant != "client_credentials":
            return httpx.Response(400, json={"error": "unsupported_grant_type"})
        access = f"token-{len(self.issued)}"
        self.issued[access] = bound
        self.scopes[access] = form.get("scope", "")
        kind = "DPoP" if bound is not None else "Bearer"
        return httpx.Response(200, json={"access_token": access, "token_type": kind})

    def exchange(self, request: httpx.Request) -> httpx.Response:
        form = dict(urllib.parse.parse_qsl(request.content.decode()))
        self.exchange_forms.append(form)
        if self.idp_answer is not None:
            if isinstance(self.idp_answer, httpx.Response):
                return self.idp_answer
            return httpx.Response(200, json=self.idp_answer)
        jag = jwt.encode(
            {"sub": "alice", "aud": form["audience"], "resource": form["resource"]},
            self.idp_key,
            algorithm="ES256",
            headers={"typ": "oauth-id-jag+jwt"},
        )
        return httpx.Response(
            200, json={"access_token": jag, "issued_token_type": ID_JAG, "token_type": "N_A"}
        )

    def resource(self, request: httpx.Request) -> httpx.Response:
        scheme, _, access = request.headers.get("authorization", "").partition(" ")
        challenge = f'Bearer resource_metadata="{PRM}"'
        if self.dpop and self.rs_dpop == "challenge":
            challenge = f'DPoP algs="ES256", {challenge}'
        refused = {"www-authenticate": challenge}
        if access not in self.issued:
            return httpx.Response(401, headers=refused)
        bound = self.issued[access]
        if bound is None:
            return httpx.Response(200, json={}) if scheme == "Bearer" else httpx.Response(401)
        assert scheme == "DPoP"
        claims = verify_proof(request.headers["dpop"], request.method, str(request.url))
        assert claims["ath"] == _b64(hashlib.sha256(access.encode()).digest())
        assert claims["jkt"] == bound
        self.jtis.append(claims["jti"])
        self.thumbprints.add(claims["jkt"])
        nonce = self.rs_nonce_value
        if (self.rs_nonce and claims.get("nonce") != nonce) or self.always_nonce:
            return httpx.Response(
                401,
                headers={
                    "www-authenticate": 'DPoP error="use_dpop_nonce", algs="ES256"',
                    "dpop-nonce": nonce,
                },
            )
        if self.step_up and "admin" not in self.scopes[access].split():
            self.rs_nonce_value = "rs-nonce-2"  # and say so only when asked again
            challenge = 'DPoP error="insufficient_scope", scope="admin"'
            return httpx.Response(403, headers={"www-authenticate": challenge})
        return httpx.Response(200, json={}, headers={"dpop-nonce": nonce})


async def call(world: World, oauth: OAuth, times: int = 1) -> list[int]:
    """POST to the resource ``times`` through ``oauth``; the statuses."""
    async with httpx.AsyncClient(transport=httpx.MockTransport(world.handle), auth=oauth) as raw:
        with anyio.fail_after(10):
            return [(await raw.post(MCP + "?x=1", json={})).status_code for _ in range(times)]


def machine(world: World, **options: Any) -> OAuth:
    return OAuth(
        grant="client_credentials",
        client_id="machine",
        client_secret="secret",
        http=world.client(),
        **options,
    )


# -- DPoP -----------------------------------------------------------------------------------


async def test_dpop_binds_the_token_and_proves_each_request_with_one_key() -> None:
    world = World(dpop=True)
    assert await call(world, machine(world), times=3) == [200, 200, 200]
    assert len(world.jtis) == 4  # one token request, three resource requests
    assert len(set(world.jtis)) == 4  # a fresh proof each time
    assert len(world.thumbprints) == 1  # one key for the client's life


async def test_dpop_nonces_are_retried_once_and_then_kept() -> None:
    world = World(dpop=True, as_nonce=True, rs_nonce=True)
    assert await call(world, machine(world), times=3) == [200, 200, 200]
    assert world.hits[TOKEN_ENDPOINT] == 2  # asked once for the nonce
    # The first request: refused for want of a token, then of the nonce; then kept.
    assert world.hits[MCP] == 3 + 2
    assert len(set(world.jtis)) == len(world.jtis)


async def test_dpop_is_used_when_the_resource_metadata_asks_for_it() -> None:
    world = World(dpop=True)
    world.rs_dpop = "metadata"
    assert await call(world, machine(world)) == [200]
    assert world.token_proofs == [True]


async def test_tokens_stay_bearer_when_only_the_authorization_server_offers_dpop() -> None:
    # A resource server that takes Bearer tokens only, with an authorization server
    # that offers DPoP to whoever wants it (oidc-provider does by default).
    world = World(dpop=True)
    world.rs_dpop = "silent"
    assert await call(world, machine(world)) == [200]
    assert world.token_proofs == [False]


async def test_a_step_up_keeps_the_key_and_takes_a_new_nonce() -> None:
    world = World(dpop=True, rs_nonce=True)
    world.step_up = True
    assert await call(world, machine(world, scopes=["mcp"])) == [200]
    # No token; its nonce; too few scopes; the nonce it changed meanwhile; done.
    assert world.hits[MCP] == 5
    assert [f.get("scope") for f in world.token_forms] == ["mcp", "admin mcp"]
    assert len(world.thumbprints) == 1


async def test_a_server_that_always_wants_another_nonce_is_not_asked_forever() -> None:
    world = World(dpop=True)
    world.always_nonce = True
    oauth = machine(world)
    async with httpx.AsyncClient(transport=httpx.MockTransport(world.handle), auth=oauth) as raw:
        with anyio.fail_after(10), pytest.raises(TokenResponseError) as caught:
            await raw.post(MCP, json={})
    assert caught.value.error == "use_dpop_nonce"
    assert world.hits[TOKEN_ENDPOINT] == 2


@pytest.mark.parametrize("nonce", ['"quoted"', "with space", "", "x" * 600, "a, b"])
async def test_a_malformed_nonce_is_not_retried(nonce: str) -> None:
    world = World(dpop=True)

    def token(request: httpx.Request) -> httpx.Response:
        world.hits["token"] += 1
        return httpx.Response(400, json={"error": "use_dpop_nonce"}, headers={"dpop-nonce": nonce})

    world.token = token  # type: ignore[method-assign]
    with pytest.raises(TokenResponseError):
        await call(world, machine(world))
    assert world.hits["token"] == 1


async def test_a_dpop_token_is_refused_when_no_proof_was_sent() -> None:
    world = World(dpop=True)
    world.token_answer = {"access_token": "t", "token_type": "DPoP"}
    with pytest.raises(TokenResponseError, match="not Bearer"):
        await call(world, machine(world, dpop=False))
    assert world.token_proofs == [False]


async def test_without_dpop_offered_tokens_stay_bearer() -> None:
    world = World(dpop=False)
    assert await call(world, machine(world)) == [200]
    assert world.jtis == []


async def test_a_given_key_is_the_one_used_when_its_algorithm_is_offered() -> None:
    world = World(dpop=True)
    world.rs_dpop = "silent"  # given a key, the client does not wait to be told
    key = DPoPKey("ES256")
    assert await call(world, machine(world, dpop=key), times=2) == [200, 200]
    assert world.thumbprints == {key.thumbprint}
    other = World(dpop=True)  # it offers RS256 and ES256 only
    assert await call(other, machine(other, dpop=DPoPKey("ES384"))) == [200]
    assert other.token_proofs == [False]


def test_proofs_carry_what_rfc_9449_asks() -> None:
    key = DPoPKey()
    first = key.proof("post", "https://mcp.example.com/mcp?q=1#f", access_token="tok", nonce="n")
    claims = verify_proof(first, "POST", "https://mcp.example.com/mcp")
    assert claims["htu"] == "https://mcp.example.com/mcp"  # no query, no fragment
    assert claims["ath"] == _b64(hashlib.sha256(b"tok").digest())
    assert claims["nonce"] == "n"
    assert claims["jkt"] == key.thumbprint
    second = verify_proof(key.proof("GET", "https://mcp.example.com/mcp"), "GET", MCP)
    assert second["jti"] != claims["jti"]
    assert "ath" not in second and "nonce" not in second


def test_the_thumbprint_is_rfc_7638s() -> None:
    # RFC 8037 appendix A: an Ed25519 key and its thumbprint.
    seed = base64.urlsafe_b64decode("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A=")
    key = DPoPKey("EdDSA", ed25519.Ed25519PrivateKey.from_private_bytes(seed))
    assert key.public_jwk["x"] == "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
    assert key.thumbprint == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
    verify_proof(key.proof("POST", MCP), "POST", MCP)


def test_algorithms_are_chosen_from_what_the_server_lists() -> None:
    assert choose_algorithm(["RS256", "ES384", "ES256"]) == "ES256"
    assert choose_algorithm(["EdDSA"]) == "EdDSA"
    assert choose_algorithm(["none", "HS256"]) is None
    assert choose_algorithm("ES256") is None
    assert choose_algorithm(None) is None
    with pytest.raises(ValueError):
        DPoPKey("HS256")


def test_nonces_are_kept_per_server_and_bounded() -> None:
    nonces = DPoPNonces(limit=2)
    assert nonces.note("https://a.example/token", ["n1"])
    assert nonces.get("https://A.example/other?x") == "n1"
    assert not nonces.note("https://a.example/", ["n2", "n3"])  # two answers: neither
    assert not nonces.note("https://a.example/", ['bad"'])
    assert nonces.get("https://a.example/") == "n1"
    nonces.note("https://b.example/", ["b"])
    nonces.note("https://c.example/", ["c"])
    assert nonces.get("https://a.example/") is None  # the oldest is forgotten
    assert nonces.get("https://c.example/") == "c"


def test_dpop_challenges_are_parsed() -> None:
    challenge = parse_challenge('DPoP error="use_dpop_nonce", algs="ES256"')
    assert challenge.error == "use_dpop_nonce"
    assert parse_challenge(f'DPoP resource_metadata="{PRM}"').resource_metadata == PRM
    assert parse_challenge("DPoPish realm=x").error is None
    assert parse_challenge('DPoP algs="ES256", Bearer scope=mcp').dpop
    assert not parse_challenge("Bearer scope=mcp").dpop
    assert not parse_challenge('Bearer realm="DPoP"').dpop


# -- the JWT-bearer grant and the token exchange --------------------------------------------


async def test_a_workload_jwt_is_presented_with_the_jwt_bearer_grant() -> None:
    world = World()
    seen: list[AssertionRequest] = []

    async def workload(request: AssertionRequest) -> str:
        seen.append(request)
        return "eyJ.workload.jwt"

    oauth = OAuth(grant="jwt_bearer", assertion=workload, client_id="w", http=world.client())
    assert await call(world, oauth) == [200]
    (form,) = world.token_forms
    assert form["grant_type"] == JWT_BEARER
    assert form["assertion"] == "eyJ.workload.jwt"
    assert form["resource"] == MCP and form["client_id"] == "w"
    assert (seen[0].issuer, seen[0].resource) == (ISSUER, MCP)


async def test_a_refused_assertion_is_a_typed_error_and_not_retried() -> None:
    world = World()
    oauth = OAuth(grant="jwt_bearer", assertion="not-a-jwt", client_id="w", http=world.client())
    with pytest.raises(TokenResponseError) as caught:
        await call(world, oauth)
    assert caught.value.error == "invalid_grant"
    assert [f["grant_type"] for f in world.token_forms] == [JWT_BEARER]  # no fallback


async def test_an_empty_assertion_is_refused() -> None:
    world = World()

    async def nothing(request: AssertionRequest) -> str:
        return ""

    oauth = OAuth(grant="jwt_bearer", assertion=nothing, client_id="w", http=world.client())
    with pytest.raises(AuthorizationFailed, match="no assertion"):
        await call(world, oauth)
    assert world.token_forms == []


def test_the_jwt_bearer_grant_needs_an_assertion() -> None:
    with pytest.raises(ValueError, match="assertion"):
        OAuth(grant="jwt_bearer")


async def test_the_id_token_is_exchanged_for_an_id_jag_and_presented() -> None:
    world = World()
    exchange = TokenExchange(IDP_TOKEN, "the-id-token", client_id="idp-client")
    oauth = OAuth(
        grant="jwt_bearer",
        assertion=exchange,
        client_id="mcp-client",
        client_secret="s",
        http=world.client(),
    )
    assert await call(world, oauth) == [200]
    (asked,) = world.exchange_forms
    assert asked == {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG,
        "subject_token": "the-id-token",
        "subject_token_type": ID_TOKEN,
        "audience": ISSUER,
        "resource": MCP,
        "client_id": "idp-client",
    }
    (form,) = world.token_forms
    assert jwt.get_unverified_header(form["assertion"])["typ"] == "oauth-id-jag+jwt"
    assert "client_secret" not in form  # client_secret_basic, in the header


def _jwt(typ: str) -> str:
    return jwt.encode({"sub": "a"}, "k" * 32, algorithm="HS256", headers={"typ": typ})


@pytest.mark.parametrize(
    "answer",
    [
        [1, 2],
        "text",
        {"access_token": _jwt("oauth-id-jag+jwt"), "token_type": "N_A"},
        {"access_token": _jwt("oauth-id-jag+jwt"), "issued_token_type": ID_TOKEN},
        {"access_token": "not a jwt", "issued_token_type": ID_JAG, "token_type": "N_A"},
        {"access_token": _jwt("JWT"), "issued_token_type": ID_JAG, "token_type": "N_A"},
        {"access_token": 7, "issued_token_type": ID_JAG, "token_type": "N_A"},
        {"access_token": "e" * 70_000, "issued_token_type": ID_JAG, "token_type": "N_A"},
        httpx.Response(200, content=b"{" + b" " * (2 * 1024 * 1024) + b"}"),
        httpx.Response(200, content=b"<html>"),
        httpx.Response(400, json={"error": "invalid_grant", "error_description": "no"}),
        httpx.Response(302, headers={"location": "https://elsewhere.example.com/"}),
    ],
)
async def test_a_hostile_identity_provider_is_a_typed_error(answer: Any) -> None:
    world = World()
    world.idp_answer = answer
    exchange = TokenExchange(IDP_TOKEN, "the-id-token")
    oauth = OAuth(grant="jwt_bearer", assertion=exchange, client_id="c", http=world.client())
    with pytest.raises(TokenExchangeError) as caught:
        await call(world, oauth)
    assert "the-id-token" not in str(caught.value)
    assert world.token_forms == []  # nothing presented to the authorization server


def test_an_exchange_answer_must_be_an_id_jag() -> None:
    jag = _jwt("oauth-id-jag+jwt")
    answer = {"access_token": jag, "issued_token_type": ID_JAG, "token_type": "N_A"}
    assert issued_assertion(answer) == jag
    with pytest.raises(TokenExchangeError, match="not a JWT"):
        issued_assertion({**answer, "access_token": "a.b"})


async def test_an_identity_provider_that_hangs_or_is_not_https_is_a_typed_error() -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await anyio.sleep(30)
        return httpx.Response(200)

    async with httpx.AsyncClient(transport=httpx.MockTransport(hang)) as http:
        request = AssertionRequest(ISSUER, TOKEN_ENDPOINT, MCP, None, http, timeout=0.2)
        with anyio.fail_after(5), pytest.raises(TokenExchangeError, match="did not answer"):
            await TokenExchange(IDP_TOKEN, "t")(request)
        with pytest.raises(TokenExchangeError, match="HTTPS"):
            await TokenExchange("http://idp.example.com/token", "t")(request)


async def test_a_renewed_id_token_is_read_each_time() -> None:
    world = World()
    tokens = iter(["first", "second"])

    async def current() -> str:
        return next(tokens)

    async with world.client() as http:
        request = AssertionRequest(ISSUER, TOKEN_ENDPOINT, MCP, "a b", http, timeout=5)
        exchange = TokenExchange(IDP_TOKEN, current, client_id="i", client_secret="s")
        for _ in range(2):
            jag = await exchange(request)
            assert jwt.get_unverified_header(jag)["typ"] == "oauth-id-jag+jwt"
    assert [f["subject_token"] for f in world.exchange_forms] == ["first", "second"]
    assert world.exchange_forms[0]["scope"] == "a b"
    assert "client_id" not in world.exchange_forms[0]  # sent with HTTP Basic
