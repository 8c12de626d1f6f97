"""Membership checks of merged unions.

Some schema unions cannot be told apart by a tag (text or blob resource contents, the
elicitation schemas, ``ElicitRequestParams`` whose ``mode`` may be absent). The generator
emits one Struct with every member's fields; its ``__post_init__`` calls
:func:`check_members`, so a value that is none of the members is rejected with its path,
on decode and on construction alike.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET

__all__ = ["Member", "check_members"]


class Member(msgspec.Struct, frozen=True, gc=False):
    """One member of a merged union: required fields and constant fields, each as
    ``(attribute, wire name)``; constants with the values the member allows; ``kinds``
    the JSON kinds (``"str"``, ``"int"``, ``"float"``, ``"bool"``, ``"None"``) of the
    fields the member declares but the merged Struct cannot type. (A Struct, not a
    ``NamedTuple``: a revision module's import builds the class, and a Struct class is
    the cheaper to build.)"""

    name: str
    required: tuple[tuple[str, str], ...]
    constants: tuple[tuple[str, str, tuple[object, ...]], ...]
    kinds: tuple[tuple[str, str, tuple[str, ...]], ...] = ()


def _is_kind(value: object, kinds: tuple[str, ...]) -> bool:
    for kind in kinds:
        if kind == "str" and isinstance(value, str):
            return True
        if kind == "bool" and isinstance(value, bool):
            return True
        if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if kind == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if kind == "None" and value is None:
            return True
    return False


def check_members(value: object, members: tuple[Member, ...]) -> None:
    """Return if ``value`` is an instance of at least one member, else raise
    ``ValueError`` naming what each member misses."""
    # The common case first, on every decode: a member matches; nothing is allocated.
    for member in members:
        if _matches(value, member):
            return
    problems = []
    for member in members:
        missing = [wire for attr, wire in member.required if getattr(value, attr) is UNSET]
        wrong = [
            wire
            for attr, wire, allowed in member.constants
            if getattr(value, attr) is not UNSET and getattr(value, attr) not in allowed
        ]
        mistyped = [
            (wire, kinds)
            for attr, wire, kinds in member.kinds
            if getattr(value, attr) is not UNSET and not _is_kind(getattr(value, attr), kinds)
        ]
        if not missing and not wrong and not mistyped:
            return
        what = [f"missing {', '.join(missing)}"] if missing else []
        what += [f"{w} is not {member_value(member, w)}" for w in wrong]
        what += [f"{w} is not {' or '.join(kinds)}" for w, kinds in mistyped]
        problems.append(f"{member.name} ({'; '.join(what)})")
    raise ValueError(f"matches none of the union's members: {', '.join(problems)}")


def _matches(value: object, member: Member) -> bool:
    for attr, _ in member.required:
        if getattr(value, attr) is UNSET:
            return False
    for attr, _, allowed in member.constants:
        got = getattr(value, attr)
        if got is not UNSET and got not in allowed:
            return False
    for attr, _, kinds in member.kinds:
        got = getattr(value, attr)
        if got is not UNSET and not _is_kind(got, kinds):
            return False
    return True


def member_value(member: Member, wire: str) -> str:
    for _, name, allowed in member.constants:
        if name == wire:
            return " or ".join(repr(v) for v in allowed)
    return "?"
