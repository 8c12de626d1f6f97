"""What the checker must never show: the credentials it was given.

``mcpspec check --header 'Authorization: Bearer T'`` sends ``T`` to the server, and a
server may echo it (in an error message, a ``WWW-Authenticate`` challenge, a tool's
text), as may a URL with a password or a token in its query. :class:`Secrets` holds
those values and masks them in whatever a run shows or keeps: the report (text, JSON,
JUnit, SARIF, and the API's :class:`~.findings.Report`), the errors that end a run, and
the ``--record`` transcripts.

Credentials are the values of the headers whose names say they carry one
(``Authorization``, ``Cookie``, ``X-API-Key``, ``...-Token``, ...), each whole and
without its scheme (``Bearer``), the URL's password and the values of its query
parameters named like one.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Final

from .findings import Report

__all__ = ["MASK", "Secrets"]

#: What stands for a credential wherever one would be shown.
MASK: Final = "[redacted]"
#: Names of headers and query parameters that carry a credential.
_CREDENTIAL_NAME: Final = re.compile(
    r"auth|token|key|secret|cookie|session|passw|credential|signature", re.IGNORECASE
)


class Secrets:
    """Values masked wherever the run shows or keeps text (longest first, so a value
    holding another is masked whole)."""

    __slots__ = ("_encoded", "_values")

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values = tuple(sorted({v for v in values if v}, key=len, reverse=True))
        self._encoded = tuple(value.encode("utf-8", "surrogatepass") for value in self._values)

    def __bool__(self) -> bool:
        return bool(self._values)

    @classmethod
    def of_http(cls, url: str, headers: Mapping[str, str]) -> Secrets:
        """The credentials in the ``headers`` sent to ``url`` and in ``url`` itself."""
        values: list[str] = []
        for name, value in headers.items():
            if _CREDENTIAL_NAME.search(name):
                values.append(value.strip())
                _, _, credentials = value.strip().partition(" ")
                values.append(credentials.strip())
        try:
            parts = urllib.parse.urlsplit(url)
            password = parts.password
        except ValueError:  # a malformed URL: the run refuses it, showing nothing more
            return cls(values)
        if password:
            values += [password, urllib.parse.unquote(password)]
        for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=False):
            if _CREDENTIAL_NAME.search(name):
                values += [
                    value,
                    urllib.parse.quote(value, safe=""),
                    urllib.parse.quote_plus(value),
                ]
        return cls(values)

    def text(self, text: str) -> str:
        """``text`` with every credential masked."""
        for value in self._values:
            if value in text:
                text = text.replace(value, MASK)
        return text

    def data(self, data: bytes) -> bytes:
        """``data`` (bytes as received or sent) with every credential masked."""
        for value in self._encoded:
            if value in data:
                data = data.replace(value, MASK.encode())
        return data

    def report(self, report: Report) -> None:
        """Mask every credential in ``report`` (in place)."""
        if not self:
            return
        text = self.text
        report.target = text(report.target)
        report.stderr = text(report.stderr)
        for section in report.revisions:
            section.stopped = text(section.stopped)
            section.source = text(section.source)
            section.findings = [
                replace(
                    finding,
                    where=text(finding.where),
                    why=text(finding.why),
                    probe=text(finding.probe),
                    subject=text(finding.subject),
                )
                for finding in section.findings
            ]
