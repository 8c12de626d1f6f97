"""The Streamable HTTP headers mirrored from the body (2026-07-28): value encoding,
``x-mcp-header`` annotations, the headers a client sends and a server checks.

Expected values come from the specification's Streamable HTTP page and tools page (their
examples and encoding table) and from the conformance cases of SEP-2243, which
introduced the headers.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcpspec.v2026_07_28 as rev
from mcpspec.runtime.envelope import ErrorResponse
from mcpspec.runtime.errors import MAX_ECHO, ErrorCode
from mcpspec.runtime.session.mirrored_headers import (
    MAX_VALUE_LENGTH,
    MirrorError,
    ParamHeader,
    decode_value,
    encode_value,
    header_mismatch,
    mismatch_error,
    param_headers,
    plainly_mirrored,
    request_headers,
)
from mcpspec.runtime.session.version_negotiation import PROBE_DECODER

from .conftest import EXAMPLES_DIR

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}

#: The specification's example tool (the tools page and the Streamable HTTP page).
EXECUTE_SQL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {
            "type": "string",
            "description": "The region to execute the query in",
            "x-mcp-header": "Region",
        },
        "query": {"type": "string", "description": "The SQL query to execute"},
    },
    "required": ["region", "query"],
}

#: A tool with every kind of annotated parameter, one of them nested.
MIXED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tenant": {"type": "string", "x-mcp-header": "Tenant"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "where": {
            "type": "object",
            "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
        },
        "note": {"type": "string"},
    },
}


def request(
    method: str, params: dict[str, Any] | None = None, *, id: int | None = 1, meta: Any = META
) -> bytes:
    """The wire bytes of a request (a notification for ``id=None``)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        message["id"] = id
    if params is not None or meta is not None:
        message["params"] = {**(params or {}), **({"_meta": meta} if meta is not None else {})}
    return msgspec.json.encode(message)


def call(arguments: Any, name: str = "mixed") -> bytes:
    return request("tools/call", {"name": name, "arguments": arguments})


def tools(**schemas: Mapping[str, Any]) -> Any:
    """A ``params_of`` over tools with these input schemas."""
    table = {name: param_headers(schema) for name, schema in schemas.items()}

    def params_of(name: str) -> Sequence[ParamHeader]:
        return table.get(name, ())

    return params_of


MIXED = tools(mixed=MIXED_SCHEMA, execute_sql=EXECUTE_SQL_SCHEMA)


def lower(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers as a server reads them (ASGI gives lower-case names)."""
    return {name.lower(): value for name, value in headers.items()}


def sent(body: bytes, params_of: Any = MIXED) -> dict[str, str]:
    """The headers a conforming client sends with ``body``, as the server reads them."""
    return lower(request_headers(body, params_of))


# -- value encoding -------------------------------------------------------------------------

#: The specification's encoding table, then SEP-2243's value-encoding cases.
ENCODINGS = [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    (" us-west1", "=?base64?IHVzLXdlc3Qx?="),
    ("us-west1 ", "=?base64?dXMtd2VzdDEg?="),
    (" us-west1 ", "=?base64?IHVzLXdlc3QxIA==?="),
    ("us west 1", "us west 1"),
    ("日本語", "=?base64?5pel5pys6Kqe?="),
    ("line1\r\nline2", "=?base64?bGluZTENCmxpbmUy?="),
    ("\tindented", "=?base64?CWluZGVudGVk?="),
    ("", ""),
    ("my-tool-name", "my-tool-name"),
    ("file:///path/to/file%20name.txt", "file:///path/to/file%20name.txt"),
    ("https://example.com/resource?id=123", "https://example.com/resource?id=123"),
]


@pytest.mark.parametrize(("text", "value"), ENCODINGS)
def test_encoding_examples(text: str, value: str) -> None:
    assert encode_value(text) == value
    assert decode_value(value) == text


@pytest.mark.parametrize(
    "text",
    ["a\x7fb", "a\x00b", "tab\tinside", "trailing\t", "é", "=?base64?=", "=?base64??="],
)
def test_unsafe_or_sentinel_like_text_is_encoded(text: str) -> None:
    value = encode_value(text)
    assert value.startswith("=?base64?")
    assert value.endswith("?=")
    assert base64.b64decode(value[9:-2]).decode() == text
    assert decode_value(value) == text


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("=?base64?SGVsbG8=?=", "Hello"),  # valid Base64 is decoded
        ("SGVsbG8=", "SGVsbG8="),  # no prefix: a literal
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),  # no suffix: a literal
        ("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="),  # markers are lower case only
        ("=?base64?=", "=?base64?="),  # prefix and suffix overlap: a literal
        ("=?base64??=", ""),
        ("  foo ", "foo"),  # whitespace around a field value is not part of it
        ("\tfoo\t", "foo"),
        ("us west 1", "us west 1"),
        ("a\tb", "a\tb"),  # a tab inside is a valid field value
    ],
)
def test_decode_value(raw: str, text: str) -> None:
    assert decode_value(raw) == text


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("=?base64?SGVsbG8?=", "not valid Base64"),  # padding missing
        ("=?base64?SGVs!!!bG8=?=", "not valid Base64"),  # outside the alphabet
        ("=?base64?SGVs bG8=?=", "not valid Base64"),
        ("=?base64?SGVsbG9=?=", "not canonical"),  # non-zero trailing bits
        ("=?base64?/w==?=", "UTF-8"),  # the byte 0xff
        ("a\nb", "characters a header value may not"),
        ("a\x00b", "characters a header value may not"),
        ("caf\xe9", "characters a header value may not"),  # obs-text (a byte >= 0x80)
        ("a\x7fb", "characters a header value may not"),
        ("x" * (MAX_VALUE_LENGTH + 1), "over"),
    ],
)
def test_malformed_values_are_refused(raw: str, why: str) -> None:
    with pytest.raises(MirrorError) as caught:
        decode_value(raw)
    assert why in caught.value.reason
    assert len(caught.value.reason) <= MAX_ECHO + 40


def test_lone_surrogate_cannot_be_encoded() -> None:
    with pytest.raises(MirrorError, match="surrogate"):
        encode_value("a\ud800")


@given(st.text())
def test_encoding_round_trips(text: str) -> None:
    value = encode_value(text)
    assert decode_value(value) == text
    # What goes on the wire is a valid header value HTTP leaves as it is.
    assert value.isascii()
    assert value.isprintable()
    assert value == value.strip(" ")
    # Plain text travels as it is, and only plain text does.
    plain = text.isascii() and text.isprintable() and text == text.strip(" ")
    plain = plain and not (text.startswith("=?base64?") and text.endswith("?="))
    assert (value == text) == plain


@given(st.text())
def test_decode_value_refuses_only_with_mirror_error(raw: str) -> None:
    try:
        text = decode_value(raw)
    except MirrorError as exc:
        assert len(exc.reason) <= MAX_ECHO + 40
    else:
        assert isinstance(text, str)


@given(st.binary(max_size=64))
def test_any_base64_payload_decodes_or_is_refused(data: bytes) -> None:
    raw = "=?base64?" + base64.b64encode(data).decode() + "?="
    try:
        text = decode_value(raw)
    except MirrorError:
        with pytest.raises(UnicodeDecodeError):
            data.decode("utf-8")
    else:
        assert text == data.decode("utf-8")


# -- x-mcp-header annotations ---------------------------------------------------------------


def test_spec_example_annotation() -> None:
    assert param_headers(EXECUTE_SQL_SCHEMA) == (ParamHeader("Region", ("region",), "string"),)


def test_annotations_in_document_order_nested_included() -> None:
    assert param_headers(MIXED_SCHEMA) == (
        ParamHeader("Tenant", ("tenant",), "string"),
        ParamHeader("Count", ("count",), "integer"),
        ParamHeader("Dry-Run", ("dry",), "boolean"),
        ParamHeader("Zone", ("where", "zone"), "string"),
    )


@pytest.mark.parametrize(
    "schema",
    [{}, {"type": "object"}, {"type": "object", "additionalProperties": False}],
)
def test_no_annotations(schema: dict[str, Any]) -> None:
    assert param_headers(schema) == ()


def test_header_named_like_a_standard_header_is_allowed() -> None:
    # It becomes Mcp-Param-Method, not Mcp-Method.
    schema = {"properties": {"m": {"type": "string", "x-mcp-header": "Method"}}}
    assert param_headers(schema) == (ParamHeader("Method", ("m",), "string"),)


def test_every_token_character_is_allowed() -> None:
    token = "!#$%&'*+-.^_`|~09azAZ"
    schema = {"properties": {"t": {"type": "string", "x-mcp-header": token}}}
    assert param_headers(schema)[0].header == token


def test_annotation_inside_instance_data_is_not_an_annotation() -> None:
    # const/enum/default/examples hold instances, not schemas.
    data = {"x-mcp-header": "Nope", "type": "array"}
    schema = {
        "properties": {"a": {"type": "object", "default": data, "examples": [data], "const": data}}
    }
    assert param_headers(schema) == ()


def test_shared_subschema_is_not_a_cycle() -> None:
    shared = {"type": "string"}
    assert param_headers({"properties": {"a": shared, "b": shared}}) == ()


def _prop(**schema: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"p": schema}}


INVALID: dict[str, tuple[Any, str]] = {
    "empty": (_prop(type="string", **{"x-mcp-header": ""}), "is empty"),
    "not a string": (_prop(type="string", **{"x-mcp-header": 5}), "not a string"),
    "space": (_prop(type="string", **{"x-mcp-header": "My Region"}), "not an HTTP token"),
    "colon": (_prop(type="string", **{"x-mcp-header": "Region:Primary"}), "not an HTTP token"),
    "non-ASCII": (_prop(type="string", **{"x-mcp-header": "Région"}), "not an HTTP token"),
    "tab": (_prop(type="string", **{"x-mcp-header": "Region\t1"}), "not an HTTP token"),
    "CR LF": (_prop(type="string", **{"x-mcp-header": "A\r\nB"}), "not an HTTP token"),
    "duplicate": (
        {
            "properties": {
                "a": {"type": "string", "x-mcp-header": "Region"},
                "b": {"type": "string", "x-mcp-header": "Region"},
            }
        },
        "repeats",
    ),
    "duplicate ignoring case": (
        {
            "properties": {
                "a": {"type": "string", "x-mcp-header": "Region"},
                "b": {"properties": {"c": {"type": "string", "x-mcp-header": "REGION"}}},
            }
        },
        "ignoring case",
    ),
    "number": (_prop(type="number", **{"x-mcp-header": "N"}), "number is not permitted"),
    "array": (_prop(type="array", **{"x-mcp-header": "A"}), "of type 'array'"),
    "object": (_prop(type="object", **{"x-mcp-header": "O"}), "of type 'object'"),
    "null": (_prop(type="null", **{"x-mcp-header": "N"}), "of type 'null'"),
    "no type": (_prop(**{"x-mcp-header": "N"}), "of type None"),
    "type list": (_prop(type=["string", "null"], **{"x-mcp-header": "N"}), "of type ["),
    "on the root": ({"type": "string", "x-mcp-header": "Root"}, "schema root"),
    "items": (
        _prop(type="array", items={"properties": {"q": {"type": "string", "x-mcp-header": "Q"}}}),
        "/properties/p/items/properties/q is not reachable",
    ),
    "items as a list": (
        _prop(type="array", items=[{"type": "string", "x-mcp-header": "Q"}]),
        "/properties/p/items/0 is not reachable",
    ),
    "prefixItems": (
        _prop(type="array", prefixItems=[{"type": "string", "x-mcp-header": "Q"}]),
        "not reachable",
    ),
    "additionalProperties": (
        {"additionalProperties": {"type": "string", "x-mcp-header": "Q"}},
        "not reachable",
    ),
    "patternProperties": (
        {"patternProperties": {"^a": {"type": "string", "x-mcp-header": "Q"}}},
        "not reachable",
    ),
    "allOf": ({"allOf": [_prop(type="string", **{"x-mcp-header": "Q"})]}, "not reachable"),
    "anyOf": ({"anyOf": [_prop(type="string", **{"x-mcp-header": "Q"})]}, "not reachable"),
    "oneOf": ({"oneOf": [_prop(type="string", **{"x-mcp-header": "Q"})]}, "not reachable"),
    "not": ({"not": _prop(type="string", **{"x-mcp-header": "Q"})}, "not reachable"),
    "if": ({"if": _prop(type="string", **{"x-mcp-header": "Q"})}, "not reachable"),
    "then": ({"then": _prop(type="string", **{"x-mcp-header": "Q"})}, "not reachable"),
    "else": ({"else": _prop(type="string", **{"x-mcp-header": "Q"})}, "not reachable"),
    "$defs via $ref": (
        {
            "properties": {"r": {"$ref": "#/$defs/R"}},
            "$defs": {"R": {"type": "string", "x-mcp-header": "R"}},
        },
        "/$defs/R is not reachable",
    ),
    "definitions": (
        {"definitions": {"R": {"type": "string", "x-mcp-header": "R"}}},
        "not reachable",
    ),
    "dependentSchemas": (
        {"dependentSchemas": {"a": _prop(type="string", **{"x-mcp-header": "Q"})}},
        "not reachable",
    ),
    "properties below a composition": (
        {"allOf": [{"properties": {"deep": _prop(type="string", **{"x-mcp-header": "Q"})}}]},
        "/allOf/0/properties/deep/properties/p is not reachable",
    ),
}


@pytest.mark.parametrize(("schema", "why"), INVALID.values(), ids=INVALID.keys())
def test_invalid_annotation_is_refused(schema: Any, why: str) -> None:
    with pytest.raises(MirrorError) as caught:
        param_headers(schema)
    assert why in caught.value.reason


def test_schema_that_contains_itself_is_refused() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["again"] = schema
    with pytest.raises(MirrorError, match="contains itself"):
        param_headers(schema)


def test_deep_schema_needs_no_recursion() -> None:
    depth = 20_000
    schema: dict[str, Any] = {"type": "string", "x-mcp-header": "Deep"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"d": schema}}
    (param,) = param_headers(schema)
    assert param.path == ("d",) * depth


def test_long_annotation_is_reported_in_bounded_length() -> None:
    schema = _prop(type="string", **{"x-mcp-header": "bad header " * 10_000})
    with pytest.raises(MirrorError) as caught:
        param_headers(schema)
    assert len(caught.value.reason) <= MAX_ECHO + 40


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "properties", "items", "x-mcp-header", "allOf", "p", "q"])
            | st.text(),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@given(JSON)
def test_any_schema_gives_annotations_or_mirror_error(schema: Any) -> None:
    try:
        found = param_headers(schema)
    except MirrorError as exc:
        assert len(exc.reason) <= MAX_ECHO + 40
    else:
        assert len({param.header.lower() for param in found}) == len(found)
        assert all(param.path and param.kind in {"string", "integer", "boolean"} for param in found)


# -- the headers a client sends -------------------------------------------------------------


def test_spec_example_tools_call() -> None:
    body = request("tools/call", {"name": "get_weather", "arguments": {"location": "Seattle, WA"}})
    assert request_headers(body) == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "get_weather",
    }


def test_spec_example_resources_read() -> None:
    body = request("resources/read", {"uri": "file:///projects/myapp/config.json"})
    assert request_headers(body) == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "resources/read",
        "Mcp-Name": "file:///projects/myapp/config.json",
    }


def test_spec_example_custom_header() -> None:
    body = request(
        "tools/call",
        {
            "name": "execute_sql",
            "arguments": {"region": "us-west1", "query": "SELECT * FROM users"},
        },
    )
    assert request_headers(body, MIXED) == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "execute_sql",
        "Mcp-Param-Region": "us-west1",
    }


def test_prompts_get() -> None:
    body = request("prompts/get", {"name": "code_review", "arguments": {"language": "python"}})
    assert request_headers(body, MIXED) == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "prompts/get",
        "Mcp-Name": "code_review",
    }


@pytest.mark.parametrize(
    "method", ["tools/list", "server/discover", "subscriptions/listen", "completion/complete"]
)
def test_other_methods_carry_version_and_method(method: str) -> None:
    body = request(method, {"name": "not mirrored", "uri": "not mirrored"})
    assert request_headers(body, MIXED) == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    }


def test_name_that_is_not_plain_is_encoded() -> None:
    body = request("resources/read", {"uri": "file:///tmp/naïve file.txt"})
    value = request_headers(body)["Mcp-Name"]
    assert value == encode_value("file:///tmp/naïve file.txt")
    assert value.startswith("=?base64?")


def test_notification_carries_method_and_the_given_version() -> None:
    body = request("notifications/cancelled", {"requestId": 1}, id=None, meta=None)
    assert request_headers(body) == {"Mcp-Method": "notifications/cancelled"}
    assert request_headers(body, protocol_version=VERSION) == {
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "notifications/cancelled",
    }


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"tenant": "acme-corp", "count": 42, "dry": True, "where": {"zone": "eu"}},
            {"Tenant": "acme-corp", "Count": "42", "Dry-Run": "true", "Zone": "eu"},
        ),
        ({"count": -7, "dry": False}, {"Count": "-7", "Dry-Run": "false"}),
        ({"count": 42.0}, {"Count": "42"}),  # an integral number of an integer parameter
        ({"tenant": "Zürich "}, {"Tenant": "=?base64?WsO8cmljaCA=?="}),
        ({"tenant": ""}, {"Tenant": ""}),
        ({"tenant": None, "count": None, "where": None}, {}),  # null: no header
        ({"note": "only unannotated"}, {}),
        ({"where": "not an object"}, {}),  # no value at where.zone
        ({"where": {"zone": None}}, {}),
        ({"tenant": ["a"], "count": {"n": 1}}, {}),  # objects and arrays have no header form
        ({}, {}),
        (None, {}),
        ("not an object", {}),
    ],
)
def test_tools_call_param_headers(arguments: Any, expected: dict[str, str]) -> None:
    headers = request_headers(call(arguments), MIXED)
    params = {k.removeprefix("Mcp-Param-"): v for k, v in headers.items() if "Param" in k}
    assert params == expected


def test_unknown_tool_or_no_table_sends_no_param_headers() -> None:
    body = call({"tenant": "acme"}, name="unknown")
    assert "Mcp-Param-Tenant" not in request_headers(body, MIXED)
    assert "Mcp-Param-Tenant" not in request_headers(call({"tenant": "acme"}))


def test_duplicate_keys_mirror_the_value_the_codec_reads() -> None:
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"first",'
        b'"name":"mixed","arguments":{"tenant":"a","tenant":"b"},"_meta":'
        + msgspec.json.encode(META)
        + b"}}"
    )
    decoded = rev.codec.decode(body)
    assert isinstance(decoded, rev.CallToolRequest)
    headers = request_headers(body, MIXED)
    assert headers["Mcp-Name"] == decoded.params.name == "mixed"
    arguments = decoded.params.arguments
    assert isinstance(arguments, dict)
    assert headers["Mcp-Param-Tenant"] == arguments["tenant"] == "b"


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"", "not JSON"),
        (b"{", "not JSON"),
        (b"[]", "Expected `object`"),
        (b'{"jsonrpc":"2.0","id":1,"result":{}}', "no method"),
        (b'{"id":1,"method":5}', "$.method"),
        (b'{"id":1,"method":"tools/list","params":[1]}', "$.params"),
        (request("tools/list", meta=None), "carries no params._meta"),
        (request("tools/list", meta={}), "carries no params._meta"),
        (request("tools/list", meta=5), "params._meta"),
        (
            request("tools/list", meta={**META, "io.modelcontextprotocol/protocolVersion": 1}),
            "not a string",
        ),
        (
            request("tools/list", meta={**META, "io.modelcontextprotocol/protocolVersion": "a\nb"}),
            "cannot be a header value",
        ),
        (request("tools/list\t"), "cannot be a header value"),
        (request("tools/call", {"arguments": {}}), "params.name of tools/call is nothing"),
        (request("tools/call", {"name": 7}), "params.name of tools/call is 7"),
        (request("resources/read", {"uri": {"u": 1}}), "params.uri of resources/read is {"),
    ],
)
def test_unusable_body_raises_mirror_error(body: bytes, why: str) -> None:
    with pytest.raises(MirrorError) as caught:
        request_headers(body, MIXED)
    assert why in caught.value.reason


# -- the headers a server checks ------------------------------------------------------------


BODIES = {
    "tools/call": call({"tenant": "acme", "count": 3, "dry": False, "where": {"zone": "eu"}}),
    "tools/call plain": request("tools/call", {"name": "plain", "arguments": {"a": 1}}),
    "prompts/get": request("prompts/get", {"name": "code_review"}),
    "resources/read": request("resources/read", {"uri": "file:///é.txt"}),
    "tools/list": request("tools/list"),
}


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_headers_a_client_sends_match(body: bytes) -> None:
    assert header_mismatch(sent(body), body, MIXED) is None


@pytest.mark.schemas
def test_spec_example_mismatch_is_the_spec_example_error() -> None:
    body = request("tools/call", {"name": "bar", "arguments": {}})
    headers = {**sent(body), "mcp-name": "foo"}
    reason = header_mismatch(headers, body)
    assert reason == "Mcp-Name header value 'foo' does not match body value 'bar'"
    response = ErrorResponse(id=1, error=mismatch_error(reason))
    example = EXAMPLES_DIR / "HeaderMismatchError" / "header-mismatch.json"
    assert json.loads(msgspec.json.encode(response)) == json.loads(example.read_bytes())


def test_mismatch_error_is_a_header_mismatch_error() -> None:
    error = mismatch_error("x" * 10_000)
    assert error.code == ErrorCode.HEADER_MISMATCH
    assert error.code == -32020
    assert error.message.startswith("Header mismatch: xxx")
    assert len(error.message) <= MAX_ECHO + 40
    assert error.data is msgspec.UNSET  # the specification defines no data
    wire = msgspec.json.encode(ErrorResponse(id=7, error=error))
    typed = rev.codec.decode_as(rev.HeaderMismatchError, wire)
    assert typed.error.code == -32020


@pytest.mark.parametrize(
    ("body", "header", "why"),
    [
        (BODIES["tools/list"], "mcp-protocol-version", "MCP-Protocol-Version header is missing"),
        (BODIES["tools/list"], "mcp-method", "Mcp-Method header is missing"),
        (BODIES["prompts/get"], "mcp-name", "Mcp-Name header is missing"),
        (BODIES["resources/read"], "mcp-name", "Mcp-Name header is missing"),
        (BODIES["tools/call"], "mcp-name", "Mcp-Name header is missing"),
        (BODIES["tools/call"], "mcp-param-tenant", "Mcp-Param-Tenant header is missing"),
        (BODIES["tools/call"], "mcp-param-count", "Mcp-Param-Count header is missing"),
        (BODIES["tools/call"], "mcp-param-dry-run", "Mcp-Param-Dry-Run header is missing"),
        (BODIES["tools/call"], "mcp-param-zone", "Mcp-Param-Zone header is missing"),
    ],
)
def test_missing_header_is_a_mismatch(body: bytes, header: str, why: str) -> None:
    headers = sent(body)
    del headers[header]
    reason = header_mismatch(headers, body, MIXED)
    assert reason is not None
    assert reason.startswith(why)


@pytest.mark.parametrize(
    ("body", "header", "value", "why"),
    [
        (
            BODIES["tools/list"],
            "mcp-protocol-version",
            "2025-11-25",
            "'2025-11-25' does not match body value '2026-07-28'",
        ),
        (
            BODIES["tools/list"],
            "mcp-method",
            "tools/call",
            "'tools/call' does not match body value 'tools/list'",
        ),
        (BODIES["tools/list"], "mcp-method", "TOOLS/LIST", "does not match"),  # case-sensitive
        (
            BODIES["tools/list"],
            "mcp-method",
            encode_value("=?base64?x?="),
            "does not match",
        ),  # not decoded
        (BODIES["prompts/get"], "mcp-name", "code-review", "does not match"),
        (BODIES["resources/read"], "mcp-name", "file:///e.txt", "does not match"),
        (BODIES["resources/read"], "mcp-name", "=?base64?ZmlsZTovLy/DqS50eHQ?=", "malformed"),
        (
            BODIES["tools/call"],
            "mcp-param-tenant",
            "ACME",
            "value 'ACME' does not match body value 'acme' at arguments.tenant",
        ),
        (BODIES["tools/call"], "mcp-param-count", "4", "does not match body value 3"),
        (BODIES["tools/call"], "mcp-param-count", "3.5", "does not match"),
        (BODIES["tools/call"], "mcp-param-count", "3e0", "does not match"),
        (BODIES["tools/call"], "mcp-param-count", "+3", "does not match"),
        (BODIES["tools/call"], "mcp-param-dry-run", "False", "does not match"),
        (BODIES["tools/call"], "mcp-param-zone", "=?base64?ZXU?=", "malformed"),
        (BODIES["tools/call"], "mcp-param-zone", "e\x01u", "malformed"),
        (BODIES["tools/call"], "mcp-param-zone", "eu, eu", "does not match"),  # a repeated header
        (BODIES["tools/call"], "mcp-protocol-version", "2026-07-28\x00", "malformed"),
        (BODIES["tools/call"], "mcp-method", "tools/call\r\nX: y", "malformed"),
    ],
)
def test_different_header_is_a_mismatch(body: bytes, header: str, value: str, why: str) -> None:
    headers = {**sent(body), header: value}
    reason = header_mismatch(headers, body, MIXED)
    assert reason is not None
    assert why in reason


@pytest.mark.parametrize(
    ("body", "header", "value", "why"),
    [
        (
            call({"tenant": None}),
            "mcp-param-tenant",
            "null",
            "body has no value at arguments.tenant",
        ),
        (call({}), "mcp-param-count", "1", "body has no value at arguments.count"),
        (call({"where": 5}), "mcp-param-zone", "5", "no value at arguments.where.zone"),
        (
            call({"tenant": ["a"]}),
            "mcp-param-tenant",
            "a",
            "an object or array at arguments.tenant",
        ),
    ],
)
def test_extra_header_is_a_mismatch(body: bytes, header: str, value: str, why: str) -> None:
    assert header not in sent(body)
    reason = header_mismatch({**sent(body), header: value}, body, MIXED)
    assert reason is not None
    assert why in reason


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("mcp-param-count", "3.0"),  # integers compare as numbers
        ("mcp-param-count", "3.000"),
        ("mcp-param-count", "003"),
        ("mcp-name", "  mixed\t"),  # whitespace around a value is not part of it
        ("mcp-name", "=?base64?bWl4ZWQ=?="),  # a plain name may still come encoded
        ("mcp-param-tenant", "=?base64?YWNtZQ==?="),
        ("mcp-param-unknown", "anything"),  # no annotation names it: ignored
        ("mcp-session-id", "ignored"),
    ],
)
def test_equivalent_headers_match(header: str, value: str) -> None:
    body = BODIES["tools/call"]
    assert header_mismatch({**sent(body), header: value}, body, MIXED) is None


@pytest.mark.parametrize("method", ["tools/list", "tasks/get", "completion/complete"])
def test_name_header_of_a_method_without_a_name_is_ignored(method: str) -> None:
    # The specification defines Mcp-Name for three methods only; some clients send one
    # for others (a task's id), which is no mirrored header there.
    body = request(method, {"taskId": "t-1"})
    assert header_mismatch({**sent(body), "mcp-name": "t-1"}, body, MIXED) is None


def test_integral_number_of_integer_parameter_matches() -> None:
    body = call({"count": 42.0})
    assert header_mismatch({**sent(body), "mcp-param-count": "42"}, body, MIXED) is None
    assert header_mismatch({**sent(body), "mcp-param-count": "42.0"}, body, MIXED) is None
    assert header_mismatch({**sent(body), "mcp-param-count": "43"}, body, MIXED) is not None


def test_without_a_table_param_headers_are_not_checked() -> None:
    body = BODIES["tools/call"]
    headers = {k: v for k, v in sent(body).items() if not k.startswith("mcp-param-")}
    assert header_mismatch(headers, body) is None
    assert header_mismatch(headers, body, MIXED) is not None


def test_notification_is_checked_only_for_what_it_carries() -> None:
    body = request("notifications/cancelled", {"requestId": 1}, id=None, meta=None)
    assert header_mismatch({}, body) is None
    assert header_mismatch({"mcp-method": "notifications/cancelled"}, body) is None
    assert header_mismatch({"mcp-protocol-version": VERSION}, body) is None
    assert "does not match" in (header_mismatch({"mcp-method": "tools/list"}, body) or "")
    assert header_mismatch({"mcp-name": "x"}, body) is None


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (
            request("tools/list", meta={**META, "io.modelcontextprotocol/protocolVersion": 1}),
            "MCP-Protocol-Version header cannot match body value 1",
        ),
        (
            request("tools/list", meta={**META, "io.modelcontextprotocol/protocolVersion": [1]}),
            "cannot match",
        ),
        (request("tools/call", {"name": 7}), "Mcp-Name header cannot match body value 7"),
        (request("resources/read", {"uri": {"u": 1}}), "Mcp-Name header cannot match"),
    ],
)
def test_body_value_of_another_type_is_a_mismatch(body: bytes, why: str) -> None:
    method = json.loads(body)["method"]
    headers = {"mcp-protocol-version": VERSION, "mcp-method": method, "mcp-name": "7"}
    reason = header_mismatch(headers, body, MIXED)
    assert reason is not None
    assert why in reason


@pytest.mark.parametrize(
    "body",
    [
        request("tools/list", meta=None),
        request("tools/list", meta={"other": 1}),
        request("tools/call", {"arguments": {"tenant": "x"}}),
        request("prompts/get", {"name": None}),
        request("resources/read", {}),
    ],
)
def test_body_without_the_mirrored_value_is_left_to_body_validation(body: bytes) -> None:
    # The body is invalid (-32602 from its validation), not a header mismatch.
    method = json.loads(body)["method"]
    headers = {"mcp-protocol-version": VERSION, "mcp-method": method, "mcp-name": "x"}
    assert header_mismatch({**headers, "mcp-param-tenant": "x"}, body, MIXED) is None
    # A required header that is missing is still a mismatch.
    del headers["mcp-protocol-version"]
    assert "is missing" in (header_mismatch(headers, body, MIXED) or "")


# -- hostile bodies -------------------------------------------------------------------------

HOSTILE = [
    b"",
    b"\xef\xbb\xbf{}",
    b"\xff\xfe",
    b"null",
    b'"tools/call"',
    b'{"method":"tools/call","id":1,"params":{"name":"\xff"}}',
    b'{"method":"tools/call","id":1,"params":{"name":"\\ud800"}}',
    b'{"method":"tools/call","id":1,"params":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"method":"tools/call","id":1,"params":{"name":"mixed","arguments":{"count":'
    + b"9" * 5000
    + b"}}}",
    b'{"method":"tools/call","id":1,"params":{"name":"mixed","arguments":{"count":1e999}}}',
    b'{"method":"tools/call","id":1,"params":{"name":"mixed","arguments":{"where":'
    + b'{"a":' * 50_000
    + b"1"
    + b"}" * 50_000
    + b"}}}",
    request("tools/call", {"name": "mixed", "arguments": {"tenant": "x" * 1_000_000}}),
]


@pytest.mark.parametrize("body", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_body(body: bytes) -> None:
    headers = {
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
        "mcp-name": "mixed",
        "mcp-param-tenant": "x",
        "mcp-param-count": "9" * 5000,
    }
    reason = header_mismatch(headers, body, MIXED)
    assert reason is not None
    assert len(reason) <= MAX_ECHO + 40
    try:
        request_headers(body, MIXED)
    except MirrorError as exc:
        assert len(exc.reason) <= MAX_ECHO + 40


def test_huge_header_values_are_refused_in_bounded_length() -> None:
    body = call({"tenant": "x" * 100_000})
    headers = sent(body)
    assert len(headers["mcp-param-tenant"]) == 100_000  # a client sends what it must
    reason = header_mismatch(headers, body, MIXED)
    assert reason is not None
    assert "over" in reason
    assert len(reason) <= MAX_ECHO + 40


BODY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "method",
                    "id",
                    "params",
                    "name",
                    "uri",
                    "arguments",
                    "_meta",
                    "io.modelcontextprotocol/protocolVersion",
                    "tenant",
                    "count",
                    "dry",
                    "where",
                    "zone",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)
HEADER_VALUES = st.dictionaries(
    st.sampled_from(
        ["mcp-protocol-version", "mcp-method", "mcp-name", "mcp-param-tenant", "mcp-param-count"]
    ),
    st.text(max_size=12) | st.sampled_from(["tools/call", "mixed", VERSION, "=?base64?eA==?="]),
)


@given(BODY_JSON, HEADER_VALUES)
def test_any_json_body_gives_headers_or_mirror_error(value: Any, headers: dict[str, str]) -> None:
    body = msgspec.json.encode(value)
    reason = header_mismatch(headers, body, MIXED)
    assert reason is None or len(reason) <= MAX_ECHO + 40
    try:
        mirrored = request_headers(body, MIXED, protocol_version=VERSION)
    except MirrorError:
        return
    # What a client sends for a body is what a server accepts for it.
    assert header_mismatch(lower(mirrored), body, MIXED) is None


@given(st.binary(max_size=200), HEADER_VALUES)
def test_any_bytes_give_headers_or_mirror_error(body: bytes, headers: dict[str, str]) -> None:
    reason = header_mismatch(headers, body, MIXED)
    assert reason is None or len(reason) <= MAX_ECHO + 40
    with contextlib.suppress(MirrorError):
        request_headers(body, MIXED)


ARGUMENT = (
    st.none() | st.booleans() | st.integers() | st.text() | st.lists(st.integers(), max_size=2)
)


@given(
    st.text(min_size=1),
    st.fixed_dictionaries(
        {},
        optional={
            "tenant": ARGUMENT,
            "count": ARGUMENT | st.integers().map(float),
            "dry": ARGUMENT,
            "where": st.fixed_dictionaries({}, optional={"zone": ARGUMENT}) | ARGUMENT,
        },
    ),
)
def test_client_headers_always_match_on_the_server(name: str, arguments: dict[str, Any]) -> None:
    params_of = tools(**{name: MIXED_SCHEMA})
    for body in (
        call(arguments, name=name),
        request("prompts/get", {"name": name}),
        request("resources/read", {"uri": name}),
    ):
        headers = request_headers(body, params_of)
        assert header_mismatch(lower(headers), body, params_of) is None
        assert all(value.isascii() and value.isprintable() for value in headers.values())
        # And changing any mirrored header's value is noticed.
        for header, value in headers.items():
            if header.startswith("Mcp-Param-") or header == "Mcp-Name":
                changed = encode_value(decode_value(value) + "!")
                tampered = {**lower(headers), header.lower(): changed}
                assert header_mismatch(tampered, body, params_of) is not None


# -- the quick test a server makes first ------------------------------------------------


def quick(headers: Mapping[str, str], body: bytes, params_of: Any = MIXED) -> bool:
    return plainly_mirrored(headers, PROBE_DECODER.decode(body), params_of)


PLAIN = {
    "tools/call of a tool without annotations": request(
        "tools/call", {"name": "plain", "arguments": {"a": 1}}
    ),
    "prompts/get": request("prompts/get", {"name": "code_review"}),
    "resources/read": request("resources/read", {"uri": "file:///a.txt"}),
    "tools/list": request("tools/list"),
}


@pytest.mark.parametrize("body", PLAIN.values(), ids=PLAIN.keys())
def test_plain_headers_a_client_sends_pass_the_quick_test(body: bytes) -> None:
    assert quick(sent(body), body) is True


NOT_PLAIN = {
    # The tool has x-mcp-header annotations: only header_mismatch checks them.
    "annotated tool": (call({"tenant": "acme"}), {}),
    "encoded name": (
        request("tools/call", {"name": "é"}),
        {"mcp-name": "=?base64?w6k=?="},
    ),
    "name escaped in the body": (
        b'{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"c\\u006fde",'
        + b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}',
        {"mcp-name": "code"},
    ),
    "space around the name": (
        request("prompts/get", {"name": "code"}),
        {"mcp-name": " code"},
    ),
    "another name": (request("prompts/get", {"name": "code"}), {"mcp-name": "other"}),
    # Longer values are left to header_mismatch, so the quick test remembers little.
    "long name": (request("prompts/get", {"name": "n" * 300}), {}),
    # Method and version are told plain together, so their lengths count together.
    "long method and version": (
        request("x/" + "m" * 150, meta={**META, next(iter(META)): "v" * 150}),
        {},
    ),
    "no name header": (request("prompts/get", {"name": "code"}), {"mcp-name": None}),
    "another method": (request("tools/list"), {"mcp-method": "tools/call"}),
    "another version": (request("tools/list"), {"mcp-protocol-version": "2025-11-25"}),
    "no version header": (request("tools/list"), {"mcp-protocol-version": None}),
    "no version in the body": (
        request("tools/list", meta={}),
        {"mcp-protocol-version": VERSION, "mcp-method": "tools/list"},
    ),
}


@pytest.mark.parametrize(("body", "changes"), NOT_PLAIN.values(), ids=NOT_PLAIN.keys())
def test_the_quick_test_leaves_anything_else_to_header_mismatch(
    body: bytes, changes: dict[str, str | None]
) -> None:
    try:
        headers = sent(body)
    except MirrorError:  # a request without a version to mirror
        headers = {}
    for name, value in changes.items():
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value
    assert quick(headers, body) is False


TRICKY = st.sampled_from(
    ["echo", "mixed", "plain", "=?base64?eA==?=", " echo", "echo ", 'a"b', "a\\b", "é", ""]
)


@st.composite
def mirrored_requests(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    """A request of a method with mirrored headers, and headers a client would send for
    it with at most one of them changed."""
    method = draw(st.sampled_from(["tools/call", "prompts/get", "resources/read", "tools/list"]))
    member = "uri" if method == "resources/read" else "name"
    value = draw(TRICKY | st.text(max_size=6) | st.integers())
    version = draw(st.sampled_from([VERSION, VERSION, "2025-11-25", " " + VERSION]))
    body = request(method, {member: value}, meta={**META, next(iter(META)): version})
    try:
        headers = sent(body)
    except MirrorError:
        headers = {"mcp-protocol-version": VERSION, "mcp-method": method}
    # Half of them unchanged: those are the ones the quick test may pass.
    header = draw(st.sampled_from(["mcp-protocol-version", "mcp-method", "mcp-name", *[None] * 3]))
    if header is not None:
        changed = draw(st.none() | TRICKY | st.sampled_from([VERSION, method, "tools/call"]))
        if changed is None:
            headers.pop(header, None)
        else:
            headers[header] = changed
    return body, headers


@given(mirrored_requests())
def test_the_quick_test_passes_only_what_header_mismatch_passes(
    case: tuple[bytes, dict[str, str]],
) -> None:
    body, headers = case
    if quick(headers, body):
        assert header_mismatch(headers, body, MIXED) is None


@given(BODY_JSON, HEADER_VALUES)
def test_the_quick_test_on_any_json_body(value: Any, headers: dict[str, str]) -> None:
    body = msgspec.json.encode(value)
    try:
        probe = PROBE_DECODER.decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return
    if plainly_mirrored(headers, probe, MIXED):
        assert header_mismatch(headers, body, MIXED) is None


@given(st.text(min_size=1), st.sampled_from(["tools/call", "prompts/get", "resources/read"]))
def test_the_quick_test_passes_a_plain_name_and_nothing_else_equal(name: str, method: str) -> None:
    member = "uri" if method == "resources/read" else "name"
    body = request(method, {member: name})
    headers = sent(body, tools())
    plain = name.isascii() and name.isprintable() and name == name.strip() and "\\" not in name
    plain = plain and '"' not in name and not name.startswith("=?base64?")
    # A plain name takes the quick path (sentinel-like ones aside, which are encoded).
    if plain and not name.endswith("?="):
        assert quick(headers, body, tools()) is True
    if quick(headers, body, tools()):
        assert header_mismatch(headers, body, tools()) is None


def test_deep_parameter_path() -> None:
    # As deep as the JSON decoder nests (about a thousand levels, as the codec does).
    depth = 500
    schema: dict[str, Any] = {"type": "string", "x-mcp-header": "Deep"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"d": schema}}
    arguments = b'{"d":' * depth + b'"bottom"' + b"}" * depth
    body = call({}, name="deep").replace(b'"arguments":{}', b'"arguments":' + arguments)
    params_of = tools(deep=schema)
    headers = request_headers(body, params_of)
    assert headers["Mcp-Param-Deep"] == "bottom"
    assert header_mismatch(lower(headers), body, params_of) is None
    tampered = {**lower(headers), "mcp-param-deep": "top"}
    assert "does not match" in (header_mismatch(tampered, body, params_of) or "")


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_a_task_request_mirrors_its_task_id_in_mcp_name(method: str) -> None:
    """The tasks extension (SEP-2663, Streamable HTTP: Routing Headers)."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    params = {"taskId": "t-42", "_meta": meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    headers = {k.lower(): v for k, v in request_headers(body).items()}
    assert headers["mcp-name"] == "t-42"
    assert header_mismatch(headers, body) is None
    reason = header_mismatch({**headers, "mcp-name": "t-43"}, body)
    assert reason is not None and "Mcp-Name" in reason
    missing = {k: v for k, v in headers.items() if k != "mcp-name"}
    assert "missing" in (header_mismatch(missing, body) or "")
