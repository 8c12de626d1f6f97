"""The checker's own exceptions."""

from __future__ import annotations

__all__ = ["CheckError", "LinkClosed", "Unreachable"]


class LinkClosed(Exception):
    """The connection to the server under check is gone (the process exited, the HTTP
    connection failed)."""


class CheckError(Exception):
    """The check cannot run at all (the server command cannot be started, the URL is
    not HTTP); the message says why."""


class Unreachable(CheckError):
    """The server could not be reached (nothing listens at the URL, the command exits
    without a word, the server wants a token): no protocol verdict can be given; the
    message says what happened and what to do."""
