"""Render the model of a revision as Python source, with the jinja2 templates beside it."""

from __future__ import annotations

from pathlib import Path

import jinja2

from .build import snake_case
from .model import Alias, Arm, Field, Module, Struct, Type

__all__ = ["render_module", "render_package_init", "type_expr"]

_TEMPLATES = Path(__file__).parent / "templates"


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["type_expr"] = type_expr
    env.filters["annotation"] = annotation
    env.filters["default"] = default
    env.filters["docstring"] = docstring
    env.filters["comment"] = comment
    env.filters["constant"] = constant
    env.filters["snake"] = snake_case
    env.filters["module_name"] = lambda revision: "v" + revision.replace("-", "_")
    env.filters["alias_expr"] = alias_expr
    env.filters["result_expr"] = result_expr
    env.filters["member"] = member
    env.filters["member_check"] = member_check
    return env


#: Names the generated modules import. A schema definition of the same name (2024-11-05
#: has ``Annotated``) wins; the import is then renamed with a ``Typing`` prefix.
IMPORTED = (
    "Annotated",
    "Any",
    "ClassVar",
    "Final",
    "Literal",
    "TypeAlias",
    "Union",
    "UNSET",
    "Meta",
    "UnsetType",
)


#: Other names of a generated module, which no definition may take.
RESERVED = frozenset(
    {
        "Mapping",
        "MappingProxyType",
        "Codec",
        "Member",
        "check_members",
        "msgspec",
        "JSONRPC_VERSION",
        "REVISION",
        "RESULTS",
        "TASK_RESULTS",
        "CLIENT_REQUESTS",
        "SERVER_REQUESTS",
        "CLIENT_NOTIFICATIONS",
        "SERVER_NOTIFICATIONS",
        "INPUT_REQUESTS",
        "codec",
    }
)


class _Names:
    """Spelling of the imported names in the module being rendered."""

    def __init__(self, definitions: set[str]) -> None:
        self.map = {n: (f"Typing{n}" if n in definitions else n) for n in IMPORTED}

    def __getattr__(self, name: str) -> str:
        return self.map[name]

    def imports(self, module: str, names: tuple[str, ...]) -> str:
        parts = [n if self.map[n] == n else f"{n} as {self.map[n]}" for n in names]
        return f"from {module} import {', '.join(parts)}"


_names = _Names(set())


def _bounded(base: str, t: Type) -> str:
    bounds = ", ".join(f"{k}={v!r}" for k, v in (("ge", t.ge), ("le", t.le)) if v is not None)
    return f"{_names.Annotated}[{base}, {_names.Meta}({bounds})]" if bounds else base


def type_expr(t: Type) -> str:
    """Python source of a type expression."""
    if t.kind == "prim":
        return _bounded(t.name, t)
    if t.kind == "ref":
        return t.name
    if t.kind == "list":
        return f"list[{type_expr(t.args[0])}]"
    if t.kind == "dict":
        return f"dict[{type_expr(t.args[0])}, {type_expr(t.args[1])}]"
    if t.kind == "union":
        return " | ".join(type_expr(a) for a in t.args)
    if t.kind == "literal":
        return f"{_names.Literal}[{', '.join(constant(v) for v in t.values)}]"
    if t.kind == "raw":
        return "msgspec.Raw"
    return _names.Any


def alias_expr(alias: Alias) -> str:
    """The right-hand side of a type alias; unions spelled ``Union[...]`` for Python 3.10."""
    if alias.type.kind == "union":
        return f"{_names.Union}[{', '.join(type_expr(a) for a in alias.type.args)}]"
    return type_expr(alias.type)


def result_expr(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{_names.Union}[{', '.join(names)}]"


def constant(value: object) -> str:
    """A JSON constant as Python source (double-quoted strings, like the rest)."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def annotation(f: Field) -> str:
    expr = type_expr(f.type)
    if f.required or f.type.kind == "any":
        return expr
    return f"{expr} | {_names.UnsetType}"


def _tuple(items: list[str]) -> str:
    if len(items) == 1:
        return f"({items[0]},)"
    return f"({', '.join(items)})"


def member(arm: Arm) -> str:
    """``Member(...)``: one member of a merged union, for ``check_members``."""
    required = _tuple([f'("{snake_case(w)}", "{w}")' for w in arm.required])
    constants = _tuple(
        [
            f'("{snake_case(w)}", "{w}", {_tuple([constant(v) for v in values])})'
            for w, values in arm.consts
        ]
    )
    kinds = _tuple(
        [f'("{snake_case(w)}", "{w}", {_tuple([constant(k) for k in ks])})' for w, ks in arm.kinds]
    )
    return f'Member("{arm.name}", required={required}, constants={constants}, kinds={kinds})'


#: The classes a decoded value of each JSON kind has exactly.
_KIND_CLASSES = {"str": ("str",), "bool": ("bool",), "int": ("int",), "float": ("int", "float")}


def member_check(arm: Arm, struct: Struct) -> str:
    """A Python expression, on ``self``, true when ``self`` is an instance of ``arm`` as
    decoded: it tests exact classes, so a caller's own subclass values (an ``IntEnum``)
    may fail it, and ``check_members``, which walks ``isinstance``, has the last word.
    Constants come first: they tell the members apart soonest. A field the merged
    Struct itself requires is never UNSET, so it is not tested for that."""
    unset = _names.UNSET
    always = {f.wire for f in struct.fields if f.required}
    tests = []
    for w, values in arm.consts:
        attr = f"self.{snake_case(w)}"
        if len(values) == 1:
            test = f"{attr} == {constant(values[0])}"
        else:
            test = f"{attr} in {_tuple([constant(v) for v in values])}"
        # A required field equal to a constant is set: UNSET equals no constant.
        present = w in arm.required or w in always
        tests.append(test if present else f"({attr} is {unset} or {test})")
    # A constant or a kind of its own tells a required field is set as well.
    skip = always | {w for w, _ in arm.consts} | {w for w, _ in arm.kinds}
    tests += [f"self.{snake_case(w)} is not {unset}" for w in arm.required if w not in skip]
    for w, kinds in arm.kinds:
        attr = f"self.{snake_case(w)}"
        classes = list(dict.fromkeys(c for k in kinds for c in _KIND_CLASSES.get(k, ())))
        alternatives = [] if w in arm.required or w in always else [f"{attr} is {unset}"]
        if len(classes) == 1:
            alternatives.append(f"{attr}.__class__ is {classes[0]}")
        elif classes:
            alternatives.append(f"{attr}.__class__ in ({', '.join(classes)})")
        if "None" in kinds:
            alternatives.append(f"{attr} is None")
        tests.append(f"({' or '.join(alternatives)})" if len(alternatives) > 1 else alternatives[0])
    return " and ".join(tests) if tests else "True"


def default(f: Field) -> str:
    """The right-hand side of a field declaration, with its `` = ``, or nothing."""
    args: list[str] = []
    if not f.required:
        args.append(f"default={_names.UNSET}")
    elif f.wire == "jsonrpc" and f.const == "2.0":
        args.append("default=JSONRPC_VERSION")  # its identity tells "absent on the wire"
    elif f.const is not None:
        args.append(f"default={constant(f.const)}")
    elif f.empty_default:
        args.append("default_factory=dict")
    if f.name != f.wire:
        args.append(f'name="{f.wire}"')
    if not args:
        return ""
    if len(args) == 1 and args[0].startswith("default="):
        return " = " + args[0][len("default=") :]
    return f" = msgspec.field({', '.join(args)})"


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.replace("\t", "    ").splitlines()]


def docstring(text: str, indent: int = 4) -> str:
    """A docstring block (with its quotes), or ``...``-free empty string."""
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = _lines(body)
    pad = " " * indent
    if len(lines) == 1:
        return f'{pad}"""{lines[0]}"""'
    inner = "\n".join(pad + line if line else "" for line in lines)
    return f'{pad}"""\n{inner}\n{pad}"""'


def comment(text: str, indent: int = 4) -> str:
    """``#:`` documentation comment lines for a field or an alias."""
    pad = " " * indent
    return "\n".join(f"{pad}#: {line}".rstrip() for line in _lines(text))


def _alias_order(aliases: dict[str, Alias]) -> list[Alias]:
    """Aliases that use other aliases come after them (they are evaluated at import)."""
    ordered: list[Alias] = []
    done: set[str] = set()

    def refs(t: Type) -> list[str]:
        own = [t.name] if t.kind == "ref" and t.name in aliases else []
        return own + [r for a in t.args for r in refs(a)]

    def visit(alias: Alias) -> None:
        if alias.name in done:
            return
        done.add(alias.name)
        for dep in refs(alias.type):
            visit(aliases[dep])
        ordered.append(alias)

    for name in sorted(aliases):
        visit(aliases[name])
    return ordered


def _struct_order(structs: dict[str, Struct]) -> list[Struct]:
    return [structs[name] for name in sorted(structs)]


def render_module(module: Module, schema_sha256: str) -> str:
    """The source of ``mcpspec.vYYYY_MM_DD`` for ``module``."""
    global _names
    clash = RESERVED & (set(module.structs) | set(module.aliases))
    if clash:
        raise ValueError(f"{module.revision}: definitions {sorted(clash)} clash with module names")
    _names = _Names(set(module.structs) | set(module.aliases))
    template = _env().get_template("revision.py.j2")
    return template.render(
        m=module,
        names=_names,
        sha256=schema_sha256,
        structs=_struct_order(module.structs),
        aliases=_alias_order(module.aliases),
    )


def render_package_init(revisions: list[str]) -> str:
    """The source of ``mcpspec/__init__.py`` naming every generated revision."""
    return _env().get_template("package_init.py.j2").render(revisions=revisions)
