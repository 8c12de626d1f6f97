"""``mcpspec validate``: recorded traffic replayed through the sessions of its revision.

On the project's own transcripts the findings are exactly the deviations the transcript
tests already list, each filed under the check it breaks:

* ``OFF_REVISION`` (tests/test_transcripts.py): values of a newer revision sent by
  server-everything (resource_link content, 2025-11-25 elicitation forms) fail
  ``schema.message``, against the server, at the listed line and JSON path;
* requests both sides refuse (tests/test_session_transcripts.py): a request of a method
  the negotiated revision lacks fails ``schema.message`` against its sender (the SDK
  client's ``ping`` in 2026-07-28; ``elicitation/create`` sent to a 2024-11-05 or
  2025-03-26 client, by the SDK server and by server-everything), but the opening
  ``server/discover`` probe of an ``auto`` client is how negotiation works: it is the
  passed ``protocol.negotiation`` finding, at the probe's line;
* ``UNANSWERED`` (tests/test_transcripts.py): requests left open at the end are
  ``protocol.responses`` warnings against the server (over Streamable HTTP a 2026-07-28
  client cancels by closing the stream, which a transcript cannot show).

The recorder's deliberate ``no/such/method`` requests are no deviation: asking for an
unknown method is allowed, and the server answered -32601 as it must.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpspec.check import Outcome
from mcpspec.check import validate as validate_module
from mcpspec.check.validate import (
    TranscriptError,
    read_recording,
    validate_file,
    validate_files,
)

from .conftest import TRANSCRIPTS_DIR
from .transcript_kit import INIT, INIT_RESULT, INITIALIZED, OFF_REVISION, OPENING, UNANSWERED

FILES = sorted(TRANSCRIPTS_DIR.glob("*/*.jsonl"))
FAILED, WARNING, PASSED = Outcome.FAILED, Outcome.WARNING, Outcome.PASSED

_ELICIT = "server broke method-not-found: unknown method 'elicitation/create'"
_PING = "client broke method-not-found: unknown method 'ping'"
_LINK = "server broke invalid-result"
_FORM = "server broke invalid-params"

#: transcript -> {(where, check, outcome, start of why)}: every finding that is not a
#: plain pass of a check, and nothing else.
EXPECTED: dict[str, set[tuple[str, str, Outcome, str]]] = {
    "2024-11-05/everything": {
        ("line 32: $.result.content[1].type", "schema.message", FAILED, _LINK),
        # Lines 47 and 51: the same cause, one finding counted twice.
        ("line 47: $.method", "schema.message", FAILED, _ELICIT),
    },
    "2025-03-26/everything": {
        ("line 32: $.result.content[1].type", "schema.message", FAILED, _LINK),
        # Lines 47 and 51: the same cause, one finding counted twice.
        ("line 47: $.method", "schema.message", FAILED, _ELICIT),
    },
    "2025-06-18/everything": {
        (
            "line 47: $.params.requestedSchema.properties.untitledMultipleSelectEnum.type",
            "schema.message",
            FAILED,
            _FORM,
        ),
        ("line 51: $.params", "schema.message", FAILED, _FORM),
    },
    "2024-11-05/python-sdk": {("line 36: $.method", "schema.message", FAILED, _ELICIT)},
    "2025-03-26/python-sdk": {("line 36: $.method", "schema.message", FAILED, _ELICIT)},
    "2025-03-26/python-sdk-http": {("line 36: $.method", "schema.message", FAILED, _ELICIT)},
    "2026-07-28/python-sdk": {("line 4: $.method", "schema.message", FAILED, _PING)},
    "2026-07-28/python-sdk-http": {
        ("line 4: $.method", "schema.message", FAILED, _PING),
        ("line 44: $.id", "protocol.responses", WARNING, "server never answered tools/call"),
        (
            "line 71: $.id",
            "protocol.responses",
            WARNING,
            "server never answered subscriptions/listen",
        ),
    },
    "2025-11-25/everything-auto": {
        (
            "line 2",
            "protocol.negotiation",
            PASSED,
            "negotiated 2025-11-25 (initialize at line 4); the client's server/discover "
            "probe was refused with -32601",
        )
    },
}


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _notable(findings: Any) -> set[tuple[str, str, Outcome, str]]:
    """Findings other than a plain pass (no place), with ``why`` cut to the expected."""
    return {(f.where, f.check, f.outcome, f.why) for f in findings if f.problem or f.where}


def _matches(
    found: set[tuple[str, str, Outcome, str]], expected: set[tuple[str, str, Outcome, str]]
) -> bool:
    if len(found) != len(expected):
        return False
    remaining = set(found)
    for where, check, outcome, why in expected:
        hit = next(
            (f for f in remaining if f[:3] == (where, check, outcome) and f[3].startswith(why)),
            None,
        )
        if hit is None:
            return False
        remaining.remove(hit)
    return True


def test_expected_table_covers_the_listed_deviations() -> None:
    # Every deviation the transcript tests list has its row here, at the same place (the
    # checker names the key a decoder's ``[...]`` stands for).
    for (name, path), _reason in OFF_REVISION.items():
        pattern = re.escape(path).replace(re.escape("[...]"), r"(\.[^.\[]+|\[\S+\])") + "$"
        assert any(
            re.search(pattern, where) and check == "schema.message"
            for where, check, _, _ in EXPECTED[name]
        ), (name, path)
    for name, (methods, _reason) in UNANSWERED.items():
        unanswered = {why.split()[3] for _, _, outcome, why in EXPECTED[name] if outcome is WARNING}
        assert unanswered == methods


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_transcript_findings_are_exactly_the_known_deviations(path: Path) -> None:
    report = validate_file(path)
    header = json.loads(path.read_bytes().splitlines()[0])["header"]
    assert report.revision == header["revision"]
    assert report.source == str(path)
    assert report.accepted is True and report.stopped == ""
    found = _notable(report.findings)
    expected = EXPECTED.get(_name(path), set())
    assert _matches(found, expected), sorted(found)
    # Every judged check is there exactly once when it passed.
    passed = [f.check for f in report.findings if f.outcome is PASSED]
    assert len(passed) == len(set(passed))
    problems = {f.check for f in report.findings if f.problem}
    assert set(validate_module.JUDGED) <= set(passed) | problems
    assert all(f.revision == header["revision"] for f in report.findings)


def test_unknown_method_probe_is_counted_as_passed() -> None:
    report = validate_file(TRANSCRIPTS_DIR / "2025-06-18" / "python-sdk.jsonl")
    (finding,) = [f for f in report.findings if f.check == "protocol.unknown-method"]
    assert finding.outcome is PASSED
    assert finding.why.endswith("-32601: 1")


def _plain(path: Path, tmp_path: Path) -> Path:
    """The transcript as a plain log: its messages, one per line, no header."""
    lines = path.read_bytes().splitlines()[1:]
    out = tmp_path / f"{path.parent.name}-{path.stem}.log"
    out.write_bytes(b"\n".join(json.dumps(json.loads(line)["message"]).encode() for line in lines))
    return out


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_plain_log_directions_and_findings_match_the_transcript(path: Path, tmp_path: Path) -> None:
    log = _plain(path, tmp_path)
    transcript, plain = read_recording(path), read_recording(log)
    assert plain.kind == "log" and transcript.kind == "transcript"
    assert plain.revision == transcript.revision
    assert [e.side for e in plain.entries] == [e.side for e in transcript.entries]
    # Same findings, one line up (no header line).
    shifted = {
        (_shift(where), check, outcome, _shift(why))
        for where, check, outcome, why in _notable(validate_file(path).findings)
    }
    assert _notable(validate_file(log).findings) == shifted


def _shift(text: str) -> str:
    import re

    return re.sub(r"line (\d+)", lambda m: f"line {int(m.group(1)) - 1}", text)


# -- hand-made recordings ----------------------------------------------------------------------


def _transcript(tmp_path: Path, *messages: tuple[str, Any], header: bool = True) -> Path:
    lines = [json.dumps({"header": {"revision": "2025-06-18"}})] if header else []
    lines += [json.dumps({"from": side, "message": message}) for side, message in messages]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _problems(path: Path) -> set[tuple[str, str, Outcome, str]]:
    return {(f.where, f.check, f.outcome, f.why) for f in validate_file(path).findings if f.problem}


def test_clean_handmade_transcript_has_no_problem(tmp_path: Path) -> None:
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    path = _transcript(
        tmp_path, *OPENING, ("client", ping), ("server", {"jsonrpc": "2.0", "id": 2, "result": {}})
    )
    report = validate_file(path)
    assert not [f for f in report.findings if f.problem]
    assert report.accepted is True


def test_result_for_a_notification_is_a_responses_failure(tmp_path: Path) -> None:
    stray = {"jsonrpc": "2.0", "id": 7, "result": {}}
    path = _transcript(tmp_path, *OPENING, ("server", stray))
    ((where, check, outcome, why),) = _problems(path)
    assert (where, check, outcome) == ("line 5: $.id", "protocol.responses", FAILED)
    assert why.startswith("server broke unknown-response-id")


def test_duplicate_response_is_a_responses_failure(tmp_path: Path) -> None:
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    pong = {"jsonrpc": "2.0", "id": 2, "result": {}}
    path = _transcript(tmp_path, *OPENING, ("client", ping), ("server", pong), ("server", pong))
    ((where, check, outcome, why),) = _problems(path)
    assert (where, check, outcome) == ("line 7: $.id", "protocol.responses", FAILED)
    assert why.startswith("server broke unknown-response-id")


def test_missing_server_info_is_a_schema_failure(tmp_path: Path) -> None:
    result = json.loads(json.dumps(INIT_RESULT))
    del result["result"]["serverInfo"]
    path = _transcript(tmp_path, ("client", INIT), ("server", result), ("client", INITIALIZED))
    problems = _problems(path)
    assert ("line 3: $.result", "schema.message", FAILED) in {p[:3] for p in problems}
    assert all(p[3].startswith("server broke") for p in problems)


def test_client_breaking_a_rule_is_named(tmp_path: Path) -> None:
    early = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    refusal = {"jsonrpc": "2.0", "id": 5, "error": {"code": -32600, "message": "not yet"}}
    path = _transcript(tmp_path, ("client", early), ("server", refusal), *OPENING)
    ((where, check, outcome, why),) = _problems(path)
    assert (where, check, outcome) == ("line 2: $.method", "protocol.lifecycle", WARNING)
    assert why.startswith("client broke not-initialized")


def test_unknown_method_answered_with_the_wrong_code(tmp_path: Path) -> None:
    ask = {"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}
    wrong = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "nope"}}
    path = _transcript(tmp_path, *OPENING, ("client", ask), ("server", wrong))
    ((where, check, outcome, why),) = _problems(path)
    assert (where, check, outcome) == ("line 6: $.error.code", "protocol.unknown-method", FAILED)
    assert "-32000, not -32601" in why


def test_unknown_methods_refused_in_one_batch_are_each_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3,000 requests for an unknown method, refused by one batch answer (over the batch
    limit, which is the server's own violation): each refusal is the right code, found
    in the answer read once (it used to be decoded again for every request)."""
    asks = [("client", {"jsonrpc": "2.0", "id": n, "method": "no/such"}) for n in range(2, 3002)]
    refusal = {"code": -32601, "message": "no"}
    batch = [{"jsonrpc": "2.0", "id": n, "error": refusal} for n in range(2, 3002)]
    path = _transcript(tmp_path, *OPENING, *asks, ("server", batch))
    peek = validate_module._peek
    decoded: list[bytes] = []
    monkeypatch.setattr(validate_module, "_peek", lambda data: decoded.append(data) or peek(data))
    (counted,) = [f for f in validate_file(path).findings if f.check == "protocol.unknown-method"]
    assert max(Counter(decoded).values()) <= 4  # the batch too, not once per request
    assert counted.outcome is PASSED
    assert counted.why.endswith("-32601: 3000")
    batch[5]["error"] = {"code": -32000, "message": "wrong"}
    path = _transcript(tmp_path, *OPENING, *asks, ("server", batch))
    (wrong,) = [f for f in validate_file(path).findings if f.check == "protocol.unknown-method"]
    assert wrong.outcome is FAILED
    assert wrong.where == f"line {5 + len(asks)}: $.error.code"
    assert "-32000, not -32601" in wrong.why


def test_progress_going_backwards(tmp_path: Path) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "t", "_meta": {"progressToken": "p"}},
    }

    def progress(value: int) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "p", "progress": value},
        }

    done = {"jsonrpc": "2.0", "id": 2, "result": {"content": []}}
    path = _transcript(
        tmp_path,
        *OPENING,
        ("client", call),
        ("server", progress(2)),
        ("server", progress(1)),
        ("server", done),
    )
    ((where, check, outcome, why),) = _problems(path)
    assert (where[:7], check, outcome) == ("line 7:", "protocol.progress", FAILED)
    assert why.startswith("server broke progress-not-increasing")


def test_unanswered_request_is_a_warning_at_its_line(tmp_path: Path) -> None:
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    path = _transcript(tmp_path, *OPENING, ("client", ping))
    ((where, check, outcome, why),) = _problems(path)
    assert (where, check, outcome) == ("line 5: $.id", "protocol.responses", WARNING)
    assert why.startswith("server never answered ping (id 9)")


def test_cancelled_request_needs_no_answer(tmp_path: Path) -> None:
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
    path = _transcript(tmp_path, *OPENING, ("client", ping), ("client", cancel))
    assert _problems(path) == set()


def test_handshake_without_initialize_is_stopped(tmp_path: Path) -> None:
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    report = validate_file(_transcript(tmp_path, ("client", ping)))
    assert report.accepted is False
    assert "no initialize" in report.stopped
    assert report.findings == []


def test_revision_comes_from_the_exchange_without_header(tmp_path: Path) -> None:
    path = _transcript(tmp_path, *OPENING, header=False)
    recording = read_recording(path)
    assert recording.revision == "2025-06-18" and recording.header == {}


def test_plain_log_with_a_banner_line(tmp_path: Path) -> None:
    path = tmp_path / "stdio.log"
    lines = [json.dumps(INIT), "Server listening\x1b[0m", json.dumps(INIT_RESULT)]
    path.write_text("\n".join([*lines, json.dumps(INITIALIZED)]) + "\n")
    report = validate_file(path)
    ((where, check, outcome, why),) = {
        (f.where, f.check, f.outcome, f.why) for f in report.findings if f.problem
    }
    assert (where, check, outcome) == ("line 2", "wire.message", FAILED)
    assert "not JSON" in why
    assert [e.side for e in read_recording(path).entries] == ["client", "server", "client"]


def test_plain_log_infers_server_requests_and_their_answers(tmp_path: Path) -> None:
    result = json.loads(json.dumps(INIT_RESULT))
    init = json.loads(json.dumps(INIT))
    init["params"]["capabilities"] = {"roots": {}}
    ask = {"jsonrpc": "2.0", "id": 1, "method": "roots/list"}
    roots = {"jsonrpc": "2.0", "id": 1, "result": {"roots": []}}
    path = tmp_path / "stdio.log"
    path.write_text(
        "\n".join(json.dumps(m) for m in (init, result, INITIALIZED, ask, roots)) + "\n"
    )
    recording = read_recording(path)
    assert [e.side for e in recording.entries] == ["client", "server", "client", "server", "client"]
    assert not [f for f in validate_file(path).findings if f.problem]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"\n\n", "empty file"),
        (b"hello\nworld\n", "no line is a JSON object"),
        (b'{"header": {"revision": "2025-06-18"}}\n', "no messages"),
        (b'{"header": 3}\n', "line 1: the header is not an object"),
        (b'{"header": {"revision": "1999-01-01"}}\n', "line 1: unknown revision '1999-01-01'"),
        (b'{"header": {}}\n{"from": "client", "message": {}}\nnot json\n', "line 3: not a"),
        (b'{"from": "client", "message": {}}\n{"from": "proxy", "message": {}}\n', "line 2"),
        (b'{"from": "client"}\n', 'line 1: no "message"'),
        (
            b'{"header": {"revision": "2025-03-26"}}\n'
            + json.dumps({"from": "client", "message": INIT}).encode()
            + b"\n"
            + json.dumps({"from": "server", "message": INIT_RESULT}).encode(),
            "the header names revision 2025-03-26, but the initialize exchange settled 2025-06-18",
        ),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n', "cannot tell the negotiated revision"),
    ],
)
def test_bad_files_are_clear_errors(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(TranscriptError, match=r"bad\.jsonl") as caught:
        validate_file(path)
    assert message in str(caught.value)


def test_missing_file_and_directory_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="cannot read"):
        validate_file(tmp_path / "absent.jsonl")
    with pytest.raises(TranscriptError, match="cannot read"):
        validate_file(tmp_path)


def test_huge_line_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validate_module, "MAX_LINE_BYTES", 1000)
    path = _transcript(tmp_path, *OPENING, ("client", {"jsonrpc": "2.0", "method": "x" * 2000}))
    with pytest.raises(TranscriptError, match="line 5 is longer than 1000 bytes"):
        validate_file(path)


def test_hostile_messages_give_findings_not_exceptions(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    messages: list[tuple[str, Any]] = [
        ("server", "a string"),
        ("server", [1, {"id": None}]),
        ("client", {"jsonrpc": "2.0", "id": {"x": 1}, "method": ["m"]}),
        ("server", {"jsonrpc": "2.0", "id": [2], "result": 3}),
        ("client", {"jsonrpc": "1.0", "method": 7}),
    ]
    path = _transcript(tmp_path, *OPENING, *messages)
    text = path.read_text().rstrip("\n") + "\n" + '{"from": "server", "message": ' + deep + "}\n"
    path.write_text(text)
    report = validate_file(path)
    problems = [f for f in report.findings if f.problem]
    assert {f.where.split(":")[0] for f in problems} == {f"line {n}" for n in range(5, 11)}
    assert all(f.check == "wire.message" for f in problems)
    assert all(f.why.split()[0] in ("client", "server") for f in problems)


def test_validate_files_reports_each_file(tmp_path: Path) -> None:
    a = FILES[0]
    b = _transcript(tmp_path, *OPENING)
    report = validate_files([a, b])
    assert [r.source for r in report.revisions] == [str(a), str(b)]
    assert report.target == f"{a}, {b}"
    assert report.seconds > 0


_KEYS = st.sampled_from(
    ["jsonrpc", "id", "method", "params", "result", "error", "code", "_meta", "progressToken"]
)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=6)
    | st.sampled_from(
        ["2.0", "initialize", "ping", "tools/list", "notifications/cancelled", "2025-06-18"]
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)


@given(data=st.data())
def test_any_recording_gives_findings_or_a_clear_error(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    source = data.draw(st.sampled_from(FILES), label="transcript")
    lines = source.read_bytes().splitlines()
    messages: list[tuple[str, Any]] = [
        (json.loads(line)["from"], json.loads(line)["message"]) for line in lines[1:]
    ]
    for _ in range(data.draw(st.integers(0, 6), label="edits")):
        index = data.draw(st.integers(0, len(messages) - 1))
        edit = data.draw(st.sampled_from(["replace", "drop", "swap", "side"]))
        if edit == "replace":
            messages[index] = (messages[index][0], data.draw(_JSON))
        elif edit == "drop" and len(messages) > 1:
            del messages[index]
        elif edit == "swap" and index + 1 < len(messages):
            messages[index], messages[index + 1] = messages[index + 1], messages[index]
        elif edit == "side":
            side = "client" if messages[index][0] == "server" else "server"
            messages[index] = (side, messages[index][1])
    header = data.draw(st.booleans(), label="header")
    plain = data.draw(st.booleans(), label="plain log")
    path = tmp_path_factory.mktemp("fuzz") / "t.jsonl"
    if plain:
        path.write_text("\n".join(json.dumps(m) for _, m in messages))
    else:
        path = _transcript(path.parent, *messages, header=header)
    try:
        report = validate_file(path)
    except TranscriptError as error:
        assert str(path) in str(error)
        return
    for finding in report.findings:
        assert finding.revision == report.revision
        if finding.problem:
            assert finding.where.startswith("line ")


def test_unanswered_batch_with_int_and_str_ids_is_a_warning_each(tmp_path: Path) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": "a", "method": "ping"},
    ]
    path = _transcript(tmp_path, *OPENING, ("client", batch))
    warnings = [f.why for f in validate_file(path).findings if f.check == "protocol.responses"]
    assert [w.split("(")[1].split(")")[0] for w in warnings] == ["id 1", "id 'a'"]


def test_a_line_no_decoder_takes_is_cut_at_its_last_brace(tmp_path: Path) -> None:
    # Nested past the decoders' depth: the message is cut out of the line as written,
    # in one pass however much space follows it.
    deep = b"[" * 100_000 + b"]" * 100_000
    line = b'{"from": "client", "message": ' + deep + b" " * 200_000 + b"}\n"
    path = tmp_path / "deep.jsonl"
    header = b'{"header": {"revision": "2025-06-18"}}\n'
    path.write_bytes(header + line)
    [entry] = read_recording(path).entries
    assert (entry.side, entry.data) == ("client", deep)
    path.write_bytes(header + line.replace(b"}\n", b"\n"))
    with pytest.raises(TranscriptError, match="not a transcript line"):
        read_recording(path)
