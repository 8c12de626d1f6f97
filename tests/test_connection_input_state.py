"""The ``requestState`` of 2026-07-28 input rounds is sealed: the server takes back
only what it issued, unaltered."""

from __future__ import annotations

import pytest

from mcpspec.runtime.connection.context import InputState, _Answer
from mcpspec.runtime.connection.errors import RequestError

KEY = b"k" * 32


def test_a_sealed_state_comes_back_whole() -> None:
    state = InputState(
        answers={"q1": _Answer("roots/list", b'{"roots":[]}')}, asked={"q2": "elicitation/create"}
    )
    back = InputState.decode(state.encode(KEY), KEY)
    assert back.asked == {"q2": "elicitation/create"}
    assert back.answers["q1"].method == "roots/list"


@pytest.mark.parametrize(
    "alter",
    [
        lambda text: text + "-TAMPERED",  # appended after the seal
        lambda text: "A" + text,  # the body changed
        lambda text: text.split(".")[0],  # no seal
        lambda text: text.replace(".", ". "),  # a character base64 does not have
        lambda text: "",
    ],
)
def test_an_altered_state_is_refused(alter: object) -> None:
    text = InputState(asked={"q1": "elicitation/create"}).encode(KEY)
    with pytest.raises(RequestError) as caught:
        InputState.decode(alter(text), KEY)  # type: ignore[operator]
    assert caught.value.error.code == -32602


def test_a_state_sealed_under_another_key_is_refused() -> None:
    forged = InputState(asked={"q9": "roots/list"}).encode(b"x" * 32)
    with pytest.raises(RequestError):
        InputState.decode(forged, KEY)
