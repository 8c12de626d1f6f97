"""Resources and RFC 6570 templates declared with ``@server.resource``: listing (paged,
with cursors that cannot be forged), reading (template matching, percent-encoding,
reserved expansion), the error of an unknown resource in each revision, fields a
revision lacks, subscriptions, and what registration refuses."""

from __future__ import annotations

import base64
import re
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpspec.runtime.connection import RequestContext, RequestError, ResourceNotFound, Server
from mcpspec.runtime.connection.pagination import Pager
from mcpspec.runtime.connection.uri_templates import MAX_URI_LENGTH, TemplateError, UriTemplate

from .surface_kit import REVISIONS, client_of

pytestmark = pytest.mark.anyio


def make_server(**options: Any) -> Server:
    server = Server("resources", "1.0", **options)

    @server.resource("config://app", title="App config", mime_type="application/json")
    async def config() -> str:
        """The configuration."""
        return '{"debug": false}'

    @server.resource("logo://png", mime_type="image/png", size=4, icons=[{"src": "x.png"}])
    async def logo() -> bytes:
        return b"\x89PNG"

    @server.resource("db://{table}/{id}", name="row", description="A row of a table.")
    async def row(table: str, id: int) -> str:
        if id < 0:
            raise ResourceNotFound()
        return f"{table} #{id}"

    @server.resource("file:///{+path}", mime_type="text/plain")
    async def file(path: str) -> str:
        return f"contents of {path}"

    @server.resource("search://q{?query,lang}")
    async def search(query: str, ctx: RequestContext, lang: str = "en") -> list[Any]:
        return [f"{query} ({lang}, {ctx.revision})", {"uri": "search://other", "text": "more"}]

    return server


# -- templates, without a connection -----------------------------------------------------------


def test_template_matching_decodes_and_checks_by_expanding_again() -> None:
    row = UriTemplate("db://{table}/{id}")
    assert row.variables == ("table", "id")
    assert row.match("db://users/42") == {"table": "users", "id": "42"}
    # percent-encoding: decoded, the hex case and encoded unreserved characters normalized
    assert row.match("db://us%20ers/a%2fb") == {"table": "us ers", "id": "a/b"}
    assert row.match("db://%75sers/%C3%BC") == {"table": "users", "id": "ü"}
    # a simple expansion never gives a raw "/" or an undecodable byte
    assert row.match("db://users/4/2") is None
    assert row.match("db://users/%FF") is None
    assert row.match("other://users/42") is None
    assert row.match("db://users") is None


def test_reserved_expansion_keeps_what_it_cannot_tell_apart() -> None:
    path = UriTemplate("file:///{+path}")
    assert path.match("file:///a/b/c.txt") == {"path": "a/b/c.txt"}
    assert path.match("file:///a%20b/c") == {"path": "a b/c"}
    # an encoded "/" is not a "/": it stays encoded
    assert path.match("file:///a%2Fb") == {"path": "a%2Fb"}
    assert path.expand({"path": "a%2Fb"}) == "file:///a%2Fb"
    assert UriTemplate("x{#frag}").match("x#a/b?c") == {"frag": "a/b?c"}


def test_every_operator_and_undefined_variables() -> None:
    template = UriTemplate("m://{a,b}{/c}{;f,g}{?q,r}{&s}")
    assert template.match("m://1,2/3;f=6;g?q=a%20b&r=&s=z") == {
        "a": "1",
        "b": "2",
        "c": "3",
        "f": "6",
        "g": "",
        "q": "a b",
        "r": "",
        "s": "z",
    }
    assert template.match("m://1") == {"a": "1"}
    assert UriTemplate("doc/{name}{.ext}").match("doc/readme.md") == {"name": "readme", "ext": "md"}
    assert template.match("m://1?r=x&q=y") is None  # not in the order expansion gives
    assert template.match("m://1?zz=1") is None
    assert UriTemplate("x/{id:3}").match("x/abcd") is None
    assert UriTemplate("x/{id:3}").match("x/abc") == {"id": "abc"}


def test_one_expression_running_into_the_next_and_the_length_bound() -> None:
    assert UriTemplate("doc/{name}{.ext}").match("doc/a.tar.gz") == {"name": "a", "ext": "tar.gz"}
    raw = UriTemplate("repo/{+path}/raw")
    assert raw.match("repo/a/b/raw") == {"path": "a/b"}
    long_path = "a/" * ((MAX_URI_LENGTH - 10) // 2)
    assert raw.match(f"repo/{long_path}raw") == {"path": long_path[:-1]}
    assert raw.match(f"repo/{long_path}xx/raw") is None  # one character too many


ROUND_TRIP_TEMPLATES = (
    "db://{table}/{id}",
    "file:///{+path}",
    "doc/{name}{.ext}",
    "m://{a,b}{/c}{;f}{?q,r}{&s}{#h}",
)
#: Any text a value may hold (lone surrogates are not UTF-8, so no URI carries them).
VALUES = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12)


@given(
    template=st.sampled_from(ROUND_TRIP_TEMPLATES),
    values=st.dictionaries(st.sampled_from("abcfhqrs" + "pathnamextableid"), VALUES),
)
@settings(max_examples=300, deadline=None)
def test_matching_inverts_expansion(template: str, values: dict[str, str]) -> None:
    parsed = UriTemplate(template)
    chosen = {name: values.get(name[0], "v") for name in parsed.variables}
    uri = parsed.expand(chosen)
    found = parsed.match(uri)
    assert found is not None and parsed.expand(found) == uri
    if "+" not in template and "#" not in template and "{." not in template:
        assert found == chosen  # nothing to tell apart: the values themselves


@given(uri=st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_matching_never_raises(uri: str) -> None:
    for template in ROUND_TRIP_TEMPLATES:
        found = UriTemplate(template).match(uri)
        assert found is None or UriTemplate(template).expand(found) == _normalized(uri)


def _normalized(uri: str) -> str:
    return re.sub(
        "%[0-9A-Fa-f]{2}",
        lambda m: (
            chr(int(m.group()[1:], 16))
            if chr(int(m.group()[1:], 16)) in UNRESERVED
            else m.group().upper()
        ),
        uri,
    )


UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("db://{table", "not an RFC 6570"),
        ("x{=a}", "not an RFC 6570"),
        ("x{,a}", "not an RFC 6570 expression"),
        ("x{/path*}", "explode"),
        ("x{a}{a}", "twice"),
        ("x://{a}{b}{c}", "expressions {a}, {b} can each take"),
        ("x://{+dir}/{+sub}/{+file}", "expressions {[+]dir}, {[+]sub} can each take"),
    ],
)
def test_templates_refused(template: str, reason: str) -> None:
    with pytest.raises(TemplateError, match=reason):
        UriTemplate(template)


def test_registration_refusals() -> None:
    server = Server()

    async def takes(table: str) -> str:
        return table

    with pytest.raises(TypeError, match="static"):
        server.resource("x://static")(takes)
    with pytest.raises(TypeError, match="no parameter id"):
        server.resource("x://{table}/{id}")(takes)

    async def two(table: str, q: str = "") -> str:
        return table

    with pytest.raises(TypeError, match="table is not a variable"):
        server.resource("x://fixed{?q}")(two)
    with pytest.raises(TypeError, match="no size"):
        server.resource("x://{table}", size=3)(takes)
    with pytest.raises(TypeError, match="coroutine"):
        server.resource("x://sync")(lambda: "x")  # type: ignore[type-var]

    @server.handler("resources/read")
    async def read(request: Any, ctx: RequestContext) -> Any:
        return {}

    async def plain() -> str:
        return ""

    with pytest.raises(ValueError, match="handler of its own"):
        server.resource("x://plain")(plain)
    declared = make_server()
    with pytest.raises(ValueError, match="for the resources"):
        declared.add_handler("resources/read", read)


# -- over a connection ---------------------------------------------------------------------------


@pytest.mark.parametrize("revision", REVISIONS)
async def test_listed_and_read_in_every_revision(revision: str) -> None:
    async with client_of(make_server(), revision) as client:
        assert client.capabilities.resources is not msgspec.UNSET
        resources = {r.name: r for r in await client.list_resources()}
        assert set(resources) == {"config", "logo"}
        assert resources["config"].description == "The configuration."
        assert resources["logo"].size == 4 and resources["logo"].mime_type == "image/png"
        if revision >= "2025-06-18":
            assert resources["config"].title == "App config"
        else:
            assert not hasattr(resources["config"], "title")
        if revision >= "2025-11-25":
            assert resources["logo"].icons[0].src == "x.png"
        templates = {t.name: t for t in await client.list_resource_templates()}
        assert templates["row"].uri_template == "db://{table}/{id}"
        assert templates["row"].description == "A row of a table."
        assert templates["file"].mime_type == "text/plain"

        config = await client.read_resource("config://app")
        assert config.contents[0].text == '{"debug": false}'
        assert config.contents[0].mime_type == "application/json"
        logo = await client.read_resource("logo://png")
        assert base64.b64decode(logo.contents[0].blob) == b"\x89PNG"
        row = await client.read_resource("db://us%20ers/42")
        assert row.contents[0].text == "us ers #42" and row.contents[0].uri == "db://us%20ers/42"
        file = await client.read_resource("file:///etc/a%20b/c%2Fd")
        assert file.contents[0].text == "contents of etc/a b/c%2Fd"
        assert file.contents[0].mime_type == "text/plain"
        found = await client.read_resource("search://q?query=mcp")
        assert [c.text for c in found.contents] == [f"mcp (en, {revision})", "more"]
        assert found.contents[1].uri == "search://other"


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize(
    "uri",
    [
        "nothing://here",
        "db://users/not-a-number",  # the variable does not convert to the parameter
        "db://users",  # a required variable undefined
        "search://q?lang=fr",  # the query's required variable missing
        "file://no-third-slash",
        "db://users/-1",  # the function raises ResourceNotFound
    ],
)
async def test_an_unknown_resource_is_the_error_of_the_revision(revision: str, uri: str) -> None:
    async with client_of(make_server(), revision) as client:
        with pytest.raises(RequestError) as caught:
            await client.read_resource(uri)
        assert caught.value.code == (-32602 if revision == "2026-07-28" else -32002)
        assert caught.value.message == "Resource not found"
        assert caught.value.data == {"uri": uri}
        # the connection goes on
        assert (await client.read_resource("db://t/1")).contents[0].text == "t #1"


@pytest.mark.parametrize("revision", ["2025-03-26", "2026-07-28"])
async def test_pages_and_cursors_that_cannot_be_forged(revision: str) -> None:
    server = Server(page_size=2)
    for index in range(5):

        async def read(index: int = index) -> str:
            return str(index)

        server.resource(f"n://{index}", name=f"n{index}")(read)
    async with client_of(server, revision) as client:
        names = [r.name for r in await client.list_resources()]
        assert names == ["n0", "n1", "n2", "n3", "n4"]
        pages = [page async for page in client.resource_pages()]
        assert [len(page.resources) for page in pages] == [2, 2, 1]
        cursor = pages[0].next_cursor
        body, _, seal = cursor.partition(".")
        forged = [
            "2",
            cursor + "x",
            body + "." + seal[::-1],
            # a valid cursor of another list
            Pager(server.state_key, 2).page("prompts/list", [1, 2, 3], None)[1],
            # the list and offset of a real cursor, sealed with another key
            Pager(b"k" * 32, 2).page("resources/list", [1, 2, 3], None)[1],
            "a" * 10_000,
        ]
        for bad in forged:
            with pytest.raises(RequestError) as caught:
                await anext(client.resource_pages(bad))
            assert caught.value.code == -32602
            assert "invalid cursor" in caught.value.data["reason"]
        # a cursor given back gives its page
        assert [r.name for r in (await anext(client.resource_pages(cursor))).resources] == [
            "n2",
            "n3",
        ]


def test_a_cursor_beyond_a_shrunk_list_gives_an_empty_page() -> None:
    pager = Pager(b"k" * 32, 2)
    _, cursor = pager.page("tools/list", list(range(10)), None)
    later = pager._cursor("tools/list", 8)
    assert pager.page("tools/list", [1, 2, 3], later) == ([], None)
    assert pager.page("tools/list", [1, 2, 3], cursor) == ([3], None)
    with pytest.raises(ValueError, match="at least 1"):
        Pager(b"k", 0)


async def test_declared_tools_are_paged_too() -> None:
    server = Server(page_size=1)
    for name in ("a", "b", "c"):

        async def tool() -> str:
            return "x"

        server.tool(name=name)(tool)
    async with client_of(server, "2025-11-25") as client:
        assert [tool.name for tool in await client.list_tools()] == ["a", "b", "c"]
        assert len([page async for page in client.tool_pages()]) == 3
        with pytest.raises(RequestError, match="-32602"):
            await anext(client.tool_pages("forged.cursor"))


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-11-25"])
async def test_subscribed_resources_are_told_of_updates(revision: str) -> None:
    server = make_server(subscribe=True)
    updates: list[str] = []
    got = anyio.Event()

    async def on_notification(notification: Any) -> None:
        if notification.method == "notifications/resources/updated":
            updates.append(notification.params.uri)
            got.set()

    async with client_of(server, revision, on_notification=on_notification) as client:
        assert client.capabilities.resources.subscribe is True
        await client.subscribe("config://app")
        await server.notify_resource_updated("db://t/1")  # not subscribed: not sent
        await server.notify_resource_updated("config://app")
        await got.wait()
        await client.unsubscribe("config://app")
        await server.notify_resource_updated("config://app")
        await client.ping()
    assert updates == ["config://app"]


async def test_subscribed_resources_in_2026_07_28() -> None:
    server = make_server(subscribe=True)
    async with client_of(server, "2026-07-28") as client:
        async with client.listen(resource_uris=["db://t/1"]) as changes:
            await server.notify_resource_updated("config://app")
            await server.notify_resource_updated("db://t/1")
            note = await anext(changes)
        assert note.params.uri == "db://t/1"


async def test_a_function_returning_something_else_is_an_internal_error() -> None:
    server = Server()

    @server.resource("odd://thing")
    async def odd() -> Any:
        return 42

    async with client_of(server, "2025-11-25") as client:
        with pytest.raises(RequestError) as caught:
            await client.read_resource("odd://thing")
        assert caught.value.code == -32603
