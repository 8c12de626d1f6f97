"""What a msgspec ``ValidationError`` says, read as a JSON path and a reason.

msgspec reports where a value failed only in its message text: ``"Expected `str`, got
`int` - at `$.params.name`"``, or without the ``" - at ..."`` part for the value
itself. This module is the one place that reads that text; the codec's error paths and
reasons, and its test for a missing ``resultType`` tag, go through it.

The wording is msgspec's, not a documented interface: the versions in
:data:`TESTED_MSGSPEC` (the range pinned in the package's dependencies) were each
checked to word their messages as the tests' table of real messages says
(``tests/test_msgspec_errors.py``), and a version that words them otherwise fails that
one test.
"""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = ["TESTED_MSGSPEC", "is_missing_field", "path_and_reason"]

#: The msgspec versions whose error texts this module was checked against.
TESTED_MSGSPEC: Final = ("0.19", "0.20", "0.21", "0.22")

_AT = " - at `"
_MISSING = "Object missing required field `"


def path_and_reason(error: msgspec.ValidationError, prefix: str = "$") -> tuple[str, str]:
    """The JSON path of the failing value, under ``prefix`` (the path of the value that
    was decoded), and the reason: ``("$.params.name", "Expected `str`, got `int`")``."""
    text = str(error)
    reason, sep, where = text.rpartition(_AT)
    if not sep:
        return prefix, text
    # ``where`` is "$.params.name`": the path below the decoded value, then a backtick.
    return prefix + where.rstrip("`")[1:], reason


def is_missing_field(error: msgspec.ValidationError, wire: str, path: str = "$") -> bool:
    """Whether ``error`` says the object at ``path`` lacks the required field ``wire``
    (its JSON name)."""
    where, reason = path_and_reason(error)
    return where == path and reason == f"{_MISSING}{wire}`"
