"""How the ASGI app reads request headers (``header_map``): lower-case names, repeated
headers joined as RFC 9110 joins them, and a bounded memory of the names it has seen,
whatever names a peer sends."""

from __future__ import annotations

from mcpspec.runtime.connection.http import asgi
from mcpspec.runtime.connection.http.asgi import header_map


def test_names_are_lower_case_and_values_latin_1() -> None:
    headers = header_map(
        {"headers": [(b"Content-Type", b"application/json"), (b"X-Caf\xe9", b"cr\xe8me")]}
    )
    assert headers == {"content-type": "application/json", "x-caf\u00e9": "cr\u00e8me"}


def test_a_repeated_header_keeps_its_values_in_order() -> None:
    # Spelled differently, the names are one name: their values are joined.
    raw = [(b"Accept", b"application/json"), (b"host", b"a"), (b"accept", b"text/event-stream")]
    headers = header_map({"headers": raw})
    assert headers == {"accept": "application/json, text/event-stream", "host": "a"}


def test_headers_given_as_any_iterable() -> None:
    assert header_map({"headers": ((b"Host", b"h"),)}) == {"host": "h"}
    assert header_map({}) == {}


def test_the_names_remembered_stay_bounded() -> None:
    # A peer sending a new header name on every request never grows the memory of names
    # past its bound, and every request still reads its own names.
    for n in range(10 * asgi._NAMES_KEPT):
        name = f"X-Name-{n}".encode()
        assert header_map({"headers": [(name, b"v"), (b"Host", b"h")]}) == {
            f"x-name-{n}": "v",
            "host": "h",
        }
        assert len(asgi._NAMES) <= asgi._NAMES_KEPT
