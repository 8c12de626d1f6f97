"""DPoP (RFC 9449, MCP SEP-1932): access tokens bound to a key the client holds.

A :class:`DPoPKey` is one asymmetric key pair, made once per client and kept for its
life: the authorization server binds the tokens it issues to the key's thumbprint, and
each request then carries a fresh proof (a JWT signed by that key naming the request's
method and URL, ``htm``/``htu``, its time ``iat``, a unique ``jti``, and for a resource
request ``ath``, the hash of the access token sent). A server may require a nonce it
chooses (``DPoP-Nonce``): :class:`DPoPNonces` keeps the last one each server sent, in
bounded memory, and refuses values that are not one.

The signing is PyJWT's and the keys are ``cryptography``'s.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
import urllib.parse
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Final

__all__ = ["SUPPORTED_ALGORITHMS", "DPoPKey", "DPoPNonces", "choose_algorithm", "dpop_htu"]

#: The algorithms a :class:`DPoPKey` can be made for, in the order preferred.
SUPPORTED_ALGORITHMS: Final = ("ES256", "ES384", "ES512", "EdDSA")
#: A ``DPoP-Nonce`` value (RFC 9449 §8.1: NQCHAR), bounded in length.
_NONCE: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,512}")
#: The members of each key type's thumbprint (RFC 7638 §3.2, RFC 8037 §2).
_THUMBPRINT_MEMBERS: Final = {"EC": ("crv", "kty", "x", "y"), "OKP": ("crv", "kty", "x")}


def choose_algorithm(advertised: Any) -> str | None:
    """The algorithm to sign proofs with, of those a server's
    ``dpop_signing_alg_values_supported`` lists (``None``: no list, or none we make;
    ``none`` and symmetric algorithms never are)."""
    if not isinstance(advertised, list):
        return None
    for algorithm in SUPPORTED_ALGORITHMS:
        if algorithm in advertised:
            return algorithm
    return None


def dpop_htu(url: str) -> str:
    """A request URL as a proof names it (``htu``): without its query and fragment."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class DPoPKey:
    """A DPoP key pair and the proofs it signs. Without ``private_key`` one is made for
    ``algorithm`` (ES256, ES384, ES512 or EdDSA with Ed25519); a given one must be of
    that algorithm (a ``cryptography`` private key)."""

    def __init__(self, algorithm: str = "ES256", private_key: Any = None) -> None:
        from jwt.algorithms import ECAlgorithm, OKPAlgorithm

        if algorithm not in SUPPORTED_ALGORITHMS:
            raise ValueError(f"DPoP keys are made for {', '.join(SUPPORTED_ALGORITHMS)}")
        self.algorithm = algorithm
        self._private_key = private_key if private_key is not None else _new_key(algorithm)
        public = self._private_key.public_key()
        jwk = (
            OKPAlgorithm.to_jwk(public, as_dict=True)
            if algorithm == "EdDSA"
            else ECAlgorithm.to_jwk(public, as_dict=True)
        )
        members = _THUMBPRINT_MEMBERS[jwk["kty"]]
        #: The public key as a JWK (it never holds the private part).
        self.public_jwk: dict[str, str] = {name: jwk[name] for name in members}

    @property
    def thumbprint(self) -> str:
        """The key's JWK SHA-256 thumbprint (RFC 7638), as a bound token's ``cnf.jkt``."""
        canonical = json.dumps(self.public_jwk, sort_keys=True, separators=(",", ":"))
        return _b64(hashlib.sha256(canonical.encode()).digest())

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
    ) -> str:
        """A fresh proof for one ``method url`` request (a new ``jti`` each time), for a
        resource request with ``ath`` of ``access_token``, with the server's ``nonce``."""
        import jwt

        claims: dict[str, Any] = {
            "jti": str(uuid.uuid4()),
            "htm": method.upper(),
            "htu": dpop_htu(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = _b64(hashlib.sha256(access_token.encode("ascii")).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": "dpop+jwt", "jwk": self.public_jwk}
        return jwt.encode(claims, self._private_key, algorithm=self.algorithm, headers=headers)


class DPoPNonces:
    """The last ``DPoP-Nonce`` each server (by origin) sent, at most ``limit`` servers
    kept (the least recently heard of is forgotten)."""

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self._nonces: OrderedDict[str, str] = OrderedDict()

    def get(self, url: str) -> str | None:
        """The nonce to send to the server of ``url`` (``None``: it sent none)."""
        return self._nonces.get(_origin(url))

    def note(self, url: str, values: Iterable[str]) -> bool:
        """Keep the nonce the server of ``url`` answered with (the ``DPoP-Nonce`` header
        values, one expected); whether a well-formed one was kept."""
        found = [value.strip() for value in values]
        if len(found) != 1 or _NONCE.fullmatch(found[0]) is None:
            return False
        origin = _origin(url)
        self._nonces[origin] = found[0]
        self._nonces.move_to_end(origin)
        while len(self._nonces) > self.limit:
            self._nonces.popitem(last=False)
        return True


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _new_key(algorithm: str) -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if algorithm == "EdDSA":
        return ed25519.Ed25519PrivateKey.generate()
    curves: dict[str, ec.EllipticCurve] = {
        "ES256": ec.SECP256R1(),
        "ES384": ec.SECP384R1(),
        "ES512": ec.SECP521R1(),
    }
    return ec.generate_private_key(curves[algorithm])
