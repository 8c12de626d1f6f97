"""RFC 6570 URI templates of resources, and matching a URI against one.

Parsing and expansion are the ``uri-template`` package's (``pip install
mcpspec[templates]``), which follows RFC 6570 to level 4 and refuses malformed
templates. No maintained Python library inverts an expansion, so matching is done here,
in two steps: a pattern per expression (the characters its operator may produce) cuts
the URI into candidate values, which are percent-decoded; then the template is
*expanded* again with them by the library, and the candidate is a match only when that
gives back the URI. So a match is exactly a set of values whose expansion is the URI,
whatever the pattern let through.

Before matching, the URI is normalized as RFC 3986 (section 6.2.2) allows: the hex
digits of a percent-encoding upper-cased, encoded unreserved characters decoded. A
variable of a simple, label, path, path-parameter or query expansion reads fully
decoded (``%2F`` is ``/``); one of a reserved (``{+path}``) or fragment expansion keeps
the encodings of reserved characters, which it cannot tell from the characters
themselves (``a%2Fb`` stays ``a%2Fb``, ``a%20b`` reads ``a b``). Explode modifiers
(``{/path*}``) are refused: they expand lists and maps, not the strings a function's
arguments take. So are templates with more than one expression that can run into what
follows it (``{a}{b}{c}``): the ways to cut a URI among them grow as a power of its
length. Where one such expression leaves two readings, the later expression takes the
most (``{name}{.ext}`` reads ``a.tar.gz`` as ``a`` and ``tar.gz``). URIs longer than
:data:`MAX_URI_LENGTH` match no template.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, NamedTuple
from urllib.parse import unquote

__all__ = ["MAX_URI_LENGTH", "TemplateError", "UriTemplate"]

_UNRESERVED: Final = "A-Za-z0-9\\-._~"
_RESERVED: Final = ":/?#\\[\\]@!$&'()*+,;="
_PCT: Final = "%[0-9A-Fa-f]{2}"
#: The characters of RFC 3986's ``reserved`` set, whose encodings are not equivalent to
#: them (section 2.2).
_RESERVED_CHARS: Final = frozenset(":/?#[]@!$&'()*+,;=")
_UNRESERVED_CHARS: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)
_TRIPLET: Final = re.compile(_PCT)
#: The longest URI matched against templates (longer ones match none): refusing a URI
#: costs a template with an expression that can run into what follows it (``{+a}/{b}``)
#: time quadratic in the URI's length, a few hundredths of a second at this length.
MAX_URI_LENGTH: Final = 2048


class _Operator(NamedTuple):
    """How an expression operator expands (RFC 6570, appendix A)."""

    def chars(self) -> frozenset[str]:
        """Every character an expansion's value part may hold."""
        chars = set(_UNRESERVED_CHARS) | {"%", self.joiner}
        if self.keeps_reserved:
            chars |= _RESERVED_CHARS
        if self.named:
            chars.add("=")
        return frozenset(chars)

    def first(self) -> frozenset[str]:
        """The characters an expansion (not empty) may start with."""
        return frozenset(self.prefix) if self.prefix else self.chars()

    prefix: str
    joiner: str
    #: Characters a value may expand to, besides percent-encodings (a regex class body).
    allowed: str
    #: ``name=value`` pairs (``;``, ``?``, ``&``).
    named: bool
    #: Encodings of reserved characters are kept when decoding (``+``, ``#``).
    keeps_reserved: bool


_OPERATORS: Final[Mapping[str, _Operator]] = {
    "": _Operator("", ",", _UNRESERVED, False, False),
    "+": _Operator("", ",", _UNRESERVED + _RESERVED, False, True),
    "#": _Operator("#", ",", _UNRESERVED + _RESERVED, False, True),
    ".": _Operator(".", ".", _UNRESERVED, False, False),
    "/": _Operator("/", "/", _UNRESERVED, False, False),
    ";": _Operator(";", ";", _UNRESERVED + "=", True, False),
    "?": _Operator("?", "&", _UNRESERVED + "=", True, False),
    "&": _Operator("&", "&", _UNRESERVED + "=", True, False),
}


class TemplateError(ValueError):
    """A URI template that is not RFC 6570, or that cannot be matched to a function's
    arguments."""


class _Expression(NamedTuple):
    operator: _Operator
    names: tuple[str, ...]
    #: The longest value of each variable (``{name:3}``), ``None`` for any.
    max_lengths: tuple[int | None, ...]


def _library() -> Any:
    try:
        import uri_template
    except ImportError:  # pragma: no cover - the extra is part of every test install
        raise ImportError(
            "resource templates need the uri-template package: pip install mcpspec[templates]"
        ) from None
    return uri_template


class UriTemplate:
    """One RFC 6570 template: :attr:`variables`, :meth:`match` a URI,
    :meth:`expand` values."""

    def __init__(self, template: str) -> None:
        """Parse ``template``; :class:`TemplateError` when it is not one."""
        library = _library()
        if not library.validate(template):
            raise TemplateError(f"{template!r} is not an RFC 6570 URI template")
        self.template = template
        self._parsed = library.URITemplate(template)
        pattern: list[str] = []
        expressions: list[_Expression] = []
        parts: list[_Part] = []
        for expansion in self._parsed.expansions:
            if isinstance(expansion, library.expansions.Literal):
                pattern.append(re.escape(expansion.value))
                parts.append(_Part(frozenset(expansion.value[:1]), "", None, literal=True))
                continue
            operator = _OPERATORS.get(expansion.operator)
            if operator is None:
                raise TemplateError(f"{template!r}: {expansion} is not an RFC 6570 expression")
            variables = list(expansion.variables)
            for variable in variables:
                if variable.explode:
                    raise TemplateError(
                        f"{template!r}: the explode modifier of {variable.name!r} expands "
                        "lists and maps, which a function's arguments cannot take"
                    )
            names = tuple(variable.name for variable in variables)
            lengths = tuple(variable.max_length or None for variable in variables)
            expressions.append(_Expression(operator, names, lengths))
            held = None if operator.named else operator.chars()
            parts.append(_Part(operator.first(), str(expansion), held, literal=False))
            prefix, joiner = re.escape(operator.prefix), re.escape(operator.joiner)
            if operator.named:
                # Only the expression's own names: a query expression must not take
                # the pairs of a continuation after it.
                pair = f"(?:{'|'.join(map(re.escape, names))})(?:=(?:[{_UNRESERVED}]|{_PCT})*)?"
                pattern.append(f"((?:{prefix}{pair}(?:{joiner}{pair})*)?)")
            else:
                # Lazy: where two readings give the URI, a later expression takes the
                # most ("{name}{.ext}" reads "a.tar.gz" as "a" and "tar.gz").
                value = f"(?:[{operator.allowed}{joiner}]|{_PCT})*?"
                pattern.append(f"((?:{prefix}{value})??)" if prefix else f"({value})")
        _refuse_ambiguity(template, parts)
        names_seen = [name for expression in expressions for name in expression.names]
        if len(set(names_seen)) != len(names_seen):
            raise TemplateError(f"{template!r} names a variable twice")
        self._pattern = re.compile("".join(pattern), re.DOTALL)
        self._expressions = tuple(expressions)
        #: The variables, in template order.
        self.variables: tuple[str, ...] = tuple(names_seen)

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"

    def expand(self, values: Mapping[str, str]) -> str:
        """The URI of ``values`` (RFC 6570 expansion: absent variables are undefined)."""
        expanded: str = self._parsed.expand(**values)
        return expanded

    def match(self, uri: str) -> dict[str, str] | None:
        """The values of the variables ``uri`` expands (those it leaves undefined are
        absent), or ``None`` when the template cannot give ``uri``."""
        if len(uri) > MAX_URI_LENGTH:
            return None
        normalized = _normalize(uri)
        found = self._pattern.fullmatch(normalized)
        if found is None:
            return None
        values: dict[str, str] = {}
        for expression, text in zip(self._expressions, found.groups(), strict=True):
            if not _read(expression, text, values):
                return None
        try:
            if self.expand(values) != normalized:
                return None
        except Exception:  # a value the library refuses to expand: not this template's
            return None
        return values


class _Part(NamedTuple):
    """A literal or an expression of a template, as far as telling them apart goes."""

    #: The characters it may start with.
    first: frozenset[str]
    #: The expression's text (empty for a literal).
    text: str
    #: The characters an unnamed expression may hold (``None``: a literal, or named
    #: pairs, each of which starts with its name).
    held: frozenset[str] | None
    literal: bool


def _refuse_ambiguity(template: str, parts: list[_Part]) -> None:
    """Refuse a template with more than one expression that can run into what follows
    it (``{a}{b}{c}``, ``{+a}/{+b}/{+c}``): the ways to cut a URI among them grow as a
    power of its length, and so would the time to refuse one. One such expression
    (``{name}{.ext}``, ``{+path}/raw``) is fine."""
    ambiguous: list[str] = []
    for index, part in enumerate(parts):
        if part.held is None:
            continue
        following: set[str] = set()
        for after in parts[index + 1 :]:
            following |= after.first
            if after.literal:
                break  # an expression may expand to nothing: look past it
        if part.held & following:
            ambiguous.append(part.text)
    if len(ambiguous) > 1:
        raise TemplateError(
            f"{template!r}: expressions {', '.join(ambiguous)} can each take the characters "
            "that follow them: separate them with a literal they cannot hold"
        )


def _read(expression: _Expression, text: str, values: dict[str, str]) -> bool:
    """Put the values ``text`` (what ``expression`` expanded to) gives into ``values``;
    false when it cannot be read."""
    operator = expression.operator
    if not text:
        return True  # every variable undefined (or an empty simple value)
    body = text[len(operator.prefix) :]
    if operator.named:
        for pair in body.split(operator.joiner):
            name, equals, encoded = pair.partition("=")
            if name not in expression.names or name in values:
                return False
            if not equals and operator.prefix != ";":
                return False
            decoded = _decode(encoded, operator.keeps_reserved)
            if decoded is None:
                return False
            values[name] = decoded
    else:
        parts = body.split(operator.joiner, len(expression.names) - 1)
        for name, encoded in zip(expression.names, parts, strict=False):
            decoded = _decode(encoded, operator.keeps_reserved)
            if decoded is None:
                return False
            values[name] = decoded
    for name, limit in zip(expression.names, expression.max_lengths, strict=True):
        if limit is not None and len(values.get(name, "")) > limit:
            return False
    return True


def _decode(text: str, keeps_reserved: bool) -> str | None:
    """``text`` percent-decoded as UTF-8 (the encodings of reserved characters kept
    when ``keeps_reserved``); ``None`` when the bytes are not UTF-8."""
    if keeps_reserved:
        text = _TRIPLET.sub(_keep_reserved, text)
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        return None


def _keep_reserved(found: re.Match[str]) -> str:
    """A reserved character's encoding protected from decoding (as ``%25XX``)."""
    triplet = found.group()
    return "%25" + triplet[1:] if chr(int(triplet[1:], 16)) in _RESERVED_CHARS else triplet


def _normalize(uri: str) -> str:
    """``uri`` with upper-case percent-encodings, those of unreserved characters
    decoded (RFC 3986, section 6.2.2)."""
    if "%" not in uri:
        return uri
    return _TRIPLET.sub(_normal_triplet, uri)


def _normal_triplet(found: re.Match[str]) -> str:
    triplet = found.group().upper()
    char = chr(int(triplet[1:], 16))
    return char if char in _UNRESERVED_CHARS else triplet
