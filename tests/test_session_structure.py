"""The shape of a session: one core assembled from parts, server and client told apart by
role data and their negotiation part, the protocol model an object chosen from what the
generated module declares."""

from __future__ import annotations

import inspect

import pytest

from mcpspec import REVISIONS
from mcpspec.runtime import ClientSession, ServerSession
from mcpspec.runtime.declared import ProtocolModel
from mcpspec.runtime.session.checks import MESSAGE_RULES, rules_for
from mcpspec.runtime.session.core import Session
from mcpspec.runtime.session.protocol_models import MODELS
from mcpspec.runtime.session.state import Role

from .session_kit import connect

#: What a class defines of itself whatever it is.
_OWN = {"__init__", "__doc__", "__module__", "__qualname__", "__annotations__", "__dict__"}


@pytest.mark.parametrize("cls", [ServerSession, ClientSession])
def test_the_sides_override_nothing_of_the_core(cls: type) -> None:
    assert cls.__mro__ == (cls, Session, object)  # no mixins
    overridden = (set(vars(cls)) - _OWN) & set(vars(Session))
    assert overridden == set()


def test_the_core_fills_no_hook_of_a_base_class() -> None:
    assert Session.__mro__ == (Session, object)
    # Every method of the core does something: none is a stub for a subclass to fill.
    for name, member in vars(Session).items():
        if inspect.isfunction(member):
            body = inspect.getsource(member)
            assert "NotImplementedError" not in body, name


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_model_object_is_what_the_generated_module_declares(revision: str) -> None:
    client, server = connect(revision)
    declared = server.codec.protocol_model
    assert isinstance(declared, ProtocolModel)
    assert server.model == client.model == MODELS[declared].name


def test_a_rule_of_the_table_judges_the_same_sender_on_both_paths() -> None:
    """The log-level rule is one entry: it holds for what a server sends in the
    stateless model, so a server's send and a client's receive both apply it."""
    [log_rule] = MESSAGE_RULES["notifications/message"]
    assert rules_for("notifications/message", Role.SERVER, ProtocolModel.STATELESS) == (log_rule,)
    assert rules_for("notifications/message", Role.SERVER, ProtocolModel.HANDSHAKE) == ()
    assert rules_for("notifications/message", Role.CLIENT, ProtocolModel.STATELESS) == ()
