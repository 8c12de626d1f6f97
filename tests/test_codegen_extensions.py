"""The generator on extension schemas: pins, lowering of their union forms, and the
generated (opt-in) module of the tasks extension."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpspec.cli import main
from mcpspec.codegen.build import build_extension, build_module
from mcpspec.codegen.generate import generate_extension
from mcpspec.codegen.schema import EXTENSION_PINS
from mcpspec.codegen.sources import SchemaHashMismatch, read_pinned_extension

from .conftest import ROOT, SCHEMA_DIR

GENERATED = ROOT / "generated"
TASKS = EXTENSION_PINS[0]

_TASK = {
    "taskId": {"type": "string"},
    "status": {"type": "string"},
}


def _state(status: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    props = {**_TASK, "status": {"type": "string", "const": status}, **(extra or {})}
    return {"type": "object", "properties": props, "required": sorted(props)}


def _schema() -> dict[str, Any]:
    """A small extension-like schema: named states inlined into a union and into an
    ``allOf`` of a base and that union, and a closed empty capability object."""
    working = _state("working")
    done = _state("completed", {"result": {"type": "object", "additionalProperties": {}}})
    base = {
        "type": "object",
        "properties": {"resultType": {"type": "string"}},
        "required": ["resultType"],
    }
    return {
        "$defs": {
            "Result": base,
            "WorkingTask": {"$schema": "x", **working},
            "CompletedTask": {"$schema": "x", **done},
            "AnyTask": {"anyOf": [working, done]},
            "GetTaskResult": {"allOf": [{"$ref": "#/$defs/Result"}, {"anyOf": [working, done]}]},
            "Capability": {
                "type": "object",
                "propertyNames": {"type": "string"},
                "additionalProperties": {"not": {}},
            },
        }
    }


def test_an_inline_arm_identical_to_a_definition_is_that_definition() -> None:
    module = build_extension("2026-07-28", _schema())
    assert module.structs["AnyTask"].origin == "merged"
    assert [arm.name for arm in module.structs["AnyTask"].arms] == [
        "WorkingTask",
        "CompletedTask",
    ]


def test_all_of_a_base_and_a_union_distributes_over_the_arms() -> None:
    module = build_extension("2026-07-28", _schema())
    hoisted = {n for n, s in module.structs.items() if s.origin == "hoisted"}
    assert hoisted == {"GetTaskResultWorkingTask", "GetTaskResultCompletedTask"}
    wires = [f.wire for f in module.structs["GetTaskResultCompletedTask"].fields]
    assert wires == ["resultType", "taskId", "status", "result"]
    merged = module.structs["GetTaskResult"]
    assert merged.origin == "merged"
    assert [arm.name for arm in merged.arms] == [
        "GetTaskResultWorkingTask",
        "GetTaskResultCompletedTask",
    ]


def test_a_closed_empty_object_is_an_empty_struct() -> None:
    module = build_extension("2026-07-28", _schema())
    assert module.structs["Capability"].fields == []


def test_without_the_lowering_an_inline_arm_clashes_with_its_definition() -> None:
    """What the rule fixes: a union arm that is not recognised hoists under the
    union's own name, which is a definition."""
    schema = _schema()
    schema["$defs"]["AnyTask"]["anyOf"][0]["description"] = "not the definition any more"
    with pytest.raises(ValueError, match="hoisted name AnyTask"):
        build_extension("2026-07-28", schema)


@pytest.mark.schemas
def test_extension_pins_match_the_shared_folder() -> None:
    for pin in EXTENSION_PINS:
        listed = json.loads((SCHEMA_DIR / "extensions" / pin.folder / "PINS.json").read_text())
        assert [
            (p["extension"], p["sha256"], p["upstream_commit"], p["upstream_path"]) for p in listed
        ] == [(pin.extension, pin.sha256, pin.commit, pin.upstream_path)]
        assert pin.download_url.endswith(f"{pin.commit}/{pin.upstream_path}")
        assert pin.download_url.startswith(
            f"https://raw.githubusercontent.com/{listed[0]['upstream_repository']}/"
        )


@pytest.mark.schemas
def test_a_changed_extension_schema_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "extensions" / TASKS.folder
    folder.mkdir(parents=True)
    source = SCHEMA_DIR / "extensions" / TASKS.folder / "schema.json"
    (folder / "schema.json").write_bytes(source.read_bytes() + b"\n")
    with pytest.raises(SchemaHashMismatch, match=TASKS.sha256):
        read_pinned_extension(TASKS, tmp_path)


@pytest.mark.schemas
def test_the_core_builder_refuses_an_extension_schema() -> None:
    """An extension schema has no message unions: it is built as an extension."""
    with pytest.raises(KeyError):
        build_module("2026-07-28", read_pinned_extension(TASKS, SCHEMA_DIR))


@pytest.mark.schemas
def test_the_tasks_module_is_reproducible_and_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = generate_extension(TASKS, tmp_path, SCHEMA_DIR)
    assert report.revision == "io.modelcontextprotocol/tasks"
    name = TASKS.module + ".py"
    assert (tmp_path / name).read_bytes() == (GENERATED / name).read_bytes()
    stale = tmp_path / "stale"
    shutil.copytree(GENERATED, stale)
    module = stale / name
    module.write_text(module.read_text().replace("class WorkingTask(", "class Working("))
    assert main(["generate", "--check", "--out", str(stale), "--schema-dir", str(SCHEMA_DIR)]) == 1
    assert name in capsys.readouterr().err


def test_the_tasks_module_declares_the_extension_messages() -> None:
    from mcpspec import ext_tasks

    assert ext_tasks.EXTENSION == "io.modelcontextprotocol/tasks"
    assert ext_tasks.REVISION == "2026-07-28"
    assert sorted(ext_tasks.REQUESTS) == ["tasks/cancel", "tasks/get", "tasks/update"]
    assert "tasks/list" not in ext_tasks.REQUESTS
    assert sorted(ext_tasks.NOTIFICATIONS) == ["notifications/tasks"]
    assert sorted(ext_tasks.INPUT_REQUESTS) == [
        "elicitation/create",
        "roots/list",
        "sampling/createMessage",
    ]
    assert ext_tasks.RESULTS["tasks/get"] is ext_tasks.GetTaskResult


def test_a_task_state_decodes_only_with_what_its_status_requires() -> None:
    from mcpspec import ext_tasks

    common = {
        "resultType": "complete",
        "taskId": "t1",
        "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:01Z",
        "ttlMs": None,
    }
    done = {**common, "status": "completed", "result": {"content": []}}
    decoded = msgspec.json.decode(json.dumps(done), type=ext_tasks.GetTaskResult)
    assert decoded.status == "completed" and decoded.result == {"content": []}
    failed = {**common, "status": "failed", "error": {"code": -32603, "message": "boom"}}
    assert msgspec.json.decode(json.dumps(failed), type=ext_tasks.GetTaskResult).error
    with pytest.raises(msgspec.ValidationError, match="missing result"):
        msgspec.json.decode(
            json.dumps({**common, "status": "completed"}), type=ext_tasks.GetTaskResult
        )
    with pytest.raises(msgspec.ValidationError, match="status"):
        msgspec.json.decode(
            json.dumps({**common, "status": "paused"}), type=ext_tasks.GetTaskResult
        )
    created = msgspec.json.decode(
        json.dumps({**common, "resultType": "task", "status": "working"}),
        type=ext_tasks.CreateTaskResult,
    )
    assert created.result_type == "task"


def test_results_of_a_stateless_revision_are_tagged_on_their_result_type() -> None:
    schema = _schema()
    schema["$defs"]["CreateTaskResult"] = {
        "allOf": [
            {"$ref": "#/$defs/Result"},
            _state("working"),
            {
                "type": "object",
                "properties": {"resultType": {"type": "string", "const": "task"}},
                "required": ["resultType"],
            },
        ]
    }
    tagged = build_extension("2026-07-28", schema, stateless=True).structs["CreateTaskResult"]
    assert (tagged.tag_field, tagged.tag) == ("resultType", "task")
    plain = build_extension("2026-07-28", schema).structs["CreateTaskResult"]
    assert plain.tag_field is None


def test_a_created_task_joins_the_tools_call_results_of_the_revision() -> None:
    """What the runtime builds on: the extension's CreateTaskResult is told apart from
    the core's tools/call results by its ``resultType``."""
    from mcpspec import ext_tasks, v2026_07_28

    decoder = msgspec.json.Decoder(
        v2026_07_28.InputRequiredResult | v2026_07_28.CallToolResult | ext_tasks.CreateTaskResult
    )
    created = {
        "resultType": "task",
        "taskId": "t1",
        "status": "working",
        "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:00Z",
        "ttlMs": 60000,
        "pollIntervalMs": 500,
    }
    task = decoder.decode(json.dumps(created))
    assert isinstance(task, ext_tasks.CreateTaskResult) and task.poll_interval_ms == 500
    assert msgspec.json.decode(msgspec.json.encode(task)) == created
    done = decoder.decode(b'{"resultType": "complete", "content": []}')
    assert isinstance(done, v2026_07_28.CallToolResult)
    assert ext_tasks.CancelTaskResult.__struct_config__.tag == "complete"
