"""The checker's own exceptions."""

from __future__ import annotations

__all__ = ["CheckError", "LinkClosed"]


class LinkClosed(Exception):
    """The connection to the server under check is gone (the process exited, the HTTP
    connection failed)."""


class CheckError(Exception):
    """The check cannot run at all (the server command cannot be started, the URL is
    not HTTP); the message says why."""
