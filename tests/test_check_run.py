"""The checker's engine on servers that misbehave at the edges: output framing, a server
that dies, one that cannot be started, ``--lenient`` past a failed negotiation, and the
tables that tie session rules to checks."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import anyio
import pytest

from mcpspec.check import CHECKS, Outcome, Report
from mcpspec.check.errors import CheckError, Unreachable
from mcpspec.check.rules import CHECK_OF_RULE
from mcpspec.check.run import Options, check_server
from mcpspec.check.stdio import StdioTarget
from mcpspec.cli import main
from mcpspec.runtime import Rule

BROKEN = Path(__file__).resolve().parent / "check_servers" / "broken.py"


def run(target: StdioTarget, **options: object) -> Report:
    return anyio.run(check_server, target, Options(**options))  # type: ignore[arg-type]


def python(code: str, *args: str) -> StdioTarget:
    return StdioTarget(sys.executable, ["-c", code, *args])


def wire(report: Report) -> list[tuple[str, str]]:
    return [(f.where, f.why) for f in report.findings() if f.check == "wire.message" and f.problem]


def test_every_rule_of_the_sessions_is_filed_under_a_check() -> None:
    assert set(CHECK_OF_RULE) == set(Rule)
    assert set(CHECK_OF_RULE.values()) <= set(CHECKS)


def test_output_that_ends_without_a_newline_is_named() -> None:
    report = run(
        python('import sys; sys.stdout.write(\'{"jsonrpc": "2.0"\'); sys.stdout.flush()'),
        revisions=("2025-11-25",),
        timeout=2.0,
    )
    assert ("stdout line 1", "the output ends without a newline after this message") in wire(report)
    [revision] = report.revisions
    assert revision.accepted is False
    assert report.exit_status() == 1


def test_a_blank_line_and_a_banner_are_wire_failures_naming_their_lines() -> None:
    code = "print(); print('starting up', flush=True); import time; time.sleep(5)"
    report = run(python(code), revisions=("2025-11-25",), timeout=1.0)
    found = wire(report)
    assert ("stdout line 1", "a blank line: stdout carries nothing but messages") in found
    assert any(
        where == "stdout line 2" and "not a JSON-RPC message" in why and "starting up" in why
        for where, why in found
    )


def test_a_server_that_exits_at_once_is_unreachable_not_a_protocol_verdict() -> None:
    with pytest.raises(Unreachable, match=r"could not reach the server .*before it wrote"):
        run(python("pass"), revisions=("2025-06-18",), timeout=2.0)


def test_a_missing_script_exits_2_saying_the_server_could_not_be_reached(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = str(tmp_path / "nonexistent.py")
    assert main(["check", "--timeout", "2", "--", sys.executable, missing]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcpspec check: could not reach the server ")
    assert "No such file or directory" in err  # its stderr, once
    assert err.count("No such file or directory") == 1


def test_a_server_that_dies_in_one_revision_only_is_a_protocol_verdict() -> None:
    """Unreachable is for a server that answered nothing on any connection: one that
    spoke in another revision broke the protocol where it went silent."""
    code = (
        _SERVER_HEAD
        + r"""
    if meth == "initialize" and p.get("protocolVersion") == "2025-06-18":
        sys.exit(0)
    if meth == "initialize":
        out({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-03-26",
             "capabilities": {}, "serverInfo": {"name": "f", "version": "1"}}})
    else:
        out({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "nope"}})
"""
    )
    report = run(python(code), revisions=("2025-06-18", "2025-03-26"), timeout=2.0)
    first = report.revisions[0]
    assert first.accepted is False and "the connection ended" in first.stopped
    assert [f.check for f in first.findings if f.problem] == ["protocol.negotiation"]


def test_a_command_that_cannot_be_started_is_a_check_error(tmp_path: Path) -> None:
    script = tmp_path / "server"
    script.write_text("not a program")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)  # not executable
    with pytest.raises(CheckError, match="cannot start"):
        run(StdioTarget(script), revisions=("2025-11-25",))
    assert main(["check", "--revision", "2025-11-25", "--", str(script)]) == 2


def test_lenient_goes_on_with_the_raw_probes_past_a_failed_negotiation() -> None:
    target = StdioTarget(sys.executable, [str(BROKEN), "--defect", "no-server-info"])
    strict = run(target, revisions=("2025-11-25",), timeout=3.0)
    lenient = run(target, revisions=("2025-11-25",), timeout=3.0, lenient=True)
    strict_checks = {f.check for f in strict.revisions[0].findings}
    lenient_checks = {f.check for f in lenient.revisions[0].findings}
    assert "schema.message" in strict_checks and "schema.message" in lenient_checks
    assert "protocol.ping" not in strict_checks
    assert {"protocol.ping", "protocol.unknown-method", "protocol.parse-error"} <= lenient_checks
    raw = [f for f in lenient.revisions[0].findings if f.check == "protocol.ping"]
    assert [f.outcome for f in raw] == [Outcome.PASSED]


def test_the_environment_and_working_directory_reach_the_server(tmp_path: Path) -> None:
    code = (
        "import os, sys; sys.stderr.write(os.environ['MCPSPEC_PROBE'] + ' ' + os.getcwd());"
        "sys.stderr.flush()"
    )
    env = {**os.environ, "MCPSPEC_PROBE": "seen"}
    target = StdioTarget(sys.executable, ["-c", code], env=env, cwd=tmp_path)
    with pytest.raises(Unreachable) as raised:
        run(target, revisions=("2025-11-25",), timeout=2.0)
    assert f"its stderr ends with:\n  seen {tmp_path}" in str(raised.value)


def test_a_schema_failure_shows_the_value_found_at_its_path() -> None:
    from mcpspec.check.conversation import value_at

    data = b'{"result": {"tools": [{"name": 42}], "map": {"k": 1}}}'
    assert value_at(data, "$.result.tools[0].name") == 42
    assert value_at(data, "$") == {"result": {"tools": [{"name": 42}], "map": {"k": 1}}}
    missing = value_at(data, "$.result.tools[3]")
    assert missing is value_at(data, "$.result.map[...].x") is value_at(b"not json", "$.a")
    target = StdioTarget(sys.executable, [str(BROKEN), "--defect", "no-server-info"])
    report = run(target, revisions=("2025-11-25",), timeout=3.0)
    [schema] = [f for f in report.findings() if f.check == "schema.message"]
    assert "serverInfo" in schema.why and "the value there: {" in schema.why


#: The start of a scripted stdio server: its request loop up to the branches on
#: ``meth`` (``i`` the id, ``p`` the params); a line that is no JSON is answered -32700.
_SERVER_HEAD = r"""
import json, sys, time
def out(m): sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError:
        out({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse"}})
        continue
    if not isinstance(m, dict) or "id" not in m or "method" not in m: continue
    i, meth, p = m["id"], m["method"], m.get("params") or {}
"""


#: :data:`_SERVER_HEAD` of a 2025-06-18 server with tools: initialize and ping answered.
_TOOLS_SERVER_HEAD = (
    _SERVER_HEAD
    + r"""
    if meth == "initialize":
        out({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-06-18",
             "capabilities": {"tools": {}}, "serverInfo": {"name": "f", "version": "1"}}})
    elif meth == "ping": out({"jsonrpc": "2.0", "id": i, "result": {}})
"""
)


#: A stdio server with one tool, ``t``: ``sys.argv[1]`` is the tool's members but its name
#: (JSON), ``sys.argv[2]`` the structuredContent of every call's result (JSON).
_ONE_TOOL_SERVER = (
    _TOOLS_SERVER_HEAD
    + r"""
    elif meth == "tools/list":
        tool = {"name": "t", **json.loads(sys.argv[1])}
        out({"jsonrpc": "2.0", "id": i, "result": {"tools": [tool]}})
    elif meth == "tools/call":
        out({"jsonrpc": "2.0", "id": i,
             "result": {"content": [], "structuredContent": json.loads(sys.argv[2])}})
    else: out({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "nope"}})
"""
)


def one_tool(tool: dict[str, object], structured: object = None) -> StdioTarget:
    """A target serving one tool (``t``), answering every call with ``structured``."""
    members = json.dumps({"inputSchema": {"type": "object"}, **tool})
    return python(_ONE_TOOL_SERVER, members, json.dumps(structured or {"s": "a"}))


@pytest.mark.parametrize(
    ("schema", "check", "why"),
    [
        ({"type": "string", "pattern": "(["}, "surface.json-schema", "is not a 'regex'"),
        ({"$ref": "#/$defs/missing"}, "surface.call", "cannot validate"),
    ],
)
def test_a_broken_output_schema_is_a_finding_not_an_exception(
    schema: dict[str, object], check: str, why: str
) -> None:
    out = {"type": "object", "properties": {"s": schema}}
    report = run(
        one_tool({"outputSchema": out}), revisions=("2025-06-18",), call_tools=True, timeout=3.0
    )
    problems = [(f.check, f.why) for f in report.findings() if f.problem]
    assert [c for c, w in problems if why in w] == [check]
    if check != "surface.call":
        # filed as a broken schema: the tool's result is not checked against it
        assert "surface.call" not in {c for c, _ in problems}


def test_schema_work_past_its_bounds_is_not_checked_and_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcpspec.check import json_schema

    monkeypatch.setattr(json_schema, "MAX_SECONDS", 0.3)
    deep: dict[str, object] = {"type": "string", "minLength": 1024}
    for _ in range(8):  # 16**8 strings of 1 KiB: arguments that cannot be built
        deep = {"type": "array", "minItems": 16, "items": deep}
    unbuildable = {"type": "object", "required": ["x"], "properties": {"x": deep}}
    backtracking = {"type": "object", "properties": {"s": {"pattern": "^(a+)+$"}}}
    for tool, structured, where, why in [
        ({"inputSchema": unbuildable}, None, "tools/call 't'", "no arguments could be built"),
        (
            {"outputSchema": backtracking},
            {"s": "a" * 64 + "b"},
            "$.result.structuredContent",
            "structuredContent not checked: validating against the schema took over 0.3 s",
        ),
    ]:
        target = one_tool(tool, structured)
        report = run(target, revisions=("2025-06-18",), call_tools=True, timeout=3.0)
        calls = [f for f in report.findings() if f.check == "surface.call"]
        [skipped] = [f for f in calls if f.outcome is Outcome.SKIPPED]
        assert skipped.where.endswith(where) and why in skipped.why
        surface = [f for f in report.findings() if f.check.startswith("surface.")]
        assert not [f for f in surface if f.problem]


#: A stdio server that answers initialize, then floods ``sys.argv[1]`` log messages
#: (without the logging capability) before it answers anything else.
_FLOOD_SERVER = (
    _SERVER_HEAD
    + r"""
    if meth == "initialize":
        out({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-06-18",
             "capabilities": {}, "serverInfo": {"name": "f", "version": "1"}}})
        log = {"jsonrpc": "2.0", "method": "notifications/message",
               "params": {"level": "info", "data": "x"}}
        sys.stdout.write((json.dumps(log) + "\n") * int(sys.argv[1])); sys.stdout.flush()
    elif meth == "ping": out({"jsonrpc": "2.0", "id": i, "result": {}})
    else: out({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "nope"}})
"""
)


def test_a_flood_breaking_one_rule_is_counted_not_listed() -> None:
    from mcpspec.check.findings import MAX_PROBLEMS

    flood = MAX_PROBLEMS + 400
    report = run(python(_FLOOD_SERVER, str(flood)), revisions=("2025-06-18",), timeout=2.0)
    [revision] = [r for r in report.revisions if r.revision == "2025-06-18"]
    undeclared = [f for f in revision.findings if f.check == "protocol.capabilities"]
    # One bug, one finding: counted, and the report does not grow.
    assert len(undeclared) == 1 < MAX_PROBLEMS
    [finding] = undeclared
    assert finding.why == "notifications/message without the logging capability declared"
    assert finding.outcome is Outcome.FAILED and finding.count == flood
    assert finding.where == "stdout line 3: $.method"  # the first (line 2: initialize)


#: A stdio server that answers initialize twice: first with an id that is an array.
_UNHASHABLE_ID_SERVER = (
    _SERVER_HEAD
    + r"""
    if meth == "initialize":
        out({"jsonrpc": "2.0", "id": [i], "result": {}})
        out({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-06-18",
             "capabilities": {}, "serverInfo": {"name": "f", "version": "1"}}})
    elif meth == "ping": out({"jsonrpc": "2.0", "id": i, "result": {}})
    else: out({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "nope"}})
"""
)


def test_a_response_whose_id_is_an_array_is_a_finding_not_a_crash() -> None:
    report = run(python(_UNHASHABLE_ID_SERVER), revisions=("2025-06-18",), timeout=2.0)
    [revision] = [r for r in report.revisions if r.revision == "2025-06-18"]
    assert revision.accepted is True
    assert any(
        f.problem and f.where.endswith("$.id") and "never list" in f.why for f in revision.findings
    )


#: A stdio server sending a 1 MB value: as the protocolVersion of its answer to the
#: negotiation probe (``version``), or as the message of an error to initialize.
_HUGE_VALUE_SERVER = (
    _SERVER_HEAD
    + r"""
    huge = "9" * 1_000_000
    if meth == "initialize" and sys.argv[1] == "error":
        out({"jsonrpc": "2.0", "id": i, "error": {"code": -32603, "message": huge}})
    elif meth == "initialize":
        v = p["protocolVersion"]
        v = huge if v == "1999-01-01" else "2025-06-18"
        out({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": v,
             "capabilities": {}, "serverInfo": {"name": "f", "version": "1"}}})
    elif meth == "ping": out({"jsonrpc": "2.0", "id": i, "result": {}})
    else: out({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "nope"}})
"""
)


@pytest.mark.parametrize("where", ["version", "error"])
def test_a_huge_value_from_the_server_is_clipped_in_findings(where: str) -> None:
    target = python(_HUGE_VALUE_SERVER, where)
    report = run(target, revisions=("2025-06-18",), timeout=3.0)
    negotiation = [f for f in report.findings() if f.check == "protocol.negotiation"]
    assert any("999999" in f.why and f.problem for f in negotiation)
    assert max(len(f.why) for f in report.findings()) < 2000
    assert all(len(r.stopped or "") < 2000 for r in report.revisions)


#: A stdio server whose one tool reports progress every 0.1 s and never answers.
_PROGRESS_FOREVER_SERVER = (
    _TOOLS_SERVER_HEAD
    + r"""
    elif meth == "tools/list":
        out({"jsonrpc": "2.0", "id": i,
             "result": {"tools": [{"name": "slow", "inputSchema": {"type": "object"}}]}})
    elif meth == "tools/call" and not isinstance(p.get("arguments", {}), dict):
        out({"jsonrpc": "2.0", "id": i, "error": {"code": -32602, "message": "bad"}})
    elif meth == "tools/call":
        token = (p.get("_meta") or {}).get("progressToken")
        for n in range(1, 10_000):
            out({"jsonrpc": "2.0", "method": "notifications/progress",
                 "params": {"progressToken": token, "progress": n}})
            time.sleep(0.1)
    else: out({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "nope"}})
"""
)


def test_progress_forever_is_a_timeout_in_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpspec.check import conversation

    monkeypatch.setattr(conversation, "MAX_WAIT_TIMEOUTS", 3, raising=False)
    target = python(_PROGRESS_FOREVER_SERVER)
    options = Options(revisions=("2025-06-18",), call_tools=True, timeout=0.5)

    async def bounded() -> Report:
        with anyio.fail_after(20):  # without a cap the call is waited for forever
            return await check_server(target, options)

    started = time.monotonic()
    report = anyio.run(bounded)
    assert time.monotonic() - started < 15
    [call] = [f for f in report.findings() if f.check == "surface.call"]
    assert call.outcome is Outcome.PASSED and "1 still busy after the timeout" in call.why


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie waiting for its reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_server_s_children_end_with_it(tmp_path: Path) -> None:
    """A command that starts the server as a child (``npx`` starts ``node``) leaves it
    running when only the command is ended: the checker ends the whole process group."""
    pid_file = tmp_path / "child.pid"
    code = (
        "import os, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],"
        " stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        f"os.execv(sys.executable, [sys.executable, {str(BROKEN)!r}])\n"
    )
    report = run(python(code), revisions=("2025-06-18",), timeout=5.0)
    assert report.revisions[0].accepted
    child = int(pid_file.read_text())
    assert not _alive(child)


def test_a_run_ends_without_noise_from_unclosed_transports(tmp_path: Path) -> None:
    """Every pipe is closed before the event loop ends: no "Exception ignored ... Event
    loop is closed" at exit."""
    import subprocess

    script = "import sys; from mcpspec.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ["check", "--revision", "2025-06-18", "--timeout", "5", "--", sys.executable]
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script, *argv, str(BROKEN)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" not in done.stderr and "ResourceWarning" not in done.stderr


_ID_NULL_ON_UNKNOWN_SERVER = (
    _SERVER_HEAD
    + r"""
    if meth == "initialize":
        out({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-06-18",
             "capabilities": {}, "serverInfo": {"name": "f", "version": "1"}}})
    elif meth == "ping": out({"jsonrpc": "2.0", "id": i, "result": {}})
    elif meth == "mcpspec/no-such-method":
        out({"jsonrpc": "2.0", "id": None, "error": {"code": -32601, "message": "nope"}})
    else: out({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "nope"}})
"""
)


def test_a_probe_answered_with_id_null_is_the_same_failure_as_any_request() -> None:
    """A raw probe's answer with its id dropped is filed as a typed request's is (one
    failure naming the id), and still settles the probe: no wait for a timeout."""
    started = time.perf_counter()
    report = run(python(_ID_NULL_ON_UNKNOWN_SERVER), revisions=("2025-06-18",), timeout=5.0)
    assert time.perf_counter() - started < 5.0
    section = report.revisions[0]
    problems = [f for f in section.findings if f.problem]
    assert [(f.check, f.outcome) for f in problems] == [("protocol.responses", Outcome.FAILED)]
    assert problems[0].why.startswith("request id 'mcpspec-check-unknown-")
    assert "was answered with id null (-32601 'nope')" in problems[0].why
    assert problems[0].probe == "unknown method"
    [unknown] = [f for f in section.findings if f.check == "protocol.unknown-method"]
    assert unknown.outcome is Outcome.PASSED
