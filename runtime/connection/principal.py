"""Who a request comes from: :class:`Principal`, and the principal of the request
being served.

An HTTP app with authorization verifies each request's bearer token and sets the
principal the token stands for (:func:`principal_scope`) while the request is served:
a handler reads it as ``ctx.principal``. Over stdio, and over HTTP without
authorization, there is none.

A principal's :attr:`~Principal.key` is what sessions and sealed state are bound to:
the issuer and subject (or client id) of the token, never the token itself, so that a
refreshed token keeps its sessions and another principal's token reaches none of them.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import hmac
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Principal",
    "current_principal",
    "missing_scopes",
    "principal_scope",
    "sealing_key",
]


@dataclass(frozen=True)
class Principal:
    """What a verified access token grants: who it was issued to (``subject``, the
    ``client_id`` of the application that holds it), by whom (``issuer``), the
    ``scopes`` granted, when it ends (``expires_at``, seconds since the epoch) and every
    claim (``claims``: the JWT's payload, or the introspection answer)."""

    subject: str | None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=dict)
    issuer: str | None = None
    expires_at: float | None = None

    @property
    def key(self) -> str:
        """What the principal's sessions are bound to: issuer and subject (the client
        id for a token of a machine client, which has no subject)."""
        who = f"sub:{self.subject}" if self.subject else f"client:{self.client_id}"
        return f"{self.issuer or ''}\x00{who}"

    def __repr__(self) -> str:
        # Claims may carry personal data: kept out of logs that show the principal.
        return (
            f"Principal(subject={self.subject!r}, client_id={self.client_id!r}, "
            f"scopes={sorted(self.scopes)!r}, issuer={self.issuer!r})"
        )

    @classmethod
    def of_token(cls, token: str) -> Principal:
        """The principal of a token that a verifier accepted without saying whose it is
        (it returned ``True``): the token's SHA-256 stands for it, so its sessions are
        its own."""
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        return cls(subject=None, client_id=f"token-sha256:{digest}")


#: The principal of the request being served (``None``: none was verified).
current_principal: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "mcpspec_principal", default=None
)


@contextlib.contextmanager
def principal_scope(principal: Principal | None) -> Iterator[None]:
    """Serve the block's work as ``principal``'s (tasks started in it inherit it)."""
    reset = current_principal.set(principal)
    try:
        yield
    finally:
        current_principal.reset(reset)


def missing_scopes(principal: Principal | None, required: Iterable[str]) -> frozenset[str]:
    """The scopes of ``required`` that ``principal`` lacks (none without a principal:
    nothing is enforced where nothing was authenticated)."""
    if principal is None:
        return frozenset()
    return frozenset(required) - principal.scopes


def sealing_key(key: bytes) -> bytes:
    """The key sealing state for the current principal: ``key`` itself without one,
    else a key derived from it and the principal, so that state one principal was given
    is refused when another sends it back."""
    principal = current_principal.get()
    if principal is None:
        return key
    return hmac.new(key, b"principal\x00" + principal.key.encode(), hashlib.sha256).digest()
