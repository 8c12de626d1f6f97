"""The generator: pinned inputs, errata, determinism, drift check, adding a revision."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import shutil
import sys
import typing
import urllib.request
from pathlib import Path
from typing import Any

import msgspec
import pytest

import mcpspec
from mcpspec.cli import main
from mcpspec.codegen import generate_all, load_wire_schema
from mcpspec.codegen.build import build_module
from mcpspec.codegen.generate import module_filename
from mcpspec.codegen.patch import ErratumMismatch, apply_errata, normalise_wire_form
from mcpspec.codegen.render import GENERATED_HEADER, render_module
from mcpspec.codegen.schema import ERRATA, PINS, Erratum, pin_for
from mcpspec.codegen.sources import SchemaHashMismatch, SchemaNotFound, read_pinned_schema
from mcpspec.runtime import RequestReceived, protocol_model
from mcpspec.runtime.declared import RESULT_COMPLETE, ProtocolModel, UnionKind

from .conftest import ROOT, SCHEMA_DIR
from .session_kit import connect, meta_for, only

GENERATED = ROOT / "generated"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("generated")
    generate_all(out, SCHEMA_DIR)
    return out


@pytest.mark.schemas
def test_pins_match_the_shared_schemas() -> None:
    pins = json.loads((SCHEMA_DIR / "PINS.json").read_text())
    assert [(p["revision"], p["sha256"], p["upstream_commit"]) for p in pins] == [
        (p.revision, p.sha256, p.commit) for p in PINS
    ]
    assert tuple(p.revision for p in PINS) == mcpspec.REVISIONS
    assert mcpspec.LATEST == "2026-07-28"


@pytest.mark.schemas
def test_generation_is_deterministic_and_matches_the_committed_modules(
    fresh: Path, tmp_path: Path
) -> None:
    generate_all(tmp_path, SCHEMA_DIR)
    names = sorted(p.name for p in fresh.glob("*.py"))
    assert names == sorted(p.name for p in tmp_path.glob("*.py"))
    # five revisions, the list of revisions and the tasks extension
    assert len(names) == 7
    assert "__init__.py" not in names  # the package root is hand-written
    for name in names:
        assert (fresh / name).read_bytes() == (tmp_path / name).read_bytes(), name
        assert (fresh / name).read_bytes() == (GENERATED / name).read_bytes(), name


@pytest.mark.schemas
def test_check_passes_on_committed_and_fails_on_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["generate", "--check", "--out", str(GENERATED), "--schema-dir", str(SCHEMA_DIR)]) == 0
    )
    stale = tmp_path / "generated"
    shutil.copytree(GENERATED, stale)
    module = stale / "v2025_06_18.py"
    module.write_text(module.read_text().replace("class Tool(", "class Tool2("))
    assert main(["generate", "--check", "--out", str(stale), "--schema-dir", str(SCHEMA_DIR)]) == 1
    err = capsys.readouterr().err
    assert "v2025_06_18.py" in err and "class Tool2(" in err


@pytest.mark.schemas
def test_generate_prints_a_summary_per_revision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["generate", "--out", str(tmp_path), "--schema-dir", str(SCHEMA_DIR)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        *mcpspec.REVISIONS,
        "io.modelcontextprotocol/tasks",
    ]
    assert "155 definitions" in lines[-2] and "errata applied: 6" in lines[-2]
    assert all("Structs" in line and "unions:" in line for line in lines)


@pytest.mark.schemas
def test_hash_mismatch_names_file_and_both_hashes(tmp_path: Path) -> None:
    pin = pin_for("2025-06-18")
    folder = tmp_path / pin.revision
    folder.mkdir()
    data = (SCHEMA_DIR / pin.revision / "schema.json").read_bytes() + b"\n"
    (folder / "schema.json").write_bytes(data)
    with pytest.raises(SchemaHashMismatch) as caught:
        read_pinned_schema(pin, tmp_path)
    message = str(caught.value)
    assert str(folder / "schema.json") in message
    assert pin.sha256 in message and hashlib.sha256(data).hexdigest() in message


def test_missing_file_in_a_given_schema_dir_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SchemaNotFound, match="2024-11-05"):
        read_pinned_schema(pin_for("2024-11-05"), tmp_path)


class _Response(io.BytesIO):
    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.mark.schemas
def test_without_local_schemas_the_pinned_file_is_downloaded_and_verified(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pin = pin_for("2024-11-05")
    good = (SCHEMA_DIR / pin.revision / "schema.json").read_bytes()
    asked: list[str] = []

    def fake_urlopen(url: str, timeout: float) -> _Response:
        asked.append(url)
        return _Response(good if len(asked) == 1 else good.replace(b"Tool", b"Tuul"))

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    schema = read_pinned_schema(pin, None)
    assert "CallToolRequest" in schema["definitions"]
    assert asked == [
        "https://raw.githubusercontent.com/modelcontextprotocol/modelcontextprotocol/"
        f"{pin.commit}/schema/2024-11-05/schema.json"
    ]
    with pytest.raises(SchemaHashMismatch, match=pin.sha256):
        read_pinned_schema(pin, None)


@pytest.mark.schemas
def test_every_erratum_asserts_its_old_value() -> None:
    by_revision: dict[str, list[Erratum]] = {}
    for erratum in ERRATA:
        by_revision.setdefault(erratum.revision, []).append(erratum)
    assert sorted(by_revision) == list(mcpspec.REVISIONS)
    for revision, errata in by_revision.items():
        patched, _, applied, _ = load_wire_schema(revision, SCHEMA_DIR)
        assert applied == len(errata)
        raw = read_pinned_schema(pin_for(revision), SCHEMA_DIR)
        for erratum in errata:
            # Applying it again to the patched schema fails: the old value is gone.
            with pytest.raises(ErratumMismatch, match="expected"):
                apply_errata(patched, [erratum])
            assert erratum.reason
        # The wire schema is exactly: the errata, then the wire-form additions.
        expected = apply_errata(raw, errata)
        normalise_wire_form(expected)
        assert expected == patched


def test_erratum_at_a_missing_location_is_an_error() -> None:
    raw: dict[str, Any] = {"$defs": {"A": {"type": "object"}}}
    moved = Erratum("x", "/$defs/B/type", "object", "array", "test")
    with pytest.raises(ErratumMismatch, match="no such location"):
        apply_errata(raw, [moved])
    assert raw == {"$defs": {"A": {"type": "object"}}}  # the input is never edited


@pytest.mark.schemas
def test_errata_fix_the_known_defects() -> None:
    schema = load_wire_schema("2026-07-28", SCHEMA_DIR)[0]["$defs"]
    assert schema["JSONValue"]["anyOf"][2]["type"] == ["string", "number", "boolean", "null"]
    content = schema["ElicitResult"]["properties"]["content"]["additionalProperties"]
    assert content["anyOf"][1]["type"] == ["string", "number", "boolean"]
    assert schema["JSONRPCErrorResponse"]["properties"]["id"]["anyOf"][1] == {"type": "null"}


@pytest.mark.schemas
def test_adding_a_revision_from_a_schema_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = SCHEMA_DIR / "2026-07-28" / "schema.json"
    out = tmp_path / "out"
    args = ["generate", "--out", str(out), "--schema-dir", str(SCHEMA_DIR)]
    assert main([*args, "--revision", "2099-01-01", "--schema", str(source)]) == 0
    listing = (out / "_revisions.py").read_text()
    assert '"2099-01-01",' in listing and 'LATEST: Final = "2099-01-01"' in listing
    assert '"2099-01-01": ProtocolModel.STATELESS,' in listing
    name = mcpspec.module_name("2099-01-01")
    spec = importlib.util.spec_from_file_location(name, out / module_filename("2099-01-01"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # msgspec resolves names there
    spec.loader.exec_module(module)
    assert module.codec.revision == "2099-01-01"
    request = module.CallToolRequest(id=1, params=module.CallToolRequestParams(name="echo"))
    assert module.codec.decode(module.codec.encode(request)) == request


def test_revision_and_schema_go_together(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="go together"):
        main(["generate", "--out", str(tmp_path), "--revision", "2099-01-01"])


def test_names_are_stable_across_revisions() -> None:
    modules = [importlib.import_module(mcpspec.module_name(r)) for r in mcpspec.REVISIONS]
    everywhere = [
        "CallToolRequest", "CallToolRequestParams", "CallToolResult", "Tool", "TextContent",
        "ListToolsRequest", "ListToolsRequestParams", "PaginatedRequestParams",
        "ProgressNotification", "ProgressNotificationParams", "CancelledNotificationParams",
        "ReadResourceRequestParams", "ClientCapabilities", "ServerCapabilities",
        "CompleteRequestParams", "CompleteRequestParamsArgument", "Implementation",
    ]  # fmt: skip
    for module in modules:
        missing = [name for name in everywhere if not hasattr(module, name)]
        assert not missing, (module.REVISION, missing)
        tables = (module.CLIENT_REQUESTS, module.SERVER_REQUESTS, module.CLIENT_NOTIFICATIONS)
        for table in tables:
            for message in table.values():
                params = message.__struct_fields__
                if "params" in params and hasattr(module, f"{message.__name__}Params"):
                    continue
                assert "params" not in params or message.__name__ in (
                    "PingRequest", "ListRootsRequest", "InitializedNotification",
                    "RootsListChangedNotification",
                ), (module.REVISION, message.__name__)  # fmt: skip
    handshake = [m for m in modules if m.REVISION != "2026-07-28"]
    assert all(hasattr(m, "InitializeRequestParams") for m in handshake)


def _buildable_without_arguments(t: Any) -> bool:
    try:
        t()
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("revision", mcpspec.REVISIONS)
def test_a_request_whose_params_are_all_optional_builds_without_them(revision: str) -> None:
    module = importlib.import_module(mcpspec.module_name(revision))
    built = []
    for table in (module.CLIENT_REQUESTS, module.SERVER_REQUESTS, module.INPUT_REQUESTS):
        for request_type in table.values():
            params = next(
                (f for f in msgspec.inspect.type_info(request_type).fields if f.name == "params"),
                None,
            )
            types = getattr(params, "type", None)
            members = types.types if isinstance(types, msgspec.inspect.UnionType) else (types,)
            struct = next((m for m in members if isinstance(m, msgspec.inspect.StructType)), None)
            if struct is None or not _buildable_without_arguments(struct.cls):
                continue
            # Input requests (2026-07-28) sit inside a result: they have no id.
            has_id = "id" in request_type.__struct_fields__
            request = request_type(id=1) if has_id else request_type()
            assert request.params in (msgspec.UNSET, struct.cls()), request
            encoded = module.codec.encode(request)
            assert module.codec.decode_as(request_type, encoded) == request
            built.append(request_type.__name__)
    assert "ListToolsRequest" in built and len(built) >= 4, built
    wire = json.loads(module.codec.encode(module.ListToolsRequest(id=1)))
    if module.PROTOCOL_MODEL is ProtocolModel.STATELESS:
        # Required params start empty, for the session to fill in their _meta.
        assert wire == {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {}}}
    else:
        assert wire == {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@pytest.mark.parametrize("revision", mcpspec.REVISIONS)
def test_a_request_built_without_params_is_what_the_wire_needs(revision: str) -> None:
    client, server = connect(revision)
    data = client.send(client.types.ListToolsRequest(id=7))
    events = server.receive(data)
    received = only(events, RequestReceived)
    assert received.request == client.types.ListToolsRequest(id=7, params=received.request.params)
    if protocol_model(revision) is ProtocolModel.STATELESS:
        # The session stamped the protocol fields into the params built by default.
        stamped = json.loads(data)["params"]["_meta"]
        assert meta_for(client).items() <= stamped.items()
        assert received.request.params.meta == stamped
    else:
        assert "params" not in json.loads(data)


def test_generated_modules_declare_the_runtime_contract() -> None:
    from mcpspec._revisions import PROTOCOL_MODELS

    assert tuple(PROTOCOL_MODELS) == mcpspec.REVISIONS
    for revision in mcpspec.REVISIONS:
        module = importlib.import_module(mcpspec.module_name(revision))
        stateless = "server/discover" in module.CLIENT_REQUESTS
        model = ProtocolModel.STATELESS if stateless else ProtocolModel.HANDSHAKE
        assert module.PROTOCOL_MODEL is model is protocol_model(revision)
        assert module.codec.protocol_model is model
        # The complete member of each result union: the member tagged "complete".
        unions = {m: t for m, t in module.RESULTS.items() if typing.get_origin(t) is typing.Union}
        assert set(module.COMPLETE_RESULTS) == set(unions)
        for method, complete in module.COMPLETE_RESULTS.items():
            assert complete in typing.get_args(unions[method])
            assert complete.__struct_config__.tag == RESULT_COMPLETE
        assert module.codec.complete_results is module.COMPLETE_RESULTS
        kinds = {name: kind for name, (_, kind) in module.codec.owned_unions.items()}
        assert kinds["JSONRPCMessage"] is UnionKind.MESSAGE
        assert kinds.get("JSONRPCResponse", UnionKind.RESPONSE) is UnionKind.RESPONSE
        assert kinds["ServerResult"] is UnionKind.KEYED
    assert [r for r in mcpspec.REVISIONS if protocol_model(r) is ProtocolModel.STATELESS] == [
        "2026-07-28"
    ]
    with pytest.raises(ValueError, match="2024-11-05"):
        protocol_model("1999-01-01")


def test_one_module_name_names_files_and_imports() -> None:
    assert mcpspec.module_name("2025-11-25") == "mcpspec.v2025_11_25"
    assert module_filename("2025-11-25") == "v2025_11_25.py"
    for revision in mcpspec.REVISIONS:
        assert (GENERATED / module_filename(revision)).is_file()
    # The package root is hand-written: the generator never writes or compares it.
    assert not (GENERATED / "__init__.py").read_text().startswith(GENERATED_HEADER)
    assert (GENERATED / "_revisions.py").read_text().startswith(GENERATED_HEADER)


def test_renderings_share_no_state() -> None:
    """2024-11-05 defines ``Annotated``, so its module imports ``typing.Annotated`` under
    another name; rendering it first changes nothing in the next module."""
    old, new = (
        build_module(revision, load_wire_schema(revision, SCHEMA_DIR)[0])
        for revision in ("2024-11-05", "2025-11-25")
    )
    alone = render_module(new, "0" * 64)
    first = render_module(old, "0" * 64)
    assert "Annotated as TypingAnnotated" in first and "TypingAnnotated" not in alone
    assert render_module(new, "0" * 64) == alone
    assert render_module(old, "0" * 64) == first
