"""The package's structure, read from its source: no private API of a dependency, no
import cycle, the server does not reach into HTTP, one class per HTTP transport.

The modules are read as text (``ast``), not imported, so a rule broken behind a lazy
import or a ``TYPE_CHECKING`` guard is still seen; the folders are mapped to module names
as ``pyproject.toml`` maps them.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

from .conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def _package_dirs() -> dict[str, Path]:
    """Import package name -> its folder, from ``[tool.setuptools.package-dir]``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mapping = config["tool"]["setuptools"]["package-dir"]
    return {package: ROOT / folder for package, folder in mapping.items()}


def _modules() -> dict[str, Path]:
    """Every module of the distribution: its dotted name -> its file."""
    modules: dict[str, Path] = {}
    for package, folder in _package_dirs().items():
        for path in folder.glob("*.py"):
            name = package if path.stem == "__init__" else f"{package}.{path.stem}"
            modules[name] = path
    return modules


MODULES = _modules()


def _type_checking_only(tree: ast.Module) -> set[ast.AST]:
    """The import statements under ``if TYPE_CHECKING:`` (never run)."""
    guarded: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for statement in node.body:
                guarded.update(ast.walk(statement))
    return guarded


def _imports(module: str, path: Path, *, run_only: bool = False) -> Iterator[tuple[str, int]]:
    """The modules ``module`` imports (absolute names, as written, with the names taken
    from them when they are submodules), and the line of each; with ``run_only``, not
    those under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    skipped = _type_checking_only(tree) if run_only else set()
    for node in ast.walk(tree):
        if node in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield target, node.lineno
            for alias in node.names:
                yield f"{target}.{alias.name}", node.lineno


def _internal(name: str) -> str | None:
    """The module of the package that importing ``name`` names, or ``None``."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _graph() -> dict[str, set[str]]:
    """Module -> the modules of the package it imports when it runs (lazy imports in
    functions included: they form cycles as much as the others do)."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        targets = {_internal(name) for name, _ in _imports(module, path, run_only=True)}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def test_the_modules_are_found() -> None:
    assert "mcpspec.runtime.connection.server" in MODULES
    assert "mcpspec.runtime.connection.http.app" in MODULES
    assert len(MODULES) > 100


def test_no_private_module_of_a_dependency_is_imported() -> None:
    private = []
    for module, path in MODULES.items():
        for name, line in _imports(module, path):
            top = name.partition(".")[0]
            if top in ("mcpspec", "") or top.startswith("_"):
                continue  # our own modules; __future__
            if any(part.startswith("_") for part in name.split(".")[1:]):
                private.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert private == []


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its nodes in order, the first again at the end), or
    ``None``: a depth-first walk that meets a node still on its path."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        while stack:
            following = next(stack[-1], None)
            if following is None:
                stack.pop()
                done.add(path.pop())
            elif following in path:
                return [*path[path.index(following) :], following]
            elif following not in done:
                path.append(following)
                stack.append(iter(sorted(graph[following])))
    return None


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"b"}}) == ["b", "c", "b"]
    assert _cycle({"a": {"a"}}) == ["a", "a"]


def test_the_package_has_no_import_cycle() -> None:
    assert _cycle(_graph()) is None


def test_the_server_does_not_import_http() -> None:
    reached = _graph()["mcpspec.runtime.connection.server"]
    assert sorted(t for t in reached if t.startswith("mcpspec.runtime.connection.http")) == []


def _test_modules_imported(path: Path) -> set[str]:
    """The ``tests/test_*`` modules the test file at ``path`` imports, by stem."""
    reached: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            dotted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative to the tests package (or a folder inside it)
                base = f"tests.{base}" if base else "tests"
            dotted = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in dotted:
            parts = name.split(".")
            if parts[0] == "tests" and len(parts) > 1 and parts[-1].startswith("test_"):
                reached.add(parts[-1])
    return reached


def test_test_modules_do_not_import_each_other() -> None:
    """Shared helpers live in the kits (``tests/*_kit.py``); a test module imports none
    of the others, so each can change, move or go without breaking another."""
    tests = ROOT / "tests"
    assert _test_modules_imported(tests / "test_architecture.py") == set()
    imports = {
        path.name: sorted(_test_modules_imported(path))
        for path in sorted(tests.rglob("*.py"))
        if path.name != Path(__file__).name
    }
    assert {name: reached for name, reached in imports.items() if reached} == {}
