"""The codec of every revision: typed decoding, errors with paths, encoding."""

from __future__ import annotations

import enum
import json
from types import ModuleType
from typing import Any

import msgspec
import pytest

import mcpspec
from mcpspec.runtime import ErrorCode, ErrorResponse, InvalidMessage, ResultResponse

MODULES = {r: __import__(mcpspec.module_name(r), fromlist=["codec"]) for r in mcpspec.REVISIONS}
HANDSHAKE = [r for r in mcpspec.REVISIONS if r != "2026-07-28"]


@pytest.fixture(params=mcpspec.REVISIONS)
def rev(request: pytest.FixtureRequest) -> ModuleType:
    module: ModuleType = MODULES[request.param]
    return module


def test_codec_by_name() -> None:
    for revision in mcpspec.REVISIONS:
        assert mcpspec.codec(revision) is MODULES[revision].codec
        assert mcpspec.codec(revision).revision == revision
    with pytest.raises(ValueError, match="unsupported MCP revision '1999-01-01'; supported: 2024"):
        mcpspec.codec("1999-01-01")


def test_request_with_defaults_is_a_complete_wire_message(rev: ModuleType) -> None:
    request = rev.CallToolRequest(id=1, params=rev.CallToolRequestParams(name="echo"))
    wire = json.loads(rev.codec.encode(request))
    assert wire["jsonrpc"] == "2.0" and wire["id"] == 1 and wire["method"] == "tools/call"
    assert wire["params"]["name"] == "echo"
    decoded = rev.codec.decode(rev.codec.encode(request))
    assert decoded == request
    assert (decoded.id, decoded.method, decoded.params.name) == (1, "tools/call", "echo")


def test_notification_has_no_id(rev: ModuleType) -> None:
    note = rev.ProgressNotification(
        params=rev.ProgressNotificationParams(progress_token="t", progress=5, total=7.5)
    )
    wire = json.loads(rev.codec.encode(note))
    assert "id" not in wire and wire["method"] == "notifications/progress"
    assert wire["params"] == {"progressToken": "t", "progress": 5, "total": 7.5}


def test_numbers_keep_their_json_type(rev: ModuleType) -> None:
    data = (
        b'{"jsonrpc":"2.0","method":"notifications/progress",'
        b'"params":{"progressToken":1,"progress":50,"total":99.5}}'
    )
    decoded = rev.codec.decode(data)
    assert type(decoded.params.progress) is int and type(decoded.params.total) is float
    assert rev.codec.encode(decoded).count(b'"progress":50,') == 1


def test_wire_names_and_snake_case_attributes(rev: ModuleType) -> None:
    tool = rev.codec.decode_as(rev.Tool, b'{"name":"t","inputSchema":{"type":"object"}}')
    assert tool.input_schema == {"type": "object"}
    assert json.loads(rev.codec.encode(tool)) == {"name": "t", "inputSchema": {"type": "object"}}


OPEN = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"x": {"type": "number"}},
    "properties": {"a": {"$ref": "#/$defs/x"}},
    "x-vendor": [1, 2.5, None, True],
}


def test_open_objects_keep_every_key(rev: ModuleType) -> None:
    tool_result = {
        "_meta": {"com.example/trace": {"id": [1, 2]}, "progressToken": 3},
        "content": [{"type": "text", "text": "hi", "_meta": {"k": None}}],
        "structuredContent": {"deep": {"er": [1.5, None]}},
    }
    if rev.REVISION < "2025-06-18":  # both came with 2025-06-18
        del tool_result["structuredContent"]
        del tool_result["content"][0]["_meta"]
    if rev.REVISION == "2026-07-28":
        tool_result["resultType"] = "complete"
    raw = json.dumps(tool_result).encode()
    assert json.loads(rev.codec.encode(rev.codec.decode_result("tools/call", raw))) == tool_result
    tool = rev.codec.decode_as(rev.Tool, json.dumps({"name": "t", "inputSchema": OPEN}).encode())
    assert tool.input_schema == OPEN
    args = {"nested": {"any": [1, {"b": None}]}, "f": 1.0}
    params = rev.codec.decode_as(
        rev.CallToolRequestParams, json.dumps({"name": "n", "arguments": args}).encode()
    )
    assert params.arguments == args
    caps = {"experimental": {"x": {"y": [1, 2.5, None]}}}
    assert (
        rev.codec.decode_as(rev.ServerCapabilities, json.dumps(caps).encode()).experimental
        == (caps["experimental"])
    )
    error = b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m","data":{"a":[1,null]}}}'
    decoded = rev.codec.decode(error)
    assert isinstance(decoded, ErrorResponse) and decoded.error.data == {"a": [1, None]}


def test_unknown_fields_are_ignored_never_an_error(rev: ModuleType) -> None:
    data = (
        b'{"jsonrpc":"2.0","id":"a","method":"tools/call","newField":1,'
        b'"params":{"name":"x","title":"newer","execution":{"taskSupport":"optional"}}}'
    )
    decoded = rev.codec.decode(data)
    assert decoded.params.name == "x" and decoded.id == "a"
    tool = rev.codec.decode_as(rev.Tool, b'{"name":"t","inputSchema":{},"futureField":[1]}')
    assert tool.name == "t"


BAD: list[tuple[bytes, ErrorCode, str]] = [
    (b'{"jsonrpc":"2.0","id":1,', ErrorCode.PARSE_ERROR, "$"),
    (b"not json", ErrorCode.PARSE_ERROR, "$"),
    (b'"a string"', ErrorCode.INVALID_REQUEST, "$"),
    (b'{"id":1,"method":"ping"}', ErrorCode.INVALID_REQUEST, "$.jsonrpc"),
    (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', ErrorCode.INVALID_REQUEST, "$.jsonrpc"),
    (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', ErrorCode.INVALID_REQUEST, "$.id"),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', ErrorCode.INVALID_REQUEST, "$.id"),
    (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', ErrorCode.INVALID_REQUEST, "$.id"),
    (b'{"jsonrpc":"2.0","id":1,"method":7}', ErrorCode.INVALID_REQUEST, "$.method"),
    (b'{"jsonrpc":"2.0","id":1,"method":"no/such"}', ErrorCode.METHOD_NOT_FOUND, "$.method"),
    (b'{"jsonrpc":"2.0","method":"no/such"}', ErrorCode.METHOD_NOT_FOUND, "$.method"),
    (
        b'{"jsonrpc":"2.0","id":2,"method":"notifications/cancelled","params":{"requestId":1}}',
        ErrorCode.METHOD_NOT_FOUND,
        "$.method",
    ),
    (
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}',
        ErrorCode.METHOD_NOT_FOUND,
        "$.method",
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}',
        ErrorCode.INVALID_PARAMS,
        "$.params.name",
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}',
        ErrorCode.INVALID_PARAMS,
        "$.params",
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[]}}',
        ErrorCode.INVALID_PARAMS,
        "$.params.arguments",
    ),
    (b'{"jsonrpc":"2.0","id":1}', ErrorCode.INVALID_REQUEST, "$"),
    (b'{"jsonrpc":"2.0","result":{}}', ErrorCode.INVALID_REQUEST, "$.id"),
    (b'{"jsonrpc":"2.0","id":null,"result":{}}', ErrorCode.INVALID_REQUEST, "$.id"),
    (
        b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}',
        ErrorCode.INVALID_REQUEST,
        "$",
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}',
        ErrorCode.INVALID_REQUEST,
        "$.error.code",
    ),
]


@pytest.mark.parametrize(("data", "code", "path"), BAD, ids=[b[0].decode()[:60] for b in BAD])
def test_bad_input_is_one_typed_error_with_code_and_path(
    rev: ModuleType, data: bytes, code: ErrorCode, path: str
) -> None:
    with pytest.raises(InvalidMessage) as caught:
        rev.codec.decode(data)
    error = caught.value
    assert (error.code, error.path) == (code, path), error
    assert error.reason and error.data == {"path": path, "reason": error.reason}


def test_error_knows_the_request_id_and_method() -> None:
    codec = mcpspec.codec("2025-06-18")
    with pytest.raises(InvalidMessage) as caught:
        codec.decode(b'{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":1}}')
    assert (caught.value.id, caught.value.method) == ("r1", "tools/call")
    assert caught.value.message == "Invalid params"


#: Messages that do not parse, and the id of the request each answers (``None``: it
#: answers none, or nothing readable says which).
UNPARSED = [
    # Python's json writes a lone surrogate as an escape; msgspec refuses it.
    (b'{"jsonrpc": "2.0", "id": 1, "result": {"text": "\\ud800"}}', 1),
    (b'{"jsonrpc":"2.0","id":"r","error":{"code":1,"message":"\\ud800x"}}', "r"),
    (b'{"jsonrpc":"2.0","id":1,"result":"\\ud800"}', 1),
    (b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * 5000 + b"]" * 5000 + b"}", 1),
    (b' {\n "id" : 7 ,\t"result": {"a": 1}', 7),  # cut short
    # Not a response, or not one whose id can be read.
    (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\\ud800"}}', None),
    (b'{"jsonrpc":"2.0","result":' + b"[" * 5000 + b"]" * 5000 + b',"id":1}', None),
    (b'{"jsonrpc":"2.0","id":true,"result":"\\ud800"}', None),
    (b'{"jsonrpc":"2.0","id":1.5,"result":"\\ud800"}', None),
    (b'{"jsonrpc":"2.0","id":1,"params":"\\ud800"}', None),
    (b'[{"jsonrpc":"2.0","id":1,"result":"\\ud800"}]', None),
    (b'{"pad":"' + b"x" * 5000 + b'","id":1,"result":"\\ud800"}', None),  # past the window
]


@pytest.mark.parametrize(("data", "answers"), UNPARSED)
def test_a_response_that_does_not_parse_names_the_request_it_answers(
    rev: ModuleType, data: bytes, answers: Any
) -> None:
    with pytest.raises(InvalidMessage) as caught:
        rev.codec.decode(data)
    error = caught.value
    assert error.code == ErrorCode.PARSE_ERROR and error.path == "$"
    assert error.id == answers
    assert error.answerable is (answers is None)  # a response is never answered
    assert error.method is None


def test_a_lone_surrogate_escape_is_named() -> None:
    with pytest.raises(InvalidMessage) as caught:
        mcpspec.codec("2025-11-25").decode(UNPARSED[0][0])
    assert "lone surrogate escape \\ud800 (byte 48)" in caught.value.reason
    with pytest.raises(InvalidMessage, match="truncated"):
        mcpspec.codec("2025-11-25").decode(b'{"jsonrpc":"2.0","id":1,"result":"\\\\ud800')


def test_responses_keep_result_raw_until_typed(rev: ModuleType) -> None:
    data = b'{"jsonrpc":"2.0","id":9,"result":{"tools":[{"name":"a","inputSchema":{}}]}}'
    if rev.REVISION == "2026-07-28":
        data = data.replace(
            b'{"tools"', b'{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools"'
        )
    response = rev.codec.decode(data)
    assert isinstance(response, ResultResponse) and response.id == 9
    assert isinstance(response.result, msgspec.Raw)
    result = rev.codec.decode_result("tools/list", response.result)
    assert isinstance(result, rev.ListToolsResult) and result.tools[0].name == "a"
    with pytest.raises(InvalidMessage) as caught:
        rev.codec.decode_result("tools/list", b'{"tools":[{"name":1}]}')
    assert caught.value.path in ("$.result.tools[0].name", "$.result.tools[0]")


def test_response_whose_result_mentions_method_still_decodes(rev: ModuleType) -> None:
    data = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\\"method\\""}]}}'
    response = rev.codec.decode(data)
    assert isinstance(response, ResultResponse)
    assert bytes(response.result).startswith(b'{"content"')


def test_null_id_error_response_decodes(rev: ModuleType) -> None:
    response = rev.codec.decode(
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'
    )
    assert isinstance(response, ErrorResponse) and response.id is None
    assert response.error.code == ErrorCode.PARSE_ERROR


def test_result_type_table_follows_request_names(rev: ModuleType) -> None:
    assert rev.codec.result_type("tools/call") is not None
    if rev.REVISION == "2026-07-28":
        assert set(rev.RESULTS["tools/call"].__args__) == {
            rev.InputRequiredResult,
            rev.CallToolResult,
        }
        assert rev.RESULTS["server/discover"] is rev.DiscoverResult
    else:
        assert rev.RESULTS["tools/call"] is rev.CallToolResult
        assert rev.RESULTS["initialize"] is rev.InitializeResult
        assert rev.RESULTS["ping"] is rev.EmptyResult
    with pytest.raises(KeyError, match="no result type for 'no/such'"):
        rev.codec.result_type("no/such")


def test_task_augmented_requests_answer_create_task_result() -> None:
    rev = MODULES["2025-11-25"]
    assert set(rev.TASK_RESULTS) == {"tools/call", "sampling/createMessage", "elicitation/create"}
    raw = (
        b'{"task":{"taskId":"t1","status":"working","createdAt":"2025-01-01T00:00:00Z",'
        b'"lastUpdatedAt":"2025-01-01T00:00:00Z","ttl":null}}'
    )
    result = rev.codec.decode_result("tools/call", raw, task=True)
    assert isinstance(result, rev.CreateTaskResult) and result.task.task_id == "t1"


def test_stateless_results_by_result_type() -> None:
    rev = MODULES["2026-07-28"]
    complete = rev.codec.decode_result("tools/call", b'{"resultType":"complete","content":[]}')
    assert isinstance(complete, rev.CallToolResult) and complete.result_type == "complete"
    legacy = rev.codec.decode_result("tools/call", b'{"content":[]}')  # an older peer
    assert isinstance(legacy, rev.CallToolResult)
    assert b'"resultType":"complete"' in rev.codec.encode(legacy)
    more = rev.codec.decode_result(
        "tools/call",
        b'{"resultType":"input_required","requestState":"s",'
        b'"inputRequests":{"a":{"method":"roots/list"}}}',
    )
    assert isinstance(more, rev.InputRequiredResult)
    assert isinstance(more.input_requests["a"], rev.ListRootsRequest)
    with pytest.raises(InvalidMessage, match="resultType"):
        rev.codec.decode_result("tools/call", b'{"resultType":"later","content":[]}')


def test_merged_unions_check_membership() -> None:
    rev = MODULES["2025-11-25"]
    text = rev.codec.decode_as(rev.TextOrBlobResourceContents, b'{"uri":"a:b","text":"t"}')
    assert text.text == "t"
    with pytest.raises(InvalidMessage) as caught:
        rev.codec.decode_result("resources/read", b'{"contents":[{"uri":"a:b"}]}')
    assert caught.value.path == "$.result.contents[0]"
    assert "missing text" in caught.value.reason and "missing blob" in caught.value.reason
    with pytest.raises(ValueError, match="matches none"):
        rev.TextOrBlobResourceContents(uri="a:b")
    form = rev.codec.decode_as(
        rev.ElicitRequestParams,
        b'{"message":"m","requestedSchema":{"type":"object","properties":{}}}',
    )
    assert form.mode is msgspec.UNSET  # mode may be absent: a form
    with pytest.raises(InvalidMessage, match="ElicitRequestURLParams"):
        rev.codec.decode_as(rev.ElicitRequestParams, b'{"message":"m","mode":"url"}')


def test_merged_union_fast_check_defers_to_the_full_check() -> None:
    """The generated inline test of each member accepts only exact classes; a value it
    passes over goes to ``check_members``, which decides with ``isinstance``."""
    rev = MODULES["2025-11-25"]

    class Level(enum.IntEnum):
        HIGH = 3

    # An int subclass: not an exact int, still an integer schema's default.
    schema = rev.PrimitiveSchemaDefinition(type="integer", default=Level.HIGH)
    assert schema.default == 3
    # A bool is never a number, whichever path looks at it.
    with pytest.raises(ValueError, match="NumberSchema \\(default is not int or float\\)"):
        rev.PrimitiveSchemaDefinition(type="number", default=True)
    with pytest.raises(InvalidMessage, match="default is not bool") as caught:
        rev.codec.decode_as(
            rev.ElicitRequestParams,
            b'{"message":"m","requestedSchema":{"type":"object",'
            b'"properties":{"ok":{"type":"boolean","default":"yes"}}}}',
        )
    assert caught.value.path == "$.requestedSchema.properties[...]"  # msgspec: a dict value


def test_owned_unions_in_decode_as(rev: ModuleType) -> None:
    data = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
    assert rev.codec.decode_as(rev.JSONRPCMessage, data).method == "tools/list"
    # JSONRPCResponse is a union from 2025-11-25 on, an object before.
    reason = "not a response" if rev.REVISION >= "2025-11-25" else "missing required field `result`"
    with pytest.raises(InvalidMessage, match=reason):
        rev.codec.decode_as(rev.JSONRPCResponse, data)
    with pytest.raises(TypeError, match="decode_result"):
        rev.codec.decode_as(rev.ServerResult, b"{}")


def test_batches_only_in_2025_03_26(rev: ModuleType) -> None:
    batch = b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":5},7]'
    if rev.REVISION != "2025-03-26":
        with pytest.raises(InvalidMessage, match="batches are not allowed") as caught:
            rev.codec.decode(batch)
        assert caught.value.code == ErrorCode.INVALID_REQUEST
        return
    ping, bad_method, not_object = rev.codec.decode(batch)
    assert isinstance(ping, rev.PingRequest)
    assert isinstance(bad_method, InvalidMessage) and bad_method.path == "$[1].method"
    assert isinstance(not_object, InvalidMessage) and not_object.path == "$[2]"
    with pytest.raises(InvalidMessage, match="empty"):
        rev.codec.decode(b"[]")


def test_encode_omits_unset_and_writes_constants(rev: ModuleType) -> None:
    value: Any = rev.TextContent(text="hi")
    assert json.loads(rev.codec.encode(value)) == {"type": "text", "text": "hi"}
    assert rev.codec.encode(ResultResponse(id=1, result=value)) == (
        b'{"id":1,"result":{"type":"text","text":"hi"},"jsonrpc":"2.0"}'
    )


@pytest.mark.parametrize(
    "data",
    [
        b'{"method":"tools/list","params":{},"id":3,"jsonrpc":"2.0"}',
        b' {"jsonrpc" : "2.0", "id": 3, "method": "tools/list", "params": {}}',
        b'{"id":3,"jsonrpc":"2.0","method":"tools/list","params":{}}',
    ],
)
def test_member_order_and_whitespace_do_not_matter(rev: ModuleType, data: bytes) -> None:
    message = rev.codec.decode(data)
    assert (message.id, message.method) == (3, "tools/list")


def test_large_responses_decode_whatever_the_member_order(rev: ModuleType) -> None:
    tools = [{"name": f"t{i}", "description": "d" * 40, "inputSchema": {}} for i in range(100)]
    result: dict[str, Any] = {"tools": tools}
    if rev.REVISION == "2026-07-28":
        result.update(resultType="complete", ttlMs=0, cacheScope="public")
    early = json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode()
    late = json.dumps({"result": result, "id": 1, "jsonrpc": "2.0"}).encode()
    assert len(early) > 4096
    for data in (early, late):
        response = rev.codec.decode(data)
        assert isinstance(response, ResultResponse) and response.id == 1
        assert len(rev.codec.decode_result("tools/list", response.result).tools) == 100
    with pytest.raises(InvalidMessage) as caught:
        rev.codec.decode(early.replace(b'"jsonrpc": "2.0"', b'"jsonrpc": "1.0"'))
    assert caught.value.path == "$.jsonrpc"


def test_error_response_without_id_only_where_the_schema_allows(rev: ModuleType) -> None:
    data = b'{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}'
    if rev.REVISION >= "2025-11-25":  # JSONRPCErrorResponse.id became optional
        response = rev.codec.decode(data)
        assert isinstance(response, ErrorResponse) and response.id is msgspec.UNSET
        assert json.loads(rev.codec.encode(response)) == json.loads(data)  # still no id
    else:
        with pytest.raises(InvalidMessage, match="needs the request's id"):
            rev.codec.decode(data)


def test_merged_union_members_restrict_enumerations() -> None:
    rev = MODULES["2025-11-25"]
    with pytest.raises(InvalidMessage, match="NumberSchema \\(type is not 'integer' or 'number'"):
        rev.codec.decode_as(rev.PrimitiveSchemaDefinition, b'{"type":"string","minLength":true}')
    number = rev.codec.decode_as(rev.PrimitiveSchemaDefinition, b'{"type":"number","minimum":1.5}')
    assert number.minimum == 1.5
    # `default` is typed per member: a boolean schema's default is a boolean.
    with pytest.raises(InvalidMessage, match="BooleanSchema \\(default is not bool\\)"):
        rev.codec.decode_as(rev.PrimitiveSchemaDefinition, b'{"type":"boolean","default":3}')


def test_decode_response_types_the_result_in_one_pass(rev: ModuleType) -> None:
    result: dict[str, Any] = {"content": [{"type": "text", "text": "hi"}], "isError": False}
    if rev.REVISION == "2026-07-28":
        result["resultType"] = "complete"
    for data in (
        json.dumps({"jsonrpc": "2.0", "id": 4, "result": result}).encode(),
        json.dumps({"result": result, "jsonrpc": "2.0", "id": 4}).encode(),
    ):
        response = rev.codec.decode_response(data, "tools/call")
        assert isinstance(response, ResultResponse) and response.id == 4
        assert isinstance(response.result, rev.CallToolResult)
        assert response.result.content[0].text == "hi"
    error = b'{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"bad"}}'
    assert isinstance(rev.codec.decode_response(error, "tools/call"), ErrorResponse)
    # A result that does not fit the method is the codec's error, with its path.
    with pytest.raises(InvalidMessage) as caught:
        rev.codec.decode_response(b'{"jsonrpc":"2.0","id":4,"result":{"content":7}}', "tools/call")
    assert caught.value.path == "$.result.content"
    # Not a response at all: decoded as decode() does.
    data = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
    assert rev.codec.decode_response(data, "tools/call").method == "tools/list"
    with pytest.raises(KeyError, match="no result type for 'no/such'"):
        rev.codec.decode_response(error, "no/such")


@pytest.mark.parametrize("pad", [0, 4096], ids=["small", "large"])
def test_result_unions_decode_alike_at_every_size(pad: int) -> None:
    """A 2026-07-28 result union is tried as the union first when small and as its
    complete member first when large: both orders give the same values and errors."""
    rev = MODULES["2026-07-28"]
    meta = {"pad": "x" * pad}

    def raw(**result: Any) -> bytes:
        return json.dumps({**result, "_meta": meta}).encode()

    def response(result: bytes) -> bytes:
        return b'{"jsonrpc":"2.0","id":9,"result":' + result + b"}"

    cases = {
        raw(resultType="complete", content=[]): rev.CallToolResult,
        raw(content=[]): rev.CallToolResult,  # an older peer's, without resultType
        raw(resultType="input_required", inputRequests={"a": {"method": "roots/list"}}): (
            rev.InputRequiredResult
        ),
    }
    for result, expected in cases.items():
        assert (len(result) > 2048) == bool(pad)
        assert type(rev.codec.decode_result("tools/call", result)) is expected
        answer = rev.codec.decode_response(response(result), "tools/call")
        assert isinstance(answer, ResultResponse) and type(answer.result) is expected
    for result, path in (
        (raw(resultType="complete", content=7), "$.result.content"),
        (raw(content=7), "$.result.content"),
        (raw(resultType="input_required", inputRequests=7), "$.result.inputRequests"),
    ):
        with pytest.raises(InvalidMessage) as caught:
            rev.codec.decode_result("tools/call", result)
        assert caught.value.path == path
        with pytest.raises(InvalidMessage) as caught:
            rev.codec.decode_response(response(result), "tools/call")
        assert caught.value.path == path
    with pytest.raises(InvalidMessage, match="resultType"):
        rev.codec.decode_result("tools/call", raw(resultType="later", content=[]))


def test_legacy_result_without_result_type_in_one_pass() -> None:
    rev = MODULES["2026-07-28"]
    response = rev.codec.decode_response(
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}', "tools/call"
    )
    assert isinstance(response.result, rev.CallToolResult)


def test_completion_values_are_bounded_as_the_schema_says() -> None:
    """2026-07-28 bounds ``completion.values`` with ``maxItems: 100``."""
    codec = mcpspec.codec("2026-07-28")

    def result(count: int) -> bytes:
        values = ",".join(f'"v{i}"' for i in range(count))
        body = f'{{"resultType": "complete", "completion": {{"values": [{values}]}}}}'
        return body.encode()

    assert len(codec.decode_result("completion/complete", result(100)).completion.values) == 100
    with pytest.raises(InvalidMessage) as refused:
        codec.decode_result("completion/complete", result(101))
    assert refused.value.path == "$.result.completion.values"
